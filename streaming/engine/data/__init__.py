"""The data a run reads: the sample feeds (``feeds``), a user's datasets under the data root (``datasets``) and what Spark reads of
them (``preview``), which columns hold what (``columns``) and how their times are written (``times``), and how a replayed dataset
is cut into micro-batches (``batching``)."""
