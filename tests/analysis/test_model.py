"""The watermark model: list in, numbers out, and held to real Spark runs in every output mode."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import GUIDE_BATCHES

from streaming.analysis.model import Timeline, covers, delay_frames, expand, sweep
from streaming.engine.data.feeds import feed_events
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig
from streaming.feedgen import FeedSpec
from streaming.feedgen import write_feed as write_spec_feed

MINUTE = 60_000


def _timeline(batches: list[list[tuple[str, str]]]) -> Timeline:
    rows = [(pd.Timestamp(time), key, index) for index, batch in enumerate(batches) for time, key in batch]
    return Timeline.of(pd.DataFrame(rows, columns=["event_time", "key", "file_index"]), len(batches))


def test_the_programming_guides_example_drops_two_groups_at_ten_minutes() -> None:
    timeline = _timeline(GUIDE_BATCHES)
    expansion = expand(timeline, 10 * MINUTE, 5 * MINUTE)
    [row] = sweep(timeline, expansion, [10 * MINUTE]).to_dict("records")
    assert (row["counted"], row["exact"], row["dropped_groups"]) == (18, 20, 2)  # the donkey at 12:04, in both its windows
    assert row["windows_emitted"] == 1 and row["output_delay_seconds"] == 660.0 and row["output_delay_batches"] == 3.0
    result, exact, per_window, _ = delay_frames(timeline, expansion, 10 * MINUTE)
    assert "donkey" not in set(result["key"]) and "donkey" in set(exact["key"])
    assert per_window["counted"].sum() == 18


def test_a_window_ending_exactly_at_the_watermark_is_closed() -> None:
    """Batch 2's watermark is 12:20 - 10 min = 12:10: the 12:09 event's window [12:00, 12:10) is closed; a millisecond more delay keeps it."""
    timeline = _timeline([[("2016-05-10 12:07:00", "dog")], [("2016-05-10 12:20:00", "owl")], [("2016-05-10 12:09:00", "cat")]])
    swept = sweep(timeline, expand(timeline, 10 * MINUTE), [10 * MINUTE, 10 * MINUTE + 1])
    assert list(swept["counted"]) == [2, 3] and list(swept["dropped_groups"]) == [1, 0]
    assert list(swept["batches"]) == [5, 5]  # batch 2 does not raise the clock: no no-data batch after it


def test_completeness_never_falls_as_the_delay_grows_and_state_never_shrinks() -> None:
    events = feed_events(_sample_feed())
    timeline = Timeline.of(events)
    swept = sweep(timeline, expand(timeline, MINUTE, 30_000), list(range(0, 300_001, 6_000)))
    assert (np.diff(swept["completeness"]) >= 0).all() and swept["completeness"].iloc[-1] == 1.0
    assert (np.diff(swept["peak_state_rows"]) >= 0).all()
    assert (np.diff(swept["dropped_groups"]) <= 0).all()


def _sample_feed() -> Path:
    from streaming.engine.data.feeds import SAMPLE_FEEDS

    return SAMPLE_FEEDS / "web_clicks"


def test_the_model_names_the_shapes_it_does_not_cover(tmp_path: Path) -> None:
    feed = _sample_feed()
    assert covers(QueryConfig(FeedSource(feed), window="1 minute")) is None
    assert "session" in covers(QueryConfig(FeedSource(feed), session_gap="1 minute", output_mode="append"))
    orders = tmp_path / "o.jsonl"
    orders.write_text('{"ts": 1, "id": "a"}\n')
    dedup = QueryConfig(FeedSource(orders, file_format="json", columns=ColumnMapping("ts", "epoch_ms", None, dedup_id="id")), deduplicate=True)
    assert "deduplication" in covers(dedup)


@pytest.fixture(scope="module")
def late_feed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    spec = FeedSpec(
        start=datetime(2026, 3, 2, 9, 0), batches=10, batch_interval_seconds=15, events_per_batch=30, keys=("x", "y"),
        max_lag_seconds=20, late_share=0.25, late_delay_seconds=100, seed=5,
    )
    folder = tmp_path_factory.mktemp("model") / "feed"
    write_spec_feed(spec, folder)
    return folder


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_the_models_result_table_is_sparks_in_append_and_complete_mode(registry, late_feed: Path, mode: str) -> None:
    from streaming.engine.run.runner import run_to_idle

    delay = 20_000
    config = QueryConfig(FeedSource(late_feed, seconds_per_file=0), window="1 minute", slide="20 seconds", watermark="20 seconds", output_mode=mode)
    real = run_to_idle(registry, config, timeout=300)
    timeline = Timeline.of(feed_events(late_feed), len(config.source.files()))
    expansion = expand(timeline, MINUTE, 20_000)
    result, exact, _, emissions = delay_frames(timeline, expansion, delay)
    [row] = sweep(timeline, expansion, [delay]).to_dict("records")
    if mode == "complete":  # Spark keeps every group in complete mode: the watermark drops nothing, the result is exact
        assert real.rows_dropped_by_watermark == 0 and row["dropped_groups"] > 0
        pd.testing.assert_frame_equal(exact, real.result, check_dtype=False)
        return
    closed = emissions.loc[emissions["emit_batch"].notna(), ["window_start", "window_end"]]  # append: the closed windows, each once
    pd.testing.assert_frame_equal(result.merge(closed, on=["window_start", "window_end"]), real.result, check_dtype=False)
    assert row["dropped_groups"] == real.rows_dropped_by_watermark > 0 and row["batches"] == len(real.progress)


def test_a_grid_sweeps_every_window_length_and_draws_heat_maps_with_the_target_contour() -> None:
    from streaming.analysis.model import grid
    from streaming.charts.tuner import grid_heatmap

    timeline = _timeline(GUIDE_BATCHES)
    table = grid(timeline, [5 * MINUTE, 10 * MINUTE], [0, 10 * MINUTE])
    assert table[["window_ms", "delay_ms"]].values.tolist() == [[300_000, 0], [300_000, 600_000], [600_000, 0], [600_000, 600_000]]
    tumbling = sweep(timeline, expand(timeline, 10 * MINUTE), [0, 10 * MINUTE])
    assert table[table["window_ms"] == 600_000]["completeness"].tolist() == tumbling["completeness"].tolist()
    figure = grid_heatmap(table, "completeness", "Completeness", target=0.85, percent=True)
    assert [trace.type for trace in figure.data] == ["heatmap", "contour"]
    assert list(figure.data[0].y) == ["5 minutes", "10 minutes"] and list(figure.data[0].x) == ["0 seconds", "10 minutes"]
    assert figure.data[1].contours.start == 0.85
    assert grid_heatmap(table.iloc[0:0], "completeness", "Completeness").layout.annotations
