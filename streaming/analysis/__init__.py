"""Analysis of runs against the exact answer: ``exact`` (the batch answer), ``lateness`` (event by event),
``measure`` (completeness, output delay, state), and the experiments built on them, ``tune`` and ``compare``.
"""
