"""The experiment pages (Watermark tuner, Compare) and their parts: ``dashboard.jobs``, ``.tuner`` and ``.compare``.

Pure checks and the job pattern first (no Spark), then the pages under
``streamlit.testing.v1.AppTest``: smoke renders, bad input refused before
Spark, the job's running/failed states with the engine call replaced, and one
real run of each page on the small ``guide_words`` feed. Fragments do not
tick under AppTest, so a test waiting for a result calls ``at.run()`` in a
loop capped by a deadline. Every job a test starts is joined in the
``jobs`` fixture's teardown, so no replay outlives its test, and the app's
registry must hold no replay afterwards (tune and compare remove their own).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import compare, join_compare, shared, tuner
from dashboard import jobs as background
from streaming.app import tune as app_tune
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.errors import Cancelled
from streaming.engine.run.registry import QueryRegistry

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"
TUNER = shared.TUNER_PAGE
COMPARE = shared.COMPARE_PAGE
TIMEOUT = 180  # one script run; the first page that needs it starts Spark
WAIT_FOR_RESULT = 300.0  # cap of the polling loops; the guide feed takes well under a minute when the machine is idle
JOB_KEYS = (tuner.TUNE_JOB, tuner.CONFIRM_JOB, compare.COMPARE_JOB, join_compare.JOIN_COMPARE_JOB)


def _open_code(at: AppTest, *keys: str) -> None:
    """Open the Show code panels of these download keys at the page's next run: their code is written only then."""
    for key in keys:
        at.session_state[f"{key}_open"] = True


def _page(path: str) -> AppTest:
    """``path`` opened through the app, once the shared session is ready (so the Run buttons are enabled)."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    shared.session_starter().wait(TIMEOUT)
    return at.switch_page(path).run()


def _errors(at: AppTest) -> list[str]:
    return [error.value for error in at.error]


def _button_keys(at: AppTest) -> set[str]:
    return {button.key for button in at.button}


def _job(at: AppTest, key: str) -> background.Job | None:
    return at.session_state[key] if key in at.session_state else None


def _wait_until(at: AppTest, condition: Callable[[AppTest], bool], timeout: float = WAIT_FOR_RESULT) -> bool:
    """Rerun the page until ``condition(at)`` holds or an error shows; ``False`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        assert not at.exception, at.exception
        if condition(at) or at.error:
            return condition(at)
        time.sleep(1.0)
    return False


def _tuned(at: AppTest) -> bool:
    """The sweep is done and its result drawn (the model's answer is drawn before it, while Spark confirms it)."""
    job = _job(at, tuner.TUNE_JOB)
    return job is not None and job.done and _table_with(TUNE_TABLE)(at)


def _table_with(columns: set[str]) -> Callable[[AppTest], bool]:
    return lambda at: any(columns <= set(frame.value.columns) for frame in at.dataframe)


def _table(at: AppTest, columns: set[str]):
    return next(frame.value for frame in at.dataframe if columns <= set(frame.value.columns))


@pytest.fixture
def jobs() -> Iterator[list[AppTest]]:
    """AppTests whose jobs are joined at teardown; then no replay may be left in the app's registry."""
    tests: list[AppTest] = []
    yield tests
    for at in tests:
        for key in JOB_KEYS:
            job = _job(at, key)
            if job is not None:
                assert job.join(WAIT_FOR_RESULT), f"{job.what} still running after {WAIT_FOR_RESULT} s"
    background.recent_jobs.clear()  # a later test with the same inputs starts afresh
    registry = shared._shared_registry()
    if isinstance(registry, QueryRegistry):  # not the stand-in of ``no_spark``
        leftovers = [run.name for run in registry.runs() if run.name.startswith("replay_")]
        assert not leftovers, f"replays left in the registry: {leftovers}"


@pytest.fixture
def no_spark(monkeypatch):
    """The pages' registry replaced by a stand-in: for tests that replace the engine call too."""
    monkeypatch.setattr(shared, "get_registry", lambda: "registry stand-in")


# --- pure parts ---------------------------------------------------------------------------


def test_tune_inputs_lists_every_bad_field() -> None:
    with pytest.raises(shared.InputErrors) as err:
        tuner.tune_inputs("../streaming", "1 minute", None, "abc", 1.5)
    assert [error.field for error in err.value.errors] == ["data", "delays", "target"]
    with pytest.raises(shared.InputErrors) as err:
        tuner.tune_inputs("guide_words", "1 minute", "5 minutes", "1 minute", 0.9)
    [error] = err.value.errors
    assert str(error).startswith("slide: '5 minutes'")
    inputs = tuner.tune_inputs("guide_words", "10 minutes", "5 minutes", "10m, 0", 0.85)
    assert inputs.delays == ["0 seconds", "10 minutes"] and inputs.target == 0.85
    config = inputs.config("10 minutes")
    assert (config.output_mode, config.watermark_ms, config.source.seconds_per_file) == ("update", 600_000, 0)
    assert config.source.path == SAMPLE_FEEDS / "guide_words"


def test_compare_inputs_name_the_config_number_and_field() -> None:
    good = {"window": "10 minutes", "slide": None, "watermark": "10 minutes", "output_mode": "append"}
    bad_slide = {**good, "window": "1 minute", "slide": "5 minutes"}
    append_without_watermark = {**good, "watermark": None}
    with pytest.raises(shared.InputErrors) as err:
        compare.compare_inputs("guide_words", [good, bad_slide, append_without_watermark])
    assert [str(error).split(":")[:2] for error in err.value.errors] == [["Config 2", " slide"], ["Config 3", " output_mode"]]
    inputs = compare.compare_inputs("guide_words", [good, {**good, "output_mode": "update"}])
    assert inputs.labels == ["1: append · 10 minutes · wm 10 minutes", "2: update · 10 minutes · wm 10 minutes"]
    assert all(config.source.seconds_per_file == 0 for config in inputs.configs)
    with pytest.raises(shared.InputErrors, match="compare needs 2 to 4"):
        compare.compare_inputs("guide_words", [good])


def test_percent() -> None:
    assert [shared.percent(value) for value in (0.99, 0.995, 0.85, 1.0)] == ["99%", "99.5%", "85%", "100%"]


def test_job_waits_for_the_gate_then_keeps_result_or_error() -> None:
    gate, release = threading.Lock(), threading.Event()
    gate.acquire()
    job = background.Job.start("job", None, lambda job: release.wait(10) and 42, gate)
    try:
        time.sleep(0.2)
        assert job.waiting and not job.done
    finally:
        gate.release()
    assert not job.join(0.2) and not job.waiting
    release.set()
    assert job.join(10) and (job.result, job.error) == (42, None)
    assert job.elapsed == pytest.approx(job.finished - job.started)

    def fail(job) -> None:
        raise RuntimeError("boom")

    failed = background.Job.start("failing", None, fail)
    assert failed.join(10) and isinstance(failed.error, RuntimeError) and failed.result is None and not failed.cancelled


def test_a_job_cancelled_while_it_waits_never_starts_its_work() -> None:
    gate, started = threading.Lock(), []
    gate.acquire()
    job = background.Job.start("job", None, lambda job: started.append(True), gate)
    job.cancel.set()
    gate.release()
    assert job.join(10) and job.cancelled and started == []


def _sweep_page(monkeypatch, jobs: list[AppTest], stand_in: Callable[..., object]) -> AppTest:
    """The tuner page with the sweep (:func:`streaming.analysis.tune.tune`, as the application layer calls it) replaced by ``stand_in``, its
    sweep of "1 minute, 0s" started."""
    monkeypatch.setattr(app_tune, "tune", stand_in)
    at = _page(TUNER)
    jobs.append(at)
    at.text_input(key="tune_delays").set_value("1 minute, 0s")
    at.button(key="tune_run").click().run()
    assert not at.exception, at.exception
    return at


@pytest.mark.spark
def test_a_reloaded_page_finds_the_sweep_of_its_inputs_still_running(monkeypatch, no_spark, jobs) -> None:
    release = threading.Event()

    def slow_tune(registry, query, *, cancel, report, **kwargs):
        release.wait(60)
        raise Cancelled("released")

    _sweep_page(monkeypatch, jobs, slow_tune)
    try:
        reloaded = _page(TUNER)  # a new browser session: nothing in its session state
        reloaded.text_input(key="tune_delays").set_value("1 minute, 0s").run()
        assert any("Sweep of 2 delays on web_clicks: running" in info.value for info in reloaded.info), [info.value for info in reloaded.info]
        assert reloaded.button(key="tune_run").disabled
        reloaded.text_input(key="tune_delays").set_value("2 minutes, 0s").run()  # other inputs: not that sweep
        assert not any("running" in info.value for info in reloaded.info) and not reloaded.button(key="tune_run").disabled
    finally:
        release.set()


@pytest.mark.spark
def test_the_tuner_shows_what_runs_and_cancels_a_sweep(monkeypatch, no_spark, jobs) -> None:
    reported = threading.Event()

    def cancellable_tune(registry, query, *, cancel, report, preview, **kwargs):
        from types import SimpleNamespace

        delays = [{"delay": "0 seconds", "completeness": 0.9, "output_delay_seconds": 5.0},
                  {"delay": "2 hours", "completeness": 0.995, "output_delay_seconds": 7_265.0}]
        preview(SimpleNamespace(
            recommended="2 hours", target=0.99, wall_seconds=0.4, arrival="quiet", by_rule={"quiet": [0.9, 0.995], "busy": [0.93, 0.996]},
            to_json=lambda: {"recommended": "2 hours", "delays": delays},
        ))
        report("confirming 2 hours on Spark: batch 12 of 478, about 3.9 min left")
        reported.set()
        if not cancel.wait(60):
            raise AssertionError("never cancelled")
        raise Cancelled("sweep: cancelled")

    at = _sweep_page(monkeypatch, jobs, cancellable_tune)
    assert reported.wait(30)
    at.run()
    assert any("batch 12 of 478, about 3.9 min left" in info.value for info in at.info), [info.value for info in at.info]
    assert [box.value for box in at.success] == ["Smallest delay reaching 99%: 2 hours (the watermark model, in 0.4 s; Spark is confirming it)"]
    model = _table(at, {"delay", "completeness", "output_delay_seconds"})  # the model's answer while Spark runs
    assert list(model["output_delay_seconds"]) == ["5.0 s", "2.0 h"]
    assert list(model["completeness_busy"]) == [0.93, 0.996]  # both arrival rules' completeness, beside the rule that ran
    assert any("Under the quiet arrival rule" in caption.value for caption in at.caption)
    [cancel] = [button for button in at.button if button.label == "Cancel"]
    cancel.click().run()
    assert _job(at, tuner.TUNE_JOB).join(30)
    at.run()
    assert any("cancelled after" in warning.value for warning in at.warning) and not _errors(at)
    assert not at.button(key="tune_run").disabled


# --- pages: smoke and bad input (no Spark) -------------------------------------------------------


def test_home_page_links_the_experiment_pages() -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    labels = [link.value for link in at.page_link]
    assert any(label.startswith("Watermark tuner:") for label in labels)
    assert any(label.startswith("Compare:") for label in labels)


@pytest.mark.spark
@pytest.mark.parametrize(("path", "title", "button"), [(TUNER, "Watermark tuner", "tune_run"), (COMPARE, "Compare", "cmp_run")])
def test_every_experiment_page_renders(path: str, title: str, button: str) -> None:
    at = _page(path)
    assert not at.exception, at.exception
    assert at.title[0].value == title
    assert not _errors(at)
    assert button in _button_keys(at) and not at.button(key=button).disabled


@pytest.mark.spark
def test_tuner_explains_completeness_and_output_delay() -> None:
    at = _page(TUNER)
    text = " ".join(markdown.value for markdown in at.markdown)
    assert "Completeness" in text and "exact" in text and "append mode would wait" in text
    assert at.text_input(key="tune_delays").value == tuner.DEFAULT_DELAYS
    assert at.number_input(key="tune_target").value == 0.99


@pytest.mark.spark
def test_tuner_refuses_a_bad_delay_before_spark() -> None:
    at = _page(TUNER)
    at.text_input(key="tune_delays").set_value("0s, abc").run()
    assert not at.exception, at.exception
    [message] = _errors(at)
    assert "delays" in message and "'abc'" in message
    assert "tune_run" not in _button_keys(at)
    assert _job(at, tuner.TUNE_JOB) is None


@pytest.mark.spark
def test_tuner_refuses_a_target_above_one() -> None:
    at = _page(TUNER)
    at.number_input(key="tune_target").set_value(1.5).run()
    assert not at.exception, at.exception
    [message] = _errors(at)
    assert "target: 1.5" in message
    assert "tune_run" not in _button_keys(at)


@pytest.mark.spark
def test_compare_refuses_a_slide_longer_than_the_window() -> None:
    at = _page(COMPARE)
    at.number_input(key="cmp_count").set_value(3).run()
    at.text_input(key="cmp_2_window").set_value("1 minute")
    at.radio(key="cmp_2_window_kind").set_value("sliding").run()
    at.text_input(key="cmp_2_slide").set_value("5 minutes").run()
    assert not at.exception, at.exception
    [message] = _errors(at)
    assert "Config 2" in message and "slide" in message and "'5 minutes'" in message
    assert "cmp_run" not in _button_keys(at)
    assert _job(at, compare.COMPARE_JOB) is None


# --- the job pattern on the page, with the engine call replaced (no Spark) ----------------------


@pytest.mark.spark
def test_tuner_shows_running_then_the_error_of_a_failed_sweep(monkeypatch, no_spark, jobs) -> None:
    release = threading.Event()

    def failing_tune(registry, query, **kwargs):
        assert registry == "registry stand-in" and kwargs["delays"] == ["0 seconds", "1 minute"]
        release.wait(60)
        raise RuntimeError("Spark went away")

    at = _sweep_page(monkeypatch, jobs, failing_tune)
    assert any(info.value.startswith("Sweep of 2 delays on web_clicks: ") for info in at.info)  # running or waiting for its turn
    assert at.button(key="tune_run").disabled
    at.text_input(key="tune_window").set_value("2 minutes").run()  # the page stays usable while the job runs
    assert any("Sweep of 2 delays on web_clicks: running… " in info.value for info in at.info)
    release.set()
    assert _job(at, tuner.TUNE_JOB).join(30)
    at.run()
    [message] = _errors(at)
    assert "failed" in message and "RuntimeError: Spark went away" in message
    assert not at.button(key="tune_run").disabled


# --- real runs on the guide feed -----------------------------------------------------------------

TUNE_TABLE = {"delay", "completeness", "peak_state_rows", "output_delay_seconds"}
COMPARE_TABLE = {"label", "completeness", "rows_dropped_by_watermark", "mean_batch_duration_ms"}


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_tuner_sweeps_the_guide_feed(jobs) -> None:
    at = _page(TUNER)
    jobs.append(at)
    _open_code(at, "tune_code", "tune_grid_code")
    at.selectbox(key="tune_feed").set_value("guide_words")
    at.text_input(key="tune_window").set_value("10 minutes")
    at.radio(key="tune_window_kind").set_value("sliding").run()
    at.text_input(key="tune_slide").set_value("5 minutes")
    at.text_input(key="tune_delays").set_value("10 minutes, 0s")
    at.number_input(key="tune_target").set_value(0.85)
    at.button(key="tune_run").click().run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))
    assert _job(at, tuner.TUNE_JOB) is not None

    assert _wait_until(at, _tuned), f"no result table; errors: {_errors(at)}"
    assert not _errors(at)
    recommendation, confirmed = (box.value for box in at.success)
    assert recommendation == "Smallest delay reaching 85%: 10 minutes"
    assert confirmed.startswith("Confirmed on Spark at 10 minutes: completeness 90%, 18 of 20 rows counted") and "agree" in confirmed
    assert any("watermark model computed all 2 delays" in caption.value for caption in at.caption)
    at.selectbox(key="tune_confirm_delay").set_value("0 seconds")
    at.button(key="tune_confirm").click().run()
    assert _wait_until(at, lambda at: any(box.value.startswith("Confirmed on Spark at 0 seconds") for box in at.success)), _errors(at)
    table = _table(at, TUNE_TABLE)
    assert list(table["delay"]) == ["0 seconds", "10 minutes"]
    assert list(table["recommended"]) == [False, True]
    assert table["completeness"].iloc[0] < 0.85 and table["completeness"].iloc[1] == pytest.approx(0.9)
    assert (table["counted"].iloc[1], table["exact"].iloc[1]) == (18, 20)
    assert table["output_delay_seconds"].iloc[1] == "11.0 min"  # 660 s, read in minutes
    assert len(at.get("plotly_chart")) == 6  # the two trade-offs, three heat maps of windows x delays, one window's curve
    assert "tune_report" in {button.key for button in at.get("download_button")}  # the report, made when pressed
    assert at.selectbox(key="tune_window_delay").value == "10 minutes"
    per_window = _table(at, {"window_start", "counted", "exact"})
    assert int(per_window["counted"].sum()) == 18
    code = at.code[0].value
    assert "10 minutes" in code and "guide_words" in code and "update" in code
    at.text_input(key="tune_grid_windows").set_value("5 minutes, 10 minutes, 20 minutes").run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))
    heat = next(chart for chart in at.get("plotly_chart") if '"Completeness"' in chart.proto.spec)
    assert '"type":"heatmap"' in heat.proto.spec.replace(" ", "") and '"type":"contour"' in heat.proto.spec.replace(" ", "")
    at.selectbox(key="tune_grid_window").set_value(20 * 60_000).run()
    chosen = next(markdown.value for markdown in at.markdown if markdown.value.startswith("**20 minutes windows, watermark"))
    delay = chosen.split("watermark ")[1].split("**")[0]  # the smallest delay reaching 85% for 20-minute windows
    assert any("'20 minutes'" in block.value and f"'{delay}'" in block.value for block in at.code)
    at.text_input(key="tune_grid_windows").set_value("0s").run()
    assert any("windows: '0s' must be longer than 0" in message for message in _errors(at))


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_compare_runs_two_configs_on_the_guide_feed(jobs) -> None:
    at = _page(COMPARE)
    jobs.append(at)
    _open_code(at, "cmp_code_1", "cmp_code_2")
    at.selectbox(key="cmp_feed").set_value("guide_words")
    for number in (1, 2):
        at.text_input(key=f"cmp_{number}_window").set_value("10 minutes")
        at.text_input(key=f"cmp_{number}_watermark").set_value("10 minutes")
    at.selectbox(key="cmp_1_output_mode").set_value("append")
    at.radio(key="cmp_2_window_kind").set_value("sliding").run()
    at.text_input(key="cmp_2_slide").set_value("5 minutes")
    at.selectbox(key="cmp_2_output_mode").set_value("update")
    at.button(key="cmp_run").click().run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))

    assert _wait_until(at, _table_with(COMPARE_TABLE)), f"no summary table; errors: {_errors(at)}"
    assert not _errors(at)
    summary = _table(at, COMPARE_TABLE)
    assert list(summary["label"]) == ["1: append · 10 minutes · wm 10 minutes", "2: update · 10 minutes/5 minutes · wm 10 minutes"]
    assert list(summary["counted"]) == [4, 18] and list(summary["exact"]) == [10, 20]
    assert list(summary["completeness"]) == pytest.approx([0.4, 0.9])
    assert list(summary["rows_dropped_by_watermark"]) == [1, 2]
    assert (summary["mean_batch_duration_ms"] > 0).all()
    [chart] = at.get("plotly_chart")
    assert "donkey" not in chart.proto.spec and "owl" in chart.proto.spec  # the donkey is dropped in both runs
    assert len(at.code) == 2 and "append" in at.code[0].value and "update" in at.code[1].value
    assert any("Every config replayed under arrival quiet" in caption.value for caption in at.caption)  # the rule that ran, said


@pytest.mark.spark
def test_compare_runs_two_joins_of_ad_datasets_after_refusing_one_spark_would_refuse(jobs, tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    from streaming.adfeeds import sample_ad_specs, write_ad_feeds

    spec = replace(sample_ad_specs()[("ad_impressions", "ad_clicks")], batches=10)  # the sample pair's first 100 seconds
    write_ad_feeds(spec, tmp_path / "data" / "imps", tmp_path / "data" / "clicks")
    monkeypatch.setenv("STREAMING_LAB_DATA", str(tmp_path / "data"))
    at = _page(COMPARE)
    jobs.append(at)
    _open_code(at, "cmpj_code_1", "cmpj_code_2")
    at.radio(key="cmp_kind").set_value("Joins").run()
    at.selectbox(key="cmpj_left").set_value("imps (dataset)")
    at.selectbox(key="cmpj_right").set_value("clicks (dataset)").run()
    assert at.multiselect(key="cmpj_on_imps (dataset)_clicks (dataset)").value == ["impression_id"]
    at.text_input(key="cmpj_2_right_watermark").set_value("").run()  # a left outer join needs the right side's watermark
    assert _errors(at) == ["Cannot run this join comparison: Config 2: right.watermark: None is required by a left outer join: Spark refuses it "
                           "without that watermark and the time range"]
    assert "cmpj_run" not in _button_keys(at)
    at.text_input(key="cmpj_2_right_watermark").set_value("5 seconds").run()
    at.button(key="cmpj_run").click().run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))
    assert _wait_until(at, _table_with({"label", "null_row_wait_batches"}), WAIT_FOR_RESULT), f"no summary table; errors: {_errors(at)}"
    summary = _table(at, {"label", "null_row_wait_batches"})
    assert list(summary["label"]) == [
        "1: left_outer · 0 seconds to 2 minutes · delays 1 minute / 30 seconds · min", "2: left_outer · 0 seconds to 2 minutes · delays 1 minute / 5 seconds · max",
    ]
    assert (summary["exact_pairs"] == summary["exact_pairs"].iloc[0]).all() and summary["exact_pairs"].iloc[0] > 20
    # the max of the two watermarks, the clicks' 5 s: NULL rows sooner and less state (the trade-off the page is for)
    assert summary["null_row_wait_batches"].iloc[1] < summary["null_row_wait_batches"].iloc[0]
    assert summary["peak_state_rows"].iloc[1] < summary["peak_state_rows"].iloc[0]
    [chart] = at.get("plotly_chart")
    assert "1: left_outer" in chart.proto.spec and "Rows in the join" in chart.proto.spec
    assert len(at.code) == 2 and "POLICY = 'max'" in at.code[1].value


# --- a user's dataset ------------------------------------------------------------------------------


@pytest.fixture
def orders_root(tmp_path: Path, monkeypatch) -> Path:
    """A data root holding one mapped dataset ``orders``: 4 JSON-lines files, epoch-ms ``ts``, ``store``, ``amount``, ``order_id`` with redeliveries."""
    from datetime import datetime

    from streaming.feedgen import DatasetSpec, FeedSpec, write_dataset

    feed = FeedSpec(
        start=datetime(2024, 3, 4, 12, 0, 0), batches=4, batch_interval_seconds=20, events_per_batch=10, keys=("north", "south"),
        max_lag_seconds=5, late_share=0.2, late_delay_seconds=90, value_column="amount", value_range=(5.0, 50.0), seed=9,
    )
    root = tmp_path / "data"
    write_dataset(DatasetSpec(feed, "json", ("order_id", "ts", "ingested_at", "store", "amount"), duplicate_share=0.2, seed=4), root / "orders")
    monkeypatch.setenv("STREAMING_LAB_DATA", str(root))
    return root


def test_tune_inputs_of_a_dataset_take_its_aggregate_and_dedup(orders_root: Path) -> None:
    inputs = tuner.tune_inputs("orders", "1 minute", None, "0s, 2m", 0.99, {"batch_by": "rows:15", "batch_interval": None}, "sum", True)
    config = inputs.config("2 minutes")
    assert (config.aggregation, config.deduplicate, config.measure, config.source.batching.rows) == ("sum", True, "sum(amount)", 15)
    with pytest.raises(shared.InputErrors) as err:
        tuner.tune_inputs("orders", "1 minute", None, "1m", 0.99, {"batch_by": "rows:0", "batch_interval": None})
    assert [error.field for error in err.value.errors] == ["batch_by"]
    nine = ", ".join(f"{n} seconds" for n in range(9))
    assert len(tuner.tune_inputs("orders", "1 minute", None, nine, 0.99, None, "sum").delays) == 9
    with pytest.raises(shared.InputErrors) as err:  # deduplication replays every delay on Spark: at most 8
        tuner.tune_inputs("orders", "1 minute", None, nine, 0.99, None, "sum", True)
    [error] = err.value.errors
    assert error.field == "delays" and "at most 8 here: deduplication" in str(error)
    inputs = compare.compare_inputs("orders", [{"window": "1 minute", "slide": None, "watermark": "1 minute", "output_mode": "update"}] * 2,
                                    aggregation="max")
    assert inputs.labels[0] == "1: update · 1 minute · wm 1 minute · max(amount)"
    sessions = tuner.tune_inputs("orders", "1 minute", None, "1m", 0.99, session_gap="20 seconds")
    assert (sessions.config("1 minute").output_mode, sessions.config("1 minute").session_gap) == ("append", "20 seconds")
    with pytest.raises(shared.InputErrors) as err:
        tuner.tune_inputs("orders", "1 minute", None, "1m", 0.99, session_gap="soon")
    assert [error.field for error in err.value.errors] == ["session_gap"]
    slot = {"window": "1 minute", "slide": None, "session_gap": "20 seconds", "watermark": "1 minute", "output_mode": "append"}
    assert compare.compare_inputs("orders", [slot, {**slot, "session_gap": None}]).labels == [
        "1: append · session 20 seconds · wm 1 minute", "2: append · 1 minute · wm 1 minute"]


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_tuner_sweeps_a_dataset_sum_with_duplicates_dropped(jobs, orders_root: Path) -> None:
    at = _page(TUNER)
    jobs.append(at)
    _open_code(at, "tune_code", "tune_grid_code")
    at.selectbox(key="tune_feed").set_value("orders").run()
    at.selectbox(key="tune_aggregation").set_value("sum")
    at.checkbox(key="tune_deduplicate").check()
    at.text_input(key="tune_delays").set_value("0s, 10 minutes")
    at.button(key="tune_run").click().run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))

    assert _wait_until(at, _tuned), f"no result table; errors: {_errors(at)}"
    assert [box.value for box in at.success] == ["Smallest delay reaching 99%: 10 minutes"]
    table = _table(at, TUNE_TABLE)
    assert table["completeness"].iloc[0] < 1.0 and table["completeness"].iloc[1] == 1.0
    assert any("sum(amount) after dropping duplicates" in caption.value for caption in at.caption)
    code = at.code[0].value
    assert "dropDuplicatesWithinWatermark" in code and "windowed_aggregate(events, window, 'sum')" in code and "'10 minutes'" in code

    at.button(key="tune_open_live").click().run()  # the recommended query, in the Live query form
    assert not at.exception and at.title[0].value == "Live query", at.exception
    assert (at.selectbox(key="lab_source").value, at.selectbox(key="lab_dataset").value, at.text_input(key="lab_watermark").value) == (
        "dataset", "orders", "10 minutes")
    assert (at.selectbox(key="lab_aggregation").value, at.checkbox(key="lab_deduplicate").value) == ("sum", True)
    at.switch_page(COMPARE).run()  # the data chosen on the tuner is what Compare opens on
    assert at.selectbox(key="cmp_feed").value == "orders" and at.selectbox(key="cmp_aggregation").value == "count"
    at.switch_page(TUNER).run()  # the tuner kept its inputs, and so finds its result again
    assert (at.selectbox(key="tune_aggregation").value, at.text_input(key="tune_delays").value) == ("sum", "0s, 10 minutes")
    assert _table_with(TUNE_TABLE)(at) and not at.exception


@pytest.mark.spark
def test_the_tuner_profiles_how_late_a_datasets_events_are(orders_root: Path) -> None:
    at = _page(TUNER)
    at.selectbox(key="tune_feed").set_value("orders").run()
    assert not at.get("plotly_chart")
    at.toggle(key="tune_profile").set_value(True).run()
    assert not at.exception and not _errors(at), (at.exception, _errors(at))
    metrics = {metric.label: metric.value for metric in at.metric}
    assert set(metrics) >= {"p50 behind the stream", "p99 behind the stream", "p99.9 behind the stream", "late events"}
    rows = sum(len(path.read_text().splitlines()) for path in (orders_root / "orders").glob("*.jsonl"))
    assert metrics["late events"].endswith(f" of {rows}") and not metrics["late events"].startswith("0 ")  # every delivery, in arrival order
    assert any(caption.value.startswith("Behind their arrival time") for caption in at.caption)
    assert len(at.get("plotly_chart")) == 2
    assert _table(at, {"key", "p99", "p999"})["key"].tolist()[0] in {"north", "south"}
    at.button(key="tune_use_proposal").click().run()
    assert at.text_input(key="tune_delays").value.startswith("0 seconds, ")  # the profile's proposal, in the field
    assert not at.exception and not [warning for warning in at.warning if "Session State" in warning.value]



@pytest.mark.spark
@pytest.mark.timeout(900)
def test_the_live_page_lists_a_datasets_dropped_events(orders_root: Path) -> None:
    """A dataset on the Live query page: why each delivery was dropped, event by event, with the dropped ones listed and downloadable."""
    name = "t_live_orders"
    registry = shared._shared_registry()
    at = _page(shared.LIVE_PAGE)
    at.selectbox(key="lab_source").set_value("dataset").run()
    at.selectbox(key="lab_dataset").set_value("orders")
    at.number_input(key="lab_dataset_seconds_per_file").set_value(0.2)
    at.text_input(key="lab_watermark").set_value("5 seconds")
    at.text_input(key="lab_name").set_value(name)
    try:
        at.button(key="lab_start").click().run()
        assert not at.exception and not _errors(at), (at.exception, _errors(at))
        run = registry.get(name)
        rows = sum(len(path.read_text().splitlines()) for path in (orders_root / "orders").glob("part-*.jsonl"))

        def read() -> int:
            return sum(summary["num_input_rows"] for summary in run.log.summaries())

        assert rows > 0 and _wait_until(at, lambda _: read() == rows), f"the dataset did not replay: {rows} rows, {read()} read"
        at.run()  # the page drawn after the last batch: the wait checked the log after its last run
        metrics = {metric.label: metric.value for metric in at.metric}
        assert int(metrics["Events so far"]) > 0 and int(metrics["Spark: rows dropped"]) > 0  # 90 s late orders, a 5 s watermark
        at.toggle(key="lab_dropped_list").set_value(True).run()
        dropped = _table(at, {"event_time", "window_start", "rule"})
        assert len(dropped) > 0 and set(dropped["rule"]) == {"window end at or before the watermark"}
        assert {"order_id", "file_index"} <= set(dropped.columns) and dropped["order_id"].notna().all()  # one file, one batch: its index says something
        assert set(dropped["key"]) <= {"north", "south"}
    finally:
        registry.delete(name)
