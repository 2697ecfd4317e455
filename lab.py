"""The dashboard's shared resources and page parts; the only module besides the pages that imports Streamlit.

Shared resources (one per server process, every browser tab sees them):
:func:`get_spark` and :func:`get_registry`, kept by ``st.cache_resource``. The
registry is never replaced per user, and an ``atexit`` handler stops all its
queries when the server exits.

Pure helpers (:func:`feed_names`, :func:`build_source`, :func:`build_config`,
:func:`check_name`, :func:`runs_frame`) are tested without a browser; the
``*_widgets`` and ``render_*`` functions draw parts of the pages.
"""

from __future__ import annotations

import atexit
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from streaming import charts, lateness, lateness_charts
from streaming.config import (
    OUTPUT_MODES,
    ConfigError,
    FeedSource,
    GeneratorSource,
    QueryConfig,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
    Source,
    describe,
)
from streaming.export import pyspark_code
from streaming.query import Run
from streaming.registry import DuplicateQueryError, QueryRegistry

__all__ = [
    "SAMPLE_FEEDS",
    "SOURCE_KINDS",
    "build_config",
    "build_source",
    "check_name",
    "feed_names",
    "get_registry",
    "get_spark",
    "live_view",
    "page_setup",
    "query_selector",
    "queries_view",
    "query_widgets",
    "render_others",
    "render_run_card",
    "runs_frame",
    "show_code",
    "source_summary",
    "source_widgets",
    "start_query",
    "stop_button",
]

LOG = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parent
SAMPLE_FEEDS = ROOT / "sample_feeds"
REFRESH_SECONDS = 2.0
LIVE_PAGE = "pages/1_Live_query.py"

SOURCE_KINDS: Mapping[str, str] = {
    "feed": "Replayed sample feed",
    "generator": "Generator (out-of-order and late events)",
    "rate": "Spark rate source",
    "rate-micro-batch": "Spark rate-micro-batch source",
    "socket": "Socket (sample feed sent line by line)",
}
TRIGGER_LABELS: Mapping[str, str] = {
    "default": "Default (next batch as soon as the last one ends)",
    "processing_time": "Processing time (fixed interval)",
    "available_now": "Available now (process what is there, then stop)",
}

# Session-state keys: the watched query, and a query to watch after the next rerun.
SELECTED_KEY = "lab_selected"
WATCHED_KEY = "lab_watched"
PENDING_KEY = "lab_pending"


# --- page setup --------------------------------------------------------------


def page_setup(title: str) -> None:
    """Tab title and wide layout. Every page calls it, not only ``app.py``.

    Streamlit (1.67) runs a page of ``pages/`` on its own, without ``app.py``,
    when the first visitor of a fresh server opens that page's URL directly
    (the pages/ folder is taken for old-style navigation until some session
    has called ``st.navigation``); the page must look right then too.
    """
    st.set_page_config(page_title=f"{title} - Streaming Lab", page_icon=":material/stream:", layout="wide")


# --- shared resources -------------------------------------------------------


@st.cache_resource(show_spinner="Starting Spark...")
def get_spark():
    """The one SparkSession of this server process."""
    from streaming.session import get_session

    return get_session()


def _stop_all_at_exit(registry: QueryRegistry, log: logging.Logger = LOG) -> None:
    try:
        registry.stop_all()
    except Exception as err:  # noqa: BLE001 - at exit the JVM may already be gone; nothing left to do
        log.warning("stopping queries at exit failed: %s", err)


@st.cache_resource(show_spinner="Starting Spark...")
def get_registry() -> QueryRegistry:
    """The one QueryRegistry of this server process, shared by every session; its queries stop at exit."""
    registry = QueryRegistry(get_spark())
    atexit.register(_stop_all_at_exit, registry)
    return registry


# --- configuration: pure --------------------------------------------------


def feed_names(root: Path = SAMPLE_FEEDS) -> list[str]:
    """Names of the folders under ``root`` that hold ``.csv`` files: the feeds a user may pick."""
    return sorted(folder.name for folder in root.iterdir() if folder.is_dir() and any(folder.glob("*.csv")))


def _feed_path(name: str, root: Path) -> Path:
    """The folder of the sample feed ``name``; only names listed by :func:`feed_names`, never a free path."""
    if name not in feed_names(root):
        raise ConfigError("source.path", name, f"is not one of the sample feeds {feed_names(root)}")
    return root / name


def build_source(kind: str, params: Mapping[str, Any], root: Path = SAMPLE_FEEDS) -> Source:
    """The source configuration for ``kind`` from the widget values ``params``; raises :class:`ConfigError`."""
    if kind == "feed":
        return FeedSource(_feed_path(params["feed"], root), seconds_per_file=params["seconds_per_file"])
    if kind == "socket":
        return SocketSource(_feed_path(params["feed"], root), lines_per_second=params["lines_per_second"])
    if kind == "generator":
        return GeneratorSource(**params)
    if kind == "rate":
        return RateSource(**params)
    if kind == "rate-micro-batch":
        return RateMicroBatchSource(**params)
    raise ConfigError("source", kind, "is not a source kind")


def build_config(kind: str, source_params: Mapping[str, Any], query_params: Mapping[str, Any], root: Path = SAMPLE_FEEDS) -> QueryConfig:
    """The validated query configuration from the form's values; raises :class:`ConfigError` naming field and value."""
    return QueryConfig(build_source(kind, source_params, root), **query_params)


def check_name(name: str) -> str | None:
    """``name`` stripped, ``None`` when empty (the registry picks ``query_N``); raises :class:`ConfigError` if Spark would refuse it."""
    stripped = name.strip()
    if not stripped:
        return None
    if not stripped.isidentifier():
        raise ConfigError("name", stripped, "must be letters, digits and underscores, not starting with a digit")
    return stripped


def source_summary(description: Mapping[str, object]) -> str:
    """One line for the ``source.*`` entries of :func:`streaming.config.describe`, e.g. ``feed: path=web_clicks, seconds_per_file=2.0``."""
    params = [
        f"{key.removeprefix('source.')}={Path(str(value)).name if key == 'source.path' else value}"
        for key, value in description.items()
        if key.startswith("source.") and key != "source.kind"
    ]
    return f"{description.get('source.kind', '?')}: {', '.join(params)}"


def _last_progress(run: Run) -> pd.Timestamp | None:
    latest = run.log.latest
    if not latest or not latest.get("timestamp"):
        return None
    return pd.Timestamp(latest["timestamp"]).tz_convert(None)


def runs_frame(runs: Sequence[Run]) -> pd.DataFrame:
    """One row per run for the Queries page: name, status, batches, last progress, configuration, error."""
    rows = []
    for run in runs:
        description = describe(run.config)
        rows.append(
            {
                "name": run.name,
                "status": run.status,
                "batches": len(run.log),
                "last_progress": _last_progress(run),
                "source": source_summary(description),
                "window": description["window"],
                "watermark": description["watermark"],
                "output_mode": description["output_mode"],
                "trigger": description["trigger"],
                "error": run.error or "",
            }
        )
    columns = ["name", "status", "batches", "last_progress", "source", "window", "watermark", "output_mode", "trigger", "error"]
    return pd.DataFrame(rows, columns=columns)


# --- configuration: widgets -------------------------------------------------


def _feed_select(feeds: Sequence[str], key: str) -> str:
    default = feeds.index("web_clicks") if "web_clicks" in feeds else 0
    return st.selectbox("Sample feed", feeds, index=default, key=key, help="A folder under sample_feeds/: one CSV file per micro-batch")


def _feed_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "feed": _feed_select(feeds, "lab_feed"),
        "seconds_per_file": st.number_input("Seconds per file", min_value=0.0, value=2.0, step=0.5, key="lab_seconds_per_file"),
    }


def _socket_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    return {
        "feed": _feed_select(feeds, "lab_socket_feed"),
        "lines_per_second": st.number_input("Lines per second", min_value=0.1, value=20.0, step=5.0, key="lab_lines_per_second"),
    }


def _generator_widgets() -> dict[str, Any]:
    return {
        "events_per_second": st.number_input("Events per second", min_value=1, max_value=100_000, value=50, step=10, key="lab_gen_rate"),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_gen_keys"),
        "max_lag": st.text_input("Max lag (out of order)", value="20 seconds", key="lab_gen_max_lag"),
        "late_share": st.number_input("Late share", min_value=0.0, max_value=1.0, value=0.05, step=0.01, key="lab_gen_late_share"),
        "late_delay": st.text_input("Late delay", value="2 minutes", key="lab_gen_late_delay"),
        "seed": st.number_input("Seed", min_value=0, value=7, step=1, key="lab_gen_seed"),
    }


def _rate_widgets() -> dict[str, Any]:
    return {
        "rows_per_second": st.number_input("Rows per second", min_value=1, max_value=1_000_000, value=100, step=10, key="lab_rate_rows"),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_rate_keys"),
    }


def _rate_micro_batch_widgets() -> dict[str, Any]:
    return {
        "rows_per_batch": st.number_input("Rows per batch", min_value=1, max_value=1_000_000, value=100, step=10, key="lab_rmb_rows"),
        "advance": st.text_input("Event time advance per batch", value="1 second", key="lab_rmb_advance"),
        "keys": st.number_input("Keys", min_value=1, max_value=1000, value=4, step=1, key="lab_rmb_keys"),
    }


def source_widgets(feeds: Sequence[str], kinds: Mapping[str, str] = SOURCE_KINDS) -> tuple[str, dict[str, Any]]:
    """The source picker and its settings: ``(kind, params)`` for :func:`build_source`."""
    kind = st.selectbox("Source", list(kinds), format_func=kinds.get, key="lab_source")
    if kind == "feed":
        return kind, _feed_widgets(feeds)
    if kind == "socket":
        return kind, _socket_widgets(feeds)
    if kind == "generator":
        return kind, _generator_widgets()
    if kind == "rate":
        return kind, _rate_widgets()
    return kind, _rate_micro_batch_widgets()


def query_widgets(output_modes: Sequence[str] = OUTPUT_MODES, triggers: Mapping[str, str] = TRIGGER_LABELS) -> dict[str, Any]:
    """Window, watermark, output mode and trigger: the keyword arguments of :class:`QueryConfig` besides the source."""
    window = st.text_input("Window length", value="1 minute", key="lab_window")
    sliding = st.radio("Windows", ["tumbling", "sliding"], horizontal=True, key="lab_window_kind") == "sliding"
    slide = st.text_input("Slide", value="30 seconds", key="lab_slide") if sliding else None
    use_watermark = st.checkbox("Watermark", value=True, key="lab_use_watermark", help="How late an event may be, behind the latest event time seen")
    watermark = st.text_input("Watermark delay", value="30 seconds", key="lab_watermark") if use_watermark else None
    output_mode = st.selectbox("Output mode", list(output_modes), index=list(output_modes).index("update"), key="lab_output_mode", help="update: changed rows; append: finalized rows; complete: the whole table")
    trigger = st.selectbox("Trigger", list(triggers), format_func=triggers.get, key="lab_trigger")
    interval = st.text_input("Trigger interval", value="5 seconds", key="lab_trigger_interval") if trigger == "processing_time" else None
    return {
        "window": window,
        "slide": slide,
        "watermark": watermark,
        "output_mode": output_mode,
        "trigger": trigger,
        "trigger_interval": interval,
    }


def start_query(registry: QueryRegistry, config: QueryConfig, name: str | None, pending_key: str = PENDING_KEY) -> None:
    """Start ``config`` as ``name`` and watch it (after a rerun); shows ``st.error`` when the name is taken or Spark refuses."""
    from pyspark.errors import PySparkException

    try:
        run = registry.start(config, name)
    except (DuplicateQueryError, ValueError) as err:
        st.error(str(err))
        return
    except PySparkException as err:
        st.error(f"Spark refused to start the query: {err}")
        return
    st.session_state[pending_key] = run.name
    st.rerun()


# --- live view ------------------------------------------------------------------


def query_selector(registry: QueryRegistry, keys: tuple[str, str, str] = (SELECTED_KEY, WATCHED_KEY, PENDING_KEY)) -> str | None:
    """Pick the watched query among the registry's runs; the choice is kept in ``st.session_state``.

    ``keys`` are the selectbox's key, the last watched name (kept when the
    selectbox's options change) and a name to switch to (set by Start or Watch).
    """
    selected_key, watched_key, pending_key = keys
    names = [run.name for run in registry.runs()]
    if not names:
        st.info("No query yet: configure one in the sidebar and press **Start query**.")
        return None
    state = st.session_state
    pending = state.pop(pending_key, None)
    if pending in names:
        state[selected_key] = pending
    elif state.get(selected_key) not in names:
        state[selected_key] = state.get(watched_key) if state.get(watched_key) in names else names[-1]
    choice = st.selectbox("Watching query", names, key=selected_key)
    state[watched_key] = choice
    return choice


def stop_button(run: Run) -> None:
    """A Stop button for ``run``, enabled while it is active."""
    if st.button("Stop query", key="lab_stop", disabled=run.status != "active"):
        run.stop()
        st.rerun()


def _watermark_text(watermark: pd.Timestamp | None) -> str:
    return "none yet" if watermark is None else f"{watermark:%H:%M:%S}"


def _status_row(run: Run, progress: pd.DataFrame) -> None:
    watermark = charts.current_watermark(progress)
    columns = st.columns(6)
    columns[0].metric("Status", run.status)
    columns[1].metric("Batches", len(run.log))
    columns[2].metric("Watermark", _watermark_text(watermark), help=None if watermark is None else f"{watermark} UTC")
    columns[3].metric("Malformed rows", int(progress["malformed_rows"].sum()))
    columns[4].metric("Dropped (groups)", int(progress["rows_dropped_by_watermark"].sum()))
    columns[5].metric("Result rows", len(run.table))


def _evicted_note(run: Run) -> None:
    table = run.table
    if table.max_rows is None:
        return
    if table.evicted_rows:
        st.warning(f"{table.evicted_rows} oldest rows were evicted: the dashboard keeps at most {table.max_rows} windows of the result table in memory.")
    else:
        st.caption(f"The dashboard keeps at most {table.max_rows} windows of the result table in memory; none evicted so far.")


def _result_chart(run: Run, figure: go.Figure) -> None:
    st.plotly_chart(figure, key="lab_chart_counts")
    _evicted_note(run)


def _late_and_state(figures: Mapping[str, go.Figure]) -> None:
    left, right = st.columns(2)
    with left:
        st.plotly_chart(figures["drops"], key="lab_chart_drops")
        st.caption(
            "Spark counts rows dropped by the watermark **after** window expansion and partial aggregation: "
            "a dropped row is a partially aggregated (window, key) group of a batch, not a raw event. A late event "
            "counts once per window it falls into (several with sliding windows), and late events of the same "
            "window and key in one batch may count as one."
        )
    with right:
        st.plotly_chart(figures["state"], key="lab_chart_state")


def _engine_charts(figures: Mapping[str, go.Figure]) -> None:
    st.subheader("Engine (the Spark UI's streaming tab)")
    top = st.columns(2)
    top[0].plotly_chart(figures["rates"], key="lab_chart_rates")
    top[1].plotly_chart(figures["input"], key="lab_chart_input")
    bottom = st.columns(2)
    bottom[0].plotly_chart(figures["duration"], key="lab_chart_duration")
    with bottom[1]:
        st.plotly_chart(figures["gap"], key="lab_chart_gap")
        st.caption(
            "Batch time minus the watermark. A replayed feed's event times lie in the past, so its gap is large; "
            "it shrinks while the feed replays event time faster than real time."
        )


def _details(run: Run, table: pd.DataFrame) -> None:
    with st.expander(f"Result table ({len(table)} rows)"):
        st.dataframe(table, hide_index=True)
    with st.expander("Latest progress (JSON)"):
        st.json(run.log.latest or {}, expanded=False)
    with st.expander("Configuration"):
        st.json(describe(run.config))


def show_code(config: QueryConfig, key: str) -> None:
    """A "Show code" panel: self-contained PySpark code for ``config``, to paste into a notebook or ``spark-submit``."""
    with st.expander("Show code"):
        code = pyspark_code(config)
        st.code(code, language="python")
        st.download_button("Download streaming_query.py", code, file_name="streaming_query.py", mime="text/x-python", key=key)


@st.cache_data(max_entries=8, show_spinner=False)
def _feed_events(folder: str) -> pd.DataFrame:
    return lateness.feed_events(Path(folder))


def _lateness_view(run: Run) -> None:
    """Why was it dropped: every event of the replayed feed against the watermark that judged it."""
    st.subheader("Why was it dropped?")
    if not isinstance(run.config.source, FeedSource) or run.config.aggregation == "none":
        st.caption("Event-by-event lateness is shown for replayed feeds, where the arrival of every event is known.")
        return
    summaries = run.log.summaries()
    batches = lateness.file_batches(summaries)
    classified = lateness.classify(_feed_events(str(run.config.source.path)), batches, run.config.window_ms, run.config.slide_ms)
    numbers = lateness.drop_summary(classified, summaries)
    columns = st.columns(4)
    columns[0].metric("Events so far", numbers["events_total"])
    columns[1].metric("Not counted", numbers["not_counted"], help="In none of their windows: every window had closed")
    columns[2].metric("Partly counted", numbers["partly_counted"], help="Sliding windows: counted in only some of their windows")
    columns[3].metric("Spark: rows dropped", numbers["rows_dropped_by_watermark"], help="numRowsDroppedByWatermark, summed")
    st.caption(numbers["explanation"])
    left, right = st.columns(2)
    left.plotly_chart(lateness_charts.arrival_figure(classified, batches), key="lab_chart_arrival")
    right.plotly_chart(lateness_charts.lateness_figure(classified), key="lab_chart_lateness")


@st.fragment(run_every=REFRESH_SECONDS)
def live_view(run: Run) -> None:
    """The watched run, redrawn every ``REFRESH_SECONDS``; only reads its table and progress log.

    It takes the :class:`Run`, not the registry, so a tick never touches
    state shared with other users.
    """
    (progress, breakdown), table = run.log.frames(), run.table.frame()
    _status_row(run, progress)
    if run.status == "failed":
        st.error(f"Query {run.name} failed: {run.error}")
    figures = charts.live_figures(
        table,
        progress,
        breakdown,
        output_mode=run.config.output_mode,
        slide=pd.Timedelta(milliseconds=run.config.slide_ms),
    )
    _result_chart(run, figures["counts"])
    _late_and_state(figures)
    _lateness_view(run)
    _engine_charts(figures)
    _details(run, table)
    show_code(run.config, key=f"lab_code_{run.name}")


# --- queries page -----------------------------------------------------------------


def _run_actions(registry: QueryRegistry, run: Run, live_page: str, pending_key: str = PENDING_KEY) -> None:
    if st.button("Watch", key=f"lab_watch_{run.name}"):
        st.session_state[pending_key] = run.name
        st.switch_page(live_page)
    if run.status == "active":
        if st.button("Stop", key=f"lab_stop_run_{run.name}"):
            registry.stop(run.name)
            st.rerun()
    elif st.button("Remove", key=f"lab_remove_run_{run.name}", help="Forget this run"):
        registry.remove(run.name)
        st.rerun()


def render_run_card(registry: QueryRegistry, run: Run, live_page: str = LIVE_PAGE) -> None:
    """One run of the registry: name, status, configuration, error if it failed, Watch/Stop/Remove buttons."""
    with st.container(border=True):
        text, actions = st.columns([5, 1])
        with text:
            st.markdown(f"**{run.name}**: {run.status}, {len(run.log)} batches")
            description = describe(run.config)
            settings = [f"{key}: {value}" for key, value in description.items() if not key.startswith("source.")]
            st.caption(" | ".join([source_summary(description), *settings]))
            if run.status == "failed":
                st.error(f"{run.name} failed: {run.error}")
        with actions:
            _run_actions(registry, run, live_page)


def render_others(registry: QueryRegistry) -> None:
    """Active queries on the session not started through the registry, each with a Stop button."""
    others = registry.others()
    if not others:
        st.caption("None.")
        return
    for query in others:
        name_column, id_column, action = st.columns([2, 3, 1])
        name_column.markdown(f"**{query.name or '(unnamed)'}**")
        id_column.code(str(query.id), language=None)
        if action.button("Stop", key=f"lab_stop_other_{query.id}"):
            query.stop()
            st.rerun()


@st.fragment(run_every=REFRESH_SECONDS * 2)
def queries_view(registry: QueryRegistry) -> None:
    """The registry's runs (table, then one card each) and the session's other active queries, refreshed in place."""
    runs = registry.runs()
    if runs:
        st.dataframe(runs_frame(runs), hide_index=True)
        for run in runs:
            render_run_card(registry, run)
    else:
        st.info("No query started from this dashboard yet: start one on the Live query page.")
    st.subheader("Other active queries on this Spark session")
    st.caption("Started on the same session but not through this dashboard (a notebook, a test, another registry).")
    render_others(registry)
