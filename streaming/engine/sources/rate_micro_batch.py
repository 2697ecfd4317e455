"""Spark's ``rate-micro-batch`` source: a fixed number of rows per micro-batch, event time advancing a fixed step per batch."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..builders import key_column
from ..checks import require_int, require_positive_duration
from ..durations import parse_duration
from .base import StreamSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["RateMicroBatchSource"]


@dataclass(frozen=True)
class RateMicroBatchSource(StreamSource):
    """Spark's ``rate-micro-batch`` source: ``rows_per_batch`` rows per batch, event time advancing ``advance`` per batch from the query's start."""

    rows_per_batch: int = 100
    advance: str = "1 second"
    keys: int = 4
    kind: Literal["rate-micro-batch"] = field(default="rate-micro-batch", init=False)

    def __post_init__(self) -> None:
        require_int("source.rows_per_batch", self.rows_per_batch, 1)
        require_positive_duration("source.advance", self.advance)
        require_int("source.keys", self.keys, 1, 100_000)

    @property
    def ends(self) -> bool:
        return True  # under available-now, Spark fixes the end at the batch due when the query starts

    @property
    def advance_ms(self) -> int:
        return parse_duration(self.advance)

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
        from pyspark.sql import functions as F

        rate = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", self.rows_per_batch)
            .option("advanceMillisPerBatch", self.advance_ms)
            .option("startTimestamp", now_ms)
            .load()
        )
        return rate.select(F.col("timestamp").alias("event_time"), key_column(F.col("value"), self.keys)), None
