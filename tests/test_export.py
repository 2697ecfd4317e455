"""Tests of the PySpark code export: it compiles, embeds values as literals only, and reproduces the replay."""

from __future__ import annotations

import ast
import itertools
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support import GUIDE_BATCHES, console_definitions, printed_result, run_program
from support.cli import finish_export, start_export

from streaming.engine.data.feeds import SAMPLE_FEEDS
from streaming.engine.query.config import (
    ColumnMapping,
    ConfigError,
    FeedSource,
    GeneratorSource,
    QueryConfig,
    RateMicroBatchSource,
    RateSource,
    SocketSource,
)
from streaming.export import RESULT_PREFIX, pyspark_code

WEB_CLICKS = SAMPLE_FEEDS / "web_clicks"
# Quotes, a newline, a backslash, triple quotes and non-ASCII: every way out of a literal.
NASTY_NAME = "feed'); import os #\n\"\"\" \\ '''; __import__('pathlib').Path('PWNED').touch() # \u00e9"


def _sources(feed: Path) -> list:
    return [
        FeedSource(feed, seconds_per_file=0),
        FeedSource(feed, seconds_per_file=1.5),
        FeedSource(feed, seconds_per_file=0, columns=ColumnMapping(event_time="event_time", time_format="auto", key=None, value="key")),
        GeneratorSource(events_per_second=20, keys=3, max_lag="5 seconds", late_share=0.1, late_delay="1 minute", seed=11),
        RateSource(rows_per_second=10, keys=2),
        RateMicroBatchSource(rows_per_batch=10, advance="2 seconds", keys=5),
        SocketSource(feed, lines_per_second=5),
    ]


def _matrix(feed: Path) -> list[QueryConfig]:
    """Every valid combination of source, output mode, trigger, aggregation, window shape and watermark."""
    configs = []
    for source, mode, trigger, aggregation, slide, watermark in itertools.product(
        _sources(feed),
        ("append", "update", "complete"),
        ("default", "processing_time", "available_now"),
        ("count", "none", "sum", "approx_distinct"),
        (None, "30 seconds"),
        (None, "1 minute"),
    ):
        try:
            configs.append(
                QueryConfig(
                    source=source,
                    window="1 minute",
                    slide=slide,
                    watermark=watermark,
                    output_mode=mode,
                    trigger=trigger,
                    trigger_interval="5s" if trigger == "processing_time" else None,
                    aggregation=aggregation,
                )
            )
        except ConfigError:
            continue  # a combination Spark refuses: refused before export
    return configs


def _imported_modules(tree: ast.AST) -> set[str]:
    modules = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            modules.add((node.module or "").split(".")[0])
    return modules


def _calls(tree: ast.AST) -> set[str]:
    """Names of every attribute or function called, e.g. {'trigger', 'format', 'print'}."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _assigned_constant(tree: ast.Module, name: str) -> object:
    """The literal assigned to module-level ``name`` (unwrapping ``pathlib.Path(<literal>)``)."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            value = node.value
            if isinstance(value, ast.Call):
                assert len(value.args) == 1 and not value.keywords
                value = value.args[0]
            assert isinstance(value, ast.Constant), ast.dump(node)
            return value.value
    raise AssertionError(f"{name} is not assigned")


def test_every_combination_compiles_with_only_pyspark_and_stdlib(write_feed):
    feed = write_feed(GUIDE_BATCHES)
    configs = _matrix(feed)
    assert len(configs) > 150
    kinds = set()
    for config in configs:
        code = pyspark_code(config)
        compile(code, "<export>", "exec")
        assert code.isascii()
        tree = ast.parse(code)
        assert _imported_modules(tree) <= {"pyspark"} | set(sys.stdlib_module_names), config
        calls = _calls(tree)
        is_feed = config.source.kind == "feed"
        kinds.add((config.source.kind, config.trigger, config.output_mode, config.aggregation))
        # the essentials of the query, each there exactly when configured
        assert {"getOrCreate", "outputMode", "start"} <= calls
        assert ("withWatermark" in calls) == (config.watermark is not None)
        assert ("window" in calls) == (config.aggregation != "none")
        assert ("windowed_aggregate(events, window, 'approx_distinct')" in code) == (config.aggregation == "approx_distinct")
        assert ("windowed_aggregate(events, window, 'sum')" in code) == (config.aggregation == "sum")
        assert ("trigger" in calls) == (config.trigger != "default")
        assert ("processAllAvailable" in calls) == (is_feed and config.trigger != "available_now")
        assert ("foreachBatch" in calls) == is_feed
        assert ("awaitTermination" in calls) == (not is_feed or config.trigger == "available_now")
        assert _assigned_constant(tree, "OUTPUT_MODE") == config.output_mode
        if config.trigger == "processing_time":
            assert _assigned_constant(tree, "TRIGGER_INTERVAL") == "5 seconds"
        if config.watermark is not None:
            assert _assigned_constant(tree, "WATERMARK") == "1 minute"
        if config.slide is not None and config.aggregation != "none":
            assert _assigned_constant(tree, "SLIDE") == "30 seconds"
        if is_feed:
            assert _assigned_constant(tree, "FEED") == str(feed.resolve())
            assert f"print({RESULT_PREFIX!r} + json.dumps(records))" in code
        else:
            assert ".format('console')" in code and ".option('truncate', False)" in code
    assert {kind for kind, *_ in kinds} == {"feed", "generator", "rate", "rate-micro-batch", "socket"}
    assert {trigger for _, trigger, *_ in kinds} == {"default", "processing_time", "available_now"}


def test_socket_export_explains_the_line_server(write_feed):
    code = pyspark_code(QueryConfig(SocketSource(write_feed(GUIDE_BATCHES)), output_mode="complete"))
    tree = ast.parse(code)
    assert "nc -lk 9999" in code
    assert _assigned_constant(tree, "HOST") == "127.0.0.1"
    assert _assigned_constant(tree, "PORT") == 9999
    assert _assigned_constant(tree, "EVENT_TIME_FIELD") == 1 and _assigned_constant(tree, "KEY_FIELD") == 2
    assert ".option('host', HOST).option('port', PORT)" in code


def test_generator_export_has_the_configured_values():
    source = GeneratorSource(events_per_second=123, keys=9, max_lag="7 seconds", late_share=0.25, late_delay="3 minutes", seed=42)
    tree = ast.parse(pyspark_code(QueryConfig(source, trigger="processing_time", trigger_interval="1 minute 30 seconds")))
    assert [_assigned_constant(tree, name) for name in ("EVENTS_PER_SECOND", "KEYS", "MAX_LAG_MS", "LATE_SHARE", "LATE_DELAY_MS", "SEED")] == [
        123, 9, 7000, 0.25, 180_000, 42,
    ]
    assert _assigned_constant(tree, "TRIGGER_INTERVAL") == "90 seconds"
    assert _assigned_constant(tree, "STALL_AFTER_MS") is None
    stalled = ast.parse(pyspark_code(QueryConfig(GeneratorSource(stall_after="1 minute"))))
    assert _assigned_constant(stalled, "STALL_AFTER_MS") == 60_000 and "greatest" in _calls(stalled)


def test_a_topics_program_keeps_kafkas_own_client_timeouts_and_prints_whole_batches():
    """The lab waits 5 s for a broker so that Stop never hangs; a program run elsewhere keeps Kafka's defaults, and the console shows
    a batch's rows, not its first 20."""
    from streaming.engine.sources.kafka import CLIENT_TIMEOUTS, KafkaSource

    source = KafkaSource("127.0.0.1:9092", "clicks", (("event_time", "string"), ("key", "string")), columns=ColumnMapping(event_time="event_time", key="key"))
    assert set(CLIENT_TIMEOUTS) <= set(source.options())
    code = pyspark_code(QueryConfig(source))
    [options] = [ast.literal_eval(node.value) for node in ast.parse(code).body if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "OPTIONS"]
    assert options["subscribe"] == "clicks" and not set(CLIENT_TIMEOUTS) & set(options)
    assert ".option('numRows', 10_000)" in code


def test_refuses_what_is_not_a_config():
    with pytest.raises(TypeError, match="QueryConfig"):
        pyspark_code({"source": "feed"})


def test_odd_characters_in_a_feed_path_stay_a_string_literal(tmp_path):
    folder = tmp_path / NASTY_NAME
    folder.mkdir()
    (folder / "batch-0000.csv").write_text("event_time,key\n2024-01-01 00:00:00,a\n")
    for config in (
        QueryConfig(FeedSource(folder, seconds_per_file=0)),
        QueryConfig(SocketSource(folder, lines_per_second=1)),
    ):
        code = pyspark_code(config)
        compile(code, "<export>", "exec")
        tree = ast.parse(code)
        assert _assigned_constant(tree, "FEED") == str(folder.resolve())
        assert _imported_modules(tree) <= {"pyspark"} | set(sys.stdlib_module_names)
        assert "__import__" not in _calls(tree) and "touch" not in _calls(tree)
        # no string constant but FEED's holds any part of the name
        holders = [node for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str) and "PWNED" in node.value]
        assert len(holders) == 1

    # Run the feed program for real up to its SparkSession (a stub pyspark stops it there):
    # the path is a value, and nothing in it runs.
    stub = tmp_path / "stub"
    (stub / "pyspark" / "sql").mkdir(parents=True)
    (stub / "pyspark" / "__init__.py").write_text("")
    (stub / "pyspark" / "sql" / "functions.py").write_text("")
    (stub / "pyspark" / "sql" / "types.py").write_text("StringType = StructField = StructType = None\n")
    (stub / "pyspark" / "sql" / "__init__.py").write_text(
        "import sys\n"
        "class _Builder:\n"
        "    def appName(self, name):\n"
        "        print('FEED=' + ascii(str(sys._getframe(1).f_globals['FEED'])))\n"
        "        raise SystemExit(0)\n"
        "class SparkSession:\n"
        "    builder = _Builder()\n"
        "Column = DataFrame = None\n"
    )
    program = tmp_path / "export_nasty.py"
    program.write_text(pyspark_code(QueryConfig(FeedSource(folder, seconds_per_file=0))), encoding="ascii")
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=workdir,
        env={**os.environ, "PYTHONPATH": str(stub)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "FEED=" + ascii(str(folder.resolve()))
    assert not (workdir / "PWNED").exists() and not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("kind", ["generator", "rate", "rate-micro-batch", "socket"])
def test_unbounded_exports_define_a_valid_streaming_query(spark, write_feed, kind):
    """The console programs' query, up to ``writer``, analyses on a real session (nothing is started)."""
    feed = write_feed(GUIDE_BATCHES)
    source = {"generator": GeneratorSource(), "rate": RateSource(), "rate-micro-batch": RateMicroBatchSource(), "socket": SocketSource(feed)}[kind]
    namespace = console_definitions(spark, pyspark_code(QueryConfig(source, window="1 minute", slide="30 seconds", output_mode="update")))
    result = namespace["result"]
    assert result.isStreaming
    assert result.columns == ["window_start", "window_end", "key", "count"]
    assert namespace["spark"] is spark
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"

def _export_beside(config: QueryConfig, folder: Path, replay, spark=None) -> tuple[list[dict], list[dict], str]:
    """``(exported records, replay(), program stdout)``. With ``spark`` the program runs after the replay, in this process on that session
    (:func:`support.run_program`); without, in its own process while the replay runs here."""
    if spark is not None:
        expected = replay()
        stdout = run_program(spark, pyspark_code(config))
        return printed_result(stdout), expected, stdout
    process = start_export(config, folder)
    try:
        expected = replay()
    except BaseException:
        process.kill()
        process.communicate()
        raise
    exported, stdout = finish_export(process, timeout=1000)
    return exported, expected, stdout

@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            dict(window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="append"),
            id="guide-append",
        ),
        pytest.param(
            dict(window="1 minute", slide="30 seconds", watermark="1 minute", output_mode="update", state_store="rocksdb", arrival="busy"),
            id="web_clicks-update-rocksdb-busy",
        ),
    ],
)
@pytest.mark.timeout(1200)  # a JVM start and a replay each; minutes on a loaded machine
def test_exported_feed_program_prints_the_replay_result(spark, registry, write_feed, tmp_path, case, request):
    """The exported program ends with the table ``replay`` ends with, under the Live query's arrival rule: the guide's quietly, as its own
    process; web_clicks' busy (a Live query paced every 2 s: the rule, not the pace, decides), on this session."""
    from streaming.engine.run.runner import run_to_idle

    if request.node.callspec.id == "guide-append":
        feed = write_feed(GUIDE_BATCHES)
    else:  # web_clicks' first 12 batches: 600 rows, 3 of them malformed, late rows and sliding windows in every state
        feed = tmp_path / "web_clicks"
        feed.mkdir()
        for path in sorted(WEB_CLICKS.glob("*.csv"))[:12]:
            shutil.copyfile(path, feed / path.name)
    own_process = request.node.callspec.id == "guide-append"  # the program's own session and exit; two JVMs at once, one test's time
    config = QueryConfig(source=FeedSource(feed, seconds_per_file=0 if own_process else 2.0), **case)
    assert ("RocksDBStateStoreProvider" in pyspark_code(config)) == (config.state_store == "rocksdb")
    assert ("Arrival rule busy" in pyspark_code(config)) == (config.arrival == "busy")
    exported, expected, stdout = _export_beside(
        config, tmp_path, lambda: run_to_idle(registry, config.replayed("replayed")).result_records(), None if own_process else spark,
    )
    assert exported == expected
    assert expected  # something was finalized / updated
    if request.node.callspec.id == "guide-append":
        # the programming guide's example: 12:00-12:10 is final once the watermark reaches 12:11,
        # and the 12:04 donkey came too late for every window it belongs to
        assert {(r["key"], r["count"]) for r in exported if r["window_start"] == "2016-05-10 12:00:00"} == {("dog", 2), ("owl", 1), ("cat", 1)}
        assert all(r["key"] != "donkey" for r in exported)
        assert "10 input rows, 0 malformed rows left out" in stdout
    else:
        assert "600 input rows, 3 malformed rows left out" in stdout


@pytest.mark.parametrize("case", [dict(output_mode="complete", watermark=None), dict(aggregation="none", output_mode="append")], ids=["complete", "rows"])
def test_exported_feed_program_folds_a_complete_table_and_passed_through_rows_as_the_lab_does(spark, registry, write_feed, tmp_path, case):
    """The program's fold is the engine's builder (:func:`~streaming.engine.builders.fold_rows`): the whole table each batch in complete
    mode, every row added when nothing is aggregated; its table is the lab's."""
    from streaming.engine.run.runner import run_to_idle

    config = QueryConfig(source=FeedSource(write_feed(GUIDE_BATCHES), seconds_per_file=0), window="10 minutes", **case)
    exported, expected, _ = _export_beside(config, tmp_path, lambda: run_to_idle(registry, config).result_records(), spark)
    assert exported == expected
    assert len(expected) == (10 if config.aggregation == "none" else 8)  # every row; every (window, key) of the guide's feed, late ones too


@pytest.mark.timeout(1200)
def test_exported_dataset_program_reads_json_lines_with_epoch_milliseconds(spark, registry, tmp_path):
    """A user's dataset (JSON lines, epoch-ms under another name, no key column): the program ends with the runner's table."""
    from streaming.engine.query.config import ColumnMapping
    from streaming.engine.run.runner import run_to_idle

    folder = tmp_path / "kafka"
    folder.mkdir()
    for index, rows in enumerate(GUIDE_BATCHES):
        lines = [json.dumps({"ts": int(datetime.strptime(at, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp() * 1000)}) for at, _ in rows]
        (folder / f"part-{index}.jsonl").write_text("\n".join(lines) + "\n")
    source = FeedSource(folder, seconds_per_file=0, file_format="json", columns=ColumnMapping(event_time="ts", time_format="epoch_ms", key=None))
    config = QueryConfig(source, window="10 minutes", slide="5 minutes", watermark="10 minutes", output_mode="append")
    code = pyspark_code(config)
    assert _assigned_constant(ast.parse(code), "TIME_FORMAT") == "epoch_ms" and "json" in code
    exported, expected, stdout = _export_beside(config, tmp_path, lambda: run_to_idle(registry, config, timeout=300).result_records(), spark)
    assert exported == expected
    assert [(r["window_start"], r["key"], r["count"]) for r in expected] == [("2016-05-10 12:00:00", "all", 4)]
    assert "10 input rows, 0 malformed rows left out" in stdout


def test_deduplication_is_exported_before_the_aggregation(write_feed):
    from streaming.engine.query.config import ColumnMapping

    source = FeedSource(write_feed(GUIDE_BATCHES), 0, "csv", ColumnMapping(event_time="event_time", key="key", dedup_id="key"))
    code = pyspark_code(QueryConfig(source, window="10 minutes", watermark="10 minutes", output_mode="append", deduplicate=True))
    calls = _calls(ast.parse(code))
    assert "dropDuplicatesWithinWatermark" in calls
    assert code.index("events.dropDuplicatesWithinWatermark") < code.index("counts = windowed_aggregate(")
    assert _assigned_constant(ast.parse(code), "DEDUP_ID") == "key"
    plain = pyspark_code(QueryConfig(source, window="10 minutes", watermark="10 minutes", output_mode="append"))
    assert "dropDuplicatesWithinWatermark" not in _calls(ast.parse(plain))


def test_session_windows_are_exported(write_feed):
    config = QueryConfig(FeedSource(write_feed(GUIDE_BATCHES), seconds_per_file=0), session_gap="3 minutes", watermark="10 minutes", output_mode="append")
    code = pyspark_code(config)
    tree = ast.parse(code)
    assert "session_window" in _calls(tree) and "window" not in _calls(tree)
    assert _assigned_constant(tree, "SESSION_GAP") == "3 minutes"
    assert "WINDOW" not in {node.targets[0].id for node in ast.walk(tree) if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("by", ["rows:3", "arrived"])
def test_exported_program_cuts_the_batches_the_runner_cuts(spark, registry, tmp_path, by):
    """Batching by rows or by arrival time (an unparsable arrival included): the program's micro-batches and result are the runner's."""
    from streaming.engine.data.batching import Batching
    from streaming.engine.query.config import ColumnMapping
    from streaming.engine.run.runner import run_to_idle

    folder = tmp_path / "events"
    folder.mkdir()
    base = 1462881600000  # 2016-05-10 12:00:00 UTC
    # (event time offset s, arrival offset s or None, key): arrivals in the 10 s intervals 0, 0, 2, 2, 0, 5, 5, 1
    rows = [(0, 1, "a"), (300, 8, "b"), (20, 21, "a"), (40, None, "b"), (420, 3, "a"), (30, 55, "b"), (660, 52, "a"), (100, 12, "a")]
    for name, part in (("p1.jsonl", rows[:4]), ("p2.jsonl", rows[4:])):
        lines = [{"ts": base + 1000 * at, "arrived": None if arrival is None else base + 1000 * arrival, "k": key, "v": at} for at, arrival, key in part]
        (folder / name).write_text("".join(json.dumps(line) + "\n" for line in lines))
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", value="v", arrival="arrived", arrival_format="epoch_ms")
    batching = Batching("rows:3") if by == "rows:3" else Batching("arrived", "10 seconds")
    source = FeedSource(folder, 0, "json", columns, batching)
    config = QueryConfig(source, window="5 minutes", watermark="2 minutes", output_mode="update", aggregation="max")
    code = pyspark_code(config)
    assert "BATCH_ROWS = 3" in code if by == "rows:3" else "BATCH_INTERVAL_US = 10000000" in code
    replays: list = []

    def replay() -> list[dict]:
        replays.append(run_to_idle(registry, config, timeout=300))
        return replays[0].result_records()

    exported, expected, stdout = _export_beside(config, tmp_path, replay, spark)
    assert exported == [{name: value for name, value in record.items() if name != "count"} for record in expected]
    batches = [int(n) for n in replays[0].progress["num_input_rows"] if n > 0]
    assert batches == ([3, 3, 2] if by == "rows:3" else [3, 1, 2, 2])  # unparsable arrival joins the row before it (interval 2)
    assert f"from {len(batches)} files, 8 input rows" in stdout
    assert replays[0].rows_dropped_by_watermark > 0  # the batches decide what is late: equal results mean equal batches


def test_a_batching_column_name_never_becomes_code(tmp_path):
    from streaming.engine.data.batching import Batching
    from streaming.engine.query.config import ColumnMapping

    folder = tmp_path / "events"
    folder.mkdir()
    (folder / "a.jsonl").write_text(json.dumps({"ts": 0, NASTY_NAME: 0, "k": "x"}) + "\n")
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="k", arrival=NASTY_NAME, arrival_format="epoch_ms")
    source = FeedSource(folder, 0, "json", columns, Batching(NASTY_NAME, "10 seconds"), speed=2.0)
    code = pyspark_code(QueryConfig(source))
    tree = ast.parse(code)
    assert _assigned_constant(tree, "ARRIVAL") == NASTY_NAME and _assigned_constant(tree, "SPEED") == 2.0
    assert not {"__import__", "touch"} & _calls(tree)



def test_programs_define_the_engines_builders_by_their_own_text_and_spell_out_no_reading_of_their_own(write_feed):
    """What runs and what is shown cannot drift: every program defines the engine's builders it needs (:mod:`streaming.engine.builders`:
    handing files to Spark and reading them, reading a time, a key, a Kafka record; making the generator's rows) as their very source text,
    with the constants they read, and spells out none of that itself."""
    import inspect
    from dataclasses import replace

    from streaming.engine import builders
    from streaming.engine.data.batching import Batching
    from streaming.engine.join.join import JoinConfig, JoinSide, LiveSide, TopicSide
    from streaming.engine.sources.ads import AdStreams
    from streaming.engine.sources.kafka import KafkaSource
    from streaming.export import join_code

    feed = write_feed(GUIDE_BATCHES)
    topic = KafkaSource("127.0.0.1:9092", "clicks", (("event_time", "string"), ("key", "string")), columns=ColumnMapping(event_time="event_time", key="key"))
    columns, records = builders.COLUMN_BUILDERS, builders.RECORD_BUILDERS
    needs = {
        "feed": (*columns, *builders.FILE_BUILDERS, *builders.SINK_BUILDERS), "socket": columns, "kafka": (*columns, *records), "generator": builders.GENERATOR_BUILDERS,
        "rate": (builders.key_column,), "rate-micro-batch": (builders.key_column,),
    }
    programs = [
        (f"{source.kind} {index}", pyspark_code(QueryConfig(source)), (*needs[source.kind], *builders.QUERY_BUILDERS))
        for index, source in enumerate([*_sources(feed), topic])
    ]
    files = JoinConfig(JoinSide(feed, "event_time", side="left"), JoinSide(feed, "event_time", side="right"), on=("key",))
    topics = JoinConfig(*(TopicSide(replace(topic, end_offsets=((0, 10),)), "1 minute", side=side) for side in ("left", "right")), on=("key",))
    streams = AdStreams(impressions_per_second=40, click_through=0.5, ads=5, seed=11, late_share=0.2)
    ads = JoinConfig(LiveSide(streams, "impressions", "10 seconds"), LiveSide(streams, "clicks", "5 seconds", side="right"), on=("impression_id",))
    programs += [
        ("join of files", join_code(files), (*columns, *builders.FILE_BUILDERS)), ("join of topics", join_code(topics), (*columns, *records)),
        ("join of the ads pair", join_code(ads), tuple(dict.fromkeys((*columns, *builders.AD_BUILDERS)))),
    ]
    from streaming.engine.sql import SqlQuery, SqlView
    from streaming.engine.sql.views import TableFiles
    from streaming.export import sql_code

    sql = SqlQuery(
        "SELECT window(event_time, '1 minute') AS w, t.key, count(*) AS n FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 1 MINUTE AS e "
        "JOIN keys t ON e.key = t.key GROUP BY 1, 2", (SqlView("events", FeedSource(feed, seconds_per_file=0)), SqlView("keys", TableFiles(feed), static=True)),
    )
    programs.append(("sql over files", sql_code(sql, ("w", "key")), (builders.quoted, builders.column_kind, builders.parse_time, *builders.VIEW_BUILDERS)))
    over_topic = SqlQuery(
        "SELECT window(event_time, '1 minute') AS w, key, count(*) AS n FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 1 MINUTE GROUP BY 1, 2",
        (SqlView("events", replace(topic, end_offsets=((0, 10),))),),
    )
    programs.append((
        "sql over a topic", sql_code(over_topic, ("w", "key")),
        tuple(dict.fromkeys((builders.quoted, builders.column_kind, builders.parse_time, *builders.VIEW_BUILDERS, *builders.TOPIC_VIEW_BUILDERS))),
    ))
    cut = FeedSource(feed, 0, "csv", ColumnMapping(event_time="event_time", key="key"), Batching("rows:2"))
    programs.append(("dataset cut by rows", pyspark_code(QueryConfig(cut)), (*needs["feed"], *builders.QUERY_BUILDERS, *builders.BATCH_BUILDERS)))
    over_cut = SqlQuery("SELECT * FROM STREAM(events)", (SqlView("events", replace(cut, batching=Batching("event_time", "1 minute"))),))
    programs.append((
        "sql over a dataset cut by arrival", sql_code(over_cut, ()),
        (builders.quoted, builders.column_kind, builders.parse_time, *builders.VIEW_BUILDERS, *builders.BATCH_BUILDERS),
    ))
    assert len(programs) == 15
    texts = {function.__name__: inspect.getsource(function).rstrip("\n") for function in builders.BUILDERS}
    for name, code, expected in programs:
        tree = ast.parse(code)
        defined = {node.name: ast.get_source_segment(code, node) for node in tree.body if isinstance(node, ast.FunctionDef) and node.name in texts}
        assert defined == {function.__name__: texts[function.__name__] for function in expected}, name
        constants = {constant for function in expected for constant in builders.CONSTANTS.get(function, ())}
        assigned = {
            target.id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name) and target.id in constants
        }
        assert {constant: assigned.get(constant) for constant in constants} == {constant: getattr(builders, constant) for constant in constants}, name
        outside = "\n".join(ast.get_source_segment(code, node) or "" for node in tree.body if not (isinstance(node, ast.FunctionDef) and node.name in texts))
        spelled = {
            "try_to_timestamp", "nullif", "timestamp_millis", "from_json", "from_csv", "xxhash64", "pmod", "'offset') <", "observe", "groupBy", "try_cast",
            "utime", "copyfile", "writerow", "read_table", "row_number", "dense_rank",
            *(("readStream", "csv") if name in ("sql over files", "join of files") else ()), *(("strftime",) if name.startswith("sql over") else ()),
        } & set(_words(outside))
        assert not spelled, (name, spelled)
        called = (*(() if name.startswith("sql over") else (builders.parse_time,)), builders.decode_records, builders.counted_input, builders.windowed_aggregate, builders.view_batch,
                  builders.topic_view)
        assert all(f"{function.__name__}(" in outside for function in expected if function in called), name
    assert all("kafka" not in code.lower() for name, code, _ in programs if name in ("join of files", "join of the ads pair"))


def _words(code: str) -> list[str]:
    """The names ``code`` calls or reads as attributes, and its comparisons of ``offset``: what a program spells out for itself."""
    tree = ast.parse(code)
    words = [node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)]
    words += [node.id for node in ast.walk(tree) if isinstance(node, ast.Name)]
    return words + (["'offset') <"] if "'offset') <" in code else [])


def test_show_code_for_sql_writes_every_kind_of_view_and_names_a_second_view_without_an_end(write_feed) -> None:
    from streaming.engine.data.batching import Batching
    from streaming.engine.sources.kafka import KafkaSource
    from streaming.engine.sql import SqlQuery, SqlView
    from streaming.export import sql_code

    feed = write_feed(GUIDE_BATCHES)
    generator = SqlQuery("SELECT * FROM STREAM(events)", (SqlView("events", GeneratorSource(events_per_second=5)),))
    code = sql_code(generator, ())
    assert "EVENTS_PER_SECOND = 5" in code and "writer.start()" in code and "RESULT_PREFIX + json" not in code  # to the console until Ctrl-C
    endless = SqlQuery("SELECT * FROM STREAM(a) JOIN STREAM(b) USING (key)", (SqlView("a", GeneratorSource()), SqlView("b", RateSource())))
    with pytest.raises(ConfigError, match="view b"):
        sql_code(endless, ())
    rows = SqlQuery("SELECT * FROM STREAM(events)", (SqlView("events", FeedSource(feed, seconds_per_file=0, batching=Batching("rows:2"))),))
    assert "'cut': {'rows_per_batch': 2}" in sql_code(rows, ())  # written: cut as the lab cuts it
    topic = KafkaSource("127.0.0.1:9092", "clicks", (("event_time", "string"), ("key", "string")), columns=ColumnMapping(event_time="event_time", key="key"))
    static_topic = SqlQuery("SELECT * FROM STREAM(events) JOIN keys USING (key)", (SqlView("events", FeedSource(feed, seconds_per_file=0)), SqlView("keys", topic, static=True)))
    assert "'static': True, 'kind': 'topic'" in sql_code(static_topic, ()) and "spark.read.format('kafka')" in sql_code(static_topic, ())


@pytest.mark.parametrize("kind", ["generator", "rate", "rate-micro-batch"])
def test_show_codes_sql_program_over_a_source_without_an_end_defines_the_labs_view_and_query(spark, write_feed, kind) -> None:
    """The program's view over the generator or a rate source has the columns the lab's view has, and its query analyses to the lab's
    columns, joined to a view of files (nothing is started)."""
    from streaming.engine.sql import SqlQuery, SqlView
    from streaming.engine.sql.checker import SqlChecker
    from streaming.export import sql_code

    source = {"generator": GeneratorSource(events_per_second=5), "rate": RateSource(), "rate-micro-batch": RateMicroBatchSource()}[kind]
    query = SqlQuery(
        "SELECT window(e.event_time, '1 minute') AS w, e.key, count(*) AS n FROM STREAM(events) WATERMARK event_time DELAY OF INTERVAL 30 SECONDS AS e "
        "JOIN words USING (key) GROUP BY 1, 2",
        (SqlView("events", source), SqlView("words", FeedSource(write_feed(GUIDE_BATCHES), seconds_per_file=0), static=True)),
    )
    facts = query.check(spark)
    namespace = console_definitions(spark, sql_code(query, facts.grouping))
    with SqlChecker(spark, query.views) as checker:
        assert [(item.name, item.dataType.simpleString()) for item in namespace["view_frame"]({"name": "events", "kind": "unbounded"}).schema.fields] == checker.columns["events"]
    assert namespace["result"].isStreaming and tuple(namespace["result"].columns) == facts.columns == ("w", "key", "n")


def test_show_code_names_a_source_kind_it_does_not_write_yet(write_feed, monkeypatch) -> None:
    """A new source kind is its module and one line of SOURCE_KINDS; until export.py has its entry, Show code says so, naming the source."""
    from streaming import export

    monkeypatch.delitem(export._CODE, "socket")
    with pytest.raises(ConfigError, match=r"source: .* is a kind of source \(socket\) Show code does not write yet"):
        pyspark_code(QueryConfig(SocketSource(write_feed(GUIDE_BATCHES), lines_per_second=5)))
