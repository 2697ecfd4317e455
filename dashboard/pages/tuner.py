"""Watermark tuner: replay one sample feed under several watermark delays and weigh completeness against cost."""

import streamlit as st

from dashboard import tuner
from dashboard.jobs import current_job, job_view
from dashboard.shared import InputErrors, get_registry, session_starter, session_status, wait_for_session
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
    for error in err.errors:
        st.error(f"Cannot run this sweep: {error}")
    st.stop()

job = current_job(tuner.TUNE_JOB)
running = job is not None and not job.done
if st.button("Run tuner", key="tune_run", type="primary", disabled=running or not ready, help="Runs in the background; takes minutes on a large feed"):
    tuner.start_tune(get_registry(), inputs)
job_view(job, tuner.tune_results, "Choose the delays and press **Run tuner**.")
