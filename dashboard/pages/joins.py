"""Joins: two streams joined on keys and a time range, a watermark on each side, stepped through batch by batch."""

import streamlit as st

from dashboard import joins
from dashboard.shared import session_ready

st.title("Joins")
st.caption(
    "A stream-stream join replays both sides, micro-batch i reading file i of each. A row waits in the join's state for its matches "
    "until the global watermark passes the end of its time range; an outer join then emits it with NULLs for the other side."
)
ready = session_ready()
inputs = joins.join_form()
joins.run_join_form(inputs, ready)
joins.join_results()
