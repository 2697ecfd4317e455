"""End-to-end latency per record and real-time mode: the folds on known times, the refusals, and both trigger kinds on a real topic."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest
from support import wait_for

from streaming.analysis.latency import (
    latency_breakdown,
    latency_headline,
    latency_histogram,
    latency_over_time,
    latency_summary,
    produced_before,
    weighted_percentiles,
)
from streaming.engine.errors import ConfigError
from streaming.engine.kafka.topics import create_topic, topic_names
from streaming.engine.output.latency import LatencyLog
from streaming.engine.query.config import REAL_TIME_AGGREGATES, FeedSource, QueryConfig
from streaming.engine.sources.kafka import KafkaSource

VALUES = (("n", "bigint"),)


def topic_source(**changes) -> KafkaSource:
    return KafkaSource("127.0.0.1:9092", "clicks", VALUES, starting_offsets="latest", **changes)


# -- the folds, on entries with known times ---------------------------------------------------------------------------


def entries(rows: list[tuple[float, float, float, float]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["produced_ms", "written_ms", "folded_ms", "weight"])
    return frame.assign(shown_ms=frame["folded_ms"] + 100)


def test_percentiles_are_nearest_rank_and_weighted() -> None:
    assert weighted_percentiles(range(1, 101), [1] * 100, [0.5, 0.95, 0.99, 1.0]) == [50.0, 95.0, 99.0, 100.0]
    assert weighted_percentiles([10, 20], [9, 1], [0.5, 0.9, 0.91]) == [10.0, 10.0, 20.0]
    assert all(value != value for value in weighted_percentiles([], [], [0.5]))  # NaN for nothing measured
    # around a restart a batch can bring a weight that is not a count (negative, NaN) or no time: the readout still never crosses
    crossing = weighted_percentiles([10, 20, 30, 40, 50, float("nan")], [5, -4, 1, float("nan"), 1, 1], [0.5, 0.95, 0.99, 1.0])
    assert crossing == sorted(crossing) and crossing == [10.0, 50.0, 50.0, 50.0]
    import numpy as np

    rng = np.random.default_rng(3)
    for _ in range(200):
        values = rng.exponential(1000, 40)
        weights = rng.choice([-3.0, 0.0, 1.0, 2.5, float("nan")], 40)
        picks = weighted_percentiles(values, weights, [0.5, 0.95, 0.99, 1.0])
        assert all(pick != pick for pick in picks) or picks == sorted(picks), picks
    with pytest.raises(ValueError, match=r"1\.5"):
        weighted_percentiles([1], [1], [1.5])


def test_a_summary_measures_to_the_sink_or_to_the_table_and_over_a_sliding_window() -> None:
    log = entries([(1_000, 1_100, 1_150, 1), (1_000, 1_300, 1_320, 1), (2_000, 2_050, 2_400, 1), (2_500, 3_000, 3_010, 1)])
    assert latency_summary(log, "written") == {"p50": 100.0, "p95": 500.0, "p99": 500.0, "max": 500.0, "records": 4.0}
    assert latency_summary(log, "folded")["max"] == 510.0
    assert latency_summary(log, "folded", since_ms=2_000) == {"p50": 400.0, "p95": 510.0, "p99": 510.0, "max": 510.0, "records": 2.0}
    over_time = latency_over_time(log, 1_000, "written")
    assert list(over_time["at"]) == [pd.Timestamp(1_000, unit="ms"), pd.Timestamp(2_000, unit="ms"), pd.Timestamp(3_000, unit="ms")]
    assert list(over_time["max"]) == [300.0, 50.0, 500.0] and list(over_time["records"]) == [2.0, 1.0, 1.0]
    histogram = latency_histogram(log, bins=2, to="written")
    assert list(histogram["records"]) == [2.0, 2.0] and (histogram["low_ms"].iloc[0], histogram["high_ms"].iloc[-1]) == (50.0, 500.0)


def test_the_headline_leaves_out_records_older_than_the_query_and_keeps_the_last_figures_with_their_time() -> None:
    # produced, written, folded, weight: two records of a backlog (published with 2013's times, 0 here), two produced while the query ran
    log = entries([(0, 1_000_000, 1_000_010, 1), (0, 1_000_000, 1_000_010, 1), (990_000, 1_000_100, 1_000_200, 1), (995_000, 1_000_300, 1_000_320, 1)])
    live = latency_headline(log, "folded", now_ms=1_010_000, window_ms=60_000, started_ms=900_000)
    assert (live.p50, live.max, live.records, live.as_of_ms, live.backlog_only) == (5_320.0, 10_200.0, 2.0, None, False)
    quiet = latency_headline(log, "folded", now_ms=2_000_000, window_ms=60_000, started_ms=900_000)  # nothing in the last minute
    assert (quiet.p50, quiet.records, quiet.as_of_ms) == (5_320.0, 2.0, 1_000_320.0)
    backlog = latency_headline(log.iloc[:2], "folded", now_ms=1_010_000, window_ms=60_000, started_ms=900_000)
    assert backlog.backlog_only and backlog.records == 0.0 and backlog.p50 != backlog.p50
    empty = latency_headline(log.iloc[:0], "folded", now_ms=1_010_000, window_ms=60_000, started_ms=900_000)
    assert not empty.backlog_only and empty.records == 0.0


def test_records_produced_before_the_query_started_are_counted_with_the_oldest_age() -> None:
    log = entries([(1_000, 9_000, 9_000, 3), (4_000, 9_000, 9_000, 1), (6_000, 9_000, 9_000, 4)])
    assert produced_before(log, 5_000) == {"records": 4.0, "share": 0.5, "oldest_ms": 4_000.0}
    assert produced_before(log, 1_000) == {"records": 0.0, "share": 0.0, "oldest_ms": 0.0}
    assert produced_before(log.iloc[:0], 1_000)["share"] == 0.0


def test_a_batch_enters_the_log_once_its_rows_are_folded_and_its_progress_has_come_in_whichever_first() -> None:
    log = LatencyLog()
    log.batch_written(0, written_ms=5_000, folded_ms=5_010)
    assert log.records == 0
    log.batch_produced(0, [1_000.0, 2_000.0, 3_000.0, 4_000.0], 8)  # 8 records, as 4 percentiles of weight 2
    log.batch_produced(1, [4_000.0, 4_500.0], 2)
    log.batch_written(1, written_ms=6_000, folded_ms=6_000)
    assert log.records == 10
    summary = latency_summary(log.frame(), "written")
    assert (summary["max"], summary["records"]) == (4_000.0, 10.0)
    log.batch_written(2, 7_000, 7_000)
    log.batch_produced(2, [], 0)  # a batch that read nothing
    assert log.records == 10 and log.version == 2


def test_a_records_time_is_split_at_its_batchs_start_the_sink_the_fold_and_the_page() -> None:
    log = LatencyLog()
    log.batch_written(0, written_ms=1_500, folded_ms=1_520)
    log.batch_produced(0, [1_000.0, 1_200.0], 4, started_ms=1_300)  # 4 records, produced at 1.0 and 1.2 s (2 each)
    log.add([2_000], [2_010], 2_015)  # a real-time row
    log.shown(1_600)
    breakdown = latency_breakdown(log.frame())
    assert list(breakdown["phase"]) == [
        "waiting for its micro-batch to start", "its micro-batch, until the sink had its rows", "the app folding them into the result table", "until a page drew the table",
    ]
    assert list(breakdown["mean_ms"]) == [200.0, 200.0, 20.0, 80.0]  # adding up to the mean latency to the page: (600 + 400) / 2
    log.shown(2_100)
    rows = latency_breakdown(log.frame()).tail(3)
    assert list(rows["mean_ms"]) == [10.0, 5.0, 85.0] and set(rows["records"]) == {1.0}


def test_the_log_keeps_its_latest_entries() -> None:
    log = LatencyLog(max_entries=3)
    for index in range(5):
        log.add([index, index], [10, 10], 10)
    assert list(log.frame()["produced_ms"]) == [3.0, 3.0, 4.0, 4.0] and log.records == 10


# -- real-time mode: what Spark refuses, refused first -----------------------------------------------------------------


def real_time(**changes) -> QueryConfig:
    settings = {"source": topic_source(), "aggregation": "none", "watermark": None, "output_mode": "update", "trigger": "real_time", "trigger_interval": "5 seconds"}
    return QueryConfig(**{**settings, **changes})


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"source": FeedSource("sample_feeds/web_clicks", seconds_per_file=0)}, "trigger", "reads only a Kafka topic, not the feed source"),
        ({"output_mode": "append"}, "output_mode", "real-time mode needs update output mode"),
        ({"aggregation": "count", "output_mode": "complete"}, "output_mode", "needs update output mode"),
        ({"trigger_interval": "1 second"}, "trigger_interval", "shorter than real-time mode's shortest batch, 5 seconds"),
        ({"trigger_interval": None}, "trigger_interval", "is required for the real_time trigger"),
        ({"source": topic_source(max_offsets_per_trigger=100)}, "source.max_offsets_per_trigger", "Spark rejects maxOffsetsPerTrigger"),
        ({"source": topic_source(end_offsets=((0, 10),))}, "source.end_offsets", "follows the topic as records arrive"),
    ],
)
def test_real_time_mode_refuses_what_spark_refuses_naming_the_field(changes, field, reason) -> None:
    with pytest.raises(ConfigError) as err:
        real_time(**changes)
    assert err.value.field == field and reason in str(err.value)


def test_real_time_mode_refuses_session_windows_deduplication_and_on_this_spark_aggregations() -> None:
    from streaming.engine.data.columns import ColumnMapping

    with pytest.raises(ConfigError, match="session windows are not supported in real-time mode"):
        real_time(aggregation="count", session_gap="1 minute", watermark="1 minute")
    with_id = topic_source(columns=ColumnMapping(event_time="kafka_timestamp", key="kafka_key", dedup_id="n"))
    with pytest.raises(ConfigError, match="dropDuplicatesWithinWatermark"):
        real_time(source=with_id, deduplicate=True, watermark="1 minute")
    if not REAL_TIME_AGGREGATES:
        with pytest.raises(ConfigError) as err:
            real_time(aggregation="count", watermark="1 minute")
        assert err.value.field == "aggregation" and "aggregations come in Spark 4.3" in str(err.value)
    assert not real_time().resumable and real_time().trigger_interval == "5 seconds"


# -- both trigger kinds on a real topic, records with known produce times -----------------------------------------------


def produce(bootstrap: str, topic: str, stamps: list[int]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    for index, stamp in enumerate(stamps):
        producer.produce(topic, key="k", value=json.dumps({"n": index}), timestamp=stamp)
    assert producer.flush(10) == 0


def test_the_live_page_runs_real_time_mode_on_a_topic_and_draws_each_rows_latency(kafka_broker, topic_name) -> None:
    from support.app import app_page, drawn_figures, page_errors, page_metric, wait_until

    from dashboard import kafka, shared

    create_topic(kafka_broker.bootstrap, topic_name)
    produce(kafka_broker.bootstrap, topic_name, [int(time.time() * 1000)])  # a message to infer the value's columns from
    kafka._topic_names.clear()  # the page lists a broker's topics as they were up to 10 s ago: another test may have read them
    registry, name = shared._shared_registry(), "t_app_real_time"
    at = app_page(shared.LIVE_PAGE)
    at.selectbox(key="lab_source").set_value("kafka").run()
    at.text_input(key="lab_kafka_bootstrap").set_value(kafka_broker.bootstrap).run()
    at.selectbox(key="lab_kafka_topic").set_value(topic_name).run()
    at.selectbox(key="lab_trigger").set_value("real_time").run()
    if not REAL_TIME_AGGREGATES:  # Spark 4.2: refused before Start
        assert any("aggregation: 'count'" in error and "Spark 4.3" in error for error in page_errors(at))
    at.selectbox(key="lab_aggregation").set_value("none").run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    at.text_input(key="lab_name").set_value(name)
    try:
        at.button(key="lab_start").click().run()
        assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
        run = registry.get(name)
        output = run.sink.topic  # the rows reach the app through a topic of the run's own
        assert output in topic_names(kafka_broker.bootstrap)
        stamps = [int(time.time() * 1000) - 5_000 - index for index in range(20)]  # produced "5 s ago" or earlier
        produce(kafka_broker.bootstrap, topic_name, stamps)
        assert wait_until(at, lambda page: int(page_metric(page, "Result rows")) == 21, 120.0), "the rows did not reach the page"
        assert wait_until(at, lambda page: page_metric(page, "Latency max") != "–", 30.0)
        charts = drawn_figures(at).values()
        assert any("End-to-end latency over time" in spec for spec in charts) and any("rows passed through" in spec for spec in charts)
        assert any("Real-time mode: each row's latency" in caption.value for caption in at.caption)
        assert set(stamps) <= set(run.table.frame()["event_time"].astype("int64") // 1_000_000)  # event time: the record timestamp
        measured = run.latency.frame()
        measured = measured[measured["produced_ms"].isin(stamps)]
        assert len(measured) == 20 and (measured["written_ms"] - measured["produced_ms"] >= 5_000).all() and (measured["weight"] == 1).all()
        assert (measured["folded_ms"] >= measured["written_ms"]).all() and (measured["shown_ms"] >= measured["folded_ms"]).all()
    finally:
        registry.delete(name)
    assert output not in topic_names(kafka_broker.bootstrap)


def measure_a_micro_batch(registry, bootstrap: str, topic_name: str) -> None:
    """A micro-batch measures each record's latency from its produce time: 10 records produced 30 to 39 s ago, read by one batch."""
    create_topic(bootstrap, topic_name)
    newest = int(time.time() * 1000) - 30_000
    produce(bootstrap, topic_name, [newest - second * 1_000 for second in range(10)])
    source = KafkaSource(bootstrap, topic_name, VALUES)
    run = registry.start(QueryConfig(source, window="1 minute", watermark="1 minute"), "latency_micro_batch")
    try:
        assert run.latency is not None
        wait_for(lambda: run.latency.records == 10 or not run.query.isActive, "10 records not measured")
        checked = int(time.time() * 1000)
        measured = run.latency.frame()
        written = measured["written_ms"] - measured["produced_ms"]
        assert set(measured["written_ms"]) == {measured["written_ms"].iloc[0]}  # one batch read them all
        assert written.max() - written.min() == 9_000  # the spread of their produce times, exactly
        assert 30_000 <= written.min() <= checked - newest and (measured["folded_ms"] >= measured["written_ms"]).all()
        summary = latency_summary(measured, "written")
        assert summary["records"] == 10 and summary["max"] == written.max() and abs(summary["p50"] - (written.min() + 4_000)) <= 10  # the 5th of 10
        assert "latency" not in json.dumps(run.log.latest.get("observedMetrics"))  # the produce times are not kept with the progress
        started = measured["started_ms"].iloc[0]
        assert newest < started <= measured["written_ms"].iloc[0]  # the batch started after they were produced, before its sink had them
    finally:
        registry.delete("latency_micro_batch")


def test_replay_follows_a_topic_in_real_time_mode_while_a_micro_batch_measures_each_records_latency(registry, kafka_broker, tmp_path) -> None:
    """Two behaviours, one test's time: the CLI's real-time replay runs in its own process while a micro-batch run here measures known produce times."""
    from support.cli import finish, start_cli

    real_time_topic, micro_topic = f"cli-real-time-{time.time_ns()}", f"micro-batch-{time.time_ns()}"
    create_topic(kafka_broker.bootstrap, real_time_topic)
    stamps = sorted(int(time.time() * 1000) - 60_000 - index for index in range(30))  # produced a minute ago or earlier
    produce(kafka_broker.bootstrap, real_time_topic, stamps)
    out = tmp_path / "replay.json"
    started = time.time() * 1000
    process = start_cli(
        "replay", f"kafka://{kafka_broker.bootstrap}/{real_time_topic}", "--event-time", "kafka_timestamp", "--key", "kafka_key", "--window", "1 minute",
        "--agg", "none", "--trigger", "realtime:5 seconds", "--latency", "--json", str(out),
    )
    try:
        measure_a_micro_batch(registry, kafka_broker.bootstrap, micro_topic)
    finally:
        done = finish(process, 300)
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    assert sorted(pd.Timestamp(row["event_time"]).value // 1_000_000 for row in written["result"]) == stamps
    latency = written["latency_ms"]
    assert 60_000 <= latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"] <= time.time() * 1000 - min(stamps)
    assert f"latency_ms p50={latency['p50']}" in done.stdout and started - min(stamps) <= latency["max"]


def test_replay_refuses_an_unknown_trigger(write_feed, capsys) -> None:
    from streaming.cli import main

    feed = write_feed([[("2016-05-10 12:07:00", "dog")]])
    with pytest.raises(SystemExit) as exited:
        main(["replay", str(feed), "--window", "1 minute", "--trigger", "continuous"])
    assert exited.value.code == 2 and "is not default or realtime[:DURATION]" in capsys.readouterr().err


def test_the_compare_page_refuses_a_latency_comparison_naming_each_field() -> None:
    from dashboard.compare import latency_inputs
    from dashboard.shared import InputErrors

    topic = {"bootstrap": "127.0.0.1:9092", "topic": "clicks", "value_columns": [("n", "bigint")], "mapping": {"event_time": "kafka_timestamp", "key": "kafka_key"}}
    inputs = latency_inputs(topic, ["default", "real_time"], "10 seconds", 1_000, 20)
    assert [config.trigger for config in inputs.configs] == ["default", "real_time"] and {config.aggregation for config in inputs.configs} == {"none"}
    with pytest.raises(InputErrors) as err:
        latency_inputs(topic, ["real_time"], "2 seconds", 1_000, 5)
    assert [error.field for error in err.value.errors] == ["triggers", "trigger_interval", "seconds"]
    with pytest.raises(InputErrors) as err:
        latency_inputs({**topic, "topic": None}, ["default", "real_time"], "10 seconds", 1_000, 20)
    assert [error.field for error in err.value.errors] == ["source.topic"]


def test_a_latency_comparison_summarises_each_trigger_and_deletes_its_topic(registry, kafka_broker, topic_name) -> None:
    from confluent_kafka import Producer

    from streaming.analysis.triggers import compare_latency

    create_topic(kafka_broker.bootstrap, topic_name, 2)
    produce(kafka_broker.bootstrap, topic_name, [int(time.time() * 1000)] * 5)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    producer.produce(topic_name, key="k", value="not json")  # malformed: not published again, so every record published is measured
    assert producer.flush(10) == 0
    source = KafkaSource(kafka_broker.bootstrap, topic_name, VALUES)
    configs = [real_time(source=source).with_changes(trigger=trigger, trigger_interval=interval) for trigger, interval in (("default", None), ("real_time", "5 seconds"))]
    with pytest.raises(ConfigError, match="must be none"):
        compare_latency(registry, source, [configs[0].with_changes(aggregation="count", watermark="1 minute")] * 2, rate=10, seconds=10)
    comparison = compare_latency(registry, source, configs, rate=200, seconds=6, warm_up=2)
    summary = comparison.summary()
    assert list(summary["label"]) == ["micro-batch, default trigger", "real-time mode (5 seconds batches)"] and comparison.partitions == 2
    assert (summary["records"] >= 700).all() and (summary["p50_ms"] >= 0).all() and summary["cores_held"].iloc[1].startswith("2 (")
    assert comparison.records == 1_200 and all(run.latency["weight"].sum() >= comparison.records - 0.1 for run in comparison.runs)
    assert not [name for name in topic_names(kafka_broker.bootstrap) if name.startswith(f"{topic_name}-latency-")]  # its topic is gone
    assert not [run for run in registry.runs() if run.name.startswith("latency_")]


def test_show_code_exports_a_real_time_query_with_its_trigger_and_a_checkpoint() -> None:
    from streaming.export import pyspark_code

    code = pyspark_code(real_time(trigger_interval="10 seconds"))
    assert "TRIGGER_INTERVAL = '10 seconds'" in code and ".trigger(realTime=TRIGGER_INTERVAL)" in code and "checkpointLocation" in code
    assert ".format('console')" in code  # a sink real-time mode allows


def test_the_generators_rows_are_measured_from_when_the_rate_source_made_them(registry) -> None:
    from streaming.engine.query.config import GeneratorSource

    run = registry.start(QueryConfig(GeneratorSource(events_per_second=200), window="10 seconds", watermark="10 seconds"), "latency_generator")
    try:
        wait_for(lambda: run.latency.records >= 200 or not run.query.isActive, f"200 rows not measured ({run.error})")
        run.stop()
        run.log.caught_up(run.query, time.monotonic() + 5)
        measured = run.latency.frame()
        spent = measured["written_ms"] - measured["produced_ms"]
        assert (spent >= 0).all() and (spent < 30_000).all() and (measured["started_ms"] >= measured["produced_ms"] - 1_000).all()
        assert run.latency.records <= sum(summary["num_input_rows"] for summary in run.log.summaries())
    finally:
        registry.delete("latency_generator")
