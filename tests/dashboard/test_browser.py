"""End to end in a real headless Chromium: the served app's pages as a user drives them, on Spark, a Kafka broker and Spark Connect.

The server and the browser helpers are :mod:`benchmarks.browser`'s, which the
benchmark uses to time the first chart after Start.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from benchmarks.browser import CHROMIUM, COUNTS_HAVE_POINTS, chromium, served_app

ROOT = Path(__file__).resolve().parents[2]
SERVER_START_SECONDS = 180
CHART_DATA_SECONDS = 240

pytestmark = pytest.mark.browser

if not CHROMIUM.exists():
    if os.environ.get("CI"):
        raise RuntimeError(f"{CHROMIUM} is missing: .ci/run installs the Debian packages chromium and chromium-driver")
    pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium chromium-driver)", allow_module_level=True)


@pytest.fixture(scope="module")
def data_root(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def served(tmp_path_factory, data_root, kafka_broker):
    """The app served as ``make run`` serves it on a free loopback port, in its own process group, with its data root in a temp folder and the run's Kafka broker."""
    env = {
        "STREAMING_LAB_DATA": str(data_root), "STREAMING_LAB_MAX_UPLOAD_MB": "1", "KAFKA_BOOTSTRAP": kafka_broker.bootstrap,
        "STREAMING_LAB_MAX_WINDOWS_PER_ROW": "100000000",  # a server that trusts its users: a text can fill the heap (the last test)
    }
    with served_app(tmp_path_factory.mktemp("server"), start_timeout=SERVER_START_SECONDS, env=env) as app:
        yield app


@pytest.fixture(scope="module")
def app_url(served):
    return served.url


@pytest.fixture(scope="module")
def browser():
    with chromium() as browser:
        yield browser


def _pick(page, label: str, option: str) -> None:
    """Choose ``option`` of the select ``label``: :func:`_until`, opening the list again when a rerun swallowed the click (it never
    opened), 5 s a try, a minute at most."""
    _until(lambda: page.get_by_label(label, exact=True).first.click(), lambda: page.get_by_role("option", name=option).click(timeout=5_000),
           attempts=12)


LATENCY_HAS_POINTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).some(
  p => p.layout && JSON.stringify(p.layout.title).includes('End-to-end latency over time') && (p._fullData || []).some(t => t.x && t.x.length > 0))"""
"""True once the live view's latency-over-time chart has a point."""


def _start_see_chart_and_stop(page, source: str, name: str, *, latency: bool = False) -> None:
    """On the Live query page: start a query of ``source`` named ``name``, wait until its chart (and with ``latency``, its latency chart) has data, then stop it."""
    _pick(page, "Source", source)
    page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
    _name_start_see_and_stop(page, name, COUNTS_HAVE_POINTS, *([LATENCY_HAS_POINTS] if latency else []))


def _name_start_see_and_stop(page, name: str, *shown: str) -> None:
    """On the Live query page, its query ready: name it ``name``, start it, wait until each page script of ``shown`` (default: the
    chart has a point) is true, then stop it."""
    page.get_by_role("textbox", name="Query name").fill(name)
    page.get_by_role("textbox", name="Query name").press("Enter")
    page.get_by_role("button", name="Start query").click()
    for script in shown or (COUNTS_HAVE_POINTS,):
        page.wait_for_function(script, timeout=CHART_DATA_SECONDS * 1000)
    assert page.locator(".stException").count() == 0
    page.get_by_role("button", name="Stop query").click()
    page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)


def test_every_page_opens_without_an_exception(app_url, browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(f"{app_url}/", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Streaming Lab").wait_for(timeout=60_000)
        links = page.locator('[data-testid="stSidebarNav"] a')
        titles = [links.nth(index).inner_text().strip().splitlines()[-1] for index in range(links.count())]
        assert {"Live query", "Queries"} <= set(titles)
        assert page.get_by_test_id("stAppDeployButton").count() == 0 and page.get_by_test_id("stMainMenu").count() == 0
        for title in (title for title in titles if title != "Home"):
            _open(page, title)
            assert page.locator(".stException").count() == 0, f"page {title!r} shows an exception"
    finally:
        page.close()



EVENTS_JSONL = "".join(
    f'{{"arr_delay": {3 * index - 4}, "ts": {1772460061000 + 7000 * index}, "user": "u{index % 3}", "amount": {index}.5}}\n' for index in range(12)
)


def test_upload_a_dataset_map_its_time_column_and_preview_it(app_url, browser, data_root):
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    try:
        page.goto(f"{app_url}/Datasets", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Datasets").first.wait_for(timeout=120_000)
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)  # not mid-upload: the page reruns whole once it is
        page.get_by_role("textbox", name="Dataset name").fill("kafka_dump")
        page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files([
            {"name": "topic.jsonl", "mimeType": "application/json", "buffer": EVENTS_JSONL.encode()},
            {"name": "broken.jsonl", "mimeType": "application/json", "buffer": b'{"ts": 1\n{"ts": \n'},
        ])
        page.get_by_text("topic.jsonl").first.wait_for(timeout=30_000)
        page.get_by_test_id("stBaseButton-secondaryFormSubmit").click()
        page.get_by_text("kafka_dump: kept topic.jsonl (12 rows)").wait_for(timeout=60_000)
        page.get_by_text("refused 'broken.jsonl'").wait_for(timeout=10_000)
        assert sorted(path.name for path in (data_root / "kafka_dump").iterdir()) == ["topic.jsonl"]
        page.get_by_text("2026-03-02 14:02:18").first.wait_for(timeout=120_000)  # guessed from the values: ts in epoch ms, not the delay before it
        _pick(page, "Event-time column", "arr_delay")
        page.get_by_text("Is arr_delay the event time?").wait_for(timeout=120_000)  # a delay read as a time lands in 1970, and the page says so
        _pick(page, "Event-time column", "ts")
        page.get_by_text("2026-03-02 14:02:18").first.wait_for(timeout=120_000)
        rows = page.locator('[data-testid="stMetric"]', has_text="Rows")
        assert rows.first.locator('[data-testid="stMetricValue"]').inner_text().strip() == "12"
        page.get_by_role("button", name="Save mapping").click()
        page.get_by_text("This mapping is saved with kafka_dump").wait_for(timeout=60_000)
        assert page.locator(".stException").count() == 0  # a dataset with its mapping saved is run in the newcomer's walk below
    finally:
        page.close()


def _flights(days: int = 3, per_day: int = 48) -> list[str]:
    """JSON lines of departures, one file a day: the delay first (a number, not a time), then carrier, scheduled and actual time.

    Each day's file also brings 4 departures of the day before, a day late: events hours behind the stream.
    """
    from datetime import datetime, timedelta

    start = datetime(2024, 5, 1, 5, 0)

    def line(day: int, index: int) -> str:
        scheduled = start + timedelta(days=day, minutes=20 * index)
        delay = (index * 37) % 180 - 20
        return (f'{{"arr_delay": {delay}, "carrier": "{"AUD"[index % 3]}A", "sched_dep": "{scheduled:%Y-%m-%d %H:%M:%S}", '
                f'"dep_time": "{scheduled + timedelta(minutes=max(delay, 0)):%Y-%m-%d %H:%M:%S}"}}\n')

    return ["".join(line(day, index) for index in range(per_day)) + "".join(line(day - 1, index) for index in range(4) if day > 0) for day in range(days)]


def _selected(page, label: str) -> str:
    """The text the select box ``label`` shows."""
    return page.get_by_role("combobox", name=label, exact=True).first.input_value()


def _until(act, done, attempts: int = 4) -> None:
    """``act()`` until ``done()`` (a Playwright wait) succeeds: a rerun in flight can swallow a click or keystrokes."""
    for attempt in range(attempts):
        act()
        try:
            done()
            return
        except PlaywrightTimeoutError:
            if attempt == attempts - 1:
                raise


def _enter(page, label: str, value: str) -> None:
    field = page.get_by_role("spinbutton", name=label)
    field.fill(value)
    field.press("Enter")


def _open(page, title: str) -> None:
    """Open the page ``title`` from the sidebar and wait for its heading: :func:`_until`, clicking again every 15 s, 2 minutes at most.

    Streamlit 1.67 can lose a page switch: when a fragment's timed rerun is queued behind the page's own run, the stopped run sets the
    session's intended page back as the new run starts, and the new run draws the old page again (seen here while Spark started,
    with the 0.5 s check of :func:`dashboard.shared.wait_for_session`). A user clicks again; so does this.
    """
    _until(lambda: page.locator('[data-testid="stSidebarNav"] a', has_text=title).first.click(),
           lambda: page.get_by_role("heading", name=title).first.wait_for(timeout=15_000), attempts=8)


def test_a_newcomer_walks_an_hour_scale_dataset_through_every_page(app_url, browser, data_root):
    """Datasets → Live query → Watermark tuner → Compare on departures spread over days, a number first: each page opens on the data chosen before, in hours, and its link reopens it."""
    from playwright.sync_api import expect

    from dashboard.tuner import DEFAULT_DELAYS

    folder = data_root / "flights"
    folder.mkdir()
    for day, text in enumerate(_flights()):
        (folder / f"day-{day}.jsonl").write_text(text)
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    try:
        page.goto(f"{app_url}/Datasets?dataset_choice=flights", wait_until="domcontentloaded")  # a link to the dataset
        page.get_by_role("heading", name="Datasets").first.wait_for(timeout=120_000)
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_text("Rows", exact=True).first.wait_for(timeout=120_000)
        assert _selected(page, "Event-time column") == "dep_time"  # a column of times, not the delay before it
        _pick(page, "Event-time column", "sched_dep")  # the user wants the scheduled time
        page.get_by_text("2024-05-03 20:40:00").first.wait_for(timeout=120_000)
        page.get_by_role("button", name="Save mapping").click()
        page.get_by_text("This mapping is saved with flights").wait_for(timeout=60_000)

        _open(page, "Watermark tuner")
        assert _selected(page, "Data") == "flights"  # the data chosen on the Datasets page
        page.get_by_text("How late are the events?").click()
        page.get_by_text("p99 behind the stream").wait_for(timeout=120_000)
        p99 = page.locator('[data-testid="stMetric"]', has_text="p99 behind the stream").first.locator('[data-testid="stMetricValue"]').inner_text()
        assert p99.strip().endswith(" h"), p99  # a day late reads in hours
        page.get_by_role("button", name="Sweep these delays").click()
        expect(page.get_by_role("textbox", name="Watermark delays (comma-separated)")).not_to_have_value(DEFAULT_DELAYS, timeout=30_000)
        page.get_by_role("button", name="Run tuner").click()
        page.get_by_text("Confirmed on Spark at").first.wait_for(timeout=300_000)  # the model's answer shows first, then Spark's
        recommended = page.get_by_text("Smallest delay reaching 99%:").first.inner_text().split(": ", 1)[1].strip()
        assert page.locator(".stException").count() == 0
        _until(lambda: page.get_by_role("button", name="Open in Live query").first.click(),
               lambda: page.get_by_role("heading", name="Live query").first.wait_for(timeout=30_000))
        assert _selected(page, "Source") == "Your dataset (uploaded on the Datasets page)" and _selected(page, "Dataset") == "flights"
        expect(page.get_by_role("textbox", name="Watermark delay")).to_have_value(recommended, timeout=30_000)  # once the form has drawn its values
        _name_start_see_and_stop(page, "walk_flights")

        _open(page, "Compare")
        assert _selected(page, "Data") == "flights"
        page.get_by_role("button", name="Run comparison").click()
        page.get_by_text("Same event-time axis").wait_for(timeout=300_000)
        assert page.locator(".stException").count() == 0
        _until(lambda: _enter(page, "Configurations", "3"), lambda: page.wait_for_url("**cmp_count=3**", timeout=15_000))  # written in the page's link
        linked = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:  # a new session from the link: the same inputs, nothing run
            linked.goto(page.url, wait_until="domcontentloaded")
            linked.get_by_text("Config 3", exact=True).wait_for(timeout=120_000)
            # the field can show its default for a moment before the link's value
            expect(linked.get_by_role("spinbutton", name="Configurations")).to_have_value("3", timeout=15_000)
            assert linked.get_by_text("Config 3", exact=True).count() == 1 and linked.get_by_text("Same event-time axis").count() == 0
        finally:
            linked.close()
    finally:
        page.close()


def _publish_to(page, topic: str) -> None:
    """Name the topic and press Publish until the publish to it shows (running or done)."""

    def publish() -> None:
        field = page.get_by_role("textbox", name="Topic")
        field.fill(topic)
        field.press("Enter")
        page.get_by_role("button", name="Publish", exact=True).click()

    _until(publish, lambda: page.get_by_text(f"to {topic}").first.wait_for(timeout=15_000), attempts=5)


def test_the_demo_on_a_real_broker_publish_web_clicks_then_query_the_topic(app_url, browser):
    """Publish the web_clicks sample from the Datasets page, then start a query on its topic: counts, dropped rows and the lag behind the topic
    draw; then Compare measures the topic's latency under micro-batches and real-time mode. (SQL over a topic is held to the same SQL over
    its files in ``test_kafka``; SQL in the browser, in the test below.)"""
    page = browser.new_page(viewport={"width": 1600, "height": 1600})
    try:
        page.goto(f"{app_url}/Datasets", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Datasets").first.wait_for(timeout=120_000)
        _pick(page, "Dataset", "web_clicks (sample)")
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_role("heading", name="Publish to a Kafka topic").wait_for(timeout=120_000)
        _publish_to(page, "demo-clicks")
        page.get_by_text("Published 2,000 messages in 40 batches to demo-clicks").wait_for(timeout=120_000)
        _open(page, "Live query")
        page.get_by_role("button", name="Start query").wait_for(timeout=120_000)
        _pick(page, "Source", "Kafka topic")
        _pick(page, "Topic", "demo-clicks")
        page.get_by_text("Sample: the latest 200 messages of demo-clicks").wait_for(timeout=120_000)
        offsets = page.get_by_role("spinbutton", name="Max offsets per trigger")
        offsets.fill("100")
        offsets.press("Enter")
        page.get_by_role("textbox", name="Query name").fill("browser_kafka")
        page.get_by_role("textbox", name="Query name").press("Enter")
        page.get_by_role("button", name="Start query").click()
        page.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
        page.get_by_text("The topic: demo-clicks").wait_for(timeout=60_000)
        page.locator(".js-plotly-plot", has_text="Behind the topic").first.wait_for(timeout=60_000)
        assert page.locator(".stException").count() == 0
        page.get_by_role("button", name="Stop query").click()
        page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)
        _compare_latency(page, "demo-clicks")
    finally:
        page.close()


LATENCY_P50 = """() => {
  const error = document.querySelector('[data-testid="stAlertContentError"]');
  if (error) return {error: error.innerText};  // the comparison failed: say why instead of waiting out the cap
  const plot = Array.from(document.querySelectorAll('.js-plotly-plot')).find(p => p.layout && JSON.stringify(p.layout.title).includes('latency by trigger'));
  const traces = plot && plot._fullData;  // the drawn traces: x and y decoded into arrays
  if (!traces || traces.length < 2) return null;
  return Object.fromEntries(traces.map(t => [t.name, t.x[Array.from(t.y).findIndex(share => share >= 0.5)]]));
}"""
"""Each trace's median latency (ms) in the Compare page's latency chart, by trigger; ``null`` until both lines are drawn; ``{error}`` once the page
shows an error."""


def _compare_latency(page, topic: str) -> None:
    """On the Compare page, the same pass-through query on ``topic``'s records under the default trigger and in real-time mode: real-time is faster."""
    _open(page, "Compare")
    page.get_by_text("A Kafka topic").first.click()
    _pick(page, "Topic", topic)
    page.get_by_role("heading", name="Latency: the same query, micro-batches against real-time mode").wait_for(timeout=120_000)
    for label, value in (("Records a second", "300"), ("Seconds to publish", "12")):
        box = page.get_by_role("spinbutton", name=label)
        box.fill(value)
        box.press("Enter")
    page.get_by_role("button", name="Compare latency").click()
    medians = page.wait_for_function(LATENCY_P50, timeout=240_000).json_value()
    assert "error" not in medians, medians["error"]
    print(f"median latency to the sink in Chromium: {medians}")
    assert set(medians) == {"micro-batch, default trigger", "real-time mode (10 seconds batches)"}
    assert medians["real-time mode (10 seconds batches)"] < medians["micro-batch, default trigger"], medians
    assert page.locator(".stException").count() == 0


def test_the_app_runs_on_spark_connect_and_recovers_when_its_server_dies(tmp_path, browser):
    """With ``SPARK_REMOTE``: Start charts a query read from the memory sink, watched again after the Queries page; the server killed under
    it, the page says so; the server back, Start charts again and Stop stops.

    The server's first URL is the Live page's, not Home: it still gets the app's navigation and frame."""
    import signal

    from streaming.engine.runtime.connect import ConnectServer

    server = ConnectServer(tmp_path / "connect").start()
    try:
        with served_app(tmp_path, start_timeout=SERVER_START_SECONDS, env={"SPARK_REMOTE": server.url}) as app:
            page = browser.new_page(viewport={"width": 1600, "height": 1400})
            try:
                page.goto(f"{app.url}/Live_query", wait_until="domcontentloaded")  # a page's URL, not Home, is the first this server serves
                page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
                links = page.locator('[data-testid="stSidebarNav"] a')
                titles = {links.nth(index).inner_text().strip().splitlines()[-1] for index in range(links.count())}
                assert {"Home", "Live query", "Queries", "Watermark tuner", "Compare"} <= titles  # the app's navigation and frame all the same
                assert page.title().startswith("Live query"), page.title()
                _pick(page, "Source", "Generator (out-of-order and late events)")
                page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
                page.get_by_role("textbox", name="Query name").fill("doomed")
                page.get_by_role("textbox", name="Query name").press("Enter")
                page.get_by_role("button", name="Start query").click()  # left running when the server dies
                page.locator('[data-testid="stMetric"]', has_text="Status").filter(has_text="active").first.wait_for(timeout=CHART_DATA_SECONDS * 1000)
                page.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
                for title in ("Queries", "Live query"):  # every page opens on a classic session (test_every_page_opens...); here the run's list
                    _open(page, title)
                    assert page.locator(".stException").count() == 0, f"page {title!r} shows an exception on Connect"
                page.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)  # the running query, watched again

                os.kill(server.pid, signal.SIGKILL)
                banner = page.get_by_text("Spark stopped unexpectedly")
                banner.wait_for(timeout=60_000)
                assert "Spark Connect server stopped answering" in banner.inner_text() and "doomed (running" in banner.inner_text()
                try:
                    page.get_by_text("Waiting for the Spark Connect server").wait_for(timeout=120_000)
                except PlaywrightTimeoutError:
                    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
                    raise AssertionError(f"no wait for the server; the sidebar says {sidebar!r}; the app's log ends {app.log.read_text()[-3000:]!r}") from None
                assert page.locator(".stException").count() == 0
                assert app.process.poll() is None

                server = ConnectServer(tmp_path / "connect-again", port=server.port).start()
                page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
                _start_see_chart_and_stop(page, "Generator (out-of-order and late events)", "remote_again")
                assert page.locator(".stException").count() == 0
            finally:
                page.close()
    finally:
        server.stop()


def _only_the_view(page, data_root: Path) -> None:
    """A read-only page shows the view: nothing of the owner's query, its code or report, and no server path, in its text or its files."""
    page.get_by_text("Engine (the Spark UI's streaming tab)").wait_for(timeout=60_000)  # the whole view, not only its headline
    text = page.locator("body").inner_text()
    for hidden in ("Show code", "Download report", "List the dropped events", "Configuration", "SELECT", str(ROOT), str(data_root)):
        assert hidden not in text, hidden
    assert page.locator('[data-testid="stDownloadButton"]').count() == 0


def _batches_shown(page) -> int:
    text = page.locator('[data-testid="stMetric"]', has_text="Batches").first.inner_text()
    return int(text.strip().splitlines()[-1].replace(",", ""))


def test_a_stopped_query_resumes_from_the_queries_page_and_another_browser_sees_it_only_by_its_read_only_link(app_url, data_root, browser):
    """Start a generator query, see its counts and each record's latency chart, stop it; press Resume on the Queries page: the query goes on
    with its earlier batches. Another browser's Queries and Live pages show nothing of it (one session stopped and deleted another's
    query), until it opens the read-only link its owner shares: then the run's live view, without its controls, its code, its report or a
    server path; the same link opened after the resume shows the resumed run.

    A server's restart (the registry forgets its runs, the kept folder is listed from disk) is ``test_app``'s, and a resume on a new Spark
    session is ``test_the_page_recovers_when_spark_dies_under_a_running_query``'s: a second server here cost a start for nothing more."""
    import time

    generator = "Generator (out-of-order and late events)"
    mine, theirs = browser.new_context(viewport={"width": 1600, "height": 1400}), browser.new_context(viewport={"width": 1600, "height": 1400})
    try:
        page = mine.new_page()
        page.goto(f"{app_url}/Live_query", wait_until="domcontentloaded")
        page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
        _start_see_chart_and_stop(page, generator, "kept_across", latency=True)
        page.get_by_role("button", name="Share read-only").click()  # the presenter's link: the run, none of its controls
        link = page.locator('[data-testid="stCode"]', has_text="?watch=").first.inner_text().strip()
        assert link.startswith(f"{app_url}/Live_query?watch=")
        viewer = theirs.new_page()
        viewer.goto(link, wait_until="domcontentloaded")
        viewer.get_by_text("Watching kept_across read-only").wait_for(timeout=120_000)
        viewer.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
        assert viewer.get_by_role("button", name="Stop query").count() == 0 and viewer.get_by_role("button", name="Share read-only").count() == 0
        assert viewer.locator(".stException").count() == 0
        _only_the_view(viewer, data_root)
        viewer.close()
        progress = data_root / ".queries" / "kept_across" / "progress.jsonl"
        earlier = len(progress.read_text().splitlines())
        assert earlier >= 1

        page.goto(f"{app_url}/Queries", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Queries").first.wait_for(timeout=120_000)
        page.get_by_text("kept_across").first.wait_for(timeout=60_000)
        page.get_by_role("button", name="Resume").click()
        page.get_by_role("heading", name="Live query").first.wait_for(timeout=120_000)
        page.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
        deadline = time.monotonic() + CHART_DATA_SECONDS
        while _batches_shown(page) <= earlier:  # the earlier batches, then at least one new one
            assert time.monotonic() < deadline, f"no batch after the {earlier} kept ones"
            page.wait_for_timeout(500)
        assert page.locator(".stException").count() == 0
        viewer = theirs.new_page()  # the link made before the resume names the kept query: the resumed run
        viewer.goto(link, wait_until="domcontentloaded")
        viewer.get_by_text("Watching kept_across read-only").wait_for(timeout=120_000)
        viewer.wait_for_function(COUNTS_HAVE_POINTS, timeout=CHART_DATA_SECONDS * 1000)
        deadline = time.monotonic() + CHART_DATA_SECONDS
        while _batches_shown(viewer) <= earlier:
            assert time.monotonic() < deadline, f"the link shows no batch after the {earlier} kept ones"
            viewer.wait_for_timeout(500)
        viewer.close()

        other = theirs.new_page()
        other.goto(f"{app_url}/Queries", wait_until="domcontentloaded")
        other.get_by_role("heading", name="Queries").first.wait_for(timeout=120_000)
        other.get_by_text("Stopped queries kept on disk").wait_for(timeout=60_000)
        assert other.get_by_text("kept_across").count() == 0 and other.get_by_role("button", name="Stop").count() == 0
        other.goto(f"{app_url}/Live_query", wait_until="domcontentloaded")
        other.get_by_role("button", name="Start query").wait_for(timeout=120_000)
        assert other.get_by_text("kept_across").count() == 0
        page.get_by_role("button", name="Stop query").click()
        page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)
    finally:
        mine.close()
        theirs.close()


def test_a_live_join_shows_rows_and_null_rows_as_they_come_is_stopped_on_the_queries_page_and_watched_again(app_url, browser):
    """The generator's impressions and clicks joined live, left outer: joined rows first, then impressions without a click once the
    global watermark passes the end of their range. The join is a query of the server: the Queries page lists it and stops it, and
    its Watch opens the Joins page's live mode on it, stopped, with Start offered again."""
    nulls = "impressions (live) rows with NULLs for clicks (live)"
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    try:
        page.goto(f"{app_url}/Joins", wait_until="domcontentloaded")
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        _until(lambda: page.get_by_text("Live: generated or Kafka streams").click(),
               lambda: page.get_by_text("left_outer join of impressions (live) and clicks (live)").wait_for(timeout=15_000))
        _until(lambda: page.get_by_role("button", name="Start live join").click(), lambda: page.get_by_text("Rows emitted", exact=True).wait_for(timeout=60_000))
        page.wait_for_function(NULL_ROWS_IN, arg=nulls, timeout=120_000)  # the default range ends 20 s after an impression
        assert page.locator(".stException").count() == 0
        _open(page, "Queries")
        card = page.get_by_text(re.compile(r"live_join_[0-9a-f]{12}: active"))
        card.wait_for(timeout=60_000)
        name = re.search(r"live_join_[0-9a-f]{12}", card.inner_text()).group(0)
        assert page.get_by_text("live join: sides=impressions (live) and clicks (live)").count() >= 1
        _until(lambda: page.locator(f".st-key-lab_stop_run_{name} button").first.click(),
               lambda: page.get_by_text(re.compile(rf"{name}: stopped")).wait_for(timeout=60_000))
        _until(lambda: page.locator(f".st-key-lab_watch_{name} button").first.click(), lambda: page.get_by_text("Stopped.", exact=True).wait_for(timeout=60_000))
        assert page.get_by_role("button", name="Stop", exact=True).is_disabled() and page.get_by_role("button", name="Start live join").is_enabled()
        assert page.get_by_text("Rows emitted", exact=True).count() == 1 and page.locator(".stException").count() == 0
    finally:
        page.close()


NULL_ROWS_IN = """(name) => Array.from(document.querySelectorAll('.js-plotly-plot')).some(
  p => (p._fullData || []).some(t => t.name === name && t.y && Array.from(t.y).some(y => y > 0)))"""
"""True once the activity chart's trace ``name`` has a bar above 0 in some batch."""


ROWS_COLOURED = """(colour) => Array.from(document.querySelectorAll('[data-testid="stTable"] td')).filter(
  td => getComputedStyle(td).backgroundColor === colour).length"""
"""How many cells of the page's tables have the background ``colour`` (``rgb(r, g, b)``)."""


def test_a_scenario_opens_from_its_link_steps_with_highlighted_rows_goes_back_and_exports_a_report(app_url, browser, tmp_path):
    """The guide's late-data scenario from its link: three quick presses of Next (one by its key), the caption and the result rows the batch
    added and updated highlighted, Back; the report downloaded opens from its file with its figure and captions."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1600, "height": 1400}, accept_downloads=True)
    try:
        page.goto(f"{app_url}/Step_through?scenario=late_data&step=0", wait_until="domcontentloaded")
        page.get_by_text("to hand Spark the scenario's first micro-batch of data").first.wait_for(timeout=SERVER_START_SECONDS * 1000)
        third = "Batch 2 read 2 rows: dog at 12:14 and cat at 12:09."
        page.wait_for_function("() => window.__streamingLabPressesListening === true", timeout=60_000)  # the page counts presses
        page.get_by_role("button", name="Next batch").click()  # three quick presses, one by its key, while Spark runs the first: each counts
        page.locator("body").press("ArrowRight")
        page.get_by_role("button", name="Next batch").click()
        page.get_by_text(third).first.wait_for(timeout=120_000)
        expect(page.get_by_text(third)).to_have_count(2, timeout=30_000)  # update and append side by side
        added, updated = "rgb(216, 243, 220)", "rgb(255, 243, 191)"
        page.wait_for_function(f"() => ({ROWS_COLOURED})('{updated}') > 0", timeout=30_000)
        assert page.evaluate(ROWS_COLOURED, added) > 0  # 12:00-12:10 cat, 12:05-12:15 cat, 12:10-12:20 dog, in update mode
        assert "step=3" in page.url and "scenario=late_data" in page.url
        assert page.locator(".stException").count() == 0
        page.get_by_role("button", name="Back").click()
        page.get_by_text("Batch 1 read no rows").first.wait_for(timeout=60_000)
        page.wait_for_url(lambda url: "step=2" in url, timeout=60_000)  # the rerun after Back is over
        report = tmp_path / "late_data.html"
        for attempt in range(3):  # a rerun in flight can still swallow the click
            try:
                with page.expect_download(timeout=20_000) as download:
                    page.get_by_role("button", name="Download report (HTML)").click()
                break
            except PlaywrightTimeoutError:
                if attempt == 2:
                    raise
        download.value.save_as(report)
    finally:
        page.close()
    opened = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        opened.goto(report.as_uri(), wait_until="load")
        opened.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .main-svg').length >= 2", timeout=30_000)
        assert opened.get_by_text(third).count() == 2 and opened.title() == "Late data: update and append side by side"
    finally:
        opened.close()


def test_a_sql_query_is_refused_at_its_line_then_runs_with_its_operators_and_watermark(app_url, browser):
    """Query: SQL on the Live page: a broken query shows its error at its line and column, a query with a WATERMARK clause runs and is watched."""
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    try:
        page.goto(f"{app_url}/", wait_until="domcontentloaded")
        page.get_by_role("heading", name="Streaming Lab").wait_for(timeout=60_000)
        _open(page, "Live query")
        page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        sql_mode = page.locator('[data-testid="stSidebar"] button').filter(has_text=re.compile(r"^\s*SQL\s*$")).first
        sql_mode.click()
        editor = page.get_by_role("textbox", name="SQL")
        editor.wait_for(timeout=60_000)
        sql_mode.click()  # the chosen mode clicked again stays chosen (a deselected control would drop the page back to the form)
        assert sql_mode.get_attribute("aria-checked") == "true"
        assert editor.bounding_box()["width"] >= 800  # across the page: in the sidebar it was about 200 pixels wide
        editor.fill("SELECT key,\n  count(*) AS n\nFROM events\nGROUP BY nope")  # no Ctrl+Enter, no blur: checked as it is typed
        page.get_by_text("SQL: line 4, column 10:").first.wait_for(timeout=120_000)
        assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "SQL"  # the cursor stays in the box
        keywords = page.locator(".st-key-lab_sql .lab-sql-highlight span").all_inner_texts()  # the layer under the text, highlighted
        assert {"SELECT", "FROM", "GROUP", "BY"} <= set(keywords) and "nope" not in keywords, keywords
        alerts = page.locator('[data-testid="stAlertContainer"]').all_inner_texts()  # what the page says (a collapsed Show code may name org.apache jars)
        assert any("SQL: line 4, column 10:" in text for text in alerts), alerts
        assert not any("Traceback" in text or "org.apache" in text for text in alerts) and page.locator(".stException").count() == 0, alerts
        # a second stream (a stream-stream join, a WATERMARK clause a side) and a table (a stream-static join), as More views adds them
        page.get_by_text("More views: join another stream or a table").click()
        views = page.get_by_label("Other views", exact=True)
        views.fill("2")
        views.press("Enter")
        page.get_by_label("View 3 name", exact=True).wait_for(timeout=60_000)
        for label, value in (("View 2 name", "again"), ("View 3 name", "pages")):
            page.get_by_label(label, exact=True).fill(value)
            page.get_by_label(label, exact=True).press("Enter")
        page.get_by_role("radiogroup", name="View 3 read as").get_by_text("table", exact=True).click()
        _pick(page, "View 2 data", "web_clicks")
        _pick(page, "View 3 table", "web_clicks (sample)")
        _pick(page, "Output mode", "append")
        _run_sql(page, "browser_sql_joins", JOINS_SQL)
    finally:
        page.close()


GUIDE_SQL = (
    "SELECT window(event_time, '10 minutes') AS w, key, count(*) AS n\n"
    "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL {} MINUTES\nGROUP BY 1, 2"
)
"""The programming guide's windowed word count over its four files of words, under a WATERMARK clause of a delay in minutes."""


def test_a_kept_sql_querys_watermark_is_changed_tried_on_a_copy_and_applied_and_an_added_aggregate_is_refused_before_it_runs(
    app_url, data_root, browser,
):
    """Change and resume on the Queries page: the guide's count, kept and stopped after its first file, has its WATERMARK delay doubled;
    the lab says what Spark will not say, the change tried on a copy shows its result beside the old query going on and the change from
    scratch, then is applied; a second change that adds an aggregate is predicted refused, and nothing runs."""
    import json

    context = browser.new_context(viewport={"width": 1600, "height": 1400})  # a workspace of its own: its Queries page lists this query alone
    try:
        page = context.new_page()
        page.goto(f"{app_url}/Live_query", wait_until="domcontentloaded")
        page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        _pick(page, "Sample feed", "guide_words")
        page.locator('[data-testid="stSidebar"] button').filter(has_text=re.compile(r"^\s*SQL\s*$")).first.click()
        editor = page.get_by_role("textbox", name="SQL")
        editor.wait_for(timeout=60_000)
        editor.fill(GUIDE_SQL.format(10))
        editor.press("Control+Enter")
        page.get_by_text("Ready to run.").first.wait_for(timeout=120_000)
        page.get_by_label("Seconds per file", exact=True).fill("20")  # stopped after its first file: three are left for the change, also on a busy machine
        page.get_by_label("Seconds per file", exact=True).press("Enter")
        _name_start_see_and_stop(page, "changed_here", RESULT_ROWS_SHOWN)
        kept = data_root / ".queries" / "changed_here"
        staged = [path for path in (kept / "staging" / "events").iterdir() if not path.name.startswith(".")]  # a SQL query's, by view
        assert 0 < len(staged) < 4, "every file was read before the stop: nothing is left to change over"

        page.goto(f"{app_url}/Queries", wait_until="domcontentloaded")
        page.get_by_text("Change and resume").first.click(timeout=120_000)
        changed = page.get_by_role("textbox", name="Changed SQL")
        changed.fill(GUIDE_SQL.format(20))
        changed.press("Control+Enter")
        page.get_by_text("Spark will resume it, and will not tell you").wait_for(timeout=120_000)
        page.get_by_role("button", name="Try on a copy").click()
        page.get_by_text("On a copy, Spark resumed the change").wait_for(timeout=CHART_DATA_SECONDS * 1000)
        for heading in ("changed, resumed", "old query going on", "changed, from scratch"):
            assert page.get_by_text(heading, exact=True).first.is_visible(), heading
        assert page.locator('[data-testid="stDataFrame"]').count() >= 3
        assert "10 MINUTES" in json.loads((kept / "query.json").read_text())["config"]["text"]  # tried, not applied
        page.get_by_text("I have read what Spark will do with the kept state").click()
        page.get_by_role("button", name="Apply the change and resume").click()
        page.get_by_text("Resumed with the change").wait_for(timeout=CHART_DATA_SECONDS * 1000)
        record = json.loads((kept / "query.json").read_text())
        assert "20 MINUTES" in record["config"]["text"] and "10 MINUTES" in record["changes"][0]["config"]["text"]

        counted = GUIDE_SQL.format(20).replace("count(*) AS n", "count(*) AS n, max(event_time) AS latest")
        changed.fill(counted)
        changed.press("Control+Enter")
        page.get_by_text("Spark will refuse this change").wait_for(timeout=120_000)
        assert page.get_by_role("button", name="Apply the change and resume").is_disabled()  # not without the user's tick
        assert json.loads((kept / "query.json").read_text()) == record  # nothing ran
        assert page.locator(".stException").count() == 0
    finally:
        context.close()


COUNT_SQL = "SELECT key, count(*) AS n\nFROM STREAM(events)\nGROUP BY key"
"""Clicks counted per page, in complete mode: a result whose every row an interrupted replay would get wrong by a batch lost or doubled."""

RESULT_ROWS_SHOWN = """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).some(
  m => m.innerText.includes('Result rows') && Number(m.innerText.replace(/[^0-9]/g, '')) > 0)"""
"""True once the Live page's status row counts result rows."""


WINDOWED_SQL = (
    "SELECT window(event_time, '1 minute') AS w, key, count(*) AS n\n"
    "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 30 SECONDS\nGROUP BY 1, 2"
)
"""A windowed count with a WATERMARK clause over the view ``events`` of a source whose columns are ``event_time`` and ``key``."""


JOINS_SQL = (
    "SELECT a.key, a.event_time, b.event_time AS again_at\n"
    "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 30 SECONDS AS a\n"
    "JOIN STREAM(again) WATERMARK event_time DELAY OF INTERVAL 30 SECONDS AS b\n"
    "  ON a.key = b.key AND b.event_time BETWEEN a.event_time AND a.event_time + INTERVAL 5 SECONDS\n"
    "LEFT SEMI JOIN pages p ON p.key = a.key"
)
"""The clicks joined with the same clicks streamed again (within 5 seconds of each) and kept where their page is in a table of pages."""


def _run_sql(page, name: str, sql: str = WINDOWED_SQL) -> None:
    """On the Live page in SQL mode: type ``sql``, start it as ``name``, see its operators and its watermark, stop it."""
    editor = page.get_by_role("textbox", name="SQL")
    editor.fill(sql)
    editor.press("Control+Enter")
    page.get_by_text("Ready to run.").first.wait_for(timeout=120_000)
    page.get_by_role("textbox", name="Query name").fill(name)
    page.get_by_role("textbox", name="Query name").press("Enter")
    page.get_by_role("button", name="Start query").click()
    page.get_by_role("heading", name="Stateful operators").wait_for(timeout=CHART_DATA_SECONDS * 1000)
    page.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).some(
             m => m.innerText.includes('Watermark') && !m.innerText.includes('none yet'))""",
        timeout=CHART_DATA_SECONDS * 1000,
    )
    page.get_by_text("The global watermark comes from").first.wait_for(timeout=60_000)
    if sql is JOINS_SQL:  # both clauses read, and joined rows in the result
        assert page.get_by_text("The global watermark comes from").first.inner_text().count("(delay 30 seconds)") == 2
        page.wait_for_function(RESULT_ROWS_SHOWN, timeout=CHART_DATA_SECONDS * 1000)
    assert page.locator(".stException").count() == 0
    page.get_by_role("button", name="Stop query").click()
    page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)


HEAP_FILLING_SQL = (
    "SELECT window(event_time, '10 days', '1 second') AS w, key, count(*) AS c FROM STREAM(events) "
    "WATERMARK event_time DELAY OF INTERVAL 30 SECONDS GROUP BY 1, 2"
)
"""864,000 windows a row: its analysis alone fills the driver's heap (refused unless the server lifts STREAMING_LAB_MAX_WINDOWS_PER_ROW)."""


def test_the_page_recovers_when_spark_dies_under_a_running_query(served, data_root, browser, spark):
    """Fill the driver's heap under the served app by checking a text whose plan grows without bound, under a kept SQL query mid-replay:
    the heap's watch ends the JVM, the page says the heap filled and what was lost, a new session starts, the text is not checked again
    on it, other SQL is, and the query resumed from the Queries page reads the rest of its files to the answer of an uninterrupted run
    (plain PySpark's count over the same files): no batch lost, none counted twice.

    The module's last test: the app it leaves runs on its second Spark session (a server of its own would cost a start)."""
    import json

    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.sql.table import SqlTable

    app = served
    page = browser.new_page(viewport={"width": 1600, "height": 1400})
    try:
        page.goto(f"{app.url}/Live_query", wait_until="domcontentloaded")
        page.get_by_role("button", name="Start query").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.locator('[data-testid="stSidebar"] button').filter(has_text=re.compile(r"^\s*SQL\s*$")).first.click()
        editor = page.get_by_role("textbox", name="SQL")
        editor.wait_for(timeout=60_000)
        editor.fill(COUNT_SQL)
        editor.press("Control+Enter")
        page.get_by_text("Ready to run.").first.wait_for(timeout=120_000)
        _pick(page, "Output mode", "complete")
        page.get_by_label("Seconds per file", exact=True).fill("1")  # 40 files: lost after the first ones, the rest read once resumed
        page.get_by_label("Seconds per file", exact=True).press("Enter")
        page.get_by_role("textbox", name="Query name").fill("doomed")
        page.get_by_role("textbox", name="Query name").press("Enter")
        page.get_by_role("button", name="Start query").click()
        page.wait_for_function(RESULT_ROWS_SHOWN, timeout=CHART_DATA_SECONDS * 1000)

        editor.fill(HEAP_FILLING_SQL)
        editor.press("Control+Enter")
        banner = page.get_by_text("Spark stopped unexpectedly")
        banner.wait_for(timeout=180_000)
        told = banner.inner_text()  # the module's earlier kept queries are named too
        assert "heap filled" in told, told
        killed_at = re.search(r"doomed \(running, (\d+) batch", told)
        assert killed_at and int(killed_at[1]) < 40 and re.search(r"[\w, ]*\bdoomed\b[\w, ]* kept (its|their) checkpoint and result", told), told
        assert page.locator(".stException").count() == 0
        assert app.process.poll() is None  # the server lives on

        page.get_by_text("Spark is ready").wait_for(timeout=SERVER_START_SECONDS * 1000)
        page.get_by_text("is not checked again").first.wait_for(timeout=60_000)  # the text that filled the heap does not fill the new one
        # SQL is checked on the new JVM: the check once kept a handle on the dead one and refused every text until a restart
        editor = page.get_by_role("textbox", name="SQL")
        editor.wait_for(timeout=60_000)
        editor.fill(WINDOWED_SQL)
        editor.press("Control+Enter")
        page.get_by_text("Ready to run.").first.wait_for(timeout=120_000)
        assert page.locator(".stException").count() == 0

        page.goto(f"{app.url}/Queries", wait_until="domcontentloaded")
        page.get_by_text("doomed").first.wait_for(timeout=120_000)
        page.get_by_role("button", name="Resume").click()
        page.wait_for_function(
            """() => Array.from(document.querySelectorAll('[data-testid="stMetric"]')).some(
                 m => m.innerText.includes('Status') && m.innerText.includes('all data read'))""",
            timeout=CHART_DATA_SECONDS * 1000,
        )
        assert page.locator(".stException").count() == 0
        page.get_by_text("doomed runs again, resumed from its checkpoint.").first.wait_for(timeout=60_000)  # the banner no longer says to resume it
        kept = data_root / ".queries" / "doomed" / "result.json"  # its snapshot (a complete table is stored whole each batch) and journal
        table = SqlTable("complete", StructType.fromJson(json.loads(json.loads(kept.read_text())["schema"])))
        table.load(kept)
        clicks = spark.read.option("header", True).csv(str(SAMPLE_FEEDS / "web_clicks" / "batch-*.csv"))
        uninterrupted = clicks.where(F.try_to_timestamp("event_time").isNotNull()).groupBy("key").agg(F.count("*").alias("n"))
        assert sorted(table.rows(), key=str) == sorted(((row.key, row.n) for row in uninterrupted.collect()), key=str)
        page.get_by_role("button", name="Stop query").click()
        page.get_by_text("stopped", exact=True).first.wait_for(timeout=60_000)
    finally:
        page.close()
