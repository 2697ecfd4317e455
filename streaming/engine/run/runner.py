"""Headless replay: run a feed through a query until the stream is idle and report what the sink holds.

The same engine as the dashboard (:mod:`streaming.engine.run.query`), driven to
completion: every file becomes one micro-batch, in file-name order, handed
over as the query's arrival rule says (:mod:`streaming.engine.arrival`), and
the run ends once Spark has also run the batch it runs only because the
watermark advanced.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..arrival import DEFAULT_ARRIVAL, ArrivalRule, RuleFollowed
from ..errors import ConfigError
from ..output.progress import ProgressTotals, batch_records, progress_frame
from ..output.results import TIMESTAMP_FORMAT, stamp
from ..output.state import open_sessions as read_open_sessions
from ..query.config import FeedSource, OutputMode, QueryConfig
from ..sources.kafka import initial_offsets
from .registry import QueryRegistry

__all__ = ["TIMESTAMP_FORMAT", "Replay", "replay"]



@dataclass(frozen=True)
class Replay(ProgressTotals, RuleFollowed):
    """What a replay produced: the final result table and one summary row per batch."""

    config: QueryConfig
    result: pd.DataFrame
    progress: pd.DataFrame
    open_sessions: pd.DataFrame | None = None
    """For session windows when asked: the sessions still open at the end (``window_start, window_end, key, count``)."""
    summaries: tuple[dict[str, Any], ...] = ()
    """Every batch's progress summary (:func:`~streaming.engine.output.progress.summarize`, with its source offsets)."""
    initial_offsets: dict[str, dict[str, int]] | None = None
    """For a topic: where the query started reading (:func:`~streaming.engine.sources.kafka.initial_offsets`)."""
    latency: pd.DataFrame | None = None
    """For a source that stamps its rows (a topic, files, the generator): every record's latency entry (:meth:`~streaming.engine.output.latency.LatencyLog.frame`)."""
    outputs: dict[int, list[tuple]] | None = None
    """When asked: each batch's output rows as the sink received them, by batch id (:attr:`~streaming.engine.output.results.ResultTable.outputs`)."""

    @property
    def duplicates_dropped(self) -> int:
        """Rows dropped as duplicates of an id seen within the watermark (``deduplicate``)."""
        return self._total("duplicates_dropped")

    def result_records(self) -> list[dict[str, Any]]:
        """The result table as ``{"window_start", "window_end", "key", "count"}`` objects, sorted; a value aggregation adds ``value`` (null when Spark's is) before ``count``.

        A pass-through query's rows are ``{"event_time", "key"}`` objects.
        """
        if self.config.aggregation == "none":
            return [{"event_time": stamp(row.event_time), "key": row.key} for row in self.result.itertuples(index=False)]
        valued = "value" in self.result.columns
        return [
            {
                "window_start": stamp(row.window_start),
                "window_end": stamp(row.window_end),
                "key": row.key,
                **({"value": None if pd.isna(row.value) else float(row.value)} if valued else {}),
                "count": int(row.count),
            }
            for row in self.result.itertuples(index=False)
        ]

    def json_records(self) -> list[dict[str, Any]]:
        """The records of :meth:`result_records` with ``value`` (the aggregate; the count for a count) and ``key`` null when the data has no key column."""
        columns = self.config.source.columns
        keyless = columns is not None and columns.key is None
        if self.config.aggregation == "none":
            return [{**record, "key": None if keyless else record["key"]} for record in self.result_records()]
        return [
            {**record, "key": None if keyless else record["key"], "value": record.get("value", record["count"])}
            for record in self.result_records()
        ]

    @property
    def records(self) -> list[dict[str, Any]]:
        """The result table as JSON objects (:meth:`json_records`), as a SQL replay's ``records``: what a try's results are compared by."""
        return self.json_records()

    @property
    def ruled(self) -> QueryConfig:
        return self.config

    def to_json(self) -> dict[str, Any]:
        extra = self.config.source.replay_facts(self.summaries)
        return {
            **self.arrival_facts(),
            "result": self.json_records(),
            "rows_dropped_by_watermark": self.rows_dropped_by_watermark,
            "final_watermark": stamp(self.final_watermark),
            "input_rows": self.input_rows,
            "malformed_rows": self.malformed_rows,
            "duplicates_dropped": self.duplicates_dropped,
            "batches": batch_records(self.progress),
            **extra,
        }


def replay(
    registry: QueryRegistry,
    feed_dir: Path,
    *,
    window: str,
    slide: str | None = None,
    watermark: str | None = None,
    output_mode: OutputMode = "update",
    timeout: float = 600.0,
    latency: bool = False,
    arrival: ArrivalRule = DEFAULT_ARRIVAL,
) -> Replay:
    """Replay ``feed_dir`` through a windowed count per key and return the final result table (and, with ``latency``, each record's latency).

    Raises :class:`~streaming.engine.query.config.ConfigError` for a configuration Spark would
    refuse, before anything starts.
    """
    config = QueryConfig(
        source=FeedSource(Path(feed_dir), seconds_per_file=0),
        window=window,
        slide=slide,
        watermark=watermark,
        output_mode=output_mode,
        arrival=arrival,
    ).replayed("replayed")
    return run_to_idle(registry, config, timeout=timeout, latency=latency)


def run_to_idle(
    registry: QueryRegistry, config: QueryConfig, *, timeout: float = 600.0, open_sessions: bool = False, cancel: threading.Event | None = None,
    keep: Path | None = None, stop_after: int | None = None, progress: Callable[[int, int], None] | None = None, latency: bool = False,
    outputs: bool = False,
) -> Replay:
    """Run ``config`` (a feed source) until the stream is idle, stop it and return what it produced.

    Once ``cancel`` is set the run stops within a micro-batch, is removed, and
    :class:`~streaming.engine.errors.Cancelled` is raised. With ``open_sessions`` (session windows) the replay also holds the sessions
    its state still holds at the end (:func:`~streaming.engine.output.state.open_sessions`).

    With ``keep`` (a folder) the run keeps its checkpoint, result and progress
    there, or goes on from what an earlier run kept there (the folder must
    belong to the same configuration); the replay then holds the whole
    stream's result and batches. With ``stop_after`` it stops once that many
    of the feed's micro-batches (counted from the stream's start) have been
    handed over and processed. ``progress(done, total)`` follows a stepped
    replay file by file (:meth:`~streaming.engine.run.query.Run.await_idle`).
    With ``latency`` the replay measures each record's latency (:attr:`Replay.latency`); a replay that does not show it saves that cost.
    With ``outputs`` it keeps each batch's output rows (:attr:`Replay.outputs`).
    """

    if stop_after is not None and (isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 1):
        raise ConfigError("stop_after", stop_after, "must be a whole number of at least 1")
    started_as, hand_over = config, None
    if stop_after is not None and config.ran_arrival() == "busy":  # available-now would read every file: hand over the first steps only
        started_as, hand_over = config.with_changes(trigger="default", trigger_interval=None, arrival="busy"), stop_after
    name = f"replay_{uuid.uuid4().hex[:12]}"
    run = registry.start(
        started_as, name, max_rows=None, keep=False if keep is None else Path(keep), latency=latency, record_outputs=outputs, hand_over=hand_over,
    )
    try:
        run.await_idle(timeout, cancel, stop_after, progress)
        summaries = run.log.summaries()
        result, progress = run.table.frame(), progress_frame(summaries)
        run.stop()
        still_open = read_open_sessions(registry.spark, run.checkpoint) if open_sessions and config.session_gap is not None else None
        started = initial_offsets(run.checkpoint) if config.source.replays_offsets else None
        latencies = None if run.latency is None else run.latency.frame()
        return Replay(config, result, progress, still_open, tuple(summaries), started, latencies, run.table.outputs)
    finally:
        registry.remove(name)

