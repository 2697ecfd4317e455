"""What a user's query is, read from Spark's analysed plan: its watermarks, the columns that name a row of its result, whether it keeps state.

The page and the tuner need these facts for any SQL, so they are read from
the plan Spark analysed, never from the text: the WATERMARK clauses (each
``EventTimeWatermark``: its column and delay), and the output columns an
update-mode row is upserted by (those of the last aggregation's grouping,
followed through the projections above it).

One fact comes from the parsed plan instead: the ``window( )`` calls. The
analyser turns a window into arithmetic on its column (an ``Expand`` for
sliding windows), where its length is no longer a field; the parsed plan still
holds the call as written, and its durations must be literals (Spark refuses
anything else), so Spark's own rendering of it is read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..durations import DurationError, parse_duration
from .guard import _class, _nodes, _seq

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["PlanFacts", "Watermark", "Window", "plan_facts", "state_value_types"]

MICROS_PER_DAY = 86_400_000_000
STATEFUL_NODES = frozenset({"Aggregate", "Join", "Deduplicate", "DeduplicateWithinWatermark", "FlatMapGroupsWithState", "TransformWithState", "Distinct"})


@dataclass(frozen=True)
class Watermark:
    """One WATERMARK clause (or ``withWatermark``): the event-time column and its delay in milliseconds."""

    column: str
    delay_ms: int


@dataclass(frozen=True)
class Window:
    """One ``window(column, length[, slide])`` call of the query: its column (unqualified) and durations; ``slide_ms`` ``None``: tumbling."""

    column: str
    window_ms: int
    slide_ms: int | None = None


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
    windows: tuple[Window, ...] = ()
    """The distinct ``window( )`` calls of the query as written (see the module docstring); a call with a start offset is left out."""

    @property
    def aggregates(self) -> bool:
        return "Aggregate" in self.stateful


def plan_facts(frame: DataFrame, walked: Sequence[tuple[Any, str]] | None = None) -> PlanFacts:
    """The :class:`PlanFacts` of ``frame``'s analysed plan (a classic session's DataFrame); ``walked``: its nodes and their class names as the
    check walked them (:func:`~.guard.checked`), so they are not walked again (each py4j call is a round trip: a check's budget is 300 ms)."""
    plan = frame._jdf.queryExecution().analyzed()
    nodes = _walked(frame, walked)
    watermarks = []
    for node, kind in reversed(nodes):
        if kind == "EventTimeWatermark":
            watermarks.append(Watermark(str(node.eventTime().name()), _interval_ms(node.delay())))
    stateful = tuple(kind for _, kind in nodes if kind in STATEFUL_NODES)
    aggregate = next((node for node, kind in nodes if kind == "Aggregate"), None)
    groups = _seq(aggregate.groupingExpressions()) if aggregate is not None else []
    grouping, counts = _keys_and_counts(plan, nodes, aggregate, groups)
    return PlanFacts(
        streaming=bool(frame.isStreaming),
        columns=tuple(frame.columns),
        grouping=grouping,
        watermarks=tuple(watermarks),
        stateful=stateful,
        global_aggregate=aggregate is not None and not groups,
        counts=counts,
        windows=windows_of(str(frame._jdf.queryExecution().logical().toString())),
    )


def _walked(frame: DataFrame, walked: Sequence[tuple[Any, str]] | None) -> list[tuple[Any, str]]:
    """``frame``'s analysed plan's nodes and their class names: ``walked`` when a check walked them already, else walked now."""
    if walked is not None:
        return list(walked)
    return [(node, _class(node)) for node in _nodes(frame._jdf.queryExecution().analyzed(), into_views=False)]


def state_facts(frame: DataFrame, walked: Sequence[tuple[Any, str]] | None = None) -> tuple[PlanFacts, tuple[str, ...]]:
    """:func:`plan_facts` and :func:`state_value_types` of ``frame`` from one walk of its plan: what a change to a kept query is judged by."""
    nodes = _walked(frame, walked)
    return plan_facts(frame, nodes), state_value_types(frame, nodes)


def state_value_types(frame: DataFrame, walked: Sequence[tuple[Any, str]] | None = None) -> tuple[str, ...]:
    """The types of the value a streaming aggregation keeps in state per group: each aggregate function's buffer of the topmost
    ``Aggregate`` of ``frame``'s analysed plan, in order (``sum`` of an int column keeps a bigint, ``max`` of it an int). Spark refuses
    to resume a checkpoint whose stored value schema these do not match (``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``). ``walked``: as
    for :func:`plan_facts`."""
    aggregate = next((node for node, kind in _walked(frame, walked) if kind == "Aggregate"), None)
    if aggregate is None:
        return ()
    types: list[str] = []
    stack = list(reversed(_seq(aggregate.aggregateExpressions())))
    while stack:
        expression = stack.pop()
        if _class(expression) == "AggregateExpression":
            types.extend(str(buffer.dataType().simpleString()) for buffer in _seq(expression.aggregateFunction().aggBufferAttributes()))
        else:
            stack.extend(reversed(_seq(expression.children())))
    return tuple(types)


_NAME_PART = re.compile(r"`([^`]*)`|([^.`]+)")
_WINDOW_CALL = re.compile(r"(?<![\w`])'window\(([^()]*)\)", re.IGNORECASE)  # the name as written: window, WINDOW


def windows_of(parsed: str) -> tuple[Window, ...]:
    """The ``window( )`` calls in ``parsed``, Spark's rendering of a parsed plan (``'window('e.ts, 10 minutes, 5 minutes)``): a string
    duration renders as its text, an integer one as microseconds. A call this cannot read, or one with a start offset, is left out."""
    found: list[Window] = []
    for match in _WINDOW_CALL.finditer(parsed):
        parts = [part.strip() for part in match.group(1).split(",")]
        if len(parts) not in (2, 3) or not parts[0].startswith("'"):
            continue
        column = [quoted or plain for quoted, plain in _NAME_PART.findall(parts[0][1:])][-1]  # the column, its view's alias dropped
        try:
            window_ms, *slide = [int(part) // 1000 if part.isdigit() else parse_duration(part, field="window") for part in parts[1:]]
        except DurationError:
            continue
        call = Window(column, window_ms, slide[0] if slide and slide[0] != window_ms else None)
        if window_ms > 0 and call not in found:
            found.append(call)
    return tuple(found)


def _interval_ms(interval: Any) -> int:
    """A JVM ``CalendarInterval`` (public fields, not methods) in milliseconds, a month as 30 days."""
    from py4j.java_gateway import get_field

    days = int(get_field(interval, "months")) * 30 + int(get_field(interval, "days"))
    return (days * MICROS_PER_DAY + int(get_field(interval, "microseconds"))) // 1000


def _keys_and_counts(plan: Any, nodes: list[tuple[Any, str]], aggregate: Any, groups: list[Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(grouping, counts)``: the output columns of ``plan`` that carry the grouping (``groups``) of its topmost aggregation, ``aggregate``, and
    those that are a row count of it (``count(*)``, ``count(1)``, not DISTINCT). One walk of its expressions and of the projections above it
    serves both: each py4j call is a round trip, and a check runs as the user types."""
    if aggregate is None:
        return (), ()
    keys: set[int] = set()
    counts: set[int] = set()
    for named in _seq(aggregate.aggregateExpressions()):
        alias = _class(named) == "Alias"
        inner = named.child() if alias else named
        if any(inner.semanticEquals(group) for group in groups):
            keys.add(int(named.exprId().id()))
        elif alias and _class(inner) == "AggregateExpression" and not inner.isDistinct():
            function = inner.aggregateFunction()
            if _class(function) == "Count" and all(_class(child) == "Literal" for child in _seq(function.children())):
                counts.add(int(named.exprId().id()))
    for node, kind in reversed(nodes):  # projections above the aggregation that rename a key or a count, lowest first
        if kind != "Project":
            continue
        for named in _seq(node.projectList()):
            if _class(named) == "Alias" and _class(named.child()) == "AttributeReference":
                child = int(named.child().exprId().id())
                for carried in (keys, counts):
                    if child in carried:
                        carried.add(int(named.exprId().id()))
    output = [(int(attribute.exprId().id()), str(attribute.name())) for attribute in _seq(plan.output())]
    return tuple(name for ident, name in output if ident in keys), tuple(name for ident, name in output if ident in counts)


