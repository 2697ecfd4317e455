"""The join figures: frames in, figures out (no Spark)."""

from __future__ import annotations

import pandas as pd

from streaming.analysis.join import TIMELINE_COLUMNS
from streaming.analysis.join_model import recommend
from streaming.charts.join import join_activity_figure, join_comparison_figure, join_key_figure, join_tuner_figure, join_watermarks_figure

T0 = pd.Timestamp("2024-03-04 12:00:00")


def _timeline() -> pd.DataFrame:
    rows = [
        [0, 3, 1, pd.NaT, pd.NaT, pd.NaT, 1, 0, 0, 0, 4, 1024],
        [1, 2, 2, T0, T0 + pd.Timedelta("30s"), T0, 2, 1, 0, 1, 5, 2048],
        [2, 0, 0, T0 + pd.Timedelta("10s"), T0 + pd.Timedelta("40s"), T0 + pd.Timedelta("10s"), 1, 1, 0, 0, 2, 1024],
    ]
    return pd.DataFrame(rows, columns=TIMELINE_COLUMNS)


def test_watermarks_are_drawn_from_the_first_batch_that_has_one() -> None:
    figure = join_watermarks_figure(_timeline(), "imps", "clicks", "min", batch_id=1)
    by_name = {trace.name: trace for trace in figure.data}
    assert set(by_name) == {"imps (left)", "clicks (right)", "global (min of the two)"}
    assert list(by_name["global (min of the two)"].x) == [1, 2]  # no point for batch 0, which had none
    assert list(by_name["clicks (right)"].y) == ["2024-03-04T12:00:30", "2024-03-04T12:00:40"]
    assert figure.layout.yaxis.type == "date"


def test_activity_stacks_what_each_batch_emitted_and_dropped() -> None:
    figure = join_activity_figure(_timeline(), "imps", "clicks")
    by_name = {trace.name: trace for trace in figure.data}
    assert list(by_name["joined rows"].y) == [1, 1, 0]
    assert list(by_name["imps rows with NULLs for clicks"].y) == [0, 1, 1]
    assert list(by_name["dropped as too late"].y) == [0, 1, 0]
    assert list(by_name["rows in state"].y) == [4, 5, 2]
    per_side = {trace.name: list(trace.y) for trace in join_activity_figure(_timeline(), "imps", "clicks", side_state=[(3, 1), (4, 1), (2, 0)]).data}
    assert (per_side["imps rows in state"], per_side["clicks rows in state"]) == ([3, 4, 2], [1, 1, 0])


def test_joins_side_by_side_share_a_colour_per_join_and_one_legend_entry() -> None:
    later = _timeline().assign(state_rows=[4, 9, 9], watermark=[pd.NaT, pd.NaT, T0])
    figure = join_comparison_figure({"1: short": _timeline(), "2: long": later})
    by_label: dict[str, list] = {}
    for trace in figure.data:
        by_label.setdefault(trace.name, []).append(trace)
    assert [len(traces) for traces in by_label.values()] == [4, 4]
    assert [trace.showlegend for trace in by_label["2: long"]] == [True, False, False, False]
    colors = [{trace.line.color for trace in traces} for traces in by_label.values()]
    assert [len(shades) for shades in colors] == [1, 1] and colors[0] != colors[1]
    watermark, emitted, nulls, state = by_label["2: long"]
    assert list(watermark.x) == [2] and list(watermark.y) == ["2024-03-04T12:00:00"] and watermark.line.shape == "hv"
    assert list(emitted.y) == [1, 3, 4] and list(nulls.y) == [0, 1, 2] and nulls.line.dash == "dot"
    assert list(state.y) == [4, 9, 9]
    assert join_comparison_figure({}).layout.title.text.startswith("The joins side by side")


def test_the_tuner_marks_the_pair_recommended() -> None:
    sweep = pd.DataFrame(
        [(left, right, 0.9 if left == 0 else 1.0, 100 + left // 1000 + right // 1000) for left in (0, 30_000) for right in (0, 60_000)],
        columns=["left_delay_ms", "right_delay_ms", "completeness", "peak_state_rows"],
    )
    best = recommend(sweep, 0.99)
    assert (best["left_delay_ms"], best["right_delay_ms"]) == (30_000, 0)  # full completeness, the smallest state
    assert recommend(sweep, 1.01) is None
    figure = join_tuner_figure(sweep, "imps", "clicks", 0.99, (30_000, 0))
    heat, mark = figure.data
    assert list(heat.x) == ["0 seconds", "30 seconds"] and list(heat.y) == ["0 seconds", "1 minute"]
    assert heat.zmin == 90.0 and (list(mark.x), list(mark.y)) == (["30 seconds"], ["0 seconds"])


def test_a_keys_rows_and_their_ranges() -> None:
    story = pd.DataFrame(
        [
            ("left", T0, 0, T0, T0 + pd.Timedelta("2min"), pd.NaT, "emitted with NULLs", "no click"),
            ("right", T0 + pd.Timedelta("3min"), 4, T0 + pd.Timedelta("1min"), T0 + pd.Timedelta("3min"), T0, "dropped as too late", "late"),
        ],
        columns=["side", "event_time", "batch", "range_start", "range_end", "late_watermark", "status", "why"],
    )
    figure = join_key_figure(story, "imps", "clicks", "imp-1")
    ranges = [trace for trace in figure.data if trace.mode == "lines"]
    assert [list(trace.y) for trace in ranges] == [["clicks (right)", "clicks (right)"], ["imps (left)", "imps (left)"]]  # on the other side's lane
    assert {trace.name for trace in figure.data if trace.mode == "markers"} == {"emitted with NULLs", "dropped as too late"}
