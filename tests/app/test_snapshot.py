"""A run as a refresh of its page shows it (:mod:`streaming.app.snapshot`): the parts that need no Spark."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from streaming.app.snapshot import RunSnapshot, progress_numbers, readable_dropped
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


def test_the_watermark_shows_its_date_and_the_page_says_which_arrival_rule_ran() -> None:
    """Data spanning 23 days showed a watermark of "20:53:00" alone; and a Live run's answer depended on a rule the page did not name."""
    from types import SimpleNamespace

    from streaming.engine.query.config import GeneratorSource, QueryConfig

    feed = QueryConfig(FeedSource(Path(__file__).resolve().parents[2] / "sample_feeds" / "guide_words", 2.0), arrival="busy")
    log = SimpleNamespace(no_data_batches=1)
    replay = RunSnapshot(SimpleNamespace(config=feed, log=log), 0, "active", pd.DataFrame(), pd.DataFrame(), pd.Timestamp("2013-01-23 20:53"), 3, {}, pd.DataFrame())
    assert replay.watermark_text == "2013-01-23 20:53:00"
    assert replay.arrival_text.startswith("arrival busy: batches run back to back") and replay.arrival_text.endswith("· 1 no-data batch.")
    live = RunSnapshot(SimpleNamespace(config=QueryConfig(GeneratorSource()), log=log), 0, "active", pd.DataFrame(), pd.DataFrame(), None, 3, {}, pd.DataFrame())
    assert live.watermark_text == "none yet" and live.arrival_text.startswith("A live stream: when its data arrives decides")
