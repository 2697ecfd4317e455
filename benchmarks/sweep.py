"""Benchmark of the watermark tuner: the model's sweep alone, and a whole ``tune`` against one replay of the same feed.

``python -m benchmarks.sweep`` prints, measured in one run on this machine:

- the model sweep of ``--events`` events in ``--batches`` micro-batches over
  ``--windows`` window lengths × ``--delays`` delays: seconds and
  events × points per second;
- one stepped replay of a ``--feed-events`` event feed in ``--feed-batches``
  files through Spark, the tuner's answer for ``--tune-delays`` delays on it
  (the model, plus its one Spark confirmation), and their ratio.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from streaming.analysis.model import Timeline, expand, sweep

MINUTE_MS = 60_000


def synthetic_timeline(events: int, batches: int, keys: int = 50, seed: int = 1) -> Timeline:
    """``events`` events over ``batches`` 10-second batches: most a few seconds late, 2% minutes late, spread over ``keys`` keys."""
    generator = np.random.default_rng(seed)
    batch = np.sort(generator.integers(0, batches, events))
    arrival_ns = (1_772_409_600 + batch * 10) * 1_000_000_000 + generator.integers(0, 10_000_000_000, events)
    lag_ns = generator.exponential(3e9, events).astype("int64") + np.where(generator.random(events) < 0.02, generator.integers(60, 600, events) * 1_000_000_000, 0)
    return Timeline(
        event_ns=arrival_ns - lag_ns, key_code=generator.integers(0, keys, events), keys=np.array([f"k{index}" for index in range(keys)], dtype=object),
        batch=batch, batches=batches,
    )


def model_sweep_seconds(timeline: Timeline, windows_ms: list[int], delays_ms: list[int]) -> float:
    started = time.perf_counter()
    for window in windows_ms:
        sweep(timeline, expand(timeline, window, window // 2), delays_ms)
    return time.perf_counter() - started


def tune_against_replay(events: int, batches: int, delays: int) -> dict[str, float]:
    """Seconds of one replay and of a ``tune`` of ``delays`` delays on the same generated feed, and their ratio."""
    from streaming.analysis.tune import tune
    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.run.runner import run_to_idle
    from streaming.engine.runtime.session import get_session
    from streaming.feedgen import FeedSpec, write_feed

    spec = FeedSpec(
        start=datetime(2026, 3, 2, 9, 0), batches=batches, batch_interval_seconds=10, events_per_batch=events // batches,
        keys=tuple(f"k{index}" for index in range(20)), max_lag_seconds=8, late_share=0.02, late_delay_seconds=180, seed=3,
    )
    spark = get_session()
    registry = QueryRegistry(spark)
    try:
        with tempfile.TemporaryDirectory(prefix="streaming-lab-sweep-bench-") as folder:
            feed = Path(folder) / "feed"
            write_feed(spec, feed)
            query = QueryConfig(FeedSource(feed, seconds_per_file=0), window="1 minute", watermark="1 minute")
            run_to_idle(registry, query, timeout=3600)  # warm: the first run pays for loading and code generation
            started = time.perf_counter()
            run_to_idle(registry, query, timeout=3600)
            replay_seconds = time.perf_counter() - started
            started = time.perf_counter()
            result = tune(registry, query, delays=[f"{seconds} seconds" for seconds in np.linspace(0, 300, delays).astype(int)], target=0.99)
            tune_seconds = time.perf_counter() - started
            agree = bool(result.confirmation is not None and result.confirmation.agree)
    finally:
        spark.stop()
    return {"replay_seconds": replay_seconds, "tune_seconds": tune_seconds, "tune_over_replay": tune_seconds / replay_seconds, "confirmation_agrees": agree}


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m benchmarks.sweep", description="Measure the watermark tuner on this machine.")
    top.add_argument("--events", type=int, default=1_000_000, help="events of the model-only sweep (default 1,000,000)")
    top.add_argument("--batches", type=int, default=360, help="micro-batches of the model-only sweep (default 360)")
    top.add_argument("--windows", type=int, default=5, help="window lengths of the model-only sweep, 1 to N minutes (default 5)")
    top.add_argument("--delays", type=int, default=50, help="delays of the model-only sweep, 0 to 10 minutes (default 50)")
    top.add_argument("--feed-events", type=int, default=300_000, help="events of the feed replayed and tuned (default 300,000)")
    top.add_argument("--feed-batches", type=int, default=120, help="files of that feed (default 120)")
    top.add_argument("--tune-delays", type=int, default=6, help="delays of the tune (default 6)")
    top.add_argument("--skip-spark", action="store_true", help="measure the model only")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    timeline = synthetic_timeline(args.events, args.batches)
    windows = [MINUTE_MS * (index + 1) for index in range(args.windows)]
    delays = [int(value) for value in np.linspace(0, 10 * MINUTE_MS, args.delays)]
    seconds = model_sweep_seconds(timeline, windows, delays)
    points = len(windows) * len(delays)
    print(f"model sweep: {args.events:,} events, {args.batches} batches, {len(windows)} windows x {len(delays)} delays = {points} points")
    print(f"model_sweep_seconds={seconds:.2f} events_x_points_per_second={args.events * points / seconds:,.0f}")
    if not args.skip_spark:
        measured = tune_against_replay(args.feed_events, args.feed_batches, args.tune_delays)
        print(f"tune vs replay: {args.feed_events:,} events in {args.feed_batches} files, {args.tune_delays} delays")
        print(
            f"replay_seconds={measured['replay_seconds']:.1f} tune_seconds={measured['tune_seconds']:.1f} "
            f"tune_over_replay={measured['tune_over_replay']:.2f} confirmation_agrees={measured['confirmation_agrees']}"
        )
    print(pd.Timestamp.now(tz="UTC").strftime("measured %Y-%m-%d %H:%M UTC"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
