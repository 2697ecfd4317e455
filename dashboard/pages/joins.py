"""Joins: two streams joined on keys and a time range, a watermark on each side, replayed batch by batch or run live."""

import streamlit as st

from dashboard import joins, live_join
from dashboard.shared import KEPT, session_ready

st.title("Joins")
st.caption(
    "A row waits in a stream-stream join's state for its matches until the global watermark passes the end of its time range; "
    "an outer join then emits it with NULLs for the other side."
)
ready = session_ready()
mode = st.radio("Sides", (joins.REPLAY_MODE, joins.LIVE_MODE), horizontal=True, key="join_mode", **KEPT, help="A replay reads file i (or a topic range's i-th slice) of each side in micro-batch i; live streams run until stopped")
if mode == joins.REPLAY_MODE:
    live_join.running_note()
    inputs = joins.join_form()
    joins.run_join_form(inputs, ready)
    joins.join_results()
else:
    shown = live_join.run_live_join_form(live_join.live_join_form(), ready)
    if shown is not None:
        run, drawn = shown
        live_join.live_join_view(run, drawn)
        live_join.waiting_now(run)
