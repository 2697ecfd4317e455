"""How a run's output rows reach its :class:`~streaming.engine.output.results.ResultTable`: one of two sinks, one interface.

On a classic session (local or standalone cluster) :class:`FoldSink` folds
every micro-batch in this process with ``foreachBatch``, as Spark hands it over.

In real-time mode Spark allows no ``foreachBatch``: :class:`TopicSink` has
Spark's Kafka sink write each row, as soon as it is processed, to a topic of
the run's own on the source's brokers, and a thread here folds what arrives there.

On Spark Connect a ``foreachBatch`` function runs in a Python worker of the
*server*: what it folds is invisible to the app (and a function holding a lock
cannot even be sent there). :class:`MemorySinkReader` writes to Spark's memory
sink instead and reads it from the client: a thread folds each batch's rows as
soon as the client-side listener has reported the batch. The progress gives each
batch's ``sink.numOutputRows``, so every read fetches only the rows of batches
not yet folded (``OFFSET``/``LIMIT`` over the sink, whose rows stay in batch
order): what crosses the network and what the app folds stay small however long
the run. The server still copies the sink's rows to answer a read (the memory
sink is scanned as a local table), so a read's cost on the server grows with the sink.

The memory sink itself keeps every row it is given (SPARK-24525; complete mode
keeps only the last batch). Growth is bounded by ``max_sink_rows``: once the
sink holds that many rows the reader stops the query and says why in
:attr:`MemorySinkReader.error`; the result table already folded stays. When the
run ends its sink's view is dropped, so the server can free the rows. A memory
sink cannot resume from a checkpoint in update or append mode, so runs on
Connect are not kept.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..checks import count_setting
from ..errors import ConfigError
from ..kafka.topics import client_settings, create_topic, delete_topic
from .latency import PRODUCED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

    from .latency import LatencyLog
    from .progress import ProgressLog

__all__ = [
    "DEFAULT_MAX_SINK_ROWS", "MAX_SINK_ROWS_VARIABLE", "BatchFolder", "BatchTooLarge", "FoldSink", "MemorySinkReader", "Sink", "TopicSink", "max_sink_rows", "split_batches",
]

LOG = logging.getLogger(__name__)
Row = TypeVar("Row")
MAX_SINK_ROWS_VARIABLE = "STREAMING_LAB_MAX_SINK_ROWS"
DEFAULT_MAX_SINK_ROWS = 250_000
"""Rows the memory sink may hold on Connect before the run is stopped. The Live page's generator at 2,000 events/s (8 keys,
10-second windows) gives the sink about 1,460 rows a minute, so about 3 hours. A read makes the server copy the whole
sink: measured on a local server, about 1 s for a 16-row read of a 1,300,000-row sink, tens of ms for 44,000 rows."""


def max_sink_rows(environ: Mapping[str, str]) -> int:
    """The memory sink's row limit on Connect: :data:`MAX_SINK_ROWS_VARIABLE`, default :data:`DEFAULT_MAX_SINK_ROWS`."""
    return count_setting(environ, MAX_SINK_ROWS_VARIABLE, DEFAULT_MAX_SINK_ROWS)


class BatchFolder(Protocol):
    """What takes a micro-batch's output rows once read: a run's :class:`~streaming.engine.output.results.ResultTable`, a live join's rows."""

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        """Take micro-batch ``batch_id``'s rows (as tuples of the output's columns); called once per batch, in batch order."""
        ...


class Sink(Protocol):
    """Where a run's output goes and how it is folded into its table."""

    def attach(self, writer: DataStreamWriter) -> DataStreamWriter:
        """``writer`` with this sink set."""
        ...

    def started(self, query: StreamingQuery) -> None:
        """Called once the query has started."""
        ...

    def catch_up(self, timeout: float) -> None:
        """Return once every batch the progress log holds is folded into the table; ``TimeoutError`` after ``timeout`` seconds."""
        ...

    def close(self, read: bool = True) -> None:
        """Stop reading, after folding what is left unless ``read`` is false (a lost session); idempotent."""
        ...

    @property
    def error(self) -> str | None:
        """Why the sink stopped the query, or ``None``."""
        ...


class BatchTooLarge(RuntimeError):
    """A batch's output beyond the row budget: raised in ``foreachBatch``, it fails the query before the batch commits."""


class FoldSink:
    """``foreachBatch`` in this process: each batch is folded by Spark's own call, before the batch commits (a kept table stores it then too).

    At most ``max_rows`` rows of a batch are collected: one more fails the query with a plain reason instead of collecting the rest into
    the server's memory (a SQL query that multiplies its rows, or a complete-mode table of millions of groups)."""

    def __init__(self, table: BatchFolder, latency: LatencyLog | None = None, *, max_rows: int = DEFAULT_MAX_SINK_ROWS) -> None:
        if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
            raise ConfigError("max_sink_rows", max_rows, "must be a whole number of at least 1")
        self.table = table
        self.latency = latency
        """Told when each batch's rows were received and folded (:mod:`streaming.engine.output.latency`)."""
        self.max_rows = max_rows
        self.error: str | None = None

    def attach(self, writer: DataStreamWriter) -> DataStreamWriter:
        table, latency, budget = self.table, self.latency, self.max_rows

        def fold(batch: DataFrame, batch_id: int) -> None:
            rows = [tuple(row) for row in batch.limit(budget + 1).collect()]
            if len(rows) > budget:
                self.error = (
                    f"batch {batch_id} gave more than {budget:,} rows, the most one batch may hand the page ({MAX_SINK_ROWS_VARIABLE}): the query "
                    "was stopped before they were collected. Aggregate or filter more, or raise the limit"
                )
                raise BatchTooLarge(self.error)
            written = time.time_ns() // 1_000_000
            table.apply(batch_id, rows)
            if latency is not None:
                latency.batch_written(batch_id, written, time.time_ns() // 1_000_000)

        return writer.foreachBatch(fold)

    def started(self, query: StreamingQuery) -> None:
        pass

    def catch_up(self, timeout: float) -> None:
        pass

    def close(self, read: bool = True) -> None:
        pass


def split_batches(rows: Sequence[Row], counts: Sequence[tuple[int, int]]) -> list[tuple[int, list[Row]]]:
    """``rows`` in sink order cut into ``(batch_id, rows)`` by ``counts``, ``(batch_id, output rows)`` in batch order.

    Raises ``ValueError`` when the counts do not add up to the rows: the sink and the progress disagree.
    """
    total = sum(count for _, count in counts)
    if total != len(rows):
        raise ValueError(f"the progress reports {total} output rows for batches {[batch for batch, _ in counts]}, the sink holds {len(rows)}")
    pieces, start = [], 0
    for batch_id, count in counts:
        pieces.append((batch_id, list(rows[start : start + count])))
        start += count
    return pieces


class MemorySinkReader:
    """Spark's memory sink, read from the client by a thread every ``interval`` seconds. Thread-safe.

    Batches are folded in batch order once their progress is in ``log``; in
    complete mode the sink holds only the latest batch, which replaces the table.
    A batch whose output rows Spark did not report, a batch missing from the
    progress, or a sink that does not hold the rows reported stops the query
    with the reason in :attr:`error`: reading on would fold rows into the wrong batches.
    The thread ends once the query has ended and its last batch is folded.
    """

    def __init__(
        self, spark: SparkSession, name: str, output_mode: str, table: BatchFolder, log: ProgressLog, *,
        interval: float = 0.25, max_sink_rows: int = DEFAULT_MAX_SINK_ROWS,
    ) -> None:
        if isinstance(max_sink_rows, bool) or not isinstance(max_sink_rows, int) or max_sink_rows < 1:
            raise ConfigError("max_sink_rows", max_sink_rows, "must be a whole number of at least 1")
        self.spark = spark
        self.name = name
        self.output_mode = output_mode
        self.table = table
        self.log = log
        self.interval = interval
        self.max_sink_rows = max_sink_rows
        self.sink_rows = 0
        """Rows read from the sink so far: the rows it holds (update and append mode)."""
        self.folded_batch = -1
        self.error: str | None = None
        self._query: StreamingQuery | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def attach(self, writer: DataStreamWriter) -> DataStreamWriter:
        return writer.format("memory")

    def started(self, query: StreamingQuery) -> None:
        self._query = query
        self._thread = threading.Thread(target=self._run, name=f"memory-sink-{self.name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        ticks = 0
        while not self._stop.wait(self.interval):
            ticks += 1
            try:
                ended = ticks % 4 == 0 and self._query is not None and not self._query.isActive
                self.fold_reported()
                if self.error is not None or (ended and self._caught_up(time.monotonic() + 1.0)):
                    self.fold_reported()
                    return
            except Exception as err:  # noqa: BLE001 - a read that fails (a lost server) is tried again; the page reports the session
                LOG.debug("reading the memory sink of %s failed: %s", self.name, err)

    def fold_reported(self) -> int:
        """Fold every batch whose progress is logged and is not folded yet; the number of batches folded."""
        with self._lock:
            if self.error is not None:
                return 0
            pending = self.log.after(self.folded_batch)
            if not pending:
                return 0
            counts = [(int(summary["batch_id"]), int(summary.get("output_rows", -1))) for summary in pending]
            problem = self._problem(counts)
            if problem is not None:
                self._fail(problem)
                return 0
            if self.output_mode == "complete":
                rows = [tuple(row) for row in self.spark.table(self.name).collect()]
                self.table.apply(counts[-1][0], rows)
            else:
                wanted = sum(count for _, count in counts)
                rows = [] if wanted == 0 else [tuple(row) for row in self.spark.table(self.name).offset(self.sink_rows).limit(wanted).collect()]
                try:
                    pieces = split_batches(rows, counts)
                except ValueError as err:
                    self._fail(f"the memory sink and the progress disagree: {err}")
                    return 0
                for batch_id, batch_rows in pieces:
                    self.table.apply(batch_id, batch_rows)
                    if self.log.latency is not None:
                        now = time.time_ns() // 1_000_000
                        self.log.latency.batch_written(batch_id, now, now)
                self.sink_rows += wanted
            self.folded_batch = counts[-1][0]
            if self.sink_rows >= self.max_sink_rows:
                self._fail(
                    f"the memory sink holds {self.sink_rows:,} rows, its limit ({MAX_SINK_ROWS_VARIABLE}={self.max_sink_rows:,}): Spark's memory sink "
                    "keeps every row it is given (SPARK-24525), so the query was stopped; its result table is kept"
                )
            return len(counts)

    def _problem(self, counts: Sequence[tuple[int, int]]) -> str | None:
        expected = self.folded_batch + 1
        for batch_id, count in counts:
            if self.folded_batch >= 0 and batch_id != expected:
                return f"the progress of batch {expected} never arrived (batch {batch_id} did): its rows cannot be told from the next batches'"
            if count < 0 and self.output_mode != "complete":
                return f"Spark did not report the rows batch {batch_id} gave the memory sink (sink.numOutputRows)"
            expected = batch_id + 1
        return None

    def _fail(self, reason: str) -> None:
        self.error = reason
        LOG.warning("%s: %s", self.name, reason)
        if self._query is not None:
            self._query.stop()

    def _caught_up(self, deadline: float) -> bool:
        return self._query is None or self.log.caught_up(self._query, deadline)

    def catch_up(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.fold_reported()
            if self.error is not None:
                raise RuntimeError(f"{self.name}: {self.error}")
            if self.folded_batch >= self.log.last_batch_id:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: batches up to {self.log.last_batch_id} not read from the memory sink after {timeout} s")
            self._stop.wait(0.05)

    def close(self, read: bool = True) -> None:
        """Stop reading; with ``read``, first wait (2 s at most) for the last batch's progress, fold it, and drop the sink's view."""
        self._stop.set()
        if not read:
            return
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        try:
            self._caught_up(time.monotonic() + 2.0)
            self.fold_reported()
            self.spark.catalog.dropTempView(self.name)
        except Exception as err:  # noqa: BLE001 - the session may be gone: what was folded stays
            LOG.debug("last read of the memory sink of %s failed: %s", self.name, err)


class TopicSink:
    """Real-time mode's output: Spark's Kafka sink writes each row to ``topic`` on ``bootstrap``; a thread reads it back and folds it. Thread-safe.

    Rows travel as JSON objects of the output's columns. A pass-through row
    carries its record's produce time (``produced_ms``), so each row's latency
    is measured: to the Kafka record timestamp Spark's producer gave the output
    (written) and to the moment it was folded here. Every read of the topic is
    folded as one "batch" of the table. The topic is made before the query
    starts and deleted by :meth:`close`.
    """

    def __init__(self, bootstrap: str, topic: str, table: BatchFolder, latency: LatencyLog | None, *, poll: float = 0.1) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.table = table
        self.latency = latency
        self.poll = poll
        self.error: str | None = None
        self.folded_rows = 0
        self._chunk = -1
        self._consumer: Any = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._made = False
        self._columns: list[str] = []

    def prepare(self, frame: DataFrame) -> DataFrame:
        """``frame``'s rows as the Kafka sink takes them: one JSON value each. Makes the topic."""
        from pyspark.sql import functions as F


        self._columns = [name for name in frame.columns if name != PRODUCED]
        self._made = create_topic(self.bootstrap, self.topic, 1) or True
        return frame.select(F.to_json(F.struct(*frame.columns)).alias("value"))

    def attach(self, writer: DataStreamWriter) -> DataStreamWriter:
        return writer.format("kafka").option("kafka.bootstrap.servers", self.bootstrap).option("topic", self.topic)

    def started(self, query: StreamingQuery) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition


        settings = {**client_settings(self.bootstrap), "group.id": self.topic, "enable.auto.commit": False, "enable.partition.eof": False}
        self._consumer = Consumer(settings)
        self._consumer.assign([TopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self._thread = threading.Thread(target=self._run, name=f"topic-sink-{self.topic}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.fold_next(self.poll)
            except Exception as err:  # noqa: BLE001 - a broker that stops answering is tried again; the query reports its own failure
                LOG.debug("reading %s failed: %s", self.topic, err)
                self._stop.wait(self.poll)

    def fold_next(self, timeout: float) -> int:
        """Fold the next rows: wait ``timeout`` seconds at most for one, then take what has arrived besides (at most 10,000); the number folded."""
        import json

        with self._lock:
            if self._consumer is None:
                return 0
            first = self._consumer.poll(timeout)  # returns as soon as a row arrives; consume() would wait out its timeout
            if first is None:
                return 0
            received = [first, *self._consumer.consume(10_000, 0)]
            messages = [message for message in received if message.error() is None]
            if not messages:
                return 0
            values = [json.loads(message.value()) for message in messages]
            self._chunk += 1
            self.table.apply(self._chunk, [tuple(value.get(name) for name in self._columns) for value in values])
            self.folded_rows += len(values)
            if self.latency is not None and values and PRODUCED in values[0]:
                folded = time.time_ns() // 1_000_000
                self.latency.add([value[PRODUCED] for value in values], [message.timestamp()[1] for message in messages], folded)
            return len(values)

    def _behind(self) -> int:
        with self._lock:
            if self._consumer is None:
                return 0
            from confluent_kafka import TopicPartition

            _, high = self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=5)
            [position] = self._consumer.position([TopicPartition(self.topic, 0)])
            return max(0, high - max(position.offset, 0))

    def catch_up(self, timeout: float) -> None:
        """Return once every row the topic holds now is folded; ``TimeoutError`` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self._behind() > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.topic}: rows not read after {timeout} s")
            if self._thread is None or not self._thread.is_alive():
                self.fold_next(0.1)
            else:
                self._stop.wait(0.05)

    def close(self, read: bool = True) -> None:
        """Stop reading, after folding what the topic holds unless ``read`` is false; delete the topic. Idempotent."""
        try:
            if read and self._consumer is not None and not self._stop.is_set():
                self.catch_up(10.0)
        except Exception as err:  # noqa: BLE001 - the brokers may be gone: what was folded stays
            LOG.debug("last read of %s failed: %s", self.topic, err)
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with self._lock:
            if self._consumer is not None:
                self._consumer.close()
                self._consumer = None
        if self._made:
            self._made = False
            try:

                delete_topic(self.bootstrap, self.topic)
            except Exception as err:  # noqa: BLE001 - a topic left behind is harmless
                LOG.debug("deleting %s failed: %s", self.topic, err)
