"""``python -m streaming replay``: as a subprocess on real Spark, and its refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GUIDE_BATCHES, ROOT

from streaming.cli import main
from streaming.engine.runner import replay

GUIDE_ARGS = ["--window", "10 minutes", "--slide", "5 minutes", "--watermark", "10 minutes"]


def start_cli(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen(
        [sys.executable, "-m", "streaming", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def finish(process: subprocess.Popen, timeout: float) -> subprocess.CompletedProcess:
    """Wait for ``process`` at most ``timeout`` seconds; kill it (and fail) if it is still running."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"{process.args} still running after {timeout} s")
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return finish(start_cli(*args), timeout)


def without_durations(report: dict) -> dict:
    """The report less each batch's wall-clock duration, which differs between any two runs."""
    return {**report, "batches": [{k: v for k, v in batch.items() if k != "duration_ms"} for batch in report["batches"]]}


def test_replay_subprocess_json_equals_in_process(registry, write_feed, tmp_path: Path) -> None:
    mode = "append"
    feed = write_feed(GUIDE_BATCHES)
    out = tmp_path / "replay.json"
    process = start_cli("replay", str(feed), *GUIDE_ARGS, "--output-mode", mode, "--json", str(out))
    try:  # the in-process replay runs while the subprocess starts its own Spark
        in_process = replay(registry, feed, window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode=mode, timeout=300)
    finally:
        done = finish(process, 400)
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
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
    assert f"feed_dir: {str(missing)!r}" in capsys.readouterr().err


def test_feed_dir_without_csv_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(tmp_path), "--window", "5 minutes"]) == 2
    assert "source.path" in capsys.readouterr().err


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
