"""Spark Connect: the memory-sink path held to the classic session, the server the project starts, and the settings a client may send.

The replays over Connect run the CLI in a subprocess with ``SPARK_REMOTE`` set
(a Connect client in this process would turn the shared classic session's calls
into Connect calls); each is compared with the same replay on the classic session.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support import GUIDE, GUIDE_BATCHES, GUIDE_COMPLETE, ROOT, feed_folder
from support.cli import CONNECT_TIMEOUT, connect_cli

from streaming.engine.errors import ConfigError
from streaming.engine.output.sinks import MemorySinkReader, split_batches
from streaming.engine.run.runner import replay
from streaming.engine.runtime.session import CHECKPOINT_FILES, remote_address, server_reachable, session_settings


def connect_replay(server, folder: Path, tmp_path: Path, **settings: str | None) -> dict:
    out = tmp_path / f"connect-{len(list(tmp_path.glob('connect-*.json')))}.json"
    args = ["replay", str(folder), "--json", str(out)]
    for name, value in settings.items():
        if value is not None:
            args += [f"--{name.replace('_', '-')}", value]
    done = connect_cli(server, *args)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(out.read_text())


def test_settings_sent_by_a_connect_client_are_the_ones_it_may_change() -> None:
    settings = session_settings({"SPARK_REMOTE": "sc://127.0.0.1:15002"}, cores=4)
    assert settings == {
        "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4", "spark.sql.streaming.numRecentProgressUpdates": "100",
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILES,
    }


def test_a_connect_server_starts_again_on_its_last_port_or_on_connect_port(tmp_path: Path) -> None:
    """make connect took a new random port each time: a dashboard started with the old SPARK_REMOTE never reconnected after a restart."""
    from streaming.engine.runtime.connect import _free_port, chosen_port

    assert 0 < chosen_port(tmp_path, {}) < 65536  # nothing kept yet: a free port
    last = _free_port()
    (tmp_path / "port").write_text(f"{last}\n")
    assert chosen_port(tmp_path, {}) == last
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", last))
        assert chosen_port(tmp_path, {}) != last  # taken meanwhile: another free one
    assert chosen_port(tmp_path, {"CONNECT_PORT": "15002"}) == 15002
    with pytest.raises(ValueError, match="CONNECT_PORT: 'abc' is not a port"):
        chosen_port(tmp_path, {"CONNECT_PORT": "abc"})


def test_connect_urls_are_read_and_a_closed_port_is_unreachable() -> None:
    assert remote_address("sc://127.0.0.1:15123/;user_id=a") == ("127.0.0.1", 15123)
    assert remote_address("sc://spark.example") == ("spark.example", 15002)
    with pytest.raises(ConfigError, match=re.escape("SPARK_REMOTE: 'http://127.0.0.1:15002' is not a Spark Connect URL")):
        remote_address("http://127.0.0.1:15002")
    with pytest.raises(ConfigError, match="SPARK_REMOTE"):
        remote_address("sc://127.0.0.1:port")
    assert server_reachable("sc://127.0.0.1:port") is False
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert server_reachable(f"sc://127.0.0.1:{port}", timeout=0.5) is False  # bound, not listening


def test_a_progress_whose_json_lacks_the_row_counts_gets_them_from_its_attributes() -> None:
    """Spark Connect's ``StreamingQueryProgress.json`` (from ``recentProgress``) leaves out ``numInputRows`` and the rates."""
    from types import SimpleNamespace

    from streaming.engine.output.progress import progress_dict

    connect_like = SimpleNamespace(json='{"batchId": 3, "timestamp": "2026-01-01T00:00:00.000Z"}', numInputRows=4000, inputRowsPerSecond=2.5,
                                   processedRowsPerSecond=None)
    assert progress_dict(connect_like) == {"batchId": 3, "timestamp": "2026-01-01T00:00:00.000Z", "numInputRows": 4000, "inputRowsPerSecond": 2.5}
    classic_like = SimpleNamespace(json='{"batchId": 3, "numInputRows": 7}', numInputRows=9)
    assert progress_dict(classic_like)["numInputRows"] == 7


def test_sink_rows_are_cut_into_batches_by_the_reported_counts() -> None:
    rows = [(1,), (2,), (3,), (4,)]
    assert split_batches(rows, [(5, 1), (6, 0), (7, 3)]) == [(5, [(1,)]), (6, []), (7, [(2,), (3,), (4,)])]
    with pytest.raises(ValueError, match="reports 3 output rows"):
        split_batches(rows, [(5, 3)])


def test_the_memory_sink_reader_refuses_a_limit_that_is_not_a_count() -> None:
    with pytest.raises(ConfigError, match="max_sink_rows"):
        MemorySinkReader(None, "q", "update", None, None, max_sink_rows=0)  # type: ignore[arg-type]


def test_the_guide_example_in_complete_mode_over_connect_equals_the_classic_session(connect_server, registry, write_feed, tmp_path) -> None:
    """Complete mode, whose memory sink Spark replaces each batch; update is the sample feed's below (late and malformed rows), append the
    joins' (each joined row once), which the guide's would repeat."""
    folder = write_feed(GUIDE_BATCHES)
    remote = connect_replay(connect_server, folder, tmp_path, output_mode="complete", **GUIDE)
    local = replay(registry, folder, output_mode="complete", timeout=CONNECT_TIMEOUT, **GUIDE).to_json()
    assert [{name: row[name] for name in ("window_start", "window_end", "key", "count")} for row in remote["result"]] == GUIDE_COMPLETE
    assert remote["rows_dropped_by_watermark"] == 0
    for field in ("result", "input_rows", "malformed_rows", "rows_dropped_by_watermark", "final_watermark"):
        assert remote[field] == local[field], field
    assert [batch["input_rows"] for batch in remote["batches"]] == [batch["input_rows"] for batch in local["batches"]]


@pytest.mark.parametrize(("feed", "window", "slide", "watermark", "mode"), [
    ("web_clicks", "20 seconds", None, "30 seconds", "update"),  # append's memory sink over Connect: the joins' test below
])
def test_sample_feeds_over_connect_equal_the_classic_session(connect_server, registry, tmp_path, feed, window, slide, watermark, mode) -> None:
    folder = feed_folder(feed, tmp_path)
    remote = connect_replay(connect_server, folder, tmp_path, window=window, slide=slide, watermark=watermark, output_mode=mode)
    local = replay(registry, folder, window=window, slide=slide, watermark=watermark, output_mode=mode, timeout=CONNECT_TIMEOUT).to_json()
    assert local["result"], "an empty result would prove nothing"
    assert local["rows_dropped_by_watermark"] > 0 and local["malformed_rows"] >= 0
    for field in ("result", "input_rows", "malformed_rows", "rows_dropped_by_watermark", "final_watermark"):
        assert remote[field] == local[field], field
    assert len(remote["batches"]) == len(local["batches"])


def test_tune_runs_over_connect(connect_server, tmp_path) -> None:
    folder = feed_folder("web_clicks", tmp_path)
    out = tmp_path / "tune.json"
    done = connect_cli(connect_server, "tune", str(folder), "--window", "20 seconds", "--delays", "0 seconds,30 seconds", "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    outcome = json.loads(out.read_text())
    assert outcome["confirmation"]["agree"] is True


@pytest.mark.parametrize("mode", ["update"])  # complete mode's replaced sink over Connect: the guide's test above
def test_show_codes_program_over_connect_prints_the_replay_result(connect_server, registry, write_feed, tmp_path, mode) -> None:
    """The exported program, run as a Connect client, reads the memory sink (foreachBatch would fold on the server) and ends with replay's table."""
    from support.cli import finish_export, start_export

    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.runner import run_to_idle

    config = QueryConfig(FeedSource(write_feed(GUIDE_BATCHES), seconds_per_file=0), output_mode=mode, **GUIDE)
    process = start_export(config, tmp_path, env={"SPARK_REMOTE": connect_server.url})
    try:
        expected = run_to_idle(registry, config).result_records()
    except BaseException:
        process.kill()
        process.communicate()
        raise
    exported, _ = finish_export(process, timeout=CONNECT_TIMEOUT)
    assert expected and exported == expected


def test_a_checkpoint_is_refused_over_connect_naming_why(connect_server, tmp_path) -> None:
    folder = feed_folder("web_clicks", tmp_path)
    done = connect_cli(connect_server, "replay", str(folder), "--window", "20 seconds", "--watermark", "30 seconds", "--checkpoint", str(tmp_path / "kept"))
    assert done.returncode == 2
    assert "cannot be kept on Spark Connect" in done.stderr and "Traceback" not in done.stderr


JOINS_OVER_CONNECT = """
import json, sys, time
from pathlib import Path

from streaming.engine.join.join import JoinConfig, JoinSide, LiveSide, run_join
from streaming.engine.join.live_join import start_live_join
from streaming.engine.run.registry import QueryRegistry
from streaming.engine.runtime.session import get_session
from streaming.engine.sources.ads import AdStreams
from streaming.engine.output.state import join_side_state

spark = get_session()
registry = QueryRegistry(spark)
listener = registry.listener
impressions, clicks = (Path(path) for path in sys.argv[1:3])
replayed = JoinConfig(JoinSide(impressions, "impression_time", "20 seconds", side="left"), JoinSide(clicks, "click_time", "5 seconds", side="right"),
                      on=("impression_id",), within=("-5 seconds", "30 seconds"), join_type="left_outer")
outcome = run_join(spark, replayed, listener, timeout=300)
streams = AdStreams(impressions_per_second=100, click_through=0.3, mean_click_delay="2 seconds", max_click_delay="6 seconds", max_lag="1 second",
                    late_share=0.05, late_delay="20 seconds")
live = JoinConfig(LiveSide(streams, "impressions", "3 seconds"), LiveSide(streams, "clicks", "2 seconds", side="right"), on=("impression_id",),
                  within=("0 seconds", "6 seconds"), join_type="left_outer")
run = start_live_join(registry, live)
try:
    deadline = time.monotonic() + 180
    while run.status == "active" and not (run.table.emitted()["left_unmatched"].sum() > 0 and run.log.last_batch_id >= 3):
        assert time.monotonic() < deadline, "no NULL row over Connect in 180 s"
        time.sleep(0.2)
    waiting = join_side_state(spark, run.workdir / "checkpoint", "left", run.log.last_batch_id)
finally:
    registry.close()  # stops the join and removes the listener: a Connect client with a listener left does not exit
rows = run.table.latest()
pairs = rows[rows["click_time"].notna()]
tagged = outcome.with_batches()
print("RESULT " + json.dumps({
    "tagged": sorted([str(key), str(at), int(batch)] for key, at, batch in zip(tagged["impression_id"], tagged["click_time"], tagged["_batch"])),
    "records": outcome.result_records(), "behind_s": time.time() - rows["impression_time"].max().timestamp(),
    "status": run.status, "error": run.error, "total": run.table.total, "left_unmatched": int(run.table.emitted()["left_unmatched"].sum()),
    "reported": sum(int(summary["output_rows"]) for summary in run.log.summaries()), "batches": len(run.log.summaries()),
    "counted_batches": len(run.table.emitted()), "waiting": len(waiting),
    "offsets_ms": [int(offset / 1e6) for offset in (pairs["click_time"] - pairs["impression_time"]).astype("int64")],
}), flush=True)
"""
"""A Connect client: a replayed left outer join of two folders, then a live one of the generator's pair until it emits NULL rows (its
waiting rows read while it runs); what it saw, as one ``RESULT`` line."""


def test_joins_over_connect_come_back_batch_by_batch_through_the_memory_sink(connect_server, registry, tmp_path) -> None:
    """A replayed join's rows carry the batch that emitted them, as on the classic session; a live join's rows are all read back from the
    memory sink, batch by batch (every row each batch's progress reports), and its NULL rows come once the watermark passes."""
    from datetime import datetime

    from support import printed_result

    from streaming.adfeeds import AdFeedSpec, write_ad_feeds
    from streaming.engine.join.join import JoinConfig, JoinSide, run_join

    spec = AdFeedSpec(start=datetime(2024, 3, 4, 12, 0, 0), batches=6, batch_interval_seconds=10, impressions_per_batch=6, ads=3, click_through=0.6,
                      mean_click_delay_seconds=12, max_click_delay_seconds=60, max_lag_seconds=4, late_share=0.15, late_delay_seconds=45, seed=11)
    write_ad_feeds(spec, tmp_path / "impressions", tmp_path / "clicks")
    client = subprocess.Popen(
        [sys.executable, "-c", JOINS_OVER_CONNECT, str(tmp_path / "impressions"), str(tmp_path / "clicks")], cwd=ROOT,
        env={**os.environ, "SPARK_REMOTE": connect_server.url, "PYTHONPATH": str(ROOT), "TZ": "America/New_York"},  # a client off UTC
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:  # the classic replay runs while the client starts
        config = JoinConfig(JoinSide(tmp_path / "impressions", "impression_time", "20 seconds", side="left"),
                            JoinSide(tmp_path / "clicks", "click_time", "5 seconds", side="right"), on=("impression_id",),
                            within=("-5 seconds", "30 seconds"), join_type="left_outer")
        classic = run_join(registry.spark, config, registry.listener, root=tmp_path, timeout=CONNECT_TIMEOUT)
    finally:
        stdout, stderr = client.communicate(timeout=CONNECT_TIMEOUT)
    assert client.returncode == 0, stderr[-3000:]
    seen = printed_result(stdout)
    tagged = classic.with_batches()
    assert seen["records"] == classic.result_records()
    assert seen["tagged"] == sorted([str(key), str(at), int(batch)] for key, at, batch in zip(tagged["impression_id"], tagged["click_time"], tagged["_batch"]))
    assert len({batch for *_, batch in seen["tagged"]}) > 1  # each row in the batch that emitted it, as on the classic session
    assert 0 <= seen["behind_s"] < 120  # the live rows' times are UTC, as the watermarks are, though the client's clock is not
    assert (seen["status"], seen["error"]) == ("stopped", None)
    assert seen["total"] == seen["reported"] > 0 and seen["counted_batches"] == seen["batches"]  # every batch read back, none twice
    assert seen["left_unmatched"] > 0 and seen["waiting"] > 0
    assert seen["offsets_ms"] and all(0 <= offset <= 6_000 for offset in seen["offsets_ms"])


# -- the memory-sink reader against a sink and a progress log it is handed: a list in, a table out -----------------------


class FakeSink:
    """Spark's memory sink as the reader sees it: ``table(name)``, then ``offset``/``limit``/``collect``; records each read."""

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.reads: list[tuple[int, int | None]] = []

    def table(self, name: str) -> FakeSink._View:
        return FakeSink._View(self, 0, None)

    class _View:
        def __init__(self, sink: FakeSink, start: int, count: int | None) -> None:
            self.sink, self.start, self.count = sink, start, count

        def offset(self, start: int) -> FakeSink._View:
            return FakeSink._View(self.sink, start, self.count)

        def limit(self, count: int) -> FakeSink._View:
            return FakeSink._View(self.sink, self.start, count)

        def collect(self) -> list[tuple]:
            self.sink.reads.append((self.start, self.count))
            end = None if self.count is None else self.start + self.count
            return self.sink.rows[self.start : end]


class FakeQuery:
    def __init__(self) -> None:
        self.isActive = True
        self.lastProgress = None

    def stop(self) -> None:
        self.isActive = False


@pytest.fixture
def sink_reader():
    """Factory: ``sink_reader(mode, max_sink_rows)`` -> ``(reader, sink, log, query, batch)``; ``batch(id, rows, reported=len(rows))`` writes a batch and reports it."""
    from streaming.engine.output.progress import ProgressLog
    from streaming.engine.output.results import ResultTable

    def make(mode: str = "update", max_sink_rows: int = 1_000):
        sink, log, query = FakeSink(), ProgressLog(), FakeQuery()
        reader = MemorySinkReader(sink, "q", mode, ResultTable(mode), log, max_sink_rows=max_sink_rows)  # type: ignore[arg-type]
        reader._query = query  # as started() sets it, without the thread

        def batch(batch_id: int, rows: list[tuple], reported: int | None = None) -> None:
            sink.rows = list(rows) if mode == "complete" else sink.rows + list(rows)
            log.add({"batchId": batch_id, "sink": {"numOutputRows": len(rows) if reported is None else reported}})

        return reader, sink, log, query, batch

    return make


def window(start_s: int, key: str, count: int) -> tuple:
    return (start_s * 1_000_000, (start_s + 10) * 1_000_000, key, count)


def test_the_reader_fetches_only_the_rows_of_batches_not_yet_folded(sink_reader) -> None:
    reader, sink, _, query, batch = sink_reader()
    batch(0, [window(0, "a", 1), window(0, "b", 2)])
    batch(1, [])
    assert reader.fold_reported() == 2
    batch(2, [window(0, "a", 3), window(10, "a", 1), window(10, "b", 1)])
    assert reader.fold_reported() == 1 and reader.fold_reported() == 0
    assert sink.reads == [(0, 2), (2, 3)]  # batch 1 gave no rows: nothing read for it
    table = reader.table.frame()
    assert list(zip(table["key"], table["count"])) == [("a", 3), ("b", 2), ("a", 1), ("b", 1)]
    assert (reader.table.last_batch_id, reader.sink_rows, reader.error, query.isActive) == (2, 5, None, True)


def test_complete_mode_replaces_the_table_with_the_latest_batch(sink_reader) -> None:
    reader, _, _, _, batch = sink_reader("complete")
    batch(0, [window(0, "a", 1)])
    batch(1, [window(0, "a", 2), window(0, "b", 1)])
    reader.fold_reported()
    assert list(reader.table.frame()["count"]) == [2, 1] and reader.table.last_batch_id == 1


@pytest.mark.parametrize(("case", "reason"), [
    ("unreported", "did not report the rows batch 1 gave the memory sink"),
    ("gap", "the progress of batch 1 never arrived (batch 2 did)"),
    ("short", "the memory sink and the progress disagree"),
    ("limit", "STREAMING_LAB_MAX_SINK_ROWS=3"),
])
def test_the_reader_stops_the_query_rather_than_fold_rows_into_the_wrong_batches(sink_reader, case: str, reason: str) -> None:
    reader, _, _, query, batch = sink_reader(max_sink_rows=3)
    batch(0, [window(0, "a", 1)])
    reader.fold_reported()
    if case == "unreported":
        batch(1, [window(0, "a", 2)], reported=-1)
    elif case == "gap":
        batch(2, [window(0, "a", 2)])
    elif case == "short":
        batch(1, [window(0, "a", 2)], reported=2)
    else:
        batch(1, [window(0, "a", 2), window(10, "a", 1), window(10, "b", 1)])
    reader.fold_reported()
    assert reader.error is not None and reason in reader.error
    assert query.isActive is False
    with pytest.raises(RuntimeError, match=re.escape(reason)):
        reader.catch_up(1.0)
    folded = 4 if case == "limit" else 1  # the limit stops after the batch that reached it; the others fold nothing doubtful
    assert sum(reader.table.frame()["count"]) == folded
