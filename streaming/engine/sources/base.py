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
  :meth:`StreamSource.view_rows`, the same as one batch;
- how it is replayed to its end (the tuner, Compare, a replay's report):
  :meth:`StreamSource.replayed`, :meth:`StreamSource.replay_arrival`, :attr:`StreamSource.fixed`,
  :meth:`StreamSource.bounded_now` and what its report says of it;
- whether and how a walkthrough steps through it: :attr:`StreamSource.step_unit`,
  :meth:`StreamSource.steppable`, :meth:`StreamSource.stepping`.

The rest of the code asks these, never a source's class: every kind lives in
a module of its own in this package, and a new one touches that module and
its line in ``SOURCE_KINDS``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast, runtime_checkable

from ..arrival import ArrivalRule
from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..data.columns import ColumnMapping
    from . import Source
    from .feed import FeedSource
    from .kafka import KafkaSource

__all__ = ["Arrival", "Feeder", "Loss", "Stepper", "StreamSource", "stage_upto"]

Arrival = Literal["none", "batch", "column", "record"]
"""What a source knows of when each event arrived: nothing (only Spark's metrics), its micro-batch,
an arrival column of the data, or a time on every record (Kafka's record timestamp)."""


class Feeder(Protocol):
    """What hands data to a source from the app's side: a feed replayer or a line server."""

    done: threading.Event

    @property
    def handed_files(self) -> Mapping[str, int] | None:
        """Files handed to Spark's file sources so far, by the folder each reads (one file a micro-batch), when it replays files; ``None``
        when it does not."""
        ...

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def on_lost(self, tell: Callable[[str], None]) -> None:
        """Have ``tell(why)`` called once the feeder can hand nothing more over (a replay whose staging folder went under it), at once if it
        already cannot. Spark does not notice by itself: a file source whose folder is gone lists no file, and the query waits for ever."""
        ...


class Loss:
    """Why a feeder can hand nothing more over, told once to each who asked (:meth:`Feeder.on_lost`), from the thread that found it."""

    def __init__(self) -> None:
        self.why: str | None = None
        self._tell: list[Callable[[str], None]] = []
        self._lock = threading.Lock()

    def on_lost(self, tell: Callable[[str], None]) -> None:
        with self._lock:
            if self.why is None:
                self._tell.append(tell)
                return
        tell(self.why)

    def lose(self, why: str) -> None:
        with self._lock:
            if self.why is not None:
                return
            self.why, tells = why, self._tell
            self._tell = []
        for tell in tells:
            tell(why)


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

    @property
    def first_at_start(self) -> bool:
        """True when Spark runs the first step's batch as soon as the query starts (a topic's), before any press hands it over."""
        ...

    @property
    def paced(self) -> bool:
        """True when a thread of its own hands the steps over at a pace (a paced replay of files), not its caller."""
        ...

    def stage_all(self, upto: int | None = None) -> None:
        """Hand every step over now (the busy arrival rule, the available-now trigger), or until ``upto`` steps are handed over in all."""
        ...

    def start_quiet(self, idle: Callable[[], None]) -> None:
        """Start a paced replay under the quiet arrival rule: each next step handed over after its pause and after ``idle()``, which returns once
        Spark has run every batch it has (called once the query has started)."""
        ...


def stage_upto(stepper: Stepper, upto: int | None) -> None:
    """Hand ``stepper``'s steps over now, every one or (``upto``) until that many are handed over in all: a stepper's ``stage_all``."""
    while (upto is None or stepper.staged < upto) and stepper.stage_next():
        pass


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

    @property
    def address(self) -> str:
        """Where the data is, for reports: a feed's path, a topic as ``kafka://HOST:PORT/TOPIC``; else the label."""
        return self.label

    address_field = "source"
    """The configuration field that says where the data is, for messages about :attr:`address`."""

    @property
    def keyless(self) -> bool:
        """True when the mapping names no key column (every row is keyed alike, and reports show the key as null)."""
        columns = self.columns
        return columns is not None and columns.key is None

    @property
    def as_feed(self) -> FeedSource | None:
        """This source when it replays files (its path, layout and batching are then at hand), else ``None``."""
        return None

    @property
    def as_topic(self) -> KafkaSource | None:
        """This source when it reads a Kafka topic a user named (its brokers and topic are then at hand), else ``None``."""
        return None

    @property
    def as_files(self) -> FeedSource | None:
        """What this source reads when it reads files (their ``files()``, ``file_format`` and ``columns`` are then at hand), else ``None``."""
        return self.as_feed

    def reads_topic(self, name: str) -> bool:
        """True when a query on this source reads the Kafka topic ``name`` (a topic, one its pattern matches, a walkthrough's staging topic)."""
        return False

    @property
    def shown(self) -> Source:
        """The source a user configured, for forms and exported programs (a walkthrough's staging topic shows the topic it copies)."""
        return cast("Source", self)  # every configuration is one of the kinds of Source

    def description(self) -> dict[str, str]:
        """Every field of the configuration, name → text, for tables and the Queries page (every source is a dataclass)."""
        return {item.name: str(getattr(self, item.name)) for item in fields(self)}  # type: ignore[arg-type]

    # ----------------------------------------------------------------- replays

    @property
    def replays_offsets(self) -> bool:
        """True when a replay's micro-batches are ranges of a topic's offsets that Spark's progress and checkpoint name; False for files handed over a batch at a time."""
        return False

    def replay_arrival(self, rule: ArrivalRule) -> ArrivalRule:
        """The arrival rule (:mod:`streaming.engine.arrival`) a replay of this source to its end follows when ``rule`` is asked: files follow either."""
        return rule

    @property
    def fixed(self) -> bool:
        """True when a replay reads the same rows whatever arrives meanwhile (files; a topic bounded at fixed end offsets)."""
        return False

    @property
    def batch_rule(self) -> str:
        """How the rows are cut into micro-batches, in the words of ``--batch-by`` (reports)."""
        return "trigger"

    def replayed(self, purpose: str) -> Source:
        """This source replayed from its start to its end with each micro-batch run as it comes (to be ``purpose``, e.g. ``tuned``, in messages);
        :class:`ConfigError` for a source that cannot be replayed so."""
        raise ConfigError("source", self.label, f"cannot be {purpose}: only a feed, a dataset or a topic's offsets are replayed to their end")

    def bounded_now(self) -> Source:
        """This source bounded at its end as it is now, so that two replays read the same rows (a topic asks its brokers); itself when :attr:`fixed`."""
        return cast("Source", self)  # every configuration is one of the kinds of Source

    def replay_facts(self, summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """What a replay's JSON report says of where it read, from its batches' ``summaries``: a topic's end offsets; nothing for files."""
        return {}

    def bound_facts(self) -> dict[str, Any]:
        """What a sweep's JSON report says of the bound it replayed to: a topic's end offsets; nothing for files."""
        return {}

    # ----------------------------------------------------------------- stepping

    @property
    def step_unit(self) -> str | None:
        """What one step of a walkthrough hands over (``files``, ``batches of records``); ``None`` when the source cannot be stepped through."""
        return None

    def steppable(self) -> Source:
        """This source as a walkthrough of a user's data steps through it (files one a micro-batch, a topic's capped range); :class:`ConfigError` naming the field otherwise."""
        raise ConfigError("source", self.label, "must be files or a topic's records, replayed one micro-batch at a time, to be stepped through")

    def stepping(self, staging_name: str) -> Source:
        """The source a walkthrough runs to step through this one (a topic's range is copied into the staging topic ``staging_name`` a step at a time);
        :class:`ConfigError` naming the field when it cannot be stepped through as it is."""
        raise ConfigError("source", self.label, "must be files or a topic's records, replayed one micro-batch at a time, to be stepped through")

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
