"""Tests of the deterministic feed generator and the shipped sample feeds (no Spark)."""

from __future__ import annotations

import csv
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from streaming.adfeeds import sample_ad_catalogs, sample_ad_specs
from streaming.engine.data.feeds import TIME_FORMAT
from streaming.feedgen import (
    BAD_EVENT_TIME,
    FeedSpec,
    dataset_rows,
    generate_events,
    regenerate_samples,
    sample_dataset_specs,
    sample_specs,
    write_feed,
)

SAMPLE_FEEDS = Path(__file__).resolve().parents[1] / "sample_feeds"

SPEC = FeedSpec(
    start=datetime(2024, 1, 1, 12, 0, 0),
    batches=12,
    batch_interval_seconds=5,
    events_per_batch=40,
    keys=("a", "b", "c"),
    max_lag_seconds=8,
    late_share=0.1,
    late_delay_seconds=120,
    malformed_share=0.05,
    value_column="value",
    seed=3,
)


def _read_rows(paths: list[Path]) -> list[dict[str, str]]:
    rows = []
    for path in paths:
        with path.open(newline="", encoding="utf-8") as handle:
            rows.extend(csv.DictReader(handle))
    return rows


def _contents(paths: list[Path]) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in paths}


def test_same_seed_writes_identical_bytes(tmp_path: Path) -> None:
    first = write_feed(SPEC, tmp_path / "one")
    second = write_feed(SPEC, tmp_path / "two")
    assert [p.name for p in first] == [f"batch-{i:04d}.csv" for i in range(SPEC.batches)]
    assert _contents(first) == _contents(second)


def test_different_seed_writes_different_feed(tmp_path: Path) -> None:
    first = write_feed(SPEC, tmp_path / "one")
    second = write_feed(replace(SPEC, seed=4), tmp_path / "two")
    assert _contents(first) != _contents(second)


def test_refuses_existing_batch_files_unless_overwrite(tmp_path: Path) -> None:
    write_feed(SPEC, tmp_path)
    (tmp_path / "README.md").write_text("kept")
    with pytest.raises(FileExistsError):
        write_feed(SPEC, tmp_path)
    paths = write_feed(replace(SPEC, batches=2), tmp_path, overwrite=True)
    assert sorted(tmp_path.glob("batch-*.csv")) == paths
    assert (tmp_path / "README.md").read_text() == "kept"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("start", "2024-01-01"),
        ("start", datetime(2024, 1, 1, 0, 0, 0, 500)),
        ("batches", 0),
        ("batches", True),
        ("batch_interval_seconds", 0),
        ("events_per_batch", 0),
        ("keys", ()),
        ("keys", "abc"),
        ("keys", ("a", "")),
        ("keys", ("a", "a")),
        ("max_lag_seconds", -1),
        ("late_share", 1.5),
        ("late_delay_seconds", -1),
        ("malformed_share", -0.1),
        ("seed", 1.0),
        ("late_keys", ("z",)),
        ("value_column", "key"),
        ("value_range", (2.0, 1.0)),
        ("value_decimals", 9),
    ],
)
def test_validation_names_the_field_and_value(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"^{field}: ") as caught:
        replace(SPEC, **{field: value})
    assert repr(value) in str(caught.value)


def test_no_lag_means_event_time_is_arrival() -> None:
    spec = replace(SPEC, max_lag_seconds=0, late_share=0.0, malformed_share=0.0)
    events = generate_events(spec)
    assert len(events) == spec.batches * spec.events_per_batch
    assert all(e.event_time == e.arrival == spec.start + timedelta(seconds=e.batch * 5) for e in events)


def test_lags_stay_in_bounds_and_late_events_exist() -> None:
    events = [e for e in generate_events(SPEC) if e.event_time is not None]
    lags = {e: (e.arrival - e.event_time).total_seconds() for e in events}
    late = [e for e in events if e.late]
    assert late
    assert all(120 <= lags[e] <= 128 for e in late)
    assert all(0 <= lags[e] <= 8 for e in events if not e.late)


def test_late_keys_confine_lateness() -> None:
    events = generate_events(replace(SPEC, late_share=1.0, late_keys=("b",)))
    assert {e.key for e in events if e.late} == {"b"}


def test_malformed_rows_written_match_events(tmp_path: Path) -> None:
    events = generate_events(SPEC)
    rows = _read_rows(write_feed(SPEC, tmp_path))
    assert len(rows) == len(events)
    bad_time = sum(row["event_time"] == BAD_EVENT_TIME for row in rows)
    empty_key = sum(row["key"] == "" for row in rows)
    assert bad_time == sum(e.event_time is None for e in events) > 0
    assert empty_key == sum(e.key is None for e in events) > 0
    assert bad_time + empty_key == sum(e.malformed for e in events)
    for row in rows:
        if row["event_time"] != BAD_EVENT_TIME:
            datetime.strptime(row["event_time"], TIME_FORMAT)
        float(row["value"])


def test_no_malformed_rows_by_default() -> None:
    events = generate_events(replace(SPEC, malformed_share=0.0))
    assert not any(e.malformed for e in events)


@pytest.mark.parametrize("name", sorted(sample_specs()))
def test_shipped_generated_feeds_are_reproducible(name: str, tmp_path: Path) -> None:
    written = regenerate_samples(tmp_path)[name]
    shipped = sorted((SAMPLE_FEEDS / name).glob("batch-*.csv"))
    assert _contents(shipped) == _contents(written)
    assert sum(p.stat().st_size for p in shipped) < 200_000


@pytest.mark.parametrize("names", [*sorted(sample_ad_specs()), *((name,) for name in sorted(sample_ad_catalogs()))])
def test_shipped_ad_feeds_are_reproducible(names: tuple[str, ...], tmp_path: Path) -> None:
    written = regenerate_samples(tmp_path)
    for name in names:
        shipped = sorted(path for path in (SAMPLE_FEEDS / name).glob("*.csv"))
        assert _contents(shipped) == _contents(written[name])


def test_guide_words_is_the_programming_guide_example() -> None:
    paths = sorted((SAMPLE_FEEDS / "guide_words").glob("*.csv"))
    assert [p.name for p in paths] == [f"batch-{i:04d}.csv" for i in range(4)]
    batches = [[(row["event_time"][11:16], row["key"]) for row in _read_rows([p])] for p in paths]
    assert batches == [
        [("12:07", "dog"), ("12:08", "owl")],
        [("12:14", "dog"), ("12:09", "cat")],
        [("12:15", "cat"), ("12:08", "dog"), ("12:13", "owl"), ("12:21", "owl")],
        [("12:17", "owl"), ("12:04", "donkey")],
    ]
    assert all(row["event_time"].startswith("2016-05-10 ") and row["event_time"].endswith(":00") for row in _read_rows(paths))
    assert all(p.read_text(encoding="utf-8").splitlines()[0] == "event_time,key" for p in paths)


@pytest.mark.parametrize("name", sorted(sample_dataset_specs()))
def test_shipped_sample_datasets_are_reproducible(name: str, tmp_path: Path) -> None:
    import pyarrow.parquet

    written = regenerate_samples(tmp_path)[name]
    shipped = sorted(path for path in (SAMPLE_FEEDS / name).iterdir() if path.name.startswith("part-"))
    assert [path.name for path in shipped] == [path.name for path in written]
    for ours, theirs in zip(written, shipped):
        if ours.suffix == ".parquet":
            assert pyarrow.parquet.read_table(ours).equals(pyarrow.parquet.read_table(theirs))
        else:
            assert ours.read_text() == theirs.read_text()
    assert (tmp_path / name / ".columns.json").read_text() == (SAMPLE_FEEDS / name / ".columns.json").read_text()
    assert sum(p.stat().st_size for p in shipped) < 200_000


def test_sample_datasets_have_duplicates_late_and_malformed_rows() -> None:
    rows = [row for batch in dataset_rows(sample_dataset_specs()["orders_jsonl"]) for row in batch]
    ids = [row["order_id"] for row in rows]
    assert 10 <= len(ids) - len(set(ids)) <= 60  # duplicate deliveries
    assert sum(row["ts"] is None for row in rows) >= 1  # a malformed time
    assert all(row["ingested_at"] >= row["ts"] for row in rows if row["ts"] is not None and row["store"])  # arrival after the event
