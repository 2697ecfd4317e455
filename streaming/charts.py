"""Plotly figures of a streaming query: the result table and the Spark UI's streaming tab.

Pure functions: pandas frames in (``ResultTable.frame()``, ``progress_frame``,
``breakdown_frame``), ``plotly.graph_objects.Figure`` out; no Streamlit, no
Spark. Every builder accepts an empty frame and returns a valid figure with a
"no batches yet" annotation, so a page can draw before the first batch.

Colours: :func:`key_colors` maps a list of keys (or phases) to colours by their
sorted position, so the same key list gives every figure the same colours;
pass its result as ``colors`` to keep them fixed across figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go

__all__ = [
    "NO_BATCHES",
    "OUTPUT_MODE_SEMANTICS",
    "PALETTE",
    "batch_duration_figure",
    "current_watermark",
    "drops_figure",
    "empty_figure",
    "input_rows_figure",
    "key_colors",
    "rates_figure",
    "state_figure",
    "watermark_gap_figure",
    "windowed_counts_figure",
]

NO_BATCHES = "No batches yet"
PALETTE: tuple[str, ...] = tuple(plotly.colors.qualitative.Plotly) + tuple(plotly.colors.qualitative.Dark24)
WATERMARK_COLOR = "#d62728"

OUTPUT_MODE_SEMANTICS: Mapping[str, str] = MappingProxyType({
    "update": "update mode: the latest count of each window; a window's row changes until the watermark passes its end",
    "append": "append mode: finalized windows only; a window appears once the watermark passes its end and never changes",
    "complete": "complete mode: the whole result table, every window since the start, rewritten each trigger",
})


def key_colors(keys: Iterable[object], palette: Sequence[str] = PALETTE) -> dict[str, str]:
    """Colour of each distinct key, by its position in the sorted key list (cycling through ``palette``).

    The order of ``keys`` and repeated keys do not matter: the same set of keys
    always gets the same colours.
    """
    ordered = sorted({str(key) for key in keys})
    return {key: palette[index % len(palette)] for index, key in enumerate(ordered)}


def empty_figure(title: str, message: str = NO_BATCHES) -> go.Figure:
    """A valid figure without data: ``title`` and a centred ``message`` annotation."""
    figure = go.Figure()
    figure.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=320)
    figure.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 15})
    return figure


def _has_rows(frame: pd.DataFrame, columns: Iterable[str]) -> bool:
    return not frame.empty and all(column in frame.columns for column in columns)


def current_watermark(progress: pd.DataFrame) -> pd.Timestamp | None:
    """The watermark of the latest batch that has one, or ``None`` (no watermark, or none set yet)."""
    if "watermark" not in progress.columns:
        return None
    marks = pd.to_datetime(progress["watermark"]).dropna()
    return None if marks.empty else pd.Timestamp(marks.iloc[-1])


def _add_watermark(figure: go.Figure, watermark: pd.Timestamp, color: str = WATERMARK_COLOR) -> None:
    """The watermark as a vertical line across the time axis, shaded to its left (windows ending there are final)."""
    figure.add_shape(
        type="line", x0=watermark, x1=watermark, y0=0, y1=1, xref="x", yref="paper",
        line={"color": color, "width": 2, "dash": "dash"}, name="watermark",
    )
    figure.add_annotation(
        x=watermark, y=1, xref="x", yref="paper", yanchor="bottom", showarrow=False,
        text=f"watermark {watermark:%Y-%m-%d %H:%M:%S}", font={"color": color},
    )


def windowed_counts_figure(
    table: pd.DataFrame,
    *,
    watermark: pd.Timestamp | None = None,
    output_mode: str = "update",
    colors: Mapping[str, str] | None = None,
    slide: pd.Timedelta | None = None,
    semantics: Mapping[str, str] = OUTPUT_MODE_SEMANTICS,
    no_rows: str = NO_BATCHES,
) -> go.Figure:
    """Count per key over event time: one line per key through the midpoints of its windows.

    Midpoints keep sliding (overlapping) windows legible; the hover names the
    window ``[start, end)``. A key's line is broken where windows are missing
    (next start more than ``slide`` after the last; ``slide`` is inferred from
    the table when ``None``), so no trend is drawn across windows that are not
    in the table. ``watermark`` (when given) is drawn as a vertical line; the
    subtitle says what ``output_mode`` puts in the table.
    """
    title = f"Result table: count per key and window ({output_mode} mode)"
    meaning = semantics.get(output_mode, output_mode)
    if not _has_rows(table, ("window_start", "window_end", "key", "count")):
        return empty_figure(title, f"{no_rows}: the result table is empty<br>({meaning})")
    palette = dict(colors) if colors is not None else key_colors(table["key"])
    step = slide if slide is not None else _window_step(table)
    ordered = table.sort_values(["window_start", "window_end"], kind="stable")
    figure = go.Figure([_key_trace(str(key), rows, palette.get(str(key)), step) for key, rows in ordered.groupby("key", sort=True)])
    figure.update_layout(
        title={"text": title, "subtitle": {"text": meaning}},
        xaxis_title="event time (window midpoint)", yaxis_title="count", legend_title="key", height=420,
        hovermode="closest",
    )
    if watermark is not None and not pd.isna(watermark):
        _add_watermark(figure, pd.Timestamp(watermark))
    return figure


def _window_step(table: pd.DataFrame) -> pd.Timedelta:
    """How far consecutive windows start apart: the window length, or less when windows overlap (sliding)."""
    starts = pd.Series(pd.to_datetime(table["window_start"]).drop_duplicates().sort_values())
    lengths = pd.to_datetime(table["window_end"]) - pd.to_datetime(table["window_start"])
    gaps = starts.diff().dropna()
    return min([lengths.min(), *gaps[gaps > pd.Timedelta(0)]])


def _key_trace(key: str, rows: pd.DataFrame, color: str | None, step: pd.Timedelta) -> dict[str, Any]:
    """One key's windows (``rows``, in window order) at their midpoints; a ``None`` point breaks the line where windows are missing."""
    points: list[tuple[pd.Timestamp, int | None, str]] = []
    previous: pd.Timestamp | None = None
    for start, end, count in zip(pd.to_datetime(rows["window_start"]), pd.to_datetime(rows["window_end"]), rows["count"]):
        middle = start + (end - start) / 2
        if previous is not None and start - previous > step:
            points.append((middle - step / 2, None, ""))
        points.append((middle, int(count), f"[{start:%H:%M:%S}, {end:%H:%M:%S})"))
        previous = start
    x, y, windows = (list(column) for column in zip(*points))
    # A plain trace dict with a datetime64 array: go.Figure validates it once, without walking Timestamps one by one.
    return {
        "type": "scatter", "x": np.array(x, dtype="datetime64[ns]"), "y": y, "name": key, "mode": "lines+markers",
        "connectgaps": False, "line": {"color": color}, "marker": {"color": color}, "customdata": windows,
        "hovertemplate": f"{key}<br>window %{{customdata}}<br>count %{{y}}<extra></extra>",
    }


def _batch_layout(figure: go.Figure, title: str, yaxis_title: str) -> go.Figure:
    figure.update_layout(title=title, xaxis_title="batch", yaxis_title=yaxis_title, height=320, hovermode="x unified")
    return figure


def drops_figure(progress: pd.DataFrame) -> go.Figure:
    """Rows dropped by the watermark: bars per batch, the running total as a line on the right axis."""
    title = "Late rows dropped by the watermark"
    if not _has_rows(progress, ("batch_id", "rows_dropped_by_watermark", "cumulative_rows_dropped")):
        return empty_figure(title)
    batches = progress["batch_id"]
    figure = go.Figure(
        [
            go.Bar(x=batches, y=progress["rows_dropped_by_watermark"], name="dropped in batch", yaxis="y"),
            go.Scatter(x=batches, y=progress["cumulative_rows_dropped"], name="cumulative", mode="lines+markers", yaxis="y2"),
        ],
        layout={
            "yaxis": {"rangemode": "tozero", "tickformat": ",d"},
            "yaxis2": {"title": {"text": "cumulative"}, "overlaying": "y", "side": "right", "showgrid": False, "rangemode": "tozero", "tickformat": ",d"},
        },
    )
    return _batch_layout(figure, title, "dropped in batch")


def state_figure(progress: pd.DataFrame) -> go.Figure:
    """State store per batch: rows total / updated / removed (top) and memory used (bottom)."""
    title = "State: rows and memory per batch"
    if not _has_rows(progress, ("batch_id", "state_rows_total", "state_rows_updated", "state_memory_bytes")):
        return empty_figure(title)
    batches = progress["batch_id"]
    rows = [
        go.Scatter(x=batches, y=progress[column], name=label, mode="lines+markers", yaxis="y")
        for column, label in (("state_rows_total", "rows total"), ("state_rows_updated", "rows updated"), ("state_rows_removed", "rows removed"))
        if column in progress.columns
    ]
    memory = go.Bar(x=batches, y=progress["state_memory_bytes"], name="memory (bytes)", xaxis="x2", yaxis="y2")
    return go.Figure(
        [*rows, memory],
        layout={
            "title": {"text": title},
            "height": 420,
            "hovermode": "x unified",
            "yaxis": {"title": {"text": "rows"}, "domain": [0.54, 1.0]},
            "yaxis2": {"title": {"text": "bytes"}, "domain": [0.0, 0.46]},
            "xaxis": {"anchor": "y", "matches": "x2", "showticklabels": False},
            "xaxis2": {"anchor": "y2", "title": {"text": "batch"}},
        },
    )


def rates_figure(progress: pd.DataFrame) -> go.Figure:
    """Input rate vs process rate (rows/s), as in the Spark UI's streaming tab."""
    title = "Input rate vs process rate"
    if not _has_rows(progress, ("batch_id", "input_rows_per_second", "processed_rows_per_second")):
        return empty_figure(title)
    figure = go.Figure()
    figure.add_trace(go.Scatter(x=progress["batch_id"], y=progress["input_rows_per_second"], name="input rows/s", mode="lines+markers"))
    figure.add_trace(go.Scatter(x=progress["batch_id"], y=progress["processed_rows_per_second"], name="processed rows/s", mode="lines+markers"))
    return _batch_layout(figure, title, "rows per second")


def input_rows_figure(progress: pd.DataFrame) -> go.Figure:
    """Input rows per batch."""
    title = "Input rows per batch"
    if not _has_rows(progress, ("batch_id", "num_input_rows")):
        return empty_figure(title)
    figure = go.Figure(go.Bar(x=progress["batch_id"], y=progress["num_input_rows"], name="input rows"))
    return _batch_layout(figure, title, "rows")


def batch_duration_figure(
    breakdown: pd.DataFrame,
    progress: pd.DataFrame | None = None,
    *,
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Batch duration: the ``durationMs`` phases of each batch as stacked bars, the total as a line when ``progress`` is given."""
    title = "Batch duration and its breakdown"
    if not _has_rows(breakdown, ("batch_id", "phase", "ms")):
        return empty_figure(title)
    palette = dict(colors) if colors is not None else key_colors(breakdown["phase"])
    figure = go.Figure()
    for phase, rows in breakdown.groupby("phase", sort=True):
        figure.add_trace(go.Bar(x=rows["batch_id"], y=rows["ms"], name=str(phase), marker={"color": palette.get(str(phase))}))
    if progress is not None and _has_rows(progress, ("batch_id", "batch_duration_ms")):
        figure.add_trace(
            go.Scatter(x=progress["batch_id"], y=progress["batch_duration_ms"], name="total (triggerExecution)", mode="lines+markers", line={"color": "black"})
        )
    figure.update_layout(barmode="stack")
    return _batch_layout(figure, title, "milliseconds")


def watermark_gap_figure(progress: pd.DataFrame) -> go.Figure:
    """Global watermark gap per batch: seconds between the batch's trigger time and the watermark."""
    title = "Global watermark gap"
    if not _has_rows(progress, ("batch_id", "watermark_gap_seconds")):
        return empty_figure(title)
    if progress["watermark_gap_seconds"].isna().all():
        return empty_figure(title, "No watermark yet: the query has none, or no batch has set it")
    figure = go.Figure(go.Scatter(x=progress["batch_id"], y=progress["watermark_gap_seconds"], name="gap", mode="lines+markers"))
    return _batch_layout(figure, title, "seconds behind batch time")


def live_figures(
    table: pd.DataFrame,
    progress: pd.DataFrame,
    breakdown: pd.DataFrame,
    *,
    output_mode: str,
    slide: pd.Timedelta | None = None,
) -> dict[str, go.Figure]:
    """Every figure of the live view for one refresh, by name: ``counts``, ``drops``, ``state``, ``rates``, ``input``, ``duration``, ``gap``.

    ``table`` is the result table, ``progress`` and ``breakdown`` come from
    :func:`streaming.progress.progress_frame` and :func:`~streaming.progress.breakdown_frame`.
    """
    return {
        "counts": windowed_counts_figure(
            table,
            watermark=current_watermark(progress),
            output_mode=output_mode,
            colors=key_colors(table.get("key", [])),
            slide=slide,
        ),
        "drops": drops_figure(progress),
        "state": state_figure(progress),
        "rates": rates_figure(progress),
        "input": input_rows_figure(progress),
        "duration": batch_duration_figure(breakdown, progress),
        "gap": watermark_gap_figure(progress),
    }
