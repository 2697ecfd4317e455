"""What every figure of the product shares: colours per key, the empty figure, the rows of a long history to draw, and the figure a refresh sends.

Pure functions, no Streamlit and no Spark. Colours: :func:`key_colors` maps a
list of keys (or phases) to colours by their sorted position, so the same key
list gives every figure the same colours.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from copy import deepcopy
from functools import cache
from typing import Any

import numpy as np
import pandas as pd
import plotly.colors
import plotly.graph_objects as go
import plotly.io as pio
from _plotly_utils.utils import is_homogeneous_array, is_skipped_key, plotlyjsShortTypes, to_typed_array_spec

from ..engine.output.extremes import Extremes

__all__ = [
    "MAX_POINTS", "NO_BATCHES", "PALETTE", "TIME_UNITS", "WATERMARK_COLOR", "RefreshFigure", "current_watermark", "drawn_rows", "empty_figure", "has_rows",
    "key_colors", "time_unit",
]

NO_BATCHES = "No batches yet"
PALETTE: tuple[str, ...] = tuple(plotly.colors.qualitative.Plotly) + tuple(plotly.colors.qualitative.Dark24)
WATERMARK_COLOR = "#d62728"
MAX_POINTS = 600
"""A history longer than this many rows is drawn thinned, keeping its extremes (:func:`drawn_rows`)."""

class RefreshFigure(go.Figure):
    """A figure redrawn on every refresh: built in one go from plain dicts, unvalidated, and holding no template of its own.

    Plotly gives each new figure a copy of the default template (Streamlit's,
    which the page's theme fills in), and ``to_dict``, which ``st.plotly_chart``
    and ``to_json`` call, copies and walks it again: for the live view's seven
    small figures that was 30-40 % of a refresh, the data itself the rest. Here
    ``to_dict`` adds the default template as one dict made once per template;
    every figure shares it, so callers read what ``to_dict`` returns and do not
    change it. Validation is left to the tests, which rebuild these figures
    with it on.

    Plotly 6 writes a numeric array as a typed array (base64 of its bytes), and
    finds each array's type through narwhals, about 0.1 ms an array: three
    quarters of the conversion of the live view's seven figures to JSON. These
    figures hold numpy arrays, which :func:`typed_array` writes by Plotly's rule
    without the detour (the tests hold it to Plotly's): p50 5.3 → 2.6 ms a refresh.
    """

    def __init__(self, data: Sequence[dict[str, Any]] | dict[str, Any] | None = None, layout: dict[str, Any] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("_validate", False)
        super().__init__(data, layout, **kwargs)  # the whole figure as one dict in ``data`` too: plotly's copy and pickle make it so

    def _initialize_layout_template(self) -> None:
        """No template object: :meth:`to_dict` adds the default one."""

    def to_dict(self) -> dict[str, Any]:
        figure: dict[str, Any] = {"data": deepcopy(self._data), "layout": deepcopy(self._layout)}
        frames = deepcopy([frame._props for frame in self._frame_objs])
        if frames:
            figure["frames"] = frames
        _typed_arrays(figure)
        default = pio.templates.default
        if "template" not in figure["layout"] and default is not None:
            figure["layout"]["template"] = _template(default) if isinstance(default, str) else default.to_plotly_json()
        return figure


_NARROWER = {"int64": ("int8", "int16", "int32"), "uint64": ("uint8", "uint16", "uint32")}
"""Plotly.js reads no 64-bit integers: such an array is written in the narrowest of these that holds it, or as plain numbers."""


def typed_array(array: np.ndarray) -> np.ndarray | dict[str, str]:
    """A numpy array as Plotly 6's ``to_dict`` writes it: a numeric one as a typed array (``{"dtype", "bdata"}``), any other as it is."""
    dtype = str(array.dtype)
    if array.size == 0 or (dtype not in plotlyjsShortTypes and dtype not in _NARROWER):
        return array
    if dtype in _NARROWER:
        low, high = array.min(), array.max()
        fitting = next((narrower for narrower in _NARROWER[dtype] if np.iinfo(narrower).min <= low and high <= np.iinfo(narrower).max), None)
        if fitting is None:
            return array
        array = array.astype(fitting)
    spec = {"dtype": plotlyjsShortTypes[str(array.dtype)], "bdata": base64.b64encode(array.tobytes()).decode("ascii")}
    if array.ndim > 1:
        spec["shape"] = str(array.shape)[1:-1]
    return spec


def _typed_arrays(value: object) -> None:
    """Plotly's ``convert_to_base64`` with the numpy arrays written by :func:`typed_array`, in place."""
    if isinstance(value, dict):
        for key, item in value.items():
            if is_skipped_key(key):
                continue
            if isinstance(item, np.ndarray):
                value[key] = typed_array(item)
            elif is_homogeneous_array(item):
                value[key] = to_typed_array_spec(item)
            else:
                _typed_arrays(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _typed_arrays(item)


@cache
def _template(name: str) -> dict[str, Any]:
    template: dict[str, Any] = pio.templates[name].to_plotly_json()
    return template


def key_colors(keys: Iterable[object], palette: Sequence[str] = PALETTE) -> dict[str, str]:
    """Colour of each distinct key, by its position in the sorted key list (cycling through ``palette``).

    The order of ``keys`` and repeated keys do not matter: the same set of keys
    always gets the same colours.
    """
    ordered = sorted({str(key) for key in (pd.unique(keys) if isinstance(keys, pd.Series) else keys)})
    return {key: palette[index % len(palette)] for index, key in enumerate(ordered)}


TIME_UNITS: tuple[tuple[str, float], ...] = (("days", 86_400.0), ("hours", 3_600.0), ("minutes", 60.0), ("seconds", 1.0))
"""Units an axis of durations is drawn in, largest first, with their length in seconds."""


def time_unit(seconds: Iterable[float]) -> tuple[str, float]:
    """``(name, seconds in one)`` of the unit an axis of these durations reads best in: the largest of :data:`TIME_UNITS` at least twice over.

    ``[30, 7200]`` → ``("hours", 3600.0)``; NaNs are ignored; only zeros or none → seconds.
    """
    largest = max((abs(float(value)) for value in seconds if value == value), default=0.0)
    return next(((name, size) for name, size in TIME_UNITS if largest >= 2 * size), TIME_UNITS[-1])


def percent_tickformat(values: Iterable[float | None]) -> str:
    """A percent axis's tick format with as many decimals as the values' span needs: ``.0%`` over 0.95 to 1.0 gives ticks that all read
    "99%" and "100%"; a span under 5 points gets one decimal, under half a point two."""
    shown = [float(value) for value in values if value is not None and value == value]
    span = max(shown) - min(shown) if shown else 1.0
    return ".0%" if span >= 0.05 else ".1%" if span >= 0.005 else ".2%"


def empty_figure(title: str, message: str = NO_BATCHES) -> go.Figure:
    """A valid figure without data: ``title`` and a centred ``message`` annotation."""
    figure = go.Figure()
    figure.update_layout(title=title, xaxis={"visible": False}, yaxis={"visible": False}, height=320)
    figure.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False, font={"size": 15})
    return figure


def has_rows(frame: pd.DataFrame, columns: Iterable[str]) -> bool:
    """True when ``frame`` has rows and every one of ``columns``."""
    return not frame.empty and all(column in frame.columns for column in columns)


def current_watermark(progress: pd.DataFrame) -> pd.Timestamp | None:
    """The watermark of the latest batch that has one, or ``None`` (no watermark, or none set yet)."""
    if "watermark" not in progress.columns or progress.empty:
        return None
    column = progress["watermark"]
    marks = column.to_numpy("datetime64[ns]") if column.dtype.kind == "M" else pd.to_datetime(column).to_numpy("datetime64[ns]")
    set_marks = marks[~np.isnat(marks)]
    return None if len(set_marks) == 0 else pd.Timestamp(set_marks[-1])


def drawn_rows(frame: pd.DataFrame, columns: Sequence[str], max_points: int = MAX_POINTS) -> np.ndarray:
    """Positions of the rows of ``frame`` (in its order) a chart of ``columns`` draws: about ``max_points``, keeping every extreme.

    The rule is :class:`~streaming.engine.output.extremes.Extremes`: the first and last
    row, and from each stretch of consecutive rows the lowest and highest row of
    each column, so a spike (a slow batch, a burst of dropped rows) survives,
    whatever its length. A frame of at most ``max_points`` rows is drawn whole.
    A live query's progress log finds the same rows batch by batch
    (:meth:`~streaming.engine.output.progress.ProgressLog.drawn`).
    """
    if len(frame) <= max_points or not columns:
        return np.arange(len(frame))
    return Extremes(len(columns), max_points).positions([frame[column].to_numpy() for column in columns])
