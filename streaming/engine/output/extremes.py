"""Which rows of a long history to draw: the first and the last, and each stretch's lowest and highest.

A query's history grows by a batch every second or so; a chart of it needs a
few hundred points, not every batch. :class:`Extremes` cuts the history into
stretches of ``size`` consecutive rows -- ``size`` the smallest power of two
that leaves at most ``max_points // (2 * columns)`` stretches -- and keeps, from
each stretch, the first row holding the lowest value and the last row holding
the highest value of every column, plus the first and last row of the history.
A spike (a slow batch, a burst of dropped rows) therefore survives whatever
its length. A history of at most ``max_points`` rows is drawn whole. NaN counts
as the lowest value.

Stretches start at multiples of their size, so a stretch that is complete stays
complete while the history grows: :meth:`Extremes.positions` remembers what it
found and costs what the rows added since its last call number, plus the rows it
returns, not the length of the history. When the stretches double, neighbours
are merged from what was remembered. Fed a history batch by batch or whole, it
returns the same rows. Pure numpy; no pandas, no Spark.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Extremes"]


def _comparable(values: np.ndarray) -> np.ndarray:
    """``values`` as float64 with NaN as ``-inf``, so NaN is the lowest and compares equal to itself."""
    return np.nan_to_num(np.asarray(values, dtype="float64"), nan=-np.inf, posinf=np.inf, neginf=-np.inf)


class Extremes:
    """The rows of an append-only history to draw (see the module docstring), found incrementally.

    ``columns`` is how many columns :meth:`positions` is given each time, in the
    same order. The history must only grow between calls, except that a call
    may see fewer rows than the last one (a caller a refresh behind): it gets
    the rows of its own length. Call :meth:`reset` when the history was rebuilt.
    Not thread-safe: its owner serializes the calls.
    """

    def __init__(self, columns: int, max_points: int) -> None:
        if columns < 1:
            raise ValueError(f"columns: {columns!r} must be at least 1")
        if max_points < 2:
            raise ValueError(f"max_points: {max_points!r} must be at least 2")
        self.columns = columns
        self.max_points = max_points
        self.stretches = max(1, max_points // (2 * columns))
        """The most stretches a history is cut into."""
        self.reset()

    def reset(self) -> None:
        """Forget what was found: the next call reads the whole history."""
        self._size = 1
        self._lows = np.empty((0, self.columns), dtype="int64")
        self._highs = np.empty((0, self.columns), dtype="int64")
        self._rows = 0

    def size_for(self, rows: int) -> int:
        """The stretch length for a history of ``rows`` rows: the smallest power of two leaving at most :attr:`stretches` stretches."""
        size = 1
        while -(-rows // size) > self.stretches:
            size *= 2
        return size

    def positions(self, values: Sequence[np.ndarray]) -> np.ndarray:
        """Sorted positions of the rows to draw of the history whose columns are ``values`` (equal lengths, the whole history so far)."""
        if len(values) != self.columns:
            raise ValueError(f"values: {len(values)} columns given, {self.columns} expected")
        rows = len(values[0])
        if rows <= self.max_points:
            return np.arange(rows)
        size = self.size_for(rows)
        if size < self._size:
            self.reset()
        elif rows < self._rows:
            self._lows, self._highs = self._lows[: rows // size], self._highs[: rows // size]
        self._rows = rows
        if self._size < size:
            self._merge(values, size)
        complete = rows // size
        known = len(self._lows)
        if complete > known:
            start, end = known * size, complete * size
            lows, highs = zip(*(self._stretch_extremes(_comparable(column[start:end]), size) for column in values))
            offsets = np.arange(start, end, size)[:, None]
            self._lows = np.concatenate([self._lows, offsets + np.column_stack(lows)])
            self._highs = np.concatenate([self._highs, offsets + np.column_stack(highs)])
        tail_start = complete * size
        tail = []
        if tail_start < rows:
            for column in values:
                rest = _comparable(column[tail_start:])
                tail += [tail_start + int(np.argmin(rest)), rows - 1 - int(np.argmax(rest[::-1]))]
        kept = np.concatenate([self._lows.ravel(), self._highs.ravel(), np.array(tail, dtype="int64"), np.array([0, rows - 1])])
        return np.unique(kept)

    @staticmethod
    def _stretch_extremes(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
        """Within each stretch of ``size`` rows of ``values``: the offset of the first lowest and of the last highest."""
        blocks = values.reshape(-1, size)
        return blocks.argmin(axis=1), size - 1 - blocks[:, ::-1].argmax(axis=1)

    def _merge(self, values: Sequence[np.ndarray], size: int) -> None:
        """Double the stretches until they are ``size`` long, pairing neighbours; an unpaired last stretch is read again later."""
        while self._size < size:
            pairs = len(self._lows) // 2
            lows, highs = self._lows[: 2 * pairs], self._highs[: 2 * pairs]
            merged_lows = np.empty((pairs, self.columns), dtype="int64")
            merged_highs = np.empty((pairs, self.columns), dtype="int64")
            for index, column in enumerate(values):
                low_a, low_b = lows[0::2, index], lows[1::2, index]
                high_a, high_b = highs[0::2, index], highs[1::2, index]
                merged_lows[:, index] = np.where(_comparable(column[low_b]) < _comparable(column[low_a]), low_b, low_a)
                merged_highs[:, index] = np.where(_comparable(column[high_b]) >= _comparable(column[high_a]), high_b, high_a)
            self._lows, self._highs = merged_lows, merged_highs
            self._size *= 2
