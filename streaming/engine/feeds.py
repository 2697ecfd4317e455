"""Feed data: where feeds live, how their files are named and read, and how event times are written.

A feed is a folder of CSV files replayed in file-name order, one file per
micro-batch (``batch-0000.csv``, ``batch-0001.csv``, ...), each with a header
naming at least ``event_time`` and ``key``. ``event_time`` is written as
``TIME_FORMAT`` and read as UTC. Spark reads the rows with
:func:`event_columns`; pandas with :func:`read_feed`, which parses exactly as
those expressions do (a test holds the two together), so the analysis sees the
events the query saw.

A user's dataset may write its times in other ways: :func:`time_column` reads
them with one of ``TIME_FORMATS`` or a Spark datetime pattern.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .datasets import FORMATS, FileFormat, csv_header
from .errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column

    from .config import ColumnMapping

__all__ = [
    "EVENT_COLUMNS",
    "NO_KEY",
    "SAMPLE_FEEDS",
    "TIME_FORMAT",
    "TIME_FORMATS",
    "TIME_PATTERN",
    "FeedEvents",
    "batch_file_name",
    "check_time_fit",
    "check_time_format",
    "column_kind",
    "csv_header",
    "dataset_columns",
    "event_columns",
    "feed_events",
    "feed_files",
    "feed_header",
    "feed_names",
    "feed_schema",
    "parse_key",
    "parse_time",
    "quoted",
    "read_feed",
    "time_column",
]

SAMPLE_FEEDS = Path(__file__).resolve().parents[2] / "sample_feeds"
"""The feeds shipped with the product, for first steps and demos."""

TIME_PATTERN = "yyyy-MM-dd HH:mm:ss"
"""How ``event_time`` is written in a feed, as a Spark datetime pattern."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""``TIME_PATTERN`` in ``strftime``/``strptime`` form."""

TIME_FORMATS = ("auto", "epoch_s", "epoch_ms")
"""The named time formats; any other value is a Spark datetime pattern (:func:`check_time_format`)."""

# Spark's datetime pattern letters that parse; the week-based ones (Y, w, W, u, e, c) are refused by Spark 3+.
_PATTERN_LETTERS = frozenset("GyDMLdQqEFahKkHmsSVzOXxZ")

EPOCH_SECONDS_LIMIT = 253_402_300_800
"""Epoch seconds of 10000-01-01: a time at or beyond it (either side of 1970) does not parse."""

NO_KEY = "all"
"""The key of every row when a dataset is grouped by no column (one global group per window)."""

REQUIRED_COLUMNS = ("event_time", "key")
EVENT_COLUMNS = ["event_id", "file_index", "row", "event_time", "key"]


def batch_file_name(batch: int) -> str:
    """The file name of batch ``batch``; names sort in batch order."""
    return f"batch-{batch:04d}.csv"


def feed_files(folder: Path, fmt: FileFormat = "csv") -> list[Path]:
    """The feed's files of format ``fmt`` in replay order (file-name order); hidden files are left out."""
    return sorted(
        path for path in Path(folder).iterdir()
        if path.is_file() and not path.name.startswith(".") and FORMATS.get(path.suffix.lower()) == fmt
    )


def feed_names(root: Path = SAMPLE_FEEDS) -> list[str]:
    """Names of the folders under ``root`` that hold ``.csv`` files: the feeds a user may pick."""
    return sorted(folder.name for folder in Path(root).iterdir() if folder.is_dir() and any(folder.glob("*.csv")))


def feed_header(folder: Path) -> list[str]:
    """Column names of the feed, read from its first file; :class:`ConfigError` unless they include ``event_time`` and ``key``."""
    files = feed_files(folder)
    if not files:
        raise ConfigError("source.path", str(folder), "holds no .csv files")
    header = csv_header(files[0])
    missing = sorted(set(REQUIRED_COLUMNS) - set(header))
    if missing:
        raise ConfigError("source.path", str(folder), f"has header {header}, which lacks {missing}")
    return header


def feed_schema(folder: Path) -> str:
    """The feed's columns as a Spark schema, every column a string (parsed by :func:`event_columns`)."""
    return ", ".join(f"`{name}` string" for name in feed_header(folder))


def event_columns(event_time: Column | str, key: Column | str) -> list[Column]:
    """``event_time`` (null when it does not parse as ``TIME_PATTERN``) and ``key`` (null when empty) from raw text columns."""
    from pyspark.sql import functions as F

    return [
        F.try_to_timestamp(F.trim(event_time), F.lit(TIME_PATTERN)).alias("event_time"),
        F.nullif(F.trim(key), F.lit("")).alias("key"),
    ]


def check_time_format(value: object, field_name: str = "time_format") -> str:
    """``value`` when it is ``auto``, ``epoch_s``, ``epoch_ms`` or a Spark datetime pattern; :class:`ConfigError` otherwise.

    A pattern is checked letter by letter outside its quoted text (``'T'``):
    every letter must be one Spark parses with. Letter counts (``QQQQQ``) are
    left to Spark, whose refusal the caller reports.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(field_name, value, "must be auto, epoch_s, epoch_ms or a Spark datetime pattern such as yyyy-MM-dd HH:mm:ss")
    if value in TIME_FORMATS:
        return value
    quoted, letters = False, 0
    for char in value:
        if char == "'":
            quoted = not quoted
        elif not quoted and char.isalpha():
            if char not in _PATTERN_LETTERS:
                raise ConfigError(
                    field_name, value,
                    f"uses {char!r}, which is not a Spark datetime pattern letter for parsing (letters: {''.join(sorted(_PATTERN_LETTERS))})",
                )
            letters += 1
    if quoted:
        raise ConfigError(field_name, value, "has an unclosed quote (')")
    if not letters:
        raise ConfigError(field_name, value, "has no pattern letters; e.g. yyyy-MM-dd HH:mm:ss")
    return value


def column_kind(data_type: str) -> str:
    """``timestamp``, ``date``, ``number``, ``text`` or ``other`` for a Spark type name (``DataType.simpleString()``)."""
    if data_type.startswith("timestamp"):
        return "timestamp"
    if data_type == "date":
        return data_type
    if data_type in ("tinyint", "smallint", "int", "bigint", "float", "double") or data_type.startswith("decimal"):
        return "number"
    return "text" if data_type == "string" else "other"


def check_time_fit(time_format: object, data_type: str, field_name: str = "time_format") -> str:
    """The :func:`column_kind` of ``data_type`` when ``time_format`` can read times from it (see :func:`time_column`); :class:`ConfigError` otherwise."""
    check_time_format(time_format, field_name)
    kind = column_kind(data_type)
    if kind in ("timestamp", "date") and time_format != "auto":
        raise ConfigError(field_name, time_format, f"does not apply to a {data_type} column, which already holds times; use auto")
    if kind == "other":
        raise ConfigError(field_name, time_format, f"cannot read a time from a column of type {data_type}")
    if kind == "number" and time_format == "auto":
        raise ConfigError(field_name, "auto", f"cannot tell seconds from milliseconds in a {data_type} column; choose epoch_s or epoch_ms")
    return kind


def quoted(name: str) -> str:
    """``name`` as a Spark column reference: back-quoted, so dots and spaces in a user's column name are part of the name."""
    return "`" + name.replace("`", "``") + "`"


def time_column(column: Column | str, time_format: str, data_type: str = "string", field_name: str = "time_format") -> Column:
    """The event time held by ``column`` (of Spark type ``data_type``): a timestamp, null where a value does not parse.

    - ``auto``: a timestamp column as it is, a date at midnight; text as Spark
      casts it (``2026-03-02 14:01:01.196``, ISO-8601 ``2026-03-02T14:01:01.196Z``
      or with an offset; fractional seconds optional; without an offset, in the
      session time zone, UTC). Numbers are refused: seconds or milliseconds?
    - ``epoch_s`` / ``epoch_ms``: seconds (fractions kept) or milliseconds since
      1970-01-01 UTC, from numbers or text.
    - a pattern: text (surrounding spaces trimmed) parsed with it.

    :class:`ConfigError` (naming ``field_name``) when the format does not fit
    the column's type.
    """
    from pyspark.sql import functions as F

    kind = check_time_fit(time_format, data_type, field_name)
    value = F.col(quoted(column)) if isinstance(column, str) else column
    if kind in ("timestamp", "date"):
        return value.cast("timestamp")
    if time_format == "auto":
        return F.try_to_timestamp(F.trim(value))
    # Out-of-range epochs (nanoseconds read as milliseconds...) become null, not a failed query:
    # Spark's conversions raise on overflow under ANSI mode.
    number = value.try_cast("double")
    if time_format == "epoch_s":
        return F.when(F.abs(number) < F.lit(EPOCH_SECONDS_LIMIT), F.timestamp_seconds(number))
    if time_format == "epoch_ms":
        return F.when(F.abs(number) < F.lit(EPOCH_SECONDS_LIMIT * 1000), F.timestamp_millis(number.cast("bigint")))
    return F.try_to_timestamp(F.trim(value.cast("string")), F.lit(time_format))


def dataset_columns(mapping: ColumnMapping, schema: Mapping[str, str], no_key: str = NO_KEY) -> list[Column]:
    """``event_time``, ``key`` (and ``value`` and ``dedup_id`` when mapped, as they are) of a user's dataset, read as ``mapping`` says from columns of Spark types ``schema``.

    Like :func:`event_columns`: an event time that does not parse and an empty
    key are null (the query counts and leaves out such rows). Without a key
    column every row gets the key ``no_key``: one global group.
    """
    from pyspark.sql import functions as F

    mapping.check_columns(dict(schema))
    event_time = time_column(mapping.event_time, mapping.time_format, schema[mapping.event_time], "columns.time_format")
    key = F.lit(no_key) if mapping.key is None else F.nullif(F.trim(F.col(quoted(mapping.key)).cast("string")), F.lit(""))
    value = [] if mapping.value is None else [F.col(quoted(mapping.value)).alias("value")]
    dedup_id = [] if mapping.dedup_id is None else [F.col(quoted(mapping.dedup_id)).alias("dedup_id")]
    return [event_time.alias("event_time"), key.alias("key"), *value, *dedup_id]


# Spark's pattern letters are fixed width when parsing (``HH`` needs two digits);
# strptime is lenient, so the shape is checked first.
_TIME_SHAPE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


@dataclass(frozen=True)
class FeedEvents:
    """A feed read the way the streaming query reads it.

    ``events`` has one row per well-formed event (``EVENT_COLUMNS``);
    ``rows_per_file`` is the number of data rows of each file, malformed ones
    included (what Spark reports as ``numInputRows`` for the batch that reads
    it); ``malformed_per_file`` the malformed ones among them.
    """

    events: pd.DataFrame
    rows_per_file: tuple[int, ...]
    malformed_per_file: tuple[int, ...]

    @property
    def malformed(self) -> int:
        return sum(self.malformed_per_file)


def parse_time(text: str | None) -> datetime | None:
    """Like ``try_to_timestamp(trim(text), 'yyyy-MM-dd HH:mm:ss')``: ``None`` when it does not parse."""
    if text is None:
        return None
    value = text.strip(" ")  # Spark's trim removes spaces only
    if not _TIME_SHAPE.fullmatch(value):
        return None
    try:
        return datetime.strptime(value, TIME_FORMAT)
    except ValueError:
        return None


def parse_key(text: str | None) -> str | None:
    """Like ``nullif(trim(text), '')``."""
    if text is None:
        return None
    value = text.strip(" ")
    return value or None


def _empty_events() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "event_id": pd.Series(dtype="int64"),
            "file_index": pd.Series(dtype="int64"),
            "row": pd.Series(dtype="int64"),
            "event_time": pd.Series(dtype="datetime64[ns]"),
            "key": pd.Series(dtype="object"),
        }
    )


def read_feed(feed_dir: Path) -> FeedEvents:
    """Read every file of ``feed_dir`` in replay order, parsing rows like the streaming query.

    Columns are taken by position from the first file's header (Spark applies
    the schema positionally to every file); each file's first line is its
    header; blank lines are skipped. A row whose trimmed ``event_time`` does not
    parse as ``%Y-%m-%d %H:%M:%S`` or whose trimmed ``key`` is empty is
    malformed and left out.
    """
    folder = Path(feed_dir)
    header = feed_header(folder)
    time_at, key_at = header.index("event_time"), header.index("key")
    records: list[tuple[int, int, datetime, str]] = []
    rows_per_file: list[int] = []
    malformed_per_file: list[int] = []
    for file_index, path in enumerate(feed_files(folder)):
        rows = malformed = 0
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            next(reader, None)
            for fields in reader:
                if not fields:
                    continue
                event_time = parse_time(fields[time_at] if time_at < len(fields) else None)
                key = parse_key(fields[key_at] if key_at < len(fields) else None)
                if event_time is None or key is None:
                    malformed += 1
                else:
                    records.append((file_index, rows, event_time, key))
                rows += 1
        rows_per_file.append(rows)
        malformed_per_file.append(malformed)
    if records:
        events = pd.DataFrame(records, columns=["file_index", "row", "event_time", "key"])
        events.insert(0, "event_id", np.arange(len(events), dtype="int64"))
        events = events.astype({"file_index": "int64", "row": "int64", "event_time": "datetime64[ns]", "key": "object"})
    else:
        events = _empty_events()
    return FeedEvents(events[EVENT_COLUMNS], tuple(rows_per_file), tuple(malformed_per_file))


def feed_events(feed_dir: Path) -> pd.DataFrame:
    """One row per well-formed event of ``feed_dir``: ``event_id, file_index, row, event_time, key``.

    ``event_time`` is a UTC-naive timestamp; ``row`` is the data row's position
    in its file (malformed rows included). The malformed count is in
    ``.attrs["malformed"]`` and the data rows per file in
    ``.attrs["rows_per_file"]``; :func:`read_feed` returns both as fields.
    """
    feed = read_feed(feed_dir)
    events = feed.events
    events.attrs["malformed"] = feed.malformed
    events.attrs["rows_per_file"] = list(feed.rows_per_file)
    return events
