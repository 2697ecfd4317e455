"""A user's dataset through the runner: JSON lines, Parquet and CSV with their own columns and time formats, on real Spark.

The guide's example, written the way users' exports are (epoch milliseconds
under another name, ISO-8601 text, a Parquet timestamp), must give the guide's
result; the JSON case is also run by hand in plain PySpark, one file per
micro-batch in lock-step, and both must agree.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet
import pytest
from support import GUIDE, GUIDE_BATCHES, GUIDE_UPDATE, plain_memory_run

from streaming.engine.errors import ConfigError
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig
from streaming.engine.run.runner import run_to_idle


def _utc(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC)


def _epoch_ms(text: str) -> int:
    return int(_utc(text).timestamp() * 1000)


def _write(folder: Path, fmt: str, rows_of_batch) -> Path:
    folder.mkdir()
    for index, rows in enumerate(GUIDE_BATCHES):
        records = [rows_of_batch(event_time, key) for event_time, key in rows]
        path = folder / f"part-{index:02d}.{'jsonl' if fmt == 'json' else fmt}"
        if fmt == "parquet":
            pyarrow.parquet.write_table(pa.Table.from_pylist(records), path)
        elif fmt == "json":
            path.write_text("".join(json.dumps(record) + "\n" for record in records))
        else:
            header = list(records[0])
            path.write_text(",".join(header) + "\n" + "".join(",".join(str(record[name]) for name in header) + "\n" for record in records))
    return folder


def _config(folder: Path, fmt: str, columns: ColumnMapping) -> QueryConfig:
    return QueryConfig(FeedSource(folder, seconds_per_file=0, file_format=fmt, columns=columns), output_mode="update", **GUIDE)


def _plain_json(spark, files: list[Path], workdir: Path) -> list[dict]:
    """The guide's count on the JSON files in plain PySpark: memory sink, one file per batch, lock-step."""
    from pyspark.sql import functions as F

    def counts(staging: str):
        return (
            _guide_json_events(spark, staging).withWatermark("event_time", GUIDE["watermark"])
            .groupBy(F.window("event_time", GUIDE["window"], GUIDE["slide"]), "key")
            .count()
        )

    def read(table) -> list[dict]:
        stamp = "yyyy-MM-dd HH:mm:ss"
        latest = table.groupBy(F.date_format("window.start", stamp).alias("window_start"), F.date_format("window.end", stamp).alias("window_end"), "key")
        rows = latest.agg(F.max("count").cast("long").alias("count")).collect()
        return sorted((row.asDict() for row in rows), key=lambda r: (r["window_start"], r["window_end"], r["key"]))

    return plain_memory_run(spark, files, workdir, counts, "update", read)


def _guide_json_events(spark, staging: str):
    """The streaming events of the guide's JSON files (``ts`` epoch ms, ``user``) in ``staging``, as plain PySpark reads them."""
    from pyspark.sql import functions as F

    raw = spark.readStream.schema("ts bigint, user string").option("maxFilesPerTrigger", 1).json(staging)
    return raw.select(F.timestamp_millis("ts").alias("event_time"), F.col("user").alias("key"))


def test_json_lines_with_epoch_milliseconds_equal_plain_pyspark_and_the_guide(spark, registry, tmp_path) -> None:
    folder = _write(tmp_path / "kafka", "json", lambda at, key: {"ts": _epoch_ms(at), "user": key, "payload": {"n": 1}})
    outcome = run_to_idle(registry, _config(folder, "json", ColumnMapping(event_time="ts", time_format="epoch_ms", key="user")), timeout=300)
    assert outcome.result_records() == GUIDE_UPDATE
    assert outcome.rows_dropped_by_watermark == 2
    assert _plain_json(spark, sorted(folder.iterdir()), tmp_path) == GUIDE_UPDATE


def test_parquet_with_a_timestamp_column_and_csv_with_iso_text_give_the_guide_result(registry, tmp_path) -> None:
    parquet = _write(tmp_path / "lake", "parquet", lambda at, key: {"when": _utc(at).replace(tzinfo=None), "animal": key})
    csv = _write(tmp_path / "warehouse", "csv", lambda at, key: {"id": 7, "at": at.replace(" ", "T") + "Z", "animal": key})
    for folder, fmt, columns in (
        (parquet, "parquet", ColumnMapping(event_time="when", key="animal")),
        (csv, "csv", ColumnMapping(event_time="at", key="animal")),
    ):
        outcome = run_to_idle(registry, _config(folder, fmt, columns), timeout=300)
        assert outcome.result_records() == GUIDE_UPDATE, fmt
        assert (outcome.input_rows, outcome.malformed_rows) == (10, 0), fmt


def test_no_key_counts_every_event_in_one_group(registry, tmp_path) -> None:
    folder = _write(tmp_path / "events", "json", lambda at, key: {"ts": _epoch_ms(at) / 1000})
    outcome = run_to_idle(registry, _config(folder, "json", ColumnMapping(event_time="ts", time_format="epoch_s", key=None)), timeout=300)
    by_window: dict[tuple[str, str], int] = {}
    for record in GUIDE_UPDATE:
        window = (record["window_start"], record["window_end"])
        by_window[window] = by_window.get(window, 0) + record["count"]
    assert [(r["window_start"], r["window_end"], r["key"], r["count"]) for r in outcome.result_records()] == [
        (*window, "all", count) for window, count in sorted(by_window.items())
    ]


def test_csv_files_with_different_columns_are_refused(tmp_path) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    (folder / "a.csv").write_text("at,animal\n2016-05-10 12:00:00,dog\n")
    (folder / "b.csv").write_text("animal,at\ncat,2016-05-10 12:01:00\n")
    with pytest.raises(ConfigError) as caught:
        FeedSource(folder, file_format="csv", columns=ColumnMapping(event_time="at", key="animal"))
    assert (caught.value.field, caught.value.value) == ("file", "b.csv")


def test_a_mapping_that_does_not_fit_the_files_is_refused_before_spark(tmp_path) -> None:
    folder = _write(tmp_path / "warehouse", "csv", lambda at, key: {"at": at, "animal": key})
    with pytest.raises(ConfigError) as caught:
        FeedSource(folder, file_format="csv", columns=ColumnMapping(event_time="ts", key="animal"))
    assert (caught.value.field, caught.value.value) == ("columns.event_time", "ts")
    with pytest.raises(ConfigError) as caught:
        FeedSource(folder, file_format="parquet", columns=ColumnMapping(event_time="at", key="animal"))
    assert caught.value.field == "source.path" and "holds no parquet files" in caught.value.reason


@pytest.mark.parametrize("name", ["orders_jsonl", "meters_parquet"])
def test_shipped_sample_datasets_run_with_their_mapping_and_count_every_event(spark, registry, name: str) -> None:
    """No watermark, update mode: the final table is the batch count of every well-formed row, duplicates included."""
    from pyspark.sql import functions as F

    from streaming.engine.data.columns import dataset_columns
    from streaming.engine.data.datasets import DatasetStore
    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.data.preview import dataset_schema, read_dataset

    samples = DatasetStore(SAMPLE_FEEDS)
    columns = ColumnMapping.from_dict(samples.saved_columns(name))
    config = QueryConfig(FeedSource(samples.folder(name), 0, samples.file_format(name), columns), window="1 minute", watermark=None, output_mode="update")
    outcome = run_to_idle(registry, config, timeout=600)
    frame = read_dataset(spark, samples.files(name), samples.file_format(name))
    events = frame.select(*dataset_columns(columns, dataset_schema(frame))).where(F.col("event_time").isNotNull() & F.col("key").isNotNull())
    expected = (
        events.groupBy(F.window("event_time", "1 minute"), "key").count()
        .select(F.date_format("window.start", "yyyy-MM-dd HH:mm:ss").alias("window_start"), "key", "count")
        .collect()
    )
    assert sorted((r["window_start"], r["key"], r["count"]) for r in outcome.result_records()) == sorted(
        (row["window_start"], row["key"], row["count"]) for row in expected
    )
    assert outcome.input_rows == frame.count()


@pytest.mark.parametrize("aggregation", ["sum", "avg", "min", "max", "approx_distinct"])
def test_value_aggregates_equal_plain_pyspark(spark, registry, tmp_path, aggregation: str) -> None:
    """No watermark, update mode: the final table is the batch aggregate of every well-formed row; text that is no number is left out."""
    from pyspark.sql import functions as F

    folder = tmp_path / "sales"
    folder.mkdir()
    rows = [
        [("2026-03-02T14:00:05Z", "a", "10.5"), ("2026-03-02T14:00:50Z", "a", "4"), ("2026-03-02T14:00:20Z", "b", "n/a")],
        [("2026-03-02T14:01:10Z", "a", "7.25"), ("2026-03-02T14:00:59Z", "b", "3"), ("2026-03-02T14:01:30Z", "b", "3")],
    ]
    for index, batch in enumerate(rows):
        (folder / f"part-{index}.csv").write_text("at,shop,amount\n" + "".join(f"{at},{shop},{amount}\n" for at, shop, amount in batch))
    columns = ColumnMapping(event_time="at", key="shop", value="amount")
    config = QueryConfig(FeedSource(folder, 0, "csv", columns), window="1 minute", watermark=None, output_mode="update", aggregation=aggregation)
    assert config.measure == f"{aggregation}(amount)"
    outcome = run_to_idle(registry, config, timeout=300)
    value = F.col("amount") if aggregation == "approx_distinct" else F.col("amount").try_cast("double")
    function = {"approx_distinct": F.approx_count_distinct, "sum": F.sum, "avg": F.avg, "min": F.min, "max": F.max}[aggregation]
    plain = (
        spark.read.csv([str(path) for path in sorted(folder.iterdir())], header=True)
        .groupBy(F.window(F.to_timestamp("at"), "1 minute"), F.col("shop"))
        .agg(function(value).alias("value"), F.count(F.lit(1)).alias("count"))
        .select(F.date_format("window.start", "yyyy-MM-dd HH:mm:ss").alias("start"), "shop", "value", "count")
        .collect()
    )
    assert sorted((r["window_start"], r["key"], r["value"], r["count"]) for r in outcome.result_records()) == sorted(
        (row["start"], row["shop"], None if row["value"] is None else float(row["value"]), row["count"]) for row in plain
    )
    report = outcome.to_json()
    assert all(set(record) >= {"value", "count"} for record in report["result"])


def test_a_value_aggregate_needs_a_value_column() -> None:
    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.query.config import GeneratorSource

    for source in (GeneratorSource(), FeedSource(SAMPLE_FEEDS / "web_clicks")):
        with pytest.raises(ConfigError) as caught:
            QueryConfig(source, aggregation="sum")
        assert (caught.value.field, caught.value.value) == ("aggregation", "sum") and "needs a value column" in caught.value.reason


def test_duplicate_deliveries_are_dropped_within_the_watermark_and_counted(registry, tmp_path) -> None:
    folder = tmp_path / "deliveries"
    folder.mkdir()
    batches = [
        [("a1", "12:00:10"), ("a2", "12:00:20")],
        [("a1", "12:00:10"), ("a3", "12:00:40")],  # a1 delivered again
        [("a2", "12:00:20"), ("a4", "12:01:05"), ("a4", "12:01:05"), (None, "12:01:06"), (None, "12:01:07")],  # a2 again, a4 twice, two without an id
    ]
    for index, rows in enumerate(batches):
        lines = [json.dumps({"id": id_, "ts": _epoch_ms(f"2016-05-10 {at}"), "k": "x"}) for id_, at in rows]
        (folder / f"part-{index}.jsonl").write_text("\n".join(lines) + "\n")
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", dedup_id="id")
    config = QueryConfig(FeedSource(folder, 0, "json", columns), window="1 minute", watermark="10 minutes", output_mode="update", deduplicate=True)
    outcome = run_to_idle(registry, config, timeout=300)
    assert [(r["window_start"][11:], r["count"]) for r in outcome.result_records()] == [("12:00:00", 3), ("12:01:00", 1)]
    assert outcome.duplicates_dropped == 3
    assert outcome.to_json()["duplicates_dropped"] == 3
    assert (outcome.input_rows, outcome.malformed_rows) == (9, 2)


def test_deduplication_needs_an_id_column_and_a_watermark(tmp_path) -> None:
    folder = _write(tmp_path / "events", "json", lambda at, key: {"ts": _epoch_ms(at), "id": key})
    with_id = FeedSource(folder, 0, "json", ColumnMapping(event_time="ts", time_format="epoch_ms", key=None, dedup_id="id"))
    without_id = FeedSource(folder, 0, "json", ColumnMapping(event_time="ts", time_format="epoch_ms", key=None))
    for source, watermark, reason in ((with_id, None, "needs a watermark"), (without_id, "1 minute", "needs an id column")):
        with pytest.raises(ConfigError) as caught:
            QueryConfig(source, watermark=watermark, deduplicate=True)
        assert (caught.value.field, caught.value.value) == ("deduplicate", True) and reason in caught.value.reason


def _plain_sessions(spark, files: list[Path], workdir: Path, gap: str, watermark: str, mode: str) -> list[tuple[str, str, str, int]]:
    """Session-window counts of the JSON files in plain PySpark: memory sink, one file per batch, lock-step."""
    from pyspark.sql import functions as F

    def counts(staging: str):
        return _guide_json_events(spark, staging).withWatermark("event_time", watermark).groupBy(F.session_window("event_time", gap), "key").count()

    def read(table) -> list[tuple[str, str, str, int]]:
        stamp = "yyyy-MM-dd HH:mm:ss.SSS"
        rows = table.select(
            F.date_format("session_window.start", stamp).alias("start"), F.date_format("session_window.end", stamp).alias("end"), "key", "count"
        ).collect()
        return sorted((row["start"], row["end"], row["key"], int(row["count"])) for row in rows)

    return plain_memory_run(spark, files, workdir, counts, mode, read)


@pytest.mark.parametrize("mode", ["append", "complete"])
def test_session_windows_equal_plain_pyspark(spark, registry, tmp_path, mode: str) -> None:
    folder = tmp_path / "clicks"
    folder.mkdir()
    batches = [
        [("12:00:00.250", "a"), ("12:00:40", "a"), ("12:00:10", "b")],
        [("12:01:10", "a"), ("12:03:00", "b")],
        [("12:06:00", "a"), ("12:00:20", "b")],  # b at 12:00:20 is late for append once the watermark passed it
        [("12:12:00", "a")],
    ]
    for index, rows in enumerate(batches):
        lines = [json.dumps({"ts": int(datetime.strptime(f"2016-05-10 {at}", "%Y-%m-%d %H:%M:%S" + (".%f" if "." in at else "")).replace(tzinfo=UTC).timestamp() * 1000), "user": key}) for at, key in rows]
        (folder / f"part-{index}.jsonl").write_text("\n".join(lines) + "\n")
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="user")
    config = QueryConfig(FeedSource(folder, 0, "json", columns), session_gap="1 minute", watermark="2 minutes", output_mode=mode)
    outcome = run_to_idle(registry, config, timeout=300)
    ours = sorted((r["window_start"], r["window_end"], r["key"], r["count"]) for r in outcome.result_records())
    plain = _plain_sessions(spark, sorted(folder.iterdir()), tmp_path, "1 minute", "2 minutes", mode)
    def trimmed(text: str) -> str:
        return text.rstrip("0").rstrip(".") if "." in text else text

    assert ours == [(trimmed(start), trimmed(end), key, count) for start, end, key, count in plain]
    assert ("2016-05-10 12:00:00.25", "2016-05-10 12:02:10", "a", 3) in ours  # a fraction of a second where the session has one


def test_session_windows_refuse_what_spark_refuses(tmp_path) -> None:
    folder = _write(tmp_path / "events", "json", lambda at, key: {"ts": _epoch_ms(at), "user": key})
    source = FeedSource(folder, 0, "json", ColumnMapping(event_time="ts", time_format="epoch_ms", key="user"))
    refusals = [
        ({"output_mode": "update"}, "output_mode", "update"),
        ({"output_mode": "append", "slide": "30 seconds"}, "slide", "30 seconds"),
        ({"output_mode": "complete", "aggregation": "none"}, "output_mode", "complete"),
        ({"output_mode": "append", "session_gap": "0 seconds"}, "session_gap", "0 seconds"),
    ]
    for changes, field_name, value in refusals:
        with pytest.raises(ConfigError) as caught:
            QueryConfig(source, **{"session_gap": "1 minute", **changes})
        assert (caught.value.field, caught.value.value) == (field_name, value)


def test_a_value_column_name_never_becomes_code_in_show_code(tmp_path) -> None:
    import ast

    from streaming.export import pyspark_code

    nasty = 'x"""; import os; os.system("id"); """'
    (tmp_path / "events.jsonl").write_text(json.dumps({"ts": 1, nasty: 2}) + "\n")
    source = FeedSource(tmp_path, 0, "json", ColumnMapping(event_time="ts", time_format="epoch_s", key=None, value=nasty))
    tree = ast.parse(pyspark_code(QueryConfig(source, aggregation="sum", window="1 minute")))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    assert "os" in imported  # the program's own import
    assert not any(isinstance(node, ast.Attribute) and node.attr == "system" for node in ast.walk(tree))
