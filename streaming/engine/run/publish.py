"""Publishing a sample feed or a dataset into a Kafka topic, micro-batch by micro-batch, as a replay would hand it to Spark.

The rows go out in the source's batch order (its files, ``rows:N`` or its
arrival intervals: :func:`~streaming.engine.data.batching.cut_batches`), rows of a
batch in file order, each batch flushed to the brokers before the next:

- **value**: the row as a JSON object (a CSV row's cells typed as the
  dataset's SQL view types them: numbers as numbers, an empty cell null, times
  as written; a JSON line as it is, a Parquet row with times in ISO-8601), or,
  with ``value_format`` ``csv``, a CSV dataset's line without its header;
- **headers**: :data:`~streaming.engine.kafka.kafka_terms.MAPPING_HEADER`, the
  dataset's column mapping, so a form over the topic starts from its event-time
  column and time format, not from a guess by names;
- **key**: the key column's text (no key when the data has none);
- **timestamp**: the row's arrival time when the data has an arrival column
  (read by Spark as the mapping says; a row whose arrival does not parse takes
  the row before it's), else the moment it is produced.

As fast as possible, one batch every ``seconds_per_batch``, or paced by the
arrival column: the pause after a batch is the arrival gap to the next ÷
``speed``. Keys go to partitions as Java clients place them (murmur2), so a
key's records stay in order in one partition.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import io
import json
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..data.batching import arrival_micros, arrival_pauses, cut_batches, read_rows
from ..data.preview import dataset_schema, read_dataset, stream_schema
from ..errors import Cancelled, ConfigError
from ..kafka.kafka_terms import MAPPING_HEADER, ValueFormat
from ..kafka.topics import client_settings, create_topic, delete_topic, describe_topic
from ..sources.dataset import view_batch
from ..sources.feed import MAX_SPEED, FeedSource

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["Published", "publish", "publish_paced"]

ProgressCallback = Callable[[int, int, int], None]
"""Called after each batch with (batches published, batches in all, messages published)."""


@dataclass(frozen=True)
class Published:
    """What a publish wrote: the topic, its partitions, the messages and batches, the time it took and the topic's end offsets after it."""

    topic: str
    partitions: int
    created: bool
    messages: int
    batches: int
    seconds: float
    end_offsets: tuple[tuple[int, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic, "partitions": self.partitions, "created": self.created, "messages": self.messages, "batches": self.batches,
            "seconds": round(self.seconds, 3), "end_offsets": {str(partition): offset for partition, offset in self.end_offsets},
        }


def _json_default(value: Any) -> Any:
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


_INTEGERS = ("tinyint", "smallint", "int", "bigint")
_DECIMALS = ("float", "double")


def _typed(cell: str, kind: str | None) -> Any:
    """A CSV cell as the dataset's SQL view types it (:func:`~streaming.engine.builders.view_batch`): empty is null, a number column's cell a
    number, a boolean one's a boolean; any other (text, and times, which keep how they are written) its text."""
    if cell == "":
        return None
    try:
        if kind in _INTEGERS:
            return int(cell)
        if kind in _DECIMALS or (kind or "").startswith("decimal"):
            return float(cell)
    except ValueError:
        return cell
    if kind == "boolean" and cell.lower() in ("true", "false"):
        return cell.lower() == "true"
    return cell


def _values(rows: Sequence[Any], header: Sequence[str] | None, fmt: str, value_format: ValueFormat, types: Mapping[str, str] | None = None) -> list[str]:
    if value_format == "csv":
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        lines = []
        for row in rows:
            buffer.seek(0)
            buffer.truncate()
            writer.writerow(row)
            lines.append(buffer.getvalue().rstrip("\n"))
        return lines
    if fmt == "csv":
        names = list(header or [])
        kinds = [(types or {}).get(name) for name in names]
        return [json.dumps({name: _typed(cell, kind) for name, cell, kind in zip(names, row, kinds)}, ensure_ascii=False) for row in rows]
    if fmt == "json":
        return list(rows)
    return [json.dumps(row, ensure_ascii=False, default=_json_default) for row in rows]


def _view_types(spark: SparkSession, files: Sequence[Path], source: FeedSource) -> dict[str, str]:
    """Each column's type as the dataset's SQL view reads it (numbers inferred; the event time a timestamp)."""
    batch = view_batch(spark, files, "csv", source.columns)
    return {field.name: field.dataType.simpleString() for field in batch.schema.fields}


def _keys(rows: Sequence[Any], header: Sequence[str] | None, fmt: str, key: str | None) -> list[str | None]:
    if key is None:
        return [None] * len(rows)
    if fmt == "csv":
        position = list(header or []).index(key) if key in (header or []) else None
        return [None if position is None or position >= len(row) else row[position] for row in rows]  # an empty cell is key b"": its partition stays fixed
    if fmt == "json":
        keys: list[str | None] = []
        for line in rows:
            try:
                parsed = json.loads(line)
            except ValueError:
                parsed = None
            found = parsed.get(key) if isinstance(parsed, dict) else None
            keys.append(None if found is None else str(found))
        return keys
    return [None if row.get(key) is None else str(row.get(key)) for row in rows]


def _check(source: FeedSource, value_format: ValueFormat, speed: float | None, seconds_per_batch: float) -> None:
    if value_format not in ("json", "csv"):
        raise ConfigError("value_format", value_format, "is not one of json, csv")
    if value_format == "csv" and source.file_format != "csv":
        raise ConfigError("value_format", "csv", f"publishes a CSV dataset's lines; this one is {source.file_format}: publish it as json")
    if isinstance(seconds_per_batch, bool) or not isinstance(seconds_per_batch, (int, float)) or seconds_per_batch < 0:
        raise ConfigError("seconds_per_batch", seconds_per_batch, "must be 0 or more")
    if speed is not None:
        if isinstance(speed, bool) or not isinstance(speed, (int, float)) or not 0 < speed <= MAX_SPEED:
            raise ConfigError("speed", speed, f"must be a number above 0 and at most {MAX_SPEED:g}")
        if source.batching.column is None:
            raise ConfigError("speed", speed, "paces by arrival time: batch by an arrival column to use it")


def _cancelled(bootstrap: str, topic: str, created: bool, sent: int, batches: int, messages: int) -> NoReturn:
    """Raise :class:`Cancelled` for a publish stopped after ``sent`` of ``batches`` batches, deleting the topic first when this publish created it."""
    done = f"publishing to {topic}: cancelled after {sent} of {batches} batches"
    if not created:
        raise Cancelled(f"{done}; the {messages:,} records sent stay in it")
    try:
        delete_topic(bootstrap, topic)
    except ConfigError as err:
        raise Cancelled(f"{done}; the topic it had created could not be deleted ({err}): delete it on the Datasets page") from None
    raise Cancelled(f"{done}; the topic it had created is deleted")


def publish(
    spark: SparkSession, source: FeedSource, bootstrap: str, topic: str, *, partitions: int = 1, value_format: ValueFormat = "json",
    speed: float | None = None, seconds_per_batch: float = 0.0, cancel: threading.Event | None = None, progress: ProgressCallback | None = None,
) -> Published:
    """Publish ``source`` into ``topic`` on ``bootstrap`` (see the module docstring), creating the topic with ``partitions`` partitions if needed.

    An existing topic is appended to. Once ``cancel`` is set the publish stops
    after the batch being sent and raises :class:`~streaming.engine.errors.Cancelled`:
    a topic this publish created is deleted (a partial copy of the data would
    read as the data), and records appended to an existing topic stay, as the
    message says. :class:`ConfigError` when the brokers do not answer or refuse a record.
    """
    from confluent_kafka import Producer

    _check(source, value_format, speed, seconds_per_batch)
    stop = cancel if cancel is not None else threading.Event()
    started = time.monotonic()
    created = create_topic(bootstrap, topic, partitions)
    files = source.files()
    arrival = source.columns.arrival
    with tempfile.TemporaryDirectory(prefix="streaming-lab-publish-") as folder:
        schema: dict[str, str] = {}
        struct = None
        if not source.sample_layout:
            batch = read_dataset(spark, files, source.file_format)
            schema, struct = dataset_schema(batch), stream_schema(batch)
        cut = cut_batches(
            spark, files, source.file_format, source.batching, Path(folder), time_format=source.arrival_format, schema=schema, struct=struct,
        )
        batches = cut.files
        pauses = arrival_pauses(cut.arrivals, speed) if speed is not None and cut.arrivals is not None else [float(seconds_per_batch)] * len(batches)
        by_arrival = cut.row_times if arrival is not None and arrival == source.batching.column else None
        types = _view_types(spark, files, source) if source.file_format == "csv" and value_format == "json" else None
        mapping: list[tuple[str, str | bytes | None]] = [(MAPPING_HEADER, json.dumps(source.columns.to_dict()).encode("utf-8"))]
        producer = Producer({**client_settings(bootstrap), "partitioner": "murmur2_random", "linger.ms": 5, "message.timeout.ms": 30_000})
        failures: list[str] = []

        def delivered(error: Any, message: Any) -> None:
            if error is not None:
                failures.append(str(error))

        messages = 0
        previous_us: int | None = None
        for index, path in enumerate(batches):
            header, rows = read_rows(path, source.file_format)
            times: list[int | None] = [None] * len(rows)
            if by_arrival is not None:
                times = by_arrival[index]  # read once, when the dataset was cut: a Spark job per batch took longer than a fast pace allows
            elif arrival is not None:
                times = list(arrival_micros(spark, path, source.file_format, arrival, source.columns.arrival_format, schema, struct))
            values = _values(rows, header, source.file_format, value_format, types)
            for value, key, micros in zip(values, _keys(rows, header, source.file_format, source.columns.key), times):
                micros = previous_us if micros is None else micros
                previous_us = micros
                producer.produce(
                    topic, value=value.encode("utf-8"), key=None if key is None else key.encode("utf-8"), on_delivery=delivered, headers=mapping,
                    timestamp=0 if micros is None else micros // 1000,  # 0: the moment it is produced
                )
                messages += 1
                producer.poll(0)
            if producer.flush(30) or failures:
                raise ConfigError("topic", topic, f"refused records from batch {index}: {(failures or ['the brokers did not confirm them within 30 s'])[0]}")
            if progress is not None:
                progress(index + 1, len(batches), messages)
            if index + 1 < len(batches) and (stop.is_set() or (pauses[index] > 0 and stop.wait(pauses[index]))):  # the last batch sent: published whole
                _cancelled(bootstrap, topic, created, index + 1, len(batches), messages)
    info = describe_topic(bootstrap, topic)
    return Published(topic, len(info.partitions), created, messages, len(batches), time.monotonic() - started, info.end_offsets())


def publish_paced(
    bootstrap: str, topic: str, messages: Sequence[tuple[str | None, str | None]], rate: int, seconds: float, cancel: threading.Event | None = None,
) -> int:
    """Produce ``rate`` records a second into ``topic`` for ``seconds`` seconds, cycling through ``messages`` (``(key, value)`` pairs); the records produced.

    Each record's timestamp is the moment it is produced (``CreateTime``):
    what end-to-end latency is measured from. Records go out in steps of 10 ms
    with 1 ms of lingering. Stops early once ``cancel`` is set.
    """
    from confluent_kafka import Producer

    if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 1_000_000:
        raise ConfigError("rate", rate, "must be a whole number of records a second between 1 and 1,000,000")
    if not messages:
        raise ConfigError("messages", [], "are empty: there is nothing to publish")
    producer = Producer({**client_settings(bootstrap), "linger.ms": 1})
    encoded = [(None if key is None else key.encode(), None if value is None else value.encode()) for key, value in messages]
    started = time.monotonic()
    sent = 0
    while (elapsed := time.monotonic() - started) < seconds and not (cancel is not None and cancel.is_set()):
        for index in range(sent, int(elapsed * rate)):
            key, value = encoded[index % len(encoded)]
            try:
                producer.produce(topic, key=key, value=value)
            except BufferError:
                producer.poll(0.05)
                producer.produce(topic, key=key, value=value)
            sent = index + 1
        producer.poll(0)
        time.sleep(0.01)
    cancelled = cancel is not None and cancel.is_set()
    for index in range(sent, sent if cancelled else int(seconds * rate)):  # what a late wake-up left at the deadline
        key, value = encoded[index % len(encoded)]
        producer.produce(topic, key=key, value=value)
        producer.poll(0)
        sent = index + 1
    producer.flush(30)
    return sent
