"""The query builder: a :class:`~streaming.engine.query.config.QueryConfig` in, a started streaming query out.

:func:`build_frame` turns a config into the streaming DataFrame of the result
table (``window_start``/``window_end`` as epoch microseconds, ``key``,
``count``); :func:`start_run` starts it with a sink that folds every batch into
a :class:`~streaming.engine.output.results.ResultTable` (``foreachBatch`` on a classic
session, the memory sink read from the client on Spark Connect:
:mod:`streaming.engine.output.sinks`) and returns a :class:`Run` that owns the query,
its sink, its feeder and its working folder.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar

import pandas as pd

from ..durations import format_duration, parse_duration
from ..errors import Cancelled, ConfigError
from ..kafka.topics import describe_topic
from ..output.latency import LatencyLog
from ..output.progress import ProgressListener, ProgressLog
from ..output.results import ResultTable
from ..output.sinks import DEFAULT_MAX_SINK_ROWS, FoldSink, MemorySinkReader, Sink, TopicSink
from ..query.config import CHANGELOG_CONF, INTERVAL_TRIGGERS, PROVIDER_CONF, FeedSource, QueryConfig
from ..query.frame import INPUT_METRICS, build_frame, exact_frame, windowed_counts
from ..runtime.heap import watch_heap
from ..runtime.pools import owner_pool
from ..runtime.session import is_connect
from ..sources import Stepper
from ..sources.replayer import read_all
from ..sql.checker import SqlChecker
from ..sql.form import form_sql
from ..sql.query import SqlQuery
from ..sql.table import SqlTable
from ..sql.views import DEFAULT_VIEW, SqlView
from .budgets import Budgets
from .checkpoints import CHECKPOINT, KeptQuery
from .failure import Failure, failure_of
from .sharing import Share

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import DataStreamWriter, StreamingQuery

    from ..join.live_join import JoinedRows, LiveJoinQuery
    from ..sources import Feeder

    RunConfig: TypeAlias = QueryConfig | SqlQuery | LiveJoinQuery
    """What a run runs: the form's query, a user's SQL or a live join; each builds its frame and its result table."""

__all__ = [
    "CHANGELOG_CONF",
    "INPUT_METRICS",
    "PROVIDER_CONF",
    "Run",
    "RunStatus",
    "StopsInBackground",
    "build_frame",
    "exact_frame",
    "start_run",
    "start_with",
    "windowed_counts",
]

RunStatus = Literal["active", "finished", "stopped", "failed"]
C = TypeVar("C", bound="RunConfig")
"""A run's configuration: a :class:`~streaming.engine.query.config.QueryConfig`, or a user's SQL (:class:`~streaming.engine.sql.query.SqlQuery`)."""
T = TypeVar("T", bound="ResultTable | SqlTable | JoinedRows")
"""A run's result table: a :class:`~streaming.engine.output.results.ResultTable`, a SQL query's (:class:`~streaming.engine.sql.table.SqlTable`) or a live join's rows."""
LOG = logging.getLogger(__name__)
_START_LOCK = threading.Lock()


class StopsInBackground:
    """:meth:`stop_soon` for an object with a ``name``, a blocking idempotent ``stop()`` and a ``_stopper`` field (``None`` at first)."""

    name: str
    _stopper: threading.Thread | None

    def stop(self) -> None:
        raise NotImplementedError

    def stop_soon(self) -> None:
        """:meth:`stop` in a background thread, for a page that must not wait for it; :attr:`stopping` while it runs.

        Never blocks: two calls at once may start two threads, whose stops take turns.
        """
        if self._stopper is None or not self._stopper.is_alive():
            self._stopper = threading.Thread(target=self._stop_logged, name=f"stop-{self.name}", daemon=True)
            self._stopper.start()

    def _stop_logged(self) -> None:
        try:
            self.stop()
        except Exception:  # nobody waits for this thread: the failure goes to the log, and status says what the query is
            LOG.exception("%s: stopping failed", self.name)

    @property
    def stopping(self) -> bool:
        """True while a :meth:`stop_soon` runs."""
        stopper = self._stopper
        return stopper is not None and stopper.is_alive()


REMOVE_SECONDS = 5.0
"""How long a folder's removal tries again while files appear in it."""


def await_tasks(query: StreamingQuery, within: float = REMOVE_SECONDS) -> None:
    """Wait up to ``within`` seconds until no task of ``query``'s last jobs runs (at once on Spark Connect, whose tasks run on its server).

    A stop cancels the batch under way and returns before its cancelled tasks
    have ended; one of them still writing state files recreated the working
    folder after it was deleted (seen on CI: the folder of a stopped run back
    after :func:`remove_folder`). Spark runs a query's jobs in the job group
    of its run id; a job's stages count their running tasks until the last ends.
    """
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None or is_connect(query):
        return
    tracker = context.statusTracker()
    jobs = (tracker.getJobInfo(job) for job in sorted(tracker.getJobIdsForGroup(str(query.runId)))[-4:])
    stages = [stage for job in jobs if job is not None for stage in job.stageIds]
    deadline = time.monotonic() + within

    def running() -> bool:
        return any((info := tracker.getStageInfo(stage)) is not None and info.numActiveTasks > 0 for stage in stages)

    while running() and time.monotonic() < deadline:
        time.sleep(0.05)


def remove_folder(folder: Path, within: float = REMOVE_SECONDS) -> None:
    """Delete ``folder``, trying again for ``within`` seconds while files appear in it: a stopped query's last tasks may still be
    committing state files (seen on a loaded machine: a state file written after the first delete, the folder left behind)."""
    deadline = time.monotonic() + within
    shutil.rmtree(folder, ignore_errors=True)
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Run(StopsInBackground, Generic[C, T]):
    """One started query with everything it owns. ``table`` and ``log`` are safe to read from any thread."""

    name: str
    config: C
    query: StreamingQuery
    table: T
    log: ProgressLog
    feeder: Feeder | None
    workdir: Path
    started_at: pd.Timestamp
    sink: Sink
    latency: LatencyLog | None = field(default=None)
    """Each record's end-to-end latency, for a source whose rows carry when they were produced (``stamp``: a topic, a feed or dataset, the generator, rate); ``None`` for the others."""
    stopped_by_user: bool = field(default=False)
    listened: tuple[SparkSession, ProgressListener] | None = field(default=None, repr=False)
    """A query on a session of its own (a SQL query's): that session and the listener added to it, removed by :meth:`close`."""
    kept: bool = field(default=False)
    """True when ``workdir`` is a kept folder (:class:`~streaming.engine.run.checkpoints.KeptQuery`): :meth:`close` leaves it, :meth:`delete` removes it."""
    stopped_at_limit: bool = field(default=False)
    """True when the run stopped itself at the time limit :meth:`stop_after` set."""
    finished_reading: bool = field(default=False)
    """True when the run was stopped by :meth:`finish`: a replay that had read all its data and run every batch it brings."""
    owner: str | None = field(default=None)
    """Whose run it is (:mod:`streaming.engine.owners`); ``None``: the server's own, seen by every user."""
    share: Share = field(default_factory=Share.new, repr=False)
    """Its read-only link (:mod:`.sharing`): whoever holds the token may watch the run, whoever owns it (:meth:`QueryRegistry.shared_run`).
    A kept run's is its kept query's, which every run of the query answers; change it with :meth:`reshare`."""
    key: str = field(default_factory=lambda: uuid.uuid4().hex, repr=False)
    """This run's own, unlike its name and its share's token, which a later run of its kept query takes again: what a page keys what it
    has drawn or read of the run by."""
    failed_because: str | None = field(default=None)
    """Why the lab stopped the run as failed, in plain words: a batch past its budget (:meth:`watch`), a feed that lost its folder (:meth:`fail`);
    ``None`` for a run it did not."""
    changed_at: tuple[int, ...] = field(default=())
    """The batches from which a change applied to its kept query ran (:meth:`~.checkpoints.KeptQuery.changed_at`), read once at its start."""
    _stop_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _stopped: threading.Event = field(default_factory=threading.Event, repr=False)
    _stopper: threading.Thread | None = field(default=None, repr=False)
    _timer: threading.Timer | None = field(default=None, repr=False)

    @property
    def checkpoint(self) -> Path:
        """The query's checkpoint folder (what a state reader or a topic's first offsets read)."""
        return self.workdir / CHECKPOINT

    def reshare(self, share: Share) -> None:
        """Share the run by ``share`` from now on (its owner granted more or less, or revoked the link); a kept run's kept query keeps it,
        so its next run and a restarted server answer the same link and the old one stays revoked."""
        if self.kept:
            KeptQuery(self.workdir).keep_share(share)
        self.share = share

    def stop_after(self, seconds: float) -> None:
        """Stop by itself after ``seconds`` (a page closed without Stop then leaves nothing running for ever)."""

        def at_limit() -> None:
            self._stopper = threading.current_thread()  # the timer's thread stops it: stopping while it does
            try:
                self.stopped_at_limit = self.query.isActive
            except Exception:  # noqa: BLE001 - the session is gone, and the query with it: nothing to stop
                return
            self._stop_logged()

        self._timer = threading.Timer(seconds, at_limit)
        self._timer.daemon = True
        self._timer.start()

    @property
    def status(self) -> RunStatus:
        if self.query.isActive:
            return "active"
        if self.finished_reading:
            return "finished"
        if self.failed_because is not None:
            return "failed"
        if self.stopped_by_user:  # a stop interrupts the batch under way, which may end in an error: not a failure
            return "stopped"
        if self.query.exception() is not None or self.sink.error is not None:
            return "failed"
        return "finished"

    @property
    def drained(self) -> bool:
        """True while a replay runs on with nothing left to read: its feeder has handed over every file and batches have read the last ones
        (every view's, for a SQL query: :func:`~streaming.engine.sources.replayer.read_all`)."""
        feeder = self.feeder
        if feeder is None or (handed := feeder.handed_files) is None or not feeder.done.is_set() or not self.query.isActive:
            return False
        return read_all(handed, (self.log.latest or {}).get("sources") or [])

    @property
    def error(self) -> str | None:
        """What ended the query: the sink's reason, or the exception as Spark reports it; ``None`` while it runs, when it ended well or was stopped."""
        if self.query.isActive:
            return None
        if self.failed_because is not None:
            return self.failed_because
        if self.stopped_by_user:
            return None
        if self.sink.error is not None:
            return self.sink.error
        exception = self.query.exception()
        return None if exception is None else str(exception)

    @property
    def failure(self) -> Failure | None:
        """What a failed run failed with (:mod:`.failure`); ``None`` for a run that did not fail."""
        return failure_of(self.error or "", self.log.last_batch_id, repeatable=self.failed_because is None) if self.status == "failed" else None

    def watch(self, seconds: float, reason: str) -> None:
        """Stop the run, with ``reason`` as its error, once one micro-batch has run longer than ``seconds`` (the server's budget:
        :class:`~streaming.engine.run.budgets.Budgets`); Spark's stop cancels the batch's jobs. Checked every second until the run stops."""

        def watching() -> None:
            last, since = self.log.last_batch_id, time.monotonic()
            while not self._stopped.wait(1.0):
                try:
                    if not self.query.isActive:
                        return
                    running = bool(self.query.status.get("isTriggerActive"))
                except Exception:  # noqa: BLE001 - the session is gone, and the query with it
                    return
                now, batch = time.monotonic(), self.log.last_batch_id
                if batch != last or not running:
                    last, since = batch, now
                elif now - since > seconds:
                    self.fail(reason)
                    return

        threading.Thread(target=watching, name=f"budget-{self.name}", daemon=True).start()

    def fail(self, reason: str) -> None:
        """Stop the run in the background, failed with ``reason`` (the first reason given, when two come); nothing for a run already ended."""
        if self.failed_because is not None or self._stopped.is_set():  # not under the stop's lock: a stop joins the feeder's thread that may call this
            return
        self.failed_because = reason
        LOG.warning("%s: %s", self.name, reason)
        self.stop_soon()

    def finish(self, timeout: float = 60.0) -> bool:
        """Stop a replay that has read all its data (:attr:`drained`) once Spark has run every batch it brings (the no-data batch that closes
        its last windows included): its status is then ``finished``, and it holds no query slot. ``False``, doing nothing, for a run that is
        not drained; a replay still busy after ``timeout`` seconds is stopped all the same."""
        if not self.drained:
            return False
        waiter = threading.Thread(target=self._idle_quietly, name=f"finish-{self.name}", daemon=True)
        waiter.start()
        waiter.join(timeout)
        self.finished_reading = True
        self.stop()
        return True

    def _idle_quietly(self) -> None:
        try:
            self.query.processAllAvailable()
        except Exception:  # noqa: BLE001 - the query ended meanwhile: its status says how
            return

    def stop(self) -> None:
        """Stop the query, then its feeder (a staging topic is deleted only once nothing reads it). Idempotent; two threads stopping at once take turns.

        Spark's stop waits for the batch it interrupts, which can take seconds.
        The working folder stays: tasks of a batch interrupted by the stop may
        still be writing state there. :meth:`close` deletes it.
        """
        with self._stop_lock:
            if self._timer is not None:
                self._timer.cancel()
            self._stopped.set()
            if self.query.isActive and not self.finished_reading and self.failed_because is None:
                self.stopped_by_user = True
            try:
                self.query.stop()
            finally:
                try:
                    if self.feeder is not None:
                        self.feeder.stop()
                finally:
                    self.sink.close()

    @property
    def stopping(self) -> bool:
        """True while a :meth:`stop_soon` runs and the query is still active."""
        return super().stopping and self.query.isActive

    def close(self) -> None:
        """Stop, then delete the working folder (staged files and checkpoint) unless it is kept. Idempotent.

        A kept run first waits (2 s at most) for the progress of its last batch,
        which the listener delivers after the batch, so a resumed run has every batch's progress.
        """
        self.stop()
        if self.kept:
            self.log.caught_up(self.query, time.monotonic() + 2.0)
        else:
            self._remove_workdir()
        self._unlisten()

    def _remove_workdir(self) -> None:
        """Delete the working folder once the stopped query's last tasks have ended (:func:`await_tasks`)."""
        await_tasks(self.query)
        remove_folder(self.workdir)

    def _unlisten(self) -> None:
        if self.listened is not None:
            session, listener = self.listened
            self.listened = None
            session.streams.removeListener(listener)

    def delete(self) -> None:
        """Stop, then delete the working folder, kept or not. Idempotent."""
        self.stop()
        self._remove_workdir()
        self._unlisten()

    def await_first_batch(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the first batch to be folded into the table; ``False`` if it was not.

        Returns early, with ``False``, when the query ends without one.
        """
        deadline = time.monotonic() + timeout
        while not self.table.first_batch.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or not self.query.isActive:
                return self.table.first_batch.is_set()
        return True

    def await_idle(
        self, timeout: float = 300.0, cancel: threading.Event | None = None, stop_after: int | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> None:
        """Block until every fed row is processed and the progress of the last batch has been logged.

        A stepped feed (:class:`~streaming.engine.sources.base.Stepper`) is handed over one step (a file, a topic's records of one
        micro-batch) at a time, each once Spark has run every batch it has, including a batch run only because the watermark
        advanced (first the file a kept run staged before it stopped, if Spark
        had not run it); with ``stop_after`` only until that many steps have been handed over in all.
        Other feeders are waited for, then Spark is drained likewise.
        Raises ``TimeoutError`` after ``timeout`` seconds, or the query's exception;
        :class:`~streaming.engine.errors.Cancelled` once ``cancel`` is set, checked
        before each file is handed over (so within one micro-batch). A stepped
        feed calls ``progress(steps processed, steps in all)`` once Spark has run each step's batches.
        """
        deadline = time.monotonic() + timeout
        if self.config.trigger == "real_time":
            self._await_real_time(deadline, timeout)
            return
        if isinstance(self.feeder, Stepper) and self.feeder.stepped:
            self.query.processAllAvailable()
            while (
                not _cancelled(cancel, self.name) and (stop_after is None or self.feeder.staged < stop_after) and self.feeder.stage_next()
            ):
                self.query.processAllAvailable()
                if progress is not None:
                    progress(self.feeder.staged, self.feeder.steps)
        elif self.feeder is not None and not self.feeder.done.wait(timeout):
            raise TimeoutError(f"{self.name}: feeder still running after {timeout} s")
        self.query.processAllAvailable()
        if not self.log.caught_up(self.query, deadline):
            raise TimeoutError(f"{self.name}: progress of the last batch not received after {timeout} s")
        self.sink.catch_up(max(1.0, deadline - time.monotonic()))

    def _await_real_time(self, deadline: float, timeout: float) -> None:
        """Real-time mode runs no batch on demand: wait until a batch's progress has the topic read up to its latest offsets as they were when the wait began, then for the sink."""
        import json


        source = self.config.source.as_topic
        assert source is not None  # QueryConfig refuses real-time mode on any other source
        wanted = dict(describe_topic(source.bootstrap, source.topic).end_offsets())
        while True:
            ends = [json.loads(end) for summary in self.log.summaries() if (end := summary["source_offsets"][1])]
            read = {int(partition): int(offset) for partition, offset in (ends[-1].get(source.topic, {}) if ends else {}).items()}
            if all(read.get(partition, 0) >= offset for partition, offset in wanted.items()):
                break
            if not self.query.isActive:
                exception = self.query.exception()
                raise RuntimeError(f"{self.name}: the query ended before reading to the topic's end: {exception}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self.name}: the topic not read to offsets {wanted} after {timeout} s")
            time.sleep(0.1)
        self.sink.catch_up(max(1.0, deadline - time.monotonic()))


def _cancelled(cancel: threading.Event | None, name: str) -> bool:
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{name}: cancelled")
    return False


def _trigger(config: RunConfig) -> dict[str, Any]:
    if config.trigger in INTERVAL_TRIGGERS:
        # canonical form: Spark's interval parser refuses units parse_duration accepts, such as "ms"
        interval = format_duration(parse_duration(config.trigger_interval or "", field="trigger_interval"))
        return {"processingTime" if config.trigger == "processing_time" else "realTime": interval}
    if config.trigger == "available_now":
        return {"availableNow": True}
    return {}


def start_run(
    spark: SparkSession,
    config: RunConfig,
    name: str,
    listener: ProgressListener,
    *,
    root: Path | None = None,
    max_rows: int | None = None,
    keep: Path | None = None,
    max_sink_rows: int = DEFAULT_MAX_SINK_ROWS,
    latency: bool = True,
    record_outputs: bool = False,
    budgets: Budgets | None = None,
    hand_over: int | None = None,
    owner: str | None = None,
) -> Run:
    """Start ``config`` as a query called ``name`` (``owner``'s: :mod:`streaming.engine.owners`) and return its :class:`Run`; with ``budgets``, stopped once a micro-batch runs past
    its time (:meth:`Run.watch`). Under the busy rule ``hand_over`` stops the data handed over before the start at that many steps in all
    (a kept replay stopped after them goes on with the rest).

    Its feeder hands data over as the arrival rule says (:mod:`streaming.engine.arrival`): under the
    busy rule (or the available-now trigger) every file at once, before the query starts; under the
    quiet rule a paced replay hands each next file over after its pause and once Spark is idle; a
    stepped replay is stepped by its caller (:meth:`Run.await_idle`). Its working folder (staged feed files and checkpoint) is made under ``root``
    (the system temp folder by default) and deleted by :meth:`Run.close`.
    With ``keep``, the folder is that kept folder instead
    (:class:`~streaming.engine.run.checkpoints.KeptQuery`): made for ``config``,
    or resumed from it -- the checkpoint, the files staged, the result table
    and the progress go on where the last run stopped -- and left in place by
    :meth:`Run.close`. A folder made for another configuration is refused with
    :class:`ConfigError`.
    ``max_rows`` bounds the result table held in memory (``None``: unbounded).
    ``latency=False`` leaves out measuring each record's latency (a replay that does not show it).
    ``record_outputs`` keeps every batch's output rows in its result table (:attr:`~streaming.engine.output.results.ResultTable.outputs`).
    On Spark Connect the run reads Spark's memory sink (:class:`~streaming.engine.output.sinks.MemorySinkReader`,
    stopped once the sink holds ``max_sink_rows`` rows) and cannot be kept: ``keep`` is refused with :class:`ConfigError`.
    The state store (``config.state_store``) is set for this query only: the
    session's setting is restored once it has started.
    """
    now_ms = int(time.time() * 1000)
    connect = is_connect(spark)
    if keep is not None and connect:
        raise ConfigError(
            "checkpoint", str(keep),
            "cannot be kept on Spark Connect: the app reads the memory sink there, which Spark cannot resume from a checkpoint in update or append mode",
        )
    kept = None if keep is None else KeptQuery(Path(keep))
    made_here = kept is None or not kept.exists()  # a folder this call makes goes again if the query does not start (Spark refuses some only then)
    if kept is not None:
        if not isinstance(config, (QueryConfig, SqlQuery)):
            raise ConfigError("keep", name, "cannot be kept: a live join is not resumed from a checkpoint")
        now_ms = kept.open(config, name, now_ms, owner)
        owner = kept.owner  # a resumed query stays whose it was
        workdir = kept.folder
        share = kept.share()  # the link its earlier runs answered
    else:
        workdir = Path(tempfile.mkdtemp(prefix=f"streaming-lab-{name}-", dir=root))
        share = Share.new()

    feeder: Feeder | None = None

    def discard() -> None:
        """Undo what was made for a query that did not start: its feeder (a line server, a staging topic), its working folder.

        Called while an error propagates: a feeder that fails to stop is logged, never raised in its place."""
        try:
            if feeder is not None:
                feeder.stop()
        except Exception:
            LOG.exception("%s: stopping the feeder of a query that did not start failed", name)
        finally:
            if made_here:
                shutil.rmtree(workdir, ignore_errors=True)

    try:
        frame, feeder = config.build(spark, workdir / "staging", now_ms, latency=latency)
    except Exception:
        discard()
        raise
    table = config.new_table(frame, max_rows, record=record_outputs)
    session = frame.sparkSession
    listened = None if session is spark else session  # a SQL query's own session: its queries are its own spark.streams'
    latencies = LatencyLog() if latency and config.source.stamp is not None else None
    log = ProgressLog(latencies)
    if kept is not None:
        assert isinstance(table, (ResultTable, SqlTable))  # a kept run is the form's query or a SQL query (refused above otherwise)
        table.keep(kept.result_file)
        log.keep(kept.progress_file)

    sink: Sink
    if config.trigger == "real_time":
        topic = config.source.as_topic
        assert topic is not None  # QueryConfig refuses real-time mode on any other source
        sink = TopicSink(topic.bootstrap, f"streaming-lab-{name}-{uuid.uuid4().hex[:8]}", table, latencies)
        try:
            frame = sink.prepare(frame)
        except Exception:
            discard()
            raise
    elif connect:
        sink = MemorySinkReader(spark, name, config.output_mode, table, log, max_sink_rows=max_sink_rows)
    else:
        sink = FoldSink(table, latencies, max_rows=max_sink_rows)
    try:
        writer = sink.attach(
            frame.writeStream.queryName(name).outputMode(config.output_mode).option("checkpointLocation", str(workdir / CHECKPOINT))
        )
    except Exception:
        sink.close(read=False)
        discard()
        raise
    listener.register(name, log)
    if listened is not None:
        listened.streams.addListener(listener)

    def forget() -> None:
        listener.unregister(name)
        if listened is not None:
            listened.streams.removeListener(listener)

    stepper = feeder if isinstance(feeder, Stepper) else None
    quiet = stepper is not None and stepper.paced and config.arrival == "quiet"
    if stepper is not None and (config.trigger == "available_now" or config.arrival == "busy"):
        stepper.stage_all(hand_over)  # the busy rule: every batch's data there before the first runs
    if feeder is not None and not quiet:
        feeder.start()
    try:
        trigger = _trigger(config)
        if trigger:
            writer = writer.trigger(**trigger)
        with owner_pool(spark, owner):  # its jobs in its owner's pool of the FAIR scheduler, as long as it runs
            query = _start(session, writer, config)
        log.run_id = str(query.runId)
        if quiet:
            assert stepper is not None
            stepper.start_quiet(query.processAllAvailable)  # the quiet rule: each next batch's data once Spark is idle, whatever the load
    except Exception:
        forget()
        sink.close(read=False)
        discard()
        raise
    try:
        sink.started(query)
    except Exception:
        query.stop()
        forget()
        sink.close(read=False)
        discard()
        raise
    run = Run(
        name, config, query, table, log, feeder, workdir, pd.Timestamp.now(tz="UTC").tz_convert(None), sink, latency=latencies, kept=kept is not None,
        listened=None if listened is None else (listened, listener), owner=owner, changed_at=() if kept is None else kept.changed_at(),
        share=share,
    )
    if budgets is not None and budgets.batch_seconds is not None:
        run.watch(budgets.batch_seconds, budgets.overtime())
    if feeder is not None:
        feeder.on_lost(run.fail)
    return run


def _start(spark: SparkSession, writer: DataStreamWriter, config: RunConfig) -> StreamingQuery:
    """Start ``writer`` with ``config``'s settings for this query (its state store; a join's watermark policy): see :func:`start_with`."""
    return start_with(spark, writer, config.spark_settings())


def start_with(spark: SparkSession, writer: DataStreamWriter, wanted: Mapping[str, str]) -> StreamingQuery:
    """Start ``writer`` with the session settings ``wanted`` (name → value) for this query only, restoring the session's after.

    Spark copies the session's settings when a query starts; the lock keeps two
    starts from seeing each other's settings.
    """
    with _START_LOCK:
        before = {name: spark.conf.get(name, None) for name in wanted}
        for name, setting in wanted.items():
            spark.conf.set(name, setting)
        try:
            return writer.start()
        finally:
            for name, earlier in before.items():
                if earlier is None:
                    spark.conf.unset(name)
                else:
                    spark.conf.set(name, earlier)


WARM_UP_ROWS = (
    "event_time,key\n2024-01-01 00:00:01,a\n2024-01-01 00:00:40,b\n",
    "event_time,key\n2024-01-01 00:01:30,a\n2024-01-01 00:00:10,b\n",
)


def warm_up(spark: SparkSession, root: Path | None = None, timeout: int = 120) -> None:
    """Run the default query once over a two-file feed, as the dashboard runs queries, then stop and delete it.

    The same builder, sink and configuration a user starts with the default
    settings (with the available-now trigger, so it ends by itself; it is
    stopped after ``timeout`` seconds in any case): it loads the streaming classes, generates (and caches) the code of
    that plan and, on a classic session, starts the Python callback server, so the user's first query
    does not pay for them. Its feed and working folder are made under ``root``
    (the system temp folder by default) and deleted. Then, on a classic
    session, it checks that query written in SQL :data:`SQL_WARM_UP_CHECKS` times (:func:`warm_sql_checks`).
    First, on a classic session, it starts the heap's watch (:func:`~streaming.engine.runtime.heap.watch_heap`): the session a server
    warms up is the one its pages must not wait on when its heap fills.
    """
    if not is_connect(spark):
        watch_heap(spark)
    folder = Path(tempfile.mkdtemp(prefix="streaming-lab-warm-up-", dir=root))
    try:
        feed = folder / "feed"
        feed.mkdir()
        for index, text in enumerate(WARM_UP_ROWS):
            (feed / f"batch-{index:04d}.csv").write_text(text)
        config = QueryConfig(FeedSource(feed, seconds_per_file=0), trigger="available_now")
        run = start_run(spark, config, f"warm_up_{folder.name.replace('-', '_')}", ProgressListener(), root=folder)
        try:
            run.query.awaitTermination(int(timeout))
        finally:
            run.close()
        if not is_connect(spark):
            warm_sql_checks(spark, config)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


SQL_WARM_UP_CHECKS = 40
"""How many checks of a SQL query the warm-up makes. The JVM compiles the parser's and the analyser's code as it runs it: in a fresh
session the first checks of a windowed count took 70-100 ms, the 30th about 40, the 60th about 30 (in-process, after the warm-up's
query); a user typing SQL right after Spark is ready saw each verdict wait for that."""


def warm_sql_checks(spark: SparkSession, config: QueryConfig, checks: int = SQL_WARM_UP_CHECKS) -> None:
    """Check ``config``'s query written in SQL ``checks`` times over its source as the default view, as the SQL editor does while a user
    types (the first check compiles the plan walk, :mod:`~streaming.engine.sql.walk`)."""
    with SqlChecker(spark, (SqlView(DEFAULT_VIEW, config.source),)) as checker:
        text = form_sql(config)
        for _ in range(checks):
            checker.check(text, config.output_mode)
