"""Parts of the Live query page: the new-query form, the query picker and the live view of one run.

Every source kind is one entry of :data:`SOURCES`: its label, its widgets and
how their values become a :data:`~streaming.engine.query.config.Source`. The pure
helpers (:func:`build_source`, :func:`build_config`, :func:`check_name`) are
tested without a browser.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, cast

import pandas as pd
import streamlit as st

from streaming.analysis.latency import LatencyEnd
from streaming.analysis.watermark import DEFAULT_STALL_BATCHES, WatermarkStall
from streaming.app.snapshot import STORE_METRIC_BATCHES, RunSnapshot, snapshot
from streaming.charts.latency import END_WORDS
from streaming.charts.live import state_store_figure, windowed_counts_figure
from streaming.engine.data.batching import Batching
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_names
from streaming.engine.durations import human_duration
from streaming.engine.errors import ConfigError, brief, failure_words, first_line
from streaming.engine.join.live_join import LiveJoinQuery
from streaming.engine.kafka.topics import require_topic
from streaming.engine.query.config import (
    INTERVAL_TRIGGERS,
    MAX_SPEED,
    OUTPUT_MODES,
    STATE_STORES,
    TRIGGER_KINDS,
    VALUE_AGGREGATIONS,
    GeneratorSource,
    QueryConfig,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
    Source,
    describe,
)
from streaming.engine.run.query import Run
from streaming.engine.run.registry import DuplicateQueryError, QueryRegistry, check_query_name
from streaming.engine.run.sharing import Grants
from streaming.engine.run.walkthrough import PREFIX as WALKTHROUGH_PREFIX

from .data import (
    BATCHING_RULES,
    DataChoice,
    batching_widgets,
    dataset_source,
    follow_data,
    label_of,
    remember_data,
    runnable_datasets,
    unrunnable_data,
)
from .datasets import dataset_store
from .kafka import kafka_source, kafka_widgets, topic_view
from .lateness import lateness_view
from .live_chart import live_chart
from .shared import (
    KEPT,
    LIVE_PAGE,
    QUERIES_PAGE,
    REFRESH_SECONDS,
    arrival_widget,
    failure_banner,
    feed_select,
    feed_source,
    get_registry,
    go_to,
    metrics_row,
    open_panel,
    report_button,
    session_starter,
    show_code,
    watermark_widget,
    windows_widgets,
)
from .shown import Shown, shown_by
from .sql import START_KEY as SQL_START_KEY
from .sql import sql_view

__all__ = [
    "SOURCES",
    "begin_run",
    "build_config",
    "build_source",
    "check_name",
    "form_values",
    "live_view",
    "open_in_live",
    "placeholder_chart",
    "query_selector",
    "query_widgets",
    "replayed_choices",
    "source_widgets",
    "stall_widget",
    "start_query",
    "stop_button",
]

LOG = logging.getLogger(__name__)
TRIGGER_LABELS: Mapping[str, str] = {
    "default": "Default (next batch as soon as the last one ends)",
    "processing_time": "Processing time (fixed interval)",
    "available_now": "Available now (process what is there, then stop)",
    "real_time": "Real-time mode (a topic: each row written as soon as it is read)",
}
LATENCY_ENDS: Mapping[str, str] = {"shown": "to this page", "folded": "to the result table", "written": "to the sink"}
LATENCY_WINDOW_SECONDS = 60
"""The latency metrics cover the records that reached their end in this many recent seconds."""
STATE_STORE_LABELS: Mapping[str, str] = {"hdfs": "Spark's default (HDFS-backed)", "rocksdb": "RocksDB"}

FIRST_BATCH_WAIT_SECONDS = 5.0
"""After Start, the page waits this long at most for the new query's first batch before it draws."""

# Session-state keys: the watched query, and a query to watch after the next rerun.
SELECTED_KEY = "lab_selected"
WATCHED_KEY = "lab_watched"
PENDING_KEY = "lab_pending"
START_KEY = "lab_start"
"""The key of the form's Start button."""


# --- sources: one entry per kind ---------------------------------------------


def _feed_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "feed": feed_select(feeds, "lab_feed"),
        "seconds_per_file": st.number_input(
            "Seconds per file", min_value=0.1, value=2.0, step=0.5, key="lab_seconds_per_file", **KEPT, help="One file, one micro-batch, every this many seconds"
        ),
    }


def _socket_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "feed": feed_select(feeds, "lab_socket_feed"),
        "lines_per_second": st.number_input("Lines per second", min_value=0.1, value=20.0, step=5.0, key="lab_lines_per_second", **KEPT),
    }


def _generator_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "events_per_second": st.number_input("Events per second", min_value=1, max_value=100_000, value=50, step=10, key="lab_gen_rate", **KEPT),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_gen_keys", **KEPT),
        "max_lag": st.text_input("Max lag (out of order)", value="20 seconds", key="lab_gen_max_lag", **KEPT),
        "late_share": st.number_input("Late share", min_value=0.0, max_value=1.0, value=0.05, step=0.01, key="lab_gen_late_share", **KEPT),
        "late_delay": st.text_input("Late delay", value="2 minutes", key="lab_gen_late_delay", **KEPT),
        "seed": st.number_input("Seed", min_value=0, value=7, step=1, key="lab_gen_seed", **KEPT),
        "stall_after": (
            st.text_input("Event time stops after", value="1 minute", key="lab_gen_stall_after", **KEPT)
            if st.checkbox("Stall the watermark", key="lab_gen_stall", **KEPT, help="Event time stops advancing while events keep arriving: the watermark stalls")
            else None
        ),
    }


def _rate_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "rows_per_second": st.number_input("Rows per second", min_value=1, max_value=1_000_000, value=100, step=10, key="lab_rate_rows", **KEPT),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_rate_keys", **KEPT),
    }


def _rate_micro_batch_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "rows_per_batch": st.number_input("Rows per batch", min_value=1, max_value=1_000_000, value=100, step=10, key="lab_rmb_rows", **KEPT),
        "advance": st.text_input("Event time advance per batch", value="1 second", key="lab_rmb_advance", **KEPT),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_rmb_keys", **KEPT),
    }


PICKERS = {"feed": "lab_feed", "dataset": "lab_dataset"}
"""The source kinds that replay a sample feed or a dataset, and the key of their picker."""
PACES = ("seconds per batch", "arrival time × speed")


def _dataset_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    choices = runnable_datasets(dataset_store())
    label = st.selectbox("Dataset", list(choices), key="lab_dataset", **KEPT, help="Your uploaded datasets and the samples, run with the mapping saved on the Datasets page")
    root, name = choices[label] if label is not None else (None, None)
    batching = batching_widgets("lab_dataset")
    by_arrival = batching["batch_by"] == "arrival" and st.radio(
        "Pace", PACES, horizontal=True, key="lab_dataset_pace", **KEPT,
        help="arrival time × speed: the pause before each batch is the arrival time between it and the one before, divided by the speed",
    ) == PACES[1]
    speed = (
        st.number_input("Speed (× arrival time)", min_value=0.1, max_value=MAX_SPEED, value=10.0, step=5.0, key="lab_dataset_speed", **KEPT)
        if by_arrival else None
    )
    seconds = None if by_arrival else st.number_input(
        "Seconds per batch", min_value=0.1, value=2.0, step=0.5, key="lab_dataset_seconds_per_file", **KEPT, help="One micro-batch every this many seconds"
    )
    return {**batching, "root": str(root), "dataset": name, "seconds_per_file": seconds or 2.0, "speed": speed}


def _dataset_feed(params: Mapping[str, Any], root: Path) -> Source:
    return dataset_source(params)


def _replayed_feed(params: Mapping[str, Any], root: Path) -> Source:
    return feed_source(params["feed"], params["seconds_per_file"], root)


def _socket_feed(params: Mapping[str, Any], root: Path) -> Source:
    folder = feed_source(params["feed"], 0.0, root).path
    return SocketSource(folder, lines_per_second=params["lines_per_second"])


def _from_params(kind: Callable[..., Source], params: Mapping[str, Any], root: Path) -> Source:
    return kind(**params)


@dataclass(frozen=True)
class SourceChoice:
    """One source kind of the form: its label, its widgets, and how their values become a source."""

    label: str
    widgets: Callable[[Sequence[str]], dict[str, Any]]
    build: Callable[[Mapping[str, Any], Path], Source]


SOURCES: Mapping[str, SourceChoice] = {
    "feed": SourceChoice("Replayed sample feed", _feed_widgets, _replayed_feed),
    "dataset": SourceChoice("Your dataset (uploaded on the Datasets page)", _dataset_widgets, _dataset_feed),
    "generator": SourceChoice("Generator (out-of-order and late events)", _generator_widgets, partial(_from_params, GeneratorSource)),
    "rate": SourceChoice("Spark rate source", _rate_widgets, partial(_from_params, RateSource)),
    "rate-micro-batch": SourceChoice("Spark rate-micro-batch source", _rate_micro_batch_widgets, partial(_from_params, RateMicroBatchSource)),
    "socket": SourceChoice("Socket (sample feed sent line by line)", _socket_widgets, _socket_feed),
    "kafka": SourceChoice("Kafka topic", kafka_widgets, kafka_source),
}


# --- configuration: pure ----------------------------------------------------------


def build_source(kind: str, params: Mapping[str, Any], root: Path = SAMPLE_FEEDS) -> Source:
    """The source configuration for ``kind`` from the widget values ``params``; raises :class:`ConfigError`."""
    choice = SOURCES.get(kind)
    if choice is None:
        raise ConfigError("source", kind, f"is not a source kind ({', '.join(SOURCES)})")
    return choice.build(params, root)


def form_values(config: QueryConfig, replayed: Mapping[tuple[str, str], DataChoice]) -> dict[str, Any]:
    """The Live query form's inputs (their session-state keys and values) that run ``config`` again, for another page's *Open in Live query*.

    ``replayed`` is what the form offers (:func:`replayed_choices`). Only the
    replay of one of those is carried; the form keeps its own pace and name.
    :class:`ConfigError` on ``source`` otherwise.
    """
    source = config.source.as_feed
    if source is None:
        raise ConfigError("source", config.source.kind, "opens in Live query only when it replays a sample feed or a dataset")
    kinds: tuple[Literal["feed", "dataset"], ...] = ("feed", "dataset") if source.sample_layout else ("dataset",)
    found = next(filter(None, (label_of(DataChoice(kind, source.path.parent, source.path.name), replayed) for kind in kinds)), None)
    if found is None:
        raise ConfigError("source", source.path.name, "is not a runnable dataset: save its column mapping on the Datasets page")
    kind, label = found
    values = {"lab_source": kind, PICKERS[kind]: label, **(_batching_values(source.batching, "lab_dataset") if kind == "dataset" else {})}
    sliding = config.slide is not None
    return {
        **values,
        "lab_aggregation": config.aggregation,
        "lab_deduplicate": config.deduplicate,
        "lab_sessions": config.session_gap is not None,
        **({"lab_session_gap": config.session_gap} if config.session_gap is not None else {}),
        "lab_window": config.window,
        "lab_window_kind": "sliding" if sliding else "tumbling",
        **({"lab_slide": config.slide} if sliding else {}),
        "lab_use_watermark": config.watermark is not None,
        **({"lab_watermark": config.watermark} if config.watermark is not None else {}),
        "lab_output_mode": config.output_mode,
        "lab_arrival": config.arrival,
    }


def _batching_values(batching: Batching, prefix: str) -> dict[str, Any]:
    if batching.rows is not None:
        return {f"{prefix}_batching": BATCHING_RULES[1], f"{prefix}_rows": batching.rows}
    if batching.by != "file":
        return {f"{prefix}_batching": BATCHING_RULES[2], f"{prefix}_interval": batching.interval}
    return {f"{prefix}_batching": BATCHING_RULES[0]}


def open_in_live(config: QueryConfig, key: str) -> None:
    """An *Open in Live query* button: the Live query form set to run ``config`` (:func:`form_values`), ready to start; none when it cannot be."""
    try:
        values = form_values(config, replayed_choices(feed_names()))
    except ConfigError:
        return
    if st.button("Open in Live query", key=key, icon=":material/play_circle:", help="The Live query form set to this query, ready to start"):
        st.session_state.update(values)
        go_to(LIVE_PAGE)


def build_config(kind: str, source_params: Mapping[str, Any], query_params: Mapping[str, Any], root: Path = SAMPLE_FEEDS) -> QueryConfig:
    """The validated query configuration from the form's values; raises :class:`ConfigError` naming field and value."""
    return QueryConfig(build_source(kind, source_params, root), **query_params)


def check_name(name: str) -> str | None:
    """``name`` stripped, ``None`` when empty (the registry picks ``query_N``); raises :class:`ConfigError` if Spark would refuse it."""
    stripped = name.strip()
    return check_query_name(stripped) if stripped else None


# --- configuration: widgets -------------------------------------------------------


def replayed_choices(feeds: Sequence[str], datasets: Mapping[str, tuple[Path, str]] | None = None, root: Path = SAMPLE_FEEDS) -> dict[tuple[str, str], DataChoice]:
    """(source kind, its picker's label) → the data the form replays: the sample ``feeds`` (under ``root``), then the runnable ``datasets``
    (:func:`~dashboard.data.runnable_datasets`, those of this server's data root when ``None``)."""
    choices = {("feed", name): DataChoice("feed", root, name) for name in feeds}
    runnable = runnable_datasets(dataset_store()) if datasets is None else datasets
    choices.update({("dataset", label): DataChoice("dataset", store, name) for label, (store, name) in runnable.items()})
    return choices


def source_widgets(feeds: Sequence[str], sources: Mapping[str, SourceChoice] = SOURCES) -> tuple[str, dict[str, Any]]:
    """The source picker and its settings: ``(kind, params)`` for :func:`build_source`.

    It follows a sample feed or dataset chosen on another page (:func:`~dashboard.data.follow_data`), and notes the one it replays.
    """
    replayed = replayed_choices(feeds)
    followed = follow_data("lab_source", replayed)
    if followed is not None:
        st.session_state.update({"lab_source": followed[0], PICKERS[followed[0]]: followed[1]})
    kind: str = st.selectbox("Source", list(sources), format_func=lambda name: sources[name].label, key="lab_source", **KEPT)
    waiting = unrunnable_data(replayed)
    if waiting is not None:
        st.caption(f"{waiting.name}, chosen on the Datasets page, is offered here once its column mapping is saved there (*Save mapping*).")
    params = sources[kind].widgets(feeds)
    if kind in PICKERS:
        remember_data(replayed.get((kind, st.session_state.get(PICKERS[kind], ""))), "lab_source")
    return kind, params


def query_widgets(
    output_modes: Sequence[str] = OUTPUT_MODES, triggers: Mapping[str, str] = TRIGGER_LABELS, *, with_value: bool = False, passthrough: bool = False,
) -> dict[str, Any]:
    """Window, watermark, output mode and trigger (and, ``with_value``, the aggregate; ``passthrough`` offers none, rows as they come): the keyword arguments of :class:`QueryConfig` besides the source."""
    choices = ["count", *(VALUE_AGGREGATIONS if with_value else ()), *(["none"] if passthrough else [])]
    aggregation = (
        st.selectbox(
            "Aggregate", choices, key="lab_aggregation", **KEPT, format_func=lambda name: "none (rows passed through)" if name == "none" else name,
            help="count rows, or sum / avg / min / max / approx_distinct of the dataset's value column (mapped on the Datasets page)"
            + ("; none passes each row through: what real-time mode runs on this Spark" if passthrough else ""),
        )
        if len(choices) > 1
        else "count"
    )
    deduplicate = with_value and st.checkbox(
        "Drop duplicate deliveries", key="lab_deduplicate", **KEPT,
        help="dropDuplicatesWithinWatermark on the dataset's id column (mapped on the Datasets page); needs a watermark",
    )
    window, slide, session_gap = windows_widgets("lab", sessions=with_value)
    watermark = watermark_widget("lab")
    output_mode = st.selectbox(
        "Output mode", list(output_modes), index=list(output_modes).index("update"), key="lab_output_mode", **KEPT,
        help="update: changed rows; append: finalized rows; complete: the whole table",
    )
    trigger = st.selectbox("Trigger", list(TRIGGER_KINDS), format_func=lambda kind: triggers.get(kind, kind), key="lab_trigger", **KEPT)
    interval = (
        st.text_input(
            "Trigger interval" if trigger == "processing_time" else "Real-time batch length", value="5 seconds", key="lab_trigger_interval", **KEPT,
            help=None if trigger == "processing_time" else "How long a real-time batch runs before Spark checkpoints it (at least 5 seconds): not a latency",
        )
        if trigger in INTERVAL_TRIGGERS
        else None
    )
    state_store = st.selectbox(
        "State store", list(STATE_STORES), format_func=lambda store: STATE_STORE_LABELS.get(store, store), key="lab_state_store", **KEPT,
        help="Where the query's state lives: Spark's default (JVM memory, files in the checkpoint) or RocksDB (off the heap, with its own metrics)",
    )
    changelog = state_store == "rocksdb" and st.checkbox(
        "Changelog checkpointing", key="lab_changelog", **KEPT, help="RocksDB commits each batch's changes instead of a snapshot of its files",
    )
    arrival = arrival_widget("lab")
    return {
        "window": window,
        "slide": slide,
        "watermark": watermark,
        "output_mode": output_mode,
        "trigger": trigger,
        "trigger_interval": interval,
        "aggregation": aggregation,
        "deduplicate": deduplicate,
        "session_gap": session_gap,
        "state_store": state_store,
        "changelog_checkpointing": changelog,
        "arrival": arrival,
    }


def start_pressed() -> bool:
    """True in the rerun a press of the Live page's Start (the form's or SQL's) began: read before the buttons are drawn."""
    return any(st.session_state.get(key) is True for key in (START_KEY, SQL_START_KEY))


def begin_run(begin: Callable[[], Run], doing: str, first_batch_wait: float = FIRST_BATCH_WAIT_SECONDS) -> Run | None:
    """Start a run with ``begin`` (a start or a resume) under a spinner saying ``doing``; the run, or ``None`` after showing why it could not start.

    A query whose trigger starts at once is given up to ``first_batch_wait``
    seconds for its first batch before the page redraws, so the charts open with
    data instead of waiting for the live view's next tick.
    """
    from pyspark.errors import PySparkException

    try:
        with st.spinner(f"{doing}…"):
            run = begin()
            if run.config.trigger != "processing_time":
                run.await_first_batch(first_batch_wait)
    except (DuplicateQueryError, ConfigError) as err:
        st.error(brief(str(err)))
        return None
    except PySparkException as err:
        LOG.warning("%s: Spark refused: %s", doing, err)
        st.error(f"Spark refused to start the query: {failure_words(str(err))}")
        return None
    except Exception as err:
        LOG.exception("%s failed", doing)
        st.error(f"The query could not start: {type(err).__name__}: {brief(str(err))}")
        return None
    return run


def start_query(
    registry: QueryRegistry, config: QueryConfig, name: str | None, pending_key: str = PENDING_KEY, first_batch_wait: float = FIRST_BATCH_WAIT_SECONDS
) -> None:
    """Start ``config`` as ``name`` (kept on disk when Spark can resume it) and watch it after a rerun; shows ``st.error`` when the name is taken or Spark refuses.

    A topic is asked for first (its brokers answer and it exists, within seconds): Spark would wait for a missing one without a word.
    """
    source = config.source.as_topic
    if source is not None and not source.pattern:
        try:
            require_topic(source.bootstrap, source.topic)
        except ConfigError as err:
            st.error(brief(str(err)))
            return
    run = begin_run(lambda: registry.start(config, name, keep=config.resumable and registry.can_keep), "Starting the query", first_batch_wait)
    if run is not None:
        st.session_state[pending_key] = run.name
        st.rerun()


# --- live view ------------------------------------------------------------------


def query_selector(registry: QueryRegistry, keys: tuple[str, str, str] = (SELECTED_KEY, WATCHED_KEY, PENDING_KEY)) -> str | None:
    """Pick the watched query among the registry's runs; the choice is kept in ``st.session_state``.

    ``keys`` are the selectbox's key, the last watched name (kept when the
    selectbox's options change) and a name to switch to (set by Start or Watch).
    """
    selected_key, watched_key, pending_key = keys
    names = [run.name for run in registry.runs() if not isinstance(run.config, LiveJoinQuery)]  # a live join is watched on the Joins page
    if not names:
        st.info("No query yet: set one up (the sidebar's form, or Query: SQL) and press **Start query**.")
        return None
    state = st.session_state
    pending = state.pop(pending_key, None)
    if pending in names:
        state[selected_key] = pending
    elif state.get(selected_key) not in names:
        own = [name for name in names if not name.startswith(WALKTHROUGH_PREFIX)] or names  # a Step through's queries belong to that page
        state[selected_key] = state.get(watched_key) if state.get(watched_key) in names else own[-1]
    choice = st.selectbox("Watching query", names, key=selected_key)
    state[watched_key] = choice
    return choice


WATCH_PARAM = "watch"
"""The Live page's URL parameter that carries a query's read-only link (:mod:`~streaming.engine.run.sharing`): a presenter's."""


def linked_run(registry: QueryRegistry) -> tuple[str | None, Run | None]:
    """``(link, run)``: the token of the read-only link the page was opened by (``?watch=``; ``None``: it was not), and the run it names,
    whoever owns it; the page says which, and what the owner shares, or that the link names no query on this server."""
    token = st.query_params.get(WATCH_PARAM)
    if token is None:
        return None, None
    run = registry.shared_run(token)
    if run is None:
        st.warning(
            "This read-only link names no query on this server: its owner revoked it or deleted the query, or the query has not run since "
            "the server restarted."
        )
    else:
        st.info(f"Watching **{run.name}** read-only, by a link its owner shared: {_granted(run.share.grants)}, none of its controls.")
    return token, run


def _granted(grants: Grants) -> str:
    """What a viewer sees of a shared run, in words."""
    extras = [what for what, given in (("its SQL and code", grants.code), ("its report", grants.report)) if given]
    return "its numbers and charts as they come" + "".join(f", {extra}" for extra in extras)


SHARE_GRANTS = {"code": "Share the SQL and the code", "report": "Share the report"}
"""What an owner may grant a read-only link's viewers (:class:`~streaming.engine.run.sharing.Grants`), by the checkbox that grants it."""
SHARE_HELP = {
    "code": "Show code, and a SQL query's text: they hold your SQL and the server's paths of the files it reads",
    "report": "Download report (HTML): the view as one file; with the SQL and the code only when they are shared too",
}


def share_link(run: Run) -> None:
    """The read-only link of ``run``, for its owner to hand to an audience (a demo's presenter): what it shares beyond the view, ticked,
    and Revoke, which ends the link for whoever holds it. A kept query's link names the query, so its next run answers it too.

    Each box shows what the run's share holds at every run of the page and writes only when ticked (``on_change``), so a second tab
    of the owner's never undoes what the first granted."""
    with st.popover("Share read-only", icon=":material/share:"):
        keys = {grant: f"lab_share_{grant}_{run.name}" for grant in SHARE_GRANTS}
        granted = run.share.grants.to_dict()
        for grant, label in SHARE_GRANTS.items():
            st.session_state[keys[grant]] = granted[grant]
            st.checkbox(label, key=keys[grant], help=SHARE_HELP[grant], on_change=_grant, args=(run, keys))
        base = (st.context.url or "").split("?", 1)[0]
        st.code(f"{base}?{WATCH_PARAM}={run.share.token}", language=None)
        st.caption(
            "Whoever opens this link sees this query's numbers and charts, and what is ticked above, without Stop or any other control, "
            + ("across its resumes, until you revoke the link or delete the query." if run.kept else "while it is on this server.")
        )
        st.button("Revoke this link", key=f"lab_share_revoke_{run.name}", on_click=_revoke, args=(run,), icon=":material/link_off:",
                  help="A new link replaces it: whoever holds the old one sees the query no more")


def _grant(run: Run, keys: Mapping[str, str]) -> None:
    """Share ``run`` with what its owner's boxes (``keys``, by grant) now tick."""
    run.reshare(run.share.granting(Grants.from_dict({grant: bool(st.session_state[key]) for grant, key in keys.items()})))


def _revoke(run: Run) -> None:
    run.reshare(run.share.revoked())


def stop_button(run: Run) -> None:
    """A Stop button for ``run``, enabled while it is active."""
    if st.button("Stop query", key="lab_stop", disabled=run.status != "active" or run.stopping):
        run.stop_soon()  # Spark's stop waits for the batch it interrupts: the page does not
        st.rerun()


STALL_KEY = "lab_stall_batches"


def stall_widget() -> None:
    """How many batches with input and no watermark advance make the live view warn of a stalled watermark."""
    st.number_input(
        "Warn when the watermark stalls for (batches)", min_value=1, max_value=10_000, value=DEFAULT_STALL_BATCHES, step=1, key=STALL_KEY,
        help="Batches that bring input while the watermark does not move: no window is finalized and no state is evicted",
    )


def _stall_warning(stall: WatermarkStall | None) -> None:
    if stall is None:
        return
    growth = stall.state_rows_now - stall.state_rows_before
    st.warning(
        f"The watermark has not moved for {stall.batches} batches with input ({stall.rows} rows since batch {stall.since_batch}); "
        f"it stands at {stall.watermark:%Y-%m-%d %H:%M:%S}. No new event is later than the ones seen: the source's event time "
        f"stopped, or only late events arrive. Nothing is finalized or evicted meanwhile; state rows went from "
        f"{stall.state_rows_before} to {stall.state_rows_now} ({growth:+d}).",
        icon=":material/pause_circle:",
    )


STATE_ROWS = 500


def _state_view(snap: RunSnapshot) -> None:
    """On demand, what the query's state holds now: its operators and one operator's rows, read from the checkpoint at every refresh."""
    with st.expander("State store: what the state holds now"):
        if not st.toggle("Read the state at every refresh", key="lab_read_state",
                         help="Spark's State Data Source on the query's checkpoint: a small batch job per refresh"):
            return
        spark = get_registry().spark
        try:
            operators = snap.state_operators(spark)
            if operators.empty:
                st.caption("No state committed yet (or the query keeps none).")
                return
            names = dict(zip(operators["operator_id"], operators["operator"]))
            chosen = st.selectbox("Operator", list(names), format_func=lambda number: f"{number}: {names[number]}", key="lab_state_operator")
            rows = snap.state_rows(spark, int(chosen), STATE_ROWS)
        except Exception as err:  # noqa: BLE001 - a checkpoint being written or removed; shown, the next refresh tries again
            st.info(f"The state cannot be read now: {first_line(err)}")
            return
        st.dataframe(operators, hide_index=True)
        st.dataframe(rows, hide_index=True)
        shown = f"the first {STATE_ROWS}" if len(rows) == STATE_ROWS else f"{len(rows)}"
        st.caption(f"{shown} rows of operator {chosen} at the latest committed batch; {_eviction(str(names[chosen]))}.")


def _eviction(operator: str) -> str:
    """When a row of the state operator ``operator`` (its name in the state metadata) leaves the state, in the guide's words."""
    name = operator.lower()
    if "dedup" in name:
        return "an id is kept until the watermark passes its event time, then evicted: a duplicate arriving later is counted again"
    if "session" in name:
        return "a session is emitted (append) and evicted once the watermark passes its end: its last event plus the gap"
    return "a window is emitted (append) and evicted once the watermark reaches its end"


def _state_store_view(snap: RunSnapshot) -> None:
    """RocksDB's own metrics over the last :data:`~streaming.app.snapshot.STORE_METRIC_BATCHES` batches, for a query that keeps its state in RocksDB."""
    metrics = snap.store_metrics()
    if metrics is None:
        return
    live_chart(state_store_figure(metrics), key="lab_chart_store")
    st.caption(
        f"The last {STORE_METRIC_BATCHES} batches at most. SST file size and pinned blocks are what RocksDB holds on disk and in memory; "
        "bytes copied is what a commit uploads to the checkpoint"
        + (" (with changelog checkpointing, only the changes of each batch)." if snap.run.config.changelog_checkpointing else ".")
    )


def _evicted_note(snap: RunSnapshot) -> None:
    if snap.evicted is None:
        return
    max_rows, evicted = snap.evicted
    if evicted:
        st.warning(f"{evicted} oldest rows were evicted: the dashboard keeps at most {max_rows} windows of the result table in memory.")
    else:
        st.caption(f"The dashboard keeps at most {max_rows} windows of the result table in memory; none evicted so far.")


def _late_and_state(snap: RunSnapshot) -> None:
    left, right = st.columns(2)
    with left:
        live_chart(snap.sent("drops"), key="lab_chart_drops")
        st.caption(
            "Spark counts rows dropped by the watermark **after** window expansion and partial aggregation: "
            "a dropped row is a partially aggregated (window, key) group of a batch, not a raw event. A late event "
            "counts once per window it falls into (several with sliding windows), and late events of the same "
            "window and key in one batch may count as one."
        )
    with right:
        live_chart(snap.sent("state"), key="lab_chart_state")


def _engine_charts(snap: RunSnapshot) -> None:
    st.subheader("Engine (the Spark UI's streaming tab)")
    top = st.columns(2)
    with top[0]:
        live_chart(snap.sent("rates"), key="lab_chart_rates")
    with top[1]:
        live_chart(snap.sent("input"), key="lab_chart_input")
    bottom = st.columns(2)
    with bottom[0]:
        live_chart(snap.sent("duration"), key="lab_chart_duration")
    with bottom[1]:
        live_chart(snap.sent("gap"), key="lab_chart_gap")
        st.caption(
            "Batch time minus the watermark. A replayed feed's event times lie in the past, so its gap is large; "
            "it shrinks while the feed replays event time faster than real time."
        )


def _topic_view(snap: RunSnapshot, shown: Shown) -> None:
    """For a query on a topic: how far behind the topic it is after each batch, and on the owner's page, on demand, the topic itself."""
    run, source = snap.run, snap.run.config.source.as_topic
    if source is None:
        return
    st.subheader(f"The topic: {source.topic}")
    live_chart(snap.sent("lag"), key="lab_chart_lag")
    st.caption(
        "Records between the offsets the query has read up to and the topic's latest, after each batch (the source's "
        "avgOffsetsBehindLatest and maxOffsetsBehindLatest). A line that keeps rising: the query reads slower than records arrive."
    )
    if not shown.owned:
        return
    with st.expander("Partitions, offsets and the latest messages"):
        if st.toggle("Read the topic at every refresh", key="lab_read_topic", help="Asks the brokers with a Kafka client, not through Spark"):
            topic_view(source, key=f"lab_topic_{run.name}")


def _latency_view(snap: RunSnapshot) -> None:
    """For a run whose records carry their produce time: each record's end-to-end latency, to the sink, the result table or this page."""
    run = snap.run
    if run.latency is None:
        return
    st.subheader("End-to-end latency")
    end = st.segmented_control(
        "Measured", list(LATENCY_ENDS), format_func=LATENCY_ENDS.__getitem__, default="shown", required=True, key="lab_latency_end",
        help=f"From {run.config.source.stamp} to the moment its output reached the sink, the result table, or a page that drew the table",
    ) or "shown"
    end = cast("LatencyEnd", end)
    latency = snap.latency(end, window_seconds=LATENCY_WINDOW_SECONDS)
    assert latency is not None  # the run measures latency
    headline = latency.headline
    columns = st.columns(5)
    for column, name in zip(columns, ("p50", "p95", "p99", "max"), strict=False):
        value = getattr(headline, name)
        column.metric(f"Latency {name}", "–" if value != value else f"{value:,.0f} ms")
    columns[4].metric(f"Records, last {LATENCY_WINDOW_SECONDS} s", f"{headline.records:,.0f}", help=f"{latency.records:,} measured since the start")
    if headline.as_of_ms is not None:
        st.caption(
            f"No record reached it in the last {LATENCY_WINDOW_SECONDS} s: the figures are those of the {LATENCY_WINDOW_SECONDS} s up to the last one, "
            f"at {pd.Timestamp(headline.as_of_ms, unit='ms'):%H:%M:%S} UTC."
        )
    elif headline.backlog_only:
        st.caption("No figure: every record measured so far was produced well before this query started (see below), so its latency is its age.")
    left, right = st.columns(2)
    with left:
        live_chart(latency.sent("latency"), key="lab_chart_latency")
    with right:
        live_chart(latency.sent("latency_histogram"), key="lab_chart_latency_histogram")
    live_chart(latency.sent("latency_breakdown"), key="lab_chart_latency_breakdown")
    backlog = latency.backlog
    if backlog["records"] > 0:
        st.info(
            f"{backlog['share']:.0%} of the records measured were produced before this query started (the oldest "
            f"{human_duration(backlog['oldest_ms'] / 1000)} before): their latency includes the time they waited for it. On a topic published "
            "with its data's arrival times, that is the records' age, not the pipeline's latency: publish without an arrival column, "
            "or start from the latest offsets, to measure the pipeline."
        )
    if run.config.trigger == "real_time":
        st.caption(
            f"Real-time mode: each row's latency {END_WORDS[end]}. Spark runs one long task per topic partition for the whole batch "
            f"({run.config.trigger_interval}), so each partition holds a core the whole time; rows reach the app through a topic of the run's own."
        )
    else:
        st.caption(
            f"Micro-batches: each record's latency, from {run.config.source.stamp} {END_WORDS[end]}. A record waits for the next batch to start, for the batch's work "
            "(its phases are in the batch-duration chart), then for the app to fold it; the records of a batch are measured from their exact percentiles."
        )


def _details(snap: RunSnapshot, shown: Shown) -> None:
    """The result table and, on the owner's page, the latest progress and the configuration (both name the server's paths), each in a
    panel drawn only while it is open (:func:`open_panel`)."""
    run, table = snap.run, snap.table
    with open_panel("Result table", key="lab_details_table") as panel:
        if panel.open:
            st.caption(f"{len(table):,} rows")
            st.dataframe(table, hide_index=True)
    if not shown.owned:
        return
    with open_panel("Latest progress (JSON)", key="lab_details_progress") as panel:
        if panel.open:
            st.json(run.log.latest or {}, expanded=False)
    with open_panel("Configuration", key="lab_details_configuration") as panel:
        if panel.open:
            st.json(describe(run.config))


def placeholder_chart() -> None:
    """The result-table chart before there is a query: says where the counts will show.

    Drawing it also makes the browser load the charting library while the
    user sets up a query, so the first chart after Start is not held up by it.
    """
    figure = windowed_counts_figure(pd.DataFrame(), no_rows="The counts of the watched query show here")
    live_chart(figure, key="lab_chart_placeholder")


FIRST_ROWS_POLL_SECONDS = 0.2
"""How often the view of a run just started looks for its first rows (the refresh's 2 s came on top of the first batch, and the first
chart showed 2.4 s after Start on a warm server, ``make bench``), and how soon the rest of a view follows its headline."""
FIRST_ROWS_SECONDS = 15.0
"""How long after its start a run without rows is looked at that often (a topic may stay silent for ever)."""


def live_view(run: Run, *, link: str | None = None) -> None:
    """The watched run, redrawn every ``REFRESH_SECONDS`` from one :func:`~streaming.app.snapshot.snapshot` of it (every
    ``FIRST_ROWS_POLL_SECONDS`` until a run just started has rows and its first view here is whole); on a page opened by the read-only
    ``link``, what its owner shares (:func:`~dashboard.shown.shown_by`), else everything and, once a kept run has stopped, the way to
    change and resume it.

    A run that has ended is drawn once, with the page: nothing of it changes any more, and redrawing it every refresh kept Chromium
    busy (0.26 cores) for as long as the page stayed open. The refresh that sees a run end reruns the page, buttons included.

    An active run's first view in a page's session (a browser tab; a reload starts another) is its headline alone (:func:`_draw`), the rest
    of its view a refresh later.

    It takes the :class:`Run`, not the registry, so a tick never touches
    state shared with other users.
    """
    every = _refresh_seconds(run, opened=_opened(run))
    if every is None:
        _draw(run, shown=_shown(run, link))
    elif every == FIRST_ROWS_POLL_SECONDS:
        _first_rows_view(run, link=link)
    else:
        _live_view(run, link=link)


def _shown(run: Run, link: str | None) -> Shown:
    """What this page shows of ``run`` (:func:`~dashboard.shown.shown_by`); once the link it was opened by is revoked, the page again,
    which says the link names no query."""
    shown = shown_by(run, link)
    if shown is None:
        st.rerun(scope="app")
    return shown


OPENED_KEY = "lab_opened"
"""Session-state key: the keys of the active runs whose headline this page's session has drawn (:func:`_draw`)."""


def _opened(run: Run) -> bool:
    return run.key in st.session_state.get(OPENED_KEY, ())


def _refresh_seconds(run: Run, *, opened: bool = True) -> float | None:
    """How often the view of ``run`` is redrawn now: ``None`` once it has ended; often while it awaits its first rows, or until its
    headline has been drawn here (``opened``), so the rest follows soon."""
    if run.status != "active":
        return None
    return FIRST_ROWS_POLL_SECONDS if not opened or _awaits_first_rows(run) else REFRESH_SECONDS


def _awaits_first_rows(run: Run) -> bool:
    return len(run.table) == 0 and run.status == "active" and pd.Timestamp.now(tz="UTC").tz_convert(None) - run.started_at < pd.Timedelta(seconds=FIRST_ROWS_SECONDS)


@st.fragment(run_every=FIRST_ROWS_POLL_SECONDS)
def _first_rows_view(run: Run, *, link: str | None) -> None:
    """:func:`_draw` often, until the run has rows (or has run ``FIRST_ROWS_SECONDS``) and its view here is whole: then the page again,
    which refreshes it at the usual pace."""
    _refresh(run, link=link, every=FIRST_ROWS_POLL_SECONDS)


@st.fragment(run_every=REFRESH_SECONDS)
def _live_view(run: Run, *, link: str | None) -> None:
    _refresh(run, link=link, every=REFRESH_SECONDS)


def _refresh(run: Run, *, link: str | None, every: float) -> None:
    """One refresh of the view of ``run``, drawn every ``every`` seconds; then the page again once :func:`_refresh_seconds` is no longer
    ``every`` (the run has rows, has run a while, has ended, or its headline was drawn a refresh ago), which draws it at its new pace or once.

    The pace is judged as the view stood before this refresh: the refresh that draws the headline leaves the rest to the next one. A run
    replaced by a resume of its kept query is left for the page, which draws the new run (a read-only link names the query, not the run)."""
    if session_starter().status != "ready" or not get_registry().holds(run):
        st.rerun(scope="app")  # Spark died under the query, or a resume replaced it: the page shows what was lost, or the new run
    shown, opened = _shown(run, link), _opened(run)
    _draw(run, shown=shown, headline=not opened)
    if not opened:
        st.session_state.setdefault(OPENED_KEY, set()).add(run.key)
    if _refresh_seconds(run, opened=opened) != every:
        st.rerun(scope="app")


def _draw(run: Run, *, shown: Shown, headline: bool = False) -> None:
    """The view of ``run`` with what the page ``shown`` may show beyond numbers and charts; with ``headline``, no further than its first
    chart: its numbers, captions and warnings, then the counts chart (a SQL run: :func:`~dashboard.sql.sql_view` to its result table).

    The first view after Start came whole: a dozen charts, the tables and the code reached Chromium at once, and the counts chart waited
    behind them, 0.17-0.62 s from the server's sending it. Drawn first alone, Start to that chart on one warm server (Chromium, 2 cores,
    7 Starts each, interleaved): 0.85-1.31 s, median 0.97 → 0.76-0.95 s, median 0.84; the rest of the view follows a refresh later
    (the server has drawn it 1.27 s after Start instead of 0.75-0.87 s).
    """
    if shown.owned and run.kept and run.status == "stopped":
        st.page_link(QUERIES_PAGE, label="Change and resume", icon=":material/edit_note:",
                     help="On the Queries page: change its watermark, window or text, see what Spark will do with its state, try it on a copy")
    snap = snapshot(run, stall_batches=int(st.session_state.get(STALL_KEY, DEFAULT_STALL_BATCHES)))
    if snap.sql:
        sql_view(snap, shown, headline=headline)
        return
    metrics_row(snap.numbers())
    st.caption(snap.arrival_text)
    _stall_warning(snap.stall)
    if snap.failure is not None:
        failure_banner(f"Query {run.name}", *snap.failure, details=shown.owned)
    live_chart(snap.sent("counts"), key="lab_chart_counts")
    if run.latency is not None:
        run.latency.shown(snap.read_at_ms)  # the rows folded before the table was read are the ones this refresh drew
    if headline:
        return
    _evicted_note(snap)
    _late_and_state(snap)
    _state_store_view(snap)
    lateness_view(snap, shown)
    _latency_view(snap)
    _engine_charts(snap)
    _topic_view(snap, shown)
    _details(snap, shown)
    if shown.owned:
        _state_view(snap)
    if shown.report:
        report_button(snap, code=shown.code)
    if shown.code:
        show_code(run.config, key=f"lab_code_{run.name}")
