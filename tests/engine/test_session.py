"""The session's settings and its background start, without a JVM: the starter is driven with stand-ins."""

from __future__ import annotations

import gc
import os
import re
import threading
from pathlib import Path

import pytest
from support import wait_for

from streaming.engine.runtime.session import (
    CHECKPOINT_FILES,
    DEFAULT_JAVA_OPTIONS,
    DRIVER_JAVA_OPTIONS,
    JAVA_OPTIONS_VARIABLE,
    LOG4J2_CONFIG,
    SessionStarter,
    driver_classpath,
    server_settings,
    session_settings,
)


def test_local_settings_bind_to_loopback_quiet_the_stop_and_cap_the_ui_history():
    settings = session_settings({}, cores=2)
    assert (settings["spark.master"], settings["spark.driver.host"], settings["spark.sql.shuffle.partitions"]) == ("local[*]", "127.0.0.1", "2")
    options = settings["spark.driver.extraJavaOptions"].split()
    assert options[: len(DRIVER_JAVA_OPTIONS)] == DRIVER_JAVA_OPTIONS
    assert f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}" in options and LOG4J2_CONFIG.is_file()
    assert int(settings["spark.sql.ui.retainedExecutions"]) <= 100 and int(settings["spark.ui.retainedJobs"]) <= 200
    assert settings["spark.sql.streaming.stateStore.commitValidation.enabled"] == "false"  # the fold reads every partition
    assert int(settings["spark.sql.limit.initialNumPartitions"]) >= 1024  # ... in one job: a batch's limit reads all its partitions at once


def test_further_java_options_come_after_the_labs_own_and_replace_its_default_ones():
    options = session_settings({JAVA_OPTIONS_VARIABLE: "-XX:TieredStopAtLevel=1 '-Dname=a b'"}, cores=2)["spark.driver.extraJavaOptions"]
    assert options.startswith(" ".join(DRIVER_JAVA_OPTIONS)) and options.endswith(" -XX:TieredStopAtLevel=1 '-Dname=a b'")
    assert DEFAULT_JAVA_OPTIONS not in options
    assert session_settings({}, cores=2)["spark.driver.extraJavaOptions"].endswith(f" {DEFAULT_JAVA_OPTIONS}")
    assert DEFAULT_JAVA_OPTIONS not in session_settings({JAVA_OPTIONS_VARIABLE: ""}, cores=2)["spark.driver.extraJavaOptions"]


def test_the_connector_is_on_a_local_drivers_class_path_and_handed_to_a_clusters_executors(tmp_path: Path):
    jars = [tmp_path / "kafka-clients.jar", tmp_path / "spark-sql-kafka.jar"]
    for jar in jars:
        jar.write_bytes(b"jar")
    cluster = "spark://127.0.0.1:7077"
    for local in (server_settings({}, jars), server_settings({"SPARK_MASTER": "local[2]"}, jars), server_settings({"SPARK_MASTER": cluster}, jars, master="local")):
        assert local["spark.driver.extraClassPath"] == os.pathsep.join(map(str, jars)) and "spark.jars" not in local
    for other in (server_settings({"SPARK_MASTER": cluster}, jars), server_settings({}, jars, master=cluster), server_settings({}, jars, master="local-cluster[2,1,1024]")):
        assert other["spark.jars"] == ",".join(map(str, jars)) and "spark.driver.extraClassPath" not in other
    assert not {"spark.jars", "spark.driver.extraClassPath"} & set(server_settings({}, []))
    assert driver_classpath({}, jars) == jars and driver_classpath({"SPARK_MASTER": cluster}, jars) == []


def test_connect_settings_leave_master_and_driver_to_the_server():
    settings = session_settings({"SPARK_REMOTE": "sc://127.0.0.1:15002"}, cores=4)
    assert not {"spark.master", "spark.driver.host", "spark.driver.extraJavaOptions"} & set(settings)


def test_a_classic_session_schedules_fair_and_each_owner_has_a_pool_of_their_own_named_by_a_digest():
    from streaming.engine.runtime.pools import POOL_PROPERTY, SERVER_POOL, owner_pool, pool_name

    assert session_settings({}, cores=2)["spark.scheduler.mode"] == "FAIR"
    assert "spark.scheduler.mode" not in session_settings({"SPARK_REMOTE": "sc://127.0.0.1:15002"}, cores=2)  # not the client's to set
    owners = ["user:ann@example.com", "user:bob@example.com", "workspace:" + "a" * 32, "user:\ud800"]
    names = [pool_name(owner) for owner in owners]
    assert len(set(names)) == len(owners) and pool_name(None) == SERVER_POOL not in names and "default" not in names
    assert names == [pool_name(owner) for owner in owners] and all(re.fullmatch(r"owner-[0-9a-f]{16}", name) for name in names)

    class Context:  # a SparkContext's local properties of one thread
        def __init__(self) -> None:
            self.properties: dict[str, str] = {}

        def getLocalProperty(self, key: str) -> str | None:
            return self.properties.get(key)

        def setLocalProperty(self, key: str, value: str | None) -> None:
            if value is None:
                self.properties.pop(key, None)
            else:
                self.properties[key] = value

    class Session:
        sparkContext = Context()

    spark = Session()
    with owner_pool(spark, owners[0]):
        assert spark.sparkContext.properties == {POOL_PROPERTY: names[0]}
    assert spark.sparkContext.properties == {}  # none before: none after
    spark.sparkContext.properties[POOL_PROPERTY] = "earlier"
    with pytest.raises(RuntimeError), owner_pool(spark, None):
        assert spark.sparkContext.properties == {POOL_PROPERTY: SERVER_POOL}
        raise RuntimeError("a start that failed")
    assert spark.sparkContext.properties == {POOL_PROPERTY: "earlier"}


def test_starter_is_ready_once_the_session_exists_and_warms_it_up_after():
    created, release, warming, warmed = threading.Event(), threading.Event(), threading.Event(), threading.Event()

    def create() -> str:
        created.set()
        release.wait(10)
        return "session"

    def warm(session: object) -> None:
        assert session == "session"
        warming.set()
        warmed.wait(10)

    gc.unfreeze()
    starter = SessionStarter(create, warm=warm)
    assert starter.status == "starting" and starter.seconds is None
    starter.start().start()  # idempotent: one thread
    assert created.wait(10) and starter.status == "starting" and starter.phase == "launching the JVM and the session"
    with pytest.raises(TimeoutError):
        starter.wait(0.05)
    release.set()
    assert starter.wait(10) == "session" and warming.wait(10)  # Start is enabled while the warm-up runs
    assert starter.status == "ready" and starter.warming and starter.seconds is not None and starter.error is None
    assert starter.phase == "warming up the planner with a first query" and list(starter.phases) == ["session"]
    warmed.set()
    wait_for(lambda: not starter.warming, "the warm-up did not end", 10)
    assert starter.phase == "ready" and list(starter.phases) == ["session", "warm-up"]  # the sidebar says what the start spent
    assert gc.get_freeze_count() > 0, "a warmed-up starter freezes the heap, so full collections skip what the process keeps"


def test_a_failed_start_is_reported_with_its_reason_and_a_failed_warm_up_is_not():
    def refuse() -> str:
        raise OSError("Java gateway process exited before sending its port number")

    failed = SessionStarter(refuse, warm=None).start()
    with pytest.raises(RuntimeError, match="could not be created: OSError: Java gateway process exited"):
        failed.wait(10)
    assert failed.status == "failed" and "Java gateway" in (failed.error or "")

    def broken_warm_up(session: object) -> None:
        raise RuntimeError("warm-up query failed")

    started = SessionStarter(lambda: "session", warm=broken_warm_up)
    assert started.wait(10) == "session" and started.status == "ready"


def test_a_starter_begun_early_is_handed_over_once_and_importing_its_module_leaves_pandas_unloaded():
    """A server begins its session before it imports the app (start_early); the first page takes it over, a page after a loss makes its own."""
    import subprocess
    import sys

    from streaming.engine.runtime.session import start_early, take_early

    created = threading.Event()
    starter = start_early(SessionStarter(lambda: created.set() or "session", warm=None))
    wait_for(created.is_set, "the early starter never created its session", timeout=10)  # started at once, nobody asking yet
    assert take_early() is starter and take_early() is None
    probe = "import sys, streaming.engine.runtime.session; print(sorted({'pandas', 'plotly', 'streamlit'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_warm_up_runs_the_default_query_and_leaves_nothing_behind(spark, tmp_path):
    from streaming.engine.run.query import warm_up

    before = {query.id for query in spark.streams.active}
    warm_up(spark, root=tmp_path)
    assert {query.id for query in spark.streams.active} == before
    assert not any(tmp_path.iterdir())
    assert spark.conf.get("spark.sql.streaming.checkpointFileManagerClass") == CHECKPOINT_FILES  # the class exists: the query above wrote through it


def test_a_live_session_is_alive_and_a_stopped_context_or_exited_jvm_is_not(spark) -> None:
    from types import SimpleNamespace

    from streaming.engine.runtime.session import session_alive

    assert session_alive(spark) is True
    exited = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(proc=SimpleNamespace(poll=lambda: -9))))
    assert session_alive(exited) is False  # the JVM process has exited
    stopped = SimpleNamespace(sparkContext=SimpleNamespace(_gateway=None, _jsc=None))
    assert session_alive(stopped) is False  # spark.stop() leaves no Java context


def test_abandoning_runs_reports_what_they_reached_and_deletes_their_folders(registry) -> None:
    from pathlib import Path

    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.registry import QueryRegistry

    own = QueryRegistry(registry.spark)
    run = own.start(QueryConfig(FeedSource(Path("sample_feeds/guide_words"), seconds_per_file=0), window="10 minutes", watermark="10 minutes"), "abandoned_run")
    try:
        run.await_idle(120)
        [lost] = own.abandon()
        assert (lost.name, lost.stopped, lost.result_rows, lost.source_kind) == ("abandoned_run", False, len(run.table), "feed") and lost.batches > 0
        assert lost.watermark is not None and str(lost).startswith(f"abandoned_run (running, {lost.batches} batches, watermark ")
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", lost.watermark), lost.watermark  # as the banner writes a time
        assert own.runs() == [] and not run.workdir.exists()
    finally:
        run.query.stop()  # the session is alive here: abandon leaves the query to the JVM that died
        registry.spark.streams.removeListener(own.listener)


def test_the_registry_refuses_a_query_past_its_limit_and_races_start_one(registry) -> None:
    """Four tabs starting the same name at once start it once; a server at its limit refuses more, naming it."""
    import threading
    from pathlib import Path

    from streaming.engine.errors import ConfigError
    from streaming.engine.query.config import FeedSource, QueryConfig
    from streaming.engine.run.registry import DuplicateQueryError, QueryRegistry, max_queries

    assert max_queries({}) == 8 and max_queries({"STREAMING_LAB_MAX_QUERIES": "3"}) == 3
    with pytest.raises(ConfigError) as caught:
        max_queries({"STREAMING_LAB_MAX_QUERIES": "many"})
    assert caught.value.field == "STREAMING_LAB_MAX_QUERIES"
    own = QueryRegistry(registry.spark, max_active=2)
    config = QueryConfig(FeedSource(Path("sample_feeds/guide_words"), seconds_per_file=0), window="10 minutes")  # stepped: stays active
    outcomes: list[object] = []
    gate = threading.Barrier(4)

    def tab() -> None:
        gate.wait()
        try:
            outcomes.append(own.start(config, "shared_name"))
        except DuplicateQueryError as err:
            outcomes.append(err)

    try:
        tabs = [threading.Thread(target=tab) for _ in range(4)]
        for thread in tabs:
            thread.start()
        for thread in tabs:
            thread.join(120)
        assert sum(isinstance(outcome, DuplicateQueryError) for outcome in outcomes) == 3 and len(outcomes) == 4
        assert [query.name for query in registry.spark.streams.active].count("shared_name") == 1  # no duplicate, no orphan
        own.start(config, "second")
        with pytest.raises(ConfigError) as caught:
            own.start(config, "third")
        assert (caught.value.field, caught.value.value) == ("queries", 2) and "STREAMING_LAB_MAX_QUERIES=2" in str(caught.value)
        own.stop("second")
        own.start(config, "third")  # a stopped query frees its place
    finally:
        for run in own.runs():
            own.remove(run.name)
        registry.spark.streams.removeListener(own.listener)

