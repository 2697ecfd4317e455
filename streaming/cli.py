"""Command-line entry points: ``replay`` (and later sub-commands) on the same engine as the dashboard."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .engine.config import OUTPUT_MODES
from .engine.errors import ConfigError

__all__ = ["main", "parser"]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m streaming", description="Run Structured Streaming queries headless.")
    commands = top.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay a feed folder through a windowed count until the stream is idle")
    replay.add_argument("feed_dir", type=Path, help="folder of CSV files (event_time, key, ...), one file per micro-batch")
    replay.add_argument("--window", required=True, help='window length, e.g. "5 minutes"')
    replay.add_argument("--slide", default=None, help="slide for sliding windows (default: tumbling)")
    replay.add_argument("--watermark", default=None, help="watermark delay (default: none)")
    replay.add_argument("--output-mode", default="update", choices=OUTPUT_MODES)
    replay.add_argument("--json", type=Path, default=None, help="write the result and batch summaries to this file")
    _add_tune_parser(commands)
    return top


def _print_replay(outcome) -> None:
    print(outcome.result.to_string(index=False) if len(outcome.result) else "(empty result table)")
    print(
        f"batches={len(outcome.progress)} input_rows={outcome.input_rows} malformed_rows={outcome.malformed_rows} "
        f"rows_dropped_by_watermark={outcome.rows_dropped_by_watermark} final_watermark={outcome.final_watermark}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "tune":
        return _tune_main(args)
    from .engine.registry import QueryRegistry
    from .engine.runner import replay
    from .engine.session import get_session

    if not args.feed_dir.is_dir():
        print(f"error: feed_dir: {str(args.feed_dir)!r} is not a folder", file=sys.stderr)
        return 2
    try:
        from .engine.config import FeedSource, QueryConfig

        QueryConfig(
            FeedSource(args.feed_dir, seconds_per_file=0),
            window=args.window,
            slide=args.slide,
            watermark=args.watermark,
            output_mode=args.output_mode,
        )
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    spark = get_session()
    try:
        outcome = replay(
            QueryRegistry(spark), args.feed_dir, window=args.window, slide=args.slide, watermark=args.watermark, output_mode=args.output_mode
        )
    finally:
        spark.stop()
    _print_replay(outcome)
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0


# --------------------------------------------------------------------------- tune


def _add_tune_parser(commands) -> None:
    tune = commands.add_parser("tune", help="replay a feed under several watermark delays and recommend the smallest good one")
    tune.add_argument("feed_dir", type=Path, help="folder of CSV files (event_time, key, ...), one file per micro-batch")
    tune.add_argument("--window", required=True, help='window length, e.g. "5 minutes"')
    tune.add_argument("--slide", default=None, help="slide for sliding windows (default: tumbling)")
    tune.add_argument("--delays", required=True, help='comma-separated watermark delays, e.g. "0 seconds,1 minute,5 minutes"')
    tune.add_argument("--target", default="0.99", help="completeness to reach, in (0, 1] (default: 0.99)")
    tune.add_argument("--json", type=Path, default=None, help="write the measurements and the recommendation to this file")
    mode = tune.add_mutually_exclusive_group()
    mode.add_argument("--sequential", dest="concurrent", action="store_const", const=False, default=None, help="run one delay at a time")
    mode.add_argument("--concurrent", dest="concurrent", action="store_const", const=True, help="run all delays at once")


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
            }
        )
    return pd.DataFrame(rows).to_string(index=False)


def _tune_main(args) -> int:
    from .analysis.tune import canonical_delays, check_target
    from .engine.config import FeedSource, QueryConfig

    if not args.feed_dir.is_dir():
        print(f"error: feed_dir: {str(args.feed_dir)!r} is not a folder", file=sys.stderr)
        return 2
    try:
        target = float(args.target)
    except ValueError:
        print(f"error: target: {args.target!r} is not a number", file=sys.stderr)
        return 2
    try:
        delays = canonical_delays([part.strip() for part in args.delays.split(",")])
        check_target(target)
        QueryConfig(FeedSource(args.feed_dir, seconds_per_file=0), window=args.window, slide=args.slide, watermark=delays[0])
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    from .analysis.tune import tune
    from .engine.registry import QueryRegistry
    from .engine.session import get_session

    spark = get_session()
    try:
        outcome = tune(
            QueryRegistry(spark), args.feed_dir, window=args.window, slide=args.slide, delays=delays, target=target, concurrent=args.concurrent
        )
    finally:
        spark.stop()
    print(_tune_table(outcome))
    mode = "concurrently" if outcome.concurrent else "one after another"
    print(
        f"recommended={outcome.recommended or 'none'} (smallest delay with completeness >= {target:g}; marked *) "
        f"wall_seconds={outcome.wall_seconds:.1f} ({len(delays)} delays run {mode})"
    )
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0
