"""Parts of the Queries page: every run of the shared registry, and the session's other active queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from streaming.engine.errors import ConfigError, brief
from streaming.engine.join.live_join import LiveJoinQuery
from streaming.engine.output.sinks import MAX_SINK_ROWS_VARIABLE
from streaming.engine.run.query import Run
from streaming.engine.run.registry import MAX_QUERIES_VARIABLE, QueryRegistry

from .change import change_panel, changing
from .joins import LIVE_MODE
from .live import PENDING_KEY, begin_run
from .live_join import RUN as LIVE_JOIN_RUN
from .shared import JOINS_PAGE, LIVE_PAGE, REFRESH_SECONDS, asked_twice, failure_banner, get_registry, go_to, session_starter

__all__ = ["queries_view", "render_kept", "render_others", "render_run_card", "runs_frame", "source_summary"]


DELETE_KEY = "lab_delete_pending"
"""The kept query whose Delete was pressed once: the page asks again before deleting it."""
DELETED_KEY = "lab_deleted"
"""What the last Delete removed, said once on the next run of the page."""
RUN_COLUMNS = ["name", "status", "batches", "last_progress", "source", "window", "watermark", "output_mode", "trigger", "error"]


def source_summary(description: Mapping[str, object]) -> str:
    """One line for the ``source.*`` entries of :func:`~streaming.engine.query.config.describe`, e.g. ``feed: path=web_clicks, seconds_per_file=2.0``."""
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
        description = run.config.describe()
        rows.append(
            {
                "name": run.name,
                "status": "stopping…" if run.stopping else "active, all data read" if run.status == "active" and run.drained else run.status,
                "batches": len(run.log),
                "last_progress": _last_progress(run),
                "source": source_summary(description),
                "window": description["window"],
                "watermark": description["watermark"],
                "output_mode": description["output_mode"],
                "trigger": description["trigger"],
                "error": brief(run.error) if run.error else "",
            }
        )
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


def _problem(registry: QueryRegistry, run: Run) -> str | None:
    """Why a stopped kept run cannot be resumed, or would only fail again (:meth:`~streaming.engine.run.registry.QueryRegistry.resume_problem`), or ``None``."""
    if not run.kept or run.status == "active":
        return None
    return registry.resume_problem(run.name)


def _run_actions(registry: QueryRegistry, run: Run, live_page: str, pending_key: str = PENDING_KEY, problem: str | None = None) -> None:
    if st.button("Watch", key=f"lab_watch_{run.name}"):
        if isinstance(run.config, LiveJoinQuery):  # a live join is drawn by the Joins page's live mode
            st.session_state[LIVE_JOIN_RUN] = run.name
            st.switch_page(JOINS_PAGE, query_params={"join_mode": LIVE_MODE})
        st.session_state[pending_key] = run.name
        go_to(live_page)
    if run.status == "active":
        if st.button("Stop", key=f"lab_stop_run_{run.name}", disabled=run.stopping, help="Stop it; a kept query can be resumed"):
            run.stop_soon()
            st.rerun()
    elif run.kept:
        _kept_actions(registry, run.name, live_page, pending_key, problem)
    elif st.button("Remove", key=f"lab_remove_run_{run.name}", help="Forget this run"):
        registry.remove(run.name)
        st.rerun()


def _kept_actions(registry: QueryRegistry, name: str, live_page: str, pending_key: str = PENDING_KEY, problem: str | None = None) -> None:
    """Resume (from the checkpoint, then watch it) and Delete (checkpoint, result and progress) for a stopped kept query; Delete only when it has a ``problem``."""
    if changing(name):
        st.caption("A change is being tried or applied: Resume and Delete wait for it.")
        return
    if problem is not None:
        pass  # nothing to resume from: Delete only
    elif not registry.can_keep:
        st.caption("Resume needs a classic session: on Spark Connect the memory sink cannot resume from a checkpoint.")
    elif st.button("Resume", key=f"lab_resume_{name}", help="Go on from its checkpoint, with its result so far"):
        if begin_run(lambda: registry.resume(name), f"Resuming {name}") is None:
            return
        st.session_state[pending_key] = name
        go_to(live_page)
    _delete_button(registry, name)


def _delete_button(registry: QueryRegistry, name: str) -> None:
    """Delete, asked twice; the page then says what went."""
    if asked_twice(DELETE_KEY, name, "lab_delete", f"Delete {name} for good?", "Delete its checkpoint, result and progress: it cannot be resumed after"):
        freed = registry.delete(name)
        st.session_state[DELETED_KEY] = f"Deleted {name}: its checkpoint, result and progress ({_size(freed)} freed on disk)."
        st.rerun()


def _size(size: int) -> str:
    for unit, span in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= span:
            return f"{size / span:.1f} {unit}"
    return f"{size} bytes"


def render_kept(registry: QueryRegistry, live_page: str = LIVE_PAGE) -> None:
    """The kept queries on disk that this server has not run yet (stopped before a restart, or by a lost Spark session): Resume or Delete."""
    running = {run.name for run in registry.runs()}
    stored = [query for query in registry.kept() if query.folder.name not in running]
    strays = [name for name in registry.strays() if name not in running]
    if not stored and not strays:
        st.caption("None: every kept query is listed above.")
        return
    for name in strays:
        with st.container(border=True):
            text, actions = st.columns([5, 1])
            text.markdown(f"**{name}**: broken, a folder without its query.json (deleted by hand?); it holds the name {name} until it is deleted.")
            with actions:
                _delete_button(registry, name)
    for query in stored:
        name = query.folder.name
        problem = query.problem
        with st.container(border=True):
            text, actions = st.columns([5, 1])
            if problem is not None:
                text.markdown(f"**{name}**: broken, {problem}.")
                with actions:
                    _delete_button(registry, name)
                continue
            with text:
                summary = query.summary()
                st.markdown(f"**{name}**: stopped, {summary['batches']} batches, {summary['result_rows']} result rows, last change {summary['last_change']}")
                try:
                    config = query.config()
                    description = config.describe()
                    st.caption(" | ".join([source_summary(description), *(f"{key}: {value}" for key, value in description.items() if not key.startswith("source."))]))
                    if registry.can_keep:
                        change_panel(registry, name)
                except ConfigError as err:
                    st.warning(f"Its configuration no longer holds: {err}")
            with actions:
                _kept_actions(registry, name, live_page)


def render_run_card(registry: QueryRegistry, run: Run, live_page: str = LIVE_PAGE) -> None:
    """One run of the registry: name, status, configuration, error if it failed, Watch/Stop/Remove buttons."""
    with st.container(border=True):
        text, actions = st.columns([5, 1])
        with text:
            st.markdown(f"**{run.name}**: {run.status}, {len(run.log)} batches" + (", kept on disk" if run.kept else ""))
            description = run.config.describe()
            settings = [f"{key}: {value}" for key, value in description.items() if not key.startswith("source.")]
            st.caption(" | ".join([source_summary(description), *settings]))
            if run.status == "failed":
                failure_banner(run.name, run.error, run.config.source.explain_failure(run.error or ""))
            problem = _problem(registry, run)
            if problem is not None:
                st.warning(f"Cannot be resumed: {problem}. Delete it to free its name.")
            if run.kept and run.status != "active" and registry.can_keep:
                change_panel(registry, run.name)
        with actions:
            _run_actions(registry, run, live_page, problem=problem)


def render_others(registry: QueryRegistry) -> None:
    """Active queries on the session not started through the registry, each with a Stop button."""
    if not registry.sees_everyone:
        st.caption("Shown to the server's operator only (see the README: A server a team shares).")
        return
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
    if session_starter().status != "ready" or not get_registry().shares(registry):
        st.rerun(scope="app")  # Spark died: the page shows what was lost and the new session
    deleted = st.session_state.pop(DELETED_KEY, None)
    if deleted is not None:
        st.success(deleted)
    limit = "no limit" if registry.max_active is None else f"at most {registry.max_active} at once ({MAX_QUERIES_VARIABLE})"
    st.caption(f"Budgets of this server: queries, {limit}; {registry.budgets.words()}; a micro-batch may hand the page {registry.max_sink_rows:,} rows "
               f"({MAX_SINK_ROWS_VARIABLE}).")
    runs = registry.runs()
    if runs:
        st.dataframe(runs_frame(runs), hide_index=True)
        for run in runs:
            render_run_card(registry, run)
    elif registry.kept():
        st.info("No query runs on this server now, nor has one run since it started: resume a kept query below to watch it, or start one on the "
                "Live query page.")
    else:
        st.info("No query started from this dashboard yet: start one on the Live query page.")
    st.subheader("Stopped queries kept on disk")
    st.caption("Each query keeps its checkpoint and result under the data root: resume it where it stopped, also after a server restart.")
    render_kept(registry)
    st.subheader("Other active queries on this Spark session")
    st.caption("Started on the same session but not through this dashboard (a notebook, a test, another registry).")
    render_others(registry)
