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
Spark with the expressions a query uses (:func:`~streaming.engine.data.times.time_column`),
one file at a time in row order; the rows themselves are copied as they are.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..durations import parse_duration
from ..errors import ConfigError
from .datasets import FileFormat
from .preview import read_dataset
from .times import time_column

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

    def __str__(self) -> str:
        return self.by if self.interval is None else f"{self.by} every {self.interval}"


def read_rows(path: Path, fmt: FileFormat) -> tuple[list[str] | None, list[Any]]:
    """``(header, rows)`` of one file, in file order, as Spark counts them: CSV rows (lists, blank lines skipped, header apart), JSON lines (text, blank lines skipped), Parquet rows (dicts)."""
    if fmt == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, [])
            return header, [row for row in reader if row]
    if fmt == "json":
        # Lines end at "\n" only, as Spark's reader has them: str.splitlines would also split at
        # characters JSON allows inside strings (U+2028, U+0085, ...).
        lines = (line.removesuffix("\r") for line in path.read_text(encoding="utf-8").split("\n"))
        return None, [line for line in lines if line.strip()]
    import pyarrow.parquet

    return None, pyarrow.parquet.read_table(path).to_pylist()


def write_rows(path: Path, fmt: FileFormat, header: Sequence[str] | None, rows: Sequence[Any], schema: Any = None) -> None:
    """Write ``rows`` (as :func:`read_rows` returns them) as one file of ``fmt``; ``schema`` is the Parquet schema."""
    if fmt == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header or [])
            writer.writerows(rows)
    elif fmt == "json":
        path.write_text("".join(f"{line}\n" for line in rows), encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet

        pyarrow.parquet.write_table(pa.Table.from_pylist(list(rows), schema=schema), path)


def interval_batches(times_us: Sequence[int | None], interval_us: int) -> list[list[int]]:
    """Row positions per batch: rows grouped by ``floor(time / interval)``, intervals ascending, rows in order; a ``None`` time joins the row before it."""
    return [positions for _, positions in interval_slots(times_us, interval_us)]


def interval_slots(times_us: Sequence[int | None], interval_us: int) -> list[tuple[int, list[int]]]:
    """``(interval number, row positions)`` of each batch of :func:`interval_batches`; an interval starts at ``number * interval_us``."""
    groups: dict[int, list[int]] = {}
    previous: int | None = None
    for position, micros in enumerate(times_us):
        slot = previous if micros is None else micros // interval_us
        if slot is None:
            slot = next((value // interval_us for value in times_us if value is not None), 0)
        groups.setdefault(slot, []).append(position)
        previous = slot
    return [(slot, groups[slot]) for slot in sorted(groups)]


def arrival_pauses(arrivals_us: Sequence[int], speed: float) -> list[float]:
    """Seconds to wait after each batch: the gap to the next batch's arrival interval ÷ ``speed`` (0 after the last)."""
    return [(later - earlier) / 1e6 / speed for earlier, later in pairwise(arrivals_us)] + ([0.0] if arrivals_us else [])


def arrival_micros(
    spark: SparkSession, path: Path, fmt: FileFormat, column: str, time_format: str, schema: dict[str, str], struct: Any
) -> list[int | None]:
    """The arrival time of each row of ``path`` in row order, read with the whole dataset's schema ``struct``."""
    from pyspark.sql import functions as F


    expression = time_column(column, time_format, schema[column], "columns.arrival_format")
    return [row[0] for row in read_dataset(spark, [path], fmt, struct).select(F.unix_micros(expression)).collect()]


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
    and each batch row's time: the column is read once per file of the dataset, never per batch."""
    if batching.by == "file":
        return BatchCut(list(files))
    header: list[str] | None = None
    rows: list[Any] = []
    times: list[int | None] = []
    parquet_schema = None
    column = batching.column
    for path in files:
        file_header, file_rows = read_rows(path, fmt)
        header = header if header is not None else file_header
        if fmt == "parquet" and parquet_schema is None:
            import pyarrow.parquet

            parquet_schema = pyarrow.parquet.read_schema(path)
        if column is not None:
            if spark is None or schema is None:
                raise ConfigError("batch_by", column, "needs the Spark session and the dataset's schema to read arrival times")
            if column not in schema:
                raise ConfigError("batch_by", column, f"is not a column of the dataset (columns: {', '.join(schema)})")
            file_times = arrival_micros(spark, path, fmt, column, time_format, schema, struct)
            if len(file_times) != len(file_rows):
                raise ConfigError("batch_by", column, f"cannot line rows up with arrival times in {path.name} ({len(file_rows)} rows, Spark read {len(file_times)})")
            times.extend(file_times)
        rows.extend(file_rows)
    arrivals: list[int] | None = None
    if column is not None:
        interval_us = parse_duration(batching.interval or "0") * 1000
        slots = interval_slots(times, interval_us)
        groups, arrivals = [positions for _, positions in slots], [slot * interval_us for slot, _ in slots]
    else:
        size = batching.rows or 1
        groups = [list(range(start, min(start + size, len(rows)))) for start in range(0, len(rows), size)]
    folder.mkdir(parents=True, exist_ok=True)
    suffix = {"csv": ".csv", "json": ".jsonl", "parquet": ".parquet"}[fmt]
    written = []
    for index, positions in enumerate(groups):
        path = folder / f"batch-{index:06d}{suffix}"
        write_rows(path, fmt, header, [rows[position] for position in positions], parquet_schema)
        written.append(path)
    row_times = [[times[position] for position in positions] for positions in groups] if column is not None else None
    return BatchCut(written, arrivals, row_times)
