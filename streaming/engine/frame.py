"""The form's query as Spark calls: a :class:`~streaming.engine.config.QueryConfig` in, the streaming DataFrame of its result table out.

:func:`build_frame` reads the source, counts and leaves out malformed rows,
sets the watermark, deduplicates and aggregates per window and key
(``window_start``/``window_end`` as epoch microseconds, ``key``, ``count``);
:func:`exact_frame` is the same aggregation as one batch query over every row.
The config calls it (:meth:`~streaming.engine.config.QueryConfig.build`), and
:func:`~streaming.engine.query.start_run` starts whatever a config builds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .durations import format_duration
from .errors import ConfigError
from .latency import LATENCY_METRICS, PRODUCED, QUANTILES

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from .config import QueryConfig
    from .sources import Feeder

__all__ = ["INPUT_METRICS", "VALUE_AGGREGATIONS", "aggregate_column", "build_frame", "exact_frame", "malformed_rows", "windowed_counts"]

INPUT_METRICS = "input"
"""The observation that counts a stream's input and malformed rows (``input_rows``, ``malformed_rows``)."""

VALUE_AGGREGATIONS: tuple[str, ...] = ("sum", "avg", "min", "max", "approx_distinct")
"""The aggregates of a value column the form offers besides ``count``."""


def build_frame(spark: SparkSession, config: QueryConfig, staging: Path, now_ms: int, *, latency: bool = True) -> tuple[DataFrame, Feeder | None]:
    """``(frame, feeder)``: the result-table DataFrame for ``config`` and the source's feeder (or ``None``).

    With ``latency`` (and a source whose rows carry a produce time, in micro-batches) each batch observes its
    records' produce times (:data:`~streaming.engine.latency.LATENCY_METRICS`); ``False`` leaves that out, as a benchmark's baseline does.

    Malformed rows (unparsable ``event_time``, missing ``key``, or a missing id when deduplicating) are counted in
    the observed metrics ``input.malformed_rows`` and left out; they never reach
    the aggregation. With ``deduplicate`` a row whose id was seen within the
    watermark is dropped before the aggregation (the operator's
    ``numDroppedDuplicateRows``).
    """
    frame, feeder = config.source.read(spark, staging, now_ms)
    try:
        return _result_frame(_input_frame(frame, config, latency=latency), config), feeder
    except BaseException:
        if feeder is not None:
            feeder.stop()
        raise


def _input_frame(frame: DataFrame, config: QueryConfig, *, latency: bool) -> DataFrame:
    """The source's rows observed (input and malformed counts, produce times), filtered, watermarked and deduplicated as :func:`build_frame` says."""
    from pyspark.sql import functions as F

    malformed = malformed_rows(config)
    frame = frame.observe(
        INPUT_METRICS,
        F.count(F.lit(1)).alias("input_rows"),
        F.coalesce(F.sum(F.when(malformed, 1).otherwise(0)), F.lit(0)).alias("malformed_rows"),
    ).where(~malformed)
    if latency and PRODUCED in frame.columns and config.trigger != "real_time":
        frame = frame.observe(
            LATENCY_METRICS,
            F.count(F.lit(1)).alias("produced_count"),
            F.percentile(F.col(PRODUCED), [index / QUANTILES for index in range(QUANTILES + 1)]).alias("produced_percentiles"),
        )
    if config.watermark_ms is not None:
        frame = frame.withWatermark("event_time", format_duration(config.watermark_ms))
    if config.deduplicate:
        frame = frame.dropDuplicatesWithinWatermark(["dedup_id"])
    return frame


def exact_frame(spark: SparkSession, config: QueryConfig) -> DataFrame:
    """The answer ``config`` would reach with an infinite watermark: the same aggregation over every well-formed row of its feed, as one batch query.

    Malformed rows are left out as the stream leaves them out; with
    ``deduplicate`` every id is kept once (``dropDuplicates``: an infinite
    watermark forgets no id). Only sources with an end have one (:meth:`~streaming.engine.sources.StreamSource.rows`).
    """
    frame = config.source.rows(spark).where(~malformed_rows(config))
    if config.deduplicate:
        frame = frame.dropDuplicates(["dedup_id"])
    return _result_frame(frame, config)


def malformed_rows(config: QueryConfig) -> Column:
    """True for a row the query leaves out: no parsable ``event_time``, no ``key``, or no id when deduplicating."""
    from pyspark.sql import functions as F

    malformed = F.col("event_time").isNull() | F.col("key").isNull()
    if config.deduplicate:
        malformed = malformed | F.col("dedup_id").isNull()  # without an id, a row cannot be told from a duplicate
    return malformed


def _result_frame(frame: DataFrame, config: QueryConfig) -> DataFrame:
    from pyspark.sql import functions as F

    if config.aggregation == "none":
        produced = [PRODUCED] if config.trigger == "real_time" and PRODUCED in frame.columns else []
        return frame.select(F.unix_micros("event_time").alias("event_time"), "key", *produced)
    return windowed_counts(frame, config.window_ms, config.slide_ms, config.aggregation, config.session_gap_ms)


def aggregate_column(aggregation: str) -> Column:
    """The aggregate of the ``value`` column for a value aggregation: numbers (text that is not one is null) or, for ``approx_distinct``, any value."""
    from pyspark.sql import functions as F

    value = F.col("value")
    if aggregation == "approx_distinct":
        return F.approx_count_distinct(value)
    functions = {"sum": F.sum, "avg": F.avg, "min": F.min, "max": F.max}
    if aggregation not in functions:
        raise ConfigError("aggregation", aggregation, f"is not one of count, {', '.join(VALUE_AGGREGATIONS)}")
    return functions[aggregation](value.try_cast("double"))


def windowed_counts(
    frame: DataFrame, window_ms: int, slide_ms: int, aggregation: str = "count", session_gap_ms: int | None = None
) -> DataFrame:
    """The aggregate per ``key`` and event-time window ``[start, end)``: ``window_start``/``window_end`` in epoch microseconds, ``key``, and ``count``.

    A value aggregation yields ``value`` (the aggregate) before ``count`` (the
    rows it was computed over): the count is what completeness is measured by,
    whatever the aggregate.

    With ``session_gap_ms`` the windows are sessions (``session_window``): a
    key's session ends ``session_gap_ms`` after its last event.
    """
    from pyspark.sql import functions as F

    if session_gap_ms is not None:
        window = F.session_window("event_time", format_duration(session_gap_ms))
    else:
        window = F.window("event_time", format_duration(window_ms), format_duration(slide_ms))
    grouped = frame.groupBy(window.alias("window"), "key")
    if aggregation == "count":
        measured, numbers = grouped.count(), ["count"]
    else:
        measured, numbers = grouped.agg(aggregate_column(aggregation).alias("value"), F.count(F.lit(1)).alias("count")), ["value", "count"]
    return measured.select(
        F.unix_micros(F.col("window.start")).alias("window_start"),
        F.unix_micros(F.col("window.end")).alias("window_end"),
        "key",
        *numbers,
    )


