"""Compare in SQL: 2-4 of your own queries over the same source, each replayed to its end and measured against the exact answer of its own text.

What a comparison runs and measures lives in :func:`streaming.analysis.sql_tune.compare_sql`;
this module draws the queries (the first in the SQL editor, with its views; the
others over the same views, each checked as it is typed), runs the comparison
as a background job (progress, Cancel) and draws its answer.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from streaming.analysis.sql_tune import MAX_COMPARED, MIN_COMPARED, SqlComparison, compare_sql
from streaming.charts.sql_tune import sql_compare_figure
from streaming.engine.data.feeds import feed_names
from streaming.engine.durations import format_duration
from streaming.engine.errors import ConfigError
from streaming.engine.sql import SqlError, SqlQuery

from . import live, shared
from .jobs import Job, job_controls, start_job
from .shared import KEPT
from .sql import checked, show_error, sql_box, sql_editor, written_until_edited

__all__ = ["SQL_COMPARE_JOB", "sql_comparison"]

SQL_COMPARE_JOB = "cmp_sql_job"


@dataclass(frozen=True)
class SqlCompareInputs:
    """What a SQL comparison runs: the queries, over the same views, replayed under query 1's arrival rule (the others take it)."""

    queries: tuple[SqlQuery, ...]

    @property
    def recall(self) -> tuple:
        return ("sql", self.queries)


def sql_comparison(ready: bool) -> None:
    """The SQL mode of Compare: the source as the view(s), the first query in the editor, the others beside it, Run, and the answer."""
    st.caption(
        "Each query is replayed to the end of its data (micro-batch *i* reads file *i* of each streamed view) and its result compared row by row "
        "with the exact answer of its own text (the same SQL over every row at once, no watermark): a different window, grouping, aggregate or "
        "WATERMARK delay side by side, with the rows each loses and the state each keeps."
    )
    kind, params = live.source_widgets(feed_names())
    try:
        source = live.build_source(kind, params)
    except ConfigError as err:
        st.error(f"Cannot read this source: {err}")
        return
    count = int(st.number_input("Queries", min_value=MIN_COMPARED, max_value=MAX_COMPARED, value=MIN_COMPARED, step=1, key="cmpsql_count", **KEPT))
    columns = st.columns(count)
    with columns[0], st.container(border=True):
        st.markdown("**Query 1**")
        first, facts = sql_editor(source, ready, "cmpsql")
    queries = [first] if first is not None and facts is not None else []
    for number, column in enumerate(columns[1:], start=2):
        with column, st.container(border=True):
            st.markdown(f"**Query {number}**")
            if first is None:
                st.caption("Over the views of query 1, once it reads.")
                continue
            key = f"cmpsql_{number}"
            written_until_edited(key, first.text)  # query 1's text, followed (its data changed, it was edited) until this one is edited
            text = st.text_area("SQL", key=key, height=220, help="Over the same views as query 1; checked as you type (after a pause of 0.1 s)")
            sql_box(key)
            if not ready:
                continue
            try:
                query = first.with_changes(text=text)
                checked(query.views, text, f"{key}_verdict")
                st.success("Ready to compare.")
                queries.append(query)
            except SqlError as err:
                show_error(text, err)
            except ConfigError as err:
                st.error(f"Cannot run this query: {err}")
    inputs = None
    if len(queries) == count:
        try:
            inputs = SqlCompareInputs(tuple(queries))  # each replayed to its end, under the arrival rule chosen with query 1
        except ConfigError as err:
            st.error(f"Cannot compare these queries: {err}")
    job_controls(
        SQL_COMPARE_JOB, "Run comparison", "cmpsql_run", ready=ready and inputs is not None, start=lambda: _start(inputs),
        render=_results, idle_text="Write the queries and press **Run comparison**.", help_text="Replays each query on Spark, in the background",
        recall=None if inputs is None else inputs.recall,
    )


def _start(inputs: SqlCompareInputs | None) -> None:
    if inputs is None:
        return
    registry = shared.get_registry()

    def work(job: Job) -> SqlComparison:
        return compare_sql(registry, inputs.queries, cancel=job.cancel, progress=lambda done, total: job.report(f"{done} of {total} queries replayed"))

    start_job(SQL_COMPARE_JOB, f"Comparison of {len(inputs.queries)} SQL queries", inputs, work, inputs.recall)


def _results(job: Job) -> None:
    comparison: SqlComparison = job.result
    st.caption(f"{len(comparison.points)} queries replayed one after another in {comparison.wall_seconds:.0f} s.")
    st.plotly_chart(sql_compare_figure(comparison), key="cmpsql_figure")
    rows = [
        {
            "query": label, "watermark delays": ", ".join(format_duration(delay) for delay in point.delays_ms) or "none", "completeness": point.completeness,
            "exact rows": point.exact, "matched": point.matched, "different": point.different, "missing": point.missing, "extra": point.extra,
            "dropped (Spark)": point.rows_dropped_by_watermark, "peak state rows": point.peak_state_rows, "mean state rows": round(point.mean_state_rows, 1),
            "batches": point.batches,
        }
        for label, point in zip(comparison.labels, comparison.points)
    ]
    st.dataframe(pd.DataFrame(rows), hide_index=True, column_config={"completeness": st.column_config.NumberColumn(format="percent")}, key="cmpsql_table")
    st.caption(
        "*different* rows have an exact row's grouping with other values (late rows dropped from them), *missing* rows were never emitted, *extra* "
        "rows are not in the exact answer (an append run's rows of a window it later had more of, say)."
    )
