"""A stepped replay over its micro-batches: the event times read, the watermark each batch ran with, and the state.

Pure: :class:`~streaming.analysis.explain.Step` objects in, a Plotly figure out.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.explain import Step
from .common import WATERMARK_COLOR, empty_figure

__all__ = ["steps_figure"]

LATE_COLOR = "#e03131"
ROW_COLOR = "#1c7ed6"


def steps_figure(steps: Sequence[Step], current: int | None = None, title: str = "Micro-batch by micro-batch") -> go.Figure:
    """Top: every row read (at its event time, red when at or behind the watermark) and the watermark each batch ran with.
    Bottom: rows in state after each batch. ``current`` (a batch id) is marked.
    """
    if not steps:
        return empty_figure(title)
    figure = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.06)
    rows = pd.concat([step.rows.assign(batch_id=step.batch_id) for step in steps if len(step.rows)] or [pd.DataFrame(columns=["batch_id", "event_time", "key", "late"])])
    for late, color, name in ((False, ROW_COLOR, "row read"), (True, LATE_COLOR, "row at or behind the watermark")):
        chosen = rows[rows["late"].astype(bool) == late] if len(rows) else rows
        figure.add_trace(
            go.Scatter(
                x=chosen["batch_id"], y=chosen["event_time"], mode="markers", name=name, marker={"color": color, "size": 8},
                text=chosen["key"].astype(str), hovertemplate="%{text} at %{y}<extra></extra>",
            ),
            row=1, col=1,
        )
    batches = [step.batch_id for step in steps]
    figure.add_trace(
        go.Scatter(
            x=batches, y=[step.watermark_before for step in steps], mode="lines+markers", name="watermark the batch ran with",
            line={"color": WATERMARK_COLOR, "dash": "dash", "shape": "hv"},
        ),
        row=1, col=1,
    )
    figure.add_trace(go.Bar(x=batches, y=[step.state_rows for step in steps], name="rows in state", marker={"color": "#868e96"}), row=2, col=1)
    if current is not None:
        figure.add_vline(x=current, line={"color": "#495057", "width": 1, "dash": "dot"})
    figure.update_layout(title=title, height=480, margin={"t": 50, "b": 40, "l": 60, "r": 20}, legend={"orientation": "h", "y": -0.15})
    figure.update_xaxes(title_text="micro-batch", row=2, col=1, dtick=1 if len(steps) <= 30 else None)
    times = pd.to_datetime(pd.concat([pd.Series(rows["event_time"], dtype="datetime64[ns]"), pd.Series([step.watermark_before for step in steps], dtype="datetime64[ns]")]).dropna())
    days = sorted({f"{stamp:%Y-%m-%d}" for stamp in times})
    if len(days) == 1:  # the day once, in the title: Plotly's own date line under the first tick is clipped on a narrow page
        figure.update_yaxes(title_text=f"event time on {days[0]} (UTC)", tickformat="%H:%M:%S", row=1, col=1)
    else:
        figure.update_yaxes(title_text="event time (UTC)", tickformat="%m-%d %H:%M", row=1, col=1)
    figure.update_yaxes(title_text="state rows", row=2, col=1)
    return figure
