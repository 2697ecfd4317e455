"""Plotly figures for watermark tuning and config comparison. Pure: data in, ``go.Figure`` out.

- :func:`completeness_vs_state`: completeness against peak state rows, one
  point per delay labelled with it, the target as a horizontal line;
- :func:`completeness_vs_output_delay`: completeness against the mean append
  output delay (event-time seconds), same labels and target line;
- :func:`comparison_counts`: windowed counts of 2–4 runs as side-by-side small
  multiples sharing the x range (the union of the runs' windows) and one colour
  per key in every panel.

Tuning figures take a :class:`~streaming.tune.TuneResult` or its ``to_json()``
dict; the comparison figure a :class:`~streaming.compare.Comparison` or plain
``(label, result table)`` pairs. Key colours come from
:func:`streaming.charts.key_colors`, so keys match the dashboard's other charts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .charts import empty_figure, key_colors
from .compare import time_range

__all__ = [
    "RECOMMENDED_COLOR",
    "TARGET_COLOR",
    "comparison_counts",
    "completeness_vs_output_delay",
    "completeness_vs_state",
    "key_colors",
    "tune_frame",
]

POINT_COLOR = "#1f77b4"
RECOMMENDED_COLOR = "#2ca02c"
TARGET_COLOR = "#d62728"


def _tune_json(tuning: Any) -> Mapping[str, Any]:
    return tuning.to_json() if hasattr(tuning, "to_json") else tuning


def tune_frame(tuning: Any) -> pd.DataFrame:
    """One row per delay (the ``delays`` entries of the JSON) plus a boolean ``recommended`` column."""
    data = _tune_json(tuning)
    frame = pd.DataFrame(list(data.get("delays") or []))
    if frame.empty:
        return frame
    frame["recommended"] = frame["delay"] == data.get("recommended")
    return frame


def _tradeoff(tuning: Any, x: str, x_title: str, title: str) -> go.Figure:
    data = _tune_json(tuning)
    frame = tune_frame(data)
    if frame.empty or x not in frame.columns:
        return empty_figure(title, "No delays measured yet")
    frame = frame[frame[x].notna()]
    if frame.empty:
        return empty_figure(title, f"No delay has a {x_title}")
    colors = [RECOMMENDED_COLOR if flag else POINT_COLOR for flag in frame["recommended"]]
    figure = go.Figure(
        go.Scatter(
            x=frame[x],
            y=frame["completeness"],
            mode="markers+text+lines",
            text=frame["delay"],
            textposition="top center",
            marker={"color": colors, "size": 11},
            line={"color": POINT_COLOR, "width": 1, "dash": "dot"},
            name="watermark delay",
            customdata=frame[["delay"]].to_numpy(),
            hovertemplate=f"delay %{{customdata[0]}}<br>{x_title} %{{x}}<br>completeness %{{y:.2%}}<extra></extra>",
        )
    )
    target = data.get("target")
    if target is not None:
        figure.add_hline(
            y=target, line={"color": TARGET_COLOR, "dash": "dash"},
            annotation_text=f"target {target:.0%}" if float(target * 100).is_integer() else f"target {target:.2%}",
            annotation_position="bottom right",
        )
    recommended = data.get("recommended")
    subtitle = f"recommended: {recommended}" if recommended else "no delay reaches the target"
    figure.update_layout(
        title={"text": title, "subtitle": {"text": subtitle}},
        xaxis_title=x_title, yaxis_title="completeness", yaxis_tickformat=".0%", showlegend=False, height=420,
    )
    return figure


def completeness_vs_state(tuning: Any) -> go.Figure:
    """Completeness against peak state rows, a point per delay (labelled), the target as a dashed line."""
    return _tradeoff(tuning, "peak_state_rows", "peak state rows", "Completeness vs state kept")


def completeness_vs_output_delay(tuning: Any) -> go.Figure:
    """Completeness against the mean append-mode output delay in event-time seconds, a point per delay."""
    return _tradeoff(tuning, "output_delay_seconds", "mean output delay (s, event time)", "Completeness vs output delay")


def _panels(comparison: Any) -> list[tuple[str, pd.DataFrame]]:
    if hasattr(comparison, "runs"):
        return [(run.label, run.result) for run in comparison.runs]
    return [(str(label), frame) for label, frame in comparison]


def comparison_counts(
    comparison: Any,
    *,
    colors: Mapping[str, str] | None = None,
    x_range: Sequence[pd.Timestamp] | None = None,
) -> go.Figure:
    """Windowed counts per key of each run, side by side, with the same x range and key colours in every panel.

    ``comparison`` is a :class:`~streaming.compare.Comparison` or a sequence of
    ``(label, result table)`` pairs. Each key is one line through its windows'
    midpoints; one legend entry per key toggles it in every panel. ``x_range``
    defaults to the union of the runs' windows (the comparison's own
    :meth:`~streaming.compare.Comparison.time_range`, which includes the exact
    answers, when given one).
    """
    panels = _panels(comparison)
    title = "Windowed counts per run"
    if not panels:
        return empty_figure(title, "No runs to compare")
    frames = [frame for _, frame in panels]
    if colors is None:
        colors = comparison.key_colors() if hasattr(comparison, "key_colors") else key_colors(
            key for frame in frames for key in frame.get("key", [])
        )
    if x_range is None:
        x_range = comparison.time_range() if hasattr(comparison, "time_range") else time_range(frames)
    figure = make_subplots(
        rows=1, cols=len(panels), shared_yaxes=True, subplot_titles=[label for label, _ in panels], horizontal_spacing=0.03
    )
    shown: set[str] = set()
    for column, (label, frame) in enumerate(panels, start=1):
        if frame.empty:
            continue
        for key, rows in frame.groupby("key", sort=True):
            key = str(key)
            rows = rows.sort_values(["window_start", "window_end"])
            start, end = pd.to_datetime(rows["window_start"]), pd.to_datetime(rows["window_end"])
            windows = [f"[{s:%H:%M:%S}, {e:%H:%M:%S})" for s, e in zip(start, end)]
            color = colors.get(key)
            figure.add_trace(
                go.Scatter(
                    x=start + (end - start) / 2, y=rows["count"], name=key, legendgroup=key, showlegend=key not in shown,
                    mode="lines+markers", line={"color": color}, marker={"color": color}, customdata=windows,
                    hovertemplate=f"{label}<br>{key}<br>window %{{customdata}}<br>count %{{y}}<extra></extra>",
                ),
                row=1, col=column,
            )
            shown.add(key)
    if x_range is not None:
        figure.update_xaxes(range=[pd.Timestamp(x_range[0]), pd.Timestamp(x_range[1])])
    figure.update_xaxes(title_text="event time (window midpoint)")
    figure.update_yaxes(title_text="count", row=1, col=1)
    figure.update_layout(title=title, legend_title="key", height=420, hovermode="closest")
    return figure
