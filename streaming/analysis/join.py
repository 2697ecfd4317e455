"""What a join replay did, batch by batch: pure pandas folds of a :class:`~streaming.engine.join.JoinOutcome`.

A batch runs with the watermarks the batches before it left (Spark moves them
at a batch's end): :func:`join_timeline` gives each batch the watermarks it ran
with, the rows it read per side, what it emitted and what its state held, and
:func:`batch_caption` says it in words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..engine.join import SIDES, side_watermarks
from ..engine.results import stamp

if TYPE_CHECKING:
    from ..engine.join import JoinOutcome

__all__ = ["TIMELINE_COLUMNS", "batch_caption", "join_timeline", "unmatched_side"]

TIMELINE_COLUMNS = [
    "batch_id", "left_rows", "right_rows", "left_watermark", "right_watermark", "watermark", "rows_emitted", "left_unmatched", "right_unmatched",
    "rows_dropped_by_watermark", "state_rows",
]


def unmatched_side(outcome: JoinOutcome, rows: pd.DataFrame) -> pd.Series:
    """Per row of ``rows`` (joined rows of ``outcome``): ``left`` for a left row emitted without a match (the right side's columns null),
    ``right`` for a right row without one, ``""`` for a joined pair (and every row of a semi join)."""
    config = outcome.config
    side = pd.Series("", index=rows.index, dtype=object)
    if config.join_type == "left_semi" or rows.empty:
        return side
    side[rows[config.right.event_time].isna()] = "left"
    side[rows[config.left.event_time].isna()] = "right"
    return side


def join_timeline(outcome: JoinOutcome) -> pd.DataFrame:
    """One row per micro-batch (see :data:`TIMELINE_COLUMNS`): the rows each side brought, the side and global watermarks the batch ran with,
    the rows it emitted (``left_unmatched``/``right_unmatched``: of which a side's row without a match), the rows it dropped as too late
    and the join state's rows after it."""
    marks = side_watermarks(outcome.summaries, outcome.config)
    ran_with = marks[[f"{side}_watermark" for side in SIDES]].shift(1)
    emitted = np.asarray(outcome.emitted if outcome.emitted is not None else (), dtype="int64")
    unmatched = unmatched_side(outcome, outcome.result).to_numpy() if outcome.emitted is not None else np.array([], dtype=object)
    rows = []
    for position, summary in enumerate(sorted(outcome.summaries, key=lambda summary: summary["batch_id"])):
        batch = summary["batch_id"]
        observed = dict(summary.get("observed") or ())
        mine = emitted == batch
        rows.append(
            {
                "batch_id": batch,
                **{f"{side}_rows": int(dict(observed.get(f"{side}_side", ())).get("rows") or 0) for side in SIDES},
                "left_watermark": ran_with["left_watermark"].iloc[position],
                "right_watermark": ran_with["right_watermark"].iloc[position],
                "watermark": summary["watermark"],
                "rows_emitted": int(mine.sum()),
                "left_unmatched": int((unmatched[mine] == "left").sum()) if len(unmatched) else 0,
                "right_unmatched": int((unmatched[mine] == "right").sum()) if len(unmatched) else 0,
                "rows_dropped_by_watermark": int(summary["rows_dropped_by_watermark"]),
                "state_rows": int(summary["state_rows_total"]),
            }
        )
    frame = pd.DataFrame(rows, columns=TIMELINE_COLUMNS)
    for column in ("left_watermark", "right_watermark", "watermark"):
        frame[column] = pd.to_datetime(frame[column])
    return frame


def _time(value: pd.Timestamp) -> str:
    return "none yet" if pd.isna(value) else str(stamp(pd.Timestamp(value)))


def batch_caption(outcome: JoinOutcome, timeline: pd.DataFrame, batch_id: int) -> str:
    """What micro-batch ``batch_id`` did, in the guide's words, from its row of :func:`join_timeline`."""
    config = outcome.config
    row = timeline[timeline["batch_id"] == batch_id]
    if row.empty:
        return f"Batch {batch_id} did not run."
    step = row.iloc[0]
    left, right = config.left.path.name, config.right.path.name
    parts = [
        f"Batch {batch_id} read {step.left_rows} rows of {left} and {step.right_rows} of {right}. "
        f"It ran with {left}'s watermark at {_time(step.left_watermark)} and {right}'s at {_time(step.right_watermark)}: "
        f"the global watermark, their {config.policy}, was {_time(step.watermark)}."
    ]
    matched = step.rows_emitted - step.left_unmatched - step.right_unmatched
    emitted = [f"{matched} joined rows"] if config.join_type != "left_semi" else [f"{step.rows_emitted} matched {left} rows"]
    if step.left_unmatched:
        emitted.append(
            f"{step.left_unmatched} {left} rows without a match, with NULLs for {right}: "
            f"their time range ended before {right}'s watermark, so no {right} row can still match them"
        )
    if step.right_unmatched:
        emitted.append(
            f"{step.right_unmatched} {right} rows without a match, with NULLs for {left}: "
            f"their time range ended before {left}'s watermark"
        )
    parts.append("It emitted " + "; ".join(emitted) + ".")
    if step.rows_dropped_by_watermark:
        parts.append(f"{step.rows_dropped_by_watermark} rows arrived too late for the watermark and were dropped.")
    parts.append(f"The join's state held {step.state_rows} rows after it.")
    return " ".join(parts)
