"""Kafka in the lab's words, below both the Kafka source (:mod:`~streaming.engine.sources.kafka`) and the client (:mod:`~streaming.engine.kafka.topics`):
the record's own columns, the value formats and types, the checks of a broker address, a topic name and a ``kafka://`` URL, and how an
available-now query cuts a range of offsets into micro-batches. Both modules import it at their top; the record's column names are the
builders' (:mod:`~streaming.engine.builders`), which Show code's programs define too.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Literal, get_args

from ..builders import CORRUPT, KAFKA_KEY, KAFKA_TIMESTAMP
from ..errors import ConfigError

__all__ = [
    "CORRUPT",
    "KAFKA_COLUMNS",
    "KAFKA_KEY",
    "KAFKA_TIMESTAMP",
    "MAPPING_HEADER",
    "VALUE_FORMATS",
    "VALUE_TYPES",
    "ValueFormat",
    "batch_of_offsets",
    "check_bootstrap",
    "check_topic",
    "parse_kafka_url",
    "planned_batches",
]

KAFKA_COLUMNS: dict[str, str] = {KAFKA_TIMESTAMP: "timestamp", KAFKA_KEY: "string"}
"""The record's own columns next to the value's, with their Spark types."""
MAPPING_HEADER = "streaming-lab-columns"
"""The record header a publish gives every record: the published dataset's column mapping as JSON (which column is the event time, how its
times are written, the key...), so that a form over the topic starts from it rather than from a guess by column names."""
ValueFormat = Literal["json", "csv"]
VALUE_FORMATS: tuple[str, ...] = get_args(ValueFormat)
VALUE_TYPES: tuple[str, ...] = ("string", "bigint", "int", "double", "boolean", "timestamp", "date")
"""The Spark types a value column may have; a sample's nested values are read as text."""

_HOST_PORT = re.compile(r"[A-Za-z0-9._\-\[\]:]+:(\d{1,5})")
_TOPIC = re.compile(r"[A-Za-z0-9._\-]{1,249}")


def check_bootstrap(value: object, field_name: str = "source.bootstrap") -> str:
    """``value`` stripped when it is a comma-separated list of ``host:port``; :class:`ConfigError` otherwise."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(field_name, value, "must name the brokers as host:port (several separated by commas), e.g. 127.0.0.1:9092")
    servers = [part.strip() for part in value.split(",")]
    for server in servers:
        match = _HOST_PORT.fullmatch(server)
        if match is None or not 0 < int(match.group(1)) < 65536:
            raise ConfigError(field_name, value, f"has {server!r}, which is not host:port")
    return ",".join(servers)


def check_topic(value: object, field_name: str = "source.topic") -> str:
    """``value`` when it is a valid Kafka topic name (letters, digits, ``.``, ``_``, ``-``; at most 249); :class:`ConfigError` otherwise."""
    if not isinstance(value, str) or _TOPIC.fullmatch(value) is None or value in (".", ".."):
        raise ConfigError(field_name, value, "is not a Kafka topic name (letters, digits, '.', '_' and '-', at most 249)")
    return value


def parse_kafka_url(url: str) -> tuple[str, str]:
    """``(bootstrap, topic)`` of ``kafka://HOST:PORT[,HOST:PORT]/TOPIC``; :class:`ConfigError` naming ``PATH`` otherwise."""
    if not url.startswith("kafka://") or "/" not in url[len("kafka://"):]:
        raise ConfigError("PATH", url, "is not kafka://HOST:PORT/TOPIC")
    servers, topic = url[len("kafka://"):].split("/", 1)
    return check_bootstrap(servers, "PATH"), check_topic(topic.strip("/"), "PATH")


def planned_batches(start: Mapping[int, int], end: Mapping[int, int], limit: int | None) -> list[tuple[dict[int, int], dict[int, int]]]:
    """The ``(from, to)`` offsets (partition → offset) of each micro-batch an available-now query reads from ``start`` to ``end``, at most ``limit`` records a batch.

    Spark's Kafka source (``KafkaMicroBatchStream.rateLimit``) gives each
    partition its share of ``limit`` in proportion to what it has left,
    rounded down (up below 1, so no partition starves), never past ``end``;
    without a limit, one batch reads everything. Batches that would read
    nothing are not run.
    """
    current = {int(partition): int(offset) for partition, offset in start.items()}
    until = {int(partition): int(offset) for partition, offset in end.items()}
    batches: list[tuple[dict[int, int], dict[int, int]]] = []
    while True:
        sizes = {partition: until[partition] - current.get(partition, until[partition]) for partition in until}
        sizes = {partition: size for partition, size in sizes.items() if size > 0}
        total = float(sum(sizes.values()))
        if total < 1:
            return batches
        if limit is None:
            following = dict(until)
        else:
            following = {}
            for partition, last in until.items():
                if partition not in sizes:
                    following[partition] = last
                    continue
                prorate = limit * (sizes[partition] / total)
                share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
                following[partition] = min(last, current[partition] + share)
        batches.append((dict(current), following))
        current = following


def batch_of_offsets(partitions: Sequence[int], offsets: Sequence[int], ends: Sequence[Mapping[int, int]]) -> list[int]:
    """For each record (its partition and offset), the index in ``ends`` (each batch's end offsets, partition → offset, in batch order,
    as :func:`planned_batches` gives them) of the batch that reads it: the first whose end in the record's partition lies past it; -1 past the last."""
    import numpy as np

    found = np.full(len(offsets), -1, dtype="int64")
    parts, places = np.asarray(partitions, dtype="int64"), np.asarray(offsets, dtype="int64")
    for partition in np.unique(parts):
        reach = np.maximum.accumulate(np.array([until.get(int(partition), 0) for until in ends], dtype="int64"))
        mine = parts == partition
        index = np.searchsorted(reach, places[mine], side="right")
        found[mine] = np.where(index < len(ends), index, -1)
    return found.tolist()
