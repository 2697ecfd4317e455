"""A user's SQL with other watermark delays, or as the batch query of its exact answer, cut where Spark's parser says its clauses are.

The tuner replays a query under other delays of its WATERMARK clauses, and
measures it against the same SQL over all the rows at once (no ``STREAM( )``,
no WATERMARK clause). The clauses are found in the parsed plan, each
``UnresolvedEventTimeWatermark`` and ``NamedStreamingRelation`` with the span
of text it came from, so only those spans are rewritten: a string or a
comment that happens to read ``WATERMARK`` is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .form import interval_sql
from .guard import parse_error
from .plan import _interval_ms
from .walk import ALL, walk

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["WatermarkClause", "batch_text", "watermark_clauses", "with_delays"]

_STREAM = re.compile(r"STREAM\s*\(\s*(.+?)\s*\)", re.IGNORECASE | re.DOTALL)


@dataclass(frozen=True)
class WatermarkClause:
    """One ``WATERMARK col DELAY OF interval`` of the text: where it is (``start``, ``stop`` inclusive), its column as written, its delay."""

    start: int
    stop: int
    column: str
    delay_ms: int

    def written(self, delay_ms: int) -> str:
        return f"WATERMARK {self.column} DELAY OF {interval_sql(delay_ms)}"


def _parsed(spark: SparkSession, text: str) -> Any:
    try:
        return spark._jsparkSession.sessionState().sqlParser().parseQuery(text)
    except Exception as err:  # noqa: BLE001 - py4j raises Spark's ParseException as PySpark's
        raise parse_error(err, text) from None


def watermark_clauses(spark: SparkSession, text: str) -> list[WatermarkClause]:
    """The WATERMARK clauses of ``text``, in the order they are written."""
    clauses = []
    for node in walk(_parsed(spark, text), ALL).nodes:
        if node.kind == "UnresolvedEventTimeWatermark":
            if node.span is None:
                raise ConfigError("sql", text.strip()[:80], "has a WATERMARK clause the parser did not place in the text")
            clauses.append(WatermarkClause(*node.span, str(node.fields["column"]), _interval_ms(*node.fields["delay"])))
    return sorted(clauses, key=lambda clause: clause.start)


def with_delays(text: str, clauses: Sequence[WatermarkClause], delays_ms: Sequence[int]) -> str:
    """``text`` with clause *i*'s delay set to ``delays_ms[i]`` (milliseconds)."""
    if len(clauses) != len(delays_ms):
        raise ConfigError("delays", list(delays_ms), f"must give one delay for each of the query's {len(clauses)} WATERMARK clauses")
    for clause, delay in sorted(zip(clauses, delays_ms), key=lambda pair: pair[0].start, reverse=True):
        text = text[: clause.start] + clause.written(delay) + text[clause.stop + 1 :]
    return text


def batch_text(spark: SparkSession, text: str) -> str:
    """``text`` as the batch query of its exact answer: every ``STREAM(view)`` read as ``view``, every WATERMARK clause left out."""
    cuts: list[tuple[int, int, str]] = []
    for node in walk(_parsed(spark, text), ALL).nodes:
        span = node.span if node.kind in ("UnresolvedEventTimeWatermark", "NamedStreamingRelation") else None
        if span is None:
            continue
        if node.kind == "UnresolvedEventTimeWatermark":
            cuts.append((span[0], span[1], ""))
        else:
            found = _STREAM.match(text, span[0], span[1] + 1)
            if found is not None:
                cuts.append((span[0], found.end() - 1, found.group(1)))
    for start, stop, replacement in sorted(set(cuts), reverse=True):
        text = text[:start] + replacement + text[stop + 1 :]
    return text
