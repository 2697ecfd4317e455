"""The rows three result tables do not hold alike, as the Queries page's *Try on a copy* names them."""

from __future__ import annotations

import pandas as pd

from streaming.analysis.result_diff import rows_that_differ


def test_rows_held_differently_are_named_with_how_many_times_each_table_holds_them() -> None:
    tried = pd.DataFrame({"key": ["a", "b", "c"], "n": [2, 1, 5]})
    going_on = pd.DataFrame({"key": ["a", "b", "c"], "n": [2, 3, 5]})
    fresh = pd.DataFrame({"key": ["a", "b", "b", "c"], "n": [2, 3, 3, 5]})
    table = rows_that_differ({"tried": tried, "old": going_on, "fresh": fresh})
    assert table.to_dict("records") == [
        {"key": "b", "n": "1", "tried": 1, "old": 0, "fresh": 0},
        {"key": "b", "n": "3", "tried": 0, "old": 1, "fresh": 2},
    ]


def test_tables_holding_the_same_rows_in_another_order_do_not_differ_and_a_missing_column_does() -> None:
    one = pd.DataFrame({"key": ["a", "b"], "n": [1, None]})
    assert rows_that_differ({"x": one, "y": one.iloc[::-1]}).empty
    table = rows_that_differ({"x": one, "y": one.drop(columns="n")})
    assert list(table.columns) == ["key", "n", "x", "y"] and len(table) == 4 and set(table["n"]) == {"1.0", "", "∅"}
