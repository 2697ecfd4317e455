"""``python -m benchmarks.join_live``: what the Joins page's live mode costs, measured in one run on this machine.

Two generator streams, ``--rate`` impressions and as many clicks a second
(the generator's pair with one click per impression on average), joined left
outer on ``impression_id`` with a click within 20 s, a watermark on each side,
for ``--minutes`` each:

dashboard
    :func:`~streaming.engine.join.live_join.start_live_join` as the page starts it:
    each side observed, every batch's rows collected through ``foreachBatch``,
    the progress listener; and, every ``REFRESH_SECONDS``, one refresh of the
    live view's data (:func:`dashboard.live_join.live_parts`: the timeline,
    the caption, both figures, the latest rows) with the figures serialized as
    the live charts send them (:func:`dashboard.live_chart.sent`), timed.
bare
    The same streams and join written with PySpark alone, to Spark's ``noop``
    sink, without the listener.

Throughput is input rows (both sides) of the batches that started after the
first ``--warm-up`` seconds, over the span from the first such batch's start to
the last one's end; capacity is the same rows over the batches' busy time
(``triggerExecution``). The dashboard's ratio to bare is printed for both.
Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from benchmarks.bench import percentile


def _note(message: str) -> None:
    print(f"[live join bench] {message}", file=sys.stderr, flush=True)


def _config(rate: int):
    from streaming.engine.join.join import JoinConfig, LiveSide
    from streaming.engine.sources.ads import AdStreams

    streams = AdStreams(impressions_per_second=rate, click_through=1.0, ads=100)
    return JoinConfig(
        LiveSide(streams, "impressions", "10 seconds"), LiveSide(streams, "clicks", "5 seconds", side="right"), on=("impression_id",),
        within=("0 seconds", "20 seconds"), join_type="left_outer",
    )


def throughput(progress: Iterable[Mapping[str, Any]], warm_up_s: float) -> dict[str, float]:
    """``rows``, ``rows_per_s`` (over wall time) and ``busy_rows_per_s`` (over ``triggerExecution``) of the batches that started ``warm_up_s`` after the first."""
    import pandas as pd

    batches = sorted({int(item["batchId"]): item for item in progress}.values(), key=lambda item: int(item["batchId"]))
    starts = [pd.Timestamp(item["timestamp"]) for item in batches]
    if not batches:
        return {"rows": 0, "rows_per_s": 0.0, "busy_rows_per_s": 0.0, "batches": 0}
    counted = [(start, item) for start, item in zip(starts, batches) if (start - starts[0]).total_seconds() >= warm_up_s]
    rows = sum(int(item["numInputRows"]) for _, item in counted)
    busy_ms = sum(int(item["durationMs"]["triggerExecution"]) for _, item in counted)
    if not counted:
        return {"rows": 0, "rows_per_s": 0.0, "busy_rows_per_s": 0.0, "batches": 0}
    last_start, last = counted[-1]
    span_s = (last_start - counted[0][0]).total_seconds() + int(last["durationMs"]["triggerExecution"]) / 1000
    return {"rows": rows, "rows_per_s": rows / span_s, "busy_rows_per_s": rows / (busy_ms / 1000), "batches": len(counted)}


def _bare(spark, config, workdir: Path, seconds: float) -> list[dict[str, Any]]:
    """Each batch's progress of the bare join over ``seconds``."""
    from pyspark.sql import functions as F

    from streaming.engine.join.join import POLICY_CONF

    sides = []
    for side in config.sides:
        sides.append(side.streams.read(spark, side.stream).withWatermark(side.event_time, side.watermark).alias(side.side))
    lower, upper = config.bounds_ms
    condition = F.expr(
        f"left.impression_id = right.impression_id AND right.click_time >= left.impression_time + INTERVAL {lower} MILLISECONDS "
        f"AND right.click_time <= left.impression_time + INTERVAL {upper} MILLISECONDS"
    )
    spark.conf.set(POLICY_CONF, config.policy)
    try:
        query = sides[0].join(sides[1], condition, config.join_type).writeStream.format("noop").option("checkpointLocation", str(workdir / "cp")).start()
    finally:
        spark.conf.unset(POLICY_CONF)
    progress: dict[int, dict[str, Any]] = {}
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(5)  # the recent progress holds the last 100 batches: read it well before they roll over
            progress.update({int(item["batchId"]): item for item in query.recentProgress})
        return list(progress.values())
    finally:
        query.stop()


def _dashboard(registry, config, root: Path, seconds: float) -> tuple[list[dict[str, Any]], list[float]]:
    """Each batch's progress of the live join as the page runs it over ``seconds``, and each refresh's milliseconds."""
    import streamlit.elements.plotly_chart  # noqa: F401 - sets plotly's default template as the app has it

    from dashboard.live_chart import sent
    from dashboard.live_join import live_parts
    from dashboard.shared import REFRESH_SECONDS
    from streaming.engine.join.live_join import start_live_join

    run = start_live_join(registry, config)
    polls: list[float] = []
    progress: dict[int, dict[str, Any]] = {}
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            started = time.perf_counter()
            parts = live_parts(run)
            for figure in parts.figures.values():
                sent(figure)
            polls.append((time.perf_counter() - started) * 1000)
            progress.update({int(item["batchId"]): item for item in run.query.recentProgress})
            time.sleep(max(0.0, REFRESH_SECONDS - (time.perf_counter() - started)))  # the page's refresh period
        if run.status != "active":
            raise RuntimeError(f"the live join ended early: {run.error}")
        return list(progress.values()), polls
    finally:
        registry.remove(run.name)


def main(argv: list[str] | None = None) -> int:
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import get_session

    parser = argparse.ArgumentParser(prog="python -m benchmarks.join_live", description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2_000, help="impressions a second, and as many clicks (default 2000)")
    parser.add_argument("--minutes", type=float, default=3.0, help="minutes of each variant (default 3)")
    parser.add_argument("--warm-up", type=float, default=20.0, help="seconds of each run left out of the throughput (default 20)")
    parser.add_argument("--json", type=Path, default=None, help="also write the report here")
    args = parser.parse_args(argv)

    config = _config(args.rate)
    root = Path(tempfile.mkdtemp(prefix="streaming-lab-live-join-bench-"))
    spark = get_session()
    registry = QueryRegistry(spark, root=root)
    try:
        seconds = args.minutes * 60
        _note(f"bare join, {seconds:.0f} s")
        bare = throughput(_bare(spark, config, Path(tempfile.mkdtemp(dir=root)), seconds), args.warm_up)
        _note(f"dashboard join, {seconds:.0f} s")
        progress, polls = _dashboard(registry, config, root, seconds)
        dashboard = throughput(progress, args.warm_up)
    finally:
        registry.close()
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)
    report = {
        "rate_per_side": args.rate,
        "minutes": args.minutes,
        "bare": {name: round(value, 1) for name, value in bare.items()},
        "dashboard": {name: round(value, 1) for name, value in dashboard.items()},
        "throughput_ratio_dashboard_vs_bare": round(dashboard["rows_per_s"] / bare["rows_per_s"], 3),
        "capacity_ratio_dashboard_vs_bare": round(dashboard["busy_rows_per_s"] / bare["busy_rows_per_s"], 3),
        "poll_ms": {"p50": round(percentile(polls, 50), 1), "p95": round(percentile(polls, 95), 1), "polls": len(polls)},
    }
    print(json.dumps(report, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
