"""A replay explained batch by batch: the guide's late-data example step by step, and ``explain``'s output held to plain PySpark's sink."""

from __future__ import annotations

import itertools
import json
import uuid
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from support import GUIDE_BATCHES, feed_lockstep

from streaming.analysis.explain import explain_replay
from streaming.engine.query.config import FeedSource, QueryConfig
from streaming.engine.run.runner import run_to_idle
from streaming.feedgen import FeedSpec
from streaming.feedgen import write_feed as write_spec_feed

T = "2016-05-10 12:{:02d}:00".format

# The guide's "Handling Late Data and Watermarking" figures (10-minute windows sliding every 5, a 10-minute watermark):
# per trigger, the result table and the rows that trigger changed, as (window start minute, key) -> count.
GUIDE_UPDATE = [
    ({(0, "dog"): 1, (0, "owl"): 1, (5, "dog"): 1, (5, "owl"): 1}, {(0, "dog"), (0, "owl"), (5, "dog"), (5, "owl")}),
    ({(0, "dog"): 1, (0, "owl"): 1, (0, "cat"): 1, (5, "dog"): 2, (5, "owl"): 1, (5, "cat"): 1, (10, "dog"): 1}, {(0, "cat"), (5, "dog"), (5, "cat"), (10, "dog")}),
    (
        {
            (0, "dog"): 2, (0, "owl"): 1, (0, "cat"): 1, (5, "dog"): 3, (5, "owl"): 2, (5, "cat"): 1, (10, "dog"): 1,
            (10, "cat"): 1, (10, "owl"): 1, (15, "cat"): 1, (15, "owl"): 1, (20, "owl"): 1,
        },
        {(0, "dog"), (5, "dog"), (5, "owl"), (10, "cat"), (10, "owl"), (15, "cat"), (15, "owl"), (20, "owl")},
    ),
]
GUIDE_UPDATE.append(({**GUIDE_UPDATE[2][0], (10, "owl"): 2, (15, "owl"): 2}, {(10, "owl"), (15, "owl")}))
# Append mode: nothing until the watermark passes 12:10 (it is 12:11 after the third trigger), then 12:00-12:10 once, final.
GUIDE_APPEND_LAST = {(0, "dog"): 2, (0, "owl"): 1, (0, "cat"): 1}


@pytest.fixture(scope="module")
def guide_feed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("guide") / "feed"
    folder.mkdir()
    for index, rows in enumerate(GUIDE_BATCHES):
        (folder / f"batch_{index:03d}.csv").write_text("event_time,key\n" + "".join(f"{time},{key}\n" for time, key in rows))
    return folder


def _slots(frame: pd.DataFrame) -> dict[tuple[int, str], int]:
    return {(row.window_start.minute, row.key): int(row.value) for row in frame.itertuples(index=False)}


@pytest.mark.parametrize("mode", ["update", "append"])
def test_the_guide_late_data_example_steps_as_its_figures(spark, registry, guide_feed: Path, mode: str) -> None:
    config = QueryConfig(FeedSource(guide_feed, seconds_per_file=0), window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode=mode)
    replay = run_to_idle(registry, config, outputs=True)
    steps = explain_replay(spark, replay)
    removed = replay.progress.set_index("batch_id")["state_rows_removed"]
    assert [step.batch_id for step in steps] == sorted(replay.progress["batch_id"])
    for step, following in itertools.pairwise(steps):
        assert step.watermark_after == following.watermark_before  # the watermark a batch leaves is the one Spark runs the next with
    assert all(len(step.evicted) == removed[step.batch_id] for step in steps)  # the windows let go of, as Spark counts them
    table: dict[tuple[int, str], int] = {}
    triggers = []
    for step in steps:
        table.update(_slots(step.output))
        if step.input_rows:
            triggers.append((dict(table), set(_slots(step.output[step.output["change"].isin(["added", "updated", "emitted"])]))))
    if mode == "update":
        assert triggers == GUIDE_UPDATE
    else:
        assert [result for result, _ in triggers] == [{}, {}, {}, GUIDE_APPEND_LAST]
        emitting = [step for step in steps if len(step.output)]
        assert len(emitting) == 1 and emitting[0].input_rows == 0 and set(emitting[0].output["change"]) == {"emitted"}
        assert "The watermark passed 12:10: append mode now emits 12:00–12:10 (cat 1, dog 2 and owl 1)" in emitting[0].caption
    last = steps[-1]
    assert last.rows["late"].tolist() == [False, True] and last.dropped[["key", "status"]].values.tolist() == [["donkey", "not counted"]]
    assert (
        "The donkey at 12:04 arrived when the watermark was 12:11: its windows 11:55–12:05 and 12:00–12:10 are closed, so it was dropped."
        in last.caption
    )
    moved = next(step for step in steps if step.input_rows == 4)
    assert moved.caption.endswith("The largest event time so far is 12:21, so the watermark moves to 12:11 (10 minutes behind it) for the next batch.")


LATE = FeedSpec(
    start=datetime(2026, 3, 2, 14, 0), batches=8, batch_interval_seconds=20, events_per_batch=30, keys=("a", "b", "c"),
    max_lag_seconds=20, late_share=0.2, late_delay_seconds=90, seed=5,
)


def _plain_batches(spark, files: list[Path], workdir: Path, mode: str) -> dict[int, list[list]]:
    """Plain PySpark's sink, batch by batch: the same sliding count fed one file at a time, each batch's rows as ``explain --json`` writes them."""
    from pyspark.sql import functions as F

    received: dict[int, list[list]] = {}

    def keep(frame, batch_id: int) -> None:
        fmt = "yyyy-MM-dd HH:mm:ss"
        rows = frame.select(F.date_format("window.start", fmt), F.date_format("window.end", fmt), "key", F.col("count").cast("long")).collect()
        received[batch_id] = sorted([list(row) for row in rows])

    staging = workdir / f"plain_{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    frame = (
        spark.readStream.schema("event_time string, key string").option("header", True).option("maxFilesPerTrigger", 1).csv(str(staging))
        .select(F.try_to_timestamp(F.col("event_time"), F.lit("yyyy-MM-dd HH:mm:ss")).alias("event_time"), F.col("key"))
        .where(F.col("event_time").isNotNull() & F.col("key").isNotNull())
        .withWatermark("event_time", "30 seconds")
        .groupBy(F.window("event_time", "1 minute", "30 seconds"), F.col("key"))
        .count()
    )
    query = frame.writeStream.foreachBatch(keep).outputMode(mode).option("checkpointLocation", str(staging) + "-checkpoint").start()
    try:
        feed_lockstep(query, files, staging)
    finally:
        query.stop()
    return received


def test_explain_json_holds_what_plain_pysparks_sink_received_batch_by_batch(spark, cli, tmp_path: Path) -> None:
    feed = tmp_path / "feed"
    write_spec_feed(LATE, feed)
    out = tmp_path / "explain.json"
    done = cli("explain", str(feed), "--window", "1 minute", "--slide", "30 seconds", "--watermark", "30 seconds", "--json", str(out))
    assert done.returncode == 0, done.stderr
    batches = json.loads(out.read_text())["batches"]
    plain = _plain_batches(spark, sorted(feed.glob("*.csv")), tmp_path, "update")
    ours = {batch["batch_id"]: sorted([row["window_start"], row["window_end"], row["key"], row["value"]] for row in batch["output"]) for batch in batches}
    assert {batch: rows for batch, rows in ours.items() if rows} == {batch: rows for batch, rows in plain.items() if rows}
    assert sum(len(batch["dropped"]) for batch in batches) > 0  # the feed's late rows reach closed windows
    assert all(row["rule"] == "window end at or before the watermark" and row["windows"] for batch in batches for row in batch["dropped"])
    assert [batch["caption"] for batch in batches] == done.stdout.strip().splitlines()
    for batch, following in itertools.pairwise(batches):
        assert batch["watermark_after"] == following["watermark_before"]


def _progress(batch: int, rows: int, watermark: str | None, latest: str | None, files: tuple[int | None, int], state: int = 0) -> dict:
    """A micro-batch's progress as Spark reports it, for a feed replay: ``files`` are its start and end file offsets."""
    from streaming.engine.output.progress import summarize

    start, end = files
    return summarize({
        "batchId": batch, "timestamp": f"2024-06-01T10:00:0{batch}.000Z", "numInputRows": rows, "durationMs": {"triggerExecution": 10},
        "eventTime": {**({"watermark": f"2024-01-01T{watermark}.000Z"} if watermark else {}), **({"max": f"2024-01-01T{latest}.000Z"} if latest else {})},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": state}],
        "sources": [{"startOffset": None if start is None else {"logOffset": start}, "endOffset": {"logOffset": end}}],
    })


def test_a_keyless_sum_with_a_null_value_is_told_and_reported_as_html_that_escapes_the_data() -> None:
    """No Spark: canned progress and outputs of a keyless sum per minute, its second minute's value null; a pass-through query's empty result keeps its columns."""
    from streaming.analysis.explain import explain, result_after
    from streaming.engine.query.config import ColumnMapping
    from streaming.report import ReportRun, steps_report

    us = lambda text: int(pd.Timestamp(f"2024-01-01 {text}").value // 1000)  # noqa: E731
    feed = Path(__file__).resolve().parents[2] / "sample_feeds" / "scenarios" / "zero_delay"
    source = FeedSource(feed, seconds_per_file=0, columns=ColumnMapping(event_time="event_time", time_format="yyyy-MM-dd HH:mm:ss", key=None, value="id"))
    config = QueryConfig(source, window="1 minute", watermark="30 seconds", aggregation="sum", output_mode="update")
    summaries = [
        _progress(0, 2, None, "12:00:40", (None, 0), 1),
        _progress(1, 1, "12:00:10", "12:01:35", (0, 1), 2),
        _progress(2, 0, "12:01:05", None, (1, 1), 1),
    ]
    outputs = {0: [(us("12:00:00"), us("12:01:00"), None, 3.5, 2)], 1: [(us("12:01:00"), us("12:02:00"), None, None, 1)]}
    events = pd.DataFrame({
        "event_time": pd.to_datetime(["2024-01-01 12:00:05", "2024-01-01 12:00:40", "2024-01-01 12:01:35"]),
        "key": [None, None, "<b>bold</b>"], "file_index": [0, 0, 1],
    })
    steps = explain(config, summaries, outputs, events)
    assert [step.read_new for step in steps] == [True, True, False]
    assert steps[0].caption.startswith("Batch 0 read 2 rows: (no key) at 12:00:05 and (no key) at 12:00:40. It added 1 result row: 12:00:00–12:01:00 (no key) 3.5.")
    assert "12:01:00–12:02:00 (no key) null" in steps[1].caption and pd.isna(steps[1].output["value"].iloc[0])
    assert steps[2].caption.startswith("Batch 2 read no rows: Spark ran it because the watermark had moved to 12:01:05.")
    assert [len(step.evicted) for step in steps] == [0, 0, 1]  # 12:00-12:01, once the watermark passes its end
    assert list(result_after(steps, 1, "update")["change"]) == ["", "added"]
    assert json.loads(json.dumps([step.to_json() for step in steps]))[1]["output"][0]["value"] is None
    page = steps_report("A <title>", "summary & more", [ReportRun(config, steps)])
    assert "<b>bold</b>" not in page and "&lt;b&gt;bold&lt;/b&gt;" in page and "A &lt;title&gt;" in page and "NaT" not in page
    assert page.count("<script") >= 1 and "plotly" in page.lower()
    from streaming.charts.walkthrough import steps_figure
    from streaming.report import figures_report

    assert steps_figure(steps).layout.yaxis.title.text == "event time on 2024-01-01 (UTC)"  # the day once, not under a tick a narrow page clips
    shared = figures_report("Tuner <x>", ["a & b"], [steps_figure(steps), steps_figure(steps)], [("rows <t>", steps[0].output)])
    assert "Tuner &lt;x&gt;" in shared and "a &amp; b" in shared and "rows &lt;t&gt;" in shared and shared.count("plotly.js v") == 1
    precise = events.assign(event_time=events["event_time"] + pd.Timedelta(milliseconds=250))
    told = explain(config, summaries[:1], {}, precise)
    assert "(no key) at 12:00:05.250 and (no key) at 12:00:40.250" in told[0].caption  # times below a second kept, in words and tables
    assert "<td>2024-01-01 12:00:05.25</td>" in steps_report("ms", "", [ReportRun(config, told)])
    passing = QueryConfig(FeedSource(feed, seconds_per_file=0), window="1 minute", aggregation="none", output_mode="append")
    quiet = explain(passing, summaries[:1], {}, None)
    assert list(result_after(quiet, 0, "append").columns) == ["event_time", "key", "change"]


def test_many_rows_dropped_in_one_batch_are_told_in_one_sentence_a_rule() -> None:
    """No Spark: three rows late for every window they belong to come in one batch; the caption names them in one sentence, not three."""
    from streaming.analysis.explain import explain

    feed = Path(__file__).resolve().parents[2] / "sample_feeds" / "guide_words"
    config = QueryConfig(FeedSource(feed, seconds_per_file=0), window="1 minute", watermark="30 seconds", output_mode="update")
    summaries = [  # the no-data batch after the first moves the watermark the third batch's rows are judged by
        _progress(0, 1, None, "12:01:00", (None, 0), 1), _progress(1, 0, "12:00:30", None, (0, 0), 1), _progress(2, 3, "12:00:30", "11:59:30", (0, 1), 1),
    ]
    events = pd.DataFrame({
        "event_time": pd.to_datetime(["2024-01-01 12:01:00", "2024-01-01 11:59:10", "2024-01-01 11:59:20", "2024-01-01 11:59:30"]),
        "key": ["a", "b", "c", "d"], "file_index": [0, 1, 1, 1],
    })
    caption = explain(config, summaries, {}, events)[2].caption
    assert "3 rows arrived when the watermark was 12:00:30 (the b at 11:59:10, the c at 11:59:20 and the d at 11:59:30): " \
           "every window each belongs to is closed, so they were dropped." in caption, caption
    assert caption.count("arrived when the watermark was") == 1
