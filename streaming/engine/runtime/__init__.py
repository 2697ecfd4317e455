"""The Spark a run runs on: the session (``session``: local, a standalone cluster or Spark Connect), a local Spark Connect server
(``connect``), the background servers started and stopped by pid (``daemons``) and the JVM parts fetched at set-up (``jars``)."""
