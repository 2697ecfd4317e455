"""Compare: 2-4 query configurations replayed side by side on the same sample feed or dataset."""

import streamlit as st

from dashboard import compare
from dashboard.data import data_select, data_widgets
from dashboard.kafka import topic_shape
from dashboard.shared import KEPT, get_registry, session_ready

st.title("Compare")
st.caption(
    "Replays the same feed, dataset or topic offsets under each configuration and measures every run against the exact answer for its own "
    "window and slide. Append runs hold only finalized windows: compare them on *completeness (finalized windows)*; "
    "an append run of session windows holds only the sessions it closed (the tuner also counts those still open)."
)
ready = session_ready()
feed_column, count_column = st.columns([2, 1])
with feed_column:
    if st.toggle("A Kafka topic", key="cmp_from_topic", **KEPT, help="Its records from the earliest offsets to those latest when the comparison starts"):
        feed, shape = None, topic_shape("cmp")
    else:
        feed = data_select("cmp_feed")
        shape = data_widgets("cmp", feed)
with count_column:
    count = st.number_input("Configurations", min_value=2, max_value=4, value=2, step=1, key="cmp_count", **KEPT)
slots = []
for number, column in enumerate(st.columns(int(count)), start=1):
    with column, st.container(border=True):
        slots.append(compare.compare_slot_widgets(number, compare.SLOT_DEFAULTS[number - 1]))
compare.experiment(
    "comparison", lambda: compare.compare_inputs(feed, slots, **shape), compare.COMPARE_JOB, "Run comparison", "cmp_run", ready=ready,
    start=lambda inputs: compare.start_compare(get_registry(), inputs), render=compare.compare_results,
    idle_text="Set up the configurations and press **Run comparison**.",
)
if st.session_state.get("cmp_from_topic"):
    st.divider()
    st.subheader("Latency: the same query, micro-batches against real-time mode")
    st.caption(
        "Publishes the topic's latest messages again, at a fixed rate, into a topic made for the comparison, and runs the query under each "
        "trigger at once, passing rows through (what real-time mode runs on Spark 4.2): how long after it was produced each record reached the sink."
    )
    chosen = compare.latency_widgets()
    compare.experiment(
        "latency comparison", lambda: compare.latency_inputs(shape["topic"], **chosen), compare.LATENCY_JOB, "Compare latency", "cmp_lat_run",
        ready=ready, start=lambda inputs: compare.start_latency(get_registry(), inputs), render=compare.latency_results,
        idle_text="Choose the triggers and press **Compare latency**.",
    )
