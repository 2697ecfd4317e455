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

__all__ = ["rows_that_differ"]

ABSENT = "∅"
"""How a value shows in a row whose table lacks its column."""


def _text(record: Mapping[str, Any], column: str) -> str:
    if column not in record:
        return ABSENT
    value = record[column]
    if value is None:
        return ""
    return json.dumps(value, sort_keys=True) if isinstance(value, dict | list) else str(value)


def rows_that_differ(results: Mapping[str, Sequence[Mapping[str, Any]]]) -> pd.DataFrame:
    """Every row that the tables of ``results`` (by name, each a list of records) do not all hold alike: its values (as text) and, per
    table, how many times it holds it. Ordered by the rows' values; empty (with those columns) when every table holds the same rows."""
    columns = list(dict.fromkeys(column for records in results.values() for record in records for column in record))
    counts = {name: Counter(tuple(_text(record, column) for column in columns) for record in records) for name, records in results.items()}
    rows = sorted(set().union(*counts.values())) if counts else []
    differing = [row for row in rows if len({count[row] for count in counts.values()}) > 1]
    table = pd.DataFrame(differing, columns=columns)
    for name, count in counts.items():
        table[name] = [count[row] for row in differing]
    return table.astype(dict.fromkeys(counts, "int64"))
