"""The form's query as Spark calls: a :class:`~streaming.engine.query.config.QueryConfig` in, the streaming DataFrame of its result table out.

:func:`build_frame` reads the source, counts and leaves out malformed rows,
sets the watermark, deduplicates and aggregates per window and key
(``window_start``/``window_end`` as epoch microseconds, ``key``, ``count``);
:func:`exact_frame` is the same aggregation as one batch query over every row.
The config calls it (:meth:`~streaming.engine.query.config.QueryConfig.build`), and
:func:`~streaming.engine.run.query.start_run` starts whatever a config builds.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..builders import INPUT_METRICS, counted_input, malformed_rows, windowed_aggregate
from ..durations import format_duration
from ..output.latency import LATENCY_METRICS, PRODUCED, QUANTILES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..sources import Feeder
    from .config import QueryConfig

__all__ = ["INPUT_METRICS", "VALUE_AGGREGATIONS", "build_frame", "exact_frame", "windowed_counts"]

VALUE_AGGREGATIONS: tuple[str, ...] = ("sum", "avg", "min", "max", "approx_distinct")
"""The aggregates of a value column the form offers besides ``count``."""


def build_frame(spark: SparkSession, config: QueryConfig, staging: Path, now_ms: int, *, latency: bool = True) -> tuple[DataFrame, Feeder | None]:
    """``(frame, feeder)``: the result-table DataFrame for ``config`` and the source's feeder (or ``None``).

    With ``latency`` (and a source whose rows carry a produce time, in micro-batches) each batch observes its
    records' produce times (:data:`~streaming.engine.output.latency.LATENCY_METRICS`); ``False`` leaves that out, as a benchmark's baseline does.

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


_PERCENTILES = f"percentile(`{PRODUCED}`, from_json('[{','.join(f'{index / QUANTILES!r}' for index in range(QUANTILES + 1))}]', 'array<double>'))"
"""The produce times' percentiles as one expression Spark parses, its fractions one JSON text. ``F.percentile`` with a list sends each of
its 1,001 fractions as a literal of its own, about 4,500 py4j round trips, 0.75 s of a 1.0 s Start on a warm server; written as
``array(0.0D, 0.001D, ...)`` they were one trip, but Spark analysed 1,001 literals and the array of them: observing the percentiles took
70-110 ms of each Start, and 20-40 ms with the fractions read from one text (the same doubles, the same percentiles)."""


def _input_frame(frame: DataFrame, config: QueryConfig, *, latency: bool) -> DataFrame:
    """The source's rows observed (input and malformed counts, produce times), filtered, watermarked and deduplicated as :func:`build_frame` says."""
    from pyspark.sql import functions as F

    frame = counted_input(frame, malformed_rows(config.deduplicate))
    if latency and PRODUCED in frame.columns and config.trigger != "real_time":
        frame = frame.observe(
            LATENCY_METRICS,
            F.count(F.lit(1)).alias("produced_count"),
            F.expr(_PERCENTILES).alias("produced_percentiles"),
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
    frame = config.source.rows(spark).where(~malformed_rows(config.deduplicate))
    if config.deduplicate:
        frame = frame.dropDuplicates(["dedup_id"])
    return _result_frame(frame, config)


def _result_frame(frame: DataFrame, config: QueryConfig) -> DataFrame:
    from pyspark.sql import functions as F

    if config.aggregation == "none":
        produced = [PRODUCED] if config.trigger == "real_time" and PRODUCED in frame.columns else []
        return frame.select(F.unix_micros("event_time").alias("event_time"), "key", *produced)
    return windowed_counts(frame, config.window_ms, config.slide_ms, config.aggregation, config.session_gap_ms)


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
        spans = F.session_window("event_time", format_duration(session_gap_ms))
    else:
        spans = F.window("event_time", format_duration(window_ms), format_duration(slide_ms))
    measured = windowed_aggregate(frame, spans, aggregation)
    return measured.select(
        F.unix_micros(F.col("window.start")).alias("window_start"),
        F.unix_micros(F.col("window.end")).alias("window_end"),
        "key",
        *(["count"] if aggregation == "count" else ["value", "count"]),
    )
