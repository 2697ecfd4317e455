"""Which rows of a long history a chart draws: one rule, fed whole or batch by batch (no Spark)."""

from __future__ import annotations

import numpy as np
import pytest

from streaming.engine.output.extremes import Extremes


def by_definition(values: list[np.ndarray], max_points: int) -> np.ndarray:
    """The rule as the module states it, stretch by stretch: first and last row, each stretch's first lowest and last highest."""
    rows = len(values[0])
    if rows <= max_points:
        return np.arange(rows)
    size = 1
    while -(-rows // size) > max(1, max_points // (2 * len(values))):
        size *= 2
    kept = {0, rows - 1}
    for start in range(0, rows, size):
        for column in values:
            stretch = np.nan_to_num(column[start : start + size].astype(float), nan=-np.inf)
            kept.add(start + int(np.flatnonzero(stretch == stretch.min())[0]))
            kept.add(start + int(np.flatnonzero(stretch == stretch.max())[-1]))
    return np.array(sorted(kept))


@pytest.mark.parametrize("seed", range(40))
def test_fed_batch_by_batch_it_keeps_what_the_rule_keeps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    columns, max_points, rows = int(rng.integers(1, 5)), int(rng.integers(2, 90)), int(rng.integers(1, 2500))
    values = [rng.integers(0, 4, rows).astype(float) for _ in range(columns)]  # few distinct values: many ties
    for column in values:
        column[rng.random(rows) < 0.05] = np.nan
    extremes, seen = Extremes(columns, max_points), 0
    while seen < rows:
        seen = min(rows, seen + int(rng.integers(1, 150)))
        history = [column[:seen] for column in values]
        np.testing.assert_array_equal(extremes.positions(history), by_definition(history, max_points))


def test_a_spike_and_both_ends_survive_and_the_count_is_bounded() -> None:
    values = np.zeros(100_000)
    values[54_321], values[77_777] = 9_000.0, -3.0
    drawn = Extremes(1, 600).positions([values])
    assert {0, 54_321, 77_777, 99_999} <= set(drawn.tolist())
    assert len(drawn) <= 600 + 2
    assert np.all(np.diff(drawn) > 0)


def test_stretches_are_the_smallest_power_of_two_that_fits() -> None:
    assert [Extremes(1, 600).size_for(rows) for rows in (601, 1_200, 1_201, 7_200)] == [4, 4, 8, 32]
    assert Extremes(2, 400).size_for(10_000) == 128


def test_a_caller_a_refresh_behind_gets_the_rows_of_its_own_length() -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(size=5_000)
    extremes = Extremes(1, 100)
    extremes.positions([values])
    for rows in (4_990, 4_000, 1_000, 5_000):  # two pages on one run, one behind the other
        np.testing.assert_array_equal(extremes.positions([values[:rows]]), by_definition([values[:rows]], 100))


def test_after_a_reset_a_rebuilt_history_is_read_again() -> None:
    extremes = Extremes(1, 10)
    extremes.positions([np.zeros(100)])
    rebuilt = np.zeros(100)
    rebuilt[7] = 1.0
    extremes.reset()
    assert 7 in extremes.positions([rebuilt]).tolist()


def test_arguments_are_checked_where_received() -> None:
    with pytest.raises(ValueError, match="columns: 0"):
        Extremes(0, 600)
    with pytest.raises(ValueError, match="max_points: 1"):
        Extremes(1, 1)
    with pytest.raises(ValueError, match="2 columns given, 1 expected"):
        Extremes(1, 600).positions([np.zeros(3), np.zeros(3)])
