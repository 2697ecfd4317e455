"""``python -m benchmarks.shared``: one user's exploding SQL query on a shared server, and what another user's page feels of it.

The app is served (its own Spark, a batch budget of ``--budget`` seconds,
``STREAMING_LAB_MAX_BATCH_SECONDS``) and opened in two headless Chromium
contexts: two browsers, two owners.

idle load
    B opens the Live query page ``--loads`` times, from the address to *Start
    query* enabled: the page drawn and Spark ready. The median, in seconds.
refused before Start
    A writes the issue's exploding text (``explode(sequence(1, 1000000))``):
    the page must refuse it at its clause, so nothing runs.
cancelled within its budget
    A then writes a query the checks let through but that no batch can finish:
    each click crossed with ``range(1000000)`` and a generator of 100,000 (both
    at their bounds), counted. A starts it; seconds from Start to the page's
    reason that its batch ran past the budget.
idle first chart
    Another user presses *Start query* (default settings) ``--starts`` times,
    each in a browser of its own (a new workspace, whose page opens on the
    placeholder chart) once the last query stopped: seconds from the press to
    the first chart with a point (the first result rows). The median.
load under the exploding query
    While A's batch runs, B opens the same page ``--loads`` times again: the
    median, and its ratio to the idle load (goal: at most 1.3).
first chart under the exploding query
    Then ``--starts`` Starts again, while A's batch still runs: the median
    and its ratio to the idle first chart. A Start whose first rows came only
    once A's query had been stopped is counted, and the Starts left are not
    made; one with no rows by 30 s after A's budget counts as ``inf``.
heap
    Spark's JVM heap (``jstat``: survivor, eden and old spaces used) sampled
    every half second, through the idle loads too (so that the sampler's own
    cost weighs on both); its peak from A's Start until its query stopped,
    against the heap's limit (``jcmd``'s ``MaxHeapSize``). Goal: under the
    limit, the JVM alive.

The budget is long enough for every timed load and Start to come before the
query is stopped; the report says when one did not.

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .browser import CHROMIUM, COUNTS_HAVE_POINTS, chromium, java_under, served_app

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

REFUSED_SQL = "SELECT key, explode(sequence(1, 1000000)) AS n\nFROM STREAM(events)"
"""The issue's first exploding text: shown "Ready to run" once, it held a batch for minutes and ran the JVM out of memory."""

EXPLODING_SQL = (
    "SELECT key, count(*) AS n\nFROM STREAM(events) CROSS JOIN range(1000000) r\n"
    "LATERAL VIEW explode(sequence(1, 100000)) g AS x\nGROUP BY key"
)
"""Within each check's bound, and 50 clicks × 10⁶ × 10⁵ rows a batch: only the batch budget stops it."""

SPARK_READY_SECONDS = 300
LOAD_GOAL = 1.3
"""B's page load under A's query, against idle: the issue's goal."""

START_ENABLED = (
    "() => { const b = Array.from(document.querySelectorAll('button')).find(b => b.innerText.includes('Start query'));"
    " return !!b && !b.disabled; }"
)


def _note(message: str) -> None:
    print(f"[shared bench] {message}", file=sys.stderr, flush=True)


def load_seconds(browser: BrowserContext, url: str, timeout: float = 120.0) -> float:
    """Seconds from opening the Live query page in a new tab of ``browser`` to *Start query* enabled."""
    page = browser.new_page()
    try:
        began = time.perf_counter()
        page.goto(f"{url}/Live_query", wait_until="domcontentloaded")
        start = page.get_by_role("button", name="Start query")
        start.wait_for(timeout=timeout * 1000)
        page.wait_for_function(START_ENABLED, polling=20, timeout=timeout * 1000)
        return time.perf_counter() - began
    finally:
        page.close()


def first_chart_seconds(browser: Browser, url: str, timeout: float = 600.0) -> float:
    """Seconds from pressing *Start query* (default settings) on a Live query page, in a browser context of its own, to the first
    chart with a point; the query is stopped from the page after. ``math.inf`` when no point came within ``timeout`` seconds.

    A context of its own is a new workspace, whose page opens on the placeholder chart: a page of a workspace that ran a query
    opens on that query's chart, points and all. Start is pressed once the placeholder is drawn (Plotly loaded, as on a user's
    page) and Spark is ready, so only the query's start and its first batch are timed. ``timeout`` is long: under another user's
    query the first rows may wait for that query's tasks to end."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    context = browser.new_context(viewport={"width": 1600, "height": 1400})
    try:
        page = context.new_page()
        page.goto(f"{url}/Live_query", wait_until="domcontentloaded")
        start = page.get_by_role("button", name="Start query")
        start.wait_for(timeout=timeout * 1000)
        page.locator(".js-plotly-plot").first.wait_for(timeout=timeout * 1000)
        page.wait_for_function(START_ENABLED, polling=20, timeout=timeout * 1000)
        began = time.perf_counter()
        start.click()
        try:
            page.wait_for_function(COUNTS_HAVE_POINTS, polling=50, timeout=timeout * 1000)
        except PlaywrightTimeout:
            return math.inf
        seconds = time.perf_counter() - began
        page.get_by_role("button", name="Stop query").click(timeout=timeout * 1000)
        page.get_by_text("stopped", exact=True).first.wait_for(timeout=timeout * 1000)
        return seconds
    finally:
        context.close()


def heap_used_bytes(pid: int) -> int | None:
    """Bytes of the JVM's heap in use (survivor, eden and old spaces), by ``jstat -gc``; ``None`` when the JVM is gone."""
    try:
        out = subprocess.run(["jstat", "-gc", str(pid)], capture_output=True, text=True, timeout=10, check=True).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return None
    columns = dict(zip(out[0].split(), out[1].split(), strict=False))
    return int(sum(float(columns[name]) for name in ("S0U", "S1U", "EU", "OU")) * 1024)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def heap_limit_bytes(pid: int) -> int:
    flags = subprocess.run(["jcmd", str(pid), "VM.flags"], capture_output=True, text=True, timeout=30, check=True).stdout
    found = re.search(r"-XX:MaxHeapSize=(\d+)", flags)
    if found is None:
        raise RuntimeError(f"no MaxHeapSize in jcmd's VM.flags of {pid}: {flags[:200]}")
    return int(found[1])


def _sql_page(browser: BrowserContext, url: str, timeout: float) -> Page:
    page = browser.new_page()
    page.goto(f"{url}/Live_query", wait_until="domcontentloaded")
    page.get_by_text("Spark is ready").wait_for(timeout=timeout * 1000)
    page.locator('[data-testid="stSidebar"] button').filter(has_text=re.compile(r"^\s*SQL\s*$")).first.click()
    page.get_by_role("textbox", name="SQL").wait_for(timeout=timeout * 1000)
    return page


def _write(page: Page, sql: str) -> None:
    box = page.get_by_role("textbox", name="SQL")
    box.fill(sql)
    box.press("Control+Enter")


def run(loads: int, starts: int, budget: int, timeout: float = 600.0) -> dict[str, float]:
    """The figures of the module docstring; flags as 0.0 or 1.0."""
    report: dict[str, float] = {}
    env = {"STREAMING_LAB_MAX_BATCH_SECONDS": str(budget)}
    with tempfile.TemporaryDirectory(prefix="streaming-lab-shared-bench-") as logs, served_app(Path(logs), start_timeout=SPARK_READY_SECONDS, env=env) as app, chromium() as browser:
        a, b = (browser.new_context(viewport={"width": 1600, "height": 1400}) for _ in range(2))
        a_page = _sql_page(a, app.url, SPARK_READY_SECONDS)  # Spark ready from here on
        java = java_under(app.process.pid)
        limit = heap_limit_bytes(java)
        for _ in range(2):  # warm: B's first pages pay for its session's first run of each module
            load_seconds(b, app.url)
        peak, stopped = [0], threading.Event()

        def sample() -> None:  # idle and under the query alike, so that its own cost weighs on both
            while not stopped.is_set():
                used = heap_used_bytes(java)
                if used is not None:
                    peak[0] = max(peak[0], used)
                stopped.wait(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            idle = [load_seconds(b, app.url) for _ in range(loads)]
            report["idle_load_s"] = statistics.median(idle)
            _note(f"idle loads: {', '.join(f'{s:.2f}' for s in idle)} s")
            idle_charts = [first_chart_seconds(browser, app.url, timeout) for _ in range(starts)]
            report["idle_chart_s"] = statistics.median(idle_charts)
            _note(f"idle first charts: {', '.join(f'{s:.2f}' for s in idle_charts)} s")

            _write(a_page, REFUSED_SQL)
            a_page.get_by_text(re.compile(r"refused beyond 100,000 elements")).first.wait_for(timeout=timeout * 1000)
            report["refused_before_start"] = float(a_page.get_by_role("button", name="Start query").is_disabled())

            _write(a_page, EXPLODING_SQL)
            a_page.get_by_text("Ready to run.").first.wait_for(timeout=timeout * 1000)
            a_page.get_by_role("textbox", name="Query name").fill("exploding")
            a_page.get_by_role("textbox", name="Query name").press("Enter")
            peak[0] = 0  # the peak under the query, not before it
            a_page.get_by_role("button", name="Start query").click()
            started = time.perf_counter()
            a_page.get_by_role("button", name="Stop query").wait_for(timeout=timeout * 1000)  # its first batch under way
            under = [load_seconds(b, app.url) for _ in range(loads)]
            stop_told = a_page.get_by_text(re.compile(r"ran longer than \d+ s")).first
            report["loads_within_budget"] = float(not stop_told.is_visible())  # else some loads came after the query was stopped
            charts: list[float] = []
            while len(charts) < starts and not stop_told.is_visible():
                # no longer than until A's query is stopped (and a little): a first chart waiting for it would hold the poll of its stop
                charts.append(first_chart_seconds(browser, app.url, max(30.0, budget + 30 - (time.perf_counter() - started))))
                _note(f"first chart under the exploding query: {charts[-1]:.2f} s")
            report["charts_after_stop"] = float(stop_told.is_visible())  # the last Start ended once A's query was stopped: it waited for it
            stop_told.wait_for(timeout=timeout * 1000)  # polled: the time is exact when the loads ended first
            report["cancelled_after_s"] = time.perf_counter() - started
        finally:
            stopped.set()
            sampler.join()
        _note(f"loads under the exploding query: {', '.join(f'{s:.2f}' for s in under)} s")
        report["under_load_s"] = statistics.median(under)
        report["load_ratio"] = report["under_load_s"] / report["idle_load_s"]
        report["charts_made"] = float(len(charts))
        report["under_chart_s"] = statistics.median(charts) if charts else math.nan
        report["chart_ratio"] = report["under_chart_s"] / report["idle_chart_s"]
        report["heap_peak_mb"] = peak[0] / 2**20
        report["heap_limit_mb"] = limit / 2**20
        report["jvm_alive"] = float(_alive(java))
        report["exceptions"] = float(a_page.locator(".stException").count())
        a_page.close()
        a.close()
        b.close()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--loads", type=int, default=5, help="page loads timed idle and again under the exploding query")
    parser.add_argument("--starts", type=int, default=5, help="B's Starts timed to the first chart, idle and again under the exploding query")
    parser.add_argument("--budget", type=int, default=180, help="the served app's batch budget in seconds (STREAMING_LAB_MAX_BATCH_SECONDS): "
                        "long enough for every timed load and Start to come before the query is stopped")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"shared server: skipped, no Chromium at {CHROMIUM}")
        return 0
    got = run(args.loads, args.starts, args.budget)
    ok = {True: "ok", False: "missed"}
    print("shared server: one user's exploding SQL query, another user's page")
    print(f"  the issue's explode(sequence(1, 1000000)) refused before Start: {ok[bool(got['refused_before_start'])]}")
    print(f"  a query no batch finishes, stopped after {got['cancelled_after_s']:.1f} s (budget {args.budget} s): "
          f"{ok[got['cancelled_after_s'] <= args.budget * 1.5 + 10]}")
    print(f"  the other page's load, median of {args.loads}: idle {got['idle_load_s']:.2f} s, under it {got['under_load_s']:.2f} s, "
          f"ratio {got['load_ratio']:.2f} (goal ≤ {LOAD_GOAL}: {ok[got['load_ratio'] <= LOAD_GOAL]})"
          + ("" if got["loads_within_budget"] else "; some loads came after the query was stopped: raise --budget"))
    print(f"  the other user's first chart after Start, median: idle {got['idle_chart_s']:.2f} s of {args.starts}, under it "
          f"{got['under_chart_s']:.2f} s of {got['charts_made']:.0f}, ratio {got['chart_ratio']:.2f}"
          + ("; the last Start ended only once the query was stopped (it waited for it)" if got["charts_after_stop"] else ""))
    print(f"  JVM heap peak {got['heap_peak_mb']:.0f} MB of {got['heap_limit_mb']:.0f} MB, JVM alive: "
          f"{ok[got['heap_peak_mb'] < got['heap_limit_mb'] and bool(got['jvm_alive'])]}")
    print(f"  exceptions on the page: {got['exceptions']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
