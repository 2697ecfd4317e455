"""The query configuration: one immutable, validated object per streaming query.

Every field is checked in ``__post_init__`` where it is received, so a
:class:`QueryConfig` that exists is one Spark will accept. Errors are
:class:`ConfigError` and name the field and the value, e.g.
``slide: '10 minutes' is longer than window '5 minutes'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from .batching import Batching
from .datasets import FORMATS, FileFormat, csv_header, require_same_columns
from .durations import format_duration, parse_duration
from .errors import ConfigError
from .feeds import TIME_PATTERN, check_time_fit, check_time_format, column_kind, feed_files, feed_header

__all__ = [
    "FEED_COLUMNS",
    "MAX_SPEED",
    "VALUE_AGGREGATIONS",
    "Aggregation",
    "ColumnMapping",
    "ConfigError",
    "FeedSource",
    "GeneratorSource",
    "OutputMode",
    "QueryConfig",
    "RateMicroBatchSource",
    "RateSource",
    "SocketSource",
    "Source",
    "StateStore",
    "TriggerKind",
    "config_from_dict",
    "config_to_dict",
    "count_setting",
    "describe",
]

OutputMode = Literal["append", "update", "complete"]
TriggerKind = Literal["default", "processing_time", "available_now"]
Aggregation = Literal["count", "sum", "avg", "min", "max", "approx_distinct", "none"]
StateStore = Literal["hdfs", "rocksdb"]

OUTPUT_MODES: tuple[str, ...] = get_args(OutputMode)
TRIGGER_KINDS: tuple[str, ...] = get_args(TriggerKind)
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
VALUE_AGGREGATIONS: tuple[str, ...] = ("sum", "avg", "min", "max", "approx_distinct")
"""The aggregations that read a value column (``approx_distinct`` is Spark's ``approx_count_distinct``)."""
FILE_FORMATS: tuple[str, ...] = get_args(FileFormat)
STATE_STORES: tuple[str, ...] = get_args(StateStore)
STATE_STORE_PROVIDERS: dict[str, str] = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
"""``spark.sql.streaming.stateStore.providerClass`` of each state store: Spark's default (state in JVM memory, snapshots and deltas on disk) and RocksDB (state off the heap)."""


def _duration_ms(field_name: str, value: str) -> int:
    return parse_duration(value, field=field_name)


def require_int(field_name: str, value: object, minimum: int, maximum: int | None = None) -> None:
    """Refuse ``value`` unless it is a whole number from ``minimum`` to ``maximum`` (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field_name, value, "must be a whole number")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ConfigError(field_name, value, f"must be {bound}")


def require_share(field_name: str, value: object) -> None:
    """Refuse ``value`` unless it is a number between 0 and 1 (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(field_name, value, "must be a number between 0 and 1")


def _require_positive_duration(field_name: str, value: str) -> None:
    if _duration_ms(field_name, value) <= 0:
        raise ConfigError(field_name, value, "must be longer than 0")


def _require_positive(field_name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(field_name, value, "must be a number greater than 0")


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns of a user's dataset hold what, and how its times are written.

    ``event_time`` (read with ``time_format``: ``auto``, ``epoch_s``,
    ``epoch_ms`` or a Spark datetime pattern) is required; ``key`` is the
    grouping column (``None``: one global group); ``value`` the column an
    aggregate reads; ``dedup_id`` identifies duplicate deliveries;
    ``arrival`` (read with ``arrival_format``) is when each row arrived.
    Names are checked here; :meth:`check_columns` checks them against a
    dataset's columns and types.
    """

    event_time: str = "event_time"
    time_format: str = "auto"
    key: str | None = "key"
    value: str | None = None
    dedup_id: str | None = None
    arrival: str | None = None
    arrival_format: str = "auto"

    def __post_init__(self) -> None:
        for name in ("event_time", "key", "value", "dedup_id", "arrival"):
            given = getattr(self, name)
            if given is None and name != "event_time":
                continue
            if not isinstance(given, str) or not given.strip():
                raise ConfigError(f"columns.{name}", given, "must name a column")
        check_time_format(self.time_format, "columns.time_format")
        check_time_format(self.arrival_format, "columns.arrival_format")
        for role in ("key", "value", "dedup_id", "arrival"):
            if getattr(self, role) == self.event_time:
                raise ConfigError(f"columns.{role}", self.event_time, f"is the event-time column; {role} must be another column")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ColumnMapping:
        """The mapping ``values`` describe (as :meth:`to_dict` gives them); :class:`ConfigError` for a name it does not know."""
        known = {item.name for item in fields(cls)}
        for name in values:
            if name not in known:
                raise ConfigError("columns", name, f"is not a role of a column mapping ({', '.join(sorted(known))})")
        return cls(**values)

    def to_dict(self) -> dict[str, str | None]:
        return {item.name: getattr(self, item.name) for item in fields(self)}

    def __str__(self) -> str:
        formats = {"event_time": self.time_format, "arrival": self.arrival_format}
        return ", ".join(f"{role}={name}" + (f" ({formats[role]})" if role in formats else "") for role, name in self.roles().items()) + (
            "" if self.key is not None else ", no key"
        )

    def roles(self) -> dict[str, str]:
        """The columns used, by role (``event_time``, ``key``, ...), leaving out the roles not set."""
        return {name: given for name in ("event_time", "key", "value", "dedup_id", "arrival") if (given := getattr(self, name)) is not None}

    def check_columns(self, schema: dict[str, str]) -> None:
        """:class:`ConfigError` unless every column named exists in ``schema`` (name → Spark type) with a type that fits its role."""
        for role, name in self.roles().items():
            if name not in schema:
                raise ConfigError(f"columns.{role}", name, f"is not a column of the dataset (columns: {', '.join(schema)})")
        check_time_fit(self.time_format, schema[self.event_time], "columns.time_format")
        if self.arrival is not None:
            check_time_fit(self.arrival_format, schema[self.arrival], "columns.arrival_format")
        if self.value is not None and column_kind(schema[self.value]) not in ("number", "text"):
            raise ConfigError("columns.value", self.value, f"is of type {schema[self.value]}, not a number")


FEED_COLUMNS = ColumnMapping(event_time="event_time", time_format=TIME_PATTERN, key="key")
"""The sample feeds' columns: ``event_time`` written as ``yyyy-MM-dd HH:mm:ss`` (UTC) and ``key``."""
ONE_FILE_PER_BATCH = Batching()
MAX_SPEED = 1_000_000.0
"""The largest replay speed-up by arrival time."""


@dataclass(frozen=True)
class FeedSource:
    """Replay a feed: a folder of files (or one file), one file per micro-batch.

    ``file_format`` and ``columns`` say how the files are read; the defaults
    are the sample feeds' layout (:data:`FEED_COLUMNS`: CSV with ``event_time``
    written as ``yyyy-MM-dd HH:mm:ss`` and ``key``). ``batching`` says which
    rows form each micro-batch (:class:`~streaming.engine.batching.Batching`:
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

    def files(self) -> list[Path]:
        """The files replayed, in order: the folder's files of ``file_format`` in file-name order, or the one file ``path`` names."""
        if self.path.is_file():
            return [self.path] if FORMATS.get(self.path.suffix.lower()) == self.file_format else []
        return feed_files(self.path, self.file_format)


@dataclass(frozen=True)
class GeneratorSource:
    """Synthetic events from Spark's ``rate`` source, deterministic for a given seed.

    Event ``n`` arrives at the rate source's timestamp; its event time lags that
    by a pseudo-random amount up to ``max_lag`` (out-of-order events), and a
    ``late_share`` of events lag by ``late_delay`` more (very late events).
    With ``stall_after``, event time stops advancing once that much of it has
    passed (counted in events, ``events_per_second``): input keeps arriving but
    the watermark stalls, as when a source's event time freezes.
    """

    events_per_second: int = 50
    keys: int = 4
    max_lag: str = "20 seconds"
    late_share: float = 0.05
    late_delay: str = "2 minutes"
    seed: int = 7
    stall_after: str | None = None
    kind: Literal["generator"] = field(default="generator", init=False)

    def __post_init__(self) -> None:
        require_int("source.events_per_second", self.events_per_second, 1, 10_000_000)
        if self.stall_after is not None:
            _require_positive_duration("source.stall_after", self.stall_after)
        require_int("source.keys", self.keys, 1, 100_000)
        _duration_ms("source.max_lag", self.max_lag)
        _duration_ms("source.late_delay", self.late_delay)
        require_share("source.late_share", self.late_share)
        require_int("source.seed", self.seed, 0)

    @property
    def max_lag_ms(self) -> int:
        return parse_duration(self.max_lag)

    @property
    def late_delay_ms(self) -> int:
        return parse_duration(self.late_delay)

    @property
    def stall_after_ms(self) -> int | None:
        return None if self.stall_after is None else parse_duration(self.stall_after)


@dataclass(frozen=True)
class RateSource:
    """Spark's ``rate`` source: ``rows_per_second`` rows stamped with the processing time."""

    rows_per_second: int = 100
    keys: int = 4
    kind: Literal["rate"] = field(default="rate", init=False)

    def __post_init__(self) -> None:
        require_int("source.rows_per_second", self.rows_per_second, 1)
        require_int("source.keys", self.keys, 1, 100_000)


@dataclass(frozen=True)
class RateMicroBatchSource:
    """Spark's ``rate-micro-batch`` source: ``rows_per_batch`` rows per batch, event time advancing ``advance`` per batch."""

    rows_per_batch: int = 100
    advance: str = "1 second"
    keys: int = 4
    kind: Literal["rate-micro-batch"] = field(default="rate-micro-batch", init=False)

    def __post_init__(self) -> None:
        require_int("source.rows_per_batch", self.rows_per_batch, 1)
        if _duration_ms("source.advance", self.advance) <= 0:
            raise ConfigError("source.advance", self.advance, "must be longer than 0")
        require_int("source.keys", self.keys, 1, 100_000)

    @property
    def advance_ms(self) -> int:
        return parse_duration(self.advance)


@dataclass(frozen=True)
class SocketSource:
    """Spark's ``socket`` source, fed from a feed folder by a line server the app starts on 127.0.0.1."""

    path: Path
    lines_per_second: float = 20.0
    kind: Literal["socket"] = field(default="socket", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.is_dir():
            raise ConfigError("source.path", str(self.path), "is not a folder")
        feed_header(self.path)
        _require_positive("source.lines_per_second", self.lines_per_second)


Source = FeedSource | GeneratorSource | RateSource | RateMicroBatchSource | SocketSource
_SOURCE_TYPES = (FeedSource, GeneratorSource, RateSource, RateMicroBatchSource, SocketSource)


@dataclass(frozen=True)
class QueryConfig:
    """A windowed aggregate per key over event time: a count, or (on a dataset with a value column) a sum, average, minimum, maximum or approximate distinct count.

    ``window`` is the window length; ``slide`` (``None`` for tumbling) how far
    consecutive windows start apart. Windows are ``[start, end)``: start
    inclusive, end exclusive. ``watermark`` is the delay behind the maximum event
    time seen (``None`` for no watermark). ``aggregation="none"`` passes rows
    through unaggregated. ``trigger_interval`` is required for the
    ``processing_time`` trigger and refused for the others. ``deduplicate``
    drops rows whose id (the dataset's ``dedup_id`` column) was seen within
    the watermark (``dropDuplicatesWithinWatermark``) before the aggregation.
    ``session_gap`` groups by session windows (``session_window``: a session
    ends after that long without an event of its key) instead of fixed ones;
    ``window`` is then not used, and Spark allows append and complete mode only.
    ``state_store`` chooses where the state lives (``hdfs``: Spark's default,
    ``rocksdb``); ``changelog_checkpointing`` (RocksDB only) commits the
    changes of each batch instead of a snapshot.
    """

    source: Source
    window: str = "1 minute"
    slide: str | None = None
    watermark: str | None = "30 seconds"
    output_mode: OutputMode = "update"
    trigger: TriggerKind = "default"
    trigger_interval: str | None = None
    aggregation: Aggregation = "count"
    deduplicate: bool = False
    session_gap: str | None = None
    state_store: StateStore = "hdfs"
    changelog_checkpointing: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.source, _SOURCE_TYPES):
            raise ConfigError("source", self.source, "is not a source configuration")
        window_ms = _duration_ms("window", self.window)
        if window_ms <= 0:
            raise ConfigError("window", self.window, "must be longer than 0")
        if self.slide is not None:
            slide_ms = _duration_ms("slide", self.slide)
            if slide_ms <= 0:
                raise ConfigError("slide", self.slide, "must be longer than 0")
            if slide_ms > window_ms:
                raise ConfigError("slide", self.slide, f"is longer than window {self.window!r}; the slide must be at most the window")
        if self.session_gap is not None:
            if _duration_ms("session_gap", self.session_gap) <= 0:
                raise ConfigError("session_gap", self.session_gap, "must be longer than 0")
            if self.slide is not None:
                raise ConfigError("slide", self.slide, "does not apply to session windows: a session ends after session_gap without events")
        if self.watermark is not None:
            _duration_ms("watermark", self.watermark)
        if self.output_mode not in OUTPUT_MODES:
            raise ConfigError("output_mode", self.output_mode, f"is not one of {', '.join(OUTPUT_MODES)}")
        if self.aggregation not in AGGREGATIONS:
            raise ConfigError("aggregation", self.aggregation, f"is not one of {', '.join(AGGREGATIONS)}")
        if self.trigger not in TRIGGER_KINDS:
            raise ConfigError("trigger", self.trigger, f"is not one of {', '.join(TRIGGER_KINDS)}")
        if self.state_store not in STATE_STORES:
            raise ConfigError("state_store", self.state_store, f"is not one of {', '.join(STATE_STORES)}")
        if not isinstance(self.changelog_checkpointing, bool):
            raise ConfigError("changelog_checkpointing", self.changelog_checkpointing, "must be true or false")
        if self.changelog_checkpointing and self.state_store != "rocksdb":
            raise ConfigError("changelog_checkpointing", True, f"applies to the rocksdb state store only, not {self.state_store!r}")
        if self.trigger == "processing_time":
            if self.trigger_interval is None:
                raise ConfigError("trigger_interval", None, "is required for the processing_time trigger")
            if _duration_ms("trigger_interval", self.trigger_interval) <= 0:
                raise ConfigError("trigger_interval", self.trigger_interval, "must be longer than 0")
        elif self.trigger_interval is not None:
            raise ConfigError("trigger_interval", self.trigger_interval, f"applies only to the processing_time trigger, not {self.trigger!r}")
        self._check_spark_rules()

    def _check_spark_rules(self) -> None:
        """Combinations Spark's analyzer refuses, refused here first with the reason."""
        aggregating = self.aggregation != "none"
        if self.output_mode == "append" and aggregating and self.watermark is None:
            raise ConfigError(
                "output_mode",
                "append",
                "needs a watermark on an aggregation: without one Spark can never finalize a window",
            )
        if self.output_mode == "complete" and not aggregating:
            raise ConfigError("output_mode", "complete", "needs an aggregation: Spark keeps the whole result table only for aggregations")
        if self.aggregation in VALUE_AGGREGATIONS and (not isinstance(self.source, FeedSource) or self.source.columns.value is None):
            raise ConfigError(
                "aggregation", self.aggregation,
                "needs a value column: map one for your dataset (Datasets page, or replay --value); only count works without one",
            )
        if self.session_gap is not None and self.aggregation == "none":
            raise ConfigError("session_gap", self.session_gap, "needs an aggregation: a session window groups rows")
        if self.session_gap is not None and self.output_mode == "update":
            raise ConfigError(
                "output_mode", "update",
                "is not supported by Spark for session windows: use append (finalized sessions) or complete (every session, rewritten each batch)",
            )
        if not isinstance(self.deduplicate, bool):
            raise ConfigError("deduplicate", self.deduplicate, "must be true or false")
        if self.deduplicate:
            if not isinstance(self.source, FeedSource) or self.source.columns.dedup_id is None:
                raise ConfigError("deduplicate", True, "needs an id column: map one for your dataset (Datasets page, or replay --dedup-by)")
            if self.watermark is None:
                raise ConfigError(
                    "deduplicate", True,
                    "needs a watermark: dropDuplicatesWithinWatermark keeps each id only until the watermark passes its event time plus the delay",
                )
        if self.trigger == "available_now" and isinstance(self.source, (SocketSource, RateSource, GeneratorSource)):
            raise ConfigError("trigger", "available_now", f"cannot run on the {self.source.kind} source: it has no end to reach")

    @property
    def resumable(self) -> bool:
        """True when Spark can resume the query from its checkpoint: every source but the socket, which keeps no offsets."""
        return not isinstance(self.source, SocketSource)

    @property
    def measure(self) -> str:
        """What the result table's number is: ``count``, or e.g. ``sum(amount)``."""
        if self.aggregation in VALUE_AGGREGATIONS and isinstance(self.source, FeedSource):
            return f"{self.aggregation}({self.source.columns.value})"
        return "count"

    @property
    def window_ms(self) -> int:
        return parse_duration(self.window)

    @property
    def session_gap_ms(self) -> int | None:
        return parse_duration(self.session_gap) if self.session_gap is not None else None

    @property
    def slide_ms(self) -> int:
        return parse_duration(self.slide) if self.slide is not None else self.window_ms

    @property
    def watermark_ms(self) -> int | None:
        return parse_duration(self.watermark) if self.watermark is not None else None

    def with_changes(self, **changes: Any) -> QueryConfig:
        """A copy with ``changes`` applied and validated again."""
        return replace(self, **changes)


def describe(config: QueryConfig) -> dict[str, object]:
    """A flat, JSON-friendly description of ``config`` for tables and the Queries page."""
    source = {f"source.{f.name}": str(getattr(config.source, f.name)) for f in fields(config.source)}
    window = f"{format_duration(config.window_ms)}" + (
        f" sliding every {format_duration(config.slide_ms)}" if config.slide is not None else " tumbling"
    )
    if config.session_gap_ms is not None:
        window = f"session, gap {format_duration(config.session_gap_ms)}"
    return {
        **source,
        "window": window,
        "watermark": format_duration(config.watermark_ms) if config.watermark_ms is not None else "none",
        "output_mode": config.output_mode,
        "trigger": config.trigger if config.trigger_interval is None else f"{config.trigger} {config.trigger_interval}",
        "aggregation": config.aggregation,
        "state_store": config.state_store + (" (changelog checkpointing)" if config.changelog_checkpointing else ""),
    }


_SOURCE_KINDS: dict[str, type] = {kind.kind: kind for kind in _SOURCE_TYPES}


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, ColumnMapping):
        return value.to_dict()
    if isinstance(value, Batching):
        return {"by": value.by, "interval": value.interval}
    return value


def config_to_dict(config: QueryConfig) -> dict[str, Any]:
    """``config`` as JSON-friendly values, the source with its ``kind``: :func:`config_from_dict` makes it again."""
    source = {"kind": config.source.kind, **{item.name: _plain(getattr(config.source, item.name)) for item in fields(config.source) if item.init}}
    return {**{item.name: getattr(config, item.name) for item in fields(config) if item.name != "source"}, "source": source}


def config_from_dict(values: Mapping[str, Any]) -> QueryConfig:
    """The :class:`QueryConfig` ``values`` describe (as :func:`config_to_dict` gives them), validated again.

    Raises :class:`ConfigError` for a source kind or a field it does not know.
    """
    given = dict(values.get("source") or {})
    kind = given.pop("kind", None)
    if kind not in _SOURCE_KINDS:
        raise ConfigError("source.kind", kind, f"is not one of {', '.join(_SOURCE_KINDS)}")
    source_type = _SOURCE_KINDS[kind]
    known = {item.name for item in fields(source_type) if item.init}
    for name in given:
        if name not in known:
            raise ConfigError(f"source.{name}", given[name], f"is not a field of the {kind} source")
    if "columns" in given:
        given["columns"] = ColumnMapping.from_dict(given["columns"])
    if "batching" in given:
        given["batching"] = Batching(**given["batching"])
    rest = {name: value for name, value in values.items() if name != "source"}
    known = {item.name for item in fields(QueryConfig)}
    for name in rest:
        if name not in known:
            raise ConfigError(name, rest[name], "is not a field of a query configuration")
    return QueryConfig(source=source_type(**given), **rest)


def count_setting(environ: Mapping[str, str], variable: str, default: int) -> int:
    """The whole number of at least 1 that the environment variable ``variable`` sets (``default`` when unset); :class:`ConfigError` naming it otherwise."""
    text = environ.get(variable, str(default))
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(variable, text, "must be a whole number of at least 1")
    return int(text)
