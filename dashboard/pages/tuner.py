"""Watermark tuner: replay one sample feed or dataset under several watermark delays and weigh completeness against cost."""

import streamlit as st

from dashboard import live, sql, sql_tuner, tuner
from dashboard.jobs import job_controls
from dashboard.joins import REPLAY_MODE
from dashboard.shared import JOINS_PAGE, InputErrors, get_registry, refuse, session_ready
from streaming.engine.data.feeds import feed_names
from streaming.engine.errors import ConfigError

st.title("Watermark tuner")
st.caption(
    "Measures a sample feed, your dataset or a Kafka topic under each watermark delay (its windowed count or aggregate, in update mode) against "
    "the exact answer: a longer delay loses fewer late events but keeps more state and finalizes windows later. The watermark model computes "
    "every delay at once and Spark confirms the recommended one; session windows and deduplication replay every delay on Spark."
)
st.markdown(tuner.COMPLETENESS_TEXT)
st.page_link(
    JOINS_PAGE, label="Two streams joined? The Joins page tunes both sides' delays, on feeds, datasets or topics", icon=":material/join_inner:",
    query_params={"join_mode": REPLAY_MODE},
)
ready = session_ready()
mode = st.segmented_control(
    "Query", sql.QUERY_MODES, default=sql.QUERY_MODES[0], required=True, key="tune_query_mode",
    help="The form's windowed aggregate (with the watermark model), or your own SQL, whose WATERMARK clause(s) are swept on Spark",
)
if mode == "SQL":
    kind, source_params = live.source_widgets(feed_names())
    try:
        source = live.build_source(kind, source_params)
    except ConfigError as err:
        st.error(f"Cannot read this source: {err}")
        st.stop()
    sql_tuner.sql_tuner(source, ready)
    st.stop()
values = tuner.tune_widgets()
try:
    inputs = tuner.tune_inputs(**values)
except InputErrors as err:
    refuse(err, "sweep")
tuner.lateness_section(inputs.source, ready)
job_controls(
    tuner.TUNE_JOB, "Run tuner", "tune_run", ready=ready, start=lambda: tuner.start_tune(get_registry(), inputs),
    render=tuner.tune_results, idle_text="Choose the delays and press **Run tuner**.", help_text="Runs in the background; takes minutes on a large feed",
    recall=inputs.recall, partial=tuner.model_answer,
)
