"""Folding micro-batch output into the result table (no Spark)."""

from __future__ import annotations

import threading

import pandas as pd
import pytest

from streaming.engine.output.results import RAW_COLUMNS, WINDOW_COLUMNS, ResultTable

MINUTE_US = 60_000_000
T0 = int(pd.Timestamp("2016-05-10 12:00:00").value // 1_000)  # epoch microseconds


def w(minute: int, length: int = 10) -> tuple[int, int]:
    """``(start_us, end_us)`` of the window starting ``minute`` minutes after 12:00."""
    return T0 + minute * MINUTE_US, T0 + (minute + length) * MINUTE_US


def row(minute: int, key: str, count: int) -> tuple[int, int, str, int]:
    return (*w(minute), key, count)


def contents(table: ResultTable) -> list[tuple[str, str, str, int]]:
    frame = table.frame()
    return [
        (r.window_start.strftime("%H:%M"), r.window_end.strftime("%H:%M"), r.key, int(r.count)) for r in frame.itertuples(index=False)
    ]


def test_update_upserts_changed_windows() -> None:
    table = ResultTable("update")
    table.apply(0, [row(0, "dog", 1), row(0, "owl", 1)])
    table.apply(1, [row(0, "dog", 2), row(5, "dog", 1)])
    assert contents(table) == [("12:00", "12:10", "dog", 2), ("12:00", "12:10", "owl", 1), ("12:05", "12:15", "dog", 1)]
    assert len(table) == 3
    assert table.last_batch_id == 1 and table.batches_applied == 2


def test_update_empty_batch_keeps_table() -> None:
    table = ResultTable("update")
    table.apply(0, [row(0, "dog", 1)])
    table.apply(1, [])
    assert contents(table) == [("12:00", "12:10", "dog", 1)]
    assert table.batches_applied == 2


def test_complete_replaces_whole_table() -> None:
    table = ResultTable("complete")
    table.apply(0, [row(0, "dog", 1), row(0, "owl", 1)])
    table.apply(1, [row(0, "dog", 2), row(5, "cat", 1)])
    assert contents(table) == [("12:00", "12:10", "dog", 2), ("12:05", "12:15", "cat", 1)]


def test_complete_reapplied_batch_replaces_again() -> None:
    table = ResultTable("complete")
    table.apply(3, [row(0, "dog", 1)])
    table.apply(3, [row(0, "dog", 5)])
    assert contents(table) == [("12:00", "12:10", "dog", 5)]
    assert table.last_batch_id == 3


def test_append_adds_finalized_rows() -> None:
    table = ResultTable("append")
    table.apply(0, [])
    table.apply(1, [row(0, "dog", 2)])
    table.apply(2, [row(5, "dog", 3), row(5, "owl", 1)])
    assert contents(table) == [("12:00", "12:10", "dog", 2), ("12:05", "12:15", "dog", 3), ("12:05", "12:15", "owl", 1)]


@pytest.mark.parametrize("mode", ["update", "append"])
def test_repeated_batch_id_is_ignored(mode: str) -> None:
    table = ResultTable(mode)
    table.apply(0, [row(0, "dog", 1)])
    table.apply(1, [row(5, "owl", 1)])
    table.apply(1, [row(5, "owl", 99), row(10, "cat", 1)])  # replay of batch 1 after a restart
    table.apply(0, [row(0, "dog", 42)])  # an older batch id too
    assert contents(table) == [("12:00", "12:10", "dog", 1), ("12:05", "12:15", "owl", 1)]
    assert table.batches_applied == 2
    assert table.last_batch_id == 1


def test_max_rows_evicts_oldest_windows_and_counts() -> None:
    table = ResultTable("update", max_rows=3)
    table.apply(0, [row(10, "dog", 1), row(0, "owl", 1), row(0, "cat", 1)])
    assert table.evicted_rows == 0
    table.apply(1, [row(5, "dog", 1), row(15, "dog", 1)])
    # five windows, three kept: the two of 12:00-12:10 (ending first) are gone
    assert contents(table) == [("12:05", "12:15", "dog", 1), ("12:10", "12:20", "dog", 1), ("12:15", "12:25", "dog", 1)]
    assert table.evicted_rows == 2
    table.apply(2, [row(20, "owl", 4)])
    assert contents(table)[0] == ("12:10", "12:20", "dog", 1)
    assert len(table) == 3
    assert table.evicted_rows == 3


def test_max_rows_upsert_of_kept_window_evicts_nothing() -> None:
    table = ResultTable("update", max_rows=2)
    table.apply(0, [row(0, "dog", 1), row(5, "dog", 1)])
    table.apply(1, [row(0, "dog", 2)])
    assert table.evicted_rows == 0
    assert contents(table) == [("12:00", "12:10", "dog", 2), ("12:05", "12:15", "dog", 1)]


def test_max_rows_in_complete_mode_counts_each_replacement() -> None:
    table = ResultTable("complete", max_rows=1)
    table.apply(0, [row(0, "dog", 1), row(5, "dog", 1)])
    table.apply(1, [row(0, "dog", 2), row(5, "dog", 2)])
    assert contents(table) == [("12:05", "12:15", "dog", 2)]
    assert table.evicted_rows == 2


def test_max_rows_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_rows: 0"):
        ResultTable("update", max_rows=0)


def test_raw_mode_bounded() -> None:
    table = ResultTable("append", aggregation="none", max_rows=3)
    table.apply(0, [(T0 + 2, "b"), (T0 + 1, "a")])
    assert table.evicted_rows == 0
    table.apply(1, [(T0 + 3, "c"), (T0 + 4, "d")])
    assert len(table) == 3
    assert table.evicted_rows == 1
    table.apply(2, [(T0 + i, f"x{i}") for i in range(10, 15)])
    assert len(table) == 3
    assert table.evicted_rows == 6
    frame = table.frame()
    assert list(frame.columns) == RAW_COLUMNS
    assert frame["key"].tolist() == ["x12", "x13", "x14"]
    assert frame["event_time"].iloc[0] == pd.Timestamp("2016-05-10 12:00:00.000012")


def test_raw_mode_unbounded_sorted_by_time() -> None:
    table = ResultTable("update", aggregation="none")
    table.apply(0, [(T0 + MINUTE_US, "late"), (T0, "early")])
    table.apply(0, [(T0, "again")])  # repeated batch id ignored
    frame = table.frame()
    assert frame["key"].tolist() == ["early", "late"]
    assert table.evicted_rows == 0


def test_frame_types_and_empty() -> None:
    empty = ResultTable("update").frame()
    assert list(empty.columns) == WINDOW_COLUMNS and empty.empty
    table = ResultTable("update")
    table.apply(0, [row(0, "dog", 2)])
    frame = table.frame()
    assert list(frame.columns) == WINDOW_COLUMNS
    assert pd.api.types.is_datetime64_dtype(frame["window_start"])
    assert frame["window_start"].iloc[0] == pd.Timestamp("2016-05-10 12:00:00")
    assert frame["window_end"].iloc[0] == pd.Timestamp("2016-05-10 12:10:00")
    assert frame["count"].dtype == "int64"
    assert list(ResultTable("append", aggregation="none").frame().columns) == RAW_COLUMNS


def test_a_value_aggregate_keeps_the_rows_it_was_computed_over() -> None:
    table = ResultTable("update", aggregation="avg")
    assert list(table.frame().columns) == ["window_start", "window_end", "key", "value", "count"]
    table.apply(0, [(*row(0, "dog", 0)[:3], 2.5, 2), (*row(0, "cat", 0)[:3], None, 1)])
    table.apply(1, [(*row(0, "dog", 0)[:3], 3.0, 3)])
    frame = table.frame()
    assert frame["key"].tolist() == ["cat", "dog"] and frame["count"].tolist() == [1, 3]
    assert pd.isna(frame["value"].iloc[0]) and frame["value"].iloc[1] == 3.0
    assert (frame["value"].dtype, frame["count"].dtype) == ("float64", "int64")


def test_concurrent_apply_and_frame() -> None:
    table = ResultTable("update", max_rows=50)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for batch in range(200):
                table.apply(batch, [row(batch, "k", batch)])
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    thread = threading.Thread(target=writer)
    thread.start()
    while thread.is_alive():
        assert len(table.frame()) <= 50
    thread.join()
    assert not errors
    assert len(table) == 50
    assert table.evicted_rows == 150


def test_a_run_waits_for_its_first_batch_and_no_longer_than_asked(tmp_path) -> None:
    from types import SimpleNamespace

    import pandas as pd

    from streaming.engine.output.progress import ProgressLog
    from streaming.engine.output.sinks import FoldSink
    from streaming.engine.query.config import QueryConfig, RateSource
    from streaming.engine.run.query import Run

    query = SimpleNamespace(isActive=True)
    table = ResultTable("update")
    run = Run("first", QueryConfig(RateSource()), query, table, ProgressLog(), None, tmp_path, pd.Timestamp.now(), FoldSink(table))
    assert run.await_first_batch(0.2) is False  # nothing folded: gives up at the cap
    folding = threading.Timer(0.1, table.apply, args=(0, [row(0, "k", 1)]))
    folding.start()
    try:
        assert run.await_first_batch(30) is True and table.batches_applied == 1
    finally:
        folding.join()
    query.isActive = False
    ended = ResultTable("update")
    assert Run("ended", run.config, query, ended, ProgressLog(), None, tmp_path, pd.Timestamp.now(), FoldSink(ended)).await_first_batch(30) is False


@pytest.mark.parametrize("seed", range(30))
def test_a_frame_patched_batch_by_batch_equals_one_made_from_every_window(seed: int) -> None:
    """The frame is patched with the windows each batch touched; it must equal a frame made from scratch, whatever the batches."""
    import random

    rng = random.Random(seed)
    mode, aggregation, max_rows = rng.choice(["update", "append", "complete"]), rng.choice(["count", "sum"]), rng.choice([None, 4, 25, 300])
    patched, batches, clock = ResultTable(mode, aggregation, max_rows=max_rows), [], 0
    for batch in range(40):
        clock += rng.randint(-2, 4)  # now and then a batch brings windows before the last one
        rows = []
        for _ in range(rng.randint(0, 12)):
            start, _end = w(clock + rng.randint(-6, 2), rng.choice([5, 10]))
            key = rng.choice(["a", "b", "B", "é", "owl"])
            rows.append((start, _end, key, rng.randint(0, 9)) if aggregation == "count" else (start, _end, key, rng.choice([None, 1.5, 2.0]), rng.randint(1, 3)))
        batches.append(rows)
        patched.apply(batch, rows)
        if rng.random() < 0.6:
            whole = ResultTable(mode, aggregation, max_rows=max_rows)
            for number, earlier in enumerate(batches):
                whole.apply(number, earlier)
            pd.testing.assert_frame_equal(patched.frame(), whole.frame())


def test_batches_patch_the_frame_made_once_and_leave_earlier_frames_as_they_were(monkeypatch, tmp_path) -> None:
    """New keys inside a window already shown, updates and evictions are patched in; a table taken in from disk is made once again."""
    made: list[int] = []
    make = ResultTable._sorted_windows
    monkeypatch.setattr(ResultTable, "_sorted_windows", lambda table: made.append(1) or make(table))
    table, batches = ResultTable("update", max_rows=50), []
    table.keep(tmp_path / "result.json")
    batches.append([row(0, "b", 1)])
    table.apply(0, batches[0])
    first = table.frame()
    unchanged = first.copy(deep=True)
    for batch in range(1, 60):  # "a" lands before "b" in a window already framed; past 50 windows the oldest go
        batches.append([row(batch, "b", batch), row(batch - 1, "a", batch), row(batch, "a", 1)])
        table.apply(batch, batches[-1])
        table.frame()
    assert made == [1] and table.evicted_rows > 0
    pd.testing.assert_frame_equal(first, unchanged)
    whole = ResultTable("update", max_rows=50)
    for batch, rows in enumerate(batches):
        whole.apply(batch, rows)
    pd.testing.assert_frame_equal(table.frame(), whole.frame())
    again = ResultTable("update", max_rows=50)
    again.keep(tmp_path / "result.json")
    pd.testing.assert_frame_equal(again.frame(), whole.frame())
    assert made == [1, 1, 1]  # the fresh table, and the one taken in from disk


def test_a_table_nobody_frames_does_not_remember_its_changes_without_bound() -> None:
    table = ResultTable("update")
    table.apply(0, [row(0, "a", 1)])
    table.frame()  # watched once, then left
    for batch in range(1, 500):
        table.apply(batch, [row(batch, "a", batch)])
    assert table._touched is None  # the next frame is made from every window; nothing more is remembered
    assert len(table.frame()) == 500
