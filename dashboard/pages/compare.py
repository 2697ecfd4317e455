"""Compare: 2-4 query configurations replayed side by side on the same sample feed, dataset or topic, 2-4 of your own SQL queries over the same
views, or 2-4 joins on the same two sides."""

import streamlit as st

from dashboard import compare, join_compare, sql_compare
from dashboard.shared import KEPT, session_ready

QUERIES, SQL, JOINS = "Windowed queries", "SQL queries", "Joins"

st.title("Compare")
ready = session_ready()
kind = st.radio("What to compare", (QUERIES, SQL, JOINS), horizontal=True, key="cmp_kind", **KEPT)
if kind == JOINS:
    join_compare.join_comparison(ready)
elif kind == SQL:
    sql_compare.sql_comparison(ready)
else:
    compare.query_comparison(ready)
