"""A user's own query in Spark SQL as a run's configuration: the text, the views it reads, how it is written out.

:class:`SqlQuery` is checked on construction as :class:`~streaming.engine.query.config.QueryConfig`
is (names, output mode, trigger); the text itself is checked against Spark's
plans when the views exist (:mod:`.guard`), by :meth:`SqlQuery.check` before a
run and by :meth:`SqlQuery.build` when it starts. Like ``QueryConfig`` it
builds its frame and its result table, so :func:`~streaming.engine.run.query.start_run`
and the registry run it as they run the form's query.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..arrival import DEFAULT_ARRIVAL, ArrivalRule, check_arrival, replay_trigger
from ..errors import ConfigError
from ..query.config import OUTPUT_MODES, STATE_STORES, OutputMode, StateStore, state_store_settings
from ..sources import Stepper, StreamSource
from ..sources.base import Loss
from ..sources.replayer import FeedReplayer, pace_or_lose
from .checker import SqlChecker
from .guard import SqlError, analysis_error, checked
from .plan import PlanFacts, plan_facts
from .table import SqlTable
from .views import SqlView, sql_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..sources import Feeder

__all__ = ["SQL_TRIGGERS", "SqlQuery", "ViewFeeders"]

SQL_TRIGGERS: tuple[str, ...] = ("default", "available_now", "processing_time")


@dataclass(frozen=True)
class SqlQuery:
    """``text`` (one SELECT) over ``views``: at least one streamed; names unique, case aside, as Spark compares them.

    ``output_mode``, ``trigger`` (``default``, ``available_now`` or
    ``processing_time`` with ``trigger_interval``), ``state_store`` and
    ``arrival`` (the arrival rule its replays follow) mean what they mean for the form's query.
    """

    text: str
    views: tuple[SqlView, ...]
    output_mode: OutputMode = "update"
    trigger: str = "default"
    trigger_interval: str | None = None
    state_store: StateStore = "hdfs"
    changelog_checkpointing: bool = False
    arrival: ArrivalRule = DEFAULT_ARRIVAL

    def __post_init__(self) -> None:
        check_arrival(self.arrival)
        if not isinstance(self.text, str) or not self.text.strip():
            raise ConfigError("sql", self.text, "is empty: write a SELECT over the views")
        object.__setattr__(self, "views", tuple(self.views))
        if not self.views or not all(isinstance(view, SqlView) for view in self.views):
            raise ConfigError("views", self.views, "must be one view or more")
        seen: set[str] = set()
        for view in self.views:
            if view.name.lower() in seen:
                raise ConfigError("view", view.name, "is named twice: each view needs a name of its own")
            seen.add(view.name.lower())
        if all(view.static for view in self.views):
            raise ConfigError("views", ", ".join(view.name for view in self.views), "are all static: a streaming query needs one streamed view")
        if self.output_mode not in OUTPUT_MODES:
            raise ConfigError("output_mode", self.output_mode, f"is not one of {', '.join(OUTPUT_MODES)}")
        if self.trigger not in SQL_TRIGGERS:
            raise ConfigError("trigger", self.trigger, f"is not one of {', '.join(SQL_TRIGGERS)} for a SQL query")
        if (self.trigger == "processing_time") != (self.trigger_interval is not None):
            raise ConfigError("trigger_interval", self.trigger_interval, "is required by the processing_time trigger and by no other")
        if self.state_store not in STATE_STORES:
            raise ConfigError("state_store", self.state_store, f"is not one of {', '.join(STATE_STORES)}")
        if self.trigger == "available_now":
            for view in self.streamed:
                if not view.stream.ends:
                    raise ConfigError("trigger", "available_now", f"cannot run on view {view.name}: its source has no end to reach")

    @property
    def streamed(self) -> tuple[SqlView, ...]:
        return tuple(view for view in self.views if not view.static)

    @property
    def source(self) -> StreamSource:
        """The first streamed view's source: what a run's status and failures are told by."""
        return self.streamed[0].stream

    @property
    def sources(self) -> tuple[StreamSource, ...]:
        """Every source the query streams (a static view is read once, at start)."""
        return tuple(view.stream for view in self.streamed)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(view.name for view in self.views)

    @property
    def resumable(self) -> bool:
        """True when Spark can resume it from its checkpoint: every streamed view's source keeps offsets."""
        return all(view.stream.resumable for view in self.streamed)

    @property
    def aggregation(self) -> str:
        return "sql"

    def with_changes(self, **changes: Any) -> SqlQuery:
        return replace(self, **changes)

    def replayed(self, purpose: str) -> SqlQuery:
        """This query with every streamed view replayed from its start to its end as it is now (a paced feed stepped, a topic read from its
        earliest offsets to where it ends now: :meth:`~streaming.engine.sources.base.Source.replayed`), so that its exact answer and each
        replay read the same rows, and no replay waits on a feed's pace; :class:`ConfigError` naming the source that cannot be ``purpose``.
        Its trigger is the one its arrival rule replays under (:func:`~streaming.engine.arrival.replay_trigger`)."""
        views = tuple(view if view.static else replace(view, source=view.stream.replayed(purpose).bounded_now()) for view in self.views)
        replayed = replace(self, views=views)
        return replace(replayed, trigger=replay_trigger(replayed.ran_arrival()), trigger_interval=None)

    @property
    def fixed(self) -> bool:
        """True when every streamed view reads the same rows whatever arrives meanwhile (files, a topic's fixed range): it follows :attr:`arrival`."""
        return all(view.stream.fixed for view in self.streamed)

    def ran_arrival(self) -> ArrivalRule:
        """The arrival rule a replay of this query follows: its own, unless a streamed view can be replayed only one way (a topic's range: busy)."""
        rules = {view.stream.replay_arrival(self.arrival) for view in self.streamed}
        return self.arrival if rules == {self.arrival} and self.trigger != "available_now" else "busy"

    def stepping(self, staging_name: str) -> SqlQuery:
        """This query as a walkthrough runs it: every streamed view's source stepped (a topic's through a staging topic of its own,
        ``staging_name`` and the view's name), so that step *i* hands over file (or planned batch) *i* of each view."""
        views = tuple(view if view.static else replace(view, source=view.stream.stepping(f"{staging_name}-{view.name.lower()}")) for view in self.views)
        return replace(self, views=views)

    def describe(self) -> dict[str, object]:
        """A flat description for tables and the Queries page, as :func:`~streaming.engine.query.config.describe` gives the form's."""
        source = self.source
        return {
            "source.kind": getattr(source, "kind", type(source).__name__),
            "source.data": source.label,
            "views": ", ".join(f"{view.name} ({'static' if view.static else 'stream'})" for view in self.views),
            "window": "in the SQL",
            "watermark": "in the SQL",
            "output_mode": self.output_mode,
            "trigger": self.trigger if self.trigger_interval is None else f"{self.trigger} {self.trigger_interval}",
            "aggregation": "sql",
            "arrival": self.ran_arrival() if self.fixed else "none (a live stream)",
            "sql": " ".join(self.text.split())[:160],
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly values, as a kept query's ``query.json`` holds them (``kind`` ``sql``): :meth:`from_dict` makes it again."""
        return {
            "kind": "sql", "text": self.text, "views": [view.to_dict() for view in self.views], "output_mode": self.output_mode,
            "trigger": self.trigger, "trigger_interval": self.trigger_interval, "state_store": self.state_store,
            "changelog_checkpointing": self.changelog_checkpointing, "arrival": self.arrival,
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SqlQuery:
        """The query ``values`` describe (as :meth:`to_dict` gives them), validated again; :class:`ConfigError` for a field it does not know."""
        given = {name: value for name, value in values.items() if name != "kind"}
        known = {item.name for item in fields(cls)}
        for name in given:
            if name not in known:
                raise ConfigError(name, given[name], "is not a field of a SQL query")
        views = given.pop("views", None)
        if not isinstance(views, list):
            raise ConfigError("views", views, "must be a list of views")
        return cls(views=tuple(SqlView.from_dict(view) for view in views), **given)

    def check(self, spark: SparkSession) -> PlanFacts:
        """Check the text against the views, and Spark's streaming checks for its output mode, without starting anything
        (:class:`~.checker.SqlChecker`); the analysed plan's facts, or :class:`~.guard.SqlError`."""
        with SqlChecker(spark, self.views) as checker:
            return checker.check(self.text, self.output_mode)

    def _register(self, session: SparkSession, staging: Path, now_ms: int) -> list[tuple[DataFrame, Feeder | None]]:
        """Each view made and registered in ``session``; when one fails, the feeders of those made before it are stopped (a topic's staging
        topic deleted)."""
        made: list[tuple[DataFrame, Feeder | None]] = []
        try:
            for view in self.views:
                frame, feeder = view.frame(session, staging / view.name, now_ms)
                made.append((frame, feeder))
                frame.createOrReplaceTempView(view.name)
        except BaseException:
            for _, feeder in made:
                if feeder is not None:
                    feeder.stop()
            raise
        return made

    def build(self, spark: SparkSession, staging: Path, now_ms: int, *, latency: bool = True) -> tuple[DataFrame, Feeder | None]:
        """The query's streaming DataFrame in a session of its own (:func:`~.views.sql_session`) and the feeder of its streamed views.

        :func:`~streaming.engine.run.query.start_run` hands the views' files over as the arrival rule says (under available-now or the busy
        rule every file of every view first: micro-batch *i* then reads file *i* of each).
        """
        session = sql_session(spark)
        made = self._register(session, staging, now_ms)
        feeders = ViewFeeders([feeder for _, feeder in made if feeder is not None])
        try:
            frame, walked = checked(session, self.text, self.names)
            if not frame.isStreaming:
                raise ConfigError("sql", self.text.strip()[:80], f"reads no streamed view: read one of {', '.join(view.name for view in self.streamed)}")
            _FACTS[frame] = plan_facts(frame, walked)
        except BaseException:
            feeders.stop()
            raise
        return frame, feeders

    def refusal(self, err: BaseException) -> SqlError:
        """Spark's refusal of the started query (an ORDER BY outside complete mode, an aggregation in append mode without a watermark...) or its
        failure, in plain words, at the line and column Spark names when it names one."""
        return analysis_error(err, self.text)

    def spark_settings(self) -> dict[str, str]:
        """The session settings this query starts with (its state store)."""
        return state_store_settings(self.state_store, self.changelog_checkpointing)

    def new_table(self, frame: DataFrame, max_rows: int | None, *, record: bool = False) -> SqlTable:
        """The empty result table of ``frame`` (what :meth:`build` gave): its columns, and its grouping from the analysed plan (read by the
        check :meth:`build` made, not walked again)."""
        facts = _FACTS.get(frame)
        return SqlTable(self.output_mode, frame.schema, plan_facts(frame) if facts is None else facts, max_rows, record=record)


_FACTS: weakref.WeakKeyDictionary[DataFrame, PlanFacts] = weakref.WeakKeyDictionary()
"""The facts of each frame :meth:`SqlQuery.build` made, read from the nodes its check walked: a walk of the analysed plan is hundreds of
py4j round trips, and a start made two."""


class ViewFeeders:
    """The feeders of a query's streamed views as one: started, stopped and stepped together (file *i* of each view at step *i*).

    A :class:`~streaming.engine.sources.base.Stepper` when every feeder is one, so a walkthrough and a replay step a SQL query's views as they
    step the form's source.
    """

    def __init__(self, feeders: list[Feeder]) -> None:
        self.feeders = feeders
        self.done = threading.Event()
        self._stopped = threading.Event()
        self._loss = Loss()
        """The views' quiet pace's (:meth:`start_quiet`): each paced view's own is its feeder's."""
        self._steppers = [feeder for feeder in feeders if isinstance(feeder, Stepper)]
        if self.first_at_start:  # a topic's first step is copied before Spark's first batch: the other views' first file goes with it
            for stepper in self._steppers:
                if not stepper.first_at_start and stepper.staged == 0:
                    stepper.stage_next()
        self._watch()

    @property
    def stepped(self) -> bool:
        return bool(self.feeders) and len(self._steppers) == len(self.feeders) and all(stepper.stepped for stepper in self._steppers)

    @property
    def steps(self) -> int:
        """Steps in all: the longest view's."""
        return max((stepper.steps for stepper in self._steppers), default=0)

    @property
    def staged(self) -> int:
        """Steps handed over so far."""
        return max((stepper.staged for stepper in self._steppers), default=0)

    @property
    def first_at_start(self) -> bool:
        return any(stepper.first_at_start for stepper in self._steppers)

    @property
    def handed_files(self) -> dict[str, int] | None:
        """Files handed over by every view, by folder, when each view replays files; ``None`` when one does not (a topic)."""
        folders: dict[str, int] = {}
        for feeder in self.feeders:
            handed = feeder.handed_files
            if handed is None:
                return None
            folders.update(handed)
        return folders or None

    @property
    def paced(self) -> bool:
        """True when every view is a paced replay of files: :meth:`start_quiet` then paces them together."""
        return bool(self.feeders) and all(isinstance(feeder, FeedReplayer) and feeder.paced for feeder in self.feeders)

    def start_quiet(self, idle: Callable[[], None]) -> None:
        """Hand the views over together under the quiet rule: step *i* of each after the first view's pause and after ``idle()``, by one
        thread (each view's own pace would let one view's file run a batch ahead of the others')."""
        pauses = self.feeders[0].pauses if isinstance(self.feeders[0], FeedReplayer) else []
        threading.Thread(target=pace_or_lose, args=(self, pauses, self._stopped, idle, self._loss), name="view-feeders-quiet", daemon=True).start()
        if not self._watch():
            threading.Thread(target=self._await_all, name="view-feeders", daemon=True).start()

    def stage_next(self) -> bool:
        """Hand over the next step of every view that has one; ``False`` when every view's steps were handed over already.

        A step some views could not hand over (a file that failed to copy: the error reached the caller) is completed first, and that is
        the step: file *i* of each view still goes with the others' file *i*, rather than one behind for the rest of the run. :attr:`staged`
        does not move then, so a caller counting its calls counts that step twice.
        """
        moved = self._stage_up_to(self.staged) or self._stage_up_to(self.staged + 1)
        self._watch()
        return moved

    def _stage_up_to(self, step: int) -> bool:
        """Every view behind ``step`` (and with one more) hands over its next; ``True`` when one did."""
        moved = [stepper.stage_next() for stepper in self._steppers if stepper.staged < step]
        return any(moved)

    def start(self) -> None:
        for feeder in self.feeders:
            feeder.start()
        if not self._watch():  # paced feeders hand their files over on threads of their own: done once they all are
            threading.Thread(target=self._await_all, name="view-feeders", daemon=True).start()

    def _await_all(self) -> None:
        while not self._stopped.wait(0.2):
            if self._watch():
                return

    def stop(self) -> None:
        self._stopped.set()
        for feeder in self.feeders:
            feeder.stop()

    def on_lost(self, tell: Callable[[str], None]) -> None:
        self._loss.on_lost(tell)
        for feeder in self.feeders:
            feeder.on_lost(tell)

    def stage_all(self, upto: int | None = None) -> None:
        for stepper in self._steppers:
            stepper.stage_all(upto)
        self._watch()

    def _watch(self) -> bool:
        if all(feeder.done.is_set() for feeder in self.feeders):
            self.done.set()
        return self.done.is_set()
