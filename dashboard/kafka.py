"""Kafka on the pages: the topic source of the Live query form, the topic view, and publishing a dataset into a topic.

The brokers are asked with a Kafka client (:mod:`streaming.engine.kafka.topics`)
with a timeout of seconds, and what they answer is cached for a few seconds,
so a form that reruns on every widget change does not ask each time. A
broker that does not answer, or a topic that does not exist, is said in the
page; the form then refuses to start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from streaming.engine.data.columns import ColumnMapping
from streaming.engine.data.datasets import folder_owner
from streaming.engine.data.preview import time_named
from streaming.engine.errors import ConfigError
from streaming.engine.kafka.broker import BOOTSTRAP_VARIABLE
from streaming.engine.kafka.kafka_terms import KAFKA_KEY, KAFKA_TIMESTAMP, VALUE_FORMATS, check_bootstrap, check_topic
from streaming.engine.kafka.topic_owners import TopicOwners
from streaming.engine.kafka.topics import (
    SAMPLE_MESSAGES,
    TopicInfo,
    decode_messages,
    delete_topic,
    describe_topic,
    infer_value_columns,
    latest_messages,
    published_mapping,
    topic_names,
    write_sample,
)
from streaming.engine.query.config import MAX_SPEED, FeedSource
from streaming.engine.run.publish import Published, publish
from streaming.engine.sources.kafka import KafkaSource

from .data import aggregate_widgets, batching_widgets
from .datasets import KEY_NAMES, build_mapping, dataset_store, guess_column, mapping_widgets, preview_view
from .jobs import Job, job_controls, start_job
from .owner import is_operator, session_owner
from .shared import KEPT, asked_twice, get_registry, get_spark, session_starter

__all__ = [
    "PUBLISH_JOB",
    "SAMPLE_MESSAGES",
    "STARTS",
    "kafka_source",
    "kafka_widgets",
    "publish_panel",
    "publish_settings",
    "start_time_ms",
    "topic_rates",
    "topic_shape",
    "topic_view",
]

LAST_MESSAGES = 20
"""The latest messages the topic view decodes."""
STARTS = ("earliest", "latest", "a time")
FORMAT_LABELS: Mapping[str, str] = {"json": "JSON objects", "csv": "CSV lines"}
SAMPLES_FOLDER = ".kafka-samples"
"""Under the data root: each topic's sample as a dataset file, for the preview."""


def start_time_ms(text: str) -> int:
    """``text`` (a date and time, UTC unless it names an offset) as epoch milliseconds; :class:`ConfigError` on ``source.starting_timestamp``."""
    try:
        stamp = pd.Timestamp(text.strip())
    except (ValueError, TypeError):
        stamp = pd.NaT
    if not text.strip() or pd.isna(stamp):
        raise ConfigError("source.starting_timestamp", text, "is not a date and time, e.g. 2026-01-31 12:00:00 (UTC)")
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC").tz_localize(None)
    return int(stamp.value // 1_000_000)


def kafka_source(params: Mapping[str, Any], root: Path | None = None) -> KafkaSource:
    """The :class:`KafkaSource` of the form's values (:func:`kafka_widgets`); :class:`ConfigError` naming the field and value."""
    if not params.get("topic"):
        raise ConfigError("source.topic", params.get("topic"), "is not chosen: choose a topic of the brokers (publish one on the Datasets page)")
    if not params.get("value_columns"):
        raise ConfigError("source.value_columns", (), f"are not known yet: {params.get('topic')} has no message to read them from")
    text = params.get("starting_time", "")
    cap = int(params.get("max_offsets_per_trigger") or 0)
    return KafkaSource(
        params["bootstrap"], params["topic"], tuple(params["value_columns"]), params.get("value_format", "json"),
        columns=build_mapping(params["mapping"]), pattern=bool(params.get("pattern")),
        starting_offsets="latest" if params.get("start") == "latest" else "earliest",
        starting_timestamp=start_time_ms(text) if params.get("start") == STARTS[2] else None,
        max_offsets_per_trigger=cap or None,
    )


@st.cache_data(ttl=10, show_spinner=False)
def _topic_names(bootstrap: str) -> list[str]:
    return topic_names(bootstrap)


def _topic_owners() -> TopicOwners:
    return TopicOwners.under(dataset_store().root)


def _seen_topics(bootstrap: str) -> list[str]:
    """The topics on ``bootstrap`` this browser session sees: all but those the lab published from another user's private dataset."""
    return _topic_owners().visible(bootstrap, _topic_names(bootstrap), None if is_operator() else session_owner())


@st.cache_data(ttl=30, show_spinner="Reading a sample of the topic…")
def _sample(bootstrap: str, topic: str) -> pd.DataFrame:
    return latest_messages(bootstrap, topic, SAMPLE_MESSAGES)


@st.cache_data(ttl=30, show_spinner=False)
def _published_mapping(bootstrap: str, topic: str) -> dict[str, Any] | None:
    return published_mapping(bootstrap, topic)


@st.cache_data(max_entries=32, show_spinner="Reading the value's columns with Spark…")
def _value_columns(values: tuple[str | None, ...], value_format: str, csv_columns: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    return infer_value_columns(get_spark(), values, value_format, csv_columns or None)  # type: ignore[arg-type]


def _csv_names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


def _sample_topic(names: Sequence[str], pattern: str) -> str | None:
    """The first of ``names`` the pattern matches (Python's regular expressions standing in for Java's), for the sample."""
    try:
        return next((name for name in names if re.fullmatch(pattern, name)), None)
    except re.error:
        return None


PUBLISHED_SEEN = "kafka_published_seen"
"""The publish job whose topic was made the last topic already."""
LAST_TOPIC = "kafka_last_topic"
"""The topic last chosen or published to in this browser session: a topic picker not set yet opens on it, not on the first by name."""


def _topic_widgets(names: Sequence[str], prefix: str, patterns: bool) -> dict[str, Any] | None:
    if patterns and st.toggle("A pattern of topics", key=f"{prefix}_pattern", **KEPT, help="subscribePattern: every topic whose name matches, new ones as they appear"):
        pattern = st.text_input("Topic pattern (Java regular expression)", value=".*", key=f"{prefix}_topic_pattern", **KEPT)
        return {"topic": pattern, "pattern": True, "sampled": _sample_topic(names, pattern)}
    if not names:
        st.warning("The brokers hold no topic yet: publish a dataset or a sample feed into one on the Datasets page (or `python -m streaming publish`).")
        return None
    options = list(names)
    last = st.session_state.get(LAST_TOPIC)
    topic = st.selectbox("Topic", options, index=options.index(last) if isinstance(last, str) and last in options else 0, key=f"{prefix}_topic", **KEPT)
    st.session_state[LAST_TOPIC] = topic
    return {"topic": topic, "pattern": False, "sampled": topic}


def kafka_widgets(feeds: Sequence[str], prefix: str = "lab_kafka", *, replayed: bool = False, patterns: bool = True) -> dict[str, Any]:
    """The Kafka source's settings: brokers, topic, where to start, the value's format, and the column mapping shown against a sample of messages.

    ``replayed``: for an experiment that replays one topic from its earliest
    offsets to its end (the tuner), with no pattern and no start to choose.
    ``patterns=False``: one topic only (a join side).
    """
    bootstrap = st.text_input(
        "Bootstrap servers", value=os.environ.get(BOOTSTRAP_VARIABLE, ""), key=f"{prefix}_bootstrap", persist_state="session", placeholder="127.0.0.1:9092",
        help=f"host:port of the brokers, several separated by commas (default: ${BOOTSTRAP_VARIABLE}; `make kafka` starts a broker and prints it)",
    )
    params: dict[str, Any] = {"bootstrap": bootstrap}
    try:
        names = _seen_topics(check_bootstrap(bootstrap, "Bootstrap servers"))
    except ConfigError as err:
        st.warning(str(err))
        return params
    chosen = _topic_widgets(names, prefix, patterns and not replayed)
    if chosen is None:
        return params
    params.update(chosen)
    start = STARTS[0] if replayed else st.radio(
        "Start at", STARTS, horizontal=True, key=f"{prefix}_start", **KEPT, help="Where a new query starts reading; a resumed one goes on from its checkpoint",
    )
    params["start"] = start
    if start == STARTS[2]:
        params["starting_time"] = st.text_input("Start time (UTC)", value=f"{pd.Timestamp.now('UTC'):%Y-%m-%d %H:00:00}", key=f"{prefix}_start_time", **KEPT)
    params["max_offsets_per_trigger"] = st.number_input(
        "Max offsets per trigger", min_value=0, value=100 if replayed else 0, step=100, key=f"{prefix}_max_offsets", **KEPT,
        help="At most this many records per micro-batch (maxOffsetsPerTrigger); 0: everything available",
    )
    value_format = st.selectbox("Value format", VALUE_FORMATS, format_func=lambda name: FORMAT_LABELS.get(name, name), key=f"{prefix}_format", **KEPT)
    params["value_format"] = value_format
    csv_columns = _csv_names(st.text_input("CSV column names", value="", key=f"{prefix}_csv_columns", **KEPT, placeholder="empty: _c0, _c1, …")) if value_format == "csv" else ()
    params.update(_mapping_widgets(bootstrap, params["sampled"], value_format, csv_columns, prefix))
    return params


def _mapping_widgets(bootstrap: str, topic: str | None, value_format: str, csv_columns: tuple[str, ...], prefix: str) -> dict[str, Any]:
    """The value's columns from a sample of ``topic``, the column mapping over them and the record's columns, and the sample's preview."""
    if topic is None:
        st.warning("No topic matches the pattern yet: its value's columns are read from a sample of a matching topic's messages.")
        return {}
    if session_starter().status != "ready":
        st.info("The value's columns are read from a sample of the topic once Spark is ready.")
        return {}
    try:
        messages = _sample(bootstrap, topic)
        if messages.empty:
            st.warning(f"{topic} holds no message yet: its value's columns are read from a sample of its messages.")
            return {}
        value_columns = _value_columns(tuple(messages["value"]), value_format, csv_columns)
    except ConfigError as err:
        st.warning(str(err))
        return {}
    names = [name for name, _ in value_columns]
    guessed = published_guess(_published_mapping(bootstrap, topic), names) or _guess(names)
    # keyed by the topic: each topic's mapping starts from its own guess (the record's own columns are offered for every topic,
    # so one set of widgets would keep the choice made for the topic before) and is kept when the user comes back to it
    values = mapping_widgets([*names, KAFKA_TIMESTAMP, KAFKA_KEY], guessed, prefix=f"{prefix}_map_{topic}", arrival=False)
    st.caption(f"{KAFKA_TIMESTAMP} is each record's timestamp, {KAFKA_KEY} its key; the record timestamp is the arrival time.")
    with st.expander(f"Sample: the latest {len(messages)} messages of {topic}"):
        try:
            sample = write_sample(messages, value_format, dataset_store().root / SAMPLES_FOLDER / f"{topic}.{value_format}", csv_columns or None)  # type: ignore[arg-type]
            preview_view(get_spark(), [sample], value_format, build_mapping({**values, "arrival": None}))  # type: ignore[arg-type]
        except ConfigError as err:
            st.warning(str(err))
    return {"value_columns": value_columns, "mapping": values}


def published_guess(published: Mapping[str, Any] | None, names: Sequence[str]) -> ColumnMapping | None:
    """The mapping of the dataset the topic was published from (:func:`~streaming.engine.kafka.topics.published_mapping`), its arrival
    column left to the record's timestamp; ``None`` when the topic carries none, or one whose event time is not a column of its values."""
    if published is None:
        return None
    try:
        mapping = ColumnMapping.from_dict(published)
    except (ConfigError, TypeError):
        return None
    if mapping.event_time not in names:
        return None
    def kept(name: str | None) -> str | None:
        return name if name in names else None

    return replace(mapping, arrival=None, key=kept(mapping.key), value=kept(mapping.value), dedup_id=kept(mapping.dedup_id))


def _guess(names: Sequence[str]) -> ColumnMapping:
    """The mapping a topic's form starts from: time and key columns guessed by name, else the record's timestamp and key."""
    return ColumnMapping(event_time=time_named(names) or KAFKA_TIMESTAMP, key=guess_column(names, KEY_NAMES, KAFKA_KEY))


def topic_shape(prefix: str) -> dict[str, Any]:
    """For an experiment on a topic (tuner, Compare): the topic (:func:`kafka_widgets`, replayed) and what is aggregated, as their ``*_inputs`` take them."""
    topic = kafka_widgets((), f"{prefix}_kafka", replayed=True)
    try:
        mapping = build_mapping(topic["mapping"]) if "mapping" in topic else None
    except ConfigError:
        mapping = None
    return {"topic": topic, **(aggregate_widgets(prefix, mapping) if mapping is not None else {})}


# --- the topic view ------------------------------------------------------------------


def topic_rates(before: TopicInfo | None, now: TopicInfo) -> float | None:
    """Messages per second that arrived between two reads of a topic's offsets; ``None`` without an earlier read."""
    if before is None or before.name != now.name or now.read_at <= before.read_at:
        return None
    return max(0, now.latest_total - before.latest_total) / (now.read_at - before.read_at)


def topic_view(source: KafkaSource, key: str) -> None:
    """The source's topic: partitions and offsets, messages per second since the last look, and its latest messages decoded as the query reads them."""
    if source.pattern:
        st.caption(f"The query reads every topic matching {source.topic!r}: pick one on the Live query form to see it here.")
        return
    try:
        info = describe_topic(source.bootstrap, source.topic)
        last = decode_messages(latest_messages(source.bootstrap, source.topic, LAST_MESSAGES), source.value_format, [name for name, _ in source.value_columns])
    except ConfigError as err:
        st.warning(f"The topic cannot be read now: {err}")
        return
    rate = topic_rates(st.session_state.get(key), info)
    st.session_state[key] = info
    cells = st.columns(3)
    cells[0].metric("Partitions", len(info.partitions))
    cells[1].metric("Messages held", f"{info.messages:,}")
    cells[2].metric("Messages per second", "…" if rate is None else f"{rate:,.1f}", help="From the latest offsets, between this look at the topic and the one before")
    st.dataframe(info.frame(), hide_index=True)
    st.markdown(f"**The latest {len(last)} messages**, decoded as the query reads them ({int(last['malformed'].sum()) if len(last) else 0} malformed)")
    st.dataframe(last, hide_index=True)


# --- publishing a dataset -------------------------------------------------------------------

PUBLISH_JOB = "publish_job"
PACES = ("as fast as possible", "seconds per batch", "arrival time × speed")


@dataclass(frozen=True)
class PublishSettings:
    """A publish, checked: the dataset as a source (its batching and mapping) and where and how it goes."""

    source: FeedSource
    bootstrap: str
    topic: str
    partitions: int
    value_format: str
    speed: float | None
    seconds_per_batch: float


def publish_settings(source: FeedSource, values: Mapping[str, Any]) -> PublishSettings:
    """The publish the panel's ``values`` describe for ``source``; :class:`ConfigError` naming the field and value (nothing asked of the brokers)."""
    bootstrap = check_bootstrap(values.get("bootstrap"), "Bootstrap servers")
    topic = check_topic(str(values.get("topic", "")).strip(), "Topic")
    pace = values.get("pace", PACES[0])
    if pace == PACES[2] and source.batching.column is None:
        raise ConfigError("Pace", pace, "needs micro-batches by arrival time (and the dataset's arrival column mapped)")
    speed = float(values["speed"]) if pace == PACES[2] else None
    seconds = float(values.get("seconds_per_batch") or 0.0) if pace == PACES[1] else 0.0
    return PublishSettings(source, bootstrap, topic, int(values.get("partitions", 1)), str(values.get("value_format", "json")), speed, seconds)


def _publish_work(settings: PublishSettings) -> Callable[[Job], Published]:
    spark, owners, owner = get_spark(), _topic_owners(), folder_owner(settings.source.path)

    def work(job: Job) -> Published:
        def report(done: int, total: int, messages: int) -> None:
            job.report(f"batch {done:,} of {total:,}, {messages:,} messages sent")

        try:
            published = publish(
                spark, settings.source, settings.bootstrap, settings.topic, partitions=settings.partitions, value_format=settings.value_format,  # type: ignore[arg-type]
                speed=settings.speed, seconds_per_batch=settings.seconds_per_batch, cancel=job.cancel, progress=report,
            )
            if owner is not None:  # a copy of a private dataset: its owner's topic alone
                owners.claim(settings.bootstrap, settings.topic, owner)
            return published
        finally:
            _topic_names.clear()  # a topic made (or deleted, by a cancel): the pickers list the brokers' topics again

    return work


def _published(job: Job) -> None:
    published: Published = job.result
    if st.session_state.get(PUBLISHED_SEEN) is not job:  # once: a topic deleted since is not made the last one again
        st.session_state[PUBLISHED_SEEN] = job
        st.session_state[LAST_TOPIC] = published.topic  # every topic picker opens on it next
    st.success(
        f"Published {published.messages:,} messages in {published.batches:,} batches to {published.topic} "
        f"({published.partitions} partition{'s' if published.partitions != 1 else ''}, {'created' if published.created else 'appended to'}) "
        f"in {published.seconds:.1f} s. Query it on the Live query page: source *Kafka topic*.",
        icon=":material/check_circle:",
    )
    st.dataframe(pd.DataFrame(published.end_offsets, columns=["partition", "end offset"]), hide_index=True)


def publish_panel(name: str, source_of: Callable[[Mapping[str, Any]], FeedSource], *, arrival: bool, ready: bool) -> None:
    """Publish the dataset ``name`` into a topic in its batch order: ``source_of(batching)`` is the dataset as a source cut by the chosen batching.

    The publish runs in the background (progress, Cancel); a broker that does
    not answer or a bad topic name is said before it starts.
    """
    st.subheader("Publish to a Kafka topic")
    st.caption(
        "Each row becomes a record: its value the row (a JSON object, or a CSV line), its key the key column, its timestamp the arrival "
        "column (else the time it is sent). Batches go in order; a topic is created when it does not exist and keeps its records whatever their age."
    )
    left, right = st.columns(2)
    values: dict[str, Any] = {
        "bootstrap": left.text_input("Bootstrap servers", value=os.environ.get(BOOTSTRAP_VARIABLE, ""), key="publish_bootstrap", placeholder="127.0.0.1:9092"),
        "topic": right.text_input("Topic", value=re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:200], key=f"publish_topic_{name}"),
        "partitions": left.number_input("Partitions (of a new topic)", min_value=1, max_value=100, value=1, key="publish_partitions"),
        "value_format": right.selectbox("Value format", VALUE_FORMATS, format_func=lambda fmt: FORMAT_LABELS.get(fmt, fmt), key="publish_format"),
    }
    with left:
        batching = batching_widgets("publish") if arrival else {"batch_by": "file", "batch_interval": None}
    with right:
        paces = PACES if batching.get("batch_by") == "arrival" else PACES[:2]
        values["pace"] = st.radio("Pace", paces, key="publish_pace")
        if values["pace"] == PACES[1]:
            values["seconds_per_batch"] = st.number_input("Seconds per batch", min_value=0.0, value=1.0, step=0.5, key="publish_seconds")
        elif values["pace"] == PACES[2]:
            values["speed"] = st.number_input("Speed (× arrival time)", min_value=0.1, max_value=MAX_SPEED, value=10.0, step=5.0, key="publish_speed")

    def start() -> None:
        try:
            settings = publish_settings(source_of(batching), values)
            topic_names(settings.bootstrap)  # the brokers answer, within seconds
        except ConfigError as err:
            st.error(f"Cannot publish: {err}")
            return
        start_job(PUBLISH_JOB, f"Publishing {name} to {settings.topic}", settings, _publish_work(settings))

    job_controls(
        PUBLISH_JOB, "Publish", "publish_start", ready=ready, start=start, render=_published, idle_text="Not published yet.",
        help_text="Sends the dataset's rows into the topic, batch by batch, in the background",
    )
    topics_panel(str(values["bootstrap"]))


DELETE_TOPIC = "kafka_delete_topic"
"""The topic whose Delete was pressed once: the panel asks again before deleting it."""
MAX_LISTED_TOPICS = 50


def topics_panel(bootstrap: str) -> None:
    """The topics on ``bootstrap`` with their records, each with Delete (asked twice); a topic an active query of the lab reads is not offered."""
    with st.expander("Topics on these brokers"):
        if not bootstrap.strip():
            st.caption("Give the bootstrap servers above to list their topics.")
            return
        if not st.toggle("List them", key="kafka_list_topics", help="Asks the brokers for their topics and each one's records, at every rerun of the page"):
            return
        try:
            names = _seen_topics(check_bootstrap(bootstrap, "Bootstrap servers"))
        except ConfigError as err:
            st.warning(f"The brokers cannot be read now: {err}")
            return
        if not names:
            st.caption("None yet.")
            return
        listed = names[:MAX_LISTED_TOPICS]
        read = _in_use(listed)
        for name in listed:
            text, action = st.columns([4, 1])
            try:
                held = f"{describe_topic(bootstrap, name).messages:,} records"
            except ConfigError:
                held = "its offsets cannot be read now"
            text.markdown(f"**{name}**: {held}")
            with action:
                if name in read:
                    st.caption("read by a running query")
                else:
                    _delete_topic_button(bootstrap, name)
        if len(names) > MAX_LISTED_TOPICS:
            st.caption(f"The first {MAX_LISTED_TOPICS} of {len(names):,} topics, by name.")


def _in_use(names: Sequence[str]) -> set[str]:
    """The topics of ``names`` an active query of the lab reads (any of its sources, a pattern by its matches, a walkthrough's staging topic) or
    writes (a real-time run's output topic)."""
    active = [run for run in get_registry().runs() if run.status == "active"]
    written = {topic for run in active if isinstance(topic := getattr(run.sink, "topic", None), str)}
    return {name for name in names if name in written or any(source.reads_topic(name) for run in active for source in run.config.sources)}


def _delete_topic_button(bootstrap: str, name: str) -> None:
    if not asked_twice(DELETE_TOPIC, name, "kafka_delete", f"Delete {name} and its records for good?", "Delete the topic and its records from the brokers"):
        return
    try:
        delete_topic(bootstrap, name)
    except ConfigError as err:
        st.error(f"Cannot delete {name}: {err}")
        return
    _topic_owners().claim(bootstrap, name, None)
    _topic_names.clear()
    if st.session_state.get(LAST_TOPIC) == name:
        st.session_state.pop(LAST_TOPIC)
    st.rerun()
