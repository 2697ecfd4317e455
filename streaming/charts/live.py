"""Plotly figures of a streaming query: the result table and the Spark UI's streaming tab.

Pure functions: pandas frames in (``ResultTable.frame()``, ``progress_frame``,
``breakdown_frame``), ``plotly.graph_objects.Figure`` out; no Streamlit, no
Spark (a progress log's ``drawn``, when passed, remembers what it found between
calls, and answers as the rule does). Every builder accepts an empty frame and returns a valid figure with a
"no batches yet" annotation, so a page can draw before the first batch.
Colours come from :func:`streaming.charts.common.key_colors`; pass its result
as ``colors`` to keep them fixed across figures.

The live view redraws these every two seconds, so each is built in one go from
numpy arrays as a :class:`~streaming.charts.common.RefreshFigure`: without
plotly's property validation, which cost more than everything else of a refresh
together, and without a copy of the template per figure. The tests build
every figure again with validation on, so an invalid property still fails.
A refresh costs the same after hours of batches as after a minute: a history
past :data:`~streaming.charts.common.MAX_POINTS` batches is drawn thinned to its
extremes, found from the last refresh when the caller passes a log's ``drawn``
(:data:`Drawn`), and the result-table chart draws the latest windows only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from .common import MAX_POINTS, NO_BATCHES, WATERMARK_COLOR, RefreshFigure, current_watermark, drawn_rows, empty_figure, has_rows, key_colors, time_unit

__all__ = [
    "OUTPUT_MODE_SEMANTICS",
    "Drawn",
    "batch_duration_figure",
    "drops_figure",
    "input_rows_figure",
    "lag_figure",
    "live_figures",
    "passed_rows_figure",
    "rates_figure",
    "state_figure",
    "watermark_gap_figure",
    "windowed_counts_figure",
]

Drawn = Callable[[Sequence[str], int, int], np.ndarray]
"""``(columns, rows, max_points) -> positions``: which of a progress frame's first ``rows`` rows a chart of ``columns`` draws.

A live query's :meth:`ProgressLog.drawn <streaming.engine.output.progress.ProgressLog.drawn>` finds them from
what it found at the last refresh; without one, a figure reads its columns whole (:func:`~streaming.charts.common.drawn_rows`).
Both follow one rule and give the same rows."""

MAX_WINDOWS_IN_VIEW = 200
"""The result-table chart draws the latest this many window starts; the page's table holds them all."""

OUTPUT_MODE_SEMANTICS: Mapping[str, str] = MappingProxyType({
    "update": "update mode: each window's latest value; a window's row changes until the watermark passes its end",
    "append": "append mode: finalized windows only; a window appears once the watermark passes its end and never changes",
    "complete": "complete mode: the whole result table, every window since the start, rewritten each trigger",
})


def _watermark_marks(watermark: pd.Timestamp, color: str = WATERMARK_COLOR) -> dict[str, list[dict[str, Any]]]:
    """The watermark as layout entries: a dashed vertical line across the time axis and its label on top."""
    return {
        "shapes": [{
            "type": "line", "x0": watermark, "x1": watermark, "y0": 0, "y1": 1, "xref": "x", "yref": "paper",
            "line": {"color": color, "width": 2, "dash": "dash"}, "name": "watermark",
        }],
        "annotations": [{
            "x": watermark, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
            "text": f"watermark {watermark:%Y-%m-%d %H:%M:%S}", "font": {"color": color},
        }],
    }


def windowed_counts_figure(
    table: pd.DataFrame,
    *,
    watermark: pd.Timestamp | None = None,
    output_mode: str = "update",
    colors: Mapping[str, str] | None = None,
    slide: pd.Timedelta | None = None,
    semantics: Mapping[str, str] = OUTPUT_MODE_SEMANTICS,
    no_rows: str = NO_BATCHES,
    max_windows: int | None = MAX_WINDOWS_IN_VIEW,
    measure: str = "count",
) -> go.Figure:
    """The aggregate per key over event time: one line per key through the midpoints of its windows.

    The table's number is its ``count`` column, or its ``value`` column for a
    value aggregation; ``measure`` names it in the title, axis and hover
    (``count``, ``sum(amount)``).

    Midpoints keep sliding (overlapping) windows legible; the hover names the
    window ``[start, end)``. A key's line is broken where windows are missing
    (next start more than ``slide`` after the last; ``slide`` is inferred from
    the table when ``None``), so no trend is drawn across windows that are not
    in the table. ``watermark`` (when given) is drawn as a vertical line; the
    subtitle says what ``output_mode`` puts in the table. Only the latest
    ``max_windows`` window starts are drawn (``None``: all), and the subtitle
    says so when that leaves windows out: a long run's result table stays in
    the page's table, the chart shows where the stream is.
    """
    title = f"Result table: {measure} per key and window ({output_mode} mode)"
    meaning = semantics.get(output_mode, output_mode)
    column = "value" if "value" in table.columns else "count"
    if not has_rows(table, ("window_start", "window_end", "key", column)):
        return empty_figure(title, f"{no_rows}: the result table is empty<br>({meaning})")
    palette = dict(colors) if colors is not None else key_colors(table["key"])
    step = slide if slide is not None else _window_step(table)
    shown, total = _latest_windows(table, max_windows)
    if shown is not table:
        meaning = f"{meaning}. Showing the latest {max_windows} of {total:,} window starts; the result table below has them all"
    ordered = shown if _in_window_order(shown) else shown.sort_values(["window_start", "window_end"], kind="stable")
    layout: dict[str, Any] = {
        "title": {"text": title, "subtitle": {"text": meaning}},
        "xaxis": {"title": {"text": "event time (window midpoint)"}}, "yaxis": {"title": {"text": measure}},
        "legend": {"title": {"text": "key"}}, "height": 420, "hovermode": "closest",
    }
    if watermark is not None and not pd.isna(watermark):
        layout.update(_watermark_marks(pd.Timestamp(watermark)))
    codes, names = pd.factorize(ordered["key"].astype(str), sort=True)
    order = np.argsort(codes, kind="stable")  # by key, window order kept within each key
    starts = ordered["window_start"].to_numpy("datetime64[ns]")
    ends = ordered["window_end"].to_numpy("datetime64[ns]")
    labels = _window_labels(starts, ends)[order]
    starts, ends = starts[order], ends[order]
    counts = ordered[column].to_numpy(dtype="float64")[order]
    firsts = np.searchsorted(codes[order], np.arange(len(names)))
    bounds = [*firsts[1:], len(order)]
    traces = [
        _key_trace(str(name), starts[first:last], ends[first:last], counts[first:last], labels[first:last], palette.get(str(name)), step, measure)
        for name, first, last in zip(names, firsts, bounds)
    ]
    return RefreshFigure(traces, layout)


def _in_window_order(table: pd.DataFrame) -> bool:
    """True when the rows are sorted by window start, then end (as ``ResultTable.frame`` gives them)."""
    starts = np.diff(table["window_start"].to_numpy("datetime64[ns]"))
    ends = np.diff(table["window_end"].to_numpy("datetime64[ns]"))
    zero = np.timedelta64(0, "ns")
    return bool(np.all((starts > zero) | ((starts == zero) & (ends >= zero))))


def _latest_windows(table: pd.DataFrame, max_windows: int | None) -> tuple[pd.DataFrame, int]:
    """``(rows of the latest max_windows window starts, number of distinct starts)``; ``table`` itself when all fit."""
    starts = table["window_start"].to_numpy("datetime64[ns]")
    distinct = np.unique(starts)
    if max_windows is None or len(distinct) <= max_windows:
        return table, len(distinct)
    return table[starts >= distinct[-max_windows]], len(distinct)


def _window_labels(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """``[HH:MM:SS, HH:MM:SS)`` of each row's window, rows in window order: formatted once per window, not once per key."""
    first = np.ones(len(starts), dtype=bool)
    first[1:] = (starts[1:] != starts[:-1]) | (ends[1:] != ends[:-1])
    heads = np.flatnonzero(first)
    texts = np.char.add(np.char.add(np.char.add("[", _clock(starts[heads])), np.char.add(", ", _clock(ends[heads]))), ")")
    return texts[np.cumsum(first) - 1]


def _window_step(table: pd.DataFrame) -> pd.Timedelta:
    """How far consecutive windows start apart: the window length, or less when windows overlap (sliding)."""
    starts = pd.Series(pd.to_datetime(table["window_start"]).drop_duplicates().sort_values())
    lengths = pd.to_datetime(table["window_end"]) - pd.to_datetime(table["window_start"])
    gaps = starts.diff().dropna()
    return min([lengths.min(), *gaps[gaps > pd.Timedelta(0)]])


def _clock(stamps: np.ndarray) -> np.ndarray:
    """``HH:MM:SS`` of each ``datetime64[ns]`` in ``stamps``, vectorised."""
    return np.datetime_as_string(stamps.astype("datetime64[s]"), unit="s").astype("<U19").view("<U1").reshape(-1, 19)[:, 11:].view("<U8").ravel()


def _key_trace(
    key: str, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray, windows: np.ndarray, color: str | None, step: pd.Timedelta,
    measure: str = "count",
) -> dict[str, Any]:
    """One key's windows (in window order) at their midpoints; a NaN point breaks the line where windows are missing."""
    middle = starts + (ends - starts) // 2
    breaks = np.flatnonzero(np.diff(starts) > np.timedelta64(step.value, "ns")) + 1
    if len(breaks):
        middle = np.insert(middle, breaks, middle[breaks] - np.timedelta64(step.value // 2, "ns"))
        counts = np.insert(counts, breaks, np.nan)
        windows = np.insert(windows, breaks, "")
    # Numpy arrays throughout: the figure is serialized without walking them value by value.
    return {
        "type": "scatter", "x": middle, "y": counts, "name": key, "mode": "lines+markers",
        "connectgaps": False, "line": {"color": color}, "marker": {"color": color}, "customdata": windows,
        "hovertemplate": f"{key}<br>window %{{customdata}}<br>{measure} %{{y}}<extra></extra>",
    }


def _history(
    progress: pd.DataFrame, columns: Sequence[str], drawn: Drawn | None, also: Sequence[str] = (), max_points: int = MAX_POINTS
) -> tuple[dict[str, np.ndarray], str | None]:
    """``batch_id``, ``columns`` and ``also`` at the rows a chart of ``columns`` draws, and a subtitle saying so when it leaves rows out."""
    rows = len(progress)
    names = list(dict.fromkeys(("batch_id", *columns, *also)))
    if rows <= max_points:
        return {name: progress[name].to_numpy() for name in names}, None
    positions = drawn_rows(progress, columns, max_points) if drawn is None else drawn(columns, rows, max_points)
    note = f"{len(positions):,} of {rows:,} batches drawn; the highest and lowest of every stretch are kept"
    return {name: progress[name].to_numpy()[positions] for name in names}, note


def _batch_figure(title: str, yaxis_title: str, note: str | None, traces: list[dict[str, Any]], **layout: Any) -> go.Figure:
    """One figure over batches, built in one go and unvalidated (see the module docstring)."""
    heading: dict[str, Any] = {"text": title} if note is None else {"text": title, "subtitle": {"text": note}}
    base: dict[str, Any] = {"title": heading, "xaxis": {"title": {"text": "batch"}}, "yaxis": {"title": {"text": yaxis_title}}, "height": 320, "hovermode": "x unified"}
    for name, value in layout.items():
        base[name] = {**base[name], **value} if isinstance(value, dict) and isinstance(base.get(name), dict) else value
    _whole_ticks(base, traces)
    return RefreshFigure(traces, base)


SMALL_SPAN = 10
"""A whole-number axis whose values span at most this much gets a tick at every whole number: Plotly would put ticks at halves
(a batch axis read "-0.5", a count axis formatted as whole numbers read "0, 1, 1")."""


def _whole_ticks(layout: dict[str, Any], traces: list[dict[str, Any]]) -> None:
    """Ticks at whole numbers only on the batch axis and on the count axes (``tickformat`` ``,d``) of ``layout``, when their values span little."""
    for name, axis in list(layout.items()):
        if not isinstance(axis, dict) or not (name == "xaxis" or (name.startswith("yaxis") and axis.get("tickformat") == ",d")):
            continue
        letter = name[0]
        ref = letter + name.removeprefix(f"{letter}axis")  # x, y, y2
        values = [np.asarray(trace[letter], dtype="float64") for trace in traces if letter in trace and trace.get(f"{letter}axis", letter) == ref]
        finite = np.concatenate([value[np.isfinite(value)] for value in values]) if values else np.array([])
        if not finite.size:
            continue
        low = float(finite.min()) if name == "xaxis" else min(0.0, float(finite.min()))  # a count axis starts at 0
        if float(finite.max()) - low <= SMALL_SPAN:
            layout[name] = {**axis, "tickmode": "linear", "tick0": 0, "dtick": 1}


def _line(x: pd.Series | np.ndarray, y: pd.Series | np.ndarray, name: str, **style: Any) -> dict[str, Any]:
    return {"type": "scatter", "x": np.asarray(x), "y": np.asarray(y), "name": name, "mode": "lines+markers", **style}


def _bars(x: pd.Series | np.ndarray, y: pd.Series | np.ndarray, name: str, **style: Any) -> dict[str, Any]:
    return {"type": "bar", "x": np.asarray(x), "y": np.asarray(y), "name": name, **style}


def drops_figure(progress: pd.DataFrame, drawn: Drawn | None = None) -> go.Figure:
    """Rows dropped by the watermark: bars per batch, the running total as a line on the right axis."""
    title = "Late rows dropped by the watermark"
    if not has_rows(progress, ("batch_id", "rows_dropped_by_watermark", "cumulative_rows_dropped")):
        return empty_figure(title)
    shown, note = _history(progress, ("rows_dropped_by_watermark",), drawn, also=("cumulative_rows_dropped",))
    batches = shown["batch_id"]
    traces = [
        _bars(batches, shown["rows_dropped_by_watermark"], "dropped in batch", yaxis="y"),
        _line(batches, shown["cumulative_rows_dropped"], "cumulative", yaxis="y2"),
    ]
    return _batch_figure(
        title, "dropped in batch", note, traces,
        yaxis={"rangemode": "tozero", "tickformat": ",d"},
        yaxis2={"title": {"text": "cumulative"}, "overlaying": "y", "side": "right", "showgrid": False, "rangemode": "tozero", "tickformat": ",d"},
    )


def state_figure(progress: pd.DataFrame, drawn: Drawn | None = None) -> go.Figure:
    """State store per batch: rows total / updated / removed (top) and memory used (bottom)."""
    title = "State: rows and memory per batch"
    if not has_rows(progress, ("batch_id", "state_rows_total", "state_rows_updated", "state_memory_bytes")):
        return empty_figure(title)
    lines = [
        (column, label)
        for column, label in (("state_rows_total", "rows total"), ("state_rows_updated", "rows updated"), ("state_rows_removed", "rows removed"))
        if column in progress.columns
    ]
    shown, note = _history(progress, (*(column for column, _ in lines), "state_memory_bytes"), drawn)
    batches = shown["batch_id"]
    rows = [_line(batches, shown[column], label, yaxis="y") for column, label in lines]
    memory = _bars(batches, shown["state_memory_bytes"], "memory (bytes)", xaxis="x2", yaxis="y2")
    return _batch_figure(
        title, "rows", note, [*rows, memory],
        height=420,
        yaxis={"domain": [0.54, 1.0]},
        yaxis2={"title": {"text": "bytes"}, "domain": [0.0, 0.46]},
        xaxis={"anchor": "y", "matches": "x2", "showticklabels": False, "title": {"text": ""}},
        xaxis2={"anchor": "y2", "title": {"text": "batch"}},
    )


STORE_BYTES = ("Size", "Memory", "Bytes")
"""A state store metric whose name holds one of these counts bytes (RocksDB's ``rocksdbSstFileSize``, ``rocksdbPinnedBlocksMemoryUsage``, ``rocksdbBytesCopied``…)."""


def state_store_figure(metrics: pd.DataFrame, store: str = "RocksDB") -> go.Figure:
    """The state store's own metrics per batch (:func:`~streaming.engine.output.progress.state_store_metrics`): bytes (top) and latencies in ms (bottom).

    Metrics are chosen by name, as the store reports them (names differ
    between Spark versions): those holding ``Latency`` are milliseconds, those
    holding one of :data:`STORE_BYTES` bytes; metrics that stay 0 are left out.
    """
    title = f"{store}: memory, files and commit latency per batch"
    if not has_rows(metrics, ("batch_id", "metric", "value")):
        return empty_figure(title, "No state store metrics yet: they come with the first batch that uses the state.")
    moving = metrics.groupby("metric")["value"].transform("max") > 0
    metrics = metrics[moving]
    traces = []
    for name, rows in metrics.groupby("metric", sort=True):
        label = str(name).removeprefix("rocksdb")
        if "Latency" in str(name):
            traces.append(_line(rows["batch_id"], rows["value"], f"{label} (ms)", xaxis="x2", yaxis="y2"))
        elif any(part in str(name) for part in STORE_BYTES):
            traces.append(_line(rows["batch_id"], rows["value"], f"{label} (bytes)", yaxis="y"))
    if not traces:
        return empty_figure(title, "The state store reported only zeros so far.")
    return _batch_figure(
        title, "bytes", None, traces,
        height=460,
        yaxis={"domain": [0.54, 1.0]},
        yaxis2={"title": {"text": "ms"}, "domain": [0.0, 0.46]},
        xaxis={"anchor": "y", "matches": "x2", "showticklabels": False, "title": {"text": ""}},
        xaxis2={"anchor": "y2", "title": {"text": "batch"}},
    )


def rates_figure(progress: pd.DataFrame, drawn: Drawn | None = None) -> go.Figure:
    """Input rate vs process rate (rows/s), as in the Spark UI's streaming tab."""
    title = "Input rate vs process rate"
    if not has_rows(progress, ("batch_id", "input_rows_per_second", "processed_rows_per_second")):
        return empty_figure(title)
    shown, note = _history(progress, ("input_rows_per_second", "processed_rows_per_second"), drawn)
    traces = [
        _line(shown["batch_id"], shown["input_rows_per_second"], "input rows/s"),
        _line(shown["batch_id"], shown["processed_rows_per_second"], "processed rows/s"),
    ]
    return _batch_figure(title, "rows per second", note, traces)


def input_rows_figure(progress: pd.DataFrame, drawn: Drawn | None = None) -> go.Figure:
    """Input rows per batch."""
    title = "Input rows per batch"
    if not has_rows(progress, ("batch_id", "num_input_rows")):
        return empty_figure(title)
    shown, note = _history(progress, ("num_input_rows",), drawn)
    return _batch_figure(title, "rows", note, [_bars(shown["batch_id"], shown["num_input_rows"], "input rows")])


def batch_duration_figure(
    breakdown: pd.DataFrame,
    progress: pd.DataFrame | None = None,
    *,
    colors: Mapping[str, str] | None = None,
    drawn: Drawn | None = None,
) -> go.Figure:
    """Batch duration: the ``durationMs`` phases of each batch as stacked bars, the total as a line when ``progress`` is given.

    A long history draws the phases of the batches the total's line draws; ``breakdown`` in
    batch order (as :func:`~streaming.engine.output.progress.breakdown_frame` gives it) finds them without reading it whole.
    """
    title = "Batch duration and its breakdown"
    if not has_rows(breakdown, ("batch_id", "phase", "ms")):
        return empty_figure(title)
    batches, ms, phase = breakdown["batch_id"].to_numpy(), breakdown["ms"].to_numpy(), breakdown["phase"]
    total, note = None, None
    if progress is not None and has_rows(progress, ("batch_id", "batch_duration_ms")):
        total, note = _history(progress, ("batch_duration_ms",), drawn)
    rows = None if note is None or total is None else _rows_of_batches(batches, total["batch_id"])
    if isinstance(phase.dtype, pd.CategoricalDtype):  # ProgressLog.frames: codes kept as batches arrive
        codes, phases = phase.cat.codes.to_numpy(), phase.cat.categories
        if rows is not None:
            codes = codes[rows]
    else:
        codes, phases = pd.factorize(phase.to_numpy() if rows is None else phase.to_numpy()[rows])
    if rows is not None:
        batches, ms = batches[rows], ms[rows]
    palette = dict(colors) if colors is not None else key_colors(phases)
    traces = []
    for code in sorted(range(len(phases)), key=lambda code: str(phases[code])):
        chosen = codes == code
        if chosen.any():
            name = str(phases[code])
            traces.append(_bars(batches[chosen], ms[chosen], name, marker={"color": palette.get(name)}))
    if total is not None:
        traces.append(_line(total["batch_id"], total["batch_duration_ms"], "total (triggerExecution)", line={"color": "black"}))
    return _batch_figure(title, "milliseconds", note, traces, barmode="stack")


def _rows_of_batches(batches: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Positions in ``batches`` (a long frame's batch ids) of the rows of the ``wanted`` batches (sorted); found by bisection when ``batches`` is sorted."""
    if len(batches) and not bool(np.all(batches[1:] >= batches[:-1])):
        return np.flatnonzero(np.isin(batches, wanted))
    first, last = np.searchsorted(batches, wanted, side="left"), np.searchsorted(batches, wanted, side="right")
    lengths = last - first
    starts = np.repeat(first - np.cumsum(lengths) + lengths, lengths)
    return starts + np.arange(int(lengths.sum()))


def watermark_gap_figure(progress: pd.DataFrame, drawn: Drawn | None = None, *, replayed: bool = False) -> go.Figure:
    """Global watermark gap per batch, in the unit that reads best (:func:`~streaming.charts.common.time_unit`): how far the watermark is
    behind the batch's trigger time, or, for a ``replayed`` run (files or a topic's stored records: data that may be years old, whose
    batch times say nothing about it), behind the latest event time seen so far, which it trails by the delay while it keeps up."""
    title = "Global watermark gap"
    if not has_rows(progress, ("batch_id", "watermark_gap_seconds")):
        return empty_figure(title)
    if progress["watermark_gap_seconds"].isna().all():
        return empty_figure(title, "No watermark yet: the query has none, or no batch has set it")
    if not replayed:
        shown, note = _history(progress, ("watermark_gap_seconds",), drawn)
        unit, size = time_unit(shown["watermark_gap_seconds"])
        return _batch_figure(title, f"{unit} behind batch time", note, [_line(shown["batch_id"], shown["watermark_gap_seconds"] / size, "gap")])
    latest = pd.to_datetime(progress["max_event_time"]).cummax().ffill()
    behind = ((latest - pd.to_datetime(progress["watermark"])) / pd.Timedelta(seconds=1)).to_numpy(dtype="float64")
    shown, note = _history(progress.assign(behind_latest_seconds=behind), ("behind_latest_seconds",), None)  # thinned by what it draws
    unit, size = time_unit(shown["behind_latest_seconds"])
    return _batch_figure(title, f"{unit} behind the latest event time", note, [_line(shown["batch_id"], shown["behind_latest_seconds"] / size, "gap")])


def lag_figure(progress: pd.DataFrame, drawn: Drawn | None = None) -> go.Figure:
    """How far behind its topic the query was after each batch: records behind the latest offsets, averaged over and the most of the partitions."""
    title = "Behind the topic"
    columns = ("batch_id", "offsets_behind_avg", "offsets_behind_max")
    if not has_rows(progress, columns) or progress["offsets_behind_max"].isna().all():
        return empty_figure(title, "No batch has reported its lag yet: the source says how far behind it is after each batch")
    shown, note = _history(progress, columns[1:], drawn)
    traces = [
        _line(shown["batch_id"], shown["offsets_behind_max"], "most behind (a partition)"),
        _line(shown["batch_id"], shown["offsets_behind_avg"], "average over partitions", line={"dash": "dot"}),
    ]
    return _batch_figure(title, "records behind the latest offset", note, traces)


def passed_rows_figure(table: pd.DataFrame, seconds: int = 300, colors: Mapping[str, str] | None = None) -> go.Figure:
    """A pass-through query's rows (``event_time``, ``key``): how many per second of event time and key, over the latest ``seconds`` of event time."""
    title = "Result table: rows passed through, per second of event time and key"
    if not has_rows(table, ("event_time", "key")):
        return empty_figure(title, "No rows yet: each record read shows here as a row of the result table")
    latest = table["event_time"].max()
    recent = table[table["event_time"] > latest - pd.Timedelta(seconds=seconds)]
    counts = recent.assign(second=recent["event_time"].dt.floor("s")).groupby(["second", "key"], dropna=False).size().rename("rows").reset_index()
    colors = colors or key_colors(counts["key"])
    figure = go.Figure(
        [
            go.Bar(x=group["second"], y=group["rows"], name=str(key), marker={"color": colors.get(str(key))},
                   hovertemplate=f"{key}<br>%{{x|%H:%M:%S}}<br>%{{y}} rows<extra></extra>")
            for key, group in counts.groupby("key", dropna=False)
        ]
    )
    figure.update_layout(
        title={"text": title, "subtitle": {"text": f"the latest {seconds} s of event time; {len(table):,} rows in the table"}},
        barmode="stack", xaxis_title="event time (UTC)", yaxis_title="rows", height=340,
    )
    return figure


def live_figures(
    table: pd.DataFrame,
    progress: pd.DataFrame,
    breakdown: pd.DataFrame,
    *,
    output_mode: str,
    slide: pd.Timedelta | None = None,
    measure: str = "count",
    drawn: Drawn | None = None,
    lag: bool = False,
    replayed: bool = False,
    changed_at: Sequence[int] = (),
) -> dict[str, go.Figure]:
    """Every figure of the live view for one refresh, by name: ``counts``, ``drops``, ``state``, ``rates``, ``input``, ``duration``, ``gap`` (and ``lag``, with ``lag=True``).

    ``table`` is the result table, ``progress`` and ``breakdown`` come from
    :func:`streaming.engine.output.progress.progress_frame` and :func:`~streaming.engine.output.progress.breakdown_frame`
    (or a :class:`~streaming.engine.output.progress.ProgressLog`'s ``frames``; pass its ``drawn`` too, so a long
    history is thinned from what the last refresh found rather than read whole); ``replayed`` for a replay of stored data (see
    :func:`watermark_gap_figure`); ``changed_at``, the batches from which a changed query ran, each marked on the charts over batches.
    """
    passed = "event_time" in table.columns
    figures = {
        "counts": passed_rows_figure(table) if passed else windowed_counts_figure(
            table,
            watermark=current_watermark(progress),
            output_mode=output_mode,
            colors=key_colors(table.get("key", [])),
            slide=slide,
            measure=measure,
        ),
        "drops": drops_figure(progress, drawn),
        "state": state_figure(progress, drawn),
        "rates": rates_figure(progress, drawn),
        "input": input_rows_figure(progress, drawn),
        "duration": batch_duration_figure(breakdown, progress, drawn=drawn),
        "gap": watermark_gap_figure(progress, drawn, replayed=replayed),
        **({"lag": lag_figure(progress, drawn)} if lag else {}),
    }
    for name, figure in figures.items():
        if name != "counts":
            for batch in changed_at:
                figure.add_vline(x=batch - 0.5, line={"dash": "dot", "color": "#7048e8"}, annotation_text="changed", annotation_position="top left")
    return figures
