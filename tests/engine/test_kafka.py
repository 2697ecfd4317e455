"""Kafka end to end on a real broker (one per run): publishing, a topic as a source, the CLI contract, bad input, a broker lost under a query."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from support import wait_for

from streaming.analysis.lateness import dropped_events, judge
from streaming.analysis.profile import feed_events_of, topic_batches, topic_events_of
from streaming.cli import main
from streaming.engine.data.datasets import DatasetStore
from streaming.engine.data.feeds import SAMPLE_FEEDS, TIME_PATTERN
from streaming.engine.errors import ConfigError, failure_words
from streaming.engine.kafka.kafka_terms import KAFKA_KEY, KAFKA_TIMESTAMP, parse_kafka_url
from streaming.engine.kafka.topics import create_topic, describe_topic, infer_value_columns, latest_messages, require_topic, topic_names
from streaming.engine.query.config import ColumnMapping, FeedSource, QueryConfig
from streaming.engine.run.publish import publish
from streaming.engine.run.runner import run_to_idle
from streaming.engine.runtime.jars import connector_jars, connector_version, require_connector
from streaming.engine.sources.kafka import KafkaSource

WEB_CLICKS = SAMPLE_FEEDS / "web_clicks"
CLICK_FILES = 12
"""The leading files of web_clicks the topics here hold: 600 rows, 3 of them malformed; a minute's window under 30 seconds of watermark drops
14 rows behind it (Spark's count). The whole feed's 40 files would only make each replay three times longer."""
CLICK_ROWS = CLICK_FILES * 50
CLICK_VALUES = (("event_time", "string"), ("key", "string"))
CLICK_COLUMNS = ColumnMapping(event_time="event_time", time_format=TIME_PATTERN, key="key")
DROPPED = ["batch_id", "event_time", "key", "watermark", "window_start", "window_end", "rule"]
BATCH_COLUMNS = ["num_input_rows", "rows_dropped_by_watermark", "malformed_rows", "watermark", "state_rows_total"]


@pytest.fixture(scope="module")
def clicks_folder(tmp_path_factory) -> Path:
    """The first :data:`CLICK_FILES` files of the web_clicks sample feed."""
    folder = tmp_path_factory.mktemp("clicks") / "web_clicks"
    folder.mkdir()
    for path in sorted(WEB_CLICKS.glob("*.csv"))[:CLICK_FILES]:
        shutil.copyfile(path, folder / path.name)
    return folder


@pytest.fixture(scope="module")
def clicks_topic(spark, kafka_broker, clicks_folder) -> str:
    """:func:`clicks_folder` published once into a topic of one partition: a batch of 50 rows a file, in file order."""
    published = publish(spark, FeedSource(clicks_folder, seconds_per_file=0), kafka_broker.bootstrap, "web-clicks")
    assert (published.messages, published.batches, published.end_offsets) == (CLICK_ROWS, CLICK_FILES, ((0, CLICK_ROWS),))
    return "web-clicks"


def clicks(bootstrap: str, topic: str, **settings) -> KafkaSource:
    return KafkaSource(bootstrap, topic, CLICK_VALUES, columns=CLICK_COLUMNS, **{"max_offsets_per_trigger": 50, **settings})


def clicks_query(source, **settings) -> QueryConfig:
    return QueryConfig(source, window="1 minute", watermark="30 seconds", **{"trigger": "available_now", **settings})


# -- set-up: the connector and the broker come from Maven Central, at the installed PySpark's version ---------------------


@pytest.mark.spark  # the jars make test fetches: make test-fast sets up Python only
def test_the_connector_is_fetched_at_the_installed_pysparks_version() -> None:
    import pyspark

    assert connector_version() == pyspark.__version__
    names = sorted(path.name.rsplit("-", 1)[0] for path in connector_jars())
    assert names == ["commons-pool2", "kafka-clients", "spark-sql-kafka-0-10_2.13", "spark-token-provider-kafka-0-10_2.13"]
    assert {path.name for path in connector_jars()} >= {f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar"}


def test_a_missing_connector_is_named_with_how_to_fetch_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="make jars") as caught:
        require_connector(tmp_path)
    assert caught.value.field == "source"


# -- publish, then replay the topic ------------------------------------------------------------------------------------


def test_published_records_are_the_feeds_rows_in_batch_order_keyed_by_the_key_column(kafka_broker, clicks_topic, clicks_folder) -> None:
    records = latest_messages(kafka_broker.bootstrap, clicks_topic, CLICK_ROWS, earliest=True)
    rows = pd.concat([pd.read_csv(path, dtype=str, keep_default_na=False) for path in sorted(clicks_folder.glob("*.csv"))], ignore_index=True)
    assert list(records["offset"]) == list(range(CLICK_ROWS))
    assert [json.loads(value) for value in records["value"]] == [{name: cell or None for name, cell in row.items()} for row in rows.to_dict("records")]
    assert list(records["key"]) == list(rows["key"])  # an empty key cell is an empty key: murmur2 places it as it placed it before


def test_a_published_dataset_keeps_its_types_its_nulls_and_its_event_time_column(spark, kafka_broker, topic_name, tmp_path) -> None:
    """Every value was a string and an empty cell "", so `dep_delay > 15` failed at run time and `IS NOT NULL` filtered nothing; and the
    topic's form picked the first column named like a time (`air_time`, a duration) as its event time."""
    from streaming.engine.kafka.topics import published_mapping

    folder = tmp_path / "flights"
    folder.mkdir()
    (folder / "part-0.csv").write_text("air_time,dep_delay,rate,sched_dep,carrier\n227,2,1.5,2013-01-01 05:15:00,UA\n150,,2.25,2013-01-01 05:29:00,\n")
    columns = ColumnMapping(event_time="sched_dep", time_format="yyyy-MM-dd HH:mm:ss", key="carrier")
    publish(spark, FeedSource(folder, 0, "csv", columns), kafka_broker.bootstrap, topic_name)
    values = [json.loads(value) for value in latest_messages(kafka_broker.bootstrap, topic_name, 2, earliest=True)["value"]]
    assert values == [
        {"air_time": 227, "dep_delay": 2, "rate": 1.5, "sched_dep": "2013-01-01 05:15:00", "carrier": "UA"},
        {"air_time": 150, "dep_delay": None, "rate": 2.25, "sched_dep": "2013-01-01 05:29:00", "carrier": None},
    ]
    inferred = dict(infer_value_columns(spark, [json.dumps(value) for value in values], "json"))
    assert (inferred["dep_delay"], inferred["rate"], inferred["carrier"]) == ("bigint", "double", "string")
    assert published_mapping(kafka_broker.bootstrap, topic_name) == columns.to_dict()  # what the topic's form starts from (dashboard.kafka.published_guess)


def test_a_cancelled_publish_deletes_the_topic_it_created_and_leaves_an_existing_one_with_what_it_sent(spark, kafka_broker, topic_name) -> None:
    """A partial copy of a dataset in a new topic would read as the dataset: it goes; records appended to a topic that was there stay, and the message says how many."""
    import threading

    from streaming.engine.errors import Cancelled

    source, cancel = FeedSource(WEB_CLICKS, seconds_per_file=0), threading.Event()
    cancel.set()  # the publish stops after its first batch
    with pytest.raises(Cancelled, match="the topic it had created is deleted"):
        publish(spark, source, kafka_broker.bootstrap, topic_name, cancel=cancel)
    assert topic_name not in topic_names(kafka_broker.bootstrap)
    create_topic(kafka_broker.bootstrap, topic_name)
    with pytest.raises(Cancelled, match="the 50 records sent stay in it"):
        publish(spark, source, kafka_broker.bootstrap, topic_name, cancel=cancel)
    assert describe_topic(kafka_broker.bootstrap, topic_name).messages == 50


def test_a_replay_of_the_published_topic_equals_the_file_replay_batch_for_batch(spark, registry, kafka_broker, clicks_topic, clicks_folder) -> None:
    """Both read 50 rows a micro-batch back to back (available-now): the same batches, so the same drops, state, result and dropped events."""
    on_files = run_to_idle(registry, clicks_query(FeedSource(clicks_folder, seconds_per_file=0)))
    on_topic = run_to_idle(registry, clicks_query(clicks(kafka_broker.bootstrap, clicks_topic)))
    assert on_files.rows_dropped_by_watermark > 0 and on_files.malformed_rows > 0  # late and malformed rows: the comparison means something
    pd.testing.assert_frame_equal(on_topic.result, on_files.result)
    pd.testing.assert_frame_equal(on_topic.progress[BATCH_COLUMNS], on_files.progress[BATCH_COLUMNS])
    assert on_topic.to_json()["end_offsets"] == {clicks_topic: {"0": CLICK_ROWS}}
    assert on_topic.initial_offsets == {clicks_topic: {"0": 0}}
    topic_events = topic_events_of(spark, on_topic.config.source, topic_batches(on_topic.summaries, on_topic.initial_offsets, clicks_topic))
    assert topic_events["arrival"].notna().all()  # the record timestamp: lateness behind arrival is known for every record
    judged = [
        dropped_events(judge(events, replay.summaries, replay.config.window_ms, replay.config.slide_ms)[0])[DROPPED]
        for events, replay in ((feed_events_of(spark, on_files.config.source), on_files), (topic_events, on_topic))
    ]
    assert len(judged[0]) > 0
    pd.testing.assert_frame_equal(judged[1], judged[0])


def test_records_carry_the_arrival_column_as_their_timestamp_and_a_paced_publish_waits(spark, kafka_broker, topic_name, monkeypatch) -> None:
    store = DatasetStore(SAMPLE_FEEDS)
    columns = ColumnMapping.from_dict(store.saved_columns("orders_jsonl") or {})
    from streaming.engine.data.batching import Batching

    source = FeedSource(store.folder("orders_jsonl"), 0, "json", columns, Batching("ingested_at", "20 seconds"))
    seen: list[tuple[int, int, int]] = []
    from streaming.engine.run import publish as publishing

    reads: list[str] = []
    read_arrivals = publishing.arrival_micros
    monkeypatch.setattr(publishing, "arrival_micros", lambda *args: reads.append(args[1].name) or read_arrivals(*args))
    published = publish(spark, source, kafka_broker.bootstrap, topic_name, speed=200.0, progress=lambda *done: seen.append(done))
    records = latest_messages(kafka_broker.bootstrap, topic_name, published.messages, earliest=True)
    lines = [line for path in source.files() for line in path.read_text().splitlines() if line.strip()]
    arrival = {json.loads(line)["order_id"]: json.loads(line)["ingested_at"] for line in lines}
    stamps = {json.loads(value)["order_id"]: stamp for value, stamp in zip(records["value"], records["timestamp"])}
    assert published.messages == len(lines) and stamps == {order: pd.Timestamp(ms, unit="ms") for order, ms in arrival.items()}
    assert [done[0] for done in seen] == list(range(1, published.batches + 1))
    assert reads == [] and published.batches > 1  # the arrival times were read once, with the cut, not once per batch
    first, last = min(arrival.values()), max(arrival.values())
    assert published.seconds >= (last - first) / 1000 / 200.0 * 0.5  # paced: the arrival span ÷ the speed, less its last interval at most


def test_a_topic_of_csv_lines_replays_like_its_json_twin(spark, registry, kafka_broker, clicks_topic, clicks_folder, topic_name) -> None:
    publish(spark, FeedSource(clicks_folder, seconds_per_file=0), kafka_broker.bootstrap, topic_name, value_format="csv")
    sample = latest_messages(kafka_broker.bootstrap, topic_name, 10, earliest=True)
    assert sample["value"].iloc[0] == "2024-03-04 08:59:52,home"
    values = infer_value_columns(spark, list(sample["value"]), "csv", ["event_time", "key"])
    as_csv = KafkaSource(kafka_broker.bootstrap, topic_name, values, "csv", CLICK_COLUMNS, max_offsets_per_trigger=50)
    pd.testing.assert_frame_equal(
        run_to_idle(registry, clicks_query(as_csv)).result, run_to_idle(registry, clicks_query(clicks(kafka_broker.bootstrap, clicks_topic))).result
    )


def test_the_record_timestamp_and_key_can_be_the_event_time_and_the_key(spark, registry, kafka_broker, topic_name) -> None:
    from confluent_kafka import Producer

    create_topic(kafka_broker.bootstrap, topic_name)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    base = int(pd.Timestamp("2024-01-01 00:00:00").timestamp() * 1000)
    for second, key in [(1, "a"), (2, "b"), (61, "a"), (62, "a"), (5, "b"), (200, "b"), (10, "a")]:
        producer.produce(topic_name, key=key, value=json.dumps({"n": second}), timestamp=base + second * 1000)
    producer.produce(topic_name, key="a", value="not json", timestamp=base + 300_000)
    assert producer.flush(10) == 0
    values = infer_value_columns(spark, list(latest_messages(kafka_broker.bootstrap, topic_name, 10, earliest=True)["value"]), "json")
    assert values == (("n", "bigint"),)
    source = KafkaSource(kafka_broker.bootstrap, topic_name, values)  # event time and key from the record by default
    assert (source.columns.event_time, source.columns.key, source.columns.arrival) == (KAFKA_TIMESTAMP, KAFKA_KEY, None)
    replay = run_to_idle(registry, QueryConfig(source, window="1 minute", watermark="1 minute", trigger="available_now"))
    counts = {(str(row.window_start.time()), row.key): row.count for row in replay.result.itertuples()}
    assert counts == {("00:00:00", "a"): 2, ("00:00:00", "b"): 2, ("00:01:00", "a"): 2, ("00:03:00", "b"): 1}
    assert replay.malformed_rows == 1  # "not json": its value does not parse


def test_messages_that_do_not_parse_are_counted_as_malformed_and_never_fail_the_query(spark, registry, kafka_broker, topic_name) -> None:
    from confluent_kafka import Producer

    create_topic(kafka_broker.bootstrap, topic_name)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap})
    good = [{"event_time": f"2024-03-04 09:00:0{second}", "key": "home"} for second in range(3)]
    bad: list[str | None] = ["{not json", json.dumps({"event_time": "yesterday", "key": "home"}), json.dumps({"event_time": "2024-03-04 09:00:05"}), None]
    for value in [json.dumps(row) for row in good] + bad:
        producer.produce(topic_name, value=None if value is None else value.encode())
    assert producer.flush(10) == 0
    replay = run_to_idle(registry, clicks_query(clicks(kafka_broker.bootstrap, topic_name)))
    assert (replay.input_rows, replay.malformed_rows, int(replay.result["count"].sum())) == (7, 4, 3)


# -- the CLI contract ----------------------------------------------------------------------------------------------------


def plain_kafka_counts(spark, bootstrap: str, topic: str, tmp_path: Path, max_offsets: int) -> list[dict]:
    """The same windowed count in plain PySpark: the topic from its earliest offsets, available-now, ``maxOffsetsPerTrigger``, the memory sink."""
    from pyspark.sql import functions as F

    name = f"plain_{topic.replace('-', '_')}"
    raw = (
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
        .option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", max_offsets).load()
    )
    value = F.from_json(F.col("value").cast("string"), "event_time STRING, key STRING")
    rows = raw.select(F.try_to_timestamp(F.trim(value["event_time"]), F.lit(TIME_PATTERN)).alias("event_time"), F.nullif(F.trim(value["key"]), F.lit("")).alias("key"))
    counts = (
        rows.where(F.col("event_time").isNotNull() & F.col("key").isNotNull()).withWatermark("event_time", "30 seconds")
        .groupBy(F.window("event_time", "1 minute"), "key").count()
    )
    query = (
        counts.writeStream.format("memory").queryName(name).outputMode("update").trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / name)).start()
    )
    try:
        assert query.awaitTermination(300), "the plain query did not end in 300 s"
        latest: dict[tuple, int] = {}
        for row in spark.table(name).collect():  # update mode appends each changed row: the last one of a window and key holds
            latest[(row.window.start, row.window.end, row.key)] = row["count"]
    finally:
        query.stop()
        spark.catalog.dropTempView(name)
    stamp = "%Y-%m-%d %H:%M:%S"
    return [
        {"window_start": start.strftime(stamp), "window_end": end.strftime(stamp), "key": key, "value": count, "count": count}
        for (start, end, key), count in sorted(latest.items())
    ]


def test_publish_and_replay_of_a_three_partition_topic_equal_plain_pyspark_and_name_its_end_offsets(
    spark, cli, kafka_broker, clicks_folder, tmp_path, topic_name,
) -> None:
    done = cli("publish", str(clicks_folder), "--bootstrap", kafka_broker.bootstrap, "--topic", topic_name, "--partitions", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    ends = describe_topic(kafka_broker.bootstrap, topic_name).end_offsets()
    assert f"published={CLICK_ROWS} batches={CLICK_FILES} topic={topic_name} partitions=3 created=true" in done.stdout
    assert len(ends) == 3 and all(offset > 0 for _, offset in ends)
    out = tmp_path / "replay.json"
    done = cli(
        "replay", f"kafka://{kafka_broker.bootstrap}/{topic_name}", "--time-format", TIME_PATTERN, "--window", "1 minute", "--watermark", "30 seconds",
        "--max-offsets-per-trigger", "120", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    assert set(written) == {
        "arrival", "no_data_batches", "result", "rows_dropped_by_watermark", "final_watermark", "input_rows", "malformed_rows", "duplicates_dropped",
        "batches", "end_offsets",
    }
    assert written["arrival"] == "busy"  # a topic's range is read under available-now, whatever --arrival says (quiet by default)
    assert written["end_offsets"] == {topic_name: {str(partition): offset for partition, offset in ends}}
    assert written["input_rows"] == CLICK_ROWS and all(batch["input_rows"] <= 120 for batch in written["batches"])
    assert written["result"] == plain_kafka_counts(spark, kafka_broker.bootstrap, topic_name, tmp_path, 120)


def test_replay_refuses_an_unreachable_broker_and_a_missing_topic_within_seconds(kafka_broker, clicks_topic, capsys) -> None:
    from streaming.engine.runtime.connect import _free_port

    started = time.monotonic()
    assert main(["replay", f"kafka://127.0.0.1:{_free_port()}/clicks", "--window", "1 minute"]) == 2
    assert time.monotonic() - started < 15  # a few seconds, not Spark's minute of retries
    assert "does not answer within 5 s" in capsys.readouterr().err
    assert main(["replay", f"kafka://{kafka_broker.bootstrap}/no-such-topic", "--window", "1 minute"]) == 2
    error = capsys.readouterr().err
    assert "'no-such-topic' does not exist" in error and clicks_topic in error
    assert main(["replay", "kafka://127.0.0.1/clicks", "--window", "1 minute"]) == 2
    assert "is not host:port" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("url", "message"),
    [("kafka://127.0.0.1:9092", "is not kafka://HOST:PORT/TOPIC"), ("kafka://127.0.0.1/t", "is not host:port"), ("kafka://127.0.0.1:9092/a b", "is not a Kafka topic name")],
)
def test_kafka_urls_are_checked(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_kafka_url(url)


def test_topics_are_listed_and_described(kafka_broker, clicks_topic) -> None:
    assert clicks_topic in topic_names(kafka_broker.bootstrap)
    info = describe_topic(kafka_broker.bootstrap, clicks_topic)
    assert (info.messages, info.end_offsets()) == (CLICK_ROWS, ((0, CLICK_ROWS),))
    assert require_topic(kafka_broker.bootstrap, clicks_topic) == [0]


# -- a broker lost under a running query ----------------------------------------------------------------------------------


def test_a_query_whose_broker_was_killed_resumes_from_its_checkpoint_with_nothing_lost_or_doubled(spark, clicks_folder, tmp_path) -> None:
    from streaming.analysis.exact import exact_answer
    from streaming.engine.kafka.broker import KafkaBroker
    from streaming.engine.run.registry import QueryRegistry

    first, second = tmp_path / "first", tmp_path / "second"
    half = CLICK_FILES // 2
    for folder, files in ((first, sorted(clicks_folder.glob("*.csv"))[:half]), (second, sorted(clicks_folder.glob("*.csv"))[half:])):
        folder.mkdir()
        for path in files:
            shutil.copyfile(path, folder / path.name)
    broker = KafkaBroker(tmp_path / "broker").start()
    registry = QueryRegistry(spark, kept_root=tmp_path / "kept")
    try:
        publish(spark, FeedSource(first, seconds_per_file=0), broker.bootstrap, "clicks")
        config = QueryConfig(clicks(broker.bootstrap, "clicks"), window="1 minute", watermark=None)
        run = registry.start(config, "lost_broker", keep=True)
        wait_for_offset(run, "clicks", CLICK_ROWS // 2)
        broker.kill()
        wait_for(lambda: run.status == "failed", "the query did not fail without its broker", 180)
        said = failure_words(run.error or "")
        assert said.strip() and "Python Proxy" not in said and "Traceback" not in said and str(tmp_path) not in said and "/" not in said.split(":")[0], said
        assert "Exception" in said.split(":")[0] or "Timeout" in said, said  # the cause, by its class's short name
        hint = config.source.explain_failure(run.error or "")
        assert hint is not None and "resume" in hint
        run.stop()
        broker.start()  # the same folder: the same port and topics
        publish(spark, FeedSource(second, seconds_per_file=0), broker.bootstrap, "clicks")
        run = registry.resume("lost_broker")
        wait_for_offset(run, "clicks", CLICK_ROWS)
        run.await_idle(120)
        exact = exact_answer(spark, QueryConfig(FeedSource(clicks_folder, seconds_per_file=0), window="1 minute", watermark=None))
        pd.testing.assert_frame_equal(run.table.frame(), exact)
    finally:
        registry.close()
        broker.stop()


def wait_for_offset(run, topic: str, offset: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        ends = [json.loads(summary["source_offsets"][1]) for summary in run.log.summaries() if summary["source_offsets"][1]]
        if ends and sum(ends[-1][topic].values()) >= offset:
            return
        assert run.query.isActive, run.error
        assert time.monotonic() < deadline, f"the query did not read to offset {offset} in {timeout} s"
        time.sleep(0.1)



# -- the Live query page on a topic -----------------------------------------------------------------------------------


def test_the_live_page_runs_a_topic_with_its_sample_mapping_lag_and_dropped_records(kafka_broker, clicks_topic) -> None:
    from support.app import app_page, drawn_figures, page_errors, page_metric, wait_until

    from dashboard import shared
    from dashboard.live import LATENCY_WINDOW_SECONDS

    registry, name = shared._shared_registry(), "t_app_kafka"
    at = app_page(shared.LIVE_PAGE)
    at.selectbox(key="lab_source").set_value("kafka").run()
    at.text_input(key="lab_kafka_bootstrap").set_value("127.0.0.1:1").run()
    assert any("127.0.0.1:1" in warning.value for warning in at.warning)  # nobody answers there: said, and nothing to start
    assert any("source.topic" in error for error in page_errors(at))
    at.text_input(key="lab_kafka_bootstrap").set_value(kafka_broker.bootstrap).run()
    at.selectbox(key="lab_kafka_topic").set_value(clicks_topic).run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    mapped = f"lab_kafka_map_{clicks_topic}"  # each topic's mapping has its own widgets
    assert at.selectbox(key=f"{mapped}_event_time").value == "event_time" and at.selectbox(key=f"{mapped}_key").value == "key"
    assert any({"event_time", "key", KAFKA_TIMESTAMP, KAFKA_KEY} <= set(frame.value.columns) for frame in at.dataframe)  # the sample's first rows
    at.number_input(key="lab_kafka_max_offsets").set_value(50)
    at.text_input(key="lab_watermark").set_value("30 seconds")
    at.text_input(key="lab_name").set_value(name)
    try:
        at.button(key="lab_start").click().run()
        assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
        assert wait_until(at, lambda page: int(page_metric(page, "Batches")) >= CLICK_FILES, 180.0), "the topic was not read to its end"
        charts = drawn_figures(at)
        assert "Behind the topic" in charts["lab_chart_lag"] and "most behind" in charts["lab_chart_lag"]
        assert "End-to-end latency over time" in charts["lab_chart_latency"]
        run = registry.get(name)
        measured = run.latency.frame()
        backlog = bool((measured["produced_ms"] < run.started_at.value / 1e6 - LATENCY_WINDOW_SECONDS * 1000).all())  # published long before the start
        assert (page_metric(at, "Latency p99") == "–") == backlog  # a backlog's age is not headlined as the pipeline's latency
        assert backlog == any("No figure: every record measured so far was produced well before" in caption.value for caption in at.caption)
        at.toggle(key="lab_judge_topic").set_value(True).run()
        assert not at.exception, at.exception
        assert int(page_metric(at, "Events so far")) == CLICK_ROWS - 3 and int(page_metric(at, "Not counted")) > 0
        assert any("Behind their arrival (their record timestamps" in caption.value for caption in at.caption)
        at.toggle(key="lab_read_topic").set_value(True).run()
        assert page_metric(at, "Messages held") == f"{CLICK_ROWS:,}"
    finally:
        registry.delete(name)


def test_the_exported_program_reads_the_topic_as_the_lab_does(spark, registry, kafka_broker, clicks_topic) -> None:
    """Show code's program on a topic: its query, run on this session into a memory sink, ends with the lab's result table."""
    from support import console_definitions

    from streaming.engine.runtime.jars import connector_coordinates
    from streaming.export import pyspark_code

    config = clicks_query(clicks(kafka_broker.bootstrap, clicks_topic), output_mode="complete")
    code = pyspark_code(config)
    assert "KAFKA_CONNECTOR_JARS" in code and ascii(connector_coordinates()) in code
    query = console_definitions(spark, code)["result"].writeStream.outputMode("complete").format("memory").queryName("exported_kafka").trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(300), "the exported query did not read the topic to its end"
        exported = spark.table("exported_kafka").toPandas()
    finally:
        query.stop()
    expected = run_to_idle(registry, config).result
    order = ["window_start", "window_end", "key"]
    exported = exported.astype({"count": "int64"}).sort_values(order, ignore_index=True)
    assert len(expected) > 10
    pd.testing.assert_frame_equal(exported[list(expected.columns)], expected.sort_values(order, ignore_index=True), check_dtype=False)


def test_show_codes_program_for_sql_over_a_topic_prints_what_the_labs_replay_gives(spark, registry, kafka_broker, clicks_topic) -> None:
    """A user's SQL over a topic, streamed and read whole as a static view: the exported program reads the same ranges of records (the
    stream's 50 a micro-batch), decodes and types them with the engine's builders, and prints the result table of the lab's own replay, row
    for row."""
    from support import printed_result, run_program

    from streaming.engine.sql import SqlQuery, SqlView, replay_sql
    from streaming.export import sql_code

    source = clicks(kafka_broker.bootstrap, clicks_topic, end_offsets=((0, CLICK_ROWS),))
    seen = clicks(kafka_broker.bootstrap, clicks_topic, end_offsets=((0, CLICK_ROWS // 2),))  # the keys of the first half of the records
    query = SqlQuery(
        "SELECT window(e.event_time, '1 minute') AS w, e.key, count(*) AS n FROM STREAM(events) "
        "WATERMARK event_time DELAY OF INTERVAL 30 SECONDS AS e LEFT SEMI JOIN seen AS s ON e.key = s.key "
        "WHERE coalesce(e.key, '') <> '' GROUP BY 1, 2",
        (SqlView("events", source), SqlView("seen", seen, static=True)), output_mode="update",
    )
    replayed = replay_sql(registry, query)
    assert replayed.rows_dropped_by_watermark > 0 and replayed.malformed_rows > 0 and len(replayed.records) > 10
    code = sql_code(query, query.check(spark).grouping)
    assert "KAFKA_CONNECTOR_JARS" in code and "topic_view(" in code and "'static': True, 'kind': 'topic'" in code and "GROUPING = ('w', 'key',)" in code
    assert printed_result(run_program(spark, code)) == replayed.records


def test_your_own_sql_steps_through_a_topic_reading_the_records_own_columns(spark, registry, kafka_broker, clicks_topic) -> None:
    """Step through in SQL over a topic: the view of the staging topic has the topic view's columns (the value's, the record's partition),
    each step hands Spark one planned batch of records, and the result table after the last is the whole range's."""
    from streaming.engine.run.walkthrough import Walkthrough
    from streaming.engine.sql import SqlQuery, SqlView
    from streaming.engine.sql.replay import tell_batches

    source = clicks(kafka_broker.bootstrap, clicks_topic, max_offsets_per_trigger=CLICK_ROWS // 2)
    query = SqlQuery(
        "SELECT kafka_partition, count(*) AS n, max(kafka_offset) AS last_offset FROM STREAM(events) GROUP BY kafka_partition",
        (SqlView("events", source.steppable()),), output_mode="complete",
    )
    walk = Walkthrough(registry, query, idle_limit=None)
    try:
        assert walk.steps == 2 and walk.handed == 1  # a topic's first step is copied at start
        walk.to_end()
        told = tell_batches(walk.summaries())
        assert [step["input_rows"] for step in told] == [CLICK_ROWS // 2, CLICK_ROWS // 2]
        assert all(step["operators"] for step in told)
        emitted, result = walk.run.table.after(told[-1]["batch_id"])
        malformed = sum(step["malformed_rows"] for step in told)  # no event time: left out of the view (a row without a key is the query's)
        assert malformed > 0 and result[["kafka_partition", "n"]].to_dict("records") == [{"kafka_partition": 0, "n": CLICK_ROWS - malformed}]
        assert list(result["change"]) == ["updated"] and len(emitted) == 1
    finally:
        walk.close()


def test_the_datasets_page_publishes_a_dataset_in_the_background_and_refuses_a_silent_broker(kafka_broker, topic_name) -> None:
    from support.app import app_page, page_errors, wait_until

    from dashboard import shared

    at = app_page(shared.DATASETS_PAGE)
    at.selectbox(key="dataset_choice").set_value("orders_jsonl (sample)").run()
    at.text_input(key="publish_bootstrap").set_value("127.0.0.1:1")
    at.text_input(key="publish_topic_orders_jsonl").set_value(topic_name)
    at.button(key="publish_start").click().run()
    assert any("Cannot publish" in error and "127.0.0.1:1" in error for error in page_errors(at)), page_errors(at)
    at.text_input(key="publish_bootstrap").set_value(kafka_broker.bootstrap)
    at.number_input(key="publish_partitions").set_value(2)
    at.button(key="publish_start").click().run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    assert wait_until(at, lambda page: any("Published" in message.value for message in page.success), 120.0), "the publish did not finish"
    [success] = at.success
    rows = sum(1 for path in (SAMPLE_FEEDS / "orders_jsonl").glob("*.jsonl") for line in path.read_text().splitlines() if line.strip())
    files = len(list((SAMPLE_FEEDS / "orders_jsonl").glob("*.jsonl")))
    assert f"Published {rows:,} messages in {files} batches to {topic_name} (2 partitions, created)" in success.value
    assert describe_topic(kafka_broker.bootstrap, topic_name).messages == rows
    assert at.session_state["kafka_last_topic"] == topic_name  # every topic picker of the session opens on it
    at.toggle(key="kafka_list_topics").set_value(True).run()
    assert f"**{topic_name}**: {rows:,} records" in [markdown.value for markdown in at.markdown]  # Topics on these brokers
    at.button(key=f"kafka_delete_{topic_name}").click().run()
    assert f"Delete {topic_name} and its records for good?" in [caption.value for caption in at.caption]
    assert topic_name in topic_names(kafka_broker.bootstrap)  # asked twice
    at.button(key=f"kafka_delete_sure_{topic_name}").click().run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    assert topic_name not in topic_names(kafka_broker.bootstrap) and "kafka_last_topic" not in at.session_state


# -- the tuner on a topic: the model of a catch-up replay, confirmed by Spark ------------------------------------------


@pytest.fixture(scope="module")
def clicks_in_three(spark, kafka_broker, clicks_folder) -> str:
    """:func:`clicks_folder` published into three partitions (keyed: uneven ones), for the rate limit's split and per-partition drops."""
    publish(spark, FeedSource(clicks_folder, seconds_per_file=0), kafka_broker.bootstrap, "web-clicks-3", partitions=3)
    return "web-clicks-3"


def test_the_model_of_a_topics_replay_equals_spark_on_every_measure_and_delay(registry, kafka_broker, clicks_in_three) -> None:
    """Spark's Kafka source cuts the offsets (97 records a batch over three partitions) and runs no no-data batch between batches: the model knows both."""
    from streaming.analysis.tune import bound_topic, tune

    query = bound_topic(QueryConfig(clicks(kafka_broker.bootstrap, clicks_in_three, max_offsets_per_trigger=97), window="1 minute", slide="20 seconds"))
    assert dict(query.source.end_offsets) == {partition.partition: partition.latest for partition in describe_topic(kafka_broker.bootstrap, clicks_in_three).partitions}
    delays = ["0 seconds", "1 minute"]
    model = tune(registry, query, delays=delays)
    spark = tune(registry, query, delays=delays, method="spark")
    assert model.method == "model" and model.confirmation is not None and model.confirmation.agree, model.confirmation
    measured = [name for name in model.frame().columns if name not in ("method", "mean_batch_duration_ms", "peak_state_memory_bytes", "mean_state_memory_bytes")]
    assert model.frame()["rows_dropped_by_watermark"].iloc[0] > 0 and model.frame()["windows_emitted"].min() > 0
    pd.testing.assert_frame_equal(model.frame()[measured], spark.frame()[measured])


def test_tune_on_a_topic_from_the_cli_is_confirmed_on_spark_and_names_its_offsets(cli, kafka_broker, clicks_in_three, tmp_path) -> None:
    out = tmp_path / "tune.json"
    done = cli(
        "tune", f"kafka://{kafka_broker.bootstrap}/{clicks_in_three}", "--time-format", TIME_PATTERN, "--window", "1 minute",
        "--delays", "10 seconds,1 minute", "--max-offsets-per-trigger", "500", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "model and Spark agree" in done.stdout
    written = json.loads(out.read_text())
    ends = {str(partition): offset for partition, offset in describe_topic(kafka_broker.bootstrap, clicks_in_three).end_offsets()}
    assert written["feed_dir"] == f"kafka://{kafka_broker.bootstrap}/{clicks_in_three}" and written["end_offsets"] == ends
    assert written["method"] == "model" and written["confirmation"]["agree"] is True


def test_the_tuner_page_sweeps_a_topic_profiles_its_lateness_behind_arrival_and_confirms_on_spark(kafka_broker, clicks_topic) -> None:
    from support.app import app_page, page_errors, page_metric, wait_until

    from dashboard import shared

    at = app_page(shared.TUNER_PAGE)
    at.toggle(key="tune_from_topic").set_value(True).run()
    at.text_input(key="tune_kafka_bootstrap").set_value(kafka_broker.bootstrap).run()
    at.selectbox(key="tune_kafka_topic").set_value(clicks_topic).run()
    at.text_input(key="tune_delays").set_value("10 seconds, 1 minute")
    at.toggle(key="tune_profile").set_value(True).run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    assert page_metric(at, "late events").endswith(f"of {CLICK_ROWS - 3}")
    assert any("Behind their arrival time" in caption.value for caption in at.caption)  # the record timestamp is the arrival time
    at.button(key="tune_run").click().run()
    assert wait_until(at, lambda page: any("Confirmed on Spark" in message.value for message in page.success), 300.0), (page_errors(at), at.warning)


def test_the_compare_page_replays_the_same_offsets_of_a_topic_under_each_config(kafka_broker, clicks_topic) -> None:
    from support.app import app_page, page_errors, wait_until

    from dashboard import shared

    at = app_page(shared.COMPARE_PAGE)
    at.toggle(key="cmp_from_topic").set_value(True).run()
    at.text_input(key="cmp_kafka_bootstrap").set_value(kafka_broker.bootstrap).run()
    at.selectbox(key="cmp_kafka_topic").set_value(clicks_topic).run()
    assert not at.exception and not page_errors(at), (at.exception, page_errors(at))
    at.button(key="cmp_run").click().run()
    assert wait_until(at, lambda page: any("completeness_finalized" in frame.value.columns for frame in page.dataframe) or page_errors(page), 300.0)
    assert not page_errors(at), page_errors(at)
    summary = next(frame.value for frame in at.dataframe if "completeness_finalized" in frame.value.columns)
    assert len(summary) == 2 and summary["exact"].nunique() == 1 and set(summary["batches"]) == {CLICK_ROWS // 100 + 1}  # 100 records a batch, and the final no-data batch
    assert summary["completeness"].iloc[1] > summary["completeness"].iloc[0]  # 5 minutes of watermark keep what 30 seconds drop


def test_a_topic_replayed_over_spark_connect_equals_the_classic_session(connect_server, registry, kafka_broker, clicks_topic, tmp_path) -> None:
    """The Connect server the project starts has the connector too: the same replay, the same answer."""
    from support.cli import connect_cli

    out = tmp_path / "connect.json"
    done = connect_cli(
        connect_server, "replay", f"kafka://{kafka_broker.bootstrap}/{clicks_topic}", "--time-format", TIME_PATTERN, "--window", "1 minute",
        "--watermark", "30 seconds", "--max-offsets-per-trigger", "250", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    remote = json.loads(out.read_text())
    local = run_to_idle(registry, clicks_query(clicks(kafka_broker.bootstrap, clicks_topic, max_offsets_per_trigger=250))).to_json()
    assert local["rows_dropped_by_watermark"] > 0
    for field in ("result", "input_rows", "malformed_rows", "rows_dropped_by_watermark", "final_watermark", "end_offsets"):
        assert remote[field] == local[field], field
    assert len(remote["batches"]) == len(local["batches"])


@pytest.mark.parametrize(("error", "said"), [
    ("org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. Call: listNodes", "stopped answering"),
    ("org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Fetch position out of range", "are gone"),
    ("java.lang.IllegalStateException: Partition clicks-0's offset was changed from 78 to 0, some data may have been lost", "are gone"),
    ("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server does not host this topic-partition", "was deleted"),
    ("java.lang.ArithmeticException: / by zero", None),
])
def test_a_query_failed_by_its_topic_is_explained_in_words(error: str, said: str | None) -> None:
    hint = clicks("127.0.0.1:9092", "clicks").explain_failure(error)
    assert (hint is None) if said is None else (hint is not None and said in hint)
    assert FeedSource(WEB_CLICKS, seconds_per_file=0).explain_failure(error) is None


def test_a_csv_sample_is_written_with_a_header_and_the_record_columns_and_decoded_by_field(tmp_path) -> None:
    from streaming.engine.kafka.topics import decode_messages, write_sample

    messages = pd.DataFrame({
        "partition": [0, 0], "offset": [0, 1], "timestamp": [pd.Timestamp("2026-01-01 10:00:00.5"), pd.Timestamp("2026-01-01 10:00:01")],
        "key": ["a", None], "value": ["2026-01-01 09:59:00,home", "not,a,row,x"],
    })
    path = write_sample(messages, "csv", tmp_path / "sample.csv")
    assert path.read_text().splitlines() == [
        "_c0,_c1,_c2,_c3,kafka_timestamp,kafka_key", "2026-01-01 09:59:00,home,,,2026-01-01 10:00:00.500,a", "not,a,row,x,2026-01-01 10:00:01.000,",
    ]
    decoded = decode_messages(messages, "csv", ["when", "page"])
    assert list(decoded.columns) == ["kafka_partition", "kafka_offset", "kafka_timestamp", "kafka_key", "when", "page", "malformed"]
    assert decoded["page"].tolist() == ["home", "a"] and not decoded["malformed"].any()



def test_a_topic_is_refused_for_stepping_when_nothing_would_be_stepped_naming_the_field() -> None:
    from dataclasses import replace

    from streaming.engine.run.walkthrough import Walkthrough
    from streaming.engine.sources.stepped_topic import SteppedTopic

    source = clicks("127.0.0.1:9092", "clicks")
    refused = (
        (replace(source, starting_offsets="latest"), "source.starting_offsets"), (replace(source, topic="clicks-.*", pattern=True), "source.topic"),
        (replace(source, max_offsets_per_trigger=None), "source.max_offsets_per_trigger"),
    )
    for given, field in refused:
        with pytest.raises(ConfigError) as caught:
            SteppedTopic(given, "staging")
        assert caught.value.field == field
    with pytest.raises(ConfigError, match="default trigger") as caught:
        Walkthrough(None, clicks_query(source))  # type: ignore[arg-type]  # refused before a registry is asked
    assert caught.value.field == "trigger"
    from streaming.export import pyspark_code

    stepped = replace(clicks_query(source, trigger="default"), source=SteppedTopic(source, "staging"))
    code = pyspark_code(stepped)  # Show code of a walkthrough's query
    assert "'subscribe': 'clicks'" in code and "staging" not in code
    from streaming.engine.query.config import describe

    shown = describe(stepped)  # the Queries page: the topic's fields, not the text of a nested source
    assert (shown["source.kind"], shown["source.topic"], shown["source.staging_topic"]) == ("stepped_topic", "clicks", "staging")
    assert not any("KafkaSource(" in str(value) for value in shown.values())


def test_a_topic_is_stepped_one_transaction_a_planned_batch_keeping_each_records_partition_key_value_and_timestamp(
    spark, registry, kafka_broker, clicks_in_three,
) -> None:
    """Three uneven partitions at 210 records a batch: the first step is copied at start (Spark runs a topic's first batch then),
    each press copies the next as an available-now replay would cut it, and Spark runs each alone, all partitions at once.
    The copy keeps each record as it was; closing deletes the staging topic, and starting deletes those a dead server left a day
    ago; a range with nothing in it is refused."""
    from dataclasses import replace

    from streaming.engine.kafka.kafka_terms import planned_batches
    from streaming.engine.kafka.topics import STALE_SECONDS, delete_topic, read_records, staging_name
    from streaming.engine.run.walkthrough import Walkthrough
    from streaming.engine.sources.stepped_topic import TopicStepper

    source = clicks(kafka_broker.bootstrap, clicks_in_three, max_offsets_per_trigger=210)
    info = describe_topic(kafka_broker.bootstrap, clicks_in_three)
    planned = planned_batches({part.partition: 0 for part in info.partitions}, dict(info.end_offsets()), 210)
    now = int(time.time())
    kept_by_a_dead_server, in_use = staging_name(now - STALE_SECONDS - 60, "left-behind"), staging_name(now - 60, "in-use")
    for name in (kept_by_a_dead_server, in_use):
        create_topic(kafka_broker.bootstrap, name)
    walk = Walkthrough(registry, clicks_query(source, trigger="default"), idle_limit=None)
    staging = walk.run.config.source.staging_topic
    try:
        for name in (in_use, staging):
            require_topic(kafka_broker.bootstrap, name)  # both exist
        with pytest.raises(ConfigError, match="does not exist"):
            require_topic(kafka_broker.bootstrap, kept_by_a_dead_server)  # swept when the walkthrough made its own
        assert walk.steps == len(planned) == 3 and walk.handed == 1 and walk.plan == planned
        assert staging not in topic_names(kafka_broker.bootstrap)  # not offered as a topic to read
        walk.to_end()
        read = [summary["num_input_rows"] for summary in walk.summaries() if summary["num_input_rows"]]
        assert read == [sum(end[part] - start[part] for part in end) for start, end in planned] and sum(read) == CLICK_ROWS  # Spark's rate limit rounds each partition's share down
        whole = {part.partition: (0, part.latest) for part in describe_topic(kafka_broker.bootstrap, staging).partitions}
        copied = read_records(kafka_broker.bootstrap, staging, whole, whole=True)  # ends past the last step's commit markers
        original = read_records(kafka_broker.bootstrap, clicks_in_three, {part.partition: (0, part.latest) for part in info.partitions}, whole=True)
        assert [(r.partition, r.timestamp_ms, r.key, r.value) for r in copied] == [(r.partition, r.timestamp_ms, r.key, r.value) for r in original]
    finally:
        walk.close()
        delete_topic(kafka_broker.bootstrap, in_use)
    with pytest.raises(ConfigError, match="does not exist"):
        require_topic(kafka_broker.bootstrap, staging)  # deleted with the query
    with pytest.raises(ConfigError, match="nothing to step through") as caught:
        TopicStepper(replace(source, starting_timestamp=4_102_444_800_000), f"{clicks_in_three}-empty")  # 2100: after every record
    assert caught.value.field == "source.topic"


def test_stepping_through_a_topic_on_the_page_tells_what_stepping_through_its_files_tells(spark, registry, kafka_broker, tmp_path, topic_name) -> None:
    """Four files of web_clicks (50 rows each, late ones among them) published into a topic of one partition and stepped through on the
    Step through page at 50 records a batch: batch for batch, the same rows read, watermarks, output and rows dropped by the same rule
    as a walkthrough of the files. Leaving the page deletes the walkthrough's staging topic."""
    from streamlit.testing.v1 import AppTest

    from dashboard import shared
    from streaming.analysis.explain import explain, replay_events
    from streaming.engine.run.walkthrough import Walkthrough

    folder = tmp_path / "clicks"
    folder.mkdir()
    for path in sorted(WEB_CLICKS.glob("*.csv"))[:4]:
        shutil.copy(path, folder / path.name)
    publish(spark, FeedSource(folder, seconds_per_file=0), kafka_broker.bootstrap, topic_name)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=180)
    at.query_params.update({"scenario": "own"})
    at.run()
    shared.session_starter().wait(180)
    at.switch_page(shared.STEP_PAGE).run()
    files = Walkthrough(registry, QueryConfig(FeedSource(folder, seconds_per_file=0), window="1 minute", watermark="30 seconds"), idle_limit=None)
    try:
        at.toggle(key="scn_from_topic").set_value(True).run()
        at.text_input(key="scn_kafka_bootstrap").set_value(kafka_broker.bootstrap).run()
        at.selectbox(key="scn_kafka_topic").set_value(topic_name).run()
        at.number_input(key="scn_kafka_max_offsets").set_value(0).run()  # everything in one step: refused before Spark, naming the field
        assert any("source.max_offsets_per_trigger" in error.value for error in at.error), [error.value for error in at.error]
        at.number_input(key="scn_kafka_max_offsets").set_value(50).run()
        at.button(key="scn_next").click().run()  # the page tells each press's batches: the records read batch by batch, each batch's once
        assert any("Batch 0 read 50 rows" in markdown.value for markdown in at.markdown)
        at.button(key="scn_end").click().run()
        assert not at.exception and not at.error, (at.exception, [error.value for error in at.error])
        walks = at.session_state["scn_walks"]["walks"]
        [topic] = walks.walks
        assert topic.unit == "batches of records" and topic.finished and topic.steps == 4
        assert any("4 of 4 batches of records handed to Spark" in caption.value for caption in at.caption)
        staging = topic.run.config.source.staging_topic
        on_topic = walks.steps(0)
        files.to_end()
        on_files = explain(files.config, files.summaries(), files.outputs(), replay_events(spark, files.config))
        at.switch_page(shared.QUERIES_PAGE).run()
        assert not topic.active and staging not in topic_names(kafka_broker.bootstrap)
    finally:
        files.close()
        held = (at.session_state["scn_walks"] if "scn_walks" in at.session_state else {}).get("walks")
        if held is not None:
            held.close()
    told = ["batch_id", "input_rows", "watermark_before", "watermark_after", "state_rows", "spark_dropped", "caption"]
    assert [[getattr(step, name) for name in told] for step in on_topic] == [[getattr(step, name) for name in told] for step in on_files]
    assert sum(len(step.dropped) for step in on_files) > 0  # late rows: the comparison means something
    for stepped, replayed in zip(on_topic, on_files, strict=True):
        pd.testing.assert_frame_equal(stepped.output, replayed.output)
        pd.testing.assert_frame_equal(stepped.dropped[["event_time", "key", "rule"]], replayed.dropped[["event_time", "key", "rule"]])


def test_a_sql_query_over_a_topic_equals_the_same_sql_over_the_files_it_was_published_from(cli, kafka_broker, clicks_topic, clicks_folder, tmp_path) -> None:
    """Both read 50 rows a micro-batch under the busy arrival rule (a topic's range always is): the same batches, so the same result, drops and watermark.

    An empty key is "" in a JSON value and null in a CSV file (each as its format reads it): the query leaves both out."""
    sql = (
        "SELECT window(event_time, '1 minute') AS w, key, count(*) AS n FROM STREAM(events) "
        "WATERMARK event_time DELAY OF INTERVAL 30 SECONDS WHERE coalesce(key, '') <> '' GROUP BY 1, 2"
    )
    on_topic, on_files = tmp_path / "topic.json", tmp_path / "files.json"
    topic = cli(
        "replay", f"kafka://{kafka_broker.bootstrap}/{clicks_topic}", "--sql", sql, "--time-format", TIME_PATTERN, "--max-offsets-per-trigger", "50",
        "--json", str(on_topic),
    )
    assert topic.returncode == 0, topic.stderr
    files = cli("replay", str(clicks_folder), "--sql", sql, "--time-format", TIME_PATTERN, "--arrival", "busy", "--json", str(on_files))
    assert files.returncode == 0, files.stderr
    from_topic, from_files = json.loads(on_topic.read_text()), json.loads(on_files.read_text())
    assert from_files["rows_dropped_by_watermark"] > 0 and from_files["malformed_rows"] > 0
    for name in ("result", "rows_dropped_by_watermark", "final_watermark", "malformed_rows", "operators"):
        assert from_topic[name] == from_files[name], name
