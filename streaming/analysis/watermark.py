"""The watermark over a run's batches: whether it has stalled while input keeps arriving.

A watermark only moves when a larger event time arrives. When input keeps
coming but the watermark stands still -- the source's event time stopped, or
only late or old events arrive -- no window is finalized, nothing is evicted,
and an append-mode sink emits nothing. :func:`watermark_stall` finds such a
stretch at the end of a progress frame; it is a pure function of it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_STALL_BATCHES", "WatermarkStall", "watermark_stall"]

DEFAULT_STALL_BATCHES = 10
"""Batches with input and no watermark advance before the live view warns."""


@dataclass(frozen=True)
class WatermarkStall:
    """The watermark stood at ``watermark`` for the last ``batches`` batches with input (since ``since_batch``), which brought ``rows`` rows."""

    since_batch: int
    batches: int
    rows: int
    watermark: pd.Timestamp
    state_rows_before: int
    state_rows_now: int


def watermark_stall(progress: pd.DataFrame, min_batches: int = DEFAULT_STALL_BATCHES) -> WatermarkStall | None:
    """The stall at the end of ``progress`` (a :func:`~streaming.engine.output.progress.progress_frame`), or ``None``.

    Counted are the batches with input rows after the last batch that moved
    the watermark (or set it first); at least ``min_batches`` of them make a
    stall. Without a watermark (never set) there is none.
    """
    if min_batches < 1:
        raise ValueError(f"min_batches: {min_batches!r} must be at least 1")
    if not len(progress):
        return None
    frame = progress if progress["batch_id"].is_monotonic_increasing else progress.sort_values("batch_id", ignore_index=True)
    # Per live refresh over hours of batches: numpy on the columns, not pandas row operations.
    unset = np.iinfo("int64").min
    marks = frame["watermark"].to_numpy("datetime64[ns]").astype("int64")  # NaT: the smallest int64 (to_datetime would iterate)
    if (marks == unset).all():
        return None
    level = np.maximum.accumulate(marks)  # Spark's watermark never moves back; before it is set, it is unset
    last_move = int(np.flatnonzero(np.diff(level, prepend=unset) != 0)[-1])
    rows_in = frame["num_input_rows"].to_numpy()[last_move + 1 :]
    with_input = rows_in > 0
    if int(with_input.sum()) < min_batches:
        return None
    state = frame["state_rows_total"].to_numpy()
    return WatermarkStall(
        since_batch=int(frame["batch_id"].iloc[last_move]),
        batches=int(with_input.sum()),
        rows=int(rows_in[with_input].sum()),
        watermark=pd.Timestamp(int(level[-1])),
        state_rows_before=int(state[last_move]),
        state_rows_now=int(state[-1]),
    )
