"""Time formats, column mappings and the schema step's preview, on real Spark."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet
import pytest

from streaming.engine.data.preview import ColumnProfile, column_profiles, guess_event_time, preview, read_dataset, time_range_warning
from streaming.engine.data.times import check_time_fit, check_time_format, time_column
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import ColumnMapping

# --- time formats: pure checks ---------------------------------------------------------


@pytest.mark.parametrize("value", ["auto", "epoch_s", "epoch_ms", "yyyy-MM-dd HH:mm:ss", "dd/MM/yyyy HH:mm", "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"])
def test_time_formats_that_spark_parses_are_accepted(value: str) -> None:
    assert check_time_format(value) == value


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("", "must be auto, epoch_s, epoch_ms or a Spark datetime pattern"),
        ("YYYY-ww", "uses 'Y'"),
        ("yyyy-MM-dd'T", "unclosed quote"),
        ("---", "no pattern letters"),
        (None, "must be auto"),
    ],
)
def test_time_formats_spark_refuses_are_refused_by_name(value: object, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_time_format(value, "columns.time_format")
    assert caught.value.field == "columns.time_format" and caught.value.value == value and reason in caught.value.reason


@pytest.mark.parametrize(
    ("time_format", "data_type", "reason"),
    [
        ("auto", "bigint", "cannot tell seconds from milliseconds"),
        ("epoch_ms", "timestamp", "already holds times"),
        ("auto", "array<string>", "cannot read a time"),
    ],
)
def test_a_time_format_must_fit_the_column_type(time_format: str, data_type: str, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        check_time_fit(time_format, data_type)


# --- column mappings: pure checks ---------------------------------------------------------


def test_a_mapping_names_its_columns_and_checks_them_against_a_schema() -> None:
    mapping = ColumnMapping(event_time="ts", time_format="epoch_ms", key=None, value="amount", dedup_id="id", arrival="ingested")
    assert mapping.roles() == {"event_time": "ts", "value": "amount", "dedup_id": "id", "arrival": "ingested"}
    mapping.check_columns({"ts": "bigint", "amount": "double", "id": "string", "ingested": "string"})
    refusals = [
        ({"amount": "double", "id": "string", "ingested": "string"}, "columns.event_time", "ts"),
        ({"ts": "string", "amount": "double", "id": "string", "ingested": "string"}, "columns.time_format", "epoch_ms"),
        ({"ts": "bigint", "amount": "array<int>", "id": "string", "ingested": "string"}, "columns.value", "amount"),
        ({"ts": "bigint", "amount": "double", "id": "string", "ingested": "bigint"}, "columns.arrival_format", "auto"),
    ]
    for schema, field_name, value in refusals[:1] + refusals[2:]:
        with pytest.raises(ConfigError) as caught:
            mapping.check_columns(schema)
        assert (caught.value.field, caught.value.value) == (field_name, value)
    mapping.check_columns(refusals[1][0])  # epoch_ms reads numbers written as text too


@pytest.mark.parametrize(
    ("changes", "field_name"),
    [({"event_time": ""}, "columns.event_time"), ({"key": "  "}, "columns.key"), ({"time_format": "YYYY"}, "columns.time_format"),
     ({"arrival": "event_time"}, "columns.arrival"), ({"key": "event_time"}, "columns.key"), ({"value": "event_time"}, "columns.value")],
)
def test_a_mapping_refuses_bad_names_where_it_is_made(changes: dict[str, str], field_name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ColumnMapping(**changes)
    assert caught.value.field == field_name


# --- on Spark ---------------------------------------------------------------------------


def _times(spark, values: list[object], data_type: str, time_format: str) -> list[datetime | None]:
    frame = spark.createDataFrame([(value,) for value in values], f"t {data_type}")
    return [row[0] for row in frame.select(time_column("t", time_format, data_type)).collect()]


def test_each_time_format_reads_what_it_promises(spark) -> None:
    at, at_ms = datetime(2026, 3, 2, 14, 1, 1), datetime(2026, 3, 2, 14, 1, 1, 196000)
    auto = ["2026-03-02 14:01:01.196", "2026-03-02T14:01:01.196Z", "2026-03-02T14:01:01", " 2026-03-02 14:01:01 ", "2026-03-02T16:01:01+02:00", "soon", None]
    assert _times(spark, auto, "string", "auto") == [at_ms, at_ms, at, at, at, None, None]
    assert _times(spark, [1772460061196, None, 1772460061196000000], "bigint", "epoch_ms") == [at_ms, None, None]  # nanoseconds: no time, no failure
    assert _times(spark, [1e300], "double", "epoch_s") == [None]
    assert _times(spark, ["1772460061196", "x"], "string", "epoch_ms") == [at_ms, None]
    assert _times(spark, [1772460061.196], "double", "epoch_s") == [at_ms]
    assert _times(spark, ["02/03/2026 14:01:01", "2026-03-02 14:01:01"], "string", "dd/MM/yyyy HH:mm:ss") == [at, None]


@pytest.fixture
def dataset(tmp_path: Path):
    """Factory: write rows as one or more files of a format into a fresh folder and return the file paths."""

    def write(parts: list[list[dict[str, object]]], fmt: str, raw: list[str] | None = None) -> list[Path]:
        folder = tmp_path / f"ds_{fmt}"
        folder.mkdir()
        paths = []
        for index, rows in enumerate(parts):
            path = folder / f"part-{index}.{'jsonl' if fmt == 'json' else fmt}"
            if fmt == "parquet":
                pyarrow.parquet.write_table(pa.Table.from_pylist(rows), path)
            elif fmt == "json":
                path.write_text("".join(json.dumps(row) + "\n" for row in rows) + "".join(line + "\n" for line in (raw or [])))
            else:
                frame = pd.DataFrame(rows)
                path.write_text(frame.to_csv(index=False) + "".join(line + "\n" for line in (raw or [])))
            paths.append(path)
        return paths

    return write


def test_preview_of_json_lines_with_epoch_milliseconds_and_a_broken_line(spark, dataset) -> None:
    rows = [
        {"ts": 1772460061196, "user": "a", "amount": 3.5, "id": "e1"},
        {"ts": 1772460065000, "user": "b", "amount": 1.0, "id": "e2"},
        {"ts": None, "user": "a", "amount": 2.0, "id": "e2"},
    ]
    files = dataset([rows], "json", raw=['{"ts": 17724600'])
    result = preview(spark, files, "json", ColumnMapping(event_time="ts", time_format="epoch_ms", key="user", value="amount", dedup_id="id"))
    assert (result.rows, result.malformed_rows, result.keys) == (4, 1, 2)
    assert (result.earliest, result.latest) == (pd.Timestamp("2026-03-02 14:01:01.196"), pd.Timestamp("2026-03-02 14:01:05"))
    by_name = {column.name: column for column in result.columns}
    assert set(by_name) == {"ts", "user", "amount", "id"}
    assert (by_name["ts"].data_type, by_name["ts"].role, by_name["ts"].nulls, by_name["ts"].unparsable) == ("bigint", "event_time", 2, 0)
    assert (by_name["amount"].role, by_name["amount"].unparsable) == ("value", None)
    assert len(result.first_rows) == 4 and "_corrupt_record" not in result.first_rows.columns


def test_preview_of_csv_counts_unparsable_times_and_values(spark, dataset) -> None:
    files = dataset(
        [[{"when": "2026-03-02T14:01:01Z", "k": "x", "v": "1.5"}], [{"when": "yesterday", "k": "y", "v": "lots"}, {"when": "2026-03-02 14:02:00", "k": "x", "v": "2"}]],
        "csv",
    )
    result = preview(spark, files, "csv", ColumnMapping(event_time="when", key="k", value="v"))
    by_name = {column.name: column for column in result.columns}
    assert result.rows == 3 and result.event_times_unparsable == 1
    assert (by_name["v"].data_type, by_name["v"].unparsable) == ("string", 1)
    assert (result.earliest, result.latest) == (pd.Timestamp("2026-03-02 14:01:01"), pd.Timestamp("2026-03-02 14:02:00"))
    assert list(result.first_rows["k"]) == ["x", "y", "x"]  # the first file's rows first: Spark reads the largest file first


def test_a_csv_preview_types_its_columns_and_first_rows_as_a_sql_view_does(spark, dataset) -> None:
    """The preview's first rows came from the ninth file, every column typed "string", while the SQL view typed them int and double."""
    files = dataset([[{"when": "2026-03-02 14:00:00", "n": 1, "x": 0.5}]] + [[{"when": "2026-03-02 14:01:00", "n": 2, "x": 1.5}] * 3], "csv")
    result = preview(spark, files, "csv", ColumnMapping(event_time="when", key=None))
    assert {column.name: column.view_type for column in result.columns} == {"when": "timestamp", "n": "int", "x": "double"}
    assert list(result.first_rows["n"]) == [1, 2, 2, 2] and str(result.first_rows["n"].dtype).startswith("int")


def test_preview_of_parquet_with_a_timestamp_column_and_no_key(spark, dataset) -> None:
    rows = [{"event_time": datetime(2026, 3, 2, 14, minute), "value": minute} for minute in range(5)]
    files = dataset([rows], "parquet")
    result = preview(spark, files, "parquet", ColumnMapping(key=None, value="value"))
    assert (result.rows, result.keys, result.event_times_unparsable) == (5, None, 0)
    assert (result.earliest, result.latest) == (pd.Timestamp("2026-03-02 14:00"), pd.Timestamp("2026-03-02 14:04"))


def test_preview_refuses_a_mapping_that_does_not_fit_before_running(spark, dataset) -> None:
    files = dataset([[{"ts": 1, "k": "a"}]], "json")
    with pytest.raises(ConfigError) as caught:
        preview(spark, files, "json", ColumnMapping(event_time="ts", key="k"))
    assert (caught.value.field, caught.value.value) == ("columns.time_format", "auto")
    with pytest.raises(ConfigError) as caught:
        preview(spark, files, "json", ColumnMapping(event_time="ts", time_format="epoch_s", key="user"))
    assert (caught.value.field, caught.value.value) == ("columns.key", "user")


# --- which column holds the event time ---------------------------------------------------------


def test_the_event_time_is_guessed_from_the_values_not_from_the_first_number(spark, dataset) -> None:
    """Flights as JSON lines: a delay first (numbers, no time), the departure in epoch seconds under a name the list lacks, empties."""
    rows = [
        {"arr_delay": delay, "carrier": "AA", "sched_dep_time": 1_772_460_000 + 600 * index, "dep_local": "2026-03-02 14:00:00", "note": "ok"}
        for index, delay in enumerate([-5, 12, 240, None])
    ]
    files = dataset([rows], "json")
    profiles = column_profiles(read_dataset(spark, files, "json"))
    assert (profiles["arr_delay"].present, profiles["arr_delay"].numbers, profiles["arr_delay"].least, profiles["arr_delay"].greatest) == (3, 3, -5, 240)
    assert [profiles[name].time_format for name in profiles] == [None, None, "auto", None, "epoch_s"]  # columns in Spark's (sorted) order
    assert guess_event_time(profiles) == ("sched_dep_time", "epoch_s")  # a time word in the name beats text that also parses, a delay is never taken


def test_the_guess_prefers_known_names_then_time_types_then_time_words() -> None:
    def profile(name: str, data_type: str = "string", *, numbers: int = 0, least: float | None = None, greatest: float | None = None, times: int = 0):
        return ColumnProfile(name, data_type, 10, numbers, least, greatest, times)

    delay = profile("delay", "bigint", numbers=10, least=-5, greatest=900)
    millis = profile("createdAt", "bigint", numbers=10, least=1.7e12, greatest=1.8e12)
    stamped = profile("logged", "timestamp")
    text = profile("when_text", times=10)
    assert guess_event_time({"delay": delay}) is None
    assert guess_event_time({"delay": delay, "createdAt": millis}) == ("createdAt", "epoch_ms")
    assert guess_event_time({"createdAt": millis, "logged": stamped}) == ("logged", "auto")
    assert guess_event_time({"logged": stamped, "TS": profile("TS", "bigint", numbers=10, least=1.7e9, greatest=1.8e9)}) == ("TS", "epoch_s")
    assert guess_event_time({"notes": profile("notes", times=5)}) is None  # half the text parses: not a time column
    assert guess_event_time({"x": text, "when": profile("when", times=9)}) == ("when", "auto")


def test_an_implausible_event_time_range_is_named() -> None:
    now = pd.Timestamp("2026-11-25")
    assert "start on 1969-12-31" in time_range_warning(pd.Timestamp("1969-12-31 23:59"), pd.Timestamp("1970-01-01 00:04"), 20_000, now)
    assert "reach 2700-01-01" in time_range_warning(pd.Timestamp("2026-01-01"), pd.Timestamp("2700-01-01"), 10, now)
    assert "within 0.5 s" in time_range_warning(pd.Timestamp("2026-01-01"), pd.Timestamp("2026-01-01 00:00:00.5"), 200_000, now)
    assert time_range_warning(pd.Timestamp("2026-01-01"), pd.Timestamp("2026-01-02"), 200_000, now) is None
    assert time_range_warning(None, None, 0, now) is None
