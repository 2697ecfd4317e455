"""Sources: one module per kind, each a validated configuration that reads its stream and says what it can do (:class:`~.base.StreamSource`).

Every source yields ``event_time`` (timestamp, null when unparsable) and
``key`` (string, null when missing), and, for a user's data, the mapped
``value`` and ``dedup_id``; the query builder counts and filters the
malformed rows. As a SQL view a source yields its own columns instead
(``view_frame``, ``view_rows``). Nothing outside this package asks for a
source's class: replays, stepping, lateness, latency, resuming and reports ask
the source (``docs/architecture.md`` lists what). A source that needs a helper
to hand data to Spark (:class:`FeedReplayer`, :class:`LineServer`, a
:class:`TopicStepper`) returns it from :func:`input_frame`, so the caller
stops it together with the query. A new kind is its module and one line of
:data:`SOURCE_KINDS`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .base import Arrival, Feeder, Stepper, StreamSource
from .feed import FILE_FORMATS, MAX_SPEED, ONE_FILE_PER_BATCH, FeedSource
from .generator import GeneratorSource, generator_columns
from .kafka import KafkaSource
from .rate import RateSource
from .rate_micro_batch import RateMicroBatchSource
from .replayer import FeedReplayer
from .socket import LineServer, SocketSource
from .stepped_topic import SteppedTopic, TopicStepper

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "FILE_FORMATS",
    "MAX_SPEED",
    "ONE_FILE_PER_BATCH",
    "SOURCE_KINDS",
    "Arrival",
    "FeedReplayer",
    "FeedSource",
    "Feeder",
    "GeneratorSource",
    "KafkaSource",
    "LineServer",
    "RateMicroBatchSource",
    "RateSource",
    "SocketSource",
    "Source",
    "SteppedTopic",
    "Stepper",
    "StreamSource",
    "TopicStepper",
    "batch_rows",
    "generator_columns",
    "input_frame",
]

Source = FeedSource | GeneratorSource | RateSource | RateMicroBatchSource | SocketSource | KafkaSource | SteppedTopic
"""Every source configuration a query can run on."""

SOURCE_KINDS: dict[str, type[Source]] = {
    kind.kind: kind for kind in (FeedSource, GeneratorSource, RateSource, RateMicroBatchSource, SocketSource, KafkaSource, SteppedTopic)
}
"""Each source class by its ``kind`` (as a kept query's ``query.json`` names it)."""


def input_frame(spark: SparkSession, source: Source, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
    """``(frame, feeder)``: the source's streaming DataFrame and the helper that feeds it (or ``None``); see :meth:`StreamSource.read`."""
    return source.read(spark, staging, now_ms)


def batch_rows(spark: SparkSession, source: Source) -> DataFrame:
    """Every row of ``source`` as one batch DataFrame of the columns its stream yields; see :meth:`StreamSource.rows`."""
    return source.rows(spark)
