"""Batching rules: which rows of a dataset form each micro-batch (pure, then through the runner on real Spark)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet
import pytest

from streaming.engine.data.batching import Batching, arrival_pauses, batch_files, interval_batches, interval_slots, read_rows
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig
from streaming.engine.run.runner import run_to_idle
from streaming.engine.sources import FeedReplayer, input_frame


@pytest.mark.parametrize(
    ("by", "interval", "field_name"),
    [("rows:0", None, "batch_by"), ("rows:x", None, "batch_by"), ("", None, "batch_by"), ("rows:5", "10 seconds", "batch_interval"),
     ("file", "1 minute", "batch_interval"), ("arrived", None, "batch_interval"), ("arrived", "soon", "batch_interval"),
     ("arrived", "0 seconds", "batch_interval")],
)
def test_a_batching_rule_is_checked_where_it_is_made(by: str, interval: str | None, field_name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Batching(by, interval)
    assert caught.value.field == field_name


def test_batching_rules_say_what_they_are() -> None:
    assert (Batching().rows, Batching().column) == (None, None)
    assert (Batching("rows:250").rows, Batching("rows:250").column) == (250, None)
    assert (Batching("arrived", "10 seconds").column, str(Batching("arrived", "10 seconds"))) == ("arrived", "arrived every 10 seconds")


def test_interval_batches_group_by_epoch_aligned_interval_in_order() -> None:
    seconds = 1_000_000
    times = [12 * seconds, 3 * seconds, None, 25 * seconds, 14 * seconds, 39 * seconds, 9 * seconds]
    # intervals of 10 s: [0,10) holds rows 1, 2 (unparsable: with the row before) and 6; [10,20) rows 0 and 4; [20,30) row 3; [30,40) row 5
    assert interval_batches(times, 10 * seconds) == [[1, 2, 6], [0, 4], [3], [5]]
    assert interval_batches([None, 5 * seconds], 10 * seconds) == [[0, 1]]
    assert [slot for slot, _ in interval_slots(times, 10 * seconds)] == [0, 1, 2, 3]


def test_arrival_pacing_waits_the_arrival_gaps_divided_by_the_speed() -> None:
    seconds = 1_000_000
    assert arrival_pauses([0, 10 * seconds, 50 * seconds], 10) == [1.0, 4.0, 0.0]
    assert arrival_pauses([0, 10 * seconds], 0.5) == [20.0, 0.0]
    assert arrival_pauses([], 2) == []


def _csv(folder: Path, name: str, rows: list[tuple[str, str]]) -> Path:
    path = folder / name
    path.write_text("event_time,key\n" + "".join(f"{at},{key}\n" for at, key in rows) + "\n")
    return path


def test_rows_batching_cuts_every_n_rows_across_files_in_every_format(tmp_path: Path) -> None:
    rows = [(f"2016-05-10 12:0{minute}:00", f"k{minute}") for minute in range(7)]
    sources = tmp_path / "in"
    sources.mkdir()
    files = [_csv(sources, "a.csv", rows[:4]), _csv(sources, "b.csv", rows[4:])]
    out = batch_files(None, files, "csv", Batching("rows:3"), tmp_path / "csv")
    assert [read_rows(path, "csv") for path in out] == [
        (["event_time", "key"], [list(row) for row in rows[0:3]]),
        (["event_time", "key"], [list(row) for row in rows[3:6]]),
        (["event_time", "key"], [list(rows[6])]),
    ]
    lines = [json.dumps({"ts": minute}) for minute in range(5)]
    (sources / "c.jsonl").write_text("\n".join(lines[:2]) + "\n\n" + "\n".join(lines[2:]) + "\n")
    assert [read_rows(path, "json")[1] for path in batch_files(None, [sources / "c.jsonl"], "json", Batching("rows:2"), tmp_path / "json")] == [
        lines[0:2], lines[2:4], lines[4:5],
    ]
    pyarrow.parquet.write_table(pa.table({"ts": list(range(5)), "key": ["a"] * 5}), sources / "d.parquet")
    parquet = batch_files(None, [sources / "d.parquet"], "parquet", Batching("rows:4"), tmp_path / "parquet")
    assert [pyarrow.parquet.read_table(path).column("ts").to_pylist() for path in parquet] == [[0, 1, 2, 3], [4]]
    assert batch_files(None, files, "csv", Batching(), tmp_path / "unused") == files


def test_batching_by_arrival_time_on_spark_gives_one_batch_per_interval(spark, registry, tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    base = 1462881600000  # 2016-05-10 12:00:00 UTC
    # (event-time offset s, arrival offset s): arrivals fall in the 10 s intervals 0, 0, 2, 0, 2, 5 (files do not matter)
    first = [(0, 1), (30, 8), (5, 21)]
    second = [(40, 3), (10, 29), (50, 55)]
    for name, rows in (("a.jsonl", first), ("b.jsonl", second)):
        (folder / name).write_text("".join(json.dumps({"ts": base + 1000 * at, "arrived": base + 1000 * arrival, "k": "x"}) + "\n" for at, arrival in rows))
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", arrival="arrived", arrival_format="epoch_ms")
    source = FeedSource(folder, 0, "json", columns, Batching("arrived", "10 seconds"))
    assert source.arrival_format == "epoch_ms"
    outcome = run_to_idle(registry, QueryConfig(source, window="1 minute", watermark=None, output_mode="update"), timeout=300)
    data_batches = [int(n) for n in outcome.progress["num_input_rows"] if n > 0]
    assert data_batches == [3, 2, 1]
    assert [(r["window_start"][11:], r["count"]) for r in outcome.result_records()] == [("12:00:00", 6)]
    # Paced by arrival time at 10x: the intervals 0, 2 and 5 are 20 s and 30 s apart.
    paced = replace(source, seconds_per_file=1.0, speed=10.0)
    _, feeder = input_frame(spark, paced, tmp_path / "paced" / "staging", 0)
    try:
        assert isinstance(feeder, FeedReplayer) and not feeder.stepped
        assert feeder.pauses == [2.0, 3.0, 0.0] and len(feeder.files) == 3
    finally:
        feeder.stop()


def test_pacing_by_arrival_time_needs_an_arrival_column_and_a_positive_speed(tmp_path: Path) -> None:
    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"ts": 0, "arrived": 0, "k": "x"}) + "\n")
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", arrival="arrived", arrival_format="epoch_ms")
    with pytest.raises(ConfigError) as caught:
        FeedSource(folder, 1, "json", columns, Batching("rows:10"), speed=10.0)
    assert (caught.value.field, caught.value.value) == ("source.speed", 10.0) and "arrival column" in caught.value.reason
    for speed in (0, -1.0, True, "fast"):
        with pytest.raises(ConfigError) as caught:
            FeedSource(folder, 1, "json", columns, Batching("arrived", "10 seconds"), speed=speed)
        assert caught.value.field == "source.speed"


def test_rows_batching_through_the_runner(registry, tmp_path: Path) -> None:
    folder = tmp_path / "csv"
    folder.mkdir()
    _csv(folder, "a.csv", [(f"2016-05-10 12:00:{second:02d}", "k") for second in range(10)])
    columns = ColumnMapping(event_time="event_time", time_format="auto", key="key")
    source = FeedSource(folder, 0, "csv", columns, Batching("rows:4"))
    outcome = run_to_idle(registry, QueryConfig(source, window="1 minute", watermark=None, output_mode="update"), timeout=300)
    assert [int(n) for n in outcome.progress["num_input_rows"] if n > 0] == [4, 4, 2]
    with pytest.raises(ConfigError) as caught:
        FeedSource(folder, 0, "csv", columns, Batching("arrived", "1 minute"))
    assert (caught.value.field, caught.value.value) == ("batch_by", "arrived")
