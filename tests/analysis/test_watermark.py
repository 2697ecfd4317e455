"""A stalled watermark: input keeps arriving, the watermark does not move (pure, list in and verdict out)."""

from __future__ import annotations

import pandas as pd
import pytest

from streaming.analysis.watermark import watermark_stall

T = pd.Timestamp


def _progress(rows: list[tuple[int, str | None, int, int]]) -> pd.DataFrame:
    """(input rows, watermark or None, state rows) per batch, batch ids from 0."""
    return pd.DataFrame(
        {
            "batch_id": range(len(rows)),
            "num_input_rows": [rows_in for rows_in, _, _, _ in rows],
            "watermark": [None if mark is None else T(mark) for _, mark, _, _ in rows],
            "state_rows_total": [state for _, _, state, _ in rows],
        }
    )


def test_a_watermark_that_stands_still_under_input_is_a_stall() -> None:
    rows = [(5, None, 2, 0), (5, "2024-01-01 00:00:10", 4, 0), (5, "2024-01-01 00:00:20", 6, 0)]
    rows += [(5, "2024-01-01 00:00:20", 6 + n, 0) for n in range(3)] + [(0, "2024-01-01 00:00:20", 9, 0)]
    stall = watermark_stall(_progress(rows), min_batches=3)
    assert stall is not None
    assert (stall.since_batch, stall.batches, stall.rows, stall.watermark) == (2, 3, 15, T("2024-01-01 00:00:20"))
    assert (stall.state_rows_before, stall.state_rows_now) == (6, 9)
    assert watermark_stall(_progress(rows), min_batches=4) is None  # the empty batch does not count


@pytest.mark.parametrize(
    "rows",
    [
        [(5, None, 1, 0)] * 12,  # no watermark at all
        [(5, f"2024-01-01 00:00:{n:02d}", 1, 0) for n in range(12)],  # moving every batch
        [(5, "2024-01-01 00:00:10", 1, 0)] + [(0, "2024-01-01 00:00:10", 1, 0)] * 12,  # no input: idle, not stalled
    ],
)
def test_no_stall_without_a_watermark_while_it_moves_or_without_input(rows) -> None:
    assert watermark_stall(_progress(rows), min_batches=3) is None


def test_an_empty_run_and_a_bad_threshold() -> None:
    assert watermark_stall(_progress([])) is None
    with pytest.raises(ValueError, match="min_batches"):
        watermark_stall(_progress([]), min_batches=0)
