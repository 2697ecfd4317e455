"""The generator: synthetic out-of-order and late events made from Spark's ``rate`` source, deterministic for a seed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..builders import generated_events
from ..checks import duration_ms, require_int, require_positive_duration, require_share
from ..durations import parse_duration
from ..output.latency import PRODUCED
from .base import StreamSource

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["GeneratorSource", "generator_columns"]


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
    """``[event_time, key]`` columns of the generator, computed from the rate source's ``value`` and ``timestamp``
    (:func:`~streaming.engine.builders.generated_events`).

    A pure function of ``value`` for a given seed, so it applies to a static
    DataFrame as well as to the stream (that is how its determinism is tested).
    """
    from pyspark.sql import functions as F

    return generated_events(
        F.col("value") if value is None else value, F.col("timestamp") if timestamp is None else timestamp, source.seed, source.keys,
        source.max_lag_ms, source.late_share, source.late_delay_ms, source.stall_after_ms, source.events_per_second,
    )
