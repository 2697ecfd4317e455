"""The engine: a validated configuration in, a running Structured Streaming query out, and what it reports.

One package per part, from the bottom up; each imports only those before it in this list (and only
for type checking any other), and the shared vocabulary at this level: ``errors`` (the one error for
refused input), ``checks`` (single values checked where received), ``bounds`` (what a user may ask Spark to plan), ``arrival`` (the arrival rule every replay follows), ``durations``, ``jsonl`` (files
appended to and read back after a crash) and ``builders`` (the Spark calls every query is made of,
which Show code copies).

- ``runtime``: the session, a Spark Connect server, background servers, the JVM parts;
- ``data``: sample feeds, a user's datasets, their columns, times and batch cutting;
- ``kafka``: Kafka's terms, the client, a local broker;
- ``output``: result tables, sinks, progress, latency, state;
- ``sources``: one module per source kind, each saying what it can do;
- ``query``: the form's query, its configuration and frame;
- ``sql``: a user's own query in Spark SQL, its views and its checks;
- ``run``: starting a run, the registry, kept queries, replays, stepping, publishing;
- ``join``: stream-stream joins, replayed and live.

``docs/architecture.md`` draws the main paths through them.
"""

LAYERS = ("runtime", "data", "kafka", "output", "sources", "query", "sql", "run", "join")
"""The packages above, from the bottom up (``tests/test_layout.py`` holds every import to it)."""
