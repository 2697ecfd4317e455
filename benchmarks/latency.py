"""``python -m benchmarks.latency``: end-to-end latency of micro-batches and real-time mode, measured in one run on this machine.

It starts its own broker (in a temporary folder). For each trigger -- the
default (the next micro-batch as soon as the last ends), a 1-second
processing-time trigger, and real-time mode -- and each publishing rate, it
starts the dashboard's pass-through query (``registry.start``) on a new topic of
one partition, publishes ``--seconds`` of records at that rate (a paced
producer; each record's Kafka timestamp is set when it is produced), waits
until every record's row is in the result table, and prints each record's
latency from its produce time to the sink (written) and to the result table
(folded): p50, p95, p99, max over the records produced after the first
``--warm-up`` seconds (the query's start-up is not what is measured).

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

TRIGGERS = {
    "micro-batch, default trigger": {"trigger": "default"},
    "micro-batch, 1 s trigger": {"trigger": "processing_time", "trigger_interval": "1 second"},
    "real-time mode": {"trigger": "real_time"},
}


def _note(message: str) -> None:
    print(f"[latency bench] {message}", file=sys.stderr, flush=True)


def measure(registry, bootstrap: str, topic: str, settings: dict, rate: int, seconds: float, warm_up: float, batch: str) -> dict:
    """One run: the latency summaries of the records produced after ``warm_up`` seconds, to the sink and to the table."""
    from streaming.analysis.latency import latency_summary
    from streaming.engine.kafka.topics import create_topic
    from streaming.engine.query.config import QueryConfig
    from streaming.engine.run.publish import publish_paced
    from streaming.engine.sources.kafka import KafkaSource

    create_topic(bootstrap, topic)
    source = KafkaSource(bootstrap, topic, (("n", "bigint"),))
    if settings["trigger"] == "real_time":
        settings = {**settings, "trigger_interval": batch}
    config = QueryConfig(source, aggregation="none", watermark=None, output_mode="update", **settings)
    name = topic.replace("-", "_")
    run = registry.start(config, name)
    try:
        start_ms = time.time() * 1000
        result = {"records": publish_paced(bootstrap, topic, [("k", '{"n": 1}')], rate, seconds), "start_ms": start_ms}
        deadline = time.monotonic() + 120
        while run.latency.records < result["records"]:
            if time.monotonic() > deadline or not run.query.isActive:
                raise RuntimeError(f"{name}: {run.latency.records} of {result['records']} records measured ({run.error})")
            time.sleep(0.1)
        entries = run.latency.frame()
        counted = entries[entries["produced_ms"] >= result["start_ms"] + warm_up * 1000]
        return {
            "records": result["records"],
            "written": latency_summary(counted, "written"),
            "folded": latency_summary(counted, "folded"),
        }
    finally:
        registry.delete(name)


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__.splitlines()[0])
    top.add_argument("--rates", default="1000,10000", help="records a second to publish, comma-separated")
    top.add_argument("--seconds", type=float, default=20.0, help="how long each run publishes")
    top.add_argument("--warm-up", type=float, default=5.0, help="records of the first this many seconds are not counted")
    top.add_argument("--real-time-batch", default="10 seconds", help="the real-time batch length (Spark checkpoints between batches)")
    args = top.parse_args(argv)

    from streaming.engine.kafka.broker import KafkaBroker
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import get_session

    rates = [int(rate) for rate in args.rates.split(",")]
    workdir = Path(tempfile.mkdtemp(prefix="streaming-lab-latency-bench-"))
    broker = KafkaBroker(workdir / "kafka").start()
    spark = get_session()
    registry = QueryRegistry(spark)
    report = []
    try:
        for number, (label, settings) in enumerate(TRIGGERS.items()):
            for rate in rates:
                topic = f"latency-bench-{number}-{rate}"
                outcome = measure(registry, broker.bootstrap, topic, settings, rate, args.seconds, args.warm_up, args.real_time_batch)
                written, folded = outcome["written"], outcome["folded"]
                _note(f"{label} at {rate:,}/s: written p50 {written['p50']:,.0f} ms, p99 {written['p99']:,.0f} ms ({outcome['records']:,} records)")
                report.append({"trigger": label, "rate": rate, "records": outcome["records"], "written": written, "folded": folded})
    finally:
        registry.close()
        spark.stop()
        broker.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"end-to-end latency, ms (produced -> written by the sink / -> in the result table), {args.seconds:g} s a run, first {args.warm_up:g} s not counted")
    print(f"{'trigger':<30} {'rate/s':>7}  {'p50':>13} {'p95':>13} {'p99':>13} {'max':>13}")
    for row in report:
        cells = [f"{row['written'][name]:>6,.0f}/{row['folded'][name]:<6,.0f}" for name in ("p50", "p95", "p99", "max")]
        print(f"{row['trigger']:<30} {row['rate']:>7,}  " + " ".join(cells))
    by = {(row["trigger"], row["rate"]): row["written"]["p50"] for row in report}
    for rate in rates:
        real_time, micro = by[("real-time mode", rate)], by[("micro-batch, default trigger", rate)]
        print(f"at {rate:,}/s: real-time p50 is {real_time / micro:.3f} x the default trigger's ({real_time:,.0f} vs {micro:,.0f} ms)")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
