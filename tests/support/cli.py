"""``python -m streaming`` as its own process, as a user's shell runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from streaming.engine.query.config import QueryConfig
from streaming.export import pyspark_code

from . import ROOT, printed_result


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


def start_export(config: QueryConfig, folder: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Write the exported program for ``config`` into ``folder`` and start it as its own process (its own JVM, or a client of ``env``'s ``SPARK_REMOTE``)."""
    program = folder / "export_query.py"
    program.write_text(pyspark_code(config), encoding="ascii")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})}
    return subprocess.Popen(
        [sys.executable, str(program)], cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_export(process: subprocess.Popen, timeout: float) -> tuple[list[dict], str]:
    """Wait for the program; return the records of its ``RESULT`` line and its whole stdout."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, stderr[-4000:]
    return printed_result(stdout), stdout


CONNECT_TIMEOUT = 300


def connect_cli(server, *args: str, timeout: float = CONNECT_TIMEOUT) -> subprocess.CompletedProcess:
    """``python -m streaming ARGS`` as a Spark Connect client of ``server``."""
    env = {**os.environ, "SPARK_REMOTE": server.url}
    return subprocess.run(
        [sys.executable, "-m", "streaming", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
    )
