"""The exact answer: a batch (not streaming) windowed count over every row of a feed, no watermark.

This is what a streaming run would produce with an infinite watermark; the
completeness of a run is measured against it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .durations import format_duration, parse_duration
from .sources import TIME_FORMAT, feed_files, feed_header

__all__ = ["exact_counts"]


def exact_counts(spark, feed_dir: Path, window: str, slide: str | None = None) -> pd.DataFrame:
    """Windowed count per key over all well-formed rows of ``feed_dir`` with Spark's batch engine.

    Columns ``window_start, window_end, key, count`` (UTC-naive timestamps),
    sorted; malformed rows are left out, as the streaming query leaves them out.
    """
    from pyspark.sql import functions as F

    header = feed_header(Path(feed_dir))
    schema = ", ".join(f"`{name}` string" for name in header)
    window_ms = parse_duration(window, field="window")
    slide_ms = parse_duration(slide, field="slide") if slide is not None else window_ms
    rows = (
        spark.read.schema(schema)
        .option("header", True)
        .csv([str(path) for path in feed_files(Path(feed_dir))])
        .select(
            F.try_to_timestamp(F.trim("event_time"), F.lit(TIME_FORMAT)).alias("event_time"),
            F.nullif(F.trim("key"), F.lit("")).alias("key"),
        )
        .where(F.col("event_time").isNotNull() & F.col("key").isNotNull())
    )
    counts = (
        rows.groupBy(F.window("event_time", format_duration(window_ms), format_duration(slide_ms)).alias("window"), "key")
        .count()
        .select(
            F.unix_micros(F.col("window.start")).alias("window_start"),
            F.unix_micros(F.col("window.end")).alias("window_end"),
            "key",
            "count",
        )
        .collect()
    )
    frame = pd.DataFrame([tuple(row) for row in counts], columns=["window_start", "window_end", "key", "count"])
    for column in ("window_start", "window_end"):
        frame[column] = pd.to_datetime(frame[column].astype("int64"), unit="us")
    frame["count"] = frame["count"].astype("int64")
    return frame.sort_values(["window_start", "window_end", "key"], ignore_index=True)
