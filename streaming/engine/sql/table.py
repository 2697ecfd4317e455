"""The result table of a user's SQL, folded from each micro-batch's output rows as its output mode defines it.

Any columns: append adds the batch's rows, complete replaces the table, update
replaces the row of each grouping (the columns :attr:`~.plan.PlanFacts.grouping`
names, read from the analysed plan; a query without an aggregation appends).
Rows are kept as Spark gives them (a struct, such as a ``window``, as a
nested row); :meth:`SqlTable.frame` shows a struct as one column per field
(``w.start``, ``w.end``) and :meth:`SqlTable.records` gives JSON objects,
timestamps as ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in UTC. A kept query's table
(:meth:`SqlTable.keep`) is stored as those JSON values, a snapshot and a
journal (:mod:`~streaming.engine.output.kept_table`), and read back by the columns'
Spark types (:func:`python_value`), so a resumed run goes on with the rows it had.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import decimal
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..builders import fold_rows, json_value
from ..errors import ConfigError
from ..output.kept_table import TableFile
from .plan import PlanFacts

if TYPE_CHECKING:
    from pyspark.sql.types import DataType, StructType

__all__ = ["SqlTable", "json_value", "python_value"]


class SqlTable:
    """Thread-safe fold of a SQL query's micro-batch output (see the module docstring); a batch id seen before is ignored, except in complete mode."""

    def __init__(
        self, output_mode: str, schema: StructType, facts: PlanFacts | Sequence[str] = (), max_rows: int | None = None, *, record: bool = False,
    ) -> None:
        if max_rows is not None and max_rows < 1:
            raise ConfigError("max_rows", max_rows, "must be at least 1")
        self.output_mode = output_mode
        self.schema = schema
        self.facts = facts if isinstance(facts, PlanFacts) else None
        """What the query's analysed plan says (its watermarks, grouping, stateful operators), when the table was made from it."""
        grouping = facts.grouping if isinstance(facts, PlanFacts) else tuple(facts)
        self.columns = [item.name for item in schema.fields]
        missing = [name for name in grouping if name not in self.columns]
        if missing:
            raise ConfigError("grouping", missing, f"are not columns of the result ({', '.join(self.columns)})")
        self.grouping = tuple(grouping)
        self._keys = [self.columns.index(name) for name in grouping] if output_mode == "update" else []
        self._one_row = output_mode == "update" and self.facts is not None and self.facts.global_aggregate
        """A global aggregate in update mode: each batch's row replaces the one row of the result table."""
        self.max_rows = max_rows
        self.evicted_rows = 0
        self.last_batch_id = -1
        self.batches_applied = 0
        self.first_batch = threading.Event()
        self.outputs: dict[int, list[tuple]] | None = {} if record else None
        self._rows: OrderedDict[Any, tuple] = OrderedDict()
        self._lock = threading.Lock()
        self._version = 0
        self._framed: tuple[int, pd.DataFrame] | None = None
        """The last frame made and the version it was made at: a page refreshing an unchanged table gets it again, not a new one."""
        self._stored: TableFile | None = None

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        """Fold one batch's output ``rows`` in; a kept table then stores the batch before returning (see :meth:`keep`)."""
        if self._fold(batch_id, rows) and self._stored is not None:
            self._stored.store(batch_id, [self._json_row(row) for row in rows], len(self), self._snapshot)

    def _fold(self, batch_id: int, rows: list[tuple]) -> bool:
        """Fold ``rows`` in; ``False`` for a batch folded already (not in complete mode)."""
        with self._lock:
            if batch_id <= self.last_batch_id and self.output_mode != "complete":
                return False
            self.last_batch_id = max(batch_id, self.last_batch_id)
            self.batches_applied += 1
            self._version += 1
            if self.outputs is not None:
                self.outputs[batch_id] = list(rows)
            fold_rows(self._rows, (tuple(row) for row in rows), self.output_mode, self._fold_key)
            if self.max_rows is not None:
                while len(self._rows) > self.max_rows:
                    self._rows.popitem(last=False)
                    self.evicted_rows += 1
            self.first_batch.set()
            return True

    def _key_of(self, values: tuple) -> Any:
        """The row's grouping, as the fold compares it (update mode only: :func:`~streaming.engine.builders.fold_rows`)."""
        return tuple(_hashable(values[index]) for index in self._keys)

    @property
    def _fold_key(self) -> Any:
        return self._key_of if self._keys or self._one_row else None

    # ------------------------------------------------------------------ kept on disk

    def keep(self, path: Path) -> None:
        """Take in the table kept at ``path`` by earlier runs of the query (:meth:`load`), then store every batch :meth:`apply` folds in,
        as a snapshot and a journal (:class:`~streaming.engine.output.kept_table.TableFile`); values as JSON, read back by their Spark types."""
        stored = TableFile(path)
        stored.resume()
        self._read(stored)
        self._stored = stored

    def load(self, path: Path) -> None:
        """Go on from the table stored at ``path``; :class:`ConfigError` when it was stored for another output mode or other columns."""
        self._read(TableFile(path))

    def _read(self, stored: TableFile) -> None:
        snapshot, journal = stored.read()
        if snapshot is not None:
            for name, here in (("output_mode", self.output_mode), ("schema", self.schema.json())):
                if snapshot.get(name) != here:
                    raise ConfigError(name, here if name == "output_mode" else ", ".join(self.columns), f"differs from the stored result table's (in {stored.path})")
            with self._lock:
                self.last_batch_id = int(snapshot["last_batch_id"])
                self.batches_applied = int(snapshot["batches_applied"])
                self.evicted_rows = int(snapshot["evicted_rows"])
                fold_rows(self._rows, [self._python_row(row) for row in snapshot["rows"]], self.output_mode, self._fold_key)
                self._version += 1
                if self.batches_applied:
                    self.first_batch.set()
        for entry in journal:
            rows = [self._python_row(row) for row in entry["rows"]]
            if self._fold(int(entry["batch_id"]), rows):
                stored.counted(len(rows))

    def _snapshot(self) -> dict[str, Any]:
        with self._lock:
            rows = list(self._rows.values())
            record = {
                "output_mode": self.output_mode, "schema": self.schema.json(), "grouping": [self.columns[index] for index in self._keys],
                "last_batch_id": self.last_batch_id,
                "batches_applied": self.batches_applied, "evicted_rows": self.evicted_rows,
            }
        return {**record, "rows": [self._json_row(row) for row in rows]}

    def _json_row(self, row: Sequence[Any]) -> list[Any]:
        return [json_value(value, item.dataType, exact=True) for value, item in zip(row, self.schema.fields)]

    def _python_row(self, values: Sequence[Any]) -> tuple:
        return tuple(python_value(value, item.dataType) for value, item in zip(values, self.schema.fields))

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def rows(self) -> list[tuple]:
        """The table's rows as Spark gave them, oldest change first."""
        with self._lock:
            return list(self._rows.values())

    def records(self) -> list[dict[str, Any]]:
        """The table as JSON objects (column → value; a struct as a nested object; timestamps in UTC text), sorted by their JSON text."""
        import json

        return sorted(self.as_records(self.rows()), key=lambda record: json.dumps(record, sort_keys=True, default=str))

    def as_records(self, rows: Sequence[tuple]) -> list[dict[str, Any]]:
        """Rows of this table's columns as JSON objects, in their order (see :meth:`records`)."""
        return [{name: json_value(value, item.dataType) for name, value, item in zip(self.columns, row, self.schema.fields)} for row in rows]

    def frame(self) -> pd.DataFrame:
        """The table for a page: a struct column as one column per field (``w.start``), timestamps UTC-naive, sorted by every column.

        Made once per change and shared by the calls until the next batch (as :meth:`ResultTable.frame <streaming.engine.output.results.ResultTable.frame>`
        is): treat it as read-only.
        """
        with self._lock:
            version, framed = self._version, self._framed
        if framed is not None and framed[0] == version:
            return framed[1]
        table = self._flat_frame()
        with self._lock:
            if self._framed is None or self._framed[0] < version:
                self._framed = (version, table)
        return table

    def _flat_frame(self) -> pd.DataFrame:
        return self._flat(self.rows())

    def _flat(self, rows: Sequence[tuple], changes: Sequence[str] | None = None) -> pd.DataFrame:
        """``rows`` as :meth:`frame` shows them, sorted by every column; with ``changes`` (one per row) a last column ``change``."""
        flat = [_flatten(name, item.dataType) for name, item in zip(self.columns, self.schema.fields)]
        names = [name for group in flat for name in group]
        data = []
        for row in rows:
            values: list[Any] = []
            for value, item in zip(row, self.schema.fields):
                values.extend(_flat_values(value, item.dataType))
            data.append(values)
        table = pd.DataFrame(data, columns=names)
        if changes is not None:
            table["change"] = list(changes)
        if len(table):
            with contextlib.suppress(TypeError):  # columns of values that do not order (maps, arrays)
                table = table.sort_values(names, kind="stable").reset_index(drop=True)
        return table

    def after(self, batch_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(emitted, result)``: what batch ``batch_id`` handed the sink, and the result table once it was folded in, as :meth:`frame`
        shows them, from the outputs this table recorded (``record=True``).

        A last column ``change`` says what the batch did to each row, as the guide's figures colour them: ``emitted`` in append mode;
        otherwise ``added``, ``updated`` or ``unchanged`` by the row of the same grouping (the plan's, in any output mode; a query that does not
        aggregate: the same values) before the batch;
        ``""`` for a result row the batch left as it was.
        """
        if self.outputs is None:
            raise ValueError("this result table records no batch's output: make it with record=True")
        with self._lock:
            done = sorted((batch, list(rows)) for batch, rows in self.outputs.items() if batch <= batch_id)
        table = SqlTable(self.output_mode, self.schema, self.facts if self.facts is not None else self.grouping)
        emitted: list[tuple] = []
        for batch, rows in done:
            if batch == batch_id:
                emitted = rows
            else:
                table._fold(batch, rows)
        aggregates = bool(self.grouping) or (self.facts is not None and self.facts.aggregates)  # a global aggregate: one row, grouped by nothing
        positions = [self.columns.index(name) for name in self.grouping] if aggregates else list(range(len(self.columns)))

        def slot(row: tuple) -> tuple:
            return tuple(_hashable(row[index]) for index in positions)

        before = {slot(row): _hashable(tuple(row)) for row in table.rows()}
        if self.output_mode == "append":
            changes = ["emitted"] * len(emitted)
        else:
            changes = ["added" if slot(row) not in before else "unchanged" if before[slot(row)] == _hashable(tuple(row)) else "updated" for row in emitted]
        table._fold(batch_id, emitted)
        result = table.rows()
        if self.output_mode == "append":
            marks = [""] * (len(result) - len(emitted)) + ["emitted"] * len(emitted)
        else:
            touched = {slot(row): change for row, change in zip(emitted, changes)}
            marks = [touched.get(slot(row), "") for row in result]
        return self._flat(emitted, changes), self._flat(result, marks)


def _hashable(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, dict):
        return tuple(sorted((key, _hashable(item)) for key, item in value.items()))
    return value


def _utc(value: dt.datetime) -> dt.datetime:
    """A timestamp PySpark collected (naive, in this process's local time) as naive UTC."""
    return value.astimezone(dt.UTC).replace(tzinfo=None)


def python_value(value: Any, data_type: DataType) -> Any:
    """The value :func:`json_value` gave with ``exact`` back as PySpark collects it: a struct a ``Row``, a timestamp a naive datetime in this
    process's local time (a ``TIMESTAMP_NTZ`` as written), a date a ``date``, a decimal a ``Decimal``, an interval a ``timedelta``, binary
    ``bytes``, a map's keys of their own type."""
    from pyspark.sql import Row
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        BooleanType,
        DateType,
        DayTimeIntervalType,
        DecimalType,
        FractionalType,
        IntegralType,
        MapType,
        StructType,
        TimestampNTZType,
        TimestampType,
    )

    if value is None:
        return None
    if isinstance(data_type, StructType):
        return Row(**{item.name: python_value(value.get(item.name), item.dataType) for item in data_type.fields})
    if isinstance(data_type, ArrayType):
        return [python_value(item, data_type.elementType) for item in value]
    if isinstance(data_type, MapType):
        key_type = data_type.keyType
        keys = (
            int if isinstance(key_type, IntegralType) else float if isinstance(key_type, FractionalType) and not isinstance(key_type, DecimalType)
            else (lambda text: text == "True") if isinstance(key_type, BooleanType) else (lambda text: python_value(text, key_type))
        )
        return {keys(key): python_value(item, data_type.valueType) for key, item in value.items()}
    if isinstance(data_type, TimestampNTZType):
        return dt.datetime.fromisoformat(value)
    if isinstance(data_type, TimestampType):
        return dt.datetime.fromisoformat(value).replace(tzinfo=dt.UTC).astimezone().replace(tzinfo=None)
    if isinstance(data_type, DateType):
        return dt.date.fromisoformat(value)
    if isinstance(data_type, DayTimeIntervalType):
        return dt.timedelta(microseconds=int(value))
    if isinstance(data_type, DecimalType):
        return decimal.Decimal(str(value))
    if isinstance(data_type, BinaryType):
        return bytes.fromhex(value)
    return value


def _flatten(name: str, data_type: DataType) -> list[str]:
    from pyspark.sql.types import StructType

    if isinstance(data_type, StructType):
        return [column for item in data_type.fields for column in _flatten(f"{name}.{item.name}", item.dataType)]
    return [name]


def _flat_values(value: Any, data_type: DataType) -> list[Any]:
    from pyspark.sql.types import StructType, TimestampNTZType

    if isinstance(data_type, StructType):
        parts = value if value is not None else [None] * len(data_type.fields)
        return [flat for item, part in zip(data_type.fields, parts) for flat in _flat_values(part, item.dataType)]
    if isinstance(value, dt.datetime) and not isinstance(data_type, TimestampNTZType):
        return [_utc(value)]
    if isinstance(value, decimal.Decimal):
        return [float(value)]
    return [value]
