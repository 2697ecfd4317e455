"""``python -m benchmarks.walkthrough``: what a press of *Next batch* costs on the Step through page, measured in one run on this machine.

For two scenarios -- the guide's late data (4 files, update and append side
by side) and a watermark too small on ``web_clicks`` (40 files) -- it presses
Next file by file, as the page does, and times per press:

spark
    :meth:`~streaming.engine.walkthrough.Walkthrough.advance`: handing the file
    over and waiting for every batch Spark runs on it (the no-data batch included).
explain
    :func:`~streaming.analysis.explain.explain` of every batch so far, which the
    page makes again after each press.
report
    The scenario's HTML report at the end (made only when downloaded).

It prints p50 / p95 / max in ms and the ratio of explain to Spark per press:
what telling the batches adds to running them. Progress notes go to stderr, the report to stdout.
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


def measure(spark, registry, name: str) -> dict[str, list[float]]:
    """Per press of Next on scenario ``name``: Spark's ms and explain's ms (summed over its side-by-side runs), and the report's ms once."""
    from streaming.analysis.explain import explain, replay_events
    from streaming.engine.walkthrough import Walkthrough
    from streaming.report import ReportRun, steps_report
    from streaming.scenarios import SCENARIOS as LIBRARY

    scenario = LIBRARY[name]
    configs = scenario.configs()
    events = [replay_events(spark, config) for config in configs]
    walks = [Walkthrough(registry, config, idle_limit=None) for config in configs]
    timings: dict[str, list[float]] = {"spark": [], "explain": [], "report": []}
    try:
        while not all(walk.finished for walk in walks):
            started = time.perf_counter()
            for walk in walks:
                walk.advance()
            told = time.perf_counter()
            steps = [explain(walk.config, walk.summaries(), walk.outputs(), frame) for walk, frame in zip(walks, events, strict=True)]
            done = time.perf_counter()
            timings["spark"].append((told - started) * 1000)
            timings["explain"].append((done - told) * 1000)
        started = time.perf_counter()
        labels = scenario.labels or (None,) * len(walks)
        page = steps_report(scenario.title, scenario.summary, [ReportRun(walk.config, told, label) for walk, told, label in zip(walks, steps, labels, strict=True)])
        timings["report"].append((time.perf_counter() - started) * 1000)
        _note(f"{name}: {len(timings['spark'])} presses, {sum(len(told) for told in steps)} batches, report {len(page) / 1e6:.1f} MB")
    finally:
        for walk in walks:
            walk.close()
    return timings


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m benchmarks.walkthrough", description=__doc__.splitlines()[0])
    top.parse_args(argv)
    from streaming.engine.registry import QueryRegistry
    from streaming.engine.session import get_session

    spark = get_session()
    registry = QueryRegistry(spark)
    try:
        measure(spark, registry, "late_data")  # warm-up: the JVM's first queries are slower
        results = {name: measure(spark, registry, name) for name in SCENARIOS}
    finally:
        registry.close()
        spark.stop()
    print("Step through: one press of Next batch, in ms")
    for name, timings in results.items():
        print(f"{name}")
        print(f"  spark    {_stats(timings['spark'])}")
        print(f"  explain  {_stats(timings['explain'])}")
        ratio = sum(timings["explain"]) / sum(timings["spark"])
        print(f"  explain / spark over all presses: {ratio:.3f}; report {timings['report'][0]:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
