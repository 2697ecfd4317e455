"""Stream-stream joins (:mod:`streaming.engine.join.join`, ``python -m streaming join``): held to plain PySpark on generated ad feeds
with late rows on both sides, every join type under both watermark policies; Spark's refusals made before Spark sees the query."""

from __future__ import annotations

import json
import os
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from support import printed_result, run_program

from streaming.adfeeds import AdFeedSpec, generate_ads, write_ad_feeds
from streaming.cli import main
from streaming.engine.errors import ConfigError
from streaming.engine.join.join import JOIN_TYPES, POLICY_CONF, JoinConfig, JoinOutcome, JoinSide, join_frame, run_join, side_watermarks
from streaming.engine.run.query import start_with

SPEC = AdFeedSpec(
    start=datetime(2024, 3, 4, 12, 0, 0), batches=8, batch_interval_seconds=10, impressions_per_batch=6, ads=3, click_through=0.6,
    mean_click_delay_seconds=12, max_click_delay_seconds=60, max_lag_seconds=4, late_share=0.15, late_delay_seconds=45, seed=11,
)
LEFT_WATERMARK, RIGHT_WATERMARK = "20 seconds", "5 seconds"
WITHIN = ("-5 seconds", "30 seconds")


@pytest.fixture(scope="module")
def ads(tmp_path_factory) -> tuple[Path, Path]:
    """The impressions and clicks of ``SPEC``; each side's files are modified in name order, the order plain Spark's file source reads them in."""
    root = tmp_path_factory.mktemp("ads")
    for paths in write_ad_feeds(SPEC, root / "impressions", root / "clicks"):
        for index, path in enumerate(paths):
            os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    return root / "impressions", root / "clicks"


def config_of(ads: tuple[Path, Path], join_type: str = "left_outer", policy: str = "min", **changes) -> JoinConfig:
    impressions, clicks = ads
    settings = {
        "left_watermark": LEFT_WATERMARK, "right_watermark": RIGHT_WATERMARK, "within": WITHIN, "on": ("impression_id",),
    } | changes
    return JoinConfig(
        JoinSide(impressions, "impression_time", settings["left_watermark"], side="left"),
        JoinSide(clicks, "click_time", settings["right_watermark"], side="right"),
        on=settings["on"], within=settings["within"], join_type=join_type, policy=policy,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def joined(spark, registry, ads, tmp_path_factory):
    """``joined(join_type, policy, **changes)``: the engine's replay of that join of the ad feeds, its checkpoint kept; each join once a
    module, as several tests read the same one (the matrix, the policies, the CLI, Show code, the model)."""
    outcomes: dict[tuple, JoinOutcome] = {}

    def join(join_type: str = "left_outer", policy: str = "min", **changes) -> JoinOutcome:
        key = (join_type, policy, tuple(sorted(changes.items())))
        if key not in outcomes:
            keep = tmp_path_factory.mktemp(f"{join_type}-{policy}") / "join"
            outcomes[key] = run_join(spark, config_of(ads, join_type, policy, **changes), registry.listener, keep=keep, timeout=300)
        return outcomes[key]

    return join


def plain_join(spark, ads: tuple[Path, Path], join_type: str, policy: str, checkpoint: Path) -> tuple[pd.DataFrame, list[dict]]:
    """The same join written with PySpark alone: ``(rows, progress)``."""
    from pyspark.sql import functions as F

    def side(folder: Path, time: str, delay: str):
        schema = spark.read.csv(str(folder), header=True).schema
        frame = spark.readStream.schema(schema).option("header", True).option("maxFilesPerTrigger", 1).csv(str(folder))
        return frame.withColumn(time, F.to_timestamp(time)).withWatermark(time, delay)

    impressions = side(ads[0], "impression_time", LEFT_WATERMARK).alias("i")
    clicks = side(ads[1], "click_time", RIGHT_WATERMARK).alias("c")
    condition = F.expr(
        "i.impression_id = c.impression_id AND c.click_time >= i.impression_time - INTERVAL 5 SECONDS "
        "AND c.click_time <= i.impression_time + INTERVAL 30 SECONDS"
    )
    key = {"right_outer": "c.impression_id", "full_outer": "coalesce(i.impression_id, c.impression_id)"}.get(join_type, "i.impression_id")
    columns = [F.expr(key).alias("impression_id"), "i.ad_id", "i.impression_time", "i.campaign", *([] if join_type == "left_semi" else ["c.click_time"])]
    name = f"plain_{uuid.uuid4().hex[:8]}"
    writer = (
        impressions.join(clicks, condition, join_type).select(*columns).writeStream.format("memory").queryName(name)
        .outputMode("append").option("checkpointLocation", str(checkpoint)).trigger(availableNow=True)
    )
    query = start_with(spark, writer, {POLICY_CONF: policy})  # the setting for this query only, under the lock the engine's starts take
    try:
        assert query.awaitTermination(300), "the plain join did not end"
        return spark.table(name).toPandas(), list(query.recentProgress)
    finally:
        query.stop()
        spark.catalog.dropTempView(name)


def rows_of(frame: pd.DataFrame) -> list[tuple]:
    return sorted(tuple(None if pd.isna(value) else str(value) for value in row) for row in frame.itertuples(index=False))


def test_the_generated_feeds_have_late_rows_on_both_sides() -> None:
    impressions, clicks = generate_ads(SPEC)
    assert sum(impression.late for impression in impressions) >= 3
    assert sum(click.late for click in clicks) >= 2
    assert any(click.batch < int(click.impression_id[4:8]) for click in clicks)  # a click that arrives before its impression


@pytest.mark.parametrize(
    ("join_type", "policy"), [*((join_type, "min") for join_type in JOIN_TYPES), ("full_outer", "max")],  # the policy is handed to Spark alike
)
def test_every_join_equals_plain_pyspark(spark, joined, ads, tmp_path: Path, join_type: str, policy: str) -> None:
    """Every join type under the default policy; the policy is Spark's setting, handed over the same way for every type, so two types under max
    (the NULL rows of an outer join wait for the global watermark, which max moves)."""
    with ThreadPoolExecutor(max_workers=1) as pool:  # two independent queries: one runs while the other waits on its driver
        plain = pool.submit(plain_join, spark, ads, join_type, policy, tmp_path / "plain")
        outcome = joined(join_type, policy)
        expected, progress = plain.result(timeout=300)
    assert list(outcome.result.columns) == list(expected.columns)
    assert rows_of(outcome.result) == rows_of(expected)
    assert len(outcome.summaries) == len(progress)
    assert outcome.rows_dropped_by_watermark == sum(op["numRowsDroppedByWatermark"] for batch in progress for op in batch["stateOperators"])
    assert outcome.final_watermark == pd.Timestamp(progress[-1]["eventTime"]["watermark"]).tz_convert(None)
    # what each join type shows on these feeds
    result = outcome.result
    assert len(result) > 0
    if join_type in ("left_outer", "full_outer"):
        assert result["click_time"].isna().any(), "an impression never clicked gets its NULL row once the clicks' watermark passes its range"
    if join_type in ("right_outer", "full_outer"):
        assert result["impression_time"].isna().any(), "a click whose impression was dropped as late gets its NULL row"
    if join_type == "inner":
        assert result.notna().all().all()


def test_policy_max_follows_the_faster_side_and_drops_more(joined) -> None:
    slow, fast = joined("inner", "min"), joined("inner", "max")
    assert fast.final_watermark > slow.final_watermark
    assert fast.rows_dropped_by_watermark > slow.rows_dropped_by_watermark
    marks = side_watermarks(slow.summaries, slow.config).dropna()
    last = marks.iloc[-1]
    assert last["left_watermark"] == last["left_max_event_time"] - pd.Timedelta(LEFT_WATERMARK)
    assert slow.final_watermark == min(last["left_watermark"], last["right_watermark"])  # min: the slower side's
    assert fast.final_watermark == max(last["left_watermark"], last["right_watermark"])
    assert slow.operators() == [{"name": "symmetricHashJoin", "state_rows": slow.summaries[-1]["state_rows_total"], "rows_dropped_by_watermark": slow.rows_dropped_by_watermark}]


@pytest.mark.parametrize(
    ("join_type", "changes", "field"),
    [
        ("left_outer", {"right_watermark": None}, "right.watermark"),
        ("left_semi", {"right_watermark": None}, "right.watermark"),
        ("right_outer", {"left_watermark": None}, "left.watermark"),
        ("full_outer", {"left_watermark": None, "right_watermark": None}, "left.watermark or right.watermark"),
        ("left_outer", {"within": None}, "within"),
        ("inner", {"within": ("30 seconds", "-5 seconds")}, "within"),
        ("inner", {"within": ("soon", "1 hour")}, "within"),
        ("inner", {"on": ()}, "on"),
        ("inner", {"on": ("click_time",)}, "on"),
        ("inner", {"left_watermark": "-1 minute"}, "left.watermark"),
    ],
)
def test_refusals_name_the_field(ads, join_type: str, changes: dict, field: str) -> None:
    with pytest.raises(ConfigError) as refused:
        config_of(ads, join_type, **changes)
    assert refused.value.field == field


def test_only_append_mode_and_the_two_policies(ads) -> None:
    accepted = config_of(ads)
    with pytest.raises(ConfigError, match="append"):
        JoinConfig(accepted.left, accepted.right, accepted.on, accepted.within, "inner", "min", output_mode="update")
    with pytest.raises(ConfigError) as refused:
        JoinConfig(accepted.left, accepted.right, accepted.on, accepted.within, "inner", "avg")  # type: ignore[arg-type]
    assert refused.value.field == "policy"


def test_what_is_refused_is_what_spark_refuses(spark, ads, tmp_path: Path) -> None:
    """Every join type with each pair of watermarks (the range given): Spark starts exactly the queries the configuration accepts."""
    from pyspark.errors import AnalysisException

    agreed = []
    for join_type in ("left_outer", "right_outer", "full_outer", "left_semi"):
        for left, right in ((None, None), (LEFT_WATERMARK, None), (None, RIGHT_WATERMARK)):
            try:
                config_of(ads, join_type, left_watermark=left, right_watermark=right)
                ours = True
            except ConfigError:
                ours = False
            config = config_of(ads, "inner", left_watermark=left, right_watermark=right)
            object.__setattr__(config, "join_type", join_type)  # past our check, to ask Spark
            frame, _ = join_frame(spark, config, tmp_path / f"{join_type}-{left}-{right}")
            try:
                query = frame.writeStream.format("noop").option("checkpointLocation", str(tmp_path / f"cp-{join_type}-{left}-{right}")).start()
            except AnalysisException:
                spark_accepts = False
            else:
                query.stop()
                spark_accepts = True
            agreed.append((join_type, left, right, ours, spark_accepts))
    assert [case for case in agreed if case[3] != case[4]] == []
    assert sum(case[3] for case in agreed) == 5  # left outer, right outer, semi: one each; full outer: either side


def test_a_name_on_both_sides_that_is_not_a_key_is_refused(spark, registry, tmp_path: Path) -> None:
    for side, header in (("left", "id,time,note"), ("right", "id,time2,note")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "batch-0000.csv").write_text(f"{header}\na,2024-01-01 00:00:00,x\n")
    config = JoinConfig(JoinSide(tmp_path / "left", "time", side="left"), JoinSide(tmp_path / "right", "time2", side="right"), on=("id",))
    with pytest.raises(ConfigError) as refused:
        run_join(spark, config, registry.listener, root=tmp_path)
    assert (refused.value.field, refused.value.value) == ("on", "note")


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--type", "left_outer", "--within", "0s,30s"], "--right-watermark"),
        (["--within", "0s"], "--within"),
        (["--within", "0s,30s", "--left-watermark", "later"], "--left-watermark"),
    ],
)
def test_cli_refusals_name_the_flag(ads, capsys: pytest.CaptureFixture[str], args: list[str], flag: str) -> None:
    impressions, clicks = ads
    assert main(["join", str(impressions), str(clicks), "--left-time", "impression_time", "--right-time", "click_time", "--on", "impression_id", *args]) == 2
    assert capsys.readouterr().err.startswith(f"error: {flag}: ")


def test_cli_join_json_equals_the_engine(joined, ads, tmp_path: Path, cli) -> None:
    impressions, clicks = ads
    out = tmp_path / "join.json"
    done = cli(
        "join", str(impressions), str(clicks), "--left-time", "impression_time", "--right-time", "click_time", "--on", "impression_id",
        "--within", ",".join(WITHIN), "--type", "full_outer", "--left-watermark", LEFT_WATERMARK, "--right-watermark", RIGHT_WATERMARK,
        "--policy", "max", "--json", str(out),
    )
    in_process = joined("full_outer", "max")
    assert done.returncode == 0, done.stderr[-3000:]
    written = json.loads(out.read_text())
    assert written == json.loads(json.dumps(in_process.to_json()))
    assert set(written) >= {"result", "rows_dropped_by_watermark", "final_watermark", "batches", "operators"}
    assert set(written["result"][0]) == {"impression_id", "ad_id", "impression_time", "campaign", "click_time"}
    assert any(row["click_time"] is None for row in written["result"]) and any(row["impression_time"] is None for row in written["result"])
    assert len(written["batches"]) == len(in_process.summaries) >= SPEC.batches
    assert written["operators"][0]["name"] == "symmetricHashJoin"
    assert f"rows_dropped_by_watermark={written['rows_dropped_by_watermark']}" in done.stdout


@pytest.fixture(scope="module")
def kept_left_outer(joined):
    """The left outer join of the ad feeds, its checkpoint kept."""
    return joined("left_outer", "min")


def test_the_rows_waiting_leave_the_state_when_the_view_says(spark, kept_left_outer) -> None:
    """The waiting rows are the State Data Source's; each leaves the state in the batch the view names, a NULL row emitted there for an unmatched one."""
    from streaming.analysis.join import join_timeline, waiting_rows
    from streaming.engine.join.join import join_state

    outcome = kept_left_outer
    timeline = join_timeline(outcome)
    batch = 3
    state = join_state(spark, outcome, "left", batch)
    waiting = waiting_rows(outcome.config, outcome.with_batches(), timeline, "left", state, batch)
    assert len(waiting) == len(state) > 0
    from streaming.analysis.join_model import model_join
    from streaming.engine.join.join import side_rows

    left, right = (side_rows(spark, side) for side in outcome.config.sides)
    model = model_join(left, right, "impression_time", "click_time", ("impression_id",), outcome.config.bounds_ms, "left_outer", (20_000, 5_000))
    assert model.side_state_rows[batch] == (len(state), len(join_state(spark, outcome, "right", batch)))  # each side's, as the State Data Source reads it
    assert sorted(waiting["impression_id"]) == sorted(state["impression_id"])
    assert (waiting["matchable_until"] == waiting["impression_time"] + pd.Timedelta("30 seconds")).all()
    leaving = waiting.dropna(subset=["leaves_state"])
    assert len(leaving) > 0
    for leaves, group in leaving.groupby("leaves_state"):
        before = set(join_state(spark, outcome, "left", int(leaves) - 1)["impression_id"])
        after = set(join_state(spark, outcome, "left", int(leaves))["impression_id"])
        assert set(group["impression_id"]) <= before and not set(group["impression_id"]) & after
        emitted = outcome.emitted_by(int(leaves))
        nulls = set(emitted.loc[emitted["click_time"].isna(), "impression_id"])
        never = group[group["null_row"] == f"batch {leaves}"]
        assert set(never["impression_id"]) <= nulls and not (set(group["impression_id"]) - set(never["impression_id"])) & nulls
    assert waiting.loc[waiting["matched"], "null_row"].str.startswith("none: matched in batch ").all()
    assert (waiting["null_row"].str.startswith("batch ")).any() and (~waiting["matched"] & waiting["null_row"].str.startswith("none")).any()


def test_each_rows_story_agrees_with_spark(spark, kept_left_outer) -> None:
    """Over every key: the rows the story drops as too late are as many as Spark dropped, and each NULL row and joined row is told as such."""
    from streaming.analysis.join import join_timeline, key_story, key_text
    from streaming.engine.join.join import side_rows

    outcome = kept_left_outer
    timeline = join_timeline(outcome)
    left, right = (side_rows(spark, side) for side in outcome.config.sides)
    assert sorted(left["batch"].unique()) == list(range(SPEC.batches))
    keys = sorted(set(left["impression_id"]) | set(right["impression_id"]))
    stories = pd.concat([key_story(outcome, timeline, left, right, key_text((key,))) for key in keys], ignore_index=True)
    assert len(stories) == len(left) + len(right)
    assert (stories["status"] == "dropped as too late").sum() == outcome.rows_dropped_by_watermark > 0
    nulls = outcome.result["click_time"].isna()
    told = stories[(stories["side"] == "left") & (stories["status"] == "emitted with NULLs")]
    assert len(told) == nulls.sum() > 0
    assert (stories[stories["side"] == "left"]["status"] == "joined").sum() == (~nulls).sum()
    assert set(stories["status"]) <= {"joined", "emitted with NULLs", "dropped as too late", "waiting at the end", "never matched"}


def test_the_exported_program_prints_the_joined_rows(spark, joined) -> None:
    """Show code's program ends with the rows the replay joined."""
    from streaming.export import join_code

    outcome = joined("full_outer", "max")
    stdout = run_program(spark, join_code(outcome.config))
    expected = outcome.result_records()
    assert printed_result(stdout) == expected
    assert f"{len(expected)} joined rows" in stdout
    assert f"{len(expected)} joined rows" in stdout


def export_beside(spark, registry, config: JoinConfig, tmp_path: Path) -> tuple[list[dict], list[dict], str]:
    """``(the exported program's records, the replay's, the program's stdout)``: the replay, then the program on this session (:func:`support.run_program`)."""
    from streaming.export import join_code

    expected = run_join(spark, config, registry.listener, root=tmp_path, timeout=300).result_records()
    stdout = run_program(spark, join_code(config))
    return printed_result(stdout), expected, stdout


def test_exported_code_keeps_odd_column_names_in_string_literals(ads) -> None:
    from streaming.export import join_code

    config = config_of(ads)
    object.__setattr__(config, "on", ("x'); import os; os.system('echo pwned'); ('",))
    code = join_code(config)
    import ast

    assigned = {node.targets[0].id: node.value for node in ast.parse(code).body if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)}
    assert ast.literal_eval(assigned["KEYS"]) == config.on
    assert "os.system" not in "".join(line for line in code.splitlines() if not line.startswith("KEYS = "))


MODEL_CASES = [
    ("left_outer", "min", LEFT_WATERMARK, RIGHT_WATERMARK),
    ("left_outer", "max", LEFT_WATERMARK, RIGHT_WATERMARK),
    ("full_outer", "min", "5 seconds", "40 seconds"),
    ("right_outer", "max", "10 seconds", "0 seconds"),
    ("inner", "min", LEFT_WATERMARK, RIGHT_WATERMARK),
    ("left_outer", "min", None, RIGHT_WATERMARK),
    ("right_outer", "min", LEFT_WATERMARK, None),
    ("left_semi", "min", LEFT_WATERMARK, RIGHT_WATERMARK),
]


@pytest.mark.parametrize(("join_type", "policy", "left_delay", "right_delay"), MODEL_CASES)
def test_the_join_model_emits_what_spark_emits(spark, joined, join_type, policy, left_delay, right_delay) -> None:
    """The model's joined pairs, NULL rows (and the batch of each), dropped rows, watermarks and batch count are Spark's, for delays on one side or both."""
    from streaming.analysis.join_model import model_join
    from streaming.engine.durations import parse_duration
    from streaming.engine.join.join import side_rows

    changes = {} if (left_delay, right_delay) == (LEFT_WATERMARK, RIGHT_WATERMARK) else {"left_watermark": left_delay, "right_watermark": right_delay}
    outcome = joined(join_type, policy, **changes)
    config = outcome.config
    left, right = (side_rows(spark, side) for side in config.sides)
    delays = tuple(None if delay is None else parse_duration(delay) for delay in (left_delay, right_delay))
    model = model_join(left, right, "impression_time", "click_time", ("impression_id",), config.bounds_ms, join_type, delays, policy)
    assert model.batches == len(outcome.summaries)
    marks = [None if pd.isna(summary["watermark"]) else int(pd.Timestamp(summary["watermark"]).value // 1_000_000) for summary in outcome.summaries]
    assert list(model.watermarks) == marks
    assert sum(len(rows) for rows in model.dropped.values()) == outcome.rows_dropped_by_watermark
    assert list(model.state_rows) == [summary["state_rows_total"] for summary in outcome.summaries]
    emitted = outcome.result.assign(batch=outcome.emitted)
    if join_type == "left_semi":
        assert sorted({left.loc[shown, "impression_id"] for shown, _ in model.pairs}) == sorted(emitted["impression_id"])
        return
    joined = emitted[emitted["impression_time"].notna() & emitted["click_time"].notna()]
    assert sorted((left.loc[row, "impression_id"], left.loc[row, "impression_time"], right.loc[other, "click_time"]) for row, other in model.pairs) == sorted(
        zip(joined["impression_id"], joined["impression_time"], joined["click_time"])
    )
    for side, other, frame in (("left", "click_time", left), ("right", "impression_time", right)):
        alone = emitted[emitted[other].isna()]
        assert sorted((frame.loc[row, "impression_id"], batch) for row, batch in model.nulls[side].items()) == sorted(zip(alone["impression_id"], alone["batch"]))


def test_what_spark_accepts_but_never_cleans_is_warned(ads) -> None:
    assert config_of(ads).warnings() == []
    (one_sided,) = config_of(ads, "left_outer", left_watermark=None).warnings()
    assert "never emits a row without a match" in one_sided and "left.watermark" in one_sided
    assert "for ever" in config_of(ads, "inner", within=None).warnings()[0]


@pytest.mark.parametrize("join_type", ["inner", "left_outer"])
def test_a_stream_static_join_equals_plain_pyspark(spark, registry, ads, tmp_path: Path, join_type: str) -> None:
    """Impressions enriched from the ads' table: every micro-batch joins the whole table; an ad missing from it gets NULLs in a left outer join."""
    from pyspark.sql import functions as F

    from streaming.adfeeds import write_ad_catalog

    (catalog,) = write_ad_catalog(SPEC, tmp_path / "catalog")
    config = JoinConfig(
        JoinSide(ads[0], "impression_time", LEFT_WATERMARK, side="left"), JoinSide(catalog.parent, "listed_at", side="right", static=True),
        on=("ad_id",), join_type=join_type,  # type: ignore[arg-type]
    )
    assert config.warnings() == [] and config.describe().endswith("and catalog (static) on ad_id")
    outcome = run_join(spark, config, registry.listener, root=tmp_path, timeout=300)
    schema = spark.read.csv(str(ads[0]), header=True).schema
    stream = spark.readStream.schema(schema).option("header", True).option("maxFilesPerTrigger", 1).csv(str(ads[0]))
    stream = stream.withColumn("impression_time", F.to_timestamp("impression_time")).withWatermark("impression_time", LEFT_WATERMARK)
    table = spark.read.csv(str(catalog), header=True).withColumn("listed_at", F.to_timestamp("listed_at"))
    name = f"plain_static_{uuid.uuid4().hex[:8]}"
    query = stream.join(table, "ad_id", join_type).writeStream.format("memory").queryName(name).option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(300)
        expected = spark.table(name).toPandas()
    finally:
        query.stop()
        spark.catalog.dropTempView(name)
    assert list(outcome.result.columns) == list(expected.columns)
    assert rows_of(outcome.result) == rows_of(expected)
    missing = outcome.result["advertiser"].isna()
    assert missing.any() == (join_type == "left_outer")  # the last ad is not in the table
    assert outcome.operators() == []  # no state


def test_a_static_side_takes_no_watermark_and_no_right_outer_join(ads) -> None:
    with pytest.raises(ConfigError) as refused:
        JoinSide(ads[1], "click_time", "10 seconds", side="right", static=True)
    assert refused.value.field == "right.watermark"
    static = JoinSide(ads[1], "click_time", side="right", static=True)
    with pytest.raises(ConfigError) as refused:
        JoinConfig(JoinSide(ads[0], "impression_time", side="left"), static, on=("impression_id",), join_type="right_outer")
    assert refused.value.field == "join_type"
    with pytest.raises(ConfigError) as refused:
        JoinSide(ads[0], "impression_time", side="left", static=True)
    assert refused.value.field == "left.static"


@pytest.mark.parametrize("policy", ["min", "max"])
def test_the_model_holds_the_global_watermark_while_a_side_has_brought_nothing(spark, registry, ads, tmp_path: Path, policy: str) -> None:
    """Clicks whose first files are empty, and impressions with an empty last file: a side with no rows yet counts as the epoch (under min it holds the global watermark there)."""
    from streaming.analysis.join_model import model_join
    from streaming.engine.join.join import side_rows

    folders = {}
    for name, source in (("impressions", ads[0]), ("clicks", ads[1])):
        folders[name] = tmp_path / name
        folders[name].mkdir()
        paths = sorted(source.glob("batch-*.csv"))
        for index, path in enumerate(paths):
            lines = path.read_text().splitlines(keepends=True)
            empty = (name == "clicks" and index < 3) or (name == "impressions" and index == len(paths) - 1)
            (folders[name] / path.name).write_text(lines[0] if empty else "".join(lines))
    config = JoinConfig(
        JoinSide(folders["impressions"], "impression_time", LEFT_WATERMARK, side="left"), JoinSide(folders["clicks"], "click_time", RIGHT_WATERMARK, side="right"),
        on=("impression_id",), within=WITHIN, join_type="full_outer", policy=policy,  # type: ignore[arg-type]
    )
    outcome = run_join(spark, config, registry.listener, root=tmp_path, timeout=300)
    left, right = (side_rows(spark, side) for side in config.sides)
    model = model_join(left, right, "impression_time", "click_time", ("impression_id",), config.bounds_ms, "full_outer", (20_000, 5_000), policy, SPEC.batches)
    marks = [None if pd.isna(summary["watermark"]) else int(pd.Timestamp(summary["watermark"]).value // 1_000_000) for summary in outcome.summaries]
    assert list(model.watermarks) == marks
    assert (marks[1] is None) == (policy == "min")  # under min, no watermark while the clicks have brought nothing
    assert list(model.state_rows) == [summary["state_rows_total"] for summary in outcome.summaries]
    assert sum(len(rows) for rows in model.nulls.values()) == int(outcome.result[["impression_time", "click_time"]].isna().any(axis=1).sum())


def test_a_key_story_with_one_watermark_drops_nothing_on_the_other_side_and_promises_no_null_row(spark, registry, ads, tmp_path: Path) -> None:
    from streaming.analysis.join import join_timeline, key_story, key_text, waiting_rows
    from streaming.engine.join.join import join_state, side_rows

    config = config_of(ads, "left_outer", left_watermark=None)
    assert not config.cleans_state
    outcome = run_join(spark, config, registry.listener, keep=tmp_path / "kept", timeout=300)
    timeline = join_timeline(outcome)
    left, right = (side_rows(spark, side) for side in config.sides)
    stories = pd.concat([key_story(outcome, timeline, left, right, key_text((key,))) for key in sorted(set(left["impression_id"]))], ignore_index=True)
    assert (stories["status"] == "dropped as too late").sum() == outcome.rows_dropped_by_watermark
    assert not ((stories["side"] == "left") & (stories["status"] == "dropped as too late")).any()  # the impressions have no watermark
    waiting = waiting_rows(outcome.config, outcome.with_batches(), timeline, "left", join_state(spark, outcome, "left", 2), 2)
    assert waiting["leaves_state"].isna().all() and not waiting["null_row"].str.startswith("batch").any()


def test_the_exported_stream_static_program_reads_the_table(spark, registry, ads, tmp_path: Path) -> None:
    from streaming.adfeeds import write_ad_catalog

    (catalog,) = write_ad_catalog(SPEC, tmp_path / "catalog")
    config = JoinConfig(
        JoinSide(ads[0], "impression_time", LEFT_WATERMARK, side="left"), JoinSide(catalog.parent, "listed_at", side="right", static=True),
        on=("ad_id",), join_type="left_outer",
    )
    exported, expected, _ = export_beside(spark, registry, config, tmp_path)
    assert exported == expected
    assert any(record["advertiser"] is None for record in expected)


def test_joins_compared_side_by_side_are_measured_as_the_join_model_measures_them(spark, registry, ads, tmp_path: Path) -> None:
    """Each compared replay's completeness, NULL rows and their wait, drops and state are the join model's for the same delays (the model
    is held to Spark above); a left semi join, which emits left rows only, is measured by them; the runs keep the order of their configs."""
    from streaming.analysis.join_compare import compare_joins, join_label
    from streaming.analysis.join_model import model_sweep
    from streaming.engine.durations import parse_duration
    from streaming.engine.join.join import side_rows

    configs = [config_of(ads, "left_outer", "max", left_watermark="5 seconds", right_watermark="40 seconds"), config_of(ads, "left_semi", "min")]
    reported: list[str] = []
    comparison = compare_joins(spark, configs, registry.listener, report=reported.append, root=tmp_path, timeout=300)
    summary = comparison.summary()
    assert list(summary["label"]) == [join_label(config) for config in configs]
    assert reported == [f"Config {number} of 2: {join_label(config)}" for number, config in enumerate(configs, start=1)]
    assert summary["label"].iloc[0] == "left_outer · -5 seconds to 30 seconds · delays 5 seconds / 40 seconds · max"
    left, right = (side_rows(spark, side) for side in configs[0].sides)
    for config, (_, row) in zip(configs, summary.iterrows()):
        delays = [parse_duration(side.watermark) for side in config.sides]
        [model] = model_sweep(
            left, right, "impression_time", "click_time", config.on, config.bounds_ms, config.join_type, [delays[0]], [delays[1]], config.policy, SPEC.batches,
        ).to_dict("records")
        assert (row["pairs"], row["exact_pairs"], row["null_rows"], row["rows_dropped_by_watermark"], row["peak_state_rows"]) == (
            model["pairs"], model["exact_pairs"], model["null_rows"], model["dropped"], model["peak_state_rows"],
        ), config.join_type
        assert row["completeness"] == pytest.approx(model["completeness"])
        assert row["null_row_wait_batches"] == pytest.approx(model["null_row_wait_batches"], nan_ok=True)
    assert summary["completeness"].iloc[0] < 1 and summary["null_rows"].iloc[0] > 0 and summary["null_row_wait_batches"].iloc[0] > 0
    assert summary["null_rows"].iloc[1] == 0 and "click_time" not in comparison.runs[1].outcome.result.columns  # a semi join's rows: the left side's


def test_joins_that_cannot_be_compared_are_refused_naming_the_config_and_field(ads, tmp_path: Path) -> None:
    from streaming.adfeeds import write_ad_catalog
    from streaming.analysis.join_compare import compare_joins

    (catalog,) = write_ad_catalog(SPEC, tmp_path / "catalog")
    static = JoinConfig(JoinSide(ads[0], "impression_time", side="left"), JoinSide(catalog.parent, "listed_at", side="right", static=True), on=("ad_id",))
    swapped = JoinConfig(
        JoinSide(ads[0], "impression_time", LEFT_WATERMARK, side="left"), JoinSide(ads[0], "impression_time", side="right"), on=("impression_id",),
    )
    for configs, field in (
        ([config_of(ads)], "configs"),
        ([config_of(ads), static], "Config 2: right"),
        ([config_of(ads), swapped], "Config 2: right"),
        ([config_of(ads), config_of(ads, on=("impression_id", "ad_id"))], "Config 2: on"),
    ):
        with pytest.raises(ConfigError) as refused:
            compare_joins(None, configs, None)  # type: ignore[arg-type]
        assert refused.value.field == field


def test_a_range_s_records_fall_in_their_planned_batches_and_a_range_needs_a_start(ads) -> None:
    """Pure: a record belongs to the first planned batch whose end in its partition lies past it; Connect's rows are cut by the progress
    counts only when they account for every row; a topic range starting at the latest offsets is refused."""
    from streaming.engine.join.join import TopicSide, _emitted_by_counts, bound_ranges
    from streaming.engine.kafka.kafka_terms import batch_of_offsets, planned_batches
    from streaming.engine.sources.kafka import KafkaSource

    plan = planned_batches({0: 0, 1: 10}, {0: 5, 1: 13}, 4)  # partition 0 holds 5 records, partition 1 three
    assert plan == [({0: 0, 1: 10}, {0: 2, 1: 11}), ({0: 2, 1: 11}, {0: 4, 1: 12}), ({0: 4, 1: 12}, {0: 5, 1: 13})]
    assert batch_of_offsets([0, 0, 0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 3, 4, 10, 11, 12, 13], [to for _, to in plan]) == [0, 0, 1, 1, 2, 0, 1, 2, -1]
    summaries = [{"batch_id": 1, "output_rows": 2}, {"batch_id": 0, "output_rows": 1}]
    assert _emitted_by_counts(summaries, 3) == (0, 1, 1)
    assert _emitted_by_counts(summaries, 4) is None and _emitted_by_counts([{"batch_id": 0, "output_rows": -1}], 0) is None
    values = (("impression_id", "string"), ("impression_time", "string"))
    with pytest.raises(ConfigError) as refused:
        TopicSide(KafkaSource("127.0.0.1:9092", "ads", values, starting_offsets="latest", end_offsets=((0, 10),)), side="left")
    assert refused.value.field == "left.source.starting_offsets"
    assert bound_ranges(config_of(ads)) == config_of(ads)  # files: nothing to bound


def test_duplicate_pairs_are_counted_as_many_times_as_the_exact_join_has_them() -> None:
    """Two flights alike (origin, scheduled departure) against one weather row make two pairs; a result holding one of them is 1 of 2."""
    from streaming.analysis.join_model import joined_completeness

    left = pd.DataFrame({"origin": ["EWR", "EWR", "JFK"], "sched": pd.to_datetime(["2013-01-01 05:15", "2013-01-01 05:15", "2013-01-01 06:00"]), "batch": 0})
    right = pd.DataFrame({"origin": ["EWR", "JFK"], "hour": pd.to_datetime(["2013-01-01 05:00", "2013-01-01 06:00"]), "batch": 0})
    bounds = (-3_600_000, 0)  # the weather of the hour before, up to the departure
    both = pd.DataFrame({"origin": ["EWR", "EWR", "JFK"], "sched": left["sched"], "hour": pd.to_datetime(["2013-01-01 05:00"] * 2 + ["2013-01-01 06:00"])})
    assert joined_completeness(both, left, right, "sched", "hour", ["origin"], bounds) == (3, 3)
    assert joined_completeness(both.iloc[1:], left, right, "sched", "hour", ["origin"], bounds) == (2, 3)
