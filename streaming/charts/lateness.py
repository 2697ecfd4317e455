"""Plotly figures of late data: pure functions of :mod:`streaming.analysis.lateness` frames, no Streamlit.

* :func:`arrival_figure` -- event time against arrival, one point per event
  coloured by whether the watermarked count kept it, with the engine's maximum
  event time and the watermark per batch as step lines: the picture of the
  watermark section of Spark's programming guide.
* :func:`lateness_figure` -- how far behind the stream events arrived, with
  p50/p95/p99 and the delay that would have kept 99 % of events.

An empty input gives a valid figure that says so.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analysis.lateness import STATUSES, lateness_summary, sample_events
from ..engine.durations import human_duration
from .common import empty_figure, time_unit

__all__ = ["STATUS_COLOURS", "arrival_figure", "lateness_figure"]

STATUS_COLOURS = {"counted": "#2a9d8f", "partly counted": "#e9c46a", "not counted": "#e63946"}
_CLOCK_COLOUR = "#264653"
_WATERMARK_COLOUR = "#e76f51"


def _spread(batch_ids: pd.Series, width: float = 0.7) -> np.ndarray:
    """Deterministic horizontal spread of the points of one batch over ``width`` around its id."""
    position = batch_ids.groupby(batch_ids).cumcount().to_numpy(dtype="float64")
    size = batch_ids.map(batch_ids.value_counts()).to_numpy(dtype="float64")
    offset = np.where(size > 1, (position + 0.5) / np.maximum(size, 1) - 0.5, 0.0)
    return batch_ids.to_numpy(dtype="float64") + offset * width


def _seconds(delta: pd.Timedelta) -> float:
    return float(delta / pd.Timedelta(seconds=1))


def arrival_figure(
    classified: pd.DataFrame,
    batches: pd.DataFrame,
    *,
    x: Literal["batch", "time"] = "batch",
    max_points: int = 2000,
    title: str = "Event time against arrival",
) -> go.Figure:
    """Event time (y) of each event against the batch that brought it (x), coloured by status.

    ``classified`` from :func:`streaming.analysis.lateness.classify`, ``batches`` from
    :func:`streaming.analysis.lateness.file_batches`. ``x="batch"`` places events at
    their batch id, spread a little so a batch's points do not overlap;
    ``x="time"`` at the batch's processing time. At most ``max_points`` events
    are drawn (:func:`streaming.analysis.lateness.sample_events`: every event not fully
    counted is kept). The engine's maximum event time seen and the watermark
    applied to each batch are step lines: points below the watermark arrived
    too late for some or all of their windows.
    """
    if classified.empty:
        return empty_figure(title, "No events processed yet")
    if x not in ("batch", "time"):
        raise ValueError(f"x: {x!r} is not 'batch' or 'time'")
    shown = sample_events(classified, max_points)
    figure = go.Figure()
    if x == "batch":
        shown = shown.assign(_x=_spread(shown["batch_id"]))
        line_x = batches["batch_id"]
        x_title = "arrival batch"
    else:
        times = batches.set_index("batch_id")["timestamp"]
        shown = shown.assign(_x=shown["batch_id"].map(times))
        line_x = batches["timestamp"]
        x_title = "arrival (processing time, UTC)"
    for status in STATUSES:
        points = shown[shown["status"] == status]
        if points.empty:
            continue
        figure.add_trace(
            go.Scattergl(
                x=points["_x"],
                y=points["event_time"],
                mode="markers",
                name=f"{status} ({int((classified['status'] == status).sum())})",
                marker={"color": STATUS_COLOURS[status], "size": 6 if status == STATUSES[0] else 8, "opacity": 0.75},
                customdata=np.column_stack(
                    [
                        points["key"].astype(str),
                        points["batch_id"],
                        points["lateness"].dt.total_seconds(),
                        points["windows_counted"],
                        points["windows"],
                    ]
                ),
                hovertemplate=(
                    "%{customdata[0]} at %{y|%Y-%m-%d %H:%M:%S}<br>batch %{customdata[1]}, "
                    "%{customdata[2]} s behind the stream<br>in %{customdata[3]} of %{customdata[4]} windows<extra></extra>"
                ),
            )
        )
    figure.add_trace(
        go.Scatter(
            x=line_x,
            y=batches["max_event_time_seen"],
            mode="lines",
            line={"shape": "hv", "color": _CLOCK_COLOUR, "dash": "dash"},
            name="max event time seen",
        )
    )
    figure.add_trace(
        go.Scatter(
            x=line_x,
            y=batches["watermark"],
            mode="lines",
            line={"shape": "hv", "color": _WATERMARK_COLOUR, "width": 2},
            name="watermark applied",
            connectgaps=False,
        )
    )
    subtitle = "" if len(shown) == len(classified) else f" (showing {len(shown)} of {len(classified)} events)"
    figure.update_layout(
        title=title + subtitle,
        xaxis_title=x_title,
        yaxis_title="event time (UTC)",
        legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0},
    )
    return figure


def lateness_figure(
    late: pd.DataFrame | pd.Series,
    *,
    coverage: float = 0.99,
    bins: int = 60,
    log_y: bool = True,
    title: str = "How far behind the stream events arrived",
    xaxis_title: str = "lateness ({unit} behind the max event time of earlier batches)",
) -> go.Figure:
    """Histogram of lateness with p50/p95/p99 lines and the delay that keeps ``coverage`` of events.

    The axis is in the unit that reads best (:func:`~streaming.charts.common.time_unit`); ``xaxis_title`` names it where it says ``{unit}``.

    ``late`` is a frame with a ``lateness`` column (:func:`streaming.analysis.lateness.classify`)
    or a lateness series (:func:`streaming.analysis.lateness.lateness`). ``log_y`` (the
    default) shows the event counts on a log scale, so a thin tail of very late
    events stays visible next to the on-time mass at 0.
    """
    series = late["lateness"] if isinstance(late, pd.DataFrame) else late
    summary = lateness_summary(series, coverage)
    if summary["events"] == 0:
        return empty_figure(title, "No events yet")
    seconds = pd.to_timedelta(series).dropna().dt.total_seconds()
    unit, size = time_unit(seconds)
    figure = go.Figure(go.Histogram(x=seconds / size, nbinsx=bins, marker={"color": "#8d99ae"}, name="events"))
    lines = [("p50", summary["p50"], "#2a9d8f", "dot"), ("p95", summary["p95"], "#e9c46a", "dot"), ("p99", summary["p99"], "#e76f51", "dot")]
    for name, value, colour, dash in lines:
        figure.add_vline(
            x=_seconds(value) / size,
            line={"color": colour, "dash": dash},
            annotation={"text": f"{name} {human_duration(_seconds(value))}", "textangle": -90, "font": {"color": colour}},
            annotation_position="top right",
        )
    delay = _seconds(summary["delay_for_coverage"])
    figure.add_vline(x=delay / size, line={"color": "#e63946", "width": 2})
    figure.add_annotation(
        x=delay / size,
        y=1,
        yref="paper",
        text=f"a {human_duration(delay)} watermark keeps {coverage:.0%} of events in all their windows",
        showarrow=True,
        arrowhead=2,
        ax=-40,
        ay=-30,
        xanchor="right",
        font={"color": "#e63946"},
    )
    figure.update_layout(
        title=f"{title} ({summary['late_events']} of {summary['events']} events behind)",
        xaxis_title=xaxis_title.format(unit=unit),
        yaxis_title="events",
        yaxis_type="log" if log_y else "linear",
        bargap=0.05,
        showlegend=False,
    )
    return figure
