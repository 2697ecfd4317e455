"""``python -m benchmarks.bench``: what the dashboard costs, measured in one run on this machine.

Four measurements, each printed with its ratio and goal, then a block of
``name: value`` lines to copy:

cold start
    A fresh Python process (``--cold-start-child``) imports the engine, creates
    the session, starts a generator query through a :class:`QueryRegistry` and
    polls ``run.table`` until it holds a row. It prints the seconds since its
    parent launched it (``cold_start_s``) and the seconds ``get_session()``
    took (``getorcreate_s``). It runs first, before this process starts a JVM;
    then again without the class archive, and without the Kafka connector's jars (and so without the archive, made with them).
overhead
    Processed rows/s of the dashboard's query (``registry.start``: its
    :class:`ResultTable` sink -- ``foreachBatch``, or the memory sink read from the
    client with ``--connect`` -- and the progress listener) against
    the same :func:`build_frame` frame written to Spark's ``noop`` sink with the
    listener removed, on ``rate-micro-batch`` with big batches and the default
    trigger. rows/s = total ``numInputRows`` over the wall-clock span from the
    first counted batch's start to the last one's end (what a user waits for:
    on Connect it holds the client's fold, which ``triggerExecution`` leaves
    out), over the batches that started after a warm-up; the ratio of
    ``triggerExecution`` rows/s is printed beside it. Runs alternate noop, dashboard,
    dashboard, noop, ... so drift in the machine's speed cancels out. They run
    before the live query: the full collections of its marks (below) shrink the
    heap, and the big batches after them would pay for growing it again.
poll cost
    Milliseconds of one refresh of the live view, as the live page's fragment
    does it per tick (``table.frame()``, ``log.frames()``, and the figures of
    ``streaming.charts.live.live_figures``) after 1 minute and after
    ``--minutes`` of an update-mode generator query; p50 and p95. The JSON a
    live chart sends (``dashboard.live_chart.sent``) is timed apart, and the verdicts
    judge the tick with it (goal :data:`POLL_GOAL_MS`), as the page pays it.
memory
    RSS of the driver JVM (the ``java`` child of this process, or the Connect
    server's with ``--connect``) and of this Python process at the same two marks,
    with result-table and progress-log sizes, and the Java heap in use right after a
    full collection (local only: the driver's live data, which a leak would grow);
    every minute, also the Java heap after the latest GC (local only) and, on
    Connect, the rows the memory sink holds.

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

__all__ = [
    "Throughput",
    "final_block",
    "main",
    "parse_child_result",
    "parser",
    "percentile",
    "ratio",
    "throughput",
]

CHILD_MARKER = "BENCH_COLD_START "
PROJECT_ROOT = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024
MIN_BATCHES = 10

FINAL_KEYS = (
    "cold_start_s",
    "first_chart_s",
    "getorcreate_s",
    "overhead_ratio",
    "dashboard_rows_per_s",
    "noop_rows_per_s",
    "poll_p50_ms_1min",
    "poll_p95_ms_1min",
    "poll_p50_ms_long",
    "poll_p95_ms_long",
    "poll_ratio",
    "jvm_rss_mib_1min",
    "jvm_rss_mib_long",
    "python_rss_mib_1min",
    "python_rss_mib_long",
    "poll_cpu_p95_ms_1min",
    "poll_cpu_p95_ms_long",
    "jvm_rss_change_last_30min",
)


# ---------------------------------------------------------------- pure helpers


@dataclass(frozen=True)
class Throughput:
    """Rows and ``triggerExecution`` milliseconds summed over the counted batches."""

    rows: int = 0
    trigger_ms: int = 0
    batches: int = 0
    wall_s: float = 0.0

    @property
    def rows_per_s(self) -> float:
        return self.rows / (self.trigger_ms / 1000) if self.trigger_ms > 0 else math.nan

    @property
    def wall_rows_per_s(self) -> float:
        """Rows over the wall-clock span from the first counted batch's start to the last one's end."""
        return self.rows / self.wall_s if self.wall_s > 0 else math.nan

    def __add__(self, other: Throughput) -> Throughput:
        return Throughput(self.rows + other.rows, self.trigger_ms + other.trigger_ms, self.batches + other.batches, self.wall_s + other.wall_s)


POLL_GOAL_MS = 30
"""The goal for one refresh of the live view, the figures' conversion to what the live charts send included."""


def _epoch_seconds(stamp: str) -> float:
    """Spark's progress timestamp (``2024-01-01T12:00:00.123Z``) as epoch seconds."""
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


def throughput(progresses: Iterable[Mapping[str, Any]], since: float) -> Throughput:
    """Sum the batches whose trigger started at or after ``since`` (epoch seconds); one entry per batch id."""
    latest = {int(p["batchId"]): p for p in progresses}
    rows = trigger_ms = batches = 0
    first_start = last_end = None
    for batch_id in sorted(latest):
        progress = latest[batch_id]
        start = _epoch_seconds(progress["timestamp"])
        if start < since:
            continue
        ms = int((progress.get("durationMs") or {}).get("triggerExecution") or 0)
        rows += int(progress.get("numInputRows") or 0)
        trigger_ms += ms
        batches += 1
        first_start = start if first_start is None else min(first_start, start)
        last_end = start + ms / 1000 if last_end is None else max(last_end, start + ms / 1000)
    wall = (last_end - first_start) if first_start is not None and last_end is not None else 0.0
    return Throughput(rows, trigger_ms, batches, wall)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ratio(numerator: float, denominator: float) -> float:
    """``numerator / denominator``, NaN when either is NaN or the denominator is 0."""
    if math.isnan(numerator) or math.isnan(denominator) or denominator == 0:
        return math.nan
    return numerator / denominator


def parse_child_result(stdout: str) -> dict[str, Any] | None:
    """The JSON the cold-start child printed after :data:`CHILD_MARKER`, or ``None``."""
    for line in stdout.splitlines():
        if line.startswith(CHILD_MARKER):
            return json.loads(line[len(CHILD_MARKER):])
    return None


def _format(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.0f}"
    return str(value)


def final_block(metrics: Mapping[str, object], keys: Sequence[str] = FINAL_KEYS) -> str:
    """``name: value`` lines for ``keys`` (``n/a`` when missing), then any other metrics."""
    names = list(keys) + [name for name in metrics if name not in keys]
    return "\n".join(f"{name}: {_format(metrics.get(name))}" for name in names)


def _starts(first: dict[str, Any]) -> str:
    """The first chart's median and each Start's seconds, as the report and the progress notes give them."""
    return f"median {first['first_chart_s']:.2f} s of {len(first['starts_s'])} Starts ({', '.join(f'{seconds:.2f}' for seconds in first['starts_s'])})"


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("ok" if ok else "MISSED")


def _note(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- cold start


def _timing(module: Any, name: str, timings: dict[str, float], key: str) -> None:
    """Time every call of ``module.name`` into ``timings[key]`` (the cold-start child's breakdown of what PySpark does inside one call)."""
    original = getattr(module, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            timings[key] = timings.get(key, 0.0) + time.perf_counter() - start

    setattr(module, name, timed)


def cold_start_child(
    launched_at: float, events_per_second: int, keys: int, window: str, timeout: float, *, connector: bool = True, archive: bool = True,
) -> int:
    """Run in a fresh process: session, registry, generator query, wait for the first result row, print timings: the imports, the JVM's
    launch (PySpark's gateway), the rest of the session, the query's start (analysis, planning, its thread), its first batch and first
    row. Without ``connector`` the session leaves out Spark's Kafka connector jars, without ``archive`` the class archive
    (:mod:`streaming.engine.runtime.archive`), to measure what each costs or saves."""
    import pyspark.core.context

    from streaming.engine.query.config import GeneratorSource, QueryConfig
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime import session
    from streaming.engine.runtime.session import get_session

    imported = time.time()
    timings: dict[str, float] = {}
    _timing(pyspark.core.context, "launch_gateway", timings, "jvm_launch_s")
    if not connector:
        session.connector_jars = list  # type: ignore[assignment]
    made = session.driver_archive(os.environ)
    mapped = str(made) if archive and made.is_file() else None
    if not archive:
        session.archive_options = lambda path: []
    before = time.perf_counter()
    spark = get_session()
    getorcreate_s = time.perf_counter() - before
    registry = QueryRegistry(spark)
    try:
        before = time.perf_counter()
        run = registry.start(QueryConfig(GeneratorSource(events_per_second=events_per_second, keys=keys), window=window), "bench_cold_start")
        started = time.perf_counter()
        first_batch = math.nan
        deadline = time.monotonic() + timeout
        while len(run.table) == 0:
            if not run.query.isActive:
                raise RuntimeError(f"cold-start query ended before its first row: {run.error}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"no result row after {timeout} s")
            if math.isnan(first_batch) and len(run.log):
                first_batch = time.perf_counter()
            time.sleep(0.01)
        first_data, done = time.time(), time.perf_counter()
        first_batch = done if math.isnan(first_batch) else first_batch
        result = {
            "cold_start_s": first_data - launched_at,
            "getorcreate_s": getorcreate_s,
            "import_s": imported - launched_at,
            "jvm_launch_s": timings.get("jvm_launch_s", math.nan),
            "session_rest_s": getorcreate_s - timings.get("jvm_launch_s", math.nan),
            "query_start_s": started - before,
            "first_batch_s": first_batch - started,
            "first_row_s": done - first_batch,
            "connector": connector,
            "archive": mapped,
            "rows": len(run.table),
            "batches": run.table.batches_applied,
        }
        print(CHILD_MARKER + json.dumps(result), flush=True)
    finally:
        registry.stop_all()
        for query in spark.streams.active:
            query.stop()
        spark.stop()
    return 0


def measure_cold_start(
    python: str, cwd: Path, events_per_second: int, keys: int, window: str, timeout: float, *, connector: bool = True, archive: bool = True,
) -> dict[str, Any]:
    """Launch the cold-start child, return what it printed plus the parent-observed seconds to its line."""
    with tempfile.TemporaryFile(mode="w+") as errors:
        launched_at = time.time()
        child = subprocess.Popen(
            [
                python, "-m", "benchmarks.bench", "--cold-start-child",
                "--launched-at", repr(launched_at),
                "--events-per-second", str(events_per_second),
                "--keys", str(keys),
                "--window", window,
                "--child-timeout", str(timeout),
                *([] if connector else ["--no-connector"]),
                *([] if archive else ["--no-archive"]),
            ],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
        result = None
        seen_at = math.nan
        try:
            assert child.stdout is not None
            for line in child.stdout:
                result = parse_child_result(line)
                if result is not None:
                    seen_at = time.time() - launched_at
                    break
            child.stdout.read()
            child.wait(timeout=timeout)
        except BaseException:
            child.kill()
            child.wait()
            raise
        if result is None:
            errors.seek(0)
            tail = errors.read()[-3000:]
            raise RuntimeError(f"cold-start child exited with {child.returncode} and no result; its stderr ends:\n{tail}")
        result["parent_observed_s"] = seen_at
        return result


# ---------------------------------------------------------------- memory


def rss_mib(pid: int, jvm_pid: int | None = None) -> tuple[float, float]:
    """``(jvm, python)`` resident set sizes in MiB: the ``java`` descendants of process ``pid`` (NaN if none), or process ``jvm_pid``, and ``pid`` itself."""
    import psutil

    me = psutil.Process(pid)
    jvm = 0
    found = False
    for child in me.children(recursive=True) if jvm_pid is None else [psutil.Process(jvm_pid)]:
        try:
            if child.name() == "java":
                jvm += child.memory_info().rss
                found = True
        except psutil.NoSuchProcess:
            continue
    return (jvm / MIB if found else math.nan, me.memory_info().rss / MIB)


def heap_after_gc_mib(spark) -> float:
    """MiB of the driver's Java heap in use right after its latest garbage collection, NaN when unknown.

    RSS follows the heap's size, which G1 grows towards its cap and shrinks
    at its own pace (a sawtooth); the heap left after a collection is the
    live data, which a leak makes grow and a plateau keeps level.
    """
    try:
        latest, used = -1, math.nan
        for collector in spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans():
            info = collector.getLastGcInfo()
            if info is not None and info.getEndTime() > latest:
                latest = info.getEndTime()
                used = sum(usage.getUsed() for usage in info.getMemoryUsageAfterGc().values()) / MIB
        return used
    except Exception:  # noqa: BLE001 - a remote or non-HotSpot JVM: the measure is optional
        return math.nan


def live_heap_mib(spark) -> float:
    """The Java heap in use right after a full collection (``System.gc()``): the data the driver keeps. NaN when the JVM is not this session's (Connect)."""
    try:
        jvm = spark._jvm
        jvm.java.lang.System.gc()
        return jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / MIB
    except Exception:  # noqa: BLE001 - a remote JVM: the measure is optional
        return math.nan


# ---------------------------------------------------------------- poll cost and memory over time


@dataclass(frozen=True)
class Poll:
    """One refresh: building the frames, the figures, and serializing them as the live charts do (ms)."""

    frames_ms: float
    figures_ms: float
    json_ms: float
    cpu_ms: float = math.nan

    @property
    def poll_ms(self) -> float:
        """The poll cost as the report defines it: frames and figures, not serialization."""
        return self.frames_ms + self.figures_ms


def poll_once(run, serialize: bool) -> Poll:
    """One refresh of the live view's data for ``run``: the frames and the live page's figures.

    With ``serialize``, each figure then goes through what a live chart sends of
    it (:func:`dashboard.live_chart.sent`), timed apart as ``json_ms``. Streamlit
    is imported first, so the figures carry the ``streamlit`` default template,
    as on the page.
    """
    import pandas as pd
    import streamlit.elements.plotly_chart  # noqa: F401 - sets plotly's default template as the app has it

    from streaming.charts.live import live_figures

    started, cpu = time.perf_counter(), time.thread_time()
    progress, breakdown = run.log.frames()
    table = run.table.frame()
    framed = time.perf_counter()
    figures = live_figures(
        table, progress, breakdown, output_mode=run.config.output_mode, slide=pd.Timedelta(milliseconds=run.config.slide_ms), drawn=run.log.drawn
    ).values()
    built, cpu = time.perf_counter(), time.thread_time() - cpu
    if serialize:
        from dashboard.live_chart import sent

        for figure in figures:
            sent(figure)
    done = time.perf_counter()
    return Poll((framed - started) * 1000, (built - framed) * 1000, (done - built) * 1000, cpu * 1000)


@dataclass
class Mark:
    """Poll timings and sizes at one moment of the live query."""

    label: str
    at_s: float
    polls: list[Poll] = field(default_factory=list)
    jvm_rss_mib: float = math.nan
    python_rss_mib: float = math.nan
    live_heap_mib: float = math.nan
    """Java heap in use after a full collection, taken after the polls."""
    table_rows: int = 0
    evicted_rows: int = 0
    log_batches: int = 0
    input_rows: int = 0

    @property
    def polls_ms(self) -> list[float]:
        return [poll.poll_ms for poll in self.polls]

    @property
    def p50(self) -> float:
        return percentile(self.polls_ms, 50)

    @property
    def p95(self) -> float:
        return percentile(self.polls_ms, 95)

    def part_p95(self, part: str) -> float:
        """p95 of one part of the polls: ``frames_ms``, ``figures_ms``, ``json_ms`` or ``cpu_ms``."""
        return percentile([getattr(poll, part) for poll in self.polls], 95)

    def part_p50(self, part: str) -> float:
        return percentile([getattr(poll, part) for poll in self.polls], 50)

    @property
    def tick_p95(self) -> float:
        """p95 of frames + figures + serialization: closer to the page's whole tick."""
        return percentile([poll.poll_ms + poll.json_ms for poll in self.polls], 95)


@dataclass(frozen=True)
class RssSample:
    """Resident set sizes at one minute of the live run."""

    minute: float
    jvm_mib: float
    python_mib: float
    heap_after_gc_mib: float = math.nan
    sink_rows: float = math.nan
    """Rows Spark's memory sink holds (runs on Spark Connect); NaN when the run folds batches in this process."""


def rss_trend(samples: Sequence[RssSample], last_minutes: float = 30.0) -> dict[str, float]:
    """Least-squares slope of the RSS over the last ``last_minutes`` of ``samples`` (all of them when the run is shorter).

    Returns, for ``jvm``, ``python`` and ``heap_after_gc``: the slope in MiB per minute and the
    change it makes over that span relative to the span's mean RSS (``0.05``
    is 5 %); NaN with fewer than three samples.
    """
    names = ("jvm", "python", "heap_after_gc")
    if not samples:
        return {"span_minutes": math.nan} | {f"{name}_{part}": math.nan for name in names for part in ("mib_per_min", "change")}
    end = samples[-1].minute
    window = [sample for sample in samples if sample.minute >= end - last_minutes]
    span = window[-1].minute - window[0].minute if window else 0.0
    trend: dict[str, float] = {"span_minutes": span}
    for name in names:
        values = [(sample.minute, getattr(sample, f"{name}_mib")) for sample in window if not math.isnan(getattr(sample, f"{name}_mib"))]
        if len(values) < 3 or span <= 0:
            trend[f"{name}_mib_per_min"] = trend[f"{name}_change"] = math.nan
            continue
        xs, ys = [x for x, _ in values], [y for _, y in values]
        mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in values) / sum((x - mean_x) ** 2 for x in xs)
        trend[f"{name}_mib_per_min"] = slope
        trend[f"{name}_change"] = slope * span / mean_y
    return trend


def _wait_running(run, until: float, note_every: float, started: float, samples: list[RssSample], pid: int, spark=None, jvm_pid: int | None = None) -> None:
    """Wait for ``until`` while ``run`` is active; take an RSS sample at every whole minute since ``started``."""
    next_note = time.monotonic() + note_every
    while time.monotonic() < until:
        if not run.query.isActive:
            raise RuntimeError(f"{run.name} stopped: {run.error}")
        next_sample = started + 60.0 * (len(samples) + 1)
        time.sleep(min(1.0, max(0.0, min(until, next_sample) - time.monotonic())))
        if time.monotonic() >= next_sample:
            jvm, python = rss_mib(pid, jvm_pid)
            heap = math.nan if spark is None else heap_after_gc_mib(spark)
            samples.append(RssSample((time.monotonic() - started) / 60.0, jvm, python, heap, getattr(run.sink, "sink_rows", math.nan)))
        if time.monotonic() >= next_note:
            _note(f"{run.name}: {len(run.log)} batches, {len(run.table)} result rows, {until - time.monotonic():.0f} s to the next mark")
            next_note += note_every


def measure_live(
    registry,
    config,
    marks_s: Sequence[tuple[str, float]],
    *,
    polls: int,
    poll_interval: float,
    warmup_polls: int,
    pid: int,
    samples: list[RssSample],
    jvm_pid: int | None = None,
) -> list[Mark]:
    """Run ``config`` through ``registry`` and, at each ``(label, seconds)`` mark, time ``polls`` refreshes and read RSS.

    ``samples`` receives the RSS of every whole minute of the run.
    """
    name = "bench_live"
    run = registry.start(config, name, keep=registry.kept_root is not None)  # as the Live query page starts it
    started = time.monotonic()
    results = []
    try:
        for label, at_s in marks_s:
            _wait_running(run, started + at_s, note_every=60.0, started=started, samples=samples, pid=pid, spark=registry.spark, jvm_pid=jvm_pid)
            mark = Mark(label, time.monotonic() - started)
            for _ in range(warmup_polls):
                poll_once(run, serialize=True)
            for _ in range(polls):
                mark.polls.append(poll_once(run, serialize=True))
                time.sleep(poll_interval)
            mark.jvm_rss_mib, mark.python_rss_mib = rss_mib(pid, jvm_pid)
            mark.live_heap_mib = live_heap_mib(registry.spark)
            mark.table_rows = len(run.table)
            mark.evicted_rows = run.table.evicted_rows
            summaries = run.log.summaries()
            mark.log_batches = len(summaries)
            mark.input_rows = sum(s["num_input_rows"] for s in summaries)
            _note(f"{label} mark at {mark.at_s:.0f} s: poll p50 {mark.p50:.1f} ms, p95 {mark.p95:.1f} ms, "
                  f"{mark.table_rows} rows, {mark.log_batches} batches")
            results.append(mark)
    finally:
        registry.delete(name)
    return results


# ---------------------------------------------------------------- overhead


def _collect_progress(query, seconds: float, poll_s: float) -> list[dict[str, Any]]:
    """Every progress of ``query`` over ``seconds`` (read from ``recentProgress`` every ``poll_s``), by batch id."""
    from streaming.engine.output.progress import progress_dict

    seen: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + seconds
    while True:
        for progress in query.recentProgress:
            seen[int(progress["batchId"])] = progress_dict(progress)
        if time.monotonic() >= deadline:
            break
        if not query.isActive:
            raise RuntimeError(f"{query.name} stopped: {query.exception()}")
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
    return [seen[batch] for batch in sorted(seen)]


def run_dashboard(registry, config, name: str, seconds: float, warmup_s: float, poll_s: float) -> Throughput:
    """The dashboard's query: ``registry.start`` as the Live query page calls it (its sink, listener registered, kept on disk where it can be)."""
    run = registry.start(config, name, keep=registry.kept_root is not None)
    started = time.time()
    try:
        progresses = _collect_progress(run.query, warmup_s + seconds, poll_s)
        logged = len(run.log)
    finally:
        registry.delete(name)
    sample = throughput(progresses, started + warmup_s)
    _note(f"{name}: {sample.batches} batches counted, {sample.rows_per_s:,.0f} rows/s, {logged} progress events logged")
    return sample


def run_noop(spark, config, name: str, seconds: float, warmup_s: float, poll_s: float, root: Path | None) -> Throughput:
    """The same :func:`build_frame` frame written to the ``noop`` sink."""
    from streaming.engine.run.query import build_frame

    workdir = Path(tempfile.mkdtemp(prefix=f"streaming-lab-{name}-", dir=root))
    frame, feeder = build_frame(spark, config, workdir / "staging", int(time.time() * 1000))
    query = None
    try:
        if feeder is not None:
            feeder.start()
        query = (
            frame.writeStream.queryName(name)
            .outputMode(config.output_mode)
            .format("noop")
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .start()
        )
        started = time.time()
        progresses = _collect_progress(query, warmup_s + seconds, poll_s)
    finally:
        if query is not None:
            query.stop()
        if feeder is not None:
            feeder.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    sample = throughput(progresses, started + warmup_s)
    _note(f"{name}: {sample.batches} batches counted, {sample.rows_per_s:,.0f} rows/s")
    return sample


def measure_overhead(
    spark, registry, config, *, rounds: int, seconds: float, warmup_s: float, poll_s: float, root: Path | None, warmup_rounds: int = 0
) -> tuple[Throughput, Throughput, list[tuple[str, Throughput]]]:
    """``(dashboard, noop, runs)``: totals over ``rounds`` pairs run in the order noop, dashboard, dashboard, noop, ..., and each counted run in order.

    ``warmup_rounds`` pairs run first and are not counted: on a JVM a minute
    old, the first big batches pay for compiling code and growing the heap,
    whichever query runs them. The same query run twice in a row on this
    machine differs by up to 10 %, so several short pairs average that out
    better than a few long ones.
    """
    totals = {"dashboard": Throughput(), "noop": Throughput()}
    runs: list[tuple[str, Throughput]] = []
    order = [("noop", "dashboard")] * warmup_rounds
    order += [("noop", "dashboard") if index % 2 == 0 else ("dashboard", "noop") for index in range(rounds)]
    for index, kind in enumerate(kind for pair in order for kind in pair):
        counted = index >= 2 * warmup_rounds
        name = f"bench_{kind}_{index}" if counted else f"bench_{kind}_warmup_{index}"
        if kind == "dashboard":
            sample = run_dashboard(registry, config, name, seconds, warmup_s, poll_s)
        else:
            spark.streams.removeListener(registry.listener)
            try:
                sample = run_noop(spark, config, name, seconds, warmup_s, poll_s, root)
            finally:
                spark.streams.addListener(registry.listener)
        if counted:
            totals[kind] += sample
            runs.append((kind, sample))
    return totals["dashboard"], totals["noop"], runs


# ---------------------------------------------------------------- report


def measure_first_chart(up_for: float, timeout: float, starts: int = 5) -> dict[str, Any] | None:
    """Serve the app, open the Live query page, and time Start to first chart at ``up_for`` seconds of uptime, then ``starts - 1`` more
    Starts on that server, each in a page opened afresh once the last query stopped; ``None`` without Chromium.

    ``first_chart_s`` is the median of the Starts: one Start on 2 cores ranged 0.8-2.1 s, and the goal is the time a user usually waits.
    """
    from .browser import CHROMIUM, chromium, first_chart_after_start, served_app

    if not CHROMIUM.exists():
        return None
    with tempfile.TemporaryDirectory(prefix="streaming-lab-bench-") as logs, served_app(Path(logs)) as app, chromium() as browser:
        first = first_chart_after_start(app, browser, up_for=up_for, timeout=timeout)
        seconds = [first["first_chart_s"]] + [first_chart_after_start(app, browser, up_for=0, timeout=timeout)["first_chart_s"] for _ in range(starts - 1)]
    return {**first, "first_chart_s": statistics.median(seconds), "starts_s": seconds}


COLD_START_GOAL_S = 8.0
FIRST_CHART_GOAL_S = 1.0
"""The first chart after Start on a warm server, in Chromium: the median of :func:`measure_first_chart`'s Starts."""
SPARK_READY_GOAL_S = 10.0
"""Spark ready (Start enabled) after the served app's process starts."""


def cold_start_lines(cold: dict[str, Any]) -> list[str]:
    """The cold start and where its seconds went, beside its goal; with the runs without the class archive and without the Kafka connector's
    jars when measured."""
    lines = [
        f"cold start: {cold['cold_start_s']:.2f} s launch -> first result row (goal <= {COLD_START_GOAL_S:.0f} s: "
        f"{_verdict(cold['cold_start_s'] <= COLD_START_GOAL_S)}; parent saw the line at {cold['parent_observed_s']:.2f} s)",
        f"  imports {cold['import_s']:.2f} s | JVM launch {cold['jvm_launch_s']:.2f} s | rest of the session {cold['session_rest_s']:.2f} s | "
        f"query start (analysis, planning) {cold['query_start_s']:.2f} s | first batch {cold['first_batch_s']:.2f} s | first row {cold['first_row_s']:.2f} s",
    ]
    lines.append(
        f"  class archive: {cold['archive']}" if cold.get("archive") else "  class archive: none (make archive, or python -m streaming archive, makes it)"
    )
    unarchived = cold.get("without_archive")
    if unarchived is not None:
        lines.append(
            f"  without the class archive: {unarchived['cold_start_s']:.2f} s (JVM launch {unarchived['jvm_launch_s']:.2f} s, rest of the session "
            f"{unarchived['session_rest_s']:.2f} s, query start {unarchived['query_start_s']:.2f} s, first batch {unarchived['first_batch_s']:.2f} s): "
            f"the archive saves {unarchived['cold_start_s'] - cold['cold_start_s']:.2f} s"
        )
    bare = cold.get("without_connector")
    if bare is not None:
        compared, label = (cold, "") if unarchived is None else (unarchived, " and the archive")
        lines.append(
            f"  without the Kafka connector's jars{label}: {bare['cold_start_s']:.2f} s (JVM launch {bare['jvm_launch_s']:.2f} s, rest of the "
            f"session {bare['session_rest_s']:.2f} s, query start {bare['query_start_s']:.2f} s): the jars cost "
            f"{compared['cold_start_s'] - bare['cold_start_s']:+.2f} s"
        )
    return lines


def report(args, cold: dict[str, Any] | None, first: dict[str, Any] | None, session_s: float, live: list[Mark], samples: list[RssSample],
           figures_note: str, dashboard: Throughput, noop: Throughput, elapsed_s: float, overhead_runs: Sequence[tuple[str, Throughput]] = ()) -> str:
    short, long = live[0], live[-1]
    overhead = ratio(dashboard.wall_rows_per_s, noop.wall_rows_per_s)
    poll_ratio = ratio(long.tick_p95, short.tick_p95)
    jvm_ratio = ratio(long.jvm_rss_mib, short.jvm_rss_mib)
    python_ratio = ratio(long.python_rss_mib, short.python_rss_mib)
    lines = ["", "Streaming Lab benchmark", "======================="]
    lines.append(f"machine: {os.cpu_count()} cores; total run {elapsed_s:.0f} s; Spark: " + (f"Connect server {os.environ['SPARK_REMOTE']}" if args.connect else "local session"))
    if cold is None:
        lines.append("cold start: skipped (--skip-cold-start)")
    else:
        lines.extend(cold_start_lines(cold))
    if first is None:
        lines.append("first chart after Start: skipped (--skip-first-chart, or no /usr/bin/chromium)")
    else:
        ready = None if first["session_ready_s"] is None else first["session_ready_s"] + first["healthy_after_launch_s"]
        lines.append(
            f"first chart after Start (real Chromium, default settings): {_starts(first)}, the first at {first['server_up_s']:.0f} s of uptime "
            f"(goal <= {FIRST_CHART_GOAL_S:.0f} s: {_verdict(first['first_chart_s'] <= FIRST_CHART_GOAL_S)}); Spark ready (Start enabled) "
            f"{ready or math.nan:.1f} s after the server's launch, {first['session_ready_s'] or math.nan:.1f} s after it answered "
            f"(goal <= {SPARK_READY_GOAL_S:.0f} s: {_verdict(None if ready is None else ready <= SPARK_READY_GOAL_S)})"
        )
    lines.append(f"this process: get_session {session_s:.2f} s")
    lines.append(
        f"overhead (wall-clock rows/s, what a user waits for): dashboard {dashboard.wall_rows_per_s:,.0f} rows/s ({dashboard.batches} batches) "
        f"vs noop {noop.wall_rows_per_s:,.0f} rows/s ({noop.batches} batches) -> ratio {_format(overhead)} "
        f"(goal >= 0.95: {_verdict(None if math.isnan(overhead) else overhead >= 0.95)})"
    )
    lines.append(
        f"          rows/s of Spark's triggerExecution (leaves out a Connect client's fold): dashboard {dashboard.rows_per_s:,.0f}, "
        f"noop {noop.rows_per_s:,.0f} (ratio {_format(ratio(dashboard.rows_per_s, noop.rows_per_s))}); "
        f"{args.rows_per_batch:,} rows/batch, {args.overhead_rounds} round(s) of {args.overhead_seconds:.0f} s after {args.overhead_warmup_seconds:.0f} s warm-up, "
        f"after {args.overhead_warmup_rounds} uncounted round(s)"
    )
    if overhead_runs:
        lines.append("          each counted run, in order (M rows/s): " + ", ".join(f"{kind} {sample.rows_per_s / 1e6:.2f}" for kind, sample in overhead_runs))
    for kind, sample in (("dashboard", dashboard), ("noop", noop)):
        if sample.batches < MIN_BATCHES:
            lines.append(
                f"          WARNING: only {sample.batches} {kind} batches counted (want >= {MIN_BATCHES}): the ratio is noise; "
                "lengthen --overhead-seconds or lower --rows-per-batch"
            )
    lines.append(f"poll cost ({figures_note}):")
    for mark in live:
        lines.append(
            f"  {mark.label:>5} (at {mark.at_s:.0f} s): p50 {mark.p50:.1f} ms, p95 {mark.p95:.1f} ms over {len(mark.polls_ms)} polls; "
            f"{mark.table_rows} result rows, {mark.log_batches} batches ({mark.input_rows:,} input rows) logged"
        )
        lines.append(
            f"        p95 parts: frames {mark.part_p95('frames_ms'):.1f} ms, figures {mark.part_p95('figures_ms'):.1f} ms; "
            f"the live charts' conversion (to_json) {mark.part_p95('json_ms'):.1f} ms; p95 with it, what a tick costs the page, {mark.tick_p95:.1f} ms"
        )
        lines.append(
            f"        CPU time of the polling thread (frames + figures; less sensitive to a busy machine): "
            f"p50 {mark.part_p50('cpu_ms'):.1f} ms, p95 {mark.part_p95('cpu_ms'):.1f} ms"
        )
    p95_ok = None if math.isnan(long.tick_p95) else (max(short.tick_p95, long.tick_p95) <= POLL_GOAL_MS)
    lines.append(
        f"  judged with the live charts' conversion: ratio long/short p95 {_format(poll_ratio)} "
        f"(goal <= 1.5: {_verdict(None if math.isnan(poll_ratio) else poll_ratio <= 1.5)}); p95 <= {POLL_GOAL_MS} ms: {_verdict(p95_ok)}"
    )
    lines.append("memory:")
    for mark in live:
        lines.append(
            f"  {mark.label:>5}: JVM RSS {mark.jvm_rss_mib:.0f} MiB, Python RSS {mark.python_rss_mib:.0f} MiB; "
            f"result table {mark.table_rows} rows, {mark.evicted_rows} evicted; progress log {mark.log_batches} summaries"
        )
    lines.append(f"  ratio long/short: JVM {_format(jvm_ratio)}, Python {_format(python_ratio)}")
    lines.append(
        "  Java heap in use after a full collection at each mark (what the driver keeps; a leak grows it): "
        + ", ".join(f"{mark.label} {mark.live_heap_mib:.0f} MiB" for mark in live)
        + f"; ratio long/short {_format(ratio(long.live_heap_mib, short.live_heap_mib))}"
    )
    trend = rss_trend(samples)
    lines.append(
        "  every minute (JVM RSS / Java heap after the latest GC / Python RSS, MiB): "
        + ", ".join(f"{sample.jvm_mib:.0f}/{sample.heap_after_gc_mib:.0f}/{sample.python_mib:.0f}" for sample in samples)
    )
    if args.connect:
        sink = [sample.sink_rows for sample in samples]
        lines.append(
            "  Spark's memory sink (Connect: it keeps every output row, SPARK-24525), rows every minute: " + ", ".join(f"{rows:,.0f}" for rows in sink)
        )
        if len(sink) >= 2:
            from streaming.engine.output.sinks import DEFAULT_MAX_SINK_ROWS

            lines.append(f"  sink growth: {(sink[-1] - sink[0]) / max(1e-9, samples[-1].minute - samples[0].minute):,.0f} rows/min; limit {DEFAULT_MAX_SINK_ROWS:,} rows")
    jvm_flat = None if math.isnan(trend["jvm_change"]) else abs(trend["jvm_change"]) <= 0.05
    heap_flat = None if math.isnan(trend["heap_after_gc_change"]) else abs(trend["heap_after_gc_change"]) <= 0.05
    lines.append(
        f"  slope over the last {trend['span_minutes']:.0f} min: JVM {trend['jvm_mib_per_min']:+.2f} MiB/min ({trend['jvm_change']:+.1%} over the span), "
        f"Python {trend['python_mib_per_min']:+.2f} MiB/min ({trend['python_change']:+.1%}); JVM flat within 5%: {_verdict(jvm_flat)}"
    )
    lines.append(
        f"  Java heap after GC (the live data; RSS is the heap's size, a GC sawtooth): {trend['heap_after_gc_mib_per_min']:+.2f} MiB/min "
        f"({trend['heap_after_gc_change']:+.1%} over the span); flat within 5%: {_verdict(heap_flat)}"
    )
    metrics: dict[str, object] = {
        "cold_start_s": None if cold is None else cold["cold_start_s"],
        "first_chart_s": None if first is None else first["first_chart_s"],
        "getorcreate_s": None if cold is None else cold["getorcreate_s"],
        "overhead_ratio": overhead,
        "dashboard_rows_per_s": dashboard.rows_per_s,
        "noop_rows_per_s": noop.rows_per_s,
        "poll_p50_ms_1min": short.p50,
        "poll_p95_ms_1min": short.p95,
        "poll_p50_ms_long": long.p50,
        "poll_p95_ms_long": long.p95,
        "poll_ratio": poll_ratio,
        "jvm_rss_mib_1min": short.jvm_rss_mib,
        "jvm_rss_mib_long": long.jvm_rss_mib,
        "python_rss_mib_1min": short.python_rss_mib,
        "python_rss_mib_long": long.python_rss_mib,
        "jvm_rss_ratio": jvm_ratio,
        "python_rss_ratio": python_ratio,
        "jvm_rss_change_last_30min": trend["jvm_change"],
        "python_rss_change_last_30min": trend["python_change"],
        "heap_after_gc_change_last_30min": trend["heap_after_gc_change"],
        "live_heap_mib_1min": short.live_heap_mib,
        "live_heap_mib_long": long.live_heap_mib,
        "poll_cpu_p50_ms_1min": short.part_p50("cpu_ms"),
        "poll_cpu_p95_ms_1min": short.part_p95("cpu_ms"),
        "poll_cpu_p50_ms_long": long.part_p50("cpu_ms"),
        "poll_cpu_p95_ms_long": long.part_p95("cpu_ms"),
        "poll_with_json_p95_ms_1min": short.tick_p95,
        "poll_with_json_p95_ms_long": long.tick_p95,
        "table_rows_long": long.table_rows,
        "evicted_rows_long": long.evicted_rows,
        "dashboard_batches": dashboard.batches,
        "noop_batches": noop.batches,
        "long_minutes": args.minutes,
        "connect": args.connect,
        "sink_rows_long": samples[-1].sink_rows if samples else math.nan,
        "bench_seconds": elapsed_s,
    }
    lines += ["", final_block(metrics)]
    return "\n".join(lines)


# ---------------------------------------------------------------- entry point


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="python -m benchmarks.bench", description="Measure the dashboard's cost on this machine.")
    top.add_argument("--minutes", type=float, default=3.0, help="length of the long live run in minutes (default 3)")
    top.add_argument("--connect", action="store_true", help="run everything on a local Spark Connect server started for the run (make connect's)")
    top.add_argument("--skip-cold-start", action="store_true", help="do not measure the cold start")
    top.add_argument("--cold-start-only", action="store_true", help="measure the cold start, with and without the class archive and the Kafka connector's jars, and stop")
    top.add_argument("--skip-first-chart", action="store_true", help="do not measure the first chart after Start in Chromium")
    top.add_argument("--server-up-seconds", type=float, default=45.0, help="uptime of the served app when Start is pressed (default 45)")
    top.add_argument("--events-per-second", type=int, default=2000, help="generator rate of the live query (default 2000)")
    top.add_argument("--keys", type=int, default=8, help="keys of the live query (default 8)")
    top.add_argument("--window", default="10 seconds", help="window of the live query (default 10 seconds)")
    top.add_argument("--polls", type=int, default=50, help="timed polls at each mark (default 50)")
    top.add_argument("--poll-interval", type=float, default=0.2, help="seconds between polls (default 0.2)")
    top.add_argument("--rows-per-batch", type=int, default=4_000_000, help="rate-micro-batch rows per batch for the overhead runs (default 4,000,000)")
    top.add_argument("--overhead-keys", type=int, default=4, help="keys of the overhead query (default 4)")
    top.add_argument("--overhead-seconds", type=float, default=20.0, help="measured seconds of each overhead run (default 20)")
    top.add_argument("--overhead-warmup-seconds", type=float, default=10.0, help="seconds of each overhead run not counted (default 10)")
    top.add_argument("--overhead-rounds", type=int, default=4, help="noop/dashboard pairs, alternating order (default 4)")
    top.add_argument("--overhead-warmup-rounds", type=int, default=1, help="noop/dashboard pairs run first and not counted (default 1)")
    hidden = argparse.SUPPRESS
    top.add_argument("--short-seconds", type=float, default=60.0, help=hidden)
    top.add_argument("--cold-start-child", action="store_true", help=hidden)
    top.add_argument("--no-connector", action="store_true", help=hidden)
    top.add_argument("--no-archive", action="store_true", help=hidden)
    top.add_argument("--launched-at", type=float, default=None, help=hidden)
    top.add_argument("--child-timeout", type=float, default=300.0, help=hidden)
    return top


def _check(args, top: argparse.ArgumentParser) -> None:
    if args.cold_start_child:
        if args.launched_at is None:
            top.error("--cold-start-child needs --launched-at")
        return
    if args.short_seconds <= 0 or args.minutes * 60 <= args.short_seconds:
        top.error(f"--minutes {args.minutes} must be longer than the first mark ({args.short_seconds:.0f} s)")
    for name in ("polls", "rows_per_batch", "overhead_rounds", "overhead_keys", "events_per_second", "keys"):
        if getattr(args, name) < 1:
            top.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.overhead_warmup_rounds < 0:
        top.error("--overhead-warmup-rounds must be 0 or more")
    if args.overhead_seconds <= 0 or args.overhead_warmup_seconds < 0 or args.poll_interval < 0:
        top.error("durations must be positive")


def main(argv: list[str] | None = None) -> int:
    top = parser()
    args = top.parse_args(argv)
    _check(args, top)
    if args.cold_start_child:
        return cold_start_child(args.launched_at, args.events_per_second, args.keys, args.window, args.child_timeout, connector=not args.no_connector, archive=not args.no_archive)
    if args.cold_start_only:
        print("\n".join(cold_start_lines(_cold_start(args))))
        return 0

    from streaming.engine.query.config import GeneratorSource, QueryConfig, RateMicroBatchSource

    live_config = QueryConfig(GeneratorSource(events_per_second=args.events_per_second, keys=args.keys), window=args.window, output_mode="update")
    overhead_config = QueryConfig(
        RateMicroBatchSource(rows_per_batch=args.rows_per_batch, advance="1 second", keys=args.overhead_keys),
        window="10 seconds",
        output_mode="update",
    )
    begun = time.monotonic()
    server = None
    if args.connect:
        from streaming.engine.runtime.connect import ConnectServer

        _note("Spark Connect: starting a local server; everything below runs as its client")
        server = ConnectServer().start()
        os.environ["SPARK_REMOTE"] = server.url
    try:
        return _measure(args, live_config, overhead_config, begun, server)
    finally:
        if server is not None:
            server.stop()


def _cold_start(args) -> dict[str, Any]:
    """The cold start of a fresh process, then of one without the class archive (under ``without_archive``, when there is one) and of one
    without the Kafka connector's jars (``without_connector``), which is without the archive too: a JVM of another class path refuses
    it, so the jars' cost is measured between the two runs without it."""
    measured = (args.events_per_second, args.keys, args.window, args.child_timeout)
    _note("cold start: launching a fresh process")
    cold = measure_cold_start(sys.executable, PROJECT_ROOT, *measured)
    if cold.get("archive"):
        _note(f"cold start: {cold['cold_start_s']:.2f} s; again without the class archive")
        cold["without_archive"] = measure_cold_start(sys.executable, PROJECT_ROOT, *measured, archive=False)
    _note(f"cold start: {cold['cold_start_s']:.2f} s; again without the Kafka connector's jars and the class archive")
    cold["without_connector"] = measure_cold_start(sys.executable, PROJECT_ROOT, *measured, connector=False, archive=False)
    return cold


def _measure(args, live_config, overhead_config, begun: float, server) -> int:
    cold = None if args.skip_cold_start else _cold_start(args)
    first = None
    if not args.skip_first_chart:
        _note(f"first chart: serving the app, pressing Start at {args.server_up_seconds:.0f} s of uptime")
        first = measure_first_chart(args.server_up_seconds, args.child_timeout)
        _note("first chart: " + ("skipped, no Chromium" if first is None else _starts(first)))

    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.runtime.session import freeze_heap, get_session

    before = time.perf_counter()
    spark = get_session()
    session_s = time.perf_counter() - before
    import streamlit.elements.plotly_chart  # noqa: F401 - what the app holds for its life, before its heap is frozen

    import streaming.charts.live  # noqa: F401

    freeze_heap()  # as the app's session starter does once the session is ready
    registry = None
    samples: list[RssSample] = []
    kept = Path(tempfile.mkdtemp(prefix="streaming-lab-bench-kept-"))
    try:
        registry = QueryRegistry(spark, kept_root=None if server is not None else kept / ".queries")
        figures_note = "poll = table.frame + log.frames + the live page's figures (charts.live_figures)"
        _note("overhead: noop vs dashboard")
        dashboard, noop, overhead_runs = measure_overhead(
            spark, registry, overhead_config,
            rounds=args.overhead_rounds, seconds=args.overhead_seconds, warmup_s=args.overhead_warmup_seconds, poll_s=5.0, root=None,
            warmup_rounds=args.overhead_warmup_rounds,
        )
        marks = [("1min", args.short_seconds), ("long", args.minutes * 60)]
        _note(f"live query: marks at {args.short_seconds:.0f} s and {args.minutes * 60:.0f} s")
        live = measure_live(
            registry, live_config, marks,
            polls=args.polls, poll_interval=args.poll_interval, warmup_polls=3, pid=os.getpid(), samples=samples,
            jvm_pid=None if server is None else server.pid,
        )
    finally:
        if registry is not None:
            registry.close()
        for query in spark.streams.active:
            query.stop()
        shutil.rmtree(kept, ignore_errors=True)
    print(report(args, cold, first, session_s, live, samples, figures_note, dashboard, noop, time.monotonic() - begun, overhead_runs), flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
