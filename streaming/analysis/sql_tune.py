"""Tuning a query in Spark SQL: its WATERMARK clauses' delays replayed on Spark and measured per result row against its exact answer.

The exact answer is the same SQL as one batch query over every well-formed row
of its views (:func:`~streaming.engine.sql.rewrite.batch_text`: no ``STREAM( )``,
no WATERMARK clause). Each point of the sweep -- one delay for each clause --
is the query replayed to its end (:func:`~streaming.engine.sql.replay.replay_sql`,
micro-batch *i* = file *i* of each streamed view) with those delays, and is
measured against the exact rows:

- a result row equal to an exact row (every column) is *matched*;
- an exact row whose grouping (the columns the plan groups by) the result has
  with other values is *different* (a late row dropped from its window);
- an exact row the result lacks altogether is *missing* (never emitted: all its
  rows dropped, or a window still open when an append-mode run ended);
- completeness is matched / exact rows; for a query that counts its groups'
  rows (``count(*)``), the rows counted / the rows the exact answer counts,
  as the form's tuner measures a count: the same query in the form or in SQL
  gets the same recommendation.

Beside it Spark's rows dropped behind the watermark, the peak and mean rows in
state, and the batches. The recommendation is the smallest point (by its
delays, in clause order) whose completeness reaches the target. A query with
two clauses (a join) is swept over the grid of both delays, the heat map the
Joins page draws. Points run one after another: on 2 cores concurrent replays
compete for the same cores (see :mod:`streaming.analysis.tune`).

:func:`compare_sql` measures 2-4 queries over the same views the same way, each
against the exact answer of its own text (Compare's SQL mode).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..engine.arrival import DEFAULT_ARRIVAL
from ..engine.data.times import quoted
from ..engine.durations import format_duration
from ..engine.errors import Cancelled, ConfigError
from ..engine.sql.guard import checked
from ..engine.sql.plan import plan_facts
from ..engine.sql.replay import replay_sql
from ..engine.sql.rewrite import WatermarkClause, batch_text, watermark_clauses, with_delays
from ..engine.sql.table import json_value
from ..engine.sql.views import sql_session

if TYPE_CHECKING:
    from ..engine.run.registry import QueryRegistry
    from ..engine.sql.query import SqlQuery

__all__ = ["MAX_COMPARED", "MIN_COMPARED", "SqlComparison", "SqlPoint", "SqlTuning", "compare_rows", "compare_sql", "exact_records", "sweep_grid", "tune_sql"]


def _text(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def compare_rows(result: Sequence[dict[str, Any]], exact: Sequence[dict[str, Any]], grouping: Sequence[str]) -> tuple[int, int, int, int]:
    """``(matched, different, missing, extra)`` of ``result`` against ``exact`` (see the module docstring); rows are a multiset."""
    left = Counter(_text(row) for row in result)
    right = Counter(_text(row) for row in exact)
    matched = sum((left & right).values())
    unmatched_exact = [json.loads(text) for text, count in (right - left).items() for _ in range(count)]
    unmatched_result = [json.loads(text) for text, count in (left - right).items() for _ in range(count)]
    different = 0
    if grouping:
        keys = Counter(_text({name: row.get(name) for name in grouping}) for row in unmatched_result)
        for row in unmatched_exact:
            key = _text({name: row.get(name) for name in grouping})
            if keys[key] > 0:
                keys[key] -= 1
                different += 1
    missing = len(unmatched_exact) - different
    return matched, different, missing, len(unmatched_result) - different


def exact_records(spark: Any, query: SqlQuery) -> tuple[list[dict[str, Any]], tuple[str, ...], tuple[str, ...]]:
    """The exact answer of ``query`` (its SQL as a batch over every well-formed row of its views) as JSON records, the plan's grouping and
    its row-count columns."""
    from pyspark.sql import functions as F


    session = sql_session(spark)
    for view in query.views:
        rows = view.source.view_rows(session)
        if not view.static:
            rows = rows.where(F.col(quoted(view.event_time)).isNotNull())
        rows.createOrReplaceTempView(view.name)
    frame, walked = checked(session, batch_text(session, query.text), query.names)
    fields = frame.schema.fields
    records = [{item.name: json_value(value, item.dataType) for item, value in zip(fields, row)} for row in frame.collect()]
    facts = plan_facts(frame, walked)
    return records, facts.grouping, facts.counts


def counted_rows(result: Sequence[dict[str, Any]], exact: Sequence[dict[str, Any]], grouping: Sequence[str], count: str) -> tuple[int, int]:
    """``(counted, exact)``: the rows ``result``'s groups count in their ``count`` column, over the groups of ``exact``, and the rows ``exact``
    counts. What the form's tuner calls counted and exact for a count."""
    def group(row: dict[str, Any]) -> str:
        return json.dumps([row.get(name) for name in grouping], sort_keys=True, default=str)

    got = {group(row): int(row.get(count) or 0) for row in result}
    return sum(got.get(group(row), 0) for row in exact), sum(int(row.get(count) or 0) for row in exact)


@dataclass(frozen=True)
class SqlPoint:
    """One point of the sweep: a delay for each WATERMARK clause, and what the replay under them reached."""

    delays_ms: tuple[int, ...]
    exact: int
    matched: int
    different: int
    missing: int
    extra: int
    rows_dropped_by_watermark: int
    peak_state_rows: int
    mean_state_rows: float
    batches: int
    seconds: float
    counted_rows: tuple[int, int] | None = None
    """For a query that counts its groups' rows: ``(counted, exact)`` rows (:func:`counted_rows`); completeness is then their share."""

    @property
    def completeness(self) -> float | None:
        if self.counted_rows is not None:
            counted, exact = self.counted_rows
            return None if exact == 0 else counted / exact
        return None if self.exact == 0 else self.matched / self.exact

    @property
    def label(self) -> str:
        return ", ".join(format_duration(delay) for delay in self.delays_ms)

    def to_json(self) -> dict[str, Any]:
        return {
            "delays": [format_duration(delay) for delay in self.delays_ms], "completeness": self.completeness, "exact": self.exact, "matched": self.matched,
            "different": self.different, "missing": self.missing, "extra": self.extra, "rows_dropped_by_watermark": self.rows_dropped_by_watermark,
            "peak_state_rows": self.peak_state_rows, "mean_state_rows": self.mean_state_rows, "batches": self.batches, "seconds": round(self.seconds, 2),
            "counted_rows": None if self.counted_rows is None else {"counted": self.counted_rows[0], "exact": self.counted_rows[1]},
        }


@dataclass(frozen=True)
class SqlTuning:
    """A sweep's points, in the order run, the clauses swept, the target and the recommended point."""

    clauses: tuple[WatermarkClause, ...]
    points: tuple[SqlPoint, ...]
    target: float
    wall_seconds: float
    arrival: str = DEFAULT_ARRIVAL
    """The arrival rule every point was replayed under (:mod:`streaming.engine.arrival`)."""

    @property
    def recommended(self) -> SqlPoint | None:
        reaching = [point for point in self.points if point.completeness is not None and point.completeness >= self.target]
        return min(reaching, key=lambda point: point.delays_ms) if reaching else None

    def to_json(self) -> dict[str, Any]:
        best = self.recommended
        return {
            "clauses": [{"column": clause.column, "delay": format_duration(clause.delay_ms)} for clause in self.clauses],
            "points": [point.to_json() for point in self.points],
            "arrival": self.arrival,
            "target": self.target,
            "recommended": None if best is None else [format_duration(delay) for delay in best.delays_ms],
            "wall_seconds": round(self.wall_seconds, 1),
        }


def sweep_grid(clauses: Sequence[WatermarkClause], delays_ms: Sequence[int], which: int | None = None) -> list[tuple[int, ...]]:
    """The points to run: every delay for the clause ``which`` (the others as written), or with no ``which`` and two clauses or more, the grid of
    every delay for each; :class:`ConfigError` for a query without a clause, or a ``which`` it does not have."""
    if not clauses:
        raise ConfigError("sql", "WATERMARK", "is not in the query: the tuner sweeps the delay of its WATERMARK clause (FROM STREAM(v) WATERMARK ts DELAY OF ...)")
    if which is not None:
        if not 1 <= which <= len(clauses):
            raise ConfigError("which", which, f"must name one of the query's {len(clauses)} WATERMARK clauses (1 to {len(clauses)})")
        written = [clause.delay_ms for clause in clauses]
        return [tuple(delay if index == which - 1 else written[index] for index in range(len(clauses))) for delay in delays_ms]
    return list(itertools.product(*[list(delays_ms)] * len(clauses)))


def tune_sql(
    registry: QueryRegistry, query: SqlQuery, points: Sequence[tuple[int, ...]], *, target: float = 0.99, cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SqlTuning:
    """Replay ``query`` at each point of ``points`` (a delay for each WATERMARK clause, in the order written) and measure it against its exact answer.

    Its views are replayed (:meth:`~streaming.engine.sql.query.SqlQuery.replayed`): a paced feed is read a file a micro-batch without its pauses."""
    began = time.monotonic()
    spark = registry.spark
    query = query.replayed("tuned")
    clauses = tuple(watermark_clauses(spark, query.text))
    exact, grouping, counts = exact_records(spark, query)
    done = []
    for index, delays in enumerate(points):
        if cancel is not None and cancel.is_set():
            raise Cancelled("the sweep was cancelled")
        done.append(_measured(registry, query.with_changes(text=with_delays(query.text, clauses, delays)), tuple(delays), exact, grouping, cancel, counts))
        if progress is not None:
            progress(index + 1, len(points))
    return SqlTuning(clauses, tuple(done), target, time.monotonic() - began, query.ran_arrival())


def _measured(
    registry: QueryRegistry, query: SqlQuery, delays: tuple[int, ...], exact: list[dict[str, Any]], grouping: Sequence[str], cancel: threading.Event | None,
    counts: Sequence[str] = (),
) -> SqlPoint:
    """``query`` replayed to its end and measured against ``exact`` (its rows, grouped by ``grouping``; by rows counted when ``counts`` names
    a row-count column and the query groups)."""
    started = time.monotonic()
    outcome = replay_sql(registry, query, cancel=cancel)
    matched, different, missing, extra = compare_rows(outcome.records, exact, grouping)
    states = [int(summary["state_rows_total"]) for summary in outcome.summaries] or [0]
    counted = counted_rows(outcome.records, exact, grouping, counts[0]) if counts and grouping else None
    return SqlPoint(
        delays, len(exact), matched, different, missing, extra, outcome.rows_dropped_by_watermark, max(states), sum(states) / len(states),
        len(outcome.summaries), time.monotonic() - started, counted,
    )


MIN_COMPARED, MAX_COMPARED = 2, 4


@dataclass(frozen=True)
class SqlComparison:
    """2-4 SQL queries over the same views, each replayed and measured against its own exact answer, in the order given."""

    labels: tuple[str, ...]
    queries: tuple[SqlQuery, ...]
    points: tuple[SqlPoint, ...]
    """Each query's measures; its ``delays_ms`` are its WATERMARK clauses' delays as written."""
    wall_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": [{"label": label, "sql": query.text, **point.to_json()} for label, query, point in zip(self.labels, self.queries, self.points)],
            "wall_seconds": round(self.wall_seconds, 1),
        }


def compare_sql(
    registry: QueryRegistry, queries: Sequence[SqlQuery], *, labels: Sequence[str] | None = None, cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> SqlComparison:
    """Replay each of ``queries`` (2-4, over the same views) to its end and measure it against the exact answer of its own text, one after another.

    :class:`ConfigError` naming ``queries`` (or ``queries[i]``, ``labels``) before anything runs.
    """
    if not MIN_COMPARED <= len(queries) <= MAX_COMPARED:
        raise ConfigError("queries", len(queries), f"given; a comparison takes {MIN_COMPARED} to {MAX_COMPARED} SQL queries")
    for index, query in enumerate(queries[1:], start=1):
        if query.views != queries[0].views:
            raise ConfigError(f"queries[{index}].views", ", ".join(query.names), "are not the first query's: every query is compared on the same data")
    names = tuple(labels) if labels is not None else tuple(f"Query {number}" for number in range(1, len(queries) + 1))
    if len(names) != len(queries) or len(set(names)) != len(names):
        raise ConfigError("labels", list(names), "must name each query once")
    began = time.monotonic()
    spark = registry.spark
    done = []
    views = queries[0].replayed("compared").views  # every query reads the same rows, without a paced feed's pauses
    for index, query in enumerate(query.with_changes(views=views) for query in queries):
        if cancel is not None and cancel.is_set():
            raise Cancelled("the comparison was cancelled")
        delays = tuple(clause.delay_ms for clause in watermark_clauses(spark, query.text))
        exact, grouping, counts = exact_records(spark, query)
        done.append(_measured(registry, query, delays, exact, grouping, cancel, counts))
        if progress is not None:
            progress(index + 1, len(queries))
    return SqlComparison(names, tuple(queries), tuple(done), time.monotonic() - began)
