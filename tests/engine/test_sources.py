"""Every source kind starts through the registry, produces rows and stops (real Spark)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from support import GUIDE_BATCHES, ROOT

from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_files, feed_header
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import FeedSource, GeneratorSource, QueryConfig, RateMicroBatchSource, RateSource, SocketSource
from streaming.engine.run.query import Run
from streaming.engine.sources import FeedReplayer, LineServer, generator_columns

GUIDE = SAMPLE_FEEDS / "guide_words"
BASE_MS = 1_700_000_000_000


def wait_for(run: Run, condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail after ``timeout`` seconds, or at once if the query failed."""
    deadline = time.monotonic() + timeout
    while not condition():
        if run.status == "failed":
            pytest.fail(f"{run.name} failed while waiting for {what}: {run.error}")
        if time.monotonic() > deadline:
            pytest.fail(f"{run.name}: no {what} after {timeout} s (status {run.status}, {len(run.log)} batches)")
        time.sleep(0.1)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def total_count(run: Run) -> int:
    frame = run.table.frame()
    return int(frame["count"].sum()) if len(frame) else 0


# -- the generator's columns, on a static frame ----------------------------------------------


def generated(spark, source: GeneratorSource, n: int = 2_000) -> list[tuple[int, int, str]]:
    """``(value, lag_ms, key)`` for values ``0..n-1`` arriving at ``BASE_MS``, in value order."""
    from pyspark.sql import functions as F

    rate_like = spark.range(n).select(F.col("id").alias("value"), F.timestamp_millis(F.lit(BASE_MS)).alias("timestamp"))
    rows = (
        rate_like.select("value", *generator_columns(source))
        .select("value", (F.lit(BASE_MS) - F.unix_millis("event_time")).alias("lag_ms"), "key")
        .orderBy("value")
        .collect()
    )
    return [(row.value, row.lag_ms, row.key) for row in rows]


def test_a_stalled_generator_stops_its_event_time_while_events_keep_coming(spark) -> None:
    from pyspark.sql import functions as F

    source = GeneratorSource(events_per_second=10, max_lag="0 seconds", late_share=0.0, stall_after="30 seconds")
    arrivals = spark.range(1_000).select(F.col("id").alias("value"), F.timestamp_millis(F.lit(BASE_MS) + F.col("id") * 100).alias("timestamp"))
    rows = arrivals.select("value", F.unix_millis(generator_columns(source)[0]).alias("event_ms")).orderBy("value").collect()
    times = [row.event_ms - BASE_MS for row in rows]
    assert times[:300] == [value * 100 for value in range(300)]  # 10 events a second until 30 s of event time
    assert set(times[300:]) == {30_000}  # then the clock stands still while 700 more events arrive
    with pytest.raises(ConfigError, match="stall_after"):
        GeneratorSource(stall_after="0 seconds")


def test_generator_is_deterministic_for_a_seed(spark) -> None:
    source = GeneratorSource(keys=5, max_lag="20 seconds", late_share=0.1, late_delay="2 minutes", seed=11)
    first = generated(spark, source)
    second = generated(spark, GeneratorSource(keys=5, max_lag="20 seconds", late_share=0.1, late_delay="2 minutes", seed=11))
    assert first == second
    assert [value for value, _, _ in first] == list(range(2_000))

    lags = [lag for _, lag, _ in first]
    on_time = [lag for lag in lags if lag <= 20_000]
    late = [lag for lag in lags if lag > 20_000]
    assert all(0 <= lag <= 20_000 for lag in on_time)
    assert all(120_000 <= lag <= 140_000 for lag in late)
    assert 100 <= len(late) <= 300  # ~10 % of 2000
    assert len(set(on_time)) > 500  # spread over the lag range, not one constant
    assert {key for _, _, key in first} == {f"key-{i}" for i in range(5)}


def test_generator_seed_changes_the_sequence(spark) -> None:
    a = generated(spark, GeneratorSource(seed=1), n=200)
    b = generated(spark, GeneratorSource(seed=2), n=200)
    assert [lag for _, lag, _ in a] != [lag for _, lag, _ in b]
    assert [key for _, _, key in a] != [key for _, _, key in b]


def test_generator_without_lateness(spark) -> None:
    rows = generated(spark, GeneratorSource(keys=1, max_lag="0", late_share=0.0), n=50)
    assert {lag for _, lag, _ in rows} == {0}
    assert {key for _, _, key in rows} == {"key-0"}


# -- feeders without Spark --------------------------------------------------------------------


def test_feed_replayer_stages_in_order_stamped_with_the_hand_over_time(tmp_path) -> None:
    import itertools
    import time

    files = feed_files(GUIDE)
    replayer = FeedReplayer(files[:3], tmp_path / "staging", seconds_per_file=0)
    assert replayer.stepped
    staged = []
    before_ms = time.time_ns() // 1_000_000
    while replayer.stage_next():
        staged.append(sorted((tmp_path / "staging").iterdir())[-1])
    assert replayer.done.is_set()
    assert [p.name for p in staged] == [f"{i:06d}-{f.name}" for i, f in enumerate(files[:3])]
    assert [p.read_bytes() for p in staged] == [f.read_bytes() for f in files[:3]]
    assert all(p.stat().st_mtime_ns % 1_000_000 == 0 for p in staged)  # whole milliseconds, as Spark reads them
    mtimes_ms = [p.stat().st_mtime_ns // 1_000_000 for p in staged]
    assert all(later > earlier for earlier, later in itertools.pairwise(mtimes_ms))
    assert before_ms <= mtimes_ms[0] <= time.time_ns() // 1_000_000 + len(files)  # when it was handed over, not a made-up time
    assert not list((tmp_path / "staging").glob(".*"))

    resumed = FeedReplayer(files, tmp_path / "staging", seconds_per_file=0)  # a kept query's staging goes on after its files
    resumed.stage_all()
    later_ms = sorted(p.stat().st_mtime_ns // 1_000_000 for p in (tmp_path / "staging").iterdir())
    assert len(later_ms) == len(files) and len(set(later_ms)) == len(files) and later_ms[:3] == mtimes_ms


def test_a_paced_replay_whose_folder_goes_under_it_tells_why_once_to_each_who_asked(tmp_path) -> None:
    """Spark's file source lists nothing from a folder that went and waits for ever: the replay is what can tell the run to fail."""
    import shutil
    import threading

    staging = tmp_path / "kept" / "staging"
    replayer = FeedReplayer(feed_files(GUIDE)[:3], staging, seconds_per_file=1.0)
    told: list[str] = []
    lost = threading.Event()
    replayer.on_lost(lambda why: (told.append(why), lost.set()))
    replayer.start()
    try:
        deadline = time.monotonic() + 10
        while replayer.staged < 1:  # deleted during the pause after the first file, not while it is written
            assert time.monotonic() < deadline, "the first file was not handed over"
            time.sleep(0.01)
        shutil.rmtree(tmp_path / "kept")
        (tmp_path / "kept").write_text("not a folder")
        assert lost.wait(10), "the replay did not tell that it lost its folder"
        replayer.on_lost(told.append)  # asked after the loss: told at once
    finally:
        replayer.stop()
    assert len(told) == 2 and told[0] == told[1] and "was its folder deleted?" in told[0] and str(staging) in told[0]
    assert not replayer.done.is_set()


def test_feed_header_requires_event_time_and_key(tmp_path) -> None:
    assert feed_header(SAMPLE_FEEDS / "sensor_readings") == ["event_time", "key", "temperature"]
    (tmp_path / "a.csv").write_text("time,word\n2016-05-10 12:00:00,dog\n")
    with pytest.raises(ValueError, match=r"lacks \['event_time', 'key'\]"):
        feed_header(tmp_path)


def test_line_server_sends_data_lines(tmp_path) -> None:
    import socket

    server = LineServer(feed_files(GUIDE), lines_per_second=1_000)
    server.start()
    received = b""
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as client:
            client.settimeout(10)
            while received.count(b"\n") < 10:
                chunk = client.recv(4096)
                assert chunk, "server closed the connection early"
                received += chunk
        assert server.done.wait(10)
    finally:
        server.stop()
    lines = received.decode().splitlines()
    assert lines == [f"{t},{k}" for batch in GUIDE_BATCHES for t, k in batch]
    assert server.sent == 10


# -- each source through the registry -----------------------------------------------------------


def run_until_counted(registry, config: QueryConfig, keys: set[str], timeout: float = 120.0) -> Run:
    name = unique(f"src_{config.source.kind.replace('-', '_')}")
    run = registry.start(config, name)
    try:
        assert run.status == "active"
        wait_for(run, lambda: total_count(run) > 0, timeout, "counted rows")
        wait_for(run, lambda: any(s["num_input_rows"] > 0 for s in run.log.summaries()), timeout, "progress with input rows")
        assert set(run.table.frame()["key"]) <= keys
    finally:
        registry.remove(name)
    assert not run.query.isActive
    assert run.status == "stopped"
    assert not run.workdir.exists()
    assert registry.get(name) is None
    return run


def test_rate_source(registry) -> None:
    config = QueryConfig(RateSource(rows_per_second=20, keys=3), window="10 seconds", watermark="10 seconds",
                         trigger="processing_time", trigger_interval="1 second")
    run_until_counted(registry, config, {"key-0", "key-1", "key-2"})


def test_generator_source(registry) -> None:
    config = QueryConfig(GeneratorSource(events_per_second=20, keys=3, max_lag="2 seconds", late_share=0.1, late_delay="1 minute"),
                         window="10 seconds", watermark="30 seconds", trigger="processing_time", trigger_interval="1 second")
    run_until_counted(registry, config, {"key-0", "key-1", "key-2"})


def test_rate_micro_batch_source_with_progress_handed_over_as_json(registry, monkeypatch) -> None:
    from pyspark.sql.streaming import listener as pyspark_listener

    copied: list[object] = []

    def copied_field_by_field(cls, jprogress):
        copied.append(jprogress)
        raise AssertionError("the progress listener should read the progress's JSON, not PySpark's field-by-field copy")

    monkeypatch.setattr(pyspark_listener.StreamingQueryProgress, "fromJObject", classmethod(copied_field_by_field))
    config = QueryConfig(RateMicroBatchSource(rows_per_batch=6, advance="1 second", keys=2), window="5 seconds",
                         watermark="5 seconds", trigger="processing_time", trigger_interval="500 ms")
    run = run_until_counted(registry, config, {"key-0", "key-1"})
    inputs = [s["num_input_rows"] for s in run.log.summaries()]
    assert 6 in inputs
    assert set(inputs) <= {0, 6}  # exactly rows_per_batch per data batch
    assert copied == []


def test_socket_source(registry) -> None:
    config = QueryConfig(SocketSource(GUIDE, lines_per_second=200), window="1 hour", watermark=None)
    name = unique("src_socket")
    run = registry.start(config, name)
    try:
        # every line of the feed arrives and is counted, in one window of 12:00-13:00
        wait_for(run, lambda: total_count(run) == 10, 120, "all 10 lines counted")
        frame = run.table.frame()
        assert dict(zip(frame["key"], frame["count"])) == {"cat": 2, "dog": 3, "donkey": 1, "owl": 4}
        assert isinstance(run.feeder, LineServer) and run.feeder.done.is_set()
    finally:
        registry.remove(name)
    assert run.status == "stopped"
    assert not run.query.isActive


def test_available_now_on_a_feed_finishes_by_itself(registry) -> None:
    config = QueryConfig(FeedSource(GUIDE, seconds_per_file=0), window="10 minutes", slide="5 minutes",
                         watermark="10 minutes", output_mode="update", trigger="available_now")
    name = unique("src_available_now")
    run = registry.start(config, name)
    try:
        assert run.query.awaitTermination(180), "an available-now query should end by itself"
        assert run.status == "finished"
        assert run.error is None
        wait_for(run, lambda: sum(s["num_input_rows"] for s in run.log.summaries()) == 10, 30, "progress of every row")
        summaries = run.log.summaries()
        assert [s["num_input_rows"] for s in summaries if s["num_input_rows"]] == [2, 2, 4, 2]  # one file per batch
        assert max(pd.Timestamp(s["watermark"]) for s in summaries if pd.notna(s["watermark"])) == pd.Timestamp("2016-05-10 12:11:00")
        frame = run.table.frame()
        dog = frame[(frame["key"] == "dog") & (frame["window_start"] == pd.Timestamp("2016-05-10 12:05:00"))]
        assert dog["count"].tolist() == [3]
        # No watermark-only batch runs between the files here, and Spark filters late rows against the
        # previous batch's watermark (12:04 for the last file), so unlike a paced replay the donkey is counted.
    finally:
        registry.remove(name)
    assert run.status == "finished"  # stopping a finished run does not make it "stopped"


def test_duplicate_name_refused_while_active(registry) -> None:
    from streaming.engine.run.registry import DuplicateQueryError

    config = QueryConfig(RateMicroBatchSource(rows_per_batch=1), trigger="processing_time", trigger_interval="1 second")
    name = unique("src_dup")
    run = registry.start(config, name)
    try:
        with pytest.raises(DuplicateQueryError, match=name):
            registry.start(config, name)
        assert registry.get(name) is run
    finally:
        registry.remove(name)
    assert run.status == "stopped"


def test_failed_start_leaves_nothing_behind(registry, tmp_path) -> None:
    import tempfile

    (tmp_path / "batch-0000.csv").write_text("event_time,word\n2016-05-10 12:07:00,dog\n")
    name = unique("src_broken")
    with pytest.raises(ValueError, match=r"source.path: .* lacks \['key'\]"):
        registry.start(QueryConfig(FeedSource(tmp_path, seconds_per_file=0)), name)
    assert registry.get(name) is None
    assert not list(Path(tempfile.gettempdir()).glob(f"streaming-lab-{name}-*"))


V2_WRITE = "org.apache.spark.sql.execution.datasources.v2.WriteToDataSourceV2Exec"
STOP_NOISE = [
    ("org.apache.spark.storage.ShuffleBlockFetcherIterator", "Error occurred while fetching local blocks, null"),
    ("org.apache.spark.broadcast.TorrentBroadcast", "Store broadcast broadcast_247 fail, remove all pieces of the broadcast"),
    (V2_WRITE, "Data source write support MicroBatchWrite[epoch: 41, writer: NoopStreamingWrite] is aborting."),
    (V2_WRITE, "Data source write support MicroBatchWrite[epoch: 53, writer: NoopStreamingWrite] aborted."),
]


@pytest.mark.spark  # a JVM of its own: not for make test-fast
def test_the_lines_a_stop_makes_spark_log_are_dropped_and_no_others() -> None:
    """A stop interrupts the running batch; Spark logs these lines for the interrupt and rethrows. The driver's log configuration drops them, only them.

    A JVM of its own, whose standard error this test reads (the shared session's goes where pytest pointed it at launch).
    """
    script = f"""
from streaming.engine.runtime.session import get_session
spark = get_session()
for name, line in {STOP_NOISE!r}:
    logger = spark._jvm.org.apache.logging.log4j.LogManager.getLogger(name)
    logger.error(line)
    logger.error(line + " (not the stop: kept)")
spark._jvm.java.lang.System.err.flush()
spark.stop()
"""
    environ = dict(os.environ, PYTHONPATH=str(ROOT), SPARK_LOG_LEVEL="ERROR")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    for _, line in STOP_NOISE:
        assert f"{line} (not the stop: kept)" in done.stderr
        assert f"{line}\n" not in done.stderr


def test_a_replay_has_read_all_its_files_when_every_folder_a_source_reads_is_read_to_its_last_file(tmp_path) -> None:
    """Views of 10 and 40 files, a view joined with itself, a view the query never reads, a topic beside files, no batch yet."""
    from streaming.engine.sources.replayer import read_all

    short, long, unused = (str(tmp_path / name) for name in ("short", "long", "unused"))

    def source(folder: str, files: int) -> dict:
        return {"description": f"FileStreamSource[file:{folder}]", "endOffset": {"logOffset": files - 1}}

    handed = {short: 10, long: 40}
    assert read_all(handed, [source(short, 10), source(long, 40)])
    assert not read_all(handed, [source(short, 10), source(long, 39)])  # the longer view has a file to go
    assert not read_all({long: 40}, [source(long, 40), source(long, 20)])  # joined with itself: the slower source is behind
    assert read_all({**handed, unused: 5}, [source(short, 10), source(long, 40)])  # no source reads it: passed over
    topic = {"description": "KafkaV2[Subscribe[clicks]]", "endOffset": {"clicks": {"0": 12}}}
    assert not read_all(handed, [source(short, 10), topic]) and not read_all(handed, [])
