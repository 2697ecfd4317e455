"""A join of two live streams, run until it is stopped: a run of the registry like any query, its rows kept as they come.

:class:`LiveJoinQuery` is the run's configuration: a
:class:`~streaming.engine.join.join.JoinConfig` whose sides are live (the
generator's impressions and clicks, :class:`~streaming.engine.join.join.LiveSide`,
or two Kafka topics, :class:`~streaming.engine.join.join.TopicSide`). It builds the
joined stream and folds each micro-batch into :class:`JoinedRows`, which keeps
the latest rows and every batch's counts; :func:`start_live_join` starts it
through the registry (:meth:`~streaming.engine.run.registry.QueryRegistry.start`),
so a live join counts against the query limit, is listed and stopped on the
Queries page, and goes to the same sinks as every run (``foreachBatch`` on a
classic session, the memory sink on Spark Connect). Both the rows and the
progress log are safe to read from any thread while the query runs.
"""

from __future__ import annotations

import threading
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..errors import ConfigError
from ..sources.base import StreamSource
from .join import EMITTED_COLUMNS, POLICY_CONF, JoinConfig, emitted_counts, join_frame

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..run.query import Run
    from ..run.registry import QueryRegistry
    from ..sources import Feeder

__all__ = ["DEFAULT_LIVE_ROWS", "JoinedRows", "JoinedSources", "LiveJoinQuery", "start_live_join"]

DEFAULT_LIVE_ROWS = 2_000


class JoinedRows:
    """The latest ``max_rows`` rows a join emitted (with ``_batch``, the micro-batch of each) and, for every batch, how many it emitted and how
    many of them were a side's row without a match (:func:`~streaming.engine.join.join.emitted_counts`). Thread-safe: one writer (the batch
    callback), any readers."""

    def __init__(self, config: JoinConfig, max_rows: int = DEFAULT_LIVE_ROWS, columns: list[str] | None = None, times: Sequence[str] = ()) -> None:
        if max_rows < 1:
            raise ConfigError("max_rows", max_rows, "must be at least 1")
        self._config = config
        self._max_rows = max_rows
        self._parts: deque[pd.DataFrame] = deque()
        self._held = 0
        self._columns: list[str] | None = None
        self._output = columns
        """The joined stream's columns, in which :meth:`apply` takes rows."""
        self._times = tuple(times)
        """Its timestamp columns: typed as such even in a batch where every one is null."""
        self.first_batch = threading.Event()
        """Set once a batch was taken."""
        self._counts: list[tuple[int, int, int, int]] = []
        self._total = 0
        self._lock = threading.Lock()

    def apply(self, batch_id: int, rows: list[tuple]) -> None:
        """Take micro-batch ``batch_id``'s rows as a sink hands them over: tuples in the joined stream's columns.

        PySpark's ``collect()`` gives a timestamp as a naive datetime in this machine's time zone; each is turned back into UTC, the
        session's zone, in which ``toPandas()`` gives them (a wall time repeated when clocks go back reads as its first).
        """
        if self._output is None:
            raise ConfigError("columns", None, "are needed to take rows as tuples: make JoinedRows with the joined stream's columns")
        utc = [tuple(value.astimezone(UTC).replace(tzinfo=None) if isinstance(value, datetime) else value for value in row) for row in rows]
        frame = pd.DataFrame(utc, columns=self._output)
        for name in self._times:
            frame[name] = pd.to_datetime(frame[name])
        self.add(batch_id, frame)

    def add(self, batch_id: int, rows: pd.DataFrame) -> None:
        """Take in micro-batch ``batch_id``'s rows; the oldest rows beyond ``max_rows`` are let go."""
        counts = emitted_counts(self._config, rows, [batch_id] * len(rows)).itertuples(index=False, name=None) if len(rows) else [(batch_id, 0, 0, 0)]
        tagged = rows.assign(_batch=batch_id)
        with self._lock:
            self._columns = list(tagged.columns)
            self._counts.extend(counts)
            self._total += len(rows)
            self.first_batch.set()
            if tagged.empty:
                return
            self._parts.append(tagged)
            self._held += len(tagged)
            while self._held - len(self._parts[0]) >= self._max_rows:
                self._held -= len(self._parts.popleft())

    def latest(self) -> pd.DataFrame:
        """The latest rows, newest last, at most ``max_rows``; empty (with the join's columns once a batch ran) before the first."""
        with self._lock:
            parts, columns = list(self._parts), self._columns
        if not parts:
            return pd.DataFrame(columns=columns or [])
        return pd.concat(parts, ignore_index=True).tail(self._max_rows).reset_index(drop=True)

    def emitted(self) -> pd.DataFrame:
        """Per micro-batch, the rows it emitted and of which rows without a match, per side (:data:`~streaming.engine.join.join.EMITTED_COLUMNS`)."""
        with self._lock:
            counts = list(self._counts)
        return pd.DataFrame(counts, columns=EMITTED_COLUMNS)

    @property
    def total(self) -> int:
        with self._lock:
            return self._total

    def __len__(self) -> int:
        return self.total


class JoinedSources(StreamSource):
    """The two sides of a live join seen as one source: what the run's failures, the Queries page and the lost-session notice are told by."""

    kind = "live_join"

    def __init__(self, config: JoinConfig) -> None:
        self.config = config

    @property
    def label(self) -> str:
        return f"{self.config.left.label} and {self.config.right.label}"

    def explain_failure(self, error: str) -> str | None:
        """A topic side's explanation (its brokers gone, its offsets deleted), when one of the sides is a topic and explains it."""
        return next((explained for side in self.config.sides if (explained := side.explain_failure(error)) is not None), None)

    def description(self) -> dict[str, str]:
        return {"kind": "live join", "left": self.config.left.label, "right": self.config.right.label}


@dataclass(frozen=True)
class LiveJoinQuery:
    """A live join as a run: ``join``'s joined stream, in append mode under the default trigger, folded into :class:`JoinedRows`.

    Never kept: a join's state is not resumed here. :class:`ConfigError` for a join of files or topic ranges (:func:`~streaming.engine.join.join.run_join` replays those).
    """

    join: JoinConfig
    output_mode: str = field(default="append", init=False)
    trigger: str = field(default="default", init=False)
    trigger_interval: str | None = field(default=None, init=False)
    arrival: str = field(default="quiet", init=False)
    """A live join's sides are live streams: no arrival rule paces them (its feeders are none of a replay's)."""

    def __post_init__(self) -> None:
        if not isinstance(self.join, JoinConfig):
            raise ConfigError("join", self.join, "is not a JoinConfig")
        if not self.join.live:
            raise ConfigError("left", self.join.left.label, "is not a live stream: run_join replays a join of files or topic ranges")

    @property
    def source(self) -> JoinedSources:
        return JoinedSources(self.join)

    @property
    def resumable(self) -> bool:
        return False

    @property
    def sources(self) -> tuple[StreamSource, ...]:
        """The topics of the sides that read one (the generator's pair is made by rate sources of Spark's own)."""
        return tuple(source for side in self.join.sides if isinstance(source := getattr(side, "source", None), StreamSource))

    def spark_settings(self) -> dict[str, str]:
        """The watermark policy, for this query only."""
        return {POLICY_CONF: self.join.policy}

    def build(self, spark: SparkSession, staging: Path, now_ms: int, *, latency: bool = True) -> tuple[DataFrame, Feeder | None]:
        """The joined stream; live sides read their own sources, so nothing feeds it from here."""
        frame, replayers = join_frame(spark, self.join, staging)
        if replayers:
            raise ConfigError("join", self.join.describe(), "replays files: run_join replays a join of files")
        return frame, None

    def new_table(self, frame: DataFrame, max_rows: int | None, *, record: bool = False) -> JoinedRows:
        times = [item.name for item in frame.schema.fields if item.dataType.typeName() in ("timestamp", "timestamp_ntz")]
        return JoinedRows(self.join, max_rows or DEFAULT_LIVE_ROWS, list(frame.columns), times)

    def describe(self) -> dict[str, object]:
        """A flat description for the Queries page, as the form's queries have."""
        join = self.join
        marks = ", ".join(f"{side.side} {side.watermark or 'none'}" for side in join.sides if not side.static)
        return {
            "source.kind": "live join",
            "source.sides": self.source.label,
            "window": "none (a join)",
            "watermark": f"{marks}; policy {join.policy}",
            "output_mode": self.output_mode,
            "trigger": self.trigger,
            "join": join.describe(),
        }


def start_live_join(registry: QueryRegistry, config: JoinConfig, *, limit: float | None = None, max_rows: int = DEFAULT_LIVE_ROWS) -> Run:
    """Start ``config`` (a live join: :attr:`JoinConfig.live`) on ``registry`` as ``live_join_<id>``; it runs until stopped.

    It counts against the registry's limit of active queries and is listed
    with them. With ``limit``, the query stops itself after that many
    seconds (a page closed without Stop leaves nothing running for ever):
    :attr:`~streaming.engine.run.query.Run.stopped_at_limit` then says so.
    """
    run = registry.start(LiveJoinQuery(config), f"live_join_{uuid.uuid4().hex[:12]}", max_rows=max_rows, latency=False)
    if limit is not None:
        run.stop_after(limit)
    return run


