"""Compare: 2-4 query configurations replayed side by side on the same sample feed, dataset or topic, or 2-4 joins on the same two sides."""

import streamlit as st

from dashboard import compare, join_compare
from dashboard.shared import KEPT, session_ready

QUERIES, JOINS = "Windowed queries", "Joins"

st.title("Compare")
ready = session_ready()
kind = st.radio("What to compare", (QUERIES, JOINS), horizontal=True, key="cmp_kind", **KEPT)
if kind == JOINS:
    join_compare.join_comparison(ready)
else:
    compare.query_comparison(ready)
