"""The Joins page's live mode: the generator's impressions and clicks joined as they come, redrawn every refresh.

One live join per browser session (:data:`RUN`); starting another stops it, and
it stops by itself after :data:`LIMIT_SECONDS`, so a tab closed without Stop
leaves nothing running. The view only reads the run's rows and progress log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from streaming.analysis.join import batch_caption, batch_timeline
from streaming.charts.join import join_activity_figure, join_watermarks_figure
from streaming.engine.durations import format_duration
from streaming.engine.errors import ConfigError, brief
from streaming.engine.join import JOIN_TYPES, POLICIES, JoinConfig, LiveSide
from streaming.engine.live_join import LiveJoin, start_live_join
from streaming.engine.sources.ads import AdStreams

from .joins import highlight
from .shared import KEPT, REFRESH_SECONDS, get_registry

__all__ = ["LIMIT_SECONDS", "LiveParts", "live_join_config", "live_join_form", "live_join_view", "live_parts", "run_live_join_form"]

RUN = "live_join_run"
LIMIT_SECONDS = 600.0
SHOWN_BATCHES = 200
"""The micro-batches the charts draw: the latest ones."""
SHOWN_ROWS = 200
PAIR = AdStreams()
"""The pair's defaults."""
DEFAULTS = {"left_watermark": "10 seconds", "right_watermark": "5 seconds", "lower": "0 seconds", "upper": "20 seconds", "join_type": "left_outer"}
"""The join's defaults: a left outer join whose NULL rows show within the first minute."""


def live_join_form() -> dict[str, Any]:
    """The live pair's inputs (rates, clicks, lateness) and the join's (type, range, a watermark per side, policy)."""
    pair, query = st.columns(2)
    with pair, st.container(border=True):
        st.markdown("**The generator's impressions (left) and clicks (right)**")
        first, second = st.columns(2)
        rate = first.number_input("Impressions a second", 1, 10_000, PAIR.impressions_per_second, key="live_join_rate", **KEPT)
        share = second.number_input("Clicks per impression", 0.0, 1.0, PAIR.click_through, step=0.05, key="live_join_ctr", **KEPT)
        mean = first.text_input("Mean click delay", PAIR.mean_click_delay, key="live_join_mean_delay", **KEPT, help="Exponentially distributed")
        cap = second.text_input("Longest click delay", PAIR.max_click_delay, key="live_join_max_delay", **KEPT)
        lag = first.text_input("Out of order by up to", PAIR.max_lag, key="live_join_lag", **KEPT)
        late_share = second.number_input("Share very late", 0.0, 1.0, PAIR.late_share, step=0.01, key="live_join_late_share", **KEPT)
        late = first.text_input("Very late by", PAIR.late_delay, key="live_join_late", **KEPT)
    with query, st.container(border=True):
        join_type = st.selectbox("Join type", JOIN_TYPES, index=JOIN_TYPES.index(DEFAULTS["join_type"]), key="live_join_type", **KEPT)
        lower_column, upper_column = st.columns(2)
        lower = lower_column.text_input("Click from", DEFAULTS["lower"], key="live_join_lower", **KEPT, help="click_time ≥ impression_time + this (signed)")
        upper = upper_column.text_input("Click to", DEFAULTS["upper"], key="live_join_upper", **KEPT, help="click_time ≤ impression_time + this (signed)")
        watermarks = {}
        for column, side in zip(st.columns(2), ("left", "right")):
            use = column.checkbox(f"{'Impressions' if side == 'left' else 'Clicks'} watermark", value=True, key=f"live_join_{side}_use", **KEPT)
            watermarks[side] = column.text_input("Delay", DEFAULTS[f"{side}_watermark"], key=f"live_join_{side}_watermark", **KEPT) if use else None
        policy = st.radio("Global watermark", POLICIES, horizontal=True, key="live_join_policy", **KEPT)
    return {
        "streams": {
            "impressions_per_second": int(rate), "click_through": float(share), "mean_click_delay": mean, "max_click_delay": cap, "max_lag": lag,
            "late_share": float(late_share), "late_delay": late,
        },
        "join_type": join_type, "within": (lower, upper), "watermarks": watermarks, "policy": policy,
    }


def live_join_config(inputs: dict[str, Any]) -> JoinConfig:
    """The :class:`JoinConfig` of the form: impressions on the left, clicks on the right, joined on ``impression_id``; :class:`ConfigError` naming the field."""
    streams = AdStreams(**inputs["streams"])
    left = LiveSide(streams, "impressions", inputs["watermarks"]["left"], side="left")
    right = LiveSide(streams, "clicks", inputs["watermarks"]["right"], side="right")
    return JoinConfig(left, right, on=("impression_id",), within=inputs["within"], join_type=inputs["join_type"], policy=inputs["policy"])


def run_live_join_form(inputs: dict[str, Any], ready: bool) -> LiveJoin | None:
    """Start and Stop; returns this session's live join (running or ended), if any. A refusal or a failure to start shows as a message."""
    run: LiveJoin | None = st.session_state.get(RUN)
    try:
        config = live_join_config(inputs)
    except ConfigError as err:
        st.error(f"Cannot run this join: {brief(str(err))}")
        return run
    st.caption(f"{config.describe()}. It stops by itself after {format_duration(int(LIMIT_SECONDS * 1000))}.")
    for warning in config.warnings():
        st.warning(warning)
    start, stop = st.columns([1, 1])
    active = run is not None and run.status == "active"
    if stop.button("Stop", disabled=not active, key="live_join_stop") and run is not None:
        with st.spinner("Stopping…"):
            run.stop()
    if start.button("Start live join", type="primary", disabled=not ready, key="live_join_start"):
        if run is not None:
            run.stop()
        registry = get_registry()
        try:
            run = start_live_join(registry.spark, config, registry.listener, limit=LIMIT_SECONDS)
        except Exception as err:  # noqa: BLE001 - a refusal or a failure to start shows as a message, never a traceback
            st.error(f"{'Cannot run this join' if isinstance(err, ConfigError) else 'The join failed to start'}: {brief(str(err))}")
            st.session_state.pop(RUN, None)
            return None
        st.session_state[RUN] = run
    return run


@dataclass(frozen=True)
class LiveParts:
    """What one refresh of the live view draws, read from the run: its timeline, the last batch in words, the figures and the latest rows."""

    timeline: pd.DataFrame
    caption: str
    figures: dict[str, go.Figure]
    rows: pd.DataFrame


def live_parts(run: LiveJoin) -> LiveParts:
    """One refresh's data: every micro-batch so far (:func:`~streaming.analysis.join.batch_timeline`), the figures of the latest
    :data:`SHOWN_BATCHES` and the latest :data:`SHOWN_ROWS` rows, newest first."""
    config = run.config
    timeline = batch_timeline(config, run.log.summaries(), run.rows.emitted())
    caption = batch_caption(config, timeline, int(timeline["batch_id"].iloc[-1])) if len(timeline) else ""
    shown, left, right = timeline.tail(SHOWN_BATCHES), config.left.label, config.right.label
    figures = {"watermarks": join_watermarks_figure(shown, left, right, config.policy), "activity": join_activity_figure(shown, left, right)}
    rows = run.rows.latest().tail(SHOWN_ROWS).iloc[::-1].reset_index(drop=True).rename(columns={"_batch": "batch"})
    return LiveParts(timeline, caption, figures, rows)


@st.fragment(run_every=REFRESH_SECONDS)
def live_join_view(run: LiveJoin) -> None:
    """The run's state, its last batch in words, the watermarks and state of the latest batches, and its latest rows."""
    config = run.config
    parts = live_parts(run)
    timeline = parts.timeline
    if run.status == "failed":
        st.error(f"The live join failed: {brief(run.error or '')}")
    elif run.status == "stopped":
        st.info("Stopped at its time limit." if run.stopped_at_limit else "Stopped.")
    if timeline.empty:
        st.caption("Waiting for the first micro-batch…")
        return
    metrics = st.columns(6)
    metrics[0].metric("Micro-batches", f"{len(timeline):,}")
    metrics[1].metric("Impressions in", f"{int(timeline['left_rows'].sum()):,}")
    metrics[2].metric("Clicks in", f"{int(timeline['right_rows'].sum()):,}")
    metrics[3].metric("Rows emitted", f"{run.rows.total:,}", help="Joined rows and, in an outer join, rows without a match")
    metrics[4].metric("Dropped as too late", f"{int(timeline['rows_dropped_by_watermark'].sum()):,}")
    metrics[5].metric("Rows in state", f"{int(timeline['state_rows'].iloc[-1]):,}", help=f"{int(timeline['state_bytes'].iloc[-1]) / 1024:,.0f} KiB")
    st.markdown(parts.caption)
    charts = st.columns(2)
    charts[0].plotly_chart(parts.figures["watermarks"], key="live_join_watermarks")
    charts[1].plotly_chart(parts.figures["activity"], key="live_join_activity")
    st.markdown(
        "**The latest rows emitted**, newest first"
        + (" — yellow: an impression without a click in its range, emitted once the global watermark passed the range's end." if config.join_type in ("left_outer", "full_outer") else ".")
    )
    if parts.rows.empty:
        st.caption("None yet: a joined row comes with its click; a row without a match once the global watermark passes the end of its range.")
    else:
        st.dataframe(highlight(config, parts.rows), hide_index=True, key="live_join_rows")
