"""A Kafka topic (or a pattern of topics) read with Spark's own Kafka connector.

Each record's value is a JSON object or a line of CSV text; its columns and
their types (:attr:`KafkaSource.value_columns`) come from a sample of the
topic's messages, read once when the source is configured
(:func:`streaming.engine.kafka.topics.infer_value_columns`), and are parsed with
``from_json`` / ``from_csv``. Besides the value's columns, every record has
two of Kafka's own: :data:`KAFKA_TIMESTAMP` (the record's timestamp: when it
was produced, or the arrival time a publisher gave it) and :data:`KAFKA_KEY`
(the record's key as text). The column mapping picks the event time, the key,
the value, an id for deduplication among them: event time from a value column
(written in any of :mod:`streaming.engine.data.times`' formats) or the record
timestamp, the key from a value column or the record key, or no key.

The record timestamp is the arrival time: with event time from a value column
it is mapped as the arrival column, so lateness behind arrival is known for
every record. A message whose value does not parse is a malformed row (its
event time is null): counted, never a failed query.

Reading starts at the earliest or latest offsets or at a time
(``startingTimestamp``), at most ``max_offsets_per_trigger`` records per
micro-batch (Spark's ``maxOffsetsPerTrigger``). With the available-now trigger
the query ends at the offsets that were the latest when it started.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..arrival import ArrivalRule
from ..builders import decode_records, records_before, topic_view
from ..checks import require_choice, require_int
from ..data.columns import ColumnMapping, dataset_columns
from ..data.times import check_time_fit
from ..errors import ConfigError
from ..kafka.kafka_terms import (
    CORRUPT,
    KAFKA_COLUMNS,
    KAFKA_KEY,
    KAFKA_TIMESTAMP,
    VALUE_FORMATS,
    VALUE_TYPES,
    ValueFormat,
    check_bootstrap,
    check_topic,
)
from ..kafka.topics import describe_topic
from ..output.latency import PRODUCED
from ..runtime.jars import require_connector
from .base import Arrival, StreamSource
from .stepped_topic import SteppedTopic

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType


__all__ = [
    "RECORD_COLUMNS",
    "KafkaSource",
    "initial_offsets",
    "require_topic_source",
]

CLIENT_TIMEOUTS = {"kafka.default.api.timeout.ms": "5000", "kafka.request.timeout.ms": "5000"}
"""How long Spark's Kafka clients wait for a broker that does not answer (Kafka's defaults: 60 s and 30 s).

Spark runs its offset requests uninterruptibly, so a query whose broker died
cannot stop before the request in flight gives up: with the defaults, Stop
took a minute. With 5 s, the query fails within seconds of its broker's
death (after Spark's three retries), with a timeout the page explains, and
resumes from its checkpoint once the broker is back."""

StartingOffsets = Literal["earliest", "latest"]
STARTING_OFFSETS: tuple[str, ...] = get_args(StartingOffsets)

def initial_offsets(checkpoint: Path) -> dict[str, dict[str, int]] | None:
    """Where a query's Kafka source started, ``{topic: {partition: offset}}``, as Spark wrote it in the checkpoint (``sources/0/0``); ``None`` before it did.

    Progress names no start offsets for a query's first batch; Spark keeps the
    offsets it resolved (``earliest``, ``latest`` or a timestamp) there.
    """
    import json

    path = checkpoint / "sources" / "0" / "0"
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("{"):
            offsets = json.loads(line)
            return {topic: {str(partition): int(offset) for partition, offset in partitions.items()} for topic, partitions in offsets.items()}
    return None


def require_topic_source(value: object, field_name: str) -> KafkaSource:
    """``value`` when it is a topic's configuration; :class:`ConfigError` naming ``field_name`` otherwise."""
    if not isinstance(value, KafkaSource):
        raise ConfigError(field_name, value, "must be a Kafka topic (KafkaSource)")
    return value


RECORD_COLUMNS = ColumnMapping(event_time=KAFKA_TIMESTAMP, key=KAFKA_KEY)
"""The default mapping: event time from the record timestamp, key from the record key."""


@dataclass(frozen=True)
class KafkaSource(StreamSource):
    """Records of ``topic`` (a name, or with ``pattern`` a Java regex of names) on the brokers ``bootstrap``.

    ``value_columns`` are the value's ``(name, Spark type)`` pairs in order
    (for CSV, the fields of a line, all ``string``); ``columns`` maps them and
    the record's :data:`KAFKA_COLUMNS`. ``starting_offsets`` is where a new
    query starts (``earliest`` or ``latest``), unless ``starting_timestamp``
    (epoch milliseconds) is given: then each partition starts at its first
    record at or after it. ``max_offsets_per_trigger`` caps the records of a
    micro-batch (``None``: everything available). ``fail_on_data_loss`` is
    Spark's ``failOnDataLoss``: a query whose next offsets were deleted by
    retention (or whose topic was) stops with an error, or goes on from what
    is left when ``False``. ``end_offsets`` (``(partition, offset)`` pairs,
    exclusive; a single topic only) bounds the records read: what a replay of a
    fixed offset range (the tuner, Compare) reads, whatever arrives later.
    ``read_committed`` reads only committed records of transactional
    producers (Kafka's ``isolation.level``; the latest offsets Spark plans to
    are then the last stable ones), leaving out aborted ones.
    """

    bootstrap: str
    topic: str
    value_columns: tuple[tuple[str, str], ...]
    value_format: ValueFormat = "json"
    columns: ColumnMapping = RECORD_COLUMNS
    pattern: bool = False
    starting_offsets: StartingOffsets = "earliest"
    starting_timestamp: int | None = None
    max_offsets_per_trigger: int | None = None
    fail_on_data_loss: bool = True
    end_offsets: tuple[tuple[int, int], ...] | None = None
    read_committed: bool = False
    kind: Literal["kafka"] = field(default="kafka", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bootstrap", check_bootstrap(self.bootstrap))
        if not isinstance(self.pattern, bool):
            raise ConfigError("source.pattern", self.pattern, "must be true or false")
        if self.pattern:
            if not isinstance(self.topic, str) or not self.topic.strip():
                raise ConfigError("source.topic", self.topic, "must be a pattern of topic names, e.g. clicks-.*")
        else:
            check_topic(self.topic)
        require_choice("source.value_format", self.value_format, VALUE_FORMATS)
        object.__setattr__(self, "value_columns", tuple(tuple(pair) for pair in self.value_columns))
        self._check_value_columns()
        require_choice("source.starting_offsets", self.starting_offsets, STARTING_OFFSETS)
        if self.starting_timestamp is not None:
            require_int("source.starting_timestamp", self.starting_timestamp, 0)
        if self.max_offsets_per_trigger is not None:
            require_int("source.max_offsets_per_trigger", self.max_offsets_per_trigger, 1)
        if not isinstance(self.fail_on_data_loss, bool):
            raise ConfigError("source.fail_on_data_loss", self.fail_on_data_loss, "must be true or false")
        if not isinstance(self.read_committed, bool):
            raise ConfigError("source.read_committed", self.read_committed, "must be true or false")
        if self.end_offsets is not None:
            if self.pattern:
                raise ConfigError("source.end_offsets", self.end_offsets, "apply to one topic, not a pattern")
            ends = tuple((int(partition), int(offset)) for partition, offset in self.end_offsets)
            if any(partition < 0 or offset < 0 for partition, offset in ends):
                raise ConfigError("source.end_offsets", self.end_offsets, "must be (partition, offset) pairs of whole numbers of at least 0")
            object.__setattr__(self, "end_offsets", ends)
        if not isinstance(self.columns, ColumnMapping):
            raise ConfigError("source.columns", self.columns, "is not a column mapping")
        if self.columns.event_time != KAFKA_TIMESTAMP and self.columns.arrival is None:
            object.__setattr__(self, "columns", replace(self.columns, arrival=KAFKA_TIMESTAMP, arrival_format="auto"))
        self.columns.check_columns(self.schema)

    def _check_value_columns(self) -> None:
        pairs = self.value_columns
        if not pairs:
            raise ConfigError("source.value_columns", pairs, "are empty: read a sample of the topic's messages first")
        seen: set[str] = set()
        for pair in pairs:
            if len(pair) != 2 or not all(isinstance(part, str) for part in pair) or not pair[0]:
                raise ConfigError("source.value_columns", pair, "must be a (name, type) pair")
            name, data_type = pair
            if name in KAFKA_COLUMNS or name == CORRUPT:
                raise ConfigError("source.value_columns", name, f"is a name the record's own columns take ({', '.join(KAFKA_COLUMNS)}); rename it in the messages")
            if name in seen:
                raise ConfigError("source.value_columns", name, "appears twice")
            seen.add(name)
            if data_type not in VALUE_TYPES:
                raise ConfigError("source.value_columns", pair, f"has type {data_type!r}, not one of {', '.join(VALUE_TYPES)}")
            if self.value_format == "csv" and data_type != "string":
                raise ConfigError("source.value_columns", pair, "must be of type string: CSV text is read as text and parsed by role, as datasets are")

    @property
    def schema(self) -> dict[str, str]:
        """Every column a record offers the mapping, name → Spark type: the value's, then :data:`KAFKA_COLUMNS`."""
        return {**dict(self.value_columns), **KAFKA_COLUMNS}

    @property
    def arrival(self) -> Arrival:
        return "record"

    @property
    def reports_lag(self) -> bool:
        return True

    @property
    def stamp(self) -> str:
        return "when it was produced: its Kafka record timestamp (or the arrival time its publisher gave it)"

    @property
    def ends(self) -> bool:
        return True

    @property
    def label(self) -> str:
        return self.topic

    @property
    def address(self) -> str:
        return f"kafka://{self.bootstrap}/{self.topic}"

    address_field = "source.topic"

    @property
    def as_topic(self) -> KafkaSource:
        return self

    def reads_topic(self, name: str) -> bool:
        if not self.pattern:
            return name == self.topic
        try:
            return re.fullmatch(self.topic, name) is not None  # Python's regular expressions standing in for Java's
        except re.error:
            return True  # a pattern Python cannot read: taken to match, so nothing it may read is deleted under it

    @property
    def replays_offsets(self) -> bool:
        return True

    def replay_arrival(self, rule: ArrivalRule) -> ArrivalRule:
        """Busy, whatever is asked: a replay reads the range under available-now, each batch's records there before it runs."""
        return "busy"

    @property
    def fixed(self) -> bool:
        return self.end_offsets is not None

    @property
    def batch_rule(self) -> str:
        return f"max_offsets_per_trigger:{self.max_offsets_per_trigger}"

    def replayed(self, purpose: str) -> KafkaSource:
        """The topic from its earliest offsets (to its ``end_offsets``, when bounded), read under the available-now trigger."""
        if self.pattern:
            raise ConfigError("source.pattern", self.topic, f"cannot be {purpose}: a replay reads one topic's offsets")
        return replace(self, starting_offsets="earliest", starting_timestamp=None)

    def bounded_now(self) -> KafkaSource:
        """The topic from its earliest offsets to its latest as its brokers answer now; itself when bounded already or a pattern."""
        if self.end_offsets is not None or self.pattern:
            return self
        return replace(self, starting_offsets="earliest", starting_timestamp=None, end_offsets=describe_topic(self.bootstrap, self.topic).end_offsets())

    def replay_facts(self, summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """``end_offsets``: where the replay ended, ``{topic: {partition: offset}}`` as Spark reports the last batch that read any (``None``: none did)."""
        ends = [summary["source_offsets"][1] for summary in summaries if summary.get("source_offsets") and summary["source_offsets"][1]]
        return {"end_offsets": json.loads(ends[-1]) if ends else None}

    def bound_facts(self) -> dict[str, Any]:
        """``end_offsets``: the bound, partition → offset (empty when unbounded)."""
        return {"end_offsets": dict(self.end_offsets or ())}

    @property
    def step_unit(self) -> str:
        return "batches of records"

    def steppable(self) -> KafkaSource:
        """This topic when a walkthrough can step through it: one topic, from its earliest offsets or a time, at most so many records a
        micro-batch; :class:`ConfigError` naming the field otherwise."""
        if self.max_offsets_per_trigger is None:
            raise ConfigError("source.max_offsets_per_trigger", 0, "(no cap) reads everything in one micro-batch: cap the records of a micro-batch to step through a topic")
        if self.pattern:
            raise ConfigError("source.topic", self.topic, "is a pattern: step through one topic")
        if self.starting_offsets == "latest" and self.starting_timestamp is None:
            raise ConfigError("source.starting_offsets", "latest", "leaves nothing to step through: start at the earliest offsets or at a time")
        return self

    def stepping(self, staging_name: str) -> SteppedTopic:
        return SteppedTopic(self, staging_name)

    def explain_failure(self, error: str) -> str | None:
        """The brokers stopped answering, records the query had not read were deleted, or the topic was: what happened, and what to do."""
        lowered = error.lower()
        if "unknowntopicorpartition" in lowered or ("topic" in lowered and "does not exist" in lowered):
            return f"The topic {self.topic} is gone from {self.bootstrap}: it was deleted while the query read it. The result so far is kept; start a new query on a topic that exists."
        if "offsetoutofrange" in lowered or "data loss" in lowered or "failondataloss" in lowered or "data may have been lost" in lowered:
            return (
                f"Records of {self.topic} the query had not read yet are gone: retention deleted them, or the topic was deleted and made again. "
                "Spark stops rather than skip them (failOnDataLoss). The result so far is kept; a new query starts from what the topic holds now."
            )
        if "timeout" in lowered or "node assignment" in lowered or "listnodes" in lowered:
            return (
                f"The brokers at {self.bootstrap} stopped answering. Once they are back (`make kafka` starts the local one again), resume the "
                "query on the Queries page: it goes on from its checkpoint, with nothing lost or counted twice."
            )
        return None

    def options(self, *, client_timeouts: bool = True) -> dict[str, str]:
        """The options of Spark's Kafka source for this configuration (as ``readStream.format("kafka").options(...)`` takes them).

        ``client_timeouts=False`` leaves out the lab's short :data:`CLIENT_TIMEOUTS` (an exported program on another cluster keeps Kafka's own:
        a first offsets call to a cold or distant broker can take longer than 5 s)."""
        options = {"kafka.bootstrap.servers": self.bootstrap, "subscribePattern" if self.pattern else "subscribe": self.topic}
        if self.starting_timestamp is not None:
            options["startingTimestamp"] = str(self.starting_timestamp)
        else:
            options["startingOffsets"] = self.starting_offsets
        if self.max_offsets_per_trigger is not None:
            options["maxOffsetsPerTrigger"] = str(self.max_offsets_per_trigger)
        options["failOnDataLoss"] = str(self.fail_on_data_loss).lower()
        if self.read_committed:
            options["kafka.isolation.level"] = "read_committed"
        if client_timeouts:
            options.update(CLIENT_TIMEOUTS)
        return options

    def value_struct(self) -> StructType:
        """The value's schema as Spark takes it, with the corrupt-record column Spark fills for a value that does not parse."""
        from pyspark.sql import types as T

        types = {
            "string": T.StringType(), "bigint": T.LongType(), "int": T.IntegerType(), "double": T.DoubleType(),
            "boolean": T.BooleanType(), "timestamp": T.TimestampType(), "date": T.DateType(),
        }
        fields = [T.StructField(name, types[data_type]) for name, data_type in self.value_columns]
        return T.StructType([*fields, T.StructField(CORRUPT, T.StringType())])

    def value_ddl(self) -> str:
        """:meth:`value_struct` as a DDL schema string (what ``from_csv`` takes, and an exported program)."""
        return _ddl(self.value_struct())

    def decoded(self, raw: DataFrame) -> DataFrame:
        """``raw`` Kafka records (Spark's columns ``key``, ``value``, ``timestamp``...) as the value's columns and :data:`KAFKA_COLUMNS`, plus ``kafka_partition``, ``kafka_offset`` and ``malformed`` (the value did not parse)."""
        return decode_records(raw, self.value_format, self.value_ddl(), [name for name, _ in self.value_columns])

    def within_end(self, records: DataFrame) -> DataFrame:
        """Spark's Kafka ``records`` (columns ``partition``, ``offset``) before :attr:`end_offsets`; all of them without an end."""
        return records_before(records, None if self.end_offsets is None else dict(self.end_offsets))

    def selected(self, decoded: DataFrame) -> list[Column]:
        """The stream's columns (``event_time`` -- null for a malformed record --, ``key``, then the value and id when mapped) of :meth:`decoded` records."""
        from pyspark.sql import functions as F

        event_time, key, *rest = dataset_columns(self.columns, self.schema)
        return [F.when(~F.col("malformed"), event_time).alias("event_time"), key, *rest]

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
        require_connector()
        from pyspark.sql import functions as F

        raw = spark.readStream.format("kafka").options(**self.options()).load()
        decoded = self.decoded(self.within_end(raw))
        return decoded.select(*self.selected(decoded), F.unix_millis(KAFKA_TIMESTAMP).alias(PRODUCED)), None

    def view_frame(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
        """The records as a SQL view's rows (:meth:`viewed`)."""
        require_connector()
        raw = spark.readStream.format("kafka").options(**self.options()).load()
        return self.viewed(self.decoded(self.within_end(raw))), None

    def view_rows(self, spark: SparkSession) -> DataFrame:
        return self.viewed(self.records(spark))

    def viewed(self, decoded: DataFrame) -> DataFrame:
        """:meth:`decoded` records as a user's SQL sees them (:func:`~streaming.engine.builders.topic_view`): the value's columns, then the
        record's timestamp, key, partition and offset, the mapped event time a timestamp (null for a malformed record, which the view leaves
        out and counts)."""
        check_time_fit(self.columns.time_format, self.schema[self.columns.event_time], "columns.time_format")
        return topic_view(decoded, self.schema, self.columns.event_time, self.columns.time_format)

    def rows(self, spark: SparkSession) -> DataFrame:
        """The records from the starting offsets to :attr:`end_offsets` (or the latest) as one batch DataFrame of the stream's columns."""
        decoded = self.records(spark)
        return decoded.select(*self.selected(decoded))

    def records(self, spark: SparkSession, start: str | None = None, end: str | None = None) -> DataFrame:
        """The decoded records (:meth:`decoded`) of a batch read from ``start`` to ``end`` (Spark's offsets JSON; default: the source's start, :attr:`end_offsets` or the latest)."""
        require_connector()
        return self.decoded(spark.read.format("kafka").options(**self.batch_options(start, end)).load())

    def batch_options(self, start: str | None = None, end: str | None = None, *, client_timeouts: bool = True) -> dict[str, str]:
        """The options of Spark's Kafka source for a batch read of :meth:`records` (``spark.read.format("kafka").options(...)``): from ``start``
        to ``end`` (Spark's offsets JSON; default: the source's start, :attr:`end_offsets` or the latest)."""
        import json

        dropped = ("maxOffsetsPerTrigger", "startingOffsets", "startingTimestamp")
        options = {name: value for name, value in self.options(client_timeouts=client_timeouts).items() if name not in dropped}
        if start is not None:
            options["startingOffsets"] = start
        elif self.starting_timestamp is not None:
            options["startingTimestamp"] = str(self.starting_timestamp)
        else:
            options["startingOffsets"] = self.starting_offsets
        if end is not None:
            options["endingOffsets"] = end
        elif self.end_offsets is not None:
            options["endingOffsets"] = json.dumps({self.topic: {str(partition): offset for partition, offset in self.end_offsets}})
        return options


def _ddl(struct: StructType) -> str:
    """``struct`` as a DDL schema string, every name back-quoted (a back-quote in a name doubled): what ``from_csv`` takes."""
    return ", ".join("`" + item.name.replace("`", "``") + "` " + item.dataType.simpleString() for item in struct.fields)
