"""What a run gives back, below every configuration that makes one.

``results`` folds each micro-batch's rows into the result table as the output
mode keeps it, and ``kept_table`` keeps that table on disk for a kept query;
``sinks`` bring the rows to it (the fold on a classic session, the memory sink
on Spark Connect); ``progress`` folds Spark's progress events and ``extremes``
picks the rows of a long history a chart draws; ``latency`` measures each
record's end-to-end latency; ``state`` reads what a checkpoint's state holds.
"""
