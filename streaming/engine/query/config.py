"""The query configuration: one immutable, validated object per streaming query.

Every field is checked in ``__post_init__`` where it is received, so a
:class:`QueryConfig` that exists is one Spark will accept. Errors are
:class:`ConfigError` and name the field and the value, e.g.
``slide: '10 minutes' is longer than window '5 minutes'``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..arrival import DEFAULT_ARRIVAL, ArrivalRule, check_arrival, replay_trigger
from ..bounds import too_many_windows
from ..checks import duration_ms
from ..data.batching import Batching
from ..data.columns import ColumnMapping
from ..data.feeds import FEED_COLUMNS
from ..durations import format_duration, parse_duration
from ..errors import ConfigError
from ..output.results import ResultTable
from ..sources import (
    FILE_FORMATS,
    MAX_SPEED,
    ONE_FILE_PER_BATCH,
    SOURCE_KINDS,
    FeedSource,
    GeneratorSource,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
    Source,
    StreamSource,
)
from .frame import VALUE_AGGREGATIONS, build_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..sources import Feeder

__all__ = [
    "FEED_COLUMNS",
    "FILE_FORMATS",
    "INTERVAL_TRIGGERS",
    "MAX_SPEED",
    "ONE_FILE_PER_BATCH",
    "REAL_TIME_AGGREGATES",
    "REAL_TIME_MIN_BATCH",
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
    "describe",
    "source_from_dict",
    "source_to_dict",
    "state_store_settings",
]

OutputMode = Literal["append", "update", "complete"]
TriggerKind = Literal["default", "processing_time", "available_now", "real_time"]
Aggregation = Literal["count", "sum", "avg", "min", "max", "approx_distinct", "none"]
StateStore = Literal["hdfs", "rocksdb"]

OUTPUT_MODES: tuple[str, ...] = get_args(OutputMode)
TRIGGER_KINDS: tuple[str, ...] = get_args(TriggerKind)
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
STATE_STORES: tuple[str, ...] = get_args(StateStore)
STATE_STORE_PROVIDERS: dict[str, str] = {
    "hdfs": "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
    "rocksdb": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
}
"""``spark.sql.streaming.stateStore.providerClass`` of each state store: Spark's default (state in JVM memory, snapshots and deltas on disk) and RocksDB (state off the heap)."""
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"


def state_store_settings(state_store: str, changelog_checkpointing: bool) -> dict[str, str]:
    """The session settings that give one query ``state_store`` (and RocksDB's changelog checkpointing or not), set as it starts."""
    return {PROVIDER_CONF: STATE_STORE_PROVIDERS[state_store], CHANGELOG_CONF: str(changelog_checkpointing).lower()}


INTERVAL_TRIGGERS: tuple[str, ...] = ("processing_time", "real_time")
"""The triggers that take ``trigger_interval``: the time between micro-batches, or a real-time batch's length."""
REAL_TIME_MIN_BATCH = "5 seconds"
"""The shortest real-time batch Spark accepts (``spark.sql.streaming.realTimeMode.minBatchDuration``)."""


def _spark_version() -> tuple[int, int]:
    from importlib.metadata import version

    major, minor = version("pyspark").split(".")[:2]
    return int(major), int(minor)


REAL_TIME_AGGREGATES = _spark_version() >= (4, 3)
"""True when the installed Spark runs aggregations in real-time mode (4.3 on; 4.2 refuses them with ``OPERATOR_OR_SINK_NOT_IN_ALLOWLIST``)."""


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
    changes of each batch instead of a snapshot. ``arrival`` is the arrival
    rule a replay of files follows (:mod:`streaming.engine.arrival`: ``quiet``
    or ``busy``); a live stream follows none.
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
    arrival: ArrivalRule = DEFAULT_ARRIVAL

    def __post_init__(self) -> None:
        check_arrival(self.arrival)
        if not isinstance(self.source, StreamSource) or type(self.source) not in SOURCE_KINDS.values():
            raise ConfigError("source", self.source, "is not a source configuration")
        window_ms = duration_ms("window", self.window)
        if window_ms <= 0:
            raise ConfigError("window", self.window, "must be longer than 0")
        if self.slide is not None:
            slide_ms = duration_ms("slide", self.slide)
            if slide_ms <= 0:
                raise ConfigError("slide", self.slide, "must be longer than 0")
            if slide_ms > window_ms:
                raise ConfigError("slide", self.slide, f"is longer than window {self.window!r}; the slide must be at most the window")
            refusal = too_many_windows(window_ms, slide_ms)
            if refusal is not None:
                raise ConfigError("slide", self.slide, f"with window {self.window!r} {refusal}")
        if self.session_gap is not None:
            if duration_ms("session_gap", self.session_gap) <= 0:
                raise ConfigError("session_gap", self.session_gap, "must be longer than 0")
            if self.slide is not None:
                raise ConfigError("slide", self.slide, "does not apply to session windows: a session ends after session_gap without events")
        if self.watermark is not None:
            duration_ms("watermark", self.watermark)
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
        if self.trigger in INTERVAL_TRIGGERS:
            if self.trigger_interval is None:
                raise ConfigError("trigger_interval", None, f"is required for the {self.trigger} trigger")
            if duration_ms("trigger_interval", self.trigger_interval) <= 0:
                raise ConfigError("trigger_interval", self.trigger_interval, "must be longer than 0")
        elif self.trigger_interval is not None:
            raise ConfigError("trigger_interval", self.trigger_interval, f"applies only to the processing_time and real_time triggers, not {self.trigger!r}")
        if self.trigger == "real_time":
            self._check_real_time()
        self._check_spark_rules()

    def _check_real_time(self) -> None:
        """What Spark's real-time mode refuses, refused here first with the reason.

        Real-time mode reads a Kafka topic in long-running tasks and writes each
        row as soon as it is processed; ``trigger_interval`` is how long a batch
        runs before Spark checkpoints it, not a latency.
        """
        if self.source.kind != "kafka":
            raise ConfigError("trigger", "real_time", f"reads only a Kafka topic, not the {self.source.kind} source")
        if self.output_mode != "update":
            raise ConfigError("output_mode", self.output_mode, "is not supported in real-time mode: real-time mode needs update output mode")
        if self.session_gap is not None:
            raise ConfigError("session_gap", self.session_gap, "is not supported in real-time mode: session windows are not supported in real-time mode")
        if self.deduplicate:
            raise ConfigError("deduplicate", True, "is not supported in real-time mode (dropDuplicatesWithinWatermark is not among its operators)")
        if self.aggregation != "none" and not REAL_TIME_AGGREGATES:
            raise ConfigError(
                "aggregation", self.aggregation,
                "is not supported in real-time mode by the installed Spark (aggregations come in Spark 4.3): choose none, rows passed through",
            )
        if getattr(self.source, "max_offsets_per_trigger", None) is not None:
            raise ConfigError(
                "source.max_offsets_per_trigger", self.source.max_offsets_per_trigger,
                "is not supported in real-time mode: Spark rejects maxOffsetsPerTrigger there (a real-time batch reads what arrives)",
            )
        if getattr(self.source, "end_offsets", None) is not None:
            raise ConfigError("source.end_offsets", self.source.end_offsets, "do not apply in real-time mode: it follows the topic as records arrive")
        if duration_ms("trigger_interval", self.trigger_interval or "") < parse_duration(REAL_TIME_MIN_BATCH):
            raise ConfigError(
                "trigger_interval", self.trigger_interval,
                f"is shorter than real-time mode's shortest batch, {REAL_TIME_MIN_BATCH} (spark.sql.streaming.realTimeMode.minBatchDuration); "
                "it is how often Spark checkpoints, not a latency",
            )

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
        columns = self.source.columns
        if self.aggregation in VALUE_AGGREGATIONS and (columns is None or columns.value is None):
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
            if columns is None or columns.dedup_id is None:
                raise ConfigError("deduplicate", True, "needs an id column: map one for your dataset (Datasets page, or replay --dedup-by)")
            if self.watermark is None:
                raise ConfigError(
                    "deduplicate", True,
                    "needs a watermark: dropDuplicatesWithinWatermark keeps each id only until the watermark passes its event time plus the delay",
                )
        if self.trigger == "available_now" and not self.source.ends:
            raise ConfigError("trigger", "available_now", f"cannot run on the {self.source.kind} source: it has no end to reach")

    @property
    def resumable(self) -> bool:
        """True when Spark can resume the query from its checkpoint: every source but the socket, which keeps no offsets; not in real-time mode, whose rows reach the app through a topic of the run's own."""
        return self.source.resumable and self.trigger != "real_time"

    @property
    def measure(self) -> str:
        """What the result table's number is: ``count``, or e.g. ``sum(amount)``."""
        columns = self.source.columns
        if self.aggregation in VALUE_AGGREGATIONS and columns is not None:
            return f"{self.aggregation}({columns.value})"
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

    def stepping(self, staging_name: str) -> QueryConfig:
        """This query as a walkthrough runs it, its source stepped (:meth:`~streaming.engine.sources.base.Source.stepping`)."""
        return replace(self, source=self.source.stepping(staging_name))

    def replayed(self, purpose: str) -> QueryConfig:
        """This query replayed from its source's start to its end under its arrival rule (the tuner, Compare, ``replay``): the source replayed
        (:meth:`~streaming.engine.sources.base.StreamSource.replayed`, to be ``purpose`` in messages) and the trigger that rule runs under."""
        source = self.source.replayed(purpose)
        return replace(self, source=source, trigger=replay_trigger(self.ran_arrival(source)), trigger_interval=None)

    @property
    def fixed(self) -> bool:
        """True when a run reads the same rows whatever arrives meanwhile (files, a topic's fixed range): it follows :attr:`arrival`; a live stream follows no rule."""
        return self.source.fixed

    def ran_arrival(self, source: StreamSource | None = None) -> ArrivalRule:
        """The arrival rule a replay of this query follows: its own, unless its source can be replayed only one way (a topic's range: busy)
        or its trigger is available-now (every file handed over at once: busy)."""
        return "busy" if self.trigger == "available_now" else (source or self.source).replay_arrival(self.arrival)

    def build(self, spark: SparkSession, staging: Path, now_ms: int, *, latency: bool = True) -> tuple[DataFrame, Feeder | None]:
        """The streaming DataFrame of this query's result table and its source's feeder (:func:`~streaming.engine.query.frame.build_frame`)."""
        return build_frame(spark, self, staging, now_ms, latency=latency)

    def new_table(self, frame: DataFrame, max_rows: int | None, *, record: bool = False) -> ResultTable:
        """The empty result table the batches of ``frame`` (what :meth:`build` gave) are folded into."""
        return ResultTable(self.output_mode, self.aggregation, max_rows, record=record)

    def spark_settings(self) -> dict[str, str]:
        """The session settings this query starts with (its state store)."""
        return state_store_settings(self.state_store, self.changelog_checkpointing)

    @property
    def sources(self) -> tuple[StreamSource, ...]:
        """Every source the query reads."""
        return (self.source,)

    def describe(self) -> dict[str, object]:
        """A flat description for tables and the Queries page (:func:`describe`)."""
        return describe(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly values (:func:`config_to_dict`), as a kept query's ``query.json`` holds them."""
        return config_to_dict(self)


def describe(config: QueryConfig) -> dict[str, object]:
    """A flat, JSON-friendly description of ``config`` for tables and the Queries page."""
    source = {f"source.{name}": value for name, value in config.source.description().items()}
    window = f"{format_duration(config.window_ms)}" + (
        f" sliding every {format_duration(config.slide_ms)}" if config.slide is not None else " tumbling"
    )
    if config.session_gap_ms is not None:
        window = f"session, gap {format_duration(config.session_gap_ms)}"
    watermark = format_duration(config.watermark_ms) if config.watermark_ms is not None else "none"
    if config.aggregation == "none":  # rows passed through: no window, and no state for a watermark to bound unless deduplicated
        window = "none (rows passed through)"
        if not config.deduplicate and config.watermark_ms is not None:
            watermark = f"{watermark}, unused: nothing is held in state"
    return {
        **source,
        "window": window,
        "watermark": watermark,
        "output_mode": config.output_mode,
        "trigger": config.trigger if config.trigger_interval is None else f"{config.trigger} {config.trigger_interval}",
        "aggregation": config.aggregation,
        "state_store": config.state_store + (" (changelog checkpointing)" if config.changelog_checkpointing else ""),
        "arrival": config.ran_arrival() if config.fixed else "none (a live stream)",
    }




def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, ColumnMapping):
        return value.to_dict()
    if isinstance(value, Batching):
        return {"by": value.by, "interval": value.interval}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def source_to_dict(source: StreamSource) -> dict[str, Any]:
    """``source`` as JSON-friendly values with its ``kind``: :func:`source_from_dict` makes it again."""
    return {"kind": source.kind, **{item.name: _plain(getattr(source, item.name)) for item in fields(source) if item.init}}  # type: ignore[arg-type, attr-defined]


def source_from_dict(values: Mapping[str, Any], field_name: str = "source") -> Source:
    """The source ``values`` describe (as :func:`source_to_dict` gives them), validated again; :class:`ConfigError` naming ``field_name`` for a kind or a field it does not know."""
    given = dict(values or {})
    kind = given.pop("kind", None)
    if kind not in SOURCE_KINDS:
        raise ConfigError(f"{field_name}.kind", kind, f"is not one of {', '.join(SOURCE_KINDS)}")
    source_type = SOURCE_KINDS[kind]
    known = {item.name for item in fields(source_type) if item.init}
    for name in given:
        if name not in known:
            raise ConfigError(f"{field_name}.{name}", given[name], f"is not a field of the {kind} source")
    if "columns" in given:
        given["columns"] = ColumnMapping.from_dict(given["columns"])
    if "batching" in given:
        given["batching"] = Batching(**given["batching"])
    return source_type(**given)


def config_to_dict(config: QueryConfig) -> dict[str, Any]:
    """``config`` as JSON-friendly values, the source with its ``kind``: :func:`config_from_dict` makes it again."""
    return {**{item.name: getattr(config, item.name) for item in fields(config) if item.name != "source"}, "source": source_to_dict(config.source)}


def config_from_dict(values: Mapping[str, Any]) -> QueryConfig:
    """The :class:`QueryConfig` ``values`` describe (as :func:`config_to_dict` gives them), validated again.

    Raises :class:`ConfigError` for a source kind or a field it does not know.
    """
    source = source_from_dict(values.get("source") or {})
    rest = {name: value for name, value in values.items() if name != "source"}
    known = {item.name for item in fields(QueryConfig)}
    for name in rest:
        if name not in known:
            raise ConfigError(name, rest[name], "is not a field of a query configuration")
    return QueryConfig(source=source, **rest)
