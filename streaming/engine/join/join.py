"""Stream-stream joins: two streams joined on key columns and an event-time range, with a watermark on each side.

A side is replayed files (:class:`JoinSide`, file ``i`` in micro-batch ``i``;
or a static table), one of the generator's paired live streams
(:class:`LiveSide`) or a Kafka topic (:class:`TopicSide`). A replay runs to
its end (:func:`run_join`); live sides run until stopped
(:mod:`streaming.engine.join.live_join`).

A :class:`JoinConfig` is checked where it is received, so one that exists is
one Spark accepts. Spark's rules for joining two streams:

- the output mode is append (a joined row, or an outer join's NULL row, is
  emitted once and never changed);
- an inner join needs no watermark and no time range, but then its state
  keeps every row of both sides for ever;
- a left outer or left semi join needs a watermark on the right side and the
  time range; a right outer join one on the left; a full outer join the range
  and a watermark on either side. Spark accepts these, but cleans a side's
  state (and emits an outer join's NULL rows) only when *both* sides have a
  watermark (:attr:`JoinConfig.cleans_state`): a row leaves the state, with
  its NULL row if it never matched, once the *global* watermark passes the end
  of its range.

The time range reads: the right side's time within ``[left time + lower,
left time + upper]``, both bounds inclusive and signed. Each side's
watermark is its largest event time so far less its delay; the query's
(global) watermark is the smaller of the two (policy ``min``, Spark's default)
or the larger (``max``: faster results, more rows of the slower side dropped),
set for this query only (``spark.sql.streaming.multipleWatermarkPolicy``).
Spark reports only the global watermark: each side's is computed here from
its largest event time, which the query observes (``observe``) per side.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import reduce
from operator import and_
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd

from ..builders import file_stream
from ..data.datasets import FileFormat, detect_format
from ..data.feeds import feed_files
from ..data.preview import dataset_schema, read_dataset, stream_schema
from ..data.times import check_time_fit, check_time_format, quoted, time_column
from ..durations import format_duration, parse_duration
from ..errors import ConfigError
from ..kafka.kafka_terms import KAFKA_TIMESTAMP, batch_of_offsets
from ..kafka.topics import describe_topic, planned_range
from ..output.progress import ProgressListener, ProgressLog, observed_value
from ..output.results import stamp
from ..output.sinks import split_batches
from ..output.state import join_side_state
from ..run.query import start_with
from ..runtime.jars import require_connector
from ..runtime.session import is_connect
from ..sources import FILE_FORMATS
from ..sources.ads import AD_STREAMS, AdStream, AdStreams
from ..sources.kafka import KafkaSource, require_topic_source
from ..sources.replayer import FeedReplayer

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = [
    "EMITTED_COLUMNS",
    "JOIN_TYPES",
    "POLICIES",
    "POLICY_CONF",
    "SIDES",
    "STATIC_JOIN_TYPES",
    "JoinConfig",
    "JoinOutcome",
    "JoinSide",
    "JoinType",
    "LiveSide",
    "Side",
    "TopicSide",
    "WatermarkPolicy",
    "bound_ranges",
    "emitted_counts",
    "is_live",
    "join_columns",
    "join_frame",
    "join_state",
    "preserves",
    "run_join",
    "side_rows",
    "side_watermarks",
    "unmatched_side",
]

JoinType = Literal["inner", "left_outer", "right_outer", "full_outer", "left_semi"]
WatermarkPolicy = Literal["min", "max"]
JOIN_TYPES: tuple[str, ...] = get_args(JoinType)
POLICIES: tuple[str, ...] = get_args(WatermarkPolicy)
POLICY_CONF = "spark.sql.streaming.multipleWatermarkPolicy"
SIDES = ("left", "right")
STATIC_JOIN_TYPES: tuple[str, ...] = ("inner", "left_outer", "left_semi")
"""The joins Spark runs between a stream (left) and a static table (right)."""
SIDE_METRICS = {"left": "left_side", "right": "right_side"}
"""The name each side's observation (largest event time, rows, malformed rows) has in a batch's progress."""

_NEEDS_WATERMARK: dict[str, tuple[str, ...]] = {"left_outer": ("right",), "left_semi": ("right",), "right_outer": ("left",), "full_outer": ("left", "right")}
"""The sides one of which must have a watermark, per join type (an inner join needs none)."""


def _check_side(side: str, watermark: str | None) -> None:
    """Refuse a side name other than ``left``/``right``, and a watermark delay that does not parse (naming ``<side>.watermark``)."""
    if side not in SIDES:
        raise ConfigError("side", side, "must be left or right")
    if watermark is not None:
        parse_duration(watermark, field=f"{side}.watermark")


class _Delayed:
    """A side's watermark delay in milliseconds, from its ``side`` and ``watermark`` (checked by :func:`_check_side`)."""

    side: str
    watermark: str | None

    @property
    def watermark_ms(self) -> int | None:
        return None if self.watermark is None else parse_duration(self.watermark, field=f"{self.side}.watermark")

    def explain_failure(self, error: str) -> str | None:
        """What a user can do about a failed join's ``error`` when this side's source caused it; ``None`` otherwise."""
        return None


def preserves(join_type: str, side: str) -> bool:
    """Whether a ``side`` (``left``/``right``) row without a match gets a NULL row in a ``join_type`` join."""
    return join_type == "full_outer" or join_type == f"{side}_outer"


def _words(join_type: str) -> str:
    return join_type.replace("_", " ")


@dataclass(frozen=True)
class JoinSide(_Delayed):
    """One side of a join: a folder of files (or one file) replayed one file per micro-batch in file-name order.

    ``event_time`` names its event-time column, read with ``time_format``
    (``auto``, ``epoch_s``, ``epoch_ms`` or a Spark datetime pattern);
    ``watermark`` is its delay (``None``: no watermark on this side);
    ``file_format`` is ``csv``, ``json`` or ``parquet`` (``None``: from the
    file names). ``side`` (``left`` or ``right``) names the fields in errors.
    ``static`` (the right side only) reads every file at once as a table,
    which each micro-batch of the left side joins against: a stream-static join.
    Every other column is carried into the joined rows as it is read (CSV as
    text, JSON lines inferred, Parquet as written).
    """

    path: Path
    event_time: str
    watermark: str | None = None
    file_format: FileFormat | None = None
    time_format: str = "auto"
    side: str = "left"
    static: bool = False

    def __post_init__(self) -> None:
        _check_side(self.side, self.watermark)
        if self.static and self.side != "right":
            raise ConfigError(f"{self.side}.static", self.static, "applies to the right side: a stream-static join streams its left side")
        if self.static and self.watermark is not None:
            raise ConfigError(f"{self.side}.watermark", self.watermark, "does not apply to a static table, which has no event-time order")
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.is_dir() and not self.path.is_file():
            raise ConfigError(f"{self.side}.path", str(self.path), "is not a folder or a file")
        if self.file_format is None:
            object.__setattr__(self, "file_format", detect_format(self.path, f"{self.side}.path", f"{self.side}.file_format"))
        elif self.file_format not in FILE_FORMATS:
            raise ConfigError(f"{self.side}.file_format", self.file_format, f"is not one of {', '.join(FILE_FORMATS)}")
        if not isinstance(self.event_time, str) or not self.event_time.strip():
            raise ConfigError(f"{self.side}.event_time", self.event_time, "must name a column")
        check_time_format(self.time_format, f"{self.side}.time_format")
        if not self.files():
            raise ConfigError(f"{self.side}.path", str(self.path), f"holds no {self.file_format} files")

    @property
    def format(self) -> FileFormat:
        assert self.file_format is not None  # resolved in __post_init__
        return self.file_format

    @property
    def label(self) -> str:
        """The side's name in sentences: its folder's (or file's)."""
        return self.path.name

    def files(self) -> list[Path]:
        """The files replayed, in order: the folder's files of the side's format in file-name order, or the one file ``path`` names."""
        if self.path.is_file():
            return [self.path]
        return feed_files(self.path, self.format)


@dataclass(frozen=True)
class LiveSide(_Delayed):
    """One side of a live join: a stream of the generator's pair (:class:`~streaming.engine.sources.ads.AdStreams`), read as it comes.

    ``stream`` is ``impressions`` or ``clicks``; its event-time column is the
    pair's (``impression_time``, ``click_time``); ``watermark`` is its delay
    (``None``: no watermark on this side). Both sides of a live join read the same pair.
    """

    streams: AdStreams
    stream: AdStream
    watermark: str | None = None
    side: str = "left"

    def __post_init__(self) -> None:
        _check_side(self.side, self.watermark)
        if not isinstance(self.streams, AdStreams):
            raise ConfigError(f"{self.side}.streams", self.streams, "must be the generator's pair of streams (AdStreams)")
        if self.stream not in AD_STREAMS:
            raise ConfigError(f"{self.side}.stream", self.stream, f"is not one of {', '.join(AD_STREAMS)}")

    static = False
    """A live side is a stream."""

    @property
    def event_time(self) -> str:
        return self.streams.event_time(self.stream)

    @property
    def label(self) -> str:
        return f"{self.stream} (live)"

    def read(self, spark: SparkSession) -> DataFrame:
        """The stream, its event time a timestamp."""
        return self.streams.read(spark, self.stream)


@dataclass(frozen=True)
class TopicSide(_Delayed):
    """One side of a join: a Kafka topic's records (:class:`~streaming.engine.sources.kafka.KafkaSource`), read as they come, or replayed.

    Each record is a row of its value's columns; the event time is the column
    the source's mapping names (``source.columns.event_time``: a value column,
    read with ``columns.time_format``), or the record's timestamp, then named
    ``<side>_kafka_timestamp`` so that two topics timed by their records can
    be joined. A record whose value does not parse has no event time: it is
    counted as malformed and left out. The record's key and the mapping's
    other roles play no part: a join matches on the columns it is given.

    With ``source.end_offsets`` the side is a range that is **replayed**
    (:attr:`bounded`): its records from the start (earliest offsets, or the
    first at ``source.starting_timestamp``) to those offsets, in the
    micro-batches an available-now query cuts them into, at most
    ``source.max_offsets_per_trigger`` records a batch
    (:func:`~streaming.engine.kafka.kafka_terms.planned_batches`): micro-batch
    ``i`` reads the ``i``-th, as a side of files reads its ``i``-th file.
    """

    source: KafkaSource
    watermark: str | None = None
    side: str = "left"

    def explain_failure(self, error: str) -> str | None:
        return self.source.explain_failure(error)

    def __post_init__(self) -> None:
        _check_side(self.side, self.watermark)
        require_topic_source(self.source, f"{self.side}.source")
        if self.source.pattern:
            raise ConfigError(f"{self.side}.source", self.source.topic, "is a pattern of topics: a join side reads one topic")
        if self.bounded and self.source.starting_offsets == "latest" and self.source.starting_timestamp is None:
            raise ConfigError(f"{self.side}.source.starting_offsets", "latest", "leaves nothing to replay: a range starts at the earliest offsets or a time")

    static = False
    """A topic is a stream."""

    @property
    def bounded(self) -> bool:
        """Whether the side is a range of the topic, replayed to its end (``source.end_offsets`` set), rather than read as it comes."""
        return self.source.end_offsets is not None

    @property
    def event_time(self) -> str:
        mapped = self.source.columns.event_time
        return f"{self.side}_{KAFKA_TIMESTAMP}" if mapped == KAFKA_TIMESTAMP else mapped

    @property
    def label(self) -> str:
        return self.source.topic

    def columns(self, decoded: DataFrame) -> list[Column]:
        """The side's columns of :meth:`~streaming.engine.sources.kafka.KafkaSource.decoded` records: the value's, then the event time
        (parsed; null for a malformed record)."""
        from pyspark.sql import functions as F

        source, mapped = self.source, self.source.columns.event_time
        parsed = F.when(~F.col("malformed"), time_column(mapped, source.columns.time_format, source.schema[mapped], f"{self.side}.time_format"))
        names = [name for name, _ in source.value_columns if name != mapped]
        return [*(F.col(quoted(name)) for name in names), parsed.alias(self.event_time)]

    def read(self, spark: SparkSession) -> DataFrame:
        """The topic's records as rows of the value's columns and the event time; a range's records only (:attr:`bounded`)."""
        require_connector()
        decoded = self.source.decoded(self.source.within_end(spark.readStream.format("kafka").options(**self.source.options()).load()))
        return decoded.select(*self.columns(decoded))

    def planned(self) -> list[tuple[dict[int, int], dict[int, int]]]:
        """A range's micro-batches, ``(from, to)`` offsets (partition → offset) each, as an available-now replay reads them (asks the brokers
        where the range starts); :class:`ConfigError` for a side that is not :attr:`bounded`."""
        if not self.bounded:
            raise ConfigError(f"{self.side}.source.end_offsets", None, "must bound the topic: only a range is replayed")
        return planned_range(self.source)


Side = JoinSide | LiveSide | TopicSide
"""A join side: files replayed (or a static table), a topic's range replayed, or a live stream (the generator's or a topic's)."""
STREAMED_SIDES = (LiveSide, TopicSide)
"""The sides Spark reads from a source of its own (a rate source, a topic) rather than from files staged here."""


def is_live(side: Side) -> bool:
    """Whether ``side`` runs until stopped (the generator's streams, a topic read as it comes) rather than being replayed to its end."""
    return isinstance(side, LiveSide) or (isinstance(side, TopicSide) and not side.bounded)


def bound_ranges(config: JoinConfig) -> JoinConfig:
    """``config`` with each topic side that is not a range bounded at the offsets latest now (asked of the brokers): a replay of the
    records the topics hold, whatever arrives meanwhile. A join of live streams, of files or of ranges is returned as it is."""
    if not all(isinstance(side, TopicSide) for side in config.sides):
        return config
    sides = [
        side if side.bounded else replace(side, source=replace(side.source, end_offsets=describe_topic(side.source.bootstrap, side.source.topic).end_offsets()))
        for side in config.sides if isinstance(side, TopicSide)
    ]
    return replace(config, left=sides[0], right=sides[1])


def signed_duration_ms(text: str, field_name: str) -> int:
    """``text`` (a duration, ``-`` in front for a negative one: ``-5 minutes``) in milliseconds; :class:`ConfigError` naming ``field_name``."""
    if not isinstance(text, str):
        raise ConfigError(field_name, text, "must be a duration such as '-5 minutes' or '1 hour'")
    stripped = text.strip()
    negative = stripped.startswith("-")
    ms = parse_duration(stripped[1:] if negative else stripped, field=field_name)
    return -ms if negative else ms


@dataclass(frozen=True)
class JoinConfig:
    """A stream-stream join of ``left`` and ``right`` (see the module docstring for Spark's rules, checked here).

    ``on`` names the key columns (one or more), equal on both sides and found
    under the same name on each; ``within`` is the time range ``(lower, upper)``
    (signed durations: the right side's time within ``[left time + lower,
    left time + upper]``, both inclusive; ``None``: no range, inner joins
    only). ``policy`` picks the global watermark: ``min`` or ``max`` of the
    sides'. ``output_mode`` must be ``append``.
    """

    left: Side
    right: Side
    on: tuple[str, ...]
    within: tuple[str, str] | None = None
    join_type: JoinType = "inner"
    policy: WatermarkPolicy = "min"
    output_mode: str = "append"
    bounds_ms: tuple[int, int] | None = field(default=None, init=False, compare=False)

    def __post_init__(self) -> None:
        for name, side in (("left", self.left), ("right", self.right)):
            if not isinstance(side, (JoinSide, *STREAMED_SIDES)) or side.side != name:
                raise ConfigError(name, side, f"must be the join's {name} side")
        if is_live(self.left) != is_live(self.right) and not self.static:
            replayed = self.right if is_live(self.left) else self.left
            what = "files" if isinstance(replayed, JoinSide) else "a topic's range"
            raise ConfigError(replayed.side, replayed.label, f"is {what} to replay, which cannot run beside a live stream: join two live streams, or a live stream and a static table")
        if isinstance(self.left, LiveSide) and isinstance(self.right, LiveSide) and self.left.streams != self.right.streams:
            raise ConfigError("right.streams", self.right.streams, "must be the left side's pair: the clicks are on those impressions")
        if isinstance(self.on, str) or not isinstance(self.on, (tuple, list)):
            raise ConfigError("on", self.on, "must list the key columns, e.g. ('ad_id',)")
        object.__setattr__(self, "on", tuple(self.on))
        if not self.on:
            raise ConfigError("on", self.on, "must name at least one key column: a stream-stream join matches rows by key")
        for name in self.on:
            if not isinstance(name, str) or not name.strip():
                raise ConfigError("on", name, "must name a column")
            for side in (self.left, self.right):
                if name == side.event_time:
                    raise ConfigError("on", name, f"is the {side.side} side's event-time column; the time range (within) compares times")
        if len(set(self.on)) != len(self.on):
            raise ConfigError("on", self.on, "names a column twice")
        if self.join_type not in JOIN_TYPES:
            raise ConfigError("join_type", self.join_type, f"is not one of {', '.join(JOIN_TYPES)}")
        if self.policy not in POLICIES:
            raise ConfigError("policy", self.policy, "must be min (the slower side's watermark, Spark's default) or max (the faster side's)")
        if self.output_mode != "append":
            raise ConfigError("output_mode", self.output_mode, "must be append: Spark emits a stream-stream join's rows once, in append mode only")
        if self.within is not None:
            if isinstance(self.within, str) or not isinstance(self.within, (tuple, list)) or len(self.within) != 2:
                raise ConfigError("within", self.within, "must be two durations (lower, upper), e.g. ('0 seconds', '1 hour')")
            lower, upper = (signed_duration_ms(bound, "within") for bound in self.within)
            if lower > upper:
                raise ConfigError("within", self.within, "has its lower bound after its upper bound")
            object.__setattr__(self, "within", tuple(self.within))
            object.__setattr__(self, "bounds_ms", (lower, upper))
        self._check_spark_rules()

    @property
    def static(self) -> bool:
        """Whether this is a stream-static join: the right side a table each micro-batch joins whole, no state, no watermark on it."""
        return self.right.static

    @property
    def live(self) -> bool:
        """Whether the join streams live sides, which run until stopped (:mod:`streaming.engine.join.live_join`), rather than replaying files or ranges."""
        return is_live(self.left)

    def _check_spark_rules(self) -> None:
        if self.static:
            if self.join_type not in STATIC_JOIN_TYPES:
                raise ConfigError(
                    "join_type", self.join_type,
                    f"is not one Spark runs between a stream and a static table on its right ({', '.join(STATIC_JOIN_TYPES)})",
                )
            return
        needed = _NEEDS_WATERMARK.get(self.join_type)
        if needed is None:
            return
        if self.within is None:
            raise ConfigError(
                "within", None,
                f"is required by a {_words(self.join_type)} join: a row waits for its match until the watermark passes the end of its time range",
            )
        sides = {"left": self.left, "right": self.right}
        if all(sides[name].watermark is None for name in needed):
            what = " or ".join(f"{name}.watermark" for name in needed)
            raise ConfigError(what, None, f"is required by a {_words(self.join_type)} join: Spark refuses it without that watermark and the time range")

    @property
    def sides(self) -> tuple[Side, Side]:
        return self.left, self.right

    def facing(self, side: str) -> tuple[Side, Side]:
        """``(side, the other side)`` for ``side`` ``left`` or ``right``."""
        return (self.left, self.right) if side == "left" else (self.right, self.left)

    @property
    def cleans_state(self) -> bool:
        """Whether Spark removes rows from the join's state (and an outer join emits NULL rows): a stream-stream join with the range and both watermarks."""
        return not self.static and self.bounds_ms is not None and all(side.watermark is not None for side in self.sides)

    def warnings(self) -> list[str]:
        """What Spark accepts but a user would not expect: a join whose state is never cleaned, or whose NULL rows never come."""
        if self.static:
            return []
        missing = [side.side for side in self.sides if side.watermark is None]
        if not missing and self.bounds_ms is not None:
            return []
        if self.join_type == "inner":
            return ["The join's state keeps every row of both sides for ever: give both sides a watermark and a time range to bound it."]
        if len(missing) == 1:
            unmatched = "" if self.join_type == "left_semi" else " and never emits a row without a match (its NULL row)"
            return [
                f"With a watermark on one side only, Spark keeps every row of both sides in the join's state{unmatched}: "
                f"set {missing[0]}.watermark too."
            ]
        return []

    def describe(self) -> str:
        """One line: ``left_outer join of ad_impressions and ad_clicks on impression_id, click_time within [impression_time + 0 seconds, + 2 minutes]``."""
        right = f"{self.right.label} (static)" if self.static else self.right.label
        text = f"{self.join_type} join of {self.left.label} and {right} on {', '.join(self.on)}"
        if self.bounds_ms is not None:
            lower, upper = self.bounds_ms
            text += f", {self.right.event_time} within [{self.left.event_time} {_signed(lower)}, {_signed(upper)}]"
        return text


def _signed(ms: int) -> str:
    return ("- " if ms < 0 else "+ ") + format_duration(abs(ms))


def join_columns(config: JoinConfig, left: Sequence[str], right: Sequence[str]) -> list[str]:
    """The joined rows' columns, given each side's: the key columns once, then the left side's others, then the right side's (none for a semi join).

    :class:`ConfigError` when a key is missing on a side, or a name is on both
    sides without being a key (the joined row could not hold both).
    """
    for side, names in ((config.left, left), (config.right, right)):
        for key in config.on:
            if key not in names:
                raise ConfigError("on", key, f"is not a column of the {side.side} side (columns: {', '.join(names)})")
    shared = sorted((set(left) & set(right)) - set(config.on))
    if shared:
        raise ConfigError("on", shared[0], "is a column of both sides but not a key: rename it on one side, or join on it too")
    rest_left = [name for name in left if name not in config.on]
    rest_right = [] if config.join_type == "left_semi" else [name for name in right if name not in config.on]
    return [*config.on, *rest_left, *rest_right]


def _interval(ms: int) -> Column:
    """A literal interval of ``ms`` milliseconds, which Spark reads in a join's range to bound each side's state."""
    from pyspark.sql import functions as F

    return F.expr(f"INTERVAL {int(ms)} MILLISECONDS")


def _read_side(spark: SparkSession, side: JoinSide) -> tuple[DataFrame, dict[str, str], Callable[[DataFrame], list[Column]]]:
    """``(batch, schema, columns)``: the side's rows as one batch read, its columns' Spark types, and the projection of a frame of its
    columns that parses the event time in place (null where it does not parse); :class:`ConfigError` when the time column is missing or its format does not fit."""

    batch = read_dataset(spark, side.files(), side.format)
    schema = dataset_schema(batch)
    if side.event_time not in schema:
        raise ConfigError(f"{side.side}.event_time", side.event_time, f"is not a column of the {side.side} side (columns: {', '.join(schema)})")
    check_time_fit(side.time_format, schema[side.event_time], f"{side.side}.time_format")
    parsed = time_column(side.event_time, side.time_format, schema[side.event_time], f"{side.side}.time_format")

    def columns(frame: DataFrame) -> list[Column]:
        return [parsed.alias(name) if name == side.event_time else frame[quoted(name)] for name in schema]

    return batch, schema, columns


def _side_frame(spark: SparkSession, side: Side, staging: Path) -> tuple[DataFrame, FeedReplayer | None, list[str]]:
    """The side's stream (its event time parsed, rows without one counted and left out, its watermark set), its replayer (``None`` for a
    live side) and its columns; for a static side, the table (rows whose time does not parse left out) and no replayer."""
    from pyspark.sql import functions as F

    replayer = None
    if isinstance(side, STREAMED_SIDES):
        frame = side.read(spark)
    else:
        batch, schema, columns = _read_side(spark, side)
        if side.static:
            return batch.select(*columns(batch)).where(F.col(quoted(side.event_time)).isNotNull()), None, list(schema)
        replayer = FeedReplayer(side.files(), staging, 0)
        raw = file_stream(spark, stream_schema(batch), side.format, str(staging))
        frame = raw.select(*columns(raw))
    names = frame.columns
    event_time = F.col(quoted(side.event_time))
    frame = frame.observe(
        SIDE_METRICS[side.side],
        F.max(F.unix_micros(event_time)).alias("max_event_us"),  # a number: progress writes an observed time to the second only
        F.count(F.lit(1)).alias("rows"),
        F.count_if(event_time.isNull()).alias("malformed_rows"),
    ).where(event_time.isNotNull())
    if side.watermark_ms is not None:
        frame = frame.withWatermark(quoted(side.event_time), format_duration(side.watermark_ms))
    return frame, replayer, names


def join_frame(spark: SparkSession, config: JoinConfig, staging: Path) -> tuple[DataFrame, list[FeedReplayer]]:
    """The joined stream of ``config`` (columns as :func:`join_columns` says) and the replayers that hand each side's files to it (into ``staging``)."""
    from pyspark.sql import functions as F

    (left, left_replayer, left_names), (right, right_replayer, right_names) = (
        _side_frame(spark, side, staging / side.side) for side in config.sides
    )
    columns = join_columns(config, left_names, right_names)

    def column(side: str, name: str) -> Column:
        return F.col(f"{side}.{quoted(name)}")

    conditions = [column("left", key) == column("right", key) for key in config.on]
    if config.bounds_ms is not None:
        lower, upper = config.bounds_ms
        left_time, right_time = column("left", config.left.event_time), column("right", config.right.event_time)
        conditions += [right_time >= left_time + _interval(lower), right_time <= left_time + _interval(upper)]
    joined = left.alias("left").join(right.alias("right"), reduce(and_, conditions), config.join_type)
    keys = {
        "right_outer": lambda key: column("right", key),
        "full_outer": lambda key: F.coalesce(column("left", key), column("right", key)),
    }.get(config.join_type, lambda key: column("left", key))
    selected = [keys(name) if name in config.on else column("left" if name in left_names else "right", name) for name in columns]
    return joined.select(*[chosen.alias(name) for chosen, name in zip(selected, columns)]), [
        replayer for replayer in (left_replayer, right_replayer) if replayer is not None
    ]


def unmatched_side(config: JoinConfig, rows: pd.DataFrame) -> pd.Series:
    """Per row of ``rows`` (joined rows of ``config``): ``left`` for a left row emitted without a match (the right side's columns null),
    ``right`` for a right row without one, ``""`` for a joined pair (and every row of a semi join)."""
    side = pd.Series("", index=rows.index, dtype=object)
    if config.join_type == "left_semi" or rows.empty:
        return side
    side[rows[config.right.event_time].isna()] = "left"
    side[rows[config.left.event_time].isna()] = "right"
    return side


EMITTED_COLUMNS = ["batch_id", "rows_emitted", "left_unmatched", "right_unmatched"]
"""Per micro-batch that emitted rows: how many, and of which a side's row without a match (:func:`emitted_counts`)."""


def emitted_counts(config: JoinConfig, rows: pd.DataFrame, batches: Sequence[int]) -> pd.DataFrame:
    """Per micro-batch of ``batches`` (the batch that emitted each row of ``rows``, in order): :data:`EMITTED_COLUMNS`, by batch."""
    unmatched = unmatched_side(config, rows).to_numpy()
    frame = pd.DataFrame({"batch_id": np.asarray(batches, dtype="int64"), "left": unmatched == "left", "right": unmatched == "right"})
    counts = frame.groupby("batch_id").agg(rows_emitted=("left", "size"), left_unmatched=("left", "sum"), right_unmatched=("right", "sum"))
    return counts.reset_index()[EMITTED_COLUMNS].astype("int64")


def side_watermarks(summaries: Iterable[Mapping[str, Any]], config: JoinConfig) -> pd.DataFrame:
    """Per batch, each side's largest event time so far and watermark (that largest time less its delay; ``NaT`` without a watermark).

    Columns ``batch_id``, ``left_max_event_time``, ``left_watermark``,
    ``right_max_event_time``, ``right_watermark``: the watermark a side has
    after the batch, which the next batch runs with (as Spark's global one).
    """
    rows = []
    largest: dict[str, np.datetime64] = {}
    for summary in sorted(summaries, key=lambda summary: summary["batch_id"]):
        row: dict[str, Any] = {"batch_id": summary["batch_id"]}
        for side in config.sides:
            micros = observed_value(summary, SIDE_METRICS[side.side], "max_event_us")
            value = np.datetime64("NaT", "ns") if micros is None else np.datetime64(int(micros) // 1000, "ms")  # Spark keeps milliseconds
            if not np.isnat(value):
                largest[side.side] = max(largest.get(side.side, value), value)
            top = largest.get(side.side, np.datetime64("NaT", "ns"))
            delay = side.watermark_ms
            row[f"{side.side}_max_event_time"] = top
            row[f"{side.side}_watermark"] = np.datetime64("NaT", "ns") if delay is None or np.isnat(top) else top - np.timedelta64(delay, "ms")
        rows.append(row)
    columns = ["batch_id", *(f"{side}_{what}" for side in SIDES for what in ("max_event_time", "watermark"))]
    frame = pd.DataFrame(rows, columns=columns)
    for name in columns[1:]:
        frame[name] = pd.to_datetime(frame[name])
    return frame


def _plain(value: Any) -> Any:
    """A result cell as JSON holds it: times as :func:`~streaming.engine.output.results.stamp` writes them, missing values as ``None``."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, (pd.Timestamp, np.datetime64)):
        return stamp(pd.Timestamp(value))
    if isinstance(value, np.generic):
        return value.item()
    return value


@dataclass(frozen=True)
class JoinOutcome:
    """What a join replay produced: every joined row (``result``, columns as :func:`join_columns` says) and each batch's summary."""

    config: JoinConfig
    result: pd.DataFrame
    summaries: tuple[dict[str, Any], ...]
    emitted: tuple[int, ...] | None = None
    """The micro-batch that emitted each row of ``result``, in its order (on Spark Connect, from the rows each batch's progress says it wrote
    to the memory sink; ``None`` when the progress does not account for them all)."""
    checkpoint: Path | None = None
    """The query's checkpoint, when the replay was asked to keep it (:func:`run_join`'s ``keep``): :func:`join_state` reads it."""
    plans: Mapping[str, tuple[tuple[dict[int, int], dict[int, int]], ...]] = field(default_factory=dict)
    """Each topic range's planned micro-batches (``left``/``right`` → ``(from, to)`` offsets), as planned when the replay started."""

    def with_batches(self) -> pd.DataFrame:
        """``result`` with ``_batch``, the micro-batch that emitted each row (no rows when :attr:`emitted` is unknown)."""
        if self.emitted is None:
            return self.result.iloc[0:0].assign(_batch=pd.Series(dtype="int64"))
        return self.result.assign(_batch=np.asarray(self.emitted, dtype="int64"))

    def emitted_by(self, batch_id: int) -> pd.DataFrame:
        """The rows emitted by micro-batch ``batch_id`` (none when :attr:`emitted` is unknown)."""
        tagged = self.with_batches()
        return self.result.loc[tagged.index[tagged["_batch"] == batch_id]]

    @property
    def rows_dropped_by_watermark(self) -> int:
        return sum(int(summary["rows_dropped_by_watermark"]) for summary in self.summaries)

    @property
    def data_batches(self) -> int:
        """The micro-batches that brought data: the files, or a range's planned batches, of the side with the most."""
        counts = [len(self.plans[side.side]) for side in self.config.sides if side.side in self.plans]
        return max(counts + [len(side.files()) for side in self.config.sides if isinstance(side, JoinSide)], default=0)

    def unplanned(self) -> list[str]:
        """The topic ranges Spark did not read in their planned micro-batches (the records each batch read differ from the plan's): the
        topic received records during the replay, and Spark's available-now cut covers those too. Empty when every range kept its plan."""
        strayed = []
        for side in self.config.sides:
            plan = self.plans.get(side.side)
            if plan is None:
                continue
            planned = [sum(to[partition] - start[partition] for partition in to) for start, to in plan]
            read = [int(observed_value(summary, SIDE_METRICS[side.side], "rows") or 0) for summary in sorted(self.summaries, key=lambda summary: summary["batch_id"])]
            if [count for count in read if count] != [count for count in planned if count]:
                strayed.append(side.label)
        return strayed

    @property
    def malformed_rows(self) -> int:
        return sum(int(summary["malformed_rows"]) for summary in self.summaries)

    @property
    def final_watermark(self) -> pd.Timestamp:
        marks = [pd.Timestamp(summary["watermark"]) for summary in self.summaries if not np.isnat(summary["watermark"])]
        return max(marks) if marks else pd.NaT

    def operators(self) -> list[dict[str, Any]]:
        """Each stateful operator: its name, the rows in its state after the last batch and the rows it dropped as too late over the run."""
        totals: dict[int, dict[str, Any]] = {}
        for summary in self.summaries:
            for index, (name, rows, dropped, _) in enumerate(summary.get("operators") or ()):
                entry = totals.setdefault(index, {"name": name, "state_rows": 0, "rows_dropped_by_watermark": 0})
                entry["state_rows"] = rows
                entry["rows_dropped_by_watermark"] += dropped
        return [totals[index] for index in sorted(totals)]

    def result_records(self) -> list[dict[str, Any]]:
        """The joined rows as objects of every column (nulls where a side has no match), sorted by their values."""
        records = [{name: _plain(value) for name, value in zip(self.result.columns, row)} for row in self.result.itertuples(index=False)]
        return sorted(records, key=lambda record: [(value is not None, str(value)) for value in record.values()])

    def to_json(self) -> dict[str, Any]:
        marks = side_watermarks(self.summaries, self.config)
        last = marks.iloc[-1] if len(marks) else None
        return {
            "result": self.result_records(),
            "rows_dropped_by_watermark": self.rows_dropped_by_watermark,
            "final_watermark": stamp(self.final_watermark),
            "side_watermarks": {side: None if last is None else stamp(last[f"{side}_watermark"]) for side in SIDES},
            "malformed_rows": self.malformed_rows,
            "batches": [
                {
                    "batch_id": int(summary["batch_id"]),
                    "input_rows": int(summary["num_input_rows"]),
                    "watermark": stamp(pd.Timestamp(summary["watermark"])),
                    "rows_dropped_by_watermark": int(summary["rows_dropped_by_watermark"]),
                    "state_rows": int(summary["state_rows_total"]),
                    "output_rows": int(summary["output_rows"]),
                }
                for summary in self.summaries
            ],
            "operators": self.operators(),
        }


def run_join(
    spark: SparkSession, config: JoinConfig, listener: ProgressListener, *, root: Path | None = None, timeout: float = 600.0, keep: Path | None = None,
) -> JoinOutcome:
    """Replay both sides of ``config`` through the join and return every row it emitted.

    Micro-batch ``i`` reads file ``i`` (in file-name order) of each side: both
    are Spark file sources with ``maxFilesPerTrigger=1``, run under the
    available-now trigger until every file is read (a side with fewer files
    adds none to the later batches). The rows go to ``foreachBatch`` in this
    process in append mode, each batch's noted (:attr:`JoinOutcome.emitted`;
    on Spark Connect to the memory sink, cut into batches by their progress); ``listener``
    (registered on ``spark``) delivers each batch's progress. The working folder (staged files, checkpoint) is made under
    ``root`` and deleted; with ``keep`` (an empty or new folder) the working folder is ``keep``
    and stays, so the state can be read after (:attr:`JoinOutcome.checkpoint`). :class:`ConfigError` for columns that do not fit,
    before the query starts; :class:`TimeoutError` after ``timeout`` seconds.
    """
    if config.live:
        raise ConfigError("left", config.left.label, "is a live stream, which has no files to replay: start it with live_join.start_live_join")
    name = f"join_{uuid.uuid4().hex[:12]}"
    workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-join-", dir=root)) if keep is None else Path(keep)
    workdir.mkdir(parents=True, exist_ok=True)
    log = ProgressLog()
    try:
        plans = {side.side: tuple(side.planned()) for side in config.sides if isinstance(side, TopicSide)}
        frame, replayers = join_frame(spark, config, workdir / "staging")
        for replayer in replayers:
            replayer.stage_all()
        parts: list[tuple[int, pd.DataFrame]] = []
        connect = is_connect(spark)
        writer = frame.writeStream.queryName(name).outputMode("append").option("checkpointLocation", str(workdir / "checkpoint")).trigger(availableNow=True)
        if connect:
            writer = writer.format("memory")
        else:
            writer = writer.foreachBatch(lambda batch, batch_id: parts.append((int(batch_id), batch.toPandas())))
        listener.register(name, log)
        query = start_with(spark, writer, {POLICY_CONF: config.policy})
        try:
            log.run_id = str(query.runId)
            deadline = time.monotonic() + timeout
            if not query.awaitTermination(math.ceil(timeout)):
                raise TimeoutError(f"the join did not read both sides to their end within {timeout:g} s")
            if not log.caught_up(query, deadline):
                raise TimeoutError(f"the progress of the join's last batches did not arrive within {timeout:g} s")
            if connect:
                result = spark.table(name).toPandas()
                emitted = _emitted_by_counts(log.summaries(), len(result))
            else:
                result = pd.concat([part for _, part in parts], ignore_index=True) if parts else pd.DataFrame(columns=frame.columns)
                emitted = tuple(batch_id for batch_id, part in parts for _ in range(len(part)))
        finally:
            query.stop()
            if connect:
                spark.catalog.dropTempView(name)
        return JoinOutcome(config, result, tuple(log.summaries()), emitted, None if keep is None else workdir / "checkpoint", plans)
    finally:
        listener.unregister(name, log)
        shutil.rmtree(workdir if keep is None else workdir / "staging", ignore_errors=True)  # a kept folder keeps its checkpoint only


def _emitted_by_counts(summaries: Sequence[Mapping[str, Any]], rows: int) -> tuple[int, ...] | None:
    """The batch of each of a memory sink's ``rows`` (they stay in batch order) from the rows each batch's progress says it wrote;
    ``None`` when the progress does not account for every row."""
    counts = [(int(summary["batch_id"]), int(summary.get("output_rows", -1))) for summary in sorted(summaries, key=lambda summary: summary["batch_id"])]
    if any(count < 0 for _, count in counts):
        return None
    try:  # the memory sink's reader cuts a live query's rows the same way
        pieces = split_batches(range(rows), counts)
    except ValueError:
        return None
    return tuple(batch_id for batch_id, piece in pieces for _ in piece)


def join_state(spark: SparkSession, outcome: JoinOutcome, side: str, batch_id: int) -> pd.DataFrame:
    """The rows of ``side`` (``left``/``right``) the join's state held after micro-batch ``batch_id``, read with Spark's State Data Source.

    Columns: the side's own, as the join holds them (event time parsed). Empty
    before the first batch that kept state; :class:`ConfigError` when the
    outcome kept no checkpoint or the batch is not one it ran.
    """
    if side not in SIDES:
        raise ConfigError("side", side, "must be left or right")
    if outcome.checkpoint is None:
        raise ConfigError("checkpoint", None, "was not kept: replay the join with keep= to read its state")
    batches = [summary["batch_id"] for summary in outcome.summaries]
    if batch_id not in batches:
        raise ConfigError("batch_id", batch_id, f"is not a micro-batch of the replay (0 to {max(batches, default=-1)})")
    return join_side_state(spark, outcome.checkpoint, side, batch_id)


def side_rows(spark: SparkSession, side: Side, plan: Sequence[tuple[dict[int, int], dict[int, int]]] | None = None) -> pd.DataFrame:
    """Every row of a replayed ``side`` as the join reads it (event time parsed; ``NaT`` where it does not), with ``batch``: the
    micro-batch it arrives in (its file's index, or its range's planned batch: in ``plan``, a replay's :attr:`JoinOutcome.plans`,
    else as planned now).

    :class:`ConfigError` for a live side, whose rows are not kept to be read again.
    """
    if is_live(side):
        raise ConfigError(side.side, side.label, "is live: its rows are not kept to be read again")
    if isinstance(side, TopicSide):
        return _range_rows(spark, side, side.planned() if plan is None else plan)
    assert isinstance(side, JoinSide)
    batch, _, columns = _read_side(spark, side)
    paths = {str(path.absolute()): index for index, path in enumerate(side.files())}
    rows: pd.DataFrame = batch.select(*columns(batch), batch.metadataColumn("_metadata").getField("file_path").alias("_file")).toPandas()
    rows["batch"] = [paths.get(unquote(urlparse(path).path), -1) for path in rows.pop("_file")]
    if (rows["batch"] < 0).any():
        raise ConfigError(f"{side.side}.path", str(side.path), "has rows Spark read from a file not listed for it; its files changed while they were read")
    return rows


def _range_rows(spark: SparkSession, side: TopicSide, planned: Sequence[tuple[dict[int, int], dict[int, int]]]) -> pd.DataFrame:
    """A topic range's records as :func:`side_rows` gives them, read with one batch query over the ``planned`` batches' offsets; each
    record's batch is the planned batch whose offsets hold it, in record order within a batch."""
    import json

    source = side.source
    if not planned:
        return pd.DataFrame(columns=[*[name for name, _ in source.value_columns if name != source.columns.event_time], side.event_time, "batch"])
    start, end = ({source.topic: {str(partition): offset for partition, offset in offsets.items()}} for offsets in (planned[0][0], planned[-1][1]))
    decoded = source.records(spark, start=json.dumps(start), end=json.dumps(end))
    rows: pd.DataFrame = decoded.select(*side.columns(decoded), "kafka_partition", "kafka_offset").toPandas()
    rows = rows.assign(batch=batch_of_offsets(rows["kafka_partition"], rows["kafka_offset"], [until for _, until in planned]))
    return rows.sort_values(["batch", "kafka_partition", "kafka_offset"], kind="stable").drop(columns=["kafka_partition", "kafka_offset"]).reset_index(drop=True)
