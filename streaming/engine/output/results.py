"""The result table as the dashboard holds it: folded from each micro-batch's output rows.

Spark's memory sink keeps every row it is given (SPARK-24525): in update mode
the same window is appended again at every change, so hours of output grow
without bound. :class:`ResultTable` instead folds each batch the way the output
mode defines the result table -- update replaces a window's row, complete
replaces the whole table, append adds finalized rows -- and, when
``max_rows`` is set, evicts the oldest windows first and counts them.

A kept table (:meth:`ResultTable.keep`) is stored as a snapshot and a journal
of the batches folded since, as Spark's own state store keeps snapshots and
deltas: a batch appends its output rows to the journal, and the snapshot is
written again once the journal holds as many rows as the table. Storing a
batch therefore costs what the batch brings, not what the table holds, however
long the run.

Its frame is kept as sorted columns and patched with the windows the batches
since the last frame touched (found and inserted by bisection, evicted ones
removed): a refresh copies the columns (numpy) and does per-window work only
for what changed, instead of rebuilding every row in Python.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError
from .kept_table import TableFile, journal_path

__all__ = ["RAW_COLUMNS", "TIMESTAMP_FORMAT", "WINDOW_COLUMNS", "ResultTable", "journal_path", "measure_column", "stamp"]

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"

WINDOW_COLUMNS = ["window_start", "window_end", "key", "count"]
RAW_COLUMNS = ["event_time", "key"]



def stamp(value: pd.Timestamp) -> str | None:
    """``YYYY-MM-DD HH:MM:SS`` (UTC), with the fraction of a second when it is not zero (``.196``); ``None`` for ``NaT``."""
    if pd.isna(value):
        return None
    text = value.strftime(TIMESTAMP_FORMAT)
    fraction = value.microsecond * 1000 + value.nanosecond
    return text if fraction == 0 else f"{text}.{fraction:09d}".rstrip("0")


def measure_column(aggregation: str) -> str:
    """The name of the result table's number column for ``aggregation``: ``count``, or ``value`` for a value aggregation."""
    return "count" if aggregation in ("count", "none") else "value"


def _timestamps(micros: Sequence[int] | np.ndarray) -> np.ndarray:
    """Epoch microseconds as UTC-naive ``datetime64[ns]``."""
    return np.array(micros, dtype="int64").astype("datetime64[us]").astype("datetime64[ns]")


Slot = tuple[int, int, str]
"""A window of the result table: ``(window_start_us, window_end_us, key)``."""

PATCH_MIN_WINDOWS = 64
"""A frame is patched while fewer windows than this, or than an eighth of the table, changed since the last one."""


@dataclass(frozen=True)
class _Sorted:
    """The windows as columns sorted by start, end and key (epoch microseconds), with their number columns; never changed once made."""

    starts: np.ndarray
    ends: np.ndarray
    keys: np.ndarray
    numbers: dict[str, np.ndarray]

    def locate(self, slot: Slot) -> tuple[int, bool]:
        """``(row, found)``: the row of ``slot``, or where it would be inserted to keep the order, found by bisection."""
        start, end, key = slot
        first, last = int(np.searchsorted(self.starts, start, "left")), int(np.searchsorted(self.starts, start, "right"))
        low = first + int(np.searchsorted(self.ends[first:last], end, "left"))
        high = first + int(np.searchsorted(self.ends[first:last], end, "right"))
        at = bisect_left(self.keys, key, low, high)
        return at, at < high and self.keys[at] == key


class ResultTable:
    """Thread-safe fold of micro-batch output into the current result table.

    ``apply`` is called from Spark's ``foreachBatch`` thread (or the memory-sink reader's, on Spark Connect), ``frame`` from the
    page; both take the lock. Rows are ``(window_start_us, window_end_us, key,
    count)`` for counts, ``(window_start_us, window_end_us, key, value, count)``
    for value aggregations and ``(event_time_us, key)`` for pass-through
    queries. A batch id seen before is ignored (Spark re-runs a batch after a
    restart), except in complete mode where replacing again is harmless.
    """

    def __init__(self, output_mode: str, aggregation: str = "count", max_rows: int | None = None, *, record: bool = False) -> None:
        if max_rows is not None and max_rows < 1:
            raise ConfigError("max_rows", max_rows, "must be at least 1")
        self.output_mode = output_mode
        self.aggregation = aggregation
        self.measure = measure_column(aggregation)
        """The name of the aggregate's column: ``count``, or ``value`` for a value aggregation (a float, NaN when Spark's is null; ``count`` beside it)."""
        self.max_rows = max_rows
        self.evicted_rows = 0
        self.last_batch_id = -1
        self.batches_applied = 0
        self._windows: dict[tuple[int, int, str], int | tuple[float, int]] = {}
        self._raw: deque[tuple[int, str]] = deque(maxlen=max_rows)
        self._lock = threading.Lock()
        self._version = 0
        self._framed: tuple[int, pd.DataFrame] | None = None
        self._sorted: _Sorted | None = None
        self._touched: set[Slot] | None = None
        """Windows folded or evicted since ``_sorted`` was made; ``None``: make it again from every window."""
        self._path: TableFile | None = None
        self.first_batch = threading.Event()
        """Set once the first batch has been folded in."""
        self.outputs: dict[int, list[tuple]] | None = {} if record else None
        """With ``record``: every batch's output rows as the sink received them, by batch id (what a step-through explains)."""

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        """Fold one batch's output ``rows`` in; a kept table then stores the batch before returning (see :meth:`keep`)."""
        if self._fold(batch_id, rows) and self._path is not None:
            self._store(batch_id, rows, self._path)

    def _fold(self, batch_id: int, rows: list[tuple]) -> bool:
        """Fold ``rows`` in; ``False`` for a batch already folded (not in complete mode)."""
        with self._lock:
            if batch_id <= self.last_batch_id and self.output_mode != "complete":
                return False
            self.last_batch_id = max(batch_id, self.last_batch_id)
            self.batches_applied += 1
            self._version += 1
            self.first_batch.set()
            if self.outputs is not None:
                self.outputs[batch_id] = list(rows)
            if self.aggregation == "none":
                if self.max_rows is not None:
                    self.evicted_rows += max(0, len(self._raw) + len(rows) - self.max_rows)
                self._raw.extend((int(t), str(k)) for t, k in rows)
                return True
            if self.output_mode == "complete":
                self._windows.clear()
                self._touched = None
            for start, end, key, *numbers in rows:
                slot = (int(start), int(end), str(key))
                if self.measure == "count":
                    self._windows[slot] = int(numbers[0])
                else:
                    value, count = numbers
                    self._windows[slot] = (math.nan if value is None else float(value), int(count))
                self._touch(slot)
            self._evict()
            return True

    def _touch(self, slot: Slot) -> None:
        """Note that ``slot`` changed since the frame was made; past the patch limit, the next frame is made again from every window."""
        if self._touched is None:
            return
        self._touched.add(slot)
        if len(self._touched) > max(PATCH_MIN_WINDOWS, len(self._windows) // 8):
            self._touched = None

    def keep(self, path: Path) -> None:
        """Take in the table kept at ``path`` by earlier runs (:meth:`load`), then store every batch :meth:`apply` folds in.

        Call before the first batch. Each batch's rows are appended to the
        journal beside ``path`` (:class:`~streaming.engine.output.kept_table.TableFile`) before :meth:`apply`
        returns, which Spark's ``foreachBatch`` call does before the batch
        commits; once the journal holds as many rows as the table, the table is
        saved to ``path`` and the journal starts again.
        """
        stored = TableFile(path)
        stored.resume()
        self._read(stored)
        self._path = stored

    def _store(self, batch_id: int, rows: list[tuple], stored: TableFile) -> None:
        stored.store(batch_id, [list(row) for row in rows], len(self), self._snapshot)

    def save(self, path: Path) -> None:
        """Write the table and the last batch folded into it to ``path`` (JSON), atomically: a reader sees the old file or the new one.

        A table that reads it with :meth:`load` goes on from there, ignoring the
        batches already applied, so a batch Spark runs again after a crash is
        counted once.
        """
        TableFile(path).write(self._snapshot())

    def _snapshot(self) -> dict:
        with self._lock:
            if self.aggregation == "none":
                rows: list[list] = [list(row) for row in self._raw]
            else:
                rows = [[*slot, *(numbers if isinstance(numbers, tuple) else (numbers,))] for slot, numbers in self._windows.items()]
            return {
                "output_mode": self.output_mode, "aggregation": self.aggregation, "last_batch_id": self.last_batch_id,
                "batches_applied": self.batches_applied, "evicted_rows": self.evicted_rows, "rows": rows,
            }

    @property
    def row_shape(self) -> str:
        """What a row holds: ``rows`` (a pass-through query's event time and key), or a window's key and ``count`` or ``value``."""
        return "rows" if self.aggregation == "none" else self.measure

    def rows(self) -> list[tuple]:
        """The table's rows as :meth:`apply` takes them: ``(window_start_us, window_end_us, key, count)`` (a value aggregation's value before
        the count), or ``(event_time_us, key)``."""
        return [tuple(row) for row in self._snapshot()["rows"]]

    def load(self, path: Path) -> None:
        """Go on from the table stored at ``path``: the snapshot :meth:`save` wrote, then the batches journalled after it.

        Nothing to do if there is none; :class:`ConfigError` if it is of another
        output mode or aggregation.
        """
        self._read(TableFile(path))

    def _read(self, stored: TableFile) -> None:
        snapshot, journal = stored.read()
        if snapshot is not None:
            self._load_snapshot(snapshot, stored.path)
        for entry in journal:
            rows = [tuple(row) for row in entry["rows"]]
            if self._fold(int(entry["batch_id"]), rows):
                stored.counted(len(rows))

    def _load_snapshot(self, record: dict, path: Path) -> None:
        for name in ("output_mode", "aggregation"):
            if record[name] != getattr(self, name):
                raise ConfigError(name, getattr(self, name), f"differs from the stored result table's ({record[name]!r}, in {path})")
        with self._lock:
            self.last_batch_id = int(record["last_batch_id"])
            self.batches_applied = int(record["batches_applied"])
            self.evicted_rows = int(record["evicted_rows"])
            if self.aggregation == "none":
                self._raw.extend((int(t), str(k)) for t, k in record["rows"])
            elif self.measure == "count":
                self._windows.update({(int(start), int(end), str(key)): int(count) for start, end, key, count in record["rows"]})
            else:
                self._windows.update({(int(a), int(b), str(k)): (float(v), int(c)) for a, b, k, v, c in record["rows"]})
            self._version += 1
            self._touched = None
            if self.batches_applied:
                self.first_batch.set()

    def _evict(self) -> None:
        if self.max_rows is None or len(self._windows) <= self.max_rows:
            return
        excess = len(self._windows) - self.max_rows
        for slot in sorted(self._windows, key=lambda slot: (slot[1], slot[0], slot[2]))[:excess]:
            del self._windows[slot]
            self._touch(slot)
        self.evicted_rows += excess

    def __len__(self) -> int:
        with self._lock:
            return len(self._raw) if self.aggregation == "none" else len(self._windows)

    def frame(self) -> pd.DataFrame:
        """The result table, sorted by window (or event time) and key; timestamps are UTC-naive.

        The frame is made once per change and shared by the calls until the
        next batch: treat it as read-only. A table of windows is patched with
        what changed since the last frame (see the module docstring).
        """
        with self._lock:
            version = self._version
            if self._framed is not None and self._framed[0] == version:
                return self._framed[1]
        table = self._raw_frame() if self.aggregation == "none" else self._window_frame()
        with self._lock:
            if self._framed is None or self._framed[0] < version:
                self._framed = (version, table)
        return table

    def _window_frame(self) -> pd.DataFrame:
        with self._lock:
            self._sorted = self._patched() or self._sorted_windows()
            self._touched = set()
            columns = self._sorted
        for shared in (columns.keys, *columns.numbers.values()):
            shared.flags.writeable = False  # the next patch starts from them
        return pd.DataFrame(
            {"window_start": _timestamps(columns.starts), "window_end": _timestamps(columns.ends), "key": columns.keys, **columns.numbers},
            copy=False,
        )

    def _raw_frame(self) -> pd.DataFrame:
        """The frame of pass-through rows, sorted by event time, then key."""
        with self._lock:
            rows = list(self._raw)
        times = np.array([time for time, _ in rows], dtype="int64")
        keys = np.array([key for _, key in rows], dtype=object)
        order = np.lexsort((pd.factorize(keys, sort=True)[0], times))
        return pd.DataFrame({"event_time": _timestamps(times[order]), "key": keys[order]})

    def _numbers(self, held: Sequence[int | tuple[float, int]]) -> dict[str, np.ndarray]:
        if self.measure == "value":
            pairs = list(held)
            return {"value": np.array([value for value, _ in pairs], dtype="float64"), "count": np.array([count for _, count in pairs], dtype="int64")}  # type: ignore[misc]
        return {"count": np.array(held, dtype="int64")}

    def _sorted_windows(self) -> _Sorted:
        """Every window as sorted columns (call with the lock held)."""
        slots = list(self._windows)
        starts = np.fromiter((slot[0] for slot in slots), dtype="int64", count=len(slots))
        ends = np.fromiter((slot[1] for slot in slots), dtype="int64", count=len(slots))
        keys = np.array([slot[2] for slot in slots], dtype=object)
        order = np.lexsort((pd.factorize(keys, sort=True)[0], ends, starts))
        numbers = self._numbers(list(self._windows.values()))
        return _Sorted(starts[order], ends[order], keys[order], {name: values[order] for name, values in numbers.items()})

    def _patched(self) -> _Sorted | None:
        """``_sorted`` with the windows touched since applied; ``None`` when it must be made again (call with the lock held).

        Made again when there is none yet, or after a complete-mode batch, a
        load, or more touched windows than the patch limit (see :meth:`_touch`).
        Windows are found and inserted by bisection, so the order holds without sorting.
        """
        base, touched = self._sorted, self._touched
        if base is None or touched is None:
            return None
        if not touched:
            return base
        numbers = {name: values.copy() for name, values in base.numbers.items()}
        gone: list[int] = []
        new: list[tuple[int, Slot]] = []
        for slot in touched:
            at, found = base.locate(slot)
            held = self._windows.get(slot)
            if held is None:
                if found:
                    gone.append(at)
            elif not found:
                new.append((at, slot))
            elif isinstance(held, tuple):
                numbers["value"][at], numbers["count"][at] = held
            else:
                numbers["count"][at] = held
        kept = np.ones(len(base.keys), dtype=bool)
        kept[gone] = False
        new.sort()  # by insertion row, then window: several new windows at one row keep their order
        slots = [slot for _, slot in new]
        rows = np.array([at for at, _ in new], dtype="int64")
        rows -= np.searchsorted(np.sort(np.array(gone, dtype="int64")), rows, "left")  # rows removed before each insertion point
        added = self._numbers([self._windows[slot] for slot in slots])
        return _Sorted(
            np.insert(base.starts[kept], rows, np.array([slot[0] for slot in slots], dtype="int64")),
            np.insert(base.ends[kept], rows, np.array([slot[1] for slot in slots], dtype="int64")),
            np.insert(base.keys[kept], rows, np.array([slot[2] for slot in slots], dtype=object)),
            {name: np.insert(values[kept], rows, added[name]) for name, values in numbers.items()},
        )
