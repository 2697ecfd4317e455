"""End-to-end latency, folded from a run's :class:`~streaming.engine.output.latency.LatencyLog` entries: percentiles, over time, a histogram.

Pure pandas: an entries frame in (``produced_ms``, ``written_ms``,
``folded_ms``, ``weight``), numbers and frames out. ``to`` picks the end of
the latency: ``"written"`` (the sink received the record's output) or
``"folded"`` (it was in the result table) or ``"shown"`` (a page drew that
table; entries not drawn yet are left out). Percentiles are weighted nearest-rank: the
smallest latency at or below which at least that share of the records' weight lies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

__all__ = [
    "PERCENTILES", "LatencyEnd", "LatencyHeadline", "latencies", "latency_breakdown", "latency_headline", "latency_histogram", "latency_over_time",
    "latency_summary", "produced_before",
    "weighted_percentiles",
]

LatencyEnd = Literal["written", "folded", "shown"]
PERCENTILES: dict[str, float] = {"p50": 0.50, "p95": 0.95, "p99": 0.99, "max": 1.0}


def latencies(entries: pd.DataFrame, to: LatencyEnd = "folded") -> pd.DataFrame:
    """``entries`` with ``latency_ms`` (from produced to ``to``) and ``at`` (the moment ``to``, as UTC-naive time), oldest first."""
    if to not in ("written", "folded", "shown"):
        raise ValueError(f"to: {to!r} is not one of written, folded, shown")
    entries = entries[entries[f"{to}_ms"].notna()] if to == "shown" else entries
    end = entries[f"{to}_ms"].to_numpy(dtype="float64")
    return pd.DataFrame({
        "latency_ms": end - entries["produced_ms"].to_numpy(dtype="float64"),
        "at": pd.to_datetime(end, unit="ms"),
        "weight": entries["weight"].to_numpy(dtype="float64"),
    })


def weighted_percentiles(values: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray, shares: Sequence[float]) -> list[float]:
    """For each share in [0, 1], the smallest value at or below which at least that share of the total weight lies; NaN for no values.

    Values or weights that are not finite, and weights of 0 or less, are left out (a batch whose percentiles or times did not arrive, as around
    a restart): with them the running total stops rising and the picks would cross (a p50 above the p95). What is left are the same records for
    every share, so p50 <= p95 <= p99 <= max always holds.
    """
    data = np.asarray(values, dtype="float64")
    weight = np.asarray(weights, dtype="float64")
    usable = np.isfinite(data) & np.isfinite(weight) & (weight > 0)
    data, weight = data[usable], weight[usable]
    if data.size == 0:
        return [float("nan")] * len(shares)
    order = np.argsort(data, kind="stable")
    ordered, cumulative = data[order], np.cumsum(weight[order])
    total = cumulative[-1]
    picks = []
    for share in shares:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"shares: {share!r} is not in [0, 1]")
        index = int(np.searchsorted(cumulative, share * total * (1 - 1e-12), side="left"))
        picks.append(float(ordered[min(index, ordered.size - 1)]))
    return picks


def latency_summary(entries: pd.DataFrame, to: LatencyEnd = "folded", since_ms: float | None = None) -> dict[str, float]:
    """``p50``, ``p95``, ``p99``, ``max`` (ms) and ``records`` of the entries whose ``to`` time is at or after ``since_ms`` (all by default)."""
    frame = entries if since_ms is None else entries[entries[f"{to}_ms"] >= since_ms]
    measured = latencies(frame, to)
    values = weighted_percentiles(measured["latency_ms"], measured["weight"], list(PERCENTILES.values()))
    usable = np.isfinite(measured["latency_ms"].to_numpy(dtype="float64")) & (measured["weight"].to_numpy(dtype="float64") > 0)
    return {**dict(zip(PERCENTILES, values, strict=True)), "records": round(float(measured["weight"][usable].sum()), 6)}


def produced_before(entries: pd.DataFrame, started_ms: float) -> dict[str, float]:
    """The records produced before ``started_ms`` (a query's start): ``records`` (their weight), ``share`` of all, and ``oldest_ms`` (how long before the start the oldest was produced; 0 for none).

    Their latency includes the time they waited for the query (a topic's backlog), or, for a topic published with
    historical timestamps (a dataset's arrival times), is their age rather than the pipeline's.
    """
    produced = entries["produced_ms"].to_numpy(dtype="float64")
    weight = entries["weight"].to_numpy(dtype="float64")
    before = produced < started_ms
    total = float(weight.sum())
    records = float(weight[before].sum())
    return {
        "records": round(records, 6),
        "share": records / total if total > 0 else 0.0,
        "oldest_ms": float(started_ms - produced[before].min()) if before.any() else 0.0,
    }


@dataclass(frozen=True)
class LatencyHeadline:
    """The latency a page headlines: percentiles (ms) and ``records`` of the records produced since the query started, over the
    latest window that has any. ``as_of_ms``: the end of that window when no record arrived in the last one (the last figures,
    kept with their time); ``backlog_only``: every record measured was produced before the query started, so no figure is headlined."""

    p50: float
    p95: float
    p99: float
    max: float
    records: float
    as_of_ms: float | None = None
    backlog_only: bool = False


def latency_headline(entries: pd.DataFrame, to: LatencyEnd, *, now_ms: float, window_ms: float, started_ms: float) -> LatencyHeadline:
    """What to headline of ``entries``: the records produced at most ``window_ms`` before ``started_ms`` or later whose ``to`` time
    is within ``window_ms`` of ``now_ms``; with none, those of the ``window_ms`` up to the last such record.

    A record produced long before the query started measured the time it waited for the query (a backlog), or its age when a
    topic was published with its data's historical times (hundreds of billions of milliseconds): not the pipeline's latency.
    """
    ends = entries[f"{to}_ms"].to_numpy(dtype="float64")
    since_start = entries[(entries["produced_ms"].to_numpy(dtype="float64") >= started_ms - window_ms) & np.isfinite(ends)]
    if since_start.empty:
        nothing = float("nan")
        return LatencyHeadline(nothing, nothing, nothing, nothing, 0.0, backlog_only=not entries.empty)
    last = float(since_start[f"{to}_ms"].max())
    as_of = None if last >= now_ms - window_ms else last
    summary = latency_summary(since_start, to, since_ms=(now_ms if as_of is None else as_of) - window_ms)
    return LatencyHeadline(summary["p50"], summary["p95"], summary["p99"], summary["max"], summary["records"], as_of_ms=as_of)


def latency_over_time(entries: pd.DataFrame, bucket_ms: int, to: LatencyEnd = "folded") -> pd.DataFrame:
    """Per ``bucket_ms`` of the ``to`` time: ``at`` (the bucket's start), ``p50``, ``p95``, ``p99``, ``max`` (ms) and ``records``; buckets without records left out."""
    if bucket_ms <= 0:
        raise ValueError(f"bucket_ms: {bucket_ms!r} must be more than 0")
    columns = ["at", *PERCENTILES, "records"]
    if entries.empty:
        return pd.DataFrame(columns=columns)
    measured = latencies(entries, to)
    bucket = (measured["at"].to_numpy(dtype="datetime64[ms]").astype("int64") // bucket_ms)
    rows = []
    for start, group in measured.groupby(bucket, sort=True):
        values = weighted_percentiles(group["latency_ms"], group["weight"], list(PERCENTILES.values()))
        rows.append([pd.Timestamp(int(start) * bucket_ms, unit="ms"), *values, round(float(group["weight"].sum()), 6)])
    return pd.DataFrame(rows, columns=columns)


def latency_histogram(entries: pd.DataFrame, bins: int = 40, to: LatencyEnd = "folded") -> pd.DataFrame:
    """Records per latency bin: ``low_ms``, ``high_ms``, ``records``; ``bins`` equal bins from the least to the largest latency."""
    if bins < 1:
        raise ValueError(f"bins: {bins!r} must be at least 1")
    measured = latencies(entries, to)
    if measured.empty:
        return pd.DataFrame(columns=["low_ms", "high_ms", "records"])
    counts, edges = np.histogram(measured["latency_ms"], bins=bins, weights=measured["weight"])
    return pd.DataFrame({"low_ms": edges[:-1], "high_ms": edges[1:], "records": counts})


BATCH_PHASES: dict[str, tuple[str, str]] = {
    "waiting for its micro-batch to start": ("produced_ms", "started_ms"),
    "its micro-batch, until the sink had its rows": ("started_ms", "written_ms"),
    "the app folding them into the result table": ("written_ms", "folded_ms"),
    "until a page drew the table": ("folded_ms", "shown_ms"),
}
ROW_PHASES: dict[str, tuple[str, str]] = {
    "read, processed and written by Spark's sink": ("produced_ms", "written_ms"),
    "the app reading and folding it into the result table": ("written_ms", "folded_ms"),
    "until a page drew the table": ("folded_ms", "shown_ms"),
}


def latency_breakdown(entries: pd.DataFrame) -> pd.DataFrame:
    """Where a record's time went, on average: ``phase``, ``mean_ms``, ``records``, in order; the means add up to the mean latency to the page.

    Micro-batch entries (with ``started_ms``) are split at their batch's start;
    real-time entries (each row on its own) are not. Only entries a page has
    drawn count (``shown_ms`` known).
    """
    if "started_ms" not in entries.columns:
        entries = entries.assign(started_ms=float("nan"))
    drawn = entries[entries["shown_ms"].notna()] if "shown_ms" in entries.columns else entries.iloc[:0]
    rows = []
    for phases, part in ((BATCH_PHASES, drawn[drawn["started_ms"].notna()]), (ROW_PHASES, drawn[drawn["started_ms"].isna()])):
        weight = part["weight"].to_numpy(dtype="float64")
        if weight.sum() <= 0:
            continue
        for phase, (start, end) in phases.items():
            spent = part[end].to_numpy(dtype="float64") - part[start].to_numpy(dtype="float64")
            rows.append({"phase": phase, "mean_ms": float((spent * weight).sum() / weight.sum()), "records": round(float(weight.sum()), 6)})
    return pd.DataFrame(rows, columns=["phase", "mean_ms", "records"])
