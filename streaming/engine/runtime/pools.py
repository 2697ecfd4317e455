"""Fair share on a server a team shares: each owner's queries run their jobs in a pool of their own.

A classic session schedules its jobs FAIR (``spark.scheduler.mode``, :func:`~streaming.engine.runtime.session.server_settings`):
the pools share the driver's task slots evenly, and within a pool jobs go first come, first served. Scheduled FIFO, every
job of every query waits in one queue behind the stages submitted before it: another user's first batch waits until a
query's stage of many tasks is done.

A query's jobs are in the pool named by the local property ``spark.scheduler.pool`` of the thread that started it:
Spark's stream execution thread takes a copy of its starter's local properties, and its ``foreachBatch`` calls run
their jobs on that thread. PySpark pins each Python thread to a JVM thread, so a property set from Python holds for the
Python thread that starts the query. Spark makes a pool the first time a job names it (weight 1, no minimum share,
first come first served within). On Spark Connect the client sets no local property: the server's scheduler is its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .session import is_connect

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["POOL_PROPERTY", "SERVER_POOL", "owner_pool", "pool_name"]

POOL_PROPERTY = "spark.scheduler.pool"
SERVER_POOL = "server"
"""The pool of the server's own queries (the CLI's, a notebook's, the warm-up): apart from every user's and from Spark's
``default`` pool, where the pages' own jobs (a dataset's preview, say) run."""


def pool_name(owner: str | None) -> str:
    """The scheduler pool of ``owner``'s queries (:mod:`streaming.engine.owners`): ``owner-`` and 16 hex digits of the owner's
    SHA-256, or :data:`SERVER_POOL` for the server's own.

    A digest, so a name is the same on every server start and for every run of a kept query, holds only letters, digits
    and ``-``, and shows no user's e-mail in Spark's UI or logs; 64 bits keep two owners of one server apart."""
    if owner is None:
        return SERVER_POOL
    return "owner-" + hashlib.sha256(owner.encode("utf-8", "surrogatepass")).hexdigest()[:16]


@contextmanager
def owner_pool(spark: SparkSession, owner: str | None) -> Iterator[None]:
    """Within the block, the jobs this thread submits, and the queries it starts, run in ``owner``'s pool (:func:`pool_name`);
    the thread's earlier pool, or none, is set again after. Nothing on Spark Connect, whose client cannot set it."""
    if is_connect(spark):
        yield
        return
    context = spark.sparkContext
    before = context.getLocalProperty(POOL_PROPERTY)
    context.setLocalProperty(POOL_PROPERTY, pool_name(owner))
    try:
        yield
    finally:
        context.setLocalProperty(POOL_PROPERTY, before)  # type: ignore[arg-type]  # None takes the property off (Java null)
