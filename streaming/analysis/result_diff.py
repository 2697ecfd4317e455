"""Result tables held against each other: the rows not in every one of them, and which holds each.

Rows are compared whole, by their values as text (a window's start, a key, a
count), and counted: a table that holds a row twice differs from one that holds
it once. Columns one table has and another lacks make their rows differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pandas as pd

__all__ = ["rows_that_differ"]

ABSENT = "∅"
"""How a value shows in a row whose table lacks its column."""


def _counted(frame: pd.DataFrame, columns: list[str]) -> Counter[tuple[str, ...]]:
    values = frame.reindex(columns=columns)
    return Counter(
        tuple(ABSENT if column not in frame.columns else "" if pd.isna(value) else str(value) for column, value in zip(columns, row, strict=True))
        for row in values.itertuples(index=False, name=None)
    )


def rows_that_differ(results: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every row that the tables of ``results`` (by name) do not all hold alike: its values (as text) and, per table, how many times it
    holds it. Ordered by the rows' values; empty (with those columns) when every table holds the same rows."""
    columns = list(dict.fromkeys(column for frame in results.values() for column in frame.columns))
    counts = {name: _counted(frame, columns) for name, frame in results.items()}
    rows = sorted(set().union(*counts.values())) if counts else []
    differing = [row for row in rows if len({count[row] for count in counts.values()}) > 1]
    table = pd.DataFrame(differing, columns=columns)
    for name, count in counts.items():
        table[name] = [count[row] for row in differing]
    return table.astype(dict.fromkeys(counts, "int64"))
