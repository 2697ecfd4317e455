"""``python -m streaming replay``: as a subprocess on real Spark, and its refusals."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from support import GUIDE_BATCHES
from support.cli import finish, start_cli

from streaming.cli import main, replay_source
from streaming.engine.errors import ConfigError
from streaming.engine.run.runner import replay

GUIDE_ARGS = ["--window", "10 minutes", "--slide", "5 minutes", "--watermark", "10 minutes"]






def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return finish(start_cli(*args), timeout)


def without_durations(report: dict) -> dict:
    """The report less each batch's wall-clock duration, which differs between any two runs."""
    return {**report, "batches": [{k: v for k, v in batch.items() if k != "duration_ms"} for batch in report["batches"]]}


def test_replay_subprocess_json_equals_in_process(registry, write_feed, tmp_path: Path) -> None:
    mode = "append"
    feed = write_feed(GUIDE_BATCHES)
    out = tmp_path / "replay.json"
    started_ms = time.time() * 1000
    process = start_cli("replay", str(feed), *GUIDE_ARGS, "--output-mode", mode, "--latency", "--json", str(out))
    try:  # the in-process replay runs while the subprocess starts its own Spark
        in_process = replay(registry, feed, window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode=mode, timeout=300, latency=True)
    finally:
        done = finish(process, 400)
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    latency = written.pop("latency_ms")  # from when each file was handed to Spark to its batch's sink
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"] < time.time() * 1000 - started_ms
    measured = in_process.latency
    assert measured["weight"].sum() == in_process.input_rows == sum(map(len, GUIDE_BATCHES))
    assert measured.groupby("produced_ms")["written_ms"].nunique().eq(1).all()  # a file's rows: one hand-over time, one batch
    assert measured["produced_ms"].nunique() == len(GUIDE_BATCHES) and (measured["written_ms"] > measured["produced_ms"]).all()
    expected = json.loads(json.dumps(in_process.to_json()))
    assert without_durations(written) == without_durations(expected)
    assert all(isinstance(b["duration_ms"], int) and b["duration_ms"] >= 0 for b in written["batches"])
    # and it is the guide's answer
    assert written["rows_dropped_by_watermark"] == 2
    assert written["final_watermark"] == "2016-05-10 12:11:00"
    assert [(r["window_start"], r["key"], r["count"]) for r in written["result"]] == [
        ("2016-05-10 12:00:00", "cat", 1),
        ("2016-05-10 12:00:00", "dog", 2),
        ("2016-05-10 12:00:00", "owl", 1),
    ]
    # the summary line on stdout
    assert "rows_dropped_by_watermark=2" in done.stdout
    assert "final_watermark=2016-05-10 12:11:00" in done.stdout


def test_bad_config_subprocess_exits_2(write_feed) -> None:
    feed = write_feed(GUIDE_BATCHES)
    done = run_cli("replay", str(feed), "--window", "5 minutes", "--slide", "10 minutes", timeout=120)
    assert done.returncode == 2
    assert "slide: '10 minutes'" in done.stderr
    assert "window '5 minutes'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--window", "5 minutes", "--slide", "10 minutes"], "slide: '10 minutes'"),
        (["--window", "ten minutes"], "window: 'ten minutes'"),
        (["--window", "5 minutes", "--watermark", "-1 minute"], "watermark: '-1 minute'"),
        (["--window", "5 minutes", "--output-mode", "append"], "output_mode: 'append'"),
    ],
)
def test_bad_config_exits_2_naming_the_field(write_feed, capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    feed = write_feed(GUIDE_BATCHES)
    assert main(["replay", str(feed), *args]) == 2
    assert message in capsys.readouterr().err


def test_missing_feed_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    assert main(["replay", str(missing), "--window", "5 minutes"]) == 2
    assert f"PATH: {str(missing)!r} is not a folder or a file" in capsys.readouterr().err


def test_feed_dir_without_data_files_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path), "--window", "5 minutes"]) == 2
    assert f"PATH: {str(tmp_path)!r} holds no CSV" in capsys.readouterr().err
    (tmp_path / "a.csv").write_text("event_time,key\n")
    (tmp_path / "b.parquet").write_bytes(b"PAR1")
    assert main(["replay", str(tmp_path), "--window", "5 minutes"]) == 2
    assert "several formats (csv, parquet); choose one with --format" in capsys.readouterr().err
    assert main(["replay", str(tmp_path), "--format", "json", "--window", "5 minutes"]) == 2
    assert "holds no json files" in capsys.readouterr().err


def test_argparse_refuses_unknown_output_mode(write_feed) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["replay", str(write_feed(GUIDE_BATCHES)), "--window", "5 minutes", "--output-mode", "upsert"])
    assert caught.value.code == 2


def test_feed_without_key_column_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "batch-0000.csv").write_text("event_time,word\n2016-05-10 12:07:00,dog\n")
    assert main(["replay", str(tmp_path), "--window", "5 minutes"]) == 2
    err = capsys.readouterr().err
    assert f"source.path: {str(tmp_path)!r}" in err
    assert "'key'" in err


def test_replay_source_from_flags(tmp_path: Path, write_feed) -> None:
    feed = write_feed(GUIDE_BATCHES)
    assert replay_source(feed, None, "event_time", None, "key").sample_layout  # today's feeds keep today's reading
    single = feed / "batch-0000.csv"
    source = replay_source(single, None, "event_time", None, "key")
    assert (source.files(), source.file_format, source.columns.time_format, source.sample_layout) == ([single], "csv", "auto", False)
    (tmp_path / "events.jsonl").write_text('{"ts": 1}\n')
    source = replay_source(tmp_path / "events.jsonl", None, "ts", "epoch_s", None)
    assert (source.file_format, source.columns.event_time, source.columns.key) == ("json", "ts", None)
    deduplicated = replay_source(feed, None, "event_time", None, "key", dedup_id="key")
    assert (deduplicated.sample_layout, deduplicated.columns.dedup_id) == (False, "key")
    with pytest.raises(ConfigError) as caught:
        replay_source(feed, None, "when", None, "key")
    assert (caught.value.field, caught.value.value) == ("columns.event_time", "when")


def test_replay_json_lines_without_a_key_writes_value_and_null_keys(cli, tmp_path: Path) -> None:
    """The data flags end to end: epoch milliseconds under another name, no key column, one file as PATH."""
    events = tmp_path / "events.jsonl"
    base = 1772460000000  # 2026-03-02 14:00:00 UTC
    events.write_text("".join(json.dumps({"ts": base + offset, "user": "u"}) + "\n" for offset in (1_196, 20_000, 61_500, 62_000)))
    out = tmp_path / "out.json"
    done = cli(
        "replay", str(events), "--event-time", "ts", "--time-format", "epoch_ms", "--no-key", "--window", "1 minute", "--watermark", "0 seconds",
        "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    assert written["result"] == [
        {"window_start": "2026-03-02 14:00:00", "window_end": "2026-03-02 14:01:00", "key": None, "count": 2, "value": 2},
        {"window_start": "2026-03-02 14:01:00", "window_end": "2026-03-02 14:02:00", "key": None, "count": 2, "value": 2},
    ]
    assert written["final_watermark"] == "2026-03-02 14:01:02"
    assert (written["input_rows"], written["malformed_rows"]) == (4, 0)
    assert "Traceback" not in done.stderr


def test_a_mapping_that_does_not_fit_json_types_exits_2(cli, tmp_path: Path) -> None:
    (tmp_path / "events.jsonl").write_text('{"ts": 1772460000000, "user": "u"}\n')
    done = cli("replay", str(tmp_path), "--event-time", "ts", "--key", "user", "--window", "1 minute")
    assert done.returncode == 2
    assert "columns.time_format: 'auto' cannot tell seconds from milliseconds" in done.stderr
    assert "Traceback" not in done.stderr


def test_replay_sums_a_value_column(cli, tmp_path: Path) -> None:
    (tmp_path / "sales.csv").write_text("at,shop,amount\n2026-03-02 14:00:05,a,10.5\n2026-03-02 14:00:30,a,4\n2026-03-02 14:00:40,b,x\n")
    out = tmp_path / "out.json"
    done = cli(
        "replay", str(tmp_path / "sales.csv"), "--event-time", "at", "--key", "shop", "--value", "amount", "--agg", "sum",
        "--window", "1 minute", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(out.read_text())["result"] == [
        {"window_start": "2026-03-02 14:00:00", "window_end": "2026-03-02 14:01:00", "key": "a", "value": 14.5, "count": 2},
        {"window_start": "2026-03-02 14:00:00", "window_end": "2026-03-02 14:01:00", "key": "b", "value": None, "count": 1},
    ]  # count: the rows each value was computed over, a row whose value is no number included
    assert main(["replay", str(tmp_path / "sales.csv"), "--event-time", "at", "--key", "shop", "--agg", "avg", "--window", "1 minute"]) == 2


def test_session_gap_replaces_window_and_update_mode_is_refused(write_feed, capsys: pytest.CaptureFixture[str]) -> None:
    feed = write_feed(GUIDE_BATCHES)
    assert main(["replay", str(feed), "--session-gap", "3 minutes", "--watermark", "10 minutes"]) == 2
    assert "output_mode: 'update' is not supported by Spark for session windows" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["replay", str(feed), "--session-gap", "3 minutes", "--window", "5 minutes"])
    assert main(["replay", str(feed), "--session-gap", "3 minutes", "--slide", "1 minute", "--output-mode", "complete"]) == 2
    assert "slide: '1 minute' does not apply to session windows" in capsys.readouterr().err


def test_batch_flags_reach_the_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from streaming.engine.data.batching import Batching

    (tmp_path / "events.jsonl").write_text('{"ts": 1, "arrived": 2, "k": "a"}\n')
    source = replay_source(tmp_path, None, "ts", "epoch_ms", "k", batching=Batching("arrived", "10 seconds"))
    assert (source.batching.column, source.columns.arrival, source.arrival_format) == ("arrived", "arrived", "epoch_ms")
    assert replay_source(tmp_path, None, "ts", "epoch_ms", "k", batching=Batching("rows:5")).batching.rows == 5
    assert main(["replay", str(tmp_path), "--event-time", "ts", "--time-format", "epoch_ms", "--key", "k", "--window", "1 minute",
                 "--batch-by", "arrived"]) == 2
    assert "batch_interval: None is required to batch by column 'arrived'" in capsys.readouterr().err


def test_replay_writes_the_dropped_events_with_their_rule(cli, write_feed, tmp_path: Path) -> None:
    import pandas as pd

    feed = write_feed(GUIDE_BATCHES)
    out, parquet = tmp_path / "dropped.csv", tmp_path / "dropped.parquet"
    done = cli("replay", str(feed), *GUIDE_ARGS, "--output-mode", "update", "--dropped", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    dropped = pd.read_csv(out)
    assert dropped[["key", "window_start", "window_end", "watermark"]].values.tolist() == [
        ["donkey", "2016-05-10 11:55:00", "2016-05-10 12:05:00", "2016-05-10 12:11:00"],
        ["donkey", "2016-05-10 12:00:00", "2016-05-10 12:10:00", "2016-05-10 12:11:00"],
    ]
    assert set(dropped["rule"]) == {"window end at or before the watermark"}
    assert "dropped_events=1 dropped_pairs=2" in done.stdout and "rows_dropped_by_watermark=2" in done.stdout
    assert main(["replay", str(feed), "--session-gap", "5 minutes", "--watermark", "1 minute", "--output-mode", "append", "--dropped", str(parquet)]) == 2
    assert main(["replay", str(feed), *GUIDE_ARGS, "--dropped", str(tmp_path / "dropped.txt")]) == 2
