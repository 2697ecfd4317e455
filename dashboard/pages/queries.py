"""Queries: this user's queries of the shared registry and the server's own, and other active queries on the Spark session."""

import streamlit as st

from dashboard.checkpoint import checkpoint_panel
from dashboard.queries import queries_view
from dashboard.shared import get_registry, session_starter, session_status

st.title("Queries")
st.caption(
    "Your queries (this browser's, or your account's when the server has sign-in) and the server's own: another user's are not shown. "
    "They all run on one Spark session in the server process and share its query slots."
)
starter = session_starter()
status = session_status(starter)
if status == "ready":
    queries_view(get_registry())
    st.subheader("A checkpoint of your own")
    st.caption("A Structured Streaming job's checkpoint copied under the data root: what it holds, and whether a query would resume from it.")
    checkpoint_panel(get_registry())
elif status == "starting":
    st.info("Spark is starting in the background; the queries show once it is ready.")
