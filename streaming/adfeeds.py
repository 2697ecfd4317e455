"""Deterministic generation of a pair of feeds to join: ad impressions and the clicks on them.

The programming guide's join example, replayable: two folders of CSV files,
one file per micro-batch on each side, replayed in file-name order
(``batch-0000.csv``, ...). Batch ``i`` of both sides arrives at
``start + i * batch_interval``.

- **Impressions** (``impression_id``, ``ad_id``, ``impression_time``,
  ``campaign``): ``impressions_per_batch`` per batch, each with
  ``impression_time = arrival - lag``, the lag uniform in ``0..max_lag_seconds``
  plus ``late_delay_seconds`` for the ``late_share`` drawn as very late.
- **Clicks** (``impression_id``, ``click_time``): a ``click_through`` share of
  the impressions is clicked ``delay`` seconds after it was shown, the delay
  drawn from an exponential distribution of mean ``mean_click_delay_seconds``
  (whole seconds, at most ``max_click_delay_seconds``). A click arrives in the
  first batch at or after ``click_time + lag`` (lateness drawn as for
  impressions); a click arriving after the last batch is not written.

Both sides share the key ``impression_id`` and name their times differently,
so they join on ``impression_id`` with a time range on ``click_time`` against
``impression_time``. Everything is drawn from ``random.Random(spec.seed)``.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Final

from .engine.checks import require_int, require_share, whole_second_utc
from .engine.data.feeds import TIME_FORMAT, batch_file_name
from .engine.sources.ads import CAMPAIGNS

__all__ = [
    "CATALOG_COLUMNS", "CLICK_COLUMNS", "IMPRESSION_COLUMNS", "AdFeedSpec", "Click", "Impression", "generate_ads", "sample_ad_catalogs", "sample_ad_specs",
    "write_ad_catalog", "write_ad_feeds",
]

IMPRESSION_COLUMNS: Final = ("impression_id", "ad_id", "impression_time", "campaign")
CLICK_COLUMNS: Final = ("impression_id", "click_time")
CATALOG_COLUMNS: Final = ("ad_id", "advertiser", "cost_per_click", "listed_at")
ADVERTISERS: Final = ("acme", "globex", "initech", "umbrella")


@dataclass(frozen=True)
class AdFeedSpec:
    """Everything that determines a pair of ad feeds; two equal specs write byte-identical files (see the module docstring)."""

    start: datetime
    batches: int
    batch_interval_seconds: int
    impressions_per_batch: int
    ads: int
    click_through: float
    mean_click_delay_seconds: int
    max_click_delay_seconds: int
    max_lag_seconds: int
    late_share: float
    late_delay_seconds: int
    seed: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", whole_second_utc("start", self.start))
        require_int("batches", self.batches, 1, 10_000)
        require_int("batch_interval_seconds", self.batch_interval_seconds, 1)
        require_int("impressions_per_batch", self.impressions_per_batch, 1)
        require_int("ads", self.ads, 1, 9_999)
        require_share("click_through", self.click_through)
        require_int("mean_click_delay_seconds", self.mean_click_delay_seconds, 0)
        require_int("max_click_delay_seconds", self.max_click_delay_seconds, self.mean_click_delay_seconds)
        require_int("max_lag_seconds", self.max_lag_seconds, 0)
        require_share("late_share", self.late_share)
        require_int("late_delay_seconds", self.late_delay_seconds, 0)
        require_int("seed", self.seed, 0)

    def arrival(self, batch: int) -> datetime:
        """When batch ``batch`` of either side arrives."""
        return self.start + timedelta(seconds=batch * self.batch_interval_seconds)


@dataclass(frozen=True)
class Impression:
    batch: int
    impression_id: str
    ad_id: str
    impression_time: datetime
    campaign: str
    late: bool

    def row(self) -> list[str]:
        return [self.impression_id, self.ad_id, self.impression_time.strftime(TIME_FORMAT), self.campaign]


@dataclass(frozen=True)
class Click:
    batch: int
    impression_id: str
    click_time: datetime
    late: bool

    def row(self) -> list[str]:
        return [self.impression_id, self.click_time.strftime(TIME_FORMAT)]


def generate_ads(spec: AdFeedSpec) -> tuple[list[Impression], list[Click]]:
    """``(impressions, clicks)``, each in batch order; every impression takes the same draws whatever the shares are."""
    rng = random.Random(spec.seed)
    end = spec.arrival(spec.batches - 1)
    impressions: list[Impression] = []
    clicks: list[Click] = []
    for batch in range(spec.batches):
        arrival = spec.arrival(batch)
        for index in range(spec.impressions_per_batch):
            ad = rng.randrange(spec.ads)
            late = rng.random() < spec.late_share
            shown = arrival - timedelta(seconds=rng.randint(0, spec.max_lag_seconds) + (spec.late_delay_seconds if late else 0))
            impression_id = f"imp-{batch:04d}-{index:04d}"
            impressions.append(Impression(batch, impression_id, f"ad-{ad:04d}", shown, CAMPAIGNS[ad % len(CAMPAIGNS)], late))
            clicked = rng.random() < spec.click_through
            delay = min(spec.max_click_delay_seconds, round(rng.expovariate(1 / spec.mean_click_delay_seconds))) if spec.mean_click_delay_seconds else 0
            click_late = rng.random() < spec.late_share
            lag = rng.randint(0, spec.max_lag_seconds) + (spec.late_delay_seconds if click_late else 0)
            if not clicked:
                continue
            click_time = shown + timedelta(seconds=delay)
            arrives = click_time + timedelta(seconds=lag)
            if arrives > end:
                continue
            click_batch = max(0, math.ceil((arrives - spec.start).total_seconds() / spec.batch_interval_seconds))
            clicks.append(Click(click_batch, impression_id, click_time, click_late))
    clicks.sort(key=lambda click: click.batch)
    return impressions, clicks


def write_ad_feeds(spec: AdFeedSpec, impressions_folder: Path, clicks_folder: Path) -> tuple[list[Path], list[Path]]:
    """Write both feeds (every batch file on each side, a header alone where a batch has no rows) and return their files in order.

    Each folder's earlier ``batch-*.csv`` files are removed first; other files (a README) are left alone.
    """
    impressions, clicks = generate_ads(spec)
    written = []
    for folder, header, events in ((impressions_folder, IMPRESSION_COLUMNS, impressions), (clicks_folder, CLICK_COLUMNS, clicks)):
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for path in folder.glob("batch-*.csv"):
            path.unlink()
        rows: list[list[list[str]]] = [[] for _ in range(spec.batches)]
        for event in events:
            rows[event.batch].append(event.row())
        paths = []
        for batch, batch_rows in enumerate(rows):
            path = folder / batch_file_name(batch)
            with path.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle, lineterminator="\n")
                writer.writerow(header)
                writer.writerows(batch_rows)
            paths.append(path)
        written.append(paths)
    return written[0], written[1]


def sample_ad_specs() -> dict[tuple[str, str], AdFeedSpec]:
    """The specs of the ad feed pairs shipped in ``sample_feeds/``, by their ``(impressions, clicks)`` folder names."""
    return {
        ("ad_impressions", "ad_clicks"): AdFeedSpec(
            start=datetime(2024, 3, 4, 12, 0, 0),
            batches=30,
            batch_interval_seconds=10,
            impressions_per_batch=20,
            ads=12,
            click_through=0.3,
            mean_click_delay_seconds=20,
            max_click_delay_seconds=90,
            max_lag_seconds=5,
            late_share=0.04,
            late_delay_seconds=120,
            seed=20240304,
        ),
    }


def write_ad_catalog(spec: AdFeedSpec, folder: Path) -> list[Path]:
    """Write the table of the spec's ads (``ad_id``, ``advertiser``, ``cost_per_click``, ``listed_at``), which a stream-static join enriches impressions from.

    One file, ``catalog.csv``; the last ad is left out, so a left outer join shows impressions without a match.
    """
    rng = random.Random(spec.seed + 1)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "catalog.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(CATALOG_COLUMNS)
        for ad in range(spec.ads - 1):
            listed = spec.start - timedelta(days=1 + ad)
            writer.writerow([f"ad-{ad:04d}", ADVERTISERS[ad % len(ADVERTISERS)], f"{rng.uniform(0.05, 2.0):.2f}", listed.strftime(TIME_FORMAT)])
    return [path]


def sample_ad_catalogs() -> dict[str, AdFeedSpec]:
    """The ad tables shipped in ``sample_feeds/``, by folder name: the ads of the sample feed pair."""
    return {"ad_catalog": sample_ad_specs()[("ad_impressions", "ad_clicks")]}
