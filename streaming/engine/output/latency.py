"""End-to-end latency per record: from the moment a record was produced to the moment its effect reached the result table.

A Kafka record's timestamp is its produce time (``CreateTime``: the producer's
clock, on the machine that publishes); a row of Spark's ``rate`` source (and
so of the generator) carries the moment the source made it available; a row
of a replayed file (a feed or a dataset) carries the moment its file -- its
micro-batch -- was handed to Spark's file source. Sources
whose rows carry such a time say what it is (``stamp``) and add it as :data:`PRODUCED`. A record's latency is measured twice:
to the moment the sink received the output of the batch (or, in real-time
mode, the row) it took part in -- **written** -- and to the moment the app had
folded that output into the run's :class:`~streaming.engine.output.results.ResultTable`
-- **folded** -- and, on the dashboard, to the moment a page first drew the
table holding it -- **shown**. All are times on this machine's clock, as the produce time is
when the publisher runs here.

How the times reach a :class:`LatencyLog`:

- **Micro-batches**: the query observes each batch's produce times as
  :data:`QUANTILES` + 1 exact percentiles (``percentile``, observed metrics
  :data:`LATENCY_METRICS`), a summary of bounded size whatever the batch's
  record count; :class:`~streaming.engine.output.sinks.FoldSink` notes when it got
  and folded the batch's rows (:meth:`LatencyLog.batch_written`), the progress
  brings the percentiles (:meth:`LatencyLog.batch_produced`); once both are in,
  the batch's records enter the log as those percentiles, each weighing
  ``count / points``.
- **Real-time mode**: every output row carries its record's produce time;
  the sink's Kafka record timestamp is the time it was written, and the app
  notes when it folded it: one entry of weight 1 per record (:meth:`LatencyLog.add`).

What a record waited for is the difference: in a micro-batch, the trigger
(its batch starts after it arrived), the batch's work (Spark's ``durationMs``)
and the app's fold; in real-time mode, only the row's own processing.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["LATENCY_METRICS", "PRODUCED", "QUANTILES", "LatencyLog", "observed_produced"]

LATENCY_METRICS = "latency"
"""The name of the observed metrics that carry a batch's produce times."""
PRODUCED = "produced_ms"
"""The column with a record's produce time (epoch milliseconds) in a source frame that knows it."""
QUANTILES = 1000
"""A batch's produce times are observed as the percentiles 0, 1/QUANTILES, ..., 1: exact to 0.1 % of its records."""
COLUMNS = ("produced_ms", "written_ms", "folded_ms", "weight", "shown_ms", "started_ms")


def observed_produced(progress: Mapping[str, Any]) -> tuple[list[float], int] | None:
    """``(percentiles, count)`` of the produce times a batch's progress observed; ``None`` when it observed none."""
    metrics = (progress.get("observedMetrics") or {}).get(LATENCY_METRICS)
    if not metrics:
        return None
    count = int(metrics.get("produced_count") or 0)
    points = metrics.get("produced_percentiles") or []
    if count == 0 or not points:
        return [], 0
    return [float(point) for point in points], count


class LatencyLog:
    """The latencies of one run's records: the latest ``max_entries`` entries. Thread-safe.

    An entry is ``(produced_ms, written_ms, folded_ms, weight, shown_ms, started_ms)``: one record
    (weight 1) or one of a batch's percentiles (weight: records it stands for);
    ``shown_ms`` is when a page first drew the table holding it (:meth:`shown`; NaN before),
    ``started_ms`` when its micro-batch started (NaN in real-time mode).
    """

    def __init__(self, max_entries: int = 500_000) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries: {max_entries!r} must be at least 1")
        self.max_entries = max_entries
        self._chunks: deque[np.ndarray] = deque()
        self._entries = 0
        self._records = 0.0
        self._written: dict[int, tuple[int, int]] = {}
        self._produced: dict[int, tuple[list[float], int, float]] = {}
        self._lock = threading.Lock()
        self._version = 0
        self._unshown = 0
        """The first chunk with entries no page has drawn yet."""

    @property
    def records(self) -> int:
        """Records measured so far (also those whose entries were let go)."""
        with self._lock:
            return round(self._records)

    @property
    def version(self) -> int:
        """Grows with every addition: a page redraws only when it changed."""
        with self._lock:
            return self._version

    def add(
        self, produced_ms: Sequence[float], written_ms: Sequence[float] | float, folded_ms: Sequence[float] | float, weight: float = 1.0,
        started_ms: float = float("nan"),
    ) -> None:
        """Add records (or percentiles standing for ``weight`` records each) with their times; ``started_ms``: their micro-batch's start."""
        produced = np.asarray(produced_ms, dtype="float64")
        if produced.size == 0:
            return
        chunk = np.empty((produced.size, len(COLUMNS)), dtype="float64")
        chunk[:, 0] = produced
        chunk[:, 1] = np.broadcast_to(np.asarray(written_ms, dtype="float64"), produced.shape)
        chunk[:, 2] = np.broadcast_to(np.asarray(folded_ms, dtype="float64"), produced.shape)
        chunk[:, 3] = weight
        chunk[:, 4] = np.nan
        chunk[:, 5] = started_ms
        with self._lock:
            self._chunks.append(chunk)
            self._entries += produced.size
            self._records += weight * produced.size
            while self._entries - self._chunks[0].shape[0] >= self.max_entries:
                self._entries -= self._chunks.popleft().shape[0]
                self._unshown = max(0, self._unshown - 1)
            self._version += 1

    def shown(self, at_ms: float) -> None:
        """A page drew the result table at ``at_ms``: the entries folded by then and not drawn before were shown then."""
        with self._lock:
            chunks = list(self._chunks)[self._unshown :]
            for chunk in chunks:
                fresh = np.isnan(chunk[:, 4]) & (chunk[:, 2] <= at_ms)
                chunk[fresh, 4] = at_ms
            while self._unshown < len(self._chunks) and not np.isnan(self._chunks[self._unshown][:, 4]).any():
                self._unshown += 1
            self._version += 1

    def batch_written(self, batch_id: int, written_ms: int, folded_ms: int) -> None:
        """The sink got batch ``batch_id``'s output at ``written_ms`` and had folded it at ``folded_ms``."""
        with self._lock:
            produced = self._produced.pop(batch_id, None)
            if produced is None:
                self._written[batch_id] = (written_ms, folded_ms)
                self._forget_old(self._written)
        if produced is not None:
            self._add_batch(produced, written_ms, folded_ms)

    def batch_produced(self, batch_id: int, percentiles: list[float], count: int, started_ms: float = float("nan")) -> None:
        """Batch ``batch_id``, started at ``started_ms``, read ``count`` records whose produce times have these ``percentiles`` (from its progress)."""
        with self._lock:
            written = self._written.pop(batch_id, None)
            if written is None:
                self._produced[batch_id] = (percentiles, count, started_ms)
                self._forget_old(self._produced)
        if written is not None:
            self._add_batch((percentiles, count, started_ms), *written)

    def _add_batch(self, produced: tuple[list[float], int, float], written_ms: int, folded_ms: int) -> None:
        percentiles, count, started_ms = produced
        if count and percentiles:
            if count < len(percentiles):  # the percentiles at k / (count - 1): the batch's own records, not points interpolated between them
                picks = np.linspace(0, len(percentiles) - 1, count).round().astype(int)
                percentiles = [percentiles[index] for index in picks]
            self.add(percentiles, written_ms, folded_ms, weight=count / len(percentiles), started_ms=started_ms)

    @staticmethod
    def _forget_old(pending: dict[int, Any], keep: int = 64) -> None:
        """A batch whose other half never comes (a batch re-run after a restart, a fold that failed) is let go after ``keep`` newer ones."""
        while len(pending) > keep:
            pending.pop(min(pending))

    def frame(self) -> pd.DataFrame:
        """Every entry kept, oldest first: ``produced_ms``, ``written_ms``, ``folded_ms``, ``shown_ms`` (epoch milliseconds) and ``weight``."""
        with self._lock:
            data = np.concatenate(list(self._chunks)) if self._chunks else np.empty((0, len(COLUMNS)))
        return pd.DataFrame(data, columns=list(COLUMNS))
