"""Tuning a watermark: the sweep the Tuner page and ``python -m streaming tune`` both run, from what their user typed.

Both front ends used to turn the typed delays and target into a sweep themselves: the page
with its own parser and limits, the CLI splitting the text again and checking the
target by hand; the SQL sweep's points were built twice with different limits
(16 on the page, 64 in the CLI, only over several clauses there). Here each step is
once, and a front end passes only its limits (the page's user waits on the page; a
CLI run may take as long as its user likes):

- :func:`parse_delays`, :func:`parse_target`: the typed text, checked and named;
- :func:`sweep_plan`: the form's sweep, every bad field named at once;
- :func:`run_sweep`: it run, a topic bounded at its end when the sweep starts;
- :func:`sql_points`: the points of a SQL query's sweep, a delay for each WATERMARK clause
  (the front end then runs :func:`~streaming.analysis.sql_tune.tune_sql`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from streaming.analysis.model import covers_shape
from streaming.analysis.sql_tune import sweep_grid
from streaming.analysis.tune import TunePlan, TuneResult, bound_topic, canonical_delays, check_target, plan_tune, tune
from streaming.engine.arrival import DEFAULT_ARRIVAL
from streaming.engine.durations import parse_duration
from streaming.engine.errors import ConfigError, InputErrors, attempt

if TYPE_CHECKING:
    from streaming.analysis.tune import TuneMethod
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.sources import Source
    from streaming.engine.sql.rewrite import WatermarkClause

__all__ = ["parse_delays", "parse_target", "run_sweep", "sql_points", "sweep_plan"]


def _items(text: str, field_name: str = "delays") -> list[str]:
    """The comma-separated items of ``text`` (empty ones skipped); :class:`ConfigError` naming the text when it has none."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    if not items:
        raise ConfigError(field_name, text, "must name at least one watermark delay, e.g. '0 seconds, 1 minute'")
    return items


def parse_delays(text: str, *, limit: int | None = None) -> list[str]:
    """Comma-separated durations as canonical strings, smallest first, duplicates removed; :class:`ConfigError` on ``delays`` naming a value
    that is not a duration, a text that names none, or more than ``limit``."""
    delays = canonical_delays(_items(text))
    if limit is not None and len(delays) > limit:
        raise ConfigError("delays", text, f"lists {len(delays)} delays; a sweep takes at most {limit}")
    return delays


def parse_target(value: object) -> float:
    """The completeness target, typed as text or given as a number, as a float in ``(0, 1]``; :class:`ConfigError` on ``target``."""
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise ConfigError("target", value, "is not a number: a share greater than 0 and at most 1, e.g. 0.99") from None
    return check_target(value)


def sweep_plan(
    source: Source | None, *, delays: str, target: object, window: str = "1 minute", slide: str | None = None, aggregation: str = "count",
    deduplicate: bool = False, session_gap: str | None = None, errors: Sequence[ConfigError] = (), max_delays: int | None = None,
    max_spark_delays: int | None = None, arrival: str = DEFAULT_ARRIVAL,
) -> TunePlan:
    """The sweep of the typed ``delays`` on ``source`` (:func:`~streaming.analysis.tune.plan_tune`); :class:`InputErrors` lists every bad
    field at once, after ``errors`` the front end found already (``source`` is then ``None``: the others are checked all the same).

    ``max_delays`` caps every sweep; ``max_spark_delays`` one whose shape the watermark model does not cover (session windows,
    deduplication), where each delay is a query on Spark.
    """
    found = list(errors)
    parsed = attempt(found, lambda: parse_delays(delays, limit=max_delays))
    goal = attempt(found, lambda: parse_target(target))
    if source is None:
        raise InputErrors(found or [ConfigError("source", None, "is not chosen")])
    try:  # delays or a target that did not parse are named already: the shape is checked with stand-ins
        plan = plan_tune(
            source, delays=parsed or ["0 seconds"], target=1.0 if goal is None else goal, window=window, slide=slide, aggregation=aggregation,
            deduplicate=deduplicate, session_gap=session_gap, arrival=arrival,
        )
    except InputErrors as err:
        raise InputErrors([*found, *err.errors]) from None
    if found:
        raise InputErrors(found)
    reason = covers_shape(plan.query)  # not covers(): a topic is bounded only when the sweep starts, and the model then covers it
    if reason is not None and max_spark_delays is not None and len(plan.delays) > max_spark_delays:
        raise InputErrors([ConfigError("delays", delays, f"lists {len(plan.delays)} delays; at most {max_spark_delays} here: {reason}")])
    return plan


def run_sweep(
    registry: QueryRegistry, plan: TunePlan, *, concurrent: bool | None = None, method: TuneMethod = "auto", cancel: threading.Event | None = None,
    report: Callable[[str], None] | None = None, preview: Callable[[TuneResult], None] | None = None,
) -> TuneResult:
    """Run ``plan`` (:func:`~streaming.analysis.tune.tune`), a topic bounded at the offsets that are its end now: the sweep and its
    confirmation replay the same records, whatever arrives meanwhile."""
    return tune(
        registry, bound_topic(plan.query), delays=plan.delays, target=plan.target, concurrent=concurrent, method=method, cancel=cancel,
        report=report, preview=preview,
    )


def sql_points(
    clauses: Sequence[WatermarkClause], delays: str, which: int | None, *, max_points: int, one_clause: str = "sweep one clause",
) -> list[tuple[int, ...]]:
    """The points a SQL sweep replays: every delay for the clause ``which`` (the others as written), or with no ``which`` the grid of every
    delay for each clause (:func:`~streaming.analysis.sql_tune.sweep_grid`).

    :class:`ConfigError` on ``delays`` for a value that is not a duration, a text that names none, or more than ``max_points`` points
    (each is a replay on Spark; counted before the grid is built). ``one_clause`` says how the front end's user sweeps one clause.
    """
    delays_ms = sorted({parse_duration(item, field="delays") for item in _items(delays)})
    count = len(delays_ms) if which is not None or len(clauses) < 2 else math.prod([len(delays_ms)] * len(clauses))
    if count > max_points:
        fewer = "fewer delays" + (f", or {one_clause}" if which is None and len(clauses) > 1 else "")
        raise ConfigError("delays", delays, f"make {count} points over {len(clauses)} WATERMARK clause(s), each a replay on Spark; at most {max_points}: {fewer}")
    return sweep_grid(clauses, delays_ms, which)
