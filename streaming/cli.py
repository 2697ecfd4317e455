"""Command-line entry points: ``replay`` (and later sub-commands) on the same engine as the dashboard."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import cast

from .engine.batching import Batching
from .engine.checkpoints import KeptQuery
from .engine.config import (
    FEED_COLUMNS,
    FILE_FORMATS,
    ONE_FILE_PER_BATCH,
    OUTPUT_MODES,
    STATE_STORES,
    VALUE_AGGREGATIONS,
    ColumnMapping,
    FeedSource,
    QueryConfig,
)
from .engine.datasets import FORMATS, FileFormat
from .engine.errors import ConfigError
from .engine.feeds import TIME_PATTERN

__all__ = ["detect_format", "main", "parser", "replay_source"]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m streaming", description="Run Structured Streaming queries headless.")
    commands = top.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay a feed through a windowed count until the stream is idle")
    _add_data_arguments(replay)
    windows = replay.add_mutually_exclusive_group(required=True)
    windows.add_argument("--window", help='window length, e.g. "5 minutes"')
    windows.add_argument("--session-gap", default=None, help="session windows instead: a key's session ends this long after its last event")
    replay.add_argument("--slide", default=None, help="slide for sliding windows (default: tumbling)")
    replay.add_argument("--watermark", default=None, help="watermark delay (default: none)")
    replay.add_argument("--output-mode", default="update", choices=OUTPUT_MODES)
    replay.add_argument("--json", type=Path, default=None, help="write the result and batch summaries to this file")
    replay.add_argument(
        "--dropped", type=Path, default=None, metavar="OUT",
        help="write the events the watermark dropped, each with its rule, to OUT (.csv, or .parquet)",
    )
    replay.add_argument(
        "--checkpoint", type=Path, default=None,
        help="keep the query in this folder (checkpoint, result so far, progress); run again with it to go on where it stopped",
    )
    replay.add_argument("--stop-after", type=int, default=None, metavar="N", help="stop once the stream's first N micro-batches have been processed")
    replay.add_argument("--state-store", default="hdfs", choices=STATE_STORES, help="where the state lives: hdfs (Spark's default) or rocksdb")
    replay.add_argument("--changelog-checkpointing", action="store_true", help="with --state-store rocksdb: commit each batch's changes, not a snapshot")
    _add_tune_parser(commands)
    state = commands.add_parser("state", help="print the rows a query's state holds, from its checkpoint")
    state.add_argument("checkpoint", type=Path, metavar="DIR", help="a folder given to replay --checkpoint, or a Spark checkpoint")
    state.add_argument("--operator", type=int, default=None, help="the stateful operator's id (default: the aggregation's)")
    state.add_argument("--json", type=Path, default=None, help="write the operators and the state rows to this file")
    return top


def _add_data_arguments(command: argparse.ArgumentParser) -> None:
    """The flags that say what the data is, how it arrives and what is aggregated: shared by ``replay`` and ``tune``."""
    command.add_argument("feed_dir", type=Path, metavar="PATH", help="a folder of files (replayed in file-name order) or one file")
    command.add_argument("--format", dest="file_format", choices=FILE_FORMATS, default=None, help="csv, json (JSON lines) or parquet (default: from the file names)")
    command.add_argument("--event-time", default="event_time", help="the event-time column (default: event_time)")
    command.add_argument(
        "--time-format", default=None,
        help="auto, epoch_s, epoch_ms or a Spark datetime pattern (default: auto; a folder of CSV files with event_time and key "
        f"columns is read as the sample feeds are, {TIME_PATTERN})",
    )
    keys = command.add_mutually_exclusive_group()
    keys.add_argument("--key", default="key", help="the key column (default: key)")
    keys.add_argument("--no-key", action="store_true", help="no key column: one global group per window (key null in --json)")
    command.add_argument("--value", default=None, help="the value column --agg reads (numbers; text that is not one is left out)")
    command.add_argument("--agg", default="count", choices=("count", *VALUE_AGGREGATIONS), help="the aggregate per window and key (default: count)")
    command.add_argument("--batch-by", default="file", help="file (one file per micro-batch, default), rows:N, or an arrival-time column")
    command.add_argument("--batch-interval", default=None, help="with --batch-by COLUMN: rows arriving in the same interval of this length form a batch")
    command.add_argument("--dedup-by", default=None, help="drop rows whose value in this id column was seen within the watermark (needs a watermark)")


def _source(args: argparse.Namespace) -> FeedSource:
    return replay_source(
        args.feed_dir, args.file_format, args.event_time, args.time_format, None if args.no_key else args.key, args.value, args.dedup_by,
        Batching(args.batch_by, args.batch_interval),
    )


def detect_format(path: Path) -> FileFormat:
    """The format of a file by its name, or of a folder's data files (which must all have one); :class:`ConfigError` otherwise."""
    names = [path.name] if path.is_file() else [child.name for child in path.iterdir() if child.is_file() and not child.name.startswith(".")]
    found = sorted({FORMATS[Path(name).suffix.lower()] for name in names if Path(name).suffix.lower() in FORMATS})
    if not found:
        raise ConfigError("PATH", str(path), "holds no CSV (.csv), JSON lines (.json, .jsonl, .ndjson) or Parquet (.parquet) files")
    if len(found) > 1:
        raise ConfigError("PATH", str(path), f"holds files of several formats ({', '.join(found)}); choose one with --format")
    return found[0]


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


def _dropped(spark, outcome):
    """The events ``outcome`` dropped (:func:`~streaming.analysis.lateness.dropped_events`), judged by the watermark each of its batches had."""
    from .analysis.lateness import dropped_events, judge
    from .analysis.profile import feed_events_of

    config = outcome.config
    classified, _ = judge(feed_events_of(spark, config.source), outcome.summaries, config.window_ms, config.slide_ms)
    return dropped_events(classified, deduplicate=config.deduplicate)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "tune":
        return _tune_main(args)
    if args.command == "state":
        return _state_main(args)
    from .engine.registry import QueryRegistry
    from .engine.runner import run_to_idle
    from .engine.session import get_session

    if not args.feed_dir.exists():
        print(f"error: PATH: {str(args.feed_dir)!r} is not a folder or a file", file=sys.stderr)
        return 2
    try:
        config = QueryConfig(
            _source(args),
            window=args.window or "1 minute",
            slide=args.slide,
            watermark=args.watermark,
            output_mode=args.output_mode,
            aggregation=args.agg,
            deduplicate=args.dedup_by is not None,
            session_gap=args.session_gap,
            state_store=args.state_store,
            changelog_checkpointing=args.changelog_checkpointing,
        )
        if args.stop_after is not None and args.stop_after < 1:
            raise ConfigError("--stop-after", args.stop_after, "must be a whole number of at least 1")
        if args.stop_after is not None and args.checkpoint is None:
            raise ConfigError("--stop-after", args.stop_after, "needs --checkpoint: a stopped replay goes on from its checkpoint")
        if args.checkpoint is not None:
            KeptQuery(args.checkpoint).check(config)
        if args.dropped is not None and args.session_gap is not None:
            raise ConfigError("--dropped", str(args.dropped), "needs fixed windows: a session's end moves with its events")
        if args.dropped is not None and args.dropped.suffix.lower() not in (".csv", ".parquet"):
            raise ConfigError("--dropped", str(args.dropped), "must end in .csv or .parquet")
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    spark = get_session()
    registry = QueryRegistry(spark)
    try:
        outcome = run_to_idle(registry, config, keep=args.checkpoint, stop_after=args.stop_after)
        dropped = _dropped(spark, outcome) if args.dropped is not None else None
    except ConfigError as err:  # a mapping that does not fit the types Spark reads from JSON or Parquet files; a checkpoint of another query
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        try:
            registry.close()
        finally:
            spark.stop()
    _print_replay(outcome)
    if dropped is not None:
        if args.dropped.suffix.lower() == ".parquet":
            dropped.to_parquet(args.dropped, index=False)
        else:
            dropped.to_csv(args.dropped, index=False)
        print(f"dropped_events={dropped['event_id'].nunique()} dropped_pairs={len(dropped)} written to {args.dropped}")
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- tune


def _add_tune_parser(commands) -> None:
    tune = commands.add_parser("tune", help="replay a feed under several watermark delays and recommend the smallest good one")
    _add_data_arguments(tune)
    windows = tune.add_mutually_exclusive_group(required=True)
    windows.add_argument("--window", help='window length, e.g. "5 minutes"')
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


def _tune_main(args) -> int:
    from .analysis.tune import canonical_delays, check_target, tune_configs, tuning_output_mode

    if not args.feed_dir.exists():
        print(f"error: PATH: {str(args.feed_dir)!r} is not a folder or a file", file=sys.stderr)
        return 2
    try:
        target = float(args.target)
    except ValueError:
        print(f"error: target: {args.target!r} is not a number", file=sys.stderr)
        return 2
    try:
        delays = canonical_delays([part.strip() for part in args.delays.split(",")])
        check_target(target)
        query = QueryConfig(
            _source(args), window=args.window or "1 minute", slide=args.slide, watermark=delays[0], aggregation=args.agg,
            deduplicate=args.dedup_by is not None, session_gap=args.session_gap, output_mode=tuning_output_mode(args.session_gap),
        )
        tune_configs(query, delays)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from .analysis.tune import tune
    from .engine.registry import QueryRegistry
    from .engine.session import get_session

    spark = get_session()
    registry = QueryRegistry(spark)
    try:
        outcome = tune(registry, query, delays=delays, target=target, concurrent=args.concurrent, method="spark" if args.spark_all else "auto")
    except ConfigError as err:  # a mapping that does not fit the types Spark reads from JSON or Parquet files
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        try:
            registry.close()
        finally:
            spark.stop()
    print(_tune_table(outcome))
    if outcome.method == "model":
        how = "computed by the watermark model, one confirmed on Spark"
    else:
        how = f"run on Spark {'concurrently' if outcome.concurrent else 'one after another'}" + (f"; {outcome.model_note}" if outcome.model_note else "")
    print(
        f"recommended={outcome.recommended or 'none'} (smallest delay with completeness >= {target:g}; marked *) "
        f"wall_seconds={outcome.wall_seconds:.1f} ({len(delays)} delays {how})"
    )
    confirmation = outcome.confirmation
    if confirmation is not None:
        if confirmation.agree:
            print(f"confirmed on Spark at {confirmation.delay}: model and Spark agree on completeness, counted, exact and rows dropped")
        else:
            print(f"DISAGREEMENT at {confirmation.delay} (please report it): " + "; ".join(confirmation.differences()), file=sys.stderr)
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- state


def _state_main(args) -> int:
    from .engine.session import get_session
    from .engine.state import state_report

    folder = KeptQuery(args.checkpoint)
    checkpoint = folder.checkpoint if folder.exists() else args.checkpoint
    if not (checkpoint / "offsets").is_dir():
        print(f"error: DIR: {str(args.checkpoint)!r} is not a query's checkpoint (no offsets folder)", file=sys.stderr)
        return 2
    try:
        config = folder.config() if folder.exists() else None
    except ConfigError:
        config = None  # its feed has moved: the state is read without the configuration
    spark = get_session()
    try:
        report = state_report(spark, checkpoint, args.operator, keyless=config is not None and isinstance(config.source, FeedSource) and config.source.columns.key is None)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    import pandas as pd

    print(pd.DataFrame(report["operators"]).to_string(index=False) if report["operators"] else "(no stateful operator has committed state)")
    print(pd.DataFrame(report["rows"]).to_string(index=False) if report["rows"] else "(the state holds no rows)")
    print(f"rows={len(report['rows'])} operator={report['operator']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0
