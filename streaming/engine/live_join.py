"""A join of two live streams, run until it is stopped: the rows it emits as they come, and each batch's progress.

:func:`start_live_join` starts a :class:`~streaming.engine.join.JoinConfig`
whose sides are live (the generator's impressions and clicks,
:class:`~streaming.engine.join.LiveSide`, or two Kafka topics,
:class:`~streaming.engine.join.TopicSide`). On a classic session each
micro-batch's rows go to ``foreachBatch`` in this process; on Spark Connect,
where ``foreachBatch`` runs on the server, to Spark's memory sink, which a
:class:`~streaming.engine.sinks.MemorySinkReader` reads batch by batch by the
rows each batch's progress reports. Either way they go into a
:class:`JoinedRows`, which keeps the latest rows and every batch's counts;
the batch's progress goes to a :class:`~streaming.engine.progress.ProgressLog`.
Both are safe to read from any thread while the query runs.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from .errors import ConfigError
from .join import EMITTED_COLUMNS, POLICY_CONF, JoinConfig, emitted_counts, join_frame
from .progress import ProgressListener, ProgressLog
from .query import StopsInBackground, start_with
from .session import is_connect
from .sinks import DEFAULT_MAX_SINK_ROWS, MemorySinkReader

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["DEFAULT_LIVE_ROWS", "JoinedRows", "LiveJoin", "start_live_join"]

DEFAULT_LIVE_ROWS = 2_000


class JoinedRows:
    """The latest ``max_rows`` rows a join emitted (with ``_batch``, the micro-batch of each) and, for every batch, how many it emitted and how
    many of them were a side's row without a match (:func:`~streaming.engine.join.emitted_counts`). Thread-safe: one writer (the batch
    callback), any readers."""

    def __init__(self, config: JoinConfig, max_rows: int = DEFAULT_LIVE_ROWS) -> None:
        if max_rows < 1:
            raise ConfigError("max_rows", max_rows, "must be at least 1")
        self._config = config
        self._max_rows = max_rows
        self._parts: deque[pd.DataFrame] = deque()
        self._held = 0
        self._columns: list[str] | None = None
        self._counts: list[tuple[int, int, int, int]] = []
        self._total = 0
        self._lock = threading.Lock()

    def add(self, batch_id: int, rows: pd.DataFrame) -> None:
        """Take in micro-batch ``batch_id``'s rows; the oldest rows beyond ``max_rows`` are let go."""
        counts = emitted_counts(self._config, rows, [batch_id] * len(rows)).itertuples(index=False, name=None) if len(rows) else [(batch_id, 0, 0, 0)]
        tagged = rows.assign(_batch=batch_id)
        with self._lock:
            self._columns = list(tagged.columns)
            self._counts.extend(counts)
            self._total += len(rows)
            if tagged.empty:
                return
            self._parts.append(tagged)
            self._held += len(tagged)
            while self._held - len(self._parts[0]) >= self._max_rows:
                self._held -= len(self._parts.popleft())

    def latest(self) -> pd.DataFrame:
        """The latest rows, newest last, at most ``max_rows``; empty (with the join's columns once a batch ran) before the first."""
        with self._lock:
            parts, columns = list(self._parts), self._columns
        if not parts:
            return pd.DataFrame(columns=columns or [])
        return pd.concat(parts, ignore_index=True).tail(self._max_rows).reset_index(drop=True)

    def emitted(self) -> pd.DataFrame:
        """Per micro-batch, the rows it emitted and of which rows without a match, per side (:data:`~streaming.engine.join.EMITTED_COLUMNS`)."""
        with self._lock:
            counts = list(self._counts)
        return pd.DataFrame(counts, columns=EMITTED_COLUMNS)

    @property
    def total(self) -> int:
        with self._lock:
            return self._total


class _SinkRows:
    """A :class:`JoinedRows` as the memory sink's reader hands it rows: tuples in the join's ``columns``.

    PySpark's ``collect()`` gives a timestamp as a naive datetime in this machine's time zone; each is turned back into UTC, the
    session's zone, in which ``toPandas()`` gives them on a classic session (a wall time repeated when clocks go back reads as its first).
    """

    def __init__(self, rows: JoinedRows, columns: list[str]) -> None:
        self._rows = rows
        self._columns = columns

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        utc = [tuple(value.astimezone(UTC).replace(tzinfo=None) if isinstance(value, datetime) else value for value in row) for row in rows]
        self._rows.add(batch_id, pd.DataFrame(utc, columns=self._columns))


LiveStatus = Literal["active", "stopped", "failed"]


@dataclass
class LiveJoin(StopsInBackground):
    """One live join started by :func:`start_live_join`. :attr:`rows` and :attr:`log` are safe to read from any thread."""

    name: str
    config: JoinConfig
    query: StreamingQuery
    rows: JoinedRows
    log: ProgressLog
    workdir: Path
    started_at: pd.Timestamp
    _listener: ProgressListener = field(repr=False)
    sink: MemorySinkReader | None = field(default=None, repr=False)
    """On Spark Connect, the reader of the query's memory sink (``None`` on a classic session)."""
    _stop_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _timer: threading.Timer | None = field(default=None, repr=False)
    _stopper: threading.Thread | None = field(default=None, repr=False)
    _stopped: bool = field(default=False, repr=False)
    stopped_at_limit: bool = False
    """True when the query stopped itself at its time limit (:func:`start_live_join`'s ``limit``)."""

    @property
    def checkpoint(self) -> Path:
        """The query's checkpoint, which :func:`~streaming.engine.state.join_side_state` reads while it runs (:meth:`stop` deletes it)."""
        return self.workdir / "checkpoint"

    @property
    def status(self) -> LiveStatus:
        """``active``, ``stopped`` (by :meth:`stop` or the time limit) or ``failed`` (Spark's error, or the session it ran on is gone)."""
        return self._state()[0]

    @property
    def error(self) -> str | None:
        """What ended the query, as Spark reports it; ``None`` while it runs or once it was stopped."""
        return self._state()[1]

    def _state(self) -> tuple[LiveStatus, str | None]:
        """Spark asked once: the status and the error."""
        try:
            if self.query.isActive:
                return "active", None
            exception = self.query.exception()
        except Exception:  # noqa: BLE001 - the session is gone, and the query with it: said so, never raised into a page
            return ("stopped", None) if self._stopped else ("failed", "the Spark session this join ran on has ended")
        if exception is not None and not self._stopped:  # a stop interrupts the batch under way, which may end in an error: not a failure
            return "failed", str(exception)
        if self.sink is not None and self.sink.error is not None:
            return "failed", self.sink.error
        return "stopped", None

    def stop(self) -> None:
        """Stop the query (Spark waits for the batch it interrupts), let its last batch's progress arrive, then delete its working folder.
        Idempotent; two threads stopping at once take turns."""
        with self._stop_lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                if self._state()[0] == "active":
                    self._stopped = True
                    self.query.stop()
                    self.log.caught_up(self.query, time.monotonic() + 5.0)
            finally:
                if self.sink is not None:
                    self.sink.close()  # reads the batches reported last, then drops the sink's view
                self._listener.unregister(self.name, self.log)
                shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_at_limit(self) -> None:
        self._stopper = threading.current_thread()  # the timer's thread stops it: stopping while it does
        self.stopped_at_limit = self.status == "active"
        self._stop_logged()


def start_live_join(
    spark: SparkSession, config: JoinConfig, listener: ProgressListener, *, root: Path | None = None, max_rows: int = DEFAULT_LIVE_ROWS,
    limit: float | None = None, max_sink_rows: int = DEFAULT_MAX_SINK_ROWS,
) -> LiveJoin:
    """Start ``config`` (a live join: :attr:`JoinConfig.live`) and return its :class:`LiveJoin`; it runs until :meth:`LiveJoin.stop`.

    Micro-batches run one after the other as the sources bring rows.
    ``listener`` (registered on ``spark``) delivers each batch's progress;
    the working folder (checkpoint) is made under ``root`` (the system temp
    folder by default) and deleted by :meth:`LiveJoin.stop`. With ``limit``, the
    query stops itself after that many seconds (a page closed without Stop
    leaves nothing running for ever). The watermark
    ``policy`` is set for this query only. On Spark Connect the rows go
    through the memory sink, and the query is stopped (``failed``, saying why)
    once the sink holds ``max_sink_rows`` rows. :class:`ConfigError` for a join of
    files (:func:`~streaming.engine.join.run_join` replays those).
    """
    if not config.live:
        raise ConfigError("left", config.left.label, "is not a live stream: run_join replays a join of files or topic ranges")
    name = f"live_join_{uuid.uuid4().hex[:12]}"
    workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-live-join-", dir=root))
    rows = JoinedRows(config, max_rows)
    log = ProgressLog()
    sink: MemorySinkReader | None = None
    query: StreamingQuery | None = None

    def take(batch: DataFrame, batch_id: int) -> None:
        rows.add(int(batch_id), batch.toPandas())

    try:
        frame, _ = join_frame(spark, config, workdir / "staging")
        writer = frame.writeStream.queryName(name).outputMode("append").option("checkpointLocation", str(workdir / "checkpoint"))
        if is_connect(spark):
            sink = MemorySinkReader(spark, name, "append", _SinkRows(rows, frame.columns), log, max_sink_rows=max_sink_rows)
            writer = sink.attach(writer)
        else:
            writer = writer.foreachBatch(take)
        listener.register(name, log)
        query = start_with(spark, writer, {POLICY_CONF: config.policy})
        log.run_id = str(query.runId)
        if sink is not None:
            sink.started(query)
    except Exception:
        if query is not None:  # started, then failed to be watched: nothing is left running
            query.stop()
        if sink is not None:
            sink.close(read=False)
        listener.unregister(name, log)
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    run = LiveJoin(name, config, query, rows, log, workdir, pd.Timestamp.now(tz="UTC").tz_convert(None), listener, sink)
    if limit is not None:
        run._timer = threading.Timer(limit, run._stop_at_limit)
        run._timer.daemon = True
        run._timer.start()
    return run
