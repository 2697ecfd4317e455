"""Home: what Streaming Lab is, and where to go."""

import streamlit as st

from dashboard.shared import COMPARE_PAGE, DATASETS_PAGE, JOINS_PAGE, LIVE_PAGE, QUERIES_PAGE, TUNER_PAGE

st.title("Streaming Lab")
st.markdown(
    "Run **Spark Structured Streaming** queries live and watch what the engine does. Each query is a "
    "windowed count (or, on your own data, a sum, average, minimum, maximum or distinct count) per key over event time; as micro-batches arrive you see the **result table** change, "
    "the **watermark** advance, late data being **dropped**, and the **state** Spark keeps for open windows."
)
st.markdown(
    "- Choose a source: your own files or Kafka topic, a replayed sample feed, a generator of out-of-order and late events, "
    "Spark's `rate` and `rate-micro-batch` sources, or a socket.\n"
    "- Choose tumbling or sliding windows, a watermark (or none), the **output mode** "
    "(append, update, complete) and the **trigger** (default, processing time, available now, real-time mode).\n"
    "- Compare what the result table holds under each output mode, and read the numbers of the "
    "Spark UI's streaming tab: input and process rates, batch durations, the watermark gap, each record's latency."
)
st.subheader("Start with your own data")
st.markdown(
    "1. **Datasets**: upload CSV, JSON lines or Parquet files (or publish them to a Kafka topic). The page guesses which column "
    "holds the event time, previews how Spark reads it, and warns when the times look wrong; **Save mapping**.\n"
    "2. **Watermark tuner**: how late your events arrive, and the smallest watermark delay that keeps the result complete enough.\n"
    "3. **Live query**: run it with that delay as *Your dataset* and watch late rows dropped and state grow and shrink; "
    "**Compare** runs several delays side by side.\n\n"
    "New to event time? Start the Live query page's sample feed `guide_words`: the programming guide's example, batch by batch."
)
st.page_link(LIVE_PAGE, label="Live query: configure, start and watch a query", icon=":material/play_circle:")
st.page_link(QUERIES_PAGE, label="Queries: everything running on the shared Spark session", icon=":material/list:")
st.page_link(TUNER_PAGE, label="Watermark tuner: the smallest watermark delay that reaches a completeness target", icon=":material/tune:")
st.page_link(COMPARE_PAGE, label="Compare: 2-4 configurations, or joins, side by side on the same data", icon=":material/compare:")
st.page_link(JOINS_PAGE, label="Joins: two streams, a watermark on each, and the rows that wait for a match", icon=":material/join_inner:")
st.page_link(DATASETS_PAGE, label="Datasets: upload your own events and check how Spark reads them", icon=":material/dataset:")
st.caption(
    "Queries run on one Spark session shared by every browser tab and keep running when you leave a page; "
    "stop them on the Queries page. All of them stop when the server exits."
)
