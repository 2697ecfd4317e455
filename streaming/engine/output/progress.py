"""Query progress: folded from Spark's progress events into tidy pandas frames.

Spark keeps only the last 100 progress events of a query
(``spark.sql.streaming.numRecentProgressUpdates``); :class:`ProgressLog` keeps a
compact summary of every batch for the whole run. :class:`ProgressListener`
feeds the logs from Spark's listener bus. Everything else here is a pure
function of progress dicts (``json.loads(progress.json)``), tested with canned
ones.

Times are UTC-naive; a watermark of the epoch (Spark's "no watermark yet")
becomes ``NaT``. A summary holds only values the garbage collector stops
tracking after a full collection or two -- numbers, text, ``numpy.datetime64``
times, tuples -- so hours of summaries add nothing to what a full collection
walks (three ``pandas.Timestamp`` and a dict per batch did: 29,000 objects an hour).
Frames hold ``datetime64[ns]`` columns.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import pandas as pd
from pyspark.sql.streaming import StreamingQueryListener

from ..arrival import is_no_data
from ..jsonl import drop_cut_line, read_json_lines
from .extremes import Extremes
from .latency import LATENCY_METRICS, LatencyLog, observed_produced
from .results import stamp

if TYPE_CHECKING:
    from py4j.java_gateway import JavaObject
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "PROGRESS_COLUMNS",
    "ROW_FIELDS",
    "ProgressJson",
    "ProgressListener",
    "ProgressLog",
    "ProgressTotals",
    "batch_records",
    "breakdown_frame",
    "observed_value",
    "progress_dict",
    "progress_frame",
    "progress_time",
    "progress_total",
    "state_store_metrics",
    "summarize",
]

PROGRESS_COLUMNS = [
    "batch_id",
    "timestamp",
    "num_input_rows",
    "input_rows_per_second",
    "processed_rows_per_second",
    "batch_duration_ms",
    "watermark",
    "max_event_time",
    "watermark_gap_seconds",
    "rows_dropped_by_watermark",
    "cumulative_rows_dropped",
    "state_rows_total",
    "state_rows_updated",
    "state_rows_removed",
    "state_memory_bytes",
    "malformed_rows",
    "duplicates_dropped",
    "offsets_behind_avg",
    "offsets_behind_max",
]

_EPOCH = pd.Timestamp(0)
_NAT = np.datetime64("NaT", "ns")


ROW_FIELDS = ("numInputRows", "inputRowsPerSecond", "processedRowsPerSecond")
RATE_FIELDS = ROW_FIELDS[1:]


def progress_dict(progress: Any) -> dict[str, Any]:
    """A ``StreamingQueryProgress`` as the dict this module reads: its JSON, with the row counts its attributes hold.

    On Spark Connect the progress's ``json`` leaves out ``numInputRows`` and the
    two rates, which its attributes carry.
    """
    record = json.loads(progress.json)
    for name in ROW_FIELDS:
        if name not in record and getattr(progress, name, None) is not None:
            record[name] = getattr(progress, name)
    return record


def progress_time(text: str | None) -> np.datetime64:
    """Spark's ISO-8601 time as UTC-naive ``datetime64[ns]``; ``NaT`` for none or the epoch."""
    if not text:
        return _NAT
    stamp = pd.Timestamp(text)
    stamp = stamp.tz_convert(None) if stamp.tzinfo else stamp
    return _NAT if stamp == _EPOCH else np.datetime64(stamp.value, "ns")


def _observed(progress: Mapping[str, Any], metric: str) -> int:
    total = 0
    for metrics in (progress.get("observedMetrics") or {}).values():
        total += int(metrics.get(metric) or 0)
    return total


def _offsets(progress: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``(startOffset, endOffset)`` of the first source, as JSON text (``None`` when absent)."""
    sources = progress.get("sources") or [{}]
    start, end = sources[0].get("startOffset"), sources[0].get("endOffset")
    return (None if start is None else json.dumps(start), None if end is None else json.dumps(end))


def _behind(progress: Mapping[str, Any], metric: str) -> float:
    """A source's ``metrics[metric]`` (Kafka's ``avgOffsetsBehindLatest``...: text), the largest over the sources; NaN when none reports it."""
    values = [float(value) for source in progress.get("sources") or [] if (value := (source.get("metrics") or {}).get(metric)) is not None]
    return max(values) if values else float("nan")


def summarize(progress: Mapping[str, Any]) -> dict[str, Any]:
    """One batch's progress as a flat row (see ``PROGRESS_COLUMNS``, less the cumulative ones); times are ``datetime64[ns]``.

    Also carries ``durations`` (the ``durationMs`` breakdown, ``(phase, ms)`` pairs),
    ``source_offsets`` (the first source's start and end offsets as JSON text:
    for a feed, ``{"logOffset": i}`` ends the batch that read file ``i``),
    ``state_custom`` (the state store's own metrics, ``(name, value)`` pairs as Spark reports them) and
    ``output_rows`` (the rows the sink was given, -1 when Spark does not say),
    ``operators`` (each stateful operator's ``(name, rows in state, rows dropped by the watermark, state bytes)``)
    and ``observed`` (each observed ``(observation, metric, value)``, as the query's ``observe`` named them: :func:`observed_value`).
    ``offsets_behind_avg`` / ``offsets_behind_max`` are how many records the
    query was behind the latest offsets after the batch, averaged over and the
    largest of the partitions (Kafka's ``avgOffsetsBehindLatest`` /
    ``maxOffsetsBehindLatest``; NaN for a source that does not report them).
    """
    operators = progress.get("stateOperators") or []
    event_time = progress.get("eventTime") or {}
    durations = {phase: int(ms) for phase, ms in (progress.get("durationMs") or {}).items()}
    timestamp = progress_time(progress.get("timestamp"))
    watermark = progress_time(event_time.get("watermark"))
    gap = (timestamp - watermark) / np.timedelta64(1, "s")
    return {
        "batch_id": int(progress["batchId"]),
        "timestamp": timestamp,
        "num_input_rows": int(progress.get("numInputRows") or 0),
        "input_rows_per_second": float(progress.get("inputRowsPerSecond") or 0.0),
        "processed_rows_per_second": float(progress.get("processedRowsPerSecond") or 0.0),
        "batch_duration_ms": int(durations.get("triggerExecution", progress.get("batchDuration") or 0)),
        "watermark": watermark,
        "max_event_time": progress_time(event_time.get("max")),
        "watermark_gap_seconds": float(gap),
        "rows_dropped_by_watermark": sum(int(op.get("numRowsDroppedByWatermark") or 0) for op in operators),
        "state_rows_total": sum(int(op.get("numRowsTotal") or 0) for op in operators),
        "state_rows_updated": sum(int(op.get("numRowsUpdated") or 0) for op in operators),
        "state_rows_removed": sum(int(op.get("numRowsRemoved") or 0) for op in operators),
        "state_memory_bytes": sum(int(op.get("memoryUsedBytes") or 0) for op in operators),
        "malformed_rows": _observed(progress, "malformed_rows"),
        "duplicates_dropped": sum(int((op.get("customMetrics") or {}).get("numDroppedDuplicateRows") or 0) for op in operators),
        "offsets_behind_avg": _behind(progress, "avgOffsetsBehindLatest"),
        "offsets_behind_max": _behind(progress, "maxOffsetsBehindLatest"),
        "output_rows": int((progress.get("sink") or {}).get("numOutputRows", -1)),
        "source_offsets": _offsets(progress),
        "durations": tuple(durations.items()),
        "state_custom": tuple(_custom_metrics(operators).items()),
        "operators": tuple(
            (
                str(op.get("operatorName") or "?"), int(op.get("numRowsTotal") or 0), int(op.get("numRowsDroppedByWatermark") or 0),
                int(op.get("memoryUsedBytes") or 0),
            )
            for op in operators
        ),
        "observed": tuple(
            (str(name), str(metric), value)
            for name, metrics in (progress.get("observedMetrics") or {}).items() for metric, value in sorted(metrics.items())
        ),
    }


def observed_value(summary: Mapping[str, Any], observation: str, metric: str) -> Any:
    """The value of ``metric`` in the observation named ``observation`` of a batch's summary (:func:`summarize`); ``None`` when absent."""
    return next((value for name, key, value in summary.get("observed") or () if name == observation and key == metric), None)


def _custom_metrics(operators: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The state store's own metrics (``customMetrics``: RocksDB's ``rocksdb*``, the default store's cache counts), summed over the operators."""
    totals: dict[str, float] = {}
    for operator in operators:
        for name, value in (operator.get("customMetrics") or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                totals[name] = totals.get(name, 0) + value
    return totals


def state_store_metrics(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Long frame ``batch_id, metric, value`` of each batch's state store metrics (see :func:`summarize`), in batch order."""
    records = [
        {"batch_id": summary["batch_id"], "metric": name, "value": float(value)}
        for summary in sorted(summaries, key=lambda summary: summary["batch_id"])
        for name, value in summary.get("state_custom") or ()
    ]
    return pd.DataFrame(records, columns=["batch_id", "metric", "value"])


_NESTED = ("durations", "source_offsets", "state_custom", "operators", "observed")
"""The summary's fields that are not columns of the progress frame."""


def progress_frame(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per batch in batch order, with ``cumulative_rows_dropped``; later summaries of a batch id win."""
    latest = {row["batch_id"]: row for row in summaries}
    rows = [latest[batch] for batch in sorted(latest)]
    frame = pd.DataFrame([{k: v for k, v in row.items() if k not in _NESTED} for row in rows])
    if frame.empty:
        return pd.DataFrame({column: pd.Series(dtype="float64") for column in PROGRESS_COLUMNS})
    frame["cumulative_rows_dropped"] = frame["rows_dropped_by_watermark"].cumsum()
    for column in ("timestamp", "watermark", "max_event_time"):
        frame[column] = pd.to_datetime(frame[column])
    return frame[PROGRESS_COLUMNS]


def breakdown_frame(summaries: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """Long frame ``batch_id, phase, ms`` of each batch's ``durationMs`` breakdown, without the ``triggerExecution`` total.

    ``phase`` is a categorical, its categories in the order they first appear.
    """
    latest = {row["batch_id"]: row for row in summaries}
    records = [
        {"batch_id": batch, "phase": phase, "ms": ms}
        for batch in sorted(latest)
        for phase, ms in latest[batch]["durations"]
        if phase != "triggerExecution"
    ]
    frame = pd.DataFrame(records, columns=["batch_id", "phase", "ms"])
    if records:
        frame["phase"] = pd.Categorical(frame["phase"], categories=list(dict.fromkeys(frame["phase"])))
    return frame


_INT_COLUMNS = (
    "batch_id", "num_input_rows", "batch_duration_ms", "rows_dropped_by_watermark", "cumulative_rows_dropped",
    "state_rows_total", "state_rows_updated", "state_rows_removed", "state_memory_bytes", "malformed_rows", "duplicates_dropped",
)
_FLOAT_COLUMNS = ("input_rows_per_second", "processed_rows_per_second", "watermark_gap_seconds", "offsets_behind_avg", "offsets_behind_max")
_TIME_COLUMNS = ("timestamp", "watermark", "max_event_time")


def _read_only(view: np.ndarray) -> np.ndarray:
    view.flags.writeable = False
    return view


class _Columns:
    """Growable numpy columns (capacity doubles): appending a row is O(1), a frame of all rows a set of views.

    Rows are only ever appended, and a full column is copied into a new, larger
    one, so a view of the first ``size`` rows never changes: the frames share
    the columns' memory instead of copying them.
    """

    def __init__(self, dtypes: Mapping[str, str]) -> None:
        self.size = 0
        self._arrays = {name: np.empty(64, dtype=dtype) for name, dtype in dtypes.items()}

    def append(self, row: Mapping[str, Any]) -> None:
        if self.size == len(next(iter(self._arrays.values()))):
            self._arrays = {name: np.resize(array, 2 * len(array)) for name, array in self._arrays.items()}
        for name, array in self._arrays.items():
            array[self.size] = row[name]
        self.size += 1

    def frame(self, names: Sequence[str]) -> pd.DataFrame:
        """The columns ``names`` of every row so far, in that order, as read-only views."""
        return pd.DataFrame({name: _read_only(self._arrays[name][: self.size]) for name in names}, copy=False)

    def column(self, name: str, rows: int) -> np.ndarray:
        """The first ``rows`` values of column ``name``, a view (no copy)."""
        return self._arrays[name][: min(rows, self.size)]


def _progress_columns() -> _Columns:
    dtypes = dict.fromkeys(_INT_COLUMNS, "int64") | dict.fromkeys(_FLOAT_COLUMNS, "float64") | dict.fromkeys(_TIME_COLUMNS, "datetime64[ns]")
    return _Columns(dtypes)


def _breakdown_columns() -> _Columns:
    """``batch_id, phase, ms``; the phase is held as a code into the log's phases, and framed as a categorical."""
    return _Columns({"batch_id": "int64", "phase": "int16", "ms": "int64"})


class ProgressLog:
    """Every batch's summary for one query run, plus the latest raw progress. Thread-safe.

    Once ``run_id`` is set (after the query starts), progress of any other run
    is ignored: a name can be reused by a later run on the same session.
    :meth:`frames` appends only the batches added since its last call to
    growable columns, and :meth:`drawn` finds the batches a chart draws from
    what it found at its last call (:class:`~streaming.engine.output.extremes.Extremes`),
    so a refresh costs about the same after hours of batches as after a minute.
    """

    def __init__(self, latency: LatencyLog | None = None) -> None:
        self.run_id: str | None = None
        self.latency = latency
        """Where the produce times a batch observed go (:mod:`streaming.engine.output.latency`); they are not kept with the progress."""
        self._summaries: dict[int, dict[str, Any]] = {}
        self._order: list[int] = []
        self._reordered = False
        self._latest: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._frames_lock = threading.Lock()
        self._framed = 0
        self._progress_columns = _progress_columns()
        self._breakdown_columns = _breakdown_columns()
        self._phases: dict[str, int] = {}
        self._dropped = 0
        self._no_data: set[int] = set()
        self._frames: tuple[pd.DataFrame, pd.DataFrame] | None = None
        self._extremes: dict[tuple[tuple[str, ...], int], Extremes] = {}
        self._path: Path | None = None

    def keep(self, path: Path) -> None:
        """Take in the progress kept at ``path`` by earlier runs of the query, then append each new batch's progress to it (a JSON line each).

        Call before the query starts. A last line cut short by a crash is removed.
        """
        drop_cut_line(path)
        for progress in read_json_lines(path):
            self._take(progress)
        self._path = path

    def add(self, progress: Mapping[str, Any]) -> None:
        if self.run_id is not None and progress.get("runId") != self.run_id:
            return
        observed = progress.get("observedMetrics") or {}
        if LATENCY_METRICS in observed:
            produced = observed_produced(progress)
            progress = {**progress, "observedMetrics": {name: value for name, value in observed.items() if name != LATENCY_METRICS}}
            if self.latency is not None and produced is not None:
                started = progress_time(progress.get("timestamp"))
                self.latency.batch_produced(int(progress["batchId"]), *produced, started_ms=float(started.astype("int64")) / 1e6 if not np.isnat(started) else float("nan"))
        self._take(progress)
        if self._path is not None:
            with self._path.open("a") as handle:
                handle.write(json.dumps(progress) + "\n")

    def _take(self, progress: Mapping[str, Any]) -> None:
        summary = summarize(progress)
        batch = summary["batch_id"]
        with self._lock:
            if batch in self._summaries or (self._order and batch < self._order[-1]):
                self._reordered = True
            if batch not in self._summaries:
                self._order.append(batch)
            self._summaries[batch] = summary
            self._latest = dict(progress)
            if is_no_data(summary):
                self._no_data.add(batch)
            else:
                self._no_data.discard(batch)

    @property
    def no_data_batches(self) -> int:
        """Batches that read nothing new (run only because the watermark moved), counted as they came (:func:`~streaming.engine.arrival.is_no_data`)."""
        with self._lock:
            return len(self._no_data)

    @property
    def latest(self) -> dict[str, Any] | None:
        with self._lock:
            return self._latest

    @property
    def last_batch_id(self) -> int:
        with self._lock:
            return max(self._summaries, default=-1)

    def summaries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._summaries[batch] for batch in sorted(self._summaries)]

    def caught_up(self, query: StreamingQuery, deadline: float) -> bool:
        """Wait until this log holds the progress of the last batch ``query`` reported (the listener delivers it after the batch); ``False`` if not by ``deadline`` (monotonic seconds).

        An idle query (nothing to read, as a resumed query whose data was all read) reports a progress of the batch it would run next,
        with no ``addBatch`` phase: no batch ran, and none will be delivered."""
        last = query.lastProgress
        ran = last is not None and "addBatch" in (last["durationMs"] or {})
        target = -1 if last is None else int(last["batchId"]) - (0 if ran else 1)
        while self.last_batch_id < target:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def after(self, batch_id: int) -> list[dict[str, Any]]:
        """The summaries of the batches after ``batch_id``, in batch order; costs what they number when batches arrive in order."""
        with self._lock:
            if self._reordered:
                return [self._summaries[batch] for batch in sorted(self._summaries) if batch > batch_id]
            newer = []
            for batch in reversed(self._order):
                if batch <= batch_id:
                    break
                newer.append(self._summaries[batch])
            return newer[::-1]

    def recent(self, batches: int) -> list[dict[str, Any]]:
        """The summaries of the last ``batches`` batches, in batch order; costs what they number when batches arrive in order."""
        with self._lock:
            latest = sorted(self._summaries) if self._reordered else self._order
            return [self._summaries[batch] for batch in latest[-batches:]]

    def _unframed(self) -> tuple[list[dict[str, Any]], bool]:
        """The summaries not yet appended to the columns, and whether the columns must start over."""
        with self._lock:
            restart = self._reordered
            if restart:
                self._order.sort()
                self._reordered = False
                self._framed = 0
            pending = [self._summaries[batch] for batch in self._order[self._framed :]]
            self._framed = len(self._order)
        return pending, restart

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(progress_frame, breakdown_frame)`` of every batch so far (the breakdown's ``phase`` a categorical).

        The frames share the log's columns (no copy): treat them as read-only.
        """
        with self._frames_lock:
            pending, restart = self._unframed()
            if restart:
                self._progress_columns = _progress_columns()
                self._breakdown_columns = _breakdown_columns()
                self._phases = {}
                self._dropped = 0
                self._extremes.clear()
            if self._frames is not None and not pending and not restart:
                return self._frames
            for summary in pending:
                self._dropped += summary["rows_dropped_by_watermark"]
                self._progress_columns.append(summary | {"cumulative_rows_dropped": self._dropped})
                for phase, ms in summary["durations"]:
                    if phase != "triggerExecution":
                        code = self._phases.setdefault(phase, len(self._phases))
                        self._breakdown_columns.append({"batch_id": summary["batch_id"], "phase": code, "ms": ms})
            if self._progress_columns.size == 0:
                self._frames = (progress_frame([]), breakdown_frame([]))
                return self._frames
            breakdown = self._breakdown_columns.frame(("batch_id", "phase", "ms"))
            breakdown["phase"] = pd.Categorical.from_codes(breakdown["phase"].to_numpy(), categories=list(self._phases), validate=False)
            self._frames = (self._progress_columns.frame(PROGRESS_COLUMNS), breakdown)
            return self._frames

    def drawn(self, columns: Sequence[str], rows: int, max_points: int) -> np.ndarray:
        """Positions of the rows of the progress frame a chart of ``columns`` draws: the first ``rows`` (the frame's length) thinned to about ``max_points``.

        The rule is that of :class:`~streaming.engine.output.extremes.Extremes`; each set
        of columns keeps its own, so a refresh costs the batches added since the
        last one plus the rows returned. ``rows`` is the length of the frame
        :meth:`frames` returned, whose rows the positions index; a :class:`ValueError`
        if the log holds fewer.
        """
        with self._frames_lock:
            if rows > self._progress_columns.size:
                raise ValueError(f"rows: {rows} is more than the {self._progress_columns.size} batches framed; call frames() first")
            key = (tuple(columns), max_points)
            extremes = self._extremes.get(key)
            if extremes is None:
                extremes = self._extremes[key] = Extremes(len(columns), max_points)
            return extremes.positions([self._progress_columns.column(name, rows) for name in columns])

    def __len__(self) -> int:
        with self._lock:
            return len(self._summaries)


class ProgressListener(StreamingQueryListener):
    """Routes each progress event to the :class:`ProgressLog` registered under its query name.

    Logs are registered by name before the query starts, so no event is missed.

    A progress reaches it shortly after its batch ends: on a classic session
    through :class:`ProgressJson` on a py4j thread (which passes on no other
    event), on Spark Connect through PySpark's client calling
    :meth:`onQueryProgress`. Events of runs not registered are ignored.
    """

    def __init__(self) -> None:
        self._logs: dict[str, ProgressLog] = {}
        self._lock = threading.Lock()

    @property
    def _jlistener(self) -> JavaObject:
        """What ``spark.streams.addListener`` registers with the JVM of a classic session: built on first use and reused, so ``removeListener`` finds the same object."""
        if not hasattr(self, "_jlistenerobj"):
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            if jvm is None:
                raise RuntimeError("no running SparkContext to register the progress listener with")
            self._jlistenerobj = jvm.PythonStreamingQueryListenerWrapper(ProgressJson(self))
        return self._jlistenerobj

    def register(self, name: str, log: ProgressLog) -> None:
        with self._lock:
            self._logs[name] = log

    def unregister(self, name: str, log: ProgressLog | None = None) -> None:
        """Forget ``name``; when ``log`` is given, only if ``name`` is still registered to that log."""
        with self._lock:
            if log is None or self._logs.get(name) is log:
                self._logs.pop(name, None)

    def progressed(self, progress: Mapping[str, Any]) -> None:
        """Add ``progress`` (a progress dict) to the log registered under its query name, if any."""
        with self._lock:
            log = self._logs.get(progress.get("name") or "")
        if log is not None:
            log.add(progress)

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        self.progressed(progress_dict(event.progress))

    def onQueryIdle(self, event) -> None:
        pass

    def onQueryTerminated(self, event) -> None:
        pass


class ProgressJson:
    """Spark's ``PythonStreamingQueryListener``, implemented over py4j: each progress goes to ``listener`` as the dict of its JSON.

    PySpark's own bridge builds a ``StreamingQueryProgress`` field by field
    first: over a hundred py4j round trips, 90-160 ms an event while the next
    batch runs beside them; this reads the progress's JSON in one call. Spark
    leaves a rate that is NaN or infinite out of the JSON; it reads as NaN.
    Called on a py4j thread; the other events are ignored.
    """

    def __init__(self, listener: ProgressListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: JavaObject) -> None:
        pass

    def onQueryProgress(self, jevent: JavaObject) -> None:
        progress = json.loads(jevent.progress().json())
        for name in RATE_FIELDS:
            progress.setdefault(name, math.nan)
        self._listener.progressed(progress)

    def onQueryIdle(self, jevent: JavaObject) -> None:
        pass

    def onQueryTerminated(self, jevent: JavaObject) -> None:
        pass

    class Java:
        implements: ClassVar[list[str]] = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def progress_total(progress: pd.DataFrame, column: str) -> int:
    """The sum of ``column`` of a :func:`progress_frame` over its batches; 0 before the first batch."""
    return int(progress[column].sum()) if len(progress) else 0


class ProgressTotals:
    """The totals of a finished run's batches, for an object with a ``progress`` frame (:func:`progress_frame`): a replay of the form's query or of SQL."""

    progress: pd.DataFrame

    def _total(self, column: str) -> int:
        return progress_total(self.progress, column)

    @property
    def rows_dropped_by_watermark(self) -> int:
        """Rows dropped behind the watermark, summed over the batches and the stateful operators."""
        return self._total("rows_dropped_by_watermark")

    @property
    def malformed_rows(self) -> int:
        return self._total("malformed_rows")

    @property
    def input_rows(self) -> int:
        return self._total("num_input_rows")

    @property
    def final_watermark(self) -> pd.Timestamp:
        return self.progress["watermark"].dropna().max() if len(self.progress) else pd.NaT


def batch_records(progress: pd.DataFrame) -> list[dict[str, Any]]:
    """Each batch of ``progress`` as ``--json`` writes it: id, rows read, watermark, rows dropped, malformed rows, state rows, duration."""
    return [
        {
            "batch_id": int(row.batch_id),
            "input_rows": int(row.num_input_rows),
            "watermark": stamp(row.watermark),
            "rows_dropped_by_watermark": int(row.rows_dropped_by_watermark),
            "malformed_rows": int(row.malformed_rows),
            "state_rows": int(row.state_rows_total),
            "duration_ms": int(row.batch_duration_ms),
        }
        for row in progress.itertuples(index=False)
    ]
