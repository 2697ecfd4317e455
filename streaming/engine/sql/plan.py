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
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..durations import DurationError, parse_duration
from .walk import NOT_INTO_VIEWS, Node, Walk, walk

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


def plan_facts(frame: DataFrame, walked: Walk | None = None) -> PlanFacts:
    """The :class:`PlanFacts` of ``frame``'s analysed plan (a classic session's DataFrame); ``walked``: that plan as the check walked it
    (:func:`~.guard.checked`), so it is not walked again."""
    found = _walked(frame, walked)
    watermarks = [
        Watermark(str(node.fields["column"]), _interval_ms(*node.fields["delay"])) for node in reversed(found.nodes) if node.kind == "EventTimeWatermark"
    ]
    stateful = tuple(node.kind for node in found.nodes if node.kind in STATEFUL_NODES)
    aggregate = next((node for node in found.nodes if node.kind == "Aggregate"), None)
    grouping, counts = _keys_and_counts(found, aggregate)
    return PlanFacts(
        streaming=bool(frame.isStreaming) if found.streaming is None else found.streaming,
        columns=tuple(name for _, name in found.output),
        grouping=grouping,
        watermarks=tuple(watermarks),
        stateful=stateful,
        global_aggregate=aggregate is not None and not aggregate.fields["grouping"],
        counts=counts,
        windows=windows_of(str(frame._jdf.queryExecution().logical().toString()) if found.logical is None else found.logical),
    )


def _walked(frame: DataFrame, walked: Walk | None) -> Walk:
    """``frame``'s analysed plan as a check walked it: ``walked`` when one did, else walked now (not below any view)."""
    if walked is not None:
        return walked
    return walk(frame._jdf.queryExecution().analyzed(), NOT_INTO_VIEWS)


def state_facts(frame: DataFrame, walked: Walk | None = None) -> tuple[PlanFacts, tuple[str, ...]]:
    """:func:`plan_facts` and :func:`state_value_types` of ``frame`` from one walk of its plan: what a change to a kept query is judged by."""
    found = _walked(frame, walked)
    return plan_facts(frame, found), state_value_types(frame, found)


def state_value_types(frame: DataFrame, walked: Walk | None = None) -> tuple[str, ...]:
    """The types of the value a streaming aggregation keeps in state per group: each aggregate function's buffer of the topmost
    ``Aggregate`` of ``frame``'s analysed plan, in order (``sum`` of an int column keeps a bigint, ``max`` of it an int). Spark refuses
    to resume a checkpoint whose stored value schema these do not match (``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``). ``walked``: as
    for :func:`plan_facts`."""
    aggregate = next((node for node in _walked(frame, walked).nodes if node.kind == "Aggregate"), None)
    return () if aggregate is None else tuple(aggregate.fields["buffers"])


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


def _interval_ms(months: int, days: int, microseconds: int) -> int:
    """A ``CalendarInterval``'s fields in milliseconds, a month as 30 days."""
    return ((months * 30 + days) * MICROS_PER_DAY + microseconds) // 1000


def _keys_and_counts(walked: Walk, aggregate: Node | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(grouping, counts)``: the output columns of the ``walked`` plan that carry the grouping of its topmost aggregation, ``aggregate``, and
    those that are a row count of it (``count(*)``, ``count(1)``, not DISTINCT), followed through the projections above it."""
    if aggregate is None:
        return (), ()
    keys: set[int] = set()
    counts: set[int] = set()
    for named in aggregate.fields["named"]:
        if named["key"]:
            keys.add(named["id"])
        elif (
            named["alias"] and named["inner"] == "AggregateExpression" and not named["distinct"]
            and named["function"] == "Count" and all(kind == "Literal" for kind in named["arguments"])
        ):
            counts.add(named["id"])
    for node in reversed(walked.nodes):  # projections above the aggregation that rename a key or a count, lowest first
        if node.kind != "Project":
            continue
        for named in node.fields["project"]:
            if named["alias"] and named["attribute"] is not None:
                for carried in (keys, counts):
                    if named["attribute"] in carried:
                        carried.add(named["id"])
    return tuple(name for ident, name in walked.output if ident in keys), tuple(name for ident, name in walked.output if ident in counts)
