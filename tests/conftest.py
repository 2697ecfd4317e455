"""Shared fixtures: one real local SparkSession and one query registry for the whole test run."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("STREAMING_LAB_DATA", tempfile.mkdtemp(prefix="streaming-lab-test-data-"))  # the app's kept queries, not ./data
os.environ.setdefault("STREAMING_LAB_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")  # short queries over few rows: see session.JAVA_OPTIONS_VARIABLE


SPARK_FIXTURES = frozenset({"spark", "registry", "cli", "connect_server", "kafka_broker", "app_registry", "jobs"})
"""Fixtures that start a JVM (Spark, a Connect server, a Kafka broker): a test that asks for one, directly or through another fixture, is marked ``spark``."""


_SESSIONS: list[pytest.Session] = []


def pytest_sessionstart(session):
    _SESSIONS.append(session)


def pytest_configure(config):
    """A SIGTERM (a time limit, CI's end) becomes a KeyboardInterrupt: pytest then tears every fixture down, so the brokers, servers and
    Connect servers the run started (each in a process group of its own) are stopped, and the Spark JVMs end with this process.

    The session is also told to stop after the test under way: a SIGTERM sent to the whole process group kills the JVM as well, and py4j,
    cleaning up the dead connection the interrupt caught it on, can raise an ``OSError`` in the interrupt's place. The test then fails
    instead, and without the stop the run went on to the next tests."""
    import signal

    def interrupted(signum, frame):
        for session in _SESSIONS:
            session.shouldstop = f"signal {signum}: stopping what the test run started"
        raise KeyboardInterrupt(f"signal {signum}: stopping what the test run started")

    signal.signal(signal.SIGTERM, interrupted)


def pytest_collection_modifyitems(config, items):
    """Mark every test that needs Spark, Kafka or a browser ``spark`` (``make test-fast`` leaves those out: ``-m "not spark"``)."""
    for item in items:
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) or item.get_closest_marker("browser") or item.get_closest_marker("cluster"):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session", autouse=True)
def spark_refused_when_fast(request):
    """Under ``-m "not spark"`` a test that starts a SparkSession anyway fails, naming the mark it lacks, instead of slowing the fast subset down."""
    if "not spark" not in (request.config.getoption("markexpr") or ""):
        yield
        return
    from unittest import mock

    from pyspark.sql import SparkSession

    def refuse(self):
        raise RuntimeError("this test starts Spark: mark it @pytest.mark.spark (or ask for the spark fixture) so make test-fast leaves it out")

    with mock.patch.object(SparkSession.Builder, "getOrCreate", refuse):
        yield


@pytest.fixture(scope="session")
def spark():
    from py4j.protocol import Py4JError

    from streaming.engine.runtime.session import get_session

    session = get_session()
    yield session
    try:
        active = session.streams.active
    except (TypeError, OSError, Py4JError):  # a SIGTERM to the whole process group ended the JVM too: no query is left to stop
        return
    for query in active:
        query.stop()


@pytest.fixture(scope="session")
def registry(spark):
    """The registry every Spark test starts its queries through; stops them all at the end."""
    from streaming.engine.run.registry import QueryRegistry

    shared = QueryRegistry(spark)
    yield shared
    shared.stop_all()


@pytest.fixture(scope="module")
def app_registry() -> Iterator:
    """The app's cached registry (the one AppTest pages use), as the server sees it: every user's runs, and it starts the server's
    own, which every page sees; any run a test of the module left behind is removed."""
    from dashboard import shared

    registry = shared._shared_registry()
    before = {run.name for run in registry.runs()}
    yield registry
    for run in registry.runs():
        if run.name not in before:
            registry.delete(run.name)


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A local Spark Connect server from the project's pyspark, started once per run by the first test that asks; stopped at the end.

    Its clients run in subprocesses: a Connect session in this process would turn
    every PySpark call of the shared classic session into a Connect call.
    """
    from streaming.engine.runtime.connect import ConnectServer

    server = ConnectServer(tmp_path_factory.mktemp("connect-server"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real single-node Apache Kafka broker (KRaft) on 127.0.0.1, started once per run by the first test that asks; stopped at the end."""
    from streaming.engine.kafka.broker import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-broker"))
    broker.start()
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture
def topic_name(request) -> str:
    """A topic name no other test uses."""
    return f"{re.sub(r'[^A-Za-z0-9.]+', '-', request.node.name)[:60].strip('-')}-{uuid.uuid4().hex[:6]}"


@pytest.fixture
def write_feed(tmp_path):
    """Factory: ``write_feed([[("2016-05-10 12:07:00", "dog"), ...], ...])`` writes one CSV per batch and returns the folder."""

    def write(batches: list[list[tuple[str, str]]], name: str = "feed") -> Path:
        folder = tmp_path / name
        folder.mkdir()
        for index, rows in enumerate(batches):
            lines = ["event_time,key"] + [f"{event_time},{key}" for event_time, key in rows]
            (folder / f"batch-{index:04d}.csv").write_text("\n".join(lines) + "\n")
        return folder

    return write


@pytest.fixture
def cli(spark, capsys):
    """``python -m streaming ARGS`` in this process, on the shared session: its exit code, stdout and stderr as a ``CompletedProcess``.

    One test (``test_cli``) runs the command as a subprocess; the others save its Spark start.
    """
    import subprocess

    from streaming.cli import main

    def run(*args: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        code = main(list(args), spark=spark)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run
