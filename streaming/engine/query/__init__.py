"""The form's query: ``config``, one immutable, validated object, and ``frame``, the streaming DataFrame of its result table built of
the engine's shared Spark calls (:mod:`streaming.engine.builders`)."""
