"""The generator's paired streams: ad impressions and the clicks on them, live from two of Spark's ``rate`` sources, deterministic for a seed.

The live counterpart of the bundled ``ad_impressions``/``ad_clicks`` feeds
(same columns), for a join that runs as long as the user lets it:

- **Impressions** (``impression_id``, ``ad_id``, ``impression_time``,
  ``campaign``): row ``n`` of the first rate source, ``impressions_per_second``
  a second, is impression ``imp-n`` of one of ``ads`` ads (each ad in one
  campaign, as in the bundled feeds). Its time is its arrival less a lag drawn
  in ``0..max_lag``, and less ``late_delay`` more for the ``late_share`` drawn
  as very late.
- **Clicks** (``impression_id``, ``click_time``): row ``n`` of the second rate
  source, ``impressions_per_second × click_through`` a second, is a click on
  the impression that arrived ``delay`` before it, the delay drawn from an
  exponential distribution of mean ``mean_click_delay`` capped at
  ``max_click_delay``: on average ``click_through`` clicks per impression, some
  impressions clicked twice, most never. A click whose impression would come
  before the stream's start is left out. Its time is its impression's time plus
  the delay: it is as out of order and as late as its impression (the two
  rate sources start within milliseconds of each other, which the delay
  absorbs).

Each row is a pure function of its rate row (value and timestamp) and the
seed: :meth:`AdStreams.impression_columns` and :meth:`AdStreams.click_columns`
apply to a batch frame as well as to the stream, which is how they are tested.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from ..builders import CAMPAIGNS, click_columns, impression_columns
from ..checks import duration_ms, require_int, require_share
from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["AD_STREAMS", "CAMPAIGNS", "AdStream", "AdStreams"]

AdStream = Literal["impressions", "clicks"]
AD_STREAMS: Final[tuple[AdStream, ...]] = ("impressions", "clicks")
EVENT_TIMES: Final[dict[AdStream, str]] = {"impressions": "impression_time", "clicks": "click_time"}


@dataclass(frozen=True)
class AdStreams:
    """Everything that determines the live pair (see the module docstring); durations as text, e.g. ``"20 seconds"``.

    The defaults make a pair whose late rows and unclicked impressions show within a minute.
    """

    impressions_per_second: int = 50
    ads: int = 20
    click_through: float = 0.3
    mean_click_delay: str = "5 seconds"
    max_click_delay: str = "20 seconds"
    max_lag: str = "2 seconds"
    late_share: float = 0.05
    late_delay: str = "30 seconds"
    seed: int = 7

    def __post_init__(self) -> None:
        require_int("impressions_per_second", self.impressions_per_second, 1, 1_000_000)
        require_int("ads", self.ads, 1, 9_999)
        require_share("click_through", self.click_through)
        if self.clicks_per_second < 1:
            raise ConfigError(
                "click_through", self.click_through,
                f"gives fewer than one click a second at {self.impressions_per_second} impressions a second; raise either",
            )
        mean, cap = duration_ms("mean_click_delay", self.mean_click_delay), duration_ms("max_click_delay", self.max_click_delay)
        if cap < mean:
            raise ConfigError("max_click_delay", self.max_click_delay, f"is shorter than the mean click delay ({self.mean_click_delay})")
        duration_ms("max_lag", self.max_lag)
        require_share("late_share", self.late_share)
        duration_ms("late_delay", self.late_delay)
        require_int("seed", self.seed, 0)

    @property
    def clicks_per_second(self) -> int:
        """The click stream's rate: ``impressions_per_second × click_through``, rounded."""
        return round(self.impressions_per_second * self.click_through)

    @staticmethod
    def event_time(stream: AdStream) -> str:
        """The event-time column of ``stream``: ``impression_time`` or ``click_time``."""
        return EVENT_TIMES[stream]

    def read(self, spark: SparkSession, stream: AdStream) -> DataFrame:
        """``stream`` (``impressions`` or ``clicks``) as a streaming DataFrame of its rate source."""
        rate = self.impressions_per_second if stream == "impressions" else self.clicks_per_second
        rows = spark.readStream.format("rate").option("rowsPerSecond", rate).load()
        columns = self.impression_columns() if stream == "impressions" else self.click_columns()
        frame = rows.select(*columns)
        return frame if stream == "impressions" else frame.where("impression_id IS NOT NULL")

    def impression_columns(self, value: Column | None = None, timestamp: Column | None = None) -> list[Column]:
        """The impression made of rate row ``value`` arriving at ``timestamp`` (the rate source's columns by default)."""
        from pyspark.sql import functions as F

        return impression_columns(
            F.col("value") if value is None else value, F.col("timestamp") if timestamp is None else timestamp, self.seed, self.ads,
            duration_ms("max_lag", self.max_lag), self.late_share, duration_ms("late_delay", self.late_delay),
        )

    def click_columns(self, value: Column | None = None, timestamp: Column | None = None) -> list[Column]:
        """The click made of click-stream rate row ``value`` arriving at ``timestamp``: ``impression_id`` null when its impression precedes the start."""
        from pyspark.sql import functions as F

        return click_columns(
            F.col("value") if value is None else value, F.col("timestamp") if timestamp is None else timestamp, self.seed,
            duration_ms("max_lag", self.max_lag), self.late_share, duration_ms("late_delay", self.late_delay), self.impressions_per_second,
            self.clicks_per_second, duration_ms("mean_click_delay", self.mean_click_delay), duration_ms("max_click_delay", self.max_click_delay),
        )
