"""Compare: 2-4 query configurations replayed side by side on the same sample feed."""

import streamlit as st

import experiments
import lab

lab.page_setup("Compare")
st.title("Compare")
st.caption(
    "Replays the same feed under each configuration and measures every run against the exact answer for its own "
    "window and slide. Append runs hold only finalized windows: compare them on *completeness (finalized windows)*."
)

feed_column, count_column = st.columns([2, 1])
with feed_column:
    feed = experiments.feed_select(lab.feed_names(), "cmp_feed")
with count_column:
    count = st.number_input("Configurations", min_value=2, max_value=4, value=2, step=1, key="cmp_count")
slots = []
for number, column in enumerate(st.columns(int(count)), start=1):
    with column, st.container(border=True):
        slots.append(experiments.compare_slot_widgets(number, experiments.SLOT_DEFAULTS[number - 1]))
try:
    inputs = experiments.compare_inputs(feed, slots)
except experiments.InputErrors as err:
    for message in err.errors:
        st.error(f"Cannot run this comparison: {message}")
    st.stop()

job = experiments.current_job(experiments.COMPARE_JOB)
running = job is not None and not job.done
if st.button("Run comparison", key="cmp_run", type="primary", disabled=running, help="Runs in the background"):
    experiments.start_compare(lab.get_registry(), inputs)
experiments.job_view(job, experiments.compare_results, "Set up the configurations and press **Run comparison**.")
