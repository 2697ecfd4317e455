"""A user's own query in Spark SQL: held to plain PySpark's ``spark.sql`` over the same micro-batches, refused when it reaches outside its views."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pandas as pd
import pytest

from streaming.engine.data.batching import Batching
from streaming.engine.errors import ConfigError
from streaming.engine.sources import FeedSource
from streaming.engine.sql import SqlError, SqlQuery, SqlTable, SqlView, replay_sql
from streaming.engine.sql.guard import _plain as plain_message
from streaming.engine.sql.guard import position
from streaming.engine.sql.plan import Window, plan_facts, windows_of
from streaming.engine.sql.table import json_value
from streaming.engine.sql.views import TableFiles

ORDERS = [
    # ts, store, channel, amount
    [("2024-01-01 00:00:05", "a", "web", 3), ("2024-01-01 00:00:40", "b", "shop", 5), ("2024-01-01 00:01:10", "a", "web", 2)],
    [("2024-01-01 00:03:05", "a", "shop", 7), ("2024-01-01 00:00:20", "b", "web", 1), ("not a time", "b", "web", 1), ("2024-01-01 00:02:59", "b", "web", 9)],
    [("2024-01-01 00:05:05", "b", "shop", 4), ("2024-01-01 00:01:20", "a", "web", 100), ("2024-01-01 00:04:50", "a", "web", 6)],
    [("2024-01-01 00:09:00", "a", "shop", 8), ("2024-01-01 00:04:10", "b", "shop", 2), ("2024-01-01 00:08:40", "b", "web", 3)],
    [("2024-01-01 00:09:30", "b", "web", 6), ("2024-01-01 00:00:30", "a", "web", 5)],
    [("2024-01-01 00:02:00", "b", "shop", 3), ("2024-01-01 00:09:40", "a", "shop", 2)],
]
STORES = [("a", "north"), ("b", "south")]
IMPRESSIONS = [
    [("i1", "2024-01-01 00:00:00"), ("i2", "2024-01-01 00:00:30")],
    [("i3", "2024-01-01 00:02:00"), ("i4", "2024-01-01 00:01:00")],
    [("i5", "2024-01-01 00:05:00")],
    [("i6", "2024-01-01 00:03:30"), ("i7", "2024-01-01 00:06:00")],
    [("i8", "2024-01-01 00:07:00")],
    [("i9", "2024-01-01 00:00:10"), ("i10", "2024-01-01 00:07:20")],
]
CLICKS = [
    [("i1", "2024-01-01 00:00:20")],
    [("i2", "2024-01-01 00:01:10"), ("i3", "2024-01-01 00:02:30")],
    [("i4", "2024-01-01 00:01:30"), ("i5", "2024-01-01 00:05:40")],
    [("i6", "2024-01-01 00:03:50"), ("i7", "2024-01-01 00:06:10")],
    [("i8", "2024-01-01 00:07:10")],
    [("i9", "2024-01-01 00:00:20"), ("i10", "2024-01-01 00:07:30")],
]


def _write(folder: Path, header: str, batches) -> Path:
    folder.mkdir(parents=True)
    for index, rows in enumerate(batches):
        lines = [header] + [",".join(str(value) for value in row) for row in rows]
        (folder / f"batch-{index:04d}.csv").write_text("\n".join(lines) + "\n")
    return folder


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sql-data")
    return {
        "orders": _write(root / "orders", "ts,store,channel,amount", ORDERS),
        "stores": _write(root / "stores", "store,region", [STORES]),
        "impressions": _write(root / "impressions", "ad,shown_at", IMPRESSIONS),
        "clicks": _write(root / "clicks", "ad,clicked_at", CLICKS),
    }


def _files(path: Path, event_time: str) -> FeedSource:
    from streaming.engine.data.columns import ColumnMapping

    return FeedSource(path, seconds_per_file=0, columns=ColumnMapping(event_time=event_time, key=None), batching=Batching())


# --------------------------------------------------------------------------- plain PySpark, batch i = file i


def _plain(spark, tmp_path: Path, data, sql: str, streams: dict[str, tuple[str, str, str]], statics: dict[str, tuple[str, str]], mode: str):
    """``sql`` run by plain PySpark in a session of its own: each stream a file source (``maxFilesPerTrigger`` 1) over a copy of its files,
    under the available-now trigger, so micro-batch i reads file i of each; the memory sink's rows and the rows the stateful operators dropped."""
    import os
    import time

    session = spark.newSession()
    for name, (folder, schema, _) in streams.items():
        copy = tmp_path / f"plain-{name}"
        copy.mkdir()
        for index, path in enumerate(sorted(data[folder].iterdir())):  # the file source orders files by modification time
            (copy / path.name).write_bytes(path.read_bytes())
            os.utime(copy / path.name, (time.time() - 100 + index, time.time() - 100 + index))
        session.readStream.schema(schema).option("header", True).option("maxFilesPerTrigger", 1).csv(str(copy)).createOrReplaceTempView(name)
    for name, (folder, schema) in statics.items():
        session.read.schema(schema).option("header", True).csv(str(data[folder])).createOrReplaceTempView(name)
    sink = f"plain_{uuid.uuid4().hex[:10]}"
    writer = session.sql(sql).writeStream.format("memory").queryName(sink).outputMode(mode).trigger(availableNow=True)
    query = writer.option("checkpointLocation", str(tmp_path / f"{sink}-cp")).start()
    try:
        assert query.awaitTermination(300), "the plain query did not reach the end of its files"
        dropped = sum(int(op.numRowsDroppedByWatermark) for progress in query.recentProgress for op in progress.stateOperators)
    finally:
        query.stop()
    try:
        frame = session.table(sink)
        return [{name: json_value(value, field.dataType) for name, value, field in zip(frame.columns, row, frame.schema.fields)} for row in frame.collect()], dropped
    finally:
        session.catalog.dropTempView(sink)


def _final(rows: list[dict], keys: tuple[str, ...], mode: str) -> list[dict]:
    """The result table the sink's rows make: in update mode the last row of each key, else all rows; sorted."""
    if mode == "update" and keys:
        last = {json.dumps([row[key] for key in keys], sort_keys=True): row for row in rows}
        rows = list(last.values())
    return sorted(rows, key=lambda row: json.dumps(row, sort_keys=True))


ORDERS_SCHEMA = "ts TIMESTAMP, store STRING, channel STRING, amount INT"
SHAPES = {
    "filter and derived column": (
        "SELECT window(ts, '1 minute') AS w, store, sum(amount * 2) AS doubled FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 30 SECONDS "
        "WHERE amount > 1 GROUP BY 1, 2", "update", ("w", "store"),
    ),
    "two grouping columns": (
        "SELECT window(ts, '2 minutes') AS w, store, channel, count(*) AS n FROM events WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY 1, 2, 3",
        "update", ("w", "store", "channel"),
    ),
    "three aggregates": (
        "SELECT window(ts, '1 minute') AS w, count(*) AS n, sum(amount) AS total, max(amount) AS most "
        "FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 30 SECONDS GROUP BY 1", "update", ("w",),
    ),
    "sliding window": (
        "SELECT window(ts, '2 minutes', '1 minute') AS w, store, count(*) AS n FROM events WATERMARK ts DELAY OF INTERVAL 20 SECONDS GROUP BY 1, 2",
        "append", (),
    ),
    "session window": (
        "SELECT session_window(ts, '40 seconds') AS s, store, count(*) AS n FROM events WATERMARK ts DELAY OF INTERVAL 10 SECONDS GROUP BY 1, 2",
        "append", (),
    ),
    "having": (
        "SELECT window(ts, '2 minutes') AS w, store, count(*) AS n FROM events WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY 1, 2 HAVING count(*) > 1",
        "update", ("w", "store"),
    ),
    "stream-static join": (
        "SELECT window(e.ts, '2 minutes') AS w, s.region, sum(e.amount) AS total FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 1 MINUTE AS e "
        "JOIN stores s ON e.store = s.store GROUP BY 1, 2", "update", ("w", "region"),
    ),
    "stream-stream join": (
        "SELECT i.ad, i.shown_at, c.clicked_at FROM impressions WATERMARK shown_at DELAY OF INTERVAL 30 SECONDS AS i "
        "JOIN clicks WATERMARK clicked_at DELAY OF INTERVAL 30 SECONDS AS c "
        "ON i.ad = c.ad AND c.clicked_at BETWEEN i.shown_at AND i.shown_at + INTERVAL 1 MINUTE", "append", (),
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_a_sql_query_gives_what_plain_spark_sql_gives_over_the_same_micro_batches(shape, spark, registry, data, tmp_path) -> None:
    sql, mode, keys = SHAPES[shape]
    if shape == "stream-stream join":
        views = (SqlView("impressions", _files(data["impressions"], "shown_at")), SqlView("clicks", _files(data["clicks"], "clicked_at")))
        streams = {"impressions": ("impressions", "ad STRING, shown_at TIMESTAMP", "shown_at"), "clicks": ("clicks", "ad STRING, clicked_at TIMESTAMP", "clicked_at")}
    else:
        views = (SqlView("events", _files(data["orders"], "ts")),)
        streams = {"events": ("orders", ORDERS_SCHEMA, "ts")}
    statics = {}
    if shape == "stream-static join":
        views += (SqlView("stores", TableFiles(data["stores"]), static=True),)
        statics = {"stores": ("stores", "store STRING, region STRING")}
    outcome = replay_sql(registry, SqlQuery(sql, views, output_mode=mode, arrival="busy"))  # the busy rule: plain Spark under available-now
    expected, dropped = _plain(spark, tmp_path, data, sql, streams, statics, mode)

    assert outcome.records, f"{shape}: the query produced no rows, so the comparison would hold for any engine"
    assert sorted(outcome.records, key=lambda row: json.dumps(row, sort_keys=True)) == _final(expected, keys, mode)
    assert outcome.rows_dropped_by_watermark == dropped
    assert sum(operator["rows_dropped_by_watermark"] for operator in outcome.operators) == dropped
    if shape != "stream-stream join":
        assert outcome.malformed_rows == 1  # "not a time": counted and left out, the query ran on
    if shape in ("filter and derived column", "three aggregates", "stream-stream join"):
        assert dropped > 0, f"{shape}: the data is meant to have rows behind the watermark"


def test_the_window_calls_are_read_from_sparks_rendering_of_the_parsed_plan() -> None:
    rendered = (
        "'Aggregate ['window('e.event_time, 10 minutes, 5 minutes), 'k], ['window('e.event_time, 10 minutes, 5 minutes) AS w#3, "
        "'session_window('ts, 5 minutes) AS s#4, 'WINDOW('`my col`, 3600000000) AS h#5, 'window('ts, 1 minute, 1 minute, 10 seconds) AS o#6]"
    )
    assert windows_of(rendered) == (Window("event_time", 600_000, 300_000), Window("my col", 3_600_000))  # a session or an offset window is left out


def test_the_plan_tells_the_watermarks_the_grouping_and_the_stateful_operators(spark, data, tmp_path) -> None:
    sql, _, _ = SHAPES["stream-stream join"]
    views = (SqlView("impressions", _files(data["impressions"], "shown_at")), SqlView("clicks", _files(data["clicks"], "clicked_at")))
    facts = SqlQuery(sql, views, output_mode="append").check(spark)
    assert [(mark.column, mark.delay_ms) for mark in facts.watermarks] == [("shown_at", 30_000), ("clicked_at", 30_000)]
    assert "Join" in facts.stateful and facts.grouping == ()

    renamed = "SELECT w AS period, store AS shop, n FROM (SELECT window(ts, '1 minute') AS w, store, count(*) AS n FROM events GROUP BY 1, 2)"
    facts = SqlQuery(renamed, (SqlView("events", _files(data["orders"], "ts")),)).check(spark)
    assert facts.grouping == ("period", "shop") and facts.watermarks == ()
    assert facts.windows == (Window("ts", 60_000),)  # the window as written: the analysed plan keeps only its arithmetic

    # a start reads the facts from the nodes its check walked: the same facts as a walk of the plan it runs
    query = SqlQuery(sql, views, output_mode="append")
    frame, feeders = query.build(spark, tmp_path / "staging", 0)
    try:
        assert feeders is not None and query.new_table(frame, None).facts == plan_facts(frame) and plan_facts(frame).watermarks
    finally:
        feeders.stop()


HOSTILE = {
    "SELECT * FROM csv.`{secret}`": "is not a view of this run",
    "SELECT * FROM text.`{folder}`": "is not a view of this run",
    "SELECT * FROM events JOIN parquet.`{folder}` p": "is not a view of this run",
    "SELECT * FROM global_temp.leak": "is not a view of this run",
    "SELECT * FROM spark_catalog.default.some_table": "is not a view of this run",
    "SELECT * FROM some_table": "is not a view of this run",
    "SELECT * FROM read_files('{secret}')": "table function read_files",
    "SELECT (SELECT count(*) FROM csv.`{secret}`) AS n FROM events": "is not a view of this run",
    "WITH x AS (SELECT * FROM json.`{secret}`) SELECT * FROM x": "is not a view of this run",
    "SELECT reflect('java.lang.System', 'getProperty', 'user.home') FROM events": "reflect is refused",
    "SELECT java_method('java.lang.System', 'getenv', 'HOME')": "java_method is refused",
    "SELECT try_reflect('java.lang.Runtime', 'getRuntime')": "try_reflect is refused",
    "SELECT input_file_name() FROM events": "input_file_name is refused",
    "SELECT current_user()": "current_user is refused",
    "SELECT xpath_string('<a/>', '/a') FROM events": "xpath_string is refused",
    "SELECT spark_catalog.default.my_udf(ts) FROM events": "only Spark's built-in functions",
    "SELECT * FROM IDENTIFIER('csv.`{secret}`')": "is not a view of this run",
    "DROP VIEW events": "is a command, not a query: only one SELECT runs here",
    "CREATE TABLE t AS SELECT * FROM events": "is a command, not a query: only one SELECT runs here",
    "INSERT INTO events SELECT * FROM events": "is a command, not a query: only one SELECT runs here",
    "SET spark.sql.runSQLOnFiles=true": "is a command, not a query: only one SELECT runs here",
    "ADD JAR {secret}": "is a command, not a query: only one SELECT runs here",
    "CACHE TABLE events": "is a command, not a query: only one SELECT runs here",
    "REFRESH TABLE events": "is a command, not a query: only one SELECT runs here",
    "USE spark_catalog.default": "is a command, not a query: only one SELECT runs here",
    "SELECT * FROM events; DROP VIEW events": "more than one statement (a ';' ends the first): only one SELECT runs here",
    "SELECT store, explode(sequence(1, 1000000)) AS n FROM events": "sequence(...) and array_repeat(...) are refused beyond 100,000 elements",
    "SELECT * FROM events LATERAL VIEW explode(sequence(1, 1000)) a AS x LATERAL VIEW explode(array_repeat(x, 1000)) b AS y": "beyond 100,000",
    "SELECT explode(sequence(1, amount)) FROM events": "sequence(...) is refused unless its bounds",
    "SELECT explode(sequence(100000000, 1)) FROM events": "beyond 100,000 elements",  # without a step, Spark counts down
    "SELECT array_repeat(0, 0) AS z, x FROM events LATERAL VIEW explode(sequence(1, 100000000)) t AS x": "beyond 100,000 elements",
    "SELECT explode(sequence(DATE'0001-01-01', DATE'9999-12-31', INTERVAL '1' DAY)) FROM events": "sequence(...) is refused unless its bounds",
    "SELECT repeat(repeat('x', 100000), 20000) FROM events": "beyond 100,000 characters",
    "SELECT array_join(array_repeat(repeat('x', 100000), 100000), '') FROM events": "beyond 10,000,000 characters a row",
    "SELECT repeat('x', 100000000) FROM events": "repeat(...) is refused unless its length",
    "SELECT lpad(store, amount * 1000000, 'x') FROM events": "lpad(...) is refused unless its length",
    "SELECT a.store FROM events a CROSS JOIN events b": "a join of two streams without a condition is refused",
    "SELECT TRANSFORM(store) USING 'cat {secret}; id -un' AS (out) FROM events": "TRANSFORM ... USING runs a program",
    "FROM events MAP store USING 'id' AS out": "TRANSFORM ... USING runs a program",
    "FROM events REDUCE store USING 'id' AS out": "TRANSFORM ... USING runs a program",
    "SELECT '${{env:HOME}}' AS h, '${{system:user.name}}' AS u FROM events": "${...} is refused",
    "SELECT from_xml(store, 'a INT', map('rowValidationXSDPath', '{secret}')) FROM events": "rowValidationXSDPath is refused",
    "SELECT id FROM range(100000000000)": "range(...) is refused beyond 1,000,000 rows",
    "SELECT a.id FROM range(2000) a CROSS JOIN range(2000) b": "range(...) is refused beyond 1,000,000 rows",
    "SELECT window(ts, '10 days', '1 second') AS w, store, count(*) AS c FROM events GROUP BY 1, 2": "puts each row in 864,000 windows",
    "SELECT window(ts, INTERVAL 10 DAYS, INTERVAL 1 SECOND) AS w FROM events": "864,000 windows",
    "SELECT window(ts, '1 day', 1000000) AS w FROM events": "86,400 windows",  # a slide in microseconds
    "SELECT * FROM events WHERE ts IN (SELECT window(ts, '10 days', '1 second').start FROM events)": "864,000 windows",
    "SELECT window(ts, concat('10 ', 'days'), '1 second') AS w FROM events": "unless its length and slide are literal durations",
    "SELECT * FROM events WHERE store IN (" + ", ".join(["'a store'"] * 2000) + ")": "characters, more than this server checks (20,000",
    "": "empty",
}


def test_hostile_sql_is_refused_naming_why_and_reads_nothing_outside_the_views(spark, data, tmp_path) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("password\nhunter2\n")
    query = SqlQuery("SELECT * FROM events", (SqlView("events", _files(data["orders"], "ts")),))
    checked = 0
    for template, reason in HOSTILE.items():
        text = template.format(secret=secret, folder=tmp_path)
        with pytest.raises((SqlError, ConfigError)) as refused:
            query.with_changes(text=text).check(spark) if text else SqlQuery(text, query.views)
        message = str(refused.value)
        assert reason in message, (text, message)
        assert str(tmp_path) not in message and "hunter2" not in message, (text, message)
        assert "at org.apache" not in message and "Traceback" not in message and "py4j" not in message.lower(), (text, message)
        checked += 1
    assert checked == len(HOSTILE)
    assert spark.catalog.tableExists("events") is False  # the checks' views lived in sessions of their own
    assert query.check(spark).streaming  # the plain query over the view still passes
    assert query.with_changes(text="SELECT e.*, r.id FROM events e JOIN range(1000) r ON r.id < 2").check(spark).streaming  # a small range is a table like any other
    small = "SELECT store, explode(sequence(1, 3)) AS n, repeat('-', 3) AS bar, array_repeat(store, 2) AS twice FROM events"
    assert query.with_changes(text=small).check(spark).streaming  # generators and builders within their budgets
    stores = SqlView("stores", TableFiles(data["stores"]), static=True)
    legitimate = SqlQuery("SELECT * FROM events WHERE store IN (SELECT store FROM stores WHERE region = 'north')", (*query.views, stores))
    assert legitimate.check(spark).streaming  # a subquery over a view of the run is a query like any other


PROBE_WINDOWS = (
    "SELECT window(event_time, '10 days', '1 second') AS w, key, count(*) AS c FROM STREAM(events) "
    "WATERMARK event_time DELAY OF INTERVAL 30 SECONDS GROUP BY 1, 2"
)
"""A sliding window of 864,000 windows a row: its analysis filled a shared server's heap while the text was only being checked."""


def test_a_window_of_too_many_windows_a_row_is_refused_at_its_call_before_spark_analyses_it(spark) -> None:
    from streaming.engine.sql.guard import parse_checked

    used = spark._jvm.java.lang.Runtime.getRuntime()
    with pytest.raises(SqlError) as refused:
        parse_checked(spark, PROBE_WINDOWS, ("events",))  # the parsed plan's check: nothing is analysed yet
    assert (refused.value.line, refused.value.column) == (1, 8)  # at the window( ) call
    assert "864,000 windows" in refused.value.message and "STREAMING_LAB_MAX_WINDOWS_PER_ROW" in refused.value.message
    assert used.totalMemory() - used.freeMemory() < used.maxMemory() * 0.9


def test_a_check_past_the_servers_time_limit_is_abandoned_with_a_plain_message_and_the_next_one_runs(monkeypatch) -> None:
    import threading

    from streaming.engine.sql.checker import ABANDONED, within_check_limit

    monkeypatch.setenv("STREAMING_LAB_MAX_CHECK_SECONDS", "1")
    release = threading.Event()
    endless = f"SELECT 'an analysis that does not end {uuid.uuid4()}'"
    try:
        with pytest.raises(SqlError) as abandoned:
            within_check_limit(lambda: release.wait(120), endless)  # it holds one of the check threads
        assert "longer than 1 s" in abandoned.value.message and "STREAMING_LAB_MAX_CHECK_SECONDS" in abandoned.value.message
        assert endless in ABANDONED and endless + " " not in ABANDONED  # not checked again until it is changed
        assert within_check_limit(lambda: 42) == 42  # another page's check still runs
    finally:
        release.set()


def test_a_broken_query_says_what_is_wrong_at_its_line_and_column(spark, data) -> None:
    query = SqlQuery("SELECT *\nFROM events\nWHERE nope = 1", (SqlView("events", _files(data["orders"], "ts")),))
    with pytest.raises(SqlError) as unresolved:
        query.check(spark)
    assert (unresolved.value.line, unresolved.value.column) == (3, 7)
    assert "`nope` cannot be resolved" in unresolved.value.message and "Project" not in unresolved.value.message
    with pytest.raises(SqlError) as syntax:
        query.with_changes(text="SELECT store,\n  , count(*) FROM events GROUP BY store").check(spark)
    assert (syntax.value.line, syntax.value.column) == (2, 3) and "Syntax error at or near ','" in syntax.value.message
    for command in ("EXECUTE IMMEDIATE 'SELECT 1'",):  # the other commands: HOSTILE
        with pytest.raises(SqlError) as refused:
            query.with_changes(text=command).check(spark)
        assert "is a command, not a query: only one SELECT runs here" in refused.value.message, command
    with pytest.raises(SqlError) as two:
        query.with_changes(text="SELECT * FROM events; -- a comment; not a statement\nSELECT 1").check(spark)
    assert (two.value.line, two.value.column) == (1, 21) and "more than one statement" in two.value.message
    assert query.with_changes(text="SELECT * FROM events WHERE store <> ';';").check(spark).columns  # a ';' in a string, one at the end: one query


def test_spark_refuses_a_streaming_order_by_and_append_without_a_watermark_naming_the_clause(spark, registry, data) -> None:
    """Spark's own streaming checks for the output mode run in the check before Start (it said "ready" and Spark refused after Start), and
    again at Start."""
    views = (SqlView("events", _files(data["orders"], "ts")),)
    order_by = SqlQuery("SELECT *\nFROM events\nORDER BY ts", views)
    for refuse in (order_by.check, lambda _: replay_sql(registry, order_by)):
        with pytest.raises(SqlError) as refused:
            refuse(spark)
        assert "Sorting is not supported" in refused.value.message and refused.value.line == 3
    assert order_by.with_changes(output_mode="complete", text="SELECT store, count(*) AS n FROM events GROUP BY store ORDER BY n").check(spark)
    append = SqlQuery("SELECT store, count(*) AS n\nFROM events GROUP BY store", views, output_mode="append")
    with pytest.raises(SqlError) as refused:
        append.check(spark)
    assert "WATERMARK" in str(refused.value) and "append" in str(refused.value)
    assert (refused.value.line, refused.value.column) == (2, 13)  # its GROUP BY: Spark names no operator for this refusal
    assert append.with_changes(output_mode="update").check(spark).columns == ("store", "n")
    assert not [run for run in registry.runs() if run.name.startswith("sql_")]  # nothing left behind


def test_replay_sql_from_the_command_line_writes_the_contract(cli, data, tmp_path) -> None:
    query = tmp_path / "q.sql"
    query.write_text(
        "SELECT window(e.ts, '2 minutes') AS w, s.region, count(*) AS n\n"
        "FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE AS e JOIN stores s ON e.store = s.store\nGROUP BY 1, 2\n"
    )
    out = tmp_path / "out.json"
    done = cli(
        "replay", str(data["orders"]), "--event-time", "ts", "--sql-file", str(query), "--view", "orders", "--static", f"stores={data['stores']}",
        "--arrival", "busy", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    assert set(report) >= {"result", "rows_dropped_by_watermark", "operators", "batches", "final_watermark", "arrival", "no_data_batches"}
    assert (report["arrival"], report["no_data_batches"]) == ("busy", 1) and "arrival=busy no_data_batches=1" in done.stdout
    assert {"w": {"start": "2024-01-01 00:00:00", "end": "2024-01-01 00:02:00"}, "region": "north", "n": 3} in report["result"]
    assert [operator["name"] for operator in report["operators"]] == ["stateStoreSave"]
    assert len(report["batches"]) >= len(ORDERS) and report["final_watermark"] == "2024-01-01 00:08:40"
    assert "operator 0 stateStoreSave" in done.stdout

    joined = cli(
        "replay", str(data["impressions"]), "--event-time", "shown_at", "--view", "impressions", "--stream", f"clicks={data['clicks']}",
        "--sql", SHAPES["stream-stream join"][0], "--output-mode", "append", "--json", str(out),
    )
    assert joined.returncode == 2 and "clicked_at" in joined.stderr  # one --event-time names every stream's event time: clicks has none
    refused = cli("replay", str(data["orders"]), "--event-time", "ts", "--sql", "SELECT * FROM csv.`/etc/passwd`")
    assert refused.returncode == 2 and "is not a view of this run" in refused.stderr and "/etc" not in refused.stderr.replace("csv./etc/passwd", "")


# --------------------------------------------------------------------------- without Spark


def test_a_jvm_handle_the_checks_keep_is_never_used_past_its_sparkcontext(monkeypatch) -> None:
    """After Spark's JVM dies, a new session has a new SparkContext: a class (or the compiled plan walk) kept from the old one pointed at a
    dead gateway, and every SQL check was refused with "Connection refused" until the server restarted."""
    from types import SimpleNamespace

    from pyspark import SparkContext

    from streaming.engine.sql import guard, walk

    def context(tag: str) -> SimpleNamespace:
        return SimpleNamespace(_jvm=SimpleNamespace(a=SimpleNamespace(B=tag)), lookups=[])

    def looked_up(context: SimpleNamespace) -> tuple[str, str]:
        context.lookups.append("a.B")
        return (context._jvm.a.B, "a.B")

    old, new = context("old"), context("new")
    monkeypatch.setattr(walk, "_KEPT", {})
    monkeypatch.setattr(SparkContext, "_active_spark_context", old)
    assert walk.per_context("a.B", looked_up) == ("old", "a.B") and walk.per_context("a.B", looked_up) == ("old", "a.B")
    assert old.lookups == ["a.B"]  # once a context
    assert guard._static("a.B") == "old"  # the guard's classes are kept the same way
    monkeypatch.setattr(SparkContext, "_active_spark_context", new)
    assert walk.per_context("a.B", looked_up) == ("new", "a.B") and new.lookups == ["a.B"]
    assert guard._static("a.B") == "new"


def test_the_sql_table_folds_by_output_mode() -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("store", StringType()), StructField("n", LongType())])
    update = SqlTable("update", schema, ("store",))
    update.apply(0, [("a", 1), ("b", 1)])
    update.apply(1, [("a", 2)])
    update.apply(1, [("a", 9)])  # a batch Spark runs again after a restart
    assert sorted(update.records(), key=lambda row: row["store"]) == [{"store": "a", "n": 2}, {"store": "b", "n": 1}]
    append = SqlTable("append", schema, ("store",))
    append.apply(0, [("a", 1)])
    append.apply(1, [("a", 2)])
    assert len(append) == 2
    complete = SqlTable("complete", schema)
    complete.apply(0, [("a", 1), ("b", 1)])
    complete.apply(1, [("a", 3)])
    assert complete.records() == [{"store": "a", "n": 3}]
    with pytest.raises(ConfigError, match="grouping"):
        SqlTable("update", schema, ("nope",))


def test_the_table_after_a_batch_says_what_that_batch_changed_in_every_output_mode() -> None:
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    schema = StructType([StructField("store", StringType()), StructField("n", LongType())])
    batches = {0: [("a", 1), ("b", 1)], 1: [("a", 2), ("b", 1), ("c", 1)], 2: []}
    update = SqlTable("update", schema, ("store",), record=True)
    complete = SqlTable("complete", schema, ("store",), record=True)
    append = SqlTable("append", schema, record=True)
    for table in (update, complete, append):
        for batch, rows in batches.items():
            table.apply(batch, rows)
    emitted, result = update.after(1)
    assert emitted.to_dict("records") == [
        {"store": "a", "n": 2, "change": "updated"}, {"store": "b", "n": 1, "change": "unchanged"}, {"store": "c", "n": 1, "change": "added"},
    ]
    assert result.to_dict("records") == emitted.to_dict("records")
    emitted, result = update.after(2)  # a batch that emitted nothing leaves every row as it was
    assert emitted.empty and list(result["change"]) == ["", "", ""] and list(result["n"]) == [2, 1, 1]
    assert update.after(0)[1].to_dict("records") == [{"store": "a", "n": 1, "change": "added"}, {"store": "b", "n": 1, "change": "added"}]
    assert list(complete.after(1)[1]["change"]) == ["updated", "unchanged", "added"]
    emitted, result = append.after(1)
    assert list(emitted["change"]) == ["emitted"] * 3 and len(result) == 5
    assert sorted(result["change"]) == ["", "", "emitted", "emitted", "emitted"]
    assert result[result["change"] == ""][["store", "n"]].to_dict("records") == [{"store": "a", "n": 1}, {"store": "b", "n": 1}]
    with pytest.raises(ValueError, match="record=True"):
        SqlTable("update", schema, ("store",)).after(0)


def test_a_global_aggregate_in_update_mode_is_one_row_and_a_grouping_left_out_of_the_select_adds_rows() -> None:
    from pyspark.sql.types import LongType, StructField, StructType

    from streaming.engine.sql.plan import PlanFacts

    schema = StructType([StructField("n", LongType())])
    facts = {name: PlanFacts(True, ("n",), (), (), ("Aggregate",), global_aggregate=name == "global") for name in ("global", "grouped")}
    tables = {name: SqlTable("update", schema, facts[name], record=True) for name in facts}
    for table in tables.values():
        table.apply(0, [(3,)])
        table.apply(1, [(5,)])
    assert tables["global"].records() == [{"n": 5}]  # SELECT count(*): the one row, updated
    assert list(tables["global"].after(1)[1]["change"]) == ["updated"]
    assert len(tables["grouped"]) == 2  # SELECT count(*) ... GROUP BY key: no column names the row, so each batch's rows are added


def test_a_sql_querys_views_are_stepped_together_file_by_file(tmp_path) -> None:
    from streaming.engine.sources import FeedReplayer, Stepper
    from streaming.engine.sql.query import ViewFeeders

    def replayer(name: str, files: int) -> FeedReplayer:
        folder = tmp_path / name
        folder.mkdir()
        paths = []
        for index in range(files):
            paths.append(folder / f"{index}.csv")
            paths[-1].write_text(f"event_time,key\n2024-01-01 00:00:0{index},{name}\n")
        return FeedReplayer(paths, tmp_path / f"staging_{name}", 0)

    left, right = replayer("left", 3), replayer("right", 2)
    views = ViewFeeders([left, right])
    assert isinstance(views, Stepper) and views.stepped and views.steps == 3 and views.staged == 0 and not views.first_at_start
    assert views.stage_next() and (left.staged, right.staged) == (1, 1)
    assert views.stage_next() and (left.staged, right.staged) == (2, 2) and not views.done.is_set()
    assert views.stage_next() and (left.staged, right.staged) == (3, 2) and views.done.is_set()  # the shorter view has no third file
    assert not views.stage_next() and views.staged == 3
    paced = ViewFeeders([FeedReplayer([], tmp_path / "paced", 1.0), left])
    assert not paced.stepped  # a paced view's files come on its own thread: not stepped

    left, right = replayer("left_again", 3), replayer("right_again", 3)
    views = ViewFeeders([left, right])
    second = right.files[1].read_text()
    assert views.stage_next() and (left.staged, right.staged) == (1, 1)
    right.files[1].unlink()  # the right view's second file cannot be copied: that step fails half done
    with pytest.raises(FileNotFoundError):
        views.stage_next()
    assert (left.staged, right.staged) == (2, 1)
    right.files[1].write_text(second)
    assert views.stage_next() and (left.staged, right.staged) == (2, 2)  # the press after completes the second step, it does not run ahead
    assert views.stage_next() and (left.staged, right.staged) == (3, 3) and views.done.is_set()


def test_a_struct_column_is_shown_as_its_fields_and_written_as_an_object() -> None:
    import datetime as dt

    from pyspark.sql.types import LongType, StructField, StructType, TimestampType

    window = StructType([StructField("start", TimestampType()), StructField("end", TimestampType())])
    schema = StructType([StructField("w", window), StructField("n", LongType())])
    table = SqlTable("append", schema)
    start = dt.datetime(2024, 1, 1, 0, 0, 0, tzinfo=dt.UTC).astimezone().replace(tzinfo=None)  # as PySpark collects: local, naive
    table.apply(0, [((start, start + dt.timedelta(seconds=90, microseconds=5)), 2)])
    assert table.records() == [{"w": {"start": "2024-01-01 00:00:00", "end": "2024-01-01 00:01:30.000005"}, "n": 2}]
    assert list(table.frame().columns) == ["w.start", "w.end", "n"]
    assert table.frame()["w.start"].iloc[0] == pd.Timestamp("2024-01-01 00:00:00")


def test_a_kept_sql_table_goes_on_from_its_snapshot_and_journal_with_every_value_as_spark_gave_it(tmp_path: Path) -> None:
    import datetime as dt
    import decimal

    from pyspark.sql import Row
    from pyspark.sql.types import DayTimeIntervalType, DecimalType, IntegerType, LongType, MapType, StringType, StructField, StructType, TimestampType

    window = StructType([StructField("start", TimestampType()), StructField("end", TimestampType())])
    schema = StructType([
        StructField("w", window), StructField("store", StringType()), StructField("n", LongType()), StructField("total", DecimalType(38, 6)),
        StructField("gap", DayTimeIntervalType()), StructField("by_hour", MapType(IntegerType(), LongType())),
    ])
    local = lambda minute: dt.datetime(2024, 1, 1, 0, minute, tzinfo=dt.UTC).astimezone().replace(tzinfo=None)  # noqa: E731 - as PySpark collects
    w0, w1 = Row(start=local(0), end=local(1)), Row(start=local(1), end=local(2))
    big = decimal.Decimal("12345678901234567.891234")  # more digits than a float holds
    gap = dt.timedelta(seconds=90, microseconds=7)
    path = tmp_path / "result.json"
    kept = SqlTable("update", schema, ("w", "store", "total"))
    kept.keep(path)
    kept.apply(0, [(w0, "a", 1, big, gap, {0: 1}), (w0, "b", 2, decimal.Decimal("2.000000"), None, {})])  # a snapshot: the journal would be as long
    kept.apply(1, [(w0, "a", 3, big, gap, {0: 2, 23: 1})])  # journalled
    kept.apply(2, [(w1, "a", 1, None, None, None)])
    assert path.is_file() and len(journal_lines := (tmp_path / "result.jsonl").read_text().splitlines()) == 2, journal_lines
    again = SqlTable("update", schema, ("w", "store", "total"))
    again.keep(path)
    assert again.rows() == kept.rows() and (again.last_batch_id, again.batches_applied) == (2, 3)  # every value as Spark gave it
    again.apply(2, [(w1, "a", 99, None, None, None)])  # Spark runs the last batch again after a crash: counted once
    again.apply(3, [(w0, "a", 4, big, gap, {0: 2})])  # the grouping by a decimal still finds its row
    assert len(again) == 3 and sorted(row[2] for row in again.rows()) == [1, 2, 4]
    with pytest.raises(ConfigError, match="output_mode"):
        SqlTable("append", schema).load(path)


def test_a_sql_query_and_its_views_round_trip_through_their_record(data) -> None:
    query = SqlQuery(
        "SELECT o.store, s.region, count(*) AS n FROM orders o JOIN stores s ON o.store = s.store GROUP BY 1, 2",
        (SqlView("orders", _files(data["orders"], "ts")), SqlView("stores", TableFiles(data["stores"]), static=True)),
        output_mode="complete", trigger="processing_time", trigger_interval="5 seconds",
    )
    record = json.loads(json.dumps(query.to_dict()))
    assert record["kind"] == "sql" and SqlQuery.from_dict(record) == query and query.resumable
    with pytest.raises(ConfigError, match="nope"):
        SqlQuery.from_dict({**record, "nope": 1})
    with pytest.raises(ConfigError, match=r"view orders\.source\.kind"):
        SqlQuery.from_dict({**record, "views": [{**record["views"][0], "source": {"kind": "smoke"}}]})


def test_a_sql_comparison_refuses_one_query_and_queries_over_other_views_before_anything_runs(data) -> None:
    from streaming.analysis.sql_tune import compare_sql

    orders = SqlView("orders", _files(data["orders"], "ts"))
    first = SqlQuery("SELECT store, count(*) AS n FROM orders GROUP BY store", (orders,))
    with pytest.raises(ConfigError, match="queries: 1 given"):
        compare_sql(None, [first])  # type: ignore[arg-type]
    other = SqlQuery("SELECT ad, count(*) AS n FROM clicks GROUP BY ad", (SqlView("clicks", _files(data["clicks"], "clicked_at")),))
    with pytest.raises(ConfigError, match=r"queries\[1\]\.views: 'clicks' are not the first query's"):
        compare_sql(None, [first, other])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="labels"):
        compare_sql(None, [first, first], labels=["same", "same"])  # type: ignore[arg-type]


def test_an_error_position_and_message_read_as_a_user_needs_them() -> None:
    assert position("SELECT *\nFROM events\nWHERE x", 27) == (3, 7)
    raw = (
        "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, variable, or function parameter with name `x` cannot be resolved. Did you mean one of the "
        "following? [`ts`]. SQLSTATE: 42703; line 3 pos 6;\n'Project [*]\n+- 'Filter ('x = 1)\n   +- StreamingRelation FileSource[/srv/data/orders]"
    )
    plain = plain_message(raw)
    assert plain.startswith("A column, variable, or function parameter with name `x` cannot be resolved")
    assert "SQLSTATE" not in plain and "line 3" not in plain and "/srv" not in plain and "Project" not in plain


def test_views_and_queries_are_checked_where_they_are_made(tmp_path) -> None:
    feed = _write(tmp_path / "f", "ts,k", [[("2024-01-01 00:00:00", "a")]])
    source = _files(feed, "ts")
    with pytest.raises(ConfigError, match="view: '1events'"):
        SqlView("1events", source)
    with pytest.raises(ConfigError, match="is named twice"):
        SqlQuery("SELECT 1", (SqlView("e", source), SqlView("E", source)))
    with pytest.raises(ConfigError, match="are all static"):
        SqlQuery("SELECT 1", (SqlView("e", source, static=True),))
    with pytest.raises(ConfigError, match="output_mode"):
        SqlQuery("SELECT 1", (SqlView("e", source),), output_mode="upsert")  # type: ignore[arg-type]



def test_a_query_is_replayed_without_its_feeds_pace_and_refused_over_a_stream_without_an_end(tmp_path) -> None:
    """A sweep or a comparison reads a paced feed a file a micro-batch without its pauses; the static views stay as they are."""
    from streaming.engine.sources.generator import GeneratorSource

    feed = _write(tmp_path / "f", "ts,k", [[("2024-01-01 00:00:00", "a")]])
    paced = FeedSource(feed, seconds_per_file=5.0, columns=_files(feed, "ts").columns)
    query = SqlQuery("SELECT 1", (SqlView("e", paced), SqlView("t", paced, static=True)))
    replayed = query.replayed("tuned")
    assert [view.source.seconds_per_file for view in replayed.views] == [0, 5.0]
    assert replayed.text == query.text and replayed.names == query.names
    with pytest.raises(ConfigError, match="cannot be tuned"):
        SqlQuery("SELECT 1", (SqlView("e", GeneratorSource()),)).replayed("tuned")


# --------------------------------------------------------------------------- tuning


def test_the_watermark_clauses_are_rewritten_where_the_parser_placed_them(spark) -> None:
    from streaming.engine.sql.rewrite import batch_text, watermark_clauses, with_delays

    text = (
        "SELECT 'WATERMARK ts DELAY OF INTERVAL 9 HOURS' AS note, i.ad FROM STREAM(impressions) WATERMARK shown_at DELAY OF INTERVAL '30' SECOND AS i\n"
        "JOIN clicks WATERMARK `clicked_at` DELAY OF INTERVAL 1 MINUTE AS c ON i.ad = c.ad"
    )
    clauses = watermark_clauses(spark, text)
    assert [(clause.column, clause.delay_ms) for clause in clauses] == [("shown_at", 30_000), ("clicked_at", 60_000)]
    rewritten = with_delays(text, clauses, [5_000, 120_000])
    assert [(clause.column, clause.delay_ms) for clause in watermark_clauses(spark, rewritten)] == [("shown_at", 5_000), ("clicked_at", 120_000)]
    assert "'WATERMARK ts DELAY OF INTERVAL 9 HOURS'" in rewritten  # a string that reads like a clause is not one
    batch = batch_text(spark, text)
    assert "STREAM" not in batch and "DELAY OF INTERVAL 1 MINUTE" not in batch and "FROM impressions  AS i" in batch
    assert "'WATERMARK ts DELAY OF INTERVAL 9 HOURS'" in batch


def test_rows_are_compared_as_a_multiset_by_their_grouping() -> None:
    from streaming.analysis.sql_tune import compare_rows

    exact = [{"w": 1, "k": "a", "n": 2}, {"w": 1, "k": "b", "n": 1}, {"w": 2, "k": "a", "n": 1}, {"w": 2, "k": "a", "n": 1}]
    result = [{"w": 1, "k": "a", "n": 1}, {"w": 2, "k": "a", "n": 1}]
    assert compare_rows(result, exact, ("w", "k")) == (1, 1, 2, 0)  # matched, different (a late row dropped), missing, extra
    assert compare_rows(result, exact, ()) == (1, 0, 3, 1)


def test_the_tuner_sweeps_a_sql_querys_watermark_and_recommends_the_smallest_delay_that_is_complete(cli, data, tmp_path) -> None:
    out = tmp_path / "tune.json"
    sql = (
        "SELECT window(ts, '1 minute') AS w, store, count(*) AS n, sum(amount) AS total FROM STREAM(events) "
        "WATERMARK ts DELAY OF INTERVAL 30 SECONDS WHERE amount > 1 GROUP BY 1, 2"
    )
    done = cli(
        "tune", str(data["orders"]), "--event-time", "ts", "--sql", sql, "--delays", "0 seconds,1 minute,10 minutes", "--target", "1",
        "--arrival", "busy", "--json", str(out),
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    points = {tuple(point["delays"]): point for point in report["points"]}
    assert points[("0 seconds",)]["completeness"] < 1 <= points[("10 minutes",)]["completeness"]
    assert points[("0 seconds",)]["rows_dropped_by_watermark"] > 0 and points[("10 minutes",)]["rows_dropped_by_watermark"] == 0
    assert points[("0 seconds",)]["different"] + points[("0 seconds",)]["missing"] > 0
    complete = [delay for delay in (("0 seconds",), ("1 minute",), ("10 minutes",)) if points[delay]["completeness"] >= 1]
    assert report["recommended"] == list(complete[0])
    assert points[("10 minutes",)]["peak_state_rows"] >= points[("0 seconds",)]["peak_state_rows"]

    no_clause = cli("tune", str(data["orders"]), "--event-time", "ts", "--sql", "SELECT store, count(*) FROM events GROUP BY store", "--delays", "1 minute")
    assert no_clause.returncode == 2 and "WATERMARK" in no_clause.stderr


def test_a_kept_sql_query_stopped_mid_stream_resumes_with_every_batch_spark_committed_folded_once(spark, data, tmp_path) -> None:
    """Kept as the form's queries are: its text and views in query.json, the checkpoint, the files handed over and the result table. Stopped
    while a paced feed is still arriving, at a moment a timer chooses, and resumed in a session of its own with the same views, it reads every
    row once and its table is every batch Spark committed, over both runs, folded once in batch order.

    It need not equal a run that never stopped, nor a catch-up replay: Spark checks a batch's rows against the watermark of the batch before
    it, and whether a no-data batch ran in between (one runs when the next file has not arrived yet) decides which watermark that is: a paced
    run can drop a row that a catch-up replay of the same files keeps."""
    from dataclasses import replace

    from support import wait_for

    from streaming.engine.run.registry import QueryRegistry

    text = (
        "SELECT window(ts, '2 minutes') AS w, store, count(*) AS n, sum(amount) AS total\n"
        "FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY 1, 2"
    )
    query = SqlQuery(text, (SqlView("orders", replace(_files(data["orders"], "ts"), seconds_per_file=1.0)),), output_mode="update")
    kept_registry = QueryRegistry(spark, kept_root=tmp_path / ".queries")
    try:
        first = kept_registry.start(query, "kept_sql", keep=True, record_outputs=True)
        wait_for(lambda: first.log.last_batch_id >= 2, "no third batch", 120)
        kept_registry.remove("kept_sql")  # stopped, or the server restarted: the folder stays
        [kept] = kept_registry.kept()
        assert kept.config() == query and kept.problem is None
        before = dict(first.table.outputs or {})
        assert kept.summary()["batches"] == len(before) >= 2
        resumed = kept_registry.start(query, "kept_sql", keep=True, resume=True, record_outputs=True)
        resumed.await_idle(300)
        summaries = resumed.log.summaries()
        assert [summary["batch_id"] for summary in summaries] == list(range(len(summaries)))  # the first run's batches, then the resumed run's
        assert sum(summary["num_input_rows"] for summary in summaries) == sum(len(rows) for rows in ORDERS)  # every row read once
        wait_for(lambda: resumed.drained, "a SQL replay that read every file never said so: it held its slot", 60)
        after = {batch: rows for batch, rows in (resumed.table.outputs or {}).items() if batch > max(before)}
        assert after and sum(summary["rows_dropped_by_watermark"] for summary in summaries) > 0
        folded = SqlTable("update", resumed.table.schema, ("w", "store"))
        for batch, rows in sorted({**before, **after}.items()):
            folded.apply(batch, rows)
        assert resumed.table.records() == folded.records() and len(folded) > 4
    finally:
        kept_registry.close()


def test_a_sql_join_with_two_watermark_clauses_is_swept_over_both_delays(registry, data) -> None:
    from streaming.analysis.sql_tune import sweep_grid, tune_sql
    from streaming.engine.sql.rewrite import watermark_clauses

    sql, mode, _ = SHAPES["stream-stream join"]
    views = (SqlView("impressions", _files(data["impressions"], "shown_at")), SqlView("clicks", _files(data["clicks"], "clicked_at")))
    query = SqlQuery(sql, views, output_mode=mode, arrival="busy")  # the grid does not depend on the rule: the cheaper one
    points = sweep_grid(watermark_clauses(registry.spark, sql), [0, 600_000])
    assert points == [(0, 0), (0, 600_000), (600_000, 0), (600_000, 600_000)]
    outcome = tune_sql(registry, query, points, target=1.0)
    grid = {point.delays_ms: point for point in outcome.points}
    assert grid[(600_000, 600_000)].completeness == 1.0 and grid[(0, 0)].completeness < 1.0
    assert grid[(0, 0)].rows_dropped_by_watermark > 0
    assert outcome.recommended is not None and outcome.recommended.completeness == 1.0


def test_explain_tells_every_micro_batch_of_a_sql_query_by_its_operators(cli, data, tmp_path) -> None:
    out = tmp_path / "steps.json"
    sql = SHAPES["three aggregates"][0]
    done = cli("explain", str(data["orders"]), "--event-time", "ts", "--sql", sql, "--json", str(out))
    assert done.returncode == 0, done.stderr
    report = json.loads(out.read_text())
    steps = report["batches"]
    assert [step["batch_id"] for step in steps] == list(range(len(steps))) and len(steps) >= len(ORDERS)
    assert report["arrival"] == "quiet" and report["no_data_batches"] == sum(1 for step in steps if step["input_rows"] == 0) > 0  # the default rule
    assert steps[0]["caption"].startswith("Batch 0 read 3 rows; ran before any watermark")
    dropping = [step for step in steps if step["rows_dropped_by_watermark"]]
    assert dropping and all("stateStoreSave:" in step["caption"] for step in dropping)
    assert sum(len(step["output"]) for step in steps) >= len(report["result"]) > 0  # update mode: every change emitted, the last kept
    assert done.stdout.count("Batch ") == len(steps)


def test_show_codes_program_of_a_sql_query_prints_what_the_labs_replay_of_it_gives(spark, registry, data) -> None:
    """Show code for a user's SQL: its views built with the engine's own builders (the streamed one file per micro-batch, the static one whole),
    the text run under the query's arrival rule and its result folded as the output mode says; the program prints the replay's records."""
    from support import printed_result, run_program

    from streaming.export import sql_code

    text = (
        "SELECT window(ts, '2 minutes') AS w, s.region, count(*) AS n, sum(amount) AS total\n"
        "FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE AS e JOIN stores s ON e.store = s.store\nGROUP BY 1, 2"
    )
    views = (SqlView("orders", _files(data["orders"], "ts")), SqlView("stores", TableFiles(data["stores"]), static=True))
    for mode, rule in (("update", "quiet"), ("append", "busy")):
        query = SqlQuery(text, views, output_mode=mode, arrival=rule)  # type: ignore[arg-type]
        replay = replay_sql(registry, query)
        code = sql_code(query, query.check(spark).grouping)
        assert "GROUPING = ('w', 'region',)" in code and f"ARRIVAL = '{rule}'" in code
        assert replay.arrival == rule and (replay.no_data_batches > 1) == (rule == "quiet"), rule
        assert printed_result(run_program(spark, code)) == replay.records and len(replay.records) >= 3, mode


def test_show_codes_program_cuts_a_views_dataset_by_rows_or_arrival_as_the_lab_does(spark, registry, data) -> None:
    """A streamed view of a dataset cut by rows or by the time in a column: the program cuts it with the engine's own cut (its text copied)
    and prints the replay's records, batch count included."""
    from dataclasses import replace

    from support import printed_result, run_program

    from streaming.export import sql_code

    text = "SELECT window(ts, '2 minutes') AS w, count(*) AS n, sum(amount) AS total FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY 1"
    files = len(list(data["orders"].iterdir()))
    for batching in (Batching("rows:4"), Batching("ts", "2 minutes")):
        query = SqlQuery(text, (SqlView("orders", replace(_files(data["orders"], "ts"), batching=batching)),), arrival="busy")  # the cut, not the rule
        replay = replay_sql(registry, query)
        code = sql_code(query, query.check(spark).grouping)
        assert "def cut_files(" in code and "'cut': {" in code
        stdout = run_program(spark, code)
        assert printed_result(stdout) == replay.records and len(replay.records) >= 3, batching
        assert sum(1 for summary in replay.summaries if summary["num_input_rows"]) != files  # cut otherwise than a file a batch
