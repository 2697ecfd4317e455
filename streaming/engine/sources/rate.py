"""Spark's ``rate`` source: rows stamped with the processing time, spread over a number of keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..builders import key_column
from ..checks import require_int
from ..output.latency import PRODUCED
from .base import StreamSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["RateSource"]


@dataclass(frozen=True)
class RateSource(StreamSource):
    """Spark's ``rate`` source: ``rows_per_second`` rows stamped with the processing time."""

    rows_per_second: int = 100
    keys: int = 4
    kind: Literal["rate"] = field(default="rate", init=False)

    def __post_init__(self) -> None:
        require_int("source.rows_per_second", self.rows_per_second, 1)
        require_int("source.keys", self.keys, 1, 100_000)

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
        from pyspark.sql import functions as F

        rate = spark.readStream.format("rate").option("rowsPerSecond", self.rows_per_second).load()
        return rate.select(F.col("timestamp").alias("event_time"), key_column(F.col("value"), self.keys), F.unix_millis("timestamp").alias(PRODUCED)), None

    @property
    def stamp(self) -> str:
        return "when Spark's rate source made the row available"
