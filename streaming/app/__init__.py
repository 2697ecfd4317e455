"""The use cases the front ends share, above the engine, the analysis and the charts.

``snapshot``: a running query as one refresh of its page shows it (every panel's
frames and figures, read once), the state it holds, the events it judged.

The dashboard draws what these return and the CLI prints it; neither orchestrates
the engine itself for them. No Streamlit here (``tests/test_layout.py``).
"""
