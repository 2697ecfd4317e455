"""The exact answer: a batch (not streaming) windowed count over every row of a feed, no watermark.

This is what a streaming run would produce with an infinite watermark; the
completeness of a run is measured against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..engine.durations import parse_duration
from ..engine.feeds import event_columns, feed_files, feed_schema
from ..engine.query import windowed_counts
from ..engine.results import ResultTable

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["exact_counts"]


def exact_counts(spark: SparkSession, feed_dir: Path, window: str, slide: str | None = None) -> pd.DataFrame:
    """Windowed count per key over all well-formed rows of ``feed_dir`` with Spark's batch engine.

    The rows are parsed and counted by the same expressions as the streaming
    query, and folded into a complete-mode :class:`~streaming.engine.results.ResultTable`:
    columns ``window_start, window_end, key, count`` (UTC-naive timestamps),
    sorted; malformed rows are left out, as the streaming query leaves them out.
    """
    from pyspark.sql import functions as F

    window_ms = parse_duration(window, field="window")
    slide_ms = parse_duration(slide, field="slide") if slide is not None else window_ms
    rows = (
        spark.read.schema(feed_schema(Path(feed_dir)))
        .option("header", True)
        .csv([str(path) for path in feed_files(Path(feed_dir))])
        .select(*event_columns("event_time", "key"))
        .where(F.col("event_time").isNotNull() & F.col("key").isNotNull())
    )
    table = ResultTable("complete")
    table.apply(0, [tuple(row) for row in windowed_counts(rows, window_ms, slide_ms).collect()])
    return table.frame()
