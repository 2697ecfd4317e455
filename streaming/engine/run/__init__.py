"""Runs: a configuration started, tracked, kept and replayed.

``query`` starts a run (``start_run``, ``Run``) from any configuration that builds
its frame and its result table (the form's, a user's SQL, a live join);
``registry`` keeps the named runs of a session; ``checkpoints`` keeps a query's
folder so it resumes, and ``sharing`` its read-only link; ``runner`` replays a source to the end headless,
``walkthrough`` holds a replay still between micro-batches, and ``publish``
replays a feed or dataset into a Kafka topic batch by batch.
"""
