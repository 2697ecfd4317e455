"""Watermark tuner in SQL: the delays of your query's WATERMARK clause(s) swept, each replayed on Spark and measured per result row.

What a sweep is and how it is measured lives in :mod:`streaming.analysis.sql_tune`;
this module draws the inputs, runs the sweep as a background job (progress,
Cancel) and draws its answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from streaming.analysis.sql_tune import SqlTuning, tune_sql
from streaming.app.tune import sql_points
from streaming.charts.sql_tune import sql_heatmap, sql_sweep_figure
from streaming.engine.durations import format_duration
from streaming.engine.errors import ConfigError
from streaming.engine.sources import Source
from streaming.engine.sql import SqlQuery
from streaming.engine.sql.rewrite import WatermarkClause

from . import shared
from .jobs import Job, job_controls, start_job
from .sql import sql_editor

__all__ = ["MAX_POINTS", "SQL_TUNE_JOB", "sql_tuner"]

SQL_TUNE_JOB = "tune_sql_job"
MAX_POINTS = 16
"""Points of one sweep at most: each is a replay on Spark."""
DEFAULT_DELAYS = "0 seconds, 30 seconds, 1 minute, 5 minutes"


@dataclass(frozen=True)
class SqlSweep:
    """What a SQL sweep runs: the query, its points (a delay per clause) and the target."""

    query: SqlQuery
    points: tuple[tuple[int, ...], ...]
    target: float


def sql_tuner(source: Source, ready: bool) -> None:
    """The tuner's SQL mode: the editor, the delays, the target, which clause to sweep, Run, and the answer."""
    left, right = st.columns([3, 2])
    with left:
        query, facts = sql_editor(source, ready, "tune")
    with right:
        delays = st.text_input("Watermark delays (comma-separated)", value=DEFAULT_DELAYS, key="tune_sql_delays",
                               help="Each delay is written into the WATERMARK clause and the query replayed on Spark")
        target = st.number_input("Completeness target", min_value=0.001, max_value=1.0, value=0.99, step=0.01, format="%.3f", key="tune_sql_target")
        which = None
        if facts is not None and len(facts.watermarks) > 1:
            options = ["both (a heat map)", *[f"{index + 1}: WATERMARK {mark.column}" for index, mark in enumerate(facts.watermarks)]]
            choice = st.selectbox("Sweep", options, key="tune_sql_which", help="Both clauses over the grid of the delays, or one with the others as written")
            which = None if choice == options[0] else options.index(choice)
    sweep = None
    if query is not None and facts is not None:
        try:
            clauses = [WatermarkClause(0, 0, mark.column, mark.delay_ms) for mark in facts.watermarks]
            sweep = SqlSweep(query, tuple(sql_points(clauses, delays, which, max_points=MAX_POINTS)), float(target))
        except ConfigError as err:
            st.error(f"Cannot sweep: {err}")
    job_controls(
        SQL_TUNE_JOB, "Run tuner", "tune_sql_run", ready=ready and sweep is not None, start=lambda: _start(sweep),
        render=_results, idle_text="Write a query with a WATERMARK clause, choose the delays and press **Run tuner**.",
        help_text="Replays the query on Spark once per point, in the background",
    )


def _start(sweep: SqlSweep | None) -> None:
    if sweep is None:
        return
    registry = shared.get_registry()

    def work(job: Job) -> SqlTuning:
        return tune_sql(registry, sweep.query, sweep.points, target=sweep.target, cancel=job.cancel,
                        progress=lambda done, total: job.report(f"{done} of {total} points replayed"))

    start_job(SQL_TUNE_JOB, "SQL sweep", sweep, work)


def _results(job: Job) -> None:
    tuning: SqlTuning = job.result
    best = tuning.recommended
    if best is None:
        st.warning(f"No point reaches {tuning.target:.1%}: the best is {max((point.completeness or 0) for point in tuning.points):.1%}. Try longer delays.")
    else:
        st.success(
            f"Recommended: {best.label} — the smallest delay{'s' if len(best.delays_ms) > 1 else ''} reaching {tuning.target:.1%} "
            f"({best.matched} of {best.exact} result rows exact), replayed on Spark; peak state {best.peak_state_rows} rows."
        )
    figure = sql_heatmap(tuning) if len(tuning.clauses) > 1 and len({point.delays_ms for point in tuning.points}) > 1 and _both_swept(tuning) else sql_sweep_figure(tuning)
    st.plotly_chart(figure, key="tune_sql_figure")
    rows = [
        {
            "delays": point.label, "completeness": point.completeness, "exact rows": point.exact, "matched": point.matched, "different": point.different,
            "missing": point.missing, "dropped (Spark)": point.rows_dropped_by_watermark, "peak state rows": point.peak_state_rows,
            "mean state rows": round(point.mean_state_rows, 1), "batches": point.batches, "recommended": point is best,
        }
        for point in tuning.points
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config={"completeness": st.column_config.NumberColumn(format="percent")}, key="tune_sql_table")
    st.caption(
        "Each row of the result is compared with the exact answer (the same SQL over every row at once): *different* rows have the exact row's grouping "
        "with other values (late rows dropped from them), *missing* rows were never emitted. Clauses: "
        + "; ".join(f"WATERMARK {clause.column} (written {format_duration(clause.delay_ms)})" for clause in tuning.clauses)
    )


def _both_swept(tuning: SqlTuning) -> bool:
    return all(len({point.delays_ms[index] for point in tuning.points}) > 1 for index in range(2))
