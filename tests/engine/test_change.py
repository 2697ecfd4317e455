"""A kept SQL query resumed with a changed query (``replay --checkpoint K --change``): Spark's verdict, the lab's prediction, and a refused
change that leaves the folder as it was; held to plain PySpark stopping and resuming the same checkpoint."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from streaming.analysis.result_diff import rows_that_differ
from streaming.engine.run.change import FROM_SCRATCH, GOING_ON, TRIED, try_change
from streaming.engine.run.checkpoints import KeptQuery
from streaming.engine.sql.table import json_value

SCHEMA = "ts TIMESTAMP, store STRING, amount BIGINT"
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


@pytest.fixture
def orders(tmp_path: Path) -> Path:
    folder = tmp_path / "orders"
    folder.mkdir()
    for index, rows in enumerate(ORDERS):
        (folder / f"part-{index:02d}.csv").write_text("ts,store,amount\n" + "".join(f"{ts},{store},{amount}\n" for ts, store, amount in rows))
    return folder


def _plain(spark, orders: Path, work: Path, runs: list[tuple[str, int]]) -> tuple[list[dict], int, str | None]:
    """Plain PySpark: each ``(sql, files)`` of ``runs`` resumes one checkpoint under available-now after its first ``files`` files are
    there; the result folded in update mode over every batch, the rows dropped, and the condition of a refused run's cause."""
    session = spark.newSession()
    staging, checkpoint = work / "staging", work / "checkpoint"
    staging.mkdir(parents=True)
    files = sorted(orders.iterdir())
    session.readStream.schema(SCHEMA).option("header", True).option("maxFilesPerTrigger", 1).csv(str(staging)).createOrReplaceTempView("orders")
    table: dict[str, dict] = {}
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

        query = frame.writeStream.outputMode("update").foreachBatch(fold).trigger(availableNow=True).option("checkpointLocation", str(checkpoint)).start()
        try:
            query.awaitTermination(300)
        except Exception as err:  # noqa: BLE001 - Spark refused the resumed query: its cause's condition
            named = [word.strip("[]") for word in str(err).split() if word.startswith("[") and word.endswith("]") and word.strip("[]").isupper()]
            return [], dropped, next((name for name in named if name != "STREAM_FAILED"), None)
        finally:
            query.stop()
        dropped += sum(int(op.numRowsDroppedByWatermark) for progress in query.recentProgress for op in progress.stateOperators)
    return sorted(table.values(), key=lambda record: json.dumps(record, sort_keys=True)), dropped, None


def _sorted(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda record: json.dumps(record, sort_keys=True))


def test_a_kept_sql_query_is_changed_as_spark_allows_and_a_refused_change_leaves_it_as_it_was(cli, spark, registry, orders: Path, tmp_path: Path) -> None:
    """Kept over 5 of 8 files; a grouping key added is predicted and refused with Spark's condition, the folder unchanged; the watermark
    delay lengthened, tried on copies, gives plain Spark's three answers (the old query going on, the new one resumed, the new one from
    scratch) and leaves the folder as it was; applied, it resumes, and its result and rows dropped over both runs are plain Spark's,
    stopping and resuming the same checkpoint."""
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
    _, _, plain_condition = _plain(spark, orders, tmp_path / "plain-refused", [(texts["v1"], KEPT_FILES), (texts["keyed"], len(ORDERS))])
    assert (change["verdict"], change["error_condition"]) == ("refused", plain_condition) and plain_condition is not None
    assert change["predicted"]["verdict"] == "refused" and change["differences"]
    assert {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before  # the folder as it was

    # tried on copies first: the changed query resumed, the old one going on, the changed one from scratch; the folder untouched
    trial = try_change(registry, KeptQuery(kept).config().with_changes(text=texts["v2"]), kept)
    assert {path.relative_to(kept): path.read_bytes() for path in kept.rglob("*") if path.is_file()} == before
    assert not [path.name for path in tmp_path.iterdir() if path.name.startswith(".kept.")]  # the copies are gone
    assert trial.change.verdict == "resumed" and trial.unchanged is not None and trial.fresh is not None
    going_on, _, _ = _plain(spark, orders, tmp_path / "plain-v1", [(texts["v1"], KEPT_FILES), (texts["v1"], len(ORDERS))])
    fresh, _, _ = _plain(spark, orders, tmp_path / "plain-v2", [(texts["v2"], len(ORDERS))])
    assert _sorted(trial.unchanged.records) == going_on  # a copy goes on as its original would, reading no file twice
    assert _sorted(trial.fresh.records) == fresh
    differ = rows_that_differ(trial.results())
    # the watermark never moves back: resumed, the longer delay keeps no row the old query drops, as it does from scratch
    assert (differ[TRIED] == differ[GOING_ON]).all() and (differ[TRIED] != differ[FROM_SCRATCH]).all() and len(differ) == 2

    applied_json = tmp_path / "applied.json"
    applied = cli("replay", str(orders), "--sql-file", str(queries / "v2.sql"), *flags, "--checkpoint", str(kept), "--change", "--json", str(applied_json))
    assert applied.returncode == 0, applied.stderr
    report = json.loads(applied_json.read_text())
    expected, dropped, condition = _plain(spark, orders, tmp_path / "plain-applied", [(texts["v1"], KEPT_FILES), (texts["v2"], len(ORDERS))])
    assert condition is None and report["change"]["verdict"] == "resumed" and report["change"]["predicted"]["verdict"] == "resumed"
    assert "never moves back" in " ".join(report["change"]["predicted"]["reasons"])
    assert report["change"]["watermark_before"] is not None and report["change"]["watermark_after"] > report["change"]["watermark_before"]
    assert _sorted(report["result"]) == expected and expected
    assert _sorted(trial.change.replay.records) == expected  # the try gave what applying gives
    assert report["rows_dropped_by_watermark"] == dropped
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
        "checkpoint", str(tmp_path / "plain-applied" / "checkpoint"), "--sql-file", str(queries / "keyed.sql"), "--data", str(orders),
        "--event-time", "ts", "--view", "orders", "--json", str(held),
    )
    assert outside.returncode == 0, outside.stderr
    plain = json.loads(held.read_text())
    assert plain["query"] is None and plain["operators"] and plain["prediction"]["error_condition"] == "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"
