"""A replay explained one micro-batch at a time, in the programming guide's terms.

For every micro-batch Spark ran (no-data batches included), :func:`explain`
says what it did: the rows it read (late ones marked), the watermark it ran
with and the one it leaves for the next batch, each output row and whether it
was added, updated or emitted, the windows the state let go of, each input row
the watermark dropped with the rule that dropped it, and a caption generated
from all of that.

Everything here is a pure function of a replay's progress, its per-batch
output (:attr:`~streaming.engine.run.runner.Replay.outputs`) and its events judged
by :func:`~streaming.analysis.lateness.judge`. The rules it encodes, as Spark
applies them (held to Spark's own numbers in ``tests/analysis/test_explain.py``):

* batch ``b`` runs with watermark ``W_b`` (progress ``eventTime.watermark``;
  none before the first advance). At its end the watermark becomes
  ``max(W_b, largest event time so far - delay)``, which the next batch runs
  with. A stepped replay lets Spark run the no-data batch that follows a
  move before it hands over the next file.
* a window aggregation in update or append mode lets go of every window
  ``[start, end)`` with ``end <= W_b`` in batch ``b``: append mode emits it
  then, update mode emitted it each time it changed. Complete mode keeps
  every window.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..engine.output.progress import progress_frame
from ..engine.output.results import stamp
from .lateness import EVENT_RULE, dropped_events, file_batches, judge
from .profile import feed_events_of, topic_batches, topic_events_of
from .windows import window_indices, window_span

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..engine.query.config import QueryConfig
    from ..engine.run.runner import Replay

__all__ = ["CHANGES", "EventsSoFar", "Step", "explain", "explain_replay", "judged_events", "output_frame", "replay_events", "result_after"]

CHANGES = ("added", "updated", "unchanged", "emitted")
"""How a result row came out of a batch (its ``change``): a new row, a new value for a row shown before, a row complete mode wrote again as it was, or a row append mode emitted once, final."""

SHOWN = 5
"""Items a caption names before it says how many more there are."""
ONE_BY_ONE = 2
"""A batch's dropped rows are told one sentence each up to this many; more are told one sentence a rule."""

OUTPUT_COLUMNS = ["window_start", "window_end", "key", "value", "change"]
EVICTED_COLUMNS = ["window_start", "window_end", "key"]


@dataclass(frozen=True)
class Step:
    """One micro-batch as :func:`explain` tells it."""

    batch_id: int
    input_rows: int
    watermark_before: pd.Timestamp
    """The watermark the batch ran with (``NaT``: none yet); rows are dropped and windows let go against it."""
    watermark_after: pd.Timestamp
    """The watermark the batch leaves for the next one."""
    rows: pd.DataFrame
    """The rows it read, in arrival order: ``event_time``, ``key``, ``status`` (counted, partly counted, not counted), ``late`` (at or behind ``watermark_before``)."""
    output: pd.DataFrame
    """What the sink received: ``window_start, window_end, key, value, change`` (a pass-through query: ``event_time, key, change``)."""
    dropped: pd.DataFrame
    """The input rows the watermark dropped: ``event_time, key, rule, windows`` (the closed windows, ``(start, end)`` pairs), ``status``."""
    evicted: pd.DataFrame
    """The windows the state let go of: ``window_start, window_end, key``; empty too when the query's state is not modelled here (sessions, deduplication)."""
    state_rows: int
    """Rows in the state after the batch, as Spark reports them."""
    spark_dropped: int
    """Rows Spark counts as dropped by the watermark (after window expansion and partial aggregation)."""
    duplicates: int
    """Rows the deduplication dropped as duplicates of an id seen within the watermark."""
    read_new: bool
    """Whether the batch read new offsets (a file, even an empty one); one that did not ran because the watermark moved."""
    caption: str

    def to_json(self) -> dict[str, Any]:
        """The step as ``explain --json`` writes it."""
        return {
            "batch_id": self.batch_id,
            "input_rows": self.input_rows,
            "watermark_before": _iso(self.watermark_before),
            "watermark_after": _iso(self.watermark_after),
            "output": [{name: _plain(value) for name, value in row.items()} for row in self.output.to_dict("records")],
            "dropped": [
                {
                    "event_time": _iso(row["event_time"]), "key": _plain(row["key"]), "rule": row["rule"], "status": row["status"],
                    "windows": [[_iso(start), _iso(end)] for start, end in row["windows"]],
                }
                for row in self.dropped.to_dict("records")
            ],
            "evicted": [{name: _plain(value) for name, value in row.items()} for row in self.evicted.to_dict("records")],
            "state_rows": self.state_rows,
            "rows_dropped_by_watermark": self.spark_dropped,
            "duplicates_dropped": self.duplicates,
            "caption": self.caption,
        }


def _iso(value: Any) -> str | None:
    """A time as the replay's JSON writes it (:func:`~streaming.engine.output.results.stamp`)."""
    return None if value is None or pd.isna(value) else stamp(pd.Timestamp(value))


def _plain(value: Any) -> Any:
    """A frame's cell as JSON: times as text, numpy numbers as Python's, NaN and NaT as null."""
    if value is pd.NaT or isinstance(value, pd.Timestamp | np.datetime64):
        return _iso(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def output_frame(rows: Sequence[tuple], aggregation: str) -> pd.DataFrame:
    """A batch's output rows (:class:`~streaming.engine.output.results.ResultTable`'s tuples, times in microseconds) as a frame.

    Windows give ``window_start, window_end, key, value`` (a count's value is the count); a pass-through query ``event_time, key``.
    """
    if aggregation == "none":
        frame = pd.DataFrame(list(rows), columns=["event_time", "key"])
        frame["event_time"] = pd.to_datetime(frame["event_time"].astype("int64"), unit="us")
        return frame
    values = [(start, end, key, numbers[0]) for start, end, key, *numbers in rows]
    frame = pd.DataFrame(values, columns=["window_start", "window_end", "key", "value"])
    for name in ("window_start", "window_end"):
        frame[name] = pd.to_datetime(frame[name].astype("int64"), unit="us")
    return frame.sort_values(["window_start", "window_end", "key"], ignore_index=True, key=_sortable)


def _sortable(column: pd.Series) -> pd.Series:
    return column.astype(str) if column.dtype == object else column


def _fixed(config: QueryConfig) -> bool:
    """Whether rows are judged one by one: fixed windows (tumbling or sliding), not sessions or rows passed through."""
    return config.session_gap is None and config.aggregation != "none"


def replay_events(
    spark: SparkSession, config: QueryConfig, summaries: Sequence[Mapping[str, Any]] = (), initial_offsets: Mapping[str, Any] | None = None,
) -> pd.DataFrame:
    """The events a replay of ``config`` reads, in arrival order (:func:`~streaming.analysis.profile.feed_events_of`); a topic's by the batches ``summaries`` read."""
    source = config.source
    topic, feed = source.as_topic, source.as_feed
    if topic is not None:
        return topic_events_of(spark, topic, topic_batches(summaries, initial_offsets, topic.topic))
    if feed is not None:
        return feed_events_of(spark, feed)
    raise ValueError(f"config.source: {type(source).__name__} is not replayed (files or a topic's offsets)")


class EventsSoFar:
    """The events a stepped replay of ``config`` (the query as given) has read so far, asked again after each step; for :func:`explain`.

    A feed's events are read once. A topic's are read once too, from the
    topic itself by ``plan`` (the ``(from, to)`` offsets of each step's batch,
    :attr:`~streaming.engine.sources.stepped_topic.TopicStepper.batches`), and
    the ``i``-th step's go to the ``i``-th batch that read new offsets: the
    staging topic the query reads holds the same records, a step a batch. Not thread-safe.
    """

    def __init__(self, spark: SparkSession, config: QueryConfig, plan: Sequence[tuple[Mapping[int, int], Mapping[int, int]]] | None = None) -> None:
        topic = config.source.as_topic
        if topic is not None:
            if plan is None:
                raise ValueError("plan: a topic's steps are needed to read its events")
            self._events = topic_events_of(spark, topic, [(index, dict(start), dict(end)) for index, (start, end) in enumerate(plan)])
            self._by_step = True
        else:
            self._events = replay_events(spark, config)
            self._by_step = False

    def __call__(self, summaries: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
        """The events of the batches ``summaries`` name, each with the ``file_index`` :func:`explain` expects."""
        if not self._by_step:
            return self._events
        batches = [int(summary["batch_id"]) for summary in summaries if _reads_new_data(summary)]
        read = self._events[self._events["file_index"] < len(batches)]
        return read.assign(file_index=[batches[step] for step in read["file_index"]])


def judged_events(spark: SparkSession, replay: Replay) -> pd.DataFrame:
    """The events ``replay`` read, each judged by the watermark its batch had (:func:`~streaming.analysis.lateness.judge`); fixed windows only."""
    config = replay.config
    events = replay_events(spark, config, replay.summaries, replay.initial_offsets)
    return judge(events, replay.summaries, config.window_ms, config.slide_ms)[0]


def explain_replay(spark: SparkSession, replay: Replay) -> list[Step]:
    """:func:`explain` for a replay run with its outputs kept (``run_to_idle(..., outputs=True)``); its events are read again with ``spark``."""
    if replay.outputs is None:
        raise ValueError("replay.outputs: the replay did not keep its batches' output (run_to_idle(..., outputs=True))")
    events = replay_events(spark, replay.config, replay.summaries, replay.initial_offsets)
    return explain(replay.config, replay.summaries, replay.outputs, events)


def explain(
    config: QueryConfig, summaries: Sequence[Mapping[str, Any]], outputs: Mapping[int, Sequence[tuple]], events: pd.DataFrame | None = None,
) -> list[Step]:
    """Every batch of a replay of ``config``, told: see :class:`Step`.

    ``summaries`` are the replay's progress summaries (with their source
    offsets), ``outputs`` its per-batch output, ``events`` the rows its source
    holds (:func:`replay_events`; ``None``: no row is named). Fixed windows
    judge each row by the watermark of its batch
    (:func:`~streaming.analysis.lateness.judge`); for session windows and a
    pass-through query the steps name the rows read but no dropped row, and
    say what Spark counted. The windows let go of are modelled for a plain
    window aggregation (not after a deduplication, whose state holds ids as well).
    """
    progress = progress_frame(list(summaries))
    fresh = {int(summary["batch_id"]): _reads_new_data(summary) for summary in summaries}
    classified = arrived = None
    if events is not None and _fixed(config):
        classified = judge(events, summaries, config.window_ms, config.slide_ms)[0]
        arrived = classified
    elif events is not None:
        arrived = events.merge(file_batches(list(summaries))[["file_index", "batch_id"]], on="file_index").assign(status="")
    delay = None if config.watermark_ms is None else pd.Timedelta(milliseconds=config.watermark_ms)
    modelled = classified is not None and not config.deduplicate
    dropped_all = dropped_events(classified, deduplicate=config.deduplicate) if classified is not None else None
    frames = {int(batch): output_frame(outputs.get(int(batch), ()), config.aggregation) for batch in progress["batch_id"]}
    clock = _clock_for(progress, arrived, frames.values())
    arrived_by, classified_by, dropped_by = _by_batch(arrived), _by_batch(classified), _by_batch(dropped_all)
    status = dict(zip(classified["event_id"], classified["status"], strict=True)) if classified is not None else {}
    shown: dict[tuple, Any] = {}
    state: dict[tuple, None] = {}
    seen = pd.NaT
    steps = []
    for row in progress.itertuples(index=False):
        batch = int(row.batch_id)
        before = pd.Timestamp(row.watermark) if not pd.isna(row.watermark) else pd.NaT
        if not pd.isna(row.max_event_time) and (pd.isna(seen) or row.max_event_time > seen):
            seen = pd.Timestamp(row.max_event_time)
        after = before
        if delay is not None and not pd.isna(seen):
            after = seen - delay if pd.isna(before) else max(before, seen - delay)
        rows = _rows(arrived_by.get(batch) if arrived is not None else None, before if classified is not None else pd.NaT, config.deduplicate)
        output = _changes(frames[batch], config.output_mode, shown)
        dropped = _dropped(dropped_by.get(batch), status)
        evicted = _evict(state, classified_by.get(batch), before, config) if modelled else pd.DataFrame(columns=EVICTED_COLUMNS)
        step = Step(
            batch, int(row.num_input_rows), before, after, rows, output, dropped, evicted, int(row.state_rows_total),
            int(row.rows_dropped_by_watermark), int(row.duplicates_dropped), fresh.get(batch, True), "",
        )
        steps.append(_captioned(step, config, clock, modelled=modelled))
    return steps


def _reads_new_data(summary: Mapping[str, Any]) -> bool:
    """Whether a batch read new offsets (a file, even an empty one); one that did not ran because the watermark moved."""
    offsets = summary.get("source_offsets")
    return not offsets or offsets[0] != offsets[1]


def _by_batch(frame: pd.DataFrame | None) -> dict[int, pd.DataFrame]:
    """``frame``'s rows by their ``batch_id``, split once."""
    if frame is None or frame.empty:
        return {}
    return {int(batch): rows for batch, rows in frame.groupby("batch_id", sort=False)}


def _rows(mine: pd.DataFrame | None, watermark: pd.Timestamp, deduplicate: bool) -> pd.DataFrame:
    """A batch's rows read (``mine``: its judged or arrived events; ``None``: not known), each marked when at or behind the watermark."""
    columns = ["event_time", "key", "status", "late"]
    if mine is None:
        return pd.DataFrame(columns=columns)
    late = mine["event_time"] <= watermark if not pd.isna(watermark) else pd.Series(False, index=mine.index)
    status = mine["status"].where(~(late & deduplicate), "not counted")
    return pd.DataFrame({"event_time": mine["event_time"], "key": mine["key"], "status": status, "late": late.astype(bool)}).reset_index(drop=True)


def _changes(output: pd.DataFrame, mode: str, shown: dict[tuple, Any]) -> pd.DataFrame:
    """``output`` with each row's ``change``; ``shown`` (the result table so far, by row) is brought up to date."""
    if "window_start" not in output:
        return output.assign(change="added")
    slots = list(zip(output["window_start"], output["window_end"], output["key"], strict=True))
    if mode == "append":
        changes = ["emitted"] * len(slots)
    else:
        changes = [
            "added" if slot not in shown else "unchanged" if _same(shown[slot], value) else "updated"
            for slot, value in zip(slots, output["value"], strict=True)
        ]
    if mode == "complete":
        shown.clear()
    shown.update(zip(slots, output["value"], strict=True))
    return output.assign(change=changes)


def _same(left: Any, right: Any) -> bool:
    return bool(left == right or (pd.isna(left) and pd.isna(right)))


def _dropped(mine: pd.DataFrame | None, status: Mapping[int, str]) -> pd.DataFrame:
    """A batch's events the watermark dropped (``mine``: its dropped pairs), one row each, with the windows closed to it and how much of the event still counted (``status`` by event id)."""
    columns = ["event_time", "key", "rule", "windows", "status"]
    if mine is None:
        return pd.DataFrame(columns=columns)
    records = []
    for event, pairs in mine.groupby("event_id", sort=False):
        first = pairs.iloc[0]
        whole = first["rule"] == EVENT_RULE
        records.append({
            "event_time": first["event_time"], "key": first["key"], "rule": first["rule"],
            "windows": [] if whole else list(zip(pairs["window_start"], pairs["window_end"], strict=True)),
            "status": "not counted" if whole else status[event],
        })
    return pd.DataFrame(records, columns=columns)


def _windows(time: pd.Timestamp, config: QueryConfig) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """Every window ``[start, end)`` holding ``time``, oldest first (Spark's windows, aligned to the epoch)."""
    window, slide = window_span(config.window_ms, config.slide_ms)
    first, last = window_indices(pd.Timestamp(time).value, window, slide)
    return [(pd.Timestamp(k * slide), pd.Timestamp(k * slide + window)) for k in range(first, last + 1)]


def _evict(state: dict[tuple, None], mine: pd.DataFrame | None, watermark: pd.Timestamp, config: QueryConfig) -> pd.DataFrame:
    """The windows a batch let go of; ``state`` (the groups in Spark's state) takes in the counted groups of its judged events ``mine`` first."""
    if mine is not None:
        for time, key, dropped in zip(mine["event_time"], mine["key"], mine["dropped_windows"], strict=True):
            for start, end in _windows(time, config):
                if (start, end) not in dropped:
                    state[(start, end, key)] = None
    if pd.isna(watermark) or config.output_mode == "complete" or config.watermark_ms is None:
        return pd.DataFrame(columns=EVICTED_COLUMNS)
    gone = sorted((slot for slot in state if slot[1] <= watermark), key=lambda slot: (slot[0], slot[1], str(slot[2])))
    for slot in gone:
        del state[slot]
    return pd.DataFrame(gone, columns=EVICTED_COLUMNS)


# ------------------------------------------------------------------ captions


def _clock_for(progress: pd.DataFrame, arrived: pd.DataFrame | None, outputs: Iterable[pd.DataFrame]) -> str:
    """The time format the captions use: hours and minutes, seconds when a time has them, milliseconds (``%f``, cut to 3 digits) when
    one has those, the date when the times span days."""
    parts = [progress["watermark"].dropna(), progress["max_event_time"].dropna()]
    if arrived is not None:
        parts.append(arrived["event_time"].dropna())
    for frame in outputs:
        parts.extend(frame[name] for name in ("window_start", "window_end", "event_time") if name in frame)
    parts = [part for part in parts if len(part)]
    stamps = pd.to_datetime(pd.concat(parts, ignore_index=True)) if parts else pd.Series(dtype="datetime64[ns]")
    fmt = "%H:%M:%S" if len(stamps) and bool((stamps.dt.second != 0).any() | (stamps.dt.microsecond != 0).any()) else "%H:%M"
    if len(stamps) and bool((stamps.dt.microsecond != 0).any()):
        fmt += ".%f"
    if len(stamps) and stamps.dt.normalize().nunique() > 1:
        fmt = "%Y-%m-%d " + fmt
    return fmt


def _listed(items: Sequence[str]) -> str:
    if len(items) > SHOWN:
        return ", ".join(items[:SHOWN]) + f" and {len(items) - SHOWN} more"
    if len(items) > 1:
        return ", ".join(items[:-1]) + " and " + items[-1]
    return items[0] if items else ""


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _number(value: Any) -> str:
    """A result's value as a caption writes it: whole numbers without a point, others to 6 significant digits (no float noise)."""
    if pd.isna(value):
        return "null"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"
    return str(value)


def _key(value: Any) -> str:
    return "(no key)" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _captioned(step: Step, config: QueryConfig, clock: str, *, modelled: bool) -> Step:
    def at(time: pd.Timestamp) -> str:
        text = pd.Timestamp(time).strftime(clock)
        return text[:-3] if clock.endswith("%f") else text  # milliseconds

    def span(start: pd.Timestamp, end: pd.Timestamp) -> str:
        return f"{at(start)}–{at(end)}"

    parts = []
    if step.input_rows:
        named = [f"{_key(key)} at {at(time)}" for time, key in zip(step.rows["event_time"], step.rows["key"], strict=True)]
        parts.append(f"Batch {step.batch_id} read {_plural(step.input_rows, 'row')}" + (f": {_listed(named)}." if named else "."))
    elif step.read_new:
        parts.append(f"Batch {step.batch_id} read a file with no rows: the source is idle, and without a newer event time the watermark cannot move.")
    elif not pd.isna(step.watermark_before):
        parts.append(f"Batch {step.batch_id} read no rows: Spark ran it because the watermark had moved to {at(step.watermark_before)}.")
    else:
        parts.append(f"Batch {step.batch_id} read no rows.")
    if step.duplicates:
        parts.append(f"The deduplication dropped {_plural(step.duplicates, 'row')} as duplicates of an id seen within the watermark.")
    if len(step.dropped) <= ONE_BY_ONE:
        for dropped in step.dropped.to_dict("records"):
            who = f"the {_key(dropped['key'])} at {at(dropped['event_time'])} arrived when the watermark was {at(step.watermark_before)}"
            if dropped["rule"] == EVENT_RULE:
                parts.append(f"{who[0].upper()}{who[1:]}: its own time is at or before it, so the deduplication dropped it.")
                continue
            closed = _listed([span(start, end) for start, end in dropped["windows"]])
            verb = "is" if len(dropped["windows"]) == 1 else "are"
            noun = "window" if len(dropped["windows"]) == 1 else "windows"
            outcome = "so it was dropped" if dropped["status"] == "not counted" else "so it was counted only in its later windows"
            parts.append(f"{who[0].upper()}{who[1:]}: its {noun} {closed} {verb} closed, {outcome}.")
    else:  # one sentence a rule: a batch of many late rows is not a wall of near-identical sentences
        rows = step.dropped.assign(outcome=[EVENT_RULE if rule == EVENT_RULE else status for rule, status in zip(step.dropped["rule"], step.dropped["status"], strict=True)])
        for outcome, group in rows.groupby("outcome", sort=False):
            rows_named = _listed([f"the {_key(key)} at {at(time)}" for key, time in zip(group["key"], group["event_time"], strict=True)])
            said = {
                EVENT_RULE: "their own times are at or before it, so the deduplication dropped them",
                "not counted": "every window each belongs to is closed, so they were dropped",
            }.get(str(outcome), "some of their windows are closed, so they were counted only in their later windows")
            parts.append(f"{len(group)} rows arrived when the watermark was {at(step.watermark_before)} ({rows_named}): {said}.")
    if step.dropped.empty and step.spark_dropped:
        parts.append(f"Spark dropped {_plural(step.spark_dropped, 'row')} as too late.")
    parts.extend(_output_sentences(step, config, at, span))
    if modelled and len(step.evicted) and config.output_mode != "append":
        windows = sorted({(start, end) for start, end in zip(step.evicted["window_start"], step.evicted["window_end"], strict=True)})
        parts.append(
            f"The state let go of {_plural(len(step.evicted), 'row')}: windows ending at or before the watermark "
            f"({_listed([span(start, end) for start, end in windows])}), which update mode had already shown."
        )
    parts.append(_watermark_sentence(step, config, at))
    return Step(**{**step.__dict__, "caption": " ".join(parts)})


def _output_sentences(step: Step, config: QueryConfig, at, span) -> Iterable[str]:
    output = step.output
    if output.empty:
        if step.input_rows and config.output_mode == "append" and config.aggregation != "none":
            if pd.isna(step.watermark_before):
                yield "Append mode emits nothing yet: a window is emitted once the watermark passes its end."
            else:
                yield f"Append mode emits nothing: every window still open ends after the watermark, {at(step.watermark_before)}."
        return
    if "window_start" not in output:
        yield f"It passed {_plural(len(output), 'row')} through to the sink."
        return
    if config.output_mode == "append":
        windows = [
            f"{span(start, end)} ({_listed([f'{_key(row.key)} {_number(row.value)}' for row in rows.itertuples(index=False)])})"
            for (start, end), rows in output.groupby(["window_start", "window_end"], sort=True)
        ]
        last_end = output["window_end"].max()
        passed = f"The watermark passed {at(last_end)}" if pd.isna(step.watermark_before) or step.watermark_before > last_end else f"The watermark reached {at(last_end)}"
        yield f"{passed}: append mode now emits {_listed(windows)}, final, and the state lets go of them."
        return
    for change in ("added", "updated"):
        rows = output[output["change"] == change]
        if len(rows):
            named = [f"{span(row.window_start, row.window_end)} {_key(row.key)} {_number(row.value)}" for row in rows.itertuples(index=False)]
            verb = "added" if change == "added" else "updated"
            yield f"It {verb} {_plural(len(rows), 'result row')}: {_listed(named)}."
    if config.output_mode == "complete":
        same = int((output["change"] == "unchanged").sum())
        yield f"Complete mode wrote the whole result table again ({_plural(len(output), 'row')}, {same} unchanged)."


def _watermark_sentence(step: Step, config: QueryConfig, at) -> str:
    if config.watermark is None:
        return "No watermark is set: nothing is dropped as late, and the state keeps every window."
    if pd.isna(step.watermark_after):
        return "The watermark is not set yet: no event time has been seen."
    if pd.isna(step.watermark_before) or step.watermark_after > step.watermark_before:
        return (
            f"The largest event time so far is {at(step.watermark_after + pd.Timedelta(milliseconds=config.watermark_ms or 0))}, "
            f"so the watermark moves to {at(step.watermark_after)} ({config.watermark} behind it) for the next batch."
        )
    return f"The watermark stays at {at(step.watermark_after)}."


def result_after(steps: Sequence[Step], index: int, output_mode: str) -> pd.DataFrame:
    """The result table once ``steps[index]`` has run, its rows tagged with the change that batch made (``""``: left as it was).

    Update mode keeps each row's latest value, append mode every row emitted,
    complete mode the last batch's whole table; a pass-through query every row.
    """
    done = steps[: index + 1]
    frames = [step.output for step in done if len(step.output)]
    if not frames:
        return done[-1].output.iloc[0:0] if done else pd.DataFrame(columns=OUTPUT_COLUMNS)
    latest = done[-1]
    if output_mode == "complete":
        return frames[-1] if len(latest.output) else frames[-1].assign(change="")
    parts = [frame.assign(change="") for frame in (frames[:-1] if len(latest.output) else frames)] + ([latest.output] if len(latest.output) else [])
    table = pd.DataFrame([row for part in parts for row in part.to_dict("records")], columns=parts[-1].columns)
    if output_mode == "update" and "window_start" in table:
        table = table.drop_duplicates(["window_start", "window_end", "key"], keep="last")
    order = [name for name in ("window_start", "window_end", "event_time", "key") if name in table]
    return table.sort_values(order, ignore_index=True, key=_sortable)
