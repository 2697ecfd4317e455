"""``python -m benchmarks.sql``: what a query in Spark SQL costs against the form's, and how long a check of its text takes, measured in one run.

check latency
    A :class:`~streaming.engine.sql.checker.SqlChecker` over a feed's view, made
    once (as the Live page keeps one per browser session), then ``--checks``
    texts checked one after another: parse, the plan checks and Spark's
    analysis. The page's budget is 300 ms from the last keystroke to the verdict
    on a warm session; p50 and p95 are printed in milliseconds.
verdict latency in the browser
    The app served and the Live query page opened in SQL mode in headless
    Chromium (``/usr/bin/chromium``); ``--edits`` times the SQL box is given a
    new text (its watermark delay changed), each as one input, as a paste or
    the last keystroke gives it; from then to the verdict naming the new delay
    on the page: the pause the box waits for more typing, the check, and the
    page's rerun. p50 and p95 in milliseconds, against the 300 ms goal: first
    as soon as the page says Spark is ready (the server's warm-up still runs
    beside the checks), then again once the warm-up has ended. Skipped without Chromium.
overhead
    The same windowed count (``--files`` CSV files of ``--rows`` rows, 1-minute
    windows per key, a 30-second watermark, update mode) replayed to its end
    under the available-now trigger, once as the form builds it
    (:func:`~streaming.engine.run.runner.run_to_idle`) and once as the SQL *Edit as
    SQL* writes for it (:func:`~streaming.engine.sql.replay.replay_sql`), in
    ``--rounds`` rounds alternating their order so drift cancels out; wall
    seconds from the start to the last batch, the median of each, and the ratio
    form / SQL (1.0: the same; below 1, SQL is slower). Both results are compared row for row.

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _note(message: str) -> None:
    print(f"[sql bench] {message}", file=sys.stderr, flush=True)


def write_feed(folder: Path, files: int, rows: int, seed: int = 7) -> Path:
    """``files`` CSV files of ``rows`` events (``event_time``, ``key``), event time rising with some out of order."""
    rng = random.Random(seed)
    folder.mkdir(parents=True)
    start = 1_700_000_000
    for index in range(files):
        lines = ["event_time,key"]
        for row in range(rows):
            moment = start + index * 60 + row * 60 // rows - rng.choice((0, 0, 0, 5, 40))
            lines.append(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(moment))},k{rng.randrange(20)}")
        (folder / f"batch-{index:04d}.csv").write_text("\n".join(lines) + "\n")
    return folder


def check_latency(spark, feed: Path, checks: int) -> tuple[float, float]:
    from streaming.engine.sources import FeedSource
    from streaming.engine.sql import SqlView
    from streaming.engine.sql.checker import SqlChecker

    texts = [
        f"SELECT window(event_time, '{minutes} minutes') AS w, key, count(*) AS n FROM STREAM(events) "
        f"WATERMARK event_time DELAY OF INTERVAL {seconds} SECONDS WHERE key <> 'k{minutes}' GROUP BY 1, 2"
        for minutes, seconds in zip(range(1, checks + 1), range(10, 10 + checks))
    ]
    with SqlChecker(spark, (SqlView("events", FeedSource(feed, seconds_per_file=0)),)) as checker:
        for text in texts[:5]:  # warm: the parser, the analyser, py4j
            checker.check(text)
        spent = []
        for text in texts:
            began = time.perf_counter()
            checker.check(text)
            spent.append((time.perf_counter() - began) * 1000)
    ordered = sorted(spent)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


VERDICT_GOAL_MS = 300


def verdict_latency(edits: int, timeout: float = 180.0) -> dict[str, tuple[float, float]] | None:
    """p50 and p95 milliseconds from a new text in the Live page's SQL box to its verdict shown (see the module docstring), measured twice:
    ``"during warm-up"``, edits begun as soon as the page says Spark is ready (while the server's warm-up runs), and ``"warm"``, once the
    sidebar names the warm-up's seconds (the page opened again until it does); ``None`` without Chromium."""
    from .browser import CHROMIUM, chromium, served_app

    if not CHROMIUM.exists():
        return None
    measured = {}
    with tempfile.TemporaryDirectory(prefix="streaming-lab-sql-bench-") as logs, served_app(Path(logs)) as app, chromium() as browser:
        page = browser.new_page(viewport={"width": 1600, "height": 1400})
        page.goto(f"{app.url}/Live_query", wait_until="domcontentloaded")
        page.get_by_text("Spark is ready").wait_for(timeout=timeout * 1000)
        measured["during warm-up"] = _edits(page, edits, timeout)
        deadline = time.monotonic() + timeout
        while not page.get_by_text(re.compile(r"warm-up \d+ s")).count():  # the sidebar says so on the first page view after the warm-up
            if time.monotonic() > deadline:
                raise TimeoutError(f"the served app's warm-up did not end in {timeout:.0f} s")
            page.wait_for_timeout(1000)
            page.goto(f"{app.url}/Live_query", wait_until="domcontentloaded")
            page.get_by_text("Spark is ready").wait_for(timeout=timeout * 1000)
        measured["warm"] = _edits(page, edits, timeout)
        page.close()
    return measured


def _edits(page: Any, edits: int, timeout: float) -> tuple[float, float]:
    """p50 and p95 milliseconds of ``edits`` new texts in the SQL box of the Live page open in ``page`` (put in SQL mode) to their verdicts."""
    from streaming.engine.durations import format_duration

    text = "SELECT window(event_time, '1 minute') AS w, key, count(*) AS n\nFROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL {} SECONDS\nGROUP BY 1, 2"
    page.locator('[data-testid="stSidebar"] button').filter(has_text=re.compile(r"^\s*SQL\s*$")).first.click()
    box = page.get_by_role("textbox", name="SQL")
    box.wait_for(timeout=timeout * 1000)
    page.locator(".lab-sql-highlight").wait_for(timeout=timeout * 1000)  # the box's page script is in place
    spent = []
    for edit in range(edits + 3):  # the first three warm the page and the checker
        seconds = 11 + edit
        box.fill(text.format(seconds))
        began = time.perf_counter()
        page.wait_for_function(  # polled every 10 ms: a locator's wait polls at 100 ms to 1 s and would round the time up to those
            "(words) => document.body.innerText.includes(words)", arg=f"delay {format_duration(seconds * 1000)}", polling=10, timeout=timeout * 1000,
        )
        if edit >= 3:
            spent.append((time.perf_counter() - began) * 1000)
    ordered = sorted(spent)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def overhead(spark, feed: Path, rounds: int) -> tuple[float, float, bool]:
    from streaming.engine.query.config import QueryConfig
    from streaming.engine.run.registry import QueryRegistry
    from streaming.engine.run.runner import run_to_idle
    from streaming.engine.sources import FeedSource
    from streaming.engine.sql import SqlQuery, SqlView, replay_sql
    from streaming.engine.sql.form import form_sql

    config = QueryConfig(FeedSource(feed, seconds_per_file=0), window="1 minute", watermark="30 seconds", trigger="available_now")
    query = SqlQuery(form_sql(config), (SqlView("events", config.source),), arrival="busy")  # the form's available-now replay is busy too
    registry = QueryRegistry(spark)
    form_seconds, sql_seconds = [], []
    same = True
    try:
        for round_ in range(rounds):
            order = ("form", "sql") if round_ % 2 == 0 else ("sql", "form")
            results = {}
            for variant in order:
                began = time.perf_counter()
                if variant == "form":
                    replay = run_to_idle(registry, config, latency=False)
                    results[variant] = sorted((str(row.window_start), row.key, int(row.count)) for row in replay.result.itertuples(index=False))
                    form_seconds.append(time.perf_counter() - began)
                else:
                    outcome = replay_sql(registry, query)
                    results[variant] = sorted((str(row["window.start"]), row["key"], int(row["count"])) for _, row in outcome.result.iterrows())
                    sql_seconds.append(time.perf_counter() - began)
                _note(f"round {round_ + 1} {variant}: {(form_seconds if variant == 'form' else sql_seconds)[-1]:.2f} s")
            same = same and results["form"] == results["sql"]
    finally:
        registry.close()
    return statistics.median(form_seconds), statistics.median(sql_seconds), same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.sql", description=__doc__.splitlines()[0])
    parser.add_argument("--checks", type=int, default=40)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--edits", type=int, default=20, help="texts given to the SQL box in the browser (0: skip the browser)")
    args = parser.parse_args(argv)
    from streaming.engine.runtime.session import get_session

    spark = get_session()
    with tempfile.TemporaryDirectory(prefix="streaming-lab-sql-bench-") as scratch:
        feed = write_feed(Path(scratch) / "feed", args.files, args.rows)
        _note(f"{args.files} files of {args.rows:,} rows written")
        p50, p95 = check_latency(spark, feed, args.checks)
        print(f"SQL check latency over {args.checks} checks (warm session): p50 {p50:.0f} ms, p95 {p95:.0f} ms (budget 300 ms)")
        form, sql, same = overhead(spark, feed, args.rounds)
        print(
            f"Replay of {args.files} x {args.rows:,} rows to its end, median of {args.rounds}: form {form:.2f} s, SQL {sql:.2f} s, "
            f"ratio form/SQL {form / sql:.2f}; results {'equal' if same else 'DIFFER'}"
        )
    spark.stop()
    if args.edits:  # last: the served app's JVM would compete with this process's measures
        measured = verdict_latency(args.edits)
        if measured is None:
            print("SQL verdict latency in the browser: skipped (no /usr/bin/chromium)")
        for when, (p50, p95) in (measured or {}).items():
            verdict = "ok" if p50 <= VERDICT_GOAL_MS and p95 <= VERDICT_GOAL_MS else "missed"
            print(f"SQL verdict latency in the browser, {when}, over {args.edits} edits (new text -> verdict shown): p50 {p50:.0f} ms, p95 {p95:.0f} ms "
                  f"(goal {VERDICT_GOAL_MS} ms: {verdict})")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
