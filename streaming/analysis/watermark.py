"""The watermark over a run's batches: whether it has stalled while input keeps arriving.

A watermark only moves when a larger event time arrives. When input keeps
coming but the watermark stands still -- the source's event time stopped, or
only late or old events arrive -- no window is finalized, nothing is evicted,
and an append-mode sink emits nothing. :func:`watermark_stall` finds such a
stretch at the end of a progress frame; it is a pure function of it.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    """The stall at the end of ``progress`` (a :func:`~streaming.engine.progress.progress_frame`), or ``None``.

    Counted are the batches with input rows after the last batch that moved
    the watermark (or set it first); at least ``min_batches`` of them make a
    stall. Without a watermark (never set) there is none.
    """
    if min_batches < 1:
        raise ValueError(f"min_batches: {min_batches!r} must be at least 1")
    if not len(progress):
        return None
    frame = progress.sort_values("batch_id", ignore_index=True)
    watermarks = pd.to_datetime(frame["watermark"])
    if watermarks.isna().all():
        return None
    level = watermarks.ffill()
    moved = level.ne(level.shift(1)) & level.notna()
    last_move = int(moved[moved].index[-1])
    after = frame.iloc[last_move + 1 :]
    with_input = after[after["num_input_rows"] > 0]
    if len(with_input) < min_batches:
        return None
    return WatermarkStall(
        since_batch=int(frame.loc[last_move, "batch_id"]),
        batches=len(with_input),
        rows=int(with_input["num_input_rows"].sum()),
        watermark=level.iloc[-1],
        state_rows_before=int(frame.loc[last_move, "state_rows_total"]),
        state_rows_now=int(frame["state_rows_total"].iloc[-1]),
    )
