"""Live query: configure and start a Structured Streaming query, then watch its result table and progress."""

import streamlit as st

import lab
from streaming.config import ConfigError

lab.page_setup("Live query")
st.title("Live query")
st.caption(
    "A windowed count per key over event time. The charts redraw every couple of seconds from the query's "
    "result table and its progress events; starting and stopping never waits on a batch."
)
registry = lab.get_registry()
watched = lab.query_selector(registry)
run = None if watched is None else registry.get(watched)
if run is not None:
    lab.stop_button(run)
    lab.live_view(run)

with st.sidebar:
    st.header("New query")
    kind, source_params = lab.source_widgets(lab.feed_names())
    query_params = lab.query_widgets()
    name_text = st.text_input("Query name", value="", key="lab_name", placeholder="empty: query_N")
    try:
        config = lab.build_config(kind, source_params, query_params)
        name = lab.check_name(name_text)
    except ConfigError as err:
        st.error(f"Cannot run this configuration: {err}")
        st.stop()
    if st.button("Start query", key="lab_start", type="primary"):
        lab.start_query(registry, config, name)
