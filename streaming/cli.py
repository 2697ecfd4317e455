"""Command-line entry points: ``replay`` (and later sub-commands) on the same engine as the dashboard."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .config import OUTPUT_MODES, ConfigError

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
    return top


def _print_replay(outcome) -> None:
    print(outcome.result.to_string(index=False) if len(outcome.result) else "(empty result table)")
    print(
        f"batches={len(outcome.progress)} input_rows={outcome.input_rows} malformed_rows={outcome.malformed_rows} "
        f"rows_dropped_by_watermark={outcome.rows_dropped_by_watermark} final_watermark={outcome.final_watermark}"
    )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from .registry import QueryRegistry
    from .runner import replay
    from .session import get_session

    if not args.feed_dir.is_dir():
        print(f"error: feed_dir: {str(args.feed_dir)!r} is not a folder", file=sys.stderr)
        return 2
    try:
        from .config import FeedSource, QueryConfig

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
    registry = QueryRegistry(spark)
    outcome = replay(
        registry, args.feed_dir, window=args.window, slide=args.slide, watermark=args.watermark, output_mode=args.output_mode
    )
    _print_replay(outcome)
    if args.json is not None:
        args.json.write_text(json.dumps(outcome.to_json(), indent=2) + "\n")
    return 0
