"""Live query: configure and start a Structured Streaming query, then watch its result table and progress."""

import streamlit as st

from dashboard import live, sql
from dashboard.joins import LIVE_MODE
from dashboard.shared import JOINS_PAGE, KEPT, get_registry, session_starter, session_status
from streaming.engine.data.feeds import feed_names
from streaming.engine.errors import ConfigError

st.title("Live query")
st.caption(
    "A windowed count (or, on your dataset, a sum, average, minimum, maximum or distinct count) per key over event time. The charts redraw every couple of seconds from the query's "
    "result table and its progress events. Start waits a few seconds at most for the first batch; Stop returns at once, and Spark stops the query "
    "once the micro-batch under way ends (seconds, or a minute or more on a loaded machine), *stopping…* meanwhile."
)
st.page_link(
    JOINS_PAGE, label="Two streams joined live (the generator's impressions and clicks, or two topics): the Joins page", icon=":material/join_inner:",
    query_params={"join_mode": LIVE_MODE},
)
editor_area = st.container()  # Query: SQL writes its editor here, the page's width: a sidebar's 300 pixels are too narrow for SQL
main_area = st.container()
starter = session_starter()
status = session_status(starter)
ready = status == "ready"


def watched_view() -> None:
    """The watched run (or the run a link shares), or where its counts will show."""
    with main_area:
        if ready:
            registry = get_registry()
            link, shared = live.linked_run(registry)
            if link is not None:
                if shared is not None:
                    live.live_view(shared, link=link)
                return
            watched = live.query_selector(registry)
            run = None if watched is None else registry.get(watched)
            if run is None:
                live.placeholder_chart()
            else:
                live.stop_button(run)
                live.share_link(run)
                live.live_view(run)
        elif status == "starting":
            st.info("Spark is starting in the background; the form is ready, and Start is enabled as soon as Spark is.")
            live.placeholder_chart()


def new_query() -> None:
    """The sidebar's new query, by the form or in SQL; left at the error when its source or configuration is refused."""
    with st.sidebar:
        st.header("New query")
        mode = st.segmented_control(
            "Query", sql.QUERY_MODES, default=sql.QUERY_MODES[0], required=True, key=sql.MODE_KEY, **KEPT,
            help="The form writes a windowed aggregate for you; SQL runs your own query over the source's view",
        )
        kind, source_params = live.source_widgets(feed_names())
        if mode == "SQL":
            name_text = st.text_input("Query name", value="", key="lab_name", placeholder="empty: query_N")
            try:
                source = live.build_source(kind, source_params)
                name = live.check_name(name_text)
            except ConfigError as err:
                st.error(f"Cannot read this source: {err}")
                return
            with editor_area:
                st.subheader("Your query in SQL")
                sql.sql_form(source, ready, name, live.PENDING_KEY)
            st.caption("Write your SQL in the page, under **Your query in SQL**.")
        else:
            query_params = live.query_widgets(with_value=kind in ("dataset", "kafka"), passthrough=kind == "kafka")
            name_text = st.text_input("Query name", value="", key="lab_name", placeholder="empty: query_N")
            try:
                config = live.build_config(kind, source_params, query_params)
                name = live.check_name(name_text)
            except ConfigError as err:
                st.error(f"Cannot run this configuration: {err}")
                return
            if st.button("Start query", key=live.START_KEY, type="primary", disabled=not ready):
                live.start_query(get_registry(), config, name)
            sql.edit_as_sql(config)
        live.stall_widget()


# On Start the new query starts first and the page then draws it: the run watched until then was drawn first, and a Start while a
# stopped run was watched began 0.31-0.40 s after the press (0.16-0.20 s now). It is drawn after the form only when the start did not happen.
starting = live.start_pressed()
if not starting:
    watched_view()
new_query()
if starting:
    watched_view()
