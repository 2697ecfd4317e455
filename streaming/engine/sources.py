"""Streaming DataFrames for each source kind, all with the same two columns.

Every source yields ``event_time`` (timestamp, null when unparsable) and
``key`` (string, null when missing); the query builder counts and filters the
malformed rows. Feed and socket sources need a helper that hands data to Spark
(:class:`FeedReplayer`, :class:`LineServer`); :func:`input_frame` returns it so
the caller can stop it together with the query.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .batching import arrival_pauses, cut_batches
from .config import FeedSource, GeneratorSource, RateMicroBatchSource, RateSource, SocketSource, Source
from .feeds import dataset_columns, event_columns, feed_files, feed_header, feed_schema
from .preview import dataset_schema, read_dataset, stream_schema

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["FeedReplayer", "Feeder", "LineServer", "batch_rows", "generator_columns", "input_frame"]


class Feeder(Protocol):
    """What hands data to a source from the app's side: a feed replayer or a line server."""

    done: threading.Event

    def start(self) -> None: ...

    def stop(self) -> None: ...


class FeedReplayer:
    """Hands a feed's files to Spark's file source one at a time, in file-name order.

    Each file is written atomically into ``staging`` with a strictly increasing
    modification time (also after the files an earlier run of a kept query staged there), so with ``maxFilesPerTrigger=1`` each file is exactly one
    micro-batch. With ``seconds_per_file > 0``, :meth:`start` runs a daemon
    thread that stages one file per interval (or, with ``pauses``, waits
    ``pauses[i]`` seconds after file ``i``); with ``0`` the caller steps it
    with :meth:`stage_next` (the runner does, waiting for the query to go idle
    between files, as a paced stream would) or stages everything with
    :meth:`stage_all`.
    """

    def __init__(self, files: list[Path], staging: Path, seconds_per_file: float, pauses: Sequence[float] | None = None) -> None:
        self.files = list(files)
        self.staging = Path(staging)
        self.seconds_per_file = seconds_per_file
        self.pauses = [float(seconds_per_file)] * len(self.files) if pauses is None else [float(pause) for pause in pauses]
        """Seconds to wait after staging each file before the next (paced replays only)."""
        self.staging.mkdir(parents=True, exist_ok=True)
        earlier = [path for path in self.staging.iterdir() if not path.name.startswith(".")]
        self.staged = len(earlier)
        """Files handed over so far: a staging folder kept from an earlier run goes on after its files."""
        self.done = threading.Event()
        if self.staged >= len(self.files):
            self.done.set()
        self._stop = threading.Event()
        latest = max((path.stat().st_mtime for path in earlier), default=0.0)
        self._base_mtime = max(time.time(), latest + 1) - self.staged
        self._thread: threading.Thread | None = None

    @property
    def stepped(self) -> bool:
        """True when the caller, not a thread, decides when the next file is staged."""
        return self.seconds_per_file == 0

    def stage_next(self) -> bool:
        """Stage the next file; ``False`` when every file is staged already."""
        index = self.staged
        if index >= len(self.files):
            self.done.set()
            return False
        source = self.files[index]
        target = self.staging / f"{index:06d}-{source.name}"
        partial = self.staging / f".{target.name}.partial"
        shutil.copyfile(source, partial)
        mtime = self._base_mtime + index
        os.utime(partial, (mtime, mtime))
        os.replace(partial, target)
        self.staged = index + 1
        if self.staged == len(self.files):
            self.done.set()
        return True

    def stage_all(self) -> None:
        while self.stage_next():
            pass

    def _run(self) -> None:
        while self.stage_next():
            if self._stop.wait(self.pauses[self.staged - 1]):
                return

    def start(self) -> None:
        if not self.stepped:
            self._thread = threading.Thread(target=self._run, name="feed-replayer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


class LineServer:
    """A TCP server on 127.0.0.1 that sends a feed's data lines to one client, ``lines_per_second`` at a time.

    Spark's socket source connects once and reads lines; the server sends the
    feed's rows (without headers) in file order and then keeps the connection
    open until :meth:`stop`.
    """

    def __init__(self, files: list[Path], lines_per_second: float) -> None:
        self.files = list(files)
        self.interval = 1.0 / lines_per_second
        self.sent = 0
        self.done = threading.Event()
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.5)
        self.port: int = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="line-server", daemon=True)

    def _lines(self) -> Iterator[str]:
        for path in self.files:
            with path.open(newline="") as handle:
                next(handle, None)
                for line in handle:
                    if line.strip():
                        yield line.rstrip("\r\n") + "\n"

    def _serve(self) -> None:
        connection = None
        while connection is None and not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
        if connection is None:
            return
        with connection:
            for line in self._lines():
                if self._stop.wait(self.interval):
                    return
                try:
                    connection.sendall(line.encode())
                except OSError:
                    return
                self.sent += 1
            self.done.set()
            self._stop.wait()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._server.close()


def _feed_frame(spark: SparkSession, source: FeedSource, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder]:
    files = source.files()
    if source.sample_layout:
        replayer = FeedReplayer(files, staging, source.seconds_per_file)
        raw = spark.readStream.schema(feed_schema(source.path)).option("header", True).option("maxFilesPerTrigger", 1).option("mode", "PERMISSIVE").csv(str(staging))
        return raw.select(*event_columns("event_time", "key")), replayer
    # A user's dataset: the columns and types Spark reads from the files in one batch read
    # (CSV as text), checked against the mapping before the stream starts; then the files
    # of its micro-batches, cut as its batching rule says.
    batch = read_dataset(spark, files, source.file_format)
    schema, struct = dataset_schema(batch), stream_schema(batch)
    columns = dataset_columns(source.columns, schema)
    batches, arrivals = cut_batches(
        spark, files, source.file_format, source.batching, staging.parent / "batches", time_format=source.arrival_format, schema=schema, struct=struct
    )
    pauses = arrival_pauses(arrivals, source.speed) if source.speed is not None and arrivals is not None else None
    replayer = FeedReplayer(batches, staging, source.seconds_per_file, pauses)
    reader = spark.readStream.schema(struct).option("maxFilesPerTrigger", 1)
    if source.file_format == "csv":
        raw = reader.option("header", True).option("mode", "PERMISSIVE").csv(str(staging))
    elif source.file_format == "json":
        raw = reader.option("mode", "PERMISSIVE").json(str(staging))
    else:
        raw = reader.parquet(str(staging))
    return raw.select(*columns), replayer


def batch_rows(spark: SparkSession, source: FeedSource) -> DataFrame:
    """Every row of the feed's files as one batch DataFrame of the columns its stream yields (``event_time``, ``key``, and the mapped ``value``, ``dedup_id``)."""
    files = source.files()
    if source.sample_layout:
        raw = spark.read.schema(feed_schema(source.path)).option("header", True).option("mode", "PERMISSIVE").csv([str(path) for path in files])
        return raw.select(*event_columns("event_time", "key"))
    batch = read_dataset(spark, files, source.file_format)
    return batch.select(*dataset_columns(source.columns, dataset_schema(batch)))


def _socket_frame(spark: SparkSession, source: SocketSource, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder]:
    from pyspark.sql import functions as F

    header = feed_header(source.path)
    server = LineServer(feed_files(source.path), source.lines_per_second)
    fields = F.split(F.col("value"), ",")
    frame = (
        spark.readStream.format("socket")
        .option("host", "127.0.0.1")
        .option("port", server.port)
        .load()
        .select(
            *event_columns(
                F.try_element_at(fields, F.lit(header.index("event_time") + 1)),
                F.try_element_at(fields, F.lit(header.index("key") + 1)),
            )
        )
    )
    return frame, server


def _key_column(value: Column, keys: int, salt: int = 0) -> Column:
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64(F.lit(salt), value), F.lit(keys)) if salt else F.pmod(value, F.lit(keys))
    return F.concat(F.lit("key-"), bucket.cast("string")).alias("key")


def generator_columns(source: GeneratorSource, value: Column | None = None, timestamp: Column | None = None) -> list[Column]:
    """``[event_time, key]`` columns of the generator, computed from the rate source's ``value`` and ``timestamp``.

    A pure function of ``value`` for a given seed, so it applies to a static
    DataFrame as well as to the stream (that is how its determinism is tested).
    """
    from pyspark.sql import functions as F

    value = F.col("value") if value is None else value
    timestamp = F.col("timestamp") if timestamp is None else timestamp
    lag_ms = F.pmod(F.xxhash64(F.lit(source.seed), value), F.lit(source.max_lag_ms + 1))
    is_late = F.pmod(F.xxhash64(F.lit(source.seed + 1), value), F.lit(1_000_000)) < F.lit(int(source.late_share * 1_000_000))
    extra_ms = F.when(is_late, F.lit(source.late_delay_ms)).otherwise(F.lit(0))
    event_ms = F.unix_millis(timestamp) - lag_ms - extra_ms
    if source.stall_after_ms is not None:  # the clock stops: every event past the stall lags by the time since it
        stall_events = source.stall_after_ms * source.events_per_second // 1000
        event_ms = event_ms - F.greatest(value - F.lit(stall_events), F.lit(0)) * F.lit(1000) / F.lit(source.events_per_second)
        event_ms = event_ms.cast("bigint")
    return [F.timestamp_millis(event_ms).alias("event_time"), _key_column(value, source.keys, salt=source.seed + 2)]


def _generator_frame(spark: SparkSession, source: GeneratorSource, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
    rate = spark.readStream.format("rate").option("rowsPerSecond", source.events_per_second).load()
    return rate.select(*generator_columns(source)), None


def _rate_frame(spark: SparkSession, source: RateSource, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
    from pyspark.sql import functions as F

    rate = spark.readStream.format("rate").option("rowsPerSecond", source.rows_per_second).load()
    return rate.select(F.col("timestamp").alias("event_time"), _key_column(F.col("value"), source.keys)), None


def _rate_micro_batch_frame(spark: SparkSession, source: RateMicroBatchSource, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
    from pyspark.sql import functions as F

    rate = (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", source.rows_per_batch)
        .option("advanceMillisPerBatch", source.advance_ms)
        .option("startTimestamp", now_ms)
        .load()
    )
    return rate.select(F.col("timestamp").alias("event_time"), _key_column(F.col("value"), source.keys)), None


FrameBuilder = Callable[["SparkSession", Any, Path, int], "tuple[DataFrame, Feeder | None]"]

_FRAMES: dict[type, FrameBuilder] = {
    FeedSource: _feed_frame,
    SocketSource: _socket_frame,
    GeneratorSource: _generator_frame,
    RateSource: _rate_frame,
    RateMicroBatchSource: _rate_micro_batch_frame,
}
"""The streaming DataFrame of each source kind: one entry per kind of :data:`~streaming.engine.config.Source`."""


def input_frame(spark: SparkSession, source: Source, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
    """``(frame, feeder)``: the source's streaming DataFrame and the helper that feeds it (or ``None``).

    ``staging`` is a private folder for the feed source's staged files; ``now_ms``
    is the start of event time for ``rate-micro-batch``.
    """
    return _FRAMES[type(source)](spark, source, staging, now_ms)
