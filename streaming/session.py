"""The one SparkSession the product runs on.

Local by default: ``local[*]``, shuffle partitions sized to the cores (the
default 200 makes a windowed count on a laptop miss a 1 s trigger), UTC session
time zone, driver bound to loopback. ``SPARK_MASTER`` (e.g.
``spark://127.0.0.1:7077``) attaches to a standalone cluster instead, and
``SPARK_REMOTE`` (e.g. ``sc://127.0.0.1:15002``) to a Spark Connect server.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["session_settings", "get_session", "is_connect"]

APP_NAME = "streaming-lab"


def session_settings(environ: Mapping[str, str], cores: int) -> dict[str, str]:
    """Spark settings for a session on this machine; pure, so it is tested without a JVM."""
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(max(1, cores)),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.streaming.numRecentProgressUpdates": "100",
        "spark.driver.memory": environ.get("SPARK_DRIVER_MEMORY", "2g"),
    }
    if "SPARK_REMOTE" not in environ:
        host = environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        settings.update({"spark.driver.host": host, "spark.driver.bindAddress": host})
        settings["spark.master"] = environ.get("SPARK_MASTER", "local[*]")
    return settings


def get_session(environ: Mapping[str, str] | None = None):
    """Create (or return the running) SparkSession configured by :func:`session_settings`.

    Sets ``PYSPARK_PYTHON`` to this interpreter (so Python workers find the same
    packages) and ``SPARK_LOCAL_IP`` to loopback unless they are set already.
    """
    from pyspark.sql import SparkSession

    env = os.environ if environ is None else environ
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(APP_NAME)
    if "SPARK_REMOTE" in env:
        builder = builder.remote(env["SPARK_REMOTE"])
    for key, value in session_settings(env, os.cpu_count() or 1).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel(env.get("SPARK_LOG_LEVEL", "ERROR"))
    return spark


def is_connect(spark) -> bool:
    """True when ``spark`` is a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
