"""The data a page runs on: a sample feed or a dataset, how its micro-batches are cut, and what is aggregated.

Live query, the Watermark tuner and Compare offer the same choices: the sample
feeds (CSV, ``event_time`` and ``key``), then the user's datasets and the
samples that ship a column mapping, each run with the mapping saved on the
Datasets page. Only names the stores list are ever opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

import pandas as pd
import streamlit as st

from streaming.engine.data.batching import Batching
from streaming.engine.data.datasets import DatasetStore
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_names
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import VALUE_AGGREGATIONS, ColumnMapping, FeedSource

from .datasets import dataset_store
from .owner import session_owner
from .shared import DEFAULT_FEED, KEPT, feed_source, get_spark

__all__ = [
    "BATCHING_RULES",
    "CURRENT_DATA",
    "DataChoice",
    "aggregate_widgets",
    "batching_widgets",
    "choice_of",
    "data_choices",
    "data_select",
    "data_source",
    "data_widgets",
    "dataset_source",
    "follow_data",
    "label_of",
    "remember_data",
    "runnable_datasets",
    "unrunnable_data",
]

T = TypeVar("T")
BATCHING_RULES = ("one file each", "N rows each", "by arrival time")


@dataclass(frozen=True)
class DataChoice:
    """One entry of the data picker: a sample feed, or a dataset of a store (the data root or the samples folder)."""

    kind: Literal["feed", "dataset"]
    root: Path
    name: str


def runnable_datasets(store: DatasetStore, samples_root: Path = SAMPLE_FEEDS) -> dict[str, tuple[Path, str]]:
    """Label → (store root, name) of the datasets a query can run: the user's, then the samples that ship a mapping."""
    samples = DatasetStore(samples_root)
    choices = {name: (store.root, name) for name in store.names()}
    choices.update({f"{name} (sample)": (samples.root, name) for name in samples.names() if samples.saved_columns(name) is not None})
    return choices


def data_choices(store: DatasetStore, samples_root: Path = SAMPLE_FEEDS) -> dict[str, DataChoice]:
    """Label → choice: the sample feeds (by name), then :func:`runnable_datasets`; a dataset named like a feed is labelled ``name (dataset)``."""
    choices = {name: DataChoice("feed", Path(samples_root), name) for name in feed_names(samples_root)}
    for label, (root, name) in runnable_datasets(store, samples_root).items():
        choices[f"{label} (dataset)" if label in choices else label] = DataChoice("dataset", root, name)
    return choices


def _mapping(store: DatasetStore, name: str) -> ColumnMapping:
    saved = store.saved_columns(name)
    if saved is None:
        raise ConfigError("columns", name, "are not mapped yet: choose the event-time column on the Datasets page and press Save mapping")
    return ColumnMapping.from_dict(saved)


def _store(root: Path | str) -> DatasetStore:
    """The store at ``root``: this user's view of the data root, or the samples."""
    store, samples = dataset_store(), DatasetStore(SAMPLE_FEEDS)
    chosen = next((known for known in (store, samples) if known.root == Path(root).resolve()), None)
    if chosen is None:
        raise ConfigError("dataset", str(root), "is neither the data root nor the samples folder")
    return chosen


def dataset_source(params: Mapping[str, Any]) -> FeedSource:
    """A dataset replayed with its saved column mapping, from ``root``, ``dataset``, ``batch_by`` (``file``, ``rows:N`` or ``arrival``), ``batch_interval``, ``seconds_per_file`` and ``speed``."""
    name = params.get("dataset")
    if name is None:
        raise ConfigError("dataset", None, "none uploaded yet: add one on the Datasets page")
    store = _store(params["root"])
    columns = _mapping(store, name)
    by = params.get("batch_by", "file")
    if by == "arrival":
        if columns.arrival is None:
            raise ConfigError("batch_by", "arrival", f"needs {name}'s arrival column: map it on the Datasets page and press Save mapping")
        by = columns.arrival
    batching = Batching(by, params.get("batch_interval"))
    return FeedSource(store.folder(name), params.get("seconds_per_file", 0.0), store.file_format(name), columns, batching, params.get("speed"))


def choice_of(label: str | None, store: DatasetStore | None = None, samples_root: Path = SAMPLE_FEEDS) -> DataChoice:
    """The choice :func:`data_choices` lists as ``label``; :class:`ConfigError` on the field ``data`` for any other text (never a path)."""
    choices = data_choices(dataset_store() if store is None else store, samples_root)
    if label not in choices:
        raise ConfigError("data", label, f"is not a sample feed or a mapped dataset ({', '.join(choices)})")
    return choices[label]


def data_source(choice: DataChoice, batching: Mapping[str, Any] | None = None, seconds_per_file: float = 0.0) -> FeedSource:
    """The source of ``choice``: a sample feed (one file per batch) or a dataset cut by ``batching`` (:func:`batching_widgets`)."""
    if choice.kind == "feed":
        return feed_source(choice.name, seconds_per_file, choice.root)
    return dataset_source({**(batching or {}), "root": str(choice.root), "dataset": choice.name, "seconds_per_file": seconds_per_file})


def label_of(choice: DataChoice, labels: Mapping[T, DataChoice]) -> T | None:
    """The label ``labels`` gives ``choice`` (the same kind, name and folder), or ``None`` when it lists no such data."""
    return next((label for label, listed in labels.items() if _same(listed, choice)), None)


def _same(one: DataChoice, other: DataChoice) -> bool:
    return (one.kind, one.name) == (other.kind, other.name) and Path(one.root).resolve() == Path(other.root).resolve()


# --- carried between pages --------------------------------------------------------

CURRENT_DATA = "data_current"
"""Session-state key of the data last chosen on any page (a :class:`DataChoice`): a page whose own choice differs opens on it."""


@st.cache_resource
def _chosen_last() -> dict[str, DataChoice]:
    """The data each owner chose last, on this server: what a new session of theirs (a reload, another tab, the app opened again)
    opens on. A dict's single item writes and reads are atomic, which is all the sessions ask of it."""
    return {}


def remember_data(choice: DataChoice | None, picker: str) -> None:
    """Note ``choice``, shown by the picker ``picker``, as this session's current data and its owner's last, for the pages opened next
    (:func:`follow_data`)."""
    if choice is not None:
        st.session_state[CURRENT_DATA] = st.session_state[f"{picker}_seen"] = choice
        _chosen_last()[session_owner()] = choice


def unrunnable_data(labels: Mapping[T, DataChoice]) -> DataChoice | None:
    """The dataset chosen last on another page when it is not among ``labels`` (what a page can run): its column mapping is not saved yet."""
    current = st.session_state.get(CURRENT_DATA)
    return current if isinstance(current, DataChoice) and current.kind == "dataset" and label_of(current, labels) is None else None


def follow_data(picker: str, labels: Mapping[T, DataChoice]) -> T | None:
    """The label (among ``labels``) of the data chosen last on another page, when it is not what the picker ``picker`` showed last; else ``None``.

    The page then sets its picker to it: the data chosen on one page is what
    the next opens on. In a new session, a page's link is read first (any input in its URL: one made on the default data names none);
    without one, the page opens on what its owner chose last.
    """
    current = st.session_state.get(CURRENT_DATA)
    if current is None and not any(key != "operator" for key in st.query_params):
        current = _chosen_last().get(session_owner())
    seen = st.session_state.get(f"{picker}_seen")
    if current is None or (seen is not None and _same(seen, current)):
        return None
    st.session_state[f"{picker}_seen"] = current
    return label_of(current, labels)


# --- widgets ------------------------------------------------------------------------


def data_select(key: str, label: str = "Data") -> str | None:
    """The picker over :func:`data_choices` (``web_clicks`` first when present): the chosen label, for :func:`choice_of`.

    It follows the data chosen on another page (:func:`follow_data`), and what it shows becomes the current data.
    """
    choices = data_choices(dataset_store())
    labels = list(choices)
    followed = follow_data(key, choices)
    if followed is not None:
        st.session_state[key] = followed
    index = labels.index(DEFAULT_FEED) if DEFAULT_FEED in labels else 0
    chosen = st.selectbox(
        label, labels, index=index, key=key, **KEPT,
        help="A sample feed (one CSV file per micro-batch), or a dataset with the column mapping saved on the Datasets page",
    )
    remember_data(choices.get(chosen) if chosen is not None else None, key)
    return chosen


def batching_widgets(prefix: str) -> dict[str, Any]:
    """How a dataset's rows become micro-batches: ``batch_by`` (``file``, ``rows:N``, ``arrival``) and ``batch_interval``."""
    rule = st.selectbox(
        "Micro-batches", BATCHING_RULES, key=f"{prefix}_batching", **KEPT,
        help="by arrival time: the rows whose arrival column falls in the same interval form one batch (map the arrival column on the Datasets page)",
    )
    if rule == BATCHING_RULES[1]:
        rows = st.number_input("Rows per batch", min_value=1, value=100, step=50, key=f"{prefix}_rows", **KEPT)
        return {"batch_by": f"rows:{int(rows)}", "batch_interval": None}
    if rule == BATCHING_RULES[2]:
        return {"batch_by": "arrival", "batch_interval": st.text_input("Arrival interval", value="10 seconds", key=f"{prefix}_interval", **KEPT)}
    return {"batch_by": "file", "batch_interval": None}


def data_widgets(prefix: str, label: str | None, *, aggregates: bool = True) -> dict[str, Any]:
    """For a dataset: how its micro-batches are cut (:func:`batching_widgets`) and (with ``aggregates``) what is aggregated, offered from its mapping.

    ``{"batching": {...}, "aggregation": ..., "deduplicate": ...}``; a sample feed is counted, one file per batch.
    """
    plain: dict[str, Any] = {"batching": {}, "aggregation": "count", "deduplicate": False}
    try:
        choice = choice_of(label)
        columns = _mapping(_store(choice.root), choice.name) if choice.kind == "dataset" else None
    except ConfigError:
        return plain
    if columns is None:
        return plain
    return {"batching": batching_widgets(prefix), **(aggregate_widgets(prefix, columns) if aggregates else {})}


def aggregate_widgets(prefix: str, columns: ColumnMapping) -> dict[str, Any]:
    """What is aggregated, offered from the mapping ``columns``: ``{"aggregation": ..., "deduplicate": ...}``."""
    aggregations = ["count", *(VALUE_AGGREGATIONS if columns.value is not None else ())]
    offered = (
        f"count rows, or sum / avg / min / max / approx_distinct of the value column {columns.value}" if columns.value is not None
        else "count rows; map a value column (Value, in the column mapping) for sum / avg / min / max / approx_distinct"
    )
    aggregation = st.selectbox("Aggregate", aggregations, key=f"{prefix}_aggregation", **KEPT, help=offered)
    deduplicate = columns.dedup_id is not None and st.checkbox(
        f"Drop duplicate deliveries (by {columns.dedup_id})", key=f"{prefix}_deduplicate", **KEPT, help="dropDuplicatesWithinWatermark on the mapped id column",
    )
    return {"aggregation": aggregation, "deduplicate": bool(deduplicate)}


def source_fingerprint(source: FeedSource) -> tuple:
    """What identifies the events of ``source`` for a cache: its folder, batching, mapping and files (name, size, time)."""
    files = tuple((path.name, path.stat().st_size, path.stat().st_mtime_ns) for path in source.files())
    return (str(source.path), str(source.batching), tuple(sorted(source.columns.to_dict().items(), key=lambda item: item[0])), files)


@st.cache_data(show_spinner="Reading the events…", max_entries=16)
def _events(fingerprint: tuple, _source: FeedSource) -> pd.DataFrame:
    from streaming.analysis.profile import feed_events_of

    return feed_events_of(get_spark(), _source)


def events_of(source: FeedSource) -> pd.DataFrame:
    """The well-formed events of ``source`` in arrival order (:func:`~streaming.analysis.profile.feed_events_of`), cached while its files do not change."""
    return _events(source_fingerprint(source), source)
