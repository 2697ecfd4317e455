"""``python -m benchmarks.walkthrough``: what a press of *Next batch* costs on the Step through page, measured in one run on this machine.

For three walkthroughs -- the guide's late data (4 files, update and append
side by side), a watermark too small on ``web_clicks`` (40 files), and the
same query on ``web_clicks`` published into a topic of a local broker (50
records a step, 40 steps) -- it presses Next step by step, as the page does,
and times per press:

spark
    :meth:`~streaming.engine.run.walkthrough.Walkthrough.advance`: handing the step
    over (a file staged; a topic's records copied in one transaction) and
    waiting for every batch Spark runs on it (the no-data batch included).
explain
    :func:`~streaming.analysis.explain.explain` of every batch so far, which the
    page makes again after each press (the events are read once, at the start).
report
    The HTML report at the end (made only when downloaded).

It prints p50 / p95 / max in ms and the ratio of explain to Spark per press:
what telling the batches adds to running them; and the topic's Spark time
per press against the files': what stepping through a topic adds. Progress
notes go to stderr, the report to stdout. ``--no-topic`` leaves the broker out.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

SCENARIOS = ("late_data", "watermark_too_small")


def _note(message: str) -> None:
    print(f"[walkthrough bench] {message}", file=sys.stderr, flush=True)


def _stats(values: list[float]) -> str:
    data = np.asarray(values)
    return f"p50 {np.percentile(data, 50):8.1f}  p95 {np.percentile(data, 95):8.1f}  max {data.max():8.1f}"


def measure(spark, registry, scenario) -> dict[str, list[float]]:
    """Per press of Next on ``scenario``: Spark's ms and explain's ms (summed over its side-by-side runs), and the report's ms once."""
    from streaming.analysis.explain import EventsSoFar, explain
    from streaming.engine.run.walkthrough import Walkthrough
    from streaming.report import ReportRun, steps_report

    walks = [Walkthrough(registry, config, idle_limit=None) for config in scenario.configs()]
    events = [EventsSoFar(spark, walk.config, walk.plan) for walk in walks]
    timings: dict[str, list[float]] = {"spark": [], "explain": [], "report": []}
    try:
        while not all(walk.finished for walk in walks):
            started = time.perf_counter()
            for walk in walks:
                walk.advance()
            told = time.perf_counter()
            steps = [
                explain(walk.config, walk.summaries(), walk.outputs(), read(walk.summaries())) for walk, read in zip(walks, events, strict=True)
            ]
            done = time.perf_counter()
            timings["spark"].append((told - started) * 1000)
            timings["explain"].append((done - told) * 1000)
        started = time.perf_counter()
        labels = scenario.labels or (None,) * len(walks)
        page = steps_report(scenario.title, scenario.summary, [ReportRun(walk.config, told, label) for walk, told, label in zip(walks, steps, labels, strict=True)])
        timings["report"].append((time.perf_counter() - started) * 1000)
        _note(f"{scenario.title}: {len(timings['spark'])} presses, {sum(len(told) for told in steps)} batches, report {len(page) / 1e6:.1f} MB")
    finally:
        for walk in walks:
            walk.close()
    return timings


def topic_scenario(spark, bootstrap: str):
    """``watermark_too_small``'s query on ``web_clicks`` published into a topic of one partition, 50 records a step (its files' batches)."""
    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.data.feeds import SAMPLE_FEEDS, TIME_PATTERN
    from streaming.engine.query.config import FeedSource
    from streaming.engine.run.publish import publish
    from streaming.engine.sources.kafka import KafkaSource
    from streaming.scenarios import SCENARIOS as LIBRARY
    from streaming.scenarios import Scenario

    publish(spark, FeedSource(SAMPLE_FEEDS / "web_clicks", seconds_per_file=0), bootstrap, "web-clicks")
    source = KafkaSource(
        bootstrap, "web-clicks", (("event_time", "string"), ("key", "string")), columns=ColumnMapping(event_time="event_time", time_format=TIME_PATTERN, key="key"),
        max_offsets_per_trigger=50,
    )
    return Scenario.of(source, LIBRARY["watermark_too_small"].presets[0], "watermark_too_small on a topic")


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.walkthrough", description=__doc__.splitlines()[0])
    top.add_argument("--no-topic", action="store_true", help="leave out the topic's walkthrough (and the broker)")
    args = top.parse_args(argv)
    import tempfile
    from pathlib import Path

    from streaming.engine.kafka.broker import KafkaBroker
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import get_session
    from streaming.scenarios import SCENARIOS as LIBRARY

    spark = get_session()
    registry = QueryRegistry(spark)
    with tempfile.TemporaryDirectory(prefix="streaming-lab-walkthrough-bench-") as folder:
        broker = None if args.no_topic else KafkaBroker(Path(folder) / "kafka").start()
        try:
            measure(spark, registry, LIBRARY["late_data"])  # warm-up: the JVM's first queries are slower
            results = {name: measure(spark, registry, LIBRARY[name]) for name in SCENARIOS}
            if broker is not None:
                results["watermark_too_small on a topic"] = measure(spark, registry, topic_scenario(spark, broker.bootstrap))
        finally:
            registry.close()
            spark.stop()
            if broker is not None:
                broker.stop()
    print("Step through: one press of Next batch, in ms")
    for name, timings in results.items():
        print(f"{name}")
        print(f"  spark    {_stats(timings['spark'])}")
        print(f"  explain  {_stats(timings['explain'])}")
        ratio = sum(timings["explain"]) / sum(timings["spark"])
        print(f"  explain / spark over all presses: {ratio:.3f}; report {timings['report'][0]:.0f} ms")
    if "watermark_too_small on a topic" in results:
        topic, files = (float(np.percentile(results[name]["spark"], 50)) for name in ("watermark_too_small on a topic", "watermark_too_small"))
        print(f"a topic's press against the files' (Spark, p50): {topic / files:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
