"""What a join replay did, batch by batch: pure pandas folds of a :class:`~streaming.engine.join.join.JoinOutcome`.

A batch runs with the watermarks the batches before it left (Spark moves them
at a batch's end): :func:`join_timeline` gives each batch the watermarks it ran
with, the rows it read per side, what it emitted and what its state held, and
:func:`batch_caption` says it in words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..engine.join.join import EMITTED_COLUMNS, SIDE_METRICS, SIDES, emitted_counts, preserves, side_watermarks
from ..engine.output.progress import observed_value
from ..engine.output.results import stamp

if TYPE_CHECKING:
    from ..engine.join.join import JoinConfig, JoinOutcome

__all__ = [
    "STORY_COLUMNS", "TIMELINE_COLUMNS", "WAITING_COLUMNS", "batch_caption", "batch_timeline", "join_timeline", "key_story", "key_text", "match_bound", "waiting_rows",
]

STORY_COLUMNS = ["side", "event_time", "batch", "range_start", "range_end", "late_watermark", "status", "why"]
"""One row per input row of a key (:func:`key_story`)."""

WAITING_COLUMNS = ["matchable_until", "matched", "leaves_state", "null_row"]
"""What :func:`waiting_rows` adds to a side's rows in state."""

TIMELINE_COLUMNS = [
    "batch_id", "left_rows", "right_rows", "left_watermark", "right_watermark", "watermark", "rows_emitted", "left_unmatched", "right_unmatched",
    "rows_dropped_by_watermark", "state_rows", "state_bytes",
]


def join_timeline(outcome: JoinOutcome) -> pd.DataFrame:
    """:func:`batch_timeline` of a replay."""
    emitted = emitted_counts(outcome.config, outcome.result, outcome.emitted) if outcome.emitted is not None else pd.DataFrame(columns=EMITTED_COLUMNS)
    return batch_timeline(outcome.config, outcome.summaries, emitted)


def batch_timeline(config: JoinConfig, summaries: Sequence[Mapping[str, Any]], emitted: pd.DataFrame) -> pd.DataFrame:
    """One row per micro-batch (see :data:`TIMELINE_COLUMNS`): the rows each side brought, the side and global watermarks the batch ran with,
    the rows it emitted (``left_unmatched``/``right_unmatched``: of which a side's row without a match; from ``emitted``, one row per batch
    that emitted any), the rows it dropped as too late and the join state's rows and bytes (the state store's memory) after it."""
    ordered = sorted(summaries, key=lambda summary: summary["batch_id"])
    marks = side_watermarks(ordered, config)
    ran_with = marks[[f"{side}_watermark" for side in SIDES]].shift(1)
    frame = pd.DataFrame(
        {
            "batch_id": [summary["batch_id"] for summary in ordered],
            **{f"{side}_rows": [int(observed_value(summary, SIDE_METRICS[side], "rows") or 0) for summary in ordered] for side in SIDES},
            "left_watermark": ran_with["left_watermark"].to_numpy(),
            "right_watermark": ran_with["right_watermark"].to_numpy(),
            "watermark": pd.to_datetime(pd.Series([summary["watermark"] for summary in ordered], dtype="datetime64[ns]")),
            "rows_dropped_by_watermark": [int(summary["rows_dropped_by_watermark"]) for summary in ordered],
            "state_rows": [int(summary["state_rows_total"]) for summary in ordered],
            "state_bytes": [int(summary["state_memory_bytes"]) for summary in ordered],
        }
    )
    counts = emitted.set_index("batch_id")
    for column in EMITTED_COLUMNS[1:]:
        frame[column] = frame["batch_id"].map(counts[column]).fillna(0).astype("int64")
    for column in ("left_watermark", "right_watermark", "watermark"):
        frame[column] = pd.to_datetime(frame[column])
    return frame[TIMELINE_COLUMNS]


def _time(value: pd.Timestamp) -> str:
    return "none yet" if pd.isna(value) else str(stamp(pd.Timestamp(value)))


def _at(value: pd.Timestamp) -> str:
    return "not set yet" if pd.isna(value) else f"at {_time(value)}"


def _rows(count: int, what: str = "") -> str:
    """``1 row``, ``3 rows``; ``what`` (a side's name) before the noun: ``3 clicks rows``."""
    return f"{count} {what + ' ' if what else ''}{'row' if count == 1 else 'rows'}"


def batch_caption(config: JoinConfig, timeline: pd.DataFrame, batch_id: int) -> str:
    """What micro-batch ``batch_id`` of a ``config`` join did, in the guide's words, from its row of :func:`batch_timeline`."""
    row = timeline[timeline["batch_id"] == batch_id]
    if row.empty:
        return f"Batch {batch_id} did not run."
    step = row.iloc[0]
    left, right = config.left.label, config.right.label
    if config.static:
        parts = [f"Batch {batch_id} read {_rows(step.left_rows)} of {left} and joined them with the whole table {right} (a stream-static join keeps no state)."]
    else:
        parts = [
            f"Batch {batch_id} read {_rows(step.left_rows)} of {left} and {step.right_rows} of {right}. "
            f"It ran with {left}'s watermark {_at(step.left_watermark)} and {right}'s {_at(step.right_watermark)}: "
            f"the global watermark, their {config.policy}, was {_at(step.watermark).removeprefix('at ')}."
        ]
    matched = step.rows_emitted - step.left_unmatched - step.right_unmatched
    emitted = [f"{_rows(matched, 'joined')}"] if config.join_type != "left_semi" else [f"{_rows(step.rows_emitted, f'matched {left}')}"]
    if step.left_unmatched:
        why = (
            "no row of the table matches them" if config.static
            else f"the global watermark passed the end of their time range, so no {right} row can still match them"
        )
        emitted.append(f"{_rows(step.left_unmatched, left)} without a match, with NULLs for {right}: {why}")
    if step.right_unmatched:
        emitted.append(
            f"{_rows(step.right_unmatched, right)} without a match, with NULLs for {left}: "
            "the global watermark passed the end of their time range"
        )
    parts.append("It emitted " + "; ".join(emitted) + ".")
    if step.rows_dropped_by_watermark:
        parts.append(f"{_rows(step.rows_dropped_by_watermark)} arrived too late for the watermark and {'was' if step.rows_dropped_by_watermark == 1 else 'were'} dropped.")
    if not config.static:
        parts.append(f"The join's state held {_rows(step.state_rows)} after it.")
    return " ".join(parts)


def match_bound(config: JoinConfig, side: str, times: pd.Series) -> pd.Series:
    """The event time past which no row of the other side can match a ``side`` row of time ``times``: left time + upper, or right time - lower.

    Spark keeps such a row in the join's state while the global watermark is at
    or before this bound, and removes it (an outer join emits its NULL row if it
    never matched) in the first micro-batch that runs with a later watermark.
    """
    bounds = config.bounds_ms
    if bounds is None:
        return pd.Series(pd.NaT, index=times.index, dtype="datetime64[ns]")
    lower, upper = bounds
    return times + pd.Timedelta(milliseconds=upper) if side == "left" else times - pd.Timedelta(milliseconds=lower)


def waiting_rows(
    config: JoinConfig, joined: pd.DataFrame, timeline: pd.DataFrame, side: str, state: pd.DataFrame, batch_id: int,
) -> pd.DataFrame:
    """``side``'s rows in the join's state after micro-batch ``batch_id`` (``state``, as :func:`~streaming.engine.join.join.join_side_state` reads them), each with:

    - ``matchable_until``: :func:`match_bound`, the watermark that ends its wait;
    - ``matched``: whether a joined row holding it is among ``joined`` (the rows emitted, with ``_batch``: the batch of each) by then;
    - ``leaves_state``: the later micro-batch of ``timeline`` that removes it (the first to run with a watermark past the bound; ``NA`` if none has yet);
    - ``null_row``: for a side an outer join keeps, when its NULL row comes (``batch N``, ``not by the last batch``), or
      ``none: matched in batch K`` when a match came first (later, perhaps); ``""`` for a side it does not keep.

    Sorted by ``matchable_until``: the first to leave first.
    """
    own, other = config.facing(side)
    if state.empty:
        return pd.DataFrame(columns=[*state.columns, *WAITING_COLUMNS])
    rows = state.reset_index(drop=True)
    bound = match_bound(config, side, pd.to_datetime(rows[own.event_time]))
    if config.join_type != "left_semi":
        joined = joined[joined[other.event_time].notna() & joined[own.event_time].notna()]
    first_match: dict[tuple[object, ...], int] = {}
    for key, found in zip(_identities(joined, config.on, own.event_time), joined["_batch"]):
        first_match[key] = min(int(found), first_match.get(key, int(found)))
    matches = [first_match.get(key) for key in _identities(rows, config.on, own.event_time)]
    matched = [found is not None and found <= batch_id for found in matches]
    later = timeline[timeline["batch_id"] > batch_id]
    leaves = [_leaves(config, later, moment) for moment in bound]
    leaves = [pd.NA if leaving is None else leaving for leaving in leaves]
    rows["matchable_until"] = bound.to_numpy()
    rows["matched"] = matched
    rows["leaves_state"] = pd.array(leaves, dtype="Int64")
    if preserves(config.join_type, side):
        rows["null_row"] = [_null_row(found, leaving) for found, leaving in zip(matches, leaves)]
    else:
        rows["null_row"] = ""
    return rows.sort_values("matchable_until", kind="stable", ignore_index=True)


def _identities(rows: pd.DataFrame, on: Sequence[str], time: str) -> list[tuple[object, ...]]:
    """Each row's keys (as text) and event time (a :class:`pandas.Timestamp`, compared as a time, not as its text)."""
    return [(*(str(value) for value in values[:-1]), pd.Timestamp(values[-1])) for values in rows[[*on, time]].itertuples(index=False, name=None)]


def _null_row(matched_in: int | None, leaves: Any) -> str:
    if matched_in is not None and (pd.isna(leaves) or matched_in <= leaves):
        return f"none: matched in batch {matched_in}"
    return "not by the last batch" if pd.isna(leaves) else f"batch {leaves}"


def key_text(values: Any) -> str:
    """A key as the page lists it: its values joined by `` | `` (one value: itself)."""
    return " | ".join(str(value) for value in values) if isinstance(values, tuple) else str(values)


def key_story(outcome: JoinOutcome, timeline: pd.DataFrame, left_rows: pd.DataFrame, right_rows: pd.DataFrame, key: str) -> pd.DataFrame:
    """Why each row of key ``key`` (:func:`key_text` of its key values) was or was not joined: one row per input row of either side (:data:`STORY_COLUMNS`).

    ``left_rows``/``right_rows`` are each side's rows with the batch each arrives in
    (:func:`~streaming.engine.join.join.side_rows`). ``range_start``/``range_end``: the
    other side's times it can match. ``late_watermark``: Spark's watermark for late
    rows in its batch, the one the batch before ran with: a row of a side with a
    watermark at or before it is dropped. ``status``: ``dropped as too late``, ``joined``, ``emitted with NULLs``,
    ``never matched`` or ``waiting at the end``; ``why`` says it in words.
    """
    config = outcome.config
    lower, upper = config.bounds_ms if config.bounds_ms is not None else (None, None)
    late_marks = timeline.set_index("batch_id")["watermark"].shift(1)
    result = outcome.with_batches()
    result = result[[key_text(tuple(values)) == key for values in result[list(config.on)].itertuples(index=False, name=None)]]
    stories = []
    for side, rows in (("left", left_rows), ("right", right_rows)):
        own, other = config.facing(side)
        mine = rows[[key_text(tuple(values)) == key for values in rows[list(config.on)].itertuples(index=False, name=None)]]
        for _, row in mine.iterrows():
            moment = row[own.event_time]
            late = late_marks.get(row["batch"], pd.NaT)
            if lower is None:
                start = end = pd.NaT
            elif side == "left":
                start, end = moment + pd.Timedelta(milliseconds=lower), moment + pd.Timedelta(milliseconds=upper)
            else:
                start, end = moment - pd.Timedelta(milliseconds=upper), moment - pd.Timedelta(milliseconds=lower)
            hits = result[result[own.event_time] == moment] if own.event_time in result.columns else result.iloc[0:0]
            semi = config.join_type == "left_semi"
            joined = hits if semi else hits[hits[other.event_time].notna()]
            alone = hits.iloc[0:0] if semi else hits[hits[other.event_time].isna()]
            if pd.isna(moment):
                status, why = "dropped as malformed", "its event time does not parse"
            elif own.watermark is not None and not pd.isna(late) and moment <= late:
                status, why = "dropped as too late", f"it arrived in batch {row['batch']}, when the watermark for late rows was {_time(late)}: at or after its time"
            elif semi and side == "right":
                status, why = "kept to match", f"a left semi join emits {other.label} rows only; this row lets them match"
            elif len(joined):
                status = "joined"
                why = f"joined in batch {int(joined['_batch'].min())}"
                if not semi:
                    why += f" with {other.label} at " + ", ".join(sorted({str(_time(value)) for value in joined[other.event_time]}))
            elif len(alone):
                status = "emitted with NULLs"
                why = (
                    f"no {other.label} row within {_time(start)} – {_time(end)} arrived before the watermark passed {_time(end)}; "
                    f"its NULL row came in batch {int(alone['_batch'].min())}"
                )
            elif _leaves(config, timeline, end) is None:
                status = "waiting at the end"
                why = (
                    "the watermark never passed the end of its range: it was still in the join's state when the replay ended" if config.cleans_state
                    else "Spark keeps every row of this join in its state (it cleans it only with a watermark on both sides and a time range)"
                )
            else:
                status, why = "never matched", f"no {other.label} row within {_time(start)} – {_time(end)} arrived in time, and this join type emits no row for it"
            stories.append({"side": side, "event_time": moment, "batch": int(row["batch"]), "range_start": start, "range_end": end, "late_watermark": late,
                            "status": status, "why": why})
    return pd.DataFrame(stories, columns=STORY_COLUMNS)


def _leaves(config: JoinConfig, timeline: pd.DataFrame, bound: pd.Timestamp) -> int | None:
    """The first micro-batch of ``timeline`` that runs with a watermark past ``bound`` and so removes a row of that bound from the state;
    ``None`` when none does, or when Spark cleans no state (:attr:`~streaming.engine.join.join.JoinConfig.cleans_state`)."""
    if pd.isna(bound) or not config.cleans_state:
        return None
    past = timeline[timeline["watermark"].notna() & (timeline["watermark"] > bound)]
    return None if past.empty else int(past["batch_id"].iloc[0])
