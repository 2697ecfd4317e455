"""The use cases the front ends share, above the engine, the analysis and the charts.

``snapshot``: a running query as one refresh of its page shows it (every panel's
frames and figures, read once), the state it holds, the events it judged.
``tune``: a watermark sweep from what its user typed to its answer, for the
Tuner page and ``python -m streaming tune`` (the form's query and SQL).

The dashboard draws and the CLI prints what these return instead of reading, folding and drawing
each panel of a run itself. Nothing below (the engine, the analysis, the charts,
Show code, reports) imports this package, and no Streamlit here (``tests/test_layout.py``).
"""
