"""The use cases the front ends share, above the engine, the analysis and the charts.

``snapshot``: a running query as one refresh of its page shows it (every panel's
frames and figures, read once), the state it holds, the events it judged.
``tune``: a watermark sweep from what its user typed (the delays, the target,
a SQL query's points) to the run, for the Tuner page and ``python -m streaming tune``.

The front ends show what these return instead of computing it themselves. Nothing below (the engine, the analysis, the charts,
Show code, reports) imports this package, and no Streamlit here (``tests/test_layout.py``).
"""
