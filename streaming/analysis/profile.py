"""How late a feed's events are: the first thing to look at before choosing a watermark delay.

Two measures, both in the order the data arrives (files in name order, rows in
file order, cut into micro-batches by the source's batching rule):

- **behind the stream**: ``(largest event time of the earlier micro-batches) -
  event_time``, clipped at 0 (:func:`streaming.analysis.lateness.lateness`). A
  watermark delay at least this long keeps the event in all its windows;
- **behind its arrival**, when the dataset has an arrival column:
  ``arrival - event_time``, how long the event took to reach the data.

:func:`feed_events_of` reads the events with Spark, by the expressions a query
uses; :func:`lateness_profile` is a pure function of them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..engine.data.batching import interval_slots
from ..engine.data.columns import dataset_columns
from ..engine.data.feeds import feed_events
from ..engine.data.preview import dataset_schema, read_dataset, stream_schema
from ..engine.data.times import time_column
from ..engine.kafka.kafka_terms import KAFKA_TIMESTAMP, batch_of_offsets
from ..engine.kafka.topics import planned_range
from ..engine.query.config import FeedSource
from ..engine.sources.kafka import KafkaSource
from .lateness import lateness, lateness_summary

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["NICE_DELAYS_MS", "PROFILE_COLUMNS", "LatenessProfile", "feed_events_of", "lateness_profile", "proposed_delays", "replayed_topic_events", "topic_batches", "topic_events_of"]

PROFILE_COLUMNS = ["key", "events", "late_events", "p50", "p95", "p99", "p999", "max"]
"""The per-key table: lateness behind the stream, in seconds."""


def feed_events_of(spark: SparkSession, source: FeedSource) -> pd.DataFrame:
    """The well-formed events of ``source`` in arrival order: ``event_time``, ``key``, ``arrival`` (``NaT`` without an arrival column) and ``file_index`` (the micro-batch).

    A dataset with an id column mapped (``dedup_id``) also has ``id``: each event's id, as it is written.

    The micro-batch follows the source's batching rule: its file, every ``N``
    rows (malformed rows included, as they are in the replay), or its arrival
    interval (a row whose arrival does not parse goes with the row before it,
    as :mod:`streaming.engine.data.batching` cuts them).
    """
    from pyspark.sql import functions as F

    if source.sample_layout:
        events = feed_events(source.path)[["event_time", "key", "file_index"]].copy()
        events.insert(2, "arrival", pd.Series(pd.NaT, index=events.index, dtype="datetime64[ns]"))
        return events.reset_index(drop=True)
    files = source.files()
    batch = read_dataset(spark, files, source.file_format)
    schema, struct = dataset_schema(batch), stream_schema(batch)
    arrival, cut_by = source.columns.arrival, source.batching.column
    extra, names = [], ["event_us", "key"]
    if source.columns.dedup_id is not None:
        names.append("dedup_id")
    if arrival is not None:
        extra.append(F.unix_micros(time_column(arrival, source.columns.arrival_format, schema[arrival], "columns.arrival_format")).alias("arrival_us"))
        names.append("arrival_us")
    if cut_by is not None:
        extra.append(F.unix_micros(time_column(cut_by, source.arrival_format, schema[cut_by], "batch_by")).alias("cut_us"))
        names.append("cut_us")
    records: list[tuple] = []
    for file_index, path in enumerate(files):
        parsed = read_dataset(spark, [path], source.file_format, struct).select(*dataset_columns(source.columns, schema), *extra)
        rows = parsed.select(F.unix_micros("event_time").alias("event_us"), *names[1:]).collect()
        records.extend((file_index, *tuple(row)) for row in rows)
    frame = pd.DataFrame.from_records(records, columns=["file_index", *names])
    if source.batching.rows is not None:
        frame["file_index"] = np.arange(len(frame), dtype="int64") // source.batching.rows
    elif cut_by is not None:
        interval_us = source.batching.interval_us
        slots = interval_slots([None if pd.isna(value) else int(value) for value in frame["cut_us"]], interval_us)
        batch_of = np.empty(len(frame), dtype="int64")
        for number, (_, positions) in enumerate(slots):
            batch_of[positions] = number
        frame["file_index"] = batch_of
    frame = frame[frame["event_us"].notna() & frame["key"].notna()]
    return pd.DataFrame(
        {
            "event_time": pd.to_datetime(frame["event_us"].astype("int64"), unit="us"),
            "key": frame["key"].astype(object),
            "arrival": pd.to_datetime(frame["arrival_us"], unit="us") if arrival is not None else pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns]"),
            "file_index": frame["file_index"].astype("int64"),
            **({"id": frame["dedup_id"].astype(object)} if "dedup_id" in frame else {}),
        }
    ).reset_index(drop=True)


Offsets = Mapping[int, int]
"""A topic's offsets by partition."""


def topic_batches(summaries: Iterable[Mapping[str, Any]], initial: Mapping[str, Mapping[str, int]] | None, topic: str) -> list[tuple[int, Offsets, Offsets]]:
    """``(batch_id, start, end)`` of each batch of a Kafka query on ``topic`` that read records, in batch order, from its progress summaries.

    The first batch's start is ``initial`` (progress names none: see
    :func:`~streaming.engine.sources.kafka.initial_offsets`); a batch whose end
    equals its start read nothing.
    """
    latest = {int(summary["batch_id"]): summary for summary in summaries}
    batches: list[tuple[int, Offsets, Offsets]] = []
    before = {int(partition): int(offset) for partition, offset in ((initial or {}).get(topic) or {}).items()}
    for batch_id in sorted(latest):
        start_text, end_text = latest[batch_id].get("source_offsets") or (None, None)
        if end_text is None:
            continue
        start = _partitions(json.loads(start_text), topic) if start_text is not None else before
        end = _partitions(json.loads(end_text), topic)
        if end != start:
            batches.append((batch_id, start, end))
        before = end
    return batches


def _partitions(offsets: Mapping[str, Mapping[str, int]], topic: str) -> dict[int, int]:
    return {int(partition): int(offset) for partition, offset in (offsets.get(topic) or {}).items()}


def topic_events_of(spark: SparkSession, source: KafkaSource, batches: Sequence[tuple[int, Offsets, Offsets]]) -> pd.DataFrame:
    """The well-formed records ``batches`` read (``(batch_id, start, end)``, :func:`topic_batches`), as :func:`feed_events_of` gives a feed's events.

    ``event_time`` and ``key`` by the source's mapping; ``arrival`` is the
    record timestamp, ``file_index`` the batch that read the record and
    ``partition`` its partition. Read with one batch query over the offsets
    the batches cover; the batch of a record is the first whose end offset in
    its partition lies past it. A single topic only.
    """
    from pyspark.sql import functions as F

    columns = {"event_time": "datetime64[ns]", "key": object, "arrival": "datetime64[ns]", "file_index": "int64", "partition": "int64"}
    if source.pattern or not batches:
        return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in columns.items()})
    first, last = batches[0][1], batches[-1][2]
    start = {source.topic: {str(partition): offset for partition, offset in first.items()}}
    end = {source.topic: {str(partition): offset for partition, offset in last.items()}}
    decoded = source.records(spark, start=json.dumps(start), end=json.dumps(end))
    event_time, key, *_ = source.selected(decoded)
    read: pd.DataFrame = decoded.select(
        F.unix_micros(event_time).alias("event_us"), key, F.unix_micros(KAFKA_TIMESTAMP).alias("arrival_us"), "kafka_partition", "kafka_offset"
    ).toPandas()
    rows = read[read["event_us"].notna() & read["key"].notna()]
    index = np.array(batch_of_offsets(rows["kafka_partition"].to_numpy(), rows["kafka_offset"].to_numpy(), [until for _, _, until in batches]), dtype="int64")
    ids = np.array([batch_id for batch_id, _, _ in batches], dtype="int64")
    rows = rows.assign(file_index=np.where(index >= 0, ids[np.maximum(index, 0)], -1))
    rows = rows[rows["file_index"] >= 0].sort_values(["file_index", "kafka_partition", "kafka_offset"])
    return pd.DataFrame(
        {
            "event_time": pd.to_datetime(rows["event_us"].astype("int64"), unit="us"),
            "key": rows["key"].astype(object),
            "arrival": pd.to_datetime(rows["arrival_us"].astype("int64"), unit="us"),
            "file_index": rows["file_index"].astype("int64"),
            "partition": rows["kafka_partition"].astype("int64"),
        }
    ).reset_index(drop=True)


def replayed_topic_events(spark: SparkSession, source: KafkaSource) -> tuple[pd.DataFrame, int]:
    """``(events, batches)`` of an available-now replay of ``source``'s topic from its earliest offsets to :attr:`~KafkaSource.end_offsets`.

    The batches are those Spark's Kafka source cuts the offsets into
    (:func:`~streaming.engine.kafka.kafka_terms.planned_batches`); ``events`` as
    :func:`topic_events_of` gives them.
    """
    planned = planned_range(source)
    return topic_events_of(spark, source, [(number, start, end) for number, (start, end) in enumerate(planned)]), len(planned)


@dataclass(frozen=True)
class LatenessProfile:
    """The lateness of a feed's events: summaries (:func:`~streaming.analysis.lateness.lateness_summary` plus ``p999``) and the per-key table."""

    behind_stream: dict[str, Any]
    behind_arrival: dict[str, Any] | None
    per_key: pd.DataFrame = field(repr=False)
    stream_lateness: pd.Series = field(repr=False)
    arrival_lateness: pd.Series | None = field(repr=False)


NICE_DELAYS_MS: tuple[int, ...] = tuple(
    seconds * 1000 for seconds in (
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1_800, 3_600, 7_200, 10_800, 21_600, 43_200, 86_400, 172_800, 604_800,
    )
)
"""Delays a proposal rounds up to: 1 s ... 1 week, each a duration people write."""
PROPOSAL_QUANTILES = ("p50", "p95", "p99", "p999", "max")


def proposed_delays(behind_stream: dict[str, Any]) -> list[int]:
    """Watermark delays (ms) worth sweeping for events this late: 0, then each of p50, p95, p99, p99.9 and the maximum
    of how far events arrive behind the stream, rounded up to :data:`NICE_DELAYS_MS`; distinct, smallest first.

    A delay at the p99 keeps about 99 % of the events in their windows; the sweep shows what each costs in state and output delay.
    """
    proposals = {0}
    for name in PROPOSAL_QUANTILES:
        value = behind_stream.get(name)
        if value is None or pd.isna(value):
            continue
        ms = pd.Timedelta(value).total_seconds() * 1000
        if ms > 0:
            proposals.add(next((nice for nice in NICE_DELAYS_MS if nice >= ms), NICE_DELAYS_MS[-1]))
    return sorted(proposals)


def _with_p999(late: pd.Series, coverage: float) -> dict[str, Any]:
    summary = lateness_summary(late, coverage)
    values = pd.to_timedelta(late).dropna()
    summary["p999"] = values.quantile(0.999) if len(values) else pd.NaT
    return summary


def lateness_profile(events: pd.DataFrame, coverage: float = 0.99) -> LatenessProfile:
    """Lateness behind the stream (and behind arrival, when ``events`` have arrival times) overall and per key.

    ``events`` as :func:`feed_events_of` returns them. ``coverage`` is the
    share of events the summaries' ``delay_for_coverage`` keeps.
    """
    stream = lateness(events)
    arrival = None
    if "arrival" in events and events["arrival"].notna().any():
        arrival = (events["arrival"] - events["event_time"]).dropna().rename("lateness")
    seconds = stream.dt.total_seconds()
    grouped = seconds.groupby(events["key"].to_numpy())
    per_key = pd.DataFrame(
        {
            "events": grouped.size(),
            "late_events": grouped.apply(lambda values: int((values > 0).sum())),
            "p50": grouped.quantile(0.5),
            "p95": grouped.quantile(0.95),
            "p99": grouped.quantile(0.99),
            "p999": grouped.quantile(0.999),
            "max": grouped.max(),
        }
    ).rename_axis("key").reset_index() if len(events) else pd.DataFrame(columns=PROFILE_COLUMNS)
    return LatenessProfile(
        behind_stream=_with_p999(stream, coverage),
        behind_arrival=None if arrival is None else _with_p999(arrival, coverage),
        per_key=per_key[PROFILE_COLUMNS].sort_values("p99", ascending=False, ignore_index=True) if len(per_key) else per_key,
        stream_lateness=stream,
        arrival_lateness=arrival,
    )
