"""Watermark tuner: replay one sample feed under several watermark delays and weigh completeness against cost."""

import streamlit as st

import experiments
import lab

lab.page_setup("Watermark tuner")
st.title("Watermark tuner")
st.caption(
    "Replays the feed once per watermark delay (a windowed count in update mode) and measures each run against "
    "the exact answer: a longer delay loses fewer late events but keeps more state and finalizes windows later."
)
st.markdown(experiments.COMPLETENESS_TEXT)

values = experiments.tune_widgets(lab.feed_names())
try:
    inputs = experiments.tune_inputs(**values)
except experiments.InputErrors as err:
    for message in err.errors:
        st.error(f"Cannot run this sweep: {message}")
    st.stop()

job = experiments.current_job(experiments.TUNE_JOB)
running = job is not None and not job.done
if st.button("Run tuner", key="tune_run", type="primary", disabled=running, help="Runs in the background; takes minutes on a large feed"):
    experiments.start_tune(lab.get_registry(), inputs)
experiments.job_view(job, experiments.tune_results, "Choose the delays and press **Run tuner**.")
