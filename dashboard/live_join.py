"""The Joins page's live mode: the generator's impressions and clicks, or two Kafka topics, joined as they come, redrawn every refresh.

One live join per browser session (:data:`RUN`); starting another stops it, and
it stops by itself after :data:`LIMIT_SECONDS`, so a tab closed without Stop
leaves nothing running. It is a run of the shared registry: it counts against
the query limit and is listed, stopped and watched from the Queries page. The
view only reads the run's rows and progress log.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, cast

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from streaming.analysis.join import batch_caption, batch_timeline, waiting_rows
from streaming.charts.join import join_activity_figure, join_watermarks_figure
from streaming.engine.durations import format_duration
from streaming.engine.errors import ConfigError, brief
from streaming.engine.join.join import SIDES, JoinConfig, LiveSide, Side, TopicSide
from streaming.engine.join.live_join import JoinedRows, LiveJoinQuery, start_live_join
from streaming.engine.output.state import join_side_state
from streaming.engine.run.query import Run
from streaming.engine.sources.ads import AdStreams

from .joins import config_view, highlight, policy_widget, topic_keys, topic_side_widgets, type_and_range
from .kafka import kafka_source
from .live_chart import live_chart
from .shared import KEPT, REFRESH_SECONDS, failure_banner, get_registry, get_spark, show_code

__all__ = ["LIMIT_SECONDS", "LiveParts", "live_join_config", "live_join_form", "live_join_view", "live_parts", "live_timeline", "run_live_join_form", "run_state", "running_note", "waiting_now", "watched"]

RUN = "live_join_run"
"""This session's live join: its run's name in the registry."""

LiveJoin = Run[LiveJoinQuery, JoinedRows]
"""A live join's run."""
LIMIT_SECONDS = 600.0
SHOWN_BATCHES = 200
"""The micro-batches the charts draw: the latest ones."""
SHOWN_ROWS = 200
PAIR = AdStreams()
"""The pair's defaults."""
DEFAULTS = {"left_watermark": "10 seconds", "right_watermark": "5 seconds", "lower": "0 seconds", "upper": "20 seconds", "join_type": "left_outer"}
"""The join's defaults: a left outer join whose NULL rows show within the first minute."""


GENERATOR, TOPICS = "The generator's impressions and clicks", "Two Kafka topics"
KINDS = (GENERATOR, TOPICS)


def _pair_widgets() -> dict[str, Any]:
    st.markdown("**The generator's impressions (left) and clicks (right)**, joined on impression_id")
    first, second = st.columns(2)
    return {
        "impressions_per_second": int(first.number_input("Impressions a second", 1, 10_000, PAIR.impressions_per_second, key="live_join_rate", **KEPT)),
        "click_through": float(second.number_input("Clicks per impression", 0.0, 1.0, PAIR.click_through, step=0.05, key="live_join_ctr", **KEPT)),
        "mean_click_delay": first.text_input("Mean click delay", PAIR.mean_click_delay, key="live_join_mean_delay", **KEPT, help="Exponentially distributed"),
        "max_click_delay": second.text_input("Longest click delay", PAIR.max_click_delay, key="live_join_max_delay", **KEPT),
        "max_lag": first.text_input("Out of order by up to", PAIR.max_lag, key="live_join_lag", **KEPT),
        "late_share": float(second.number_input("Share very late", 0.0, 1.0, PAIR.late_share, step=0.01, key="live_join_late_share", **KEPT)),
        "late_delay": first.text_input("Very late by", PAIR.late_delay, key="live_join_late", **KEPT),
    }


def live_join_form() -> dict[str, Any]:
    """The live sides' inputs (the generator's pair, or two topics) and the join's (keys, type, range, a watermark per side, policy)."""
    kind = st.radio("Live sides", KINDS, horizontal=True, key="live_join_kind", **KEPT)
    inputs: dict[str, Any] = {"kind": kind}
    if kind == GENERATOR:
        pair, query = st.columns(2)
        with pair, st.container(border=True):
            inputs["streams"] = _pair_widgets()
        labels = ("Impressions", "Clicks")
    else:
        left, right, query = st.columns(3)
        for column, side in ((left, "left"), (right, "right")):
            with column, st.container(border=True):
                inputs[side] = topic_side_widgets(side, "live_join", replayed=False)
        labels = ("Left", "Right")
    with query, st.container(border=True):
        if kind == TOPICS:
            inputs["on"] = topic_keys({side: inputs[side] for side in SIDES}, "live_join")
        inputs["join_type"], inputs["within"] = type_and_range("live_join", DEFAULTS)
        inputs["watermarks"] = {}
        for column, side, label in zip(st.columns(2), SIDES, labels):
            use = column.checkbox(f"{label} watermark", value=True, key=f"live_join_{side}_use", **KEPT)
            inputs["watermarks"][side] = column.text_input("Delay", DEFAULTS[f"{side}_watermark"], key=f"live_join_{side}_watermark", **KEPT) if use else None
        inputs["policy"] = policy_widget("live_join")
    return inputs


def live_join_config(inputs: dict[str, Any]) -> JoinConfig:
    """The :class:`JoinConfig` of the form; :class:`ConfigError` naming the field.

    The generator's pair: impressions on the left, clicks on the right, joined on ``impression_id``; two topics: on the keys chosen.
    """
    marks = inputs["watermarks"]
    left: Side
    right: Side
    if inputs["kind"] == GENERATOR:
        streams = AdStreams(**inputs["streams"])
        left, right, on = LiveSide(streams, "impressions", marks["left"], side="left"), LiveSide(streams, "clicks", marks["right"], side="right"), ("impression_id",)
    else:
        left, right = (TopicSide(kafka_source(inputs[side]), marks[side], side=side) for side in SIDES)
        on = inputs["on"]
    return JoinConfig(left, right, on=on, within=inputs["within"], join_type=inputs["join_type"], policy=inputs["policy"])


def run_live_join_form(inputs: dict[str, Any], ready: bool) -> tuple[LiveJoin, tuple[str, bool]] | None:
    """Start and Stop; returns this session's live join (running or ended), if any, with the :func:`run_state` its buttons were
    drawn for (read once: :func:`live_join_view` reruns the page when the run leaves it). A refusal or a failure to start shows as
    a message.

    Stop is drawn whatever the form holds, and stops in the background (Spark finishes the batch it interrupts); Start stops the
    session's earlier join first. Either reruns the page, so the buttons show the new state.
    """
    run = watched()
    config: JoinConfig | None = None
    try:
        config = live_join_config(inputs)
    except ConfigError as err:
        st.error(f"Cannot run this join: {brief(str(err))}")
    if config is not None:
        config_view(config, f". It stops by itself after {format_duration(int(LIMIT_SECONDS * 1000))}.")
        show_code(config, "live_join_code_download")
    start, stop = st.columns([1, 1])
    drawn = run_state(run) if run is not None else ("stopped", False)
    if stop.button("Stopping…" if drawn[1] else "Stop", disabled=drawn != ("active", False), key="live_join_stop") and run is not None:
        run.stop_soon()
        st.rerun()
    if start.button("Start live join", type="primary", disabled=not ready or config is None, key="live_join_start") and config is not None:
        registry = get_registry()
        if run is not None:  # this session's earlier join goes, its checkpoint and rows with it (Spark's stop waits for its batch: not the page)
            threading.Thread(target=registry.remove, args=(run.name,), name=f"remove-{run.name}", daemon=True).start()
        try:
            run = start_live_join(registry, config, limit=LIMIT_SECONDS)
        except Exception as err:  # noqa: BLE001 - a refusal or a failure to start shows as a message, never a traceback
            st.error(f"{'Cannot run this join' if isinstance(err, ConfigError) else 'The join failed to start'}: {brief(str(err))}")
            st.session_state.pop(RUN, None)
            return None
        st.session_state[RUN] = run.name
        st.rerun()
    return None if run is None else (run, drawn)


def watched() -> LiveJoin | None:
    """This session's live join, while the registry holds it (a lost Spark session, or Remove on the Queries page, forgets it)."""
    name = st.session_state.get(RUN)
    if not isinstance(name, str):
        return None  # none started in this session: Spark is not asked
    run = get_registry().get(name)
    return cast(LiveJoin, run) if run is not None and isinstance(run.config, LiveJoinQuery) else None


def running_note() -> None:
    """In the replay mode: a live join of this session still running, with its Stop."""
    run = watched()
    if run is None or run.status != "active" or run.stopping:
        return
    note, button = st.columns([4, 1])
    note.info(f"A live join is still running: {run.config.join.describe()}.")
    if button.button("Stop it", key="live_join_stop_other"):
        run.stop_soon()
        st.rerun()


@dataclass(frozen=True)
class LiveParts:
    """What one refresh of the live view draws, read from the run: its timeline, the last batch in words, the figures and the latest rows."""

    timeline: pd.DataFrame
    caption: str
    figures: dict[str, go.Figure]
    rows: pd.DataFrame


def live_timeline(run: LiveJoin) -> pd.DataFrame:
    """Every micro-batch of ``run`` so far (:func:`~streaming.analysis.join.batch_timeline`)."""
    return batch_timeline(run.config.join, run.log.summaries(), run.table.emitted())


def live_parts(run: LiveJoin) -> LiveParts:
    """One refresh's data: every micro-batch so far (:func:`~streaming.analysis.join.batch_timeline`), the figures of the latest
    :data:`SHOWN_BATCHES` and the latest :data:`SHOWN_ROWS` rows, newest first."""
    config = run.config.join
    timeline = live_timeline(run)
    caption = batch_caption(config, timeline, int(timeline["batch_id"].iloc[-1])) if len(timeline) else ""
    shown, left, right = timeline.tail(SHOWN_BATCHES), config.left.label, config.right.label
    figures = {"watermarks": join_watermarks_figure(shown, left, right, config.policy), "activity": join_activity_figure(shown, left, right)}
    rows = run.table.latest().tail(SHOWN_ROWS).iloc[::-1].reset_index(drop=True).rename(columns={"_batch": "batch"})
    return LiveParts(timeline, caption, figures, rows)


def run_state(run: LiveJoin) -> tuple[str, bool]:
    """What the page's buttons show of ``run``: its status, and whether it is stopping."""
    return run.status, run.stopping


def live_join_view(run: LiveJoin, drawn: tuple[str, bool]) -> None:
    """The run's state, its last batch in words, the watermarks and state of the latest batches, and its latest rows: redrawn every
    ``REFRESH_SECONDS`` while it runs, drawn once with the page when it has ended (as the Live page's view, :func:`dashboard.live.live_view`).

    ``drawn``: the :func:`run_state` the page around it was drawn for; once that changes, the whole page reruns (its buttons with it).
    """
    if run.status == "active" or run.stopping:
        _refreshed_view(run, drawn)
    else:
        _view(run, drawn)


@st.fragment(run_every=REFRESH_SECONDS)
def _refreshed_view(run: LiveJoin, drawn: tuple[str, bool]) -> None:
    _view(run, drawn)


def _view(run: LiveJoin, drawn: tuple[str, bool]) -> None:
    if run_state(run) != drawn:
        st.rerun(scope="app")
    config = run.config.join
    parts = live_parts(run)
    timeline = parts.timeline
    if run.stopping:
        st.info("Stopping…")
    elif run.status == "failed":
        failure_banner("The live join", run.error, kept="Its rows so far are kept.")
    elif run.status in ("stopped", "finished"):
        st.info("Stopped at its time limit." if run.stopped_at_limit else "Stopped.")
    if timeline.empty:
        st.caption("Waiting for the first micro-batch…")
        return
    metrics = st.columns(6)
    metrics[0].metric("Micro-batches", f"{len(timeline):,}")
    metrics[1].metric(f"{config.left.label} in", f"{int(timeline['left_rows'].sum()):,}")
    metrics[2].metric(f"{config.right.label} in", f"{int(timeline['right_rows'].sum()):,}")
    metrics[3].metric("Rows emitted", f"{run.table.total:,}", help="Joined rows and, in an outer join, rows without a match")
    metrics[4].metric("Dropped as too late", f"{int(timeline['rows_dropped_by_watermark'].sum()):,}")
    metrics[5].metric("Rows in state", f"{int(timeline['state_rows'].iloc[-1]):,}", help=f"{int(timeline['state_bytes'].iloc[-1]) / 1024:,.0f} KiB")
    st.markdown(parts.caption)
    charts = st.columns(2)
    with charts[0]:
        live_chart(parts.figures["watermarks"], key="live_join_watermarks")
    with charts[1]:
        live_chart(parts.figures["activity"], key="live_join_activity")
    st.markdown(
        "**The latest rows emitted**, newest first"
        + (" — yellow: a left row without a match in its range, blue: a right one, each emitted once the global watermark passed its range's end."
           if config.join_type in ("left_outer", "right_outer", "full_outer") else ".")
    )
    if parts.rows.empty:
        st.caption("None yet: a joined row comes with its click; a row without a match once the global watermark passes the end of its range.")
    else:
        st.dataframe(highlight(config, parts.rows), hide_index=True, key="live_join_rows")


WAITING = "live_join_waiting"


def waiting_now(run: LiveJoin) -> None:
    """The rows in each side's state after the latest micro-batch, read with the State Data Source when asked (a Spark job each time)."""
    config = run.config.join
    with st.expander("The rows waiting in the join's state", expanded=WAITING in st.session_state):
        st.caption(
            "Read from the running query's checkpoint with the State Data Source, after its latest micro-batch. A row waits while the global "
            "watermark is at or before *matchable until*; *matched* looks among the latest rows emitted shown above."
        )
        if st.button("Read the state now", key="live_join_read_state", disabled=run.status != "active"):
            timeline = live_timeline(run)
            if timeline.empty:
                st.caption("No micro-batch has run yet.")
                return
            batch, joined = int(timeline["batch_id"].iloc[-1]), run.table.latest()
            try:
                sides = {
                    side.side: waiting_rows(config, joined, timeline, side.side, join_side_state(get_spark(), run.checkpoint, side.side, batch), batch)
                    for side in config.sides
                }
            except Exception as err:  # noqa: BLE001 - a state that cannot be read (the query stopped meanwhile) shows as a message
                st.error(f"Cannot read the join's state: {brief(str(err))}")
                return
            st.session_state[WAITING] = (run.name, batch, sides)
        read = st.session_state.get(WAITING)
        if read is None or read[0] != run.name:
            return
        _, batch, sides = read
        st.markdown(f"**After micro-batch {batch}**")
        for column, side in zip(st.columns(2), config.sides):
            rows = sides[side.side]
            column.caption(f"{side.label} ({side.side}): {len(rows):,} rows")
            if not rows.empty:
                column.dataframe(rows, hide_index=True, key=f"live_join_waiting_{side.side}")
