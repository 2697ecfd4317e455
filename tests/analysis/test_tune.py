"""Tests of the watermark sweep: pure helpers with canned frames, then real replays on small feeds."""

from __future__ import annotations

import json
import math
import uuid
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from streaming.analysis.measure import counted_windows, emission_frame, output_delay, state_stats
from streaming.analysis.tune import DEFAULT_CONCURRENT, canonical_delays, check_target, plan_tune, recommend, tune
from streaming.charts.tuner import completeness_vs_output_delay, completeness_vs_state, tune_frame
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.errors import InputErrors
from streaming.engine.output.progress import progress_frame
from streaming.engine.query.config import ConfigError, FeedSource, QueryConfig

GUIDE = SAMPLE_FEEDS / "guide_words"


def _query(feed: Path, window: str, slide: str | None = None) -> QueryConfig:
    """The windowed count of a sample-layout feed, the shape a sweep tunes."""
    return QueryConfig(FeedSource(feed, seconds_per_file=0), window=window, slide=slide)
T = pd.Timestamp


def _progress(rows: list[tuple[int, str | None, str | None]]) -> pd.DataFrame:
    """A progress frame from ``(batch_id, watermark, max_event_time)``, times as ``HH:MM`` on the guide's day."""
    day = "2016-05-10 "
    return pd.DataFrame(
        {
            "batch_id": [b for b, _, _ in rows],
            "watermark": pd.to_datetime([None if w is None else day + w for _, w, _ in rows]),
            "max_event_time": pd.to_datetime([None if m is None else day + m for _, _, m in rows]),
            "state_rows_total": [4, 4, 7, 7, 12, 9, 9][: len(rows)],
            "state_memory_bytes": [100, 200, 300, 300, 500, 400, 400][: len(rows)],
        }
    )


# The trajectory of the guide example with a 10-minute watermark, as PySpark 4.3 reports it:
# every data batch is followed by a no-data batch once the watermark advances.
GUIDE_TRAJECTORY = [
    (0, None, "12:08"),
    (1, "11:58", None),
    (2, "11:58", "12:14"),
    (3, "12:04", None),
    (4, "12:04", "12:21"),
    (5, "12:11", None),
    (6, "12:11", "12:17"),
]


def _windows(*pairs: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame(
        {"window_start": [T(f"2016-05-10 {s}") for s, _ in pairs], "window_end": [T(f"2016-05-10 {e}") for _, e in pairs]}
    )


# --------------------------------------------------------------------------- pure



def test_a_tune_plan_names_every_bad_field_at_once_and_builds_each_delays_query() -> None:
    guide = FeedSource(SAMPLE_FEEDS / "guide_words", seconds_per_file=0)
    with pytest.raises(InputErrors) as refused:
        plan_tune(guide, delays=["soon"], target=1.5, window="1 minute", slide="5 minutes")
    assert [error.field for error in refused.value.errors] == ["delays", "target", "slide"]
    with pytest.raises(InputErrors, match="aggregation: 'none' cannot be tuned"):
        plan_tune(guide, delays=["1 minute"], target=0.9, aggregation="none")
    plan = plan_tune(guide, delays=["10m", "0", "10 minutes"], target=0.9, window="10 minutes", slide="5 minutes")
    assert (plan.delays, plan.target, plan.query.watermark) == (["0 seconds", "10 minutes"], 0.9, "0 seconds")
    swept = plan.config("10 minutes")
    assert (swept.watermark, swept.output_mode, swept.window, swept.slide) == ("10 minutes", "update", "10 minutes", "5 minutes")
    assert plan_tune(guide, delays=["1 minute"], target=1, session_gap="5 minutes").config("1 minute").output_mode == "append"


def test_canonical_delays_sorts_dedupes_and_names_bad_values():
    assert canonical_delays(["5m", "0", "30s", "300 seconds", "1 minute"]) == ["0 seconds", "30 seconds", "1 minute", "5 minutes"]
    with pytest.raises(ConfigError, match=r"delays: 'soon'") as caught:
        canonical_delays(["1 minute", "soon"])
    assert caught.value.field == "delays"
    with pytest.raises(ConfigError, match="delays"):
        canonical_delays([])
    with pytest.raises(ConfigError, match="delays"):
        canonical_delays("1 minute")


@pytest.mark.parametrize("target", [0, -0.5, 1.01, float("nan"), True, "0.9"])
def test_check_target_refuses_values_outside_zero_one(target):
    with pytest.raises(ConfigError, match="target") as caught:
        check_target(target)
    assert caught.value.field == "target"


def test_check_target_accepts_one():
    assert check_target(1) == 1.0


def test_recommend_picks_the_smallest_delay_meeting_the_target():
    rows = [
        {"delay": "10 minutes", "completeness": 1.0},
        {"delay": "30 seconds", "completeness": 0.95},
        {"delay": "2 minutes", "completeness": 0.99},
        {"delay": "5 minutes", "completeness": 0.995},
        {"delay": "0 seconds", "completeness": float("nan")},
    ]
    assert recommend(rows, 0.99) == "2 minutes"  # equal to the target qualifies
    assert recommend(rows, 0.9) == "30 seconds"
    assert recommend(rows, 0.999) == "10 minutes"
    assert recommend(rows[1:2], 0.99) is None
    assert recommend([], 0.5) is None
    # Not monotone: still the smallest delay that meets it, whatever comes after.
    assert recommend([{"delay": "1m", "completeness": 0.99}, {"delay": "2m", "completeness": 0.98}], 0.99) == "1 minute"


def test_emission_frame_follows_the_watermark_trajectory():
    progress = _progress(GUIDE_TRAJECTORY)
    windows = _windows(("12:00", "12:10"), ("12:05", "12:15"), ("12:20", "12:30"))
    emissions = emission_frame(windows, progress)
    first = emissions.iloc[0]
    assert first["emit_batch"] == 5 and first["emit_watermark"] == T("2016-05-10 12:11")
    assert first["end_batch"] == 2  # the clock first reached 12:10 with the 12:14 dog
    assert first["clock_at_emit"] == T("2016-05-10 12:21")
    assert first["delay_seconds"] == 660.0 and first["delay_batches"] == 3
    assert emissions["emit_batch"].iloc[1:].isna().all()
    assert math.isnan(emissions["delay_seconds"].iloc[1])
    delay = output_delay(emissions)
    assert (delay.windows_emitted, delay.windows_never_emitted) == (1, 2)
    assert (delay.mean_seconds, delay.max_seconds, delay.mean_batches, delay.max_batches) == (660.0, 660.0, 3.0, 3)


def test_emission_boundary_is_inclusive():
    progress = _progress([(0, None, "12:07"), (1, "11:57", None), (2, "11:57", "12:20"), (3, "12:10", None)])
    emissions = emission_frame(_windows(("12:00", "12:10")), progress)
    assert emissions["emit_batch"].tolist() == [3]


def test_output_delay_without_emitted_windows_is_none():
    emissions = emission_frame(_windows(("12:00", "12:10")), _progress([(0, None, "12:07")]))
    delay = output_delay(emissions)
    assert delay.mean_seconds is None and delay.max_batches is None and delay.windows_never_emitted == 1


def test_counted_windows_adds_open_exact_windows():
    result = pd.DataFrame({**_windows(("12:00", "12:10")), "key": ["a"], "count": [1]})
    exact = pd.DataFrame({**_windows(("11:50", "12:00"), ("12:00", "12:10"), ("12:10", "12:20")), "key": "a", "count": 1})
    windows = counted_windows(result, exact, T("2016-05-10 12:10"))
    assert windows["window_end"].dt.strftime("%H:%M").tolist() == ["12:10", "12:20"]


def test_state_stats_peak_and_mean():
    stats = state_stats(_progress(GUIDE_TRAJECTORY))
    assert stats["peak_state_rows"] == 12 and stats["peak_state_memory_bytes"] == 500
    assert stats["mean_state_rows"] == pytest.approx(52 / 7)


def test_tuning_charts_from_canned_json():
    data = {
        "target": 0.99,
        "recommended": "1 minute",
        "delays": [
            {"delay": "0 seconds", "completeness": 0.9, "peak_state_rows": 10, "output_delay_seconds": 5.0},
            {"delay": "1 minute", "completeness": 0.995, "peak_state_rows": 20, "output_delay_seconds": 65.0},
            {"delay": "5 minutes", "completeness": 1.0, "peak_state_rows": 40, "output_delay_seconds": None},
        ],
    }
    assert tune_frame(data)["recommended"].tolist() == [False, True, False]
    state = completeness_vs_state(data)
    assert list(state.data[0].text) == ["0 seconds", "1 minute", "5 minutes"]
    assert list(state.data[0].x) == [10, 20, 40]
    assert any(shape.y0 == 0.99 for shape in state.layout.shapes)
    delay = completeness_vs_output_delay(data)
    assert list(delay.data[0].text) == ["0 seconds", "1 minute"]  # a delay that never emitted has no point


# --------------------------------------------------------------------------- Spark


@pytest.fixture(scope="module")
def sweep_feed(tmp_path_factory) -> Path:
    """8 batches × 15 s, 3 keys, ≤5 s jitter and 15 % of events 40 s late: 1-minute windows lose some."""
    from streaming.feedgen import FeedSpec, write_feed

    folder = tmp_path_factory.mktemp("sweep") / "feed"
    spec = FeedSpec(
        start=datetime(2024, 1, 1, 12, 0, 0), batches=8, batch_interval_seconds=15, events_per_batch=12,
        keys=("a", "b", "c"), max_lag_seconds=5, late_share=0.15, late_delay_seconds=40, seed=11,
    )
    write_feed(spec, folder)
    return folder


@pytest.fixture(scope="module")
def sweep(registry, sweep_feed):
    """Spark for every delay: what the model is held to."""
    return tune(registry, _query(sweep_feed, "1 minute"), delays=["1m", "0", "20 seconds"], target=0.99, method="spark")


@pytest.fixture(scope="module")
def modelled_steps(registry, sweep_feed):
    """The model's sweep, with what it previewed and reported on its way."""
    previews, reports = [], []
    result = tune(registry, _query(sweep_feed, "1 minute"), delays=["1m", "0", "20 seconds"], target=0.99, report=reports.append, preview=previews.append)
    return result, previews, reports


@pytest.fixture(scope="module")
def modelled(modelled_steps):
    return modelled_steps[0]


def test_the_models_answer_comes_first_and_the_confirmation_reports_each_batch(modelled_steps, sweep_feed):
    result, [preview], reports = modelled_steps
    assert preview.confirmation is None and result.confirmation is not None  # the model's answer, before Spark confirmed it
    assert preview.recommended == result.recommended and [o.completeness for o in preview.outcomes] == [o.completeness for o in result.outcomes]
    files = len(list(sweep_feed.glob("*.csv")))
    steps = [line for line in reports if line.startswith(f"confirming {result.recommended} on Spark: batch ")]
    assert steps[0].startswith(f"confirming {result.recommended} on Spark: batch 1 of {files}, about ") and steps[0].endswith(" left")
    assert steps[-1] == f"confirming {result.recommended} on Spark: batch {files} of {files}" and len(steps) == files


def test_the_replay_status_estimates_the_rest_at_the_pace_so_far():
    from streaming.analysis.measure import replay_status

    assert replay_status("confirming 1 day on Spark", 12, 478, 6.0) == "confirming 1 day on Spark: batch 12 of 478, about 3.9 min left"
    assert replay_status("replaying 2 configurations on Spark", 0, 956, 0.0) == "replaying 2 configurations on Spark: batch 0 of 956"


MODEL_FIELDS = (
    "delay", "completeness", "counted", "exact", "rows_dropped_by_watermark", "lost_pairs", "windows_lost", "peak_state_rows",
    "mean_state_rows", "output_delay_seconds", "max_output_delay_seconds", "output_delay_batches", "max_output_delay_batches",
    "windows_emitted", "windows_never_emitted", "batches",
)


def test_the_model_measures_every_delay_as_spark_does(sweep, modelled):
    assert sweep.method == "spark" and sweep.confirmation is None
    assert modelled.method == "model" and {outcome.method for outcome in modelled.outcomes} == {"model"}
    for spark, model in zip(sweep.to_json()["delays"], modelled.to_json()["delays"]):
        assert {name: model[name] for name in MODEL_FIELDS} == {name: spark[name] for name in MODEL_FIELDS}
    for spark, model in zip(sweep.outcomes, modelled.outcomes):
        pd.testing.assert_frame_equal(model.result.reset_index(drop=True), spark.result[model.result.columns].reset_index(drop=True), check_dtype=False)
        pd.testing.assert_frame_equal(model.per_window, spark.per_window, check_dtype=False)
        pd.testing.assert_frame_equal(model.emissions, spark.emissions, check_dtype=False)
    assert modelled.recommended == sweep.recommended


def test_the_recommended_delay_is_confirmed_on_spark_and_sizes_the_state(registry, sweep, modelled):
    from streaming.analysis.tune import confirm

    confirmation = modelled.confirmation
    assert confirmation.delay == modelled.recommended and confirmation.agree, confirmation.differences()
    spark = sweep.outcomes[[o.delay for o in sweep.outcomes].index(confirmation.delay)]
    assert confirmation.spark["counted"] == spark.counted and confirmation.spark["peak_state_rows"] == spark.peak_state_rows
    per_row = spark.peak_state_memory_bytes / spark.peak_state_rows
    assert [o.peak_state_memory_bytes for o in modelled.outcomes] == [round(o.peak_state_rows * per_row) for o in modelled.outcomes]
    data = json.loads(json.dumps(modelled.to_json()))
    assert data["method"] == "model" and data["confirmation"]["agree"] is True
    assert set(data["confirmation"]) == {"delay", "model", "spark", "agree"}
    other = confirm(registry, modelled, "0s")  # one click on another point
    assert other.delay == "0 seconds" and other.agree, other.differences()
    assert other.model["completeness"] < 0.99
    with pytest.raises(ConfigError, match="delay: '5 minutes' is not one of the sweep's delays"):
        confirm(registry, modelled, "5 minutes")


def test_sweep_is_monotone_and_recommends_the_smallest_delay(sweep):
    assert [o.delay for o in sweep.outcomes] == ["0 seconds", "20 seconds", "1 minute"]
    values = [o.completeness for o in sweep.outcomes]
    assert values == sorted(values), values
    assert values[0] < 0.99 <= values[1] and values[-1] == 1.0
    peaks = [o.peak_state_rows for o in sweep.outcomes]
    assert peaks == sorted(peaks), peaks
    delays = [o.output_delay.mean_seconds for o in sweep.outcomes]
    assert None not in delays and delays == sorted(delays), delays
    qualifying = [o for o in sweep.outcomes if o.completeness >= 0.99]
    assert sweep.recommended == qualifying[0].delay == "20 seconds"
    assert recommend([o.to_json() for o in sweep.outcomes], 0.99) == sweep.recommended
    assert sweep.concurrent is DEFAULT_CONCURRENT
    # Per window, a longer delay never emits earlier.
    for shorter, longer in zip(sweep.outcomes, sweep.outcomes[1:]):
        both = shorter.emissions.merge(longer.emissions, on=["window_start", "window_end"], suffixes=("_s", "_l"))
        both = both[both["emit_batch_l"].notna()]
        assert both["emit_batch_s"].notna().all() and (both["emit_batch_s"] <= both["emit_batch_l"]).all()


def test_concurrent_sweep_measures_the_same(registry, sweep_feed, sweep):
    concurrent = tune(registry, _query(sweep_feed, "1 minute"), delays=["1m", "0", "20 seconds"], target=0.99, concurrent=True, method="spark")
    assert concurrent.concurrent is True and sweep.concurrent is False

    def measured(result) -> list[dict]:
        return [{k: v for k, v in row.items() if k != "mean_batch_duration_ms"} for row in result.to_json()["delays"]]

    assert measured(concurrent) == measured(sweep)
    assert concurrent.recommended == sweep.recommended


def test_sweep_counts_are_consistent(sweep):
    exact_total = int(sweep.exact["count"].sum())
    for outcome in sweep.outcomes:
        assert outcome.exact == exact_total
        assert outcome.counted == int(outcome.result["count"].sum())
        assert outcome.lost_pairs == outcome.exact - outcome.counted
        assert outcome.completeness == pytest.approx(outcome.counted / outcome.exact)
        assert outcome.per_window["counted"].sum() == outcome.counted
        # Spark counts dropped rows after partial aggregation: never more than the lost pairs, and zero only without loss.
        assert (outcome.rows_dropped_by_watermark == 0) == (outcome.lost_pairs == 0)
        assert outcome.rows_dropped_by_watermark <= outcome.lost_pairs


def test_sweep_json_shape(sweep):
    data = json.loads(json.dumps(sweep.to_json()))
    assert set(data) >= {"delays", "recommended", "concurrent", "wall_seconds"}
    assert data["recommended"] == sweep.recommended and isinstance(data["wall_seconds"], float)
    for row in data["delays"]:
        assert set(row) >= {
            "delay", "completeness", "counted", "exact", "rows_dropped_by_watermark", "peak_state_rows",
            "mean_state_rows", "peak_state_memory_bytes", "output_delay_seconds", "output_delay_batches",
        }


def _recorded_append_run(registry, feed: Path, **query) -> tuple[dict[tuple[pd.Timestamp, pd.Timestamp], int], pd.DataFrame]:
    """Run ``feed`` in append mode recording the batch that emitted each window; ``(window -> batch, progress)``."""
    config = QueryConfig(FeedSource(feed, seconds_per_file=0), output_mode="append", **query)
    name = f"append_check_{uuid.uuid4().hex[:10]}"
    run = registry.start(config, name, max_rows=None)
    emitted: dict[tuple[pd.Timestamp, pd.Timestamp], int] = {}
    fold = run.table.apply

    def record(batch_id: int, rows: list[tuple]) -> None:
        for start, end, *_ in rows:
            emitted.setdefault((T(start, unit="us"), T(end, unit="us")), batch_id)
        fold(batch_id, rows)

    run.table.apply = record  # the feed is stepped: nothing runs before the first file is staged below
    try:
        run.await_idle(300)
        return emitted, progress_frame(run.log.summaries())
    finally:
        registry.remove(name)


def _derived(emissions: pd.DataFrame) -> dict[tuple[pd.Timestamp, pd.Timestamp], int]:
    done = emissions[emissions["emit_batch"].notna()]
    return {(s, e): int(b) for s, e, b in zip(done["window_start"], done["window_end"], done["emit_batch"])}


def test_output_delay_matches_a_real_append_run_on_the_guide_example(registry):
    swept = tune(registry, _query(GUIDE, "10 minutes", "5 minutes"), delays=["10 minutes"], target=0.5)
    outcome = swept.outcomes[0]
    real, append_progress = _recorded_append_run(registry, GUIDE, window="10 minutes", slide="5 minutes", watermark="10 minutes")
    first = (T("2016-05-10 12:00"), T("2016-05-10 12:10"))
    assert first in real
    assert append_progress.set_index("batch_id").loc[real[first], "watermark"] == T("2016-05-10 12:11")
    # Derived from the update run's trajectory, exactly the batches the append run emitted in.
    assert _derived(outcome.emissions) == real
    assert outcome.output_delay.windows_emitted == len(real) == 1
    assert outcome.output_delay.windows_never_emitted == 4
    assert outcome.output_delay.mean_seconds == 660.0 and outcome.output_delay.mean_batches == 3.0
    assert outcome.completeness == pytest.approx(18 / 20)


def test_output_delay_boundary_watermark_equal_to_window_end(registry, write_feed):
    feed = write_feed([[("2016-05-10 12:07:00", "dog")], [("2016-05-10 12:20:00", "owl")], [("2016-05-10 12:21:00", "cat")]])
    swept = tune(registry, _query(feed, "10 minutes"), delays=["10 minutes"])
    real, progress = _recorded_append_run(registry, feed, window="10 minutes", watermark="10 minutes")
    first = (T("2016-05-10 12:00"), T("2016-05-10 12:10"))
    assert progress.set_index("batch_id").loc[real[first], "watermark"] == T("2016-05-10 12:10")
    assert _derived(swept.outcomes[0].emissions) == real


def test_cli_tune_writes_the_json(cli, tmp_path):
    out = tmp_path / "tune.json"
    done = cli(
        "tune", str(GUIDE), "--window", "10 minutes", "--slide", "5 minutes", "--delays", "0s, 10 minutes", "--target", "0.85", "--json", str(out), "--sequential",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(out.read_text())
    assert [row["delay"] for row in data["delays"]] == ["0 seconds", "10 minutes"]
    assert data["recommended"] == "10 minutes" and data["concurrent"] is False
    assert data["delays"][1]["completeness"] == pytest.approx(0.9)
    assert "10 minutes" in done.stdout and "recommended" in done.stdout
    assert [row["method"] for row in data["delays"]] == ["model", "model"]
    assert data["confirmation"]["delay"] == "10 minutes" and data["confirmation"]["agree"] is True
    assert data["confirmation"]["spark"]["completeness"] == pytest.approx(0.9)
    assert "confirmed on Spark at 10 minutes" in done.stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--delays", "0s,soon"], "delays: 'soon'"),
        (["--delays", "1 minute", "--target", "1.5"], "target: 1.5"),
        (["--delays", "1 minute", "--target", "0"], "target: 0.0"),
        (["--delays", "1 minute", "--window", "ten"], "window: 'ten'"),
        (["--delays", "1 minute", "--target", "most"], "target: 'most' is not a number"),
        (["--delays", " , "], "delays: ' , ' must name at least one"),
        (["--delays", "soon", "--target", "2", "--window", "ten"], "delays: 'soon' is not a duration"),  # every bad flag named at once
        (["--delays", "soon", "--target", "2", "--window", "ten"], "target: 2.0"),
        (["--delays", "soon", "--target", "2", "--window", "ten"], "window: 'ten'"),
    ],
)
def test_cli_tune_bad_input_exits_2(argv, message, capsys):
    from streaming.cli import main

    args = ["tune", str(GUIDE), "--window", "10 minutes", *argv]
    assert main(args) == 2
    assert message in capsys.readouterr().err
