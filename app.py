"""Streaming Lab: ``python -m dashboard.serve`` (``make run``), or ``streamlit run app.py``.

The entry point: the page frame and the routing of the page scripts in
``dashboard/pages/`` with ``st.navigation``. Every URL, a deep link opened
first included, runs this file, so the frame is set once here and the
SparkSession starts in the background on the first view of any page. A
server configured for sign-in asks for it first; otherwise the browser keeps
a private workspace (``dashboard/owner.py``).
"""

import streamlit as st

from dashboard import owner, walkthrough
from dashboard.shared import COMPARE_PAGE, DATASETS_PAGE, JOINS_PAGE, LIVE_PAGE, QUERIES_PAGE, STEP_PAGE, STEP_URL, TUNER_PAGE, run_page, session_starter

st.set_page_config(page_icon=":material/stream:", layout="wide")
owner.sign_in_gate()
owner.remember_workspace()
owner.operator_note()
session_starter()
navigation = st.navigation(
    [
        st.Page("dashboard/pages/home.py", title="Home", icon=":material/home:", default=True),
        st.Page(LIVE_PAGE, title="Live query", icon=":material/play_circle:", url_path="Live_query"),
        st.Page(QUERIES_PAGE, title="Queries", icon=":material/list:", url_path="Queries"),
        st.Page(TUNER_PAGE, title="Watermark tuner", icon=":material/tune:", url_path="Watermark_tuner"),
        st.Page(COMPARE_PAGE, title="Compare", icon=":material/compare:", url_path="Compare"),
        st.Page(JOINS_PAGE, title="Joins", icon=":material/join_inner:", url_path="Joins"),
        st.Page(STEP_PAGE, title="Step through", icon=":material/slideshow:", url_path=STEP_URL),
        st.Page(DATASETS_PAGE, title="Datasets", icon=":material/dataset:", url_path="Datasets"),
    ]
)
if navigation.url_path != STEP_URL:
    walkthrough.leave()  # a walkthrough's queries wait for this browser session only while it is on Step through
run_page(navigation)
