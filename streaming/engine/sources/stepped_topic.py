"""A topic's offset range replayed one micro-batch per step: what a walkthrough of a topic reads.

A query on a topic runs on its own clock, reading whatever the brokers hold.
To hold it still between batches, :class:`SteppedTopic` copies the range
into a staging topic of the query's own and the query reads that one: each
:meth:`TopicStepper.stage_next` copies the records of the next micro-batch
an available-now replay of the range would read
(:func:`~streaming.engine.kafka.kafka_terms.planned_batches`, at most
``max_offsets_per_trigger`` records), keeping each record's partition, key,
value and timestamp, in one transaction. The query reads everything
committed (``read_committed``), so each step is one micro-batch of exactly those records, the same the replay's batch reads:
its rows, event times and arrival times are the original topic's. Only the
offsets differ: they start at 0 in the staging topic, and each step's commit
marker takes one. The staging topic is deleted when the query's feeder stops
(the query's removal, or the loss of its session).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError
from ..kafka.kafka_terms import check_topic
from ..kafka.topics import RecordCopier, create_topic, delete_topic, planned_range, read_records, sweep_staging
from .base import Arrival, StreamSource, stage_upto

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..data.columns import ColumnMapping
    from .kafka import KafkaSource

__all__ = ["READ_SECONDS", "SteppedTopic", "TopicStepper"]

READ_SECONDS = 30.0
"""How long a step may take to read its records from the topic before it fails, naming the partitions short of their end."""


class TopicStepper:
    """Copies the planned micro-batches of ``source``'s range into the topic ``target``, one per :meth:`stage_next` and one
    transaction each (the query reads ``read_committed``, so it never sees part of a step); made with the topic created.

    The range runs from the source's start (its earliest offsets, or its
    first records at ``starting_timestamp``) to its ``end_offsets`` or the
    latest offsets when it is made. Given ``now_s`` (epoch seconds), it first
    deletes the staging topics its brokers kept from walkthroughs long gone
    (:func:`~streaming.engine.kafka.topics.sweep_staging`). The first batch is copied at once: Spark
    runs a query's first micro-batch on a topic as soon as it starts, empty or
    not, so the first step is there for it (an empty batch 0 would tell
    nothing, and shift every batch id from the replay's). :meth:`stop` deletes ``target``.
    """

    stepped = True
    first_at_start = True
    """The first step is copied when the stepper is made: Spark runs it at once."""
    paced = False
    """Its caller (a walkthrough) hands each step over."""

    def __init__(self, source: KafkaSource, target: str, now_s: int | None = None) -> None:
        self.source = source
        self.target = target
        self.batches = planned_range(source)
        """``(from, to)`` offsets (partition → offset) of each micro-batch, in order."""
        if not self.batches:
            raise ConfigError("source.topic", source.topic, "holds no record from where the replay starts to its end: nothing to step through")
        self.staged = 0
        """Micro-batches handed to Spark so far."""
        self.done = threading.Event()
        self.handed_files: dict[str, int] | None = None
        """Records, not files: the topic's offsets say what was read."""
        self._copier: RecordCopier | None = None
        if now_s is not None:
            sweep_staging(source.bootstrap, now_s)
        create_topic(source.bootstrap, target, max(self.batches[0][0], default=0) + 1)  # as many partitions as the topic
        try:
            self._copier = RecordCopier(source.bootstrap, target)
            self.stage_next()
        except BaseException:
            self.stop()
            raise

    @property
    def steps(self) -> int:
        """Micro-batches of records in the range."""
        return len(self.batches)

    def stage_next(self) -> bool:
        """Copy the next micro-batch's records into the staging topic; ``False`` when every one is copied already.

        :class:`~streaming.engine.errors.ConfigError` when the topic does not deliver them all (nothing of the step is copied then).
        """
        if self.staged >= len(self.batches):
            self.done.set()
            return False
        if self._copier is None:
            raise ConfigError("source", self.target, "was stopped: its staging topic is deleted")
        start, end = self.batches[self.staged]
        ranges = {partition: (start.get(partition, offset), offset) for partition, offset in end.items()}
        records = read_records(self.source.bootstrap, self.source.topic, ranges, READ_SECONDS, whole=True, committed=self.source.read_committed)
        self._copier.copy(records)
        self.staged += 1
        if self.staged == len(self.batches):
            self.done.set()
        return True

    def stage_all(self, upto: int | None = None) -> None:
        stage_upto(self, upto)

    def start(self) -> None:
        """Nothing runs by itself: the caller steps it."""

    def start_quiet(self, idle: Callable[[], None]) -> None:
        """Nothing runs by itself, under any rule: the caller steps it."""

    def on_lost(self, tell: Callable[[str], None]) -> None:
        """Never lost by itself: a step that cannot be copied is refused to the caller that stepped it."""

    def stop(self) -> None:
        """Delete the staging topic (a broker that is gone keeps it: nothing to raise to a query being removed)."""
        self.done.set()
        copier, self._copier = self._copier, None
        if copier is not None:
            copier.close()
        with contextlib.suppress(ConfigError):
            delete_topic(self.source.bootstrap, self.target)


@dataclass(frozen=True)
class SteppedTopic(StreamSource):
    """``source``'s range (one topic, from its earliest offsets or ``starting_timestamp``) replayed through the topic ``staging_topic``, one micro-batch per step.

    Never kept (a staging topic lives as long as its query); reads the
    staging topic with ``source``'s value format and column mapping.
    """

    source: KafkaSource
    staging_topic: str
    kind: Literal["stepped_topic"] = field(default="stepped_topic", init=False)

    def __post_init__(self) -> None:
        if self.source.as_topic is None:
            raise ConfigError("source", self.source, "is not a Kafka topic")
        self.source.steppable()
        check_topic(self.staging_topic, "staging_topic")

    @property
    def staged(self) -> KafkaSource:
        """The source the query reads: the staging topic from its start, everything available per micro-batch."""
        return replace(
            self.source, topic=self.staging_topic, starting_offsets="earliest", starting_timestamp=None, max_offsets_per_trigger=None, end_offsets=None,
            read_committed=True,
        )

    @property
    def columns(self) -> ColumnMapping:
        return self.source.columns

    @property
    def arrival(self) -> Arrival:
        return self.source.arrival

    @property
    def stamp(self) -> str:
        return self.source.stamp

    @property
    def resumable(self) -> bool:
        return False

    @property
    def shown(self) -> KafkaSource:
        return self.source

    def reads_topic(self, name: str) -> bool:
        return name == self.staging_topic or self.source.reads_topic(name)

    def description(self) -> dict[str, str]:
        """The topic's fields, then this kind and the staging topic."""
        return {**self.source.description(), "kind": self.kind, "staging_topic": self.staging_topic}

    @property
    def step_unit(self) -> str:
        return self.source.step_unit

    @property
    def label(self) -> str:
        return f"{self.source.label}, one micro-batch a step"

    def explain_failure(self, error: str) -> str | None:
        return self.source.explain_failure(error)

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, TopicStepper]:
        return self._stepped(lambda: self.staged.read(spark, staging, now_ms)[0], now_ms)

    def view_frame(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, TopicStepper]:
        """The staging topic as a SQL view shows the topic (its value's columns, the record's key, partition, offset and timestamp)."""
        return self._stepped(lambda: self.staged.view_frame(spark, staging, now_ms)[0], now_ms)

    def view_rows(self, spark: SparkSession) -> DataFrame:
        return self.source.view_rows(spark)

    def _stepped(self, frame: Callable[[], DataFrame], now_ms: int) -> tuple[DataFrame, TopicStepper]:
        """``frame()`` over the staging topic, and the stepper that copies the range into it (its first step at once); the stepper stopped if the frame fails."""
        stepper = TopicStepper(self.source, self.staging_topic, now_ms // 1000)
        try:
            return frame(), stepper
        except Exception:
            stepper.stop()
            raise

    def rows(self, spark: SparkSession) -> DataFrame:
        return self.source.rows(spark)
