"""What a Kafka cluster holds, asked with a Kafka client from the app's side (confluent-kafka), not through Spark.

Spark's Kafka source retries an unreachable broker for minutes and reports a
missing topic only once a query runs; the pages and the CLI ask first, with a
timeout of a few seconds, and say what is wrong in words: the address that
does not answer, the topics that do exist. The same client reads a topic's
partitions and offsets, its latest messages and a sample to infer the value's
columns from (:func:`infer_value_columns`, with Spark's own inference on the
sample: the types a query will read).

Every function takes the brokers (``host:port[,host:port]``) and a timeout in
seconds, and raises :class:`~streaming.engine.errors.ConfigError` naming the
field it was given for (``source.bootstrap``, ``source.topic``).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..data.preview import dataset_schema, read_dataset
from ..errors import ConfigError
from .kafka_terms import CORRUPT, KAFKA_COLUMNS, MAPPING_HEADER, VALUE_TYPES, ValueFormat, check_bootstrap, check_topic, planned_batches

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..sources.kafka import KafkaSource

__all__ = [
    "MESSAGE_COLUMNS",
    "SAMPLE_MESSAGES",
    "STAGING_PREFIX",
    "STALE_SECONDS",
    "TIMEOUT",
    "PartitionOffsets",
    "Record",
    "RecordCopier",
    "TopicInfo",
    "create_topic",
    "decode_messages",
    "delete_topic",
    "describe_topic",
    "infer_value_columns",
    "latest_messages",
    "published_mapping",
    "read_records",
    "require_topic",
    "staging_name",
    "start_offsets",
    "sweep_staging",
    "topic_names",
    "write_sample",
]

SAMPLE_MESSAGES = 200
"""The messages a topic's value columns are inferred from (the form's sample, ``kafka://`` PATHs of the CLI)."""
TIMEOUT = 5.0
"""Seconds a question to the brokers may take before the address is reported as not answering."""
STAGING_PREFIX = "streaming-lab-walkthrough-"
"""The names of the topics a walkthrough of a topic copies its steps into (deleted with its query; not offered as topics to read)."""
STALE_SECONDS = 86_400
"""A staging topic made this long ago outlived its walkthrough (a server that died before deleting it): :func:`sweep_staging` deletes it."""
MESSAGE_COLUMNS = ["partition", "offset", "timestamp", "key", "value"]
CLIENT_ID = "streaming-lab"
LOG = logging.getLogger(f"{__name__}.client")
"""librdkafka's own lines (a broker that does not answer, retried): logged at debug, never printed; the functions raise what matters."""
LOG.propagate = False
LOG.addHandler(logging.NullHandler())


def client_settings(bootstrap: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    """librdkafka settings for a short-lived client of ``bootstrap``: fail within ``timeout`` seconds, log nothing to stderr."""
    return {
        "bootstrap.servers": check_bootstrap(bootstrap),
        "client.id": CLIENT_ID,
        "socket.timeout.ms": int(timeout * 1000),
        "socket.connection.setup.timeout.ms": int(timeout * 1000),
        "logger": LOG,
    }


def _consumer(bootstrap: str, timeout: float, **settings: Any) -> Any:
    """A consumer of its own group that commits nothing: it reads where it is told (``assign``), or asks for offsets."""
    from confluent_kafka import Consumer

    return Consumer({**client_settings(bootstrap, timeout), "group.id": f"{CLIENT_ID}-{uuid.uuid4().hex}", "enable.auto.commit": False, **settings})


def _admin(bootstrap: str, timeout: float) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(client_settings(bootstrap, timeout))


def _unreachable(bootstrap: str, timeout: float) -> ConfigError:
    return ConfigError(
        "source.bootstrap", bootstrap,
        f"does not answer within {timeout:g} s: no Kafka broker listens there (start one with `make kafka`, or check the address)",
    )


def _metadata(bootstrap: str, timeout: float, topic: str | None = None) -> Any:
    from confluent_kafka import KafkaException

    try:
        return _admin(bootstrap, timeout).list_topics(topic=topic, timeout=timeout)
    except KafkaException:
        raise _unreachable(bootstrap, timeout) from None


def topic_names(bootstrap: str, timeout: float = TIMEOUT) -> list[str]:
    """The topics of the cluster, without Kafka's internal ones (``__consumer_offsets``...) and the walkthroughs' staging topics, sorted."""
    topics = _metadata(bootstrap, timeout).topics
    return sorted(name for name in topics if not name.startswith(("__", STAGING_PREFIX)))


@dataclass(frozen=True)
class PartitionOffsets:
    """One partition: its earliest offset (the first record retention kept) and its latest (the next record's offset)."""

    partition: int
    earliest: int
    latest: int

    @property
    def messages(self) -> int:
        return self.latest - self.earliest


@dataclass(frozen=True)
class TopicInfo:
    """A topic's partitions and their offsets, read at ``read_at`` (epoch seconds)."""

    name: str
    partitions: tuple[PartitionOffsets, ...]
    read_at: float

    @property
    def messages(self) -> int:
        return sum(partition.messages for partition in self.partitions)

    @property
    def latest_total(self) -> int:
        return sum(partition.latest for partition in self.partitions)

    def end_offsets(self) -> tuple[tuple[int, int], ...]:
        """``(partition, latest)`` pairs: the end of what the topic holds now."""
        return tuple((partition.partition, partition.latest) for partition in self.partitions)

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(
            [(item.partition, item.earliest, item.latest, item.messages) for item in self.partitions],
            columns=["partition", "earliest offset", "latest offset", "messages"],
        )


def require_topic(bootstrap: str, topic: str, timeout: float = TIMEOUT) -> list[int]:
    """The partition numbers of ``topic``; :class:`ConfigError` listing the topics that exist when it does not."""
    check_topic(topic)
    metadata = _metadata(bootstrap, timeout)
    found = metadata.topics.get(topic)
    if found is None or found.error is not None:
        names = sorted(name for name in metadata.topics if not name.startswith("__"))
        listed = ", ".join(names) if names else "none yet: publish a dataset or a sample feed to one (Datasets page, or python -m streaming publish)"
        raise ConfigError("source.topic", topic, f"does not exist on {bootstrap} (topics: {listed})")
    return sorted(found.partitions)


def describe_topic(bootstrap: str, topic: str, timeout: float = TIMEOUT) -> TopicInfo:
    """``topic``'s partitions with their earliest and latest offsets (:class:`TopicInfo`)."""
    from confluent_kafka import KafkaException, TopicPartition

    partitions = require_topic(bootstrap, topic, timeout)
    consumer = _consumer(bootstrap, timeout)
    try:
        offsets = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout)
            offsets.append(PartitionOffsets(partition, int(low), int(high)))
    except KafkaException:
        raise _unreachable(bootstrap, timeout) from None
    finally:
        consumer.close()
    return TopicInfo(topic, tuple(offsets), time.time())


def latest_messages(bootstrap: str, topic: str, count: int = 20, timeout: float = TIMEOUT, *, earliest: bool = False) -> pd.DataFrame:
    """At most ``count`` of ``topic``'s latest messages (or, with ``earliest``, its first), newest last: :data:`MESSAGE_COLUMNS`.

    ``timestamp`` is the record timestamp (UTC, naive), ``key`` and ``value``
    the bytes decoded as UTF-8 (invalid bytes replaced). The count is spread
    over the partitions in proportion to what each holds.
    """
    info = describe_topic(bootstrap, topic, timeout)
    total = info.messages
    if total == 0 or count <= 0:
        return pd.DataFrame(columns=MESSAGE_COLUMNS)
    wanted: dict[int, tuple[int, int]] = {}
    for partition in info.partitions:
        share = min(partition.messages, max(1, round(count * partition.messages / total))) if partition.messages else 0
        if share:
            start = partition.earliest if earliest else partition.latest - share
            wanted[partition.partition] = (start, start + share)
    records = [
        (record.partition, record.offset, pd.Timestamp(record.timestamp_ms, unit="ms"), _text(record.key), _text(record.value))
        for record in read_records(bootstrap, topic, wanted, timeout)
    ]
    frame = pd.DataFrame(records, columns=MESSAGE_COLUMNS)
    return frame.sort_values(["timestamp", "partition", "offset"], ignore_index=True)


def published_mapping(bootstrap: str, topic: str, timeout: float = TIMEOUT) -> dict[str, Any] | None:
    """The column mapping the lab's publish gave ``topic``'s latest record (its :data:`~.kafka_terms.MAPPING_HEADER`, as
    :meth:`~streaming.engine.data.columns.ColumnMapping.to_dict` writes it); ``None`` for a topic written otherwise, or empty."""
    info = describe_topic(bootstrap, topic, timeout)
    latest = max((partition for partition in info.partitions if partition.messages), key=lambda partition: partition.latest, default=None)
    if latest is None:
        return None
    for record in read_records(bootstrap, topic, {latest.partition: (latest.latest - 1, latest.latest)}, timeout):
        for name, value in record.headers:
            if name == MAPPING_HEADER and value:
                try:
                    found = json.loads(value.decode("utf-8"))
                except ValueError:
                    return None
                return found if isinstance(found, dict) else None
    return None


@dataclass(frozen=True)
class Record:
    """One record as the broker holds it: partition, offset, timestamp (epoch ms), key and value bytes."""

    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def read_records(
    bootstrap: str, topic: str, ranges: Mapping[int, tuple[int, int]], timeout: float = TIMEOUT, *, whole: bool = False, committed: bool = True,
) -> list[Record]:
    """The records of ``topic`` in ``ranges`` (partition → ``(from, to)`` offsets, ``to`` exclusive), each partition's in offset order.

    A partition is read until a record at or past ``to - 1``, or its position
    reaches ``to`` (past a transaction's commit marker, which takes an offset
    but is no record); what has not come within ``timeout`` seconds is left
    out, or with ``whole`` raises :class:`ConfigError` naming the partitions short of their end.
    ``committed``: only records of committed transactions (Kafka's ``read_committed``); ``False`` reads them all, as Spark's Kafka source does by default.
    """
    from confluent_kafka import OFFSET_END, KafkaException, TopicPartition

    wanted = {int(partition): (int(start), int(end)) for partition, (start, end) in ranges.items() if end > start}
    if not wanted:
        return []
    consumer = _consumer(bootstrap, timeout, **{"isolation.level": "read_committed" if committed else "read_uncommitted"})
    records: list[Record] = []
    try:
        consumer.assign([TopicPartition(topic, partition, start) for partition, (start, _) in wanted.items()])
        remaining = {partition: end for partition, (_, end) in wanted.items()}
        deadline = time.monotonic() + timeout
        while remaining and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                for position in consumer.position([TopicPartition(topic, number) for number in remaining]):
                    if position.offset >= remaining[int(position.partition)]:  # past a transaction's marker, which is no record
                        remaining.pop(int(position.partition))
                continue
            number, offset = int(message.partition() or 0), int(message.offset() or 0)
            end = remaining.get(number)
            if end is None:
                continue
            if offset < end:
                records.append(Record(number, offset, int(message.timestamp()[1]), message.key(), message.value(), tuple(message.headers() or ())))
            if offset + 1 >= end:  # its last record, or one past the range (the range ended on a marker)
                remaining.pop(number)
                consumer.pause([TopicPartition(topic, number, OFFSET_END)])
    except KafkaException:
        raise _unreachable(bootstrap, timeout) from None
    finally:
        consumer.close()
    if whole and remaining:
        short = ", ".join(f"partition {number} up to offset {end}" for number, end in sorted(remaining.items()))
        raise ConfigError("source.topic", topic, f"did not deliver {short} within {timeout:g} s")
    return records


def start_offsets(bootstrap: str, info: TopicInfo, timestamp_ms: int | None = None, timeout: float = TIMEOUT) -> dict[int, int]:
    """Where a query of the topic ``info`` describes (:func:`describe_topic`) starts in each partition: its earliest offset, or with
    ``timestamp_ms`` its first record at or after that time (the latest offset when none is)."""
    from confluent_kafka import KafkaException, TopicPartition

    if timestamp_ms is None:
        return {partition.partition: partition.earliest for partition in info.partitions}
    consumer = _consumer(bootstrap, timeout)
    try:
        found = consumer.offsets_for_times([TopicPartition(info.name, partition.partition, int(timestamp_ms)) for partition in info.partitions], timeout=timeout)
    except KafkaException:
        raise _unreachable(bootstrap, timeout) from None
    finally:
        consumer.close()
    latest = {partition.partition: partition.latest for partition in info.partitions}
    return {int(item.partition): int(item.offset) if item.offset >= 0 else latest[int(item.partition)] for item in found}


def planned_range(source: KafkaSource) -> list[tuple[dict[int, int], dict[int, int]]]:
    """The micro-batches an available-now replay of ``source``'s topic reads, ``(from, to)`` offsets (partition → offset) each
    (:func:`~streaming.engine.kafka.kafka_terms.planned_batches`): from its start (earliest offsets, or the first records at its
    ``starting_timestamp``) to its ``end_offsets`` (the latest now without), at most ``max_offsets_per_trigger`` records a batch."""
    info = describe_topic(source.bootstrap, source.topic)
    start = start_offsets(source.bootstrap, info, source.starting_timestamp)
    end = dict(source.end_offsets) if source.end_offsets is not None else dict(info.end_offsets())
    return planned_batches(start, {partition: end.get(partition, start[partition]) for partition in start}, source.max_offsets_per_trigger)


class RecordCopier:
    """Produces records into ``target`` as they are -- the same partition, key, value and timestamp, in order -- one transaction a
    :meth:`copy`: a reader at ``read_committed`` sees each copy whole or not at all.

    Kafka confirms a commit before it writes the commit's markers, and a
    ``read_committed`` reader sees the records only once they are written:
    :meth:`copy` returns once the topic's committed end offsets include them
    (each transaction's marker takes one offset in each partition it wrote).
    ``target`` must be new (its offsets start at 0). :class:`ConfigError`
    naming ``target`` when the brokers refuse, or do not confirm within ``timeout`` seconds.
    """

    def __init__(self, bootstrap: str, target: str, timeout: float = 30.0) -> None:
        from confluent_kafka import KafkaException, Producer

        self.bootstrap = bootstrap
        self.target = target
        self.timeout = timeout
        self._ends: dict[int, int] = {}
        self._producer = Producer({
            **client_settings(bootstrap), "transactional.id": f"{CLIENT_ID}-{target}", "linger.ms": 5, "transaction.timeout.ms": int(max(timeout, 10) * 2000),
        })
        try:
            self._producer.init_transactions(timeout)
        except KafkaException as err:
            raise self._refused(err) from None

    def _refused(self, err: Exception) -> ConfigError:
        said = err.args[0].str() if err.args and hasattr(err.args[0], "str") else str(err)
        return ConfigError("topic", self.target, f"refused copied records: {said}")

    def copy(self, records: Sequence[Record]) -> None:
        """Produce ``records`` in one transaction, commit it, and wait until a ``read_committed`` reader sees them; an error aborts the transaction."""
        from confluent_kafka import KafkaException

        try:
            self._producer.begin_transaction()
            for record in records:
                while True:
                    try:
                        self._producer.produce(self.target, value=record.value, key=record.key, partition=record.partition, timestamp=record.timestamp_ms)
                        break
                    except BufferError:  # the local queue is full: let it drain
                        self._producer.poll(0.1)
                self._producer.poll(0)
            self._producer.commit_transaction(self.timeout)
        except (KafkaException, BufferError) as err:
            with contextlib.suppress(KafkaException):
                self._producer.abort_transaction(self.timeout)
            raise self._refused(err) from None
        written = Counter(record.partition for record in records)
        wanted = {partition: self._ends.get(partition, 0) + count + 1 for partition, count in written.items()}
        self._await_committed(wanted)
        self._ends.update(wanted)

    def _await_committed(self, wanted: Mapping[int, int]) -> None:
        """Wait until each partition's committed end offset (last stable offset) reaches ``wanted``'s."""
        from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
        from confluent_kafka.admin import OffsetSpec

        if not wanted:
            return
        admin = _admin(self.bootstrap, self.timeout)
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                futures = admin.list_offsets(
                    {TopicPartition(self.target, partition): OffsetSpec.latest() for partition in wanted}, isolation_level=IsolationLevel.READ_COMMITTED,
                    request_timeout=self.timeout,
                )
                ends = {int(part.partition): int(future.result().offset) for part, future in futures.items()}
            except KafkaException as err:
                raise self._refused(err) from None
            if all(ends.get(partition, 0) >= offset for partition, offset in wanted.items()):
                return
            if time.monotonic() > deadline:
                raise ConfigError("topic", self.target, f"did not show the committed records to readers within {self.timeout:g} s")
            time.sleep(0.01)

    def close(self) -> None:
        """Let the producer go (a transaction under way is aborted by the brokers once it times out)."""
        self._producer.flush(0)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")


def create_topic(bootstrap: str, topic: str, partitions: int = 1, timeout: float = TIMEOUT) -> bool:
    """Create ``topic`` with ``partitions`` partitions, keeping its records whatever their age (``retention.ms=-1``); ``False`` when it exists already.

    Records published from a dataset carry its past arrival times: under a
    time-based retention the broker would delete them at once.
    """
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import NewTopic

    check_topic(topic)
    if isinstance(partitions, bool) or not isinstance(partitions, int) or not 1 <= partitions <= 1000:
        raise ConfigError("partitions", partitions, "must be a whole number between 1 and 1000")
    _metadata(bootstrap, timeout)
    admin = _admin(bootstrap, timeout)  # kept referenced: a collected client abandons its pending requests
    futures = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=-1, config={"retention.ms": "-1"})], operation_timeout=timeout
    )
    try:
        futures[topic].result(timeout=timeout)
    except KafkaException as err:
        if err.args and err.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return False
        raise ConfigError("topic", topic, f"could not be created: {err.args[0].str() if err.args else err}") from None
    deadline = time.monotonic() + timeout
    while topic not in _metadata(bootstrap, timeout).topics and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


def staging_name(now_s: int, tag: str) -> str:
    """The name of a walkthrough's staging topic made at ``now_s`` (epoch seconds), told apart by ``tag``: :func:`sweep_staging` reads its age from it."""
    return check_topic(f"{STAGING_PREFIX}{int(now_s)}-{tag}", "tag")


def sweep_staging(bootstrap: str, now_s: int, older_than: int = STALE_SECONDS, timeout: float = TIMEOUT) -> list[str]:
    """Delete the staging topics of ``bootstrap`` made more than ``older_than`` seconds before ``now_s``; the names deleted.

    A walkthrough deletes its staging topic when its query goes; one whose
    server died keeps it. A name without a time (not made by :func:`staging_name`) is left alone.
    """
    stale = []
    for name in _metadata(bootstrap, timeout).topics:
        made = name[len(STAGING_PREFIX):].split("-", 1)[0] if name.startswith(STAGING_PREFIX) else ""
        if made.isdigit() and int(made) < now_s - older_than:
            delete_topic(bootstrap, name, timeout)
            stale.append(name)
    return sorted(stale)


def delete_topic(bootstrap: str, topic: str, timeout: float = TIMEOUT) -> None:
    """Delete ``topic`` and its records; nothing when it does not exist."""
    from confluent_kafka import KafkaException

    check_topic(topic)
    if topic not in _metadata(bootstrap, timeout).topics:
        return
    try:
        admin = _admin(bootstrap, timeout)
        admin.delete_topics([topic], operation_timeout=timeout)[topic].result(timeout=timeout)
    except KafkaException as err:
        raise ConfigError("topic", topic, f"could not be deleted: {err.args[0].str() if err.args else err}") from None


def _csv_field_names(lines: Sequence[str], csv_columns: Sequence[str] | None) -> list[str]:
    """The names of CSV values' fields: ``csv_columns``, or ``_c0``, ``_c1``... as wide as the widest line (as Spark names a CSV without a header)."""
    if csv_columns:
        return list(csv_columns)
    width = max((len(next(csv.reader(io.StringIO(line)), [])) for line in lines), default=0)
    return [f"_c{index}" for index in range(width)]


def infer_value_columns(
    spark: SparkSession, values: Sequence[str | None], value_format: ValueFormat, csv_columns: Sequence[str] | None = None,
) -> tuple[tuple[str, str], ...]:
    """The value's ``(name, Spark type)`` pairs inferred from ``values`` (a sample of messages) with Spark, as a dataset's are.

    JSON objects: Spark's JSON inference over the sample; a nested object or
    array is read as text, a type not in :data:`VALUE_TYPES` as text.
    CSV lines: ``csv_columns`` names the fields (by default ``_c0``, ``_c1``...,
    as Spark names the columns of a CSV without a header), all text.
    :class:`ConfigError` when the sample holds no message that parses.
    """
    lines = [value for value in values if value is not None and value.strip()]
    if value_format == "csv":
        names = _csv_field_names(lines, csv_columns)
        if not names:
            raise ConfigError("source.topic", "", "has no messages to read the value's columns from")
        if len(set(names)) != len(names):
            raise ConfigError("source.csv_columns", ",".join(names), "name a column twice")
        return tuple((name, "string") for name in names)

    objects = []
    for line in lines:
        try:
            parsed = json.loads(line)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            objects.append(line)
    if not objects:
        raise ConfigError("source.value_format", "json", "fits no message of the sample: none is a JSON object (try csv)")
    with tempfile.TemporaryDirectory(prefix="streaming-lab-sample-") as folder:
        sample = Path(folder) / "sample.jsonl"
        sample.write_text("".join(line.replace("\n", " ") + "\n" for line in objects), encoding="utf-8")
        schema = dataset_schema(read_dataset(spark, [sample], "json"))
    return tuple((name, data_type if data_type in VALUE_TYPES else "string") for name, data_type in schema.items() if name not in (*KAFKA_COLUMNS, CORRUPT))


def write_sample(messages: pd.DataFrame, value_format: ValueFormat, path: Path, csv_columns: Sequence[str] | None = None) -> Path:
    """``messages`` (as :func:`latest_messages` gives them) written to ``path`` as a dataset file a preview reads: each value with the record's columns.

    JSON lines: each message's object with :data:`~streaming.engine.kafka.kafka_terms.KAFKA_COLUMNS`
    added (a value that is no object is written as it is: a malformed row).
    CSV: a header (``csv_columns``, or ``_c0``, ``_c1``...) and each line with
    the two record columns appended. The file is only rewritten when its text
    changes, so a cache keyed by its modification time stays valid.
    """
    lines = [value for value in messages["value"].tolist() if value is not None]
    stamps = [f"{stamp:%Y-%m-%d %H:%M:%S.%f}"[:-3] for stamp in messages["timestamp"]]
    keys = messages["key"].tolist()
    if value_format == "csv":
        names = _csv_field_names(lines, csv_columns)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([*names, *KAFKA_COLUMNS])
        for value, stamp, key in zip(messages["value"], stamps, keys):
            fields = next(csv.reader(io.StringIO(value or "")), [])
            writer.writerow([*fields[: len(names)], *[""] * (len(names) - len(fields)), stamp, key or ""])
        text = out.getvalue()
    else:
        rows = []
        for value, stamp, key in zip(messages["value"], stamps, keys):
            try:
                parsed = json.loads(value) if value is not None else None
            except ValueError:
                parsed = None
            if isinstance(parsed, dict):
                rows.append(json.dumps({**parsed, **dict(zip(KAFKA_COLUMNS, (stamp, key)))}))
            else:
                rows.append((value or "").replace("\n", " "))
        text = "".join(row + "\n" for row in rows)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def decode_messages(messages: pd.DataFrame, value_format: ValueFormat, names: Sequence[str]) -> pd.DataFrame:
    """``messages`` (:data:`MESSAGE_COLUMNS`) with each value split into the columns ``names``, as text, and ``malformed`` (the value does not parse).

    A JSON value must be an object (its fields outside ``names`` are left out);
    a CSV value is split into fields, named in order. The record's partition,
    offset, timestamp and key come first, named as a query names them
    (``kafka_partition``, ``kafka_offset``, ``kafka_timestamp``, ``kafka_key``).
    """
    rows: list[dict[str, Any]] = []
    for value in messages["value"].tolist():
        fields: dict[str, Any] = {}
        malformed = value is None
        if value is not None and value_format == "csv":
            parts = next(csv.reader(io.StringIO(value)), [])
            fields = dict(zip(names, parts))
        elif value is not None:
            try:
                parsed = json.loads(value)
            except ValueError:
                parsed = None
            malformed = not isinstance(parsed, dict)
            fields = {name: parsed[name] for name in names if name in parsed} if isinstance(parsed, dict) else {}
        rows.append({**{name: None if name not in fields else str(fields[name]) for name in names}, "malformed": malformed})
    decoded = pd.DataFrame(rows, columns=[*names, "malformed"])
    record = messages[MESSAGE_COLUMNS[:4]].reset_index(drop=True)
    return pd.concat([record.rename(columns={name: f"kafka_{name}" for name in MESSAGE_COLUMNS}), decoded], axis=1)
