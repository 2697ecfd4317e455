"""The generator: synthetic out-of-order and late events made from Spark's ``rate`` source, deterministic for a seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..checks import duration_ms, require_int, require_positive_duration, require_share
from ..durations import parse_duration
from ..latency import PRODUCED
from .base import StreamSource
from .rate import key_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["GeneratorSource", "drawn", "generator_columns", "lagged_ms"]


@dataclass(frozen=True)
class GeneratorSource(StreamSource):
    """Synthetic events from Spark's ``rate`` source, deterministic for a given seed.

    Event ``n`` arrives at the rate source's timestamp; its event time lags that
    by a pseudo-random amount up to ``max_lag`` (out-of-order events), and a
    ``late_share`` of events lag by ``late_delay`` more (very late events).
    With ``stall_after``, event time stops advancing once that much of it has
    passed (counted in events, ``events_per_second``): input keeps arriving but
    the watermark stalls, as when a source's event time freezes.
    """

    events_per_second: int = 50
    keys: int = 4
    max_lag: str = "20 seconds"
    late_share: float = 0.05
    late_delay: str = "2 minutes"
    seed: int = 7
    stall_after: str | None = None
    kind: Literal["generator"] = field(default="generator", init=False)

    def __post_init__(self) -> None:
        require_int("source.events_per_second", self.events_per_second, 1, 10_000_000)
        if self.stall_after is not None:
            require_positive_duration("source.stall_after", self.stall_after)
        require_int("source.keys", self.keys, 1, 100_000)
        duration_ms("source.max_lag", self.max_lag)
        duration_ms("source.late_delay", self.late_delay)
        require_share("source.late_share", self.late_share)
        require_int("source.seed", self.seed, 0)

    @property
    def max_lag_ms(self) -> int:
        return parse_duration(self.max_lag)

    @property
    def late_delay_ms(self) -> int:
        return parse_duration(self.late_delay)

    @property
    def stall_after_ms(self) -> int | None:
        return None if self.stall_after is None else parse_duration(self.stall_after)

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, None]:
        from pyspark.sql import functions as F

        rate = spark.readStream.format("rate").option("rowsPerSecond", self.events_per_second).load()
        return rate.select(*generator_columns(self), F.unix_millis("timestamp").alias(PRODUCED)), None

    @property
    def stamp(self) -> str:
        return "when Spark's rate source made the row available"


def generator_columns(source: GeneratorSource, value: Column | None = None, timestamp: Column | None = None) -> list[Column]:
    """``[event_time, key]`` columns of the generator, computed from the rate source's ``value`` and ``timestamp``.

    A pure function of ``value`` for a given seed, so it applies to a static
    DataFrame as well as to the stream (that is how its determinism is tested).
    """
    from pyspark.sql import functions as F

    value = F.col("value") if value is None else value
    timestamp = F.col("timestamp") if timestamp is None else timestamp
    event_ms = lagged_ms(value, timestamp, source.seed, source.max_lag_ms, source.late_share, source.late_delay_ms)
    if source.stall_after_ms is not None:  # the clock stops: every event past the stall lags by the time since it
        stall_events = source.stall_after_ms * source.events_per_second // 1000
        event_ms = event_ms - F.greatest(value - F.lit(stall_events), F.lit(0)) * F.lit(1000) / F.lit(source.events_per_second)
        event_ms = event_ms.cast("bigint")
    return [F.timestamp_millis(event_ms).alias("event_time"), key_column(value, source.keys, salt=source.seed + 2)]


def drawn(seed: int, value: Column) -> Column:
    """A number in ``[0, 1)`` drawn for row ``value``: the same for the same seed and row, independent across seeds."""
    from pyspark.sql import functions as F

    return F.pmod(F.xxhash64(F.lit(seed), value), F.lit(1_000_000)) / F.lit(1_000_000.0)


def lagged_ms(value: Column, timestamp: Column, seed: int, max_lag_ms: int, late_share: float, late_delay_ms: int) -> Column:
    """Row ``value``'s event time in epoch ms: its arrival ``timestamp`` less a lag drawn in ``0..max_lag_ms``, and less
    ``late_delay_ms`` more for the ``late_share`` of rows drawn as very late (seeds ``seed`` and ``seed + 1``)."""
    from pyspark.sql import functions as F

    lag_ms = F.pmod(F.xxhash64(F.lit(seed), value), F.lit(max_lag_ms + 1))
    is_late = F.pmod(F.xxhash64(F.lit(seed + 1), value), F.lit(1_000_000)) < F.lit(int(late_share * 1_000_000))
    extra_ms = F.when(is_late, F.lit(late_delay_ms)).otherwise(F.lit(0))
    return F.unix_millis(timestamp) - lag_ms - extra_ms
