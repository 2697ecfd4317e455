"""What a user's query is, read from Spark's analysed plan: its watermarks, the columns that name a row of its result, whether it keeps state.

The page and the tuner need these facts for any SQL, so they are read from
the plan Spark analysed, never from the text: the WATERMARK clauses (each
``EventTimeWatermark``: its column and delay), and the output columns an
update-mode row is upserted by (those of the last aggregation's grouping,
followed through the projections above it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .guard import _class, _nodes, _seq

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PlanFacts", "plan_facts"]

MICROS_PER_DAY = 86_400_000_000
STATEFUL_NODES = frozenset({"Aggregate", "Join", "Deduplicate", "DeduplicateWithinWatermark", "FlatMapGroupsWithState", "TransformWithState", "Distinct"})


@dataclass(frozen=True)
class Watermark:
    """One WATERMARK clause (or ``withWatermark``): the event-time column and its delay in milliseconds."""

    column: str
    delay_ms: int


@dataclass(frozen=True)
class PlanFacts:
    """The facts of one analysed query (see the module docstring)."""

    streaming: bool
    columns: tuple[str, ...]
    grouping: tuple[str, ...]
    """The output columns that name a row of the result table in update mode (empty: rows are appended)."""
    watermarks: tuple[Watermark, ...]
    stateful: tuple[str, ...]
    """The stateful operations of the plan, top first (``Aggregate``, ``Join``...)."""
    global_aggregate: bool = False
    """The topmost aggregation groups by nothing (``SELECT count(*) ...``): its result table is one row."""
    counts: tuple[str, ...] = ()
    """The output columns that count the rows of each group (``count(*)``, ``count(1)``) of the topmost aggregation."""

    @property
    def aggregates(self) -> bool:
        return "Aggregate" in self.stateful


def plan_facts(frame: DataFrame, walked: Sequence[tuple[Any, str]] | None = None) -> PlanFacts:
    """The :class:`PlanFacts` of ``frame``'s analysed plan (a classic session's DataFrame); ``walked``: its nodes and their class names as the
    check walked them (:func:`~.guard.checked`), so they are not walked again (each py4j call is a round trip: a check's budget is 300 ms)."""
    plan = frame._jdf.queryExecution().analyzed()
    nodes = list(walked) if walked is not None else [(node, _class(node)) for node in _nodes(plan, into_views=False)]
    watermarks = []
    for node, kind in reversed(nodes):
        if kind == "EventTimeWatermark":
            watermarks.append(Watermark(str(node.eventTime().name()), _interval_ms(node.delay())))
    stateful = tuple(kind for _, kind in nodes if kind in STATEFUL_NODES)
    aggregate = next((node for node, kind in nodes if kind == "Aggregate"), None)
    groups = _seq(aggregate.groupingExpressions()) if aggregate is not None else []
    return PlanFacts(
        streaming=bool(frame.isStreaming),
        columns=tuple(frame.columns),
        grouping=_grouping(plan, nodes, aggregate, groups),
        watermarks=tuple(watermarks),
        stateful=stateful,
        global_aggregate=aggregate is not None and not groups,
        counts=_counts(plan, nodes, aggregate),
    )


def _counts(plan: Any, nodes: list[tuple[Any, str]], aggregate: Any) -> tuple[str, ...]:
    """The output columns of ``plan`` that are a row count (``count(*)``, ``count(1)``, not DISTINCT) of its topmost aggregation."""
    if aggregate is None:
        return ()
    ids: set[int] = set()
    for named in _seq(aggregate.aggregateExpressions()):
        inner = named.child() if _class(named) == "Alias" else None
        if inner is None or _class(inner) != "AggregateExpression" or inner.isDistinct():
            continue
        function = inner.aggregateFunction()
        if _class(function) == "Count" and all(_class(child) == "Literal" for child in _seq(function.children())):
            ids.add(int(named.exprId().id()))
    return _carried(plan, nodes, ids)


def _carried(plan: Any, nodes: list[tuple[Any, str]], ids: set[int]) -> tuple[str, ...]:
    """The output columns of ``plan`` that carry the attributes ``ids`` (renamed by projections above, lowest first)."""
    for node, kind in reversed(nodes):
        if kind != "Project":
            continue
        for named in _seq(node.projectList()):
            if _class(named) == "Alias" and _class(named.child()) == "AttributeReference" and int(named.child().exprId().id()) in ids:
                ids.add(int(named.exprId().id()))
    return tuple(str(attribute.name()) for attribute in _seq(plan.output()) if int(attribute.exprId().id()) in ids)


def _interval_ms(interval: Any) -> int:
    """A JVM ``CalendarInterval`` (public fields, not methods) in milliseconds, a month as 30 days."""
    from py4j.java_gateway import get_field

    days = int(get_field(interval, "months")) * 30 + int(get_field(interval, "days"))
    return (days * MICROS_PER_DAY + int(get_field(interval, "microseconds"))) // 1000


def _grouping(plan: Any, nodes: list[tuple[Any, str]], aggregate: Any, groups: list[Any]) -> tuple[str, ...]:
    """The output columns of ``plan`` that carry the grouping (``groups``) of its topmost aggregation, ``aggregate``."""
    if aggregate is None:
        return ()
    keys: set[int] = set()
    for named in _seq(aggregate.aggregateExpressions()):
        inner = named.child() if _class(named) == "Alias" else named
        if any(inner.semanticEquals(group) for group in groups):
            keys.add(int(named.exprId().id()))
    return _carried(plan, nodes, keys)  # and the projections above the aggregation that rename a key
