"""Plotly figures of a SQL query's watermark sweep. Pure: a :class:`~streaming.analysis.sql_tune.SqlTuning` in, ``go.Figure`` out.

- :func:`sql_sweep_figure`: one clause swept: completeness and peak state rows against its delay, the target as a line;
- :func:`sql_heatmap`: two clauses swept (a join): completeness over the grid of both delays, each cell written, the recommended one marked;
- :func:`sql_compare_figure`: 2-4 queries compared (a :class:`~streaming.analysis.sql_tune.SqlComparison`): completeness and peak state rows of each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..engine.durations import format_duration
from .common import empty_figure, percent_tickformat
from .tuner import RECOMMENDED_COLOR, TARGET_COLOR

if TYPE_CHECKING:
    from ..analysis.sql_tune import SqlComparison, SqlTuning

__all__ = ["sql_compare_figure", "sql_heatmap", "sql_sweep_figure"]


def _swept(tuning: SqlTuning) -> int:
    """The clause whose delay changes between points (the first when none does)."""
    for index in range(len(tuning.clauses)):
        if len({point.delays_ms[index] for point in tuning.points}) > 1:
            return index
    return 0


def sql_sweep_figure(tuning: SqlTuning) -> go.Figure:
    if not tuning.points:
        return empty_figure("No point of the sweep ran")
    index = _swept(tuning)
    points = sorted(tuning.points, key=lambda point: point.delays_ms[index])
    labels = [format_duration(point.delays_ms[index]) for point in points]
    best = tuning.recommended
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(go.Scatter(
        x=labels, y=[point.completeness for point in points], mode="lines+markers", name="completeness",
        marker={"size": [14 if point is best else 8 for point in points], "color": [RECOMMENDED_COLOR if point is best else "#1f77b4" for point in points]},
        hovertemplate="delay %{x}<br>completeness %{y:.2%}<extra></extra>",
    ))
    figure.add_trace(go.Bar(x=labels, y=[point.peak_state_rows for point in points], name="peak state rows", opacity=0.3), secondary_y=True)
    figure.add_hline(y=tuning.target, line={"color": TARGET_COLOR, "dash": "dash"}, annotation_text=f"target {tuning.target:.0%}")
    column = tuning.clauses[index].column if tuning.clauses else "?"
    figure.update_layout(title=f"Completeness and state by the delay of WATERMARK {column}", height=380, legend={"orientation": "h", "y": -0.25})
    figure.update_xaxes(title_text=f"delay of WATERMARK {column}", type="category")
    shown = [point.completeness for point in points] + [tuning.target]
    figure.update_yaxes(title_text="completeness", tickformat=percent_tickformat(shown), secondary_y=False)
    figure.update_yaxes(title_text="peak state rows", secondary_y=True)
    return figure


def sql_heatmap(tuning: SqlTuning) -> go.Figure:
    if len(tuning.clauses) < 2 or not tuning.points:
        return empty_figure("A heat map needs two WATERMARK clauses")
    first = sorted({point.delays_ms[0] for point in tuning.points})
    second = sorted({point.delays_ms[1] for point in tuning.points})
    cells = {(point.delays_ms[0], point.delays_ms[1]): point for point in tuning.points}
    values = [[None if (a, b) not in cells else cells[(a, b)].completeness for b in second] for a in first]
    best = tuning.recommended
    text = [
        [("" if (a, b) not in cells else f"{cells[(a, b)].completeness or 0:.1%}" + (" ★" if cells[(a, b)] is best else "")) for b in second] for a in first
    ]
    figure = go.Figure(go.Heatmap(
        z=values, x=[format_duration(b) for b in second], y=[format_duration(a) for a in first], text=text, texttemplate="%{text}",
        colorscale="Viridis", zmin=0, zmax=1, colorbar={"title": "completeness", "tickformat": ".0%"},
        hovertemplate=f"{tuning.clauses[0].column} %{{y}}<br>{tuning.clauses[1].column} %{{x}}<br>completeness %{{z:.2%}}<extra></extra>",
    ))
    figure.update_layout(title="Completeness by both WATERMARK delays (★ recommended)", height=420)
    figure.update_xaxes(title_text=f"delay of WATERMARK {tuning.clauses[1].column}", type="category")
    figure.update_yaxes(title_text=f"delay of WATERMARK {tuning.clauses[0].column}", type="category")
    return figure


def sql_compare_figure(comparison: SqlComparison) -> go.Figure:
    if not comparison.points:
        return empty_figure("No query of the comparison ran")
    labels = list(comparison.labels)
    figure = make_subplots(specs=[[{"secondary_y": True}]])
    figure.add_trace(go.Bar(
        x=labels, y=[point.completeness for point in comparison.points], name="completeness", offsetgroup="completeness",
        text=[None if point.completeness is None else f"{point.completeness:.1%}" for point in comparison.points], textposition="outside",
        hovertemplate="%{x}<br>completeness %{y:.2%}<extra></extra>",
    ))
    figure.add_trace(go.Bar(
        x=labels, y=[point.peak_state_rows for point in comparison.points], name="peak state rows", offsetgroup="state", opacity=0.4,
    ), secondary_y=True)
    figure.update_layout(title="Completeness and state of each query", height=380, barmode="group", legend={"orientation": "h", "y": -0.25})
    figure.update_xaxes(type="category")
    figure.update_yaxes(title_text="completeness", tickformat=".0%", range=[0, 1.1], secondary_y=False)
    figure.update_yaxes(title_text="peak state rows", rangemode="tozero", secondary_y=True)
    return figure
