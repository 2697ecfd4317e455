"""Watermark tuner: replay one sample feed under several watermark delays and weigh completeness against cost."""

import streamlit as st

from dashboard import tuner
from dashboard.jobs import job_controls
from dashboard.shared import InputErrors, get_registry, refuse, session_starter, session_status, wait_for_session
from streaming.engine.feeds import feed_names

st.title("Watermark tuner")
st.caption(
    "Replays the feed once per watermark delay (a windowed count in update mode) and measures each run against "
    "the exact answer: a longer delay loses fewer late events but keeps more state and finalizes windows later."
)
st.markdown(tuner.COMPLETENESS_TEXT)
starter = session_starter()
ready = session_status(starter)
if starter.status == "starting":
    wait_for_session(starter)
values = tuner.tune_widgets(feed_names())
try:
    inputs = tuner.tune_inputs(**values)
except InputErrors as err:
    refuse(err, "sweep")
job_controls(
    tuner.TUNE_JOB, "Run tuner", "tune_run", ready=ready, start=lambda: tuner.start_tune(get_registry(), inputs),
    render=tuner.tune_results, idle_text="Choose the delays and press **Run tuner**.", help_text="Runs in the background; takes minutes on a large feed",
)
