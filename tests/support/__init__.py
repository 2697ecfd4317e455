"""Helpers the tests share (fixtures are in ``tests/conftest.py``): waiting on a condition, the guide's batches, feeding a plain
PySpark query in lock-step, and running a program Show code exported on the shared session."""

from __future__ import annotations

import io
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from streaming.engine.data.feeds import SAMPLE_FEEDS

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"


EXPORT_SETTINGS = (
    "spark.sql.session.timeZone",
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
    "spark.sql.streaming.multipleWatermarkPolicy",
)
"""The session settings an exported program sets, which :func:`run_program` puts back."""


@contextmanager
def settings_kept(spark) -> Iterator[None]:
    """Puts back the session settings an exported program changes (:data:`EXPORT_SETTINGS`, the log level) once it has run on ``spark``,
    and drops the temporary views it made (a SQL program's views), so the run's other tests find the shared session as it was."""
    before = {key: spark.conf.get(key, None) for key in EXPORT_SETTINGS}
    views = {table.name for table in spark.catalog.listTables() if table.isTemporary}
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        spark.sparkContext.setLogLevel(os.environ.get("SPARK_LOG_LEVEL", "ERROR"))
        for table in spark.catalog.listTables():
            if table.isTemporary and table.name not in views:
                spark.catalog.dropTempView(table.name)


def run_program(spark, code: str) -> str:
    """Run a program Show code exported, in this process on the shared ``spark``, and return what it printed.

    Its ``getOrCreate()`` returns ``spark``; its ``spark.stop()`` is held (the run's other tests need the session) and the
    settings it changes are put back. One test (``test_export``) runs an exported program as its own process, which also
    covers the session it builds and its exit.
    """
    from unittest import mock

    from pyspark.sql import SparkSession

    printed = io.StringIO()
    with settings_kept(spark), mock.patch.object(SparkSession, "stop", lambda self: None), redirect_stdout(printed):
        exec(compile(code, "<export>", "exec"), {"__name__": "__main__"})
    return printed.getvalue()


def console_definitions(spark, code: str) -> dict:
    """The names an unbounded program (a console sink) defines up to its run (its ``spark``, ``result``, ``joined``...), executed on
    ``spark``; nothing is started, and the settings it changes are put back."""
    definitions, run = code.split("# --- Run ", 1)
    assert "writer.start()" in run
    namespace: dict = {"__name__": "export_test"}
    with settings_kept(spark):
        exec(compile(definitions, "<export>", "exec"), namespace)
    return namespace


def printed_result(stdout: str) -> list[dict]:
    """The records of a program's one ``RESULT <json>`` line."""
    import json

    from streaming.export import RESULT_PREFIX

    marked = [line for line in stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    assert len(marked) == 1, stdout[-4000:]
    return json.loads(marked[0][len(RESULT_PREFIX):])


def wait_for(condition, what: str, timeout: float = 120.0) -> None:
    """Poll ``condition`` every 0.1 s until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} after {timeout} s"
        time.sleep(0.1)


GUIDE_BATCHES = [
    [("2016-05-10 12:07:00", "dog"), ("2016-05-10 12:08:00", "owl")],
    [("2016-05-10 12:14:00", "dog"), ("2016-05-10 12:09:00", "cat")],
    [("2016-05-10 12:15:00", "cat"), ("2016-05-10 12:08:00", "dog"), ("2016-05-10 12:13:00", "owl"), ("2016-05-10 12:21:00", "owl")],
    [("2016-05-10 12:17:00", "owl"), ("2016-05-10 12:04:00", "donkey")],
]


def feed_lockstep(query, files: list[Path], staging: Path) -> None:
    """Hand ``files`` to a file-source ``query`` reading ``staging``: one at a time, atomically, with increasing mtimes, waiting for Spark after each."""
    base = time.time()
    for index, path in enumerate(files):
        partial = staging / f".{path.name}.partial"
        shutil.copyfile(path, partial)
        os.utime(partial, (base + index, base + index))
        os.replace(partial, staging / path.name)
        query.processAllAvailable()
    query.processAllAvailable()


def plain_memory_run(spark, files: list[Path], workdir: Path, frame_of, mode: str, read):
    """Run a plain-PySpark file-source query into Spark's memory sink, one file per micro-batch in lock-step, and return ``read(table)``.

    ``frame_of(staging)`` builds the streaming DataFrame reading the folder
    ``staging``; the files are handed over by :func:`feed_lockstep`. The query
    is stopped before its table is read, and the table dropped after.
    """
    name = f"plain_{uuid.uuid4().hex[:12]}"
    staging = workdir / name
    staging.mkdir()
    writer = frame_of(str(staging)).writeStream.format("memory").queryName(name).outputMode(mode)
    query = writer.option("checkpointLocation", str(workdir / f"{name}-checkpoint")).start()
    try:
        feed_lockstep(query, files, staging)
    finally:
        query.stop()
    try:
        return read(spark.table(name))
    finally:
        spark.catalog.dropTempView(name)


# --- the guide's example as the runner reports it, and the sample feeds held to plain PySpark

GUIDE = {"window": "10 minutes", "slide": "5 minutes", "watermark": "10 minutes"}


def rec(start: str, end: str, key: str, count: int) -> dict:
    day = "2016-05-10"
    return {"window_start": f"{day} {start}:00", "window_end": f"{day} {end}:00", "key": key, "count": count}


GUIDE_APPEND = [rec("12:00", "12:10", "cat", 1), rec("12:00", "12:10", "dog", 2), rec("12:00", "12:10", "owl", 1)]
GUIDE_UPDATE = GUIDE_APPEND + [
    rec("12:05", "12:15", "cat", 1),
    rec("12:05", "12:15", "dog", 3),
    rec("12:05", "12:15", "owl", 2),
    rec("12:10", "12:20", "cat", 1),
    rec("12:10", "12:20", "dog", 1),
    rec("12:10", "12:20", "owl", 2),
    rec("12:15", "12:25", "cat", 1),
    rec("12:15", "12:25", "owl", 2),
    rec("12:20", "12:30", "owl", 1),
]
# complete mode keeps every window and drops nothing: the donkey is counted
GUIDE_COMPLETE = sorted(
    GUIDE_UPDATE + [rec("11:55", "12:05", "donkey", 1), rec("12:00", "12:10", "donkey", 1)],
    key=lambda r: (r["window_start"], r["window_end"], r["key"]),
)


FEEDS = {
    # name: (number of leading files used, window, slide, watermark); the guide example is compared above
    "web_clicks": (8, "20 seconds", None, "30 seconds"),
    "sensor_readings": (8, "1 minute", "30 seconds", "1 minute"),
}


def feed_folder(name: str, tmp_path: Path) -> Path:
    count = FEEDS[name][0]
    folder = tmp_path / name
    folder.mkdir()
    for path in sorted((SAMPLE_FEEDS / name).glob("*.csv"))[:count]:
        shutil.copyfile(path, folder / path.name)
    return folder
