"""Spark's ``rate`` source: rows stamped with the processing time, spread over a number of keys."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..checks import require_int
from ..latency import PRODUCED
from .base import StreamSource

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["RateSource", "key_column"]


def key_column(value: Column, keys: int, salt: int = 0) -> Column:
    """``key-N`` with ``N`` the row number ``value`` modulo ``keys`` (hashed with ``salt`` first when it is not 0), as column ``key``."""
    from pyspark.sql import functions as F

    bucket = F.pmod(F.xxhash64(F.lit(salt), value), F.lit(keys)) if salt else F.pmod(value, F.lit(keys))
    return F.concat(F.lit("key-"), bucket.cast("string")).alias("key")


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
