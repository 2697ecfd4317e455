"""The Joins page (AppTest): the sample ad feeds joined left outer, stepped to the batch that emits NULL rows, then both delays tuned on the
same replay and confirmed on Spark; a refusal named before Spark; a stream-static join."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support.app import drawn_figures, spark_confirms_the_model

from dashboard import shared
from streaming.analysis.join import batch_caption, join_timeline
from streaming.analysis.join_model import model_join
from streaming.engine.join.join import join_state, side_rows

pytestmark = pytest.mark.spark  # every test here runs pages on Spark

APP = Path(__file__).resolve().parents[2] / "app.py"
TIMEOUT = 180


def _joins_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not at.exception, at.exception
    shared.session_starter().wait(TIMEOUT)
    return at.switch_page(shared.JOINS_PAGE).run()


def _values(values) -> list:
    """A trace's ``x`` or ``y`` as the figure's JSON holds it: a list, or Plotly's typed array (``dtype`` and base64 ``bdata``)."""
    if isinstance(values, dict):
        return np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"]).tolist()
    return list(values)


def test_a_left_outer_join_steps_to_the_batch_that_emits_null_rows_then_its_delays_are_tuned_and_confirmed_on_spark() -> None:
    """Run join on the page's preset, then step to the batch where the first impression without a click gets its NULL row: the batch the
    join model names (the model is held to Spark's own replay in ``tests/engine/test_join.py``), its caption, rows, state, activity chart
    and the story of that key; then the tuner sweeps both delays over the same replay and Spark confirms the model."""
    at = _joins_page()
    assert at.title[0].value == "Joins"
    assert not at.error, [error.value for error in at.error]
    assert at.selectbox(key="join_left").value == "ad_impressions" and at.selectbox(key="join_right").value == "ad_clicks"
    assert "left_outer join of ad_impressions and ad_clicks on impression_id" in at.caption[1].value
    at.button(key="join_run").click().run()
    assert not at.exception, at.exception
    assert not at.error, [error.value for error in at.error]
    outcome = at.session_state["join_outcome"]
    timeline = join_timeline(outcome)
    assert at.subheader[0].value == f"{len(outcome.result):,} rows over {len(timeline)} micro-batches"
    first = int(timeline.loc[timeline["left_unmatched"] > 0, "batch_id"].iloc[0])
    config = outcome.config
    left, right = (side_rows(shared.get_spark(), side) for side in config.sides)
    model = model_join(left, right, config.left.event_time, config.right.event_time, config.on, config.bounds_ms, config.join_type,
                       (config.left.watermark_ms, config.right.watermark_ms), config.policy)
    assert first == min(model.nulls["left"].values())
    step = timeline[timeline["batch_id"] == first].iloc[0]
    emitted = outcome.emitted_by(first)
    unmatched = emitted[emitted["click_time"].isna()]
    assert (unmatched["impression_time"] + pd.Timedelta("2 minutes") < step.watermark).all()  # the global watermark passed each range's end
    at.number_input(key="join_batch").set_value(first).run()
    caption = batch_caption(outcome.config, timeline, first)
    assert caption in [markdown.value for markdown in at.markdown]
    assert f"{step.left_unmatched} ad_impressions row{'' if step.left_unmatched == 1 else 's'} without a match, with NULLs for ad_clicks" in caption
    # the activity chart: a bar of NULL rows at that batch, none at the batch before (the watermark had not passed their bound)
    [nulls] = [trace for trace in json.loads(drawn_figures(at)["join_activity"])["data"] if trace.get("name") == "ad_impressions rows with NULLs for ad_clicks"]
    bars = dict(zip(_values(nulls["x"]), _values(nulls["y"])))
    assert bars[first] > 0 and not bars.get(first - 1)
    shown = at.dataframe[0].value  # the rows that batch emitted
    assert shown["click_time"].isna().sum() == step.left_unmatched > 0
    # the rows still waiting after that batch, as the State Data Source reads them
    waiting = join_state(shared.get_spark(), outcome, "left", first)
    assert f"ad_impressions (left): {len(waiting):,} rows" in [caption.value for caption in at.caption]
    shown = at.dataframe[1].value
    assert sorted(shown["impression_id"]) == sorted(waiting["impression_id"])
    assert set(shown.columns) >= {"matchable_until", "matched", "leaves_state", "null_row"}
    # why a row was not joined: the page opens on the key of the first row emitted with NULLs
    key = at.selectbox(key="join_key").value
    story = at.dataframe[3].value
    assert key == outcome.result.loc[outcome.result["click_time"].isna(), "impression_id"].iloc[0]
    assert list(story.loc[story["side"] == "left", "status"]) == ["emitted with NULLs"]
    # the tuner, on the same replay: both delays swept by the model, then Spark confirms the recommended pair
    at.text_input(key="join_tune_left").set_value("0 seconds, 30 seconds, 1 minute, 2 minutes").run()
    at.text_input(key="join_tune_right").set_value("0 seconds, 30 seconds, 1 minute").run()
    at.button(key="join_tune_run").click().run()
    assert not at.exception, at.exception
    sweep = at.session_state["join_sweep"][1]
    assert len(sweep) == 12 and sweep["completeness"].between(0, 1).all()
    assert sweep["completeness"].min() < sweep["completeness"].max()  # the delays matter on these feeds
    (recommended,) = [markdown.value for markdown in at.markdown if markdown.value.startswith("**Recommended:")]
    model_share = spark_confirms_the_model(at)
    assert f"{model_share}% of the exact join's" in recommended


def test_a_left_outer_join_without_the_right_watermark_is_refused_naming_it() -> None:
    at = _joins_page()
    at.checkbox(key="join_right_use_watermark").uncheck().run()
    assert [error.value for error in at.error] == [
        "Cannot run this join: right.watermark: None is required by a left outer join: Spark refuses it without that watermark and the time range"
    ]
    assert not [button for button in at.button if button.key == "join_run"]


def test_a_stream_static_join_enriches_each_batch_from_the_table() -> None:
    at = _joins_page()
    at.checkbox(key="join_right_static").check().run()
    at.selectbox(key="join_right").set_value("ad_catalog").run()
    assert at.selectbox(key="join_right_time_ad_catalog").value == "listed_at"
    assert not at.error, [error.value for error in at.error]
    assert "left_outer join of ad_impressions and ad_catalog (static) on ad_id" in [caption.value for caption in at.caption]
    at.button(key="join_run").click().run()
    assert not at.exception, at.exception
    outcome = at.session_state["join_outcome"]
    assert outcome.config.static and outcome.result["advertiser"].isna().any()  # the ad missing from the table
    assert any("joined them with the whole table ad_catalog" in markdown.value for markdown in at.markdown)
    assert any("keeps no state" in caption.value for caption in at.caption)
