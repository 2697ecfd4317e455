"""Streaming Lab: ``streamlit run app.py``.

The entry point: page setup and navigation between the landing page (below)
and the pages in ``pages/``. Shared resources (the SparkSession and the one
query registry) live in :mod:`lab`, created on first use by a page that needs
them; the landing page starts no Spark. Every page also sets its own title
and layout (:func:`lab.page_setup`), because Streamlit runs a page of
``pages/`` without this file when it is the first URL a fresh server serves.
"""

import streamlit as st

import lab

LIVE_PAGE = "pages/1_Live_query.py"
QUERIES_PAGE = "pages/2_Queries.py"
TUNER_PAGE = "pages/3_Watermark_tuner.py"
COMPARE_PAGE = "pages/4_Compare.py"


def home(
    live_page: str = LIVE_PAGE, queries_page: str = QUERIES_PAGE, tuner_page: str = TUNER_PAGE, compare_page: str = COMPARE_PAGE
) -> None:
    """The landing page: what Streaming Lab is, and where to go."""
    lab.page_setup("Home")
    st.title("Streaming Lab")
    st.markdown(
        "Run **Spark Structured Streaming** queries live and watch what the engine does. Each query is a "
        "windowed count per key over event time; as micro-batches arrive you see the **result table** change, "
        "the **watermark** advance, late data being **dropped**, and the **state** Spark keeps for open windows."
    )
    st.markdown(
        "- Choose a source: a replayed sample feed, a generator of out-of-order and late events, Spark's `rate` "
        "and `rate-micro-batch` sources, or a socket.\n"
        "- Choose tumbling or sliding windows, a watermark (or none), the **output mode** "
        "(append, update, complete) and the **trigger** (default, processing time, available now).\n"
        "- Compare what the result table holds under each output mode, and read the numbers of the "
        "Spark UI's streaming tab: input and process rates, batch durations, the watermark gap."
    )
    st.page_link(live_page, label="Live query: configure, start and watch a query", icon=":material/play_circle:")
    st.page_link(queries_page, label="Queries: everything running on the shared Spark session", icon=":material/list:")
    st.page_link(tuner_page, label="Watermark tuner: the smallest watermark delay that reaches a completeness target", icon=":material/tune:")
    st.page_link(compare_page, label="Compare: 2-4 configurations side by side on the same feed", icon=":material/compare:")
    st.caption(
        "Queries run on one Spark session shared by every browser tab and keep running when you leave a page; "
        "stop them on the Queries page. All of them stop when the server exits."
    )


navigation = st.navigation(
    [
        st.Page(home, title="Home", icon=":material/home:", default=True),
        st.Page(LIVE_PAGE, title="Live query", icon=":material/play_circle:"),
        st.Page(QUERIES_PAGE, title="Queries", icon=":material/list:"),
        st.Page(TUNER_PAGE, title="Watermark tuner", icon=":material/tune:"),
        st.Page(COMPARE_PAGE, title="Compare", icon=":material/compare:"),
    ]
)
navigation.run()
