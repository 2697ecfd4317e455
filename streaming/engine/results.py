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
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import ConfigError
from .jsonl import drop_cut_line, read_json_lines

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


def journal_path(path: Path) -> Path:
    """The journal of a result table kept at ``path``: ``result.json`` is journalled in ``result.jsonl``."""
    return path.with_suffix(".jsonl")


def _timestamps(micros: Sequence[int] | np.ndarray) -> np.ndarray:
    """Epoch microseconds as UTC-naive ``datetime64[ns]``."""
    return np.array(micros, dtype="int64").astype("datetime64[us]").astype("datetime64[ns]")


class ResultTable:
    """Thread-safe fold of micro-batch output into the current result table.

    ``apply`` is called from Spark's ``foreachBatch`` thread (or the memory-sink reader's, on Spark Connect), ``frame`` from the
    page; both take the lock. Rows are ``(window_start_us, window_end_us, key,
    count)`` for counts, ``(window_start_us, window_end_us, key, value, count)``
    for value aggregations and ``(event_time_us, key)`` for pass-through
    queries. A batch id seen before is ignored (Spark re-runs a batch after a
    restart), except in complete mode where replacing again is harmless.
    """

    def __init__(self, output_mode: str, aggregation: str = "count", max_rows: int | None = None) -> None:
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
        self._path: Path | None = None
        self._journal_rows = 0
        self.first_batch = threading.Event()
        """Set once the first batch has been folded in."""

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
            if self.aggregation == "none":
                if self.max_rows is not None:
                    self.evicted_rows += max(0, len(self._raw) + len(rows) - self.max_rows)
                self._raw.extend((int(t), str(k)) for t, k in rows)
                return True
            if self.output_mode == "complete":
                self._windows.clear()
            if self.measure == "count":
                for start, end, key, count in rows:
                    self._windows[(int(start), int(end), str(key))] = int(count)
            else:
                for start, end, key, value, count in rows:
                    self._windows[(int(start), int(end), str(key))] = (math.nan if value is None else float(value), int(count))
            self._evict()
            return True

    def keep(self, path: Path) -> None:
        """Take in the table kept at ``path`` by earlier runs (:meth:`load`), then store every batch :meth:`apply` folds in.

        Call before the first batch. Each batch's rows are appended to the
        journal beside ``path`` (:func:`journal_path`) before :meth:`apply`
        returns, which Spark's ``foreachBatch`` call does before the batch
        commits; once the journal holds as many rows as the table, the table is
        saved to ``path`` (:meth:`save`) and the journal starts again.
        """
        drop_cut_line(journal_path(path))
        self.load(path)
        self._path = path

    def _store(self, batch_id: int, rows: list[tuple], path: Path) -> None:
        if self._journal_rows + len(rows) >= len(self):
            self.save(path)
            journal_path(path).unlink(missing_ok=True)
            self._journal_rows = 0
            return
        with journal_path(path).open("a") as journal:
            journal.write(json.dumps({"batch_id": batch_id, "rows": rows}) + "\n")
        self._journal_rows += len(rows)

    def save(self, path: Path) -> None:
        """Write the table and the last batch folded into it to ``path`` (JSON), atomically: a reader sees the old file or the new one.

        A table that reads it with :meth:`load` goes on from there, ignoring the
        batches already applied, so a batch Spark runs again after a crash is
        counted once.
        """
        with self._lock:
            if self.aggregation == "none":
                rows: list[list] = [list(row) for row in self._raw]
            else:
                rows = [[*slot, *(numbers if isinstance(numbers, tuple) else (numbers,))] for slot, numbers in self._windows.items()]
            record = {
                "output_mode": self.output_mode, "aggregation": self.aggregation, "last_batch_id": self.last_batch_id,
                "batches_applied": self.batches_applied, "evicted_rows": self.evicted_rows, "rows": rows,
            }
        partial = path.with_name(f".{path.name}.partial")
        partial.write_text(json.dumps(record))
        os.replace(partial, path)

    def load(self, path: Path) -> None:
        """Go on from the table stored at ``path``: the snapshot :meth:`save` wrote, then the batches journalled after it.

        Nothing to do if there is none; :class:`ConfigError` if it is of another
        output mode or aggregation. A last journal line cut short by a crash is
        ignored: that batch's ``foreachBatch`` call had not returned, so Spark runs it again.
        The journal is read before the snapshot, so a table being stored meanwhile is read whole.
        """
        journal = read_json_lines(journal_path(path))
        if path.is_file():
            self._load_snapshot(json.loads(path.read_text()), path)
        for entry in journal:
            rows = [tuple(row) for row in entry["rows"]]
            if self._fold(int(entry["batch_id"]), rows):
                self._journal_rows += len(rows)

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
            if self.batches_applied:
                self.first_batch.set()

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
        """The result table, sorted by window (or event time) and key; timestamps are UTC-naive.

        The frame is built once per change and shared by the calls until the
        next batch: treat it as read-only.
        """
        with self._lock:
            version = self._version
            if self._framed is not None and self._framed[0] == version:
                return self._framed[1]
            if self.aggregation == "none":
                rows: list[tuple] = list(self._raw)
            elif self.measure == "count":
                rows = [(*slot, count) for slot, count in self._windows.items()]
            else:
                rows = [(*slot, *numbers) for slot, numbers in self._windows.items()]  # type: ignore[misc]
        table = self._build(rows)
        with self._lock:
            if self._framed is None or self._framed[0] < version:
                self._framed = (version, table)
        return table

    def _build(self, rows: list[tuple]) -> pd.DataFrame:
        """The frame of ``rows``, sorted by window (or event time), then key."""
        columns = list(zip(*rows)) if rows else [(), (), (), (), ()]
        if self.aggregation == "none":
            times, keys = np.array(columns[0], dtype="int64"), np.array(columns[1], dtype=object)
            order = np.lexsort((pd.factorize(keys, sort=True)[0], times))
            return pd.DataFrame({"event_time": _timestamps(times[order]), "key": keys[order]})
        starts, ends = np.array(columns[0], dtype="int64"), np.array(columns[1], dtype="int64")
        keys = np.array(columns[2], dtype=object)
        order = np.lexsort((pd.factorize(keys, sort=True)[0], ends, starts))
        if self.measure == "value":
            numbers = {"value": np.array(columns[3], dtype="float64"), "count": np.array(columns[4], dtype="int64")}
        else:
            numbers = {"count": np.array(columns[3], dtype="int64")}
        return pd.DataFrame(
            {
                "window_start": _timestamps(starts[order]),
                "window_end": _timestamps(ends[order]),
                "key": keys[order],
                **{name: values[order] for name, values in numbers.items()},
            }
        )
