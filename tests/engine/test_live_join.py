"""Live joins: the generator's paired impressions and clicks, joined as they come on real Spark, and the Joins page's live mode."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from support import console_definitions, printed_result, run_program, wait_for

from dashboard import shared
from streaming.analysis.join import WAITING_COLUMNS, batch_timeline
from streaming.engine.data.preview import time_named
from streaming.engine.errors import ConfigError
from streaming.engine.join.join import JoinConfig, JoinSide, LiveSide, TopicSide, run_join
from streaming.engine.join.live_join import JoinedRows, start_live_join
from streaming.engine.output.progress import ProgressListener
from streaming.engine.run.query import Run
from streaming.engine.run.registry import QueryRegistry
from streaming.engine.sources.ads import CAMPAIGNS, AdStreams
from streaming.engine.sources.kafka import KafkaSource
from streaming.export import join_code

BASE_MS = 1_700_000_000_000
APP = Path(__file__).resolve().parents[2] / "app.py"


def _pair_rows(spark, streams: AdStreams, seconds: int, columns=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both streams over their first ``seconds``, as the rate sources would bring them, as batch frames: made by ``columns``
    (an impression's and a click's, each taking the rate row's value and arrival), the generator's by default."""
    from pyspark.sql import functions as F

    def rows(rate: int, make) -> pd.DataFrame:
        arrivals = spark.range(rate * seconds).select(
            F.col("id").alias("value"), F.timestamp_millis(F.lit(BASE_MS) + (F.col("id") * 1000 / rate).cast("bigint")).alias("timestamp")
        )
        return arrivals.select(*make(F.col("value"), F.col("timestamp"))).toPandas()

    impressions, clicks = columns or (streams.impression_columns, streams.click_columns)
    return rows(streams.impressions_per_second, impressions), rows(streams.clicks_per_second, clicks)


def test_each_click_follows_its_impression_by_the_drawn_delay_and_the_pair_is_the_same_for_a_seed(spark) -> None:
    streams = AdStreams(impressions_per_second=100, click_through=0.5, mean_click_delay="4 seconds", max_click_delay="12 seconds",
                        max_lag="3 seconds", late_share=0.1, late_delay="30 seconds", ads=7, seed=3)
    impressions, clicks = _pair_rows(spark, streams, 120)
    assert list(impressions.columns) == ["impression_id", "ad_id", "impression_time", "campaign"] and list(clicks.columns) == ["impression_id", "click_time"]
    assert impressions["impression_id"].is_unique and set(impressions["campaign"]) == set(CAMPAIGNS) and impressions["ad_id"].nunique() == 7
    assert impressions.groupby("ad_id")["campaign"].nunique().max() == 1  # each ad in one campaign
    early = clicks["impression_id"].isna()  # a click whose impression would precede the start
    assert early.any() and not early[clicks["click_time"] > pd.Timestamp(BASE_MS + 12_000, unit="ms")].any()
    joined = clicks[~early].merge(impressions, on="impression_id")
    assert len(joined) == (~early).sum()  # every other click is on an impression of the stream
    delay = (joined["click_time"] - joined["impression_time"]).dt.total_seconds()  # as out of order and as late as its impression: the delay
    assert delay.between(0, 12.01).all() and 3.6 < delay.mean() < 4.4  # exponential, mean 4 s, capped at 12 s
    assert len(clicks) / len(impressions) == pytest.approx(0.5)
    again, _ = _pair_rows(spark, AdStreams(impressions_per_second=100, click_through=0.5, mean_click_delay="4 seconds", max_click_delay="12 seconds",
                                           max_lag="3 seconds", late_share=0.1, late_delay="30 seconds", ads=7, seed=3), 120)
    pd.testing.assert_frame_equal(impressions, again)
    late, _ = _pair_rows(spark, AdStreams(max_lag="2 seconds", late_share=0.1, late_delay="30 seconds"), 60)
    behind = (pd.to_datetime(BASE_MS, unit="ms") - late["impression_time"]).dt.total_seconds()  # arrival is at BASE_MS + value / rate
    behind += late.index / 50
    assert behind.between(0, 32.01).all() and 0.05 < (behind > 29.99).mean() < 0.15


def test_show_code_of_a_live_pair_makes_the_pairs_rows_and_joins_them_as_the_lab_does(spark) -> None:
    """The exported program's settings, given to the builders it defines (the engine's own, copied), make the generator's impressions and
    clicks row for row (applied to the same arrivals), and its join is a streaming frame of the lab's columns; nothing is started."""
    import shutil

    from streaming.engine.join.join import join_frame

    streams = AdStreams(impressions_per_second=40, click_through=0.5, ads=5, seed=11, late_share=0.2)
    config = JoinConfig(LiveSide(streams, "impressions", "10 seconds"), LiveSide(streams, "clicks", "5 seconds", side="right"), on=("impression_id",),
                        within=("0 seconds", "20 seconds"), join_type="left_outer", policy="max")
    code = join_code(config)
    assert "format('rate')" in code and "kafka" not in code.lower() and "RESULT_PREFIX" not in code
    program = console_definitions(spark, code)
    try:
        assert program["joined"].isStreaming and program["LEFT"]["watermark"] == "10 seconds" and program["POLICY"] == "max"
        assert program["joined"].columns == join_frame(spark, config, Path(program["WORKDIR"]) / "lab")[0].columns
        assert (program["IMPRESSIONS_PER_SECOND"], program["CLICKS_PER_SECOND"], program["SEED"]) == (40, 20, 11)
        lab = _pair_rows(spark, streams, 30)
        timing = (program["SEED"], program["MAX_LAG_MS"], program["LATE_SHARE"], program["LATE_DELAY_MS"])
        rates = (program["IMPRESSIONS_PER_SECOND"], program["CLICKS_PER_SECOND"], program["MEAN_CLICK_DELAY_MS"], program["MAX_CLICK_DELAY_MS"])
        made = _pair_rows(spark, streams, 30, columns=(
            lambda value, arrived: program["impression_columns"](value, arrived, timing[0], program["ADS"], *timing[1:]),
            lambda value, arrived: program["click_columns"](value, arrived, *timing, *rates),
        ))
        for ours, theirs in zip(lab, made):
            pd.testing.assert_frame_equal(theirs, ours)
        assert lab[1]["impression_id"].isna().any() and lab[1]["impression_id"].notna().any()
    finally:
        shutil.rmtree(program["WORKDIR"], ignore_errors=True)


def test_live_sides_are_refused_where_they_do_not_fit(tmp_path) -> None:
    with pytest.raises(ConfigError, match="click_through"):
        AdStreams(impressions_per_second=2, click_through=0.1)
    with pytest.raises(ConfigError, match="max_click_delay"):
        AdStreams(mean_click_delay="1 minute", max_click_delay="30 seconds")
    with pytest.raises(ConfigError, match=r"left\.stream"):
        LiveSide(AdStreams(), "views")  # type: ignore[arg-type]
    streams = AdStreams()
    impressions, clicks = LiveSide(streams, "impressions", "10 seconds"), LiveSide(streams, "clicks", "5 seconds", side="right")
    feed = tmp_path / "clicks"
    feed.mkdir()
    (feed / "batch-0000.csv").write_text("impression_id,click_time\nimp-1,2024-01-01 00:00:00\n")
    with pytest.raises(ConfigError, match="right: 'clicks' is files to replay, which cannot run beside a live stream"):
        JoinConfig(impressions, JoinSide(feed, "click_time", "5 seconds", side="right"), on=("impression_id",), within=("0 seconds", "20 seconds"))
    with pytest.raises(ConfigError, match=r"right\.streams"):
        JoinConfig(impressions, LiveSide(AdStreams(seed=8), "clicks", side="right"), on=("impression_id",))
    config = JoinConfig(impressions, clicks, on=("impression_id",), within=("0 seconds", "20 seconds"), join_type="left_outer")
    assert config.live and config.describe().startswith("left_outer join of impressions (live) and clicks (live) on impression_id")
    with pytest.raises(ConfigError, match="is a live stream"):
        run_join(None, config, ProgressListener())  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="a pattern of topics"):
        TopicSide(KafkaSource("127.0.0.1:9092", "ads-.*", (("impression_id", "string"),), pattern=True), side="left")
    assert [time_named(names) for names in (["id", "ordered_at"], ["at_risk", "createdAt"], ["at_risk", "n"], ["Timestamp", "click_time"])] == [
        "ordered_at", "createdAt", None, "Timestamp",
    ]
    with pytest.raises(ConfigError, match=r"right\.watermark"):  # Spark's rules hold for live sides too
        JoinConfig(impressions, LiveSide(streams, "clicks", side="right"), on=("impression_id",), within=("0 seconds", "20 seconds"), join_type="left_outer")


def test_joined_rows_keep_the_latest_rows_and_every_batch_count() -> None:
    streams = AdStreams()
    config = JoinConfig(LiveSide(streams, "impressions", "10 seconds"), LiveSide(streams, "clicks", "5 seconds", side="right"), on=("impression_id",),
                        within=("0 seconds", "20 seconds"), join_type="left_outer")
    rows = JoinedRows(config, max_rows=3)
    time = pd.Timestamp("2024-01-01")
    rows.add(0, pd.DataFrame({"impression_id": ["a", "b"], "impression_time": [time, time], "click_time": [time, pd.NaT]}))
    rows.add(1, pd.DataFrame({"impression_id": [], "impression_time": [], "click_time": []}))
    rows.add(2, pd.DataFrame({"impression_id": ["c", "d"], "impression_time": [time, time], "click_time": [pd.NaT, pd.NaT]}))
    assert list(rows.latest()["impression_id"]) == ["b", "c", "d"] and list(rows.latest()["_batch"]) == [0, 2, 2]
    assert rows.emitted().values.tolist() == [[0, 2, 1, 0], [1, 0, 0, 0], [2, 2, 2, 0]] and rows.total == 4


def test_a_live_join_is_a_run_of_the_registry_counted_against_its_limit_and_stopped_at_its_time_limit(spark) -> None:
    streams = AdStreams(impressions_per_second=20)
    config = JoinConfig(LiveSide(streams, "impressions"), LiveSide(streams, "clicks", side="right"), on=("impression_id",))
    registry = QueryRegistry(spark, max_active=1)
    try:
        run = start_live_join(registry, config, limit=5.0)
        assert [listed.name for listed in registry.runs()] == [run.name] and run.config.join == config
        with pytest.raises(ConfigError, match=r"queries: 1 .*STREAMING_LAB_MAX_QUERIES=1"):
            start_live_join(registry, config)
        wait_for(lambda: run.status != "active" and not run.stopping, "the join ran past its limit", 120)
        assert run.status == "stopped" and run.stopped_at_limit and run.error is None and run.workdir.exists()
        registry.remove(run.name)
        assert not run.workdir.exists() and registry.runs() == []
    finally:
        registry.close()


def test_a_live_left_outer_join_emits_pairs_in_range_and_an_impression_without_a_click_once_the_watermark_passes(registry) -> None:
    streams = AdStreams(impressions_per_second=100, click_through=0.3, mean_click_delay="2 seconds", max_click_delay="6 seconds", max_lag="1 second",
                        late_share=0.05, late_delay="20 seconds")
    config = JoinConfig(LiveSide(streams, "impressions", "3 seconds"), LiveSide(streams, "clicks", "2 seconds", side="right"), on=("impression_id",),
                        within=("0 seconds", "6 seconds"), join_type="left_outer")
    run = start_live_join(registry, config)
    try:
        def seen() -> bool:
            emitted = run.table.emitted()
            dropped = sum(summary["rows_dropped_by_watermark"] for summary in run.log.summaries())
            return run.status == "active" and emitted["rows_emitted"].sum() > 0 and emitted["left_unmatched"].sum() > 0 and dropped > 0

        wait_for(seen, "no joined rows, NULL rows and late drops", 180)
        run.stop()
        summaries = run.log.summaries()
        timeline = batch_timeline(config, summaries, run.table.emitted())
        rows = run.table.latest()
        pairs, alone = rows[rows["click_time"].notna()], rows[rows["click_time"].isna()]
        offset = pairs["click_time"] - pairs["impression_time"]
        assert offset.between(pd.Timedelta(0), pd.Timedelta("6 seconds")).all() and not pairs.empty
        # an impression is emitted alone in the first batch whose global watermark is past its range's end
        ran_with = timeline.set_index("batch_id")["watermark"]
        assert (alone["impression_time"] + pd.Timedelta("6 seconds") < alone["_batch"].map(ran_with)).all()
        assert not alone.empty and alone["impression_id"].isin(pairs["impression_id"]).sum() == 0
        marks = timeline.dropna(subset=["left_watermark", "right_watermark", "watermark"])
        assert (marks["watermark"] == marks[["left_watermark", "right_watermark"]].min(axis=1)).all()  # policy min
        assert sum(summary["state_rows_removed"] for summary in summaries) > 0  # rows leave the state once the watermark passes their bound
        assert run.status == "stopped"
    finally:
        registry.remove(run.name)
    assert not run.workdir.exists()


AD_SIDES = (("left", "ad_impressions", "impression_time", "1 minute"), ("right", "ad_clicks", "click_time", "30 seconds"))
"""Each side of the ad topics: its side, sample feed, event-time column and watermark delay."""


@pytest.fixture(scope="module")
def ad_topics(spark, kafka_broker) -> dict[str, tuple[str, pd.DataFrame]]:
    """The sample ad feeds published once into two topics: side → (topic, the feed's rows)."""
    import uuid

    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.data.feeds import SAMPLE_FEEDS
    from streaming.engine.run.publish import publish
    from streaming.engine.sources import FeedSource

    topics = {}
    for side, name, time, _ in AD_SIDES:
        topic = f"ads-{side}-{uuid.uuid4().hex[:6]}"
        published = publish(spark, FeedSource(SAMPLE_FEEDS / name, 0, "csv", ColumnMapping(event_time=time, key="impression_id")), kafka_broker.bootstrap, topic)
        rows = pd.concat([pd.read_csv(path, parse_dates=[time]) for path in sorted((SAMPLE_FEEDS / name).glob("*.csv"))], ignore_index=True)
        assert published.messages == len(rows)
        topics[side] = (topic, rows)
    return topics


def _topic_sides(spark, kafka_broker, ad_topics) -> list[TopicSide]:
    """The ad topics as the two sides of a join, each with its watermark delay."""
    from streaming.engine.data.columns import ColumnMapping
    from streaming.engine.kafka.topics import infer_value_columns, latest_messages

    sides = []
    for side, _, time, delay in AD_SIDES:
        topic, mapping = ad_topics[side][0], ColumnMapping(event_time=time, key="impression_id")
        values = infer_value_columns(spark, tuple(latest_messages(kafka_broker.bootstrap, topic, 50)["value"]), "json")
        sides.append(TopicSide(KafkaSource(kafka_broker.bootstrap, topic, values, columns=mapping), delay, side=side))
    return sides


def _exact_pairs(ad_topics, within: str) -> pd.DataFrame:
    """The impressions and the clicks within ``within`` after them, as a batch join of the feeds' rows finds them."""
    impressions, clicks = ad_topics["left"][1], ad_topics["right"][1]
    exact = impressions.merge(clicks, on="impression_id")
    return exact[(exact["click_time"] >= exact["impression_time"]) & (exact["click_time"] <= exact["impression_time"] + pd.Timedelta(within))]


def test_two_topics_joined_live_emit_the_exact_join_of_their_records_then_the_null_rows_the_watermark_allows(spark, registry, kafka_broker, ad_topics) -> None:
    """Every record is on its topic before the join starts: the first batch reads them all (no watermark yet, nothing late), then a no-data
    batch runs with the watermark they set and emits the impressions whose range ended before it."""
    sides = _topic_sides(spark, kafka_broker, ad_topics)
    (left_topic, impressions), (right_topic, clicks) = ad_topics["left"], ad_topics["right"]
    config = JoinConfig(sides[0], sides[1], on=("impression_id",), within=("0 seconds", "2 minutes"), join_type="left_outer")
    assert config.live and config.describe().startswith(f"left_outer join of {left_topic} and {right_topic} on impression_id")
    exact = _exact_pairs(ad_topics, "2 minutes")
    watermark = min(impressions["impression_time"].max() - pd.Timedelta("1 minute"), clicks["click_time"].max() - pd.Timedelta("30 seconds"))
    ended = impressions[~impressions["impression_id"].isin(exact["impression_id"]) & (impressions["impression_time"] + pd.Timedelta("2 minutes") < watermark)]
    run = start_live_join(registry, config)
    try:
        def emitted_and_reported() -> bool:  # a batch's rows reach foreachBatch before its progress reaches the log
            return run.table.emitted()["left_unmatched"].sum() >= len(ended) > 0 and run.log.last_batch_id >= 1

        wait_for(lambda: emitted_and_reported() or run.status != "active", "no NULL rows", 180)
        assert run.status == "active", run.error
        rows = run.table.latest()
        pairs, alone = rows[rows["click_time"].notna()], rows[rows["click_time"].isna()]
        assert sorted(zip(pairs["impression_id"], pairs["click_time"])) == sorted(zip(exact["impression_id"], exact["click_time"]))
        assert sorted(alone["impression_id"]) == sorted(ended["impression_id"])
        assert set(pairs["_batch"]) == {0} and set(alone["_batch"]) == {1}  # then the no-data batch, with the watermark batch 0 set
        timeline = batch_timeline(config, run.log.summaries(), run.table.emitted())
        assert timeline["left_rows"].sum() == len(impressions) and timeline["right_rows"].sum() == len(clicks)
        assert timeline.loc[timeline["batch_id"] == 1, "watermark"].iloc[0] == watermark
    finally:
        registry.remove(run.name)


def test_two_topic_ranges_are_replayed_batch_by_batch_as_the_join_model_says(spark, registry, kafka_broker, ad_topics) -> None:
    """Each topic bounded at its end and cut into batches of at most its cap: Spark's batches, watermarks, drops, state, pairs and NULL rows
    (with the batch of each) are the join model's over the ranges' rows, each in its planned batch."""
    from dataclasses import replace

    from streaming.analysis.join_model import model_join
    from streaming.engine.join.join import side_rows
    from streaming.engine.kafka.topics import describe_topic

    sides = [
        replace(side, source=replace(side.source, end_offsets=describe_topic(kafka_broker.bootstrap, side.source.topic).end_offsets(), max_offsets_per_trigger=cap))
        for side, cap in zip(_topic_sides(spark, kafka_broker, ad_topics), (150, 40))
    ]
    config = JoinConfig(sides[0], sides[1], on=("impression_id",), within=("0 seconds", "2 minutes"), join_type="left_outer")
    clicks = len(ad_topics["right"][1])
    assert not config.live and [len(side.planned()) for side in config.sides] == [4, -(-clicks // 40)]
    outcome = run_join(spark, config, registry.listener, timeout=300)
    assert outcome.data_batches == -(-clicks // 40) and outcome.unplanned() == []
    left, right = (side_rows(spark, side, outcome.plans[side.side]) for side in config.sides)
    assert sorted(left["batch"].value_counts().to_dict().items()) == [(0, 150), (1, 150), (2, 150), (3, 150)]
    model = model_join(left, right, "impression_time", "click_time", ("impression_id",), config.bounds_ms, "left_outer", (60_000, 30_000), "min",
                       outcome.data_batches)
    assert model.batches == len(outcome.summaries) >= 5
    marks = [None if pd.isna(summary["watermark"]) else int(pd.Timestamp(summary["watermark"]).value // 1_000_000) for summary in outcome.summaries]
    assert list(model.watermarks) == marks
    assert sum(len(rows) for rows in model.dropped.values()) == outcome.rows_dropped_by_watermark
    assert list(model.state_rows) == [summary["state_rows_total"] for summary in outcome.summaries]
    emitted = outcome.result.assign(batch=outcome.emitted)
    joined = emitted[emitted["click_time"].notna()]
    assert sorted((left.loc[row, "impression_id"], right.loc[other, "click_time"]) for row, other in model.pairs) == sorted(
        zip(joined["impression_id"], joined["click_time"])
    )
    alone = emitted[emitted["click_time"].isna()]
    assert sorted((left.loc[row, "impression_id"], batch) for row, batch in model.nulls["left"].items()) == sorted(zip(alone["impression_id"], alone["batch"]))
    assert len(alone) > 0
    exported = printed_result(run_program(spark, join_code(config)))  # Show code: the same ranges, cut the same way
    assert exported == outcome.result_records()


def test_show_code_of_two_topics_joins_their_records_as_the_lab_does(spark, kafka_broker, ad_topics) -> None:
    """The exported program's join of the ad topics (its definitions run on this session, then to their end): the exact pairs."""
    import shutil

    from streaming.engine.join.join import join_frame

    sides = _topic_sides(spark, kafka_broker, ad_topics)
    config = JoinConfig(sides[0], sides[1], on=("impression_id",), within=("0 seconds", "2 minutes"), join_type="inner")
    code = join_code(config)
    assert "CONNECTOR" in code and "'rate'" not in code
    program = console_definitions(spark, code)
    query = program["joined"].writeStream.format("memory").queryName("exported_topic_join").trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(300), "the exported join did not read the topics to their end"
        rows = spark.table("exported_topic_join").toPandas()
    finally:
        query.stop()
        spark.catalog.dropTempView("exported_topic_join")
        shutil.rmtree(program["WORKDIR"], ignore_errors=True)
    exact = _exact_pairs(ad_topics, "2 minutes")
    assert list(rows.columns) == join_frame(spark, config, Path(program["WORKDIR"]))[0].columns  # a topic's time column comes last
    assert sorted(zip(rows["impression_id"], rows["click_time"])) == sorted(zip(exact["impression_id"], exact["click_time"])) and len(exact) > 10


@contextmanager
def started(at: AppTest) -> Iterator[tuple[Run, dict[str, str]]]:
    """Press Start on the page's live mode: the run once it has emitted rows and reported a batch, and the metrics the page then shows; stopped after."""
    at.button(key="live_join_start").click().run()
    run = shared._shared_registry().get(at.session_state["live_join_run"])
    assert run is not None
    try:
        assert not at.error, [error.value for error in at.error]
        wait_for(lambda: run.table.total > 0 and run.log.last_batch_id >= 0, "no row emitted", 180)
        at.run()
        yield run, {metric.label: metric.value for metric in at.metric}
    finally:
        shared._shared_registry().remove(run.name)


@pytest.mark.spark
def test_the_joins_page_starts_a_live_join_shows_its_rows_and_stops_it() -> None:
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    shared.session_starter().wait(180)
    at.session_state["live_join_code_download_open"] = True  # Show code, opened: written only then
    at = at.switch_page(shared.JOINS_PAGE).run()
    at.radio(key="join_mode").set_value("Live: generated or Kafka streams").run()
    assert not at.exception, at.exception
    assert any("left_outer join of impressions (live) and clicks (live) on impression_id" in caption.value for caption in at.caption)
    [code] = [block.value for block in at.code]  # Show code: the join as the form holds it
    assert "IMPRESSIONS_PER_SECOND = 50" in code and "JOIN_TYPE = 'left_outer'" in code
    with started(at) as (run, metrics):
        assert int(metrics["Micro-batches"].replace(",", "")) > 0 and int(metrics["Rows emitted"].replace(",", "")) > 0
        assert at.dataframe[0].value["impression_id"].notna().all()
        at.button(key="live_join_read_state").click().run()  # the rows waiting, read from the running query's checkpoint
        assert not at.error, [error.value for error in at.error]
        _, batch, sides = at.session_state["live_join_waiting"]
        ran_with = batch_timeline(run.config.join, run.log.summaries(), run.table.emitted()).set_index("batch_id").loc[batch, "watermark"]
        waiting = sides["left"]
        assert not waiting.empty and set(WAITING_COLUMNS) <= set(waiting.columns)
        assert pd.isna(ran_with) or (waiting["matchable_until"] >= ran_with).all()  # a row past its bound left with that batch
        assert f"impressions (live) (left): {len(waiting):,} rows" in [caption.value for caption in at.caption]
        at.button(key="live_join_stop").click().run()  # stops in the background
        wait_for(lambda: run.status == "stopped" and not run.stopping, "the join did not stop", 120)
        at.run()
        assert "Stopped." in [info.value for info in at.info] and at.button(key="live_join_stop").disabled
        at.text_input(key="live_join_upper").set_value("-1 second").run()  # the range's end before its start
        assert [error.value for error in at.error] == ["Cannot run this join: within: ('0 seconds', '-1 second') has its lower bound after its upper bound"]


def test_the_joins_page_joins_two_topics_live(kafka_broker, ad_topics) -> None:
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    shared.session_starter().wait(180)
    at = at.switch_page(shared.JOINS_PAGE).run()
    at.radio(key="join_mode").set_value("Live: generated or Kafka streams").run()
    at.radio(key="live_join_kind").set_value("Two Kafka topics").run()
    for side, _, time, _ in AD_SIDES:
        at.text_input(key=f"live_join_{side}_bootstrap").set_value(kafka_broker.bootstrap).run()
        at.selectbox(key=f"live_join_{side}_topic").set_value(ad_topics[side][0]).run()
        assert at.selectbox(key=f"live_join_{side}_map_{ad_topics[side][0]}_event_time").value == time  # guessed from the value's columns
    assert not at.exception, at.exception
    assert at.multiselect(key=f"live_join_on_{ad_topics['left'][0]}_{ad_topics['right'][0]}").value == ["impression_id"]
    with started(at) as (_, metrics):
        assert int(metrics[f"{ad_topics['left'][0]} in"].replace(",", "")) == len(ad_topics["left"][1])


def test_the_joins_page_replays_two_topic_ranges_and_tunes_their_delays(kafka_broker, ad_topics) -> None:
    """Replay mode on two topics: each is bounded at its end when the join runs and read 100 records a batch; the tuner's sweep over their
    rows is confirmed by Spark on the same records."""
    from support.app import spark_confirms_the_model

    at = AppTest.from_file(str(APP), default_timeout=180).run()
    shared.session_starter().wait(180)
    at.session_state["join_code_download_open"] = True  # Show code, opened: written only then
    at = at.switch_page(shared.JOINS_PAGE).run()
    at.toggle(key="join_from_topics").set_value(True).run()
    for side, _, time, _ in AD_SIDES:
        at.text_input(key=f"join_kafka_{side}_bootstrap").set_value(kafka_broker.bootstrap).run()
        at.selectbox(key=f"join_kafka_{side}_topic").set_value(ad_topics[side][0]).run()
        assert at.selectbox(key=f"join_kafka_{side}_map_{ad_topics[side][0]}_event_time").value == time
        assert at.number_input(key=f"join_kafka_{side}_max_offsets").value == 100
    assert at.multiselect(key=f"join_kafka_on_{ad_topics['left'][0]}_{ad_topics['right'][0]}").value == ["impression_id"]
    at.button(key="join_run").click().run()
    assert not at.exception and not at.error, (at.exception, [error.value for error in at.error])
    outcome = at.session_state["join_outcome"]
    assert all(side.bounded for side in outcome.config.sides) and len(outcome.summaries) >= len(ad_topics["left"][1]) // 100
    assert "'end_offsets': {'0': " in at.code[0].value  # Show code: the ranges the join replayed
    assert outcome.result["click_time"].notna().any() and f"{len(outcome.result):,} rows over {len(outcome.summaries)} micro-batches" in [
        header.value for header in at.subheader
    ]
    at.text_input(key="join_tune_left").set_value("0 seconds, 1 minute").run()
    at.text_input(key="join_tune_right").set_value("0 seconds, 30 seconds").run()
    at.button(key="join_tune_run").click().run()
    assert len(at.session_state["join_sweep"][1]) == 4
    spark_confirms_the_model(at)
