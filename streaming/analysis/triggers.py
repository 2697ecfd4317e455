"""The same query on the same live records under several triggers: each record's end-to-end latency, the throughput and the cores held.

:func:`compare_latency` makes a topic of its own with the partitions of the
topic it is given, starts one run per trigger on it (all at once, from its
earliest offsets, so every run reads every record), publishes ``rate``
records a second for ``seconds`` seconds (the given topic's latest messages,
over and over, each stamped when it is produced), waits until every run has
every record's row in its result table, and deletes the topic. Records of
the first ``warm_up`` seconds are not counted: they wait for the queries to
start, which is not what is compared. The query passes rows through
(``aggregation="none"``): the shape real-time mode runs on Spark 4.2.

Runs share the machine's cores while they run, as they would in production
beside each other; a real-time run holds one core per topic partition for
the whole of its batches.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pandas as pd

from ..engine.builders import malformed_rows
from ..engine.errors import Cancelled, ConfigError
from ..engine.kafka.topics import create_topic, delete_topic, describe_topic, latest_messages
from ..engine.query.config import QueryConfig
from ..engine.run.publish import publish_paced
from ..engine.run.registry import QueryRegistry
from ..engine.sources.kafka import KafkaSource, require_topic_source
from .latency import latency_summary

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["LatencyComparison", "TriggerRun", "compare_latency", "trigger_label", "well_formed"]

LOG = logging.getLogger(__name__)
TRIGGER_WORDS = {"default": "micro-batch, default trigger", "processing_time": "micro-batch every {interval}", "real_time": "real-time mode ({interval} batches)"}


def trigger_label(config: QueryConfig) -> str:
    """``config``'s trigger in words, e.g. ``micro-batch every 1 second``."""
    return TRIGGER_WORDS.get(config.trigger, config.trigger).format(interval=config.trigger_interval)


@dataclass(frozen=True)
class TriggerRun:
    """One trigger's run: its config, every record's latency entry, and how busy its batches kept the cores."""

    label: str
    config: QueryConfig
    latency: pd.DataFrame
    busy_seconds: float
    """Seconds its micro-batches ran, summed (a real-time run: the whole run, on each partition's core)."""


@dataclass(frozen=True)
class LatencyComparison:
    runs: tuple[TriggerRun, ...]
    rate: int
    seconds: float
    warm_up: float
    partitions: int
    records: int
    start_ms: float

    def counted(self, run: TriggerRun) -> pd.DataFrame:
        """``run``'s entries of the records produced after the warm-up."""
        return run.latency[run.latency["produced_ms"] >= self.start_ms + self.warm_up * 1000]

    def summary(self) -> pd.DataFrame:
        """One row per run: ``label``, records counted, p50/p95/p99/max to the sink (ms), rows per second and the cores it held."""
        rows = []
        for run in self.runs:
            counted = self.counted(run)
            summary = latency_summary(counted, "written")
            span = (counted["written_ms"].max() - counted["produced_ms"].min()) / 1000 if len(counted) else float("nan")
            if run.config.trigger == "real_time":
                cores = f"{self.partitions} (a long-running task per partition, all the time)"
            else:
                cores = f"{run.busy_seconds / self.seconds:.2f} on average (busy while its batches run)"
            rows.append({
                "label": run.label, "records": summary["records"], "p50_ms": summary["p50"], "p95_ms": summary["p95"], "p99_ms": summary["p99"],
                "max_ms": summary["max"], "rows_per_second": summary["records"] / span if span else float("nan"), "cores_held": cores,
            })
        return pd.DataFrame(rows)


def compare_latency(
    registry: QueryRegistry, source: KafkaSource, configs: Sequence[QueryConfig], *, rate: int, seconds: float, warm_up: float = 5.0,
    timeout: float = 120.0, cancel: threading.Event | None = None, report: Callable[[str], None] | None = None,
) -> LatencyComparison:
    """Run ``configs`` (pass-through queries on ``source``, differing in their trigger) on the same records published live; see the module docstring."""
    if not 2 <= len(configs) <= 4:
        raise ConfigError("configs", len(configs), "must be 2 to 4 triggers")
    if not 0 <= warm_up < seconds:
        raise ConfigError("warm_up", warm_up, f"must be at least 0 and less than the {seconds} s published")
    for index, config in enumerate(configs):
        if config.aggregation != "none":
            raise ConfigError(f"configs[{index}].aggregation", config.aggregation, "must be none: the comparison passes rows through, as real-time mode runs them")
    tell = report or (lambda _: None)
    messages = latest_messages(source.bootstrap, source.topic, 200)
    if messages.empty:
        raise ConfigError("topic", source.topic, "holds no messages to publish again: publish some first (Datasets page)")
    pairs = well_formed(registry.spark, configs[0], messages)
    if not pairs:
        raise ConfigError("topic", source.topic, "holds no message the query can read among its latest 200: each is malformed for its mapping")
    partitions = len(describe_topic(source.bootstrap, source.topic).partitions)
    topic = f"{source.topic}-latency-{uuid.uuid4().hex[:8]}"
    create_topic(source.bootstrap, topic, partitions)
    live = replace(source, topic=topic, starting_offsets="earliest", starting_timestamp=None, max_offsets_per_trigger=None, end_offsets=None)
    names = [f"latency_{uuid.uuid4().hex[:10]}" for _ in configs]
    try:
        runs = [registry.start(config.with_changes(source=live), name, max_rows=10_000) for config, name in zip(configs, names, strict=True)]
        tell(f"publishing {rate:,} records a second for {seconds:g} s into {topic}")
        start_ms = time.time() * 1000
        records = publish_paced(source.bootstrap, topic, pairs, rate, seconds, cancel)
        if cancel is not None and cancel.is_set():
            raise Cancelled("latency comparison: cancelled")
        deadline = time.monotonic() + timeout
        for run in runs:
            tell(f"waiting for {run.name}'s rows")
            while run.latency is not None and run.latency.records < records:
                if cancel is not None and cancel.is_set():
                    raise Cancelled("latency comparison: cancelled")
                if not run.query.isActive:
                    raise RuntimeError(f"{trigger_label(run.config)} ended: {run.error}")
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{trigger_label(run.config)}: {run.latency.records:,} of {records:,} records measured after {timeout} s")
                time.sleep(0.1)
        done = [
            TriggerRun(trigger_label(run.config), run.config, run.latency.frame() if run.latency is not None else pd.DataFrame(), _busy(run.log.summaries(), run.config, seconds))
            for run in runs
        ]
        return LatencyComparison(tuple(done), rate, seconds, warm_up, partitions, records, start_ms)
    finally:
        for name in names:
            registry.remove(name)
        try:
            delete_topic(source.bootstrap, topic)
        except ConfigError as err:  # a topic left behind must not hide what ended the comparison
            LOG.warning("the comparison's topic %s was not deleted: %s", topic, err)


def well_formed(spark: SparkSession, config: QueryConfig, messages: pd.DataFrame) -> list[tuple[str | None, str | None]]:
    """The ``(key, value)`` of the ``messages`` (:func:`~streaming.engine.kafka.topics.latest_messages`) that ``config``'s query reads as rows, not as malformed ones.

    Only those are published again, so every record published reaches each run's result table.
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    schema = T.StructType([
        T.StructField("key", T.StringType()), T.StructField("value", T.StringType()), T.StructField("timestamp", T.TimestampType()),
        T.StructField("partition", T.IntegerType()), T.StructField("offset", T.LongType()),
    ])
    rows = [(key, value, stamp.to_pydatetime(), 0, index) for index, (key, value, stamp) in enumerate(zip(messages["key"], messages["value"], messages["timestamp"], strict=True))]
    source = require_topic_source(config.source, "source")
    decoded = source.decoded(spark.createDataFrame(rows, schema))
    read = decoded.select(*source.selected(decoded), F.col("kafka_offset").alias("index")).where(~malformed_rows(config.deduplicate))
    kept = {int(row["index"]) for row in read.select("index").collect()}
    return [(key, value) for index, (key, value) in enumerate(zip(messages["key"], messages["value"], strict=True)) if index in kept]


def _busy(summaries: Sequence[Mapping], config: QueryConfig, seconds: float) -> float:
    if config.trigger == "real_time":
        return seconds
    return sum(float(summary.get("batch_duration_ms") or 0) for summary in summaries) / 1000
