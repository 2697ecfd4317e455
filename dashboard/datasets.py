"""Parts of the Datasets page: upload, list, rename and delete a user's datasets, and the schema step's preview.

The pure helpers (:func:`dataset_choices`, :func:`guess_column`, :func:`build_mapping`,
:func:`store_uploads`, :func:`upload_dataset_name`) are tested without a browser; the rest draws.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd
import streamlit as st

from streaming.engine.data.batching import Batching
from streaming.engine.data.datasets import FORMATS_IN_WORDS, DatasetStore, FileFormat, Upload, UploadReport, plain_name
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.data.preview import TIME_NAMES, Preview, column_profiles, dataset_schema, guess_event_time, preview, read_dataset, time_range_warning
from streaming.engine.data.times import TIME_FORMATS
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import FEED_COLUMNS, ColumnMapping, FeedSource

from .owner import session_owner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "NONE",
    "PATTERN",
    "DatasetChoice",
    "build_mapping",
    "dataset_choices",
    "dataset_files",
    "dataset_store",
    "file_stamps",
    "guess_column",
    "manage_dataset",
    "mapping_widgets",
    "preview_view",
    "save_mapping_button",
    "saved_mapping",
    "schema_of",
    "store_root",
    "store_uploads",
    "upload_dataset_name",
    "upload_form",
]

NONE = "(none)"
PATTERN = "pattern…"
KEY_NAMES = ("key", "user", "user_id", "device", "sensor", "id")
ARRIVAL_NAMES = ("arrival", "arrival_time", "ingested_at", "ingestion_time", "received_at")


class Uploaded(Protocol):
    """What ``st.file_uploader`` returns per file (``UploadedFile``)."""

    name: str

    def getvalue(self) -> bytes: ...


@dataclass(frozen=True)
class DatasetChoice:
    """A dataset a user may open: a bundled sample feed (read-only) or one of the user's datasets."""

    name: str
    sample: bool

    @property
    def label(self) -> str:
        return f"{self.name} (sample)" if self.sample else self.name


def dataset_store(environ: Mapping[str, str] = os.environ) -> DatasetStore:
    """The store of this server's data root (``STREAMING_LAB_DATA``) as this browser session's owner sees it (:mod:`dashboard.owner`);
    :class:`ConfigError` for a bad upload limit."""
    return replace(DatasetStore.from_environment(environ), owner=session_owner())


def dataset_choices(store: DatasetStore, samples_root: Path = SAMPLE_FEEDS) -> list[DatasetChoice]:
    """The user's datasets, then the samples shipped with Streaming Lab (read-only)."""
    return [DatasetChoice(name, False) for name in store.names()] + [DatasetChoice(name, True) for name in DatasetStore(samples_root).names()]


def _store_of(store: DatasetStore, choice: DatasetChoice, samples_root: Path) -> DatasetStore:
    return DatasetStore(samples_root) if choice.sample else store


def store_root(store: DatasetStore, choice: DatasetChoice, samples_root: Path = SAMPLE_FEEDS) -> Path:
    """The folder holding ``choice``'s dataset: the samples folder or the data root."""
    return _store_of(store, choice, samples_root).root


def dataset_files(store: DatasetStore, choice: DatasetChoice, samples_root: Path = SAMPLE_FEEDS) -> tuple[list[Path], FileFormat]:
    """The files of ``choice`` and their format; only listed names are ever opened."""
    owner = _store_of(store, choice, samples_root)
    return owner.files(choice.name), owner.file_format(choice.name)


def store_uploads(store: DatasetStore, name: str, files: Sequence[Uploaded], *, private: bool = False) -> UploadReport:
    """Keep the uploaded ``files`` in dataset ``name``, with ``private`` for this session's owner alone (see :meth:`DatasetStore.add`)."""
    return store.add(name, [Upload(file.name, file.getvalue()) for file in files], private=private)


def upload_dataset_name(typed: str, files: Sequence[Uploaded]) -> str:
    """The dataset an upload goes to: the name typed, else the first file's name without its suffix when that name is kept as typed
    (:func:`plain_name`); :class:`ConfigError` otherwise. Its last part alone would name a dataset the user never typed
    (``../../etc/passwd.csv`` made ``passwd``), so a first name that is refused asks for a dataset name instead."""
    if typed or not files:
        return typed
    try:
        return PurePosixPath(plain_name(files[0].name, "file")).stem
    except ConfigError as err:
        raise ConfigError(
            "dataset name", typed, f"is empty, and the first file's name {err.value!r} {err.reason}: type a dataset name"
        ) from None


def guess_column(columns: Sequence[str], names: Sequence[str], fallback: str | None = None) -> str | None:
    """The first of ``names`` found in ``columns`` (case-insensitive), else ``fallback``."""
    lowered = {column.lower(): column for column in columns}
    return next((lowered[name] for name in names if name in lowered), fallback)


def build_mapping(values: Mapping[str, Any]) -> ColumnMapping:
    """A :class:`ColumnMapping` from the page's values (``NONE`` for an unused role, ``PATTERN`` with ``time_pattern``)."""
    def column(name: str) -> str | None:
        chosen = values.get(name)
        return None if chosen in (None, NONE) else str(chosen)

    def time_format(name: str) -> str:
        chosen = values.get(name, "auto")
        return str(values.get(f"{name}_pattern", "")) if chosen == PATTERN else str(chosen)

    event_time = column("event_time")
    if event_time is None:
        raise ConfigError("columns.event_time", NONE, "is required: every streaming window needs an event time")
    return ColumnMapping(
        event_time=event_time, time_format=time_format("time_format"), key=column("key"), value=column("value"),
        dedup_id=column("dedup_id"), arrival=column("arrival"), arrival_format=time_format("arrival_format"),
    )


# --- drawing ----------------------------------------------------------------------------------


def upload_form(store: DatasetStore, limit_mb: int) -> None:
    """Upload files into a new or existing dataset; each file kept or refused with its reason."""
    with st.form("upload", clear_on_submit=True, enter_to_submit=False):  # Enter in the name field submitted the form without its files
        st.markdown("**Add your data**: CSV, JSON lines or Parquet; files are replayed in file-name order, one file per micro-batch.")
        name = st.text_input("Dataset name", key="upload_name", help="A new name makes a new dataset; an existing one adds files to it")
        # No ``type=``: Streamlit then checks each name itself before the page runs, and a name with
        # a NUL byte raised its exception on every run until a reload. The store judges names and
        # suffixes, each file refused with its reason.
        files = st.file_uploader(
            "Files", accept_multiple_files=True, key="upload_files", max_upload_size=limit_mb,
            help=f"{FORMATS_IN_WORDS}, up to {limit_mb} MB per file (STREAMING_LAB_MAX_UPLOAD_MB)",
        )
        private = st.checkbox(
            "Only me", key="upload_private",
            help="A new dataset is shared with every user of this server (demo data) unless kept to yourself: then only you see, run, rename or delete it",
        )
        submitted = st.form_submit_button("Upload", icon=":material/upload:")
    if not submitted:
        return
    if not files:
        st.warning("Choose at least one file to upload.")
        return
    try:
        report = store_uploads(store, upload_dataset_name(name, files), files, private=private)
    except ConfigError as err:
        st.error(f"Cannot store this upload: {err}")
        return
    for kept, rows in report.kept.items():
        st.success(f"{report.dataset}: kept {kept} ({rows:,} rows)")
    for refused in report.refused:
        st.error(f"{report.dataset}: refused {refused.value!r}: {refused.reason}. Nothing stored was changed.")
    if report.kept:
        st.session_state["dataset_choice"] = DatasetChoice(report.dataset, False).label


def manage_dataset(store: DatasetStore, choice: DatasetChoice) -> None:
    """Rename or delete the user's dataset ``choice`` (sample feeds are read-only)."""
    if choice.sample:
        st.caption("Sample feeds ship with Streaming Lab and cannot be renamed or deleted.")
        return
    message = st.session_state.pop("dataset_message", None)
    with st.expander("Rename or delete", expanded=message is not None):
        if message is not None:
            st.error(message)
        st.text_input("New name", value=choice.name, key=f"rename_to_{choice.name}")
        st.button("Rename", key="rename", on_click=_rename, args=(store, choice.name))
        sure = st.checkbox(f"Delete {choice.name} and its {len(store.files(choice.name))} file(s) for good", key="delete_sure")
        st.button("Delete", key="delete", disabled=not sure, type="primary", on_click=_delete, args=(store, choice.name))


def _rename(store: DatasetStore, old: str) -> None:
    """On Rename: runs before the page, so the dataset picker can follow the new name."""
    try:
        renamed = store.rename(old, st.session_state.get(f"rename_to_{old}", old))
    except ConfigError as err:
        st.session_state["dataset_message"] = f"Cannot rename: {err}"
        return
    st.session_state["dataset_choice"] = DatasetChoice(renamed, False).label


def _delete(store: DatasetStore, name: str) -> None:
    """On Delete: the dataset goes, the picker falls back to the first choice."""
    try:
        store.delete(name)
    except ConfigError as err:
        st.session_state["dataset_message"] = f"Cannot delete: {err}"
        return
    st.session_state.pop("dataset_choice", None)
    st.session_state["delete_sure"] = False


def mapping_widgets(
    columns: Sequence[str], saved: ColumnMapping | None = None, prefix: str = "map", *, arrival: bool = True, event_time: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """Which column holds what, and how times are written (starting from ``saved``, else from ``event_time`` -- the
    guessed event-time column and its format -- and the column names); the values for :func:`build_mapping`.

    Without ``arrival`` the arrival column is not asked for (a source that knows each row's arrival itself).
    """
    formats = [*TIME_FORMATS, PATTERN]
    optional = [NONE, *columns]

    def pick(label: str, name: str, options: Sequence[str], guess: str | None, help_text: str) -> str:
        chosen = getattr(saved, name) if saved is not None else guess
        index = list(options).index(chosen) if chosen is not None and chosen in options else 0
        return st.selectbox(label, options, index=index, key=f"{prefix}_{name}", help=help_text)

    def time_format(label: str, name: str, guess: str = "auto") -> dict[str, str]:
        written = getattr(saved, name) if saved is not None else guess
        chosen = st.selectbox(
            label, formats, index=formats.index(written) if written in formats else len(formats) - 1, key=f"{prefix}_{name}",
            help="auto: timestamps as they are, ISO-8601 or yyyy-MM-dd HH:mm:ss[.SSS] text (UTC without an offset)",
        )
        default = written if written not in formats else "yyyy-MM-dd HH:mm:ss"
        pattern = st.text_input("Spark datetime pattern", value=default, key=f"{prefix}_{name}_pattern") if chosen == PATTERN else ""
        return {name: chosen, f"{name}_pattern": pattern}

    left, right = st.columns(2)
    with left:
        guessed = event_time[0] if event_time is not None else guess_column(columns, TIME_NAMES)
        values: dict[str, Any] = {"event_time": pick("Event-time column", "event_time", list(columns), guessed, "The time each event happened")}
        values.update(time_format("Event-time format", "time_format", event_time[1] if event_time is not None else "auto"))
        values["key"] = pick("Key column", "key", optional, guess_column(columns, KEY_NAMES), "Group by this column; (none): one global group")
        values["value"] = pick("Value column", "value", optional, None, "The number sum/avg/min/max read")
    with right:
        values["dedup_id"] = pick("Id column (deduplication)", "dedup_id", optional, None, "Rows with the same id are duplicate deliveries")
        values["arrival"] = NONE if not arrival else pick("Arrival column", "arrival", optional, guess_column(columns, ARRIVAL_NAMES), "When each row arrived (ingestion time)")
        if values["arrival"] != NONE:
            values.update(time_format("Arrival format", "arrival_format"))
    return values


def dataset_feed(store: DatasetStore, choice: DatasetChoice, mapping: ColumnMapping, batching: Mapping[str, Any], samples_root: Path = SAMPLE_FEEDS) -> FeedSource:
    """``choice`` as a source read with ``mapping`` and cut by ``batching`` (``batch_by``: ``file``, ``rows:N`` or ``arrival``; ``batch_interval``)."""
    owner = _store_of(store, choice, samples_root)
    by = batching.get("batch_by", "file")
    if by == "arrival":
        if mapping.arrival is None:
            raise ConfigError("batch_by", "arrival", "needs the arrival column: map it above")
        by = mapping.arrival
    return FeedSource(owner.folder(choice.name), 0.0, owner.file_format(choice.name), mapping, Batching(by, batching.get("batch_interval")))


def saved_mapping(store: DatasetStore, choice: DatasetChoice, samples_root: Path = SAMPLE_FEEDS) -> ColumnMapping | None:
    """The mapping saved with ``choice`` (a sample's ships with it; the sample feeds' CSV layout is :data:`FEED_COLUMNS`), or ``None``."""
    owner = _store_of(store, choice, samples_root)
    saved = owner.saved_columns(choice.name)
    if saved is None and choice.sample and owner.file_format(choice.name) == "csv":
        return FEED_COLUMNS
    try:
        return None if saved is None else ColumnMapping.from_dict(saved)
    except (ConfigError, TypeError):
        return None


def save_mapping_button(store: DatasetStore, choice: DatasetChoice, mapping: ColumnMapping) -> None:
    """Save ``mapping`` with the dataset, for the Live query page; says whether the shown mapping is the saved one."""
    if choice.sample:
        where = "Replayed sample feed" if saved_mapping(store, choice) == FEED_COLUMNS else "Your dataset"
        st.caption(f"Samples ship with their mapping; run this one on the Live query page as *{where}*.")
        return
    if saved_mapping(store, choice) == mapping:
        st.caption(f":material/check_circle: This mapping is saved with {choice.name}: the Live query page runs the dataset with it.")
    elif st.button("Save mapping", key="save_mapping", icon=":material/save:", help="The Live query page runs the dataset with the saved mapping"):
        store.save_columns(choice.name, mapping.to_dict())
        st.rerun()


@st.cache_data(max_entries=32, ttl=3600, show_spinner="Reading the dataset with Spark…")
def _preview(_spark: SparkSession, files: tuple[tuple[str, float, int], ...], fmt: FileFormat, mapping: ColumnMapping) -> Preview:
    """The preview, cached by the files' names, modification times and sizes and by the mapping."""
    return preview(_spark, [Path(path) for path, _, _ in files], fmt, mapping)


def file_stamps(files: Sequence[Path]) -> tuple[tuple[str, float, int], ...]:
    return tuple((str(path), path.stat().st_mtime, path.stat().st_size) for path in files)


@st.cache_data(max_entries=32, ttl=3600, show_spinner="Looking for the event-time column…")
def _event_time_guess(_spark: SparkSession, files: tuple[tuple[str, float, int], ...], fmt: FileFormat) -> tuple[str, str] | None:
    return guess_event_time(column_profiles(read_dataset(_spark, [Path(path) for path, _, _ in files], fmt)))


def event_time_guess(spark: SparkSession, files: Sequence[Path], fmt: FileFormat) -> tuple[str, str] | None:
    """The column most likely to hold the event time and its format, from the values (cached like the preview); ``None`` when none reads as times."""
    return _event_time_guess(spark, file_stamps(files), fmt)


def schema_of(spark: SparkSession, files: Sequence[Path], fmt: FileFormat) -> dict[str, str]:
    """Column name → Spark type of the files, as the preview reads them (cached like the preview)."""
    return _schema(spark, file_stamps(files), fmt)


@st.cache_data(max_entries=32, ttl=3600, show_spinner="Reading the dataset's columns with Spark…")
def _schema(_spark: SparkSession, files: tuple[tuple[str, float, int], ...], fmt: FileFormat) -> dict[str, str]:
    return dataset_schema(read_dataset(_spark, [Path(path) for path, _, _ in files], fmt))


def preview_view(spark: SparkSession, files: Sequence[Path], fmt: FileFormat, mapping: ColumnMapping) -> Preview:
    """The schema step: counts, the event-time range, each column's type and problems, and the first rows."""
    result = _preview(spark, file_stamps(files), fmt, mapping)
    cells = st.columns(4)
    cells[0].metric("Rows", f"{result.rows:,}")
    unusable = result.event_times_unparsable + result.event_times_empty
    cells[1].metric(
        "Event times empty or unparsable", f"{unusable:,}",
        help=f"{result.event_times_empty:,} empty, {result.event_times_unparsable:,} that do not parse as {mapping.time_format!r}",
    )
    cells[2].metric("Malformed rows", f"{result.malformed_rows:,}", help="JSON lines Spark could not parse")
    cells[3].metric("Keys", "one global group" if result.keys is None else f"{result.keys:,}")
    if result.earliest is None or result.latest is None:
        st.warning("No event time parses with this column and format: choose another column or format.")
    else:
        st.caption(f"Event time from **{result.earliest}** to **{result.latest}** (UTC), {len(files)} file(s) of {fmt}.")
    if unusable:
        st.warning(
            f"{unusable:,} of {result.rows:,} rows have no usable event time ({result.event_times_empty:,} empty, "
            f"{result.event_times_unparsable:,} not parsing as {mapping.time_format!r}): a query counts those rows as malformed and leaves them out."
        )
    implausible = time_range_warning(result.earliest, result.latest, result.rows, pd.Timestamp.now())
    if implausible is not None:
        st.warning(f"Is **{mapping.event_time}** the event time? {implausible[0].upper()}{implausible[1:]}.")
    st.dataframe(
        pd.DataFrame(
            [
                {"column": column.name, "type": column.view_type, "role": column.role, "empty": column.nulls,
                 "unparsable": "" if column.unparsable is None else f"{column.unparsable:,}"}
                for column in result.columns
            ]
        ),
        hide_index=True,
    )
    st.markdown("**First rows**")
    st.dataframe(result.first_rows, hide_index=True)
    return result
