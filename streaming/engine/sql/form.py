"""The form's query written as Spark SQL: where *Edit as SQL* starts a user, with a query that runs and means what the form meant.

The window, the key, the aggregate and the WATERMARK clause become the
same SQL a user would write over the source's view; the form's malformed-row
rule (no event time) is the view's own, so the two queries read the same rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..durations import format_duration
from .views import DEFAULT_VIEW

if TYPE_CHECKING:
    from ..query.config import QueryConfig

__all__ = ["form_sql", "interval_sql"]


def _name(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def interval_sql(ms: int) -> str:
    """``ms`` as a SQL interval literal: ``INTERVAL 30 SECONDS``, ``INTERVAL 5 MINUTES``, ``INTERVAL 250 MILLISECONDS``."""
    for unit, size in (("HOURS", 3_600_000), ("MINUTES", 60_000), ("SECONDS", 1000)):
        if ms and ms % size == 0:
            return f"INTERVAL {ms // size} {unit}"
    return f"INTERVAL {ms} MILLISECONDS"


def form_sql(config: QueryConfig, view: str = DEFAULT_VIEW) -> str:
    """The SQL of ``config``'s query over the view ``view`` of its source (see the module docstring)."""
    source = config.source
    columns = source.columns
    event_time = _name(source.event_time_column)
    key = "key" if columns is None else columns.key
    watermark = "" if config.watermark_ms is None else f"\nWATERMARK {event_time} DELAY OF {interval_sql(config.watermark_ms)}"
    relation = f"FROM STREAM({_name(view)}){watermark}"
    note = ""
    if config.deduplicate:
        note = "\n-- The form also drops duplicates by id within the watermark (dropDuplicatesWithinWatermark), which SQL cannot say."
    if config.aggregation == "none":
        keyed = f", {_name(key)}" if key else ""
        return f"SELECT {event_time}{keyed}\n{relation}{note}\n"
    if config.session_gap_ms is not None:
        window = f"session_window({event_time}, '{format_duration(config.session_gap_ms)}')"
    elif config.slide is not None:
        window = f"window({event_time}, '{format_duration(config.window_ms)}', '{format_duration(config.slide_ms)}')"
    else:
        window = f"window({event_time}, '{format_duration(config.window_ms)}')"
    value = _name(columns.value) if columns is not None and columns.value is not None else None
    measures = ["count(*) AS `count`"]
    if config.aggregation == "approx_distinct" and value:
        measures.insert(0, f"approx_count_distinct({value}) AS `value`")
    elif config.aggregation in ("sum", "avg", "min", "max") and value:
        measures.insert(0, f"{config.aggregation}(try_cast({value} AS DOUBLE)) AS `value`")
    keys = [f"{_name(key)} AS `key`"] if key else []
    groups = ", ".join(str(index) for index in range(1, 2 + len(keys)))
    return f"SELECT {window} AS `window`, {', '.join([*keys, *measures])}\n{relation}\nGROUP BY {groups}{note}\n"
