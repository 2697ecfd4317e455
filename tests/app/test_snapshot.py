"""A run as a refresh of its page shows it (:mod:`streaming.app.snapshot`): the parts that need no Spark."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from streaming.app.snapshot import progress_numbers, readable_dropped
from streaming.engine.data.batching import Batching
from streaming.engine.data.columns import ColumnMapping
from streaming.engine.query.config import FeedSource

EVENTS_JSONL = "".join(
    f'{{"ts": {1772460061000 + 7000 * index}, "user": "u{index % 3}", "amount": {index}.5}}\n' for index in range(12)
).encode()


def test_the_dropped_list_names_the_id_as_the_dataset_does_and_a_file_only_where_it_is_a_batch(tmp_path: Path) -> None:
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "part-0.jsonl").write_bytes(EVENTS_JSONL)
    columns = ColumnMapping(event_time="ts", time_format="epoch_ms", key="user", dedup_id="amount", arrival="user")
    dropped = pd.DataFrame({"event_id": [3], "id": ["3.5"], "file_index": [0], "batch_id": [2], "rule": ["window end at or before the watermark"]})
    by_file = readable_dropped(dropped, FeedSource(folder, 0, "json", columns))
    assert list(by_file.columns) == ["event_id", "amount", "file_index", "batch_id", "rule"]
    by_arrival = readable_dropped(dropped, FeedSource(folder, 0, "json", columns, Batching("user", "10 seconds")))
    assert list(by_arrival.columns) == ["event_id", "amount", "batch_id", "rule"]  # a batch cut by arrival time is no file



def test_a_reports_progress_phrase_sums_the_rows_read_and_dropped() -> None:
    progress = pd.DataFrame({"num_input_rows": [1200, 0, 7], "rows_dropped_by_watermark": [0, 0, 2]})
    assert progress_numbers(progress) == "3 micro-batches, 1,207 rows read, 2 rows dropped by the watermark"
    assert progress_numbers(progress.iloc[:0]) == "0 micro-batches, 0 rows read, 0 rows dropped by the watermark"
