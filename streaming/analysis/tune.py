"""Watermark tuning: replay one feed under several watermark delays and weigh completeness against cost.

For each delay :func:`tune` runs the same query -- a windowed count or a value
aggregate of a feed or dataset, by key or global, deduplicated or not, under
the dataset's batching rule -- in update mode on the
shared session with :func:`~streaming.engine.runner.run_to_idle` and measures it
with :func:`streaming.analysis.measure.measure`: completeness against the exact
answer, state, and the output delay an append-mode run would have.
Completeness counts rows whatever the aggregate: a value aggregation carries
the count of rows it was computed over. With deduplication it can exceed 1: a
short delay forgets ids sooner, and a duplicate arriving later is counted again.
Session windows run in append mode (Spark allows no update mode for them): the
rows a run kept are those of the sessions it emitted plus those of the
sessions its state still holds at the end, read from the checkpoint with the
State Data Source (:func:`streaming.engine.state.open_sessions`); a session
still open never emitted, as an append run would have it.

The recommendation is the smallest delay whose completeness reaches ``target``.

Concurrency: by default the delays run **one after another**. Running them
concurrently (one thread and one query per delay on the shared session,
``concurrent=True``) overlaps the per-batch driver waits of small replays, but
on a 2-core machine the six-delay web_clicks sweep took 133-135 s concurrently
against 117-119 s one after another: the replays compete for the same cores.

Everything except :func:`tune` is a pure function of its arguments.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from ..engine.config import FeedSource, OutputMode, QueryConfig
from ..engine.durations import format_duration, parse_duration
from ..engine.errors import ConfigError
from .measure import RunMeasures, measure, run_all

if TYPE_CHECKING:
    from ..engine.runner import Replay

__all__ = [
    "DEFAULT_CONCURRENT",
    "TuneResult",
    "canonical_delays",
    "check_target",
    "recommend",
    "tune",
    "tune_configs",
    "tuning_output_mode",
]

DEFAULT_CONCURRENT = False
"""Run the delays of a sweep one after another unless told otherwise (see the module docstring)."""

# --------------------------------------------------------------------------- validation


def canonical_delays(delays: Iterable[str]) -> list[str]:
    """``delays`` as canonical duration strings, smallest first, duplicates removed.

    Raises :class:`~streaming.engine.config.ConfigError` on the field ``delays`` naming
    the value that is not a duration, or when there is none.
    """
    if isinstance(delays, str):
        raise ConfigError("delays", delays, "must be a list of durations, not one string")
    items = list(delays)
    parsed: dict[int, str] = {}
    for text in items:
        ms = parse_duration(text, field="delays")
        parsed.setdefault(ms, format_duration(ms))
    if not parsed:
        raise ConfigError("delays", items, "must name at least one watermark delay")
    return [parsed[ms] for ms in sorted(parsed)]


def check_target(target: object) -> float:
    """``target`` as a float in ``(0, 1]``, else :class:`~streaming.engine.config.ConfigError` on the field ``target``."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ConfigError("target", target, "must be a number greater than 0 and at most 1")
    return float(target)


# --------------------------------------------------------------------------- output delay


def _field(row: object, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def recommend(rows: Iterable[object], target: float) -> str | None:
    """The smallest delay whose completeness is at least ``target``, or ``None``.

    ``rows`` are :class:`RunMeasures` objects or mappings with ``delay`` (a
    duration string) and ``completeness``; their order does not matter. NaN
    completeness never qualifies.
    """
    best: tuple[int, str] | None = None
    for row in rows:
        value = _field(row, "completeness")
        if value is None or (isinstance(value, float) and math.isnan(value)) or value < target:
            continue
        delay = _field(row, "delay")
        ms = parse_duration(delay, field="delay")
        if best is None or ms < best[0]:
            best = (ms, format_duration(ms))
    return None if best is None else best[1]


# --------------------------------------------------------------------------- sweep


def tuning_output_mode(session_gap: str | None) -> OutputMode:
    """The mode a sweep runs a query in: update, or append for session windows (``session_gap``; Spark has no update mode for them)."""
    return "update" if session_gap is None else "append"


def tune_configs(query: QueryConfig, delays: Iterable[str]) -> list[QueryConfig]:
    """One config per canonical delay of ``delays``: ``query`` with that watermark, replayed stepped.

    ``query`` gives the feed and the shape (window and slide or session gap,
    key, aggregation, deduplication, batching); its watermark, output mode and
    trigger are the tuner's: update mode, or append for session windows.
    Raises :class:`~streaming.engine.config.ConfigError` for a source without
    an end and a pass-through query.
    """
    if not isinstance(query, QueryConfig):
        raise ConfigError("query", query, "is not a QueryConfig")
    if not isinstance(query.source, FeedSource):
        raise ConfigError("source", query.source.kind, "cannot be tuned: the tuner replays a feed or dataset to its end")
    if query.aggregation == "none":
        raise ConfigError("aggregation", "none", "cannot be tuned: a watermark drops rows only for an aggregation")
    source = replace(query.source, seconds_per_file=0)
    return [
        replace(query, source=source, watermark=delay, output_mode=tuning_output_mode(query.session_gap), trigger="default", trigger_interval=None)
        for delay in canonical_delays(delays)
    ]


@dataclass(frozen=True, eq=False)
class TuneResult:
    """The outcome of a sweep: one :class:`RunMeasures` per delay, smallest delay first."""

    query: QueryConfig
    """The shape swept, as given (its own watermark, output mode and trigger were not used)."""
    target: float
    outcomes: list[RunMeasures]
    recommended: str | None
    concurrent: bool
    wall_seconds: float
    exact: pd.DataFrame = field(repr=False)

    @property
    def feed_dir(self) -> Path:
        return cast(FeedSource, self.query.source).path

    @property
    def window(self) -> str:
        return format_duration(self.query.window_ms)

    @property
    def slide(self) -> str | None:
        return None if self.query.slide is None else format_duration(self.query.slide_ms)

    def frame(self) -> pd.DataFrame:
        """One row per delay with the JSON fields, for tables and charts."""
        return pd.DataFrame([outcome.to_json() for outcome in self.outcomes])

    def to_json(self) -> dict[str, Any]:
        columns = cast(FeedSource, self.query.source).columns
        return {
            "feed_dir": str(self.feed_dir),
            "window": None if self.query.session_gap_ms is not None else self.window,
            "slide": self.slide,
            "session_gap": None if self.query.session_gap_ms is None else format_duration(self.query.session_gap_ms),
            "aggregation": self.query.aggregation,
            "value": columns.value if self.query.aggregation != "count" else None,
            "key": columns.key,
            "dedup_by": columns.dedup_id if self.query.deduplicate else None,
            "batch_by": cast(FeedSource, self.query.source).batching.by,
            "target": self.target,
            "delays": [outcome.to_json() for outcome in self.outcomes],
            "recommended": self.recommended,
            "concurrent": self.concurrent,
            "wall_seconds": self.wall_seconds,
        }


def _final_table(replay: Replay) -> pd.DataFrame:
    """The run's result table and, for session windows, the sessions its state still holds: every row it kept."""
    if replay.open_sessions is None or not len(replay.open_sessions):
        return replay.result
    still_open = replay.open_sessions.reindex(columns=replay.result.columns)
    return pd.concat([replay.result, still_open], ignore_index=True).sort_values(["window_start", "window_end", "key"], ignore_index=True)


def tune(
    registry,
    query: QueryConfig,
    *,
    delays: list[str],
    target: float = 0.99,
    concurrent: bool | None = None,
    cancel: threading.Event | None = None,
    report: Callable[[str], None] | None = None,
) -> TuneResult:
    """Replay ``query``'s feed once per watermark delay (:func:`tuning_output_mode`) and measure each; see the module docstring.

    ``query`` is the shape to tune (:func:`tune_configs`). Raises
    :class:`~streaming.engine.config.ConfigError` naming the field (``delays``,
    ``target``, ``source``, ``aggregation``, ``session_gap``) before anything
    runs. ``concurrent=None`` uses :data:`DEFAULT_CONCURRENT`. ``report`` gets a
    line on what runs now; once ``cancel`` is set the sweep stops within a
    micro-batch and raises :class:`~streaming.engine.errors.Cancelled`.
    """
    from .exact import exact_answer

    configs = tune_configs(query, delays)
    canonical = [format_duration(cast(int, config.watermark_ms)) for config in configs]
    goal = check_target(target)
    mode = DEFAULT_CONCURRENT if concurrent is None else bool(concurrent)
    started = time.monotonic()
    sessions = query.session_gap is not None

    def progress(done: int, total: int) -> None:
        if report is not None:
            report(f"replayed {done} of {total} delays" + (f"; now {canonical[done]}" if done < total else ""))

    if mode:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tune-exact") as pool:
            exact_future = pool.submit(exact_answer, registry.spark, configs[0])
            replays = run_all(registry, configs, concurrent=True, open_sessions=sessions, cancel=cancel)
            exact = exact_future.result()
    else:
        if report is not None:
            report("computing the exact answer")
        exact = exact_answer(registry.spark, configs[0])
        replays = run_all(registry, configs, concurrent=False, open_sessions=sessions, cancel=cancel, report=progress)
    wall = time.monotonic() - started
    outcomes = [measure(delay, _final_table(replay), replay.progress, exact) for delay, replay in zip(canonical, replays)]
    return TuneResult(
        query=query,
        target=goal,
        outcomes=outcomes,
        recommended=recommend(outcomes, goal),
        concurrent=mode,
        wall_seconds=round(wall, 3),
        exact=exact,
    )
