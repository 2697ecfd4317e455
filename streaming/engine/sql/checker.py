"""Checking a user's SQL as it is typed: the views made once in a session of their own, then each text parsed, checked and analysed there.

Making the views reads the data's schema (a dataset's files are read once,
a topic's sample was read before); a check after that is Spark's parser and
analyser only, with nothing read: ``make bench`` measures it against the
300 ms a page may take between the last keystroke and the verdict.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from .guard import checked, streaming_checks
from .plan import PlanFacts, plan_facts, state_facts
from .views import SqlView, sql_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SqlChecker"]


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
        """The facts of ``text``'s analysed plan once every check passed (:func:`~.guard.checked`) and, with ``output_mode``, Spark's own
        streaming checks for that mode (:func:`~.guard.streaming_checks`); :class:`~.guard.SqlError` otherwise."""
        frame, walked = checked(self.session, text, self.names)
        if output_mode is not None:
            streaming_checks(frame, output_mode, text)
        return plan_facts(frame, walked)

    def check_with_state(self, text: str, output_mode: str) -> tuple[PlanFacts, tuple[str, ...]]:
        """:meth:`check`, and the types ``text``'s aggregation keeps in state per group (:func:`~.plan.state_value_types`), from the one
        analysis: what a change to a kept query is judged by."""
        frame, walked = checked(self.session, text, self.names)
        streaming_checks(frame, output_mode, text)
        return state_facts(frame, walked)

    def close(self) -> None:
        shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self) -> SqlChecker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
