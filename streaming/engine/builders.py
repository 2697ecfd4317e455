"""The Spark calls a query is built of, written once: handing files to a file source and reading them, a time, a key and a Kafka record; making the generator's rows and its
ads pair; the form's query (malformed rows counted and left out, the windowed aggregate); a SQL view and its result as JSON.

The engine calls these functions, and Show code copies their text into the programs it exports (:mod:`streaming.export`), so what runs here
and what a user runs from the page are one text (``tests/test_export.py`` holds every kind of program to that). Each uses only PySpark,
``csv``, ``datetime``, ``decimal``, ``os``, ``shutil`` and ``pathlib`` (and ``pyarrow`` for Parquet rows, as PySpark does), its arguments and the constants :data:`CONSTANTS` names. What checks a user's choice (a time format that fits
its column, a column that exists) stays with the configuration (:mod:`~streaming.engine.data.times`, :mod:`~streaming.engine.data.columns`), which
names the field it refuses.
"""

from __future__ import annotations

import csv
import datetime as dt
import decimal
import os
import shutil
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType, TimestampNTZType

__all__ = [
    "AD_BUILDERS",
    "BATCH_BUILDERS",
    "BUILDERS",
    "CAMPAIGNS",
    "COLUMN_BUILDERS",
    "CONSTANTS",
    "CORRUPT",
    "EPOCH_SECONDS_LIMIT",
    "FILE_BUILDERS",
    "GENERATOR_BUILDERS",
    "INPUT_METRICS",
    "KAFKA_KEY",
    "KAFKA_TIMESTAMP",
    "QUERY_BUILDERS",
    "RECORD_BUILDERS",
    "SINK_BUILDERS",
    "TOPIC_VIEW_BUILDERS",
    "VIEW_BUILDERS",
    "arrival_pauses",
    "click_columns",
    "column_kind",
    "counted_input",
    "cut_files",
    "decode_records",
    "drawn",
    "file_stream",
    "fold_rows",
    "generated_events",
    "impression_columns",
    "interval_slots",
    "json_value",
    "key_column",
    "lagged_ms",
    "malformed_rows",
    "parse_key",
    "parse_time",
    "quoted",
    "read_files",
    "read_rows",
    "records_before",
    "row_arrivals",
    "stage_file",
    "topic_view",
    "view_batch",
    "view_select",
    "windowed_aggregate",
    "write_rows",
]

EPOCH_SECONDS_LIMIT = 253_402_300_800
"""Epoch seconds of 10000-01-01: a time at or beyond it (either side of 1970) does not parse."""
KAFKA_TIMESTAMP = "kafka_timestamp"
"""A Kafka record's timestamp, as a column the mapping can name (event time, or the arrival time)."""
KAFKA_KEY = "kafka_key"
"""A Kafka record's key as text, as a column the mapping can name."""
CORRUPT = "_corrupt_record"
"""The column Spark fills with a value that does not parse."""
INPUT_METRICS = "input"
"""The observation that counts a stream's input and malformed rows (``input_rows``, ``malformed_rows``)."""
CAMPAIGNS = ("spring", "summer", "autumn")
"""The campaigns of the generator's ads: ad ``n`` runs in campaign ``n mod 3``, as in the bundled feeds."""


def quoted(name: str) -> str:
    """``name`` as a Spark column reference: back-quoted, so dots and spaces in a column's name are part of the name."""
    return "`" + name.replace("`", "``") + "`"


def column_kind(data_type: str) -> str:
    """``timestamp``, ``date``, ``number``, ``text`` or ``other`` for a Spark type name (``DataType.simpleString()``)."""
    if data_type.startswith("timestamp"):
        return "timestamp"
    if data_type == "date":
        return data_type
    if data_type in ("tinyint", "smallint", "int", "bigint", "float", "double") or data_type.startswith("decimal"):
        return "number"
    return "text" if data_type == "string" else "other"


def parse_time(value: Column, time_format: str, kind: str) -> Column:
    """The time ``value`` holds (a column of :func:`column_kind` ``kind``) written as ``time_format``: a timestamp, null where it does not parse.

    A timestamp or a date as it is (a date at midnight); ``auto``: text as Spark casts it (ISO-8601, with or without an offset);
    ``epoch_s`` / ``epoch_ms``: seconds (fractions kept) or milliseconds since 1970-01-01 UTC; any other format is a Spark datetime pattern.
    """
    if kind in ("timestamp", "date"):
        return value.cast("timestamp")
    if time_format == "auto":
        return F.try_to_timestamp(F.trim(value))
    # An epoch beyond year 9999 (nanoseconds read as milliseconds...) is null, not a failed query: Spark's conversions raise on overflow
    # under ANSI mode.
    number = value.try_cast("double")
    if time_format == "epoch_s":
        return F.when(F.abs(number) < F.lit(EPOCH_SECONDS_LIMIT), F.timestamp_seconds(number))
    if time_format == "epoch_ms":
        return F.when(F.abs(number) < F.lit(EPOCH_SECONDS_LIMIT * 1000), F.timestamp_millis(number.cast("bigint")))
    return F.try_to_timestamp(F.trim(value.cast("string")), F.lit(time_format))


def parse_key(value: Column) -> Column:
    """The key ``value`` holds, as text with surrounding spaces trimmed; null when empty (the query counts and leaves out such rows)."""
    return F.nullif(F.trim(value.cast("string")), F.lit(""))


def records_before(records: DataFrame, end_offsets: dict[int, int] | None) -> DataFrame:
    """Spark's Kafka ``records`` (columns ``partition``, ``offset``) before ``end_offsets`` (partition -> offset): a range of a topic; all of them
    without an end."""
    if end_offsets is None:
        return records
    inside = F.lit(False)
    for partition, offset in end_offsets.items():
        inside = inside | ((F.col("partition") == int(partition)) & (F.col("offset") < offset))
    return records.where(inside)


def decode_records(records: DataFrame, value_format: str, value_schema: str, value_names: list[str] | tuple[str, ...]) -> DataFrame:
    """Spark's Kafka ``records`` (columns ``key``, ``value``, ``timestamp``...) as the value's columns ``value_names`` (a JSON object or a CSV
    line, ``value_format``, read with the DDL ``value_schema``, which holds :data:`CORRUPT`), then :data:`KAFKA_TIMESTAMP`, :data:`KAFKA_KEY`,
    ``kafka_partition``, ``kafka_offset``, ``kafka_value`` and ``malformed``: a value that does not parse, or none, is a malformed row, never
    a failed query."""
    text = F.col("value").cast("string")
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
    value = F.from_json(text, value_schema, options) if value_format == "json" else F.from_csv(text, value_schema, options)
    record = records.select(
        value.alias("v"), F.col("timestamp").alias(KAFKA_TIMESTAMP), F.col("key").cast("string").alias(KAFKA_KEY),
        F.col("partition").alias("kafka_partition"), F.col("offset").alias("kafka_offset"), text.alias("kafka_value"),
    )
    return record.select(
        *[F.col("v").getField(name).alias(name) for name in value_names], KAFKA_TIMESTAMP, KAFKA_KEY, "kafka_partition", "kafka_offset", "kafka_value",
        (F.col("v").getField(CORRUPT).isNotNull() | F.col("kafka_value").isNull()).alias("malformed"),
    )


def key_column(value: Column, keys: int, salt: int = 0) -> Column:
    """``key-N`` with ``N`` the row number ``value`` modulo ``keys`` (hashed with ``salt`` first when it is not 0), as column ``key``."""
    bucket = F.pmod(F.xxhash64(F.lit(salt), value), F.lit(keys)) if salt else F.pmod(value, F.lit(keys))
    return F.concat(F.lit("key-"), bucket.cast("string")).alias("key")


def drawn(seed: int, value: Column) -> Column:
    """A number in ``[0, 1)`` drawn for row ``value``: the same for the same seed and row, independent across seeds."""
    return F.pmod(F.xxhash64(F.lit(seed), value), F.lit(1_000_000)) / F.lit(1_000_000.0)


def lagged_ms(value: Column, timestamp: Column, seed: int, max_lag_ms: int, late_share: float, late_delay_ms: int) -> Column:
    """Row ``value``'s event time in epoch ms: its arrival ``timestamp`` less a lag drawn in ``0..max_lag_ms``, and less
    ``late_delay_ms`` more for the ``late_share`` of rows drawn as very late (seeds ``seed`` and ``seed + 1``)."""
    lag_ms = F.pmod(F.xxhash64(F.lit(seed), value), F.lit(max_lag_ms + 1))
    is_late = F.pmod(F.xxhash64(F.lit(seed + 1), value), F.lit(1_000_000)) < F.lit(int(late_share * 1_000_000))
    extra_ms = F.when(is_late, F.lit(late_delay_ms)).otherwise(F.lit(0))
    return F.unix_millis(timestamp) - lag_ms - extra_ms


def generated_events(
    value: Column, timestamp: Column, seed: int, keys: int, max_lag_ms: int, late_share: float, late_delay_ms: int,
    stall_after_ms: int | None, events_per_second: int,
) -> list[Column]:
    """``[event_time, key]`` of the generator's row ``value`` arriving at ``timestamp`` (Spark's rate source): a pure function of ``value``
    for a seed, out of order by up to ``max_lag_ms``, ``late_share`` of rows ``late_delay_ms`` later still; with ``stall_after_ms``, event
    time stops advancing after that much of it (the watermark stalls)."""
    event_ms = lagged_ms(value, timestamp, seed, max_lag_ms, late_share, late_delay_ms)
    if stall_after_ms is not None:  # the clock stops: every event past the stall lags by the time since it
        stall_events = stall_after_ms * events_per_second // 1000
        event_ms = (event_ms - F.greatest(value - F.lit(stall_events), F.lit(0)) * F.lit(1000) / F.lit(events_per_second)).cast("bigint")
    return [F.timestamp_millis(event_ms).alias("event_time"), key_column(value, keys, salt=seed + 2)]


def impression_columns(value: Column, arrived: Column, seed: int, ads: int, max_lag_ms: int, late_share: float, late_delay_ms: int) -> list[Column]:
    """Impression ``imp-<value>`` of rate row ``value`` arriving at ``arrived``: one of ``ads`` ads, each in one of :data:`CAMPAIGNS`, timed
    as a generator's row (:func:`lagged_ms`)."""
    ad = F.pmod(F.xxhash64(F.lit(seed + 2), value), F.lit(ads))
    campaign = F.element_at(F.array(*[F.lit(name) for name in CAMPAIGNS]), (F.pmod(ad, F.lit(len(CAMPAIGNS))) + 1).cast("int"))
    return [
        F.format_string("imp-%d", value).alias("impression_id"),
        F.format_string("ad-%04d", ad).alias("ad_id"),
        F.timestamp_millis(lagged_ms(value, arrived, seed, max_lag_ms, late_share, late_delay_ms)).alias("impression_time"),
        campaign.alias("campaign"),
    ]


def click_columns(
    value: Column, arrived: Column, seed: int, max_lag_ms: int, late_share: float, late_delay_ms: int,
    impressions_per_second: int, clicks_per_second: int, mean_click_delay_ms: int, max_click_delay_ms: int,
) -> list[Column]:
    """Click-stream rate row ``value`` arriving at ``arrived``: a click on the impression that arrived a drawn delay before it (exponential,
    of mean ``mean_click_delay_ms``, capped at ``max_click_delay_ms``; its ``impression_id`` null when that impression would precede the
    stream's start), timed as its impression is."""
    delay_ms = F.least(F.lit(float(max_click_delay_ms)), -F.lit(float(mean_click_delay_ms)) * F.log(F.lit(1.0) - drawn(seed + 3, value)))
    arrived_ms = value * F.lit(1000.0 / clicks_per_second)  # since the stream's start
    impression = F.floor((arrived_ms - delay_ms) * F.lit(impressions_per_second / 1000.0))
    return [
        F.when(impression >= 0, F.format_string("imp-%d", impression)).alias("impression_id"),
        F.timestamp_millis(lagged_ms(impression, arrived, seed, max_lag_ms, late_share, late_delay_ms)).alias("click_time"),
    ]


def malformed_rows(deduplicate: bool) -> Column:
    """True for a row the form's query leaves out: no parsable ``event_time``, no ``key``, or, when it deduplicates, no ``dedup_id``."""
    malformed = F.col("event_time").isNull() | F.col("key").isNull()
    if deduplicate:
        malformed = malformed | F.col("dedup_id").isNull()  # without an id, a row cannot be told from a duplicate
    return malformed


def counted_input(frame: DataFrame, malformed: Column, name: str = INPUT_METRICS) -> DataFrame:
    """``frame``'s rows counted in the observed metrics ``name`` of each micro-batch's progress (``input_rows``, and ``malformed_rows``: those
    where ``malformed`` holds), and the malformed ones left out: a bad row is counted, never a failed query."""
    return frame.observe(
        name,
        F.count(F.lit(1)).alias("input_rows"),
        F.coalesce(F.sum(F.when(malformed, 1).otherwise(0)), F.lit(0)).alias("malformed_rows"),
    ).where(~malformed)


def windowed_aggregate(events: DataFrame, spans: Column, aggregation: str) -> DataFrame:
    """``events`` (``event_time``, ``key``, ``value``) per window of ``spans`` (``F.window`` or ``F.session_window`` of the event time) and
    ``key``: ``window`` (a struct of ``start`` and ``end``), ``key``, then ``value`` for a value aggregation (``sum``, ``avg``, ``min`` or ``max``
    of the values as numbers, a value that is not one left out; ``approx_distinct``: HyperLogLog++'s estimate of the distinct values) and
    ``count``, the rows it was computed over: what completeness is measured by, whatever the aggregate."""
    grouped = events.groupBy(spans.alias("window"), "key")
    if aggregation == "count":
        return grouped.count()
    value = F.col("value")
    if aggregation == "approx_distinct":
        measure = F.approx_count_distinct(value)
    else:
        measure = {"sum": F.sum, "avg": F.avg, "min": F.min, "max": F.max}[aggregation](value.try_cast("double"))
    return grouped.agg(measure.alias("value"), F.count(F.lit(1)).alias("count"))


def stage_file(source: Path, folder: Path, index: int, modified_ms: int) -> Path:
    """Hand ``source`` to a file source reading ``folder`` as its file ``index``: copied under a name Spark passes over (a leading ``.``),
    given the modification time ``modified_ms`` (ms since the epoch, later than every file before it, so Spark reads the files in order),
    then renamed into place at once, so Spark never sees a file half written."""
    target = folder / f"{index:06d}-{source.name}"
    partial = folder / f".{target.name}.partial"
    shutil.copyfile(source, partial)
    os.utime(partial, ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))
    os.replace(partial, target)
    return target


def read_rows(path: Path, file_format: str) -> tuple[list[str] | None, list]:
    """``(header, rows)`` of one file, in file order, as Spark counts them: CSV rows (lists, blank lines skipped, the header apart), JSON lines
    (text, blank lines skipped), Parquet rows (dicts)."""
    if file_format == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, [])
            return header, [row for row in reader if row]
    if file_format == "json":
        # Lines end at "\n" only, as Spark's reader has them: str.splitlines would also split at characters JSON allows inside strings
        # (U+2028, U+0085, ...).
        lines = (line.removesuffix("\r") for line in path.read_text(encoding="utf-8").split("\n"))
        return None, [line for line in lines if line.strip()]
    import pyarrow.parquet

    return None, pyarrow.parquet.read_table(path).to_pylist()


def write_rows(path: Path, file_format: str, header: list[str] | None, rows: list, schema: object = None) -> None:
    """Write ``rows`` (as :func:`read_rows` gives them) as one file of ``file_format``; ``schema`` is the Parquet schema."""
    if file_format == "csv":
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, lineterminator="\n")
            writer.writerow(header or [])
            writer.writerows(rows)
    elif file_format == "json":
        path.write_text("".join(f"{line}\n" for line in rows), encoding="utf-8")
    else:
        import pyarrow as pa
        import pyarrow.parquet

        pyarrow.parquet.write_table(pa.Table.from_pylist(list(rows), schema=schema), path)


def interval_slots(times_us: list[int | None], interval_us: int) -> list[tuple[int, list[int]]]:
    """``(interval number, row positions)`` of each batch when rows are cut by time: grouped by ``floor(time / interval_us)``, intervals
    ascending, rows in order; a ``None`` time joins the row before it (the first interval when it comes first). An interval starts at
    ``number * interval_us``."""
    groups: dict[int, list[int]] = {}
    previous: int | None = None
    for position, micros in enumerate(times_us):
        slot = previous if micros is None else micros // interval_us
        if slot is None:
            slot = next((value // interval_us for value in times_us if value is not None), 0)
        groups.setdefault(slot, []).append(position)
        previous = slot
    return [(slot, groups[slot]) for slot in sorted(groups)]


def row_arrivals(spark: SparkSession, path: Path, file_format: str, struct: StructType, column: str, time_format: str, kind: str) -> list[int | None]:
    """The time in ``column`` (of :func:`column_kind` ``kind``, written as ``time_format``) of each row of ``path`` in row order, in epoch
    microseconds (``None`` where it does not parse), the file read with the whole dataset's ``struct``."""
    times = read_files(spark, [str(path)], file_format, struct).select(F.unix_micros(parse_time(F.col(quoted(column)), time_format, kind)))
    return [row[0] for row in times.collect()]


def arrival_pauses(arrivals_us: list[int], speed: float) -> list[float]:
    """Seconds to wait after each batch: the gap to the next batch's arrival interval ÷ ``speed`` (0 after the last)."""
    return [(arrivals_us[index + 1] - arrivals_us[index]) / 1e6 / speed for index in range(len(arrivals_us) - 1)] + ([0.0] if arrivals_us else [])


def cut_files(
    spark: SparkSession | None, files: list[Path], file_format: str, folder: Path, *, rows_per_batch: int | None = None, arrival: str | None = None,
    time_format: str = "auto", kind: str = "text", interval_us: int = 0, struct: StructType | None = None,
) -> tuple[list[Path], list[int] | None, list[list[int | None]] | None]:
    """The rows of ``files`` (in file order) cut into micro-batches and written to ``folder``, one file each in the files' format (CSV with the
    first file's header): every ``rows_per_batch`` rows, or by the time in the column ``arrival`` (read by Spark with ``struct``, one file at
    a time: :func:`row_arrivals`), an epoch-aligned interval of ``interval_us`` a batch (:func:`interval_slots`).

    ``(batch files, the start of each batch's interval, each batch's rows' times)``; the last two ``None`` when cut by rows. The rows are
    copied as they are. ``ValueError`` when Spark reads a file's arrival times in another number than its rows.
    """
    header: list[str] | None = None
    rows: list = []
    times: list[int | None] = []
    parquet_schema = None
    for path in files:
        file_header, file_rows = read_rows(path, file_format)
        header = header if header is not None else file_header
        if file_format == "parquet" and parquet_schema is None:
            import pyarrow.parquet

            parquet_schema = pyarrow.parquet.read_schema(path)
        if arrival is not None:
            if spark is None or struct is None:
                raise ValueError("cutting by arrival time needs the Spark session and the dataset's schema")
            file_times = row_arrivals(spark, path, file_format, struct, arrival, time_format, kind)
            if len(file_times) != len(file_rows):
                raise ValueError(f"cannot line rows up with arrival times in {path.name} ({len(file_rows)} rows, Spark read {len(file_times)})")
            times.extend(file_times)
        rows.extend(file_rows)
    if arrival is not None:
        slots = interval_slots(times, interval_us)
        groups, arrivals = [positions for _, positions in slots], [slot * interval_us for slot, _ in slots]
    else:
        size = rows_per_batch or 1
        groups, arrivals = [list(range(start, min(start + size, len(rows)))) for start in range(0, len(rows), size)], None
    folder.mkdir(parents=True, exist_ok=True)
    suffix = {"csv": ".csv", "json": ".jsonl", "parquet": ".parquet"}[file_format]
    written = []
    for index, positions in enumerate(groups):
        path = folder / f"batch-{index:06d}{suffix}"
        write_rows(path, file_format, header, [rows[position] for position in positions], parquet_schema)
        written.append(path)
    row_times = [[times[position] for position in positions] for positions in groups] if arrival is not None else None
    return written, arrivals, row_times


def read_files(spark: SparkSession, paths: list[str], file_format: str, schema: StructType | str | None = None, infer: bool = False) -> DataFrame:
    """The rows of the files ``paths`` (``csv`` with a header, ``json`` lines or ``parquet``) as one batch DataFrame, with ``schema`` when given.
    A CSV column is text unless ``infer`` (Spark's ``inferSchema``); a malformed CSV or JSON row is nulls (JSON: its text in :data:`CORRUPT`)."""
    reader = spark.read if schema is None else spark.read.schema(schema)
    if file_format == "csv":
        return reader.csv(paths, header=True, mode="PERMISSIVE", inferSchema=infer and schema is None)
    if file_format == "json":
        return reader.json(paths, mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT)
    return reader.parquet(*paths)


def file_stream(spark: SparkSession, struct: StructType | str, file_format: str, folder: str) -> DataFrame:
    """Spark's file source over ``folder``: one file per micro-batch (``maxFilesPerTrigger=1``), read with ``struct``; a malformed CSV or JSON
    row becomes nulls, never a failed query."""
    reader = spark.readStream.schema(struct).option("maxFilesPerTrigger", 1)
    if file_format == "csv":
        return reader.option("header", True).option("mode", "PERMISSIVE").csv(folder)
    if file_format == "json":
        return reader.option("mode", "PERMISSIVE").json(folder)
    return reader.parquet(folder)


def view_batch(spark: SparkSession, paths: list[str], file_format: str, event_time: str | None, time_format: str) -> DataFrame:
    """A dataset's rows typed for a user's SQL: CSV columns as Spark infers them (numbers as numbers, so ``sum(amount)`` adds them), JSON lines
    and Parquet as they read. An ``event_time`` column written in a pattern or as epochs (``time_format`` other than ``auto``) stays text, for
    :func:`view_select` to read."""
    if file_format != "csv":
        return read_files(spark, paths, file_format)
    inferred = read_files(spark, paths, file_format, infer=True)
    if event_time is None or time_format == "auto" or event_time not in inferred.columns:
        return inferred
    fields = [StructField(item.name, StringType()) if item.name == event_time else item for item in inferred.schema.fields]
    return read_files(spark, paths, file_format, StructType(fields))


def view_select(schema: dict[str, str], event_time: str, time_format: str) -> list[Column]:
    """Every column of ``schema`` (name -> Spark type name) under its own name, as a user's SQL sees a dataset: ``event_time`` read as
    ``time_format`` (a timestamp, null where it does not parse), the others as they are."""
    return [
        parse_time(F.col(quoted(name)), time_format, column_kind(data_type)).alias(name) if name == event_time else F.col(quoted(name))
        for name, data_type in schema.items()
    ]


def topic_view(records: DataFrame, schema: dict[str, str], event_time: str, time_format: str) -> DataFrame:
    """Decoded Kafka ``records`` (:func:`decode_records`) as a user's SQL sees a topic: every column of ``schema`` (the value's, then the
    record's timestamp and key) under its own name, ``event_time`` read as ``time_format`` and null for a malformed record (which the view
    then counts and leaves out), then ``kafka_partition`` and ``kafka_offset``."""
    return records.select(
        *[F.when(~F.col("malformed"), column).alias(name) if name == event_time else column for name, column in zip(schema, view_select(schema, event_time, time_format))],
        "kafka_partition", "kafka_offset",
    )


def json_value(value: Any, data_type: DataType | None = None, *, exact: bool = False) -> Any:
    """``value`` of Spark type ``data_type`` as JSON: a struct as an object, a timestamp ``YYYY-MM-DD HH:MM:SS[.ffffff]`` in UTC, a decimal as a
    number and a day-time interval as seconds; with ``exact`` (a kept table), a decimal as its text and an interval as whole microseconds, so
    it can be read back as the very value (a grouping by it still matches its row)."""
    if value is None:
        return None
    if isinstance(data_type, StructType):
        return {item.name: json_value(part, item.dataType, exact=exact) for item, part in zip(data_type.fields, value)}
    if isinstance(data_type, ArrayType):
        return [json_value(item, data_type.elementType, exact=exact) for item in value]
    if isinstance(data_type, MapType):
        return {str(key): json_value(item, data_type.valueType, exact=exact) for key, item in value.items()}
    if isinstance(value, dt.datetime):  # PySpark collects a timestamp naive, in this process's local time: UTC here
        moment = value if isinstance(data_type, TimestampNTZType) else value.astimezone(dt.UTC).replace(tzinfo=None)
        text = moment.strftime("%Y-%m-%d %H:%M:%S")
        return f"{text}.{moment.microsecond:06d}" if moment.microsecond else text
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(microseconds=1) if exact else value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value) if exact else float(value)
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    return value


def fold_rows(table: dict, rows: Any, output_mode: str, key_of: Any = None) -> None:
    """One micro-batch's output ``rows`` folded into ``table`` (a dict: the oldest change first) as ``output_mode`` defines the result table:
    complete replaces the whole table; update replaces the row of each grouping, ``key_of(row)`` (a query without one adds its rows); append
    adds each row."""
    if output_mode == "complete":
        table.clear()
    for row in rows:
        if output_mode == "update" and key_of is not None:
            key = key_of(row)
            table.pop(key, None)  # to the end: the newest change last
        else:
            key = object()
        table[key] = row


COLUMN_BUILDERS = (quoted, column_kind, parse_time, parse_key)
"""What reads a column by its role: every program that reads a time or a key defines these."""
RECORD_BUILDERS = (records_before, decode_records)
"""What reads Kafka's records: a program that reads a topic defines these too."""
GENERATOR_BUILDERS = (key_column, lagged_ms, generated_events)
"""What makes the generator's rows from Spark's rate source (:func:`key_column` alone: the rate sources' keys)."""
AD_BUILDERS = (drawn, lagged_ms, impression_columns, click_columns)
"""What makes the generator's pair of impressions and clicks."""
QUERY_BUILDERS = (malformed_rows, counted_input, windowed_aggregate)
"""The form's query: its malformed rows counted and left out, its windowed aggregate."""
FILE_BUILDERS = (stage_file, read_files, file_stream)
"""What hands files to a file source and reads them: every program that replays files defines these."""
VIEW_BUILDERS = (stage_file, read_files, file_stream, view_batch, view_select, counted_input, json_value, fold_rows)
"""A user's SQL over its views: each dataset read and typed as the view shows it, its rows counted, its result table folded batch by batch and
written as JSON."""
TOPIC_VIEW_BUILDERS = (records_before, decode_records, topic_view)
"""A user's SQL over a topic: its range of records, decoded, as the view shows them."""
SINK_BUILDERS = (fold_rows,)
"""A micro-batch's output folded into the result table as the output mode defines it: the form's programs and a user's SQL alike."""
BATCH_BUILDERS = (read_rows, write_rows, interval_slots, row_arrivals, arrival_pauses, cut_files)
"""A dataset cut into micro-batches by rows or by arrival time (with :data:`COLUMN_BUILDERS` and :data:`FILE_BUILDERS`), and the pauses
between its batches when paced by arrival."""
BUILDERS = tuple(dict.fromkeys((*COLUMN_BUILDERS, *FILE_BUILDERS, *RECORD_BUILDERS, *GENERATOR_BUILDERS, *AD_BUILDERS, *QUERY_BUILDERS, *VIEW_BUILDERS, *TOPIC_VIEW_BUILDERS, *BATCH_BUILDERS, *SINK_BUILDERS)))
CONSTANTS: dict[object, tuple[str, ...]] = {
    parse_time: ("EPOCH_SECONDS_LIMIT",), counted_input: ("INPUT_METRICS",), read_files: ("CORRUPT",), decode_records: ("KAFKA_TIMESTAMP", "KAFKA_KEY", "CORRUPT"), impression_columns: ("CAMPAIGNS",),
}
"""The names each builder reads besides its arguments and ``F``: an exported program assigns each its value before the builders."""
