"""What a dataset holds, as Spark reads it: the schema step before a user's data is run.

:func:`read_dataset` reads a dataset's files with Spark's batch reader of
their format (CSV with a header, every column as text, parsed by role as the
query does; JSON lines with inferred types; Parquet with its own), and a
query on the dataset streams them with the same schema;
:func:`preview` summarises it for a :class:`~streaming.engine.config.ColumnMapping`:
the first rows, each column's type and empty values, the row count, the
event-time range and how many values of each mapped time or number column do
not parse. Every figure comes from Spark, with the expressions the query
uses (:func:`~streaming.engine.feeds.time_column`), so what the preview
counts as unparsable is what the query will.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .columns import ColumnMapping
from .datasets import FileFormat
from .errors import ConfigError, first_line
from .times import column_kind, quoted, time_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["CORRUPT_COLUMN", "ColumnSummary", "Preview", "dataset_schema", "preview", "read_dataset", "stream_schema"]

CORRUPT_COLUMN = "_corrupt_record"
"""Spark's column for JSON lines it could not parse (dropped from the preview's columns, counted as malformed rows)."""


def read_dataset(spark: SparkSession, files: Sequence[Path], fmt: FileFormat, schema: StructType | None = None) -> DataFrame:
    """The rows of ``files`` (one format) as a batch DataFrame, with ``schema`` when given; :class:`ConfigError` naming the first file when Spark cannot read them."""
    if not files:
        raise ConfigError("dataset", "", "holds no files")
    paths = [str(path) for path in files]
    reader = spark.read if schema is None else spark.read.schema(schema)
    try:
        if fmt == "csv":
            return reader.csv(paths, header=True, mode="PERMISSIVE")
        if fmt == "json":
            return reader.json(paths, mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT_COLUMN)
        return reader.parquet(*paths)
    except Exception as err:  # noqa: BLE001 - Spark's analysis errors have no common public base across local and Connect
        raise ConfigError("dataset", files[0].parent.name, f"cannot be read as {fmt}: {first_line(err)}") from None


def dataset_schema(frame: DataFrame) -> dict[str, str]:
    """Column name → Spark type name (``simpleString``), without Spark's corrupt-record column."""
    return {column.name: column.dataType.simpleString() for column in frame.schema.fields if column.name != CORRUPT_COLUMN}


def stream_schema(frame: DataFrame) -> StructType:
    """The schema a stream of the dataset's files is read with: ``frame``'s, without Spark's corrupt-record column."""
    from pyspark.sql.types import StructType

    return StructType([column for column in frame.schema.fields if column.name != CORRUPT_COLUMN])


@dataclass(frozen=True)
class ColumnSummary:
    """One column: its Spark type, its role in the mapping (or ``""``), its empty values and, for a time or number role, the values that do not parse."""

    name: str
    data_type: str
    role: str
    nulls: int
    unparsable: int | None


@dataclass(frozen=True)
class Preview:
    """The schema step's view of a dataset under one mapping; times are UTC (naive timestamps)."""

    rows: int
    malformed_rows: int
    columns: tuple[ColumnSummary, ...]
    first_rows: pd.DataFrame
    earliest: pd.Timestamp | None
    latest: pd.Timestamp | None
    keys: int | None

    @property
    def event_times_unparsable(self) -> int:
        return next((column.unparsable or 0 for column in self.columns if "event_time" in column.role.split(", ")), 0)


def preview(spark: SparkSession, files: Sequence[Path], fmt: FileFormat, mapping: ColumnMapping, first: int = 20) -> Preview:
    """Summarise ``files`` for ``mapping`` in one Spark job (see the module docstring); :class:`ConfigError` when the mapping does not fit."""
    from pyspark.sql import functions as F

    frame = read_dataset(spark, files, fmt)
    schema = dataset_schema(frame)
    mapping.check_columns(schema)
    roles: dict[str, str] = {}
    for role, name in mapping.roles().items():
        roles[name] = f"{roles[name]}, {role}" if name in roles else role
    parsed: dict[str, Column] = {mapping.event_time: time_column(mapping.event_time, mapping.time_format, schema[mapping.event_time], "columns.time_format")}
    if mapping.arrival is not None:
        parsed[mapping.arrival] = time_column(mapping.arrival, mapping.arrival_format, schema[mapping.arrival], "columns.arrival_format")
    if mapping.value is not None and column_kind(schema[mapping.value]) == "text":
        parsed[mapping.value] = F.col(quoted(mapping.value)).try_cast("double")
    event_time = parsed[mapping.event_time]
    measures = [F.count(F.lit(1)).alias("rows")]
    measures.append(F.count(F.col(quoted(CORRUPT_COLUMN))).alias("malformed") if CORRUPT_COLUMN in frame.columns else F.lit(0).alias("malformed"))
    for index, name in enumerate(schema):
        raw = F.col(quoted(name))
        measures.append(F.count_if(raw.isNull()).alias(f"n{index}"))
        if name in parsed:
            measures.append(F.count_if(raw.isNotNull() & parsed[name].isNull()).alias(f"u{index}"))
    measures += [F.unix_micros(F.min(event_time)).alias("earliest"), F.unix_micros(F.max(event_time)).alias("latest")]
    if mapping.key is not None:
        key = F.nullif(F.trim(F.col(quoted(mapping.key)).cast("string")), F.lit(""))  # as the query reads it
        measures.append(F.count_distinct(key).alias("keys"))
    try:
        totals = frame.agg(*measures).collect()[0].asDict()
        head = frame.drop(CORRUPT_COLUMN).limit(first).toPandas()
    except Exception as err:  # noqa: BLE001 - a bad pattern or unreadable file surfaces only when Spark runs
        raise ConfigError("dataset", files[0].parent.name, f"cannot be previewed: {first_line(err)}") from None
    columns = tuple(
        ColumnSummary(name, data_type, roles.get(name, ""), int(totals[f"n{index}"]), int(totals[f"u{index}"]) if name in parsed else None)
        for index, (name, data_type) in enumerate(schema.items())
    )
    return Preview(
        rows=int(totals["rows"]),
        malformed_rows=int(totals["malformed"]),
        columns=columns,
        first_rows=head,
        earliest=None if totals["earliest"] is None else pd.Timestamp(totals["earliest"], unit="us"),
        latest=None if totals["latest"] is None else pd.Timestamp(totals["latest"], unit="us"),
        keys=None if mapping.key is None else int(totals["keys"]),
    )


