"""``python -m benchmarks.replay``: what one micro-batch of a stepped replay costs, measured in one run on this machine.

A stepped replay (the tuner's, Compare's and ``replay``'s) hands its source
one file at a time and waits for Spark to run every batch it has, including
the no-data batch that follows when the watermark moved. For two sources --
the ``web_clicks`` sample feed (one file per batch) and the ``orders_jsonl``
dataset cut into batches by its arrival column -- it times, per micro-batch
Spark ran (no-data batches included), in runs alternating their order so that
drift in the machine's speed cancels out:

dashboard
    :func:`~streaming.engine.run.runner.run_to_idle` as the tuner and Compare call it: its sink
    folding each batch into a result table and the progress listener.
dashboard, latency
    The same with each record's latency measured (each batch's 1,001 percentiles
    of when its file was handed over), as ``replay --latency`` runs it: over
    ``dashboard``, what measuring latency costs a replay.
bare
    The same :func:`~streaming.engine.run.query.build_frame` frame written to Spark's
    ``noop`` sink, stepped the same way, without the app's listener.

Wall milliseconds per batch, from the first file handed over to the last
batch's end (the query's start is not counted), and Spark's own
``triggerExecution`` per batch. Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

VARIANTS = ("dashboard", "dashboard, latency", "bare")


def _note(message: str) -> None:
    print(f"[replay bench] {message}", file=sys.stderr, flush=True)


def sources() -> dict[str, Any]:
    """The two replays measured: a sample feed one file per batch, and a dataset cut by its arrival column."""
    from streaming.engine.data.batching import Batching
    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.sources import FeedSource

    orders = ColumnMapping(event_time="ts", time_format="epoch_ms", key="store", value="amount", arrival="ingested_at", arrival_format="epoch_ms")
    return {
        "web_clicks (a file a batch)": FeedSource(SAMPLE_FEEDS / "web_clicks", seconds_per_file=0),
        "orders_jsonl (cut by arrival, 10 s)": FeedSource(
            SAMPLE_FEEDS / "orders_jsonl", seconds_per_file=0, file_format="json", columns=orders, batching=Batching("ingested_at", "10 seconds"),
        ),
    }


Batch = tuple[float, int, float]
"""A batch's start (epoch seconds), input rows and ``triggerExecution`` (ms)."""


def run_dashboard(registry, config, latency: bool) -> list[Batch]:
    """Every batch of the app's stepped replay."""
    import pandas as pd

    from streaming.engine.run.runner import run_to_idle

    replayed = run_to_idle(registry, config, latency=latency)
    return [(pd.Timestamp(s["timestamp"]).value / 1e9, s["num_input_rows"], s["batch_duration_ms"]) for s in replayed.summaries]


def run_bare(spark, config, workdir: Path) -> list[Batch]:
    """The same frame to the ``noop`` sink, stepped as :meth:`~streaming.engine.run.query.Run.await_idle` steps it."""
    import pandas as pd

    from streaming.engine.run.query import build_frame
    from streaming.engine.sources import FeedReplayer

    frame, replayer = build_frame(spark, config, workdir / "staging", int(time.time() * 1000), latency=False)
    assert isinstance(replayer, FeedReplayer)
    query = frame.writeStream.outputMode(config.output_mode).format("noop").option("checkpointLocation", str(workdir / "checkpoint")).start()
    try:
        query.processAllAvailable()
        while replayer.stage_next():
            query.processAllAvailable()
        query.processAllAvailable()
        progress = query.recentProgress
    finally:
        query.stop()
    return [(pd.Timestamp(p["timestamp"]).value / 1e9, int(p["numInputRows"]), float(p["durationMs"].get("triggerExecution", 0))) for p in progress]


def _span(batches: list[Batch]) -> float:
    """Seconds from the start of the first batch that read data to the end of the last batch."""
    started = [start for start, rows, _ in batches if rows]
    return max(start + ms / 1000 for start, _, ms in batches) - min(started) if started else 0.0


def measure(spark, registry, config, rounds: int) -> dict[str, dict[str, float]]:
    """Per variant: ``ms_per_batch`` (wall), ``spark_ms_per_batch`` (``triggerExecution``) and ``batches``, totalled over ``rounds`` runs each."""
    totals = {variant: {"seconds": 0.0, "spark_ms": 0.0, "batches": 0} for variant in VARIANTS}
    for index in range(rounds):
        order = VARIANTS if index % 2 == 0 else tuple(reversed(VARIANTS))
        for variant in order:
            workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-replay-bench-"))
            try:
                if variant != "bare":
                    progress = run_dashboard(registry, config, latency=variant == "dashboard, latency")
                else:
                    spark.streams.removeListener(registry.listener)
                    try:
                        progress = run_bare(spark, config, workdir)
                    finally:
                        spark.streams.addListener(registry.listener)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
            seconds, batches = _span(progress), len(progress)
            spark_ms = sum(ms for _, _, ms in progress)
            _note(f"{variant}: {batches} batches, {seconds * 1000 / max(batches, 1):,.0f} ms a batch")
            total = totals[variant]
            total["seconds"] += seconds
            total["spark_ms"] += spark_ms
            total["batches"] += batches
    return {
        variant: {
            "ms_per_batch": total["seconds"] * 1000 / max(total["batches"], 1),
            "spark_ms_per_batch": total["spark_ms"] / max(total["batches"], 1),
            "batches": total["batches"] / rounds,
        }
        for variant, total in totals.items()
    }


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.replay", description=__doc__.splitlines()[0])
    top.add_argument("--rounds", type=int, default=2, help="runs of each variant per source (alternating order)")
    args = top.parse_args(argv)

    from streaming.engine.query.config import QueryConfig
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import get_session

    spark = get_session()
    registry = QueryRegistry(spark)
    report = {}
    try:
        for label, source in sources().items():
            config = QueryConfig(source, window="1 minute", watermark="1 minute", output_mode="update")
            measure(spark, registry, config, 1)  # warm-up: the first replays pay for loading and compiling the classes
            report[label] = measure(spark, registry, config, args.rounds)
    finally:
        registry.close()
        spark.stop()
    print(f"stepped replay, ms per micro-batch (no-data batches included), {args.rounds} runs each; wall / Spark's triggerExecution")
    print(f"{'source':<38} {'variant':<18} {'batches':>7} {'wall ms':>8} {'spark ms':>9}")
    for label, variants in report.items():
        for variant, row in variants.items():
            print(f"{label:<38} {variant:<18} {row['batches']:>7.0f} {row['ms_per_batch']:>8.1f} {row['spark_ms_per_batch']:>9.1f}")
        latency = variants["dashboard, latency"]["ms_per_batch"] / variants["dashboard"]["ms_per_batch"]
        overhead = variants["dashboard"]["ms_per_batch"] / variants["bare"]["ms_per_batch"]
        print(f"{label}: the latency observation costs x{latency:.3f} a batch; the dashboard's replay x{overhead:.3f} the bare query's")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
