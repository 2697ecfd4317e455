"""Validation of the query configuration and the pure session settings (no Spark)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.query.config import (
    ConfigError,
    FeedSource,
    GeneratorSource,
    QueryConfig,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
    describe,
)
from streaming.engine.runtime.session import session_settings

GUIDE = SAMPLE_FEEDS / "guide_words"


def feed() -> FeedSource:
    return FeedSource(GUIDE, seconds_per_file=0)


def refused(field: str, value: object, **kwargs: object) -> ConfigError:
    """Build a QueryConfig from ``kwargs`` and return the ConfigError, checking it names ``field`` and ``value``."""
    kwargs.setdefault("source", feed())
    with pytest.raises(ConfigError) as caught:
        QueryConfig(**kwargs)  # type: ignore[arg-type]
    err = caught.value
    assert err.field == field
    assert err.value == value
    message = str(err)
    assert message.startswith(f"{field}: ")
    assert repr(value) in message
    return err


def test_defaults_are_valid() -> None:
    config = QueryConfig(feed())
    assert (config.window_ms, config.slide_ms, config.watermark_ms) == (60_000, 60_000, 30_000)
    assert config.output_mode == "update" and config.trigger == "default" and config.aggregation == "count"


def test_sliding_window_and_watermark_in_ms() -> None:
    config = QueryConfig(feed(), window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="append")
    assert (config.window_ms, config.slide_ms, config.watermark_ms) == (600_000, 300_000, 600_000)


def test_no_watermark() -> None:
    assert QueryConfig(feed(), watermark=None).watermark_ms is None


def test_slide_equal_to_window_is_allowed() -> None:
    assert QueryConfig(feed(), window="5m", slide="5 minutes").slide_ms == 300_000


@pytest.mark.parametrize(
    ("field", "value"),
    [("window", "ten minutes"), ("window", "5 parsecs"), ("slide", "soon"), ("watermark", "a while"), ("window", "")],
)
def test_unparsable_durations(field: str, value: str) -> None:
    err = refused(field, value, **{field: value})
    assert "is not a duration" in str(err)


@pytest.mark.parametrize(("field", "value"), [("window", "0"), ("slide", "0 seconds")])
def test_zero_length_window_or_slide(field: str, value: str) -> None:
    err = refused(field, value, **{field: value})
    assert "longer than 0" in str(err)


def test_slide_longer_than_window() -> None:
    err = refused("slide", "10 minutes", window="5 minutes", slide="10 minutes")
    assert "'5 minutes'" in str(err)


def test_a_slide_putting_a_row_in_more_windows_than_the_server_plans_is_refused_naming_its_variable(monkeypatch) -> None:
    err = refused("slide", "1 second", window="10 days", slide="1 second")
    assert "864,000 windows" in str(err) and "1,000 a row, STREAMING_LAB_MAX_WINDOWS_PER_ROW" in str(err)
    assert QueryConfig(feed(), window="1000 seconds", slide="1 second").slide_ms == 1000  # the bound itself is planned
    monkeypatch.setenv("STREAMING_LAB_MAX_WINDOWS_PER_ROW", "1000000")
    assert QueryConfig(feed(), window="10 days", slide="1 second").slide_ms == 1000  # a server that trusts its users raises it


def test_negative_watermark() -> None:
    err = refused("watermark", "-1 minute", watermark="-1 minute")
    assert "negative" in str(err)


def test_zero_watermark_is_allowed() -> None:
    assert QueryConfig(feed(), watermark="0").watermark_ms == 0


def test_append_on_aggregation_needs_watermark() -> None:
    err = refused("output_mode", "append", output_mode="append", watermark=None)
    assert "watermark" in str(err)


def test_append_without_aggregation_needs_no_watermark() -> None:
    assert QueryConfig(feed(), output_mode="append", watermark=None, aggregation="none").aggregation == "none"


def test_complete_needs_aggregation() -> None:
    err = refused("output_mode", "complete", output_mode="complete", aggregation="none")
    assert "aggregation" in str(err)


@pytest.mark.parametrize(("field", "value"), [("output_mode", "upsert"), ("trigger", "continuous"), ("aggregation", "sum")])
def test_unknown_choices(field: str, value: str) -> None:
    refused(field, value, **{field: value})


def test_processing_time_without_interval() -> None:
    err = refused("trigger_interval", None, trigger="processing_time")
    assert "required" in str(err)


def test_processing_time_with_interval() -> None:
    config = QueryConfig(feed(), trigger="processing_time", trigger_interval="2 seconds")
    assert describe(config)["trigger"] == "processing_time 2 seconds"


@pytest.mark.parametrize("value", ["0", "-2 seconds", "often"])
def test_processing_time_with_bad_interval(value: str) -> None:
    refused("trigger_interval", value, trigger="processing_time", trigger_interval=value)


@pytest.mark.parametrize("trigger", ["default", "available_now"])
def test_interval_with_other_trigger(trigger: str) -> None:
    err = refused("trigger_interval", "5 seconds", trigger=trigger, trigger_interval="5 seconds")
    assert repr(trigger) in str(err)


@pytest.mark.parametrize(
    "source", [lambda: SocketSource(GUIDE), lambda: RateSource(), lambda: GeneratorSource()], ids=["socket", "rate", "generator"]
)
def test_available_now_on_endless_sources(source) -> None:
    made = source()
    err = refused("trigger", "available_now", source=made, trigger="available_now")
    assert made.kind in str(err)


@pytest.mark.parametrize("source", [feed, RateMicroBatchSource], ids=["feed", "rate-micro-batch"])
def test_available_now_on_other_sources(source) -> None:
    assert QueryConfig(source(), trigger="available_now").trigger == "available_now"


def test_source_must_be_a_source_config() -> None:
    with pytest.raises(ConfigError) as caught:
        QueryConfig(source=str(GUIDE))  # type: ignore[arg-type]
    assert caught.value.field == "source"
    assert str(GUIDE) in str(caught.value)


def test_with_changes_validates_again() -> None:
    config = QueryConfig(feed(), window="10 minutes", slide="5 minutes")
    assert config.with_changes(slide="10 minutes").slide_ms == 600_000
    with pytest.raises(ConfigError, match=r"^slide: '20 minutes'"):
        config.with_changes(slide="20 minutes")


# -- sources ---------------------------------------------------------------------------


def source_refused(make, field: str, value: object) -> ConfigError:
    with pytest.raises(ConfigError) as caught:
        make()
    err = caught.value
    assert err.field == field
    assert err.value == value
    assert str(err).startswith(f"{field}: {value!r} ")
    return err


@pytest.mark.parametrize(
    ("make", "field", "value"),
    [
        (lambda: GeneratorSource(keys=0), "source.keys", 0),
        (lambda: GeneratorSource(keys=True), "source.keys", True),
        (lambda: GeneratorSource(late_share=1.5), "source.late_share", 1.5),
        (lambda: GeneratorSource(late_share=-0.1), "source.late_share", -0.1),
        (lambda: GeneratorSource(events_per_second=0), "source.events_per_second", 0),
        (lambda: GeneratorSource(max_lag="-5 seconds"), "source.max_lag", "-5 seconds"),
        (lambda: GeneratorSource(late_delay="later"), "source.late_delay", "later"),
        (lambda: GeneratorSource(seed=-1), "source.seed", -1),
        (lambda: GeneratorSource(seed=1.5), "source.seed", 1.5),
        (lambda: RateSource(rows_per_second=0), "source.rows_per_second", 0),
        (lambda: RateSource(keys=0), "source.keys", 0),
        (lambda: RateMicroBatchSource(rows_per_batch=0), "source.rows_per_batch", 0),
        (lambda: RateMicroBatchSource(advance="0"), "source.advance", "0"),
        (lambda: RateMicroBatchSource(advance="-1 s"), "source.advance", "-1 s"),
        (lambda: SocketSource(GUIDE, lines_per_second=0), "source.lines_per_second", 0),
        (lambda: FeedSource(GUIDE, seconds_per_file=-1), "source.seconds_per_file", -1),
    ],
)
def test_bad_source_params(make, field: str, value: object) -> None:
    source_refused(make, field, value)


def test_missing_feed_folder(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-feed"
    err = source_refused(lambda: FeedSource(missing), "source.path", str(missing))
    assert "not a folder" in str(err)


def test_feed_folder_without_csv(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("nothing to replay\n")
    err = source_refused(lambda: FeedSource(tmp_path), "source.path", str(tmp_path))
    assert ".csv" in str(err)


def test_socket_needs_feed_folder(tmp_path: Path) -> None:
    source_refused(lambda: SocketSource(tmp_path / "absent"), "source.path", str(tmp_path / "absent"))


def test_feed_source_keeps_path_as_path() -> None:
    assert FeedSource(str(GUIDE)).path == GUIDE


def test_generator_durations_in_ms() -> None:
    source = GeneratorSource(max_lag="1.5 s", late_delay="2 minutes")
    assert (source.max_lag_ms, source.late_delay_ms) == (1_500, 120_000)


def test_describe_is_flat_and_canonical() -> None:
    config = QueryConfig(feed(), window="10m", slide="300s", watermark="600 s", output_mode="append")
    described = describe(config)
    assert described["window"] == "10 minutes sliding every 5 minutes"
    assert described["watermark"] == "10 minutes"
    assert described["source.path"] == str(GUIDE)
    assert described["source.kind"] == "feed"
    assert describe(QueryConfig(feed(), watermark=None))["watermark"] == "none"
    assert describe(QueryConfig(feed(), window="1 minute"))["window"] == "1 minute tumbling"
    passed = describe(QueryConfig(feed(), aggregation="none", output_mode="append", watermark="1 minute"))
    assert (passed["window"], passed["watermark"]) == ("none (rows passed through)", "1 minute, unused: nothing is held in state")


# -- session settings (pure) -------------------------------------------------------------


def test_session_settings_local_defaults() -> None:
    settings = session_settings({}, cores=2)
    assert settings["spark.master"] == "local[*]"
    assert settings["spark.sql.shuffle.partitions"] == "2"
    assert settings["spark.sql.session.timeZone"] == "UTC"
    assert settings["spark.driver.host"] == "127.0.0.1"
    assert settings["spark.driver.bindAddress"] == "127.0.0.1"
    assert settings["spark.driver.memory"] == "2g"


def test_session_settings_at_least_one_partition() -> None:
    assert session_settings({}, cores=0)["spark.sql.shuffle.partitions"] == "1"


def test_session_settings_spark_master() -> None:
    settings = session_settings({"SPARK_MASTER": "spark://127.0.0.1:7077", "SPARK_LOCAL_IP": "127.0.0.2"}, cores=4)
    assert settings["spark.master"] == "spark://127.0.0.1:7077"
    assert settings["spark.driver.host"] == "127.0.0.2"
    assert settings["spark.sql.shuffle.partitions"] == "4"


def test_session_settings_spark_remote() -> None:
    settings = session_settings({"SPARK_REMOTE": "sc://127.0.0.1:15002", "SPARK_MASTER": "spark://127.0.0.1:7077"}, cores=2)
    assert "spark.master" not in settings
    assert "spark.driver.host" not in settings
    assert "spark.driver.bindAddress" not in settings
    assert settings["spark.sql.session.timeZone"] == "UTC"


def test_session_settings_do_not_read_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_MASTER", "spark://127.0.0.1:7077")
    assert session_settings({}, cores=1)["spark.master"] == "local[*]"


@pytest.mark.parametrize(("interval", "spark_form"), [("500 ms", "500 milliseconds"), ("2s", "2 seconds"), ("1m", "1 minute")])
def test_processing_time_interval_reaches_spark_in_canonical_form(interval: str, spark_form: str) -> None:
    from streaming.engine.run.query import _trigger

    config = QueryConfig(feed(), trigger="processing_time", trigger_interval=interval)
    assert _trigger(config) == {"processingTime": spark_form}
    assert _trigger(QueryConfig(feed(), trigger="available_now")) == {"availableNow": True}
    assert _trigger(QueryConfig(feed())) == {}
