"""The engine: a validated configuration in, a running Structured Streaming query out, and what it reports.

``config`` and ``errors`` check what a user asks for before Spark sees it;
``feeds`` and ``sources`` turn a source configuration into a streaming
DataFrame; ``query`` builds and starts the query, folding every micro-batch
into a ``results.ResultTable`` and every progress event into a
``progress.ProgressLog``; ``registry`` keeps the named runs of one session;
``runner`` replays a feed to the end; ``session`` makes the SparkSession.
"""
