"""A figure that a refresh redraws: drawn again in place with ``Plotly.react``, never mounted afresh.

Streamlit 1.67's ``st.plotly_chart`` names its element by the figure's JSON,
and its browser side reads a figure only when a chart mounts: every refresh
that changed a figure threw the chart away and drew a new one (Plotly's
``newPlot``: axes, labels, margins measured again). With a query running, the
Live page kept Chromium's main thread busy 97 % of the time, about one core
of a 2-core machine, 75 % of it in Plotly. :func:`live_chart` mounts a small
component once per key, and each refresh hands it the new figure, which
``Plotly.react`` draws by what changed. Chromium with the Live page's query
running (2 cores, 40 s, two runs each): 0.96 and 0.97 cores with
``st.plotly_chart``, 0.76 and 0.70 with these; a bare page of six charts
redrawn every second: 1.14 against 0.49.

The browser loads Plotly's own ``plotly.min.js``, the one of the installed
``plotly``, from the app's static files (``app/static/``; ``server.enableStaticServing``
in ``.streamlit/config.toml``): :func:`serve_plotly_js` copies it there
once per process. The component themes a figure as ``st.plotly_chart`` does
(the placeholder colours of Streamlit's template, its fonts and axes), from
the page's own theme variables, so a live chart and a still one look alike.

Charts drawn once per page view (the tuner's, Compare's) stay ``st.plotly_chart``:
they are not redrawn, and some take selections.
"""

from __future__ import annotations

import logging
import os
import shutil
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import plotly
import streamlit as st

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["PLOTLY_JS", "STATIC_FOLDER", "live_chart", "sent", "serve_plotly_js"]

LOG = logging.getLogger(__name__)

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
"""Plotly.js as the installed ``plotly`` ships it: the version its figures are written for."""
STATIC_FOLDER = Path(__file__).resolve().parents[1] / "static"
"""The folder Streamlit serves at ``app/static/``: the one beside ``app.py``. It holds ``plotly.min.js`` alone (git-ignored)."""

_JS = """
const CONFIG = {displaylogo: false, responsive: true};
const SOURCE = 'app/static/plotly.min.js';

function plotly() {
  if (!window.__streamingLabPlotly) {
    window.__streamingLabPlotly = new Promise((resolve, reject) => {
      const script = document.createElement('script');
      script.src = SOURCE;
      script.onload = () => (window.Plotly ? resolve(window.Plotly) : reject(new Error('no Plotly')));
      script.onerror = () => reject(new Error(SOURCE + ' did not load'));
      document.head.appendChild(script);
    });
  }
  return window.__streamingLabPlotly;
}

function faded(color, alpha) {
  const hex = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color);
  if (!hex) return color;
  const digits = hex[1].length === 3 ? hex[1].replace(/./g, '$&$&') : hex[1];
  const [r, g, b] = [0, 2, 4].map((at) => parseInt(digits.slice(at, at + 2), 16));
  return `rgba(${r}, ${g}, ${b}, ${alpha})`;
}

function theme(element) {
  const css = getComputedStyle(element);
  const read = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  const text = read('--st-text-color', '#31333F');
  const background = read('--st-background-color', '#FFFFFF');
  const muted = faded(text, 0.6);
  const grid = faded(text, 0.1);
  const colors = {32: read('--st-green-color', '#29b09d'), 33: read('--st-red-color', '#ff2b2b'), 34: read('--st-blue-color', '#0068c9'),
                  35: grid, 36: muted, 37: text, 38: background, 39: grid, 40: read('--st-secondary-background-color', '#F0F2F6')};
  [['--st-chart-categorical-colors', 1], ['--st-chart-sequential-colors', 11], ['--st-chart-diverging-colors', 21]].forEach(([name, first]) =>
    read(name, '').split(',').map((color) => color.trim()).filter(Boolean).forEach((color, index) => { colors[first + index] = color; }));
  return {text, background, muted, grid, colors, border: read('--st-border-color', '#D6D6D9'), font: read('--st-font', 'sans-serif')};
}

function merged(into, from) {
  for (const [name, value] of Object.entries(from)) {
    const plain = value && typeof value === 'object' && !Array.isArray(value);
    into[name] = plain ? merged(into[name] && typeof into[name] === 'object' ? into[name] : {}, value) : value;
  }
  return into;
}

function themed(text, look) {
  const figure = JSON.parse(text.replace(/#0000([0-4][0-9])/g, (placeholder, number) => look.colors[Number(number)] || placeholder));
  const layout = figure.layout = figure.layout || {};
  const template = layout.template = layout.template || {};
  const font = {family: look.font, size: 12, color: look.muted};
  // ticklabeloverflow 'allow': Plotly's default for these axes ('hide past div') measures every tick label against the page, each
  // measure forcing the page's layout; the first chart after Start spent 1.4 s in Plotly (0.35 s of it in those measures), 0.4 s without.
  // The margins automargin pushes keep the labels inside the chart all the same.
  const axis = {zerolinecolor: look.grid, gridcolor: look.grid, tickcolor: look.grid, minor: {gridcolor: look.grid},
                tickfont: {color: look.muted, size: 12}, automargin: true, ticklabeloverflow: 'allow'};
  template.layout = merged(template.layout || {}, {
    font, paper_bgcolor: look.background, plot_bgcolor: look.background, margin: {pad: 8, r: 0, l: 0},
    title: {font: {family: look.font, size: 16, color: look.text}, pad: {l: 2}, xanchor: 'left', x: 0},
    legend: {title: {font: {size: 12, color: look.muted}, side: 'top'}, valign: 'top', bordercolor: 'transparent', borderwidth: 0,
             font: {size: 12, color: look.text}},
    xaxis: {...axis, showgrid: false, zeroline: false, title: {font: {color: look.muted, size: 14}, standoff: 20}},
    yaxis: {...axis, ticklabelposition: 'outside', title: {font: {color: look.muted, size: 14}, standoff: 24}},
    hoverlabel: {bgcolor: look.background, bordercolor: look.border, font},
  });
  if (layout.title) {
    const title = typeof layout.title === 'string' ? {text: layout.title} : layout.title;
    if (title.text) layout.title = {...title, text: `<b>${title.text}</b>`};
  }
  return figure;
}

export default function ({data, parentElement}) {
  let plot = parentElement.querySelector('div.streaming-lab-chart');
  if (!plot) {
    plot = document.createElement('div');
    plot.className = 'streaming-lab-chart';
    parentElement.appendChild(plot);
  }
  const text = typeof data === 'string' ? data : new TextDecoder().decode(data);
  if (text === plot.streamingLabDrawn) return;
  plot.streamingLabDrawn = text;
  plotly().then((Plotly) => {
    if (plot.streamingLabDrawn !== text) return;  // a newer figure came while Plotly loaded: it draws
    const figure = themed(text, theme(parentElement));
    Plotly.react(plot, figure.data, figure.layout, CONFIG);
  }).catch((error) => {
    plot.textContent = 'The chart could not be drawn: ' + error.message + '. Serve the app with make run (python -m dashboard.serve).';
  });
}
"""

_COMPONENT = st.components.v2.component("streaming_lab_live_chart", js=_JS, isolate_styles=False)


@cache
def serve_plotly_js(folder: Path = STATIC_FOLDER) -> bool:
    """Put the installed ``plotly.min.js`` in ``folder`` unless the same file is there, and say whether it is.

    Written under a temporary name and renamed into place: two servers
    starting at once never serve half a file. Once per process.
    """
    target = folder / PLOTLY_JS.name
    try:
        if target.is_file() and target.stat().st_size == PLOTLY_JS.stat().st_size:
            return True
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{PLOTLY_JS.name}.{os.getpid()}"
        shutil.copyfile(PLOTLY_JS, partial)
        partial.replace(target)
    except OSError as error:
        LOG.warning("live charts cannot be drawn: %s was not copied to %s (%s)", PLOTLY_JS, folder, error)
        return False
    return True


def sent(figure: go.Figure) -> bytes:
    """What a live chart sends the browser for ``figure``: its JSON, without the figure rebuilt and validated as ``st.plotly_chart`` does."""
    return figure.to_json().encode()


def live_chart(figure: go.Figure | bytes, *, key: str) -> None:
    """Draw ``figure`` where the page is, as the chart under ``key`` (a refresh redraws that chart in place): a figure, or the JSON
    :func:`sent` makes of one, which a run's pages share (:meth:`~streaming.app.snapshot.RunSnapshot.sent`) instead of each making it."""
    serve_plotly_js()
    _COMPONENT(data=figure if isinstance(figure, bytes) else sent(figure), key=key)
