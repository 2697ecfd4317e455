"""``python -m benchmarks.viewers``: one run shown to an audience by its read-only link, and what each viewer costs the server.

The app is served (its own Spark) and opened in headless Chromium: a presenter
starts a query of the Live page's generator, shares it read-only, and ``--steps``
audiences (1, 5, 10 and 20 pages by default, each page a browser context of its
own: a viewer's own browser session) open the link. For each step, over
``--window`` seconds once every viewer's page shows the whole view:

app CPU per viewer
    The CPU seconds a minute of the app's process and its children, Spark's JVM
    and what runs under it left out (read from ``/proc``), above the same with
    no viewer, divided by the viewers. Goal at 20 pages: at most 0.3 s a minute.
presenter's rate
    How often the presenter's *Batches* number changed in the window, against
    the same with no viewer. Goal at 20 pages: at least 0.8 of it.

Spark's JVM's CPU and Chromium's are reported beside them, to say who took
the machine. The viewers' pages do not load Plotly (``--draw-viewers`` lets
them): an audience draws its charts on its own machines, and twenty pages of
charts drawn in this one Chromium would take the cores the server is measured
on. They still receive every figure the server sends.

Progress notes go to stderr, the report to stdout.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .browser import CHROMIUM, COUNTS_HAVE_POINTS, chromium, java_under, served_app

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

SPARK_READY_SECONDS = 300
GENERATOR = "Generator (out-of-order and late events)"
"""The presenter's source: a stream that never runs out (the default, a sample feed, is read to its end within minutes)."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

BATCHES_WATCHER = """() => {
  window.__batchChanges = 0;
  let last = null;
  const read = () => {
    const metric = Array.from(document.querySelectorAll('[data-testid="stMetric"]')).find(m => m.innerText.includes('Batches'));
    const value = metric ? metric.querySelector('[data-testid="stMetricValue"]').innerText.trim() : null;
    if (value !== null && value !== last) { if (last !== null) window.__batchChanges += 1; last = value; }
  };
  new MutationObserver(read).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""
"""Counts each change of the page's *Batches* number: what the presenter sees move."""


def _note(message: str) -> None:
    print(f"[viewers bench] {message}", file=sys.stderr, flush=True)


def _processes() -> dict[int, tuple[int, str, float]]:
    """Every process: ``pid -> (parent, name, CPU seconds so far)``."""
    found: dict[int, tuple[int, str, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
        found[int(entry)] = (int(rest[1]), name, (int(rest[11]) + int(rest[12])) / CLOCK_TICKS)
    return found


def _tree(root: int, processes: dict[int, tuple[int, str, float]]) -> set[int]:
    tree, frontier = {root}, {root}
    while frontier:
        frontier = {pid for pid, (parent, _, _) in processes.items() if parent in frontier} - tree
        tree |= frontier
    return tree


@dataclass(frozen=True)
class Cpu:
    """CPU seconds so far of the app (without its JVM's tree), of the JVM's tree, and of Chromium's."""

    app: float
    jvm: float
    browser: float

    @staticmethod
    def read(app_pid: int, jvm_pid: int, browser_pid: int) -> Cpu:
        processes = _processes()
        jvm = _tree(jvm_pid, processes)

        def total(pids: set[int]) -> float:
            return sum(processes[pid][2] for pid in pids if pid in processes)

        return Cpu(total(_tree(app_pid, processes) - jvm), total(jvm), total(_tree(browser_pid, processes)))


def _browser_pid() -> int:
    """Chromium's first process that Playwright launched: the newest ``chromium`` whose parent is no ``chromium``."""
    processes = _processes()
    roots = [pid for pid, (parent, name, _) in processes.items() if name == "chromium" and processes.get(parent, (0, "", 0))[1] != "chromium"]
    ours = _tree(os.getpid(), processes)
    mine = [pid for pid in roots if pid in ours]
    return max(mine or roots)


def _pick(page: Page, label: str, option: str, tries: int = 12) -> None:
    """Choose ``option`` of the select ``label``, opening its list again when a rerun swallowed the click."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    for attempt in range(tries):
        page.get_by_label(label, exact=True).first.click()
        try:
            page.get_by_role("option", name=option).click(timeout=5_000)
            return
        except PlaywrightTimeoutError:
            if attempt == tries - 1:
                raise


def _presenter(browser: Browser, url: str) -> tuple[Page, str]:
    """Open the Live page, start its default query, share it: the page and its read-only link."""
    page = browser.new_context(viewport={"width": 1600, "height": 1400}).new_page()
    page.goto(f"{url}/Live_query", wait_until="domcontentloaded")
    page.get_by_text("Spark is ready").wait_for(timeout=SPARK_READY_SECONDS * 1000)
    _pick(page, "Source", GENERATOR)
    page.get_by_role("textbox", name="Query name").fill("audience")
    page.get_by_role("textbox", name="Query name").press("Enter")
    page.get_by_role("button", name="Start query").click()
    page.wait_for_function(COUNTS_HAVE_POINTS, timeout=120_000)
    page.get_by_role("button", name="Share read-only").click()
    link = page.locator('[data-testid="stCode"]', has_text="?watch=").first.inner_text().strip()
    page.keyboard.press("Escape")
    page.evaluate(BATCHES_WATCHER)
    return page, link


def _viewer(browser: Browser, link: str, *, draw: bool) -> BrowserContext:
    """A viewer of ``link`` in a browser context of its own, once its page shows the whole view."""
    context = browser.new_context(viewport={"width": 1600, "height": 1400})
    if not draw:
        context.route("**/plotly.min.js", lambda route: route.abort())
    page = context.new_page()
    page.goto(link, wait_until="domcontentloaded", timeout=120_000)
    page.get_by_text("Engine (the Spark UI's streaming tab)").first.wait_for(timeout=120_000)  # a rerun may show it twice a moment
    return context


def _batches(page: Page) -> str:
    """The *Batches* number the page shows now."""
    return page.locator('[data-testid="stMetric"]', has_text="Batches").first.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _measure(presenter: Page, pids: tuple[int, int, int], window: float) -> dict[str, float]:
    """Over ``window`` seconds: each part's CPU seconds a minute and the presenter's *Batches* changes a minute."""
    presenter.evaluate("() => { window.__batchChanges = 0; }")
    shown, before, began = _batches(presenter), Cpu.read(*pids), time.monotonic()
    time.sleep(window)  # the window measured, not a wait for a condition
    after, seconds = Cpu.read(*pids), time.monotonic() - began
    changes = presenter.evaluate("() => window.__batchChanges")
    _note(f"the presenter's Batches: {shown} → {_batches(presenter)}")
    per_minute = 60.0 / seconds
    return {
        "app": (after.app - before.app) * per_minute, "jvm": (after.jvm - before.jvm) * per_minute,
        "browser": (after.browser - before.browser) * per_minute, "rate": changes * per_minute,
        "exceptions": float(presenter.locator(".stException").count()),
    }


def run(steps: list[int], window: float, *, draw: bool) -> list[tuple[int, dict[str, float]]]:
    """``(viewers, figures)`` for no viewer, then each step of ``steps``, viewers added to those already watching."""
    results: list[tuple[int, dict[str, float]]] = []
    with tempfile.TemporaryDirectory(prefix="streaming-lab-viewers-bench-") as logs, served_app(Path(logs), start_timeout=SPARK_READY_SECONDS) as app, chromium() as browser:
        presenter, link = _presenter(browser, app.url)
        pids = (app.process.pid, java_under(app.process.pid), _browser_pid())
        viewers: list[BrowserContext] = []
        for count in [0, *steps]:
            while len(viewers) < count:
                viewers.append(_viewer(browser, link, draw=draw))
            got = _measure(presenter, pids, window)
            _note(f"{count} viewers: app {got['app']:.1f}, Spark {got['jvm']:.1f}, Chromium {got['browser']:.1f} CPU s/min; "
                  f"presenter {got['rate']:.1f} updates/min")
            results.append((count, got))
        for context in viewers:
            context.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="1,5,10,20", help="viewers watching at each step, comma-separated (default 1,5,10,20)")
    parser.add_argument("--window", type=float, default=30.0, help="seconds measured at each step (default 30)")
    parser.add_argument("--draw-viewers", action="store_true", help="let the viewers' pages load Plotly and draw their charts")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        print(f"viewers: skipped, no Chromium at {CHROMIUM}")
        return 0
    steps = [int(step) for step in args.steps.split(",")]
    results = run(steps, args.window, draw=args.draw_viewers)
    (_, alone), ok = results[0], {True: "ok", False: "missed"}
    print(f"viewers: one run watched by its read-only link ({args.window:.0f} s a step; viewers' charts {'drawn' if args.draw_viewers else 'not drawn'})")
    print(f"  no viewer: app {alone['app']:.1f} CPU s/min, Spark {alone['jvm']:.1f}, Chromium {alone['browser']:.1f}; presenter {alone['rate']:.1f} updates/min")
    for count, got in results[1:]:
        per_viewer, rate = (got["app"] - alone["app"]) / count, got["rate"] / alone["rate"] if alone["rate"] else float("nan")
        goals = f" (goals: ≤ 0.3 {ok[per_viewer <= 0.3]}, ≥ 0.8 {ok[rate >= 0.8]})" if count == max(steps) else ""
        print(f"  {count:>2} viewers: app {got['app']:.1f} CPU s/min, {per_viewer:.2f} a viewer; presenter's rate {rate:.2f}× "
              f"none's{goals}; Spark {got['jvm']:.1f}, Chromium {got['browser']:.1f}; exceptions {got['exceptions']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
