"""Folding Spark progress dicts into frames, with canned progress (no Spark session)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from streaming.engine.output.progress import (
    PROGRESS_COLUMNS,
    ProgressJson,
    ProgressListener,
    ProgressLog,
    breakdown_frame,
    progress_frame,
    summarize,
)

# Batch 0 of the guide example as Spark 4.3.0 reported it (update mode, 10-minute
# watermark, the query's observe() metrics): first batch, watermark still the epoch.
SPARK_43_BATCH_0 = json.loads(
    """
{"id": "c699a656-07ce-43fe-894b-08ec6eed9677", "runId": "63b8666a-928d-4480-8813-5837f7eb76ac", "name": "probe",
 "timestamp": "2026-11-21T06:22:35.894Z", "batchId": 0, "batchDuration": 11427, "numInputRows": 2,
 "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 0.2,
 "durationMs": {"addBatch": 9236, "commitOffsets": 299, "getBatch": 318, "latestOffset": 131, "queryPlanning": 1284,
                "triggerExecution": 11416, "walCommit": 81},
 "eventTime": {"avg": "2016-05-10T12:07:30.000Z", "max": "2016-05-10T12:08:00.000Z", "min": "2016-05-10T12:07:00.000Z",
               "watermark": "1970-01-01T00:00:00.000Z"},
 "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 4, "numRowsUpdated": 4, "allUpdatesTimeMs": 422,
                     "numRowsRemoved": 0, "allRemovalsTimeMs": 20, "commitTimeMs": 335, "memoryUsedBytes": 1616,
                     "numRowsDroppedByWatermark": 0, "numShufflePartitions": 2, "numStateStoreInstances": 2,
                     "customMetrics": {"SnapshotLastUploaded.partition_0_default": -1, "forceSnapshotCount": 0,
                                       "loadedMapCacheHitCount": 0, "loadedMapCacheMissCount": 0,
                                       "numSnapshotsAutoRepaired": 0, "stateOnCurrentVersionSizeBytes": 1328}}],
 "sources": [{"description": "FileStreamSource[file:/tmp/streaming-lab-probe-03cbrx75/staging]", "startOffset": null,
              "endOffset": {"logOffset": 0}, "latestOffset": null, "numInputRows": 2, "inputRowsPerSecond": 0.0,
              "processedRowsPerSecond": 0.2}],
 "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
 "observedMetrics": {"input": {"input_rows": 2, "malformed_rows": 0}}}
"""
)

# The no-data batch Spark ran next, only because the watermark advanced: eventTime holds just the watermark.
SPARK_43_BATCH_1 = json.loads(
    """
{"id": "c699a656-07ce-43fe-894b-08ec6eed9677", "runId": "63b8666a-928d-4480-8813-5837f7eb76ac", "name": "probe",
 "timestamp": "2026-11-21T06:22:47.366Z", "batchId": 1, "batchDuration": 3058, "numInputRows": 0,
 "inputRowsPerSecond": 0.0, "processedRowsPerSecond": 0.0,
 "durationMs": {"addBatch": 2524, "commitOffsets": 45, "getBatch": 0, "latestOffset": 11, "queryPlanning": 355,
                "triggerExecution": 3057, "walCommit": 60},
 "eventTime": {"watermark": "2016-05-10T11:58:00.000Z"},
 "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 4, "numRowsUpdated": 0, "numRowsRemoved": 0,
                     "memoryUsedBytes": 2176, "numRowsDroppedByWatermark": 0}],
 "sources": [{"description": "FileStreamSource[file:/tmp/x/staging]", "startOffset": {"logOffset": 0},
              "endOffset": {"logOffset": 0}, "latestOffset": null, "numInputRows": 0}],
 "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
 "observedMetrics": {"input": {"input_rows": 0, "malformed_rows": 0}}}
"""
)


def canned(batch_id: int, **overrides: object) -> dict:
    """A minimal progress dict for ``batch_id``; ``overrides`` replace top-level keys."""
    progress = {
        "name": "q",
        "batchId": batch_id,
        "timestamp": f"2024-03-04T09:00:{batch_id:02d}.000Z",
        "numInputRows": 10,
        "inputRowsPerSecond": 5.0,
        "processedRowsPerSecond": 20.0,
        "durationMs": {"addBatch": 300, "getBatch": 5, "triggerExecution": 400},
        "eventTime": {"max": "2024-03-04T09:00:00.000Z", "watermark": "2024-03-04T08:59:30.000Z"},
        "stateOperators": [],
        "sources": [{"startOffset": {"logOffset": batch_id - 1}, "endOffset": {"logOffset": batch_id}}],
    }
    progress.update(overrides)
    return progress


def test_real_first_batch_epoch_watermark_is_nat() -> None:
    row = summarize(SPARK_43_BATCH_0)
    assert row["batch_id"] == 0
    assert row["timestamp"] == pd.Timestamp("2026-11-21 06:22:35.894")
    assert row["timestamp"].dtype == np.dtype("datetime64[ns]")  # UTC-naive
    assert row["num_input_rows"] == 2
    assert row["processed_rows_per_second"] == pytest.approx(0.2)
    assert row["batch_duration_ms"] == 11416  # triggerExecution, not batchDuration
    assert np.isnat(row["watermark"])
    assert row["max_event_time"] == pd.Timestamp("2016-05-10 12:08:00")
    assert math.isnan(row["watermark_gap_seconds"])
    assert row["state_rows_total"] == 4
    assert row["state_rows_updated"] == 4
    assert row["state_memory_bytes"] == 1616
    assert row["rows_dropped_by_watermark"] == 0
    assert row["malformed_rows"] == 0
    assert row["source_offsets"] == (None, '{"logOffset": 0}')
    assert dict(row["durations"])["addBatch"] == 9236


def test_real_no_data_batch() -> None:
    row = summarize(SPARK_43_BATCH_1)
    assert row["num_input_rows"] == 0
    assert row["watermark"] == pd.Timestamp("2016-05-10 11:58:00")
    assert np.isnat(row["max_event_time"])
    assert row["watermark_gap_seconds"] == pytest.approx(
        (pd.Timestamp("2026-11-21 06:22:47.366") - pd.Timestamp("2016-05-10 11:58:00")).total_seconds()
    )
    assert row["source_offsets"] == ('{"logOffset": 0}', '{"logOffset": 0}')


def test_event_time_without_watermark() -> None:
    row = summarize(canned(0, eventTime={"max": "2024-03-04T09:00:00.000Z", "min": "2024-03-04T08:59:50.000Z"}))
    assert np.isnat(row["watermark"])
    assert row["max_event_time"] == pd.Timestamp("2024-03-04 09:00:00")
    assert math.isnan(row["watermark_gap_seconds"])


def test_no_event_time_at_all() -> None:
    progress = canned(0)
    del progress["eventTime"]
    row = summarize(progress)
    assert np.isnat(row["watermark"]) and np.isnat(row["max_event_time"])


def test_watermark_gap() -> None:
    row = summarize(canned(5))
    # batch timestamp 09:00:05, watermark 08:59:30
    assert row["watermark_gap_seconds"] == pytest.approx(35.0)


def test_state_operators_are_summed() -> None:
    operators = [
        {"numRowsTotal": 4, "numRowsUpdated": 2, "numRowsRemoved": 1, "memoryUsedBytes": 100, "numRowsDroppedByWatermark": 3},
        {"numRowsTotal": 6, "numRowsUpdated": 5, "numRowsRemoved": 0, "memoryUsedBytes": 250, "numRowsDroppedByWatermark": 2},
        {"numRowsTotal": 1},  # missing metrics count as 0
    ]
    row = summarize(canned(1, stateOperators=operators))
    assert row["state_rows_total"] == 11
    assert row["state_rows_updated"] == 7
    assert row["state_rows_removed"] == 1
    assert row["state_memory_bytes"] == 350
    assert row["rows_dropped_by_watermark"] == 5


def test_observed_malformed_rows() -> None:
    progress = canned(2, observedMetrics={"input": {"input_rows": 50, "malformed_rows": 3}})
    assert summarize(progress)["malformed_rows"] == 3


def test_observed_metrics_absent_or_null() -> None:
    assert summarize(canned(2))["malformed_rows"] == 0
    assert summarize(canned(2, observedMetrics=None))["malformed_rows"] == 0
    assert summarize(canned(2, observedMetrics={"input": {"input_rows": 0, "malformed_rows": None}}))["malformed_rows"] == 0


def test_batch_duration_falls_back_without_trigger_execution() -> None:
    row = summarize(canned(3, durationMs={"addBatch": 70, "walCommit": 9}, batchDuration=123))
    assert row["batch_duration_ms"] == 123
    assert dict(row["durations"]) == {"addBatch": 70, "walCommit": 9}
    assert summarize(canned(3, durationMs={}))["batch_duration_ms"] == 0


def test_a_kept_summary_is_left_out_of_full_collections() -> None:
    """Hours of batches must not grow what a full collection walks: a summary holds nothing the collector keeps tracking."""
    import gc

    operators = [{"numRowsTotal": 4, "customMetrics": {"rocksdbSstFileSize": 10, "loadedMapCacheHitCount": 2}}]
    row = summarize({**SPARK_43_BATCH_1, "stateOperators": operators})
    for _ in range(3):  # tuples are let go first, then the dict holding them
        gc.collect()
    assert not gc.is_tracked(row), [name for name, value in row.items() if gc.is_tracked(value)]


def test_no_sources() -> None:
    assert summarize(canned(0, sources=[]))["source_offsets"] == (None, None)


def test_progress_frame_one_row_per_batch_later_wins() -> None:
    first = summarize(canned(0, numInputRows=1))
    again = summarize(canned(0, numInputRows=7))
    one = summarize(canned(1))
    frame = progress_frame([one, first, again])
    assert list(frame.columns) == PROGRESS_COLUMNS
    assert frame["batch_id"].tolist() == [0, 1]
    assert frame["num_input_rows"].tolist() == [7, 10]


def test_progress_frame_cumulative_drops() -> None:
    drops = [0, 2, 0, 5, 1]
    summaries = [summarize(canned(i, stateOperators=[{"numRowsDroppedByWatermark": d}])) for i, d in enumerate(drops)]
    frame = progress_frame(summaries)
    assert frame["rows_dropped_by_watermark"].tolist() == drops
    assert frame["cumulative_rows_dropped"].tolist() == [0, 2, 2, 7, 8]


def test_progress_frame_timestamps_and_nat() -> None:
    frame = progress_frame([summarize(SPARK_43_BATCH_0), summarize(SPARK_43_BATCH_1)])
    for column in ("timestamp", "watermark", "max_event_time"):
        assert pd.api.types.is_datetime64_dtype(frame[column]), column
    assert pd.isna(frame.loc[0, "watermark"])
    assert frame.loc[1, "watermark"] == pd.Timestamp("2016-05-10 11:58:00")
    assert pd.isna(frame.loc[1, "max_event_time"])


def test_progress_frame_empty_has_columns() -> None:
    frame = progress_frame([])
    assert frame.empty
    assert list(frame.columns) == PROGRESS_COLUMNS


def test_breakdown_frame_leaves_out_trigger_execution() -> None:
    summaries = [summarize(SPARK_43_BATCH_0), summarize(canned(1, durationMs={"addBatch": 10, "triggerExecution": 12}))]
    frame = breakdown_frame(summaries)
    assert list(frame.columns) == ["batch_id", "phase", "ms"]
    assert "triggerExecution" not in set(frame["phase"])
    batch0 = frame[frame["batch_id"] == 0].set_index("phase")["ms"].to_dict()
    assert batch0 == {"addBatch": 9236, "commitOffsets": 299, "getBatch": 318, "latestOffset": 131, "queryPlanning": 1284, "walCommit": 81}
    assert frame[frame["batch_id"] == 1][["phase", "ms"]].values.tolist() == [["addBatch", 10]]


def test_breakdown_frame_duplicate_batch_and_empty() -> None:
    summaries = [summarize(canned(0, durationMs={"addBatch": 1})), summarize(canned(0, durationMs={"addBatch": 2}))]
    assert breakdown_frame(summaries).values.tolist() == [[0, "addBatch", 2]]
    assert breakdown_frame([]).empty


def test_progress_log_keeps_every_batch_and_latest() -> None:
    log = ProgressLog()
    assert log.last_batch_id == -1 and log.latest is None and len(log) == 0
    log.add(SPARK_43_BATCH_1)
    log.add(SPARK_43_BATCH_0)
    log.add(SPARK_43_BATCH_0)  # the same batch reported again: still one entry
    assert len(log) == 2
    assert log.last_batch_id == 1
    assert [s["batch_id"] for s in log.summaries()] == [0, 1]
    assert log.latest["batchId"] == 0  # the most recently added raw progress


def event(progress: dict) -> SimpleNamespace:
    return SimpleNamespace(progress=SimpleNamespace(json=json.dumps(progress)))


def jevent(progress: dict) -> SimpleNamespace:
    """What the JVM hands :class:`ProgressJson`: an event whose ``progress()`` has a ``json()``."""
    text = json.dumps(progress)
    return SimpleNamespace(progress=lambda: SimpleNamespace(json=lambda: text))


def test_listener_routes_by_query_name() -> None:
    listener = ProgressListener()
    mine, other = ProgressLog(), ProgressLog()
    listener.register("mine", mine)
    listener.register("other", other)
    listener.onQueryProgress(event(canned(0, name="mine")))
    listener.onQueryProgress(event(canned(1, name="mine")))
    listener.onQueryProgress(event(canned(0, name="other")))
    listener.onQueryProgress(event(canned(0, name="stranger")))
    listener.onQueryProgress(event(canned(0, name=None)))
    assert [s["batch_id"] for s in mine.summaries()] == [0, 1]
    assert [s["batch_id"] for s in other.summaries()] == [0]
    listener.unregister("mine")
    listener.onQueryProgress(event(canned(2, name="mine")))
    assert mine.last_batch_id == 1


def test_the_jvm_bridge_hands_each_progress_json_to_the_listener() -> None:
    listener = ProgressListener()
    mine = ProgressLog()
    listener.register("mine", mine)
    bridge = ProgressJson(listener)
    for batch in (0, 1):
        bridge.onQueryProgress(jevent(canned(batch, name="mine")))
    bridge.onQueryIdle(None)
    bridge.onQueryTerminated(None)
    assert [s["batch_id"] for s in mine.summaries()] == [0, 1]
    no_rates = {key: value for key, value in canned(2, name="mine").items() if not key.endswith("RowsPerSecond")}
    bridge.onQueryProgress(jevent(no_rates))
    assert math.isnan(mine.summaries()[-1]["input_rows_per_second"])  # Spark leaves a NaN rate out of the JSON


def test_log_frames_fold_new_batches_and_equal_a_full_rebuild() -> None:
    log = ProgressLog()
    drops = {1: 2, 3: 1, 6: 4}

    def add(batch: int) -> None:
        log.add(canned(batch, stateOperators=[{"numRowsTotal": batch, "numRowsDroppedByWatermark": drops.get(batch, 0)}]))

    def assert_matches_rebuild() -> None:
        progress, breakdown = log.frames()
        pd.testing.assert_frame_equal(progress, progress_frame(log.summaries()))
        pd.testing.assert_frame_equal(breakdown, breakdown_frame(log.summaries()))

    assert log.frames()[0].empty  # a refresh before the first batch
    for batch in range(4):
        add(batch)
    assert_matches_rebuild()
    assert str(log.frames()[0]["watermark"].dtype) == "datetime64[ns]"
    for batch in range(4, 8):
        add(batch)
    assert_matches_rebuild()
    assert list(log.frames()[0]["cumulative_rows_dropped"]) == [0, 2, 2, 3, 3, 3, 7, 7]
    add(0)  # Spark can report batch 0 twice: the frames start over
    assert_matches_rebuild()
    assert len(log.frames()[0]) == 8


def test_log_draws_the_rows_the_rule_draws_as_batches_arrive_and_after_a_restart() -> None:
    from streaming.charts.common import drawn_rows

    log = ProgressLog()
    columns = ("rows_dropped_by_watermark", "batch_duration_ms")

    def add(batch: int, dropped: int | None = None) -> None:
        log.add(canned(batch, timestamp="2024-03-04T09:00:00.000Z", durationMs={"triggerExecution": (batch * 37) % 101},
                       stateOperators=[{"numRowsDroppedByWatermark": (batch * 13) % 7 if dropped is None else dropped}]))

    def assert_drawn_as_by_the_rule() -> None:
        progress, _ = log.frames()
        np.testing.assert_array_equal(log.drawn(columns, len(progress), 40), drawn_rows(progress, columns, max_points=40))

    for batch in range(300):
        add(batch)
        if batch % 23 == 0:
            assert_drawn_as_by_the_rule()
    assert_drawn_as_by_the_rule()
    add(150, dropped=1_000_000)  # a batch reported again, now with a spike: the log starts its columns, and what it found, over
    assert_drawn_as_by_the_rule()
    progress, _ = log.frames()
    assert 150 in progress["batch_id"].to_numpy()[log.drawn(columns, len(progress), 40)]
    for batch in range(300, 420):
        add(batch)
    assert_drawn_as_by_the_rule()
    progress, _ = log.frames()
    assert len(log.drawn(columns, len(progress), 40)) < len(progress)


def test_a_frame_keeps_its_rows_while_the_log_grows_and_refuses_writes() -> None:
    log = ProgressLog()

    def add(batch: int, rows: int) -> None:
        log.add(canned(batch, numInputRows=rows, timestamp="2024-03-04T09:00:00.000Z"))

    for batch in range(10):
        add(batch, batch)
    early, _ = log.frames()
    kept = early.copy(deep=True)
    for batch in range(10, 300):  # the columns are copied into larger ones several times
        add(batch, batch)
        if batch % 40 == 0:
            log.frames()
    add(5, 555)  # reported again: the columns start over
    assert len(log.frames()[0]) == 300 and log.frames()[0]["num_input_rows"].iloc[5] == 555
    pd.testing.assert_frame_equal(early, kept)
    with pytest.raises(ValueError, match="read-only"):
        early["num_input_rows"].to_numpy()[0] = 99
    with pytest.raises(ValueError, match="rows: 301 is more than the 300 batches framed"):
        log.drawn(("num_input_rows",), 301, 40)
