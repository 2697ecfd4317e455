"""Why was it dropped: every event a run has read, judged by the watermark of the micro-batch that read it, for the form's query and for SQL.

What judges a run's events, and why some runs' are not judged, is the
snapshot's (:meth:`~streaming.app.snapshot.RunSnapshot.judgement`); this module
reads the events (a feed's files, or a topic's records read again) and draws the
numbers, the two charts and the list of dropped events.
"""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import streamlit as st

from streaming.analysis.spreadsheet import neutralise_formulas
from streaming.app.snapshot import LatenessView, RunSnapshot, topic_events
from streaming.charts import lateness as lateness_charts
from streaming.engine.data.feeds import feed_events
from streaming.engine.durations import human_duration
from streaming.engine.errors import first_line
from streaming.engine.run.query import Run
from streaming.engine.sources import StreamSource

from .data import events_of
from .live_chart import live_chart
from .shared import get_registry
from .shown import Shown

__all__ = ["DROPPED_ROWS", "lateness_view"]

DROPPED_ROWS = 2000
"""The dropped events listed on the page (all of them are downloaded)."""


@st.cache_data(max_entries=8, show_spinner=False)
def _feed_events(folder: str) -> pd.DataFrame:
    return feed_events(Path(folder))


@st.cache_data(max_entries=4, show_spinner="Reading the records the query has read…")
def _topic_events(run_key: str, last_batch: int, _run: Run) -> pd.DataFrame:
    """The records ``_run`` has read up to ``last_batch``, read again only when it has read more; cached by the run's own random key,
    not its name, which another owner may take once it is deleted."""
    return topic_events(get_registry().spark, _run)


def _events(run: Run, source: StreamSource, shown: Shown) -> pd.DataFrame | None:
    """Every event ``run`` has read from ``source``, with the micro-batch that read it; ``None`` until a topic's records are asked for,
    which only its owner's page asks (a Spark job whenever a batch has read more)."""
    feed = source.as_feed
    if feed is not None:
        return _feed_events(str(feed.path)) if feed.sample_layout else events_of(feed)
    if not shown.owned:
        st.caption("Each record is judged on its owner's page, which reads the topic again.")
        return None
    if not st.toggle("Judge every record the query has read", key="lab_judge_topic",
                     help="Reads the records of the offsets the query's batches covered again, with a Spark batch query, whenever a batch has read more"):
        return None
    try:
        return _topic_events(run.key, run.log.last_batch_id, run)
    except Exception as err:  # noqa: BLE001 - the brokers gone, or records deleted since: shown, the next refresh tries again
        st.info(f"The topic's records cannot be read now: {first_line(err)}")
        return None


def lateness_view(snap: RunSnapshot, shown: Shown) -> None:
    """Why was it dropped: every event of the replayed feed against the watermark that judged it, in numbers and charts; on the owner's
    page (``shown``) also the dropped events themselves, listed and downloaded."""
    st.subheader("Why was it dropped?")
    judgement = snap.judgement()
    if isinstance(judgement, str):
        st.caption(judgement)
        return
    run, source, deduplicate = snap.run, judgement.source, judgement.deduplicate
    events = _events(run, source, shown)
    if events is None:
        return
    judged = snap.lateness(events)
    numbers = judged.numbers
    columns = st.columns(4)
    columns[0].metric("Events so far", numbers["events_total"])
    columns[1].metric("Not counted", numbers["not_counted"], help="In none of their windows: every window had closed")
    columns[2].metric("Partly counted", numbers["partly_counted"], help="Sliding windows: counted in only some of their windows")
    columns[3].metric("Spark: rows dropped", numbers["rows_dropped_by_watermark"], help="numRowsDroppedByWatermark, summed")
    st.caption(numbers["explanation"])
    if judged.behind_arrival is not None:
        events_behind, (p50, p95, p99), most = judged.behind_arrival
        where = "their record timestamps" if source.arrival == "record" else "their arrival column"
        st.caption(
            f"Behind their arrival ({where}, arrival − event time) over {events_behind:,} events: p50 {human_duration(p50)}, "
            f"p95 {human_duration(p95)}, p99 {human_duration(p99)}, max {human_duration(most)}."
        )
    if deduplicate:
        st.caption("Duplicates are dropped first: the numbers above judge every delivery by its windows; the list below also names "
                   "the deliveries the deduplication dropped as late (their own event time at or before the watermark).")
    left, right = st.columns(2)
    with left:
        live_chart(lateness_charts.arrival_figure(judged.classified, judged.batches), key="lab_chart_arrival")
    with right:
        live_chart(lateness_charts.lateness_figure(judged.classified), key="lab_chart_lateness")
    if snap.sql:
        st.caption("Every row of the streamed view is judged, before your query's filters and joins: a row they leave out is judged all the same.")
    if shown.owned:
        _dropped_list(run.name, judged, source=source, deduplicate=deduplicate)


def _dropped_list(name: str, judged: LatenessView, *, source: StreamSource, deduplicate: bool) -> None:
    """On demand, the dropped events themselves with the rule that dropped each, filtered by key and window, as CSV or Parquet."""
    if not st.toggle("List the dropped events", key="lab_dropped_list", help="Every (event, window) pair the watermark dropped, to inspect or download"):
        return
    dropped = judged.dropped(deduplicate=deduplicate, source=source)
    left, right = st.columns(2)
    keys = left.multiselect("Keys", sorted(dropped["key"].astype(str).unique()), key="lab_dropped_keys", placeholder="every key")
    starts = sorted(dropped["window_start"].dropna().unique())
    start = right.selectbox("Window", [None, *starts], format_func=lambda value: "every window" if value is None else f"{pd.Timestamp(value)}",
                            key="lab_dropped_window")
    shown = dropped[dropped["key"].astype(str).isin(keys)] if keys else dropped
    if start is not None:
        shown = shown[shown["window_start"] == start]
    st.dataframe(shown.head(DROPPED_ROWS), hide_index=True)
    st.caption(f"{shown['event_id'].nunique()} events, {len(shown)} rows" + (f"; the first {DROPPED_ROWS} shown, all downloaded" if len(shown) > DROPPED_ROWS else ""))
    buffer = io.BytesIO()
    shown.to_parquet(buffer, index=False)
    safe, neutralised = neutralise_formulas(shown)
    if neutralised:
        st.caption(
            f"{neutralised} text cells start like a spreadsheet formula (=, +, -, @): the CSV has them with a leading ' so a spreadsheet "
            "shows them as text instead of running them; the Parquet file has them as they are."
        )
    left, right = st.columns(2)
    left.download_button("Download CSV", safe.to_csv(index=False), file_name=f"{name}-dropped.csv", mime="text/csv", key="lab_dropped_csv")
    right.download_button("Download Parquet", buffer.getvalue(), file_name=f"{name}-dropped.parquet", mime="application/octet-stream", key="lab_dropped_parquet")
