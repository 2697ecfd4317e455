"""Checking a user's SQL as it is typed: the views made once in a session of their own, then each text parsed, checked and analysed there.

Making the views reads the data's schema (a dataset's files are read once,
a topic's sample was read before); a check after that is Spark's parser and
analyser only, with nothing read: ``make bench`` measures it against the
300 ms a page may take between the last keystroke and the verdict.
"""

from __future__ import annotations

import hashlib
import queue
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as CheckTimeout
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..bounds import CHECK_SECONDS_VARIABLE, max_check_seconds
from ..runtime.session import session_alive
from .guard import SqlError, checked, streaming_checks
from .plan import PlanFacts, plan_facts, state_facts
from .views import SqlView, sql_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SqlChecker", "within_check_limit"]

T = TypeVar("T")
CHECK_THREADS = 2
"""Threads checks run on, so a page waits for one no longer than :func:`~streaming.engine.bounds.max_check_seconds`: a check abandoned
still runs in Spark's JVM until its analysis ends, and at most this many such checks run at once however many pages type."""


class _CheckThreads:
    """:data:`CHECK_THREADS` daemon threads taking checks in turn. Not a ``ThreadPoolExecutor``: the interpreter joins its threads at
    exit, and one held by an abandoned check would hold the server's exit until Spark's analysis ended."""

    def __init__(self, count: int) -> None:
        self._waiting: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        for index in range(count):
            threading.Thread(target=self._take, name=f"sql-check-{index}", daemon=True).start()

    def submit(self, check: Callable[[], T]) -> Future[T]:
        done: Future[T] = Future()
        self._waiting.put((check, done))
        return done

    def _take(self) -> None:
        while True:
            check, done = self._waiting.get()
            if not done.set_running_or_notify_cancel():
                continue  # abandoned before it started
            try:
                done.set_result(check())
            except BaseException as err:  # noqa: BLE001 - handed to the page that waits for it
                done.set_exception(err)


CHECKS = _CheckThreads(CHECK_THREADS)


class _Abandoned:
    """The texts whose check was abandoned (past the time limit) or under way when Spark's JVM was lost, by digest; thread-safe, the
    latest :data:`KEPT` only. A page checks its text again on every new session (its checker is made again), so a text that filled the
    driver's heap would fill each new one in turn: such a text is refused without a check until it is changed."""

    KEPT = 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._digests: dict[str, None] = {}

    @staticmethod
    def _digest(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def add(self, text: str) -> None:
        with self._lock:
            self._digests[self._digest(text)] = None
            while len(self._digests) > self.KEPT:
                del self._digests[next(iter(self._digests))]

    def __contains__(self, text: object) -> bool:
        with self._lock:
            return isinstance(text, str) and self._digest(text) in self._digests


ABANDONED = _Abandoned()


def within_check_limit(check: Callable[[], T], text: str | None = None) -> T:
    """What ``check`` (of ``text``) returns, or :class:`~.guard.SqlError` once it has run longer than the server's limit: Spark's analysis
    cannot be interrupted, so the check is abandoned (it ends in a thread of its own), ``text`` is not checked again (:data:`ABANDONED`),
    and the page says why instead of waiting on it."""
    seconds = max_check_seconds()
    running = CHECKS.submit(check)
    try:
        return running.result(timeout=seconds)
    except CheckTimeout:
        running.cancel()  # a check still waiting for a thread never starts
        if text is not None:
            ABANDONED.add(text)
        raise SqlError(
            f"checking this query took longer than {seconds:,} s, this server's limit ({CHECK_SECONDS_VARIABLE}), so it was abandoned: "
            "something in it grows the plan without bound (a long list, a deep nesting, many windows): write it smaller"
        ) from None


class SqlChecker:
    """``views`` made over nothing read yet (a stream's staging folder stays empty, no feeder starts), in a session of their own."""

    def __init__(self, spark: SparkSession, views: tuple[SqlView, ...]) -> None:
        self.views = tuple(views)
        self.names = tuple(view.name for view in self.views)
        self.spark = spark
        """The session the checker's own was made from: a checker outlives neither it nor its JVM."""
        self.session = sql_session(spark)
        self._scratch = Path(tempfile.mkdtemp(prefix="streaming-lab-sql-check-"))
        self.columns: dict[str, list[tuple[str, str]]] = {}
        """Each view's columns as the query sees them: ``(name, Spark type)`` in order."""
        try:
            for view in self.views:
                frame, feeder = view.frame(self.session, self._scratch / view.name, 0)
                if feeder is not None:
                    feeder.stop()
                frame.createOrReplaceTempView(view.name)
                self.columns[view.name] = [(item.name, item.dataType.simpleString()) for item in frame.schema.fields]
        except BaseException:
            self.close()
            raise

    def check(self, text: str, output_mode: str | None = None) -> PlanFacts:
        """The facts of ``text``'s analysed plan once every check passed (:func:`~.guard.checked`, within :func:`within_check_limit`) and, with ``output_mode``, Spark's own
        streaming checks for that mode (:func:`~.guard.streaming_checks`); :class:`~.guard.SqlError` otherwise."""
        def check() -> PlanFacts:
            frame, walked = checked(self.session, text, self.names)
            if output_mode is not None:
                streaming_checks(frame, output_mode, text)
            return plan_facts(frame, walked)

        return self._bounded(check, text)

    def check_with_state(self, text: str, output_mode: str) -> tuple[PlanFacts, tuple[str, ...]]:
        """:meth:`check`, and the types ``text``'s aggregation keeps in state per group (:func:`~.plan.state_value_types`), from the one
        analysis: what a change to a kept query is judged by."""
        def check() -> tuple[PlanFacts, tuple[str, ...]]:
            frame, walked = checked(self.session, text, self.names)
            streaming_checks(frame, output_mode, text)
            return state_facts(frame, walked)

        return self._bounded(check, text)

    def _bounded(self, check: Callable[[], T], text: str) -> T:
        """``check`` of ``text`` within the server's limit (:func:`within_check_limit`); refused at once when ``text`` was abandoned
        before, and kept from being checked again when Spark's JVM was lost while it was checked."""
        if text in ABANDONED:
            raise SqlError(
                "this text's check was abandoned before (it ran past the server's limit, or Spark's JVM was lost while it was checked), so it "
                "is not checked again: change it, smaller"
            )
        try:
            return within_check_limit(check, text)
        except Exception:
            if session_alive(self.spark):
                raise
            ABANDONED.add(text)
            raise SqlError("Spark's JVM was lost while this text was checked, so it is not checked again: change it, smaller") from None

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> SqlChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
