"""Plotly figure of a comparison: each run's windowed aggregate (a count, or the value it aggregates) as side-by-side small multiples.

Pure: a :class:`~streaming.analysis.compare.Comparison` (or plain ``(label,
result table)`` pairs) in, ``go.Figure`` out. The panels share the x range (the
union of the runs' windows) and one colour per key, from
:func:`streaming.charts.common.key_colors`, so keys match the other charts.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.compare import time_range
from .common import empty_figure, key_colors

__all__ = ["MAX_WINDOWS_SHOWN", "comparison_counts", "latest_windows_start"]


MAX_WINDOWS_SHOWN = 60
"""Distinct windows drawn at first: more (weeks of hourly windows) are zoomed to the latest ones; double-click shows all."""


def _panels(comparison: Any) -> list[tuple[str, pd.DataFrame, str]]:
    """``(label, result table, measure)`` per run: the measure is what its number is (``count``, ``sum(amount)``)."""
    if hasattr(comparison, "runs"):
        return [(run.label, run.result, run.config.measure) for run in comparison.runs]
    return [(str(label), frame, "count") for label, frame in comparison]


def latest_windows_start(frames: Sequence[pd.DataFrame], max_windows: int = MAX_WINDOWS_SHOWN) -> pd.Timestamp | None:
    """Where to start the x range so it holds the latest ``max_windows`` distinct windows of ``frames``; ``None`` when they hold no more than that."""
    starts = sorted({pd.Timestamp(start) for frame in frames if len(frame) for start in frame["window_start"]})
    return starts[-max_windows] if len(starts) > max_windows else None


def comparison_counts(
    comparison: Any,
    *,
    colors: Mapping[str, str] | None = None,
    x_range: Sequence[pd.Timestamp] | None = None,
    keys: Collection[str] | None = None,
) -> go.Figure:
    """Each run's windowed aggregate per key -- its count, or the value it aggregates (``sum(amount)``) -- side by side,
    with the same x range and key colours in every panel.

    ``comparison`` is a :class:`~streaming.analysis.compare.Comparison` or a sequence of
    ``(label, result table)`` pairs (counted). Each key is one line through its windows'
    midpoints; one legend entry per key toggles it in every panel; ``keys`` draws only those.
    ``x_range`` defaults to the union of the runs' windows (the comparison's own
    :meth:`~streaming.analysis.compare.Comparison.time_range`, which includes the exact
    answers, when given one), cut to the latest :data:`MAX_WINDOWS_SHOWN` windows when there are more.
    """
    panels = _panels(comparison)
    if not panels:
        return empty_figure("Windowed counts per run", "No runs to compare")
    measures = sorted({measure for _, _, measure in panels})
    title = f"Windowed {measures[0] if len(measures) == 1 else 'aggregate'} per key, per run"
    frames = [frame for _, frame, _ in panels]
    if keys is not None:
        wanted = {str(key) for key in keys}
        frames = [frame[frame["key"].astype(str).isin(wanted)] if len(frame) else frame for frame in frames]
        panels = [(label, frame, measure) for (label, _, measure), frame in zip(panels, frames, strict=True)]
    if colors is None:
        colors = key_colors(comparison.keys()) if hasattr(comparison, "keys") else key_colors(
            key for frame in frames for key in frame.get("key", [])
        )
    if x_range is None:
        whole = comparison.time_range() if hasattr(comparison, "time_range") else time_range(frames)
        latest = latest_windows_start(frames)
        x_range = whole if latest is None or whole is None else (latest, whole[1])
    figure = make_subplots(
        rows=1, cols=len(panels), shared_yaxes=len(measures) == 1, subplot_titles=[label for label, _, _ in panels], horizontal_spacing=0.03
    )
    shown: set[str] = set()
    for column, (label, frame, measure) in enumerate(panels, start=1):
        if frame.empty:
            continue
        number = "value" if measure != "count" and "value" in frame.columns else "count"
        for key, rows in frame.groupby("key", sort=True):
            key = str(key)
            rows = rows.sort_values(["window_start", "window_end"])
            start, end = pd.to_datetime(rows["window_start"]), pd.to_datetime(rows["window_end"])
            windows = [f"[{s:%Y-%m-%d %H:%M:%S}, {e:%H:%M:%S})" for s, e in zip(start, end, strict=True)]
            color = colors.get(key)
            figure.add_trace(
                go.Scatter(
                    x=start + (end - start) / 2, y=rows[number], name=key, legendgroup=key, showlegend=key not in shown,
                    mode="lines+markers", line={"color": color}, marker={"color": color}, customdata=windows,
                    hovertemplate=f"{label}<br>{key}<br>window %{{customdata}}<br>{measure} %{{y}}<extra></extra>",
                ),
                row=1, col=column,
            )
            shown.add(key)
        figure.update_yaxes(title_text=measure, row=1, col=column)
    if x_range is not None:
        figure.update_xaxes(range=[pd.Timestamp(x_range[0]), pd.Timestamp(x_range[1])])
    figure.update_xaxes(title_text="event time (window midpoint)")
    figure.update_layout(title=title, legend_title="key", height=420, hovermode="closest")
    return figure
