"""Kafka on the pages: the topic source of the Live query form, the topic view, and publishing a dataset into a topic.

The brokers are asked with a Kafka client (:mod:`streaming.engine.topics`)
with a timeout of seconds, and what they answer is cached for a few seconds,
so a form that reruns on every widget change does not ask each time. A
broker that does not answer, or a topic that does not exist, is said in the
page; the form then refuses to start.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from streaming.engine.broker import BOOTSTRAP_VARIABLE
from streaming.engine.errors import ConfigError
from streaming.engine.sources.kafka import KAFKA_KEY, KAFKA_TIMESTAMP, VALUE_FORMATS, KafkaSource, check_bootstrap
from streaming.engine.topics import TopicInfo, decode_messages, describe_topic, infer_value_columns, latest_messages, topic_names, write_sample

from .datasets import KEY_NAMES, TIME_NAMES, build_mapping, dataset_store, guess_column, mapping_widgets, preview_view
from .shared import get_spark, session_starter

__all__ = [
    "SAMPLE_MESSAGES",
    "STARTS",
    "kafka_source",
    "kafka_widgets",
    "start_time_ms",
    "topic_rates",
    "topic_view",
]

SAMPLE_MESSAGES = 200
"""The latest messages a topic's value columns are inferred from and previewed with."""
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
        raise ConfigError("source.topic", params.get("topic"), "choose a topic of the brokers (publish one on the Datasets page)")
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


@st.cache_data(ttl=30, show_spinner="Reading a sample of the topic…")
def _sample(bootstrap: str, topic: str) -> pd.DataFrame:
    return latest_messages(bootstrap, topic, SAMPLE_MESSAGES)


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


def _topic_widgets(names: Sequence[str]) -> dict[str, Any] | None:
    if st.toggle("A pattern of topics", key="lab_kafka_pattern", help="subscribePattern: every topic whose name matches, new ones as they appear"):
        pattern = st.text_input("Topic pattern (Java regular expression)", value=".*", key="lab_kafka_topic_pattern")
        return {"topic": pattern, "pattern": True, "sampled": _sample_topic(names, pattern)}
    if not names:
        st.warning("The brokers hold no topic yet: publish a dataset or a sample feed into one on the Datasets page (or `python -m streaming publish`).")
        return None
    topic = st.selectbox("Topic", list(names), key="lab_kafka_topic")
    return {"topic": topic, "pattern": False, "sampled": topic}


def kafka_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    """The Kafka source's settings: brokers, topic, where to start, the value's format, and the column mapping shown against a sample of messages."""
    bootstrap = st.text_input(
        "Bootstrap servers", value=os.environ.get(BOOTSTRAP_VARIABLE, ""), key="lab_kafka_bootstrap", placeholder="127.0.0.1:9092",
        help=f"host:port of the brokers, several separated by commas (default: ${BOOTSTRAP_VARIABLE}; `make kafka` starts a broker and prints it)",
    )
    params: dict[str, Any] = {"bootstrap": bootstrap}
    try:
        names = _topic_names(check_bootstrap(bootstrap, "Bootstrap servers"))
    except ConfigError as err:
        st.warning(str(err))
        return params
    chosen = _topic_widgets(names)
    if chosen is None:
        return params
    params.update(chosen)
    start = st.radio("Start at", STARTS, horizontal=True, key="lab_kafka_start", help="Where a new query starts reading; a resumed one goes on from its checkpoint")
    params["start"] = start
    if start == STARTS[2]:
        params["starting_time"] = st.text_input("Start time (UTC)", value=f"{pd.Timestamp.now('UTC'):%Y-%m-%d %H:00:00}", key="lab_kafka_start_time")
    params["max_offsets_per_trigger"] = st.number_input(
        "Max offsets per trigger", min_value=0, value=0, step=100, key="lab_kafka_max_offsets",
        help="At most this many records per micro-batch (maxOffsetsPerTrigger); 0: everything available",
    )
    value_format = st.selectbox("Value format", VALUE_FORMATS, format_func=lambda name: FORMAT_LABELS.get(name, name), key="lab_kafka_format")
    params["value_format"] = value_format
    csv_columns = _csv_names(st.text_input("CSV column names", value="", key="lab_kafka_csv_columns", placeholder="empty: _c0, _c1, …")) if value_format == "csv" else ()
    params.update(_mapping_widgets(bootstrap, params["sampled"], value_format, csv_columns))
    return params


def _mapping_widgets(bootstrap: str, topic: str | None, value_format: str, csv_columns: tuple[str, ...]) -> dict[str, Any]:
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
    guessed = _guess(names)
    values = mapping_widgets([*names, KAFKA_TIMESTAMP, KAFKA_KEY], guessed, prefix="lab_kafka_map", arrival=False)
    st.caption(f"{KAFKA_TIMESTAMP} is each record's timestamp, {KAFKA_KEY} its key; the record timestamp is the arrival time.")
    with st.expander(f"Sample: the latest {len(messages)} messages of {topic}"):
        try:
            sample = write_sample(messages, value_format, dataset_store().root / SAMPLES_FOLDER / f"{topic}.{value_format}", csv_columns or None)  # type: ignore[arg-type]
            preview_view(get_spark(), [sample], value_format, build_mapping({**values, "arrival": None}))  # type: ignore[arg-type]
        except ConfigError as err:
            st.warning(str(err))
    return {"value_columns": value_columns, "mapping": values}


def _guess(names: Sequence[str]):
    from streaming.engine.columns import ColumnMapping

    return ColumnMapping(event_time=guess_column(names, TIME_NAMES, KAFKA_TIMESTAMP) or KAFKA_TIMESTAMP, key=guess_column(names, KEY_NAMES, KAFKA_KEY))


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
