"""What a run is measured by: completeness, output delay and state, against the exact answer.

The tuner measures each delay with :func:`measure` and Compare each
configuration; both replay with :func:`run_all`. For one run's final result
table, its progress frame and the exact batch answer (no watermark):

- **completeness** (:func:`streaming.analysis.lateness.completeness`, the
  project's one definition): the sum of counts in the final result table ÷ the
  sum of counts in the exact answer, overall and per window; ``lost_pairs`` =
  exact − counted is the exact number of (event, window) pairs the watermark
  threw away, next to Spark's own ``rows_dropped_by_watermark`` metric (summed
  over batches). :func:`finalized_completeness` is the same over the windows
  the final watermark has closed: what an append-mode run has emitted;
- **state**: peak and mean state rows and state memory over the run's batches;
- **output delay**: how long after its end each window would be emitted by an
  APPEND-mode run of the same query. Derived, not measured by a second run:
  append mode emits a window ``[s, e)`` in the first micro-batch whose
  watermark (as the batch's progress reports it) is ``>= e`` -- checked
  against a real append run in ``tests/analysis/test_tune.py``. In event time the delay
  is the stream's event-time clock (largest event time seen up to and
  including the emitting batch) minus ``e``; in micro-batches it is the
  emitting batch id minus the id of the first batch whose clock reached ``e``
  (no-data batches count: they are micro-batches Spark runs). Windows whose end
  the final watermark never reached were never emitted and are counted apart.

Everything except :func:`run_all` is a pure function of pandas frames.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..engine.durations import human_duration, parse_duration
from ..engine.output.progress import progress_total
from ..engine.query.config import QueryConfig
from ..engine.run.runner import run_to_idle
from .lateness import completeness

if TYPE_CHECKING:
    from ..engine.run.registry import QueryRegistry
    from ..engine.run.runner import Replay

__all__ = [
    "EMISSION_COLUMNS",
    "OutputDelay",
    "RunMeasures",
    "batch_reporter",
    "counted_windows",
    "emission_frame",
    "finalized_completeness",
    "measure",
    "output_delay",
    "replay_status",
    "run_all",
    "state_stats",
]

WINDOW_KEY = ["window_start", "window_end"]


def counted_windows(result: pd.DataFrame, exact: pd.DataFrame, final_watermark: pd.Timestamp) -> pd.DataFrame:
    """The distinct windows that hold at least one counted row, whatever the output mode of ``result``.

    Those in ``result`` plus those of ``exact`` that end after ``final_watermark``:
    no row of such a window was ever dropped (a row is dropped only for windows
    ending at or before the watermark), so it has counted rows even when an
    append run never emitted it.
    """
    frames = [result[WINDOW_KEY]]
    if not pd.isna(final_watermark):
        frames.append(exact.loc[exact["window_end"] > final_watermark, WINDOW_KEY])
    else:
        frames.append(exact[WINDOW_KEY])
    windows = pd.concat(frames, ignore_index=True).drop_duplicates()
    return windows.sort_values(WINDOW_KEY, ignore_index=True)


EMISSION_COLUMNS = [
    "window_start",
    "window_end",
    "end_batch",
    "emit_batch",
    "emit_watermark",
    "clock_at_emit",
    "delay_seconds",
    "delay_batches",
]


def emission_frame(windows: pd.DataFrame, progress: pd.DataFrame) -> pd.DataFrame:
    """When append mode would emit each window, from the run's watermark trajectory.

    ``windows`` has ``window_start, window_end``; ``progress`` is a
    :func:`~streaming.engine.output.progress.progress_frame`. Per window: ``end_batch`` (first
    batch whose event-time clock -- the largest event time seen so far,
    including that batch -- reached the window's end), ``emit_batch`` (first
    batch whose watermark is ``>= window_end``), the watermark and clock then,
    and the delays ``clock_at_emit - window_end`` (seconds) and ``emit_batch -
    end_batch`` (batches). Never-emitted windows have missing values there.
    """
    frame = windows[WINDOW_KEY].drop_duplicates().sort_values(WINDOW_KEY, ignore_index=True)
    frame = frame.astype({"window_start": "datetime64[ns]", "window_end": "datetime64[ns]"})
    batches = progress.sort_values("batch_id", ignore_index=True)
    batch_ids = batches["batch_id"].astype("int64").to_numpy()
    # Both series only grow (the watermark never moves back; the clock is a running maximum),
    # so the first batch at or past an instant is a binary search. NaT (none yet) sorts first.
    watermarks = pd.to_datetime(batches["watermark"]).astype("datetime64[ns]").cummax().ffill()
    clock = pd.to_datetime(batches["max_event_time"]).astype("datetime64[ns]").cummax().ffill()
    ends = frame["window_end"].to_numpy("datetime64[ns]").astype("int64")

    def first_at_or_after(series: pd.Series) -> np.ndarray:
        values = np.where(series.isna().to_numpy(), np.iinfo("int64").min, series.to_numpy("datetime64[ns]").astype("int64"))
        return np.searchsorted(values, ends, side="left")

    n = len(batches)
    emit_i, end_i = first_at_or_after(watermarks), first_at_or_after(clock)
    emitted, reached = emit_i < n, end_i < n
    pick = np.minimum(emit_i, max(n - 1, 0))
    out = frame.copy()
    out["end_batch"] = pd.array([int(batch_ids[i]) if ok else None for i, ok in zip(end_i, reached)], dtype="Int64")
    out["emit_batch"] = pd.array([int(batch_ids[i]) if ok else None for i, ok in zip(emit_i, emitted)], dtype="Int64")
    out["emit_watermark"] = watermarks.iloc[pick].to_numpy() if n else pd.NaT
    out["clock_at_emit"] = clock.iloc[pick].to_numpy() if n else pd.NaT
    out.loc[~emitted, ["emit_watermark", "clock_at_emit"]] = pd.NaT
    out["emit_watermark"] = pd.to_datetime(out["emit_watermark"])
    out["clock_at_emit"] = pd.to_datetime(out["clock_at_emit"])
    out["delay_seconds"] = (out["clock_at_emit"] - out["window_end"]).dt.total_seconds().astype("float64")
    out["delay_batches"] = (out["emit_batch"] - out["end_batch"]).astype("Int64")
    return out[EMISSION_COLUMNS]


@dataclass(frozen=True)
class OutputDelay:
    """Append-mode output delay over the emitted windows; ``None`` when no window was emitted."""

    mean_seconds: float | None
    max_seconds: float | None
    mean_batches: float | None
    max_batches: int | None
    windows_emitted: int
    windows_never_emitted: int


def _none_if_nan(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def output_delay(emissions: pd.DataFrame) -> OutputDelay:
    """Mean and max delay (seconds, batches) over the windows of ``emissions`` that were emitted."""
    emitted = emissions[emissions["emit_batch"].notna()]
    batches = emitted["delay_batches"].dropna().astype("int64")
    return OutputDelay(
        mean_seconds=_none_if_nan(float(emitted["delay_seconds"].mean())) if len(emitted) else None,
        max_seconds=_none_if_nan(float(emitted["delay_seconds"].max())) if len(emitted) else None,
        mean_batches=float(batches.mean()) if len(batches) else None,
        max_batches=int(batches.max()) if len(batches) else None,
        windows_emitted=len(emitted),
        windows_never_emitted=int(len(emissions) - len(emitted)),
    )


# --------------------------------------------------------------------------- state


def state_stats(progress: pd.DataFrame) -> dict[str, float | int]:
    """Peak and mean of ``state_rows_total`` and ``state_memory_bytes`` over the batches (0 for no batches)."""
    if not len(progress):
        return {"peak_state_rows": 0, "mean_state_rows": 0.0, "peak_state_memory_bytes": 0, "mean_state_memory_bytes": 0.0}
    rows = progress["state_rows_total"].astype("int64")
    memory = progress["state_memory_bytes"].astype("int64")
    return {
        "peak_state_rows": int(rows.max()),
        "mean_state_rows": float(rows.mean()),
        "peak_state_memory_bytes": int(memory.max()),
        "mean_state_memory_bytes": float(memory.mean()),
    }


# --------------------------------------------------------------------------- one run


@dataclass(frozen=True, eq=False)
class RunMeasures:
    """Everything measured for one watermark delay (or, in :mod:`streaming.analysis.compare`, one config)."""

    delay: str | None
    completeness: float
    counted: int
    exact: int
    rows_dropped_by_watermark: int
    lost_pairs: int
    peak_state_rows: int
    mean_state_rows: float
    peak_state_memory_bytes: int
    mean_state_memory_bytes: float
    output_delay: OutputDelay
    windows_lost: int
    mean_batch_duration_ms: float
    batches: int
    per_window: pd.DataFrame = field(repr=False)
    emissions: pd.DataFrame = field(repr=False)
    result: pd.DataFrame = field(repr=False)
    progress: pd.DataFrame = field(repr=False)
    method: str = "spark"
    """How it was measured: ``spark`` (a real run) or ``model`` (:mod:`streaming.analysis.model`)."""

    @property
    def delay_ms(self) -> int | None:
        return None if self.delay is None else parse_duration(self.delay)

    def to_json(self) -> dict[str, Any]:
        return {
            "delay": self.delay,
            "completeness": _none_if_nan(self.completeness),
            "counted": self.counted,
            "exact": self.exact,
            "rows_dropped_by_watermark": self.rows_dropped_by_watermark,
            "lost_pairs": self.lost_pairs,
            "windows_lost": self.windows_lost,
            "peak_state_rows": self.peak_state_rows,
            "mean_state_rows": self.mean_state_rows,
            "peak_state_memory_bytes": self.peak_state_memory_bytes,
            "mean_state_memory_bytes": self.mean_state_memory_bytes,
            "output_delay_seconds": self.output_delay.mean_seconds,
            "max_output_delay_seconds": self.output_delay.max_seconds,
            "output_delay_batches": self.output_delay.mean_batches,
            "max_output_delay_batches": self.output_delay.max_batches,
            "windows_emitted": self.output_delay.windows_emitted,
            "windows_never_emitted": self.output_delay.windows_never_emitted,
            "batches": self.batches,
            "mean_batch_duration_ms": self.mean_batch_duration_ms,
            "method": self.method,
        }


def measure(delay: str | None, result: pd.DataFrame, progress: pd.DataFrame, exact: pd.DataFrame) -> RunMeasures:
    """Measure one finished run: its final ``result`` table and ``progress`` frame against ``exact``."""
    overall, per_window = completeness(result, exact)
    counted = int(result["count"].sum()) if len(result) else 0
    wanted = int(exact["count"].sum()) if len(exact) else 0
    final_watermark = pd.to_datetime(progress["watermark"]).dropna().max() if len(progress) else pd.NaT
    windows = counted_windows(result, exact, final_watermark)
    emissions = emission_frame(windows, progress)
    exact_windows = exact[WINDOW_KEY].drop_duplicates()
    lost = exact_windows.merge(windows, on=WINDOW_KEY, how="left", indicator=True)
    durations = progress["batch_duration_ms"].astype("float64") if len(progress) else pd.Series([], dtype="float64")
    return RunMeasures(
        delay=delay,
        completeness=overall,
        counted=counted,
        exact=wanted,
        rows_dropped_by_watermark=progress_total(progress, "rows_dropped_by_watermark"),
        lost_pairs=wanted - counted,
        **state_stats(progress),  # type: ignore[arg-type]
        output_delay=output_delay(emissions),
        windows_lost=int((lost["_merge"] == "left_only").sum()),
        mean_batch_duration_ms=float(durations.mean()) if len(durations) else 0.0,
        batches=len(progress),
        per_window=per_window,
        emissions=emissions,
        result=result,
        progress=progress,
    )


# --------------------------------------------------------------------------- recommendation


def replay_status(what: str, done: int, total: int, elapsed: float) -> str:
    """How far replays on Spark are: ``"confirming 1 day on Spark: batch 12 of 478, about 3.9 min left"`` (the rest at the pace so far)."""
    left = f", about {human_duration(elapsed / done * (total - done))} left" if 0 < done < total else ""
    return f"{what}: batch {done} of {total}{left}"


def batch_reporter(report: Callable[[str], None] | None, what: str) -> Callable[[int, int], None] | None:
    """``(done, total)`` → ``report(replay_status(what, done, total, seconds since this call))``; ``None`` without ``report``."""
    if report is None:
        return None
    started = time.monotonic()
    return lambda done, total: report(replay_status(what, done, total, time.monotonic() - started))


def run_all(
    registry: QueryRegistry, configs: Sequence[QueryConfig], *, concurrent: bool, open_sessions: bool = False,
    cancel: threading.Event | None = None, report: Callable[[int, int], None] | None = None, batches: Callable[[int, int], None] | None = None,
) -> list[Replay]:
    """``run_to_idle`` every config (with ``open_sessions`` and ``cancel``), one thread each when ``concurrent``; replays in the order given.

    ``report(done, total)`` is called before each run one after another (and
    once when all are done); ``batches(done, total)`` after each batch of any of them, over all of them
    (every config replays the same data: the total is one replay's batches times the configs).
    All runs are waited for; the first failure is
    raised afterwards (:class:`~streaming.engine.errors.Cancelled` once ``cancel`` is set).
    """

    steps: dict[int, tuple[int, int]] = {}
    lock = threading.Lock()

    def step(index: int, done: int, total: int) -> None:
        with lock:
            steps[index] = (done, total)
            overall = sum(count for count, _ in steps.values()), total * len(configs)
        if batches is not None:
            batches(*overall)

    def run(index: int, config: QueryConfig) -> Replay:
        return run_to_idle(registry, config, open_sessions=open_sessions, cancel=cancel, progress=partial(step, index))

    if not concurrent or len(configs) < 2:
        replays = []
        for done, config in enumerate(configs):
            if report is not None:
                report(done, len(configs))
            replays.append(run(done, config))
        if report is not None:
            report(len(configs), len(configs))
        return replays
    with ThreadPoolExecutor(max_workers=len(configs), thread_name_prefix="tune") as pool:
        futures = [pool.submit(run, index, config) for index, config in enumerate(configs)]
        errors = [future.exception() for future in futures]
    for error in errors:
        if error is not None:
            raise error
    return [future.result() for future in futures]


def finalized_completeness(result: pd.DataFrame, exact: pd.DataFrame, final_watermark: pd.Timestamp) -> float:
    """Counted ÷ exact over the windows ending at or before ``final_watermark`` (NaN when there are none)."""
    if pd.isna(final_watermark):
        return float("nan")
    wanted = int(exact.loc[exact["window_end"] <= final_watermark, "count"].sum())
    counted = int(result.loc[result["window_end"] <= final_watermark, "count"].sum()) if len(result) else 0
    return counted / wanted if wanted else float("nan")
