"""End to end in a real headless Chromium: the served app starts a generator query, charts it, and stops it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
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
SERVER_START_SECONDS = 180
CHART_DATA_SECONDS = 240

pytestmark = pytest.mark.browser

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs the Debian packages chromium and chromium-driver")
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().strip() == b"ok"
    except OSError:
        return False


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app served by ``streamlit run`` on a free loopback port, in its own process group."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path_factory.mktemp("server") / "streamlit.log").open("w")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"}
    streamlit = Path(sys.executable).with_name("streamlit")
    server = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not _healthy(url):
            if server.poll() is not None:
                pytest.fail(f"streamlit exited with {server.returncode}; see {log.name}")
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {SERVER_START_SECONDS} s; see {log.name}")
            time.sleep(0.5)
        yield url
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (which gives it a fresh, empty profile)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            yield chromium
        finally:
            chromium.close()


COUNTS_HAVE_POINTS = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  return !!plot && Array.isArray(plot.data) && plot.data.some(t => Array.isArray(t.x) ? t.x.length > 0 : !!(t.x && t.x.length));
}"""


def _pick(page, label: str, option: str) -> None:
    page.get_by_label(label).first.click()
    page.get_by_role("option", name=option).click()


def test_live_page_starts_charts_and_stops_a_generator_query(app_url, browser):
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    try:
        page.goto(f"{app_url}/", wait_until="domcontentloaded")
        page.get_by_role("link", name="Live query").first.click()
        page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
        _pick(page, "Source", "Generator (out-of-order and late events)")
        page.get_by_label("Query name").fill("browser_generator")
        page.get_by_label("Query name").press("Enter")
        page.get_by_role("button", name="Start query").click()
        page.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
        assert page.locator(".stException").count() == 0
        page.get_by_role("button", name="Stop query").click()
        page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)
    finally:
        page.close()


def test_every_page_opens_without_an_exception(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_url}/", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Streaming Lab").wait_for(timeout=60_000)
        links = page.locator('[data-testid="stSidebarNav"] a')
        titles = [links.nth(index).inner_text().strip().splitlines()[-1] for index in range(links.count())]
        assert {"Live query", "Queries"} <= set(titles)
        for title in (title for title in titles if title != "Home"):
            page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click()
            page.get_by_role("heading", name=title).first.wait_for(timeout=120_000)
            assert page.locator(".stException").count() == 0, f"page {title!r} shows an exception"
    finally:
        page.close()
