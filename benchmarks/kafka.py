"""``python -m benchmarks.kafka``: Kafka in the lab, measured in one run on this machine.

It starts its own broker (in a temporary folder) and prints ratios measured in this run:

publish
    A generated dataset (``--rows`` rows of ``event_time``, ``key``, ``amount``
    in ``--files`` JSON-lines files) published into a new topic of
    ``--partitions`` partitions as fast as possible, with
    :func:`streaming.engine.run.publish.publish`: messages per second.
paced publish
    A dataset whose rows arrived over ``--paced-span`` seconds (an ``ingested_at``
    column, epoch ms; one batch a second of arrival) published paced by its arrival
    times at each speed of ``--speeds``: the seconds it took against the span ÷
    the speed it should take (the last second is not waited), and batches per second.
replay throughput
    The topic replayed from its earliest offsets to its end under the
    available-now trigger, ``--batch`` records a micro-batch, as a windowed count
    per key: the dashboard's query (``registry.start``: its result-table sink
    and the progress listener) against the same :func:`build_frame` frame written
    to Spark's ``noop`` sink with the listener removed. rows/s = records read ÷
    wall-clock seconds from the start to the end of the last batch (what the
    user waits). Runs alternate noop, dashboard, dashboard, noop... so drift in
    the machine's speed cancels out. Goal: dashboard >= 0.95 × noop.

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

GOAL = 0.95


def _note(message: str) -> None:
    print(f"[kafka bench] {message}", file=sys.stderr, flush=True)


def write_dataset(folder: Path, rows: int, files: int, keys: int, seed: int = 7) -> Path:
    """``rows`` events a second apart, a little out of order, in ``files`` JSON-lines files: the dataset published."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-01-01")
    times = start + pd.to_timedelta(np.arange(rows) - rng.integers(0, 30, rows), unit="s")
    frame = pd.DataFrame({"event_time": times.strftime("%Y-%m-%d %H:%M:%S"), "key": [f"k{index}" for index in rng.integers(0, keys, rows)],
                          "amount": rng.random(rows).round(3)})
    folder.mkdir(parents=True)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for number, (start, end) in enumerate(itertools.pairwise(bounds)):
        frame.iloc[start:end].to_json(folder / f"part-{number:04d}.jsonl", orient="records", lines=True)
    return folder


def paced(spark, bootstrap: str, folder: Path, span_s: int, speeds: list[float]) -> list[tuple[float, float, float, int]]:
    """``(speed, seconds taken, seconds expected, batches)`` of publishing a dataset that arrived over ``span_s`` seconds, paced at each speed."""
    from streaming.engine.data.batching import Batching
    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.query.config import FeedSource
    from streaming.engine.run.publish import publish

    folder.mkdir(parents=True)
    start_ms = 1_700_000_000_000
    lines = [json.dumps({"event_time": start_ms + row * 97, "key": f"k{row % 5}", "ingested_at": start_ms + row * span_s * 1000 // 600}) for row in range(600)]
    (folder / "part-0000.jsonl").write_text("\n".join(lines) + "\n")
    mapping = ColumnMapping(event_time="event_time", time_format="epoch_ms", key="key", arrival="ingested_at", arrival_format="epoch_ms")
    source = FeedSource(folder, 0.0, "json", mapping, Batching("ingested_at", "1 second"))
    measured = []
    for index, speed in enumerate(speeds):
        published = publish(spark, source, bootstrap, f"bench-paced-{index}", speed=speed)
        expected = (span_s - 1) / speed
        measured.append((speed, published.seconds, expected, published.batches))
        _note(f"paced at {speed:g}x: {published.batches} batches in {published.seconds:.2f} s (the pace alone: {expected:.2f} s)")
    return measured


def _dashboard(registry, config, name: str) -> tuple[int, float]:
    """``(records, seconds)`` of the dashboard's query to its end."""
    started = time.monotonic()
    run = registry.start(config, name)
    try:
        run.query.awaitTermination(3600)
        seconds = time.monotonic() - started
        run.log.caught_up(run.query, time.monotonic() + 5.0)
        records = sum(int(summary["num_input_rows"]) for summary in run.log.summaries())
    finally:
        registry.delete(name)
    return records, seconds


def _noop(spark, config, name: str) -> tuple[int, float]:
    """``(records, seconds)`` of the same frame written to the noop sink."""
    from streaming.engine.run.query import build_frame

    workdir = Path(tempfile.mkdtemp(prefix=f"streaming-lab-{name}-"))
    started = time.monotonic()
    frame, _ = build_frame(spark, config, workdir / "staging", int(time.time() * 1000))
    query = (
        frame.writeStream.queryName(name).outputMode(config.output_mode).format("noop")
        .option("checkpointLocation", str(workdir / "checkpoint")).trigger(availableNow=True).start()
    )
    try:
        query.awaitTermination(3600)
        seconds = time.monotonic() - started
        records = sum(int(progress["numInputRows"]) for progress in query.recentProgress)
    finally:
        query.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return records, seconds


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.kafka", description=__doc__.splitlines()[0])
    top.add_argument("--rows", type=int, default=400_000)
    top.add_argument("--files", type=int, default=40)
    top.add_argument("--keys", type=int, default=20)
    top.add_argument("--partitions", type=int, default=3)
    top.add_argument("--batch", type=int, default=50_000, help="maxOffsetsPerTrigger of the replays")
    top.add_argument("--rounds", type=int, default=2, help="pairs of replays (noop, dashboard) counted")
    top.add_argument("--paced-span", type=int, default=30, help="seconds over which the paced dataset's rows arrived")
    top.add_argument("--speeds", default="1,100,3600", help="speeds of the paced publish, comma-separated")
    args = top.parse_args(argv)

    from streaming.engine.data.batching import Batching
    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.kafka.broker import KafkaBroker
    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.publish import publish
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import get_session
    from streaming.engine.sources.kafka import KafkaSource

    workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-kafka-bench-"))
    broker = KafkaBroker(workdir / "kafka")
    began = time.monotonic()
    broker.start()
    _note(f"broker up at {broker.bootstrap} in {time.monotonic() - began:.1f} s")
    spark = get_session()
    registry = QueryRegistry(spark)
    try:
        mapping = ColumnMapping(event_time="event_time", key="key", value="amount")
        dataset = FeedSource(write_dataset(workdir / "events", args.rows, args.files, args.keys), 0.0, "json", mapping, Batching("file"))
        published = publish(spark, dataset, broker.bootstrap, "bench-events", partitions=args.partitions)
        _note(f"published {published.messages:,} messages in {published.seconds:.1f} s")
        pacing = paced(spark, broker.bootstrap, workdir / "paced", args.paced_span, [float(speed) for speed in args.speeds.split(",")])
        source = KafkaSource(
            broker.bootstrap, "bench-events", (("event_time", "string"), ("key", "string"), ("amount", "double")),
            columns=ColumnMapping(event_time="event_time", key="key"), max_offsets_per_trigger=args.batch, end_offsets=published.end_offsets,
        )
        config = QueryConfig(source, window="1 minute", watermark="1 minute", output_mode="update", trigger="available_now")
        totals = {"noop": [0, 0.0], "dashboard": [0, 0.0]}
        order = ["noop", "dashboard"] + [kind for index in range(args.rounds) for kind in (("noop", "dashboard") if index % 2 else ("dashboard", "noop"))]
        for index, kind in enumerate(order):
            counted = index >= 2  # the first pair warms the JVM up
            if kind == "dashboard":
                records, seconds = _dashboard(registry, config, f"bench_kafka_{index}")
            else:
                spark.streams.removeListener(registry.listener)
                try:
                    records, seconds = _noop(spark, config, f"bench_kafka_noop_{index}")
                finally:
                    spark.streams.addListener(registry.listener)
            _note(f"{kind}{'' if counted else ' (warm-up)'}: {records:,} records in {seconds:.1f} s, {records / seconds:,.0f} rows/s")
            if records != published.messages:
                raise RuntimeError(f"{kind} read {records} records of {published.messages}")
            if counted:
                totals[kind][0] += records
                totals[kind][1] += seconds
    finally:
        registry.close()
        spark.stop()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    dashboard_rate = totals["dashboard"][0] / totals["dashboard"][1]
    noop_rate = totals["noop"][0] / totals["noop"][1]
    ratio = dashboard_rate / noop_rate
    publish_rate = published.messages / published.seconds
    print(f"publish: {published.messages:,} messages into {args.partitions} partitions in {published.seconds:.2f} s = {publish_rate:,.0f} messages/s")
    for speed, seconds, expected, batches in pacing:
        print(f"paced publish at {speed:g}x: {batches} batches in {seconds:.2f} s against {expected:.2f} s of pace ({batches / seconds:,.1f} batches/s)")
    print(f"replay to the end, {args.batch:,} records a batch: dashboard {dashboard_rate:,.0f} rows/s, noop {noop_rate:,.0f} rows/s, "
          f"ratio {ratio:.3f} (goal >= {GOAL}: {'met' if ratio >= GOAL else 'NOT met'})")
    print(json.dumps({"publish_messages_per_s": round(publish_rate), "dashboard_rows_per_s": round(dashboard_rate),
                      "noop_rows_per_s": round(noop_rate), "dashboard_vs_noop": round(ratio, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
