"""Queries: every query of the shared registry, and other active queries on the Spark session."""

import streamlit as st

import lab

lab.page_setup("Queries")
st.title("Queries")
st.caption("Every browser tab sees the same queries: they run on one Spark session in the server process.")
lab.queries_view(lab.get_registry())
