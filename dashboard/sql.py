"""Live query in SQL: your own query over the chosen source's view, checked before Start, then watched as Spark runs it.

The page draws; what a query is and whether it may run is decided in
:mod:`streaming.engine.sql` (its views, the plan checks, the result table).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from streaming.engine.durations import format_duration
from streaming.engine.errors import ConfigError, brief
from streaming.engine.query.config import OUTPUT_MODES, QueryConfig
from streaming.engine.run.registry import DuplicateQueryError, QueryRegistry
from streaming.engine.sources import Source
from streaming.engine.sql import DEFAULT_VIEW, PlanFacts, SqlError, SqlQuery, SqlView
from streaming.engine.sql.checker import SqlChecker
from streaming.engine.sql.form import form_sql
from streaming.engine.sql.views import TableFiles
from streaming.export import sql_code

from . import shared
from .data import data_choices, data_source
from .datasets import dataset_choices, dataset_files, dataset_store, saved_mapping
from .lateness import lateness_view
from .live_chart import live_chart
from .shared import failure_banner, metrics_row, report_button
from .shown import Shown

if TYPE_CHECKING:
    from streaming.app.snapshot import RunSnapshot

__all__ = ["OPERATOR_COLUMNS", "QUERY_MODES", "checked", "edit_as_sql", "show_error", "sql_box", "sql_editor", "sql_form", "sql_view", "written_until_edited"]

LOG = logging.getLogger(__name__)
QUERY_MODES = ("Form", "SQL")
MODE_KEY = "lab_query_mode"
TEXT_KEY = "lab_sql"
START_KEY = "lab_sql_start"
VIEW_KEY = "lab_sql_view"
CHECKER_KEY = "lab_sql_checker"
VERDICT_KEY = "lab_sql_verdict"
MAX_VIEWS = 4
"""Views a query of the pages may read: the chosen source's and up to three more (another stream, tables)."""
READ_AS = ("stream", "table")


LIVE_PAUSE_MS = 100
"""A pause in typing this long commits the SQL box, so its check runs as the user types: shorter than Streamlit's 250 ms for
``st.text_input(live=True)``, as the commit reruns the editor's fragment only and a check takes 30-60 ms (``make bench``, warm server: the
verdict p50 252, p95 313 ms after the last keystroke; with a pause of 150 ms, p50 310, p95 340)."""
_sql_box = st.components.v2.component("streaming_lab.sql_box", js=(Path(__file__).with_name("sql_box.js")).read_text(encoding="utf-8"), isolate_styles=False)


def sql_box(key: str, pause_ms: int = LIVE_PAUSE_MS) -> None:
    """Make the text area of widget key ``key`` a SQL editor (``sql_box.js``): its SQL highlighted, and committed after ``pause_ms`` without
    typing, the cursor left where it is."""
    _sql_box(data={"key": key, "pause": pause_ms}, key=f"{key}_box")


def edit_as_sql(config: QueryConfig) -> None:
    """*Edit as SQL*: the form's current query written as SQL in the editor, which opens (set before the widgets are drawn again)."""
    st.button(
        "Edit as SQL", key="lab_edit_as_sql", icon=":material/code:", help="Open the SQL editor with this form's query, written as Spark SQL",
        on_click=_open_as_sql, args=(config,),
    )


def _open_as_sql(config: QueryConfig) -> None:
    st.session_state[TEXT_KEY] = form_sql(config, st.session_state.get(VIEW_KEY, DEFAULT_VIEW))
    st.session_state[MODE_KEY] = "SQL"


def _checker(views: tuple[SqlView, ...]) -> SqlChecker:
    """This browser session's checker for ``views``, made again when they change or when a new Spark session replaced the one it was made
    on: its views live in a session no other browser session sees."""
    kept = st.session_state.get(CHECKER_KEY)
    spark = shared.session_starter().wait(60)
    if kept is not None and kept.views == views and kept.spark is spark:  # a checker of a session that died with its JVM checks nothing
        return kept
    if kept is not None:
        kept.close()
    checker = SqlChecker(spark, views)
    st.session_state[CHECKER_KEY] = checker
    return checker


def sql_editor(source: Source, ready: bool, prefix: str, *, arrival: bool = True) -> tuple[SqlQuery | None, PlanFacts | None]:
    """The view's name and columns, the SQL box with its verdict and the output mode; ``(query, facts)``, ``facts`` ``None`` until the text passes.

    Widget keys start with ``prefix`` (``lab``: Live query, ``tune``: the tuner), so each page keeps its own query. Without ``arrival`` the
    query follows the quiet rule and the page offers no choice (Step through: a press hands one batch over).
    """
    text_key = TEXT_KEY if prefix == "lab" else f"{prefix}_sql"
    view = st.text_input("View name", value=DEFAULT_VIEW, key=VIEW_KEY if prefix == "lab" else f"{prefix}_sql_view", persist_state="session",
                         help="The chosen source is this streaming view in your SQL")
    written_until_edited(text_key, _default_sql(source, view))  # the query written for the data shown: not another data's columns
    text = st.text_area(
        "SQL", key=text_key, height=220, persist_state="session",
        help="One SELECT over the view(s). A watermark: FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 30 SECONDS. Checked as you type (after a pause of 0.1 s)",
    )
    sql_box(text_key)
    output_mode = st.selectbox("Output mode", OUTPUT_MODES, index=OUTPUT_MODES.index("update"), key=f"{prefix}_sql_output_mode", persist_state="session")
    rule = shared.arrival_widget(prefix) if arrival else "quiet"
    try:
        views = (SqlView(view, source), *more_views(prefix, float(getattr(source, "seconds_per_file", 0.0) or 0.0)))
        query = SqlQuery(text, views, output_mode=output_mode, arrival=rule)  # type: ignore[arg-type]
    except ConfigError as err:
        st.error(f"Cannot run this query: {err}")
        return None, None
    verdict = None
    if ready:
        try:
            checker = _checker(query.views)
            _views_panel(checker.columns)
            verdict = _verdict(checker, text, VERDICT_KEY if prefix == "lab" else f"{prefix}_sql_verdict", output_mode)
            st.success(_verdict_words(verdict))
        except SqlError as err:
            show_error(text, err)
        except ConfigError as err:
            st.error(f"Cannot read the view: {err}")
    return query, verdict


def more_views(prefix: str, seconds_per_file: float) -> tuple[SqlView, ...]:
    """Views beside the chosen source's, as the CLI's ``--view`` gives them: another stream (a join of two streams, each with its
    WATERMARK clause; a sample feed or a mapped dataset, micro-batch *i* reading file *i* of each) or any dataset read whole as a
    table (a stream-static join; no event-time mapping needed)."""
    with st.expander("More views: join another stream or a table"):
        count = st.number_input("Other views", min_value=0, max_value=MAX_VIEWS - 1, value=0, step=1, key=f"{prefix}_sql_views", persist_state="session")
        if not count:
            return ()
        views: list[SqlView] = []
        store = dataset_store()  # listed once for every view, and only when there is one: the editor reruns at each pause in typing
        streams, tables = data_choices(store), {choice.label: choice for choice in dataset_choices(store)}
        for number in range(2, int(count) + 2):
            key = f"{prefix}_sql_view{number}"
            name, how = st.columns([3, 2])
            view = name.text_input(f"View {number} name", value=f"view{number}", key=f"{key}_name", persist_state="session")
            read = how.radio(f"View {number} read as", READ_AS, horizontal=True, key=f"{key}_read", persist_state="session",
                             help="stream: replayed beside the chosen source, file by file; table: read whole once")
            if read == "stream":
                label = st.selectbox(f"View {number} data", list(streams), key=f"{key}_data", persist_state="session", help="A sample feed, or a dataset with its column mapping saved")
                views.append(SqlView(view, data_source(streams[label], seconds_per_file=seconds_per_file)))
            else:
                label = st.selectbox(f"View {number} table", list(tables), key=f"{key}_table", persist_state="session", help="Any dataset, its columns typed as they read")
                files, fmt = dataset_files(store, tables[label])
                mapping = None if tables[label].sample else saved_mapping(store, tables[label])  # a sample's CSV layout is no mapping of a table
                views.append(SqlView(view, TableFiles(files[0].parent, fmt, mapping), static=True))
        return tuple(views)


@st.fragment
def sql_form(source: Source, ready: bool, name: str | None, pending_key: str) -> None:
    """The SQL side of the Live page: the editor (:func:`sql_editor`, across the page) and Start, enabled once the query passes its checks.

    A fragment: the box's commit as the user types reruns the editor and Start only, not the page and its running query's view."""
    query, verdict = sql_editor(source, ready, "lab")
    if st.button("Start query", key=START_KEY, type="primary", disabled=not ready or verdict is None) and query is not None:
        _start(shared.get_registry(), query, name, pending_key)


def checked(views: tuple[SqlView, ...], text: str, key: str) -> PlanFacts:
    """``text`` checked over ``views`` by this browser session's checker, its verdict kept under ``key`` (:class:`SqlError` when refused)."""
    return _verdict(_checker(views), text, key)


def _verdict(checker: SqlChecker, text: str, key: str = VERDICT_KEY, output_mode: str | None = None) -> PlanFacts:
    """The checker's verdict on ``text`` (with ``output_mode``, Spark's streaming checks for that mode too), checked once per text, mode and
    views: a rerun for another widget does not check it again (a check is hundreds of py4j round trips). A refusal is kept, and raised again,
    likewise."""
    kept = st.session_state.get(key)
    if kept is None or kept[0] is not checker or kept[1] != (text, output_mode):
        try:
            kept = (checker, (text, output_mode), checker.check(text, output_mode))
        except SqlError as err:
            kept = (checker, (text, output_mode), err)
        st.session_state[key] = kept
    if isinstance(kept[2], SqlError):
        raise kept[2]
    return kept[2]


def written_until_edited(key: str, text: str) -> None:
    """Write ``text`` in the box of widget key ``key`` until the user edits it: a box that still holds what was last written in it is
    written again when ``text`` changes (other data, another query to follow); an edited box is the user's."""
    written = st.session_state.get(f"{key}_default")
    if key not in st.session_state or (st.session_state[key] == written and written != text):
        st.session_state[key] = text
    st.session_state[f"{key}_default"] = text


def _default_sql(source: Source, view: str) -> str:
    """The SQL box's first text for ``source`` seen as ``view``: the form's query written as SQL, or every row when the form cannot run on it."""
    try:
        return form_sql(QueryConfig(source), view)
    except ConfigError:
        return f"SELECT *\nFROM STREAM({view})\n"


def _views_panel(columns: Mapping[str, list[tuple[str, str]]]) -> None:
    with st.expander("Views and their columns", expanded=False):
        for name, fields in columns.items():
            st.markdown(f"**{name}**: " + ", ".join(f"`{column}` {data_type}" for column, data_type in fields))


def _verdict_words(facts: Any) -> str:
    marks = ", ".join(f"{mark.column} (delay {format_duration(mark.delay_ms)})" for mark in facts.watermarks) or "none"
    stateful = ", ".join(facts.stateful) or "none"
    return f"Ready to run. Watermark on: {marks}. Stateful: {stateful}. Columns: {', '.join(facts.columns)}."


def show_error(text: str, err: SqlError) -> None:
    """The refusal at its line and column, and the line itself with a caret under the column."""
    st.error(str(err))
    if err.line is not None and err.column is not None:
        lines = text.splitlines()
        if 0 < err.line <= len(lines):
            st.code(f"{lines[err.line - 1]}\n{' ' * (err.column - 1)}^", language="sql")


def _start(registry: QueryRegistry, query: SqlQuery, name: str | None, pending_key: str) -> None:
    """Start ``query`` and watch it after a rerun (``pending_key``); Spark's refusal in plain words, naming the clause."""
    from pyspark.errors import PySparkException

    try:
        with st.spinner("Starting the query…"):
            try:
                run = registry.start(query, name, keep=query.resumable and registry.can_keep)  # kept: Resume on the Queries page
            except PySparkException as err:
                raise query.refusal(err) from None
            run.await_first_batch(5.0)
    except (DuplicateQueryError, ConfigError, SqlError) as err:
        st.error(brief(str(err)))
        return
    except Exception as err:
        LOG.exception("starting a SQL query failed")
        st.error(f"The query could not start: {type(err).__name__}: {brief(str(err))}")
        return
    st.session_state[pending_key] = run.name
    st.rerun()


def sql_view(snap: RunSnapshot, shown: Shown, *, headline: bool = False) -> None:
    """A SQL run as it stands: status, the result table as its output mode keeps it, each stateful operator, the watermark, the progress
    charts, and what the page ``shown`` may show beyond them (the program, which holds the query's text; the report); with ``headline``,
    no further than the result table."""
    run = snap.run
    metrics_row(snap.numbers())
    st.caption(snap.arrival_text)
    if snap.failure is not None:
        failure_banner(f"Query {run.name}", *snap.failure, details=shown.owned)
    facts = run.table.facts
    if facts is not None:
        marks = ", ".join(f"`{mark.column}` (delay {format_duration(mark.delay_ms)})" for mark in facts.watermarks)
        st.caption(
            f"{run.config.output_mode.capitalize()} mode" + (f", rows upserted by {', '.join(facts.grouping)}" if facts.grouping and run.config.output_mode == "update" else "")
            + (f". The global watermark comes from {marks}." if marks else ". No WATERMARK clause: nothing is dropped, and state only grows.")
        )
        if shown.code:
            with st.expander("Show code"):
                _show_code(run.config, facts.grouping)
    st.subheader("Result table")
    st.dataframe(snap.table, hide_index=True, key=f"lab_sql_table_{run.name}")
    if headline:
        return
    st.subheader("Stateful operators")
    operators = snap.operators
    if len(operators):
        st.dataframe(operators.rename(columns=OPERATOR_COLUMNS), hide_index=True, key=f"lab_sql_operators_{run.name}")
    else:
        st.caption("No stateful operator has reported yet (a query without aggregation, join or deduplication keeps no state).")
    left, right = st.columns(2)
    with left:
        live_chart(snap.sent("drops"), key="lab_sql_drops")
        live_chart(snap.sent("rates"), key="lab_sql_rates")
    with right:
        live_chart(snap.sent("state"), key="lab_sql_state")
        live_chart(snap.sent("gap"), key="lab_sql_gap")
    lateness_view(snap, shown)
    if shown.report:
        report_button(snap, code=shown.code)


OPERATOR_COLUMNS = {
    "index": "#", "name": "operator", "state_rows": "rows in state", "rows_dropped_by_watermark": "dropped by watermark", "memory_bytes": "state memory (bytes)",
}
"""The headings of a stateful operator's numbers (:func:`~streaming.engine.sql.replay.operators_of`, or one batch's), wherever a page lists them."""


def _show_code(query: object, grouping: tuple[str, ...]) -> None:
    """The PySpark program of a SQL run (:func:`~streaming.export.sql_code`), or why there is none yet."""
    if not isinstance(query, SqlQuery):
        return
    try:
        code = sql_code(query, grouping)
    except ConfigError as err:
        st.info(f"No program to show for this query yet: {err}.")
        return
    st.caption("A PySpark program that builds the same views from the same files or topic with the lab's own code, replays them as the lab "
               "does (one file per micro-batch; a topic's records as its options cut them) and prints the final result table.")
    st.code(code, language="python")
