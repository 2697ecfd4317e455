"""Plotly figure of a comparison: windowed counts of 2-4 runs as side-by-side small multiples.

Pure: a :class:`~streaming.analysis.compare.Comparison` (or plain ``(label,
result table)`` pairs) in, ``go.Figure`` out. The panels share the x range (the
union of the runs' windows) and one colour per key, from
:func:`streaming.charts.common.key_colors`, so keys match the other charts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.compare import time_range
from .common import empty_figure, key_colors

__all__ = ["comparison_counts"]


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

    ``comparison`` is a :class:`~streaming.analysis.compare.Comparison` or a sequence of
    ``(label, result table)`` pairs. Each key is one line through its windows'
    midpoints; one legend entry per key toggles it in every panel. ``x_range``
    defaults to the union of the runs' windows (the comparison's own
    :meth:`~streaming.analysis.compare.Comparison.time_range`, which includes the exact
    answers, when given one).
    """
    panels = _panels(comparison)
    title = "Windowed counts per run"
    if not panels:
        return empty_figure(title, "No runs to compare")
    frames = [frame for _, frame in panels]
    if colors is None:
        colors = key_colors(comparison.keys()) if hasattr(comparison, "keys") else key_colors(
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
