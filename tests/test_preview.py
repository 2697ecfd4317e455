"""Time formats, column mappings and the schema step's preview, on real Spark."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet
import pytest

from streaming.engine.config import ColumnMapping
from streaming.engine.errors import ConfigError
from streaming.engine.preview import preview
from streaming.engine.times import check_time_fit, check_time_format, time_column

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
