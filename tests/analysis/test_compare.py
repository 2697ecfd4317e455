"""Tests of the side-by-side comparison: validation without Spark, then the guide example with two configs."""

from __future__ import annotations

import pandas as pd
import pytest

from streaming.analysis.compare import compare, config_label, time_range
from streaming.analysis.measure import finalized_completeness
from streaming.charts.common import key_colors
from streaming.charts.compare import comparison_counts
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.query.config import FeedSource, QueryConfig

GUIDE = SAMPLE_FEEDS / "guide_words"
T = pd.Timestamp


def _guide(**query) -> QueryConfig:
    return QueryConfig(FeedSource(GUIDE, seconds_per_file=0), **query)


def test_compare_needs_two_to_four_configs():
    configs = [_guide(window=f"{n} minutes") for n in range(1, 6)]
    with pytest.raises(ValueError, match=r"configs: 5 given"):
        compare(None, GUIDE, configs)
    with pytest.raises(ValueError, match=r"configs: 1 given"):
        compare(None, GUIDE, configs[:1])


def test_compare_refuses_a_config_of_another_feed():
    other = QueryConfig(FeedSource(SAMPLE_FEEDS / "web_clicks", seconds_per_file=0))
    with pytest.raises(ValueError, match=r"configs\[1\]\.source\.path"):
        compare(None, GUIDE, [_guide(), other])


def test_labels_and_time_range_helpers():
    assert config_label(_guide(window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="append")) == (
        "append · 10 minutes/5 minutes · wm 10 minutes"
    )
    assert config_label(_guide(window="1 minute", watermark=None)) == "update · 1 minute · no wm"
    a = pd.DataFrame({"window_start": [T("2024-01-01 12:00")], "window_end": [T("2024-01-01 12:10")]})
    b = pd.DataFrame({"window_start": [T("2024-01-01 11:55")], "window_end": [T("2024-01-01 12:05")]})
    assert time_range([a, b, a.iloc[:0]]) == (T("2024-01-01 11:55"), T("2024-01-01 12:10"))
    assert time_range([a.iloc[:0]]) is None


def test_finalized_completeness_counts_only_closed_windows():
    exact = pd.DataFrame({"window_start": [T("2024-01-01 12:00"), T("2024-01-01 12:10")],
                          "window_end": [T("2024-01-01 12:10"), T("2024-01-01 12:20")], "key": "a", "count": [4, 6]})
    result = exact.iloc[:1].assign(count=3)
    assert finalized_completeness(result, exact, T("2024-01-01 12:11")) == 0.75
    assert pd.isna(finalized_completeness(result, exact, pd.NaT))


@pytest.fixture(scope="module")
def guide_steps(registry):
    """The comparison of two guide queries, and what it reported on its way."""
    tumbling_append = _guide(window="10 minutes", watermark="10 minutes", output_mode="append")
    sliding_update = _guide(window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="update")
    reports: list[str] = []
    return compare(registry, GUIDE, [tumbling_append, sliding_update], report=reports.append), reports


@pytest.fixture(scope="module")
def guide_comparison(guide_steps):
    return guide_steps[0]


def test_a_comparison_reports_its_batches_over_every_run(guide_steps):
    steps = [line for line in guide_steps[1] if line.startswith("replaying 2 configurations on Spark: batch ")]
    assert len(steps) == 8 and "replaying 2 configurations on Spark: batch 8 of 8" in steps  # 4 files, 2 runs
    assert any(line.endswith(" left") for line in steps)


def test_guide_comparison_summary_rows(guide_comparison):
    summary = guide_comparison.summary().set_index("label")
    assert list(summary.index) == ["append · 10 minutes · wm 10 minutes", "update · 10 minutes/5 minutes · wm 10 minutes"]
    append, update = summary.iloc[0], summary.iloc[1]
    # Tumbling append: only 12:00-12:10 (dog 2, owl 1, cat 1) is finalized; the donkey is dropped.
    assert (append["counted"], append["exact"]) == (4, 10)
    assert append["completeness"] == pytest.approx(0.4)
    assert append["completeness_finalized"] == pytest.approx(4 / 5)
    assert append["rows_dropped_by_watermark"] == 1
    assert append["peak_state_rows"] == 7
    assert append["windows_never_emitted"] == 2
    # Sliding update: every window but the donkey's two (each loses one pair).
    assert (update["counted"], update["exact"]) == (18, 20)
    assert update["completeness"] == pytest.approx(0.9)
    assert update["completeness_finalized"] == pytest.approx(4 / 6)
    assert update["rows_dropped_by_watermark"] == 2
    assert update["peak_state_rows"] == 12
    assert update["windows_never_emitted"] == 4
    for row in (append, update):  # 12:00-12:10 is finalized in the batch whose watermark is 12:11
        assert row["output_delay_seconds"] == 660.0 and row["output_delay_batches"] == 3.0
        assert row["mean_batch_duration_ms"] > 0


def test_guide_comparison_tables_and_aligned_axes(guide_comparison):
    append, update = guide_comparison.runs
    assert append.result["window_end"].eq(T("2016-05-10 12:10")).all()
    assert len(update.result) == 12 and len(update.progress) == len(append.progress)
    assert guide_comparison.time_range() == (T("2016-05-10 11:55"), T("2016-05-10 12:30"))
    assert guide_comparison.keys() == ["cat", "dog", "donkey", "owl"]  # the donkey is in the exact answers only
    colors = key_colors(guide_comparison.keys())
    figure = comparison_counts(guide_comparison)
    assert figure.layout.xaxis.range == figure.layout.xaxis2.range
    assert pd.Timestamp(figure.layout.xaxis.range[0]) == T("2016-05-10 11:55")
    by_key: dict[str, set[str]] = {}
    for trace in figure.data:
        by_key.setdefault(trace.name, set()).add(trace.line.color)
    assert all(len(colour) == 1 for colour in by_key.values())
    assert {key: colour.pop() for key, colour in by_key.items()} == {k: colors[k] for k in ("cat", "dog", "owl")}
    assert sum(trace.showlegend for trace in figure.data) == 3


def test_a_value_aggregate_is_charted_as_its_value_for_the_keys_chosen_and_many_windows_open_on_the_latest():
    from types import SimpleNamespace

    starts = pd.date_range("2026-01-01", periods=200, freq="h")
    frame = pd.DataFrame({"window_start": starts, "window_end": starts + pd.Timedelta(hours=1), "key": ["a", "b"] * 100,
                          "value": [float(index) for index in range(200)], "count": 1})
    run = SimpleNamespace(label="avg", result=frame, config=SimpleNamespace(measure="avg(delay)"))
    figure = comparison_counts(SimpleNamespace(runs=[run]), keys=["a"])
    assert [trace.name for trace in figure.data] == ["a"]
    assert list(figure.data[0].y[:3]) == [0.0, 2.0, 4.0]  # the average, not the count of 1; the latest 60 of key a's windows drawn first
    assert figure.layout.yaxis.title.text == "avg(delay)" and "avg(delay)" in figure.layout.title.text
    assert pd.Timestamp(figure.layout.xaxis.range[0]) == starts[::2][-60] and pd.Timestamp(figure.layout.xaxis.range[1]) == starts[::2][-1] + pd.Timedelta(hours=1)
