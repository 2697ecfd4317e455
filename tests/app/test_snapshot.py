"""A run as a refresh of its page shows it (:mod:`streaming.app.snapshot`): the parts that need no Spark."""

from __future__ import annotations

import gc
import json
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from streaming.app.snapshot import Draw, RunFrames, RunSnapshot, SharedFrames, draw_frames, progress_numbers, readable_dropped, snapshot
from streaming.engine.data.batching import Batching
from streaming.engine.data.columns import ColumnMapping
from streaming.engine.output.progress import ProgressLog
from streaming.engine.output.results import ResultTable
from streaming.engine.query.config import FeedSource, GeneratorSource, QueryConfig

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

    feed = QueryConfig(FeedSource(Path(__file__).resolve().parents[2] / "sample_feeds" / "guide_words", 2.0), arrival="busy")
    log = SimpleNamespace(no_data_batches=1)

    def frames(watermark: pd.Timestamp | None) -> RunFrames:
        return RunFrames(0, "active", pd.DataFrame(), pd.DataFrame(), watermark, {}, pd.DataFrame())

    replay = RunSnapshot(SimpleNamespace(config=feed, log=log), frames(pd.Timestamp("2013-01-23 20:53")), 3)  # type: ignore[arg-type]
    assert replay.watermark_text == "2013-01-23 20:53:00"
    assert replay.arrival_text.startswith("arrival busy: batches run back to back") and replay.arrival_text.endswith("· 1 no-data batch.")
    live = RunSnapshot(SimpleNamespace(config=QueryConfig(GeneratorSource()), log=log), frames(None), 3)  # type: ignore[arg-type]
    assert live.watermark_text == "none yet" and live.arrival_text.startswith("A live stream: when its data arrives decides")


@dataclass
class _Run:
    """What :class:`~streaming.app.snapshot.SharedFrames` reads of a run, fed without Spark: a real progress log and result table."""

    config: QueryConfig
    log: ProgressLog
    table: ResultTable
    status: str = "active"
    changed_at: tuple[int, ...] = ()
    name: str = "watched"
    key: str = field(default_factory=lambda: uuid.uuid4().hex)
    drained: bool = False
    stopping: bool = False

    def batch(self, batch_id: int) -> None:
        """Batch ``batch_id`` folded into the table, then its progress logged, as the sink and the listener do."""
        start_us = 1_709_542_800_000_000 + batch_id * 60_000_000
        self.table.apply(batch_id, [(start_us, start_us + 60_000_000, "a", batch_id + 1)])
        self.log.add(_progress(batch_id))


def _progress(batch_id: int) -> dict:
    """A batch that read 10 rows and left the watermark where it was (a stall, once there are enough of them)."""
    return {
        "name": "watched", "batchId": batch_id, "timestamp": f"2024-03-04T09:00:{batch_id:02d}.000Z", "numInputRows": 10,
        "durationMs": {"addBatch": 300, "triggerExecution": 400},
        "eventTime": {"max": "2024-03-04T09:00:00.000Z", "watermark": "2024-03-04T08:59:30.000Z"},
        "stateOperators": [{"operatorName": "stateStoreSave", "numRowsTotal": 3 + batch_id, "numRowsUpdated": 1, "numRowsDroppedByWatermark": 0}],
        "sources": [{"startOffset": None, "endOffset": None, "numInputRows": 10}],
    }


def _watched() -> _Run:
    config = QueryConfig(GeneratorSource())
    run = _Run(config, ProgressLog(), ResultTable(config.output_mode, config.aggregation))
    for batch_id in range(3):
        run.batch(batch_id)
    return run


def _counted(draws: list[str]) -> Draw:
    """:func:`draw_frames`, noting the run of each drawing in ``draws``."""

    def draw(run: Any, *read: Any) -> RunFrames:
        draws.append(run.name)
        return draw_frames(run, *read)

    return draw


def test_the_pages_watching_one_run_share_one_drawing_and_its_json_until_a_batch_or_its_status_changes_it() -> None:
    """Each viewer's page of a read-only link drew the same figures from the same batches again: the audience's cost grew with its size."""
    draws: list[str] = []
    shared, run = SharedFrames(_counted(draws)), _watched()
    presenter, viewer = RunSnapshot(run, shared.frames(run), 2), RunSnapshot(run, shared.frames(run), 100)  # type: ignore[arg-type]
    assert draws == ["watched"] and presenter.frames is viewer.frames
    assert presenter.sent("counts") is viewer.sent("counts") and json.loads(viewer.sent("counts"))["data"]
    assert [metric.value for metric in presenter.numbers()] == [metric.value for metric in viewer.numbers()]

    run.batch(3)
    later = shared.frames(run)  # type: ignore[arg-type]
    assert draws == ["watched"] * 2 and later is not presenter.frames and len(later.progress) == 4
    assert shared.frames(run) is later  # type: ignore[arg-type]
    run.status = "stopped"
    assert shared.frames(run).status == "stopped" and len(draws) == 3  # type: ignore[arg-type]


def test_a_pages_own_settings_stay_its_own_on_the_shared_frames() -> None:
    run = _watched()
    warned, calm = snapshot(run, stall_batches=2), snapshot(run, stall_batches=100)  # type: ignore[arg-type]
    assert warned.frames is calm.frames  # the server's one cache
    assert warned.stall is not None and warned.stall.batches == 2 and calm.stall is None
    assert snapshot(run, stall_batches=2).stall is not None  # type: ignore[arg-type]


def test_pages_refreshing_at_once_wait_for_one_drawing() -> None:
    draws: list[str] = []
    shared, run, entered, release = SharedFrames(_counted(draws)), _watched(), threading.Event(), threading.Event()
    draw = _counted(draws)

    def slow(*read: Any) -> RunFrames:
        entered.set()
        assert release.wait(10), "never released"
        return draw(*read)

    shared = SharedFrames(slow)
    got: list[RunFrames] = []
    pages = [threading.Thread(target=lambda: got.append(shared.frames(run))) for _ in range(2)]  # type: ignore[arg-type]
    pages[0].start()
    assert entered.wait(10), "the first page never drew"
    pages[1].start()
    release.set()
    for page in pages:
        page.join(10)
    assert len(got) == 2 and got[0] is got[1] and draws == ["watched"]


def test_a_run_let_go_is_dropped_from_the_shared_frames() -> None:
    shared, run = SharedFrames(), _watched()
    shared.frames(run)  # type: ignore[arg-type]
    assert len(shared) == 1
    del run
    gc.collect()
    assert len(shared) == 0
