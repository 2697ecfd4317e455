"""Unit tests of streaming.charts.live and .common on canned frames: no Spark, no Streamlit."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from streaming.charts import common, live
from streaming.engine.output.progress import breakdown_frame, progress_frame, summarize
from streaming.engine.output.results import ResultTable

T = pd.Timestamp


def _progress(batch_id: int, *, dropped: int = 0, watermark: str = "1970-01-01T00:00:00.000Z", rows: int = 10,
              state_total: int = 0, state_updated: int = 0, memory: int = 0, durations: dict[str, int] | None = None) -> dict:
    """A progress event as ``json.loads(progress.json)`` gives it, with one state operator."""
    return {
        "batchId": batch_id,
        "timestamp": f"2016-05-10T12:{10 + batch_id:02d}:00.000Z",
        "numInputRows": rows,
        "inputRowsPerSecond": rows / 2,
        "processedRowsPerSecond": rows * 2.0,
        "durationMs": durations if durations is not None else {"addBatch": 100 + batch_id, "getBatch": 5, "triggerExecution": 130 + batch_id},
        "eventTime": {"watermark": watermark, "max": "2016-05-10T12:20:00.000Z"},
        "stateOperators": [
            {"numRowsTotal": state_total, "numRowsUpdated": state_updated, "numRowsRemoved": 0,
             "memoryUsedBytes": memory, "numRowsDroppedByWatermark": dropped}
        ],
        "observedMetrics": {"input": {"input_rows": rows, "malformed_rows": 1}},
    }


@pytest.fixture
def summaries() -> list[dict]:
    return [
        summarize(_progress(0, dropped=0, rows=4, state_total=3, state_updated=3, memory=1000)),
        summarize(_progress(1, dropped=2, rows=6, state_total=5, state_updated=2, memory=1500, watermark="2016-05-10T12:04:00.000Z")),
        summarize(_progress(2, dropped=3, rows=8, state_total=4, state_updated=1, memory=1800, watermark="2016-05-10T12:11:00.000Z")),
    ]


@pytest.fixture
def progress(summaries: list[dict]) -> pd.DataFrame:
    return progress_frame(summaries)


@pytest.fixture
def table() -> pd.DataFrame:
    """The guide's 10-minute windows sliding every 5 minutes, as ``ResultTable.frame()`` gives them."""
    result = ResultTable("update")
    micros = lambda text: int(T(text).value // 1000)  # noqa: E731 - local shorthand
    result.apply(0, [
        (micros("2016-05-10 12:00"), micros("2016-05-10 12:10"), "dog", 3),
        (micros("2016-05-10 12:05"), micros("2016-05-10 12:15"), "dog", 2),
        (micros("2016-05-10 12:00"), micros("2016-05-10 12:10"), "owl", 1),
        (micros("2016-05-10 12:10"), micros("2016-05-10 12:20"), "cat", 4),
    ])
    return result.frame()


def _trace(figure: go.Figure, name: str):
    matches = [trace for trace in figure.data if trace.name == name]
    assert len(matches) == 1, f"expected one trace {name!r}, got {[t.name for t in figure.data]}"
    return matches[0]


# --- colours --------------------------------------------------------------------------


def test_key_colors_depend_on_the_key_set_not_its_order() -> None:
    assert common.key_colors(["owl", "dog", "cat", "dog"]) == common.key_colors(["cat", "dog", "owl"])
    colors = common.key_colors(["owl", "dog", "cat"])
    assert list(colors) == ["cat", "dog", "owl"]
    assert colors["cat"] == common.PALETTE[0] and colors["owl"] == common.PALETTE[2]
    assert len(set(colors.values())) == 3


def test_key_colors_cycle_through_a_short_palette() -> None:
    colors = common.key_colors(["a", "b", "c"], palette=("red", "blue"))
    assert colors == {"a": "red", "b": "blue", "c": "red"}


def test_key_colours_are_the_same_across_figures(table: pd.DataFrame) -> None:
    colors = common.key_colors(table["key"])
    full = live.windowed_counts_figure(table, colors=colors)
    only_owl_and_cat = live.windowed_counts_figure(table[table["key"] != "dog"].iloc[::-1], colors=colors)
    for key in ("owl", "cat"):
        assert _trace(full, key).line.color == _trace(only_owl_and_cat, key).line.color == colors[key]
    shuffled = live.windowed_counts_figure(table.sample(frac=1, random_state=3))
    assert {t.name: t.line.color for t in shuffled.data} == {t.name: t.line.color for t in full.data}


def test_phase_colours_follow_key_colors(summaries: list[dict]) -> None:
    figure = live.batch_duration_figure(breakdown_frame(summaries))
    expected = common.key_colors(["addBatch", "getBatch"])
    assert {t.name: t.marker.color for t in figure.data} == expected


# --- result table -------------------------------------------------------------------


def test_windowed_counts_one_line_per_key_at_window_midpoints(table: pd.DataFrame) -> None:
    figure = live.windowed_counts_figure(table)
    assert sorted(trace.name for trace in figure.data) == ["cat", "dog", "owl"]
    dog = _trace(figure, "dog")
    assert list(pd.to_datetime(dog.x)) == [T("2016-05-10 12:05"), T("2016-05-10 12:10")]
    assert list(dog.y) == [3, 2]
    assert list(dog.customdata) == ["[12:00:00, 12:10:00)", "[12:05:00, 12:15:00)"]


def _tumbling(starts_by_key: dict[str, list[str]], minutes: int = 10) -> pd.DataFrame:
    rows = [(T(start), T(start) + pd.Timedelta(minutes=minutes), key, 1) for key, starts in starts_by_key.items() for start in starts]
    return pd.DataFrame(rows, columns=["window_start", "window_end", "key", "count"])


def test_a_line_breaks_where_windows_are_missing() -> None:
    table = _tumbling({"dog": ["2016-05-10 12:00", "2016-05-10 12:10", "2016-05-10 12:30"]})
    dog = _trace(live.windowed_counts_figure(table), "dog")
    assert [None if math.isnan(y) else y for y in dog.y] == [1, 1, None, 1]  # [12:20, 12:30) is missing: no line across it
    assert not dog.connectgaps


def test_sliding_windows_connect_at_the_slide(table: pd.DataFrame) -> None:
    dog = _trace(live.windowed_counts_figure(table), "dog")  # [12:00, 12:10) and [12:05, 12:15): 5 minutes apart
    assert not any(math.isnan(y) for y in dog.y)
    one_minute = _trace(live.windowed_counts_figure(table, slide=pd.Timedelta(minutes=1)), "dog")
    assert [None if math.isnan(y) else y for y in one_minute.y] == [3, None, 2]


def test_watermark_is_a_vertical_line_at_its_time(table: pd.DataFrame) -> None:
    watermark = T("2016-05-10 12:11")
    figure = live.windowed_counts_figure(table, watermark=watermark)
    lines = [shape for shape in figure.layout.shapes if shape.type == "line"]
    assert len(lines) == 1
    assert T(lines[0].x0) == T(lines[0].x1) == watermark
    assert (lines[0].xref, lines[0].yref, lines[0].y0, lines[0].y1) == ("x", "paper", 0, 1)
    assert any("12:11:00" in note.text for note in figure.layout.annotations)


def test_no_watermark_no_line(table: pd.DataFrame) -> None:
    assert not live.windowed_counts_figure(table, watermark=None).layout.shapes
    assert not live.windowed_counts_figure(table, watermark=pd.NaT).layout.shapes


@pytest.mark.parametrize(("mode", "phrase"), [("update", "latest value"), ("append", "finalized windows"), ("complete", "whole result table")])
def test_title_says_what_the_output_mode_puts_in_the_table(table: pd.DataFrame, mode: str, phrase: str) -> None:
    figure = live.windowed_counts_figure(table, output_mode=mode)
    assert f"({mode} mode)" in figure.layout.title.text
    assert phrase in figure.layout.title.subtitle.text


def test_current_watermark_is_the_latest_set_one(progress: pd.DataFrame) -> None:
    assert common.current_watermark(progress) == T("2016-05-10 12:11")
    assert common.current_watermark(progress.iloc[:1]) is None  # the epoch means "no watermark yet"
    assert common.current_watermark(progress_frame([])) is None


# --- per-batch figures --------------------------------------------------------------


def test_drops_bars_per_batch_and_cumulative_line(progress: pd.DataFrame) -> None:
    figure = live.drops_figure(progress)
    bars, line = _trace(figure, "dropped in batch"), _trace(figure, "cumulative")
    assert isinstance(bars, go.Bar) and list(bars.y) == [0, 2, 3]
    assert isinstance(line, go.Scatter) and list(line.y) == [0, 2, 5]
    assert list(bars.x) == [0, 1, 2]
    assert line.yaxis == "y2" and bars.yaxis == "y"


def test_a_few_batches_and_small_counts_are_ticked_at_whole_numbers_only() -> None:
    """Plotly ticks a short axis at halves: a batch axis read -0.5, a count axis formatted as whole numbers read "0, 1, 1"."""
    few = progress_frame([summarize(_progress(0)), summarize(_progress(1, dropped=1))])
    figure = live.drops_figure(few)
    for axis in (figure.layout.xaxis, figure.layout.yaxis, figure.layout.yaxis2):
        assert (axis.tickmode, axis.tick0, axis.dtick) == ("linear", 0, 1)
    many = progress_frame([summarize(_progress(batch % 50, dropped=100 * batch)) for batch in range(40)])
    figure = live.drops_figure(many)
    assert figure.layout.xaxis.dtick is None and figure.layout.yaxis.dtick is None  # Plotly's own ticks where the span is wide
    resumed = live.drops_figure(progress_frame([summarize(_progress(batch)) for batch in (40, 41)]))  # a resumed run's batches: a short span, far from 0
    assert (resumed.layout.xaxis.tickmode, resumed.layout.xaxis.dtick) == ("linear", 1)


def test_state_rows_and_memory(progress: pd.DataFrame) -> None:
    figure = live.state_figure(progress)
    assert list(_trace(figure, "rows total").y) == [3, 5, 4]
    assert list(_trace(figure, "rows updated").y) == [3, 2, 1]
    memory = _trace(figure, "memory (bytes)")
    assert list(memory.y) == [1000, 1500, 1800] and memory.yaxis == "y2"


def test_rates_and_input_rows(progress: pd.DataFrame) -> None:
    rates = live.rates_figure(progress)
    assert list(_trace(rates, "input rows/s").y) == [2.0, 3.0, 4.0]
    assert list(_trace(rates, "processed rows/s").y) == [8.0, 12.0, 16.0]
    assert list(_trace(live.input_rows_figure(progress), "input rows").y) == [4, 6, 8]


def test_batch_duration_stacks_phases_and_draws_the_total(summaries: list[dict], progress: pd.DataFrame) -> None:
    figure = live.batch_duration_figure(breakdown_frame(summaries), progress)
    assert figure.layout.barmode == "stack"
    assert list(_trace(figure, "addBatch").y) == [100, 101, 102]
    assert list(_trace(figure, "getBatch").y) == [5, 5, 5]
    assert list(_trace(figure, "total (triggerExecution)").y) == [130, 131, 132]
    assert "triggerExecution" not in {t.name for t in figure.data}


def test_watermark_gap(progress: pd.DataFrame) -> None:
    gap = _trace(live.watermark_gap_figure(progress), "gap")
    assert pd.isna(gap.y[0])  # batch 0 had no watermark yet
    # batch 1 at 12:11, watermark 12:04 -> 7 minutes; batch 2 at 12:12, watermark 12:11 -> 1 minute
    assert list(gap.y[1:]) == [7.0, 1.0]  # read in minutes
    assert live.watermark_gap_figure(progress).layout.yaxis.title.text == "minutes behind batch time"


def test_the_batch_a_change_ran_from_is_marked_on_every_chart_over_batches(progress: pd.DataFrame) -> None:
    figures = live.live_figures(pd.DataFrame(), progress, pd.DataFrame(), output_mode="update", changed_at=(2,))
    for name in ("drops", "state", "rates", "gap"):
        assert [(shape.x0, shape.x1) for shape in figures[name].layout.shapes] == [(1.5, 1.5)], name
    assert not live.live_figures(pd.DataFrame(), progress, pd.DataFrame(), output_mode="update")["drops"].layout.shapes


def test_a_replays_watermark_gap_is_behind_the_latest_event_time_not_the_clock(progress: pd.DataFrame) -> None:
    """A replay of stored flights read "5,055 days behind": its batches run today, its data is years old."""
    replayed_at = (pd.Timestamp("2030-01-01") - progress["watermark"]).dt.total_seconds()
    historical = progress.assign(watermark_gap_seconds=replayed_at)  # the data replayed long after it happened
    assert _trace(live.watermark_gap_figure(historical), "gap").y[-1] > 1_000  # days behind the clock: says nothing of the query
    figure = live.watermark_gap_figure(historical, replayed=True)
    # the newest event seen is 12:20 at each batch; the watermark is 12:04, then 12:11
    assert list(_trace(figure, "gap").y[1:]) == [16.0, 9.0] and figure.layout.yaxis.title.text == "minutes behind the latest event time"


@pytest.mark.parametrize(("seconds", "unit"), [([], "seconds"), ([0.0, 90.0], "seconds"), ([30.0, 7_200.0], "hours"),
                                               ([float("nan"), -200.0], "minutes"), ([438.5e6], "days")])
def test_an_axis_of_durations_reads_in_the_largest_unit_it_spans_twice(seconds: list[float], unit: str) -> None:
    name, size = common.time_unit(seconds)
    assert name == unit and dict(common.TIME_UNITS)[name] == size


def test_watermark_gap_without_any_watermark_says_so(progress: pd.DataFrame) -> None:
    figure = live.watermark_gap_figure(progress.iloc[:1])
    assert not figure.data
    assert "no watermark yet" in figure.layout.annotations[0].text.lower()


# --- empty frames ---------------------------------------------------------------------

EMPTY_BUILDERS: dict[str, Callable[[], go.Figure]] = {
    "windowed_counts": lambda: live.windowed_counts_figure(ResultTable("append").frame(), watermark=T("2016-05-10 12:11"), output_mode="append"),
    "windowed_counts_no_columns": lambda: live.windowed_counts_figure(pd.DataFrame()),
    "drops": lambda: live.drops_figure(progress_frame([])),
    "state": lambda: live.state_figure(progress_frame([])),
    "rates": lambda: live.rates_figure(progress_frame([])),
    "input_rows": lambda: live.input_rows_figure(progress_frame([])),
    "batch_duration": lambda: live.batch_duration_figure(breakdown_frame([]), progress_frame([])),
    "watermark_gap": lambda: live.watermark_gap_figure(progress_frame([])),
}


@pytest.mark.parametrize("name", list(EMPTY_BUILDERS))
def test_empty_frames_give_a_valid_figure_saying_no_batches_yet(name: str) -> None:
    figure = EMPTY_BUILDERS[name]()
    assert isinstance(figure, go.Figure)
    assert not figure.data
    assert any("no batches yet" in note.text.lower() for note in figure.layout.annotations)
    assert figure.layout.title.text
    go.Figure(figure.to_dict())  # round-trips through Plotly's validation
    assert figure.to_json()


def test_empty_result_table_still_names_the_output_mode() -> None:
    figure = EMPTY_BUILDERS["windowed_counts"]()
    assert "(append mode)" in figure.layout.title.text
    assert "finalized" in figure.layout.annotations[0].text


# --- long histories ---------------------------------------------------------------------


def test_drawn_rows_keep_every_extreme_and_the_ends() -> None:
    from streaming.charts.common import drawn_rows

    values = np.zeros(10_000)
    values[1234], values[8765] = 500.0, -7.0
    frame = pd.DataFrame({"batch_id": np.arange(10_000), "value": values, "other": np.arange(10_000) % 13})
    thinned = frame.iloc[drawn_rows(frame, ["value", "other"], max_points=400)]
    assert len(thinned) <= 400 + 2
    assert {0, 1234, 8765, 9999} <= set(thinned["batch_id"])
    assert thinned["batch_id"].is_monotonic_increasing
    assert thinned["other"].max() == 12 and thinned["other"].min() == 0
    assert len(drawn_rows(frame.head(300), ["value"], max_points=400)) == 300


def test_long_histories_are_drawn_downsampled_and_say_so() -> None:
    events = [_progress(batch, rows=batch % 7, dropped=5000 if batch == 2222 else 0) for batch in range(3000)]
    for event in events:
        event["timestamp"] = "2016-05-10T12:00:00.000Z"
    figure = live.drops_figure(progress_frame([summarize(event) for event in events]))
    bars = _trace(figure, "dropped in batch")
    assert len(bars.x) < 1000 and 2222 in list(bars.x) and max(bars.y) == 5000
    assert "of 3,000 batches drawn" in figure.layout.title.subtitle.text


def test_a_log_found_batch_by_batch_draws_the_figures_a_whole_reading_draws() -> None:
    """The live view passes its log's ``drawn``: the figures must be those drawn from the frames read whole."""
    from streaming.engine.output.progress import ProgressLog

    log = ProgressLog()
    for batch in range(1_500):
        event = _progress(batch, rows=(batch * 7) % 23, dropped=(batch * 5) % 11, state_total=batch % 97, memory=(batch * 31) % 1009,
                          durations={"addBatch": batch % 50, "getBatch": batch % 3, "triggerExecution": 60 + batch % 50})
        log.add({**event, "timestamp": "2016-05-10T12:00:00.000Z", "eventTime": {"watermark": f"2016-05-10T12:{batch % 60:02d}:00.000Z"}})
        if batch % 250 == 0:  # earlier refreshes, as the page makes them
            progress, breakdown = log.frames()
            live.live_figures(pd.DataFrame(), progress, breakdown, output_mode="update", drawn=log.drawn)
    progress, breakdown = log.frames()
    incremental = live.live_figures(pd.DataFrame(), progress, breakdown, output_mode="update", drawn=log.drawn)
    whole = live.live_figures(pd.DataFrame(), progress, breakdown, output_mode="update")
    for name in ("drops", "state", "rates", "input", "duration", "gap"):
        assert "of 1,500 batches drawn" in incremental[name].layout.title.subtitle.text, name
        assert incremental[name].to_json() == whole[name].to_json(), name


def test_only_the_latest_windows_are_drawn_in_a_long_result_table() -> None:
    starts = pd.date_range("2024-01-01", periods=1000, freq="10s")
    table = pd.DataFrame({"window_start": starts, "window_end": starts + pd.Timedelta(seconds=10), "key": "a", "count": 1})
    figure = live.windowed_counts_figure(table, max_windows=200)
    [trace] = figure.data
    assert len(trace.x) == 200 and pd.Timestamp(trace.x[-1]) == starts[-1] + pd.Timedelta(seconds=5)
    assert "latest 200 of 1,000 window starts" in figure.layout.title.subtitle.text


def test_every_live_figure_passes_plotly_validation(summaries: list[dict], table: pd.DataFrame) -> None:
    """The live figures are built without validation for speed; rebuilt with it, none may be refused."""
    progress = progress_frame(summaries)
    figures = live.live_figures(table, progress, breakdown_frame(summaries), output_mode="update", slide=pd.Timedelta(minutes=5))
    long_history = progress_frame([summarize({**_progress(batch), "timestamp": "2016-05-10T12:00:00.000Z"}) for batch in range(1500)])
    figures["long_state"] = live.state_figure(long_history)
    figures["long_duration"] = live.batch_duration_figure(breakdown_frame([summarize(_progress(batch % 40)) for batch in range(40)]), long_history)
    for name, figure in figures.items():
        rebuilt = go.Figure(figure.to_dict())  # validation on: raises on any invalid property
        assert len(rebuilt.data) == len(figure.data), name


@pytest.mark.parametrize("template", ["plotly", "ggplot2"])
def test_a_refresh_figure_sends_what_plotly_sends_with_the_default_template(summaries: list[dict], table: pd.DataFrame, template: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A RefreshFigure adds the default template only when it is sent: what to_json sends must be what a plain figure sends."""
    import json

    import plotly.io as pio

    monkeypatch.setattr(pio.templates, "default", template)
    figures = live.live_figures(table, progress_frame(summaries), breakdown_frame(summaries), output_mode="update", slide=pd.Timedelta(minutes=5))
    for name, figure in figures.items():
        assert isinstance(figure, common.RefreshFigure), name
        plain = go.Figure(figure.to_plotly_json(), _validate=False)  # given the default template as plotly gives every new figure
        sent = json.loads(pio.to_json(figure, validate=False))
        assert sent == json.loads(pio.to_json(plain, validate=False)), name
        assert sent["layout"]["template"] == pio.templates[template].to_plotly_json(), name


def test_a_value_aggregate_is_drawn_and_named() -> None:
    table = ResultTable("update", "sum")
    table.apply(0, [(0, 60_000_000, "a", 12.5, 2), (60_000_000, 120_000_000, "a", None, 1), (0, 60_000_000, "b", 3.0, 1)])
    figure = live.windowed_counts_figure(table.frame(), measure="sum(amount)")
    go.Figure(figure.to_dict())  # valid with plotly's validation on
    assert figure.layout.title.text.startswith("Result table: sum(amount) per key and window")
    assert figure.layout.yaxis.title.text == "sum(amount)"
    by_key = {trace.name: trace for trace in figure.data}
    assert list(by_key["a"].y[:1]) == [12.5] and math.isnan(by_key["a"].y[1])
    assert "sum(amount) %{y}" in by_key["b"].hovertemplate


def test_state_store_figure_draws_bytes_and_latencies_by_name_and_leaves_out_zeros() -> None:
    from streaming.charts.live import state_store_figure
    from streaming.engine.output.progress import state_store_metrics, summarize

    def progress(batch: int, sst: int) -> dict:
        custom = {"rocksdbSstFileSize": sst, "rocksdbCommitFlushLatency": 3 * batch, "rocksdbBytesCopied": 0, "rocksdbGetCount": 9}
        return {"batchId": batch, "stateOperators": [{"customMetrics": custom}, {"customMetrics": {"rocksdbSstFileSize": 1}}]}

    metrics = state_store_metrics([summarize(progress(1, 100)), summarize(progress(0, 50))])
    assert list(metrics.loc[metrics["metric"] == "rocksdbSstFileSize", "value"]) == [51.0, 101.0]  # batch order, summed over operators
    figure = state_store_figure(metrics)
    traces = {trace.name: trace for trace in figure.data}
    assert set(traces) == {"SstFileSize (bytes)", "CommitFlushLatency (ms)"}  # zeros and plain counts left out
    assert traces["CommitFlushLatency (ms)"].yaxis == "y2" and list(traces["CommitFlushLatency (ms)"].y) == [0, 3]
    assert "No state store metrics" in state_store_figure(state_store_metrics([])).layout.annotations[0].text


def test_a_percent_axis_has_the_decimals_its_span_needs() -> None:
    """A SQL sweep between 99% and 100% read "99% 99% 99% 100% 100% 100%" on its axis."""
    from streaming.analysis.sql_tune import SqlPoint, SqlTuning
    from streaming.charts.sql_tune import sql_sweep_figure
    from streaming.engine.sql.rewrite import WatermarkClause

    points = tuple(SqlPoint((delay,), 1000, matched, 0, 1000 - matched, 0, 0, 5, 2.0, 4, 0.1) for delay, matched in ((0, 991), (60_000, 996), (120_000, 1000)))
    figure = sql_sweep_figure(SqlTuning((WatermarkClause(0, 10, "ts", 0),), points, 0.99, 1.0))
    assert figure.layout.yaxis.tickformat == ".1%"
    assert common.percent_tickformat([0.5, 1.0, None]) == ".0%" and common.percent_tickformat([0.999, 1.0]) == ".2%"


@pytest.mark.parametrize("array", [
    np.array([1.5, np.nan, -2.0]), np.array([1, -2, 3], dtype="int64"), np.array([300, -2], dtype="int64"), np.array([70_000, 1], dtype="int64"),
    np.array([2**40, 1], dtype="int64"), np.array([7, 300], dtype="uint64"), np.array([2**33], dtype="uint64"), np.array([1.5], dtype="float32"),
    np.array([3], dtype="int32"), np.array([True, False]), np.array(["a", "bb"]), np.array([], dtype="int64"), np.arange(6.0).reshape(2, 3),
    np.arange(10)[::2], pd.date_range("2024-01-01", periods=2, freq="s").to_numpy(),
], ids=lambda array: f"{array.dtype}{array.shape}")
def test_a_refresh_figure_writes_an_array_as_plotly_does(array: np.ndarray) -> None:
    """Its own typed arrays: what Plotly's to_typed_array_spec makes of the same array, or the array itself where Plotly keeps it."""
    from _plotly_utils.utils import to_typed_array_spec

    ours, theirs = common.typed_array(array), to_typed_array_spec(array)
    if isinstance(theirs, dict):
        assert ours == theirs
    else:
        assert isinstance(ours, np.ndarray) and ours.tolist() == theirs.tolist()
