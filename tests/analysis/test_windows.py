"""Spark's window assignment, held to the definition: window k is [k * slide, k * slide + window), aligned to the epoch."""

from __future__ import annotations

import numpy as np
import pytest

from streaming.analysis.windows import window_indices, window_pairs, window_span
from streaming.engine.errors import ConfigError


@pytest.mark.parametrize(("window", "slide"), [(10, 10), (10, 5), (10, 3), (7, 2), (5, 5)])
def test_every_window_holding_a_time_and_no_other(window: int, slide: int) -> None:
    times = np.random.default_rng(7).integers(-60, 60, size=200)
    event, start = window_pairs(times, window, slide)
    pairs = {(int(index), int(begin)) for index, begin in zip(event, start)}
    expected = {(index, k * slide) for index, t in enumerate(times) for k in range(-80, 80) if k * slide <= t < k * slide + window}
    assert pairs == expected and len(event) == len(expected) > len(times) * (window // slide) - 1
    first, last = window_indices(times, window, slide)
    assert all(last[index] - first[index] + 1 == sum(1 for i, _ in pairs if i == index) for index in range(len(times)))
    assert all(first[index] * slide == min(begin for i, begin in pairs if i == index) for index in range(len(times)))


def test_a_slide_longer_than_the_window_or_not_above_zero_is_refused_naming_it() -> None:
    assert window_span(60_000) == (60_000_000_000, 60_000_000_000)
    with pytest.raises(ConfigError, match="slide_ms"):
        window_span(60_000, 120_000)
    with pytest.raises(ConfigError, match="slide_ms"):
        window_span(60_000, 0)
    with pytest.raises(ConfigError, match="window_ms"):
        window_span(0)
