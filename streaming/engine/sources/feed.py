"""A feed replayed: a folder of files (or one file) handed to Spark's file source one micro-batch at a time.

The sample feeds' layout (CSV with ``event_time`` and ``key``, one file per
micro-batch) is read here; any other mapping, format or batching is a user's
dataset, read by :mod:`.dataset`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal, get_args

from ..builders import file_stream, read_files
from ..data.batching import Batching
from ..data.columns import ColumnMapping
from ..data.datasets import FORMATS, FileFormat, csv_header, require_same_columns
from ..data.feeds import FEED_COLUMNS, event_columns, feed_files, feed_header, feed_schema
from ..errors import ConfigError
from .base import Arrival, Feeder, StreamSource
from .dataset import dataset_frame, dataset_rows
from .replayer import FeedReplayer, handed_over

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["FILE_FORMATS", "MAX_SPEED", "ONE_FILE_PER_BATCH", "FeedSource"]

FILE_FORMATS: tuple[str, ...] = get_args(FileFormat)
ONE_FILE_PER_BATCH = Batching()
MAX_SPEED = 1_000_000.0
"""The largest replay speed-up by arrival time."""


@dataclass(frozen=True)
class FeedSource(StreamSource):
    """Replay a feed: a folder of files (or one file), one file per micro-batch.

    ``file_format`` and ``columns`` say how the files are read; the defaults
    are the sample feeds' layout (:data:`FEED_COLUMNS`: CSV with ``event_time``
    written as ``yyyy-MM-dd HH:mm:ss`` and ``key``). ``batching`` says which
    rows form each micro-batch (:class:`~streaming.engine.data.batching.Batching`:
    one file, ``rows:N``, or an arrival column's intervals).

    Files are handed to Spark in file-name order, one every ``seconds_per_file``
    seconds. With 0 the feed is stepped by its caller: the replay runner hands
    over the next file once Spark is idle, and the available-now trigger gets
    every file at once; each file still becomes its own batch. With ``speed``
    (batching by an arrival column only) a paced replay follows the arrival
    times instead: the pause before each batch is the gap between its arrival
    interval and the one before, divided by ``speed`` (10: ten times faster
    than the data arrived); a stepped replay ignores it.
    """

    path: Path
    seconds_per_file: float = 2.0
    file_format: FileFormat = "csv"
    columns: ColumnMapping = FEED_COLUMNS
    batching: Batching = ONE_FILE_PER_BATCH
    speed: float | None = None
    kind: Literal["feed"] = field(default="feed", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.is_dir() and not self.path.is_file():
            raise ConfigError("source.path", str(self.path), "is not a folder or a file")
        if self.file_format not in FILE_FORMATS:
            raise ConfigError("source.file_format", self.file_format, f"is not one of {', '.join(FILE_FORMATS)}")
        if not isinstance(self.columns, ColumnMapping):
            raise ConfigError("source.columns", self.columns, "is not a column mapping")
        if not isinstance(self.batching, Batching):
            raise ConfigError("source.batching", self.batching, "is not a batching rule")
        if self.sample_layout:
            feed_header(self.path)
        else:
            files = self.files()
            if not files:
                raise ConfigError("source.path", str(self.path), f"holds no {self.file_format} files")
            if self.file_format != "json":
                require_same_columns(files, self.file_format)
            if self.file_format == "csv":
                header = dict.fromkeys(csv_header(files[0]), "string")
                self.columns.check_columns(header)
                if self.batching.column is not None and self.batching.column not in header:
                    raise ConfigError("batch_by", self.batching.column, f"is not a column of the dataset (columns: {', '.join(header)})")
        if isinstance(self.seconds_per_file, bool) or not isinstance(self.seconds_per_file, (int, float)) or self.seconds_per_file < 0:
            raise ConfigError("source.seconds_per_file", self.seconds_per_file, "must be 0 or more")
        if self.speed is not None:
            if isinstance(self.speed, bool) or not isinstance(self.speed, (int, float)) or not 0 < self.speed <= MAX_SPEED:
                raise ConfigError("source.speed", self.speed, f"must be a number above 0 and at most {MAX_SPEED:g}")
            if self.batching.column is None:
                raise ConfigError("source.speed", self.speed, "paces by arrival time: batch by an arrival column (batch_by) to use it")

    @property
    def sample_layout(self) -> bool:
        """True for the sample feeds' layout: CSV with ``event_time`` written as ``TIME_PATTERN`` and ``key``.

        Event-by-event analysis (lateness, the exact answer) reads such feeds
        without Spark; other datasets are read by Spark only.
        """
        return self.file_format == "csv" and self.columns == FEED_COLUMNS and self.batching.by == "file" and self.path.is_dir()

    @property
    def arrival_format(self) -> str:
        """How the batching column's times are written: as the mapping says for its arrival (or event-time) column, else ``auto``."""
        if self.batching.column == self.columns.arrival:
            return self.columns.arrival_format
        return self.columns.time_format if self.batching.column == self.columns.event_time else "auto"

    @property
    def arrival(self) -> Arrival:
        return "column" if self.columns.arrival is not None else "batch"

    @property
    def ends(self) -> bool:
        return True

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def stamp(self) -> str:
        return "when its file (its micro-batch) was handed to Spark's file source"

    @property
    def address(self) -> str:
        return str(self.path)

    address_field = "source.path"

    @property
    def as_feed(self) -> FeedSource:
        return self

    @property
    def fixed(self) -> bool:
        return True

    @property
    def batch_rule(self) -> str:
        return self.batching.by

    def replayed(self, purpose: str) -> FeedSource:
        """The feed stepped: each file (or batch of rows) handed over once Spark is idle, so every replay sees the same micro-batches."""
        return replace(self, seconds_per_file=0)

    @property
    def step_unit(self) -> str:
        return "files"

    def steppable(self) -> FeedSource:
        return replace(self, seconds_per_file=0)

    def stepping(self, staging_name: str) -> FeedSource:
        if self.seconds_per_file != 0:
            raise ConfigError("source.seconds_per_file", self.seconds_per_file, "must be 0 to be stepped through: each step hands over one file")
        return self

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
        files = self.files()
        if not self.sample_layout:
            return dataset_frame(
                spark, files, self.file_format, self.columns, self.batching, staging,
                seconds_per_file=self.seconds_per_file, speed=self.speed, arrival_format=self.arrival_format,
            )
        replayer = FeedReplayer(files, staging, self.seconds_per_file)
        raw = file_stream(spark, feed_schema(self.path), "csv", str(staging))
        return raw.select(*event_columns("event_time", "key"), handed_over(raw)), replayer

    def rows(self, spark: SparkSession) -> DataFrame:
        """Every row of the feed's files as one batch DataFrame of the columns its stream yields (``event_time``, ``key``, and the mapped ``value``, ``dedup_id``)."""
        files = self.files()
        if not self.sample_layout:
            return dataset_rows(spark, files, self.file_format, self.columns)
        raw = read_files(spark, [str(path) for path in files], "csv", feed_schema(self.path))
        return raw.select(*event_columns("event_time", "key"))

    def view_frame(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
        """The feed's micro-batches as a SQL view's rows: the sample feeds' layout is read as any CSV dataset is (:func:`.dataset.view_batch`)."""
        return dataset_frame(
            spark, self.files(), self.file_format, self.columns, self.batching, staging,
            seconds_per_file=self.seconds_per_file, speed=self.speed, arrival_format=self.arrival_format, view=True,
        )

    def view_rows(self, spark: SparkSession) -> DataFrame:
        return dataset_rows(spark, self.files(), self.file_format, self.columns, view=True)

    def files(self) -> list[Path]:
        """The files replayed, in order: the folder's files of ``file_format`` in file-name order, or the one file ``path`` names."""
        if self.path.is_file():
            return [self.path] if FORMATS.get(self.path.suffix.lower()) == self.file_format else []
        return feed_files(self.path, self.file_format)
