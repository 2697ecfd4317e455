"""What every page shares: the Spark session and query registry, the page frame, and the widgets several pages use.

Shared resources (one per server process, every browser tab sees them) are
kept by ``st.cache_resource`` and never replaced per user:
:func:`session_starter` (the background start of the SparkSession),
the one :class:`QueryRegistry` (an ``atexit`` handler stops its queries when the
server exits), which each session reads through :func:`get_registry` as its
owner sees it (:mod:`dashboard.owner`).

The pure helpers (:func:`feed_source`, :func:`percent`, :class:`InputErrors`)
are tested without a browser; the ``*_widgets`` functions draw parts of pages.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd
import streamlit as st

from streaming.engine.arrival import ARRIVAL_RULES, rule_words
from streaming.engine.data.datasets import data_root
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_names
from streaming.engine.durations import human_duration
from streaming.engine.errors import ConfigError, InputErrors, brief, failure_details, failure_words
from streaming.engine.join.join import JoinConfig
from streaming.engine.output.sinks import DEFAULT_MAX_SINK_ROWS, max_sink_rows
from streaming.engine.owners import visible
from streaming.engine.query.config import FeedSource, QueryConfig
from streaming.engine.run.budgets import Budgets
from streaming.engine.run.change import sweep_trials
from streaming.engine.run.checkpoints import QUERIES_FOLDER
from streaming.engine.run.query import warm_up
from streaming.engine.run.registry import DEFAULT_MAX_QUERIES, LostRun, QueryRegistry, max_queries
from streaming.engine.runtime.heap import exit_cause, exit_code
from streaming.engine.runtime.session import SessionStarter, StarterStatus, forget_session, server_reachable, session_alive, take_early
from streaming.export import join_code, pyspark_code

from .owner import is_operator, session_owner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from streamlit.elements.lib.mutable_expander_container import ExpanderContainer
    from streamlit.navigation.page import StreamlitPage

    from streaming.app.snapshot import Metric, RunSnapshot

__all__ = [
    "COMPARE_PAGE",
    "DATASETS_PAGE",
    "JOINS_PAGE",
    "KEPT",
    "LIVE_PAGE",
    "QUERIES_PAGE",
    "REFRESH_SECONDS",
    "STEP_PAGE",
    "STEP_URL",
    "TUNER_PAGE",
    "InputErrors",
    "SessionLosses",
    "asked_twice",
    "failure_banner",
    "feed_select",
    "feed_source",
    "get_registry",
    "get_spark",
    "go_to",
    "loss_banner",
    "metrics_row",
    "open_panel",
    "percent",
    "readable_seconds",
    "refuse",
    "report_button",
    "run_page",
    "session_losses",
    "session_ready",
    "session_starter",
    "session_status",
    "show_code",
    "wait_for_server",
    "watermark_widget",
    "window_widgets",
    "windows_widgets",
]

LOG = logging.getLogger(__name__)
KEPT: Mapping[str, Any] = MappingProxyType({"bind": "query-params", "persist_state": "session"})
"""Options of a page's inputs: kept for the session when the user leaves the page, and written in the page's URL (values other
than the default), so coming back, reloading or opening a shared link shows the same inputs. A link only fills the form: it
never starts anything, and every value still goes through the checks a typed one does."""
REFRESH_SECONDS = 2.0
SESSION_TIMEOUT_SECONDS = 300.0
DEFAULT_FEED = "web_clicks"

LIVE_PAGE = "dashboard/pages/live_query.py"
QUERIES_PAGE = "dashboard/pages/queries.py"
TUNER_PAGE = "dashboard/pages/tuner.py"
COMPARE_PAGE = "dashboard/pages/compare.py"
DATASETS_PAGE = "dashboard/pages/datasets.py"
JOINS_PAGE = "dashboard/pages/joins.py"
STEP_PAGE = "dashboard/pages/step_through.py"
STEP_URL = "Step_through"


# --- shared resources -------------------------------------------------------


@st.cache_resource(show_spinner=False)
def _starter() -> SessionStarter:
    return take_early() or SessionStarter(warm=warm_up).start()


class SessionLosses:
    """The sessions this server lost (their JVM died under it), with what their queries had reached; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.RLock()  # held by session_starter around its recovery, which records
        self._events: list[tuple[pd.Timestamp, list[LostRun], str]] = []

    def record(self, lost: list[LostRun], at: pd.Timestamp, cause: str) -> None:
        with self.lock:
            self._events.append((at, lost, cause))

    def since(self, moment: pd.Timestamp) -> list[tuple[pd.Timestamp, list[LostRun], str]]:
        """The losses recorded at or after ``moment``, oldest first: when, the runs lost, and why in words (:func:`_loss_cause`)."""
        with self.lock:
            return [event for event in self._events if event[0] >= moment]


@st.cache_resource(show_spinner=False)
def session_losses() -> SessionLosses:
    """The one record of lost sessions of this server process, for the banner every page shows."""
    return SessionLosses()


def session_starter() -> SessionStarter:
    """The background start of this server's SparkSession and its warm-up query: the one ``python -m dashboard.serve`` began before it
    imported the app (:func:`~streaming.engine.runtime.session.take_early`), else begun on the first page view of any page.

    When the session it made has died (its JVM exited: a crash, the OOM
    killer), the first page view to notice forgets it and its queries
    (recording what they had reached, for :func:`loss_banner`) and a new
    session starts in the background; every browser tab then gets the new one.
    """
    starter = _starter()
    remote = os.environ.get("SPARK_REMOTE")
    if starter.status == "failed" and remote is not None and _unreachable(starter) and server_reachable(remote):
        _starter.clear()  # the Connect server is back: try again
        return _starter()
    dead = None if starter.status != "ready" else starter.wait(0)
    if dead is None or session_alive(dead):
        return starter
    losses = session_losses()
    with losses.lock:
        if _starter() is starter:  # the first to notice; the others find the new starter
            cause = _loss_cause(dead)  # before the session is forgotten: its JVM's exit code goes with it
            try:
                lost = _shared_registry().abandon()
            except Exception:  # noqa: BLE001 - no registry was made on the dead session: nothing to abandon
                lost = []
            forget_session()
            _shared_registry.clear()
            _starter.clear()
            LOG.error("the Spark session died (%s); lost queries: %s", cause, ", ".join(map(str, lost)) or "none")
            losses.record(lost, pd.Timestamp.now(tz="UTC").tz_convert(None), cause)
    return _starter()


def run_page(page: StreamlitPage) -> None:
    """Run the routed ``page``; when it fails because Spark went away while it ran, rerun it: the rerun notices the loss and says what was lost.

    The session is checked when a page starts; a JVM or Connect server that
    dies during the run makes its next Spark call raise instead.
    """
    try:
        page.run()
    except Exception:
        starter = _starter()
        if starter.status != "ready" or session_alive(starter.wait(0)):
            raise
        LOG.warning("Spark went away while a page ran; rerunning it", exc_info=True)
        st.rerun()


LOSS_BANNER_MINUTES = 30


def _loss_cause(dead: object) -> str:
    """Why the session ``dead`` was lost: its Connect server stopped answering, or its JVM exited, saying so when the heap's watch ended it
    (:mod:`~streaming.engine.runtime.heap`)."""
    if "SPARK_REMOTE" in os.environ:
        return "its Spark Connect server stopped answering"
    try:
        code = exit_code(dead)  # type: ignore[arg-type]
    except AttributeError:  # not a classic session
        code = None
    return exit_cause(code)


def _loss_sequel(ready: bool) -> str:
    """What follows a loss, as the session stands now: a page must not say a new session was started while the sidebar says it is starting."""
    if ready:
        return " A new session is ready."
    if "SPARK_REMOTE" in os.environ:
        return " A new session starts as soon as the server answers."
    return " A new session is starting: Start works again once the sidebar says Spark is ready."


def _after_loss(lost: Sequence[LostRun], *, active: Collection[str] = ()) -> str:
    """What to do about the runs ``lost`` with a session: resume the kept ones, start the others again where they were started; a kept one
    ``active`` again was resumed already."""
    resumed = [run.name for run in lost if run.kept and run.name in active]
    kept = [run.name for run in lost if run.kept and run.name not in active]
    joins = [run.name for run in lost if not run.kept and run.source_kind == "live_join"]
    others = [run.name for run in lost if not run.kept and run.source_kind != "live_join"]
    said = []
    if resumed:
        said.append(f"{', '.join(resumed)} {'runs' if len(resumed) == 1 else 'run'} again, resumed from {'its' if len(resumed) == 1 else 'their'} checkpoint.")
    if kept:
        said.append(f"{', '.join(kept)} kept {'its' if len(kept) == 1 else 'their'} checkpoint and result: resume on the Queries page where it stopped.")
    if others:
        said.append(f"Start {', '.join(others)} again from Live query.")
    if joins:
        said.append(f"Start {', '.join(joins)} again from Joins.")
    return " ".join(said)


def loss_text(at: pd.Timestamp, lost: Sequence[LostRun], *, ready: bool, active: Collection[str] = (), cause: str = "its JVM exited") -> str:
    """What a loss banner says: when and why Spark stopped, the queries that were running (a query stopped before is no loss), and what
    to do about each (those ``active`` now on the new session were resumed)."""
    running = [run for run in lost if not run.stopped]
    queries = "; ".join(str(run) for run in running) or "no query was running"
    return (
        f"Spark stopped unexpectedly at {at:%H:%M:%S} UTC ({cause}).{_loss_sequel(ready)} Lost with it: {queries}. "
        + _after_loss(running, active=active)
    )


def loss_banner(losses: SessionLosses, now: pd.Timestamp) -> None:
    """One warning per session lost in the last :data:`LOSS_BANNER_MINUTES` minutes: what happened and which queries were lost."""
    ready, owner = session_starter().status == "ready", None if is_operator() else session_owner()
    shown = losses.since(now - pd.Timedelta(minutes=LOSS_BANNER_MINUTES))
    kept = {run.name for _, lost, _ in shown for run in lost if run.kept} if ready else set()
    active = {name for name in kept if (run := _shared_registry().get(name)) is not None and run.status == "active"}
    for at, lost, cause in shown:
        st.warning(loss_text(at, [run for run in lost if visible(run.owner, owner)], ready=ready, active=active, cause=cause), icon=":material/warning:")


def get_spark() -> SparkSession:
    """The one SparkSession of this server process; waits while it starts (Start buttons wait on :func:`session_status` first)."""
    return session_starter().wait(SESSION_TIMEOUT_SECONDS)


def _stop_all_at_exit(registry: QueryRegistry, log: logging.Logger = LOG) -> None:
    try:
        registry.close()
    except Exception as err:  # noqa: BLE001 - at exit the JVM may already be gone; nothing left to do
        log.warning("stopping queries at exit failed: %s", err)


T = TypeVar("T")


def _setting(read: Callable[[Mapping[str, str]], T], default: T, what: str) -> T:
    """What ``read`` finds in the environment; ``default``, logged as the ``what`` used, when an environment variable is not one it accepts."""
    try:
        return read(os.environ)
    except ConfigError as err:
        LOG.error("%s; using the default %s", err, what)
        return default


@st.cache_resource(show_spinner="Starting Spark...")
def _shared_registry() -> QueryRegistry:
    """The one QueryRegistry of this server process, shared by every session; its queries stop at exit.

    Queries started with ``keep`` keep their checkpoint and result under the data root's :data:`QUERIES_FOLDER`.
    """
    limit = _setting(max_queries, DEFAULT_MAX_QUERIES, f"limit of {DEFAULT_MAX_QUERIES} queries")
    sink_rows = _setting(max_sink_rows, DEFAULT_MAX_SINK_ROWS, f"limit of {DEFAULT_MAX_SINK_ROWS} rows")
    budgets = _setting(Budgets.from_environ, Budgets(), "budgets")
    kept_root = data_root(os.environ) / QUERIES_FOLDER
    sweep_trials(kept_root)  # copies a try left when the server stopped mid-try (a try runs on this registry's Spark, now gone)
    registry = QueryRegistry(get_spark(), max_active=limit, kept_root=kept_root, max_sink_rows=sink_rows, budgets=budgets)
    atexit.register(_stop_all_at_exit, registry)
    return registry


VIEW_KEY = "lab_registry_view"


def get_registry() -> QueryRegistry:
    """The server's registry as this browser session's owner sees it (:meth:`QueryRegistry.for_owner`, :mod:`dashboard.owner`):
    it starts runs as theirs and shows only theirs and the server's own. The same object on every call of a session, until Spark
    is lost and a new registry made."""
    shared, owner, operator = _shared_registry(), session_owner(), is_operator()
    view = st.session_state.get(VIEW_KEY)
    if not isinstance(view, QueryRegistry) or not view.shares(shared) or (view.owner, view.sees_all) != (owner, operator):
        view = st.session_state[VIEW_KEY] = shared.for_owner(owner, sees_all=operator)
    return view


def session_status(starter: SessionStarter) -> StarterStatus:
    """The session's state in the sidebar (starting, ready, failed with the reason), read once: what it shows is what it returns.

    While it is ``"starting"``, the page reruns once it is ready or failed (:func:`wait_for_session`). A page that read the status again
    after showing it could see the start fail in between and wait for nothing: the sidebar would say "starting" for good.
    """
    loss_banner(session_losses(), pd.Timestamp.now(tz="UTC").tz_convert(None))
    status = starter.status
    with st.sidebar:
        if status == "ready" and starter.warming:
            st.caption(f":material/check_circle: Spark is ready (started in {starter.seconds or 0:.0f} s), {starter.phase}")
        elif status == "ready":
            parts = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in starter.phases.items())
            st.caption(f":material/check_circle: Spark is ready (started in {starter.seconds or 0:.0f} s" + (f": {parts})" if parts else ")"))
        elif status == "starting":
            since = "" if starter.started_at is None else f", {time.monotonic() - starter.started_at:.0f} s so far"
            st.caption(f":material/hourglass_top: Spark is starting: {starter.phase}{since}… Start is enabled once it is ready.")
        else:
            st.error(f"Spark could not start: {starter.error}")
            if st.button("Try again", key="session_retry"):
                _starter.clear()
                st.rerun()
            remote = os.environ.get("SPARK_REMOTE")
            if remote is not None and _unreachable(starter):
                st.caption(f"Waiting for the Spark Connect server at {remote}: the page connects again as soon as it answers.")
                wait_for_server(remote)
    if status == "starting":
        wait_for_session(starter)
    return status


def _unreachable(starter: SessionStarter) -> bool:
    """True when the session failed because its Spark Connect server did not accept connections (not a refusal, which waiting would not mend)."""
    return (starter.error or "").startswith("ConnectionError")


@st.fragment(run_every=2.0)
def wait_for_server(url: str) -> None:
    """While the Spark Connect server does not answer, check every 2 s and rerun the page once it does."""
    if server_reachable(url, timeout=0.5):
        st.rerun(scope="app")


def session_ready() -> bool:
    """The session's state in the sidebar; ``True`` once it is ready. While it starts, the page reruns once it is ready (or failed)."""
    return session_status(session_starter()) == "ready"


@st.fragment(run_every=0.5)
def wait_for_session(starter: SessionStarter) -> None:
    """While the session starts, check every half second (a status read) and rerun the page once it is ready (or failed)."""
    if starter.status != "starting":
        st.rerun()


# --- choices and checks: pure -------------------------------------------------------


def metrics_row(metrics: Sequence[Metric]) -> None:
    """A run's status row: one column per number (:meth:`~streaming.app.snapshot.RunSnapshot.numbers`)."""
    for column, metric in zip(st.columns(len(metrics)), metrics, strict=True):
        column.metric(metric.label, metric.value, help=metric.help)


def report_button(snap: RunSnapshot, *, code: bool = True) -> None:
    """Download a run as it stands at this refresh (:meth:`~streaming.app.snapshot.RunSnapshot.report`): one HTML file that opens without a
    server; a SQL run's text and program only with ``code``."""
    name = snap.run.name
    st.download_button(
        "Download report (HTML)", partial(snap.report, code=code), file_name=f"{name}.html", mime="text/html",
        key=f"lab_{'sql_' if snap.sql else ''}report_{name}", on_click="ignore", icon=":material/download:",
        help=f"This refresh's {'query, its program, ' if code else ''}numbers, charts, operators and result table as one HTML file that opens without a server"
        if snap.sql else "This refresh's settings, numbers, charts and result table as one HTML file that opens without a server",
    )


def failure_banner(
    what: str, error: str | None, hint: str | None = None, *, kept: str = "Its result table so far is kept.", details: bool = True,
) -> None:
    """A failure in plain words: what happened (the deepest cause, no bridge preamble, frames or server paths), what was kept, what to do
    (``hint``); with ``details``, Spark's own text behind an expander, server paths cut (not for a read-only link's viewer: it may quote
    the query's SQL)."""
    st.error(f"{what} failed: {failure_words(error or '')}. {kept}".replace("..", "."))
    if hint is not None:
        st.info(hint)
    words = failure_details(error or "") if details else ""
    if words:
        with st.expander("Spark's own words"):
            st.code(words, language=None)


def refuse(errors: InputErrors, what: str) -> None:
    """Show every error of a refused form, naming field and value, and stop the page there."""
    for error in errors.errors:
        st.error(f"Cannot run this {what}: {brief(str(error))}")
    st.stop()


def feed_source(name: str, seconds_per_file: float = 0.0, root: Path = SAMPLE_FEEDS) -> FeedSource:
    """The replay of the sample feed ``name``: only names :func:`feed_names` lists, never a free path."""
    names = feed_names(root)
    if name not in names:
        raise ConfigError("source.path", name, f"is not one of the sample feeds {names}")
    return FeedSource(root / name, seconds_per_file=seconds_per_file)


def percent(share: float) -> str:
    """``0.99`` → ``"99%"``, ``0.995`` → ``"99.5%"``."""
    return f"{round(share * 100, 4):g}%"


def readable_seconds(frame: pd.DataFrame, columns: Sequence[str]) -> pd.DataFrame:
    """``frame`` with each of ``columns`` (seconds) written in the unit that reads best (``4.5 h``, ``12 s``): for tables a person reads."""
    return frame.assign(**{
        name: [human_duration(float(value)) for value in frame[name]] for name in columns if name in frame.columns
    })


# --- widgets several pages use ----------------------------------------------------------


def feed_select(feeds: Sequence[str], key: str) -> str:
    """The sample feed picker (``web_clicks`` first when present)."""
    index = list(feeds).index(DEFAULT_FEED) if DEFAULT_FEED in feeds else 0
    return st.selectbox("Sample feed", feeds, index=index, key=key, **KEPT, help="A folder under sample_feeds/, replayed one CSV file per micro-batch")


def window_widgets(prefix: str, window: str = "1 minute", slide: str | None = None) -> tuple[str, str | None]:
    """Window length and, for sliding windows, the slide: ``(window, slide)`` with ``slide=None`` for tumbling."""
    length = st.text_input("Window length", value=window, key=f"{prefix}_window", **KEPT)
    kinds = ["tumbling", "sliding"]
    sliding = st.radio("Windows", kinds, index=1 if slide else 0, horizontal=True, key=f"{prefix}_window_kind", **KEPT) == "sliding"
    chosen = st.text_input("Slide", value=slide or "30 seconds", key=f"{prefix}_slide", **KEPT) if sliding else None
    return length, chosen


def windows_widgets(prefix: str, window: str = "1 minute", slide: str | None = None, *, sessions: bool = True) -> tuple[str, str | None, str | None]:
    """Fixed windows (:func:`window_widgets`) or, when ``sessions`` offers them and they are chosen, session windows: ``(window, slide, session_gap)``."""
    chosen = sessions and st.checkbox(
        "Session windows", key=f"{prefix}_sessions", **KEPT, help="session_window: a key's session ends after a gap without events (append or complete mode)"
    )
    if chosen:
        return window, None, st.text_input("Session gap", value="30 seconds", key=f"{prefix}_session_gap", **KEPT)
    length, chosen_slide = window_widgets(prefix, window, slide)
    return length, chosen_slide, None


def watermark_widget(prefix: str, delay: str | None = "30 seconds") -> str | None:
    """A watermark checkbox and its delay: the delay, or ``None`` for no watermark."""
    use = st.checkbox("Watermark", value=delay is not None, key=f"{prefix}_use_watermark", **KEPT, help="How late an event may be, behind the latest event time seen")
    return st.text_input("Watermark delay", value=delay or "30 seconds", key=f"{prefix}_watermark", **KEPT) if use else None


def arrival_widget(prefix: str) -> str:
    """The arrival rule a replay of files follows (:mod:`streaming.engine.arrival`), key ``<prefix>_arrival``: what decides whether Spark runs a
    no-data batch between two batches of data, so that every page gives one answer for the same data and query."""
    return str(st.radio(
        "Arrival rule", list(ARRIVAL_RULES), key=f"{prefix}_arrival", horizontal=True, **KEPT,
        help=f"quiet: {rule_words('quiet')}. busy: {rule_words('busy')}. A replay follows it whatever the load (the pace may slow, the answer "
        "does not change); a live stream (generator, rate, socket, a topic as it arrives) follows none. Quiet drops at least as much as busy: "
        "a delay tuned under it holds for both.",
    ))


def asked_twice(pending: str, name: str, key: str, question: str, help_text: str) -> bool:
    """Delete, asked twice: True once "Yes, delete" is pressed for ``name``. The first press notes ``name`` under the session key ``pending``
    and shows ``question`` with "Yes, delete" and "Cancel" (buttons keyed ``{key}_{name}``, ``{key}_sure_{name}``, ``{key}_cancel_{name}``)."""
    if st.session_state.get(pending) != name:
        if st.button("Delete", key=f"{key}_{name}", help=help_text):
            st.session_state[pending] = name
            st.rerun()
        return False
    st.caption(question)
    if st.button("Yes, delete", key=f"{key}_sure_{name}", type="primary"):
        st.session_state.pop(pending, None)
        return True
    if st.button("Cancel", key=f"{key}_cancel_{name}"):
        st.session_state.pop(pending, None)
        st.rerun()
    return False


def go_to(page: str) -> None:
    """Switch to ``page`` (a page script path) with no query parameters of its own.

    An empty mapping, not the default: Streamlit 1.67's ``switch_page`` otherwise clears
    the URL with a call that refuses while this page's inputs are bound to it (:data:`KEPT`).
    """
    st.switch_page(page, query_params={})


def open_panel(label: str, *, key: str) -> ExpanderContainer:
    """A collapsed expander whose ``open`` says whether to draw its content: opening or closing it reruns the page (or its fragment).

    A collapsed expander's content is drawn all the same: on the Live page Chromium spent 0.25 s highlighting the code of a closed Show
    code, and loaded the result table's grid, on each page view. Its ``label`` stays the same from one run to the next, or it closes again.
    """
    return st.expander(label, key=key, on_change="rerun")


def show_code(config: QueryConfig | JoinConfig, key: str) -> None:
    """A "Show code" panel: self-contained PySpark code for ``config`` (a query or a join), to paste into a notebook or ``spark-submit``;
    written when opened (its expander's key is ``key`` + ``_open``)."""
    with open_panel("Show code", key=f"{key}_open") as panel:
        if not panel.open:
            return
        try:
            code = join_code(config) if isinstance(config, JoinConfig) else pyspark_code(config)
        except ConfigError as err:
            st.info(f"No code for this query: {err}")
            return
        st.code(code, language="python")
        name = "streaming_join.py" if isinstance(config, JoinConfig) else "streaming_query.py"
        st.download_button(f"Download {name}", code, file_name=name, mime="text/x-python", key=key)
