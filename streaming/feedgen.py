"""Deterministic generation of replayable feeds: folders of CSV files, one file per micro-batch.

A feed is replayed in file-name order (``batch-0000.csv``, ``batch-0001.csv``, ...).
Batch ``i`` arrives at ``start + i * batch_interval``; each of its events has
``event_time = arrival - lag``. The lag is uniform in ``0..max_lag_seconds``
(ordinary out-of-order events) plus ``late_delay_seconds`` for the
``late_share`` of events drawn as very late. A ``malformed_share`` of rows is
written broken (an unparsable ``event_time`` or an empty ``key``) so that a
query's count of malformed rows can be checked.

Everything is drawn from ``random.Random(spec.seed)``: the same spec writes
byte-identical files.
"""

from __future__ import annotations

import csv
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

from .adfeeds import sample_ad_catalogs, sample_ad_specs, write_ad_catalog, write_ad_feeds
from .engine.checks import require_int, require_share, whole_second_utc
from .engine.data.feeds import TIME_FORMAT, batch_file_name
from .engine.errors import ConfigError

__all__ = [
    "BAD_EVENT_TIME",
    "DatasetSpec",
    "Event",
    "FeedSpec",
    "dataset_rows",
    "generate_events",
    "regenerate_samples",
    "sample_dataset_specs",
    "sample_specs",
    "write_dataset",
    "write_feed",
]

BAD_EVENT_TIME: Final = "not-a-time"
MAX_BATCHES: Final = 10_000


def _fail(name: str, value: object, message: str) -> ConfigError:
    return ConfigError(name, value, message)


def _check_keys(name: str, value: tuple[object, ...]) -> None:
    if not value:
        raise _fail(name, value, "must name at least one key")
    if not all(isinstance(key, str) and key for key in value):
        raise _fail(name, value, "must all be non-empty strings")
    if len(set(value)) != len(value):
        raise _fail(name, value, "must not repeat a key")


def _check_range(name: str, value: object) -> None:
    numbers = isinstance(value, tuple) and len(value) == 2 and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in value
    )
    if not numbers or not isinstance(value, tuple) or value[0] > value[1]:
        raise _fail(name, value, "must be a (low, high) pair of finite numbers with low <= high")


@dataclass(frozen=True)
class FeedSpec:
    """Everything that determines a feed; two equal specs write byte-identical feeds.

    ``start`` is the arrival time of the first batch, in UTC (naive, or aware
    and then converted to naive UTC), in whole seconds. ``late_keys`` restricts
    very late events to those keys (a flaky device); empty means any key.
    ``value_column``, if set, adds a column of numbers drawn uniformly from
    ``value_range`` and written with ``value_decimals`` decimals.
    """

    start: datetime
    batches: int
    batch_interval_seconds: int
    events_per_batch: int
    keys: tuple[str, ...]
    max_lag_seconds: int
    late_share: float
    late_delay_seconds: int
    seed: int
    malformed_share: float = 0.0
    late_keys: tuple[str, ...] = ()
    value_column: str | None = None
    value_range: tuple[float, float] = (0.0, 1.0)
    value_decimals: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", whole_second_utc("start", self.start))
        require_int("batches", self.batches, 1, MAX_BATCHES)
        require_int("batch_interval_seconds", self.batch_interval_seconds, 1)
        require_int("events_per_batch", self.events_per_batch, 1)
        for name in ("keys", "late_keys"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, (tuple, list)):
                raise _fail(name, value, "must be a tuple of strings")
            object.__setattr__(self, name, tuple(value))
        _check_keys("keys", self.keys)
        if self.late_keys:
            _check_keys("late_keys", self.late_keys)
            unknown = sorted(set(self.late_keys) - set(self.keys))
            if unknown:
                raise _fail("late_keys", self.late_keys, f"names keys not in keys: {', '.join(unknown)}")
        require_int("max_lag_seconds", self.max_lag_seconds, 0)
        require_share("late_share", self.late_share)
        require_int("late_delay_seconds", self.late_delay_seconds, 0)
        require_share("malformed_share", self.malformed_share)
        require_int("seed", self.seed, 0)
        if self.value_column is not None and (
            not isinstance(self.value_column, str)
            or not self.value_column.isidentifier()
            or self.value_column in ("event_time", "key")
        ):
            raise _fail("value_column", self.value_column, "must be an identifier other than event_time and key")
        _check_range("value_range", self.value_range)
        require_int("value_decimals", self.value_decimals, 0, 6)

    @property
    def columns(self) -> tuple[str, ...]:
        """The header row of every batch file."""
        return ("event_time", "key") if self.value_column is None else ("event_time", "key", self.value_column)

    def arrival(self, batch: int) -> datetime:
        """When batch ``batch`` arrives."""
        return self.start + timedelta(seconds=batch * self.batch_interval_seconds)


@dataclass(frozen=True)
class Event:
    """One generated row.

    ``event_time`` is ``None`` when the row was written with an unparsable time
    (``raw_event_time`` holds what was written) and ``key`` is ``None`` when the
    key was written empty. ``late`` marks a well-formed event drawn as very late.
    ``value`` is ``None`` when the spec has no value column.
    """

    batch: int
    arrival: datetime
    event_time: datetime | None
    key: str | None
    raw_event_time: str
    value: float | None
    late: bool

    @property
    def malformed(self) -> bool:
        """Whether the row cannot be parsed into an event time and key."""
        return self.event_time is None or self.key is None

    def row(self, value_decimals: int) -> list[str]:
        """The CSV fields of this event, the value written with ``value_decimals`` decimals."""
        fields = [self.raw_event_time, self.key or ""]
        if self.value is not None:
            fields.append(f"{self.value:.{value_decimals}f}")
        return fields


def generate_events(spec: FeedSpec) -> list[Event]:
    """All events of the feed ``spec`` describes, batch by batch in row order.

    Every event takes the same draws whatever the shares are, so changing one
    share does not reshuffle the rest of the feed.
    """
    rng = random.Random(spec.seed)
    late_keys = frozenset(spec.late_keys or spec.keys)
    low, high = spec.value_range
    events: list[Event] = []
    for batch in range(spec.batches):
        arrival = spec.arrival(batch)
        for _ in range(spec.events_per_batch):
            key = rng.choice(spec.keys)
            lag = rng.randint(0, spec.max_lag_seconds)
            late = key in late_keys and rng.random() < spec.late_share
            value = round(rng.uniform(low, high), spec.value_decimals)
            malformed = rng.random() < spec.malformed_share
            bad_time = rng.random() < 0.5
            event_time = arrival - timedelta(seconds=lag + (spec.late_delay_seconds if late else 0))
            time_ok = not (malformed and bad_time)
            events.append(
                Event(
                    batch=batch,
                    arrival=arrival,
                    event_time=event_time if time_ok else None,
                    key=None if malformed and not bad_time else key,
                    raw_event_time=event_time.strftime(TIME_FORMAT) if time_ok else BAD_EVENT_TIME,
                    value=value if spec.value_column is not None else None,
                    late=late and time_ok,
                )
            )
    return events


def write_feed(spec: FeedSpec, folder: Path, *, overwrite: bool = False) -> list[Path]:
    """Write the feed ``spec`` describes into ``folder`` and return the batch files in order.

    The folder is created if missing. If it already holds ``batch-*.csv`` files
    this raises :class:`FileExistsError`, unless ``overwrite`` is true, in which
    case those files are removed first. Other files (a README) are left alone.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted(folder.glob("batch-*.csv"))
    if existing and not overwrite:
        raise FileExistsError(f"{folder} already holds {len(existing)} batch files; pass overwrite=True to replace them")
    for path in existing:
        path.unlink()
    rows: list[list[list[str]]] = [[] for _ in range(spec.batches)]
    for event in generate_events(spec):
        rows[event.batch].append(event.row(spec.value_decimals))
    paths = []
    for batch, batch_rows in enumerate(rows):
        path = folder / batch_file_name(batch)
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(spec.columns)
            writer.writerows(batch_rows)
        paths.append(path)
    return paths


def sample_specs() -> dict[str, FeedSpec]:
    """The specs of the generated feeds shipped in ``sample_feeds/``, by folder name."""
    return {
        "web_clicks": FeedSpec(
            start=datetime(2024, 3, 4, 9, 0, 0),
            batches=40,
            batch_interval_seconds=10,
            events_per_batch=50,
            keys=("home", "search", "product", "checkout"),
            max_lag_seconds=15,
            late_share=0.03,
            late_delay_seconds=240,
            malformed_share=0.005,
            seed=20240304,
        ),
        "sensor_readings": FeedSpec(
            start=datetime(2024, 3, 4, 6, 0, 0),
            batches=30,
            batch_interval_seconds=10,
            events_per_batch=10,
            keys=("sensor-1", "sensor-2", "sensor-3", "sensor-4", "sensor-5"),
            max_lag_seconds=2,
            late_share=0.1,
            late_delay_seconds=300,
            late_keys=("sensor-5",),
            value_column="temperature",
            value_range=(18.0, 24.0),
            value_decimals=1,
            seed=7,
        ),
    }


def regenerate_samples(root: Path) -> dict[str, list[Path]]:
    """Rewrite every generated sample feed and dataset under ``root`` from :func:`sample_specs`, :func:`sample_dataset_specs`
    and :func:`~streaming.adfeeds.sample_ad_specs` (both feeds of a pair, and the ads' table)."""
    feeds = {name: write_feed(spec, Path(root) / name, overwrite=True) for name, spec in sample_specs().items()}
    for (left, right), pair in sample_ad_specs().items():
        feeds[left], feeds[right] = write_ad_feeds(pair, Path(root) / left, Path(root) / right)
    for name, pair in sample_ad_catalogs().items():
        feeds[name] = write_ad_catalog(pair, Path(root) / name)
    return feeds | {name: write_dataset(spec, Path(root) / name) for name, spec in sample_dataset_specs().items()}


# --------------------------------------------------------------------------- datasets shaped like users' exports


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset shaped like a user's export, generated from a :class:`FeedSpec`'s events.

    Columns: ``id`` (one per event; a ``duplicate_share`` of events is
    delivered a second time, same id and content, in the next batch),
    ``event_time`` (epoch milliseconds with a millisecond part, or a UTC
    timestamp for Parquet), ``arrival`` (when the row arrived, within its
    batch's interval, same form), ``key`` and ``value``, under the names given.
    A malformed event has a null event time or an empty key. One file per batch.
    """

    feed: FeedSpec
    file_format: Literal["json", "parquet"]
    names: tuple[str, str, str, str, str] = ("id", "event_time", "arrival", "key", "value")
    duplicate_share: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.file_format not in ("json", "parquet"):
            raise _fail("file_format", self.file_format, "must be json or parquet")
        if self.feed.value_column is None:
            raise _fail("feed.value_column", None, "must be set: a dataset has a value column")
        if len(set(self.names)) != 5:
            raise _fail("names", self.names, "must be five distinct column names")
        require_share("duplicate_share", self.duplicate_share)
        require_int("seed", self.seed, 0)

    def columns(self) -> dict[str, str | None]:
        """The dataset's column mapping (as :meth:`ColumnMapping.to_dict` writes it)."""
        id_name, event_time, arrival, key, value = self.names
        time_format = "epoch_ms" if self.file_format == "json" else "auto"
        return {"event_time": event_time, "time_format": time_format, "key": key, "value": value, "dedup_id": id_name,
                "arrival": arrival, "arrival_format": time_format}


def dataset_rows(spec: DatasetSpec) -> list[list[dict[str, object]]]:
    """The rows of each batch of ``spec``, in order (duplicates included)."""
    rng = random.Random(spec.seed)
    id_name, event_time, arrival, key, value = spec.names
    interval_ms = spec.feed.batch_interval_seconds * 1000
    batches: list[list[dict[str, object]]] = [[] for _ in range(spec.feed.batches)]

    def stamp(moment: datetime, extra_ms: int) -> object:
        at = moment.replace(tzinfo=UTC) + timedelta(milliseconds=extra_ms)
        return int(at.timestamp() * 1000) if spec.file_format == "json" else at

    for number, event in enumerate(generate_events(spec.feed)):
        row = {
            id_name: f"e-{number:06d}",
            event_time: None if event.event_time is None else stamp(event.event_time, -rng.randint(0, 999)),
            arrival: stamp(event.arrival, rng.randint(0, interval_ms - 1)),
            key: event.key or "",
            value: event.value,
        }
        batches[event.batch].append(row)
        if rng.random() < spec.duplicate_share and event.batch + 1 < spec.feed.batches:
            again = spec.feed.arrival(event.batch + 1)
            batches[event.batch + 1].append({**row, arrival: stamp(again, rng.randint(0, interval_ms - 1))})
    return batches


def write_dataset(spec: DatasetSpec, folder: Path) -> list[Path]:
    """Write ``spec``'s batches into ``folder`` (``part-0000.jsonl`` ... or ``.parquet``, replacing earlier parts) and its column mapping beside them."""
    import json

    import pyarrow as pa
    import pyarrow.parquet

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".jsonl" if spec.file_format == "json" else ".parquet"
    for path in folder.glob(f"part-*{suffix}"):
        path.unlink()
    paths = []
    for batch, rows in enumerate(dataset_rows(spec)):
        path = folder / f"part-{batch:04d}{suffix}"
        if spec.file_format == "json":
            path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
        else:
            id_name, event_time, arrival, key, value = spec.names
            schema = pa.schema([(id_name, pa.string()), (event_time, pa.timestamp("ms", tz="UTC")), (arrival, pa.timestamp("ms", tz="UTC")),
                                (key, pa.string()), (value, pa.float64())])
            pyarrow.parquet.write_table(pa.Table.from_pylist(rows, schema=schema), path)
        paths.append(path)
    (folder / ".columns.json").write_text(json.dumps(spec.columns(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return paths


def sample_dataset_specs() -> dict[str, DatasetSpec]:
    """The generated datasets shipped in ``sample_feeds/`` (users' export shapes), by folder name."""
    orders = FeedSpec(
        start=datetime(2024, 3, 4, 12, 0, 0), batches=24, batch_interval_seconds=10, events_per_batch=40,
        keys=("north", "south", "east", "west"), max_lag_seconds=20, late_share=0.04, late_delay_seconds=150,
        malformed_share=0.005, value_column="amount", value_range=(5.0, 250.0), seed=20240304,
    )
    meters = FeedSpec(
        start=datetime(2024, 3, 4, 18, 0, 0), batches=20, batch_interval_seconds=15, events_per_batch=12,
        keys=("meter-a", "meter-b", "meter-c"), max_lag_seconds=5, late_share=0.08, late_delay_seconds=120,
        late_keys=("meter-c",), value_column="kwh", value_range=(0.1, 3.0), value_decimals=3, seed=11,
    )
    return {
        "orders_jsonl": DatasetSpec(orders, "json", ("order_id", "ts", "ingested_at", "store", "amount"), duplicate_share=0.03, seed=5),
        "meters_parquet": DatasetSpec(meters, "parquet", ("reading_id", "read_at", "received_at", "meter", "kwh"), seed=6),
    }
