"""A result table kept on disk: a snapshot, and a journal of the batches folded into the table since it.

As Spark's own state store keeps snapshots and deltas: each batch appends its
output rows to the journal (before ``foreachBatch`` returns, so before Spark
commits the batch), and once the journal holds as many rows as the table, the
snapshot is written again and the journal starts anew. Storing a batch costs
what the batch brings, not what the table holds, however long the run.

A table reads it back with :meth:`TableFile.read`: the snapshot, then the
journal's batches, which it folds as it folded them the first time (a batch it
holds already is ignored, so one Spark runs again after a crash counts once).
The form's :class:`~streaming.engine.output.results.ResultTable` and a SQL query's
:class:`~streaming.engine.sql.table.SqlTable` keep their tables so.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..jsonl import drop_cut_line, read_json_lines

__all__ = ["TableFile", "journal_path"]


def journal_path(path: Path) -> Path:
    """The journal of a result table kept at ``path``: ``result.json`` is journalled in ``result.jsonl``."""
    return path.with_suffix(".jsonl")


class TableFile:
    """The snapshot at ``path`` and its journal beside it (:func:`journal_path`). Not thread-safe: one writer, the batch callback."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.journal = journal_path(path)
        self._journal_rows = 0

    def read(self) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``(snapshot, entries)``: the snapshot (``None`` when there is none) and the journal's ``{"batch_id", "rows"}`` entries.

        The journal is read before the snapshot, so a table being stored meanwhile is read whole. A last journal line cut short by
        a crash is left out: that batch's ``foreachBatch`` call had not returned, so Spark runs it again.
        """
        entries = read_json_lines(self.journal)
        snapshot = json.loads(self.path.read_text()) if self.path.is_file() else None
        return snapshot, entries

    def resume(self) -> None:
        """Get ready to store after what :meth:`read` gave: a cut last line is removed, so the next batch starts a line of its own."""
        drop_cut_line(self.journal)

    def counted(self, rows: int) -> None:
        """Note that ``rows`` journalled rows were folded into the table when it was read back."""
        self._journal_rows += rows

    def store(self, batch_id: int, rows: list[Any], table_rows: int, snapshot: Callable[[], dict[str, Any]]) -> None:
        """Journal batch ``batch_id``'s ``rows`` (JSON-friendly); with as many journalled as the table holds (``table_rows``), write ``snapshot()`` instead."""
        if self._journal_rows + len(rows) >= table_rows:
            self.write(snapshot())
            self.journal.unlink(missing_ok=True)
            self._journal_rows = 0
            return
        with self.journal.open("a") as journal:
            journal.write(json.dumps({"batch_id": batch_id, "rows": rows}, default=str) + "\n")  # a value of a type not foreseen is kept as text, never fails the batch
        self._journal_rows += len(rows)

    def write(self, record: dict[str, Any]) -> None:
        """Write the snapshot ``record`` atomically: a reader sees the old file or the new one."""
        partial = self.path.with_name(f".{self.path.name}.partial")
        partial.write_text(json.dumps(record, default=str))
        os.replace(partial, self.path)
