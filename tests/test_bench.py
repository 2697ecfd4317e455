"""Smoke tests of the benchmark's pure helpers (no Spark, nothing timed)."""

from __future__ import annotations

import math

import pytest

from benchmarks.bench import CHILD_MARKER, FINAL_KEYS, Throughput, final_block, parse_child_result, parser, percentile, ratio, throughput
from benchmarks.replay import _span


def _progress(batch_id: int, stamp: str, rows: int, ms: int) -> dict:
    return {"batchId": batch_id, "timestamp": stamp, "numInputRows": rows, "durationMs": {"triggerExecution": ms, "addBatch": ms - 1}}


def test_throughput_counts_batches_started_after_the_warm_up_once_each():
    since = 1_704_110_410.0  # 2024-01-01T12:00:10Z
    progresses = [
        _progress(0, "2024-01-01T12:00:05.000Z", 1_000, 900),
        _progress(1, "2024-01-01T12:00:10.000Z", 2_000, 500),
        _progress(2, "2024-01-01T12:00:10.500Z", 2_000, 500),
        _progress(2, "2024-01-01T12:00:10.500Z", 2_000, 500),
    ]
    sample = throughput(progresses, since)
    assert (sample.rows, sample.trigger_ms, sample.batches) == (4_000, 1_000, 2)
    assert sample.rows_per_s == pytest.approx(4_000)
    assert sample.wall_s == pytest.approx(1.0)


def test_throughput_of_nothing_is_nan_and_sums_add():
    assert math.isnan(throughput([], 0).rows_per_s)
    total = Throughput(10, 1_000, 1) + Throughput(30, 1_000, 2)
    assert (total.rows, total.batches, total.rows_per_s) == (40, 3, 20)


def test_a_replays_span_runs_from_the_first_batch_with_data_to_the_end_of_the_last():
    assert _span([(100.0, 0, 50.0), (101.0, 5, 200.0), (101.5, 0, 400.0), (101.2, 3, 100.0)]) == pytest.approx(0.9)
    assert _span([(100.0, 0, 50.0)]) == 0.0


def test_percentile_interpolates_and_ratio_guards():
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert math.isnan(percentile([], 95))
    assert ratio(3, 2) == 1.5
    assert math.isnan(ratio(1, 0)) and math.isnan(ratio(math.nan, 1))


def test_child_result_is_found_among_other_output():
    text = f"some log line\n{CHILD_MARKER}{{\"cold_start_s\": 12.5, \"getorcreate_s\": 4.0}}\n"
    assert parse_child_result(text) == {"cold_start_s": 12.5, "getorcreate_s": 4.0}
    assert parse_child_result("nothing here\n") is None


def test_final_block_lists_every_key_in_order_then_extras():
    lines = final_block({"overhead_ratio": 0.97123, "cold_start_s": None, "extra": 3}).splitlines()
    assert [line.split(":")[0] for line in lines] == list(FINAL_KEYS) + ["extra"]
    assert "overhead_ratio: 0.971" in lines and "cold_start_s: n/a" in lines


def test_defaults_and_hidden_options():
    args = parser().parse_args([])
    assert (args.minutes, args.skip_cold_start, args.short_seconds, args.polls) == (3.0, False, 60.0, 50)
    assert "--short-seconds" not in parser().format_help()


def test_rss_trend_is_the_slope_over_the_last_30_minutes():
    from benchmarks.bench import RssSample, rss_trend

    growing_then_flat = [RssSample(m, 900 + 20 * m if m < 30 else 1500.0, 150.0) for m in range(1, 61)]
    trend = rss_trend(growing_then_flat)
    assert trend["span_minutes"] == 30
    assert trend["jvm_mib_per_min"] == pytest.approx(0.0) and trend["jvm_change"] == pytest.approx(0.0)
    leaking = [RssSample(m, 1000 + 10 * m, 150.0) for m in range(1, 11)]
    trend = rss_trend(leaking)
    assert trend["jvm_mib_per_min"] == pytest.approx(10.0)
    assert trend["jvm_change"] == pytest.approx(10 * 9 / 1055)
    assert math.isnan(rss_trend(leaking[:2])["jvm_change"])


def test_heap_after_gc_separates_a_gc_sawtooth_from_a_leak():
    from benchmarks.bench import RssSample, rss_trend

    # RSS climbs and falls with the heap's size; the heap left after each collection stays level
    sawtooth = [RssSample(m, 900 + 30 * (m % 20), 150.0, 400.0 + (m % 2)) for m in range(1, 61)]
    trend = rss_trend(sawtooth)
    assert abs(trend["heap_after_gc_change"]) < 0.01
    assert math.isnan(rss_trend([RssSample(m, 900, 150.0) for m in range(1, 10)])["heap_after_gc_change"])


def test_heap_after_gc_reads_the_driver_jvm(spark):
    from benchmarks.bench import heap_after_gc_mib

    spark._jvm.java.lang.System.gc()
    assert 1 < heap_after_gc_mib(spark) < 4096
