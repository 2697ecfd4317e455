"""Datasets: bring your own events (upload, rename, delete) and check how Spark reads them before running a query."""

import streamlit as st

from dashboard import data, datasets, kafka
from dashboard.shared import KEPT, get_spark, session_starter, session_status
from streaming.engine.errors import ConfigError

st.title("Datasets")
st.caption(
    "Your own event files, kept under the data root on the server, next to the bundled sample feeds. "
    "Pick which column holds the event time (and how it is written), the key and the value, and check "
    "what Spark reads before you run a query on them."
)
try:
    store = datasets.dataset_store()
except ConfigError as err:
    st.error(f"The server's data settings are wrong: {err}")
    st.stop()
datasets.upload_form(store, store.max_bytes // (1024 * 1024))
choices = {choice.label: choice for choice in datasets.dataset_choices(store)}
replayed = {label: data.DataChoice("dataset", datasets.store_root(store, choice), choice.name) for label, choice in choices.items()}
followed = data.follow_data("dataset_choice", replayed)
if followed is not None:
    st.session_state["dataset_choice"] = followed
label = st.selectbox("Dataset", list(choices), key="dataset_choice", **KEPT)
if label is None:
    st.stop()
choice = choices[label]
data.remember_data(replayed[label], "dataset_choice")
datasets.manage_dataset(store, choice)
starter = session_starter()
if session_status(starter) != "ready":
    st.info("Spark is starting in the background; the preview shows once it is ready.")
    st.stop()
try:
    files, fmt = datasets.dataset_files(store, choice)
    spark = get_spark()
    values = datasets.mapping_widgets(
        list(datasets.schema_of(spark, files, fmt)), datasets.saved_mapping(store, choice), prefix=f"map_{label}",
        event_time=datasets.event_time_guess(spark, files, fmt),
    )
    mapping = datasets.build_mapping(values)
    datasets.preview_view(spark, files, fmt, mapping)
    datasets.save_mapping_button(store, choice, mapping)
except ConfigError as err:
    st.error(f"Cannot read this dataset that way: {err}")
    st.stop()
kafka.publish_panel(
    choice.name, lambda batching: datasets.dataset_feed(store, choice, mapping, batching), arrival=mapping.arrival is not None, ready=True,
)
