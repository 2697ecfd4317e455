"""What a dataset holds, as Spark reads it: the schema step before a user's data is run.

:func:`read_dataset` reads a dataset's files with Spark's batch reader of
their format (CSV with a header, every column as text, parsed by role as the
query does; JSON lines with inferred types; Parquet with its own), and a
query on the dataset streams them with the same schema;
:func:`preview` summarises it for a :class:`~streaming.engine.query.config.ColumnMapping`:
the first rows, each column's type and empty values, the row count, the
event-time range and how many values of each mapped time or number column do
not parse. Every figure comes from Spark, with the expressions the query
uses (:func:`~streaming.engine.data.times.time_column`), so what the preview
counts as unparsable is what the query will.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..builders import CORRUPT, read_files, view_batch
from ..errors import ConfigError, first_line
from .columns import ColumnMapping
from .datasets import FileFormat
from .times import column_kind, quoted, time_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "ColumnProfile", "ColumnSummary", "Preview", "column_profiles", "dataset_read", "dataset_schema", "guess_event_time", "preview", "read_dataset",
    "stream_schema", "time_range_warning",
]

TIME_NAMES = ("event_time", "timestamp", "ts", "time", "event_ts", "created_at", "datetime", "date")
"""Column names taken for the event time first (case-insensitive), in this order."""
TIME_WORDS = frozenset({"time", "timestamp", "ts", "date", "datetime", "at", "when", "dt"})
"""Words of a column name (split at ``_``, ``-``, spaces and case changes) that say it holds a time."""
EPOCH_RANGES: dict[str, tuple[float, float]] = {"epoch_s": (946_684_800, 4_102_444_800), "epoch_ms": (946_684_800_000, 4_102_444_800_000)}
"""Numbers taken for epoch seconds or milliseconds: from 2000-01-01 to 2100-01-01 UTC."""
PLAUSIBLE_YEARS = (1990, 10)
"""A mapped event time earlier than this year, or later than this many years from now, is called implausible."""


def read_dataset(spark: SparkSession, files: Sequence[Path], fmt: FileFormat, schema: StructType | None = None, *, infer: bool = False) -> DataFrame:
    """The rows of ``files`` (one format) as a batch DataFrame, with ``schema`` when given; :class:`ConfigError` naming the first file when Spark cannot read them.

    CSV columns are text unless ``infer`` (Spark's ``inferSchema``: one more pass over the files)."""
    with dataset_read(files, fmt):
        return read_files(spark, [str(path) for path in files], fmt, schema, infer)


@contextmanager
def dataset_read(files: Sequence[Path], fmt: FileFormat) -> Iterator[None]:
    """Around reading ``files`` with Spark: :class:`ConfigError` when there are none, or naming the dataset when Spark cannot read them as ``fmt``."""
    if not files:
        raise ConfigError("dataset", "", "holds no files")
    try:
        yield
    except Exception as err:  # noqa: BLE001 - Spark's analysis errors have no common public base across local and Connect
        raise ConfigError("dataset", files[0].parent.name, f"cannot be read as {fmt}: {first_line(err)}") from None


def dataset_schema(frame: DataFrame) -> dict[str, str]:
    """Column name → Spark type name (``simpleString``), without Spark's corrupt-record column."""
    return {column.name: column.dataType.simpleString() for column in frame.schema.fields if column.name != CORRUPT}


def stream_schema(frame: DataFrame) -> StructType:
    """The schema a stream of the dataset's files is read with: ``frame``'s, without Spark's corrupt-record column."""
    from pyspark.sql.types import StructType

    return StructType([column for column in frame.schema.fields if column.name != CORRUPT])


@dataclass(frozen=True)
class ColumnProfile:
    """What one column's values look like, for guessing which one holds the event time: its Spark type, values present,
    how many are numbers (and their least and greatest), and how many text values Spark's ``auto`` time format reads."""

    name: str
    data_type: str
    present: int
    numbers: int
    least: float | None
    greatest: float | None
    times: int

    @property
    def epoch_format(self) -> str | None:
        """``epoch_s`` or ``epoch_ms`` when every value present is a number in that unit's :data:`EPOCH_RANGES`; else ``None``."""
        if self.present == 0 or self.numbers < self.present or self.least is None or self.greatest is None:
            return None
        return next((name for name, (low, high) in EPOCH_RANGES.items() if low <= self.least and self.greatest <= high), None)

    @property
    def time_format(self) -> str | None:
        """How the column can be read as event times: ``auto`` (a timestamp or date, or text of which nine in ten values parse), an epoch unit, or ``None``."""
        kind = column_kind(self.data_type)
        if kind in ("timestamp", "date"):
            return "auto"
        if self.epoch_format is not None:
            return self.epoch_format
        return "auto" if kind == "text" and self.present and self.times >= 0.9 * self.present and self.numbers < self.present else None


def column_profiles(frame: DataFrame) -> dict[str, ColumnProfile]:
    """Every column's :class:`ColumnProfile`, in one Spark job over all rows."""
    from pyspark.sql import functions as F

    schema = dataset_schema(frame)
    measures = []
    for index, name in enumerate(schema):
        raw = F.col(quoted(name))
        number = raw.try_cast("double") if column_kind(schema[name]) in ("number", "text") else F.lit(None).cast("double")
        parsed = F.try_to_timestamp(F.trim(raw)) if column_kind(schema[name]) == "text" else F.lit(None)
        measures += [
            F.count(raw).alias(f"p{index}"), F.count(number).alias(f"n{index}"), F.min(number).alias(f"l{index}"), F.max(number).alias(f"g{index}"),
            F.count(parsed).alias(f"t{index}"),
        ]
    if not measures:
        return {}
    totals = frame.agg(*measures).collect()[0].asDict()
    return {
        name: ColumnProfile(name, data_type, int(totals[f"p{i}"]), int(totals[f"n{i}"]), totals[f"l{i}"], totals[f"g{i}"], int(totals[f"t{i}"]))
        for i, (name, data_type) in enumerate(schema.items())
    }


def _words(name: str) -> list[str]:
    """The words of a column name, in order, lower-cased: split at ``_``, ``-``, ``.``, spaces and case changes."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word.lower() for word in re.split(r"[\s_\-.]+", spaced) if word]


def _name_words(name: str) -> set[str]:
    return set(_words(name))


def time_named(names: Sequence[str]) -> str | None:
    """The name most likely to be an event time by its name alone: one of :data:`TIME_NAMES` (case-insensitive, in that order), else the
    first that ends in a time word (``impression_time``, ``createdAt``; not ``at_risk``); ``None`` when none does."""
    lowered = {name.lower(): name for name in names}
    named = next((lowered[wanted] for wanted in TIME_NAMES if wanted in lowered), None)
    return named if named is not None else next((name for name in names if _last_word(name) in TIME_WORDS), None)


def _last_word(name: str) -> str:
    words = _words(name)
    return words[-1] if words else ""


def guess_event_time(profiles: Mapping[str, ColumnProfile]) -> tuple[str, str] | None:
    """``(column, time format)`` most likely to hold the event time, or ``None`` when no column reads as times.

    Only a column whose values read as times is taken (:attr:`ColumnProfile.time_format`: a number is taken
    only as epoch seconds or milliseconds between 2000 and 2100, so a delay or an amount is not); among
    those, first a name of :data:`TIME_NAMES`, then a timestamp or date type, then a name with a time word
    (``dep_time``, ``createdAt``), then the first in column order.
    """
    readable = [(name, profile.time_format) for name, profile in profiles.items() if profile.time_format is not None]
    if not readable:
        return None
    lowered = {name.lower(): (name, fmt) for name, fmt in readable}
    for wanted in TIME_NAMES:
        if wanted in lowered:
            return lowered[wanted]
    ranked = sorted(
        readable,
        key=lambda pair: (column_kind(profiles[pair[0]].data_type) not in ("timestamp", "date"), not _name_words(pair[0]) & TIME_WORDS),
    )
    return ranked[0]


def time_range_warning(earliest: pd.Timestamp | None, latest: pd.Timestamp | None, rows: int, now: pd.Timestamp) -> str | None:
    """Why a mapped event-time range looks wrong (a column that is not a time, or an epoch in the wrong unit), or ``None``.

    Implausible: times before :data:`PLAUSIBLE_YEARS`'s year or more than its years after ``now``, or
    100,000 rows or more within one second.
    """
    if earliest is None or latest is None:
        return None
    first_year, years_ahead = PLAUSIBLE_YEARS
    if earliest.year < first_year:
        return (
            f"the event times start on {earliest:%Y-%m-%d}: the column may not hold times, or holds epoch milliseconds read as seconds "
            "(or numbers that count something else)"
        )
    if latest.year > now.year + years_ahead:
        return f"the event times reach {latest:%Y-%m-%d}: the column may hold epoch milliseconds or microseconds read as seconds, or not hold times"
    if rows >= 100_000 and (latest - earliest) < pd.Timedelta(seconds=1):
        return f"{rows:,} rows happen within {(latest - earliest).total_seconds():g} s: the column may not hold event times"
    return None


@dataclass(frozen=True)
class ColumnSummary:
    """One column: its Spark type, its role in the mapping (or ``""``), its empty values and, for a time or number role, the values that do not parse."""

    name: str
    data_type: str
    role: str
    nulls: int
    unparsable: int | None
    view_type: str = ""
    """Its type as a user's SQL view reads it (:func:`~streaming.engine.builders.view_batch`: CSV numbers as numbers), which the page shows."""


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
        """Event-time values present that do not parse."""
        return next((column.unparsable or 0 for column in self.columns if "event_time" in column.role.split(", ")), 0)

    @property
    def event_times_empty(self) -> int:
        """Rows without an event-time value (null or, in CSV, an empty cell)."""
        return next((column.nulls for column in self.columns if "event_time" in column.role.split(", ")), 0)


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
    measures.append(F.count(F.col(quoted(CORRUPT))).alias("malformed") if CORRUPT in frame.columns else F.lit(0).alias("malformed"))
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
        typed = view_batch(spark, [str(path) for path in files], fmt, mapping.event_time, mapping.time_format)
        head = _first_rows(spark, files, fmt, typed.schema, first)
    except Exception as err:  # noqa: BLE001 - a bad pattern or unreadable file surfaces only when Spark runs
        raise ConfigError("dataset", files[0].parent.name, f"cannot be previewed: {first_line(err)}") from None
    view_types = {**dataset_schema(typed), mapping.event_time: "timestamp"}  # the view reads the mapped event time as a TIMESTAMP
    columns = tuple(
        ColumnSummary(
            name, data_type, roles.get(name, ""), int(totals[f"n{index}"]), int(totals[f"u{index}"]) if name in parsed else None, view_types.get(name, data_type),
        )
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


def _first_rows(spark: SparkSession, files: Sequence[Path], fmt: FileFormat, schema: StructType, first: int) -> pd.DataFrame:
    """The first ``first`` rows of ``files`` in their order, typed by ``schema``: one Spark read a file until there are enough. A read of
    them all at once gives the rows of whichever file Spark packs first (it packs the largest first), not of the first file."""
    frames: list[pd.DataFrame] = []
    wanted = first
    for path in files:
        if wanted <= 0:
            break
        frames.append(read_files(spark, [str(path)], fmt, schema).drop(CORRUPT).limit(wanted).toPandas())
        wanted -= len(frames[-1])
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

