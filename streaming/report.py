"""Results as one self-contained HTML file to share: a stepped replay (its settings, figure and every batch told), or any page's figures and tables.

The file embeds Plotly's JavaScript once and everything else inline, so it
opens in a browser with no server and no network. Text from the data (keys,
captions) is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go
import plotly.io

from .analysis.explain import Step, result_after
from .charts.walkthrough import steps_figure
from .engine.output.results import stamp
from .engine.query.config import QueryConfig

__all__ = ["CHANGE_COLOURS", "LATE", "ReportRun", "change_colour", "clock", "figures_report", "settings_text", "spans_days", "steps_report"]

CHANGE_COLOURS = {"added": "#d8f3dc", "updated": "#fff3bf", "emitted": "#d0ebff"}
"""Row colours by what a batch did to a result row, as the guide's result-table figures highlight the rows a trigger changed."""
LATE = "#ffe3e3"
"""The colour of a row at or behind the watermark, or dropped."""
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1200px; color: #212529; }
.caption { font-size: 1.15rem; line-height: 1.5; margin: 0.5rem 0 1rem 0; }
table { border-collapse: collapse; margin: 0.3rem 0 1rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #dee2e6; padding: 0.2rem 0.5rem; text-align: left; }
.runs { display: flex; gap: 2rem; } .runs > div { flex: 1; min-width: 0; }
section { border-top: 1px solid #dee2e6; padding-top: 0.5rem; }
pre { background: #f8f9fa; border: 1px solid #dee2e6; padding: 0.5rem; overflow-x: auto; font-size: 0.85rem; }
"""


@dataclass(frozen=True)
class ReportRun:
    """One stepped run in a report: its query, its steps told, and a label when runs stand side by side."""

    config: QueryConfig
    steps: Sequence[Step]
    label: str | None = None


def change_colour(row: pd.Series) -> str:
    """A result row's colour by the change a batch made to it (none for a row it left as it was)."""
    return CHANGE_COLOURS.get(str(row.get("change", "")), "")


def _table(frame: pd.DataFrame, colour_of=None) -> str:
    if frame.empty:
        return "<p><em>none</em></p>"
    head = "".join(f"<th>{html.escape(str(name))}</th>" for name in frame.columns)
    body = []
    for _, row in frame.iterrows():
        colour = colour_of(row) if colour_of else ""
        style = f' style="background:{colour}"' if colour else ""
        cells = "".join(f"<td>{html.escape(_cell(value))}</td>" for value in row)
        body.append(f"<tr{style}>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _cell(value) -> str:
    if not isinstance(value, list | tuple) and pd.isna(value):
        return ""
    if isinstance(value, pd.Timestamp):
        return stamp(value) or ""
    if isinstance(value, list | tuple):
        return ", ".join(f"{clock(start)}–{clock(end)}" if isinstance(start, pd.Timestamp) else str(start) for start, end in value)
    return str(value)


def clock(value: pd.Timestamp, *, dated: bool = False) -> str:
    """``value``'s time of day, ``HH:MM:SS``, with milliseconds when it has some, after its date when ``dated``; ``none`` for ``NaT``."""
    if pd.isna(value):
        return "none"
    return f"{value:%Y-%m-%d }" * dated + f"{value:%H:%M:%S}" + (f".{value.microsecond // 1000:03d}" if value.microsecond >= 1000 else "")


def spans_days(values: Iterable[pd.Timestamp | None]) -> bool:
    """Whether ``values`` fall on more than one date: a page then writes each with its date (:func:`clock`), since data may span days and a
    time of day alone would hide which."""
    return len({value.date() for value in values if value is not None and not pd.isna(value)}) > 1


def settings_text(config: QueryConfig) -> str:
    """A query's windows, watermark, output mode and aggregate in one line."""
    windows = f"session gap {config.session_gap}" if config.session_gap else f"window {config.window}" + (f", slide {config.slide}" if config.slide else "")
    parts = [windows, f"watermark {config.watermark or 'none'}", f"{config.output_mode} mode", f"aggregate {config.aggregation}"]
    if config.deduplicate:
        parts.append("deduplicated by id")
    return "; ".join(parts)


def _batch(run: ReportRun, index: int) -> str:
    step = run.steps[index]
    label = f"<h4>{html.escape(run.label)}</h4>" if run.label else ""
    return (
        f"<div>{label}<p class='caption'>{html.escape(step.caption)}</p>"
        f"<p>rows read {step.input_rows} · rows in state {step.state_rows} · watermark {_cell(step.watermark_before) or 'none'} → {_cell(step.watermark_after) or 'none'}</p>"
        + ("<h5>Rows read</h5>" + _table(step.rows, lambda row: LATE if row["late"] else "") if len(step.rows) else "")
        + "<h5>What the sink received</h5>" + _table(step.output, change_colour)
        + "<h5>The result table after this batch</h5>" + _table(result_after(run.steps, index, run.config.output_mode), change_colour)
        + ("<h5>Rows the watermark dropped</h5>" + _table(step.dropped, lambda row: LATE) if len(step.dropped) else "")
        + ("<h5>Windows the state let go of</h5>" + _table(step.evicted) if len(step.evicted) else "")
        + "</div>"
    )


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>"
    )


def _figures(figures: Sequence[go.Figure]) -> list[str]:
    """Each figure as a ``div``; Plotly's JavaScript is embedded with the first."""
    return [plotly.io.to_html(figure, include_plotlyjs=number == 0, full_html=False) for number, figure in enumerate(figures)]


def figures_report(
    title: str, paragraphs: Sequence[str], figures: Sequence[go.Figure], tables: Sequence[tuple[str, pd.DataFrame]] = (),
    texts: Sequence[tuple[str, str]] = (),
) -> str:
    """A page's results as HTML text: ``title``, its ``paragraphs`` (plain text), each ``(caption, text)`` of ``texts`` as written (a
    query, a program), its figures side by side, then each ``(caption, frame)`` table."""
    text = "".join(f"<p>{html.escape(paragraph)}</p>" for paragraph in paragraphs)
    written = "".join(f"<h3>{html.escape(caption)}</h3><pre><code>{html.escape(body)}</code></pre>" for caption, body in texts)
    drawn = "".join(f"<div>{figure}</div>" for figure in _figures(figures))
    shown = "".join(f"<h3>{html.escape(caption)}</h3>{_table(frame)}" for caption, frame in tables)
    return _page(title, f"{text}{written}<div class='runs'>{drawn}</div>{shown}")


def steps_report(title: str, summary: str, runs: Sequence[ReportRun]) -> str:
    """A stepped replay as HTML text: ``title``, ``summary``, each run's settings and figure, then every batch (runs side by side)."""
    if not runs:
        raise ValueError("runs: a report needs at least one run")
    figures = _figures([steps_figure(run.steps, title=run.label or "Micro-batch by micro-batch") for run in runs])
    settings = "".join(f"<li>{html.escape(run.label + ': ' if run.label else '')}{html.escape(settings_text(run.config))}</li>" for run in runs)
    sections = []
    for index in range(max(len(run.steps) for run in runs)):
        cells = "".join(_batch(run, index) if index < len(run.steps) else "<div></div>" for run in runs)
        batch = next(run.steps[index].batch_id for run in runs if index < len(run.steps))
        sections.append(f"<section><h3>Micro-batch {batch}</h3><div class='runs'>{cells}</div></section>")
    body = f"<p>{html.escape(summary)}</p><ul>{settings}</ul><div class='runs'>{''.join(f'<div>{figure}</div>' for figure in figures)}</div>{''.join(sections)}"
    return _page(title, body)
