"""Plotly figures of end-to-end latency: percentiles over time and a histogram.

Pure functions: the entries of a :class:`~streaming.engine.output.latency.LatencyLog`
(``frame()``) in, figures out, folded by :mod:`streaming.analysis.latency`.
Each accepts no entries and then says what it waits for.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd
import plotly.graph_objects as go

from ..analysis.latency import LatencyEnd, latencies, latency_breakdown, latency_histogram, latency_over_time
from .common import empty_figure

__all__ = [
    "END_WORDS", "NO_LATENCY", "latency_breakdown_figure", "latency_cdf_figure", "latency_figures", "latency_histogram_figure", "latency_over_time_figure",
]

NO_LATENCY = "No record measured yet: latency shows once the output of the records read since the start is in the result table"
END_WORDS: dict[str, str] = {
    "written": "until the sink received its output",
    "folded": "until its output was in the result table",
    "shown": "until a page drew the result table holding it",
}
PERCENTILE_STYLE = {"p50": {"dash": "solid"}, "p95": {"dash": "dash"}, "p99": {"dash": "dot"}, "max": {"dash": "dashdot", "width": 1}}


def latency_over_time_figure(entries: pd.DataFrame, bucket_ms: int = 1_000, to: LatencyEnd = "folded") -> go.Figure:
    """p50, p95, p99 and the maximum of the latency of the records that reached ``to`` in each ``bucket_ms``."""
    title = f"End-to-end latency over time (produced → {to})"
    over_time = latency_over_time(entries, bucket_ms, to)
    if over_time.empty:
        return empty_figure(title, NO_LATENCY)
    figure = go.Figure(
        [
            go.Scatter(
                x=over_time["at"], y=over_time[name], name=name, mode="lines+markers", line=style,
                customdata=over_time["records"], hovertemplate=f"%{{x|%H:%M:%S}}<br>{name} %{{y:,.0f}} ms<br>%{{customdata:,.0f}} records<extra></extra>",
            )
            for name, style in PERCENTILE_STYLE.items()
        ]
    )
    figure.update_layout(
        title={"text": title, "subtitle": {"text": f"each record's time from when it was produced {END_WORDS[to]}, per {bucket_ms / 1000:g} s"}},
        xaxis_title="when it arrived (UTC)", yaxis_title="latency (ms)", height=340, hovermode="x unified",
    )
    return figure


def latency_histogram_figure(entries: pd.DataFrame, bins: int = 40, to: LatencyEnd = "folded") -> go.Figure:
    """How many records had each latency: ``bins`` equal bins from the least to the largest."""
    title = f"Latency distribution (produced → {to})"
    histogram = latency_histogram(entries, bins, to)
    if histogram.empty:
        return empty_figure(title, NO_LATENCY)
    middle = (histogram["low_ms"] + histogram["high_ms"]) / 2
    figure = go.Figure(
        go.Bar(
            x=middle, y=histogram["records"], width=histogram["high_ms"] - histogram["low_ms"], name="records",
            customdata=histogram[["low_ms", "high_ms"]], hovertemplate="%{customdata[0]:,.0f}–%{customdata[1]:,.0f} ms<br>%{y:,.0f} records<extra></extra>",
        )
    )
    figure.update_layout(title=title, xaxis_title="latency (ms)", yaxis_title="records", height=340, bargap=0)
    return figure


def latency_breakdown_figure(entries: pd.DataFrame) -> go.Figure:
    """Where a record's time went, on average, from its production to a page drawing it: one stacked bar."""
    title = "Where a record's time went (mean, produced → shown)"
    breakdown = latency_breakdown(entries)
    if breakdown.empty:
        return empty_figure(title, NO_LATENCY)
    figure = go.Figure(
        [
            go.Bar(x=[row.mean_ms], y=["mean record"], name=row.phase, orientation="h", hovertemplate=f"{row.phase}<br>%{{x:,.0f}} ms<extra></extra>")
            for row in breakdown.itertuples(index=False)
        ]
    )
    total = breakdown["mean_ms"].sum()
    figure.update_layout(
        title={"text": title, "subtitle": {"text": f"{total:,.0f} ms in all, over {breakdown['records'].iloc[0]:,.0f} records drawn"}},
        barmode="stack", xaxis_title="ms", height=260, legend={"orientation": "h", "y": -0.4},
    )
    return figure


def latency_figures(entries: pd.DataFrame, to: LatencyEnd = "folded", bucket_ms: int = 1_000) -> dict[str, go.Figure]:
    """The latency figures of one refresh, by name: ``latency`` (over time), ``latency_histogram`` and ``latency_breakdown``."""
    return {
        "latency": latency_over_time_figure(entries, bucket_ms, to), "latency_histogram": latency_histogram_figure(entries, to=to),
        "latency_breakdown": latency_breakdown_figure(entries),
    }


def latency_cdf_figure(runs: Mapping[str, pd.DataFrame], to: LatencyEnd = "written") -> go.Figure:
    """The share of records whose latency is at most x, one line per run (``label → entries``), on a log axis: the lower and further left, the faster."""
    title = f"End-to-end latency by trigger (produced → {to})"
    traces = []
    for label, entries in runs.items():
        measured = latencies(entries, to).sort_values("latency_ms")
        if measured.empty:
            continue
        share = measured["weight"].cumsum() / measured["weight"].sum()
        traces.append(go.Scatter(
            x=measured["latency_ms"].clip(lower=0.1), y=share, name=label, mode="lines", line={"shape": "hv"},
            hovertemplate=f"{label}<br>%{{y:.1%}} of records within %{{x:,.0f}} ms<extra></extra>",
        ))
    if not traces:
        return empty_figure(title, NO_LATENCY)
    figure = go.Figure(traces)
    figure.update_layout(
        title={"text": title, "subtitle": {"text": "share of records at or below each latency; further left is faster"}},
        xaxis={"title": "latency (ms, log scale)", "type": "log"}, yaxis={"title": "share of records", "tickformat": ".0%"}, height=360,
    )
    return figure
