"""The driver's heap, watched from inside its JVM: a heap that stays full ends the JVM, so the app replaces the session within seconds.

A driver whose heap fills (a plan that grows without bound, a result
collected whole) does not always raise ``OutOfMemoryError``: its collector
runs full collections back to back, each freeing a little, and every call
into the JVM waits behind them, so every page of every user stays blank for
minutes. ``HeapWatch.java`` ends such a JVM with the exit code of
``-XX:+ExitOnOutOfMemoryError`` (which the driver also runs with, for the
error itself); the app then sees its JVM gone, as after a crash, starts a
new session and lists the kept queries for Resume, saying the heap filled
(:func:`exit_cause`).

Compiled once per JVM by Janino, the Java compiler Spark ships, as the SQL
plan walk is.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from .janino import new_compiled

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HEAP_EXIT_CODE", "exit_cause", "exit_code", "watch_heap"]

SOURCE = Path(__file__).with_name("HeapWatch.java")
HEAP_EXIT_CODE = 3
"""The exit code of a JVM ended by ``-XX:+ExitOnOutOfMemoryError``, which the watch ends a full heap's JVM with too."""
HELD_SHARE = 0.95
"""The share of the heap's maximum still in use after collection that counts as full."""
WINDOW_MILLIS = 10_000
"""The stretch the collector's work is judged over."""
FULL_COLLECTIONS = 2
"""Full collections within the window that, with a full heap, end the JVM: a healthy G1 heap runs none."""
COLLECTING_SHARE = 0.5
"""The share of the window spent collecting that, with a full heap, ends the JVM too."""


def watch_heap(spark: SparkSession) -> None:
    """Start the heap's watch in ``spark``'s driver JVM (a classic session's), once per JVM: the JVM's system properties remember it."""
    context = spark.sparkContext
    jvm = context._jvm
    assert jvm is not None
    system = jvm.java.lang.System
    if system.getProperty("streaming-lab.heap-watch") is not None:
        return
    new_compiled(context, SOURCE, "HeapWatch").start(HELD_SHARE, WINDOW_MILLIS, FULL_COLLECTIONS, COLLECTING_SHARE, HEAP_EXIT_CODE)
    system.setProperty("streaming-lab.heap-watch", "on")


EXIT_WAIT_SECONDS = 5.0
"""How long :func:`exit_code` waits for a JVM that stopped answering to exit: an ended JVM's connection closes before its process is gone."""


def exit_code(spark: SparkSession, wait: float = EXIT_WAIT_SECONDS) -> int | None:
    """The exit code of a classic session's JVM, waiting up to ``wait`` seconds for it to exit; ``None`` when it still runs then, or when
    its process is not this one's child."""
    process = getattr(getattr(spark.sparkContext, "_gateway", None), "proc", None)
    if process is None:
        return None
    try:
        return int(process.wait(timeout=wait))
    except subprocess.TimeoutExpired:
        return None


def exit_cause(code: int | None) -> str:
    """Why a driver JVM that exited with ``code`` did, in words for the pages."""
    if code == HEAP_EXIT_CODE:
        return "its JVM's heap filled, so the JVM was ended; SPARK_DRIVER_MEMORY sets the heap"
    return "its JVM exited"
