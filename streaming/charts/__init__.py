"""Pure Plotly figures, one module per page family (``live``, ``lateness``, ``tuner``, ``compare``) and ``common``."""
