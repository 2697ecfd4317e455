"""Late data, event by event: which events a watermarked windowed count kept, and how complete it is.

Everything here is a pure pandas function of a feed's events and a run's
progress summaries; no Spark is needed (the exact answer comes from
:func:`streaming.analysis.exact.exact_counts`).

The model of Spark Structured Streaming it encodes (checked against PySpark 4.2
with real replays in ``tests/analysis/test_lateness.py``):

* Each feed file ``i`` is read by exactly one micro-batch; the batch's progress
  has ``endOffset {"logOffset": i}`` and a different ``startOffset``.
* The rows of that batch are checked against the watermark *for late events*,
  which is the watermark of the previous batch (Spark evicts state with the
  batch's own watermark but filters late rows with the one before it). The
  runner lets Spark run the no-data batch that advances the watermark before
  handing over the next file, so there the two are equal; a paced or
  all-at-once replay can read a file before that batch runs, and the previous
  batch's watermark is the one that applies. Before the first advance there is
  no watermark (``NaT``) and nothing is dropped.
* Windows are ``[start, end)`` aligned to the epoch; an event at ``t`` belongs to
  every window ``[k * slide, k * slide + window)`` that contains it, i.e.
  ``floor(window / slide)`` or ``ceil(window / slide)`` windows.
* After window expansion, an (event, window) pair is dropped when
  ``window_end <= watermark`` (the boundary is inclusive: a window ending exactly
  at the watermark is closed).
* Spark's ``numRowsDroppedByWatermark`` counts rows after window expansion *and*
  partial aggregation: one per (window, key) group per input partition, not one
  per event.

Completeness is defined once, in :func:`completeness`, and used everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .windows import window_indices, window_span

__all__ = [
    "BATCH_COLUMNS",
    "CLASSIFIED_COLUMNS",
    "DROPPED_COLUMNS",
    "EVENT_RULE",
    "STATUSES",
    "WINDOW_RULE",
    "classify",
    "completeness",
    "drop_summary",
    "dropped_by_window",
    "dropped_events",
    "file_batches",
    "judge",
    "lateness",
    "lateness_summary",
    "sample_events",
]

STATUSES: tuple[str, str, str] = ("counted", "partly counted", "not counted")

BATCH_COLUMNS = [
    "file_index",
    "batch_id",
    "timestamp",
    "num_input_rows",
    "watermark",
    "max_event_time",
    "max_event_time_seen",
]
CLASSIFIED_COLUMNS = [
    "event_id",
    "file_index",
    "row",
    "batch_id",
    "event_time",
    "key",
    "lateness",
    "watermark",
    "windows",
    "windows_counted",
    "windows_dropped",
    "status",
    "dropped_windows",
]

# ------------------------------------------------------------------- batches


def _summary_rows(progress: pd.DataFrame | Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Progress summaries (dicts, or a frame of them) as dicts, latest per batch id, in batch order."""
    if isinstance(progress, pd.DataFrame):
        rows: Iterable[Mapping[str, Any]] = progress.to_dict("records")
    else:
        rows = progress
    latest = {int(row["batch_id"]): dict(row) for row in rows}
    return [latest[batch] for batch in sorted(latest)]


def _log_offset(text: Any) -> int | None:
    if text is None or (isinstance(text, float) and np.isnan(text)):
        return None
    value = json.loads(text) if isinstance(text, str) else text
    if isinstance(value, Mapping) and "logOffset" in value:
        return int(value["logOffset"])
    raise ValueError(f"source_offsets: {text!r} is not a file-source offset ({{\"logOffset\": n}})")


def _topic_offsets(text: Any) -> Mapping[str, Any] | None:
    """A Kafka source's offsets (``{topic: {partition: offset}}``) from their JSON text; ``None`` for anything else."""
    if not isinstance(text, str):
        return None
    value = json.loads(text)
    return value if isinstance(value, Mapping) and value and all(isinstance(item, Mapping) for item in value.values()) else None


def _files_from_offsets(rows: list[dict[str, Any]]) -> dict[int, int]:
    files: dict[int, int] = {}
    for row in rows:
        start, end = row["source_offsets"]
        ends = _topic_offsets(end)
        if ends is not None:  # a topic: the records of a batch are "file" batch_id (see topic_events_of)
            if ends != _topic_offsets(start):
                files[int(row["batch_id"])] = int(row["batch_id"])
            continue
        first, last = _log_offset(start), _log_offset(end)
        if last is None or first == last:
            continue
        for file_index in range((-1 if first is None else first) + 1, last + 1):
            files[file_index] = int(row["batch_id"])
    return files


def _files_from_rows(rows: list[dict[str, Any]], rows_per_file: Sequence[int] | None) -> dict[int, int]:
    data_batches = [row for row in rows if int(row.get("num_input_rows") or 0) > 0]
    if rows_per_file is None:
        return {index: int(row["batch_id"]) for index, row in enumerate(data_batches)}
    nonempty = [index for index, count in enumerate(rows_per_file) if count > 0]
    if len(data_batches) > len(nonempty):
        raise ValueError(f"progress: {len(data_batches)} batches read rows but the feed has only {len(nonempty)} non-empty files")
    files = {}
    for file_index, row in zip(nonempty, data_batches):
        if int(row["num_input_rows"]) != rows_per_file[file_index]:
            raise ValueError(
                f"progress: batch {row['batch_id']} read {row['num_input_rows']} rows, "
                f"but file {file_index} of the feed has {rows_per_file[file_index]}; is this the same feed?"
            )
        files[file_index] = int(row["batch_id"])
    return files


def _as_timestamp(value: Any) -> pd.Timestamp:
    return pd.NaT if value is None or pd.isna(value) else pd.Timestamp(value)


def file_batches(
    progress: pd.DataFrame | Iterable[Mapping[str, Any]],
    rows_per_file: Sequence[int] | None = None,
) -> pd.DataFrame:
    """Which batch read each feed file, and the event-time clock of that batch.

    ``progress`` is the summaries of a run (``Run.log.summaries()``, each with
    ``source_offsets``) or a progress frame (``Replay.progress`` /
    :func:`streaming.engine.output.progress.progress_frame`). With offsets, the batch whose
    first-source ``endOffset`` is ``{"logOffset": i}`` (and differs from its
    ``startOffset``) read file ``i``; with a topic's offsets, each batch that
    read records is its own "file" (:func:`~streaming.analysis.profile.topic_events_of`
    numbers records by the batch that read them). Without them, the batches that read rows
    are matched, in order, to the feed's non-empty files; pass ``rows_per_file``
    (:attr:`FeedEvents.rows_per_file`) to skip empty files and check the counts.

    Columns ``BATCH_COLUMNS``, one row per file processed so far: ``watermark``
    is the watermark the file's rows were checked against -- the previous
    batch's (``NaT``: none yet),
    ``max_event_time`` the batch's own maximum event time (progress
    ``eventTime.max``) and ``max_event_time_seen`` the maximum over every batch
    up to and including it -- the engine's clock, which the watermark trails.
    """
    rows = _summary_rows(progress)
    has_offsets = bool(rows) and all(isinstance(row.get("source_offsets"), (tuple, list)) for row in rows)
    files = _files_from_offsets(rows) if has_offsets else _files_from_rows(rows, rows_per_file)
    seen: dict[int, pd.Timestamp] = {}
    late_watermark: dict[int, pd.Timestamp] = {}
    running = pd.NaT
    previous_watermark = pd.NaT
    for row in rows:
        late_watermark[int(row["batch_id"])] = previous_watermark
        previous_watermark = _as_timestamp(row.get("watermark"))
        batch_max = _as_timestamp(row.get("max_event_time"))
        if not pd.isna(batch_max) and (pd.isna(running) or batch_max > running):
            running = batch_max
        seen[int(row["batch_id"])] = running
    by_batch = {int(row["batch_id"]): row for row in rows}
    records = [
        {
            "file_index": file_index,
            "batch_id": batch_id,
            "timestamp": _as_timestamp(by_batch[batch_id].get("timestamp")),
            "num_input_rows": int(by_batch[batch_id].get("num_input_rows") or 0),
            "watermark": late_watermark[batch_id],
            "max_event_time": _as_timestamp(by_batch[batch_id].get("max_event_time")),
            "max_event_time_seen": seen[batch_id],
        }
        for file_index, batch_id in sorted(files.items())
    ]
    frame = pd.DataFrame(records, columns=BATCH_COLUMNS)
    frame = frame.astype({"file_index": "int64", "batch_id": "int64", "num_input_rows": "int64"})
    for column in ("timestamp", "watermark", "max_event_time", "max_event_time_seen"):
        frame[column] = pd.to_datetime(frame[column]).astype("datetime64[ns]")
    return frame.reset_index(drop=True)


# ------------------------------------------------------------------ lateness


def lateness(events: pd.DataFrame) -> pd.Series:
    """How far behind the stream each event arrived, as a ``Timedelta`` series aligned with ``events``.

    ``(max event time of every event in EARLIER files) - event_time``, clipped at
    0; 0 for events with no earlier event (the first file). Events in the same
    file do not make each other late: they arrive together.

    With a watermark delay ``D``, the watermark applied to file ``i`` is
    ``max(earlier files) - D``, so an event with ``lateness <= D`` has
    ``event_time >= watermark`` and every one of its windows ends after the
    watermark: it is counted in all of them.
    """
    if events.empty:
        return pd.Series(pd.to_timedelta([]), index=events.index, name="lateness", dtype="timedelta64[ns]")
    per_file = events.groupby("file_index")["event_time"].max().sort_index()
    before = per_file.cummax().shift(1)
    stream_max = events["file_index"].map(before)
    late = (stream_max - events["event_time"]).fillna(pd.Timedelta(0)).clip(lower=pd.Timedelta(0))
    return late.astype("timedelta64[ns]").rename("lateness")


def lateness_summary(late: pd.Series | pd.DataFrame, coverage: float = 0.99) -> dict[str, Any]:
    """Percentiles of lateness and the smallest delay that keeps ``coverage`` of events.

    ``late`` is a lateness series (:func:`lateness`) or a frame with a
    ``lateness`` column. Returns ``events``, ``late_events`` (lateness > 0),
    ``p50``/``p95``/``p99`` (linearly interpolated), ``max``, ``coverage`` and
    ``delay_for_coverage``: the smallest delay ``d`` with at least ``coverage``
    of events having ``lateness <= d`` (an observed lateness, so at least
    ``p99`` for ``coverage=0.99``); ``Timedelta``s, ``NaT`` without events.

    A watermark delay of ``delay_for_coverage`` would have counted at least
    that share of events in *all* their windows: an event no later than the
    delay is never behind the watermark (see :func:`lateness`). It is an upper
    bound on the delay needed, not the exact one: a later event is still counted
    in the windows that end after the watermark, so a shorter watermark may keep
    as many events in at least one window.
    """
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage: {coverage!r} must be in (0, 1]")
    series = late["lateness"] if isinstance(late, pd.DataFrame) else late
    values = pd.to_timedelta(series).dropna().sort_values(ignore_index=True)
    count = len(values)
    if count == 0:
        return {
            "events": 0,
            "late_events": 0,
            "p50": pd.NaT,
            "p95": pd.NaT,
            "p99": pd.NaT,
            "max": pd.NaT,
            "coverage": coverage,
            "delay_for_coverage": pd.NaT,
        }
    needed = int(np.ceil(coverage * count - 1e-9))
    return {
        "events": count,
        "late_events": int((values > pd.Timedelta(0)).sum()),
        "p50": values.quantile(0.50),
        "p95": values.quantile(0.95),
        "p99": values.quantile(0.99),
        "max": values.iloc[-1],
        "coverage": coverage,
        "delay_for_coverage": values.iloc[max(needed, 1) - 1],
    }


# ------------------------------------------------------------------ classify


def _empty_classified() -> pd.DataFrame:
    frame = pd.DataFrame({column: pd.Series(dtype="object") for column in CLASSIFIED_COLUMNS})
    return frame.astype(
        {
            "event_id": "int64",
            "file_index": "int64",
            "row": "int64",
            "batch_id": "int64",
            "event_time": "datetime64[ns]",
            "lateness": "timedelta64[ns]",
            "watermark": "datetime64[ns]",
            "windows": "int64",
            "windows_counted": "int64",
            "windows_dropped": "int64",
        }
    )


def classify(events: pd.DataFrame, batches: pd.DataFrame, window_ms: int, slide_ms: int | None = None) -> pd.DataFrame:
    """Per event: in how many of its windows the watermarked count kept it.

    ``events`` from :func:`feed_events`, ``batches`` from :func:`file_batches`;
    ``slide_ms=None`` means tumbling windows. Events of files not processed yet
    (absent from ``batches``) are left out.

    Columns ``CLASSIFIED_COLUMNS``: ``batch_id`` (arrival batch), ``lateness``
    (:func:`lateness`, over all of ``events``), ``watermark`` (applied; ``NaT``:
    none), ``windows`` (windows containing the event), ``windows_counted``
    (those ending after the watermark), ``windows_dropped``, ``status`` (one of
    ``STATUSES``: all, some or none of its windows counted) and
    ``dropped_windows`` (tuple of ``(window_start, window_end)`` pairs dropped);
    and ``id`` when the events have one.
    """
    window_ns, slide_ns = window_span(window_ms, slide_ms)
    if events.empty or batches.empty:
        return _empty_classified()
    events = events.reset_index(drop=True)
    applied = batches[["file_index", "batch_id", "watermark"]].reset_index(drop=True)
    frame = events.assign(lateness=lateness(events)).merge(applied, on="file_index", how="inner")
    if frame.empty:
        return _empty_classified()
    t = frame["event_time"].to_numpy("datetime64[ns]").astype("int64")
    has_watermark = frame["watermark"].notna().to_numpy()
    w = np.where(has_watermark, frame["watermark"].to_numpy("datetime64[ns]").astype("int64"), t)
    # Window k is dropped when its end k*slide + window <= watermark, i.e. k*slide <= w - window.
    first_k, last_k = window_indices(t, window_ns, slide_ns)
    last_dropped_k = np.where(has_watermark, np.floor_divide(np.minimum(t, w - window_ns), slide_ns), first_k - 1)
    total = last_k - first_k + 1
    dropped = np.clip(last_dropped_k - first_k + 1, 0, None)
    dropped_windows = [
        tuple(
            (pd.Timestamp(k * slide_ns), pd.Timestamp(k * slide_ns + window_ns))
            for k in range(int(first), int(last) + 1)
        )
        if count
        else ()
        for first, last, count in zip(first_k, last_dropped_k, dropped)
    ]
    counted = total - dropped
    status = np.where(dropped == 0, STATUSES[0], np.where(counted == 0, STATUSES[2], STATUSES[1]))
    frame = frame.assign(
        windows=total.astype("int64"),
        windows_counted=counted.astype("int64"),
        windows_dropped=dropped.astype("int64"),
        status=status,
        dropped_windows=dropped_windows,
    )
    return frame.sort_values(["batch_id", "event_id"], ignore_index=True)[[*CLASSIFIED_COLUMNS, *(["id"] if "id" in frame else [])]]


def judge(events: pd.DataFrame, summaries: Iterable[Mapping[str, Any]], window_ms: int, slide_ms: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(classified, batches)``: every event of a feed or dataset judged by the watermark its micro-batch had in a run.

    ``events`` are :func:`~streaming.engine.data.feeds.feed_events` or
    :func:`~streaming.analysis.profile.feed_events_of` rows (an ``event_id``
    and a ``row`` are added when missing), ``summaries`` the run's progress
    summaries (:func:`file_batches`); see :func:`classify`.
    """
    if "event_id" not in events:
        events = events.assign(event_id=np.arange(len(events), dtype="int64"))
    if "row" not in events:
        events = events.assign(row=events.groupby("file_index").cumcount())
    batches = file_batches(list(summaries))
    return classify(events, batches, window_ms, slide_ms), batches


DROPPED_COLUMNS = ["event_id", "file_index", "batch_id", "event_time", "key", "watermark", "window_start", "window_end", "rule"]
WINDOW_RULE = "window end at or before the watermark"
"""Why a window aggregation drops an (event, window) pair."""
EVENT_RULE = "event time at or before the watermark"
"""Why an operator that filters events by their own time (a deduplication) drops an event, before any window."""


def dropped_events(classified: pd.DataFrame, deduplicate: bool = False) -> pd.DataFrame:
    """The dropped events themselves (:data:`DROPPED_COLUMNS`, and ``id`` after ``event_id`` when the events have one), each with the rule that dropped it, in arrival order.

    One row per (event, window) pair a window aggregation dropped
    (:data:`WINDOW_RULE`). With ``deduplicate`` an event whose own time is at
    or before the watermark was dropped by the deduplication before any window:
    one row without a window (:data:`EVENT_RULE`) -- with a delay of 0 an event
    equal to the previous batch's largest event time is already late.
    """
    frame = classified.copy()
    late = np.zeros(len(frame), dtype=bool)
    if deduplicate and len(frame):
        late = (frame["watermark"].notna() & (frame["event_time"] <= frame["watermark"])).to_numpy()
    whole = frame[late].assign(window_start=pd.NaT, window_end=pd.NaT, rule=EVENT_RULE)
    pairs = frame[~late & (frame["windows_dropped"] > 0).to_numpy()].explode("dropped_windows")
    pairs = pairs.assign(
        window_start=[window[0] for window in pairs["dropped_windows"]],
        window_end=[window[1] for window in pairs["dropped_windows"]],
        rule=WINDOW_RULE,
    )
    columns = [*DROPPED_COLUMNS[:1], *(["id"] if "id" in frame else []), *DROPPED_COLUMNS[1:]]
    dropped = pd.concat([whole[columns], pairs[columns]], ignore_index=True)
    for name in ("event_time", "watermark", "window_start", "window_end"):
        dropped[name] = pd.to_datetime(dropped[name]).astype("datetime64[ns]")
    return dropped.sort_values(["batch_id", "event_id", "window_start"], ignore_index=True, na_position="first")


def dropped_by_window(classified: pd.DataFrame) -> pd.DataFrame:
    """The dropped (event, window) pairs counted per window and key: ``window_start, window_end, key, dropped``.

    Sorted by window and key. For every window, ``exact count - counted count``
    of an update-mode run equals ``dropped``.
    """
    columns = ["window_start", "window_end", "key", "dropped"]
    pairs = [
        (start, end, key)
        for key, windows in zip(classified["key"], classified["dropped_windows"])
        for start, end in windows
    ]
    if not pairs:
        frame = pd.DataFrame(columns=columns)
        return frame.astype({"window_start": "datetime64[ns]", "window_end": "datetime64[ns]", "key": "object", "dropped": "int64"})
    frame = pd.DataFrame(pairs, columns=columns[:3]).groupby(columns[:3], as_index=False).size().rename(columns={"size": "dropped"})
    frame = frame.astype({"window_start": "datetime64[ns]", "window_end": "datetime64[ns]", "dropped": "int64"})
    return frame.sort_values(columns[:3], ignore_index=True)


def _dropped_groups(classified: pd.DataFrame) -> int:
    groups = {
        (batch_id, key, start)
        for batch_id, key, windows in zip(classified["batch_id"], classified["key"], classified["dropped_windows"])
        for start, _ in windows
    }
    return len(groups)


def drop_summary(classified: pd.DataFrame, progress: pd.DataFrame | Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Late data in numbers, ours against Spark's.

    ``events_total``, ``counted``, ``partly_counted`` (in only some of their
    windows), ``not_counted`` (in none), ``pairs_total`` and ``pairs_dropped``
    ((event, window) pairs), ``groups_dropped`` (distinct (batch, window, key)
    groups with a dropped pair: what Spark counts when each file is read as one
    partition, as the sample feeds are), ``rows_dropped_by_watermark`` (Spark's
    metric summed over ``progress``, summaries or a progress frame) and a
    one-line ``explanation`` of why Spark's number differs from the events.
    """
    rows = _summary_rows(progress)
    spark_dropped = sum(int(row.get("rows_dropped_by_watermark") or 0) for row in rows)
    statuses = classified["status"].value_counts()
    summary: dict[str, Any] = {
        "events_total": len(classified),
        "counted": int(statuses.get(STATUSES[0], 0)),
        "partly_counted": int(statuses.get(STATUSES[1], 0)),
        "not_counted": int(statuses.get(STATUSES[2], 0)),
        "pairs_total": int(classified["windows"].sum()),
        "pairs_dropped": int(classified["windows_dropped"].sum()),
        "groups_dropped": _dropped_groups(classified),
        "rows_dropped_by_watermark": spark_dropped,
    }
    summary["explanation"] = (
        f"Spark reports {spark_dropped} rows dropped by the watermark, counted after window expansion and partial "
        f"aggregation (one per window and key per input partition), not events: {summary['not_counted']} events "
        f"were in none of their windows and {summary['partly_counted']} in only some, {summary['pairs_dropped']} "
        f"(event, window) pairs in {summary['groups_dropped']} (batch, window, key) groups."
    )
    return summary


# -------------------------------------------------------------- completeness


def completeness(result: pd.DataFrame, exact: pd.DataFrame) -> tuple[float, pd.DataFrame]:
    """How much of the exact answer a run's result table holds. The one definition of completeness.

    ``result`` is the final result table of an update-mode run
    (``window_start, window_end, key, count``; ``Replay.result``) and ``exact``
    the batch answer without a watermark on the same feed
    (:func:`streaming.analysis.exact.exact_counts`). Completeness is ``sum(result.count)
    / sum(exact.count)`` (1.0 when the exact answer is empty), and likewise per
    window, summed over keys: ``window_start, window_end, counted, exact,
    completeness``, sorted; a window the run never emitted has ``counted`` 0.
    A window absent from ``exact`` (a result of a different feed) gets ``NaN``.
    A result table bounded by ``max_rows`` that evicted windows understates it.
    """
    exact_total = int(exact["count"].sum()) if len(exact) else 0
    counted_total = int(result["count"].sum()) if len(result) else 0
    overall = 1.0 if exact_total == 0 else counted_total / exact_total
    keys = ["window_start", "window_end"]

    def per_window(frame: pd.DataFrame, name: str) -> pd.DataFrame:
        if frame.empty:
            empty = pd.DataFrame({"window_start": pd.Series(dtype="datetime64[ns]"), "window_end": pd.Series(dtype="datetime64[ns]")})
            return empty.assign(**{name: pd.Series(dtype="int64")})
        grouped = frame.groupby(keys, as_index=False)["count"].sum().rename(columns={"count": name})
        return grouped.astype({"window_start": "datetime64[ns]", "window_end": "datetime64[ns]"})

    windows = per_window(result, "counted").merge(per_window(exact, "exact"), on=keys, how="outer")
    windows[["counted", "exact"]] = windows[["counted", "exact"]].fillna(0).astype("int64")
    exact_counts = windows["exact"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(exact_counts > 0, windows["counted"].to_numpy() / np.maximum(exact_counts, 1), np.nan)
    windows["completeness"] = share.astype("float64")
    return overall, windows.sort_values(keys, ignore_index=True)[keys + ["counted", "exact", "completeness"]]


# ------------------------------------------------------------------ sampling


def sample_events(classified: pd.DataFrame, max_points: int = 2000) -> pd.DataFrame:
    """At most ``max_points`` events for a chart, deterministically.

    Every event not fully counted is kept and the counted ones are thinned
    evenly (in arrival order) to fill the rest; if the not fully counted alone
    exceed ``max_points``, they are thinned evenly too. Row order is arrival
    order (``batch_id, event_id``).
    """
    if max_points < 1:
        raise ValueError(f"max_points: {max_points!r} must be at least 1")
    if len(classified) <= max_points:
        return classified.reset_index(drop=True)
    ordered = classified.sort_values(["batch_id", "event_id"], ignore_index=True)
    special = ordered.index[ordered["status"] != STATUSES[0]]
    counted = ordered.index[ordered["status"] == STATUSES[0]]

    def even(index: pd.Index, size: int) -> pd.Index:
        if size <= 0:
            return index[:0]
        if len(index) <= size:
            return index
        return index[np.unique(np.linspace(0, len(index) - 1, size).round().astype(int))]

    kept_special = even(special, max_points)
    kept = kept_special.union(even(counted, max_points - len(kept_special)))
    return ordered.loc[kept].sort_values(["batch_id", "event_id"], ignore_index=True)
