"""A join of two live streams, run until it is stopped: the rows it emits as they come, and each batch's progress.

:func:`start_live_join` starts a :class:`~streaming.engine.join.JoinConfig`
whose sides are live (the generator's impressions and clicks,
:class:`~streaming.engine.join.LiveSide`) on a classic session. Each
micro-batch's rows go to ``foreachBatch`` in this process and into a
:class:`JoinedRows`, which keeps the latest rows and every batch's counts;
the batch's progress goes to a :class:`~streaming.engine.progress.ProgressLog`.
Both are safe to read from any thread while the query runs.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pandas as pd

from .errors import ConfigError
from .join import POLICY_CONF, JoinConfig, join_frame, unmatched_side
from .progress import ProgressListener, ProgressLog
from .query import start_with
from .session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = ["DEFAULT_LIVE_ROWS", "EMITTED_COLUMNS", "JoinedRows", "LiveJoin", "start_live_join"]

DEFAULT_LIVE_ROWS = 2_000
EMITTED_COLUMNS = ["batch_id", "rows_emitted", "left_unmatched", "right_unmatched"]
"""One row per micro-batch that emitted rows (:meth:`JoinedRows.emitted`)."""


class JoinedRows:
    """The latest ``max_rows`` rows a join emitted (with ``_batch``, the micro-batch of each) and, for every batch, how many it emitted and how
    many of them were a side's row without a match (the other side's event time null). Thread-safe: one writer (the batch callback), any readers."""

    def __init__(self, config: JoinConfig, max_rows: int = DEFAULT_LIVE_ROWS) -> None:
        if max_rows < 1:
            raise ConfigError("max_rows", max_rows, "must be at least 1")
        self._config = config
        self._max_rows = max_rows
        self._parts: deque[pd.DataFrame] = deque()
        self._held = 0
        self._counts: list[tuple[int, int, int, int]] = []
        self._lock = threading.Lock()

    def add(self, batch_id: int, rows: pd.DataFrame) -> None:
        """Take in micro-batch ``batch_id``'s rows; the oldest rows beyond ``max_rows`` are let go."""
        unmatched = unmatched_side(self._config, rows)
        left_unmatched, right_unmatched = int((unmatched == "left").sum()), int((unmatched == "right").sum())
        tagged = rows.assign(_batch=batch_id)
        with self._lock:
            self._counts.append((batch_id, len(rows), left_unmatched, right_unmatched))
            if tagged.empty:
                return
            self._parts.append(tagged)
            self._held += len(tagged)
            while self._held - len(self._parts[0]) >= self._max_rows:
                self._held -= len(self._parts.popleft())

    def latest(self) -> pd.DataFrame:
        """The latest rows, newest last, at most ``max_rows``; empty (no columns) before the first."""
        with self._lock:
            parts = list(self._parts)
        if not parts:
            return pd.DataFrame()
        return pd.concat(parts, ignore_index=True).tail(self._max_rows).reset_index(drop=True)

    def emitted(self) -> pd.DataFrame:
        """Per micro-batch, the rows it emitted and of which rows without a match, per side (:data:`EMITTED_COLUMNS`)."""
        with self._lock:
            counts = list(self._counts)
        return pd.DataFrame(counts, columns=EMITTED_COLUMNS)

    @property
    def total(self) -> int:
        with self._lock:
            return sum(count[1] for count in self._counts)


LiveStatus = Literal["active", "stopped", "failed"]


@dataclass
class LiveJoin:
    """One live join started by :func:`start_live_join`. :attr:`rows` and :attr:`log` are safe to read from any thread."""

    name: str
    config: JoinConfig
    query: StreamingQuery
    rows: JoinedRows
    log: ProgressLog
    workdir: Path
    started_at: pd.Timestamp
    _listener: ProgressListener = field(repr=False)
    _stop_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _timer: threading.Timer | None = field(default=None, repr=False)
    stopped_at_limit: bool = False
    """True when the query stopped itself at its time limit (:func:`start_live_join`'s ``limit``)."""

    @property
    def status(self) -> LiveStatus:
        """``failed`` also when the session the query ran on is gone (Spark can no longer be asked)."""
        return "failed" if self.error is not None else "active" if self._active() else "stopped"

    def _active(self) -> bool:
        try:
            return bool(self.query.isActive)
        except Exception:  # noqa: BLE001 - the session is gone: the query with it
            return False

    @property
    def error(self) -> str | None:
        """What ended the query, as Spark reports it; ``None`` while it runs or once it was stopped."""
        try:
            if self.query.isActive:
                return None
            exception = self.query.exception()
        except Exception:  # noqa: BLE001 - the session is gone: say so rather than fail the page
            return "the Spark session this join ran on has ended"
        return None if exception is None else str(exception)

    def stop(self) -> None:
        """Stop the query and delete its working folder (checkpoint). Idempotent; Spark's stop waits for the batch it interrupts."""
        with self._stop_lock:
            if self._timer is not None:
                self._timer.cancel()
            try:
                if self._active():
                    self.query.stop()
            finally:
                self._listener.unregister(self.name, self.log)
                shutil.rmtree(self.workdir, ignore_errors=True)

    def _stop_at_limit(self) -> None:
        self.stopped_at_limit = self._active()
        self.stop()


def start_live_join(
    spark: SparkSession, config: JoinConfig, listener: ProgressListener, *, root: Path | None = None, max_rows: int = DEFAULT_LIVE_ROWS,
    limit: float | None = None,
) -> LiveJoin:
    """Start ``config`` (a live join: :attr:`JoinConfig.live`) and return its :class:`LiveJoin`; it runs until :meth:`LiveJoin.stop`.

    Micro-batches run one after the other as the rate sources bring rows.
    ``listener`` (registered on ``spark``) delivers each batch's progress;
    the working folder (checkpoint) is made under ``root`` (the system temp
    folder by default) and deleted by :meth:`LiveJoin.stop`. With ``limit``, the
    query stops itself after that many seconds (a page closed without Stop
    leaves nothing running for ever). The watermark
    ``policy`` is set for this query only. :class:`ConfigError` for a join of
    files (:func:`~streaming.engine.join.run_join` replays those) and on Spark
    Connect, whose ``foreachBatch`` runs away from this process.
    """
    if not config.live:
        raise ConfigError("left", config.left.label, "is not a live stream: run_join replays a join of files")
    if is_connect(spark):
        raise ConfigError("session", "Spark Connect", "runs a live join's batch callback on the server: start live joins on a local or cluster session")
    name = f"live_join_{uuid.uuid4().hex[:12]}"
    workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-live-join-", dir=root))
    rows = JoinedRows(config, max_rows)
    log = ProgressLog()

    def take(batch: DataFrame, batch_id: int) -> None:
        rows.add(int(batch_id), batch.toPandas())

    try:
        frame, _ = join_frame(spark, config, workdir / "staging")
        writer = frame.writeStream.queryName(name).outputMode("append").option("checkpointLocation", str(workdir / "checkpoint")).foreachBatch(take)
        listener.register(name, log)
        query = start_with(spark, writer, {POLICY_CONF: config.policy})
    except Exception:
        listener.unregister(name, log)
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    log.run_id = str(query.runId)
    run = LiveJoin(name, config, query, rows, log, workdir, pd.Timestamp.now(tz="UTC").tz_convert(None), listener)
    if limit is not None:
        run._timer = threading.Timer(limit, run._stop_at_limit)
        run._timer.daemon = True
        run._timer.start()
    return run
