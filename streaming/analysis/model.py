"""The watermark model: what Spark's watermark does to a windowed aggregation, for every delay at once.

The rules are those of :mod:`streaming.analysis.lateness` (checked there
against real replays), applied to a stepped replay -- one micro-batch per
batch of the data, Spark running the no-data batch that advances the
watermark before the next batch is handed over, each batch read as one
partition:

* ``M[i]`` is the largest event time (in milliseconds, as Spark keeps it) of
  batches ``0..i``. Batch ``i`` is checked against the watermark
  ``M[i-1] - delay``; batch 0 against none.
* An (event, window) pair of batch ``i`` is dropped when its window's end is at
  or before that watermark, i.e. when ``delay <= M[i-1] - end``. That
  difference, the pair's *slack*, does not depend on the delay, so the pairs
  every delay drops come from one sorted array: a sweep costs one sort and a
  binary search per delay, whatever the number of events.
* Spark's ``numRowsDroppedByWatermark`` counts (batch, window, key) groups with
  a dropped pair; all pairs of such a group share their slack.
* A batch that raises ``M`` is followed by a no-data batch (the watermark
  moved): micro-batch ids do not depend on the delay.
* Update mode keeps a (window, key) group in the state from the batch of its
  first counted pair until the no-data batch after the first batch ``e`` with
  ``M[e] - delay >= end``; its later pairs are counted while they are not late
  (the slack only grows), so a group is ever counted iff its first pair is.
* Append mode emits a window in that same no-data batch (output delay: ``M[e]
  - end`` in event time, batches since the first batch whose clock reached
  ``end``), as :func:`streaming.analysis.measure.emission_frame` derives it
  from a real run.

A **catch-up** replay (a topic read under the available-now trigger, where
every batch's data is there before it starts) runs no no-data batch between
batches, only one at the end when the last batch moved the watermark; the
rules shift by one batch (checked against real replays of topics in
``tests/engine/test_kafka.py``):

* Batch ``i`` is checked against ``M[i-2] - delay`` (the watermark batch ``i-1``
  evicted with); batches 0 and 1 against none.
* A group leaves the state, and append mode emits a window, in the batch after
  the first batch ``e`` with ``M[e] - delay >= end`` (the final no-data batch
  after the last one), or in the group's first batch when that is later.
* Each batch is read as one partition per topic partition: Spark's dropped-row
  count counts (batch, partition, window, key) groups.

It covers a count or value aggregate over fixed windows, by key or global,
without deduplication (a deduplication drops events by their own time, and a
session's end moves with its events): the tuner runs Spark for the others.
Everything here is a pure function of numpy arrays and pandas frames.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine.errors import ConfigError
from ..engine.query.config import QueryConfig
from .lateness import completeness
from .measure import emission_frame
from .windows import NS_PER_MS, window_pairs, window_span

__all__ = ["SWEEP_COLUMNS", "Expansion", "Timeline", "covers", "covers_shape", "delay_frames", "expand", "grid", "sweep"]

NONE = np.iinfo(np.int64).min // 4
"""``M`` before any event: below every slack, so nothing is dropped against it."""

SWEEP_COLUMNS = [
    "delay_ms", "completeness", "counted", "exact", "lost_pairs", "dropped_groups", "windows_lost",
    "peak_state_rows", "mean_state_rows", "output_delay_seconds", "max_output_delay_seconds",
    "output_delay_batches", "max_output_delay_batches", "windows_emitted", "windows_never_emitted", "batches",
]


def covers(config: QueryConfig) -> str | None:
    """``None`` when the model answers exactly for ``config``'s shape, else why not (the tuner then runs Spark for every delay)."""
    source = config.source
    if not source.fixed:
        return "the model needs a feed, a dataset or one topic replayed over fixed offsets"
    if source.replays_offsets and config.trigger != "available_now":
        return "the model needs one topic replayed over fixed offsets under the available-now trigger"
    return covers_shape(config)


def covers_shape(config: QueryConfig) -> str | None:
    """:func:`covers` for the query's shape alone: ``None`` when the model answers exactly for it once its source is replayed over fixed
    offsets (as a sweep bounds a topic when it starts), else why not."""
    if config.session_gap is not None:
        return "session windows end where their events end: Spark is run for every delay"
    if config.deduplicate:
        return "deduplication drops events by their own time before the aggregation: Spark is run for every delay"
    if config.aggregation == "none":
        return "a watermark drops rows only for an aggregation"
    return None


@dataclass(frozen=True, eq=False)
class Timeline:
    """A feed as the model sees it: each well-formed event's time (epoch ns), key code and micro-batch, and the number of micro-batches."""

    event_ns: np.ndarray
    key_code: np.ndarray
    keys: np.ndarray
    """The key of each code."""
    batch: np.ndarray
    batches: int
    catch_up: bool = False
    """A catch-up replay (see the module docstring): no no-data batch between batches."""
    part: np.ndarray | None = None
    """Each event's input partition within its batch (a topic's partition); ``None``: one partition."""

    def __post_init__(self) -> None:
        if not len(self.event_ns) == len(self.key_code) == len(self.batch):
            raise ConfigError("timeline", len(self.event_ns), "needs one key code and one batch per event")
        if self.part is not None and len(self.part) != len(self.batch):
            raise ConfigError("timeline", len(self.part), "needs one partition per event")
        if len(self.batch) and (self.batch.min() < 0 or self.batch.max() >= self.batches):
            raise ConfigError("batches", self.batches, "must be more than every event's batch index")

    @classmethod
    def of(cls, events: pd.DataFrame, batches: int | None = None, *, catch_up: bool = False) -> Timeline:
        """From a frame with ``event_time``, ``key`` and ``file_index`` (the micro-batch), as :func:`~streaming.analysis.profile.feed_events_of` gives it.

        A ``partition`` column (:func:`~streaming.analysis.profile.topic_events_of`) is each event's input partition.
        """
        codes, keys = pd.factorize(events["key"].astype("object"), sort=True)
        batch = events["file_index"].to_numpy("int64")
        count = int(batch.max()) + 1 if len(batch) else 0
        return cls(
            event_ns=events["event_time"].to_numpy("datetime64[ns]").astype("int64"),
            key_code=codes.astype("int64"),
            keys=np.asarray(keys, dtype=object),
            batch=batch,
            batches=max(count, batches or 0),
            catch_up=catch_up,
            part=events["partition"].to_numpy("int64") if "partition" in events else None,
        )

    def clock(self) -> np.ndarray:
        """``M``: per micro-batch, the largest event time (ms precision, in ns) of it and the ones before; :data:`NONE` before the first event."""
        latest = np.full(self.batches, NONE, dtype="int64")
        np.maximum.at(latest, self.batch, (self.event_ns // NS_PER_MS) * NS_PER_MS)
        return np.maximum.accumulate(latest) if self.batches else latest

    def positions(self) -> tuple[np.ndarray, np.ndarray, int]:
        """``(file_batch, no_data_batch, total)``: the micro-batch id of each batch of data, of the no-data batch after it (-1 when the watermark did not move), and how many micro-batches run."""
        clock = self.clock()
        before = np.concatenate(([NONE], clock[:-1])) if self.batches else clock
        advances = (clock > before).astype("int64")
        if self.catch_up:  # evictions of batch e happen in batch e + 1; after the last, in a no-data batch if it moved the clock
            final = int(self.batches > 0 and advances[-1])
            no_data = np.arange(1, self.batches + 1, dtype="int64")
            if self.batches and not final:
                no_data[-1] = -1
            return np.arange(self.batches, dtype="int64"), no_data, self.batches + final
        file_batch = np.arange(self.batches, dtype="int64") + np.concatenate(([0], np.cumsum(advances)[:-1])) if self.batches else advances
        no_data = np.where(advances == 1, file_batch + 1, -1)
        return file_batch, no_data, int(self.batches + advances.sum())


@dataclass(frozen=True, eq=False)
class Expansion:
    """A timeline's (event, window) pairs for one window shape, with what the sweep needs of them."""

    window_ns: int
    starts: np.ndarray
    """Each window's start (ns), sorted; a pair's window is an index into it."""
    pair_window: np.ndarray
    pair_group: np.ndarray
    """The pair's (window, key) group: an index into ``group_window`` and ``group_key``."""
    pair_slack: np.ndarray
    group_window: np.ndarray
    group_key: np.ndarray
    group_first_batch: np.ndarray
    group_first_slack: np.ndarray
    batch_groups_slack: np.ndarray
    """The slack of every (batch, window, key) group, sorted: what Spark's dropped-row count counts."""
    sorted_slack: np.ndarray
    window_min_slack: np.ndarray
    """Per window, the smallest slack of its pairs: the window holds a counted pair for every delay above it."""

    @property
    def ends(self) -> np.ndarray:
        return self.starts + self.window_ns


def expand(timeline: Timeline, window_ms: int, slide_ms: int | None = None) -> Expansion:
    """Every (event, window) pair of ``timeline`` for windows of ``window_ms`` sliding by ``slide_ms`` (tumbling when ``None``), aligned to the epoch."""
    window_ns, slide_ns = window_span(window_ms, slide_ms)
    event, start = window_pairs(timeline.event_ns, window_ns, slide_ns)
    clock = timeline.clock()
    batch = timeline.batch[event]
    lag = 2 if timeline.catch_up else 1
    previous = np.where(batch >= lag, clock[np.maximum(batch - lag, 0)], NONE)
    starts, pair_window = np.unique(start, return_inverse=True)
    ends = starts + window_ns
    slack = np.where(previous == NONE, NONE, previous - ends[pair_window])
    keys = max(len(timeline.keys), 1)
    groups, pair_group = np.unique(pair_window.astype("int64") * keys + timeline.key_code[event], return_inverse=True)
    order = np.lexsort((batch, pair_group))  # each group's pairs by batch: its first pair first
    first = order[np.r_[True, pair_group[order][1:] != pair_group[order][:-1]]] if len(order) else order
    partition = np.zeros(len(event), dtype="int64") if timeline.part is None else timeline.part[event]
    partitions = int(partition.max()) + 1 if len(partition) else 1
    batch_groups = np.unique((pair_group.astype("int64") * max(timeline.batches, 1) + batch) * partitions + partition, return_index=True)[1]
    window_min_slack = np.full(len(starts), np.iinfo(np.int64).max, dtype="int64")
    np.minimum.at(window_min_slack, pair_window, slack)
    return Expansion(
        window_ns=window_ns,
        starts=starts,
        pair_window=pair_window,
        pair_group=pair_group,
        pair_slack=slack,
        group_window=groups // keys,
        group_key=groups % keys,
        group_first_batch=batch[first],
        group_first_slack=slack[first],
        batch_groups_slack=np.sort(slack[batch_groups]),
        sorted_slack=np.sort(slack),
        window_min_slack=window_min_slack,
    )


def _at_least(sorted_values: np.ndarray, delays: np.ndarray) -> np.ndarray:
    """How many of ``sorted_values`` are ``>= delay``, for each delay."""
    return len(sorted_values) - np.searchsorted(sorted_values, delays, side="left")


def sweep(timeline: Timeline, expansion: Expansion, delays_ms: Sequence[int]) -> pd.DataFrame:
    """One row per delay (:data:`SWEEP_COLUMNS`) of what a stepped update-mode replay under that watermark delay measures.

    ``completeness`` = counted ÷ exact (event, window) pairs; ``dropped_groups``
    is Spark's ``rows_dropped_by_watermark``; state rows are counted after each
    micro-batch, no-data batches included; the output delay is append mode's,
    over the windows with a counted pair.
    """
    delays = np.asarray(delays_ms, dtype="int64") * NS_PER_MS
    exact = len(expansion.sorted_slack)
    dropped = _at_least(expansion.sorted_slack, delays)
    counted = exact - dropped
    clock = timeline.clock()
    file_batch, no_data, total = timeline.positions()
    ends = expansion.ends
    group_end = ends[expansion.group_window]
    reached = np.searchsorted(clock, ends, side="left")  # the first batch whose clock reached each window's end
    rows = []
    for delay, kept in zip(delays, counted):
        # state: a group counted at all enters with its first pair and leaves after the batch whose clock passes end + delay
        live = expansion.group_first_slack < delay
        first = expansion.group_first_batch[live]
        reach = np.searchsorted(clock, group_end[live] + delay, side="left")
        if timeline.catch_up:
            leaves_at = np.where(reach < timeline.batches, np.maximum(first, reach + 1), total)
        else:
            leave = np.maximum(first, reach)
            leaves_at = np.where(leave < timeline.batches, no_data[np.minimum(leave, timeline.batches - 1)], total)
        entering = np.bincount(file_batch[first], minlength=total + 1)
        leaving = np.bincount(leaves_at, minlength=total + 1)
        state = np.cumsum(entering - leaving)[:total]
        # append-mode emission of every window with a counted pair
        windows = expansion.window_min_slack < delay
        emit = np.searchsorted(clock, ends[windows] + delay, side="left")
        emitted = emit < timeline.batches
        seen = np.minimum(emit[emitted] + int(timeline.catch_up), timeline.batches - 1)  # the clock of the batch that emits
        seconds = (clock[seen] - ends[windows][emitted]) / 1e9
        batches = no_data[emit[emitted]] - file_batch[reached[windows][emitted]]
        rows.append(
            {
                "delay_ms": int(delay // NS_PER_MS),
                "completeness": 1.0 if exact == 0 else float(kept) / exact,
                "counted": int(kept),
                "exact": exact,
                "lost_pairs": int(exact - kept),
                "dropped_groups": int(_at_least(expansion.batch_groups_slack, np.array([delay]))[0]),
                "windows_lost": int(len(expansion.starts) - windows.sum()),
                "peak_state_rows": int(state.max()) if total else 0,
                "mean_state_rows": float(state.mean()) if total else 0.0,
                "output_delay_seconds": float(seconds.mean()) if len(seconds) else None,
                "max_output_delay_seconds": float(seconds.max()) if len(seconds) else None,
                "output_delay_batches": float(batches.mean()) if len(batches) else None,
                "max_output_delay_batches": int(batches.max()) if len(batches) else None,
                "windows_emitted": int(emitted.sum()),
                "windows_never_emitted": int((~emitted).sum()),
                "batches": total,
            }
        )
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def delay_frames(timeline: Timeline, expansion: Expansion, delay_ms: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``(result, exact, per_window, emissions)`` of one delay, in the frames a real run's measures have.

    ``result`` is the final update-mode result table (``window_start,
    window_end, key, count``), ``exact`` the answer without a watermark,
    ``per_window`` completeness per window
    (:func:`~streaming.analysis.lateness.completeness`), ``emissions`` as
    :func:`~streaming.analysis.measure.emission_frame` gives them.
    """
    delay = int(delay_ms) * NS_PER_MS
    groups = len(expansion.group_window)
    kept = np.bincount(expansion.pair_group[expansion.pair_slack < delay], minlength=groups)
    every = np.bincount(expansion.pair_group, minlength=groups)

    def table(counts: np.ndarray) -> pd.DataFrame:
        present = counts > 0
        windows = expansion.group_window[present]
        return pd.DataFrame(
            {
                "window_start": expansion.starts[windows].astype("datetime64[ns]"),
                "window_end": expansion.ends[windows].astype("datetime64[ns]"),
                "key": timeline.keys[expansion.group_key[present]] if len(timeline.keys) else np.empty(0, dtype=object),
                "count": counts[present].astype("int64"),
            }
        ).sort_values(["window_start", "window_end", "key"], ignore_index=True)

    result, exact = table(kept), table(every)
    _, per_window = completeness(result, exact)
    return result, exact, per_window, emission_frame(result, _progress(timeline, int(delay_ms)))


def _progress(timeline: Timeline, delay_ms: int) -> pd.DataFrame:
    """The micro-batches of a replay under ``delay_ms`` as a progress frame holds them: ``batch_id``, ``watermark`` (the one each batch applies), ``max_event_time``."""
    clock = timeline.clock()
    file_batch, no_data, _ = timeline.positions()
    before = np.concatenate(([NONE], clock[:-1])) if timeline.batches else clock
    delay = int(delay_ms) * NS_PER_MS
    after = no_data == timeline.batches if timeline.catch_up else no_data >= 0  # the no-data batches: a catch-up replay's final one only
    ids = np.concatenate((file_batch, no_data[after]))
    watermarks = np.concatenate((np.where(before != NONE, before - delay, NONE), (clock - delay)[after]))
    maxima = np.concatenate((clock, np.full(int(after.sum()), NONE)))  # the clock: emission_frame takes the running maximum anyway

    def times(values: np.ndarray) -> pd.Series:
        return pd.Series(np.where(values == NONE, np.datetime64("NaT", "ns"), values.astype("datetime64[ns]")))

    return pd.DataFrame({"batch_id": ids, "watermark": times(watermarks), "max_event_time": times(maxima)}).sort_values("batch_id", ignore_index=True)


def grid(timeline: Timeline, windows_ms: Sequence[int], delays_ms: Sequence[int]) -> pd.DataFrame:
    """:func:`sweep` for every tumbling window length of ``windows_ms``: one row per (window, delay), ``window_ms`` first."""
    records = [
        {"window_ms": int(window), **row} for window in windows_ms for row in sweep(timeline, expand(timeline, int(window)), delays_ms).to_dict("records")
    ]
    return pd.DataFrame(records, columns=["window_ms", *SWEEP_COLUMNS])
