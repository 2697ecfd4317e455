"""The Step through page (AppTest): a scenario opened from its link, stepped forward and back, update and append side by side."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import shared, sql_walkthrough

pytestmark = pytest.mark.spark  # every test here runs pages on Spark

APP = Path(__file__).resolve().parents[2] / "app.py"
TIMEOUT = 180


def _captions(at: AppTest) -> list[str]:
    return [markdown.value for markdown in at.markdown if markdown.value.startswith("<div class='scn-caption'>")]


def test_the_late_data_scenario_opens_from_its_link_steps_and_goes_back() -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"scenario": "late_data", "step": "2"})
    at.run()
    shared.session_starter().wait(TIMEOUT)
    at.switch_page(shared.STEP_PAGE).run()
    try:
        assert not at.exception, at.exception
        assert not at.error, [error.value for error in at.error]
        assert at.selectbox(key="scenario").value == "late_data"
        assert at.session_state["scn_view"] == 2  # the link's batch: Spark ran the first file and the no-data batch after it
        update, append = _captions(at)
        assert "Batch 1 read no rows: Spark ran it because the watermark had moved to 11:58." in update and "Batch 1" in append
        for _ in range(3):
            at.button(key="scn_next").click().run()
            assert not at.exception, at.exception
        assert at.session_state["scn_view"] == 5 and at.query_params["step"] == "5"
        update, append = _captions(at)
        assert update.count("Batch 4 read 4 rows") == 1 and "It updated 3 result rows" in update
        assert "so the watermark moves to 12:11 (10 minutes behind it) for the next batch" in append
        at.button(key="scn_next").click().run()
        update, append = _captions(at)
        assert "The watermark passed 12:10: append mode now emits 12:00–12:10 (cat 1, dog 2 and owl 1), final" in append
        emitted = [table.value for table in at.table]
        assert any("change" in frame and list(frame["change"]) == ["emitted"] * 3 for frame in emitted)  # the sink's rows, highlighted as emitted
        at.button(key="scn_back").click().run()
        assert at.session_state["scn_view"] == 5 and "Batch 4 read 4 rows" in _captions(at)[0]
        at.button(key="scn_end").click().run()
        update, _ = _captions(at)
        assert "The donkey at 12:04 arrived when the watermark was 12:11" in update
        assert "The 12:04 donkey arrives behind the watermark" in " ".join(caption.value for caption in at.caption)
        assert at.button(key="scn_next").disabled
        walks = at.session_state["scn_walks"]["walks"]
        at.switch_page(shared.QUERIES_PAGE).run()  # leaving the page stops its queries
        assert "walks" not in at.session_state["scn_walks"] and not any(walk.active for walk in walks.walks)
    finally:
        held = (at.session_state["scn_walks"] if "scn_walks" in at.session_state else {}).get("walks")
        if held is not None:
            held.close()


def test_every_scenario_builds_its_queries_and_notes_only_steps_its_feed_has() -> None:
    from streaming.scenarios import SCENARIOS

    assert len(SCENARIOS) >= 8
    for scenario in SCENARIOS.values():
        configs = scenario.configs()
        files = len(configs[0].source.files())
        assert all(0 <= step <= files for step in scenario.notes), scenario.name
        assert len(configs) == len(scenario.labels or [None])


def test_the_idle_and_zero_delay_scenarios_do_what_their_notes_say(spark, registry) -> None:
    from streaming.analysis.explain import explain, replay_events
    from streaming.engine.run.walkthrough import Walkthrough
    from streaming.scenarios import SCENARIOS

    told = {}
    for name in ("idle_source", "zero_delay"):
        config = SCENARIOS[name].configs()[0]
        walk = Walkthrough(registry, config)
        try:
            assert walk.advance() == 1 and walk.handed == 1 and not walk.finished
            assert walk.to_end() == walk.steps - 1 and walk.finished
            told[name] = explain(config, walk.summaries(), walk.outputs(), replay_events(spark, config))
        finally:
            walk.close()
    from streaming.engine.run.walkthrough import make_room

    left = Walkthrough(registry, SCENARIOS["zero_delay"].configs()[0])  # as a reloaded tab leaves one
    try:
        assert make_room(registry, 1, limit=1) == [left.name] and not left.active
    finally:
        left.close()
    idle = told["idle_source"]
    empty = [step for step in idle if step.read_new and step.input_rows == 0]
    assert len(empty) == 2 and all(step.watermark_before == step.watermark_after and step.output.empty for step in empty)
    assert all("the source is idle" in step.caption for step in empty)
    assert idle[-1].output["change"].eq("emitted").all() and len(idle[-1].output) == 5  # the windows that waited, let out at 12:23
    zero = told["zero_delay"]
    cat = next(step for step in zero if "cat" in set(step.rows["key"]))
    assert cat.dropped[["key", "rule"]].values.tolist() == [["cat", "event time at or before the watermark"], ["dog", "event time at or before the watermark"]]
    assert str(cat.watermark_before) == "2016-05-10 12:00:05" and cat.output.empty  # neither row reached a window
    assert next(step for step in zero if step.duplicates).duplicates == 1


def test_your_own_data_steps_through_and_a_refused_setting_names_its_field() -> None:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"scenario": "own"})
    at.run()
    shared.session_starter().wait(TIMEOUT)
    at.switch_page(shared.STEP_PAGE).run()
    try:
        assert not at.exception, at.exception
        assert at.selectbox(key="scn_feed").value == "web_clicks"
        at.button(key="scn_next").click().run()
        assert not at.exception and not at.error, (at.exception, [error.value for error in at.error])
        [caption] = _captions(at)
        assert "Batch 0 read 50 rows" in caption
        at.checkbox(key="scn_use_watermark").uncheck()
        at.selectbox(key="scn_output_mode").set_value("append").run()
        assert any("output_mode: 'append'" in error.value for error in at.error)
        assert "walks" not in at.session_state["scn_walks"]  # other settings: the replay of the old ones is closed
    finally:
        held = (at.session_state["scn_walks"] if "scn_walks" in at.session_state else {}).get("walks")
        if held is not None:
            held.close()


GUIDE_SQL = (
    "SELECT window(event_time, '10 minutes', '5 minutes') AS w, key, count(*) AS n\n"
    "FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 10 MINUTES\nGROUP BY 1, 2\n"
)


def test_your_own_sql_steps_through_its_batches_and_ends_where_the_forms_replay_ends(registry) -> None:
    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.output.results import stamp
    from streaming.engine.run.runner import replay

    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.query_params.update({"scenario": "own"})
    at.run()
    shared.session_starter().wait(TIMEOUT)
    at.switch_page(shared.STEP_PAGE)
    for key, value in {"scn_feed": "guide_words", "scn_query_mode": "SQL", "scn_sql": GUIDE_SQL}.items():
        at.session_state[key] = value  # before the page's first run, as a user's choices
    at.run()
    try:
        assert not at.exception, at.exception
        assert any(message.value.startswith("Ready to run.") for message in at.success), [error.value for error in at.error]
        at.button(key="scn_next").click().run()
        assert not at.exception and not at.error, (at.exception, [error.value for error in at.error])
        [caption] = _captions(at)
        assert "Batch 0 read 2 rows" in caption and "ran before any watermark" in caption
        operators, emitted, _ = (table.value for table in at.table)  # what the sink received: the first batch adds every row
        assert list(operators["operator"]) == ["stateful aggregate"] or len(operators) == 1, operators
        assert len(emitted) and set(emitted["change"]) == {"added"} and {"w.start", "w.end", "key", "n"} <= set(emitted.columns)
        # one press a file: the no-data batch after the first file passed over, the second file's batch shown (it took a press each)
        at.button(key="scn_next_file").click().run()
        assert at.session_state["scn_view"] == 3 and "Batch 2 read 2 rows" in _captions(at)[0]
        at.button(key="scn_end").click().run()
        walks = at.session_state["scn_walks"]["walks"]
        view = at.session_state["scn_view"]
        assert walks.finished and view == walks.batches > 4  # four files, and the no-data batches the watermark's moves ran
        told = walks.steps()
        assert sum(step["input_rows"] for step in told) == 10  # the guide's ten words
        [late] = [step for step in told if step["rows_dropped_by_watermark"]]  # the 12:04 donkey, behind the watermark of 12:11
        assert late["input_rows"] == 2 and late["watermark"] == "2016-05-10 12:11:00" and "dropped" in late["caption"]
        shown = at.table[-1].value
        rows = sorted(zip(shown["w.start"], shown["w.end"], shown["key"], shown["n"], strict=True))
        form = replay(  # the form's query, stepped alike
            registry, SAMPLE_FEEDS / "guide_words", window="10 minutes", slide="5 minutes", watermark="10 minutes",
        )
        expected = sorted(zip(map(stamp, form.result["window_start"]), map(stamp, form.result["window_end"]), form.result["key"], form.result["count"], strict=True))
        assert len(rows) == 12 and "donkey" not in set(shown["key"]) and rows == expected, (rows, expected)
        assert "Download report (HTML)" in {button.label for button in at.get("download_button")}  # SQL mode had none
        report = sql_walkthrough.steps_report(walks)
        assert "Every batch run so far" in report and html.escape(GUIDE_SQL) in report and f"{walks.batches} micro-batches run" in report
        at.switch_page(shared.QUERIES_PAGE).run()  # leaving the page stops its query
        assert "walks" not in at.session_state["scn_walks"] and not walks.walks[0].active
    finally:
        held = (at.session_state["scn_walks"] if "scn_walks" in at.session_state else {}).get("walks")
        if held is not None:
            held.close()
