"""Tuning and comparing a user's dataset: value aggregates, deduplication, no key and batching rules, on real Spark.

The exact answer of a dataset is held to plain PySpark's batch aggregate; a
sweep is held to what a watermark can do (a delay longer than any lateness
loses nothing, and its sums are the exact sums).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from support import ROOT

from streaming.analysis.compare import compare
from streaming.analysis.exact import exact_answer
from streaming.analysis.tune import tune, tune_configs
from streaming.engine.data.batching import Batching
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig
from streaming.feedgen import DatasetSpec, FeedSpec, write_dataset

WINDOW = "1 minute"
DELAYS = ["0 seconds", "10 minutes"]


@pytest.fixture(scope="module")
def orders(tmp_path_factory) -> Path:
    """8 JSON-lines files of orders (epoch-ms ``ts``, ``store``, ``amount``, ``order_id``): late orders, redeliveries, malformed rows."""
    feed = FeedSpec(
        start=datetime(2024, 3, 4, 12, 0, 0), batches=8, batch_interval_seconds=10, events_per_batch=15,
        keys=("north", "south"), max_lag_seconds=5, late_share=0.15, late_delay_seconds=90,
        malformed_share=0.03, value_column="amount", value_range=(5.0, 50.0), seed=7,
    )
    spec = DatasetSpec(feed, "json", ("order_id", "ts", "ingested_at", "store", "amount"), duplicate_share=0.1, seed=3)
    folder = tmp_path_factory.mktemp("orders") / "orders"
    write_dataset(spec, folder)
    return folder


def _columns(**changes) -> ColumnMapping:
    base = {"event_time": "ts", "time_format": "epoch_ms", "key": "store", "value": "amount", "dedup_id": "order_id",
            "arrival": "ingested_at", "arrival_format": "epoch_ms"}
    return ColumnMapping.from_dict({**base, **changes})


def _query(folder: Path, columns: ColumnMapping | None = None, batching: Batching | None = None, **shape) -> QueryConfig:
    """The orders' query, replayed busy unless ``shape`` says otherwise: what is measured here does not depend on the rule
    (``tests/engine/test_arrival.py`` holds the rules), and a busy replay runs no no-data batch between files."""
    source = FeedSource(folder, seconds_per_file=0, file_format="json", columns=columns or _columns(), **({"batching": batching} if batching else {}))
    return QueryConfig(source, window=WINDOW, **{"arrival": "busy", **shape})


def _plain_exact(spark, folder: Path, key: str | None, dedup: bool) -> dict[tuple[str, str | None], tuple[float, int]]:
    """Sum and count of ``amount`` per minute (and store) over every well-formed row (a time, and a non-empty key), deduplicated by ``order_id``, in plain PySpark."""
    from pyspark.sql import functions as F

    rows = spark.read.json(str(folder / "*.jsonl")).where(F.col("ts").isNotNull())
    if key is not None:
        rows = rows.where(F.col(key).isNotNull() & (F.col(key) != ""))  # an empty key is a malformed row
    if dedup:
        rows = rows.dropDuplicates(["order_id"])
    groups = [F.window(F.timestamp_millis("ts"), WINDOW).alias("w")] + ([F.col(key)] if key else [])
    answer = rows.groupBy(*groups).agg(F.sum(F.col("amount").cast("double")).alias("value"), F.count(F.lit(1)).alias("count"))
    answer = answer.select(F.date_format("w.start", "yyyy-MM-dd HH:mm:ss").alias("start"), *([key] if key else []), "value", "count")
    return {(row["start"], row[key] if key else None): (row["value"], row["count"]) for row in answer.collect()}


def _ours(frame, keyless: bool) -> dict[tuple[str, str | None], tuple[float, int]]:
    return {
        (row.window_start.strftime("%Y-%m-%d %H:%M:%S"), None if keyless else row.key): (row.value, row.count)
        for row in frame.itertuples(index=False)
    }


@pytest.mark.parametrize(("key", "dedup"), [("store", True), (None, False)])
def test_exact_answer_of_a_dataset_equals_plain_pyspark(spark, orders, key, dedup) -> None:
    query = _query(orders, _columns(key=key), aggregation="sum", deduplicate=dedup)
    ours = _ours(exact_answer(spark, query), keyless=key is None)
    plain = _plain_exact(spark, orders, key, dedup)
    assert ours.keys() == plain.keys() and len(ours) >= 4
    for slot, (value, count) in plain.items():
        assert ours[slot][1] == count
        assert ours[slot][0] == pytest.approx(value)


def test_a_sweep_of_a_dataset_sum_loses_late_orders_and_a_long_delay_loses_none(spark, registry, orders) -> None:
    swept = tune(registry, _query(orders, aggregation="sum", deduplicate=True), delays=DELAYS, target=0.99)
    short, long = swept.outcomes
    assert short.completeness < 1.0 and short.rows_dropped_by_watermark > 0
    assert long.completeness == 1.0 and long.lost_pairs == 0 and swept.recommended == "10 minutes"
    exact, streamed = _ours(swept.exact, keyless=False), _ours(long.result, keyless=False)
    assert streamed.keys() == exact.keys()
    for slot, (value, count) in exact.items():  # every sum is the exact sum
        assert streamed[slot][0] == pytest.approx(value) and streamed[slot][1] == count
    assert sum(count for _, count in exact.values()) == long.exact
    assert long.progress["duplicates_dropped"].sum() > 0
    data = swept.to_json()
    assert (data["aggregation"], data["value"], data["key"], data["dedup_by"], data["batch_by"]) == ("sum", "amount", "store", "order_id", "file")


@pytest.mark.parametrize(
    "batching", [None, Batching("rows:25"), Batching("ingested_at", "15 seconds")], ids=["file", "rows", "arrival"],
)
def test_the_model_equals_spark_for_every_batching_rule(registry, orders, batching, request) -> None:
    """Duplicate deliveries counted twice, malformed rows, late orders: the model's sweep is Spark's, delay by delay."""
    query = _query(orders, batching=batching, aggregation="sum", slide="30 seconds", arrival="busy" if batching else "quiet")  # each rule once
    delays = ["0 seconds", "2 minutes"]  # one that drops late orders and one that keeps them: each replay on Spark costs seconds
    spark, model = tune(registry, query, delays=delays, method="spark"), tune(registry, query, delays=delays, target=0.9)
    assert model.method == "model" and model.confirmation.agree, model.confirmation.differences()
    fields = ("completeness", "counted", "exact", "rows_dropped_by_watermark", "peak_state_rows", "mean_state_rows",
              "output_delay_seconds", "output_delay_batches", "windows_never_emitted", "batches")
    for ours, theirs in zip(model.to_json()["delays"], spark.to_json()["delays"]):
        assert {name: ours[name] for name in fields} == {name: theirs[name] for name in fields}
    assert spark.outcomes[0].rows_dropped_by_watermark > 0  # late orders were dropped: the comparison is not trivial
    assert spark.to_json()["batch_by"] == {"file": "file", "rows": "rows:25", "arrival": "ingested_at"}[request.node.callspec.id]
    if batching is not None and batching.column is not None:  # 80 s of arrivals in 15 s intervals: the batches are the intervals, not the 8 files
        assert spark.outcomes[0].batches >= 6


def test_the_sessions_a_state_still_holds_complete_the_append_result(registry, orders) -> None:
    """Nothing late (a 1-hour watermark): emitted sessions plus the open ones read from the state are the complete-mode table."""
    from streaming.engine.run.runner import run_to_idle

    sessions = _query(orders, session_gap="20 seconds", watermark="1 hour", output_mode="append", aggregation="avg")
    appended = run_to_idle(registry, sessions, open_sessions=True)
    complete = run_to_idle(registry, sessions.with_changes(output_mode="complete"))
    assert complete.open_sessions is None  # read only when asked
    assert appended.open_sessions is not None and len(appended.open_sessions) > 0  # the last sessions never closed
    kept = pd.concat([appended.result[["window_start", "window_end", "key", "count"]], appended.open_sessions], ignore_index=True)
    assert sorted(map(tuple, kept.itertuples(index=False))) == sorted(map(tuple, complete.result[["window_start", "window_end", "key", "count"]].itertuples(index=False)))


def test_a_sweep_of_session_windows_counts_the_sessions_still_open(registry, orders) -> None:
    # with duplicates dropped first: two stateful operators, the sessions read from theirs
    swept = tune(registry, _query(orders, session_gap="20 seconds", output_mode="append", deduplicate=True), delays=DELAYS, target=0.99)
    short, long = swept.outcomes
    assert [config.output_mode for config in tune_configs(swept.query, DELAYS)] == ["append", "append"]
    assert short.completeness < 1.0 and short.rows_dropped_by_watermark > 0
    assert long.completeness == 1.0 and long.counted == long.exact
    assert long.output_delay.windows_never_emitted > 0  # open at the end: kept, never emitted
    assert (swept.to_json()["session_gap"], swept.to_json()["window"]) == ("20 seconds", None)


def test_tuning_refuses_what_it_cannot_measure(orders) -> None:
    with pytest.raises(ConfigError) as err:
        tune_configs(_query(orders, aggregation="none"), DELAYS)
    assert err.value.field == "aggregation"
    [config] = tune_configs(_query(orders, watermark=None, output_mode="complete", aggregation="avg"), ["1 minute"])
    assert (config.output_mode, config.watermark, config.aggregation, config.source.seconds_per_file) == ("update", "1 minute", "avg", 0)


def test_compare_on_a_dataset_measures_each_config_against_its_own_exact_answer(registry, orders) -> None:
    configs = [
        _query(orders, aggregation="sum", watermark="0 seconds", output_mode="update"),
        _query(orders, aggregation="sum", watermark="10 minutes", output_mode="update", deduplicate=True),
    ]
    comparison = compare(registry, orders, configs)
    loose, deduplicated = comparison.runs
    assert loose.label == "update · 1 minute · wm 0 seconds · sum(amount)"
    assert deduplicated.label == "update · 1 minute · wm 10 minutes · sum(amount) · dedup"
    assert int(deduplicated.exact["count"].sum()) < int(loose.exact["count"].sum())  # duplicates counted once
    assert deduplicated.outcome.completeness == 1.0 and loose.outcome.completeness < 1.0


def test_cli_tune_runs_a_dataset_with_its_columns(cli, tmp_path, orders) -> None:
    out = tmp_path / "tune.json"
    done = cli(
        "tune", str(orders), "--event-time", "ts", "--time-format", "epoch_ms", "--no-key",
        "--value", "amount", "--agg", "avg", "--batch-by", "rows:40", "--window", WINDOW, "--delays", "10 minutes", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    assert (data["aggregation"], data["key"], data["batch_by"], data["recommended"]) == ("avg", None, "rows:40", "10 minutes")
    [row] = data["delays"]
    assert row["completeness"] == 1.0 and row["batches"] >= 3


def test_cli_tune_refuses_a_value_aggregate_without_a_value_column(orders) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "streaming", "tune", str(orders), "--event-time", "ts", "--time-format", "epoch_ms", "--key", "store",
         "--agg", "sum", "--window", WINDOW, "--delays", "1 minute"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env,
    )
    assert done.returncode == 2 and "aggregation: 'sum'" in done.stderr and "value column" in done.stderr


def test_cli_tune_takes_session_windows_and_refuses_a_slide_with_them(orders, capsys) -> None:
    from streaming.cli import main, parser

    args = parser().parse_args(["tune", str(orders), "--session-gap", "20 seconds", "--delays", "1 minute"])
    assert (args.session_gap, args.window) == ("20 seconds", None)
    flags = ["--event-time", "ts", "--time-format", "epoch_ms", "--key", "store", "--delays", "1 minute"]
    assert main(["tune", str(orders), *flags, "--session-gap", "20 seconds", "--slide", "10 seconds"]) == 2
    assert "slide: '10 seconds' does not apply to session windows" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser().parse_args(["tune", str(orders), "--window", "1 minute", "--session-gap", "20 seconds", "--delays", "1 minute"])


def test_a_cancelled_sweep_stops_its_replay_and_leaves_nothing_behind(registry, orders) -> None:
    import threading

    from streaming.engine.errors import Cancelled

    cancel, lines = threading.Event(), []

    def report(line: str) -> None:
        lines.append(line)
        if line.startswith("replayed 1 of"):
            cancel.set()  # as a user pressing Cancel while the second delay replays

    with pytest.raises(Cancelled):
        tune(registry, _query(orders, arrival="quiet"), delays=["0 seconds", "1 minute", "10 minutes"], cancel=cancel, report=report, method="spark")
    steps = [line for line in lines if not line.startswith("replaying 3 delays on Spark: batch ")]  # each batch of each replay, besides
    assert steps == ["computing the exact answer", "replayed 0 of 3 delays; now 0 seconds", "replayed 1 of 3 delays; now 1 minute"]
    assert "replaying 3 delays on Spark: batch 1 of " in lines[2]
    assert not [run.name for run in registry.runs() if run.name.startswith("replay_")]
    assert not [query.name for query in registry.spark.streams.active if query.name.startswith("replay_")]

