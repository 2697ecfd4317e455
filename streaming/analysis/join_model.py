"""The join model: what a stream-stream join replay emits for any pair of watermark delays, computed from the rows without Spark.

A replayed join is deterministic: batch ``b`` brings file ``b`` of each side.
The model follows Spark's rules (held to Spark by the tests, as
:mod:`streaming.analysis.model` is for windows):

- after a batch, each side's watermark is the largest event time it has
  brought so far less its delay (the epoch while it has brought none); the
  global watermark is the ``min`` (or ``max``) of the sides', and never goes back;
- batch ``b`` runs with the global watermark batch ``b - 1`` left, and drops
  the rows of a side with a watermark whose event time is at or before the one
  batch ``b - 1`` ran with (Spark's watermark for late rows);
- a batch joins its new rows with the other side's state and with each other,
  adds them to the state, then removes every row whose bound (a left row's
  time + the range's end, a right row's time - its start) is before the
  batch's watermark: an outer join emits such a row with NULLs if it never
  matched; a left semi join keeps no left row once it has matched (it is
  emitted once). Spark removes rows only when *both* sides have a watermark (and
  the range is given): with one, the state keeps every row and an outer join
  never emits a NULL row, though Spark accepts the query;
- after the last file a batch without data runs once when the watermark has
  moved and the state is cleaned, as Spark's available-now trigger does.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..engine.join.join import preserves

__all__ = ["JoinModelResult", "exact_pairs", "joined_completeness", "model_join", "model_sweep", "recommend"]

_NONE = np.iinfo(np.int64).min
"""No time: a side without a watermark, or one that has brought no rows."""


@dataclass(frozen=True)
class _Side:
    times: np.ndarray  # event time, int64 ms (rows whose time does not parse are left out)
    keys: list[tuple[str, ...]]
    batches: np.ndarray


def _side(rows: pd.DataFrame, time: str, on: Sequence[str]) -> _Side:
    rows = rows[rows[time].notna()]
    stamps = pd.to_datetime(rows[time])
    times = (stamps.to_numpy("datetime64[ms]").astype("int64")) if len(rows) else np.array([], dtype="int64")
    # a null key matches nothing, not even another null: it gets a key of its own
    keys = [
        tuple(str(value) for value in values) if not any(pd.isna(value) for value in values) else ("\0null", str(index))
        for index, values in enumerate(rows[list(on)].itertuples(index=False, name=None))
    ]
    return _Side(times, keys, rows["batch"].to_numpy("int64"))


@dataclass(frozen=True)
class JoinModelResult:
    """What one replay emits under one pair of delays.

    ``pairs``: the (left row, right row) positions joined (positions in the
    side frames given, malformed rows left out); ``nulls``: per side, the rows
    emitted without a match and the batch that emitted each; ``dropped``: rows
    dropped as too late per side; ``watermarks``: the global watermark each
    batch ran with (ms, ``None`` before the first); ``state_rows``: rows in
    the join's state after each batch (Spark's ``numRowsTotal``).
    """

    pairs: frozenset[tuple[int, int]]
    nulls: dict[str, dict[int, int]]
    dropped: dict[str, frozenset[int]]
    watermarks: tuple[int | None, ...]
    state_rows: tuple[int, ...]
    side_state_rows: tuple[tuple[int, int], ...] = ()
    """Rows of each side (left, right) in the join's state after each batch."""

    @property
    def batches(self) -> int:
        return len(self.watermarks)


def exact_pairs(left: pd.DataFrame, right: pd.DataFrame, left_time: str, right_time: str, on: Sequence[str], bounds_ms: tuple[int, int] | None) -> frozenset[tuple[int, int]]:
    """Every (left row, right row) that matches on the keys and the time range: the batch join of all rows, the answer a replay is measured against."""
    sides = _side(left.reset_index(drop=True), left_time, on), _side(right.reset_index(drop=True), right_time, on)
    left_index = left.reset_index(drop=True)[left.reset_index(drop=True)[left_time].notna()].index.to_numpy()
    right_index = right.reset_index(drop=True)[right.reset_index(drop=True)[right_time].notna()].index.to_numpy()
    by_key: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for position, key in enumerate(sides[1].keys):
        by_key[key].append(position)
    found = set()
    for position, key in enumerate(sides[0].keys):
        for other in by_key.get(key, ()):
            if _in_range(sides[0].times[position], sides[1].times[other], bounds_ms):
                found.add((int(left_index[position]), int(right_index[other])))
    return frozenset(found)


def _in_range(left_ms: int, right_ms: int, bounds_ms: tuple[int, int] | None) -> bool:
    return bounds_ms is None or left_ms + bounds_ms[0] <= right_ms <= left_ms + bounds_ms[1]


def model_join(
    left: pd.DataFrame, right: pd.DataFrame, left_time: str, right_time: str, on: Sequence[str], bounds_ms: tuple[int, int] | None,
    join_type: str, delays_ms: tuple[int | None, int | None], policy: str = "min", batches: int | None = None,
) -> JoinModelResult:
    """The replay of ``left`` and ``right`` (each with ``batch``: its file's index, as :func:`~streaming.engine.join.join.side_rows` gives them) under the delays
    ``(left, right)`` (``None``: no watermark on that side). ``batches``: the files of the side with the most (default: the last file that has a row)."""
    frames = left.reset_index(drop=True), right.reset_index(drop=True)
    names = ("left", "right")
    times = {"left": left_time, "right": right_time}
    sides = {name: _side(frame, times[name], on) for name, frame in zip(names, frames)}
    positions = {name: frame[frame[times[name]].notna()].index.to_numpy() for name, frame in zip(names, frames)}
    arriving: dict[str, dict[int, list[int]]] = {name: defaultdict(list) for name in names}
    for name in names:
        for row, batch in enumerate(sides[name].batches):
            arriving[name][int(batch)].append(row)
    seen = 1 + max((int(side.batches.max()) for side in sides.values() if len(side.batches)), default=-1)
    files = seen if batches is None else max(batches, seen)
    lower, upper = bounds_ms if bounds_ms is not None else (None, None)
    preserved = {name: preserves(join_type, name) for name in names}
    state: dict[str, dict[tuple[str, ...], list[int]]] = {name: defaultdict(list) for name in names}
    matched: dict[str, set[int]] = {name: set() for name in names}
    largest: dict[str, int] = {}
    watermark: int | None = None
    late_mark: int | None = None
    pairs: set[tuple[int, int]] = set()
    nulls: dict[str, dict[int, int]] = {name: {} for name in names}
    dropped: dict[str, set[int]] = {name: set() for name in names}
    marks: list[int | None] = []
    state_rows: list[int] = []
    side_state_rows: list[tuple[int, int]] = []
    watermarked = {name: delay is not None for name, delay in zip(names, delays_ms)}
    evicts = bounds_ms is not None and all(watermarked.values())
    batch = 0
    while True:
        data = batch < files
        if not data and (not evicts or not marks or marks[-1] == watermark):
            break
        marks.append(watermark)
        fresh: dict[str, list[int]] = {}
        for name in names:
            rows = arriving[name].get(batch, []) if data else []
            side = sides[name]
            for row in rows:
                largest[name] = max(largest.get(name, _NONE), int(side.times[row]))
            late = set() if late_mark is None or not watermarked[name] else {row for row in rows if side.times[row] <= late_mark}
            dropped[name].update(int(positions[name][row]) for row in late)
            fresh[name] = [row for row in rows if row not in late]
        for row in fresh["left"]:  # left rows against the right state and the right rows of this batch
            key, moment = sides["left"].keys[row], sides["left"].times[row]
            for other in [*state["right"].get(key, ()), *(r for r in fresh["right"] if sides["right"].keys[r] == key)]:
                if _in_range(moment, sides["right"].times[other], bounds_ms):
                    pairs.add((int(positions["left"][row]), int(positions["right"][other])))
                    matched["left"].add(row)
                    matched["right"].add(other)
        for row in fresh["right"]:  # right rows against the left state
            key, moment = sides["right"].keys[row], sides["right"].times[row]
            for other in state["left"].get(key, ()):
                if _in_range(sides["left"].times[other], moment, bounds_ms):
                    pairs.add((int(positions["left"][other]), int(positions["right"][row])))
                    matched["left"].add(other)
                    matched["right"].add(row)
        for name in names:
            for row in fresh[name]:
                state[name][sides[name].keys[row]].append(row)
        if join_type == "left_semi":  # a left row a semi join has emitted leaves the state (Spark keeps none)
            for key in list(state["left"]):
                staying = [row for row in state["left"][key] if row not in matched["left"]]
                if staying:
                    state["left"][key] = staying
                else:
                    del state["left"][key]
        if watermark is not None and evicts:
            for name in names:
                shift = upper if name == "left" else -lower  # type: ignore[operator]
                for key in list(state[name]):
                    staying = []
                    for row in state[name][key]:
                        if sides[name].times[row] + shift < watermark:
                            if preserved[name] and row not in matched[name]:
                                nulls[name][int(positions[name][row])] = batch
                        else:
                            staying.append(row)
                    if staying:
                        state[name][key] = staying
                    else:
                        del state[name][key]
        by_side = tuple(sum(len(rows) for rows in state[name].values()) for name in names)
        side_state_rows.append((by_side[0], by_side[1]))
        state_rows.append(sum(by_side))
        late_mark = watermark
        # a side with a watermark that has brought no rows yet counts as the epoch (Spark's WatermarkTracker): under min it holds the global one there
        candidates = [largest[name] - delay if name in largest else 0 for name, delay in zip(names, delays_ms) if delay is not None]
        if candidates:
            chosen = min(candidates) if policy == "min" else max(candidates)
            if chosen > (0 if watermark is None else watermark):
                watermark = chosen
        batch += 1
    return JoinModelResult(
        frozenset(pairs), nulls, {name: frozenset(rows) for name, rows in dropped.items()}, tuple(marks), tuple(state_rows), tuple(side_state_rows),
    )


def model_sweep(
    left: pd.DataFrame, right: pd.DataFrame, left_time: str, right_time: str, on: Sequence[str], bounds_ms: tuple[int, int] | None,
    join_type: str, left_delays_ms: Sequence[int], right_delays_ms: Sequence[int], policy: str = "min", batches: int | None = None,
) -> pd.DataFrame:
    """One row per pair of delays: ``left_delay_ms``, ``right_delay_ms``, ``completeness`` (the joined pairs found over the exact join's; 1 when
    there are none), ``pairs``, ``exact_pairs``, ``dropped``, ``null_rows``, ``peak_state_rows`` and ``null_row_wait_batches`` (the mean
    batches a row without a match waited for its NULL row; NaN without any)."""
    exact = exact_pairs(left, right, left_time, right_time, on, bounds_ms)
    arrived = {
        "left": left.reset_index(drop=True)["batch"].to_numpy("int64"),
        "right": right.reset_index(drop=True)["batch"].to_numpy("int64"),
    }
    records = []
    for left_delay in left_delays_ms:
        for right_delay in right_delays_ms:
            result = model_join(left, right, left_time, right_time, on, bounds_ms, join_type, (left_delay, right_delay), policy, batches)
            waits = [batch - arrived[name][row] for name, emitted in result.nulls.items() for row, batch in emitted.items()]
            found, wanted = _measured(join_type, result.pairs & exact), _measured(join_type, exact)
            records.append({
                "left_delay_ms": left_delay,
                "right_delay_ms": right_delay,
                "completeness": found / wanted if wanted else 1.0,
                "pairs": found,
                "exact_pairs": wanted,
                "dropped": sum(len(rows) for rows in result.dropped.values()),
                "null_rows": sum(len(rows) for rows in result.nulls.values()),
                "peak_state_rows": max(result.state_rows, default=0),
                "null_row_wait_batches": float(np.mean(waits)) if waits else float("nan"),
            })
    return pd.DataFrame(records)


def _measured(join_type: str, pairs: frozenset[tuple[int, int]]) -> int:
    """What a join's completeness counts of ``pairs``: the pairs, or for a left semi join (which emits a left row once, whatever its
    matches) the left rows among them."""
    return len({left for left, _ in pairs}) if join_type == "left_semi" else len(pairs)


def recommend(sweep: pd.DataFrame, target: float) -> pd.Series | None:
    """The pair of delays of ``sweep`` (:func:`model_sweep`) that reaches ``target`` completeness with the smallest peak state, then the shortest
    delays; ``None`` when no pair reaches it."""
    reaching = sweep[sweep["completeness"] >= target]
    if reaching.empty:
        return None
    ordered = reaching.assign(_total=reaching["left_delay_ms"] + reaching["right_delay_ms"])
    return ordered.sort_values(["peak_state_rows", "_total", "left_delay_ms"], kind="stable").drop(columns="_total").iloc[0]


def joined_completeness(
    result: pd.DataFrame, left: pd.DataFrame, right: pd.DataFrame, left_time: str, right_time: str, on: Sequence[str], bounds_ms: tuple[int, int] | None,
) -> tuple[int, int]:
    """``(found, exact)``: the exact join's pairs a join's ``result`` rows hold (a pair told by its keys and both times), and how many there
    are. A left semi join's ``result`` has the left side's columns only: its left rows that have a match in the exact join, told by their
    keys and time and counted as many times as they occur (as :func:`model_sweep` counts them), are counted instead. Pairs are a multiset:
    two rows alike on a side make two pairs with each match, and a result must hold both."""
    left, right = left.reset_index(drop=True), right.reset_index(drop=True)
    exact = exact_pairs(left, right, left_time, right_time, on, bounds_ms)
    semi = right_time not in result.columns

    def told(keys: Sequence[object], *times: object) -> tuple[object, ...]:
        return (*(str(key) for key in keys), *(pd.Timestamp(at) for at in times))

    times = [left_time] if semi else [left_time, right_time]
    both = result[result[times].notna().all(axis=1)]
    found = Counter(told(values[:len(on)], *values[len(on):]) for values in both[[*on, *times]].itertuples(index=False, name=None))
    if semi:
        wanted = Counter(told([left.loc[row, key] for key in on], left.loc[row, left_time]) for row in {row for row, _ in exact})
    else:
        wanted = Counter(told([left.loc[row, key] for key in on], left.loc[row, left_time], right.loc[other, right_time]) for row, other in exact)
    return sum((wanted & found).values()), sum(wanted.values())
