"""What a query's state holds, read from its checkpoint with Spark's State Data Source, on real Spark."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.output.state import OPERATOR_COLUMNS, state_operators, state_rows
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig


def _idle_run(registry, config: QueryConfig, name: str):
    run = registry.start(config, name, max_rows=None)
    run.await_idle(300)
    return run


def test_a_windowed_count_holds_the_windows_the_watermark_has_not_passed(registry) -> None:
    config = QueryConfig(FeedSource(SAMPLE_FEEDS / "guide_words", seconds_per_file=0), window="10 minutes", slide="5 minutes", watermark="10 minutes")
    run = _idle_run(registry, config, "state_windows")
    try:
        checkpoint = run.workdir / "checkpoint"
        operators = state_operators(registry.spark, checkpoint)
        assert list(operators.columns) == OPERATOR_COLUMNS and list(operators["operator"]) == ["stateStoreSave"]
        rows = state_rows(registry.spark, checkpoint, 0)
        assert list(rows.columns) == ["window_start", "window_end", "key", "count", "evicted_at_watermark"]
        final = run.log.frames()[0]["watermark"].dropna().max()
        result = run.table.frame()
        held = result[result["window_end"] > final]  # what the state still holds: the windows the watermark has not passed
        assert sorted(zip(rows["window_start"].str[:19], rows["key"], rows["count"])) == sorted(
            zip(held["window_start"].astype(str), held["key"], held["count"])
        )
        assert len(held) < len(result)  # and nothing the watermark passed
    finally:
        registry.remove("state_windows")


def test_sessions_after_deduplication_show_both_operators_with_readable_rows(registry, tmp_path: Path) -> None:
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="store", value="amount", dedup_id="order_id")
    orders = tmp_path / "orders"  # the first files are enough to fill both operators' state
    orders.mkdir()
    for path in sorted((SAMPLE_FEEDS / "orders_jsonl").glob("*.jsonl"))[:6]:
        shutil.copyfile(path, orders / path.name)
    source = FeedSource(orders, seconds_per_file=0, file_format="json", columns=columns)
    config = QueryConfig(source, session_gap="30 seconds", watermark="1 minute", output_mode="append", aggregation="avg", deduplicate=True)
    run = _idle_run(registry, config, "state_sessions")
    try:
        checkpoint = run.workdir / "checkpoint"
        names = list(state_operators(registry.spark, checkpoint)["operator"])
        assert sorted(names) == ["dedupeWithinWatermark", "sessionWindowStateStoreSaveExec"]
        sessions = state_rows(registry.spark, checkpoint, names.index("sessionWindowStateStoreSaveExec"))
        assert {"key", "session_window_start", "session_window_end", "count", "count_2"} <= set(sessions.columns)  # avg's count and the row count
        ids = state_rows(registry.spark, checkpoint, names.index("dedupeWithinWatermark"))
        assert list(ids.columns) == ["dedup_id", "expires_at_watermark"] and len(ids) > 0
        assert pd.to_datetime(ids["expires_at_watermark"]).min() > pd.Timestamp("2024-03-04")
    finally:
        registry.remove("state_sessions")


def test_no_state_before_the_first_batch(tmp_path: Path, spark) -> None:
    assert state_operators(spark, tmp_path).empty and state_rows(spark, tmp_path).empty
