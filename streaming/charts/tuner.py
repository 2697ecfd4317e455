"""Plotly figures of the watermark tuner. Pure: data in, ``go.Figure`` out.

- :func:`completeness_vs_state`: completeness against peak state rows, one
  point per delay labelled with it, the target as a horizontal line;
- :func:`completeness_vs_output_delay`: completeness against the mean append
  output delay (event-time seconds), same labels and target line;
- :func:`grid_heatmap`: one measure of a windows × delays grid of the model, with the target's contour.

The first two take a :class:`~streaming.analysis.tune.TuneResult` or its ``to_json()`` dict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..engine.durations import format_duration
from .common import empty_figure, percent_tickformat, time_unit

__all__ = [
    "RECOMMENDED_COLOR",
    "TARGET_COLOR",
    "completeness_vs_output_delay",
    "completeness_vs_state",
    "grid_heatmap",
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


def _tradeoff(tuning: Any, x: str, x_title: str, title: str, *, scaled: bool = False) -> go.Figure:
    """Completeness against the measure ``x``, a point per delay; ``scaled``: ``x`` is in seconds, drawn in the unit that reads best, named where ``x_title`` says ``{unit}``."""
    data = _tune_json(tuning)
    frame = tune_frame(data)
    if frame.empty or x not in frame.columns:
        return empty_figure(title, "No delays measured yet")
    frame = frame[frame[x].notna()]
    if frame.empty:
        return empty_figure(title, f"No delay has a {x_title}")
    unit, size = time_unit(frame[x]) if scaled else ("", 1.0)
    x_title = x_title.format(unit=unit)
    colors = [RECOMMENDED_COLOR if flag else POINT_COLOR for flag in frame["recommended"]]
    figure = go.Figure(
        go.Scatter(
            x=frame[x] / size,
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
        xaxis_title=x_title, yaxis_title="completeness", yaxis_tickformat=percent_tickformat([*frame["completeness"], target]), showlegend=False, height=420,
    )
    return figure


def completeness_vs_state(tuning: Any) -> go.Figure:
    """Completeness against peak state rows, a point per delay (labelled), the target as a dashed line."""
    return _tradeoff(tuning, "peak_state_rows", "peak state rows", "Completeness vs state kept")


def completeness_vs_output_delay(tuning: Any) -> go.Figure:
    """Completeness against the mean append-mode output delay in event-time seconds, a point per delay."""
    return _tradeoff(tuning, "output_delay_seconds", "mean output delay ({unit}, event time)", "Completeness vs output delay", scaled=True)


def grid_heatmap(grid: pd.DataFrame, value: str, title: str, *, target: float | None = None, percent: bool = False) -> go.Figure:
    """``value`` of a windows × delays grid (:func:`streaming.analysis.model.grid`) as a heat map; with ``target``, its contour drawn over it.

    Rows are window lengths, columns delays (both labelled as durations); an
    empty cell is a value the model has none for (no emitted window).
    """
    if grid.empty or value not in grid.columns:
        return empty_figure(title, "No grid computed yet")
    table = grid.pivot(index="window_ms", columns="delay_ms", values=value).sort_index().sort_index(axis=1)
    x = [format_duration(int(delay)) for delay in table.columns]
    y = [format_duration(int(window)) for window in table.index]
    z = table.to_numpy(dtype="float64")
    text = [[("–" if np.isnan(cell) else (f"{cell:.1%}" if percent else f"{cell:,.0f}")) for cell in row] for row in z]
    traces: list[Any] = [
        go.Heatmap(
            z=z, x=x, y=y, text=text, texttemplate="%{text}", colorscale="Viridis", reversescale=not percent,
            hovertemplate="window %{y}<br>delay %{x}<br>" + value + " %{text}<extra></extra>",
            colorbar={"tickformat": ".0%"} if percent else {},
        )
    ]
    if target is not None:
        traces.append(
            go.Contour(
                z=z, x=x, y=y, showscale=False, hoverinfo="skip", contours={"start": target, "end": target, "size": 1, "coloring": "none"},
                line={"color": TARGET_COLOR, "width": 3}, name=f"target {target:.0%}",
            )
        )
    figure = go.Figure(traces)
    figure.update_layout(
        title={"text": title, "subtitle": {"text": f"the red line: target {target:.2%}"} if target is not None else {}},
        xaxis_title="watermark delay", yaxis_title="window length", height=380,
    )
    return figure
