"""Tests of late-data classification and completeness: pure unit tests, then a few real replays."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from support import GUIDE_BATCHES

from streaming.analysis.lateness import (
    BATCH_COLUMNS,
    CLASSIFIED_COLUMNS,
    DROPPED_COLUMNS,
    EVENT_RULE,
    WINDOW_RULE,
    classify,
    completeness,
    drop_summary,
    dropped_by_window,
    dropped_events,
    file_batches,
    lateness,
    lateness_summary,
    sample_events,
)
from streaming.charts.lateness import arrival_figure, lateness_figure
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_events, read_feed
from streaming.engine.errors import ConfigError
from streaming.engine.output.progress import progress_frame

T = pd.Timestamp
MINUTE = 60_000


def _events(rows: list[tuple[int, str, str]]) -> pd.DataFrame:
    """``[(file_index, "HH:MM:SS", key), ...]`` on 2024-01-01 as a :func:`feed_events` frame."""
    frame = pd.DataFrame(
        {
            "event_id": range(len(rows)),
            "file_index": [file for file, _, _ in rows],
            "row": range(len(rows)),
            "event_time": [T(f"2024-01-01 {clock}") for _, clock, _ in rows],
            "key": [key for _, _, key in rows],
        }
    )
    return frame.astype({"event_id": "int64", "file_index": "int64", "row": "int64", "event_time": "datetime64[ns]"})


def _batches(watermarks: list[str | None], first_batch: int = 0) -> pd.DataFrame:
    """File ``i`` read by batch ``first_batch + 2 i`` with the given watermark (``None``: none yet)."""
    stamps = [pd.NaT if w is None else T(f"2024-01-01 {w}") for w in watermarks]
    frame = pd.DataFrame(
        {
            "file_index": range(len(watermarks)),
            "batch_id": [first_batch + 2 * i for i in range(len(watermarks))],
            "timestamp": [T("2024-06-01 10:00:00") + pd.Timedelta(seconds=i) for i in range(len(watermarks))],
            "num_input_rows": 1,
            "watermark": stamps,
            "max_event_time": pd.NaT,
            "max_event_time_seen": pd.NaT,
        }
    )
    for column in ("timestamp", "watermark", "max_event_time", "max_event_time_seen"):
        frame[column] = frame[column].astype("datetime64[ns]")
    return frame[BATCH_COLUMNS]


def _window_table(rows: list[tuple[str, str, str, int]]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [(T(f"2024-01-01 {s}"), T(f"2024-01-01 {e}"), key, count) for s, e, key, count in rows],
        columns=["window_start", "window_end", "key", "count"],
    )
    return frame.astype({"count": "int64"})


def _summary(batch_id: int, start: str | None, end: str | None, rows: int, watermark: str | None, max_time: str | None, dropped: int = 0) -> dict:
    """A canned :func:`streaming.engine.output.progress.summarize` row, shaped like real ones from a feed replay."""
    stamp = lambda text: np.datetime64("NaT", "ns") if text is None else np.datetime64(T(f"2024-01-01 {text}").value, "ns")  # noqa: E731
    return {
        "batch_id": batch_id,
        "timestamp": np.datetime64((T("2024-06-01 10:00:00") + pd.Timedelta(seconds=batch_id)).value, "ns"),
        "num_input_rows": rows,
        "input_rows_per_second": 0.0,
        "processed_rows_per_second": 0.0,
        "batch_duration_ms": 100,
        "watermark": stamp(watermark),
        "max_event_time": stamp(max_time),
        "watermark_gap_seconds": float("nan"),
        "rows_dropped_by_watermark": dropped,
        "state_rows_total": 0,
        "state_rows_updated": 0,
        "state_rows_removed": 0,
        "state_memory_bytes": 0,
        "malformed_rows": 0,
        "duplicates_dropped": 0,
        "offsets_behind_avg": float("nan"),
        "offsets_behind_max": float("nan"),
        "source_offsets": (start, end),
        "durations": (("triggerExecution", 100),),
    }


# Recorded from a real replay (10-minute windows, 1-minute watermark) of three files:
# 12:11 | 12:09:59, 12:10, 12:05 | 12:30 -- batches 1 and 4 are the no-data batches.
REAL_SUMMARIES = [
    _summary(0, None, '{"logOffset": 0}', 1, None, "12:11:00"),
    _summary(1, '{"logOffset": 0}', '{"logOffset": 0}', 0, "12:10:00", None),
    _summary(2, '{"logOffset": 0}', '{"logOffset": 1}', 3, "12:10:00", "12:10:00", dropped=2),
    _summary(3, '{"logOffset": 1}', '{"logOffset": 2}', 1, "12:10:00", "12:30:00"),
    _summary(4, '{"logOffset": 2}', '{"logOffset": 2}', 0, "12:29:00", None),
]
REAL_EVENTS = [(0, "12:11:00", "a"), (1, "12:09:59", "edge"), (1, "12:10:00", "c"), (1, "12:05:00", "s"), (2, "12:30:00", "z")]


# ----------------------------------------------------------------- feed parsing


def test_feed_events_parses_like_the_query_and_counts_malformed(tmp_path: Path) -> None:
    feed = tmp_path / "feed"
    feed.mkdir()
    (feed / "batch-0000.csv").write_text(
        "event_time,key,extra\n"
        "2024-01-01 12:00:00,a,1\n"
        "  2024-01-01 12:00:05  , b ,2\n"
        "not-a-time,c,3\n"
        "2024-01-01 12:00:07,,4\n"
        "\n"
        "2024-1-01 12:00:08,d,5\n"
        "2024-02-30 12:00:09,e,6\n"
        "2024-01-01 12:00:10\n"
    )
    (feed / "batch-0001.csv").write_text("event_time,key,extra\n")
    (feed / "batch-0002.csv").write_text("event_time,key,extra\n2024-01-01 11:59:00,a,7\n")
    events = feed_events(feed)
    assert events[["file_index", "row", "event_time", "key"]].values.tolist() == [
        [0, 0, T("2024-01-01 12:00:00"), "a"],
        [0, 1, T("2024-01-01 12:00:05"), "b"],
        [2, 0, T("2024-01-01 11:59:00"), "a"],
    ]
    assert events["event_id"].tolist() == [0, 1, 2]
    assert str(events["event_time"].dtype) == "datetime64[ns]"
    assert events.attrs["malformed"] == 5
    feed_read = read_feed(feed)
    assert feed_read.rows_per_file == (7, 0, 1)
    assert feed_read.malformed_per_file == (5, 0, 0)


def test_feed_events_of_web_clicks_matches_its_readme() -> None:
    feed = read_feed(SAMPLE_FEEDS / "web_clicks")
    assert feed.malformed == 13
    assert len(feed.events) == 2000 - 13
    assert feed.rows_per_file == (50,) * 40


# -------------------------------------------------------------------- batches


def test_file_batches_from_summaries_uses_offsets_and_skips_no_data_batches() -> None:
    batches = file_batches(REAL_SUMMARIES)
    assert list(batches.columns) == BATCH_COLUMNS
    assert batches["file_index"].tolist() == [0, 1, 2]
    assert batches["batch_id"].tolist() == [0, 2, 3]
    assert batches["watermark"].tolist()[0] is pd.NaT
    assert batches["watermark"].tolist()[1:] == [T("2024-01-01 12:10:00")] * 2
    assert batches["max_event_time"].tolist() == [T("2024-01-01 12:11:00"), T("2024-01-01 12:10:00"), T("2024-01-01 12:30:00")]
    assert batches["max_event_time_seen"].tolist() == [T("2024-01-01 12:11:00"), T("2024-01-01 12:11:00"), T("2024-01-01 12:30:00")]


def test_file_batches_from_a_progress_frame_matches_rows_to_files() -> None:
    frame = progress_frame(REAL_SUMMARIES)
    assert file_batches(frame, rows_per_file=(1, 3, 1)).equals(file_batches(REAL_SUMMARIES))
    with_empty_file = file_batches(frame, rows_per_file=(1, 0, 3, 1))
    assert with_empty_file["file_index"].tolist() == [0, 2, 3]
    assert with_empty_file["batch_id"].tolist() == [0, 2, 3]
    with pytest.raises(ValueError, match="file 1 of the feed has 2"):
        file_batches(frame, rows_per_file=(1, 2, 1))
    assert file_batches([]).empty


# ------------------------------------------------------------------- lateness


def test_lateness_is_behind_the_max_of_earlier_files_only() -> None:
    events = _events([(0, "12:10:00", "a"), (0, "12:00:00", "b"), (1, "12:05:00", "c"), (1, "12:20:00", "d"), (3, "12:19:00", "e"), (3, "12:30:00", "f")])
    assert lateness(events).dt.total_seconds().tolist() == [0, 0, 300, 0, 60, 0]
    assert lateness(events.iloc[:0]).empty


def test_lateness_summary_percentiles_and_delay_for_coverage() -> None:
    late = pd.Series(pd.to_timedelta(range(100), unit="s"))
    summary = lateness_summary(late)
    assert summary["events"] == 100 and summary["late_events"] == 99
    assert summary["p50"] == pd.Timedelta(seconds=49.5)
    assert summary["p99"] == pd.Timedelta(seconds=98.01)
    assert summary["delay_for_coverage"] == pd.Timedelta(seconds=98)  # 99 of 100 are <= 98 s
    assert summary["max"] == pd.Timedelta(seconds=99)
    assert lateness_summary(late, coverage=0.5)["delay_for_coverage"] == pd.Timedelta(seconds=49)
    empty = lateness_summary(late.iloc[:0])
    assert empty["events"] == 0 and empty["delay_for_coverage"] is pd.NaT


# ------------------------------------------------------------------- classify


def test_classify_tumbling_drops_a_window_ending_exactly_at_the_watermark() -> None:
    """The boundary as a real replay showed it (REAL_SUMMARIES): end == watermark is dropped."""
    events = _events(REAL_EVENTS)
    out = classify(events, file_batches(REAL_SUMMARIES), 10 * MINUTE)
    assert list(out.columns) == CLASSIFIED_COLUMNS
    assert dict(zip(out["key"], out["status"])) == {"a": "counted", "edge": "not counted", "c": "counted", "s": "not counted", "z": "counted"}
    assert out["windows"].tolist() == [1] * 5
    assert out.loc[out["key"] == "edge", "dropped_windows"].item() == ((T("2024-01-01 12:00:00"), T("2024-01-01 12:10:00")),)
    assert out["batch_id"].tolist() == [0, 2, 2, 2, 3]
    assert drop_summary(out, REAL_SUMMARIES)["rows_dropped_by_watermark"] == 2


def test_classify_sliding_counts_windows_and_partly_counted_events() -> None:
    events = _events(REAL_EVENTS)
    out = classify(events, file_batches(REAL_SUMMARIES), 10 * MINUTE, 5 * MINUTE).set_index("key")
    assert out["windows"].tolist() == [2] * 5
    assert out.loc["edge", "status"] == "partly counted" and out.loc["edge", "windows_counted"] == 1
    assert out.loc["s", "status"] == "partly counted"  # [12:00, 12:10) dropped, [12:05, 12:15) kept
    assert out.loc["c", "status"] == "counted"  # [12:05, 12:15) and [12:10, 12:20)
    by_window = dropped_by_window(out.reset_index())
    assert by_window.values.tolist() == [
        [T("2024-01-01 12:00:00"), T("2024-01-01 12:10:00"), "edge", 1],
        [T("2024-01-01 12:00:00"), T("2024-01-01 12:10:00"), "s", 1],
    ]


def test_classify_window_not_a_multiple_of_the_slide_gives_floor_or_ceil_windows() -> None:
    # 10-minute windows every 3 minutes start at :00, :03, :06, ... (epoch aligned).
    events = _events([(0, "12:00:00", "a"), (0, "12:01:00", "b"), (0, "12:02:59", "c")])
    out = classify(events, _batches([None]), 10 * MINUTE, 3 * MINUTE)
    # 12:00 is in windows starting 11:51, 11:54, 11:57, 12:00; 12:01 and 12:02:59 in 11:54, 11:57, 12:00.
    assert out["windows"].tolist() == [4, 3, 3]
    assert out["status"].tolist() == ["counted"] * 3


def test_classify_watermark_boundaries_one_event_at_a_time() -> None:
    # Tumbling 1-minute windows, watermark 12:05:00 on file 1.
    events = _events([(0, "12:06:00", "x"), (1, "12:04:59", "a"), (1, "12:05:00", "b"), (1, "11:00:00", "c"), (2, "12:00:00", "d")])
    out = classify(events, _batches([None, "12:05:00"]), MINUTE)
    assert out["key"].tolist() == ["x", "a", "b", "c"]  # file 2 is not processed yet
    assert out["status"].tolist() == ["counted", "not counted", "counted", "not counted"]
    # Sliding 2 minutes every minute: 12:04:59 is in [12:03, 12:05) (dropped) and [12:04, 12:06) (kept).
    sliding = classify(events, _batches([None, "12:05:00"]), 2 * MINUTE, MINUTE)
    assert sliding["windows_counted"].tolist() == [2, 1, 2, 0]
    assert sliding["status"].tolist() == ["counted", "partly counted", "counted", "not counted"]


def test_classify_without_a_watermark_or_batches() -> None:
    events = _events([(0, "12:00:00", "a"), (1, "11:00:00", "b")])
    assert classify(events, _batches([None, None]), MINUTE)["status"].tolist() == ["counted", "counted"]
    empty = classify(events, _batches([]), MINUTE)
    assert list(empty.columns) == CLASSIFIED_COLUMNS and empty.empty
    with pytest.raises(ConfigError, match="slide_ms"):
        classify(events, _batches([None]), MINUTE, 2 * MINUTE)


def test_guide_example_by_hand() -> None:
    """The guide's 10-minute windows sliding 5 and a 10-minute watermark, without Spark."""
    events = _events([(f, t.split(" ")[1], k) for f, rows in enumerate(GUIDE_BATCHES) for t, k in rows])
    # Watermark applied to each file: none, then max(earlier files) - 10 min: 11:58, 12:04, 12:11.
    out = classify(events, _batches([None, "11:58:00", "12:04:00", "12:11:00"]), 10 * MINUTE, 5 * MINUTE)
    summary = drop_summary(out, [])
    assert (summary["not_counted"], summary["partly_counted"], summary["pairs_dropped"], summary["groups_dropped"]) == (1, 0, 2, 2)
    assert out.loc[out["status"] != "counted", "key"].tolist() == ["donkey"]
    assert summary["pairs_total"] == 20 and summary["events_total"] == 10
    assert "not events" in summary["explanation"]


def test_the_dropped_events_say_which_rule_dropped_them() -> None:
    events = _events([(f, t.split(" ")[1], k) for f, rows in enumerate(GUIDE_BATCHES) for t, k in rows])
    classified = classify(events, _batches([None, "11:58:00", "12:04:00", "12:11:00"]), 10 * MINUTE, 5 * MINUTE)
    dropped = dropped_events(classified)
    assert list(dropped.columns) == DROPPED_COLUMNS
    assert dropped[["key", "window_start", "window_end", "rule"]].astype(str).values.tolist() == [
        ["donkey", "2024-01-01 11:55:00", "2024-01-01 12:05:00", WINDOW_RULE],
        ["donkey", "2024-01-01 12:00:00", "2024-01-01 12:10:00", WINDOW_RULE],
    ]
    # A deduplication filters events by their own time: 12:05:00 equals the watermark, so it is late before any window.
    boundary = classify(_events([(0, "12:06:00", "x"), (1, "12:05:00", "b"), (1, "12:05:01", "c")]), _batches([None, "12:05:00"]), MINUTE)
    assert dropped_events(boundary).empty
    late = dropped_events(boundary, deduplicate=True)
    assert late[["key", "rule"]].values.tolist() == [["b", EVENT_RULE]] and late["window_start"].isna().all()


# --------------------------------------------------------------- completeness


def test_completeness_overall_and_per_window() -> None:
    exact = _window_table([("12:00:00", "12:01:00", "a", 3), ("12:00:00", "12:01:00", "b", 1), ("12:01:00", "12:02:00", "a", 4)])
    result = _window_table([("12:00:00", "12:01:00", "a", 2), ("12:00:00", "12:01:00", "b", 1)])
    overall, per_window = completeness(result, exact)
    assert overall == pytest.approx(3 / 8)
    assert per_window.values.tolist() == [
        [T("2024-01-01 12:00:00"), T("2024-01-01 12:01:00"), 3, 4, 0.75],
        [T("2024-01-01 12:01:00"), T("2024-01-01 12:02:00"), 0, 4, 0.0],
    ]
    assert completeness(exact, exact)[0] == 1.0


def test_completeness_of_empty_tables() -> None:
    empty = _window_table([])
    overall, per_window = completeness(empty, empty)
    assert overall == 1.0 and per_window.empty
    assert list(per_window.columns) == ["window_start", "window_end", "counted", "exact", "completeness"]
    assert completeness(empty, _window_table([("12:00:00", "12:01:00", "a", 2)]))[0] == 0.0


# ---------------------------------------------------------- sampling and charts


def _many_classified(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``n`` events one second apart, ten per file, every 50th five minutes late; watermark 30 s behind."""
    start = T("2024-01-01 12:00:00")
    times = [start + pd.Timedelta(seconds=i - (300 if i % 50 == 7 else 0)) for i in range(n)]
    events = _events([(i // 10, str(time.time()), "k") for i, time in enumerate(times)])
    files = (n + 9) // 10
    batches = _batches([None] + [str((start + pd.Timedelta(seconds=10 * f - 30)).time()) for f in range(1, files)])
    return classify(events, batches, MINUTE), batches


def test_sample_events_keeps_every_dropped_event_deterministically() -> None:
    classified, _ = _many_classified(1200)
    not_counted = int((classified["status"] != "counted").sum())
    assert not_counted == 23  # the first late event arrives before there is a watermark
    sample = sample_events(classified, 300)
    assert len(sample) == 300
    assert int((sample["status"] != "counted").sum()) == not_counted
    assert sample.equals(sample_events(classified, 300))
    assert sample["event_id"].is_unique
    assert len(sample_events(classified, 10)) == 10
    assert sample_events(classified, 5000).equals(classified)


def test_charts_draw_events_step_lines_and_lateness_marks() -> None:
    classified, batches = _many_classified(1200)
    figure = arrival_figure(classified, batches, max_points=300)
    names = [trace.name for trace in figure.data]
    assert any(name.startswith("counted") for name in names) and any(name.startswith("not counted") for name in names)
    assert names[-2:] == ["max event time seen", "watermark applied"]
    assert figure.data[-1].line.shape == "hv"
    assert sum(len(trace.x) for trace in figure.data[:-2]) == 300
    assert "showing 300 of 1200" in figure.layout.title.text
    assert len(arrival_figure(classified, batches, x="time").data) == len(figure.data)
    histogram = lateness_figure(classified)
    assert histogram.data[0].type == "histogram"
    texts = [annotation.text for annotation in histogram.layout.annotations]
    assert any(text.startswith("p99") for text in texts) and any("keeps 99%" in text for text in texts)


def test_hours_of_lateness_are_drawn_in_hours() -> None:
    events = _events([(0, "10:00:00", "a"), (0, "11:00:00", "a"), (1, "13:00:00", "a"), (2, "08:00:00", "a"), (2, "09:00:00", "b")])
    histogram = lateness_figure(classify(events, _batches([None, "10:59:00", "12:59:00"]), MINUTE))
    assert histogram.layout.xaxis.title.text.startswith("lateness (hours behind")
    assert max(histogram.data[0].x) == 5.0  # 08:00 arrived after 13:00
    assert any(text.startswith("a 5.0 h watermark keeps") for text in (annotation.text for annotation in histogram.layout.annotations))


def test_charts_of_empty_input_are_valid_figures_with_a_note() -> None:
    empty = classify(_events([]), _batches([]), MINUTE)
    for figure in (arrival_figure(empty, _batches([])), lateness_figure(empty)):
        assert figure.data == ()
        assert "No events" in figure.layout.annotations[0].text
        figure.to_json()


# ------------------------------------------------------------------ with Spark


def _replay_with_summaries(registry, config):
    """Like :func:`streaming.engine.run.runner.run_to_idle`, but also keeps the raw summaries (with source offsets)."""
    from streaming.engine.run.runner import Replay

    name = f"lateness_{uuid.uuid4().hex[:12]}"
    run = registry.start(config, name, max_rows=None)
    try:
        run.await_idle(300)
        summaries = run.log.summaries()
        return Replay(config, run.table.frame(), progress_frame(summaries)), summaries
    finally:
        registry.remove(name)


def test_guide_example_on_spark(registry, write_feed) -> None:
    from streaming.engine.query.config import FeedSource, QueryConfig

    feed = write_feed(GUIDE_BATCHES)
    config = QueryConfig(source=FeedSource(feed, seconds_per_file=0), window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="update")
    replay, summaries = _replay_with_summaries(registry, config)
    read = read_feed(feed)
    batches = file_batches(summaries)
    assert batches.equals(file_batches(replay.progress, read.rows_per_file))
    assert batches["watermark"].tolist()[3] == T("2016-05-10 12:11:00")
    classified = classify(read.events, batches, config.window_ms, config.slide_ms)
    summary = drop_summary(classified, summaries)
    assert classified.loc[classified["status"] == "not counted", ["event_time", "key"]].values.tolist() == [[T("2016-05-10 12:04:00"), "donkey"]]
    assert (summary["not_counted"], summary["partly_counted"], summary["pairs_dropped"]) == (1, 0, 2)
    assert summary["rows_dropped_by_watermark"] == 2 == replay.rows_dropped_by_watermark
    assert summary["groups_dropped"] == 2
    # The result holds every (event, window) pair but the donkey's two.
    assert int(replay.result["count"].sum()) == summary["pairs_total"] - summary["pairs_dropped"]


@pytest.mark.parametrize(
    ("files", "window", "slide", "watermark"),
    [(16, "1 minute", "30 seconds", "1 minute"), (12, "2 minutes", None, "30 seconds")],
    ids=["sliding-first-16-files", "tumbling-first-12-files"],
)
def test_web_clicks_dropped_pairs_match_exact_minus_counted(registry, spark, tmp_path, files, window, slide, watermark) -> None:
    """Each replay costs a fraction of a second per file, so each case replays the feed's first files only (late rows among them)."""
    from streaming.analysis.exact import exact_counts
    from streaming.engine.run.runner import replay

    feed_dir = tmp_path / "web_clicks"
    feed_dir.mkdir()
    for path in sorted((SAMPLE_FEEDS / "web_clicks").glob("*.csv"))[:files]:
        shutil.copyfile(path, feed_dir / path.name)
    run = replay(registry, feed_dir, window=window, slide=slide, watermark=watermark)
    read = read_feed(feed_dir)
    batches = file_batches(run.progress, read.rows_per_file)
    assert len(batches) == files
    classified = classify(read.events, batches, run.config.window_ms, run.config.slide_ms)
    summary = drop_summary(classified, run.progress)

    # Independent check: per window and key, exact - counted == the pairs we say were dropped.
    exact = exact_counts(spark, feed_dir, window, slide)
    keys = ["window_start", "window_end", "key"]
    diff = exact.merge(run.result, on=keys, how="left", suffixes=("_exact", "_counted")).fillna({"count_counted": 0})
    diff["missing"] = diff["count_exact"] - diff["count_counted"].astype("int64")
    missing = diff.loc[diff["missing"] != 0, keys + ["missing"]].sort_values(keys, ignore_index=True)
    ours = dropped_by_window(classified).rename(columns={"dropped": "missing"})
    assert missing.values.tolist() == ours.values.tolist()
    assert int(diff["missing"].sum()) == summary["pairs_dropped"] > 0
    assert summary["not_counted"] > 0 and summary["events_total"] == len(read.events) == sum(read.rows_per_file) - read.malformed

    # Spark's metric counts (window, key) groups per batch, not events or pairs.
    assert summary["rows_dropped_by_watermark"] == summary["groups_dropped"]

    # Completeness agrees with the pair count, and the watermark is max(earlier files) - delay.
    overall, per_window = completeness(run.result, exact)
    assert overall == pytest.approx(1 - summary["pairs_dropped"] / summary["pairs_total"])
    assert per_window["exact"].sum() == summary["pairs_total"]
    delay = pd.Timedelta(milliseconds=run.config.watermark_ms)
    prior_max = read.events.groupby("file_index")["event_time"].max().cummax().shift(1)
    assert (batches["watermark"].iloc[1:] == (prior_max.iloc[1:] - delay).to_numpy()).all()
    on_time = classified["lateness"] <= delay
    assert (classified.loc[on_time, "status"] == "counted").all()


def test_text_a_spreadsheet_would_run_is_neutralised_for_csv_and_numbers_are_left() -> None:
    from streaming.analysis.spreadsheet import neutralise_formulas

    frame = pd.DataFrame({"key": ['=HYPERLINK("http://x")', "-12.5", "ok", "@SUM(A1)", "+1 555", "\tx", None], "n": range(7)})
    safe, changed = neutralise_formulas(frame)
    assert safe["key"].tolist() == ["'=HYPERLINK(\"http://x\")", "-12.5", "ok", "'@SUM(A1)", "'+1 555", "'\tx", None]
    assert changed == 4 and safe["n"].tolist() == list(range(7)) and frame["key"].iloc[0] == '=HYPERLINK("http://x")'  # the input is not changed
