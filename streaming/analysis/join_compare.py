"""Joins side by side: 2–4 join configurations replayed on Spark over the same two sides, each measured against its own exact join.

:func:`compare_joins` reads both sides' rows once, then replays every config
(:func:`~streaming.engine.join.join.run_join`, one after the other on the shared
session) and measures each run as the join tuner measures a pair of delays:

- ``completeness``: the exact (batch) join's pairs the run emitted, over the
  exact join's pairs *for the config's own keys and time range* (1 when it has
  none). A pair is told by its keys and both times;
- ``null_rows``: rows a side emitted without a match (an outer join's);
  ``null_row_wait_batches``: how many micro-batches after its arrival each
  waited for its NULL row, on average (the output delay of an outer join);
- ``rows_dropped_by_watermark``: Spark's count, over both sides;
- ``peak_state_rows`` / ``final_state_rows``: rows in the join's state (both
  sides' four stores, as Spark reports them) at most and after the last batch;
- ``final_watermark`` and ``batches``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..engine.durations import format_duration
from ..engine.errors import Cancelled, ConfigError
from ..engine.join.join import SIDES, JoinConfig, JoinOutcome, JoinSide, preserves, run_join, side_rows, unmatched_side
from .compare import MAX_CONFIGS, MIN_CONFIGS
from .join import join_timeline
from .join_model import joined_completeness

if TYPE_CHECKING:
    import threading

    from pyspark.sql import SparkSession

    from ..engine.output.progress import ProgressListener

__all__ = ["JOIN_SUMMARY_COLUMNS", "ComparedJoin", "JoinComparison", "compare_joins", "join_label", "null_row_waits"]

JOIN_SUMMARY_COLUMNS = [
    "label", "completeness", "pairs", "exact_pairs", "null_rows", "null_row_wait_batches", "rows_dropped_by_watermark", "peak_state_rows",
    "final_state_rows", "final_watermark", "batches",
]


def join_label(config: JoinConfig) -> str:
    """The config in a few words: type, range, each side's delay (``none`` without a watermark), policy."""
    delays = " / ".join("none" if side.watermark_ms is None else format_duration(side.watermark_ms) for side in config.sides)
    within = "no range" if config.bounds_ms is None else f"{_signed(config.bounds_ms[0])} to {_signed(config.bounds_ms[1])}"
    return f"{config.join_type} · {within} · delays {delays} · {config.policy}"


def _signed(ms: int) -> str:
    return f"-{format_duration(-ms)}" if ms < 0 else format_duration(ms)


def null_row_waits(outcome: JoinOutcome, left_rows: pd.DataFrame, right_rows: pd.DataFrame) -> list[int]:
    """For every row a side emitted without a match: the micro-batches from the one that brought it (``batch`` of ``left_rows`` /
    ``right_rows``, :func:`~streaming.engine.join.join.side_rows`) to the one that emitted its NULL row. A row is told by its keys and
    time; empty when the outcome does not say which batch emitted a row (Spark Connect)."""
    if outcome.emitted is None or outcome.result.empty:
        return []
    config = outcome.config
    tagged = outcome.with_batches()
    alone = unmatched_side(config, outcome.result)
    waits: list[int] = []
    for side, rows in zip(SIDES, (left_rows, right_rows)):
        if not preserves(config.join_type, side):
            continue
        time = config.sides[SIDES.index(side)].event_time
        arrived: dict[tuple[Any, ...], int] = {}
        for *values, batch in rows[[*config.on, time, "batch"]].itertuples(index=False, name=None):
            arrived.setdefault((*(str(value) for value in values[:-1]), pd.Timestamp(values[-1])), int(batch))
        emitted = tagged[alone.to_numpy() == side]
        for *values, batch in emitted[[*config.on, time, "_batch"]].itertuples(index=False, name=None):
            came = arrived.get((*(str(value) for value in values[:-1]), pd.Timestamp(values[-1])))
            if came is not None:
                waits.append(int(batch) - came)
    return waits


@dataclass(frozen=True)
class ComparedJoin:
    """One config's replay and its measures against its exact join."""

    label: str
    outcome: JoinOutcome
    found: int
    exact: int
    waits: tuple[int, ...]

    @property
    def config(self) -> JoinConfig:
        return self.outcome.config

    @property
    def timeline(self) -> pd.DataFrame:
        """:func:`~streaming.analysis.join.join_timeline` of the replay."""
        return join_timeline(self.outcome)

    def summary(self) -> dict[str, Any]:
        """The run's row of :meth:`JoinComparison.summary` (see the module docstring)."""
        state = [int(summary["state_rows_total"]) for summary in self.outcome.summaries]
        return {
            "label": self.label,
            "completeness": self.found / self.exact if self.exact else 1.0,
            "pairs": self.found,
            "exact_pairs": self.exact,
            "null_rows": int((unmatched_side(self.config, self.outcome.result) != "").sum()),
            "null_row_wait_batches": float(np.mean(self.waits)) if self.waits else float("nan"),
            "rows_dropped_by_watermark": self.outcome.rows_dropped_by_watermark,
            "peak_state_rows": max(state, default=0),
            "final_state_rows": state[-1] if state else 0,
            "final_watermark": self.outcome.final_watermark,
            "batches": len(self.outcome.summaries),
        }


@dataclass(frozen=True)
class JoinComparison:
    """The replays of :func:`compare_joins`, in the order of their configs."""

    runs: tuple[ComparedJoin, ...]
    wall_seconds: float

    def summary(self) -> pd.DataFrame:
        """One row per config: :data:`JOIN_SUMMARY_COLUMNS`."""
        return pd.DataFrame([run.summary() for run in self.runs], columns=JOIN_SUMMARY_COLUMNS)


def _check(configs: Sequence[JoinConfig], labels: Sequence[str] | None) -> None:
    """Refuse what cannot be compared, naming the config and field: a count outside 2–4, a live or static side, sides that read other data."""
    if not MIN_CONFIGS <= len(configs) <= MAX_CONFIGS:
        raise ConfigError("configs", len(configs), f"given; a comparison needs {MIN_CONFIGS} to {MAX_CONFIGS}")
    if labels is not None and len(labels) != len(configs):
        raise ConfigError("labels", len(labels), f"given for {len(configs)} configs")
    first = configs[0]
    for number, config in enumerate(configs, start=1):
        if not isinstance(config, JoinConfig):
            raise ConfigError(f"Config {number}", config, "is not a JoinConfig")
        for side in config.sides:
            if not isinstance(side, JoinSide) or side.static:
                raise ConfigError(f"Config {number}: {side.side}", side.label, "must be files replayed as a stream: a comparison replays two streams")
        for side, other in zip(config.sides, first.sides):
            assert isinstance(side, JoinSide) and isinstance(other, JoinSide)
            if (side.path, side.event_time, side.format, side.time_format) != (other.path, other.event_time, other.format, other.time_format):
                raise ConfigError(f"Config {number}: {side.side}", side.label, "reads other data than config 1: a comparison replays the same two sides")
        if config.on != first.on:
            raise ConfigError(f"Config {number}: on", config.on, f"differs from config 1's {first.on}: a comparison joins on the same keys")


def compare_joins(
    spark: SparkSession, configs: Sequence[JoinConfig], listener: ProgressListener, *, labels: Sequence[str] | None = None,
    cancel: threading.Event | None = None, report: Callable[[str], None] | None = None, root: Path | None = None, timeout: float = 600.0,
) -> JoinComparison:
    """Replay every config over the same two sides, one after the other, and measure each (see the module docstring).

    ``labels`` name the runs (:func:`join_label` by default); ``report`` is told
    which config runs; with ``cancel`` set, the comparison ends with
    :class:`~streaming.engine.errors.Cancelled` before the next config.
    :class:`ConfigError` for configs that cannot be compared, before Spark runs any.
    """
    _check(configs, labels)
    started = time.monotonic()
    first = configs[0]
    left, right = (side_rows(spark, side) for side in first.sides)
    runs = []
    for number, config in enumerate(configs, start=1):
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"the comparison was cancelled before config {number}")
        label = labels[number - 1] if labels is not None else join_label(config)
        if report is not None:
            report(f"Config {number} of {len(configs)}: {label}")
        outcome = run_join(spark, config, listener, root=root, timeout=timeout)
        found, exact = joined_completeness(outcome.result, left, right, config.left.event_time, config.right.event_time, config.on, config.bounds_ms)
        runs.append(ComparedJoin(label, outcome, found, exact, tuple(null_row_waits(outcome, left, right))))
    return JoinComparison(tuple(runs), time.monotonic() - started)
