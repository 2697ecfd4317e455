"""Pure Plotly figures, frames in and ``go.Figure`` out, one module per page family (``live``, ``lateness``, ``latency``, ``tuner``,
``sql_tune``, ``compare``, ``join``, ``walkthrough``) and ``common``."""
