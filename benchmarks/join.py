"""``python -m benchmarks.join``: what the Joins page's replay and tuner cost, measured in one run on this machine.

On a generated pair of ad feeds (``--batches`` files a side, ``--impressions``
impressions a batch), a left outer join with a watermark on each side:

dashboard
    :func:`~streaming.engine.join.join.run_join` as the Joins page calls it: each
    side observed (its largest event time, rows, malformed rows), the rows
    collected batch by batch through ``foreachBatch``, the progress listener.
bare
    The same join written with PySpark alone over the same staged files, to
    Spark's ``noop`` sink, without the listener.

Runs alternate (dashboard, bare, bare, dashboard...) so that drift in the
machine's speed cancels out; the report gives rows per second of each
(input rows of both sides over wall seconds from start to end) and their
ratio. Then the join model: a sweep of ``--pairs``² pairs of delays against
one Spark replay. Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any


def _note(message: str) -> None:
    print(f"[join bench] {message}", file=sys.stderr, flush=True)


def _bare(spark, config, workdir: Path) -> float:
    """Seconds the bare PySpark join takes over the config's files (staged as the replay stages them)."""
    from pyspark.sql import functions as F

    from streaming.engine.join.join import POLICY_CONF
    from streaming.engine.sources.replayer import FeedReplayer

    started = time.perf_counter()  # as run_join's: staging and each side's schema read included
    frames = []
    for side in config.sides:
        staging = workdir / side.side
        FeedReplayer(side.files(), staging, 0).stage_all()
        schema = spark.read.csv([str(path) for path in side.files()], header=True).schema
        frame = spark.readStream.schema(schema).option("header", True).option("maxFilesPerTrigger", 1).csv(str(staging))
        frames.append(frame.withColumn(side.event_time, F.to_timestamp(side.event_time)).withWatermark(side.event_time, side.watermark))
    lower, upper = config.bounds_ms
    left, right = frames[0].alias("l"), frames[1].alias("r")
    condition = F.expr(
        f"l.impression_id = r.impression_id AND r.click_time >= l.impression_time + INTERVAL {lower} MILLISECONDS "
        f"AND r.click_time <= l.impression_time + INTERVAL {upper} MILLISECONDS"
    )
    spark.conf.set(POLICY_CONF, config.policy)
    try:
        query = left.join(right, condition, config.join_type).writeStream.format("noop").option("checkpointLocation", str(workdir / "cp")).trigger(availableNow=True).start()
    finally:
        spark.conf.unset(POLICY_CONF)
    try:
        query.awaitTermination()
        return time.perf_counter() - started
    finally:
        query.stop()


def main(argv: list[str] | None = None) -> int:
    from streaming.adfeeds import AdFeedSpec, write_ad_feeds
    from streaming.engine.join.join import JoinConfig, JoinSide
    from streaming.engine.output.progress import ProgressListener
    from streaming.engine.runtime.session import get_session

    parser = argparse.ArgumentParser(prog="python -m benchmarks.join", description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=60, help="files a side (default 60)")
    parser.add_argument("--impressions", type=int, default=400, help="impressions a batch (default 400)")
    parser.add_argument("--runs", type=int, default=4, help="runs of each variant (default 4)")
    parser.add_argument("--pairs", type=int, default=5, help="delays a side in the model's sweep (default 5: 25 pairs)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="streaming-lab-join-bench-"))
    try:
        spec = AdFeedSpec(
            start=datetime(2024, 3, 4, 12), batches=args.batches, batch_interval_seconds=10, impressions_per_batch=args.impressions, ads=50,
            click_through=0.3, mean_click_delay_seconds=20, max_click_delay_seconds=90, max_lag_seconds=5, late_share=0.04, late_delay_seconds=120,
            seed=7,
        )
        impressions, clicks = write_ad_feeds(spec, root / "impressions", root / "clicks")
        rows = sum(1 for paths in (impressions, clicks) for path in paths for _ in path.open()) - 2 * args.batches
        config = JoinConfig(
            JoinSide(root / "impressions", "impression_time", "1 minute", side="left"), JoinSide(root / "clicks", "click_time", "30 seconds", side="right"),
            on=("impression_id",), within=("0 seconds", "2 minutes"), join_type="left_outer",
        )
        spark = get_session()
        listener = ProgressListener()
        spark.streams.addListener(listener)
        try:
            times, sweep, model_seconds = _measure(spark, config, listener, root, args)
        finally:
            spark.streams.removeListener(listener)
            spark.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return _report(times, sweep, model_seconds, rows, args)


def _measure(spark, config, listener, root: Path, args: argparse.Namespace) -> tuple[dict[str, list[float]], Any, float]:
    """``(seconds of each run per variant, the model's sweep, its seconds)``."""
    from streaming.analysis.join_model import model_sweep
    from streaming.engine.join.join import run_join, side_rows

    _note("warming up")
    run_join(spark, config, listener, root=root)
    _bare(spark, config, Path(tempfile.mkdtemp(dir=root)))
    times: dict[str, list[float]] = {"dashboard": [], "bare": []}
    for run in range(args.runs):
        for variant in ("dashboard", "bare") if run % 2 == 0 else ("bare", "dashboard"):
            if variant == "dashboard":
                started = time.perf_counter()
                run_join(spark, config, listener, root=root)
                times[variant].append(time.perf_counter() - started)
            else:
                times[variant].append(_bare(spark, config, Path(tempfile.mkdtemp(dir=root))))
            _note(f"run {run + 1} {variant}: {times[variant][-1]:.2f} s")
    left, right = (side_rows(spark, side) for side in config.sides)
    delays = [0, 30_000, 60_000, 120_000, 240_000, 480_000, 960_000][: args.pairs]
    started = time.perf_counter()
    sweep = model_sweep(left, right, "impression_time", "click_time", ("impression_id",), config.bounds_ms, config.join_type, delays, delays)
    return times, sweep, time.perf_counter() - started


def _report(times: dict[str, list[float]], sweep: Any, model_seconds: float, rows: int, args: argparse.Namespace) -> int:
    median = {variant: statistics.median(seconds) for variant, seconds in times.items()}
    report: dict[str, Any] = {
        "rows": rows,
        "batches": args.batches,
        "seconds_median": {variant: round(value, 3) for variant, value in median.items()},
        "rows_per_second": {variant: round(rows / value) for variant, value in median.items()},
        "throughput_ratio_dashboard_vs_bare": round(median["bare"] / median["dashboard"], 3),
        "model_sweep": {"pairs": len(sweep), "seconds": round(model_seconds, 2), "seconds_per_pair": round(model_seconds / len(sweep), 3)},
        "model_pairs_per_spark_replay": round(median["dashboard"] / (model_seconds / len(sweep)), 1),
    }
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
