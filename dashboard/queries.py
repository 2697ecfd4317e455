"""Parts of the Queries page: every run of the shared registry, and the session's other active queries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd
import streamlit as st

from streaming.engine.config import describe
from streaming.engine.query import Run
from streaming.engine.registry import QueryRegistry

from .live import PENDING_KEY
from .shared import LIVE_PAGE, REFRESH_SECONDS

__all__ = ["queries_view", "render_others", "render_run_card", "runs_frame", "source_summary"]

RUN_COLUMNS = ["name", "status", "batches", "last_progress", "source", "window", "watermark", "output_mode", "trigger", "error"]


def source_summary(description: Mapping[str, object]) -> str:
    """One line for the ``source.*`` entries of :func:`~streaming.engine.config.describe`, e.g. ``feed: path=web_clicks, seconds_per_file=2.0``."""
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
    return pd.DataFrame(rows, columns=RUN_COLUMNS)


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
