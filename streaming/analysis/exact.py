"""The exact answer: the query's aggregation over every row of a feed as one batch query, no watermark.

This is what a streaming run would produce with an infinite watermark; the
completeness of a run is measured against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..engine.output.results import ResultTable
from ..engine.query.config import FeedSource, QueryConfig
from ..engine.run.query import exact_frame

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["exact_answer", "exact_counts"]


def exact_answer(spark: SparkSession, config: QueryConfig) -> pd.DataFrame:
    """``config``'s aggregation over all well-formed rows of its feed, folded as a complete-mode result table.

    Columns ``window_start, window_end, key, count`` (and ``value`` before
    ``count`` for a value aggregation), UTC-naive timestamps, sorted. Parsed,
    filtered, deduplicated and aggregated by the same expressions as the
    streaming query (:func:`~streaming.engine.run.query.exact_frame`); the
    watermark, output mode and trigger of ``config`` do not matter.
    """
    table = ResultTable("complete", config.aggregation)
    table.apply(0, [tuple(row) for row in exact_frame(spark, config).collect()])
    return table.frame()


def exact_counts(spark: SparkSession, feed_dir: Path, window: str, slide: str | None = None) -> pd.DataFrame:
    """The exact windowed count per key of a sample-layout feed folder (``event_time``, ``key`` CSV files); see :func:`exact_answer`."""
    return exact_answer(spark, QueryConfig(FeedSource(Path(feed_dir), seconds_per_file=0), window=window, slide=slide, watermark=None))
