"""Live query in SQL under ``streamlit.testing.v1.AppTest``, on the app's shared Spark session: checked before Start, run, watched, listed."""

from __future__ import annotations

import html
import os
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from support.app import linked_page, page_metric, page_text, shared_link

from dashboard import shared
from streaming.app.snapshot import snapshot
from streaming.engine.data.datasets import data_root
from streaming.engine.run.checkpoints import KeptQuery

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120


def _live() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    shared.session_starter().wait(TIMEOUT)
    at = at.switch_page(shared.LIVE_PAGE).run()
    at.session_state["lab_feed"] = "guide_words"
    at.session_state["lab_seconds_per_file"] = 0.5
    return at.run()


def test_edit_as_sql_writes_the_forms_query_and_a_broken_query_is_refused_at_its_line(app_registry) -> None:
    at = _live()
    assert not at.exception, at.exception
    at.button(key="lab_edit_as_sql").click().run()
    assert at.session_state["lab_query_mode"] == "SQL"
    text = at.text_area(key="lab_sql").value
    assert "FROM STREAM(`events`)" in text and "WATERMARK `event_time` DELAY OF INTERVAL 30 SECONDS" in text
    assert any(message.value.startswith("Ready to run.") for message in at.success), [e.value for e in at.error]

    at.text_area(key="lab_sql").input("SELECT key,\n  count(*) AS n\nFROM events\nGROUP BY nope").run()
    assert not at.exception, at.exception
    errors = [error.value for error in at.error]
    assert errors and errors[0].startswith("SQL: line 4, column 10:") and "`nope` cannot be resolved" in errors[0], errors
    assert "Traceback" not in errors[0] and "org.apache" not in errors[0]
    assert at.button(key="lab_sql_start").disabled


JOINED_SQL = (
    "SELECT window(e.event_time, '10 minutes') AS w, e.key, count(*) AS n\n"
    "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 10 MINUTES AS e LEFT SEMI JOIN lookup l ON l.key = e.key\nGROUP BY 1, 2\n"
)
"""The guide's query, its words kept by a semi join with a table read whole from another sample: a second view, as only the CLI took."""


def test_a_sql_query_over_a_stream_and_a_table_starts_shows_its_table_operators_and_watermark_and_is_listed(app_registry) -> None:
    at = _live()
    at.session_state["lab_query_mode"] = "SQL"
    at.session_state["lab_sql"] = JOINED_SQL
    at.run()
    assert not at.exception, at.exception
    at.number_input(key="lab_sql_views").set_value(1).run()
    at.text_input(key="lab_sql_view2_name").set_value("lookup").run()
    at.radio(key="lab_sql_view2_read").set_value("table").run()
    at.selectbox(key="lab_sql_view2_table").set_value("guide_words (sample)").run()
    assert not at.exception, at.exception
    assert any(message.value.startswith("Ready to run.") for message in at.success), [error.value for error in at.error]
    at.button(key="lab_sql_start").click().run()
    assert not at.exception, at.exception
    assert not at.error, [error.value for error in at.error]
    run = app_registry.get(at.session_state["lab_selected"])
    assert run is not None and run.config.text == JOINED_SQL and [(view.name, view.static) for view in run.config.views] == [("events", False), ("lookup", True)]
    def read() -> int:
        return sum(int(summary["num_input_rows"]) for summary in run.log.summaries())

    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and read() < 10:  # the quiet rule: each file after its pause and after Spark's no-data batch
        time.sleep(0.5)
    assert read() >= 10, "the guide feed's four files (10 rows) were not read"
    at.run()
    frames = [frame.value for frame in at.dataframe]
    table = next(value for value in frames if "w.start" in value.columns)
    assert {"w.start", "w.end", "key", "n"} <= set(table.columns) and table["n"].sum() >= 7
    operators = next(value for value in frames if "operator" in value.columns)
    assert list(operators["operator"]) == ["stateStoreSave"]  # a join with a table keeps no state
    assert any("watermark comes from `event_time`" in caption.value for caption in at.caption)
    watermark = next(metric.value for metric in at.metric if metric.label == "Watermark")
    assert watermark != "none yet"
    # Why was it dropped, for SQL as for the form: the view's rows judged in the query's own 10-minute windows; the guide's 12:04 donkey
    # arrives after the watermark reached 12:11, and is the one row not counted
    assert int(page_metric(at, "Events so far")) == 10 and int(page_metric(at, "Not counted")) == 1
    at.toggle(key="lab_dropped_list").set_value(True).run()
    dropped = next(value for value in (frame.value for frame in at.dataframe) if "rule" in value.columns)
    assert list(dropped["key"]) == ["donkey"] and str(dropped["watermark"].iloc[0]).endswith("12:11:00")
    [program] = [code.value for code in at.code if "result = spark.sql(SQL)" in code.value]  # Show code: the query's own program
    assert "GROUP BY" in program and "guide_words" in program
    assert "Download report (HTML)" in {button.label for button in at.get("download_button")}
    report = snapshot(run, stall_batches=1).report()
    assert "SQL query " + run.name in report and "Views: events: guide_words; lookup: guide_words (static)" in report and "stateStoreSave" in report
    assert html.escape(JOINED_SQL) in report and html.escape(program) in report  # the query as written, and the program Show code shows

    # its read-only link: the numbers and charts, not the query, its program, its report or the dropped events, until the owner ticks them
    viewer = linked_page(shared_link(at)).run()  # the whole view: a run's first view in a session is its headline alone
    assert not viewer.exception, viewer.exception
    assert int(page_metric(viewer, "Not counted")) == 1 and any("w.start" in frame.value.columns for frame in viewer.dataframe)
    seen = page_text(viewer)
    for hidden in ("SELECT", "Show code", "Download report", "List the dropped events", "sample_feeds/guide_words", str(ROOT)):
        assert hidden not in seen, hidden
    at.checkbox(key=f"lab_share_code_{run.name}").check().run()
    assert [code.value for code in viewer.run().code if "result = spark.sql(SQL)" in code.value] == [program]
    at.checkbox(key=f"lab_share_code_{run.name}").uncheck().run()
    at.checkbox(key=f"lab_share_report_{run.name}").check().run()
    assert "Download report (HTML)" in {button.label for button in viewer.run().get("download_button")} and "SELECT" not in page_text(viewer)
    viewed = snapshot(run, stall_batches=1).report(code=False)  # what that button downloads: the view, without the query or its program
    assert "stateStoreSave" in viewed and html.escape(JOINED_SQL) not in viewed and "spark.sql(SQL)" not in viewed and "sample_feeds" not in viewed

    queries = at.switch_page(shared.QUERIES_PAGE).run()
    assert not queries.exception, queries.exception
    assert any(run.name in text.value for text in queries.markdown)
    assert any("aggregation: sql" in text.value and "SELECT window(e.event_time" in text.value for text in queries.caption), [text.value for text in queries.caption]

    # Change and resume, once it is stopped: what Spark will do said as the query is edited, and applied only once that is read
    app_registry.stop(run.name)
    deadline = time.monotonic() + 120
    while run.status == "active":
        assert time.monotonic() < deadline, "the query did not stop"
        time.sleep(0.5)
    queries.run()
    key = f"chg_{run.name}"
    queries.text_area(key=f"{key}_sql").set_value(JOINED_SQL.replace("e.key, count(*)", "e.key, e.event_time, count(*)").replace("GROUP BY 1, 2", "GROUP BY 1, 2, 3")).run()
    assert any("Spark will refuse this change** (STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE)" in error.value for error in queries.error), [e.value for e in queries.error]
    assert queries.button(key=f"{key}_apply").disabled  # not without the user's tick
    longer = JOINED_SQL.replace("INTERVAL 10 MINUTES", "INTERVAL 20 MINUTES")
    queries.text_area(key=f"{key}_sql").set_value(longer).run()
    assert any("the watermark never moves back" in warning.value for warning in queries.warning), [w.value for w in queries.warning]
    next(box for box in queries.checkbox if box.key.startswith(f"{key}_read_")).check().run()  # the tick of this change's prediction
    _press_until(queries, f"{key}_apply", _answered("Resumed with the change"))  # Try on a copy: in Chromium (test_browser)
    record = KeptQuery(run.workdir).record()
    assert record["config"]["text"] == longer and [change["config"]["text"] for change in record["changes"]] == [JOINED_SQL]

    # the same checkpoint read as one of your own: what it holds, and a query checked against it without running anything
    queries.selectbox(key="ckpt_folder").set_value(run.workdir.resolve().relative_to(data_root(os.environ)) / "checkpoint").run()
    assert int(page_metric(queries, "Last committed batch")) >= 3 and page_metric(queries, "Watermark it carries") != "none"
    queries.text_area(key="ckpt_sql").set_value(longer.replace("e.key, count(*)", "e.key, e.event_time, count(*)").replace("GROUP BY 1, 2", "GROUP BY 1, 2, 3")).run()
    assert any("Spark will refuse this change** (STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE)" in error.value for error in queries.error)
    assert app_registry.get(run.name) is None  # the run of the old query is forgotten: the page lists the folder, which holds the new one
    app_registry.delete(run.name)


def _guide_page(path: str, state: dict[str, object]) -> AppTest:
    """``path`` opened through the app once Spark is ready, its source the guide_words sample feed (the view ``events``), with ``state`` set."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT).run()
    shared.session_starter().wait(TIMEOUT)
    at = at.switch_page(path)
    for key, value in {"lab_source": "feed", "lab_feed": "guide_words", **state}.items():
        at.session_state[key] = value  # before the page's first run: what it shows first becomes the data its other pickers follow
    at.run()
    assert not at.exception, at.exception
    return at


def _answered(words: str):
    """Whether a page's job says ``words``; fails at once when the job failed."""

    def answered(page: AppTest) -> bool:
        assert not any("failed after" in error.value for error in page.error), [error.value for error in page.error]
        return any(words in message.value for message in page.success)

    return answered


def _press_until(at: AppTest, button: str, done, timeout: float = 240.0) -> None:
    """Press ``button`` and rerun the page until ``done(at)``; fail after ``timeout`` seconds, or once the page shows an exception."""
    at.button(key=button).click().run()
    deadline = time.monotonic() + timeout
    while not done(at):
        assert time.monotonic() < deadline, f"{button}: not done after {timeout} s"
        time.sleep(1.0)
        at.run()
        assert not at.exception, at.exception


def test_the_tuner_sweeps_a_sql_querys_watermark_on_spark_and_recommends_a_delay(app_registry) -> None:
    at = _guide_page(shared.TUNER_PAGE, {
        "tune_query_mode": "SQL",
        "tune_sql": (
            "SELECT window(event_time, '10 minutes') AS w, key, count(*) AS n, max(event_time) AS latest\n"
            "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 5 MINUTES\nWHERE key <> 'cat'\nGROUP BY 1, 2\n"
        ),
        "tune_sql_delays": "0 seconds, 10 minutes",
        "tune_sql_target": 1.0,
        "tune_arrival": "busy",  # the guide's 12:04 donkey is dropped under quiet even at 10 minutes (the guide's own example)
    })
    assert any(message.value.startswith("Ready to run.") for message in at.success), [error.value for error in at.error]
    _press_until(at, "tune_sql_run", lambda page: any(message.value.startswith(("Recommended:", "No point")) for message in [*page.success, *page.warning]))
    table = next(frame.value for frame in at.dataframe if "completeness" in frame.value.columns)
    # the guide's four files back to back under the busy rule (available-now)
    assert list(table["delays"]) == ["0 seconds", "10 minutes"] and list(table["batches"]) == [4, 4]
    assert table["completeness"].iloc[0] < table["completeness"].iloc[1] == 1.0
    assert table["dropped (Spark)"].iloc[0] > 0
    assert any(message.value.startswith("Recommended: 10 minutes") for message in at.success)


def test_compare_runs_two_sql_queries_over_the_same_view_and_measures_each_against_its_own_exact_answer(app_registry) -> None:
    windowed = "SELECT window(event_time, '10 minutes') AS w, key, count(*) AS n\nFROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL {delay}\nGROUP BY 1, 2\n"
    at = _guide_page(shared.COMPARE_PAGE, {
        "cmp_kind": "SQL queries", "cmpsql_sql": windowed.format(delay="0 SECONDS"), "cmpsql_2": windowed.format(delay="10 MINUTES"),
        "cmpsql_arrival": "busy",
    })
    assert any(message.value == "Ready to compare." for message in at.success), [error.value for error in at.error]

    def compared(page: AppTest) -> bool:
        assert not page.error, [error.value for error in page.error]
        return any("completeness" in frame.value.columns for frame in page.dataframe)

    _press_until(at, "cmpsql_run", compared)
    table = next(frame.value for frame in at.dataframe if "completeness" in frame.value.columns)
    assert list(table["query"]) == ["Query 1", "Query 2"] and list(table["watermark delays"]) == ["0 seconds", "10 minutes"]
    assert list(table["batches"]) == [4, 4]  # the guide's four files back to back under the busy rule (available-now)
    assert table["completeness"].iloc[0] < table["completeness"].iloc[1] == 1.0 and table["dropped (Spark)"].iloc[0] > 0
    assert (table["exact rows"] == table["exact rows"].iloc[0]).all()  # the same text but for the delay: the same exact answer
