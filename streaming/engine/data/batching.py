"""How a replayed dataset arrives: which rows form each micro-batch.

Three rules (:class:`Batching`):

- ``file``: each file is one micro-batch, in file-name order (the default);
- ``rows:N``: the rows of all files, in file order, cut every ``N`` rows;
- a column name: the rows whose time in that column (the arrival, or
  ingestion, time) falls in the same epoch-aligned interval of ``interval``
  form one micro-batch; intervals in ascending order, empty ones skipped,
  rows of one interval in file order. A row whose time does not parse goes
  with the row before it (the first interval when it comes first).

:func:`batch_files` writes the batches as files of the dataset's own format
(CSV with the first file's header, JSON lines, Parquet) for the replayer,
which hands them to Spark one file per micro-batch. Arrival times are read by
Spark with the expressions a query uses (:func:`~streaming.engine.builders.parse_time`),
one file at a time in row order; the rows themselves are copied as they are. The cut is the builder
:func:`~streaming.engine.builders.cut_files`: Show code's programs cut a dataset with the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..builders import arrival_pauses, cut_files, interval_slots, read_rows, row_arrivals, write_rows
from ..durations import parse_duration
from ..errors import ConfigError
from .datasets import FileFormat
from .times import check_time_fit

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Batching", "arrival_micros", "arrival_pauses", "batch_files", "cut_batches", "interval_batches", "interval_slots", "read_rows", "write_rows"]

_ROWS = re.compile(r"rows:(\d+)")


@dataclass(frozen=True)
class Batching:
    """One of the rules of the module docstring: ``by`` is ``file``, ``rows:N`` or a column; ``interval`` (a duration) goes with a column only."""

    by: str = "file"
    interval: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.by, str) or not self.by.strip():
            raise ConfigError("batch_by", self.by, "must be file, rows:N or a column name")
        if self.by == "file" or self.by.startswith("rows:"):
            if self.by.startswith("rows:"):
                match = _ROWS.fullmatch(self.by)
                if match is None or int(match.group(1)) < 1:
                    raise ConfigError("batch_by", self.by, "must be rows:N with N a whole number of at least 1, e.g. rows:500")
            if self.interval is not None:
                raise ConfigError("batch_interval", self.interval, f"applies only to batching by a column, not {self.by!r}")
            return
        if self.interval is None:
            raise ConfigError("batch_interval", None, f"is required to batch by column {self.by!r}: the length of each arrival interval")
        try:
            interval_ms = parse_duration(self.interval)
        except ConfigError as err:
            raise ConfigError("batch_interval", self.interval, err.reason) from None
        if interval_ms <= 0:
            raise ConfigError("batch_interval", self.interval, "must be longer than 0")

    @property
    def rows(self) -> int | None:
        """``N`` of ``rows:N``, else ``None``."""
        match = _ROWS.fullmatch(self.by)
        return int(match.group(1)) if match else None

    @property
    def column(self) -> str | None:
        """The arrival column when batching by one, else ``None``."""
        return None if self.by == "file" or self.rows is not None else self.by

    @property
    def interval_us(self) -> int:
        """The arrival interval in microseconds when batching by a column, else 0."""
        return parse_duration(self.interval or "0") * 1000

    def __str__(self) -> str:
        return self.by if self.interval is None else f"{self.by} every {self.interval}"


def interval_batches(times_us: Sequence[int | None], interval_us: int) -> list[list[int]]:
    """Row positions per batch: rows grouped by ``floor(time / interval)``, intervals ascending, rows in order; a ``None`` time joins the row before it."""
    return [positions for _, positions in interval_slots(list(times_us), interval_us)]


def arrival_micros(
    spark: SparkSession, path: Path, fmt: FileFormat, column: str, time_format: str, schema: dict[str, str], struct: Any
) -> list[int | None]:
    """The arrival time of each row of ``path`` in row order, read with the whole dataset's schema ``struct``; :class:`ConfigError` naming
    ``columns.arrival_format`` when ``time_format`` does not fit the column."""
    return row_arrivals(spark, path, fmt, struct, column, time_format, check_time_fit(time_format, schema[column], "columns.arrival_format"))


def batch_files(
    spark: SparkSession | None, files: Sequence[Path], fmt: FileFormat, batching: Batching, folder: Path, *,
    time_format: str = "auto", schema: dict[str, str] | None = None, struct: Any = None,
) -> list[Path]:
    """The files to replay, one per micro-batch: ``files`` themselves for ``file``, else new files in ``folder`` (see the module docstring).

    Batching by a column needs ``spark``, the dataset's ``schema`` (column → Spark type) and its
    Spark ``struct`` (each file is read with it); the column's times are read with ``time_format``.
    """
    return cut_batches(spark, files, fmt, batching, folder, time_format=time_format, schema=schema, struct=struct).files


@dataclass(frozen=True)
class BatchCut:
    """How a dataset was cut: the batch files, the start of each batch's arrival interval (batching by a column), and, when the column's times
    were read, each batch's rows' times in the batch's row order (epoch microseconds; ``None`` for a time that does not parse)."""

    files: list[Path]
    arrivals: list[int] | None = None
    row_times: list[list[int | None]] | None = None


def cut_batches(
    spark: SparkSession | None, files: Sequence[Path], fmt: FileFormat, batching: Batching, folder: Path, *,
    time_format: str = "auto", schema: dict[str, str] | None = None, struct: Any = None,
) -> BatchCut:
    """The files of :func:`batch_files` and, when batching by a column, the start of each batch's arrival interval (epoch microseconds)
    and each batch row's time: the column is read once per file of the dataset, never per batch (the cut itself is the builder
    :func:`~streaming.engine.builders.cut_files`, which Show code's programs copy)."""
    if batching.by == "file":
        return BatchCut(list(files))
    column, kind = batching.column, "text"
    if column is not None:
        if spark is None or schema is None:
            raise ConfigError("batch_by", column, "needs the Spark session and the dataset's schema to read arrival times")
        if column not in schema:
            raise ConfigError("batch_by", column, f"is not a column of the dataset (columns: {', '.join(schema)})")
        kind = check_time_fit(time_format, schema[column], "columns.arrival_format")
    try:
        written, arrivals, row_times = cut_files(
            spark, list(files), fmt, folder, rows_per_batch=batching.rows, arrival=column, time_format=time_format, kind=kind,
            interval_us=batching.interval_us, struct=struct,
        )
    except ValueError as err:
        raise ConfigError("batch_by", column, str(err)) from None
    return BatchCut(written, arrivals, row_times)
