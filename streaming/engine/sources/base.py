"""What every source kind tells the engine, whatever system it reads.

A source configuration is a frozen dataclass validated in ``__post_init__``
(so one that exists is one Spark accepts) that also derives from
:class:`StreamSource`, which says:

- what its rows carry: :attr:`StreamSource.columns`, the column mapping of a
  user's data (``None``: only ``event_time`` and ``key``, as the synthetic
  sources yield them);
- how the stream is read: :meth:`StreamSource.read` returns the streaming
  DataFrame (``event_time`` timestamp, ``key`` string, and ``value`` and
  ``dedup_id`` when mapped) and the :class:`Feeder` that hands data to it from
  the app's side, if any; :meth:`StreamSource.rows` the same rows as one batch
  DataFrame, for the sources that have an end;
- what it can tell about arrival time and lag: :attr:`StreamSource.arrival`
  and :attr:`StreamSource.reports_lag`;
- how it is seen as a view of a user's SQL: :meth:`StreamSource.view_frame`
  (every column under its own name, the event time a timestamp) and
  :meth:`StreamSource.view_rows`, the same as one batch.

Every kind lives in a module of its own in this package.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..columns import ColumnMapping

__all__ = ["Arrival", "Feeder", "Stepper", "StreamSource"]

Arrival = Literal["none", "batch", "column", "record"]
"""What a source knows of when each event arrived: nothing (only Spark's metrics), its micro-batch,
an arrival column of the data, or a time on every record (Kafka's record timestamp)."""


class Feeder(Protocol):
    """What hands data to a source from the app's side: a feed replayer or a line server."""

    done: threading.Event

    def start(self) -> None: ...

    def stop(self) -> None: ...


@runtime_checkable
class Stepper(Feeder, Protocol):
    """A feeder that can hand data over one micro-batch at a time (a replayed feed's files, a topic's records): :attr:`stepped` when the caller does."""

    staged: int
    """Steps handed to Spark so far."""

    @property
    def stepped(self) -> bool: ...

    @property
    def steps(self) -> int:
        """Steps in all."""
        ...

    def stage_next(self) -> bool:
        """Hand over the next step; ``False`` when every step was handed over already."""
        ...


class StreamSource:
    """The interface of a source configuration; the defaults fit an unbounded synthetic source."""

    @property
    def columns(self) -> ColumnMapping | None:
        """The mapping of a user's columns (value, id, arrival...); ``None`` when the rows carry only ``event_time`` and ``key``."""
        return None

    @property
    def arrival(self) -> Arrival:
        return "none"

    @property
    def reports_lag(self) -> bool:
        """True when Spark's progress says how far behind the source the query is (Kafka's offsets behind latest)."""
        return False

    @property
    def stamp(self) -> str | None:
        """What the time each row :meth:`read` yields carries (``produced_ms``) is, in words ("when ..."); ``None`` when rows carry none.

        A record's end-to-end latency is measured from it: a topic, replayed files, the generator and rate carry one; a socket does not.
        """
        return None

    @property
    def ends(self) -> bool:
        """True when the available-now trigger can reach an end: the source holds a known amount of data when the query starts."""
        return False

    @property
    def resumable(self) -> bool:
        """True when Spark can resume a query on it from its checkpoint (the source keeps offsets)."""
        return True

    @property
    def label(self) -> str:
        """A short description for tables and messages."""
        return getattr(self, "kind", type(self).__name__)

    def explain_failure(self, error: str) -> str | None:
        """What a user can do about a failed query's ``error`` (its text), when the source caused it; ``None`` otherwise."""
        return None

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
        """``(frame, feeder)``: the source's streaming DataFrame and the helper that feeds it (or ``None``).

        ``staging`` is a private folder the source may hand files over in; ``now_ms``
        is the wall-clock start of the query (epoch milliseconds).
        """
        raise NotImplementedError

    def rows(self, spark: SparkSession) -> DataFrame:
        """Every row the source holds as one batch DataFrame of the columns :meth:`read` yields; :class:`ConfigError` for an unbounded source."""
        raise ConfigError("source", self.label, "has no end: the exact answer is computed over a feed, a dataset or a topic's offsets")

    @property
    def event_time_column(self) -> str:
        """The name the event time has in the source's SQL view: the mapped column's own name, or ``event_time``."""
        columns = self.columns
        return "event_time" if columns is None else columns.event_time

    def view_frame(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
        """``(frame, feeder)`` as :meth:`read`, with the columns a user's SQL sees: every column of the data under its own name,
        :attr:`event_time_column` a timestamp (null where it does not parse). A synthetic source's rows are ``event_time`` and ``key``."""
        frame, feeder = self.read(spark, staging, now_ms)
        return frame.select("event_time", "key"), feeder

    def view_rows(self, spark: SparkSession) -> DataFrame:
        """Every row :meth:`view_frame` yields, as one batch DataFrame (a static view, the exact answer); :class:`ConfigError` for an unbounded source."""
        return self.rows(spark).select("event_time", "key")
