"""A test run ended by SIGTERM (a time limit) stops what it started: here the Spark JVM, the Kafka broker and the app server of a test still running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from benchmarks.browser import healthy

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.spark


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _brokers(marker: str) -> list[psutil.Process]:
    found = []
    for process in psutil.process_iter(["cmdline"]):
        command = " ".join(process.info.get("cmdline") or [])
        if "kafka.Kafka" in command and marker in command:
            found.append(process)
    return found


def test_a_sigterm_mid_run_leaves_no_broker_jvm_or_app_server_running(tmp_path: Path) -> None:
    """A child pytest holds a Spark session, the run's broker and a served app (``tests/probes/held_run.py``); once all are up it gets SIGTERM, and nothing it started is left."""
    probe = tmp_path / "probe"
    env = {**os.environ, "PYTEST_ADDOPTS": ""}
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", f"--basetemp={probe}", "tests/probes/held_run.py"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(line.decode(errors="replace") for line in child.stdout), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + 240
        while not any(line.startswith("HELD") for line in list(lines)):
            assert child.poll() is None, "".join(lines)[-3000:]
            assert time.monotonic() < deadline, "the child run never held its broker"
            time.sleep(0.2)
        assert _brokers(str(probe)), "the child's broker is not running"
        [held] = [line.split() for line in lines if line.startswith("HELD")]
        server_url, server_pid = held[2], int(held[3])
        assert healthy(server_url), f"the child's app server at {server_url} does not answer"
        started = [process.pid for process in _children(child.pid)]
        assert server_pid in started, (server_pid, started)
        child.send_signal(signal.SIGTERM)
        child.wait(timeout=120)
        reader.join(10)
        output = "".join(lines)
        assert "HELD" in output and "KeyboardInterrupt" in output, output[-3000:]  # ended mid-test, by the signal
        deadline = time.monotonic() + 60
        while (_brokers(str(probe)) or [pid for pid in started if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _brokers(str(probe)), output[-3000:]
        left = [pid for pid in started if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE]
        assert not left, (left, output[-3000:])
        assert not healthy(server_url), f"the child's app server at {server_url} still answers"
    finally:
        if child.poll() is None:
            child.kill()
        for process in _brokers(str(probe)):
            process.kill()
