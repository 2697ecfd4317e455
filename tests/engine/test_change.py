"""A kept SQL query resumed with a changed query (``replay --checkpoint K --change``): Spark's verdict, the lab's prediction, and a refused
change that leaves the folder as it was; held to plain PySpark stopping and resuming the same checkpoint."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from streaming.analysis.result_diff import held as times_in
from streaming.analysis.result_diff import rows_that_differ
from streaming.engine.run.change import FROM_SCRATCH, GOING_ON, TRIED, try_change
from streaming.engine.run.checkpoints import KeptQuery
from streaming.engine.sql.table import json_value

SCHEMA = "ts TIMESTAMP, store STRING, amount INT"
"""As the lab reads the order files (small whole numbers: INT)."""
KEPT_FILES = 5
ORDERS = [
    [("2024-01-01 00:00:10", "a", 3), ("2024-01-01 00:00:40", "b", 5)],
    [("2024-01-01 00:01:30", "a", 2), ("2024-01-01 00:00:20", "b", 7)],
    [("2024-01-01 00:03:10", "b", 1), ("2024-01-01 00:01:05", "a", 4)],
    [("2024-01-01 00:04:20", "a", 6), ("2024-01-01 00:02:10", "b", 9)],
    [("2024-01-01 00:06:00", "b", 2), ("2024-01-01 00:03:50", "a", 8)],
    [("2024-01-01 00:07:30", "a", 5), ("2024-01-01 00:04:40", "b", 3), ("2024-01-01 00:02:30", "a", 1)],
    [("2024-01-01 00:09:00", "b", 4), ("2024-01-01 00:05:10", "a", 2)],
    [("2024-01-01 00:10:30", "a", 7), ("2024-01-01 00:06:40", "b", 6), ("2024-01-01 00:03:20", "b", 2)],
]
"""Eight files of orders, some arriving minutes late: a 1-minute delay drops rows that a 3-minute one keeps."""


def _sql(delay: str, grouping: str = "store", aggregate: str = "sum(amount) AS total") -> str:
    return (
        f"SELECT window(ts, '1 minute') AS w, {grouping}, {aggregate}\n"
        f"FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL {delay}\nGROUP BY ALL"
    )


def _write_orders(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for index, rows in enumerate(ORDERS):
        (folder / f"part-{index:02d}.csv").write_text("ts,store,amount\n" + "".join(f"{ts},{store},{amount}\n" for ts, store, amount in rows))
    return folder


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    return _write_orders(tmp_path / "orders")


def _plain(
    spark, orders: Path, work: Path, runs: list[tuple[str, int]], mode: str = "update", table: dict[str, dict] | None = None,
    read: list[int] | None = None,
) -> tuple[list[dict], int, str | None]:
    """Plain PySpark: each ``(sql, files)`` of ``runs`` resumes one checkpoint (``work``, made or carried) under available-now after its
    first ``files`` files are there; the result folded by key over every batch (``table``: the rows of runs before), the rows dropped,
    and the condition of a refused run's cause; each run's input rows appended to ``read``."""
    session = spark.newSession()
    staging, checkpoint = work / "staging", work / "checkpoint"
    staging.mkdir(parents=True, exist_ok=True)
    files = sorted(orders.iterdir())
    session.readStream.schema(SCHEMA).option("header", True).option("maxFilesPerTrigger", 1).csv(str(staging)).createOrReplaceTempView("orders")
    table = {} if table is None else table
    dropped = 0
    for sql, upto in runs:
        for index, path in enumerate(files[:upto]):
            target = staging / path.name
            if not target.exists():
                shutil.copyfile(path, target)
                os.utime(target, (1_700_000_000 + index, 1_700_000_000 + index))
        frame = session.sql(sql)

        def fold(batch, _batch_id, frame=frame) -> None:
            for row in batch.collect():
                record = {name: json_value(row[name], field.dataType) for name, field in zip(frame.columns, frame.schema.fields)}
                table[json.dumps([record["w"], record["store"]])] = record

        query = frame.writeStream.outputMode(mode).foreachBatch(fold).trigger(availableNow=True).option("checkpointLocation", str(checkpoint)).start()
        try:
            query.awaitTermination(300)
        except Exception as err:  # noqa: BLE001 - Spark refused the resumed query: its cause's condition
            named = [word.strip("[]") for word in str(err).split() if word.startswith("[") and word.endswith("]") and word.strip("[]").isupper()]
            return [], dropped, next((name for name in named if name != "STREAM_FAILED"), None)
        finally:
            query.stop()
        dropped += sum(int(op.numRowsDroppedByWatermark) for progress in query.recentProgress for op in progress.stateOperators)
        if read is not None:
            read.append(sum(int(progress.numInputRows) for progress in query.recentProgress))
    return sorted(table.values(), key=lambda record: json.dumps(record, sort_keys=True)), dropped, None


def _sorted(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda record: json.dumps(record, sort_keys=True))


def test_a_kept_sql_query_is_changed_as_spark_allows_and_a_refused_change_leaves_it_as_it_was(cli, spark, registry, orders: Path, tmp_path: Path) -> None:
    """Kept over 5 of 8 files; a grouping key added is predicted and refused with Spark's condition, the folder unchanged; the watermark
    delay lengthened, tried on copies, gives plain Spark's answers for the old query going on and the new one from scratch, and leaves the
    folder as it was; applied, it resumes, and gives what the try gave (which the next test holds to plain Spark for every change)."""
    kept, queries = tmp_path / "kept", tmp_path / "queries"
    queries.mkdir()
    texts = {"v1": _sql("1 MINUTE"), "v2": _sql("3 MINUTES"), "keyed": _sql("1 MINUTE", "store, amount", "count(*) AS n")}
    for name, text in texts.items():
        (queries / f"{name}.sql").write_text(text)
    flags = ("--event-time", "ts", "--view", "orders", "--output-mode", "update", "--arrival", "busy")

    first = cli("replay", str(orders), "--sql-file", str(queries / "v1.sql"), *flags, "--checkpoint", str(kept), "--stop-after", str(KEPT_FILES))
    assert first.returncode == 0, first.stderr
    unchanged = cli("replay", str(orders), "--sql-file", str(queries / "v2.sql"), *flags, "--checkpoint", str(kept))
    assert unchanged.returncode == 2 and "belongs to a different configuration" in unchanged.stderr and "WATERMARK" in unchanged.stderr.upper()

    before = {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()}
    refused_json = tmp_path / "refused.json"
    refused = cli("replay", str(orders), "--sql-file", str(queries / "keyed.sql"), *flags, "--checkpoint", str(kept), "--change", "--json", str(refused_json))
    assert refused.returncode == 0, refused.stderr
    change = json.loads(refused_json.read_text())["change"]
    assert (change["verdict"], change["error_condition"]) == ("refused", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE")  # plain Spark's: CHANGES
    assert change["predicted"]["verdict"] == "refused" and change["differences"]
    assert {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before  # the folder as it was

    # tried on copies first: the changed query resumed, the old one going on, the changed one from scratch; the folder untouched
    trial = try_change(registry, KeptQuery(kept).config().with_changes(text=texts["v2"]), kept)
    assert {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before
    assert not [path.name for path in tmp_path.iterdir() if path.name.startswith(".try-")]  # the copies are gone
    assert trial.change.verdict == "resumed" and trial.unchanged is not None and trial.fresh is not None
    going_on, _, _ = _plain(spark, orders, tmp_path / "plain-v1", [(texts["v1"], KEPT_FILES), (texts["v1"], len(ORDERS))])
    fresh, _, _ = _plain(spark, orders, tmp_path / "plain-v2", [(texts["v2"], len(ORDERS))])
    assert _sorted(trial.unchanged.records) == going_on  # a copy goes on as its original would, reading no file twice
    assert _sorted(trial.fresh.records) == fresh
    differ = rows_that_differ({name: replay.records for name, replay in trial.replays().items()})
    # the watermark never moves back: resumed, the longer delay keeps no row the old query drops, as it does from scratch
    in_tried, in_going_on, in_fresh = (differ[times_in(name)] for name in (TRIED, GOING_ON, FROM_SCRATCH))
    assert (in_tried == in_going_on).all() and (in_tried != in_fresh).all() and len(differ) == 2

    applied_json = tmp_path / "applied.json"
    applied = cli("replay", str(orders), "--sql-file", str(queries / "v2.sql"), *flags, "--checkpoint", str(kept), "--change", "--json", str(applied_json))
    assert applied.returncode == 0, applied.stderr
    report = json.loads(applied_json.read_text())
    assert report["change"]["verdict"] == "resumed" and report["change"]["predicted"]["verdict"] == "resumed"
    assert "never moves back" in " ".join(report["change"]["predicted"]["reasons"])
    assert report["change"]["watermark_before"] is not None and report["change"]["watermark_after"] > report["change"]["watermark_before"]
    assert _sorted(report["result"]) == _sorted(trial.change.replay.records) and report["result"]  # the try gave what applying gives
    assert report["rows_dropped_by_watermark"] == trial.change.replay.rows_dropped_by_watermark
    record = json.loads((kept / "query.json").read_text())
    assert "3 MINUTES" in record["config"]["text"] and "1 MINUTE\n" in record["changes"][0]["config"]["text"]
    assert record["changes"][0]["until_batch"] > 0
    # what the folder holds now, and whether another change would resume: from the kept query's plan, or for a checkpoint written by
    # plain PySpark outside the lab, from its state metadata and schemas
    held = tmp_path / "held.json"
    done = cli("checkpoint", str(kept), "--sql-file", str(queries / "keyed.sql"), "--json", str(held))
    assert done.returncode == 0, done.stderr
    facts = json.loads(held.read_text())
    assert facts["watermark"] == report["change"]["watermark_after"] and facts["last_batch"] == len(report["batches"]) - 1
    assert [operator["operator"] for operator in facts["operators"]] == ["stateStoreSave"] and "window" not in facts["operators"][0]["value_schema"]
    assert facts["prediction"]["verdict"] == "refused"
    outside = cli(
        "checkpoint", str(tmp_path / "plain-v2" / "checkpoint"), "--sql-file", str(queries / "keyed.sql"), "--data", str(orders),
        "--event-time", "ts", "--view", "orders", "--json", str(held),
    )
    assert outside.returncode == 0, outside.stderr
    plain = json.loads(held.read_text())
    assert plain["query"] is None and plain["operators"] and plain["prediction"]["error_condition"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"


@dataclass(frozen=True)
class _Kept:
    """One query kept over the first files twice: by the lab (``lab``, a kept folder) and by plain PySpark (``plain``, its staging and
    checkpoint, with the rows it emitted and dropped)."""

    orders: Path
    mode: str
    lab: Path
    plain: Path
    rows: dict[str, dict]
    dropped: int


@pytest.fixture(scope="module")
def kept_twice(spark, tmp_path_factory) -> dict[str, _Kept]:
    """``_sql("1 MINUTE")`` kept over the first files, in update and in append mode: each change below resumes a copy of one."""
    from streaming.cli import main

    root = tmp_path_factory.mktemp("kept-twice")
    orders = _write_orders(root / "orders")
    (root / "v1.sql").write_text(_sql("1 MINUTE"))
    bases = {}
    for mode in ("update", "append"):
        lab = root / f"lab-{mode}"
        flags = ("--event-time", "ts", "--view", "orders", "--output-mode", mode, "--arrival", "busy")
        assert main(["replay", str(orders), "--sql-file", str(root / "v1.sql"), *flags, "--checkpoint", str(lab), "--stop-after", str(KEPT_FILES)], spark=spark) == 0
        rows: dict[str, dict] = {}
        _, dropped, _ = _plain(spark, orders, root / f"plain-{mode}", [(_sql("1 MINUTE"), KEPT_FILES)], mode, rows)
        bases[mode] = _Kept(orders, mode, lab, root / f"plain-{mode}", rows, dropped)
    return bases


CHANGES = [
    ("the watermark delay longer", "update", _sql("5 MINUTES"), "update"),
    ("the watermark delay shorter", "update", _sql("30 SECONDS"), "update"),
    ("a filter added", "update", _sql("1 MINUTE").replace("\nGROUP BY", "\nWHERE amount > 2\nGROUP BY"), "update"),
    ("the window longer", "update", _sql("1 MINUTE").replace("'1 minute'", "'2 minutes'"), "update"),
    ("sum to max of the same type", "update", _sql("1 MINUTE", aggregate="max(CAST(amount AS BIGINT)) AS total"), "update"),
    ("sum to max of another type", "update", _sql("1 MINUTE", aggregate="max(amount) AS total"), "update"),  # sum(int) keeps a bigint
    ("append to update", "append", _sql("1 MINUTE"), "update"),
    ("a grouping key added", "update", _sql("1 MINUTE", "store, amount", "count(*) AS n"), "update"),
    ("an aggregate added", "update", _sql("1 MINUTE", aggregate="sum(amount) AS total, count(*) AS n"), "update"),
    ("a deduplication added", "append", _sql("1 MINUTE").replace(  # two stateful operators: append mode only
        "FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE", "FROM (SELECT DISTINCT * FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL 1 MINUTE)"), "append"),
]
"""The guide's *Recovery Semantics after Changes* for an aggregation: every row of the README's table."""


@pytest.mark.parametrize(("change", "kept_in", "text", "mode"), CHANGES, ids=[change[0].replace(" ", "_") for change in CHANGES])
def test_each_change_is_resumed_or_refused_as_plain_spark_does_and_as_the_lab_predicts(
    spark, kept_twice, tmp_path: Path, change: str, kept_in: str, text: str, mode: str,
) -> None:
    """``replay --checkpoint K --change`` on a copy of the kept query, against plain PySpark resuming a copy of its own checkpoint: the same
    verdict and condition (the one the lab predicted), and when resumed, the same result over both runs and the same rows dropped."""
    from streaming.cli import main

    base = kept_twice[kept_in]
    lab = KeptQuery(base.lab).copy_to(tmp_path / "lab").folder
    (tmp_path / "v2.sql").write_text(text)
    flags = ("--event-time", "ts", "--view", "orders", "--output-mode", mode, "--arrival", "busy")
    out = tmp_path / "b.json"
    assert main(["replay", str(base.orders), "--sql-file", str(tmp_path / "v2.sql"), *flags, "--checkpoint", str(lab), "--change", "--json", str(out)], spark=spark) == 0
    report = json.loads(out.read_text())
    plain, read = KeptQuery(base.plain).copy_to(tmp_path / "plain").folder, []
    expected, dropped, condition = _plain(spark, base.orders, plain, [(text, len(ORDERS))], mode, dict(base.rows), read)
    verdict = "refused" if condition else "resumed"
    assert (report["change"]["verdict"], report["change"]["error_condition"]) == (verdict, condition), change
    assert (report["change"]["predicted"]["verdict"], report["change"]["predicted"]["error_condition"]) == (verdict, condition), change
    if condition is None:
        assert 0 < read[0] <= sum(map(len, ORDERS[KEPT_FILES:])), "plain Spark's copy read files its original had read"  # fewer: a filter
        assert _sorted(report["result"]) == expected and report["rows_dropped_by_watermark"] == base.dropped + dropped, change


def test_a_kept_form_query_is_changed_as_spark_allows(cli, spark, orders: Path, tmp_path: Path) -> None:
    """The form's query (sum of amount per store and minute) kept over 5 of 8 files: another aggregate is predicted and refused with Spark's
    condition, the folder as it was; a longer watermark delay resumes and gives plain PySpark's answer for the same change of its own
    checkpoint; another output mode resumes, the kept table folded by it."""
    kept = tmp_path / "kept"
    flags = ("--event-time", "ts", "--key", "store", "--value", "amount", "--window", "1 minute", "--arrival", "busy", "--checkpoint", str(kept))

    def replay(*more: str) -> dict:
        out = tmp_path / "out.json"
        done = cli("replay", str(orders), *flags, *more, "--json", str(out))
        assert done.returncode == 0, done.stderr
        return json.loads(out.read_text())

    replay("--agg", "sum", "--watermark", "1 minute", "--output-mode", "update", "--stop-after", str(KEPT_FILES))
    before = {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()}
    refused = replay("--agg", "count", "--watermark", "1 minute", "--output-mode", "update", "--change")["change"]
    assert (refused["verdict"], refused["error_condition"]) == ("refused", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE")
    assert refused["predicted"]["error_condition"] == refused["error_condition"] and refused["differences"] == ["aggregation is 'sum' there, 'count' here"]
    assert {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before

    longer = replay("--agg", "sum", "--watermark", "3 minutes", "--output-mode", "update", "--change")
    assert (longer["change"]["verdict"], longer["change"]["predicted"]["verdict"]) == ("resumed", "resumed")
    assert "never moves back" in " ".join(longer["change"]["predicted"]["reasons"])
    text = "SELECT window(ts, '1 minute') AS w, store, sum(try_cast(amount AS DOUBLE)) AS value, count(*) AS `count`\n" \
           "FROM STREAM(orders) WATERMARK ts DELAY OF INTERVAL {}\nGROUP BY ALL"
    plain, dropped, _ = _plain(spark, orders, tmp_path / "plain", [(text.format("1 MINUTE"), KEPT_FILES), (text.format("3 MINUTES"), len(ORDERS))])
    assert sorted((row["window_start"], row["key"], row["value"], row["count"]) for row in longer["result"]) == sorted(
        (row["w"]["start"], row["store"], row["value"], row["count"]) for row in plain
    )
    assert longer["rows_dropped_by_watermark"] == dropped

    appended = replay("--agg", "sum", "--watermark", "3 minutes", "--output-mode", "append", "--change")
    assert (appended["change"]["verdict"], appended["change"]["predicted"]["reasons"]) == (
        "resumed", ["the output mode changes (update to append): Spark resumes, emitting by the new mode from the next batch"],
    )
    assert appended["result"] == longer["result"]  # the kept table carried, folded by append from the change on
    record = json.loads((kept / "query.json").read_text())
    assert [change["config"]["watermark"] for change in record["changes"]] == ["1 minute", "3 minutes"] and record["config"]["output_mode"] == "append"


def _folder(path: Path, changes: int, batches: int, mark: str) -> Path:
    """A kept folder as a change leaves it: ``changes`` recorded in its query.json, ``batches`` lines of progress, and a file saying which it is."""
    path.mkdir(parents=True)
    record = {"name": "q", "start_ms": 0, "config": {"kind": "sql", "text": mark}, "changes": [{"config": {}, "until_batch": 2}] * changes}
    (path / "query.json").write_text(json.dumps(record))
    (path / "progress.jsonl").write_text("".join(json.dumps({"batchId": index}) + "\n" for index in range(batches)))
    (path / "which").write_text(mark)
    return path


@pytest.mark.parametrize(("batches", "left"), [(2, "before"), (3, "changed")], ids=["no_batch_after_the_change", "a_batch_after_it"])
def test_a_change_a_killed_process_left_mid_way_is_settled_one_way_or_the_other(tmp_path: Path, batches: int, left: str) -> None:
    """Killed after the change was recorded: it stands once the changed query committed a batch (Spark resumed it), else the copy taken
    before it is put back, as a refusal would have left it; a half-made copy and a refused change's folder are deleted."""
    from streaming.engine.run.change import recover_change, sweep_trials

    kept = _folder(tmp_path / "q", 1, batches, "changed")
    _folder(tmp_path / ".q.before-change-0123abcd", 0, 2, "before")
    _folder(tmp_path / ".q.copying-89abcdef", 0, 1, "half")
    (tmp_path / ".q.refused-00000000").mkdir()
    other = _folder(tmp_path / ".q.x.before-change-0123abcd", 0, 2, "q.x's")  # another kept folder's (q.x): not q's to put back
    assert recover_change(kept) != "nothing to settle" and (kept / "which").read_text() == left
    assert sorted(path.name for path in tmp_path.iterdir() if path.is_dir()) == [other.name, "q"]
    assert sweep_trials(tmp_path) == ["q.x: put back: the process stopped while it put the copy back"]  # q.x itself was gone
    assert sorted(path.name for path in tmp_path.iterdir() if path.is_dir()) == ["q", "q.x"]
    shutil.rmtree(tmp_path / "q.x")
    # killed while a refused change was being put back: the folder gone, its copy beside it
    os.replace(kept, tmp_path / ".q.before-change-0123abcd")
    with open(tmp_path / ".q.lock", "a") as held:  # another page or process changes or tries q now: left to it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert recover_change(kept).startswith("left as it is") and not kept.exists()
    assert recover_change(kept).startswith("put back") and (kept / "which").read_text() == left
    assert recover_change(kept) == "nothing to settle"
