"""A Spark plan as the guard and the plan's facts read it, walked in the JVM in one call (``PlanWalk.java``).

The guard's rules need a few fields of every node and expression of a plan.
Read from Python, each field is a py4j round trip: a windowed count over one
view took about 1,350 of them, 0.2 s of a check that runs as the user types.
``PlanWalk`` walks the plan in the JVM, in the guard's order, and answers with
JSON (deflated, in parts small enough for py4j to send at once: ``PlanWalk.PART``); the rules stay in :mod:`.guard` and :mod:`.plan`.

It is compiled, once per JVM, by Janino: the Java compiler Spark ships and
generates its own code with, so no build step or JDK is needed.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import zlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.janino import new_compiled

__all__ = ["ALL", "NOT_INTO_RUN_VIEWS", "NOT_INTO_VIEWS", "Expr", "Node", "Walk", "analysed", "per_context", "walk"]

SOURCE = Path(__file__).with_name("PlanWalk.java")
ALL, NOT_INTO_VIEWS, NOT_INTO_RUN_VIEWS = 0, 1, 2
"""How far a walk goes (``PlanWalk``'s modes): into every plan (a parsed one), not below any view (a plan's own operators), not below the
run's own temporary views (the analysed check)."""


@dataclass(frozen=True)
class Expr:
    """One expression of a node: its class's simple name, whether it holds a plan (a subquery), where the parser saw it, the whole-number
    literals among its arguments (``None`` for the others), and what some kinds carry (``parts`` of a function's name, ``options`` keys,
    the arguments of a ``window( )`` call as durations in microseconds: ``None`` for one that is not a literal duration)."""

    kind: str
    plan: bool = False
    line: int | None = None
    start: int | None = None
    literals: tuple[int | None, ...] = ()
    value: int | None = None
    parts: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    durations: tuple[int | None, ...] = ()


@dataclass(frozen=True)
class Node:
    """One plan node: its class's simple name, whether it is a command, how many children, where the parser saw it, its expressions (all of
    them, nested ones too, in the guard's order) and what its kind carries (``fields``: a view's name, a join's condition, an aggregation's
    outputs...)."""

    kind: str
    command: bool
    children: int
    line: int | None
    start: int | None
    expressions: tuple[Expr, ...]
    fields: Mapping[str, Any] = field(default_factory=dict)
    stopped: bool = False
    """A view the walk did not go below (one of the run's, or any view: see the modes)."""
    span: tuple[int, int] | None = None
    """The offsets in the text of its first and last characters, when the parser recorded them."""


@dataclass(frozen=True)
class Walk:
    """The nodes of a plan in the guard's order (top first, depth first) and its output columns, ``(expression id, name)``."""

    nodes: tuple[Node, ...]
    output: tuple[tuple[int, str], ...] = ()
    streaming: bool | None = None
    """Whether the plan streams (``None``: not read)."""
    logical: str | None = None
    """Spark's rendering of the query's parsed plan (``None``: not read; see :func:`analysed`)."""


_NODE_KEYS = frozenset({"kind", "stopped", "command", "children", "line", "start", "index", "stop", "expressions"})
_KEPT: dict[str, tuple[Any, Any]] = {}
"""What :func:`per_context` made, by name, with the SparkContext it was made for: ``name -> (context, made)``."""
_MAKING = threading.Lock()


def per_context(name: str, make: Callable[[Any], Any]) -> Any:
    """What ``make(context)`` gives for the running SparkContext, made once per context under ``name`` (each py4j call is a round trip;
    compiling the walker takes 0.4 s) and never used beyond it: after Spark's JVM dies and a new session replaces it, a handle of the old
    gateway would refuse every check (``Connection refused``) until the server restarted."""
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    assert context is not None and context._jvm is not None
    kept = _KEPT.get(name)
    if kept is not None and kept[0] is context:
        return kept[1]
    with _MAKING:
        kept = _KEPT.get(name)
        if kept is None or kept[0] is not context:
            kept = _KEPT[name] = (context, make(context))
    return kept[1]


def walk(plan: Any, mode: int, views: Collection[str] = ()) -> Walk:
    """Walk the JVM ``plan`` (of the running SparkContext's JVM) as far as ``mode`` says (:data:`NOT_INTO_RUN_VIEWS`: not below the temporary views named in
    ``views``, lower case)."""
    return _unpacked(_walker().walk(plan, mode, _joined(views)))


def analysed(execution: Any, views: Collection[str]) -> Walk:
    """:func:`walk` of the analysed plan of ``execution`` (a JVM ``QueryExecution``) in :data:`NOT_INTO_RUN_VIEWS` mode, with whether it
    streams and Spark's rendering of its parsed plan: what a check reads of a query, in one call."""
    return _unpacked(_walker().analysed(execution, _joined(views)))


_VIEW_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _joined(views: Collection[str]) -> str:
    """``views`` as ``PlanWalk`` takes them, joined by commas; ``ValueError`` for a name that is not lower-case letters, digits and
    underscores (a comma in one would make the walk stop below a view the guard does not skip, and leave it unchecked)."""
    for name in views:
        if not _VIEW_NAME.fullmatch(name):
            raise ValueError(f"a view name the plan walk cannot take: {name!r}")
    return ",".join(sorted(views))


def _unpacked(parts: Any) -> Walk:
    found = json.loads(zlib.decompress(base64.b64decode("".join(parts[index] for index in range(len(parts))))))
    return Walk(
        tuple(_node(item) for item in found["nodes"]), tuple((int(ident), str(name)) for ident, name in found["output"]),
        found.get("streaming"), found.get("logical"),
    )


def _node(item: dict[str, Any]) -> Node:
    return Node(
        item["kind"], item["command"], item["children"], item["line"], item["start"],
        tuple(_expr(expression) for expression in item["expressions"]),
        {key: value for key, value in item.items() if key not in _NODE_KEYS},
        item["stopped"], None if item["index"] is None else (item["index"], item["stop"]),
    )


def _expr(item: dict[str, Any]) -> Expr:
    return Expr(
        item["kind"], item["plan"], item["line"], item["start"], tuple(item["literals"]), item.get("value"),
        tuple(item.get("parts", ())), tuple(item.get("options", ())), tuple(item.get("durations", ())),
    )


def _walker() -> Any:
    return per_context("plan walker", _compiled)


def _compiled(context: Any) -> Any:
    """A ``PlanWalk`` of ``context``'s JVM, compiled from :data:`SOURCE` by Janino."""
    return new_compiled(context, SOURCE, "PlanWalk")
