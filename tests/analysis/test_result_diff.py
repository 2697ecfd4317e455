"""The rows three result tables do not hold alike, as the Queries page's *Try on a copy* names them."""

from __future__ import annotations

from streaming.analysis.result_diff import held, rows_that_differ


def _records(keys: str, counts: list[int | None]) -> list[dict]:
    return [{"w": {"start": "12:00", "end": "12:10"}, "key": key, "n": n} for key, n in zip(keys, counts, strict=True)]


def test_rows_held_differently_are_named_with_how_many_times_each_table_holds_them() -> None:
    table = rows_that_differ({"tried": _records("abc", [2, 1, 5]), "old": _records("abc", [2, 3, 5]), "fresh": _records("abbc", [2, 3, 3, 5])})
    window = {"w.start": "12:00", "w.end": "12:10"}  # a struct's fields as the page's tables show them
    assert table.to_dict("records") == [
        {**window, "key": "b", "n": "1", held("tried"): 1, held("old"): 0, held("fresh"): 0},
        {**window, "key": "b", "n": "3", held("tried"): 0, held("old"): 1, held("fresh"): 2},
    ]


def test_the_same_rows_in_another_order_or_beside_a_null_do_not_differ_and_a_missing_column_does() -> None:
    one = _records("ab", [1, None])
    assert rows_that_differ({"x": one, "y": one[::-1]}).empty
    assert rows_that_differ({"x": _records("a", [1]), "y": _records("a", [1]) + _records("b", [None])})["n"].tolist() == [""]  # 1, not 1.0
    table = rows_that_differ({"x": one, "y": [{key: value for key, value in record.items() if key != "n"} for record in one]})
    assert list(table.columns) == ["w.start", "w.end", "key", "n", held("x"), held("y")] and len(table) == 4 and set(table["n"]) == {"1", "", "∅"}
