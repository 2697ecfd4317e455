"""The result table as the dashboard holds it: folded from each micro-batch's output rows.

Spark's memory sink keeps every row it is given (SPARK-24525): in update mode
the same window is appended again at every change, so hours of output grow
without bound. :class:`ResultTable` instead folds each batch the way the output
mode defines the result table -- update replaces a window's row, complete
replaces the whole table, append adds finalized rows -- and, when
``max_rows`` is set, evicts the oldest windows first and counts them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable

import pandas as pd

__all__ = ["ResultTable", "WINDOW_COLUMNS", "RAW_COLUMNS"]

WINDOW_COLUMNS = ["window_start", "window_end", "key", "count"]
RAW_COLUMNS = ["event_time", "key"]

WindowRow = tuple[int, int, str, int]


def _timestamps(micros: Iterable[int]) -> pd.Series:
    return pd.to_datetime(pd.Series(list(micros), dtype="int64"), unit="us")


class ResultTable:
    """Thread-safe fold of micro-batch output into the current result table.

    ``apply`` is called from Spark's ``foreachBatch`` thread, ``frame`` from the
    page; both take the lock. Rows are ``(window_start_us, window_end_us, key,
    count)`` for aggregations and ``(event_time_us, key)`` for pass-through
    queries. A batch id seen before is ignored (Spark re-runs a batch after a
    restart), except in complete mode where replacing again is harmless.
    """

    def __init__(self, output_mode: str, aggregation: str = "count", max_rows: int | None = None) -> None:
        if max_rows is not None and max_rows < 1:
            raise ValueError(f"max_rows: {max_rows!r} must be at least 1")
        self.output_mode = output_mode
        self.aggregation = aggregation
        self.max_rows = max_rows
        self.evicted_rows = 0
        self.last_batch_id = -1
        self.batches_applied = 0
        self._windows: dict[tuple[int, int, str], int] = {}
        self._raw: deque[tuple[int, str]] = deque(maxlen=max_rows)
        self._lock = threading.Lock()

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        with self._lock:
            if batch_id <= self.last_batch_id and self.output_mode != "complete":
                return
            self.last_batch_id = max(batch_id, self.last_batch_id)
            self.batches_applied += 1
            if self.aggregation == "none":
                if self.max_rows is not None:
                    self.evicted_rows += max(0, len(self._raw) + len(rows) - self.max_rows)
                self._raw.extend((int(t), str(k)) for t, k in rows)
                return
            if self.output_mode == "complete":
                self._windows.clear()
            for start, end, key, count in rows:
                self._windows[(int(start), int(end), str(key))] = int(count)
            self._evict()

    def _evict(self) -> None:
        if self.max_rows is None or len(self._windows) <= self.max_rows:
            return
        excess = len(self._windows) - self.max_rows
        for slot in sorted(self._windows, key=lambda slot: (slot[1], slot[0], slot[2]))[:excess]:
            del self._windows[slot]
        self.evicted_rows += excess

    def __len__(self) -> int:
        with self._lock:
            return len(self._raw) if self.aggregation == "none" else len(self._windows)

    def frame(self) -> pd.DataFrame:
        """The result table, sorted by window (or event time) and key; timestamps are UTC-naive."""
        with self._lock:
            if self.aggregation == "none":
                raw = list(self._raw)
                items: list = []
            else:
                items = sorted(self._windows.items())
                raw = []
        if self.aggregation == "none":
            table = pd.DataFrame({"event_time": _timestamps(t for t, _ in raw), "key": pd.Series([k for _, k in raw], dtype="object")})
            return table.sort_values(RAW_COLUMNS, kind="stable", ignore_index=True)
        table = pd.DataFrame(
            {
                "window_start": _timestamps(slot[0] for slot, _ in items),
                "window_end": _timestamps(slot[1] for slot, _ in items),
                "key": pd.Series([slot[2] for slot, _ in items], dtype="object"),
                "count": pd.Series([count for _, count in items], dtype="int64"),
            }
        )
        return table.sort_values(["window_start", "window_end", "key"], kind="stable", ignore_index=True)
