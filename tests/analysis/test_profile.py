"""How late a feed's events are: the profile (pure) and the events read from a dataset with Spark, batched as the replay batches them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from streaming.analysis.profile import PROFILE_COLUMNS, feed_events_of, lateness_profile, proposed_delays
from streaming.engine.data.batching import Batching
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.query.config import ColumnMapping, FeedSource

T = pd.Timestamp


def test_the_profile_measures_behind_the_stream_and_behind_arrival_per_key() -> None:
    events = pd.DataFrame(
        {
            "event_time": [T("2024-01-01 00:01:00"), T("2024-01-01 00:00:50"), T("2024-01-01 00:00:30"), T("2024-01-01 00:01:10")],
            "key": ["a", "b", "b", "a"],
            "arrival": [T("2024-01-01 00:01:02"), T("2024-01-01 00:01:01"), T("2024-01-01 00:01:40"), T("2024-01-01 00:01:41")],
            "file_index": [0, 0, 1, 1],
        }
    )
    profile = lateness_profile(events)
    # batch 1 is judged against batch 0's largest event time, 00:01:00: b at 00:00:30 is 30 s behind, a at 00:01:10 is not
    assert list(profile.stream_lateness.dt.total_seconds()) == [0, 0, 30, 0]
    assert list(profile.arrival_lateness.dt.total_seconds()) == [2, 11, 70, 31]
    assert profile.behind_stream["late_events"] == 1 and profile.behind_stream["max"] == pd.Timedelta(seconds=30)
    assert profile.behind_arrival is not None and profile.behind_arrival["max"] == pd.Timedelta(seconds=70)
    assert profile.behind_stream["p999"] <= profile.behind_stream["max"]
    assert list(profile.per_key.columns) == PROFILE_COLUMNS
    assert list(profile.per_key["key"]) == ["b", "a"]  # the latest key first
    assert profile.per_key.set_index("key").loc["b", "max"] == 30.0
    no_arrival = lateness_profile(events.assign(arrival=pd.NaT))
    assert no_arrival.behind_arrival is None and no_arrival.arrival_lateness is None


def test_delays_are_proposed_around_the_lateness_percentiles_rounded_up_to_durations_people_write() -> None:
    hour_scale = {"p50": pd.Timedelta(minutes=7), "p95": pd.Timedelta(minutes=52), "p99": pd.Timedelta(hours=2), "p999": pd.Timedelta(hours=4.5),
                  "max": pd.Timedelta(days=3)}
    assert proposed_delays(hour_scale) == [0, 600_000, 3_600_000, 7_200_000, 21_600_000, 604_800_000]
    assert proposed_delays({"p50": pd.Timedelta(0), "p95": pd.Timedelta(seconds=3), "p99": pd.Timedelta(seconds=3), "p999": pd.NaT, "max": None}) == [0, 5_000]


def test_the_profile_of_an_empty_feed_is_empty() -> None:
    empty = pd.DataFrame({"event_time": pd.Series(dtype="datetime64[ns]"), "key": pd.Series(dtype=object),
                          "arrival": pd.Series(dtype="datetime64[ns]"), "file_index": pd.Series(dtype="int64")})
    profile = lateness_profile(empty)
    assert profile.behind_stream["events"] == 0 and profile.per_key.empty


def test_a_sample_feed_is_read_without_spark_in_file_batches(spark) -> None:
    events = feed_events_of(spark, FeedSource(SAMPLE_FEEDS / "guide_words", seconds_per_file=0))
    assert list(events.columns) == ["event_time", "key", "arrival", "file_index"] and events["arrival"].isna().all()
    assert len(events) == 10 and events["file_index"].is_monotonic_increasing


@pytest.mark.parametrize(("batching", "batches"), [(Batching(), [0, 0, 0, 1, 1]), (Batching("rows:2"), [0, 0, 1, 2, 2]),
                                                   (Batching("arrived", "10 seconds"), [0, 1, 1, 2, 3])])
def test_a_dataset_is_read_in_arrival_order_and_batched_by_its_rule(spark, tmp_path: Path, batching: Batching, batches: list[int]) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    base = 1704067200000  # 2024-01-01 00:00:00 UTC
    first = [(60, 1, "a"), (50, 15, "b"), (None, 16, "b"), (30, None, "a")]  # a malformed row; an arrival that does not parse
    second = [(70, 25, "a"), (40, 31, "b")]
    for name, rows in (("p1.jsonl", first), ("p2.jsonl", second)):
        lines = [{"ts": None if at is None else base + 1000 * at, "arrived": None if arrived is None else base + 1000 * arrived, "k": key,
                  "n": f"{name[:2]}-{index}"} for index, (at, arrived, key) in enumerate(rows)]
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", dedup_id="n", arrival="arrived", arrival_format="epoch_ms")
    events = feed_events_of(spark, FeedSource(folder, 0, "json", columns, batching))
    assert [int((at - T("2024-01-01")).total_seconds()) for at in events["event_time"]] == [60, 50, 30, 70, 40]
    assert list(events["id"]) == ["p1-0", "p1-1", "p1-3", "p2-0", "p2-1"]  # the id column, as written
    assert list(events["file_index"]) == batches
    assert events["arrival"].isna().sum() == 1 and events["arrival"].iloc[0] == T("2024-01-01 00:00:01")
