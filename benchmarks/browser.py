"""The served app in a real headless Chromium: serve it as ``make run`` does (``python -m dashboard.serve``) on a free port, open pages, time them.

Used by the benchmark (first chart after Start on a warm server) and by the
browser tests. Chromium is Debian's (``/usr/bin/chromium``), driven by
Playwright's Python API; Playwright's own browser download is never used.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

__all__ = [
    "CHROMIUM",
    "CHROMIUM_FLAGS",
    "COUNTS_HAVE_POINTS",
    "ServedApp",
    "chromium",
    "first_chart_after_start",
    "free_port",
    "healthy",
    "java_under",
    "served_app",
]

PROJECT_ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

COUNTS_HAVE_POINTS = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  return !!plot && Array.isArray(plot.data) && plot.data.some(t => Array.isArray(t.x) ? t.x.length > 0 : !!(t.x && t.x.length));
}"""
"""True once the first chart of the page (the live view's result table) has a point."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().strip() == b"ok"
    except OSError:
        return False


def java_under(pid: int) -> int:
    """The pid of the Java process (Spark's JVM) among the descendants of ``pid``."""
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            name, rest = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
            parents[int(entry)], names[int(entry)] = int(rest[1]), name
    descendants: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - descendants
        descendants |= frontier
    [java] = [child for child in descendants if names[child] == "java"]
    return java


@dataclass(frozen=True)
class ServedApp:
    """A running ``python -m dashboard.serve`` (``make run``'s): its URL, its process and the second it answered its health check."""

    url: str
    process: subprocess.Popen[bytes]
    healthy_at: float
    log: Path
    launched_at: float = 0.0
    """The second its process was launched (``time.monotonic()``)."""


@contextlib.contextmanager
def served_app(log_dir: Path, *, start_timeout: float = 180.0, env: dict[str, str] | None = None) -> Iterator[ServedApp]:
    """Serve the app on a free loopback port in its own process group; stop it (and its Spark) on exit.

    Its data root (datasets, kept queries) is ``log_dir/data`` unless ``env`` names another.

    Raises ``RuntimeError`` naming the log file when the server exits or is not
    healthy within ``start_timeout`` seconds.
    """
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = Path(log_dir) / f"streamlit-{port}.log"
    environ = {
        **os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1", "STREAMING_LAB_DATA": str(Path(log_dir) / "data"), **(env or {}),
    }
    log: IO[str] = log_path.open("w")
    launched_at = time.monotonic()
    server = subprocess.Popen(
        [sys.executable, "-m", "dashboard.serve", "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=PROJECT_ROOT,
        env=environ,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + start_timeout
        while not healthy(url):
            if server.poll() is not None:
                raise RuntimeError(f"streamlit exited with {server.returncode}; see {log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"streamlit not healthy after {start_timeout} s; see {log_path}")
            time.sleep(0.2)
        yield ServedApp(url, server, time.monotonic(), log_path, launched_at)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@contextlib.contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium driven by Playwright, with a fresh, empty profile."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield browser
        finally:
            browser.close()


def _stop_all(page: Page, timeout_ms: float) -> None:
    """Stop the watched query from the page, and wait until it says so."""
    page.get_by_role("button", name="Stop query").click(timeout=timeout_ms)
    page.get_by_text("stopped", exact=True).first.wait_for(timeout=timeout_ms)


def first_chart_after_start(app: ServedApp, browser: Browser, *, up_for: float = 45.0, timeout: float = 120.0) -> dict[str, Any]:
    """Seconds from pressing Start (default settings) to the first chart with data, on a server up ``up_for`` seconds.

    The Live query page is opened at once (its first view starts the Spark
    session in the background, as a visitor's would), then the clock waits
    until the server has been up ``up_for`` seconds, Start is pressed and the
    page is watched until the result-table chart has a point.
    """
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    try:
        page.goto(f"{app.url}/Live_query", wait_until="domcontentloaded")
        start = page.get_by_role("button", name="Start query")
        start.wait_for(timeout=timeout * 1000)
        page.locator(".js-plotly-plot").first.wait_for(timeout=timeout * 1000)  # the placeholder chart: the page has loaded Plotly, as a user's has
        ready_after = None
        while time.monotonic() < app.healthy_at + up_for:
            if ready_after is None and start.is_enabled():
                ready_after = time.monotonic() - app.healthy_at
            time.sleep(0.2)
        if not start.is_enabled():
            start.click(timeout=timeout * 1000)  # waits for Spark, then presses
            pressed = time.monotonic()
        else:
            pressed = time.monotonic()
            start.click()
        page.wait_for_function(COUNTS_HAVE_POINTS, timeout=timeout * 1000, polling=50)
        seconds = time.monotonic() - pressed
        exceptions = page.locator(".stException").count()
        _stop_all(page, timeout * 1000)
        return {
            "first_chart_s": seconds, "session_ready_s": ready_after, "server_up_s": pressed - app.healthy_at, "exceptions": exceptions,
            "healthy_after_launch_s": app.healthy_at - app.launched_at,
        }
    finally:
        page.close()
