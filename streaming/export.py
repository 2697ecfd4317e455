"""Export a :class:`~streaming.engine.query.config.QueryConfig` as self-contained PySpark code.

:func:`pyspark_code` returns the source of a Python program that builds the same
query as :func:`streaming.engine.run.query.build_frame` -- source, malformed-row filter,
watermark, window, aggregation, output mode, trigger -- on its own
SparkSession, ready to paste into a notebook or to run with ``python`` or
``spark-submit``. It imports only ``pyspark`` and the standard library.

* A **feed** source is replayed the way :mod:`streaming.engine.run.runner` does it: the
  feed's files (or, for a dataset batched by rows or arrival time, the batches
  the program cuts from them with Spark) are copied in name order, one at a time, into a temporary
  staging folder with increasing modification times (``maxFilesPerTrigger=1``:
  one file, one micro-batch), and the program waits with
  ``processAllAvailable()`` after each. A ``foreachBatch`` sink folds the output
  into the result table as the output mode defines it, and at the end the
  program prints it as one line ``RESULT <json>``: the records of
  :meth:`streaming.engine.run.runner.Replay.result_records` (a value aggregate's
  without ``count``, which only the dashboard measures by).
* The unbounded sources (generator, rate, rate-micro-batch, socket) and a Kafka
  topic get the same query with a console sink and ``awaitTermination()``; a
  topic's program takes Spark's Kafka connector from ``KAFKA_CONNECTOR_JARS``
  (jar paths) or, without it, from Maven Central (``spark.jars.packages``).

Every value taken from the configuration is written as a Python literal
(``ascii()``, so the program is pure ASCII and a path can never leave its
string), never spliced into code or comments as raw text.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .engine import builders
from .engine.builders import (
    AD_BUILDERS,
    BATCH_BUILDERS,
    COLUMN_BUILDERS,
    CONSTANTS,
    FILE_BUILDERS,
    GENERATOR_BUILDERS,
    QUERY_BUILDERS,
    RECORD_BUILDERS,
    SINK_BUILDERS,
    TOPIC_VIEW_BUILDERS,
    VIEW_BUILDERS,
    column_kind,
    counted_input,
    key_column,
    malformed_rows,
    parse_time,
    quoted,
)
from .engine.checks import duration_ms
from .engine.data.columns import NO_KEY
from .engine.data.datasets import FORMATS
from .engine.data.feeds import TIME_PATTERN, feed_header
from .engine.durations import format_duration, parse_duration
from .engine.errors import ConfigError
from .engine.join.join import JoinConfig, JoinSide, LiveSide, Side
from .engine.kafka.kafka_terms import KAFKA_KEY, KAFKA_TIMESTAMP
from .engine.output.results import measure_column
from .engine.query.config import STATE_STORE_PROVIDERS, FeedSource, GeneratorSource, QueryConfig, RateMicroBatchSource, RateSource, SocketSource
from .engine.runtime.jars import connector_coordinates
from .engine.sources import StreamSource
from .engine.sources.ads import AdStreams
from .engine.sources.kafka import KafkaSource
from .engine.sql import SqlQuery, SqlView
from .engine.sql.views import TableFiles

__all__ = ["RESULT_PREFIX", "join_code", "pyspark_code"]

RESULT_PREFIX = "RESULT "
"""The exported feed program prints its result table on one line starting with this."""


def _lit(value: object) -> str:
    """``value`` as a Python literal that evaluates back to it."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"float({repr(value)!a})"
    if isinstance(value, Path):
        return ascii(str(value))
    if isinstance(value, str):
        return ascii(value)
    if isinstance(value, tuple):
        return "(" + "".join(f"{_lit(item)}, " for item in value).rstrip(" ") + ")"
    raise TypeError(f"cannot export {value!r} as a literal")


def _dict_lit(mapping: Mapping[str, object]) -> str:
    """``mapping`` (string keys) as a dict literal that evaluates back to it; its values nest as :func:`_lit` or as dicts."""
    return "{" + ", ".join(f"{_lit(name)}: {_dict_lit(value) if isinstance(value, Mapping) else _lit(value)}" for name, value in mapping.items()) + "}"


def _rule(title: str) -> str:
    """A section comment padded to a fixed width."""
    return f"# --- {title} ".ljust(88, "-")


def _block(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- header

_SOURCE_NAMES = {
    "generator": "synthetic out-of-order and late events, made from Spark's rate source",
    "rate": "Spark's rate source",
    "rate-micro-batch": "Spark's rate-micro-batch source",
    "socket": "lines from a TCP socket; start a line server first (see below)",
    "kafka": "a Kafka topic, read with Spark's Kafka connector (see CONNECTOR below)",
}


def _header(config: QueryConfig) -> str:
    source, feed = config.source, config.source.as_feed
    what = "events passed through unaggregated" if config.aggregation == "none" else f"windowed {config.aggregation} per key over event time"
    if feed is not None:
        # fixed wording: the batching column is a user's name and appears only as a literal (ARRIVAL below)
        cut = "one file per micro-batch" if feed.batching.by == "file" else (
            "in micro-batches of BATCH_ROWS rows" if feed.batching.rows is not None else "in micro-batches by arrival time (ARRIVAL)"
        )
        how = [
            f"The feed is replayed {cut}, as the Streaming Lab",
            "runner does; the final result table is printed as one line",
            f"`{RESULT_PREFIX}[...]` (JSON, times in UTC).",
        ]
    else:
        how = [
            f"Source: {_SOURCE_NAMES[source.kind]}.",
            "It is unbounded: results go to the console until you stop it with Ctrl-C.",
        ]
    return _block(
        '"""Streaming Lab export: ' + what + ".",
        "",
        *how,
        "",
        "Run with `python this_file.py` or `spark-submit this_file.py`, or paste it into a",
        f"notebook. Needs PySpark {'4.1 (real-time mode)' if config.trigger == 'real_time' else '3.5'} or later.",
        '"""',
    )


def _imports(config: QueryConfig) -> str:
    feed = config.source.as_feed
    if feed is not None:
        modules = ["csv", "json", "os", "pathlib", "shutil", "tempfile", "time"]
        extra = ["from datetime import datetime, timedelta", "from pathlib import Path", "from typing import Any", ""]
        types = ["from pyspark.sql.types import StringType, StructField, StructType"]
    else:
        modules = ["os", "time"] if config.source.kind == "rate-micro-batch" else ["os", *(["tempfile"] if config.trigger == "real_time" else [])]
        extra = [""]
        types = []
    return _block(
        *(f"import {name}" for name in modules),
        *extra,
        "from pyspark.sql import Column, DataFrame, SparkSession",
        "from pyspark.sql import functions as F",
        *types,
    )


def _feed_settings(source: FeedSource) -> list[str]:
    if not source.sample_layout:
        return _dataset_settings(source)
    return [
        f"FEED = pathlib.Path({_lit(source.path.resolve())})  # folder of CSV files with event_time and key columns",
        f"SECONDS_PER_FILE = {_lit(source.seconds_per_file)}  # pause between files (0: as soon as Spark is idle)",
        f"TIME_FORMAT = {_lit(TIME_PATTERN)}  # how event_time is written in the files (read as UTC)",
    ]


def _dataset_settings(source: FeedSource) -> list[str]:
    columns = source.columns
    suffixes = sorted(suffix for suffix, fmt in FORMATS.items() if fmt == source.file_format)
    return [
        f"FEED = pathlib.Path({_lit(source.path.resolve())})  # the dataset's folder (or its one file)",
        f"FORMAT = {_lit(source.file_format)}  # csv (every column read as text), json (JSON lines) or parquet",
        f"SUFFIXES = {_lit(tuple(suffixes))}",
        f"SECONDS_PER_FILE = {_lit(source.seconds_per_file)}  # pause between files (0: as soon as Spark is idle)",
        f"EVENT_TIME = {_lit(columns.event_time)}  # the event-time column",
        f"TIME_FORMAT = {_lit(columns.time_format)}  # auto, epoch_s, epoch_ms or a Spark datetime pattern (UTC)",
        f"KEY = {_lit(columns.key)}  # the key column; None: every row in one group, {_lit(NO_KEY)}",
        f"VALUE = {_lit(columns.value)}  # the value column an aggregate reads (None: none)",
        f"DEDUP_ID = {_lit(columns.dedup_id)}  # the id column duplicates are recognised by (None: none)",
        *_batching_settings(source),
    ]


def _batching_settings(source: FeedSource) -> list[str]:
    batching = source.batching
    if batching.rows is not None:
        return [f"BATCH_ROWS = {_lit(batching.rows)}  # each micro-batch holds this many rows, in file order"]
    if batching.column is None:
        return []
    return [
        f"ARRIVAL = {_lit(batching.column)}  # the arrival (ingestion) time column that cuts micro-batches",
        f"ARRIVAL_FORMAT = {_lit(source.arrival_format)}  # how ARRIVAL is written, like TIME_FORMAT",
        f"BATCH_INTERVAL_US = {_lit(batching.interval_us)}  # rows arriving in one interval of this many microseconds form a batch",
        f"SPEED = {_lit(source.speed)}  # None: SECONDS_PER_FILE between batches; else the arrival gap between batches / SPEED",
    ]


def _generator_settings(source: GeneratorSource) -> list[str]:
    return [
        f"EVENTS_PER_SECOND = {_lit(source.events_per_second)}",
        f"KEYS = {_lit(source.keys)}  # events are spread over key-0 .. key-{source.keys - 1}",
        f"MAX_LAG_MS = {_lit(source.max_lag_ms)}  # event time lags arrival by 0 .. MAX_LAG_MS (out-of-order events)",
        f"LATE_SHARE = {_lit(source.late_share)}  # share of events that are very late ...",
        f"LATE_DELAY_MS = {_lit(source.late_delay_ms)}  # ... by this much more",
        f"SEED = {_lit(source.seed)}  # same seed, same events",
        f"STALL_AFTER_MS = {_lit(source.stall_after_ms)}  # None; else event time stops advancing after this much of it (the watermark stalls)",
    ]


def _rate_settings(source: RateSource) -> list[str]:
    return [
        f"ROWS_PER_SECOND = {_lit(source.rows_per_second)}",
        f"KEYS = {_lit(source.keys)}  # rows are spread over key-0 .. key-{source.keys - 1}",
    ]


def _rate_micro_batch_settings(source: RateMicroBatchSource) -> list[str]:
    return [
        f"ROWS_PER_BATCH = {_lit(source.rows_per_batch)}",
        f"ADVANCE_MS = {_lit(source.advance_ms)}  # event time advances this much per micro-batch",
        f"KEYS = {_lit(source.keys)}  # rows are spread over key-0 .. key-{source.keys - 1}",
    ]


def _socket_settings(source: SocketSource) -> list[str]:
    header = feed_header(source.path)
    return [
        "# The socket source reads text lines from a TCP server; Spark connects to it as a client.",
        "# Start a line server before running this, e.g. in a terminal:",
        "#     nc -lk 9999",
        "# and type or paste CSV lines such as `2024-03-04 09:00:01,home` into it, or pipe a",
        "# feed's data lines in:  tail -q -n +2 FEED_FOLDER/*.csv | nc -lk 9999",
        f"HOST = {_lit('127.0.0.1')}",
        f"PORT = {_lit(9999)}",
        f"EVENT_TIME_FIELD = {_lit(header.index('event_time') + 1)}  # 1-based position of event_time in a line",
        f"KEY_FIELD = {_lit(header.index('key') + 1)}  # 1-based position of key in a line",
        f"TIME_FORMAT = {_lit(TIME_PATTERN)}  # how event_time is written (read as UTC)",
        f"FEED = {_lit(str(source.path.resolve()))}  # the feed this query was configured with",
    ]


def _kafka_settings(source: KafkaSource) -> list[str]:
    columns = source.columns
    return [
        f"OPTIONS = {_dict_lit(source.options(client_timeouts=False))}  # Spark's Kafka source: the brokers, the topic, where to start",
        f"VALUE_FORMAT = {_lit(source.value_format)}  # each record's value: a JSON object or a CSV line",
        f"VALUE_SCHEMA = {_lit(source.value_ddl())}  # the value's columns, as sampled from the topic",
        f"VALUE_NAMES = {_lit(tuple(name for name, _ in source.value_columns))}  # the value's columns, in order",
        f"EVENT_TIME = {_lit(columns.event_time)}  # a value column, or {_lit(KAFKA_TIMESTAMP)}: the record's timestamp",
        f"TIME_FORMAT = {_lit(columns.time_format)}  # auto, epoch_s, epoch_ms or a Spark datetime pattern (UTC)",
        f"KEY = {_lit(columns.key)}  # a value column, {_lit(KAFKA_KEY)} (the record's key), or None: every row in one group, {_lit(NO_KEY)}",
        f"VALUE = {_lit(columns.value)}  # the value column an aggregate reads (None: none)",
        f"DEDUP_ID = {_lit(columns.dedup_id)}  # the id column duplicates are recognised by (None: none)",
        f"CONNECTOR = {_lit(connector_coordinates())}  # Spark's Kafka connector, from Maven Central",
    ]


def _settings(config: QueryConfig) -> str:
    lines = [_rule('The query, as configured in Streaming Lab'), *_code(config.source).settings(config.source)]
    if config.session_gap_ms is not None:
        lines.append(f"SESSION_GAP = {_lit(format_duration(config.session_gap_ms))}  # a key's session ends this long after its last event")
    elif config.aggregation != "none":
        lines.append(f"WINDOW = {_lit(format_duration(config.window_ms))}  # window length")
        if config.slide is not None:
            lines.append(f"SLIDE = {_lit(format_duration(config.slide_ms))}  # a new window starts every SLIDE")
    if config.watermark_ms is not None:
        lines.append(f"WATERMARK = {_lit(format_duration(config.watermark_ms))}  # allowed lateness behind the max event time")
    lines.append(f"OUTPUT_MODE = {_lit(config.output_mode)}")
    if config.trigger == "processing_time":
        interval = format_duration(parse_duration(config.trigger_interval or "0"))
        lines.append(f"TRIGGER_INTERVAL = {_lit(interval)}  # start a micro-batch this often")
    if config.trigger == "real_time":
        interval = format_duration(parse_duration(config.trigger_interval or "0"))
        lines.append(f"TRIGGER_INTERVAL = {_lit(interval)}  # real-time mode: checkpoint this often (not a latency)")
    return _block(*lines)


_CONNECTOR_JARS = (
    "    # Spark's Kafka connector: the jars named in KAFKA_CONNECTOR_JARS (comma-separated paths),",
    "    # else fetched from Maven Central at CONNECTOR's version. Only a new session takes them.",
    "    .config(",
    "        *(('spark.jars', os.environ['KAFKA_CONNECTOR_JARS']) if os.environ.get('KAFKA_CONNECTOR_JARS') else ('spark.jars.packages', CONNECTOR))",
    "    )",
)
"""The session builder's lines that give it Spark's Kafka connector (``CONNECTOR`` is a setting of the program)."""


def _session(config: QueryConfig) -> str:
    jars = _CONNECTOR_JARS if config.source.as_topic is not None else ()
    store: tuple[str, ...] = ()
    if config.state_store != "hdfs":
        store = (
            "# The query keeps its state in RocksDB (off the JVM heap); Spark records the choice in the checkpoint.",
            f"spark.conf.set('spark.sql.streaming.stateStore.providerClass', {_lit(STATE_STORE_PROVIDERS[config.state_store])})",
            "spark.conf.set('spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled', "
            f"{_lit(str(config.changelog_checkpointing).lower())})",
        )
    return _session_block(jars, store)


def _session_block(jars: tuple[str, ...] = (), settings: tuple[str, ...] = ()) -> str:
    """The program's SparkSession: UTC, shuffle partitions = cores, ``jars`` lines in the builder and ``settings`` lines after it."""
    return _block(
        _rule('The SparkSession'),
        "# Event times are read and shown in UTC, and a small machine needs few shuffle",
        "# partitions (the default 200 makes every micro-batch of a windowed count slow).",
        "spark = (",
        "    SparkSession.builder.appName('streaming-lab-export')",
        "    .config('spark.sql.session.timeZone', 'UTC')",
        "    .config('spark.sql.shuffle.partitions', str(os.cpu_count() or 1))",
        "    .config('spark.ui.showConsoleProgress', 'false')",
        *jars,
        "    .getOrCreate()",
        ")",
        "# Set again in case getOrCreate() returned a session that already existed (a notebook's).",
        "spark.conf.set('spark.sql.session.timeZone', 'UTC')",
        "spark.conf.set('spark.sql.shuffle.partitions', str(os.cpu_count() or 1))",
        *settings,
        "try:",
        "    spark.sparkContext.setLogLevel('WARN')",
        "except Exception:  # Spark Connect sessions have no SparkContext",
        "    pass",
    )


# --------------------------------------------------------------------------- sources

_STAGING = (
    "WORKDIR = pathlib.Path(tempfile.mkdtemp(prefix='streaming-lab-export-'))",
    "STAGING = WORKDIR / 'staging'",
    "CHECKPOINT = WORKDIR / 'checkpoint'  # where Spark keeps offsets and window state",
    "STAGING.mkdir()",
    "BASE_MTIME = time.time()",
    "",
    "",
    "def stage(index):",
    '    """Hand file `index` to Spark, modified a second after the one before."""',
    "    stage_file(FILES[index], STAGING, index, int((BASE_MTIME + index) * 1000))",
    "",
    "",
)
"""The exported program's staging of FILES, one file per micro-batch, as the replayer does it."""

def _feed_source(source: FeedSource) -> str:
    if not source.sample_layout:
        return _dataset_source(source)
    return _block(
        _rule('Source: the feed, replayed one file per micro-batch'),
        "# Spark's file source picks up files that appear in a folder. The feed's files are",
        "# copied, in name order, one at a time into a private staging folder, each with a",
        "# later modification time than the one before; with maxFilesPerTrigger=1 every file",
        "# becomes exactly one micro-batch.",
        "FILES = sorted(FEED.glob('*.csv'))",
        "if not FILES:",
        "    raise SystemExit(f'{FEED}: no .csv files')",
        "with FILES[0].open(newline='') as handle:",
        "    HEADER = [name.strip() for name in next(csv.reader(handle), [])]",
        "if not {'event_time', 'key'} <= set(HEADER):",
        "    raise SystemExit(f'{FEED}: header {HEADER} lacks event_time or key')",
        "",
        *_STAGING,
        *_FILE_CODE,
        "# Every column is read as a string and parsed here, so a malformed value becomes null",
        "# instead of failing the query.",
        "raw = file_stream(spark, StructType([StructField(name, StringType()) for name in HEADER]), 'csv', str(STAGING))",
        *_BUILDER_CODE,
        "events = raw.select(parse_time(F.col('event_time'), TIME_FORMAT, 'text').alias('event_time'), parse_key(F.col('key')).alias('key'))",
    )


def _dataset_source(source: FeedSource) -> str:
    how = {"file": "one file per micro-batch"}.get(source.batching.by, "cut into micro-batches")
    return _block(
        _rule(f"Source: the dataset, replayed {how}"),
        "# Spark's file source picks up files that appear in a folder. The dataset's files are",
        "# copied, in name order, one at a time into a private staging folder, each with a",
        "# later modification time than the one before; with maxFilesPerTrigger=1 every file",
        "# becomes exactly one micro-batch.",
        "FILES = [FEED] if FEED.is_file() else sorted(",
        "    p for p in FEED.iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES and not p.name.startswith('.')",
        ")",
        "if not FILES:",
        "    raise SystemExit(f'{FEED}: no {FORMAT} files')",
        *_STAGING,
        *_FILE_CODE,
        "# The stream reads the files with the schema a batch read of all of them gives",
        "# (CSV: every column as text, parsed below, so a malformed value becomes null).",
        "schema = StructType([f for f in read_files(spark, [str(path) for path in FILES], FORMAT).schema.fields if f.name != CORRUPT])",
        "raw = file_stream(spark, schema, FORMAT, str(STAGING))",
        "",
        "",
        *_COLUMN_CODE,
        *_batch_cutting(source),
        *_ROLE_CODE,
        "events = raw.select(event_time_column(EVENT_TIME).alias('event_time'), key.alias('key'), *value, *dedup_id)",
    )


def _builder_code(functions: Sequence[Callable[..., Any]]) -> tuple[str, ...]:
    """The engine's builders ``functions`` (:mod:`streaming.engine.builders`) as the program defines them: the names they read, then their own text, copied."""
    names = list(dict.fromkeys(name for function in functions for name in CONSTANTS.get(function, ())))
    lines = [*(f"{name} = {_lit(getattr(builders, name))}" for name in names), *(["", ""] if names else [])]
    for function in functions:
        lines += [*inspect.getsource(function).rstrip("\n").splitlines(), "", ""]
    return tuple(lines)


_BUILDER_CODE = _builder_code(COLUMN_BUILDERS)
_RECORD_CODE = _builder_code(RECORD_BUILDERS)
_GENERATOR_CODE = _builder_code(GENERATOR_BUILDERS)
_FILE_CODE = _builder_code(FILE_BUILDERS)
_KEY_CODE = _builder_code((key_column,))
_BATCH_CODE = _builder_code(BATCH_BUILDERS)
_COLUMN_CODE = (
    *_BUILDER_CODE,
    "def event_time_column(name, time_format=None, fields=None):",
    '    """The time in column `name` of `fields` (default: `schema`), written as `time_format` (default: TIME_FORMAT); null where a value does not parse."""',
    "    time_format = TIME_FORMAT if time_format is None else time_format",
    "    fields = schema if fields is None else fields",
    "    return parse_time(F.col(quoted(name)), time_format, column_kind(fields[name].dataType.simpleString()))",
    "",
    "",
)
"""The program's reading of a column by role: a time in any of the lab's formats (over a StructType, ``schema`` unless given)."""
_ROLE_CODE = (
    "key = F.lit(" + _lit(NO_KEY) + ") if KEY is None else parse_key(F.col(quoted(KEY)))",
    "value = [] if VALUE is None else [F.col(quoted(VALUE)).alias('value')]",
    "dedup_id = [] if DEDUP_ID is None else [F.col(quoted(DEDUP_ID)).alias('dedup_id')]",
)


def _batch_cutting(source: FeedSource) -> list[str]:
    """The program's cutting of FILES into one file per micro-batch by rows or by arrival interval: the engine's own cut
    (:func:`~streaming.engine.builders.cut_files`, as :mod:`streaming.engine.data.batching` calls it), copied."""
    batching = source.batching
    if batching.by == "file":
        return []
    if batching.rows is not None:
        cut = ["FILES, ARRIVALS, _ = cut_files(spark, FILES, FORMAT, WORKDIR / 'batches', rows_per_batch=BATCH_ROWS)"]
    else:
        cut = [
            "FILES, ARRIVALS, _ = cut_files(",
            "    spark, FILES, FORMAT, WORKDIR / 'batches', arrival=ARRIVAL, time_format=ARRIVAL_FORMAT,",
            "    kind=column_kind(schema[ARRIVAL].dataType.simpleString()), interval_us=BATCH_INTERVAL_US, struct=schema,",
            ")",
            "PAUSES = arrival_pauses(ARRIVALS, SPEED) if SPEED else None  # seconds to wait after each batch; None: SECONDS_PER_FILE",
        ]
    return [
        _rule("Micro-batches, cut as configured"),
        "# The rows of all files, in file order, cut into batches and written once, one file each in the",
        "# dataset's format, then replayed in order instead of the files; the rows are copied as they are.",
        *_BATCH_CODE,
        *cut,
        "",
    ]


def _socket_source(source: SocketSource) -> str:
    return _block(
        _rule('Source: lines from a TCP socket'),
        "# Each line is one event, `event_time,key` (comma-separated); the socket source is",
        "# for experiments only: it keeps no offsets, so a restarted query cannot replay.",
        "lines = spark.readStream.format('socket').option('host', HOST).option('port', PORT).load()",
        "fields = F.split(F.col('value'), ',')",
        "",
        "",
        *_BUILDER_CODE,
        "events = lines.select(",
        "    parse_time(F.try_element_at(fields, F.lit(EVENT_TIME_FIELD)), TIME_FORMAT, 'text').alias('event_time'),",
        "    parse_key(F.try_element_at(fields, F.lit(KEY_FIELD))).alias('key'),",
        ")",
    )


def _generator_source(source: GeneratorSource) -> str:
    return _block(
        _rule("Source: synthetic events from Spark's rate source"),
        "# The rate source emits rows (timestamp, value) with value = 0, 1, 2, ... as they",
        "# arrive. Each event's event time lags its arrival by a pseudo-random amount derived",
        "# from its value (out-of-order events); a LATE_SHARE of events lags by LATE_DELAY_MS",
        "# more (very late events, which a short watermark drops).",
        "",
        "",
        *_GENERATOR_CODE,
        "rate = spark.readStream.format('rate').option('rowsPerSecond', EVENTS_PER_SECOND).load()",
        "events = rate.select(",
        "    *generated_events(",
        "        F.col('value'), F.col('timestamp'), SEED, KEYS, MAX_LAG_MS, LATE_SHARE, LATE_DELAY_MS, STALL_AFTER_MS, EVENTS_PER_SECOND,",
        "    )",
        ")",
    )


def _rate_source(source: RateSource) -> str:
    return _block(
        _rule("Source: Spark's rate source"),
        "# Rows (timestamp, value) arrive at ROWS_PER_SECOND; the event time is the arrival",
        "# time, so events are in order and never late.",
        "",
        "",
        *_KEY_CODE,
        "rate = spark.readStream.format('rate').option('rowsPerSecond', ROWS_PER_SECOND).load()",
        "events = rate.select(F.col('timestamp').alias('event_time'), key_column(F.col('value'), KEYS))",
    )


def _rate_micro_batch_source(source: RateMicroBatchSource) -> str:
    return _block(
        _rule("Source: Spark's rate-micro-batch source"),
        "# Every micro-batch gets ROWS_PER_BATCH rows, and event time advances ADVANCE_MS per",
        "# batch from now, however long a batch takes.",
        "rate = (",
        "    spark.readStream.format('rate-micro-batch')",
        "    .option('rowsPerBatch', ROWS_PER_BATCH)",
        "    .option('advanceMillisPerBatch', ADVANCE_MS)",
        "    .option('startTimestamp', int(time.time() * 1000))",
        "    .load()",
        ")",
        "",
        "",
        *_KEY_CODE,
        "events = rate.select(F.col('timestamp').alias('event_time'), key_column(F.col('value'), KEYS))",
    )


@dataclass(frozen=True)
class _SourceCode:
    """How the exported code names, configures and reads one kind of source."""

    settings: Callable[[Any], list[str]]
    source: Callable[[Any], str]


def _kafka_source(source: KafkaSource) -> str:
    return _block(
        _rule("Source: the topic, read with Spark's Kafka connector"),
        "# Each record's value is parsed with the schema sampled from the topic; a value that",
        "# does not parse fills _corrupt_record, and its row counts as malformed. The record's",
        "# own timestamp and key are columns too.",
        "",
        "",
        *_COLUMN_CODE,
        *_RECORD_CODE,
        "raw = spark.readStream.format('kafka').options(**OPTIONS).load()",
        "records = decode_records(raw, VALUE_FORMAT, VALUE_SCHEMA, VALUE_NAMES)",
        "schema = records.schema",
        *_ROLE_CODE,
        "event_time = F.when(~F.col('malformed'), event_time_column(EVENT_TIME))",
        "events = records.select(event_time.alias('event_time'), key.alias('key'), *value, *dedup_id)",
    )


_CODE: dict[str, _SourceCode] = {
    "feed": _SourceCode(_feed_settings, _feed_source),
    "generator": _SourceCode(_generator_settings, _generator_source),
    "rate": _SourceCode(_rate_settings, _rate_source),
    "rate-micro-batch": _SourceCode(_rate_micro_batch_settings, _rate_micro_batch_source),
    "socket": _SourceCode(_socket_settings, _socket_source),
    "kafka": _SourceCode(_kafka_settings, _kafka_source),
}
"""How a program reads each source kind, by the kind's name (:data:`~streaming.engine.sources.SOURCE_KINDS`)."""


def _code(source: StreamSource | TableFiles) -> _SourceCode:
    """How a program reads ``source``; :class:`ConfigError` naming a kind Show code does not write yet (a new kind, until it has its entry)."""
    kind = _kind(source)
    code = _CODE.get(kind)
    if code is None:
        raise ConfigError("source", source.label, f"is a kind of source ({kind}) Show code does not write yet")
    return code


def _kind(source: StreamSource | TableFiles) -> str:
    """A source's kind, as :data:`~streaming.engine.sources.SOURCE_KINDS` names it."""
    return str(getattr(source, "kind", type(source).__name__))


def _source(config: QueryConfig) -> str:
    return _code(config.source).source(config.source)


# --------------------------------------------------------------------------- query

_MODE_COMMENTS = {
    "append": [
        "# Output mode append: a row is emitted once, when it is final. For a windowed count",
        "# that is when the watermark passes the window's end; until then nothing of the",
        "# window is output, and afterwards it never changes.",
    ],
    "update": [
        "# Output mode update: every trigger emits only the rows whose value changed in that",
        "# batch; the result table is the latest value of every window and key.",
    ],
    "complete": [
        "# Output mode complete: every trigger emits the whole result table (all windows ever",
        "# seen that are still in state), so the output replaces what was there before.",
    ],
}


def _query(config: QueryConfig, *, for_console: bool) -> str:
    lines = [
        _rule('The query'),
        *_builder_code(QUERY_BUILDERS if config.aggregation != "none" else (malformed_rows, counted_input)),
        "# Rows whose event_time could not be parsed or whose key is empty"
        + (" (or, deduplicating, whose id is)" if config.deduplicate else "") + " are counted (the",
        "# observed metrics 'input' in each batch's progress) and left out.",
        f"events = counted_input(events, malformed_rows({config.deduplicate!r}))",
        "",
    ]
    aggregating = config.aggregation != "none"
    measured = measure_column(config.aggregation)
    if config.watermark_ms is not None and aggregating:
        lines += [
            "# Watermark: Spark tracks the maximum event time seen so far; the watermark trails it",
            "# by WATERMARK and moves forward between micro-batches (a batch is judged by the",
            "# watermark left by the batches before it). Once the watermark passes a window's end,",
            "# the window is final: Spark emits it (append mode), frees its state, and drops",
            "# any later event for it as too late.",
            "events = events.withWatermark('event_time', WATERMARK)",
            "",
        ]
    elif config.watermark_ms is not None:
        lines += [
            "# Watermark: Spark tracks the maximum event time seen so far; the watermark trails it",
            "# by WATERMARK. Without an aggregation it drops nothing here"
            + (", except in the deduplication below." if config.deduplicate else "."),
            "events = events.withWatermark('event_time', WATERMARK)",
            "",
        ]
    if config.deduplicate:
        lines += [
            "# Deduplication: a row whose id was already seen is dropped, as long as the watermark",
            "# has not passed the first one's event time plus WATERMARK (Spark keeps each id that long);",
            "# a row whose own event time is at or before the watermark is dropped as late.",
            "events = events.dropDuplicatesWithinWatermark(['dedup_id'])",
            "",
        ]
    if config.watermark_ms is None and aggregating:
        lines += [
            "# No watermark: no event is ever too late, so no window is ever final and Spark",
            "# keeps the state of every window forever.",
            "",
        ]
    if aggregating:
        if config.session_gap_ms is not None:
            lines += [
                "# Window: session windows. A key's session starts with an event and ends SESSION_GAP",
                "# after its last event; an event within the gap extends it (and may merge two).",
                "window = F.session_window('event_time', SESSION_GAP)",
            ]
        elif config.slide is not None:
            lines += [
                "# Window: windows of WINDOW starting every SLIDE, each [start, end) -- start inclusive,",
                "# end exclusive. Sliding windows overlap, so an event is counted in every window",
                "# that contains its event time.",
                "window = F.window('event_time', WINDOW, SLIDE)",
            ]
        else:
            lines += [
                "# Window: tumbling windows of WINDOW, each [start, end) -- start inclusive, end",
                "# exclusive; every event falls in exactly one.",
                "window = F.window('event_time', WINDOW)",
            ]
        if config.aggregation == "approx_distinct":
            lines.append("# approx_count_distinct: the number of distinct values, estimated (HyperLogLog++).")
        elif config.aggregation != "count":
            lines.append("# The value column as a number; a value that is not one is null and left out of the aggregate.")
        lines.append(f"counts = windowed_aggregate(events, window, {_lit(config.aggregation)})")
        if for_console:
            lines += [
                "result = counts.select(",
                "    F.col('window.start').alias('window_start'),",
                "    F.col('window.end').alias('window_end'),",
                "    'key',",
                f"    {_lit(measured)},",
                ")",
            ]
        else:
            lines += [
                "# Times leave Spark as microseconds since the epoch (UTC), independent of the",
                "# Python process's time zone.",
                "result = counts.select(",
                "    F.unix_micros(F.col('window.start')).alias('window_start'),",
                "    F.unix_micros(F.col('window.end')).alias('window_end'),",
                "    'key',",
                f"    {_lit(measured)},",
                ")",
            ]
    else:
        lines.append("# No aggregation: every valid event passes through as it arrives.")
        if for_console:
            lines.append("result = events.select('event_time', 'key')")
        else:
            lines.append("result = events.select(F.unix_micros('event_time').alias('event_time'), 'key')")
    lines.append("")
    lines += _MODE_COMMENTS[config.output_mode]
    return _block(*lines)


def _trigger_lines(config: QueryConfig, indent: str = "    ") -> list[str]:
    if config.trigger == "processing_time":
        return [
            f"{indent}# Trigger: start a micro-batch every TRIGGER_INTERVAL (or as soon as the previous",
            f"{indent}# one ends, if it took longer).",
            f"{indent}.trigger(processingTime=TRIGGER_INTERVAL)",
        ]
    if config.trigger == "available_now":
        return [
            f"{indent}# Trigger: process everything available at the start, in micro-batches, then stop.",
            f"{indent}.trigger(availableNow=True)",
        ]
    if config.trigger == "real_time":
        return [
            f"{indent}# Trigger: real-time mode. Long-running tasks write each row as soon as it is read;",
            f"{indent}# a batch lasts TRIGGER_INTERVAL, then Spark checkpoints. It needs a checkpoint folder.",
            f"{indent}.trigger(realTime=TRIGGER_INTERVAL)",
            f"{indent}.option('checkpointLocation', tempfile.mkdtemp(prefix='streaming-lab-real-time-'))",
        ]
    return [f"{indent}# Default trigger: the next micro-batch starts as soon as the previous one ends."]


# --------------------------------------------------------------------------- sinks

def _grouping(config: QueryConfig) -> str:
    """What the program's fold replaces a row by in update mode (``fold_rows``' ``key_of``): a window and key, or nothing for passed-through rows."""
    return "None" if config.aggregation == "none" else "window_of"


def _feed_sink(config: QueryConfig) -> str:
    windowed = config.aggregation != "none"
    comment = {
        "update": "# update: a row replaces the row of its window and key",
        "append": "# append: rows are final; each window and key arrives once" if windowed else "# append: each row is added",
        "complete": "# complete: the batch is the whole result table",
    }[config.output_mode]
    rerun = (
        ["    # complete: a batch re-run after a restart replaces the table again"]
        if config.output_mode == "complete"
        else ["    if batch_id <= last_batch_id:  # a batch re-run after a restart: already folded", "        return"]
    )
    fold = [
        *_builder_code(SINK_BUILDERS),
        "table = {}  # the result table: each row under its grouping, the newest change last",
        "last_batch_id = -1",
        "",
        "",
        *(
            [
                "def window_of(row):",
                '    """The grouping a row replaces in update mode: its window and key."""',
                "    return (row[0], row[1], row[2])",
                "",
                "",
            ]
            if windowed else []
        ),
        "def fold(batch, batch_id):",
        f'    """foreachBatch: fold one micro-batch\'s output into `table`. {comment[2:]}."""',
        "    global last_batch_id",
        *rerun,
        "    last_batch_id = max(last_batch_id, batch_id)",
        f"    fold_rows(table, batch.collect(), OUTPUT_MODE, {_grouping(config)})",
    ]
    writer = [
        "",
        "",
        "writer = (",
        "    result.writeStream.queryName('streaming_lab_export')",
        "    .outputMode(OUTPUT_MODE)",
        "    .option('checkpointLocation', str(CHECKPOINT))",
        *_trigger_lines(config),
        ")",
        "# Spark Connect runs a foreachBatch function on the server, out of this program's reach:",
        "# there the output goes to the memory sink instead, read back in batch order once the feed is done.",
        "CONNECT = type(spark).__module__.startswith('pyspark.sql.connect')",
        "writer = writer.format('memory') if CONNECT else writer.foreachBatch(fold)",
    ]
    return _block(
        _rule('Sink: foreachBatch (the memory sink on Spark Connect), folded into the result table'),
        *fold,
        *writer,
    )


def _feed_run(config: QueryConfig) -> str:
    lines = [
        _rule('Run'),
        *([] if _paced(config) else ["PAUSES = None  # seconds to wait after each file; None: SECONDS_PER_FILE", ""]),
        "observed = {}  # batch id -> the 'input' observed metrics of that batch",
        "",
        "",
        "def note_progress(query):",
        "    for progress in query.recentProgress:",
        "        # a dict before Spark 4, a StreamingQueryProgress (with .json) since",
        "        progress = json.loads(progress.json) if hasattr(progress, 'json') else progress",
        "        metrics = (progress.get('observedMetrics') or {}).get('input') or {}",
        "        observed[progress['batchId']] = metrics",
        "",
        "",
    ]
    if config.trigger == "available_now" or config.arrival == "busy":
        waited = "query.awaitTermination()" if config.trigger == "available_now" else "query.processAllAvailable()"
        lines += [
            "# Arrival rule busy: every file is staged before the query starts; Spark runs them back to",
            "# back, one file per micro-batch, with no no-data batch between them (the watermark a",
            "# batch is judged by is older than under the quiet rule), as a busy stream or a backfill does.",
            "for index in range(len(FILES)):",
            "    stage(index)",
            "query = writer.start()",
            "try:",
            f"    {waited}",
            "    note_progress(query)",
            "finally:",
            "    query.stop()",
            "    shutil.rmtree(WORKDIR, ignore_errors=True)",
        ]
    else:
        lines += [
            "# Arrival rule quiet: one file at a time. Stage it, then wait until Spark has processed",
            "# everything available -- including the no-data micro-batch Spark runs only because the",
            "# watermark advanced -- so every run gives the same batches and the same result, whatever the load.",
            "query = writer.start()",
            "try:",
            "    for index in range(len(FILES)):",
            "        stage(index)",
            "        query.processAllAvailable()",
            "        note_progress(query)",
            "        pause = PAUSES[index] if PAUSES else SECONDS_PER_FILE",
            "        if pause:",
            "            time.sleep(pause)",
            "    query.processAllAvailable()",
            "    note_progress(query)",
            "finally:",
            "    query.stop()",
            "    shutil.rmtree(WORKDIR, ignore_errors=True)",
        ]
    lines += [
        "if CONNECT:  # the memory sink's rows, in batch order (in complete mode, the last batch's)",
        f"    fold_rows(table, spark.table('streaming_lab_export').collect(), OUTPUT_MODE, {_grouping(config)})",
        "",
        "",
        "def stamp(micros):",
        '    """UTC time of epoch microseconds, with the fraction of a second when it is not zero."""',
        "    moment = datetime(1970, 1, 1) + timedelta(microseconds=micros)",
        "    text = moment.strftime('%Y-%m-%d %H:%M:%S')",
        "    return f'{text}.{moment.microsecond:06d}'.rstrip('0') if moment.microsecond else text",
        "",
        "",
    ]
    if config.aggregation == "none":
        lines += [
            "records = [{'event_time': stamp(t), 'key': k} for t, k in sorted((int(t), str(k)) for t, k in table.values())]",
            "for record in records:",
            "    print(f\"{record['event_time']}  {record['key']}\")",
        ]
    else:
        measure = measure_column(config.aggregation)
        value = "int(value)" if config.aggregation == "count" else "None if value is None else float(value)"
        lines += [
            "records = [",
            f"    {{'window_start': stamp(start), 'window_end': stamp(end), 'key': key, {_lit(measure)}: {value}}}",
            "    for start, end, key, value in sorted(((int(start), int(end), str(key), value) for start, end, key, value in table.values()), key=window_of)",
            "]",
            "for record in records:",
            f"    print(f\"{{record['window_start']}} - {{record['window_end']}}  {{record['key']:<20}} {{record[{_lit(measure)}]!s:>8}}\")",
        ]
    lines += [
        "input_rows = sum(int(m.get('input_rows') or 0) for m in observed.values())",
        "malformed_rows = sum(int(m.get('malformed_rows') or 0) for m in observed.values())",
        "print(f'{len(records)} result rows from {len(FILES)} files, {input_rows} input rows, {malformed_rows} malformed rows left out')",
        f"print({_lit(RESULT_PREFIX)} + json.dumps(records))",
    ]
    return _block(*lines)


def _paced(config: QueryConfig) -> bool:
    feed = config.source.as_feed
    return feed is not None and feed.batching.column is not None


def _console_run(config: QueryConfig) -> str:
    return _console_block(
        ("# Each micro-batch's output rows are printed (times in UTC).",), "result", "streaming_lab_export", "OUTPUT_MODE", _trigger_lines(config),
    )


def _console_block(comment: tuple[str, ...], frame: str, name: str, mode: str, options: Sequence[str], cleanup: tuple[str, ...] = ()) -> str:
    """An unbounded program's end: ``frame`` (a name in the program) to the console in output ``mode`` (a literal or a name) with the
    writer lines ``options``, run until Ctrl-C; ``cleanup`` lines run after the query stops."""
    return _block(
        _rule("Sink: the console"),
        *comment,
        "writer = (",
        f"    {frame}.writeStream.queryName({_lit(name)})",
        f"    .outputMode({mode})",
        "    .format('console')",
        "    .option('truncate', False)",
        "    .option('numRows', 10_000)  # the console shows 20 rows of a batch unless told",
        *options,
        ")",
        "",
        _rule("Run"),
        "query = writer.start()",
        "try:",
        "    query.awaitTermination()",
        "except KeyboardInterrupt:",
        "    pass",
        "finally:",
        "    query.stop()",
        *cleanup,
    )


# --------------------------------------------------------------------------- API

def pyspark_code(config: QueryConfig) -> str:
    """Self-contained PySpark code (a Python program) that runs ``config``.

    For a feed source the program replays the feed as :func:`streaming.engine.run.runner.replay`
    does and prints the final result table as one line ``RESULT <json>``, the
    records of :meth:`~streaming.engine.run.runner.Replay.result_records`
    (``{"event_time", "key"}`` records for ``aggregation="none"``). For the other
    sources it runs the query with a console sink until stopped. The code is
    checked with :func:`compile` before it is returned.
    """
    if not isinstance(config, QueryConfig):
        raise TypeError(f"config: expected a QueryConfig, got {config!r}")
    config = replace(config, source=config.source.shown)  # a walkthrough's staging topic lives as long as its query: the program reads the topic itself
    is_feed = config.source.as_feed is not None
    parts = [
        _header(config),
        _imports(config),
        _settings(config),
        _session(config),
        _source(config),
        _query(config, for_console=not is_feed),
    ]
    parts += [_feed_sink(config), _feed_run(config)] if is_feed else [_console_run(config)]
    code = "\n".join(parts)
    compile(code, "<export>", "exec")
    return code


# --------------------------------------------------------------------------- joins


def _join_side(of: Side) -> dict[str, object]:
    """One side's settings in the program: how it is read, its event-time column, its watermark delay."""
    watermark = None if of.watermark_ms is None else format_duration(of.watermark_ms)
    if isinstance(of, JoinSide):
        return {"kind": "files", "files": tuple(str(path) for path in of.files()), "format": of.format, "time": of.event_time,
                "time_format": of.time_format, "watermark": watermark, "static": of.static}
    if isinstance(of, LiveSide):
        return {"kind": "ads", "stream": of.stream, "time": of.event_time, "watermark": watermark}
    source = of.source
    end = None if source.end_offsets is None else {str(partition): offset for partition, offset in source.end_offsets}
    return {"kind": "topic", "options": source.options(client_timeouts=False), "end_offsets": end, "value_format": source.value_format, "value_schema": source.value_ddl(),
            "value_names": tuple(name for name, _ in source.value_columns), "value_time": source.columns.event_time, "time_format": source.columns.time_format, "time": of.event_time, "watermark": watermark}


def _ads_settings(streams: AdStreams) -> list[str]:
    return [
        "# The generator's pair: impressions, and the clicks on them a drawn delay later (the same rows for the same SEED).",
        f"IMPRESSIONS_PER_SECOND = {streams.impressions_per_second}",
        f"CLICKS_PER_SECOND = {streams.clicks_per_second}  # impressions a second x the click-through rate {streams.click_through!r}",
        f"ADS = {streams.ads}  # each impression shows one of ADS ads, each ad in one of CAMPAIGNS",
        f"MEAN_CLICK_DELAY_MS = {duration_ms('mean_click_delay', streams.mean_click_delay)}  # a click follows its impression by an exponential delay",
        f"MAX_CLICK_DELAY_MS = {duration_ms('max_click_delay', streams.max_click_delay)}  # ...capped here",
        f"MAX_LAG_MS = {duration_ms('max_lag', streams.max_lag)}  # an impression's time lags its arrival by up to this (out of order)",
        f"LATE_SHARE = {streams.late_share!r}  # the share of impressions (and their clicks) that lag LATE_DELAY_MS more",
        f"LATE_DELAY_MS = {duration_ms('late_delay', streams.late_delay)}",
        f"SEED = {streams.seed}",
    ]


_STAGE_CODE = (
    "def stage_files(paths, folder):",
    '    """Copy the files `paths` into `folder` in order, each modified after the one before: a file source reading one file per micro-batch',
    "    then reads file i in micro-batch i. A name starting with '.' is ignored by Spark, so a file appears whole.",
    '    """',
    "    folder.mkdir()",
    "    for index, path in enumerate(paths):",
    "        stage_file(pathlib.Path(path), folder, index, (1_700_000_000 + index) * 1000)",
    "",
    "",
)
"""The program's staging of a replayed side's or view's files, all before the query starts."""

_FILE_SIDE_CODE = (
    *_FILE_CODE,
    *_STAGE_CODE,
    "def file_side(side, name):",
    '    """The side\'s stream over a staging folder holding its files (file i in micro-batch i), and its columns. A static side (a',
    "    stream-static join) is a table of its files, which every micro-batch joins whole.",
    '    """',
    "    batch = read_files(spark, list(side['files']), side['format'])",
    "    fields = StructType([f for f in batch.schema.fields if f.name != CORRUPT])",
    "    if side['static']:",
    "        table = batch.select(*[F.col(quoted(f.name)) for f in fields.fields])",
    "    else:",
    "        stage_files(side['files'], WORKDIR / name)",
    "        table = file_stream(spark, fields, side['format'], str(WORKDIR / name))",
    "    parsed = event_time_column(side['time'], side['time_format'], fields)",
    "    return table.select(*[parsed.alias(f.name) if f.name == side['time'] else F.col(quoted(f.name)) for f in fields.fields])",
    "",
    "",
)
"""A replayed side's reading: file ``i`` of the side in micro-batch ``i`` (as :func:`~streaming.engine.join.join.run_join` stages them)."""

_ADS_SIDE_CODE = (
    *_builder_code(AD_BUILDERS),
    "def ad_stream(side, name):",
    '    """The impressions or the clicks, live from a rate source of their own, and their columns."""',
    "    if side['stream'] == 'impressions':",
    "        rate = spark.readStream.format('rate').option('rowsPerSecond', IMPRESSIONS_PER_SECOND).load()",
    "        frame = rate.select(*impression_columns(F.col('value'), F.col('timestamp'), SEED, ADS, MAX_LAG_MS, LATE_SHARE, LATE_DELAY_MS))",
    "    else:",
    "        rate = spark.readStream.format('rate').option('rowsPerSecond', CLICKS_PER_SECOND).load()",
    "        clicks = click_columns(",
    "            F.col('value'), F.col('timestamp'), SEED, MAX_LAG_MS, LATE_SHARE, LATE_DELAY_MS, IMPRESSIONS_PER_SECOND, CLICKS_PER_SECOND,",
    "            MEAN_CLICK_DELAY_MS, MAX_CLICK_DELAY_MS,",
    "        )",
    "        frame = rate.select(*clicks).where(F.col('impression_id').isNotNull())",
    "    return frame",
    "",
    "",
)
"""A side of the generator's pair, as :class:`~streaming.engine.sources.ads.AdStreams` makes it."""

_TOPIC_SIDE_CODE = (
    *_RECORD_CODE,
    "def topic_stream(side, name):",
    '    """The topic\'s records as rows of the value\'s columns, and the event time (null for a value that does not parse); the',
    "    record's own timestamp is the event time when `value_time` names it (the column then called `<side>_kafka_timestamp`).",
    '    """',
    "    raw = records_before(spark.readStream.format('kafka').options(**side['options']).load(), side['end_offsets'])  # a range: its records only",
    "    records = decode_records(raw, side['value_format'], side['value_schema'], side['value_names'])",
    "    time = F.when(~F.col('malformed'), event_time_column(side['value_time'], side['time_format'], records.schema))",
    "    values = [name for name in side['value_names'] if name != side['value_time']]",
    "    return records.select(*[F.col(quoted(name)) for name in values], time.alias(side['time']))",
    "",
    "",
)
"""A topic side, as :meth:`~streaming.engine.join.join.TopicSide.read` reads it."""

_SIDE_CODE = {"files": _FILE_SIDE_CODE, "ads": _ADS_SIDE_CODE, "topic": _TOPIC_SIDE_CODE}
_SIDE_READERS = {"files": "file_side", "ads": "ad_stream", "topic": "topic_stream"}


_SIDE_NAMES = {
    "ads": "the generator's impressions and clicks (Spark's rate source)",
    "topic": "Kafka topics (Spark's Kafka connector, see CONNECTOR)",
    "files": "files",
}


def _join_header(config: JoinConfig, kinds: list[str]) -> str:
    read = " and ".join(_SIDE_NAMES[kind] for kind in dict.fromkeys(kinds))
    if config.live:
        how = f"live: {read}.\nIt runs until you stop it with Ctrl-C; joined rows go to the console."
    else:
        how = f"replayed micro-batch by micro-batch: {read} (file i, or a topic range's i-th slice, in micro-batch i)."
    return _block(f'"""Streaming Lab export: a stream-stream join ({config.join_type}), {how}\n\nRun: python this_file.py\n"""', "")


def join_code(config: JoinConfig) -> str:
    """Self-contained PySpark code (a Python program) that runs ``config``'s join as the lab does.

    A join of files is replayed as :func:`~streaming.engine.join.join.run_join`
    does: each side's files are staged in name order with increasing
    modification times (``maxFilesPerTrigger=1``: file ``i`` in micro-batch
    ``i``), the join runs under the available-now trigger, and the program
    prints the joined rows as one line ``RESULT <json>``: the records of
    :meth:`~streaming.engine.join.join.JoinOutcome.result_records`. A live join
    (the generator's pair, or topics) reads its sides as
    :mod:`~streaming.engine.join.live_join` does and prints each micro-batch's
    joined rows to the console until stopped. Checked with :func:`compile`.
    """
    if not isinstance(config, JoinConfig):
        raise TypeError(f"config: expected a JoinConfig, got {config!r}")
    sides = [_join_side(side) for side in config.sides]
    kinds = [str(side["kind"]) for side in sides]
    settings = [
        _rule("Settings"),
        "# Each side: how it is read, its event-time column and how its times are written, its watermark delay (None: no watermark).",
        f"LEFT = {_dict_lit(sides[0])}",
        f"RIGHT = {_dict_lit(sides[1])}",
        f"KEYS = {_lit(config.on)}",
        "# The right side's time within [left time + LOWER, left time + UPPER], in milliseconds (None: no time range).",
        f"RANGE_MS = {_lit(config.bounds_ms)}",
        f"JOIN_TYPE = {_lit(config.join_type)}",
        f"POLICY = {_lit(config.policy)}  # the global watermark: the min (slower side) or max (faster side) of the sides'",
        "TIME_FORMAT = 'auto'",
    ]
    if "ads" in kinds:
        live = next(side for side in config.sides if isinstance(side, LiveSide))
        settings += _ads_settings(live.streams)
    if "topic" in kinds:
        settings.append(f"CONNECTOR = {_lit(connector_coordinates())}  # Spark's Kafka connector, from Maven Central")
    if not config.live:
        settings.append(f"RESULT_PREFIX = {_lit(RESULT_PREFIX)}")
    readers = [line for kind in dict.fromkeys(kinds) for line in _SIDE_CODE[kind]]
    code = "\n".join([
        _join_header(config, kinds),
        _block(*(f"import {name}" for name in ("functools", "json", "operator", "os", "pathlib", "shutil", "tempfile")), "from datetime import datetime",
               "from pathlib import Path", "", "from pyspark.sql import Column, DataFrame, SparkSession", "from pyspark.sql import functions as F", "from pyspark.sql.types import StructType"),
        _block(*settings),
        _session_block(_CONNECTOR_JARS if "topic" in kinds else (), ("spark.conf.set('spark.sql.streaming.multipleWatermarkPolicy', POLICY)",)),
        _block(
            _rule("Sources: each side's rows, its event time parsed (rows without one left out) and its watermark set"),
            "WORKDIR = pathlib.Path(tempfile.mkdtemp(prefix='streaming-lab-export-join-'))",
            "",
            "",
            *_COLUMN_CODE,
            *readers,
            "def side_stream(side, name):",
            "    frame = {" + ", ".join(f"{_lit(kind)}: {_SIDE_READERS[kind]}" for kind in dict.fromkeys(kinds)) + "}[side['kind']](side, name)",
            "    frame = frame.where(F.col(quoted(side['time'])).isNotNull())",
            "    if side['watermark'] is not None:",
            "        frame = frame.withWatermark(quoted(side['time']), side['watermark'])",
            "    return frame, frame.columns",
            "",
            "",
            "left, left_names = side_stream(LEFT, 'left')",
            "right, right_names = side_stream(RIGHT, 'right')",
        ),
        _block(
            _rule("The join"),
            "def col(side, name):",
            "    return F.col(f'{side}.{quoted(name)}')",
            "",
            "",
            "condition = [col('left', key) == col('right', key) for key in KEYS]",
            "if RANGE_MS is not None:",
            "    left_time, right_time = col('left', LEFT['time']), col('right', RIGHT['time'])",
            "    condition += [",
            "        right_time >= left_time + F.expr(f'INTERVAL {RANGE_MS[0]} MILLISECONDS'),",
            "        right_time <= left_time + F.expr(f'INTERVAL {RANGE_MS[1]} MILLISECONDS'),",
            "    ]",
            "joined = left.alias('left').join(right.alias('right'), functools.reduce(operator.and_, condition), JOIN_TYPE)",
            "if JOIN_TYPE == 'right_outer':",
            "    keys = [col('right', key).alias(key) for key in KEYS]",
            "elif JOIN_TYPE == 'full_outer':",
            "    keys = [F.coalesce(col('left', key), col('right', key)).alias(key) for key in KEYS]",
            "else:",
            "    keys = [col('left', key).alias(key) for key in KEYS]",
            "others = [col('left', name).alias(name) for name in left_names if name not in KEYS]",
            "if JOIN_TYPE != 'left_semi':",
            "    others += [col('right', name).alias(name) for name in right_names if name not in KEYS]",
            "joined = joined.select(*keys, *others)",
        ),
        _live_join_run() if config.live else _replayed_join_run(),
    ])
    compile(code, "<export>", "exec")
    return code


def _replayed_join_run() -> str:
    return _block(
        _rule("Run: both sides to their end, then print the joined rows"),
        "rows = []",
        "query = (",
        "    joined.writeStream.outputMode('append').option('checkpointLocation', str(WORKDIR / 'checkpoint'))",
        "    .trigger(availableNow=True).foreachBatch(lambda batch, batch_id: rows.extend(batch.collect())).start()",
        ")",
        "query.awaitTermination()",
        "",
        "",
        "def plain(value):",
        "    if isinstance(value, datetime):",
        "        text = value.strftime('%Y-%m-%d %H:%M:%S')",
        "        return text + f'.{value.microsecond:06d}'.rstrip('0') if value.microsecond else text",
        "    return value",
        "",
        "",
        "records = [{name: plain(value) for name, value in row.asDict().items()} for row in rows]",
        "records.sort(key=lambda record: [(value is not None, str(value)) for value in record.values()])",
        "print(f'{len(records)} joined rows')",
        "print(RESULT_PREFIX + json.dumps(records))",
        "shutil.rmtree(WORKDIR, ignore_errors=True)",
        "spark.stop()",
    )


def _live_join_run() -> str:
    return _console_block(
        (
            "# Each micro-batch's joined rows are printed (times in UTC): pairs as they match, an outer join's",
            "# rows with NULLs once the watermark passes the end of their range.",
        ),
        "joined", "streaming_lab_export_join", "'append'", ("    .option('checkpointLocation', str(WORKDIR / 'checkpoint'))",),
        ("    shutil.rmtree(WORKDIR, ignore_errors=True)",),
    )


# --------------------------------------------------------------------------- a user's own SQL


def _sql_view(view: SqlView) -> dict[str, object]:
    """One view in the program: its files, their format, its event-time column and how its times are written; for a streamed topic its
    range of records and how their values read; for a dataset cut by rows or by arrival time, how it is cut; for a source without an end (the
    generator, a rate source, a socket) only its kind, its rows being made by the source's own block of the program (:data:`_CODE`)."""
    source = view.source
    topic = source.as_topic
    if topic is not None:
        return {
            "name": view.name, "static": view.static, "kind": "topic",
            "options": topic.batch_options(client_timeouts=False) if view.static else topic.options(client_timeouts=False),
            "end_offsets": None if topic.end_offsets is None else dict(topic.end_offsets), "value_format": topic.value_format,
            "value_schema": topic.value_ddl(), "value_names": tuple(name for name, _ in topic.value_columns), "schema": topic.schema,
            "event_time": topic.columns.event_time, "time_format": topic.columns.time_format,
        }
    data = source.as_files
    if data is None:
        _code(source)  # ConfigError for a kind Show code does not write
        return {"name": view.name, "static": False, "kind": "unbounded"}
    feed = source.as_feed
    cut = {"cut": _view_cut(feed)} if feed is not None and not view.static and feed.batching.by != "file" else {}
    columns = data.columns
    return {
        "name": view.name, "static": view.static, "kind": "files", "files": tuple(str(path.resolve()) for path in data.files()),
        "format": data.file_format, "event_time": None if columns is None else columns.event_time,
        "time_format": "auto" if columns is None else columns.time_format, **cut,
    }


def _view_cut(feed: FeedSource) -> dict[str, object]:
    """How a streamed view's dataset is cut into micro-batches (:func:`~streaming.engine.builders.cut_files`'s arguments): by rows, or by
    the time in a column, an interval a batch."""
    batching = feed.batching
    if batching.rows is not None:
        return {"rows_per_batch": batching.rows}
    return {"arrival": batching.column, "time_format": feed.arrival_format, "interval_us": batching.interval_us}


_TOPIC_VIEW_CODE = (
    "    if view['kind'] == 'topic' and view['static']:  # a topic's range of records read whole, each value read as the lab reads it",
    "        records = decode_records(spark.read.format('kafka').options(**view['options']).load(), view['value_format'], view['value_schema'], view['value_names'])",
    "        return topic_view(records, view['schema'], view['event_time'], view['time_format'])",
    "    if view['kind'] == 'topic':  # a range of a topic, each record's value read as the lab reads it",
    "        raw = spark.readStream.format('kafka').options(**view['options']).load()",
    "        records = decode_records(records_before(raw, view['end_offsets']), view['value_format'], view['value_schema'], view['value_names'])",
    "        rows = topic_view(records, view['schema'], view['event_time'], view['time_format'])",
    "        return counted_input(rows, F.col(quoted(view['event_time'])).isNull(), INPUT_METRICS + '_' + view['name'])",
)
"""The lines of ``view_frame`` that read a topic view, in a program with one."""


_UNBOUNDED_VIEW_CODE = (
    "    if view['kind'] == 'unbounded':  # the rows the source above makes, as `events`",
    "        return counted_input(events.select('event_time', 'key'), F.col('event_time').isNull(), INPUT_METRICS + '_' + view['name'])",
)
"""The lines of ``view_frame`` that read the program's one view over a source without an end."""


_VIEW_FRAME_HEAD = (
    "STREAMED = []  # each streamed view's files and staging folder: file i is handed over in micro-batch i",
    "",
    "",
    "def view_frame(view):",
    '    """The view\'s rows: a static view read whole; a streamed one from its staging folder, file i in micro-batch i (each file modified',
    "    after the one before; under the busy rule all staged before the query starts), its event time parsed and its rows without one",
    "    counted and left out.",
    '    """',
)
_FILE_VIEW_CODE = (
    "    batch = view_batch(spark, list(view['files']), view['format'], view['event_time'], view['time_format'])",
    "    schema = {f.name: f.dataType.simpleString() for f in batch.schema.fields if f.name != CORRUPT}",
    "    if view['static']:",
    "        if view['event_time'] is None or view['event_time'] not in schema:",
    "            return batch",
    "        return batch.select(*view_select(schema, view['event_time'], view['time_format']))",
    "    struct = StructType([f for f in batch.schema.fields if f.name != CORRUPT])",
    "    files = [pathlib.Path(path) for path in view['files']]",
    "    if 'cut' in view:  # the rows of its files cut into micro-batches as the lab cuts them",
    "        kind = column_kind(schema[view['cut']['arrival']]) if 'arrival' in view['cut'] else 'text'",
    "        files, _, _ = cut_files(spark, files, view['format'], WORKDIR / (view['name'] + '-batches'), kind=kind, struct=struct, **view['cut'])",
    "    folder = WORKDIR / view['name']",
    "    folder.mkdir()",
    "    STREAMED.append((files, folder))",
    "    if ARRIVAL == 'busy':  # every file there before the query starts",
    "        for index, path in enumerate(files):",
    "            stage_file(path, folder, index, (1_700_000_000 + index) * 1000)",
    "    raw = file_stream(spark, struct, view['format'], str(folder))",
    "    rows = raw.select(*view_select(schema, view['event_time'], view['time_format']))",
    "    return counted_input(rows, F.col(quoted(view['event_time'])).isNull(), INPUT_METRICS + '_' + view['name'])",
    "",
    "",
)


def sql_code(query: SqlQuery, grouping: Sequence[str]) -> str:
    """Self-contained PySpark code (a Python program) that runs ``query``, a user's own SQL, over views built as the lab builds them.

    Every view is a dataset or feed of files (a static one read whole) or a topic (streamed, or read whole); under the available-now trigger
    micro-batch *i* reads file *i* of each streamed view of files, and a topic as its options say (``maxOffsetsPerTrigger``), as
    :func:`~streaming.engine.sql.replay.replay_sql` does. The result table is folded as the output mode says (update mode
    replaces the row of each ``grouping``, the aggregation's grouping columns the analysed plan names) and printed as one line
    ``RESULT <json>``: the records of :meth:`~streaming.engine.sql.table.SqlTable.records`. One view may read a source without an end (the
    generator, a rate source, a socket), made by the form program's block for that source: the query then runs until Ctrl-C, its rows printed
    to the console batch by batch. :class:`ConfigError` naming a view Show code does not write (a second such view). Checked with :func:`compile`.
    """
    views = [_sql_view(view) for view in query.views]
    topics = any(view["kind"] == "topic" for view in views)
    cuts = any("cut" in view for view in views)
    unbounded = [view for view, written in zip(query.views, views, strict=True) if written["kind"] == "unbounded"]
    if len(unbounded) > 1:
        raise ConfigError(f"view {unbounded[1].name}", unbounded[1].source.label, "is a second view over a source without an end: Show code writes one")
    endless = unbounded[0].stream if unbounded else None
    about = (
        (
            "The view over the source without an end reads it as the lab does, and the query's rows are printed to the console",
            "batch by batch until you press Ctrl-C (times in UTC).",
        ) if endless is not None else (
            "Each streamed view's files are handed over one per micro-batch (file i of every view in",
            f"micro-batch i); the final result table is printed as one line `{RESULT_PREFIX}[...]`",
            "(JSON, times in UTC).",
        )
    )
    code = "\n".join([
        _block(
            '"""Streaming Lab export: your own SQL over its views, ' + ("run as the lab runs it." if endless is not None else "replayed as the lab replays it."),
            "",
            *about,
            "",
            "Run with `python this_file.py` or `spark-submit this_file.py`. Needs PySpark 4.1 or later",
            "(the WATERMARK clause).",
            '"""',
        ),
        _block(
            *(f"import {name}" for name in ("csv", "datetime as dt", "decimal", "json", "os", "pathlib", "shutil", "tempfile", "time")),
            "from pathlib import Path",
            "from typing import Any",
            "",
            "from pyspark.sql import Column, DataFrame, SparkSession",
            "from pyspark.sql import functions as F",
            "from pyspark.sql.types import ArrayType, DataType, MapType, StringType, StructField, StructType, TimestampNTZType",
        ),
        _block(
            _rule("Your query, as written in Streaming Lab"),
            f"SQL = {_lit(query.text)}",
            f"OUTPUT_MODE = {_lit(query.output_mode)}",
            f"ARRIVAL = {_lit('busy' if endless is not None else query.ran_arrival())}  # the arrival rule: quiet or busy (see the run below)",
            f"GROUPING = {_lit(tuple(grouping))}  # the aggregation's grouping columns: update mode replaces the row of each",
            "# Each view: its files (or a topic's range of records), their format, its event-time column and how its times are written;",
            "# a static view is read whole.",
            "VIEWS = [",
            *(f"    {_dict_lit(view)}," for view in views),
            "]",
            f"RESULT_PREFIX = {_lit(RESULT_PREFIX)}",
            *((f"CONNECTOR = {_lit(connector_coordinates())}  # Spark's Kafka connector, from Maven Central",) if topics else ()),
            *(("", f"# View {unbounded[0].name}: {_SOURCE_NAMES.get(_kind(endless), _kind(endless))}", *_code(endless).settings(endless)) if endless is not None else ()),
        ),
        _session_block(_CONNECTOR_JARS if topics else ()),
        *((_code(endless).source(endless),) if endless is not None else ()),
        _block(
            _rule("The views"),
            "WORKDIR = pathlib.Path(tempfile.mkdtemp(prefix='streaming-lab-export-sql-'))",
            "",
            "",
            *_builder_code((quoted, column_kind, parse_time, *VIEW_BUILDERS, *(TOPIC_VIEW_BUILDERS if topics else ()), *(BATCH_BUILDERS if cuts else ()))),
            *_STAGE_CODE,
            *_VIEW_FRAME_HEAD,
            *(_UNBOUNDED_VIEW_CODE if endless is not None else ()),
            *(_TOPIC_VIEW_CODE if topics else ()),
            *_FILE_VIEW_CODE,
            "for view in VIEWS:",
            "    view_frame(view).createOrReplaceTempView(view['name'])",
            "result = spark.sql(SQL)",
        ),
        _console_block(
            ("# Each micro-batch's rows are printed as the output mode emits them.",), "result", "streaming_lab_export_sql", "OUTPUT_MODE",
            ("    .option('checkpointLocation', str(WORKDIR / 'checkpoint'))",), ("    shutil.rmtree(WORKDIR, ignore_errors=True)",),
        ) if endless is not None else _block(
            _rule("Run: every micro-batch folded into the result table as the output mode says"),
            "table = {}",
            "",
            "",
            "def grouping_of(row):",
            "    return json.dumps([json_value(row[name], result.schema[name].dataType, exact=True) for name in GROUPING], default=str)",
            "",
            "",
            "def fold(batch, batch_id):",
            "    fold_rows(table, batch.collect(), OUTPUT_MODE, grouping_of if GROUPING else None)",
            "",
            "",
            "writer = result.writeStream.outputMode(OUTPUT_MODE).foreachBatch(fold).option('checkpointLocation', str(WORKDIR / 'checkpoint'))",
            "try:",
            "    if ARRIVAL == 'busy':  # every batch's files there already: batches back to back, no no-data batch between them",
            "        query = writer.trigger(availableNow=True).start()",
            "        query.awaitTermination()",
            "    else:  # quiet: file i of every view handed over once Spark has run everything before it, the no-data batch included",
            "        query = writer.start()",
            "        for index in range(max((len(files) for files, _ in STREAMED), default=0)):",
            "            for files, folder in STREAMED:",
            "                if index < len(files):",
            "                    stage_file(files[index], folder, index, (1_700_000_000 + index) * 1000)",
            "            query.processAllAvailable()",
            "        query.processAllAvailable()",
            "    query.stop()",
            "finally:",
            "    shutil.rmtree(WORKDIR, ignore_errors=True)",
            "records = [{f.name: json_value(row[f.name], f.dataType) for f in result.schema.fields} for row in table.values()]",
            "records.sort(key=lambda record: json.dumps(record, sort_keys=True, default=str))",
            "print(RESULT_PREFIX + json.dumps(records))",
        ),
    ])
    compile(code, "<export>", "exec")
    return code
