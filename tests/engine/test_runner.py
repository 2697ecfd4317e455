"""The headless runner on real Spark: the guide's watermark example, and agreement with plain PySpark.

Every replay stages one file at a time and waits for Spark to go idle in
between, so the batches Spark runs only because the watermark advanced run
between files. The "plain" query below does the same by hand with nothing of
``streaming`` but the feed: a file-source stream written to Spark's memory
sink, so the runner's result table must equal what Spark itself produced.
"""

from __future__ import annotations

import csv
import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pytest
from support import FEEDS, GUIDE, GUIDE_APPEND, GUIDE_BATCHES, GUIDE_COMPLETE, GUIDE_UPDATE, feed_folder, plain_memory_run, rec

from streaming.analysis.exact import exact_counts
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.run.runner import Replay, replay

STAMP = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def records(frame) -> list[dict]:
    """``exact_counts``-style frame as ``result_records()``-style dicts."""
    return [
        {
            "window_start": r.window_start.strftime("%Y-%m-%d %H:%M:%S"),
            "window_end": r.window_end.strftime("%Y-%m-%d %H:%M:%S"),
            "key": r.key,
            "count": int(r.count),
        }
        for r in frame.itertuples(index=False)
    ]


def feed_rows(files: list[Path]) -> tuple[int, int]:
    """``(data rows, malformed rows)`` of ``files``, counted in Python: a bad time or an empty key is malformed."""
    total = malformed = 0
    for path in files:
        with path.open(newline="") as handle:
            for row in csv.DictReader(handle):
                total += 1
                try:
                    datetime.strptime((row.get("event_time") or "").strip(), "%Y-%m-%d %H:%M:%S")
                except ValueError:
                    malformed += 1
                    continue
                if not (row.get("key") or "").strip():
                    malformed += 1
    return total, malformed


# -- the guide example ------------------------------------------------------------------

_GUIDE_REPLAYS: dict[str, Replay] = {}


def guide_replay(registry, folder: Path, mode: str) -> Replay:
    """The runner's replay of the guide example (written in ``folder``) in ``mode``: run once, then reused."""
    if mode not in _GUIDE_REPLAYS:
        _GUIDE_REPLAYS[mode] = replay(registry, folder, output_mode=mode, timeout=300, **GUIDE)
    return _GUIDE_REPLAYS[mode]


@pytest.mark.parametrize(
    ("mode", "expected", "dropped"),
    [("append", GUIDE_APPEND, 2), ("update", GUIDE_UPDATE, 2), ("complete", GUIDE_COMPLETE, 0)],
)
def test_guide_example(spark, registry, write_feed, tmp_path, mode: str, expected: list[dict], dropped: int) -> None:
    folder = write_feed(GUIDE_BATCHES)
    with ThreadPoolExecutor(max_workers=1) as pool:
        plain = pool.submit(plain_spark, spark, sorted(folder.glob("*.csv")), tmp_path, mode=mode, **GUIDE)
        outcome = guide_replay(registry, folder, mode)
        plain_rows = plain.result(timeout=300)
    # Spark counts the dropped donkey once per window it expands into (11:55 and 12:00): 2 rows
    assert outcome.rows_dropped_by_watermark == dropped
    assert outcome.final_watermark.strftime("%Y-%m-%d %H:%M:%S") == "2016-05-10 12:11:00"
    assert outcome.result_records() == expected
    assert outcome.input_rows == 10
    assert outcome.malformed_rows == 0
    # every file became its own batch: the per-batch input rows, without the no-data batches, are the files' sizes
    data_batches = [int(n) for n in outcome.progress["num_input_rows"] if n > 0]
    assert data_batches == [len(rows) for rows in GUIDE_BATCHES]
    # plain PySpark on the same files agrees
    assert plain_rows == expected
    if mode == "complete":
        # complete mode drops nothing: it is the exact batch answer
        assert outcome.result_records() == records(exact_counts(spark, folder, GUIDE["window"], GUIDE["slide"]))


def test_sample_guide_words_is_the_guide_example(write_feed) -> None:
    written = write_feed(GUIDE_BATCHES)
    shipped = sorted((SAMPLE_FEEDS / "guide_words").glob("*.csv"))
    assert [p.name for p in shipped] == [p.name for p in sorted(written.glob("*.csv"))]
    for ours, theirs in zip(sorted(written.glob("*.csv")), shipped):
        assert ours.read_text() == theirs.read_text()


# -- the JSON report ---------------------------------------------------------------------


def test_to_json_shape(registry, write_feed) -> None:
    outcome = guide_replay(registry, write_feed(GUIDE_BATCHES), "update")
    report = json.loads(json.dumps(outcome.to_json()))  # JSON-serializable as it is
    assert {"result", "rows_dropped_by_watermark", "final_watermark", "batches"} <= set(report)
    assert report["result"] == [{**record, "value": record["count"]} for record in GUIDE_UPDATE]
    assert report["rows_dropped_by_watermark"] == 2
    assert report["final_watermark"] == "2016-05-10 12:11:00"
    assert report["input_rows"] == 10 and report["malformed_rows"] == 0
    batches = report["batches"]
    assert [b["batch_id"] for b in batches] == list(range(len(batches)))
    for batch in batches:
        assert {"batch_id", "input_rows", "watermark", "rows_dropped_by_watermark", "state_rows", "duration_ms"} <= set(batch)
        assert all(isinstance(batch[k], int) for k in ("input_rows", "rows_dropped_by_watermark", "state_rows", "duration_ms"))
        assert batch["duration_ms"] >= 0
        assert batch["watermark"] is None or STAMP.match(batch["watermark"])
    assert batches[0]["watermark"] is None  # Spark's epoch "no watermark yet"
    assert sum(b["input_rows"] for b in batches) == 10
    assert sum(b["rows_dropped_by_watermark"] for b in batches) == 2
    assert max(b["watermark"] for b in batches if b["watermark"]) == "2016-05-10 12:11:00"
    assert batches[-1]["state_rows"] > 0
    for row in report["result"]:
        assert STAMP.match(row["window_start"]) and STAMP.match(row["window_end"])


# -- malformed rows ----------------------------------------------------------------------


def test_malformed_rows_are_counted_not_fatal(registry, tmp_path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "batch-0000.csv").write_text(
        "event_time,key\n"
        "2016-05-10 12:01:00,dog\n"
        "not-a-time,dog\n"
        "2016-05-10 12:02:00,\n"
        ",owl\n"
        "2016-13-45 99:99:99,cat\n"
    )
    (folder / "batch-0001.csv").write_text(
        "event_time,key\n"
        "2016-05-10 12:03:00\n"  # missing the key column altogether
        "2016-05-10 12:04:00,cat\n"
        "2016-05-10 12:05:00,   \n"  # a blank key
    )
    assert feed_rows(sorted(folder.glob("*.csv"))) == (8, 6)
    outcome = replay(registry, folder, window="10 minutes", watermark="10 minutes", output_mode="update", timeout=300)
    assert outcome.input_rows == 8
    assert outcome.malformed_rows == 6
    assert outcome.result_records() == [rec("12:00", "12:10", "cat", 1), rec("12:00", "12:10", "dog", 1)]
    report = outcome.to_json()
    assert report["malformed_rows"] == 6
    assert [b["malformed_rows"] for b in report["batches"] if b["input_rows"]] == [4, 2]


# -- agreement with plain PySpark ----------------------------------------------------------





def plain_spark(spark, files: list[Path], workdir: Path, *, window: str, slide: str | None, watermark: str, mode: str) -> list[dict]:
    """The same windowed count in plain PySpark, written to the memory sink, fed one file at a time."""
    from pyspark.sql import functions as F

    with files[0].open(newline="") as handle:
        header = next(csv.reader(handle))

    def counts(staging: str):
        return (
            spark.readStream.schema(", ".join(f"`{column}` string" for column in header))
            .option("header", True)
            .option("maxFilesPerTrigger", 1)
            .csv(staging)
            .select(F.try_to_timestamp(F.col("event_time"), F.lit("yyyy-MM-dd HH:mm:ss")).alias("event_time"), F.col("key"))
            .where(F.col("event_time").isNotNull() & F.col("key").isNotNull())
            .withWatermark("event_time", watermark)
            .groupBy(F.window("event_time", window, slide or window), F.col("key"))
            .count()
        )

    def read(table) -> list[dict]:
        fmt = "yyyy-MM-dd HH:mm:ss"
        table = table.select(
            F.date_format("window.start", fmt).alias("window_start"),
            F.date_format("window.end", fmt).alias("window_end"),
            "key",
            F.col("count").cast("long").alias("count"),
        )
        if mode == "update":
            # every change of a window was appended; counts only grow, so the largest is the latest
            table = table.groupBy("window_start", "window_end", "key").agg(F.max("count").alias("count"))
        return sorted((row.asDict() for row in table.collect()), key=lambda r: (r["window_start"], r["window_end"], r["key"]))

    return plain_memory_run(spark, files, workdir, counts, mode, read)


@pytest.mark.parametrize("mode", ["append", "update", "complete"])
@pytest.mark.parametrize("feed", list(FEEDS))
def test_runner_equals_plain_pyspark(spark, registry, tmp_path, feed: str, mode: str) -> None:
    _, window, slide, watermark = FEEDS[feed]
    folder = feed_folder(feed, tmp_path)
    files = sorted(folder.glob("*.csv"))
    with ThreadPoolExecutor(max_workers=1) as pool:  # the two independent queries share the session's cores
        future = pool.submit(plain_spark, spark, files, tmp_path, window=window, slide=slide, watermark=watermark, mode=mode)
        outcome: Replay = replay(registry, folder, window=window, slide=slide, watermark=watermark, output_mode=mode, timeout=300)
        plain = future.result(timeout=300)

    assert plain, "plain Spark produced no rows: the comparison would prove nothing"
    assert len({(r["window_start"], r["window_end"], r["key"]) for r in plain}) == len(plain), "plain rows repeat a window"
    assert outcome.result_records() == plain

    total, malformed = feed_rows(files)
    assert outcome.input_rows == total
    assert outcome.malformed_rows == malformed
    if feed == "web_clicks":
        assert malformed > 0, "web_clicks' first files hold malformed rows"
    if mode == "complete":
        # complete mode drops nothing: the result is the exact batch answer
        assert outcome.rows_dropped_by_watermark == 0
        assert outcome.result_records() == records(exact_counts(spark, folder, window, slide))
    else:
        assert outcome.rows_dropped_by_watermark > 0, "the setting should make some rows late"


def test_stamps_keep_a_fraction_of_a_second_only_when_there_is_one() -> None:
    import pandas as pd

    from streaming.engine.output.results import stamp as _stamp

    assert _stamp(pd.Timestamp("2026-03-02 14:01:01")) == "2026-03-02 14:01:01"
    assert _stamp(pd.Timestamp("2026-03-02 14:01:01.196")) == "2026-03-02 14:01:01.196"
    assert _stamp(pd.Timestamp("2026-03-02 14:01:01.000000005")) == "2026-03-02 14:01:01.000000005"
    assert _stamp(pd.NaT) is None


def scheduler_pools(spark, run) -> set[str]:
    """The pools Spark's scheduler ran ``run``'s stages in, as its status store recorded them (a skipped stage was never submitted)."""
    tracker, store = spark.sparkContext.statusTracker(), spark.sparkContext._jsc.sc().statusStore()
    stages = {stage for job in tracker.getJobIdsForGroup(str(run.query.runId)) if (info := tracker.getJobInfo(job)) is not None for stage in info.stageIds}
    attempts = [attempt for stage in stages if (attempt := _last_attempt(store, stage)) is not None]
    return {attempt.schedulingPool() for attempt in attempts if attempt.status().toString() not in ("SKIPPED", "PENDING")}


def _last_attempt(store, stage):
    """The status store's last attempt of ``stage``; ``None`` once the store let it go (it keeps the latest ``spark.ui.retainedStages``)."""
    from py4j.protocol import Py4JJavaError

    try:
        return store.lastStageAttempt(stage)
    except Py4JJavaError:
        return None


def test_a_replay_that_has_read_every_file_says_so_and_is_finished_when_another_users_query_needs_its_slot(registry, write_feed, tmp_path) -> None:
    """Two users on one server: each sees, stops, resumes and deletes only their own queries (another session stopped and deleted a
    user's kept query), while the slots are the server's: one user's replay idle at its end is finished for the other's. Each user's
    query runs its jobs in a pool of Spark's FAIR scheduler of their own, so neither waits behind the other's stages."""
    from support import wait_for

    from streaming.engine.errors import ConfigError
    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.checkpoints import KeptQuery
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.pools import pool_name

    feed = write_feed(GUIDE_BATCHES)
    config = QueryConfig(FeedSource(feed, seconds_per_file=0), window="10 minutes", watermark="10 minutes", output_mode="append")
    one_slot = QueryRegistry(registry.spark, max_active=1, kept_root=tmp_path / "kept")
    alice, bob = one_slot.for_owner("workspace:" + "a" * 32), one_slot.for_owner("user:bob@example.com")
    try:
        run = alice.start(config, "drained_replay", keep=True)
        assert not run.drained and not run.finish()  # nothing handed over yet: nothing to finish
        assert (run.owner, KeptQuery(run.workdir).owner) == (alice.owner, alice.owner)
        assert bob.runs() == [] and bob.get("drained_replay") is None and [kept.name for kept in bob.kept()] == []
        bob.stop("drained_replay")
        bob.remove("drained_replay")
        with pytest.raises(ConfigError, match="not a query of yours"):
            bob.delete("drained_replay")
        with pytest.raises(ConfigError, match="taken by another user's query"):
            bob.start(config, "drained_replay")
        with pytest.raises(ConfigError, match="none is yours: try again when another user's query or replay ends"):
            bob.start(config, "bobs_own")  # the slot is taken by a query the Queries page does not show bob
        with pytest.raises(ConfigError, match="stop one of yours on the Queries page first"):
            alice.start(config, "alices_second")
        run.await_idle(300)
        wait_for(lambda: run.drained, "not drained after every file was read")
        assert run.status == "active" and run.feeder.staged == len(GUIDE_BATCHES)
        emitted = len(run.table.frame())
        # the server's one slot: a replay idle at its end is finished to make room (three replays held 3 of 8 slots)
        other = bob.start(config, "next_replay")
        assert (run.status, other.status) == ("finished", "active") and len(run.table.frame()) == emitted > 0
        assert [item.name for item in alice.runs()] == ["drained_replay"] and [item.name for item in bob.runs()] == ["next_replay"]
        other.await_idle(300)
        wait_for(lambda: scheduler_pools(registry.spark, run) and scheduler_pools(registry.spark, other), "Spark's status store has no stage of a query")
        pools = (pool_name(alice.owner), pool_name(bob.owner))
        assert (scheduler_pools(registry.spark, run), scheduler_pools(registry.spark, other)) == ({pools[0]}, {pools[1]}) and pools[0] != pools[1]
        assert all(registry.spark.sparkContext._jsc.sc().getPoolForName(pool).isDefined() for pool in pools)  # FAIR: the scheduler made them
        assert [item.name for item in one_slot.runs()] == ["drained_replay", "next_replay"]  # the server's own view: every run
        operator = one_slot.for_owner("user:operator@example.com", sees_all=True)
        assert [item.name for item in operator.runs()] == ["drained_replay", "next_replay"] and operator.get("next_replay") is other
        with pytest.raises(ConfigError, match="not a kept query"):
            bob.resume("drained_replay")
        other.stop_soon()  # in the background, as the pages stop a query; a second stop at once takes its turn
        other.stop()
        wait_for(lambda: not other.stopping, "still stopping")
        assert other.status == "stopped" and not other.drained
        assert alice.delete("drained_replay") > 0 and one_slot.kept() == []
    finally:
        one_slot.close()


def test_a_micro_batch_over_its_budget_stops_its_run_and_says_why(tmp_path) -> None:
    """One SQL query's batch held a shared server for minutes; a batch past the server's budget now stops its query (Spark's stop cancels
    the batch's jobs), which fails with the reason, while one that goes on batch after batch is left alone."""
    from types import SimpleNamespace

    import pandas as pd
    from support import wait_for

    from streaming.engine.run.budgets import Budgets
    from streaming.engine.run.query import Run

    class Query:
        def __init__(self) -> None:
            self.isActive = True
            self.status = {"isTriggerActive": True}

        def stop(self) -> None:
            self.isActive = False

        def exception(self) -> None:
            return None

    def run(name: str, log) -> Run:
        sink = SimpleNamespace(error=None, close=lambda read=True: None)
        return Run(name, None, Query(), None, log, None, tmp_path, pd.Timestamp.now(), sink)  # type: ignore[arg-type]

    stuck, moving = run("stuck", SimpleNamespace(last_batch_id=3)), run("moving", SimpleNamespace(last_batch_id=0))
    budget = Budgets(batch_seconds=1)
    ended = threading.Event()

    def batches() -> None:  # the moving run's stream: a new batch every 0.2 s, never one batch past the budget
        while not ended.wait(0.2):
            moving.log.last_batch_id += 1

    threading.Thread(target=batches, daemon=True).start()
    try:
        stuck.watch(1, budget.overtime())
        moving.watch(1, budget.overtime())
        wait_for(lambda: stuck.status == "failed", "the stuck run was not stopped", 10)
        assert stuck.error is not None and "ran longer than 1 s, this server's budget (STREAMING_LAB_MAX_BATCH_SECONDS)" in stuck.error
        assert moving.status == "active" and moving.error is None
    finally:
        ended.set()
        moving.stop()
    assert moving.status == "stopped"


def test_a_batch_beyond_the_row_budget_fails_its_query_before_its_rows_are_collected(spark, write_feed) -> None:
    """A SQL query that multiplied its rows ran the server's memory out: at most the budget's rows of a batch are collected, one more
    stops the query with the reason."""
    from support import wait_for

    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.registry import QueryRegistry

    registry = QueryRegistry(spark, max_sink_rows=3)
    try:
        run = registry.start(QueryConfig(FeedSource(write_feed(GUIDE_BATCHES), seconds_per_file=0), output_mode="complete", arrival="busy", **GUIDE), "too_many")  # busy: every file at once
        wait_for(lambda: run.status != "active", "the query was not stopped", 120)
        assert run.status == "failed" and run.error is not None and "gave more than 3 rows" in run.error and "STREAMING_LAB_MAX_SINK_ROWS" in run.error
        assert run.table.frame().empty  # nothing of the batch was folded
    finally:
        registry.stop_all()
        spark.streams.removeListener(registry.listener)
