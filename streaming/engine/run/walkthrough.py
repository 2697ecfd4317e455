"""A replay held still between micro-batches, for stepping through a stream one batch at a time.

A :class:`Walkthrough` starts a stepped replay -- of a feed or dataset, one
file per micro-batch (:class:`~streaming.engine.sources.replayer.FeedReplayer`),
or of a topic's offset range, one planned micro-batch of records per step
(:class:`~streaming.engine.sources.stepped_topic.SteppedTopic`) -- and hands
Spark nothing until asked: :meth:`Walkthrough.advance` hands over the next
step and waits until Spark has run every batch it brings, the no-data batch
that follows a watermark move included. The query stays active in between,
its state in its checkpoint, so a presenter can stop at any batch for as long
as they like -- up to an idle limit, after which it closes itself (a tab
closed on a walkthrough leaves no query behind). Every batch's progress and
output rows are kept (what :func:`~streaming.analysis.explain.explain` tells),
so going back costs nothing.

Not thread-safe: one caller (a page's session) drives a walkthrough.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pandas as pd

from ..errors import ConfigError
from ..kafka.topics import staging_name
from ..sources import Stepper, TopicStepper

if TYPE_CHECKING:
    from ..query.config import QueryConfig
    from ..sql.query import SqlQuery
    from .query import Run
    from .registry import QueryRegistry

__all__ = ["IDLE_LIMIT_SECONDS", "MAX_QUERIES", "PREFIX", "Walkthrough", "make_room"]

PREFIX = "walkthrough_"
MAX_QUERIES = 4
"""Walkthrough queries a server runs at once; :func:`make_room` closes the least recently stepped beyond it."""

IDLE_LIMIT_SECONDS = 900.0
"""A walkthrough not advanced for this long closes itself."""


C = TypeVar("C", "QueryConfig", "SqlQuery")


class Walkthrough(Generic[C]):
    """A stepped replay of ``config`` under ``registry``, started with nothing handed over (a topic: its first step); :meth:`close` stops and removes it.

    ``config`` (the form's query, or a SQL query whose streamed views are
    stepped together: file *i* of each at step *i*) reads files replayed one micro-batch at a time (seconds per
    file 0) or one topic (from its earliest offsets or a time, to its end
    offsets or those latest now, at most ``max_offsets_per_trigger`` records
    a batch), under the default trigger. :attr:`config` is the query as
    given; :attr:`run`'s is the one Spark runs (a topic's read through a
    staging topic of its own, its first step handed over and run at start:
    Spark runs a first batch on a topic as soon as the query starts).
    """

    def __init__(self, registry: QueryRegistry, config: C, *, idle_limit: float | None = IDLE_LIMIT_SECONDS) -> None:
        source = config.source
        if config.trigger != "default":
            raise ConfigError("trigger", config.trigger, "must be the default trigger to be stepped through: each step runs the batches it brings")
        if config.arrival != "quiet":
            raise ConfigError(
                "arrival", config.arrival,
                "cannot be stepped through: a press hands one batch over and Spark runs what it brings, the no-data batch included (the quiet rule)",
            )
        self.registry = registry
        self.config: C = config
        self.name = f"{PREFIX}{uuid.uuid4().hex[:12]}"
        stepped = config.stepping(staging_name(int(time.time()), self.name))
        self.run: Run = registry.start(stepped, self.name, max_rows=None, latency=False, record_outputs=True)
        feeder = self.run.feeder
        try:
            if not isinstance(feeder, Stepper) or not feeder.stepped:
                raise ConfigError("source", source.label, "is not replayed one micro-batch at a time")
            if feeder.first_at_start:
                self.run.await_idle(stop_after=feeder.staged)  # its first step, copied before Spark's first batch: run before the first press shows it
        except BaseException:
            registry.remove(self.name)
            raise
        self._feeder = feeder
        self.idle_limit = idle_limit
        self._timer: threading.Timer | None = None
        self._touch()

    def _touch(self) -> None:
        """Start the idle limit again."""
        if self._timer is not None:
            self._timer.cancel()
        if self.idle_limit is not None:
            self._timer = threading.Timer(self.idle_limit, self.close)
            self._timer.daemon = True
            self._timer.start()

    @property
    def steps(self) -> int:
        """Steps in the replay: the feed's files, or the micro-batches of the topic's range."""
        return self._feeder.steps

    @property
    def unit(self) -> str:
        """What one step hands over, in words: ``files`` or ``batches of records``."""
        return self.config.source.step_unit or "steps"

    @property
    def handed(self) -> int:
        """Steps handed to Spark so far."""
        return self._feeder.staged

    @property
    def finished(self) -> bool:
        return self.handed >= self.steps

    def advance(self, steps: int = 1) -> int:
        """Hand over the next ``steps`` steps (fewer at the end) and wait for every batch Spark runs on them; the number handed.

        Raises the query's exception when it failed.
        """
        self._touch()
        before = self.handed
        self.run.await_idle(stop_after=min(self.steps, before + steps))
        return self.handed - before

    def to_end(self) -> int:
        """Hand over every step left, waiting for Spark after each; the number handed."""
        return self.advance(self.steps - self.handed)

    def summaries(self) -> list[dict[str, Any]]:
        """Every batch's progress summary so far, in batch order."""
        return self.run.log.summaries()

    def outputs(self) -> dict[int, list[tuple]]:
        """Every batch's output rows so far, by batch id."""
        return dict(self.run.table.outputs or {})

    @property
    def plan(self) -> list[tuple[dict[int, int], dict[int, int]]] | None:
        """For a topic: the ``(from, to)`` offsets of the topic each step copies, in order; ``None`` for files."""
        return self._feeder.batches if isinstance(self._feeder, TopicStepper) else None

    @property
    def active(self) -> bool:
        """Whether its query still runs (not closed, failed, or gone with its session)."""
        try:
            return self.run.status == "active"
        except Exception:  # noqa: BLE001 - a session that died answers with an error: the walkthrough is over
            return False

    def close(self) -> None:
        """Stop the query and forget it; its working folder goes with it."""
        if self._timer is not None:
            self._timer.cancel()
        self.registry.remove(self.name)


def make_room(registry: QueryRegistry, wanted: int, limit: int = MAX_QUERIES) -> list[str]:
    """Stop the walkthrough queries of ``registry`` stepped least recently, so that ``wanted`` more fit under ``limit``; the names stopped.

    A walkthrough waits, active, between presses: one left by a reloaded or
    closed tab holds its queries until its idle limit. Starting another
    walkthrough when ``limit`` are running lets the oldest go first; its page,
    if still open, starts it again on the next press.
    """
    def last_step(run: Run) -> pd.Timestamp:
        summaries = run.log.summaries()
        return pd.Timestamp(summaries[-1]["timestamp"]) if summaries else pd.Timestamp(run.started_at)

    running = [run for run in registry.runs() if run.name.startswith(PREFIX) and run.status == "active"]
    surplus = sorted(running, key=last_step)[: max(0, len(running) + wanted - limit)]
    for run in surplus:
        registry.remove(run.name)
    return [run.name for run in surplus]
