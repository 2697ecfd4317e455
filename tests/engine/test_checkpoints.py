"""Kept queries: stop, resume, crash and restart give the result of an uninterrupted run; the state explorer shows what is held."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from support import ROOT, wait_for

from streaming.cli import main, replay_source
from streaming.engine.data.batching import Batching
from streaming.engine.errors import ConfigError
from streaming.engine.output.progress import ProgressLog
from streaming.engine.output.results import ResultTable, journal_path
from streaming.engine.query.config import (
    ColumnMapping,
    FeedSource,
    GeneratorSource,
    QueryConfig,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
    config_from_dict,
    config_to_dict,
)
from streaming.engine.run.checkpoints import KeptQuery, differences, kept_queries
from streaming.engine.run.failure import Failure, failure_of
from streaming.engine.run.runner import run_to_idle
from streaming.engine.run.sharing import Grants, Share
from streaming.feedgen import FeedSpec
from streaming.feedgen import write_feed as write_spec_feed


def test_a_kept_folder_deleted_under_a_running_query_leaves_a_brief_failure_and_a_name_delete_frees(spark, late_feed: Path, tmp_path: Path) -> None:
    import shutil

    from streaming.engine.errors import brief
    from streaming.engine.run.registry import DuplicateQueryError, QueryRegistry

    registry = QueryRegistry(spark, kept_root=tmp_path / ".queries")
    config = QueryConfig(FeedSource(late_feed, seconds_per_file=0.3), window="1 minute", watermark="40 seconds")
    try:
        run = registry.start(config, "doomed", keep=True)
        wait_for(lambda: len(run.log) >= 1, "no batch", 120)
        def delete_by_hand() -> bool:
            """The folder deleted and a file put in its place, so Spark cannot remake it and go on; ``False`` when Spark wrote into it meanwhile."""
            try:
                shutil.rmtree(run.workdir)
                run.workdir.write_text("not a folder")
            except OSError:
                return False
            return True

        wait_for(delete_by_hand, "the folder could not be deleted", 60)
        wait_for(lambda: run.status == "failed", "the query did not fail", 120)
        run.workdir.unlink()
        shown = brief(run.error or "")
        assert str(tmp_path) in (run.error or "")  # Spark's error, or the replay's that could not hand its next file over: kept for the log
        assert shown.strip() and str(tmp_path) not in shown and "Logical Plan" not in shown and len(shown) <= 300
        assert registry.kept() == [] and registry.strays() == []
        registry.delete("doomed")
        stray = tmp_path / ".queries" / "stray"
        (stray / "checkpoint").mkdir(parents=True)
        (stray / "checkpoint" / "metadata").write_text("{}")
        assert registry.strays() == ["stray"]
        with pytest.raises(DuplicateQueryError) as caught:
            registry.start(config, "stray", keep=True)
        assert "lost its query.json" in caught.value.reason and str(tmp_path) not in str(caught.value)
        assert registry.delete("stray") == 2 and registry.strays() == []
        again = registry.start(config, "doomed", keep=True)  # the name is free again
        wait_for(lambda: len(again.log) >= 1, "no batch", 120)
        registry.stop("doomed")
        assert KeptQuery(again.workdir).problem is None
        shutil.rmtree(again.workdir / "checkpoint")
        assert KeptQuery(again.workdir).problem == "its checkpoint is gone: Spark has nothing to resume it from"
    finally:
        registry.stop_all()
        spark.streams.removeListener(registry.listener)


def test_a_query_that_fails_again_the_same_way_when_resumed_is_not_offered_another_resume(spark, tmp_path: Path) -> None:
    """Resume was offered on queries that fail the same way every time: Spark runs the failed batch again, with the same data and query."""
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.sql import SqlQuery, SqlView

    registry = QueryRegistry(spark, kept_root=tmp_path / ".queries")
    words = SqlView("events", FeedSource(ROOT / "sample_feeds" / "guide_words", seconds_per_file=0))
    query = SqlQuery("SELECT CAST(key AS INT) AS n FROM STREAM(events)", (words,), arrival="busy")  # "dog" is no number
    try:
        first = registry.start(query, "casts", keep=True)
        wait_for(lambda: first.status == "failed", "the cast did not fail", 120)
        assert first.failure == Failure("CAST_INVALID_INPUT", 0) and registry.resume_problem("casts") is None  # once: it may be passing
        again = registry.resume("casts")
        wait_for(lambda: again.status == "failed", "the resumed cast did not fail", 120)
        problem = registry.resume_problem("casts")
        assert problem is not None and "failed again with CAST_INVALID_INPUT at batch 0" in problem
        with pytest.raises(ConfigError, match="is not resumed: resumed, it failed again"):
            registry.resume("casts")
    finally:
        registry.stop_all()
        spark.streams.removeListener(registry.listener)


def test_a_failure_is_its_error_condition_and_batch_not_its_text() -> None:
    stream_failed = (
        "[STREAM_FAILED] Query [id = 0c4e6a52-9a0e-4d2e-8a43-1f1f7c3b9e10, runId = 5f1d2a36-7c4b-4b8e-9d7a-2b7a1c9e8f01] terminated with "
        "exception: [CAST_INVALID_INPUT] The value 'dog' of the type \"STRING\" cannot be cast to \"INT\" because it is malformed. SQLSTATE: 22018"
    )
    assert failure_of(stream_failed, 3) == Failure("CAST_INVALID_INPUT", 4)
    other_run = stream_failed.replace("5f1d2a36", "99999999")
    assert failure_of(other_run, 3) == failure_of(stream_failed, 3) != failure_of(stream_failed, 4)
    # a failure Spark names no condition for (a folder gone, a broker away) may pass, as may one of the server's batch budget
    assert failure_of("java.io.IOException: folder 0c4e6a52-9a0e-4d2e-8a43-1f1f7c3b9e10 is gone\n\tat x", -1) == Failure("java.io.IOException: folder … is gone", 0, False)
    assert not failure_of(stream_failed, 3, repeatable=False).repeatable


LATE_TAIL = FeedSpec(
    start=datetime(2026, 3, 2, 14, 0), batches=12, batch_interval_seconds=20, events_per_batch=40, keys=("a", "b", "c"),
    max_lag_seconds=30, late_share=0.15, late_delay_seconds=150, seed=11,
)


@pytest.fixture(scope="module")
def late_feed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("late") / "feed"
    write_spec_feed(LATE_TAIL, folder)
    return folder


def _config(feed: Path, **changes) -> QueryConfig:
    return QueryConfig(FeedSource(feed, seconds_per_file=0), window="1 minute", slide="30 seconds", watermark="40 seconds", **changes)


# ---------------------------------------------------------------- configurations, pure


def test_every_source_kind_round_trips_through_its_record(late_feed: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "orders.jsonl"
    dataset.write_text('{"ts": 1, "shop": "x", "amount": 2, "at": 1}\n')
    configs = [
        _config(late_feed, state_store="rocksdb", changelog_checkpointing=True),
        QueryConfig(
            FeedSource(dataset, 0, "json", ColumnMapping("ts", "epoch_s", "shop", "amount", arrival="at", arrival_format="epoch_s"), Batching("at", "5 seconds")),
            aggregation="sum", output_mode="append",
        ),
        QueryConfig(GeneratorSource(events_per_second=9, stall_after="1 minute"), trigger="processing_time", trigger_interval="2 seconds"),
        QueryConfig(RateSource(rows_per_second=7)),
        QueryConfig(RateMicroBatchSource(rows_per_batch=3, advance="2 seconds"), session_gap="10 seconds", output_mode="append"),
        QueryConfig(SocketSource(late_feed, lines_per_second=3.0), watermark=None),
    ]
    for config in configs:
        record = json.loads(json.dumps(config_to_dict(config)))
        assert config_from_dict(record) == config


def test_a_record_with_an_unknown_kind_or_field_is_refused(late_feed: Path) -> None:
    record = config_to_dict(_config(late_feed))
    with pytest.raises(ConfigError, match=r"source\.kind: 'pigeon'"):
        config_from_dict({**record, "source": {**record["source"], "kind": "pigeon"}})
    with pytest.raises(ConfigError, match=r"source\.rows"):
        config_from_dict({**record, "source": {**record["source"], "rows": 3}})
    with pytest.raises(ConfigError, match="colour"):
        config_from_dict({**record, "colour": "red"})


def test_differences_name_each_field_and_ignore_pacing(late_feed: Path) -> None:
    stored = config_to_dict(_config(late_feed))
    given = config_to_dict(_config(late_feed).with_changes(watermark="10 seconds", state_store="rocksdb", trigger="available_now"))
    assert differences(stored, given) == ["state_store is 'hdfs' there, 'rocksdb' here", "watermark is '40 seconds' there, '10 seconds' here"]
    paced = config_to_dict(QueryConfig(FeedSource(late_feed, seconds_per_file=3), window="1 minute", slide="30 seconds", watermark="40 seconds"))
    assert differences(stored, paced) == []
    texts = {"kind": "sql", "text": "SELECT *\nFROM STREAM(t)\nWATERMARK ts DELAY OF INTERVAL 1 MINUTE\n"}
    longer = {**texts, "text": texts["text"].replace("1 MINUTE", "2 MINUTES")}
    assert differences(texts, longer) == ["text differs:\n-WATERMARK ts DELAY OF INTERVAL 1 MINUTE\n+WATERMARK ts DELAY OF INTERVAL 2 MINUTES"]


def test_a_kept_folder_refuses_another_configuration_a_foreign_folder_and_the_socket_source(late_feed: Path, tmp_path: Path) -> None:
    kept = KeptQuery(tmp_path / "kept")
    assert kept.open(_config(late_feed), "q", 1234) == 1234
    assert kept.open(_config(late_feed), "q", 9999) == 1234  # resuming keeps the first start
    with pytest.raises(ConfigError, match=r"checkpoint: .* belongs to a different configuration: window is '1 minute' there, '2 minutes' here"):
        kept.check(_config(late_feed).with_changes(window="2 minutes"))
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match=r"holds files but no query\.json"):
        KeptQuery(foreign).check(_config(late_feed))
    with pytest.raises(ConfigError, match="socket source"):
        KeptQuery(tmp_path / "socket").check(QueryConfig(SocketSource(late_feed), watermark=None))
    assert [query.folder for query in kept_queries(tmp_path)] == [kept.folder]


def test_a_kept_querys_read_only_link_is_the_same_for_each_of_its_runs_until_revoked(late_feed: Path, tmp_path: Path) -> None:
    """The link is kept in the folder, so a resumed run and a restarted server answer it; a grant keeps the token, a revocation does not;
    a record the lab would not have written is refused, and an unreadable one is replaced rather than left unrevocable."""
    kept = KeptQuery(tmp_path / "kept")
    kept.open(_config(late_feed), "q", 1)
    link = kept.share()
    assert KeptQuery(kept.folder).share() == link and link.grants == Grants()  # nothing beyond the view unless the owner ticks it
    assert link.names(link.token) and not link.names(link.token[:-1] + "x") and not link.names("")
    granted = link.granting(Grants(code=False, report=True))
    kept.keep_share(granted)
    assert kept.share() == granted and granted.names(link.token)
    revoked = granted.revoked()
    kept.keep_share(revoked)
    assert kept.share().grants == granted.grants and not kept.share().names(link.token)
    assert [path.name for path in kept.folder.iterdir() if "share" in path.name] == ["share.json"]  # written whole, nothing left beside it
    with pytest.raises(ConfigError, match=r"grants\.code: 'yes'"):
        Share.from_dict({"token": link.token, "grants": {"code": "yes"}})
    with pytest.raises(ConfigError, match="grants: 'paths'"):
        Grants.from_dict({"paths": True})
    with pytest.raises(ConfigError, match=r"share\.token: '\.\./x'"):
        Share.from_dict({"token": "../x"})
    kept.share_file.write_text('{"token": "short"}')
    assert not kept.share().names(revoked.token) and kept.share() == kept.share()


def test_changelog_checkpointing_needs_rocksdb(late_feed: Path) -> None:
    with pytest.raises(ConfigError, match="changelog_checkpointing: True applies to the rocksdb state store only"):
        _config(late_feed, changelog_checkpointing=True)
    with pytest.raises(ConfigError, match="state_store: 'memory'"):
        _config(late_feed, state_store="memory")


@pytest.mark.parametrize(("aggregation", "rows"), [("count", [(0, 60, "a", 3)]), ("sum", [(0, 60, "a", 1.5, 2), (0, 60, "b", None, 1)]), ("none", [(5, "a")])])
def test_a_saved_result_table_goes_on_and_ignores_a_batch_run_again(tmp_path: Path, aggregation: str, rows: list[tuple]) -> None:
    path = tmp_path / "result.json"
    table = ResultTable("update", aggregation)
    table.apply(0, rows)
    table.save(path)
    again = ResultTable("update", aggregation)
    again.load(path)
    assert again.last_batch_id == 0 and again.batches_applied == 1 and again.first_batch.is_set()
    pd.testing.assert_frame_equal(again.frame(), table.frame())
    again.apply(0, rows[:1])  # Spark runs batch 0 again after a crash: ignored
    pd.testing.assert_frame_equal(again.frame(), table.frame())
    with pytest.raises(ConfigError, match="output_mode: 'append' differs"):
        ResultTable("append", aggregation).load(path)


def _window_rows(batch: int, windows: int) -> list[tuple]:
    return [(60 * window, 60 * window + 60, "k", batch + window) for window in range(windows)]


def test_a_kept_table_journals_each_batch_and_saves_once_the_journal_is_as_long_as_the_table(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    table = ResultTable("update")
    table.keep(path)
    table.apply(0, _window_rows(0, 100))  # as many rows as the table: saved at once
    saved = path.read_text()
    assert not journal_path(path).exists()
    for batch in range(1, 10):
        table.apply(batch, _window_rows(batch, 10))  # 90 journal rows beside a 100-row table
    assert path.read_text() == saved, "a batch of 10 rows rewrote the 100-row snapshot"
    assert len(journal_path(path).read_text().splitlines()) == 9
    again = ResultTable("update")
    again.load(path)
    assert (again.last_batch_id, again.batches_applied) == (9, 10)
    pd.testing.assert_frame_equal(again.frame(), table.frame())
    table.apply(10, _window_rows(10, 10))  # the journal now holds as many rows as the table: saved, journal started again
    assert json.loads(path.read_text())["last_batch_id"] == 10 and not journal_path(path).exists()


def test_a_journal_line_cut_short_is_ignored_and_its_batch_folded_when_spark_runs_it_again(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    table = ResultTable("update")
    table.keep(path)
    for batch in range(3):
        table.apply(batch, _window_rows(batch, 50 if batch == 0 else 2))
    with journal_path(path).open("a") as journal:
        journal.write('{"batch_id": 3, "rows": [[0, 60, "k"')  # the process died while storing batch 3
    again = ResultTable("update")
    again.keep(path)
    assert again.last_batch_id == 2
    again.apply(2, _window_rows(99, 2))  # Spark does not run batch 2 again; if it did, it would be ignored
    again.apply(3, _window_rows(3, 2))
    reference = ResultTable("update")
    for batch in range(4):
        reference.apply(batch, _window_rows(batch, 50 if batch == 0 else 2))
    pd.testing.assert_frame_equal(again.frame(), reference.frame())
    third = ResultTable("update")
    third.load(path)
    pd.testing.assert_frame_equal(third.frame(), reference.frame())


def test_a_kept_complete_table_is_saved_whole_each_batch(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    table = ResultTable("complete")
    table.keep(path)
    table.apply(0, _window_rows(0, 5))
    table.apply(1, _window_rows(1, 6))
    assert not journal_path(path).exists()
    again = ResultTable("complete")
    again.load(path)
    pd.testing.assert_frame_equal(again.frame(), table.frame())
    assert len(again) == 6


def test_kept_progress_is_taken_in_and_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    progress = {"batchId": 0, "runId": "r1", "timestamp": "2026-03-02T14:00:00.000Z", "numInputRows": 5}
    path.write_text(json.dumps(progress) + "\n" + '{"batchId": 1, "runI')  # a crash cut the last line short
    log = ProgressLog()
    log.keep(path)
    log.run_id = "r2"
    log.add({**progress, "batchId": 1, "runId": "r2"})
    log.add({**progress, "batchId": 2, "runId": "elsewhere"})
    assert [summary["batch_id"] for summary in log.summaries()] == [0, 1]
    again = ProgressLog()
    again.keep(path)
    assert [summary["batch_id"] for summary in again.summaries()] == [0, 1]


# ---------------------------------------------------------------- on Spark


def _held(replay) -> list[tuple]:
    """The groups of a result whose window ends after the final watermark: what the state still holds."""
    final = replay.final_watermark
    return sorted(
        (record["window_start"], record["window_end"], record["key"], record["count"])
        for record, end in zip(replay.result_records(), replay.result["window_end"])
        if end > final
    )


@pytest.mark.parametrize(("state_store", "output_mode"), [("hdfs", "update"), ("rocksdb", "append")])
def test_stopping_and_resuming_at_several_points_gives_the_uninterrupted_result(
    registry, late_feed: Path, tmp_path: Path, state_store: str, output_mode: str
) -> None:
    from streaming.engine.output.state import state_report

    config = _config(late_feed, state_store=state_store, output_mode=output_mode, changelog_checkpointing=state_store == "rocksdb")
    whole = run_to_idle(registry, config, timeout=300)
    assert whole.rows_dropped_by_watermark > 0  # the late tail is dropped: the check is not trivial
    folder = tmp_path / "kept"
    for stop_after in (3, 7):
        part = run_to_idle(registry, config, timeout=300, keep=folder, stop_after=stop_after)
        assert KeptQuery(folder).staged_files() == stop_after
        assert part.input_rows < whole.input_rows
    resumed = run_to_idle(registry, config, timeout=300, keep=folder)
    assert resumed.to_json()["result"] == whole.to_json()["result"]
    assert resumed.rows_dropped_by_watermark == whole.rows_dropped_by_watermark
    assert resumed.input_rows == whole.input_rows == LATE_TAIL.batches * LATE_TAIL.events_per_batch
    assert resumed.final_watermark == whole.final_watermark
    assert list(resumed.progress["batch_id"]) == list(range(len(resumed.progress)))
    report = state_report(registry.spark, KeptQuery(folder).checkpoint)
    assert [operator["operator"] for operator in report["operators"]] == ["stateStoreSave"]
    held = sorted((row["window_start"], row["window_end"], row["key"], row["count"]) for row in report["rows"])
    if output_mode == "update":
        assert held == _held(whole) and held
    else:  # append: the result holds the finalized windows, the state the others; together every window once
        assert not set(held) & {(r["window_start"], r["window_end"], r["key"], r["count"]) for r in whole.result_records()}
        assert {row[3] for row in held} and min(row[1] for row in held) > str(whole.final_watermark)
    if state_store == "rocksdb":
        lines = KeptQuery(folder).progress_file.read_text().splitlines()
        custom = json.loads(lines[-1])["stateOperators"][0]["customMetrics"]
        assert any(name.startswith("rocksdb") for name in custom)


def test_a_kept_registry_query_stops_resumes_and_deletes(spark, late_feed: Path, tmp_path: Path) -> None:
    from streaming.engine.run.registry import DuplicateQueryError, QueryRegistry

    registry = QueryRegistry(spark, kept_root=tmp_path / ".queries")
    config = QueryConfig(FeedSource(late_feed, seconds_per_file=0), window="1 minute", watermark="40 seconds")
    try:
        run = registry.start(config, "kept_one", keep=True)
        assert run.kept
        run.feeder.stage_next()
        run.query.processAllAvailable()
        registry.remove("kept_one")  # a server restart forgets the run; the folder stays
        assert [query.name for query in registry.kept()] == ["kept_one"]
        assert registry.kept()[0].summary()["batches"] >= 1
        with pytest.raises(DuplicateQueryError, match="stopped query kept on disk"):
            registry.start(config, "kept_one", keep=True)
        assert registry._free_name() != "kept_one"
        resumed = registry.resume("kept_one")
        resumed.await_idle(300)
        assert resumed.feeder.staged == LATE_TAIL.batches
        assert resumed.log.summaries()[0]["batch_id"] == 0  # the first run's batches are still there
        registry.delete("kept_one")
        assert registry.kept() == [] and not (tmp_path / ".queries" / "kept_one").exists()
    finally:
        registry.stop_all()
        spark.streams.removeListener(registry.listener)


def test_cli_kill_mid_stream_and_resume_loses_and_doubles_nothing(registry, late_feed: Path, tmp_path: Path, cli) -> None:
    """The CLI contract: ``replay --checkpoint DIR [--stop-after N]`` goes on where it stopped, even after a kill of its process; ``state DIR``
    prints what is held. The resume and ``state`` run in this process."""
    folder, out = tmp_path / "kept", tmp_path / "out.json"
    args = ["replay", str(late_feed), "--window", "1 minute", "--slide", "30 seconds", "--watermark", "40 seconds", "--checkpoint", str(folder)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    process = subprocess.Popen([sys.executable, "-m", "streaming", *args], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    pool = ThreadPoolExecutor(max_workers=1)
    uninterrupted = pool.submit(run_to_idle, registry, _config(late_feed, output_mode="update"), timeout=300)  # while the process starts its JVM
    try:
        progress, deadline = KeptQuery(folder).progress_file, time.monotonic() + 180
        while not (progress.is_file() and len(progress.read_text().splitlines()) >= 5):
            assert process.poll() is None, process.stderr.read().decode()[-2000:] if process.stderr else ""
            assert time.monotonic() < deadline, "the replay wrote no progress in 180 s"
            time.sleep(0.05)
        os.killpg(process.pid, signal.SIGKILL)  # the process and its JVM, mid-stream
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(30)
        if process.stderr:
            process.stderr.close()
    staged = KeptQuery(folder).staged_files()
    assert 0 < staged < LATE_TAIL.batches
    whole = uninterrupted.result(timeout=300)
    pool.shutdown()
    done = cli(*args, "--json", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    expected = json.loads(json.dumps(whole.to_json()))
    assert written["result"] == expected["result"]
    assert written["rows_dropped_by_watermark"] == expected["rows_dropped_by_watermark"]
    assert written["input_rows"] == expected["input_rows"]
    state_json = tmp_path / "state.json"
    shown = cli("state", str(folder), "--json", str(state_json))
    assert shown.returncode == 0, shown.stderr[-3000:]
    state = json.loads(state_json.read_text())
    assert state["operators"][0]["operator"] == "stateStoreSave"
    assert sorted(tuple(row.values()) for row in state["rows"]) == _held(whole)
    assert all(list(row) == ["window_start", "window_end", "key", "count"] for row in state["rows"])


def test_cli_refuses_a_checkpoint_of_another_configuration_before_spark_starts(late_feed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "kept"
    KeptQuery(folder).open(replay_config(late_feed, "40 seconds"), "q", 0)
    code = main(["replay", str(late_feed), "--window", "1 minute", "--watermark", "10 seconds", "--checkpoint", str(folder)])
    assert code == 2
    assert "watermark is '40 seconds' there, '10 seconds' here" in capsys.readouterr().err
    assert main(["replay", str(late_feed), "--window", "1 minute", "--stop-after", "2"]) == 2
    assert "--stop-after: 2 needs --checkpoint" in capsys.readouterr().err
    assert main(["state", str(tmp_path / "nothing")]) == 2
    assert "is not a query's checkpoint" in capsys.readouterr().err


def replay_config(feed: Path, watermark: str) -> QueryConfig:
    source = replay_source(feed, None, "event_time", None, "key")
    return QueryConfig(source, window="1 minute", watermark=watermark)


def test_nan_survives_a_saved_table(tmp_path: Path) -> None:
    table = ResultTable("complete", "avg")
    table.apply(3, [(0, 60, "a", None, 1)])
    table.save(tmp_path / "r.json")
    again = ResultTable("complete", "avg")
    again.load(tmp_path / "r.json")
    assert math.isnan(again.frame()["value"].iloc[0])


def test_a_copy_of_a_kept_folder_names_its_own_files_in_the_file_source_logs(tmp_path: Path) -> None:
    """Spark's file source logs each file it read by its URI, as Hadoop quotes it; a copy whose logs still named the original's files
    read every file again when resumed. A data root with a space, brackets and a letter beyond ASCII, a compacted log and checksums."""
    old = tmp_path / "my data (é)" / "kept"
    logs = old / "checkpoint" / "sources" / "0"
    logs.mkdir(parents=True)
    (old / "checkpoint" / "metadata").write_text('{"id":"6b3c3a2e-0000-4000-8000-000000000000"}\n')
    (old / "checkpoint" / ".metadata.crc").write_bytes(b"crc")
    uri = "file://" + str(old.resolve()).replace(" ", "%20") + "/staging/events/batch-0001.csv"  # as Spark 4.2 logs it: file:///...
    (logs / "9.compact").write_text("v1\n" + json.dumps({"path": uri, "timestamp": 1700000000000, "batchId": 0}))
    (logs / ".9.compact.crc").write_bytes(b"crc")
    (logs / "10").write_text("v1\n" + json.dumps({"path": uri.replace("0001", "0002"), "timestamp": 1700000000001, "batchId": 10}))
    link = KeptQuery(old).share()
    copy = KeptQuery(old).copy_to(tmp_path / "my data (é)" / ".kept.try" / "changed")
    assert not copy.share_file.exists() and KeptQuery(old).share() == link  # the link names the query: a run of a copy does not answer it
    new = "file://" + str((tmp_path / "my data (é)" / ".kept.try" / "changed").absolute()).replace(" ", "%20")
    compacted = json.loads((copy.checkpoint / "sources" / "0" / "9.compact").read_text().splitlines()[1])
    assert compacted == {"path": f"{new}/staging/events/batch-0001.csv", "timestamp": 1700000000000, "batchId": 0}
    assert json.loads((copy.checkpoint / "sources" / "0" / "10").read_text().splitlines()[1])["path"] == f"{new}/staging/events/batch-0002.csv"
    assert not (copy.checkpoint / "sources" / "0" / ".9.compact.crc").exists() and not (copy.checkpoint / ".metadata.crc").exists()
    assert json.loads((copy.checkpoint / "metadata").read_text())["id"] != "6b3c3a2e-0000-4000-8000-000000000000"
    assert json.loads((logs / "10").read_text().splitlines()[1])["path"] == uri.replace("0001", "0002")  # the original untouched
    (logs / "11").write_text('v1\n{"path":"file:/elsewhere/batch-0003.csv","timestamp":1,"batchId":11}')
    with pytest.raises(ConfigError, match="logs a file outside its folder"):
        KeptQuery(old).copy_to(tmp_path / "second")
    assert not (tmp_path / "second").exists()  # nothing half-copied is left
