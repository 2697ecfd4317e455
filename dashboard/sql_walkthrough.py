"""Step through in SQL: your own query over your data's view, run one micro-batch at a time, each batch told by Spark's own numbers.

The data is chosen as for the form's walkthrough (:func:`~dashboard.walkthrough.own_source`), the query written
in the SQL editor (:func:`~dashboard.sql.sql_editor`); the walkthrough itself is the form's
(:class:`~streaming.engine.run.walkthrough.Walkthrough`, held and moved by the same buttons). Each batch shows
what Spark reported (rows read, the watermark it ran with, each stateful operator's state and drops), what the sink
received and the result table after it, folded as the output mode keeps it
(:meth:`~streaming.engine.sql.table.SqlTable.after`). The event-level *why was this row dropped* is the Live page's.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd
import streamlit as st

from streaming.engine.run.walkthrough import Walkthrough, make_room
from streaming.engine.sql.replay import tell_batches
from streaming.report import change_colour, clock, figures_report, spans_days

from .sql import OPERATOR_COLUMNS, sql_editor
from .walkthrough import HeldWalks, draw_table, held, hold, own_source, styled

if TYPE_CHECKING:
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.sql import SqlQuery

__all__ = ["SqlWalks", "batch_view", "opener", "own_query", "report_button", "steps_report"]

PREFIX = "scn"


@dataclass
class SqlWalks(HeldWalks):
    """One SQL query's walkthrough, and its batches told (made again only when Spark ran more)."""

    query: SqlQuery
    walks: list[Walkthrough[SqlQuery]]
    _told: tuple[int, list[dict[str, Any]]] = field(default=(-1, []))

    @property
    def subject(self) -> SqlQuery:
        return self.query

    @classmethod
    def start(cls, query: SqlQuery, registry: QueryRegistry) -> SqlWalks:
        """Start ``query``'s walkthrough; Spark's refusal of it in plain words, at the line and column it names (:meth:`SqlQuery.refusal`)."""
        from pyspark.errors import PySparkException

        make_room(registry, 1)
        try:
            return cls(query, [Walkthrough(registry, query)])
        except PySparkException as err:
            raise query.refusal(err) from None

    def steps(self) -> list[dict[str, Any]]:
        """Every batch run so far, told (:func:`~streaming.engine.sql.replay.tell_batches`)."""
        summaries = self.walks[0].summaries()
        if self._told[0] != len(summaries):
            self._told = (len(summaries), tell_batches(summaries))
        return self._told[1]

    def after(self, batch_id: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        """What batch ``batch_id`` handed the sink, and the result table after it (:meth:`~streaming.engine.sql.table.SqlTable.after`)."""
        return self.walks[0].run.table.after(batch_id)


def own_query(ready: bool) -> SqlQuery | None:
    """Your data (:func:`~dashboard.walkthrough.own_source`, one micro-batch a step) as a view, and your SQL over it; ``None`` until the text passes its checks."""
    source, _, _ = own_source(PREFIX, aggregates=False)
    query, verdict = sql_editor(source, ready, PREFIX, arrival=False)
    return query if verdict is not None else None


def opener(query: SqlQuery, registry: QueryRegistry) -> Callable[[], SqlWalks]:
    """What *Next batch* and *Run to end* call for ``query``: its walkthrough held, or started."""
    return lambda: held(query, registry) or hold(lambda: SqlWalks.start(query, registry))


def batch_view(walks: SqlWalks, view: int) -> None:
    """Batch ``view`` (from 1): the caption, the metrics, each stateful operator, what the sink received and the result table after it."""
    steps = walks.steps()
    if view == 0 or not steps:
        st.info("Nothing has run yet. Press **Next batch** to hand Spark the first micro-batch's data.")
        return
    step = steps[min(view, len(steps)) - 1]
    dated = spans_days([pd.Timestamp(each["watermark"]) for each in steps if each["watermark"]])
    st.markdown(f"<div class='scn-caption'>{html.escape(step['caption'])}</div>", unsafe_allow_html=True)
    operators = step["operators"]
    read, state, dropped, watermark = st.columns(4)
    read.metric("Rows read", step["input_rows"])
    state.metric("Rows in state", sum(operator["state_rows"] for operator in operators))
    dropped.metric("Dropped by the watermark", step["rows_dropped_by_watermark"], help="Summed over the stateful operators, as Spark counts them")
    watermark.metric(
        "Watermark it ran with", clock(pd.Timestamp(step["watermark"]), dated=dated) if step["watermark"] else "none yet",
        help="Rows at or behind it are late for the operators that read the event-time column",
    )
    if operators:
        st.caption("Each stateful operator, in Spark's order")
        draw_table(styled(pd.DataFrame(operators).rename(columns=OPERATOR_COLUMNS), lambda row: ""))
    emitted, result = walks.after(int(step["batch_id"]))
    st.caption("What the sink received (green: added, yellow: updated, blue: emitted)")
    draw_table(styled(emitted, change_colour))
    st.caption(f"The result table after this batch, as {walks.query.output_mode} mode keeps it")
    draw_table(styled(result, change_colour))
    st.caption("For SQL these are Spark's own numbers, per operator; run the query on the Live page to see why each row was dropped.")


def steps_report(walks: SqlWalks) -> str:
    """The walkthrough as one HTML file that opens without a server: the views, the query, every batch run so far told, and the result
    table after the last."""
    query, steps = walks.query, walks.steps()
    views = "; ".join(f"{view.name}: {view.source.label}" + (" (static)" if view.static else "") for view in query.views)
    told = pd.DataFrame([
        {
            "batch": step["batch_id"], "rows read": step["input_rows"], "watermark it ran with": step["watermark"] or "none yet",
            "dropped by the watermark": step["rows_dropped_by_watermark"], "rows in state": sum(operator["state_rows"] for operator in step["operators"]),
            "what happened": step["caption"],
        }
        for step in steps
    ])
    result = walks.after(int(steps[-1]["batch_id"]))[1] if steps else pd.DataFrame()
    walk = walks.walks[0]
    return figures_report(
        "Step through in SQL",
        (f"Views: {views}. {query.output_mode.capitalize()} mode, arrival quiet: each batch's data arrives once Spark has run the one before.",
         f"{len(steps)} micro-batches run (no-data batches included), {walk.handed} of {walk.steps} {walk.unit} handed to Spark."),
        [], [("Every batch run so far", told), (f"The result table after the last batch, as {query.output_mode} mode keeps it", result)],
        [("Your query", query.text)],
    )


def report_button(walks: SqlWalks) -> None:
    """Download the walkthrough (:func:`steps_report`, made when pressed) once a batch has run."""
    if not walks.batches:
        return
    st.download_button(
        "Download report (HTML)", lambda: steps_report(walks), file_name="step-through-sql.html", mime="text/html", key="scn_sql_report",
        on_click="ignore", icon=":material/download:", help=f"Every batch run so far ({walks.batches}), told, with your query and the result table",
    )

