"""The dashboard under ``streamlit.testing.v1.AppTest``, on the real local Spark session.

``st.cache_resource`` outlives an ``AppTest``: every test here shares the app's
one SparkSession and QueryRegistry (``shared._shared_registry()``), and the
conftest's ``spark`` fixture gets the same session through ``getOrCreate``.
The app's registry and the conftest's ``registry`` each have their own
listener; they never share a query name. Every query a test starts is removed
in ``finally``. Fragments do not tick under AppTest, so a test that waits for
data calls ``at.run()`` in a polling loop with a deadline.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.app import app_page, drawn_figures, linked_page, new_app, page_errors, page_metric, page_text, shared_link, wait_until

from dashboard import data, datasets, live, queries, shared, sql
from streaming.engine.data.datasets import DatasetStore, Upload, data_root
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_names
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import FEED_COLUMNS, FeedSource, GeneratorSource, QueryConfig, RateSource, SocketSource

ROOT = Path(__file__).resolve().parents[2]
LIVE = shared.LIVE_PAGE
QUERIES = shared.QUERIES_PAGE
WAIT_FOR_DATA = 180.0  # generous: the machine is shared, a first batch can take a minute under load

# A cheap query for tests that only need something active: one row a second, a batch every 10 s.
IDLE_CONFIG = QueryConfig(RateSource(rows_per_second=1, keys=2), watermark=None, trigger="processing_time", trigger_interval="10 seconds")








def _has_results_and_progress(at: AppTest) -> bool:
    return len(at.dataframe) == 1 and len(at.dataframe[0].value) > 0 and int(page_metric(at, "Batches")) >= 1




def _button_keys(at: AppTest) -> set[str]:
    return {button.key for button in at.button}




# --- pure helpers -------------------------------------------------------------------


def test_feed_names_are_the_sample_feed_folders() -> None:
    assert feed_names() == ["guide_words", "sensor_readings", "web_clicks"]


def test_build_config_for_every_source_kind() -> None:
    query = {"window": "10 minutes", "slide": "5 minutes", "watermark": "10 minutes", "output_mode": "append", "trigger": "default", "trigger_interval": None}
    feed = live.build_config("feed", {"feed": "guide_words", "seconds_per_file": 0.5}, query)
    assert isinstance(feed.source, FeedSource) and feed.source.path == SAMPLE_FEEDS / "guide_words"
    assert (feed.window_ms, feed.slide_ms, feed.output_mode) == (600_000, 300_000, "append")
    socket = live.build_config("socket", {"feed": "web_clicks", "lines_per_second": 5.0}, query)
    assert isinstance(socket.source, SocketSource) and socket.source.lines_per_second == 5.0
    generator = live.build_config("generator", {"events_per_second": 5, "keys": 2, "max_lag": "5s", "late_share": 0.1, "late_delay": "1 minute", "seed": 3}, query)
    assert isinstance(generator.source, GeneratorSource) and generator.source.late_delay_ms == 60_000
    assert live.build_config("rate", {"rows_per_second": 3, "keys": 2}, query).source.kind == "rate"
    assert live.build_config("rate-micro-batch", {"rows_per_batch": 3, "advance": "2s", "keys": 2}, query).source.kind == "rate-micro-batch"


@pytest.mark.parametrize("feed", ["../streaming", "/etc", "missing"])
def test_a_feed_must_be_one_of_the_sample_feeds(feed: str) -> None:
    with pytest.raises(ConfigError) as err:
        live.build_source("feed", {"feed": feed, "seconds_per_file": 1.0})
    assert err.value.field == "source.path" and feed in str(err.value)


def test_check_name() -> None:
    assert live.check_name("  ") is None
    assert live.check_name(" clicks_1 ") == "clicks_1"
    with pytest.raises(ConfigError, match="name: '1st'"):
        live.check_name("1st")


def test_source_summary_shortens_the_feed_path() -> None:
    summary = queries.source_summary({"source.path": "/somewhere/sample_feeds/web_clicks", "source.seconds_per_file": "2.0", "source.kind": "feed", "window": "1 minute"})
    assert summary == "feed: path=web_clicks, seconds_per_file=2.0"


# --- pages --------------------------------------------------------------------------


def test_home_page() -> None:
    at = new_app().run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Streaming Lab"
    assert [link.value for link in at.page_link] == [
        "Live query: configure, start and watch a query",
        "Queries: everything running on the shared Spark session",
        "Watermark tuner: the smallest watermark delay that reaches a completeness target",
        "Compare: 2-4 configurations, or joins, side by side on the same data",
        "Joins: two streams, a watermark on each, and the rows that wait for a match",
        "Datasets: upload your own events and check how Spark reads them",
    ]
    assert [header.value for header in at.subheader] == ["Start with your own data"]  # where a newcomer with data begins


@pytest.mark.spark
@pytest.mark.parametrize(("path", "title"), [(LIVE, "Live query"), (QUERIES, "Queries")])
def test_every_page_renders(path: str, title: str) -> None:
    at = app_page(path)
    assert not at.exception, at.exception
    assert at.title[0].value == title
    assert not page_errors(at)


def test_live_page_starts_watches_and_stops_a_feed_query(app_registry) -> None:
    name = "t_app_live_feed"
    at = app_page(LIVE)
    at.selectbox(key="lab_source").set_value("feed")
    at.selectbox(key="lab_feed").set_value("web_clicks")
    at.number_input(key="lab_seconds_per_file").set_value(0.5)
    at.text_input(key="lab_name").set_value(name)
    try:
        at.button(key="lab_start").click().run()
        assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
        assert at.selectbox(key="lab_selected").value == name
        assert app_registry.get(name) is not None
        assert set(drawn_figures(at)) == {"lab_chart_counts"} and not at.dataframe  # the first view is its headline alone, the rest a refresh later
        at.session_state["lab_details_table"] = True  # the result table's panel, opened: drawn only then
        # The table is folded inside the batch; its progress event arrives a little later: wait for both.
        assert wait_until(at, _has_results_and_progress, WAIT_FOR_DATA), "no result rows or no progress"
        table = at.dataframe[0].value
        assert list(table.columns) == ["window_start", "window_end", "key", "count"]
        assert page_metric(at, "Status") == "active"
        charts = drawn_figures(at)
        assert len(charts) == 12  # 7 engine charts, event time vs arrival, lateness histogram, 3 of latency (from each file's hand-over)
        assert {"lab_chart_latency", "lab_chart_latency_histogram", "lab_chart_latency_breakdown"} <= set(charts)
        assert int(page_metric(at, "Events so far")) > 0
        assert str(table["key"].iloc[0]) in charts["lab_chart_counts"]  # the result-table figure has a line per key
        at.toggle(key="lab_dropped_list").set_value(True).run()
        assert not at.exception, at.exception
        assert any(list(frame.value.columns)[-1] == "rule" for frame in at.dataframe)
        assert {button.label for button in at.get("download_button")} >= {"Download CSV", "Download Parquet", "Download report (HTML)"}

        # its read-only link: the view, and nothing that names the owner's query or the server's paths until the owner ticks it
        viewer = linked_page(shared_link(at))
        for panel in ("lab_details_progress", "lab_details_configuration", f"lab_code_{name}_open"):
            viewer.session_state[panel] = True  # a viewer who opened every panel there was
        viewer.run()  # the whole view: a run's first view in a session is its headline alone
        assert not viewer.exception, viewer.exception
        assert any(f"Watching **{name}** read-only" in info.value for info in viewer.info), [info.value for info in viewer.info]
        assert int(page_metric(viewer, "Events so far")) > 0 and "lab_chart_counts" in drawn_figures(viewer)
        seen = page_text(viewer)
        for hidden in ("Show code", "Download report", "List the dropped events", "Configuration", "Latest progress", "sample_feeds/web_clicks", str(ROOT), str(data_root(os.environ))):
            assert hidden not in seen, hidden
        assert not {"lab_stop", f"lab_share_revoke_{name}"} & _button_keys(viewer)
        at.checkbox(key=f"lab_share_code_{name}").check().run()
        at.checkbox(key=f"lab_share_report_{name}").check().run()
        viewer.run()
        assert "Download report (HTML)" in {button.label for button in viewer.get("download_button")}
        assert any("sample_feeds/web_clicks" in code.value for code in viewer.code)  # Show code, granted: the program reads the feed's files
        assert "List the dropped events" not in page_text(viewer)  # never granted

        at.button(key="lab_stop").click().run()  # the page does not wait for Spark's stop
        assert not at.exception, at.exception
        assert wait_until(at, lambda _: app_registry.get(name).status == "stopped", 60), app_registry.get(name).status
        at.run()
        assert page_metric(at, "Status") == "stopped" and at.button(key="lab_stop").disabled
    finally:
        app_registry.delete(name)


def test_a_query_keeps_its_state_and_resumes_from_the_queries_page_after_a_restart(app_registry) -> None:
    """Start on RocksDB, stop, forget the run as a server restart would, then Resume on the Queries page and Delete. Its read-only link,
    made before, shows the resumed run, until the owner revokes it; the new link ends with the query's Delete."""
    name = "t_app_kept"
    at = app_page(LIVE)
    at.selectbox(key="lab_source").set_value("feed")
    at.selectbox(key="lab_feed").set_value("web_clicks")
    at.number_input(key="lab_seconds_per_file").set_value(0.5)
    at.selectbox(key="lab_state_store").set_value("rocksdb")
    at.text_input(key="lab_name").set_value(name)
    try:
        at.button(key="lab_start").click().run()
        assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
        first = app_registry.get(name)
        assert first.kept and first.config.state_store == "rocksdb"
        assert wait_until(at, lambda _: len(first.log) >= 2, WAIT_FOR_DATA), "no progress"
        link = shared_link(at)
        at.button(key="lab_stop").click().run()
        assert wait_until(at, lambda _: first.status == "stopped", 60), first.status
        at.run()
        assert [link.proto.page for link in at.get("page_link") if link.proto.label == "Change and resume"], "no way from the stopped run to change it"
        batches, staged = len(first.log), first.feeder.staged
        app_registry.remove(name)  # a server restart forgets the run; its folder stays
        at.switch_page(QUERIES).run()
        assert not at.exception, at.exception
        assert any(name in markdown.value and "stopped" in markdown.value for markdown in at.markdown)
        at.button(key=f"lab_resume_{name}").click().run()
        assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
        assert at.title[0].value == "Live query" and at.selectbox(key="lab_selected").value == name
        resumed = app_registry.get(name)
        assert resumed is not first and resumed.kept and resumed.config == first.config
        assert len(resumed.log) >= batches  # the first run's batches are still there
        at.switch_page(LIVE)  # AppTest reruns the page it was given, not the one the script switched to
        assert wait_until(at, lambda _: resumed.feeder.staged > staged and len(resumed.log) > batches, WAIT_FOR_DATA), "the resumed query ran no batch"
        assert resumed.log.summaries()[0]["batch_id"] == 0
        assert "RocksDB: memory" in drawn_figures(at)["lab_chart_store"]
        viewer = linked_page(link)  # the link made before the stop names the kept query: its resumed run
        assert any(f"Watching **{name}** read-only" in info.value for info in viewer.info), [warning.value for warning in viewer.warning]
        assert int(page_metric(viewer, "Batches")) > batches
        at.button(key=f"lab_share_revoke_{name}").click().run()
        assert shared_link(at) != link
        viewer.run()
        assert any("names no query" in warning.value for warning in viewer.warning) and not viewer.metric
        again = linked_page(shared_link(at))
        assert any(f"Watching **{name}** read-only" in info.value for info in again.info)
        app_registry.stop(name)
        stray = app_registry.kept_root / "t_app_stray"  # a kept folder that lost its query.json: broken, Delete only
        (stray / "checkpoint").mkdir(parents=True)
        at.switch_page(QUERIES).run()
        assert any("t_app_stray" in markdown.value and "broken" in markdown.value for markdown in at.markdown)
        # the form's kept query changed as a tuned one is: what Spark will do said before anything runs, Apply only once that is read
        at.text_input(key=f"chg_{name}_watermark").set_value("5 minutes").run()
        assert any("the watermark never moves back" in warning.value for warning in at.warning), [error.value for error in at.error]
        assert at.button(key=f"chg_{name}_apply").disabled
        at.text_input(key=f"chg_{name}_watermark").set_value("soon").run()
        assert any("does not run" in error.value and "soon" in error.value for error in at.error), [error.value for error in at.error]
        assert not [button for button in at.button if button.key == "lab_resume_t_app_stray"]
        at.button(key="lab_delete_t_app_stray").click().run()
        at.button(key="lab_delete_sure_t_app_stray").click().run()
        assert not stray.exists() and any("Deleted t_app_stray" in message.value for message in at.success)
        at.button(key=f"lab_delete_{name}").click().run()
        assert app_registry.get(name) is not None  # asked first
        at.button(key=f"lab_delete_sure_{name}").click().run()
        assert not at.exception, at.exception
        assert app_registry.get(name) is None and name not in {query.folder.name for query in app_registry.kept()}
        assert any(f"Deleted {name}: its checkpoint, result and progress" in message.value for message in at.success)
        again.run()
        assert any("names no query" in warning.value for warning in again.warning)  # the query deleted, its link ends with it
    finally:
        app_registry.delete(name)


def test_a_run_just_started_is_looked_at_often_until_it_has_rows_or_has_run_a_while_and_its_view_is_whole_and_an_ended_one_not_again() -> None:
    from types import SimpleNamespace

    now = pd.Timestamp.now(tz="UTC").tz_convert(None)

    def run(rows: int, status: str = "active", age_s: float = 0.5) -> SimpleNamespace:
        return SimpleNamespace(table=[()] * rows, status=status, started_at=now - pd.Timedelta(seconds=age_s))

    assert live._awaits_first_rows(run(0))  # type: ignore[arg-type]
    assert not live._awaits_first_rows(run(3))  # type: ignore[arg-type]
    assert not live._awaits_first_rows(run(0, status="failed"))  # type: ignore[arg-type]
    assert not live._awaits_first_rows(run(0, age_s=live.FIRST_ROWS_SECONDS + 1))  # type: ignore[arg-type]  # a silent topic: the usual pace
    assert live.FIRST_ROWS_POLL_SECONDS < shared.REFRESH_SECONDS
    assert live._refresh_seconds(run(0)) == live.FIRST_ROWS_POLL_SECONDS  # type: ignore[arg-type]
    assert live._refresh_seconds(run(3)) == shared.REFRESH_SECONDS  # type: ignore[arg-type]
    assert live._refresh_seconds(run(3), opened=False) == live.FIRST_ROWS_POLL_SECONDS  # type: ignore[arg-type]  # its headline drawn alone: the rest soon
    for ended in ("stopped", "failed", "finished"):
        assert live._refresh_seconds(run(3, status=ended)) is None  # type: ignore[arg-type]  # drawn once, with the page
        assert live._refresh_seconds(run(3, status=ended), opened=False) is None  # type: ignore[arg-type]  # whole at once


def test_slide_longer_than_window_is_refused_before_spark(app_registry) -> None:
    at = app_page(LIVE)
    runs = len(app_registry.runs())
    at.text_input(key="lab_window").set_value("1 minute")
    at.radio(key="lab_window_kind").set_value("sliding").run()
    at.text_input(key="lab_slide").set_value("5 minutes").run()
    assert not at.exception, at.exception
    [message] = page_errors(at)
    assert "slide" in message and "'5 minutes'" in message
    assert "lab_start" not in _button_keys(at)
    assert len(app_registry.runs()) == runs


def test_append_without_watermark_is_refused_naming_output_mode(app_registry) -> None:
    at = app_page(LIVE)
    runs = len(app_registry.runs())
    at.checkbox(key="lab_use_watermark").uncheck()
    at.selectbox(key="lab_output_mode").set_value("append").run()
    assert not at.exception, at.exception
    [message] = page_errors(at)
    assert "output_mode" in message and "append" in message and "watermark" in message
    assert "lab_start" not in _button_keys(at)
    assert len(app_registry.runs()) == runs


def test_a_bad_query_name_is_refused(app_registry) -> None:
    at = app_page(LIVE)
    at.text_input(key="lab_name").set_value("2 words").run()
    [message] = page_errors(at)
    assert message.startswith("Cannot run this configuration: name: '2 words'")
    assert "lab_start" not in _button_keys(at)


def test_queries_page_lists_runs_and_other_queries_and_stops_them(app_registry, registry, monkeypatch) -> None:
    """A run of the app's registry and a query started elsewhere on the session (the test registry): the operator stops it, a user does
    not see it."""
    mine, other = "t_app_listed", "t_app_other"
    monkeypatch.setenv("STREAMING_LAB_OPERATOR_TOKEN", "operator-secret")
    try:
        app_registry.start(IDLE_CONFIG, mine)
        foreign = registry.start(IDLE_CONFIG, other)
        user = app_page(QUERIES)
        assert not user.exception, user.exception
        assert f"lab_stop_other_{foreign.query.id}" not in _button_keys(user) and not any(other in markdown.value for markdown in user.markdown)
        at = new_app()
        at.query_params["operator"] = "operator-secret"
        at = at.run().switch_page(QUERIES).run()
        assert not at.exception, at.exception
        listed = at.dataframe[0].value
        row = listed[listed["name"] == mine].iloc[0]
        assert (row["status"], row["source"], row["trigger"], row["watermark"]) == ("active", "rate: rows_per_second=1, keys=2", "processing_time 10 seconds", "none")
        assert other not in set(listed["name"])
        assert f"lab_stop_other_{foreign.query.id}" in _button_keys(at)
        assert any(other in markdown.value for markdown in at.markdown)

        at.button(key=f"lab_watch_{mine}").click().run()
        assert not at.exception, at.exception
        assert at.title[0].value == "Live query" and at.selectbox(key="lab_selected").value == mine
        at.switch_page(QUERIES).run()

        at.button(key=f"lab_stop_run_{mine}").click().run()
        assert not at.exception, at.exception
        assert wait_until(at, lambda _: app_registry.get(mine).status == "stopped", 60), app_registry.get(mine).status
        at.run()
        listed = at.dataframe[0].value
        assert listed.loc[listed["name"] == mine, "status"].item() == "stopped"
        assert f"lab_remove_run_{mine}" in _button_keys(at)

        at.button(key=f"lab_stop_other_{foreign.query.id}").click().run()
        assert not at.exception, at.exception
        assert not foreign.query.isActive
        assert f"lab_stop_other_{foreign.query.id}" not in _button_keys(at)
    finally:
        app_registry.delete(mine)
        registry.remove(other)


def test_live_page_refuses_a_name_already_running(app_registry) -> None:
    """And the run watched before the refused Start is still drawn: a press starts the query before the watched run is drawn."""
    name = "t_app_duplicate"
    try:
        app_registry.start(IDLE_CONFIG, name)
        at = app_page(LIVE)
        at.selectbox(key="lab_source").set_value("rate")
        at.text_input(key="lab_name").set_value(name)
        watched = "lab_stop" in _button_keys(at)
        at.button(key="lab_start").click().run()
        assert not at.exception, at.exception
        assert any("already running" in message and name in message for message in page_errors(at))
        assert watched and "lab_stop" in _button_keys(at)
        assert len([run for run in app_registry.runs() if run.name == name]) == 1
    finally:
        app_registry.delete(name)


# --- datasets -------------------------------------------------------------------------------

DATASETS = shared.DATASETS_PAGE
EVENTS_JSONL = "".join(
    f'{{"ts": {1772460061000 + 7000 * index}, "user": "u{index % 3}", "amount": {index}.5}}\n' for index in range(12)
).encode()


class _Uploaded:
    """Stands in for Streamlit's UploadedFile: a name and bytes."""

    def __init__(self, name: str, data: bytes) -> None:
        self.name, self._data = name, data

    def getvalue(self) -> bytes:
        return self._data


def test_dataset_helpers(tmp_path: Path) -> None:
    store = datasets.dataset_store({"STREAMING_LAB_DATA": str(tmp_path / "root")})
    report = datasets.store_uploads(store, "kafka_dump", [_Uploaded("topic.jsonl", EVENTS_JSONL), _Uploaded("x.exe", b"MZ")])
    assert report.kept == {"topic.jsonl": 12} and [error.value for error in report.refused] == ["x.exe"]
    choices = datasets.dataset_choices(store)
    assert [choice.label for choice in choices] == [
        "kafka_dump", "ad_catalog (sample)", "ad_clicks (sample)", "ad_impressions (sample)", "guide_words (sample)", "meters_parquet (sample)",
        "orders_jsonl (sample)", "sensor_readings (sample)", "web_clicks (sample)",
    ]
    assert list(data.runnable_datasets(store)) == ["kafka_dump", "meters_parquet (sample)", "orders_jsonl (sample)"]
    store.add("web_clicks", [Upload("topic.jsonl", EVENTS_JSONL)])
    store.save_columns("web_clicks", {"event_time": "ts", "time_format": "epoch_ms", "key": "user"})
    labelled = data.data_choices(store)
    assert (labelled["web_clicks"].kind, labelled["web_clicks (dataset)"].kind) == ("feed", "dataset")  # a dataset is never hidden by a feed
    assert datasets.saved_mapping(store, datasets.DatasetChoice("web_clicks", True)) == FEED_COLUMNS
    assert datasets.saved_mapping(store, datasets.DatasetChoice("orders_jsonl", True)).time_format == "epoch_ms"
    files, fmt = datasets.dataset_files(store, choices[0])
    assert ([path.name for path in files], fmt) == (["topic.jsonl"], "json")
    with pytest.raises(ConfigError):
        datasets.dataset_files(store, datasets.DatasetChoice("../streaming", True))
    assert datasets.guess_column(["Timestamp", "user"], datasets.TIME_NAMES) == "Timestamp"
    assert datasets.guess_column(["a"], datasets.KEY_NAMES) is None
    mapping = datasets.build_mapping(
        {"event_time": "ts", "time_format": datasets.PATTERN, "time_format_pattern": "dd/MM/yyyy", "key": datasets.NONE, "value": "amount",
         "dedup_id": datasets.NONE, "arrival": datasets.NONE}
    )
    assert (mapping.event_time, mapping.time_format, mapping.key, mapping.value, mapping.arrival) == ("ts", "dd/MM/yyyy", None, "amount", None)
    with pytest.raises(ConfigError, match=r"columns\.event_time"):
        datasets.build_mapping({"event_time": datasets.NONE})


@pytest.mark.spark
def test_datasets_page_previews_renames_and_deletes(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "data"
    monkeypatch.setenv("STREAMING_LAB_DATA", str(root))
    DatasetStore(root).add("clicks", [Upload("topic.jsonl", EVENTS_JSONL)])
    at = app_page(DATASETS)
    assert not at.exception, at.exception
    assert at.title[0].value == "Datasets"
    assert at.selectbox(key="dataset_choice").value == "clicks"
    assert not page_errors(at), page_errors(at)  # the event time is guessed from the values: ts, in epoch milliseconds
    assert (at.selectbox(key="map_clicks_event_time").value, at.selectbox(key="map_clicks_time_format").value) == ("ts", "epoch_ms")
    at.button(key="save_mapping").click().run()
    assert DatasetStore(root).saved_columns("clicks") == {
        "event_time": "ts", "time_format": "epoch_ms", "key": "user", "value": None, "dedup_id": None, "arrival": None, "arrival_format": "auto",
    }
    assert any("This mapping is saved with clicks" in caption.value for caption in at.caption)
    assert (page_metric(at, "Rows"), page_metric(at, "Keys"), page_metric(at, "Event times empty or unparsable")) == ("12", "3", "0")
    assert any("2026-03-02 14:01:01" in caption.value and "2026-03-02 14:02:18" in caption.value for caption in at.caption)
    at.text_input(key="rename_to_clicks").set_value("my clicks").run()
    at.button(key="rename").click().run()
    assert any("Cannot rename: new name: 'my clicks' holds ' ' at 2" in error.value for error in at.error)  # refused, not renamed my_clicks
    assert at.selectbox(key="dataset_choice").value == "clicks" and DatasetStore(root).names() == ["clicks"]
    at.text_input(key="rename_to_clicks").set_value("my_clicks").run()
    at.button(key="rename").click().run()
    assert at.selectbox(key="dataset_choice").value == "my_clicks"
    assert DatasetStore(root).names() == ["my_clicks"]
    assert at.selectbox(key="map_my_clicks_time_format").value == "epoch_ms"  # the saved mapping moved with the dataset
    assert at.button(key="delete").disabled
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    assert not at.exception, at.exception
    assert DatasetStore(root).names() == []
    assert at.selectbox(key="dataset_choice").value == "ad_catalog (sample)"  # the first sample, once the user has none


def test_a_dataset_source_runs_with_its_saved_mapping_only(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    store = DatasetStore(tmp_path / "data")
    store.add("clicks", [Upload("topic.jsonl", EVENTS_JSONL)])
    params = {"root": str(store.root), "dataset": "clicks", "seconds_per_file": 1.0}
    with pytest.raises(ConfigError) as caught:
        live.build_source("dataset", params)
    assert (caught.value.field, caught.value.value) == ("columns", "clicks") and "Save mapping" in caught.value.reason
    store.save_columns("clicks", {"event_time": "ts", "time_format": "epoch_ms", "key": None})
    source = live.build_source("dataset", params)
    assert isinstance(source, FeedSource)
    assert (source.path, source.file_format, source.columns.event_time, source.columns.key) == (store.root / "clicks", "json", "ts", None)
    for bad in ({**params, "dataset": None}, {**params, "dataset": "../data"}, {**params, "root": str(tmp_path)}):
        with pytest.raises(ConfigError):
            live.build_source("dataset", bad)


def test_the_aggregate_of_a_dataset_reads_its_mapped_value_column(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    store = DatasetStore(tmp_path / "data")
    store.add("orders", [Upload("topic.jsonl", EVENTS_JSONL)])
    store.save_columns("orders", {"event_time": "ts", "time_format": "epoch_ms", "key": "user", "value": "amount"})
    params = {"root": str(store.root), "dataset": "orders", "seconds_per_file": 1.0}
    query = {"window": "1 minute", "slide": None, "watermark": "30 seconds", "output_mode": "update", "trigger": "default", "trigger_interval": None}
    assert live.build_config("dataset", params, {**query, "aggregation": "avg"}).measure == "avg(amount)"
    store.save_columns("orders", {"event_time": "ts", "time_format": "epoch_ms", "key": "user"})
    with pytest.raises(ConfigError, match="needs a value column"):
        live.build_config("dataset", params, {**query, "aggregation": "avg"})


def test_a_dataset_source_takes_its_batching_rule(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    store = DatasetStore(tmp_path / "data")
    store.add("orders", [Upload("topic.jsonl", EVENTS_JSONL)])
    store.save_columns("orders", {"event_time": "ts", "time_format": "epoch_ms", "key": "user"})
    params = {"root": str(store.root), "dataset": "orders", "seconds_per_file": 1.0}
    assert live.build_source("dataset", {**params, "batch_by": "rows:5", "batch_interval": None}).batching.rows == 5
    with pytest.raises(ConfigError, match="arrival column"):
        live.build_source("dataset", {**params, "batch_by": "arrival", "batch_interval": "10 seconds"})
    store.save_columns("orders", {"event_time": "ts", "time_format": "epoch_ms", "key": "user", "arrival": "ts2", "arrival_format": "epoch_ms"})
    source = live.build_source("dataset", {**params, "batch_by": "arrival", "batch_interval": "10 seconds"})
    assert (source.batching.column, source.arrival_format) == ("ts2", "epoch_ms")


def test_a_query_opens_in_the_live_form_with_its_data_and_shape(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    store = DatasetStore(tmp_path / "data")
    store.add("orders", [Upload("topic.jsonl", EVENTS_JSONL)])
    store.save_columns("orders", {"event_time": "ts", "time_format": "epoch_ms", "key": "user", "value": "amount"})
    runnable = live.replayed_choices(feed_names(), data.runnable_datasets(store))
    feed = QueryConfig(
        FeedSource(SAMPLE_FEEDS / "guide_words", 0), window="10 minutes", slide="5 minutes", watermark=None, output_mode="complete", arrival="busy",
    )
    assert live.form_values(feed, runnable) == {
        "lab_source": "feed", "lab_feed": "guide_words", "lab_aggregation": "count", "lab_deduplicate": False, "lab_sessions": False,
        "lab_window": "10 minutes", "lab_window_kind": "sliding", "lab_slide": "5 minutes", "lab_use_watermark": False, "lab_output_mode": "complete",
        "lab_arrival": "busy",
    }
    source = live.build_source("dataset", {"root": str(store.root), "dataset": "orders", "batch_by": "rows:5", "batch_interval": None})
    sessions = QueryConfig(source, watermark="2 minutes", output_mode="append", aggregation="avg", session_gap="30 seconds")
    values = live.form_values(sessions, runnable)
    assert {key: values[key] for key in ("lab_source", "lab_dataset", "lab_dataset_batching", "lab_dataset_rows")} == {
        "lab_source": "dataset", "lab_dataset": "orders", "lab_dataset_batching": "N rows each", "lab_dataset_rows": 5}
    assert (values["lab_sessions"], values["lab_session_gap"], values["lab_watermark"], values["lab_aggregation"]) == (True, "30 seconds", "2 minutes", "avg")
    with pytest.raises(ConfigError) as err:  # a dataset whose mapping is gone is not runnable
        live.form_values(sessions, {})
    assert (err.value.field, err.value.value) == ("source", "orders")
    with pytest.raises(ConfigError, match="sample feed or a dataset"):
        live.form_values(IDLE_CONFIG, runnable)


def test_the_state_caption_says_when_each_operators_rows_leave() -> None:
    assert live._eviction("dedupeWithinWatermark").startswith("an id is kept until the watermark passes its event time")
    assert live._eviction("sessionWindowStateStoreSaveExec").startswith("a session is emitted")
    assert live._eviction("stateStoreSave").startswith("a window is emitted")


@pytest.mark.spark
def test_the_form_is_kept_when_leaving_the_page_and_read_from_its_link() -> None:
    at = app_page(LIVE)
    at.selectbox(key="lab_source").set_value("generator").run()
    at.number_input(key="lab_gen_rate").set_value(70)
    at.text_input(key="lab_window").set_value("2 minutes").run()
    at.switch_page(QUERIES).run()
    at.switch_page(LIVE).run()
    assert not at.exception, at.exception
    assert (at.selectbox(key="lab_source").value, at.number_input(key="lab_gen_rate").value, at.text_input(key="lab_window").value) == (
        "generator", 70, "2 minutes")
    linked = new_app()
    linked.query_params.update({"lab_window": "5 minutes", "lab_use_watermark": "false", "lab_output_mode": "no such mode"})
    linked.run().switch_page(LIVE).run()
    assert not linked.exception, linked.exception
    assert linked.text_input(key="lab_window").value == "5 minutes" and "lab_watermark" not in {field.key for field in linked.text_input}
    assert linked.selectbox(key="lab_output_mode").value == "update"  # a value the form does not offer is ignored

    # the SQL side too: coming back opened on the form, the SQL written before gone
    at.segmented_control(key=sql.MODE_KEY).set_value("SQL").run()
    at.text_area(key=sql.TEXT_KEY).set_value("SELECT key, count(*) AS n FROM STREAM(events) GROUP BY key").run()
    at.selectbox(key="lab_sql_output_mode").set_value("complete").run()
    at.switch_page(QUERIES).run()
    at.switch_page(LIVE).run()
    assert not at.exception, at.exception
    assert at.segmented_control(key=sql.MODE_KEY).value == "SQL"
    assert at.text_area(key=sql.TEXT_KEY).value.startswith("SELECT key, count(*)") and at.selectbox(key="lab_sql_output_mode").value == "complete"


@pytest.mark.spark
def test_the_default_sql_follows_the_data_until_it_is_edited(tmp_path: Path, monkeypatch) -> None:
    """An error cited a line of a hidden default query: the SQL written for the first data shown stayed when the data changed."""
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    store = DatasetStore(tmp_path / "data")
    store.add("clicks", [Upload("topic.jsonl", EVENTS_JSONL)])
    store.save_columns("clicks", {"event_time": "ts", "time_format": "epoch_ms", "key": "user"})
    at = app_page(LIVE)
    at.segmented_control(key=sql.MODE_KEY).set_value("SQL").run()
    assert "window(`event_time`" in at.text_area(key=sql.TEXT_KEY).value  # a sample feed's columns
    at.selectbox(key="lab_source").set_value("dataset").run()
    at.selectbox(key="lab_dataset").set_value("clicks").run()
    assert not at.exception, at.exception
    assert "window(`ts`" in at.text_area(key=sql.TEXT_KEY).value and "`user`" in at.text_area(key=sql.TEXT_KEY).value  # written again for clicks
    at.text_area(key=sql.TEXT_KEY).set_value("SELECT user, count(*) AS n FROM STREAM(events) GROUP BY user").run()
    at.selectbox(key="lab_source").set_value("feed").run()
    assert at.text_area(key=sql.TEXT_KEY).value.startswith("SELECT user, count(*)")  # the user's own text is never replaced


def _two_boxes() -> None:
    import streamlit as st

    from dashboard.sql import written_until_edited

    data = st.selectbox("Data", ["clicks", "orders"], key="data")
    written_until_edited("first", f"SELECT * FROM {data}")
    first = st.text_area("Query 1", key="first")
    written_until_edited("second", first)
    st.text_area("Query 2", key="second")


def test_compares_second_query_follows_the_first_until_it_is_edited() -> None:
    """Compare's queries 2-4 kept the text written for query 1's first data when the data changed."""
    at = AppTest.from_function(_two_boxes).run()
    at.selectbox(key="data").set_value("orders").run()
    assert at.text_area(key="second").value == at.text_area(key="first").value == "SELECT * FROM orders"
    at.text_area(key="first").set_value("SELECT id FROM orders").run()
    assert at.text_area(key="second").value == "SELECT id FROM orders"  # follows query 1's edit too
    at.text_area(key="second").set_value("SELECT max(id) FROM orders").run()
    at.selectbox(key="data").set_value("clicks").run()
    assert at.text_area(key="second").value == "SELECT max(id) FROM orders"  # the user's own text is never replaced


class _Cached:
    """A stand-in for an ``st.cache_resource`` function: returns its values in turn, counts ``clear``."""

    def __init__(self, *values) -> None:
        self.values, self.cleared = list(values), 0

    def __call__(self):
        return self.values[min(self.cleared, len(self.values) - 1)]

    def clear(self) -> None:
        self.cleared += 1


def test_a_dead_session_is_replaced_once_and_its_lost_queries_are_recorded(monkeypatch) -> None:
    from types import SimpleNamespace

    from streaming.engine.run.registry import LostRun

    dead = SimpleNamespace(status="ready", wait=lambda timeout=None: "dead spark")
    fresh = SimpleNamespace(status="starting", wait=lambda timeout=None: "new spark")
    lost = [LostRun("doomed", 12, "2024-01-01 00:00:30", 4, False)]
    starter, registry = _Cached(dead, fresh), _Cached(SimpleNamespace(abandon=lambda: lost))
    forgotten, losses = [], shared.SessionLosses()
    monkeypatch.setattr(shared, "_starter", starter)
    monkeypatch.setattr(shared, "_shared_registry", registry)
    monkeypatch.setattr(shared, "session_alive", lambda spark: spark != "dead spark")
    monkeypatch.setattr(shared, "forget_session", lambda: forgotten.append(True))
    monkeypatch.setattr(shared, "session_losses", lambda: losses)
    assert shared.session_starter() is fresh
    assert shared.session_starter() is fresh  # noticed once: the new starter is not replaced again
    assert (starter.cleared, registry.cleared, forgotten) == (1, 1, [True])
    [(at, recorded, cause)] = losses.since(pd.Timestamp("2000-01-01"))
    assert recorded == lost and cause == "its JVM exited" and losses.since(at + pd.Timedelta(seconds=1)) == []
    assert str(recorded[0]) == "doomed (running, 12 batches, watermark 2024-01-01 00:00:30, 4 result rows)"


def test_the_loss_banner_says_where_each_lost_run_goes_on() -> None:
    """A kept query is resumed on the Queries page (once resumed, the banner says so); another is started again where it was started: a
    live join on Joins, not Live query."""
    from streaming.engine.run.registry import LostRun

    lost = [
        LostRun("kept_q", 3, None, 1, False, kept=True, source_kind="feed"), LostRun("gen", 2, None, 0, False, source_kind="generator"),
        LostRun("pair", 5, None, 9, False, source_kind="live_join"),
    ]
    assert shared._after_loss(lost) == (
        "kept_q kept its checkpoint and result: resume on the Queries page where it stopped. Start gen again from Live query. Start pair again from Joins."
    )
    assert shared._after_loss([]) == ""
    assert shared._after_loss(lost[:1], active={"kept_q"}) == "kept_q runs again, resumed from its checkpoint."  # not "resume it"



def test_the_loss_banner_lists_only_what_was_running_and_says_ready_only_when_it_is(monkeypatch) -> None:
    """It listed a query stopped before Spark died, and said a new session was started while the sidebar said Spark was starting; it
    says the heap filled when the heap's watch ended the JVM."""
    from streaming.engine.run.registry import LostRun
    from streaming.engine.runtime.heap import HEAP_EXIT_CODE, exit_cause

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    at = pd.Timestamp("2026-11-28 06:00:00")
    lost = [LostRun("doomed", 12, None, 4, False, source_kind="generator"), LostRun("done_before", 3, None, 1, True, source_kind="feed")]
    starting = shared.loss_text(at, lost, ready=False)
    assert "A new session is starting: Start works again once the sidebar says Spark is ready." in starting and "session is ready" not in starting
    assert "Lost with it: doomed (running, 12 batches, 4 result rows)." in starting and "done_before" not in starting
    assert "A new session is ready." in shared.loss_text(at, lost, ready=True)
    assert "Lost with it: no query was running." in shared.loss_text(at, lost[1:], ready=True)
    filled = shared.loss_text(at, lost, ready=True, cause=exit_cause(HEAP_EXIT_CODE))
    assert "(its JVM's heap filled, so the JVM was ended; SPARK_DRIVER_MEMORY sets the heap)." in filled


@pytest.mark.spark
def test_the_live_page_says_a_dataset_chosen_on_the_datasets_page_runs_once_its_mapping_is_saved(tmp_path: Path) -> None:
    """A newcomer's dataset picked on Datasets but not mapped yet is not offered by Live query: the page says why, not nothing."""
    from dashboard.data import CURRENT_DATA, DataChoice

    at = app_page(shared.LIVE_PAGE)
    at.session_state[CURRENT_DATA] = DataChoice("dataset", tmp_path, "flights")
    at.run()
    assert not at.exception, at.exception
    assert any("flights, chosen on the Datasets page, is offered here once its column mapping is saved" in caption.value for caption in at.caption)


def test_the_aggregate_picker_says_how_to_get_more_than_count_when_no_value_column_is_mapped() -> None:
    """Step through on a topic offered only count while its help named sum, avg...: with no value column, the help says to map one."""

    def script() -> None:
        import streamlit as st

        from dashboard.data import aggregate_widgets
        from streaming.engine.data.columns import ColumnMapping

        st.session_state["shapes"] = [aggregate_widgets("bare", ColumnMapping(event_time="t", key="k")), aggregate_widgets("valued", ColumnMapping(event_time="t", key="k", value="v"))]

    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    bare, valued = at.selectbox(key="bare_aggregation"), at.selectbox(key="valued_aggregation")
    assert bare.options == ["count"] and "map a value column" in bare.help
    assert valued.options[:2] == ["count", "sum"] and "of the value column v" in valued.help


def test_enter_in_the_upload_form_does_not_submit_it_without_its_files(tmp_path: Path) -> None:
    """Enter in the dataset name field submitted the form with no file ("Choose at least one file") and cleared the name."""

    def script(root: str) -> None:
        from dashboard.datasets import upload_form
        from streaming.engine.data.datasets import DatasetStore

        upload_form(DatasetStore(root), 1)

    at = AppTest.from_function(script, args=(str(tmp_path),)).run()
    assert not at.exception, at.exception
    [form] = [node for node in _blocks(at) if type(getattr(node, "proto", None)).__name__ == "Block" and node.proto.HasField("form")]
    assert form.proto.form.enter_to_submit is False
    assert at.checkbox(key="upload_private").value is False  # a dataset is shared (demo data) unless its uploader keeps it to themselves


def test_a_file_name_with_a_nul_byte_is_refused_with_its_reason_and_the_form_stays(tmp_path: Path) -> None:
    """Streamlit's own check of such a name raised before the page ran, on every run: the form vanished until a reload."""

    def script(root: str) -> None:
        from dashboard.datasets import upload_form
        from streaming.engine.data.datasets import DatasetStore

        upload_form(DatasetStore(root), 1)

    at = AppTest.from_function(script, args=(str(tmp_path),)).run()
    at.text_input(key="upload_name").set_value("nul")
    row = b"event_time,key\n2024-01-01 00:00:00,a\n"
    at.file_uploader[0].set_value([("a\0b.csv", row, "text/csv"), ("b.csv", row, "text/csv")])
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert "control character" in at.error[0].value and "Nothing stored was changed" in at.error[0].value
    assert "kept b.csv" in at.success[0].value  # the good file of the same upload is kept
    assert sorted(path.name for path in tmp_path.rglob("*")) == ["b.csv", "nul"]


def _blocks(at: AppTest) -> list:
    """Every block of the page's main area, depth first."""
    found, stack = [], list(at.main.children.values())
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(getattr(node, "children", {}).values())
    return found


def test_a_fresh_live_page_watches_a_query_of_its_own_not_a_step_throughs_walkthrough() -> None:
    """Walkthroughs run on the shared registry while Step through is open; a Live page opened meanwhile watched one of them by default."""

    def script() -> None:
        from types import SimpleNamespace

        import streamlit as st

        from dashboard.live import query_selector

        runs = [SimpleNamespace(name="mine", config=None), SimpleNamespace(name="walkthrough_0123456789ab", config=None)]
        st.session_state["watched"] = query_selector(SimpleNamespace(runs=lambda: runs))

    at = AppTest.from_function(script).run()
    assert not at.exception, at.exception
    assert at.session_state["watched"] == "mine"


def test_a_sql_verdict_names_each_watermark_delay_in_words() -> None:
    """It said "delay 0 days 02:00:00" (a Python timedelta's text)."""
    from streaming.engine.sql.plan import PlanFacts, Watermark

    facts = PlanFacts(True, ("w", "n"), ("w",), (Watermark("ts", 7_200_000),), ("Aggregate",))
    assert "Watermark on: ts (delay 2 hours)." in sql._verdict_words(facts)


def test_a_topics_form_starts_from_the_mapping_of_the_dataset_it_was_published_from() -> None:
    """A topic published from flights guessed `air_time` (a duration) as its event time, by its name."""
    from dashboard.kafka import published_guess
    from streaming.engine.data.columns import ColumnMapping

    published = ColumnMapping(event_time="sched_dep", time_format="yyyy-MM-dd HH:mm:ss", key="carrier", value="dep_delay", arrival="ingested").to_dict()
    names = ["air_time", "carrier", "sched_dep"]
    guessed = published_guess(published, names)
    assert guessed is not None and (guessed.event_time, guessed.time_format, guessed.key) == ("sched_dep", "yyyy-MM-dd HH:mm:ss", "carrier")
    assert (guessed.value, guessed.arrival) == (None, None)  # a column the values lack, and the arrival: the record's timestamp
    assert published_guess(published, ["air_time", "carrier"]) is None and published_guess(None, names) is None
    assert published_guess({"no such role": "x"}, names) is None


def test_checkpoints_are_found_under_the_data_root_only(tmp_path: Path) -> None:
    from dashboard.checkpoint import checkpoint_folders

    root, outside = tmp_path / "data", tmp_path / "elsewhere"
    for folder in (root / "jobs" / "orders", root / ".queries" / "q" / "checkpoint", outside / "secret", root / "a" / "b" / "c" / "d" / "deep"):
        (folder / "offsets").mkdir(parents=True)
        (folder / "metadata").write_text("{}")
    (root / "jobs" / "orders" / "state" / "offsets").mkdir(parents=True)  # inside a checkpoint: not another one
    (root / "link").symlink_to(outside, target_is_directory=True)  # a link out of the root is not followed
    assert checkpoint_folders(root) == [Path(".queries/q/checkpoint"), Path("jobs/orders")]  # and none deeper than four levels
