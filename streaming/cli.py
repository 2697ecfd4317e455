"""``python -m streaming``: the headless front end, on the same engine as the dashboard.

``replay`` (a feed, dataset or topic through the form's query or your own SQL, to its end; ``--json`` writes what the
Live page shows), ``explain`` (each micro-batch told in the guide's terms), ``state`` (what a kept query's state holds),
``tune`` (a watermark sweep), ``join`` (a stream-stream join replayed) and ``publish`` (a feed or dataset into a topic).
This module parses the flags, calls the engine and prints; each command imports what it needs when it runs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .engine.arrival import ARRIVAL_RULES, DEFAULT_ARRIVAL, replay_trigger, rule_words
from .engine.data.batching import Batching
from .engine.data.datasets import FileFormat, detect_format
from .engine.data.feeds import TIME_PATTERN
from .engine.errors import ConfigError, InputErrors, attempt
from .engine.kafka.broker import BOOTSTRAP_VARIABLE
from .engine.kafka.kafka_terms import KAFKA_KEY, KAFKA_TIMESTAMP, VALUE_FORMATS, ValueFormat, check_bootstrap, parse_kafka_url
from .engine.query.config import (
    FEED_COLUMNS,
    FILE_FORMATS,
    ONE_FILE_PER_BATCH,
    OUTPUT_MODES,
    REAL_TIME_MIN_BATCH,
    STATE_STORES,
    VALUE_AGGREGATIONS,
    ColumnMapping,
    FeedSource,
    QueryConfig,
)
from .engine.run.checkpoints import KeptQuery
from .engine.sources import Source
from .engine.sources.kafka import KafkaSource
from .engine.sql.views import DEFAULT_VIEW

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from .analysis.tune import TunePlan
    from .engine.run.registry import QueryRegistry

__all__ = ["detect_format", "main", "parser", "replay_source"]

MAX_SQL_POINTS = 64
"""Points of a SQL sweep at most, each a replay on Spark (the page takes 16: its user waits on it)."""


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m streaming", description="Run Structured Streaming queries headless.")
    commands = top.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay a feed through a windowed count, or your own SQL (--sql/--sql-file), until the stream is idle")
    _add_data_arguments(replay, passthrough=True)
    _add_query_arguments(replay, sql=True)
    _add_sql_arguments(replay)
    replay.add_argument("--json", type=Path, default=None, help="write the result and batch summaries to this file")
    replay.add_argument(
        "--dropped", type=Path, default=None, metavar="OUT",
        help="write the events the watermark dropped, each with its rule, to OUT (.csv, or .parquet)",
    )
    replay.add_argument(
        "--checkpoint", type=Path, default=None,
        help="keep the query in this folder (checkpoint, result so far, progress); run again with it to go on where it stopped",
    )
    replay.add_argument(
        "--stop-after", type=int, default=None, metavar="N",
        help="with --checkpoint: stop once the stream's first N steps (files, or rows batches) have been handed over and processed",
    )
    replay.add_argument(
        "--change", action="store_true",
        help="with --checkpoint: resume the kept query with this changed one (a SQL query's --sql/--sql-file, or the form's flags: --watermark, "
        "--window, --output-mode...); Spark decides, and a refused change leaves the folder as it was (--json writes the verdict, the "
        "prediction, the watermark across the restart and the result over both runs)",
    )
    replay.add_argument(
        "--trigger", type=_trigger_arg, default=("default", None), metavar="realtime[:DURATION]",
        help="a topic: realtime runs Spark's real-time mode (batches of DURATION, default 5 seconds; update mode, --agg none on Spark 4.2) "
        "and follows the topic until it has read what the topic held at the start",
    )
    replay.add_argument("--latency", action="store_true", help="add each record's latency to --json (latency_ms): from its Kafka timestamp (a topic) or from when its file was handed to Spark (files), to the sink")
    explain = commands.add_parser("explain", help="replay a feed and tell what every micro-batch did: rows read, dropped and emitted, state let go, the watermark")
    _add_data_arguments(explain, passthrough=True)
    _add_query_arguments(explain, sql=True)
    _add_sql_arguments(explain)
    explain.add_argument("--json", type=Path, default=None, help="write the batches, each with its output, dropped rows, state and caption, to this file")
    _add_tune_parser(commands)
    _add_join_parser(commands)
    _add_publish_parser(commands)
    held = commands.add_parser("checkpoint", help="what a checkpoint holds (last batch, watermark, offsets, stateful operators and their state schemas), "
                                                  "and whether a changed SQL query would resume from it")
    held.add_argument("checkpoint", type=Path, metavar="DIR", help="a folder given to replay --checkpoint, or any Structured Streaming job's checkpoint")
    changed = held.add_mutually_exclusive_group()
    changed.add_argument("--sql", default=None, metavar="QUERY", help="a changed query to predict: over the kept query's views (or --data's)")
    changed.add_argument("--sql-file", type=Path, default=None, metavar="FILE", help="--sql's query, read from FILE")
    held.add_argument("--data", default=None, metavar="PATH", help="for a checkpoint the lab did not keep: the files the query's view reads")
    held.add_argument("--view", default=DEFAULT_VIEW, metavar="NAME", help=f"with --data: the view's name (default: {DEFAULT_VIEW})")
    held.add_argument("--event-time", default="event_time", help="with --data: the event-time column")
    held.add_argument("--time-format", default="auto", help="with --data: how its times are written (default: auto)")
    held.add_argument("--json", type=Path, default=None, help="write what it holds, and the prediction, to this file")
    state = commands.add_parser("state", help="print the rows a query's state holds, from its checkpoint")
    state.add_argument("checkpoint", type=Path, metavar="DIR", help="a folder given to replay --checkpoint, or a Spark checkpoint")
    state.add_argument("--operator", type=int, default=None, help="the stateful operator's id (default: the aggregation's)")
    state.add_argument("--json", type=Path, default=None, help="write the operators and the state rows to this file")
    commands.add_parser(
        "archive", help="make the class archive Spark's driver starts from, by running the lab's first queries once (make does it at set-up; "
        "a few seconds off every start after)",
    )
    return top


def _add_query_arguments(command: argparse.ArgumentParser, *, sql: bool = False) -> None:
    """The flags that shape the query: shared by ``replay`` and ``explain``. With ``sql`` a window is not required: ``--sql`` says the query instead."""
    windows = command.add_mutually_exclusive_group(required=not sql)
    windows.add_argument("--window", help='window length, e.g. "5 minutes"' + (" (required unless --sql or --sql-file)" if sql else ""))
    windows.add_argument("--session-gap", default=None, help="session windows instead: a key's session ends this long after its last event")
    command.add_argument("--slide", default=None, help="slide for sliding windows (default: tumbling)")
    command.add_argument("--watermark", default=None, help="watermark delay (default: none)")
    command.add_argument("--output-mode", default="update", choices=OUTPUT_MODES)
    command.add_argument("--state-store", default="hdfs", choices=STATE_STORES, help="where the state lives: hdfs (Spark's default) or rocksdb")
    command.add_argument("--changelog-checkpointing", action="store_true", help="with --state-store rocksdb: commit each batch's changes, not a snapshot")


def _add_sql_arguments(command: argparse.ArgumentParser) -> None:
    """The flags of a query in Spark SQL: the text, and the views it reads besides PATH."""
    text = command.add_mutually_exclusive_group()
    text.add_argument("--sql", default=None, metavar="QUERY", help="your own query in Spark SQL over the view of PATH (and --stream/--static views), e.g. "
                      "\"SELECT window(ts, '1 minute') AS w, count(*) AS n FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY 1\"")
    text.add_argument("--sql-file", type=Path, default=None, metavar="FILE", help="--sql's query, read from FILE")
    command.add_argument("--view", default=DEFAULT_VIEW, metavar="NAME", help=f"the view PATH is streamed as (default: {DEFAULT_VIEW}); its event-time column is a TIMESTAMP under its own name")
    command.add_argument(
        "--stream", action="append", default=[], metavar="NAME=PATH",
        help="another streamed view, read with the same data flags, its file i in micro-batch i (a stream-stream join); repeatable",
    )
    command.add_argument("--static", action="append", default=[], metavar="NAME=PATH", help="a static view: every row of PATH, read once (a stream-static join); repeatable")


def _trigger_arg(text: str) -> tuple[str, str | None]:
    """``--trigger``: ``default``, or ``realtime`` with an optional ``:DURATION``, as ``(trigger, trigger_interval)``."""
    kind, _, duration = text.partition(":")
    if kind == "default" and not duration:
        return "default", None
    if kind == "realtime":
        return "real_time", duration.strip() or REAL_TIME_MIN_BATCH
    raise argparse.ArgumentTypeError(f"{text!r} is not default or realtime[:DURATION]")


def _add_data_arguments(command: argparse.ArgumentParser, *, passthrough: bool = False) -> None:
    """The flags that say what the data is, how it arrives and what is aggregated: shared by ``replay`` and ``tune``."""
    command.add_argument(
        "feed_dir", metavar="PATH",
        help="a folder of files (replayed in file-name order), one file, or kafka://HOST:PORT/TOPIC (read from the earliest offsets to those latest at the start)",
    )
    command.add_argument(
        "--format", dest="file_format", choices=FILE_FORMATS, default=None,
        help="csv, json (JSON lines) or parquet (default: from the file names); for a topic, how values are written: json (default) or csv",
    )
    command.add_argument("--event-time", default="event_time", help=f"the event-time column (default: event_time; a topic's record timestamp: {KAFKA_TIMESTAMP})")
    command.add_argument(
        "--time-format", default=None,
        help="auto, epoch_s, epoch_ms or a Spark datetime pattern (default: auto; a folder of CSV files with event_time and key "
        f"columns is read as the sample feeds are, {TIME_PATTERN})",
    )
    keys = command.add_mutually_exclusive_group()
    keys.add_argument("--key", default="key", help=f"the key column (default: key; a topic's record key: {KAFKA_KEY})")
    keys.add_argument("--no-key", action="store_true", help="no key column: one global group per window (key null in --json)")
    command.add_argument("--value", default=None, help="the value column --agg reads (numbers; text that is not one is left out)")
    aggregates = ("count", *VALUE_AGGREGATIONS, *(["none"] if passthrough else []))
    command.add_argument(
        "--agg", default="count", choices=aggregates,
        help="the aggregate per window and key (default: count)" + ("; none passes each row through (event_time, key)" if passthrough else ""),
    )
    command.add_argument("--batch-by", default="file", help="file (one file per micro-batch, default), rows:N, or an arrival-time column")
    command.add_argument("--batch-interval", default=None, help="with --batch-by COLUMN: rows arriving in the same interval of this length form a batch")
    command.add_argument("--dedup-by", default=None, help="drop rows whose value in this id column was seen within the watermark (needs a watermark)")
    command.add_argument("--max-offsets-per-trigger", type=int, default=None, metavar="N", help="a topic: at most N records per micro-batch (Spark's maxOffsetsPerTrigger)")
    command.add_argument("--csv-columns", default=None, help="a topic of CSV values: the names of their fields, comma-separated (default: _c0, _c1, ...)")
    command.add_argument(
        "--arrival", default=DEFAULT_ARRIVAL, choices=ARRIVAL_RULES,
        help=f"when each micro-batch's data reaches Spark (default: {DEFAULT_ARRIVAL}): quiet, {rule_words('quiet')}; busy, {rule_words('busy')}. "
        "A topic's range is read busy",
    )


def _source(args: argparse.Namespace, spark: SparkSession | None = None) -> Source:
    """The source the data flags describe: a file replay, or (with ``spark``, to infer the value's columns) a topic."""
    if _is_topic(args):
        if spark is None:
            raise ConfigError("PATH", args.feed_dir, "is a topic: its value's columns are read from a sample once Spark runs")
        return topic_source(spark, args)
    if args.max_offsets_per_trigger is not None:
        raise ConfigError("--max-offsets-per-trigger", args.max_offsets_per_trigger, "applies to a topic (kafka://HOST:PORT/TOPIC), not to files")
    return replay_source(
        Path(args.feed_dir), args.file_format, args.event_time, args.time_format, None if args.no_key else args.key, args.value, args.dedup_by,
        Batching(args.batch_by, args.batch_interval),
    )


def _is_topic(args: argparse.Namespace) -> bool:
    return str(args.feed_dir).startswith("kafka://")


def check_topic_args(args: argparse.Namespace) -> tuple[str, str]:
    """``(bootstrap, topic)`` of a ``kafka://`` PATH once the brokers answer and the topic exists; :class:`ConfigError` naming what does not fit."""
    from .engine.kafka.topics import require_topic

    bootstrap, topic = parse_kafka_url(args.feed_dir)
    if args.file_format not in (None, *VALUE_FORMATS):
        raise ConfigError("--format", args.file_format, f"is not a format of a topic's values ({', '.join(VALUE_FORMATS)})")
    if args.batch_by != "file" or args.batch_interval is not None:
        raise ConfigError("--batch-by", args.batch_by, "applies to files: a topic's micro-batches are cut by --max-offsets-per-trigger")
    require_topic(bootstrap, topic)
    return bootstrap, topic


def topic_source(spark: SparkSession, args: argparse.Namespace) -> KafkaSource:
    """The topic a ``kafka://`` PATH names, read from its earliest offsets, its value's columns inferred from its first messages."""
    from .engine.kafka.topics import SAMPLE_MESSAGES, infer_value_columns, latest_messages

    bootstrap, topic = check_topic_args(args)
    value_format = cast("ValueFormat", args.file_format or "json")
    sample = latest_messages(bootstrap, topic, SAMPLE_MESSAGES, earliest=True)
    names = [name.strip() for name in args.csv_columns.split(",")] if args.csv_columns else None
    value_columns = infer_value_columns(spark, list(sample["value"]), value_format, names)
    columns = ColumnMapping(
        event_time=args.event_time, time_format=args.time_format or "auto", key=None if args.no_key else args.key, value=args.value, dedup_id=args.dedup_by,
    )
    return KafkaSource(bootstrap, topic, value_columns, value_format, columns, max_offsets_per_trigger=args.max_offsets_per_trigger)


def replay_source(
    path: Path, file_format: str | None, event_time: str, time_format: str | None, key: str | None, value: str | None = None,
    dedup_id: str | None = None, batching: Batching = ONE_FILE_PER_BATCH,
) -> FeedSource:
    """The stepped feed source the replay flags describe (see ``replay --help``)."""
    fmt = cast("FileFormat", file_format) if file_format else detect_format(path)
    columns = ColumnMapping(event_time=event_time, time_format=time_format or "auto", key=key, value=value, dedup_id=dedup_id)
    plain = (event_time, key, value, dedup_id) == (FEED_COLUMNS.event_time, FEED_COLUMNS.key, None, None)
    if time_format is None and fmt == "csv" and path.is_dir() and plain:
        columns = FEED_COLUMNS
    if batching.column is not None and batching.column != event_time:
        columns = replace(columns, arrival=batching.column, arrival_format=time_format or "auto")  # written like the event time
    return FeedSource(path, seconds_per_file=0, file_format=fmt, columns=columns, batching=batching)


def _print_replay(outcome) -> None:
    print(outcome.result.to_string(index=False) if len(outcome.result) else "(empty result table)")
    print(
        f"batches={len(outcome.progress)} input_rows={outcome.input_rows} malformed_rows={outcome.malformed_rows} "
        f"duplicates_dropped={outcome.duplicates_dropped} "
        f"rows_dropped_by_watermark={outcome.rows_dropped_by_watermark} final_watermark={outcome.final_watermark}"
    )


def _kept_checks(args: argparse.Namespace) -> None:
    """The flags of a kept replay that go together, checked before Spark starts: ``--stop-after`` and ``--change`` need ``--checkpoint``, and
    a change goes on over the rest of the data. Then a change of the kept folder that a killed process left mid-way is settled
    (:func:`~streaming.engine.run.change.recover_change`; a change settles it itself): the folder holds one query, the changed one or the one
    before."""
    if args.stop_after is not None and args.checkpoint is None:
        raise ConfigError("--stop-after", args.stop_after, "needs --checkpoint: a stopped replay goes on from its checkpoint")
    if args.change and args.checkpoint is None:
        raise ConfigError("--change", True, "needs --checkpoint: the kept query to resume with the changed one")
    if args.change and args.stop_after is not None:
        raise ConfigError("--stop-after", args.stop_after, "does not go with --change: a change resumes the kept query over the rest of its data")
    if args.checkpoint is not None and not args.change:  # a change settles its folder itself
        from .engine.run.change import recover_change

        recover_change(args.checkpoint)


def _print_change(change, out: Path | None) -> None:
    """Print a change's verdict, its prediction and the watermark across the restart; with ``out``, write its JSON there."""
    print(f"change {change.verdict}" + (f": {change.error_condition}" if change.error_condition else "") + (f" ({change.error})" if change.error else ""))
    print(f"predicted {change.predicted.verdict}" + (f": {change.predicted.condition}" if change.predicted.condition else "") + "; " + "; ".join(change.predicted.reasons))
    print(f"watermark before the change {change.watermark_before}, after it {change.watermark_after}")
    if out is not None:
        out.write_text(json.dumps(change.to_json(), indent=2) + "\n")


def _dropped(spark, outcome):
    """The events ``outcome`` dropped (:func:`~streaming.analysis.lateness.dropped_events`), judged by the watermark each of its batches had."""
    from .analysis.explain import judged_events
    from .analysis.lateness import dropped_events

    return dropped_events(judged_events(spark, outcome), deduplicate=outcome.config.deduplicate)


def _session(given: SparkSession | None) -> SparkSession:
    """The session a command runs on: ``given``, or one started for the command (:func:`_release` stops it)."""
    from .engine.runtime.session import get_session

    return given if given is not None else get_session()


def _release(spark: SparkSession, given: SparkSession | None) -> None:
    """Stop ``spark`` when the command started it; a session it was given stays up."""
    if given is None:
        spark.stop()


@contextmanager
def _registry(given: SparkSession | None) -> Iterator[tuple[SparkSession, QueryRegistry]]:
    """The session a command runs on (:func:`_session`) and a query registry on it; the registry is closed and the session released after."""
    from .engine.run.registry import QueryRegistry

    spark = _session(given)
    try:
        registry = QueryRegistry(spark)
        try:
            yield spark, registry
        finally:
            registry.close()
    finally:
        _release(spark, given)


def _early_config(args: argparse.Namespace) -> QueryConfig | None:
    """The query the flags describe on files, checked before Spark starts; ``None`` for a topic, whose brokers and topic are checked instead (within seconds)."""
    if _is_topic(args):
        check_topic_args(args)
        return None
    return _replay_config(args, _source(args))


def _explain_main(args: argparse.Namespace, given: SparkSession | None) -> int:
    from .analysis.explain import explain_replay
    from .engine.run.runner import run_to_idle

    if args.sql is not None or args.sql_file is not None:
        return _sql_explain_main(args, given)
    if args.window is None and args.session_gap is None:
        print("error: one of the arguments --window --session-gap is required (or --sql / --sql-file)", file=sys.stderr)
        return 2

    if not _is_topic(args) and not Path(args.feed_dir).exists():
        print(f"error: PATH: {str(args.feed_dir)!r} is not a folder or a file", file=sys.stderr)
        return 2
    try:
        config = _early_config(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        with _registry(given) as (spark, registry):
            config = config or _replay_config(args, _source(args, spark))
            outcome = run_to_idle(registry, config, outputs=True)
            steps = explain_replay(spark, outcome)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for step in steps:
        print(step.caption)
    if args.json is not None:
        report = {**outcome.arrival_facts(), "batches": [step.to_json() for step in steps], "result": outcome.json_records()}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _replay_config(args: argparse.Namespace, source: Source) -> QueryConfig:
    """The query ``replay``'s flags describe on ``source``; a topic is read under the available-now trigger."""
    return QueryConfig(
        source,
        window=args.window or "1 minute",
        slide=args.slide,
        watermark=args.watermark,
        output_mode=args.output_mode,
        aggregation=args.agg,
        deduplicate=args.dedup_by is not None,
        session_gap=args.session_gap,
        state_store=args.state_store,
        changelog_checkpointing=args.changelog_checkpointing,
        arrival=args.arrival,
        **_trigger_settings(args, source),
    )


def _trigger_settings(args: argparse.Namespace, source: Source) -> dict[str, Any]:
    """The trigger the arrival rule replays under (:func:`~streaming.engine.arrival.replay_trigger`: a topic's range under available-now), or
    with ``--trigger realtime`` real-time mode."""
    trigger, interval = getattr(args, "trigger", ("default", None))
    if trigger == "real_time":
        return {"trigger": trigger, "trigger_interval": interval}
    return {"trigger": replay_trigger(source.replay_arrival(args.arrival)), "trigger_interval": None}


def main(argv: list[str] | None = None, spark: SparkSession | None = None) -> int:
    """Run the command ``argv`` names; on ``spark`` when given (left running, as a test's shared session), else on a session started and stopped for it."""
    args = parser().parse_args(argv)
    given = spark
    if args.command == "tune":
        return _tune_main(args, given)
    if args.command == "publish":
        return _publish_main(args, given)
    if args.command == "state":
        return _state_main(args, given)
    if args.command == "checkpoint":
        return _checkpoint_main(args, given)
    if args.command == "join":
        return _join_main(args, given)
    if args.command == "explain":
        return _explain_main(args, given)
    if args.command == "archive":
        return _archive_main()
    from .engine.run.runner import run_to_idle

    if args.sql is not None or args.sql_file is not None:
        return _sql_main(args, given)
    if args.window is None and args.session_gap is None:
        print("error: one of the arguments --window --session-gap is required (or --sql / --sql-file)", file=sys.stderr)
        return 2
    topic = _is_topic(args)
    if not topic and not Path(args.feed_dir).exists():
        print(f"error: PATH: {str(args.feed_dir)!r} is not a folder or a file", file=sys.stderr)
        return 2
    try:
        if args.stop_after is not None and args.stop_after < 1:
            raise ConfigError("--stop-after", args.stop_after, "must be a whole number of at least 1")
        _kept_checks(args)
        if args.change and (args.dropped is not None or args.latency):
            raise ConfigError("--dropped" if args.dropped is not None else "--latency", True, "does not go with --change: it reports a replay, not a change")
        if args.dropped is not None and args.session_gap is not None:
            raise ConfigError("--dropped", str(args.dropped), "needs fixed windows: a session's end moves with its events")
        if args.dropped is not None and args.agg == "none":
            raise ConfigError("--dropped", str(args.dropped), "needs windows: a query passing rows through (--agg none) drops none")
        if args.dropped is not None and args.dropped.suffix.lower() not in (".csv", ".parquet"):
            raise ConfigError("--dropped", str(args.dropped), "must end in .csv or .parquet")
        if topic and args.stop_after is not None:
            raise ConfigError("--stop-after", args.stop_after, "applies to files: a topic's replay ends at the offsets latest when it starts")
        config = _early_config(args)
        if config is not None and args.checkpoint is not None and not args.change:
            KeptQuery(args.checkpoint).check(config)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        with _registry(given) as (spark, registry):
            if config is None:
                config = _replay_config(args, _source(args, spark))
                if args.checkpoint is not None and not args.change:
                    KeptQuery(args.checkpoint).check(config)
            if args.change:
                from .engine.run.change import resume_changed

                change = resume_changed(registry, config, args.checkpoint)
            else:
                outcome = run_to_idle(registry, config, keep=args.checkpoint, stop_after=args.stop_after, latency=args.latency)
                dropped = _dropped(spark, outcome) if args.dropped is not None else None
    except ConfigError as err:  # a mapping that does not fit the types Spark reads (JSON, Parquet, a topic's values); a checkpoint of another query
        print(f"error: {err}", file=sys.stderr)
        return 2
    if args.change:
        _print_change(change, args.json)
        if change.replay is not None:
            _print_replay(change.replay)
        return 0
    _print_replay(outcome)
    if dropped is not None:
        if args.dropped.suffix.lower() == ".parquet":
            dropped.to_parquet(args.dropped, index=False)
        else:
            from .analysis.spreadsheet import neutralise_formulas

            safe, neutralised = neutralise_formulas(dropped)
            safe.to_csv(args.dropped, index=False)
            if neutralised:
                print(f"{neutralised} text cells that start like a spreadsheet formula are written with a leading ' (the Parquet output keeps them as they are)")
        print(f"dropped_events={dropped['event_id'].nunique()} dropped_pairs={len(dropped)} written to {args.dropped}")
    latency = _latency_ms(outcome.latency) if args.latency and outcome.latency is not None else None
    if latency is not None:
        print("latency_ms " + " ".join(f"{name}={value}" for name, value in latency.items()))
    if args.json is not None:
        args.json.write_text(json.dumps({**outcome.to_json(), **({"latency_ms": latency} if latency is not None else {})}, indent=2) + "\n")
    return 0


def _latency_ms(entries) -> dict[str, float | None]:
    """``p50``, ``p95``, ``p99``, ``max`` of the records' latency from their produce time to the sink, in ms (0.1 ms); ``None`` when none was read."""
    from .analysis.latency import latency_summary

    summary = latency_summary(entries, "written")
    return {name: None if summary[name] != summary[name] else round(summary[name], 1) for name in ("p50", "p95", "p99", "max")}  # NaN: nothing read


# --------------------------------------------------------------------------- replay --sql

SQL_ONLY_WITH_FORM = ("window", "session_gap", "slide", "watermark", "dedup_by", "value", "dropped")
"""``replay`` flags of the form's query that a SQL query says itself (or that need the form's query)."""


def _sql_text(args: argparse.Namespace) -> str:
    if args.sql is not None:
        return str(args.sql)
    try:
        return Path(args.sql_file).read_text(encoding="utf-8")
    except OSError as err:
        raise ConfigError("--sql-file", str(args.sql_file), f"cannot be read: {err.strerror}") from None


def _named_paths(pairs: list[str], flag: str) -> list[tuple[str, str]]:
    named = []
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise ConfigError(flag, pair, "must be NAME=PATH")
        named.append((name.strip(), path.strip()))
    return named


def _view_source(args: argparse.Namespace, path: str, flag: str, spark: SparkSession | None) -> Source:
    """The source of one view: a topic (its value's columns from a sample, with ``spark``) or files, read with the data flags and no key mapping."""
    if path.startswith("kafka://"):
        topic_args = argparse.Namespace(**{**vars(args), "feed_dir": path, "no_key": True})
        if spark is None:
            check_topic_args(topic_args)
            raise _Later()
        return topic_source(spark, topic_args)
    if not Path(path).exists():
        raise ConfigError(flag, path, "is not a folder or a file")
    return replay_source(Path(path), args.file_format, args.event_time, args.time_format, None, None, None, Batching(args.batch_by, args.batch_interval))


def _static_table(args: argparse.Namespace, path: str):
    """A ``--static`` view: every row of PATH, its event-time column (when it has one) a TIMESTAMP read with the data flags."""
    from .engine.sql.views import TableFiles

    columns = ColumnMapping(event_time=args.event_time, time_format=args.time_format or "auto", key=None)
    return TableFiles(Path(path), cast("FileFormat | None", args.file_format), columns)


class _Later(Exception):
    """A topic's view: its columns are read once Spark runs."""


def _sql_query(args: argparse.Namespace, spark: SparkSession | None):
    """The :class:`~streaming.engine.sql.SqlQuery` the flags describe; ``None`` while a topic waits for Spark (its brokers checked already)."""
    from .engine.sql import SqlQuery, SqlView

    for name in SQL_ONLY_WITH_FORM:
        if getattr(args, name, None) not in (None, False):
            raise ConfigError("--" + name.replace("_", "-"), getattr(args, name), "applies to the form's query: a SQL query says its window, watermark and columns itself")
    try:
        views = [SqlView(args.view, _view_source(args, str(args.feed_dir), "PATH", spark))]
        views += [SqlView(name, _view_source(args, path, "--stream", spark)) for name, path in _named_paths(args.stream, "--stream")]
        views += [SqlView(name, _static_table(args, path), static=True) for name, path in _named_paths(args.static, "--static")]
    except _Later:
        return None
    return SqlQuery(  # replayed under its rule's trigger by replay_sql and tune_sql (SqlQuery.replayed)
        _sql_text(args), tuple(views), output_mode=args.output_mode, state_store=getattr(args, "state_store", "hdfs"),
        changelog_checkpointing=getattr(args, "changelog_checkpointing", False), arrival=args.arrival,
    )


def _run_sql(args: argparse.Namespace, given: SparkSession | None, work: Callable[[SparkSession, QueryRegistry, Any], Any], checks: Callable[[], None] = lambda: None):
    """``(0, work(spark, registry, query))`` for the SQL query the flags describe, or ``(2, None)`` once a refusal is printed: the flags
    (``checks``, then the views' files and brokers) before Spark starts, the query's text and a topic's columns once it runs."""
    from .engine.sql import SqlError

    try:
        checks()
        query = _sql_query(args, None)
    except (ConfigError, SqlError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2, None
    try:
        with _registry(given) as (spark, registry):
            return 0, work(spark, registry, query or _sql_query(args, spark))
    except (ConfigError, SqlError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2, None


def _sql_main(args: argparse.Namespace, given: SparkSession | None) -> int:
    from .engine.run.change import resume_changed
    from .engine.sql import replay_sql

    def work(spark, registry, query):
        if args.change:
            return resume_changed(registry, query, args.checkpoint)
        return replay_sql(registry, query, keep=args.checkpoint, stop_after=args.stop_after)

    code, outcome = _run_sql(args, given, work, lambda: _kept_checks(args))
    if code:
        return code
    if args.change:
        _print_change(outcome, args.json)
        if outcome.replay is None:
            return 0
        outcome = outcome.replay
    print(outcome.result.to_string(index=False) if len(outcome.result) else "(empty result table)")
    for operator in outcome.operators:
        print(f"operator {operator['index']} {operator['name']}: state_rows={operator['state_rows']} rows_dropped_by_watermark={operator['rows_dropped_by_watermark']}")
    print(
        f"batches={len(outcome.progress)} input_rows={outcome.input_rows} malformed_rows={outcome.malformed_rows} "
        f"rows_dropped_by_watermark={outcome.rows_dropped_by_watermark} final_watermark={outcome.final_watermark} "
        f"arrival={outcome.arrival} no_data_batches={outcome.no_data_batches}"
    )
    if args.json is not None and not args.change:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- archive


def _archive_main() -> int:
    """Make the class archive (:mod:`streaming.engine.runtime.archive`) by running what the lab runs first: the warm-up query, the
    generator's windowed count, and a sample feed replayed by the form and in SQL."""
    import time

    from .engine.data.feeds import SAMPLE_FEEDS
    from .engine.query.config import GeneratorSource
    from .engine.run.query import warm_up
    from .engine.run.registry import QueryRegistry
    from .engine.run.runner import run_to_idle
    from .engine.runtime.archive import build_archive
    from .engine.runtime.session import JAVA_OPTIONS_VARIABLE, driver_archive, get_session, java_options
    from .engine.sql.form import form_sql
    from .engine.sql.query import SqlQuery
    from .engine.sql.replay import replay_sql
    from .engine.sql.views import SqlView

    def create(options: list[str]) -> SparkSession:
        return get_session({**os.environ, JAVA_OPTIONS_VARIABLE: " ".join([java_options(os.environ), *options]).strip()})

    def workload(spark: SparkSession) -> None:
        warm_up(spark)
        registry = QueryRegistry(spark)
        try:
            run = registry.start(QueryConfig(GeneratorSource(events_per_second=100, keys=4), window="10 seconds", watermark="5 seconds"), "archive_generator")
            run.await_first_batch(120)
            registry.stop("archive_generator")
            feed = FeedSource(SAMPLE_FEEDS / "guide_words", seconds_per_file=0)
            config = QueryConfig(feed, window="10 minutes", watermark="10 minutes")
            run_to_idle(registry, config, timeout=120)
            replay_sql(registry, SqlQuery(form_sql(config), (SqlView(DEFAULT_VIEW, feed),)), timeout=120)
        finally:
            registry.stop_all()

    path, begun = driver_archive(os.environ), time.monotonic()
    try:
        made = build_archive(create, workload, path)
    except Exception as err:  # noqa: BLE001 - the lab runs without it, only slower: say so and go on
        print(f"warning: no class archive was made ({type(err).__name__}: {err}); Spark starts without it, a few seconds slower", file=sys.stderr)
        return 1
    if made:
        print(f"made the class archive {path} ({path.stat().st_size / 2**20:.0f} MiB) in {time.monotonic() - begun:.1f} s")
    else:
        print(f"the class archive {path} is made already")
    return 0


# --------------------------------------------------------------------------- tune


def _add_tune_parser(commands) -> None:
    tune = commands.add_parser("tune", help="replay a feed, a dataset or a topic's offsets under several watermark delays and recommend the smallest good one")
    _add_data_arguments(tune)
    windows = tune.add_mutually_exclusive_group()
    windows.add_argument("--window", help='window length, e.g. "5 minutes" (required unless --sql or --sql-file)')
    windows.add_argument("--session-gap", default=None, help="session windows instead (tuned in append mode; sessions still open at the end are read from the state)")
    tune.add_argument("--slide", default=None, help="slide for sliding windows (default: tumbling)")
    tune.add_argument("--delays", required=True, help='comma-separated watermark delays, e.g. "0 seconds,1 minute,5 minutes"')
    tune.add_argument("--target", default="0.99", help="completeness to reach, in (0, 1] (default: 0.99)")
    tune.add_argument("--json", type=Path, default=None, help="write the measurements and the recommendation to this file")
    tune.add_argument(
        "--spark-all", action="store_true",
        help="run Spark for every delay instead of the watermark model with one Spark confirmation (sessions and --dedup-by always run Spark)",
    )
    mode = tune.add_mutually_exclusive_group()
    mode.add_argument("--sequential", dest="concurrent", action="store_const", const=False, default=None, help="with Spark runs: one delay at a time")
    mode.add_argument("--concurrent", dest="concurrent", action="store_const", const=True, help="with Spark runs: all delays at once")
    _add_sql_arguments(tune)
    tune.add_argument("--output-mode", default="update", choices=OUTPUT_MODES, help="with --sql: the output mode each point runs in (default: update)")
    tune.add_argument(
        "--which", type=int, default=None, metavar="N",
        help="with --sql: sweep the N-th WATERMARK clause (from 1, in the order written), the others as written; "
        f"without it a query with two clauses is swept over the grid of both (at most {MAX_SQL_POINTS} points, each a replay on Spark)",
    )


def _tune_table(outcome) -> str:
    import pandas as pd

    rows = []
    for row in outcome.to_json()["delays"]:
        mark = "*" if row["delay"] == outcome.recommended else ""
        rows.append(
            {
                "delay": row["delay"] + mark,
                "completeness": "-" if row["completeness"] is None else f"{row['completeness']:.4f}",
                "counted/exact": f"{row['counted']}/{row['exact']}",
                "lost_pairs": row["lost_pairs"],
                "spark_dropped": row["rows_dropped_by_watermark"],
                "peak_state": row["peak_state_rows"],
                "mean_state": f"{row['mean_state_rows']:.1f}",
                "peak_mem_B": row["peak_state_memory_bytes"],
                "out_delay_s": "-" if row["output_delay_seconds"] is None else f"{row['output_delay_seconds']:.0f}",
                "out_delay_batches": "-" if row["output_delay_batches"] is None else f"{row['output_delay_batches']:.1f}",
                "never_emitted": row["windows_never_emitted"],
                "method": row["method"],
            }
        )
    return pd.DataFrame(rows).to_string(index=False)


def _tune_main(args, given: SparkSession | None) -> int:
    from .app.tune import parse_delays, parse_target, run_sweep, sweep_plan

    if args.sql is not None or args.sql_file is not None:
        return _sql_tune_main(args, given)
    if args.window is None and args.session_gap is None:
        print("error: one of the arguments --window --session-gap is required (or --sql / --sql-file)", file=sys.stderr)
        return 2
    if args.which is not None:
        print(f"error: --which: {args.which!r} applies to a SQL query's WATERMARK clauses (--sql / --sql-file)", file=sys.stderr)
        return 2

    topic = _is_topic(args)
    if not topic and not Path(args.feed_dir).exists():
        print(f"error: PATH: {str(args.feed_dir)!r} is not a folder or a file", file=sys.stderr)
        return 2

    def plan_of(source: Callable[[], Source]) -> TunePlan:
        errors: list[ConfigError] = []
        return sweep_plan(
            attempt(errors, source), delays=args.delays, target=args.target, window=args.window or "1 minute", slide=args.slide, aggregation=args.agg,
            deduplicate=args.dedup_by is not None, session_gap=args.session_gap, errors=errors, arrival=args.arrival,
        )

    try:
        if topic:  # the delays, the target, the brokers and the topic within seconds, before Spark starts; the shape once a sample gave the columns
            errors: list[ConfigError] = []
            attempt(errors, lambda: parse_delays(args.delays))
            attempt(errors, lambda: parse_target(args.target))
            attempt(errors, lambda: check_topic_args(args))
            if errors:
                raise InputErrors(errors)
        plan = None if topic else plan_of(lambda: _source(args))
        with _registry(given) as (spark, registry):
            if plan is None:
                plan = plan_of(lambda: _source(args, spark))
            outcome = run_sweep(registry, plan, concurrent=args.concurrent, method="spark" if args.spark_all else "auto")
    except (ConfigError, InputErrors) as err:  # also a mapping that does not fit the types Spark reads from JSON or Parquet files
        print(f"error: {err}", file=sys.stderr)
        return 2
    target, delays = plan.target, plan.delays
    print(_tune_table(outcome))
    if outcome.method == "model":
        how = "computed by the watermark model, one confirmed on Spark"
    else:
        how = f"run on Spark {'concurrently' if outcome.concurrent else 'one after another'}" + (f"; {outcome.model_note}" if outcome.model_note else "")
    print(
        f"recommended={outcome.recommended or 'none'} (smallest delay with completeness >= {target:g}; marked *) "
        f"wall_seconds={outcome.wall_seconds:.1f} ({len(delays)} delays {how}) arrival={outcome.arrival}"
    )
    if outcome.by_rule is not None:
        print("completeness by arrival rule (the model): " + "; ".join(
            f"{delay}: " + ", ".join(f"{rule} {values[index]:.4f}" for rule, values in outcome.by_rule.items())
            for index, delay in enumerate(delays)
        ))
    confirmation = outcome.confirmation
    if confirmation is not None:
        if confirmation.agree:
            print(f"confirmed on Spark at {confirmation.delay}: model and Spark agree on completeness, counted, exact and rows dropped")
        else:
            print(f"DISAGREEMENT at {confirmation.delay} (please report it): " + "; ".join(confirmation.differences()), file=sys.stderr)
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


def _sql_explain_main(args: argparse.Namespace, given: SparkSession | None) -> int:
    """``explain --sql``: every micro-batch of the SQL query told, each stateful operator by name (:func:`~streaming.engine.sql.replay.explain_batches`)."""
    from .engine.sql import replay_sql
    from .engine.sql.replay import explain_batches

    code, outcome = _run_sql(args, given, lambda spark, registry, query: replay_sql(registry, query, outputs=True))
    if code:
        return code
    steps = explain_batches(outcome)
    for step in steps:
        print(step["caption"])
    if args.json is not None:
        report = {**outcome.arrival_facts(), "batches": steps, "result": outcome.records}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def _sql_tune_main(args: argparse.Namespace, given: SparkSession | None) -> int:
    """``tune --sql``: the query's WATERMARK delay(s) swept (:mod:`streaming.analysis.sql_tune`), each point replayed on Spark."""
    import pandas as pd

    from .analysis.sql_tune import tune_sql
    from .app.tune import parse_delays, parse_target, sql_points
    from .engine.sql.rewrite import watermark_clauses

    def checks() -> None:
        parse_target(args.target)
        parse_delays(args.delays)
        for flag in ("concurrent", "spark_all"):
            if getattr(args, flag):
                raise ConfigError("--" + flag.replace("_", "-"), True, "applies to the form's query: a SQL query's delays are each run on Spark, one after another")

    def work(spark, registry, query):
        points = sql_points(watermark_clauses(spark, query.text), args.delays, args.which, max_points=MAX_SQL_POINTS, one_clause="name one with --which")
        query.check(spark)
        return tune_sql(registry, query, points, target=parse_target(args.target))

    code, outcome = _run_sql(args, given, work, checks)
    if code:
        return code
    target = outcome.target
    best = outcome.recommended
    rows = [
        {
            "delays": point.label + (" *" if point is best else ""),
            "completeness": "-" if point.completeness is None else f"{point.completeness:.4f}",
            "matched/exact": f"{point.matched}/{point.exact}", "different": point.different, "missing": point.missing,
            "spark_dropped": point.rows_dropped_by_watermark, "peak_state": point.peak_state_rows, "mean_state": f"{point.mean_state_rows:.1f}",
            "batches": point.batches,
        }
        for point in outcome.points
    ]
    print(pd.DataFrame(rows).to_string(index=False))
    clauses_text = "; ".join(f"WATERMARK {clause.column}" for clause in outcome.clauses)
    print(
        f"recommended={'none' if best is None else best.label} (smallest delays with completeness >= {target:g}; marked *) "
        f"wall_seconds={outcome.wall_seconds:.1f} ({len(outcome.points)} points of {clauses_text}, each run on Spark) arrival={outcome.arrival}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- join

JOIN_FLAGS = {
    "left.path": "LEFT", "right.path": "RIGHT", "left.event_time": "--left-time", "right.event_time": "--right-time",
    "left.watermark": "--left-watermark", "right.watermark": "--right-watermark", "left.file_format": "--format", "right.file_format": "--format",
    "left.time_format": "--time-format", "right.time_format": "--time-format", "on": "--on", "within": "--within", "join_type": "--type",
    "policy": "--policy", "right.static": "--right-static",
}
"""The flag of ``join`` that sets each field of a :class:`~streaming.engine.join.join.JoinConfig`, for its errors."""


def _add_join_parser(commands) -> None:
    from .engine.join.join import JOIN_TYPES, POLICIES

    join = commands.add_parser("join", help="replay two feeds through a stream-stream join until both are read")
    join.add_argument("left", metavar="LEFT", help="the left side: a folder of files (replayed in file-name order, file i in micro-batch i) or one file")
    join.add_argument("right", metavar="RIGHT", help="the right side, read as LEFT is")
    join.add_argument("--left-time", required=True, help="the left side's event-time column")
    join.add_argument("--right-time", required=True, help="the right side's event-time column")
    join.add_argument("--on", required=True, metavar="COL[,COL...]", help="the key columns, equal on both sides and named alike on each")
    join.add_argument(
        "--within", default=None, metavar="LOWER,UPPER",
        help='the time range: the right time within [left time + LOWER, left time + UPPER], both inclusive, e.g. "0 seconds,1 hour" or "-5 minutes,5 minutes"; '
        "required by outer and semi joins",
    )
    join.add_argument("--type", dest="join_type", default="inner", choices=JOIN_TYPES, help="the join type (default: inner)")
    join.add_argument("--left-watermark", default=None, help="the left side's watermark delay (default: none)")
    join.add_argument("--right-watermark", default=None, help="the right side's watermark delay (default: none)")
    join.add_argument(
        "--right-static", action="store_true",
        help="read RIGHT whole, as a table each micro-batch of LEFT joins against (a stream-static join: inner, left_outer or left_semi)",
    )
    join.add_argument("--policy", default="min", choices=POLICIES, help="the global watermark: the smaller of the sides' (min, default) or the larger (max)")
    join.add_argument("--format", dest="file_format", choices=FILE_FORMATS, default=None, help="csv, json (JSON lines) or parquet, both sides (default: from the file names)")
    join.add_argument("--time-format", default="auto", help="auto (default), epoch_s, epoch_ms or a Spark datetime pattern, both sides' event times")
    join.add_argument("--json", type=Path, default=None, metavar="OUT", help="write the joined rows, the watermarks, the batches and the operators to OUT")


def _join_config(args: argparse.Namespace):
    """The :class:`~streaming.engine.join.join.JoinConfig` the ``join`` flags describe; :class:`ConfigError` naming the flag."""
    from .engine.join.join import JoinConfig, JoinSide

    within = None
    if args.within is not None:
        within = tuple(bound.strip() for bound in args.within.split(","))
        if len(within) != 2:
            raise ConfigError("--within", args.within, "must be LOWER,UPPER, e.g. '0 seconds,1 hour'")
    try:
        return JoinConfig(
            JoinSide(Path(args.left), args.left_time, args.left_watermark, args.file_format, args.time_format, side="left"),
            JoinSide(Path(args.right), args.right_time, args.right_watermark, args.file_format, args.time_format, side="right", static=args.right_static),
            on=tuple(name.strip() for name in args.on.split(",")),
            within=within,
            join_type=args.join_type,
            policy=args.policy,
        )
    except ConfigError as err:
        raise _as_flags(err) from None


def _as_flags(err: ConfigError) -> ConfigError:
    """``err`` naming the ``join`` flags instead of the configuration's fields (``right.watermark`` -> ``--right-watermark``)."""
    named = " or ".join(JOIN_FLAGS.get(part, part) for part in err.field.split(" or "))
    return ConfigError(named, err.value, err.reason)


def _join_main(args: argparse.Namespace, given: SparkSession | None) -> int:
    from .engine.join.join import run_join
    from .engine.output.progress import ProgressListener

    try:
        config = _join_config(args)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for warning in config.warnings():
        print(f"warning: {warning}", file=sys.stderr)
    spark = _session(given)
    listener = ProgressListener()
    spark.streams.addListener(listener)
    try:
        outcome = run_join(spark, config, listener)
    except ConfigError as err:  # a column missing on a side, a name on both sides, a time format that does not fit
        print(f"error: {_as_flags(err)}", file=sys.stderr)
        return 2
    finally:
        try:
            spark.streams.removeListener(listener)
        finally:
            _release(spark, given)
    report = outcome.to_json()
    print(outcome.result.to_string(index=False) if len(outcome.result) else "(no joined rows)")
    print(
        f"batches={len(report['batches'])} rows={len(report['result'])} malformed_rows={report['malformed_rows']} "
        f"rows_dropped_by_watermark={report['rows_dropped_by_watermark']} final_watermark={report['final_watermark']} "
        f"left_watermark={report['side_watermarks']['left']} right_watermark={report['side_watermarks']['right']}"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- state


def _checkpoint_main(args, given: SparkSession | None) -> int:
    """``checkpoint DIR``: what it holds (:func:`~streaming.engine.run.change.checkpoint_facts`) and, with ``--sql``, the prediction for it."""
    from .engine.run.change import checkpoint_facts, predict_on_state
    from .engine.sql import SqlError, SqlQuery, SqlView

    folder = KeptQuery(args.checkpoint)
    try:
        text = None if args.sql is None and args.sql_file is None else _sql_text(args)
        if text is not None and not folder.exists() and args.data is None:
            raise ConfigError("--data", None, "is needed for a checkpoint the lab did not keep: the files the changed query's view reads")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    spark = _session(given)
    try:
        facts = checkpoint_facts(spark, args.checkpoint)
        prediction = None
        if text is not None:
            if folder.exists() and facts["query"] is not None and facts["query"].get("kind") == "sql":
                query = SqlQuery.from_dict(facts["query"]).with_changes(text=text)
            else:
                path = Path(args.data)
                source = replay_source(path, None, args.event_time, args.time_format, None)
                query = SqlQuery(text, (SqlView(args.view, source),))
            prediction = predict_on_state(spark, facts, query).to_json()
    except (ConfigError, SqlError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        _release(spark, given)
    print(f"last batch {facts['last_batch']}, watermark {facts['watermark']}, {len(facts['operators'])} stateful operators")
    for operator in facts["operators"]:
        print(f"operator {operator['operator_id']} {operator['operator']}: batches {operator['min_batch']}-{operator['max_batch']}, {operator['partitions']} partitions")
    if prediction is not None:
        print(f"predicted {prediction['verdict']}" + (f": {prediction['error_condition']}" if prediction["error_condition"] else "") + "; " + "; ".join(prediction["reasons"]))
    if args.json is not None:
        args.json.write_text(json.dumps({**facts, "prediction": prediction}, indent=2, default=str) + "\n")
    return 0


def _state_main(args, given: SparkSession | None) -> int:
    from .engine.output.state import state_report

    folder = KeptQuery(args.checkpoint)
    checkpoint = folder.checkpoint if folder.exists() else args.checkpoint
    if not (checkpoint / "offsets").is_dir():
        print(f"error: DIR: {str(args.checkpoint)!r} is not a query's checkpoint (no offsets folder)", file=sys.stderr)
        return 2
    try:
        config = folder.config() if folder.exists() else None
    except ConfigError:
        config = None  # its feed has moved: the state is read without the configuration
    spark = _session(given)
    try:
        report = state_report(spark, checkpoint, args.operator, keyless=config is not None and config.source.keyless)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        _release(spark, given)
    import pandas as pd

    print(pd.DataFrame(report["operators"]).to_string(index=False) if report["operators"] else "(no stateful operator has committed state)")
    print(pd.DataFrame(report["rows"]).to_string(index=False) if report["rows"] else "(the state holds no rows)")
    print(f"rows={len(report['rows'])} operator={report['operator']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- publish


def _add_publish_parser(commands) -> None:
    publish = commands.add_parser("publish", help="publish a feed or dataset into a Kafka topic, batch by batch")
    _add_data_arguments(publish)
    publish.add_argument(
        "--bootstrap", default=os.environ.get(BOOTSTRAP_VARIABLE), metavar="HOST:PORT",
        help=f"the brokers (default: ${BOOTSTRAP_VARIABLE}, which make kafka prints)",
    )
    publish.add_argument("--topic", required=True, help="the topic (created when it does not exist, keeping its records whatever their age)")
    publish.add_argument("--partitions", type=int, default=1, help="partitions of a new topic (default: 1)")
    publish.add_argument("--value-format", default="json", choices=VALUE_FORMATS, help="each record's value: the row as a JSON object (default), or a CSV file's line")
    pace = publish.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=float, default=None, help="with --batch-by COLUMN: pace by arrival time, this many times faster than the data arrived")
    pace.add_argument("--seconds-per-batch", type=float, default=0.0, help="pause this long after each batch (default: 0, as fast as possible)")


def _publish_main(args, given: SparkSession | None) -> int:
    from .engine.kafka.topics import topic_names
    from .engine.run.publish import publish

    try:
        if _is_topic(args) or not Path(args.feed_dir).exists():
            raise ConfigError("PATH", args.feed_dir, "is not a folder or a file")
        if args.bootstrap is None:
            raise ConfigError("--bootstrap", None, f"is required (or set {BOOTSTRAP_VARIABLE}): the brokers to publish to")
        for flag, value in (("--max-offsets-per-trigger", args.max_offsets_per_trigger), ("--csv-columns", args.csv_columns)):
            if value is not None:
                raise ConfigError(flag, value, "applies to reading a topic, not to publishing")
        source = cast(FeedSource, _source(args))  # a path, not a topic (refused above)
        topic_names(check_bootstrap(args.bootstrap, "--bootstrap"))  # the brokers answer, within seconds
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    spark = _session(given)

    def report(done: int, total: int, messages: int) -> None:
        print(f"batch {done}/{total}: {messages} messages", file=sys.stderr)

    try:
        published = publish(
            spark, source, args.bootstrap, args.topic, partitions=args.partitions, value_format=args.value_format, speed=args.speed,
            seconds_per_batch=args.seconds_per_batch, progress=report,
        )
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        _release(spark, given)
    ends = ", ".join(f"{partition}:{offset}" for partition, offset in published.end_offsets)
    print(
        f"published={published.messages} batches={published.batches} topic={published.topic} partitions={published.partitions} "
        f"created={str(published.created).lower()} seconds={published.seconds:.1f} end_offsets={ends}"
    )
    return 0
