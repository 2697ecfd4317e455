"""Figures of a join replay: each side's watermark and the global one per batch, and what each batch emitted and kept in state.

Pure functions of :func:`~streaming.analysis.join.join_timeline`'s frame; no Streamlit and no Spark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..engine.durations import format_duration
from .common import PALETTE, WATERMARK_COLOR, empty_figure

__all__ = ["STATUS_COLORS", "join_activity_figure", "join_comparison_figure", "join_key_figure", "join_tuner_figure", "join_watermarks_figure"]

STATUS_COLORS = {
    "joined": PALETTE[2], "emitted with NULLs": PALETTE[1], "never matched": "#7f7f7f", "waiting at the end": PALETTE[4],
    "dropped as too late": WATERMARK_COLOR, "dropped as malformed": "#000000", "kept to match": PALETTE[0],
}
"""The colour of each status :func:`~streaming.analysis.join.key_story` gives a row."""
UNMATCHED_COLORS = {"left": "#e0a800", "right": "#17a2b8"}
"""A side's rows emitted without a match: the yellow and the blue the tables highlight them in."""


def _marker(figure: go.Figure, batch_id: int | None) -> go.Figure:
    if batch_id is not None:
        figure.add_vline(x=batch_id, line_dash="dot", line_color="#555", annotation_text=f"batch {batch_id}", annotation_position="top left")
    return figure


def join_watermarks_figure(timeline: pd.DataFrame, left: str, right: str, policy: str, batch_id: int | None = None) -> go.Figure:
    """Per batch, the watermark each side and the query ran with: ``policy`` (``min``/``max``) picks the global one from the sides'."""
    title = "Watermarks: each side's and the global one"
    if timeline.empty or timeline[["left_watermark", "right_watermark", "watermark"]].isna().all().all():
        return empty_figure(title, "No watermark yet")
    figure = go.Figure()
    for column, name, color, dash in (
        ("left_watermark", f"{left} (left)", PALETTE[0], "dash"),
        ("right_watermark", f"{right} (right)", PALETTE[2], "dash"),
        ("watermark", f"global ({policy} of the two)", WATERMARK_COLOR, "solid"),
    ):
        drawn = timeline[timeline[column].notna()]  # no point before a side has a watermark
        figure.add_trace(
            go.Scatter(
                x=drawn["batch_id"].tolist(), y=[stamp.isoformat() for stamp in drawn[column]], name=name, mode="lines+markers",
                line={"color": color, "dash": dash, "shape": "hv", "width": 3 if dash == "solid" else 2},
            )
        )
    figure.update_layout(
        title=title, xaxis_title="micro-batch", yaxis={"title": "event time", "type": "date"}, height=460,  # beside the activity figure, as tall
        legend={"orientation": "h", "y": -0.22, "font": {"size": 11}}, margin={"b": 150},
    )
    return _marker(figure, batch_id)


def join_activity_figure(
    timeline: pd.DataFrame, left: str, right: str, batch_id: int | None = None, side_state: Sequence[tuple[int, int]] | None = None,
) -> go.Figure:
    """Per batch, the rows emitted (joined, and each side's without a match), the rows dropped as too late, and the rows in the join's state
    (with ``side_state``, each side's, one ``(left, right)`` pair per batch)."""
    title = "What each batch emitted, dropped and kept"
    if timeline.empty:
        return empty_figure(title)
    matched = timeline["rows_emitted"] - timeline["left_unmatched"] - timeline["right_unmatched"]
    figure = go.Figure()
    for values, name, color in (
        (matched, "joined rows", PALETTE[0]),
        (timeline["left_unmatched"], f"{left} rows with NULLs for {right}", UNMATCHED_COLORS["left"]),
        (timeline["right_unmatched"], f"{right} rows with NULLs for {left}", UNMATCHED_COLORS["right"]),
        (timeline["rows_dropped_by_watermark"], "dropped as too late", WATERMARK_COLOR),
    ):
        figure.add_trace(go.Bar(x=timeline["batch_id"], y=values, name=name, marker_color=color))
    figure.add_trace(
        go.Scatter(x=timeline["batch_id"], y=timeline["state_rows"], name="rows in state", mode="lines", line={"color": "#555"}, yaxis="y2")
    )
    if side_state is not None and len(side_state) == len(timeline):
        for index, (name, color) in enumerate(((left, PALETTE[0]), (right, PALETTE[2]))):
            figure.add_trace(
                go.Scatter(
                    x=timeline["batch_id"], y=[rows[index] for rows in side_state], name=f"{name} rows in state", mode="lines",
                    line={"color": color, "dash": "dot"}, yaxis="y2",
                )
            )
    figure.update_layout(  # tall enough for the plot to keep its room above a legend of up to eight entries in half a page
        title=title, barmode="stack", xaxis_title="micro-batch", yaxis_title="rows", height=460,
        legend={"orientation": "h", "y": -0.22, "font": {"size": 11}}, margin={"b": 150},
        yaxis2={"title": "rows in state", "overlaying": "y", "side": "right", "rangemode": "tozero", "tickformat": ",d"},
    )
    return _marker(figure, batch_id)


def join_key_figure(story: pd.DataFrame, left: str, right: str, key: str) -> go.Figure:
    """A key's rows of both sides on one event-time axis, coloured by what became of them, each with the range of the other side's times it could match.

    ``story`` is :func:`~streaming.analysis.join.key_story`'s frame. A row's range is drawn on the other side's lane: a row
    there inside the range, arriving before the watermark passed its end, is its match.
    """
    title = f"Key {key}: both sides on one time axis"
    if story.empty:
        return empty_figure(title, "No row has this key")
    lanes = {"left": f"{left} (left)", "right": f"{right} (right)"}
    figure = go.Figure()
    for index, row in story.reset_index(drop=True).iterrows():
        if pd.isna(row["range_start"]):
            continue
        other = lanes["right" if row["side"] == "left" else "left"]
        figure.add_trace(
            go.Scatter(
                x=[row["range_start"], row["range_end"]], y=[other, other], mode="lines", showlegend=index == 0, name="range it can match",
                line={"color": STATUS_COLORS.get(row["status"], "#555"), "width": 8}, opacity=0.25, hoverinfo="skip", legendgroup="range",
            )
        )
    for status, rows in story.groupby("status", sort=False):
        figure.add_trace(
            go.Scatter(
                x=rows["event_time"], y=[lanes[side] for side in rows["side"]], mode="markers", name=str(status),
                marker={"color": STATUS_COLORS.get(str(status), "#555"), "size": 13, "line": {"width": 1, "color": "#fff"}},
                customdata=list(zip(rows["batch"], rows["why"])), hovertemplate="%{x}<br>batch %{customdata[0]}<br>%{customdata[1]}<extra></extra>",
            )
        )
    figure.update_layout(
        title=title, xaxis_title="event time", height=300, legend={"orientation": "h", "y": -0.35},
        yaxis={"categoryorder": "array", "categoryarray": [lanes["right"], lanes["left"]]},
    )
    return figure


def _delay_label(ms: int) -> str:
    return format_duration(int(ms))


def join_tuner_figure(sweep: pd.DataFrame, left: str, right: str, target: float, chosen: tuple[int, int] | None = None) -> go.Figure:
    """Completeness of the joined pairs over each pair of delays (:func:`~streaming.analysis.join_model.model_sweep`), the peak state in each cell,
    and the pair recommended (``chosen``, ms) for ``target``."""
    title = "Completeness of the joined pairs by watermark delay"
    if sweep.empty:
        return empty_figure(title, "No delays swept")
    grid = sweep.pivot(index="right_delay_ms", columns="left_delay_ms", values="completeness").sort_index().sort_index(axis=1)
    state = sweep.pivot(index="right_delay_ms", columns="left_delay_ms", values="peak_state_rows").reindex_like(grid)
    x = [_delay_label(ms) for ms in grid.columns]
    y = [_delay_label(ms) for ms in grid.index]
    figure = go.Figure(
        go.Heatmap(
            z=grid.to_numpy() * 100, x=x, y=y, colorscale="Blues", zmin=min(float(np.nanmin(grid.to_numpy())) * 100, 99.0), zmax=100,
            colorbar={"title": "% found"},
            text=[[f"{value * 100:.1f}%<br>state {int(rows):,}" for value, rows in zip(z_row, s_row)] for z_row, s_row in zip(grid.to_numpy(), state.to_numpy())],
            texttemplate="%{text}", hovertemplate=f"{left} delay %{{x}}<br>{right} delay %{{y}}<br>%{{text}}<extra></extra>",
        )
    )
    if chosen is not None:
        figure.add_trace(
            go.Scatter(
                x=[_delay_label(chosen[0])], y=[_delay_label(chosen[1])], mode="markers", name=f"recommended for {target * 100:g}%",
                marker={"symbol": "square-open", "size": 44, "color": WATERMARK_COLOR, "line": {"width": 3}},
            )
        )
    figure.update_layout(
        title=title, xaxis_title=f"{left} (left) watermark delay", yaxis_title=f"{right} (right) watermark delay", height=420,
        xaxis={"type": "category"}, yaxis={"type": "category"}, legend={"orientation": "h", "y": -0.25},
    )
    return figure


def join_comparison_figure(timelines: Mapping[str, pd.DataFrame]) -> go.Figure:
    """Joins side by side, one colour per label of ``timelines`` (:func:`~streaming.analysis.join.join_timeline` frames), on one
    micro-batch axis: the global watermark each batch ran with, the rows emitted so far (dotted: of which rows with NULLs) and the
    rows in the join's state."""
    title = "The joins side by side"
    if not timelines or all(timeline.empty for timeline in timelines.values()):
        return empty_figure(title)
    figure = make_subplots(
        rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.07,
        subplot_titles=("Global watermark the batch ran with", "Rows emitted so far (dotted: rows with NULLs)", "Rows in the join's state"),
    )
    for index, (label, timeline) in enumerate(timelines.items()):
        color = PALETTE[index % len(PALETTE)]
        batches = timeline["batch_id"].tolist()
        marked = timeline[timeline["watermark"].notna()]
        traces = (
            (1, go.Scatter(x=marked["batch_id"].tolist(), y=[at.isoformat() for at in marked["watermark"]], line={"shape": "hv"}), True),
            (2, go.Scatter(x=batches, y=timeline["rows_emitted"].cumsum().tolist()), False),
            (2, go.Scatter(x=batches, y=(timeline["left_unmatched"] + timeline["right_unmatched"]).cumsum().tolist(), line={"dash": "dot"}), False),
            (3, go.Scatter(x=batches, y=timeline["state_rows"].tolist()), False),
        )
        for row, trace, shown in traces:
            trace.update(name=label, legendgroup=label, showlegend=shown, mode="lines", line={"color": color})
            figure.add_trace(trace, row=row, col=1)
    figure.update_yaxes(type="date", row=1, col=1)
    figure.update_yaxes(rangemode="tozero", row=2, col=1)
    figure.update_yaxes(rangemode="tozero", row=3, col=1)
    figure.update_xaxes(title_text="micro-batch", row=3, col=1)
    figure.update_layout(title=title, height=640, legend={"orientation": "h", "y": -0.12})
    return figure
