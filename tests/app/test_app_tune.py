"""The tuning use case the Tuner page and the CLI share: typed delays and targets, the sweep's checks, a SQL sweep's points (no Spark)."""

from __future__ import annotations

import pytest

from streaming.app.tune import parse_delays, parse_target, sql_points, sweep_plan
from streaming.engine.data.columns import ColumnMapping
from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.errors import ConfigError, InputErrors
from streaming.engine.query.config import FeedSource
from streaming.engine.sources.kafka import KafkaSource
from streaming.engine.sql.rewrite import WatermarkClause


def test_parse_delays_is_canonical_sorted_and_named() -> None:
    assert parse_delays("10 minutes, 0s,, 30 seconds, 10m") == ["0 seconds", "30 seconds", "10 minutes"]
    with pytest.raises(ConfigError) as err:
        parse_delays("1 minute, abc")
    assert err.value.field == "delays" and "'abc'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        parse_delays(" , ")
    assert err.value.field == "delays" and str(err.value).startswith("delays: ' , ' must name")
    fifty = ", ".join(f"{n} seconds" for n in range(50))
    assert len(parse_delays(fifty, limit=50)) == 50
    with pytest.raises(ConfigError, match="at most 50"):
        parse_delays(fifty + ", 50 seconds", limit=50)
    assert len(parse_delays(fifty + ", 50 seconds")) == 51  # no limit: the CLI's


def test_a_target_is_typed_or_given_and_named_when_it_is_not_a_share() -> None:
    assert parse_target("0.85") == parse_target(0.85) == 0.85
    assert parse_target(1) == 1.0
    for bad, shown in (("ninety", "target: 'ninety'"), ("1.5", "target: 1.5"), (0, "target: 0"), (True, "target: True")):
        with pytest.raises(ConfigError) as err:
            parse_target(bad)
        assert err.value.field == "target" and str(err.value).startswith(shown)


def test_a_sweep_plan_names_every_bad_field_at_once_after_the_front_ends_own() -> None:
    source = FeedSource(SAMPLE_FEEDS / "guide_words", seconds_per_file=0)
    with pytest.raises(InputErrors) as err:
        sweep_plan(None, delays="abc", target="2", errors=[ConfigError("data", "../x", "is not a sample feed")])
    assert [error.field for error in err.value.errors] == ["data", "delays", "target"]
    with pytest.raises(InputErrors) as err:
        sweep_plan(None, delays="1m", target=0.9)
    assert [str(error) for error in err.value.errors] == ["source: None is not chosen"]
    with pytest.raises(InputErrors) as err:
        sweep_plan(source, delays="soon", target="x", window="ten")
    assert [error.field for error in err.value.errors] == ["delays", "target", "window"]
    plan = sweep_plan(source, delays="10m, 0", target="0.85", window="10 minutes", slide="5 minutes")
    assert (plan.delays, plan.target, plan.query.output_mode) == (["0 seconds", "10 minutes"], 0.85, "update")
    nine = ", ".join(f"{n} seconds" for n in range(9))
    assert len(sweep_plan(source, delays=nine, target=0.9, max_spark_delays=8).delays) == 9  # the model covers it: no Spark cap
    with pytest.raises(InputErrors) as err:  # session windows: a query on Spark per delay
        sweep_plan(source, delays=nine, target=0.9, session_gap="20 seconds", max_spark_delays=8)
    [error] = err.value.errors
    assert error.field == "delays" and "at most 8 here" in str(error)
    topic = KafkaSource("127.0.0.1:9092", "clicks", (("event_time", "string"), ("key", "string")), columns=ColumnMapping(event_time="event_time", key="key"))
    assert len(sweep_plan(topic, delays=nine, target=0.9, max_spark_delays=8).delays) == 9  # the model covers a topic once the sweep bounds it


def test_a_sql_sweeps_points_are_one_clauses_delays_or_the_grid_of_every_clause() -> None:
    one = [WatermarkClause(0, 0, "ts", 30_000)]
    two = [*one, WatermarkClause(0, 0, "clicked", 60_000)]
    assert sql_points(one, "1 minute, 0s, 1m", None, max_points=16) == [(0,), (60_000,)]
    assert sql_points(two, "0s, 1 minute", 2, max_points=16) == [(30_000, 0), (30_000, 60_000)]
    assert sql_points(two, "0s, 1 minute", None, max_points=16) == [(0, 0), (0, 60_000), (60_000, 0), (60_000, 60_000)]
    five = "0s, 10s, 20s, 30s, 40s"
    with pytest.raises(ConfigError) as err:
        sql_points(two, five, None, max_points=16)
    assert err.value.field == "delays" and "make 25 points" in str(err.value) and "sweep one clause" in str(err.value)
    assert len(sql_points(two, five, 1, max_points=16)) == 5
    many = ", ".join(f"{n} seconds" for n in range(100))
    with pytest.raises(ConfigError, match=r"make 100000000 points.*name one with --which"):  # counted, not built
        sql_points(two * 2, many, None, max_points=64, one_clause="name one with --which")
    for bad in ("soon", " , "):
        with pytest.raises(ConfigError) as err:
            sql_points(one, bad, None, max_points=16)
        assert err.value.field == "delays"
    with pytest.raises(ConfigError, match="WATERMARK"):
        sql_points([], "1 minute", None, max_points=16)
