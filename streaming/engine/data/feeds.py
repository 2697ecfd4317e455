"""The sample feeds: where they live, how their files are named and read.

A feed is a folder of CSV files replayed in file-name order, one file per
micro-batch (``batch-0000.csv``, ``batch-0001.csv``, ...), each with a header
naming at least ``event_time`` and ``key``. ``event_time`` is written as
``TIME_FORMAT`` and read as UTC. Spark reads the rows with
:func:`event_columns`; pandas with :func:`read_feed`, which parses exactly as
those expressions do (a test holds the two together), so the analysis sees the
events the query saw.

A user's dataset may write its times in other ways: see
:mod:`streaming.engine.data.times` and :mod:`streaming.engine.data.columns`.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .. import builders
from ..errors import ConfigError
from .columns import ColumnMapping
from .datasets import FORMATS, FileFormat, csv_header

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = [
    "EVENT_COLUMNS",
    "FEED_COLUMNS",
    "SAMPLE_FEEDS",
    "TIME_FORMAT",
    "TIME_PATTERN",
    "FeedEvents",
    "batch_file_name",
    "event_columns",
    "feed_events",
    "feed_files",
    "feed_header",
    "feed_names",
    "feed_schema",
    "parse_key",
    "parse_time",
    "read_feed",
]

SAMPLE_FEEDS = Path(__file__).resolve().parents[3] / "sample_feeds"
"""The feeds shipped with the product, for first steps and demos."""

TIME_PATTERN = "yyyy-MM-dd HH:mm:ss"
"""How ``event_time`` is written in a feed, as a Spark datetime pattern."""
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
"""``TIME_PATTERN`` in ``strftime``/``strptime`` form."""

FEED_COLUMNS = ColumnMapping(event_time="event_time", time_format=TIME_PATTERN, key="key")
"""The sample feeds' columns: ``event_time`` written as ``yyyy-MM-dd HH:mm:ss`` (UTC) and ``key``."""

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
    """Names of the folders under ``root`` whose ``.csv`` files have the sample feeds' layout (``event_time`` and ``key``): the feeds a user may pick.

    Other folders of CSV files (the ad feeds a join replays) are left out.
    """
    names = []
    for folder in sorted(Path(root).iterdir()):
        files = feed_files(folder) if folder.is_dir() else []
        if files and set(REQUIRED_COLUMNS) <= set(csv_header(files[0])):
            names.append(folder.name)
    return names


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

    time = F.col(event_time) if isinstance(event_time, str) else event_time
    return [
        builders.parse_time(time, TIME_PATTERN, "text").alias("event_time"),
        builders.parse_key(F.col(key) if isinstance(key, str) else key).alias("key"),
    ]


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
