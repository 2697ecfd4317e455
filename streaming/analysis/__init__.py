"""Analysis of runs against the exact answer: ``exact`` (the batch answer), ``lateness`` (event by event), ``windows`` (Spark's window
assignment, once), ``model`` (the watermark model), ``measure`` (completeness, output delay, state), and what is built on them:
``tune`` and ``sql_tune`` (watermark sweeps), ``compare``, ``explain`` (each micro-batch told), ``profile`` (how late a source's events
are), ``latency`` and ``triggers`` (end-to-end latency under several triggers), ``watermark`` (a stalled watermark), joins (``join``,
``join_model``, ``join_compare``) and ``spreadsheet`` (cells made safe for a spreadsheet).
"""
