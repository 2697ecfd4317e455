"""Result tables held against each other: the rows not in every one of them, and which holds each.

Rows are compared as JSON records (:attr:`~streaming.engine.sql.replay.SqlReplay.records`, each value typed by Spark's type, not by
the dtype pandas infers for a column: an integer column with a null in one table is not floats there), whole, by their values as
text, and counted: a table that holds a row twice differs from one that holds it once. A column one table has and another lacks makes
their rows differ.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

__all__ = ["held", "rows_that_differ"]

ABSENT = "∅"
"""How a value shows in a row whose table lacks its column."""


def _flat(record: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``record`` with its structs' fields as columns of their own, as the page's tables show them (``w.start``, ``w.end``)."""
    flat: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _text(record: Mapping[str, Any], column: str) -> str:
    if column not in record:
        return ABSENT
    value = record[column]
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, list) else str(value)


def held(name: str) -> str:
    """The column of :func:`rows_that_differ` that says how many times the table ``name`` holds each row."""
    return f"times in {name}"


def rows_that_differ(results: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """Every row that the tables of ``results`` (by name, each a list of records) do not all hold alike: its values (as text; a struct's
    fields as columns of their own) and, per table, how many times it holds it (:func:`held`). Ordered by the rows' values; empty (with
    those columns) when every table holds the same rows."""
    flat = {name: [_flat(record) for record in records] for name, records in results.items()}
    columns = list(dict.fromkeys(column for records in flat.values() for record in records for column in record))
    counts = {name: Counter(tuple(_text(record, column) for column in columns) for record in records) for name, records in flat.items()}
    rows = sorted(set().union(*counts.values())) if counts else []
    differing = [row for row in rows if len({count[row] for count in counts.values()}) > 1]
    table = pd.DataFrame(differing, columns=columns)
    for name, count in counts.items():
        table[held(name)] = [count[row] for row in differing]
    return table.astype({held(name): "int64" for name in counts})
