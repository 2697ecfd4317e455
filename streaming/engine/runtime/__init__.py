"""The Spark a run runs on: the session (``session``: local, a standalone cluster or Spark Connect), a local Spark Connect server
(``connect``), the background servers started and stopped by pid (``daemons``), the JVM parts fetched at set-up (``jars``), the class
archive made at set-up that a driver starts from (``archive``), the heap's watch (``heap``) and Java compiled in the driver (``janino``)."""
