"""The queries running on the shared session, by name.

One :class:`QueryRegistry` per SparkSession: the app keeps it in
``st.cache_resource``, and each browser session reads it through
:meth:`QueryRegistry.for_owner`, which sees only the runs and kept queries of
that session's owner and the server's own (:mod:`streaming.engine.owners`).
Starting a name that is already active is refused, so a rerun never starts a
duplicate. All methods are thread-safe.
"""

from __future__ import annotations

import copy
import itertools
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ..checks import count_setting
from ..errors import ConfigError
from ..output.progress import ProgressListener
from ..output.sinks import DEFAULT_MAX_SINK_ROWS
from ..owners import check_owner, visible
from ..runtime.session import is_connect
from .budgets import Budgets
from .checkpoints import KeptQuery, kept_queries, stray_folders
from .failure import last_noted, note
from .query import Run, start_run

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from .query import RunConfig

__all__ = ["DEFAULT_MAX_QUERIES", "DEFAULT_MAX_ROWS", "MAX_QUERIES_VARIABLE", "DuplicateQueryError", "LostRun", "QueryRegistry", "check_query_name", "max_queries"]

DEFAULT_MAX_ROWS = 20_000
MAX_QUERIES_VARIABLE = "STREAMING_LAB_MAX_QUERIES"
DEFAULT_MAX_QUERIES = 8


def check_query_name(name: str) -> str:
    """``name`` when Spark takes it as a query's name (and the lab as a folder's): letters, digits and underscores, not starting with a digit."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError("name", name, "must be letters, digits and underscores, not starting with a digit")
    return name


def max_queries(environ: Mapping[str, str]) -> int:
    """The limit of queries running at once on the server: :data:`MAX_QUERIES_VARIABLE`, default :data:`DEFAULT_MAX_QUERIES`."""
    return count_setting(environ, MAX_QUERIES_VARIABLE, DEFAULT_MAX_QUERIES)


class DuplicateQueryError(ConfigError):
    """A query of that name is already active: the ``name`` a user gave is refused."""


@dataclass(frozen=True)
class LostRun:
    """What a run had reached when its session died: batches, the last watermark, result rows, and whether it was stopped already."""

    name: str
    batches: int
    watermark: str | None
    result_rows: int
    stopped: bool
    kept: bool = False
    """Its checkpoint and result are kept on disk: it can be resumed on a new session."""
    source_kind: str = ""
    """Its source's ``kind`` (``live_join`` for the two sides of a live join): where a page starts it again."""
    owner: str | None = None
    """Whose it was (:mod:`streaming.engine.owners`): only its owner's banner names it."""

    def __str__(self) -> str:
        state = "stopped" if self.stopped else "running"
        watermark = f", watermark {self.watermark}" if self.watermark else ""
        return f"{self.name} ({state}, {self.batches} batches{watermark}, {self.result_rows} result rows)"


class QueryRegistry:
    """Starts, lists and stops the runs on ``spark``; registers one progress listener on it."""

    def __init__(
        self, spark: SparkSession, *, root: Path | None = None, max_active: int | None = None, kept_root: Path | None = None,
        max_sink_rows: int = DEFAULT_MAX_SINK_ROWS, budgets: Budgets | None = None,
    ) -> None:
        if max_active is not None and (isinstance(max_active, bool) or not isinstance(max_active, int) or max_active < 1):
            raise ConfigError("max_active", max_active, "must be a whole number of at least 1, or None for no limit")
        self.spark = spark
        self.root = root
        self.max_active = max_active
        """At most this many runs active (or starting) at once; ``None``: no limit."""
        self.max_sink_rows = max_sink_rows
        self.budgets = budgets or Budgets()
        """What one run may take while it runs (:class:`~streaming.engine.run.budgets.Budgets`)."""
        """On Spark Connect, the rows a run's memory sink may hold before the run is stopped (:mod:`streaming.engine.output.sinks`)."""
        self.kept_root = kept_root
        """Where runs started with ``keep`` keep their folders (:class:`~streaming.engine.run.checkpoints.KeptQuery`), one per name; ``None``: nowhere."""
        self.listener = ProgressListener()
        spark.streams.addListener(self.listener)
        self._runs: dict[str, Run] = {}
        self._starting: set[str] = set()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self.owner: str | None = None
        """Whose runs this registry starts and shows (:meth:`for_owner`); ``None``: the server's, which sees every run."""
        self.sees_all = False
        """Whether it shows every owner's runs (the server's own view, and an operator's)."""

    def for_owner(self, owner: str | None, *, sees_all: bool = False) -> QueryRegistry:
        """This registry as ``owner`` sees it: the same runs, slots, lock and listener (a shallow copy shares them), but it starts
        runs as ``owner``'s and lists, stops, resumes and deletes only ``owner``'s and the server's own; another owner's run is
        as if it did not exist, apart from its name, which two runs cannot share. With ``sees_all`` (an operator) it starts runs
        as ``owner``'s and sees every one."""
        view = copy.copy(self)
        view.owner, view.sees_all = check_owner(owner), bool(sees_all)
        return view

    def shares(self, other: QueryRegistry) -> bool:
        """Whether ``other`` is this registry or a view of it (:meth:`for_owner`)."""
        return self._runs is other._runs

    @property
    def sees_everyone(self) -> bool:
        """Whether it shows every owner's runs and the session's other queries: the server's own view, and an operator's."""
        return self.sees_all or self.owner is None

    def _sees(self, owner: str | None) -> bool:
        return self.sees_all or visible(owner, self.owner)

    def _taken(self, name: str) -> ConfigError:
        return DuplicateQueryError("name", name, "is taken by another user's query: choose another name")

    @property
    def can_keep(self) -> bool:
        """Whether runs can be kept and resumed here: not on Spark Connect, where the app reads the memory sink (:mod:`streaming.engine.output.sinks`)."""
        return not is_connect(self.spark)

    def close(self) -> None:
        """Stop every run and remove the progress listener: on Spark Connect a client with a listener left does not exit."""
        try:
            self.stop_all()
        finally:
            self.spark.streams.removeListener(self.listener)

    def _free_name(self) -> str:
        while True:
            name = f"query_{next(self._numbers)}"
            if name not in self._runs and name not in self._starting and not self._kept_folder(name).exists():
                return name

    def _kept_folder(self, name: str) -> KeptQuery:
        if self.kept_root is None:
            raise ConfigError("keep", name, "needs a folder to keep queries in: this registry has no kept_root")
        return KeptQuery(self.kept_root / name)

    def kept_folder(self, name: str) -> KeptQuery:
        """The kept folder of ``name``, this registry's owner's (or the server's); :class:`ConfigError` for another owner's or none."""
        folder = self._kept_folder(name)
        if not folder.exists() or not self._sees(folder.owner):
            raise ConfigError("name", name, "is not a kept query of yours")
        return folder

    def kept(self) -> list[KeptQuery]:
        """The kept queries on disk, oldest first: those of earlier server runs as well as this one's."""
        return [] if self.kept_root is None else [query for query in kept_queries(self.kept_root) if self._sees(query.owner)]

    def strays(self) -> list[str]:
        """Names blocked by a folder under ``kept_root`` with files but no ``query.json`` (:meth:`delete` frees them)."""
        return [] if self.kept_root is None else stray_folders(self.kept_root)

    def start(
        self, config: RunConfig, name: str | None = None, *, max_rows: int | None = DEFAULT_MAX_ROWS, keep: bool | Path = False,
        resume: bool = False, latency: bool = True, record_outputs: bool = False, hand_over: int | None = None,
    ) -> Run:
        """Start ``config`` as ``name`` (``query_N`` when ``None``). Raises :class:`DuplicateQueryError` if it is active.

        With ``keep=True`` the run keeps its checkpoint, result table and progress
        under ``kept_root`` (a name already kept there is refused unless
        ``resume``: then the run goes on from it); with a folder as ``keep``, in
        that folder, going on from what it holds. The name is reserved under
        the lock; Spark starts the query outside it, so listing and reading
        runs never waits on a start. ``latency=False`` does not measure each record's latency, ``record_outputs`` keeps
        every batch's output rows (:func:`~streaming.engine.run.query.start_run`).
        """
        self._make_room()
        with self._lock:
            if name is None:
                name = self._free_name()
            check_query_name(name)
            previous = self._runs.get(name)
            if previous is not None and not self._sees(previous.owner):
                raise self._taken(name)
            if name in self._starting or (previous is not None and previous.status == "active"):
                raise DuplicateQueryError("name", name, "is already running; stop it first or choose another name")
            if isinstance(keep, Path):
                folder: KeptQuery | None = KeptQuery(keep)
                resume = True
            else:
                folder = self._kept_folder(name) if keep or resume else None
            if folder is not None and folder.exists() and not self._sees(folder.owner):
                raise self._taken(name)
            if folder is not None and folder.exists() and not resume:
                raise DuplicateQueryError("name", name, "is a stopped query kept on disk: resume or delete it on the Queries page, or choose another name")
            if folder is not None and not isinstance(keep, Path) and not folder.exists() and folder.folder.is_dir() and any(folder.folder.iterdir()):
                raise DuplicateQueryError("name", name, "is taken by a kept query's folder that lost its query.json: delete it on the Queries page, or choose another name")
            if self.max_active is not None:
                active = [run for run in self._runs.values() if run.status == "active"]
                busy = len(self._starting) + len(active)
                if busy >= self.max_active:
                    mine = any(self._sees(run.owner) for run in active)
                    raise ConfigError(
                        "queries", busy,
                        f"are running on this server, its limit ({MAX_QUERIES_VARIABLE}={self.max_active}): "
                        + ("stop one of yours on the Queries page first" if mine else "none is yours: try again when another user's query or replay ends"),
                    )
            self._starting.add(name)
        try:
            if previous is not None:
                self._forget(name, previous)
            run = start_run(
                self.spark, config, name, self.listener, root=self.root, max_rows=max_rows, keep=None if folder is None else folder.folder,
                max_sink_rows=self.max_sink_rows, latency=latency, record_outputs=record_outputs, budgets=self.budgets, hand_over=hand_over,
                owner=self.owner,
            )
            with self._lock:
                self._runs[name] = run
            return run
        finally:
            with self._lock:
                self._starting.discard(name)

    def _make_room(self) -> None:
        """At the limit of active runs, finish the replays that have read all their data, oldest first, until one slot is free
        (:meth:`~streaming.engine.run.query.Run.finish`): a replay idle at its end holds no slot another user could take."""
        if self.max_active is None:
            return
        with self._lock:
            runs = sorted(self._runs.values(), key=lambda run: run.started_at)
            busy = len(self._starting) + sum(run.status == "active" for run in runs)
            done = [run for run in runs if run.status == "active" and run.drained]
        for run in done[: max(0, busy - self.max_active + 1)]:
            run.finish()

    def resume(self, name: str, *, max_rows: int | None = DEFAULT_MAX_ROWS) -> Run:
        """Start the kept query ``name`` again with its stored configuration, from where it stopped; a failed run's failure is noted
        first (:mod:`.failure`). :class:`ConfigError` when :meth:`resume_problem` names a reason not to."""
        folder = self._kept_folder(name)
        if not folder.exists() or not self._sees(folder.owner):
            raise ConfigError("name", name, "is not a kept query: nothing to resume")
        problem = self.resume_problem(name)
        if problem is not None:
            raise ConfigError("name", name, f"is not resumed: {problem}")
        run = self.get(name)
        failure = None if run is None else run.failure
        resumed = self.start(folder.config(), name, max_rows=max_rows, resume=True)
        if failure is not None and failure.repeatable:  # once it has started: a resume refused before it ran proves nothing
            note(folder.failures_file, failure)
        return resumed

    def resume_problem(self, name: str) -> str | None:
        """Why the kept query ``name`` cannot be resumed (:attr:`~.checkpoints.KeptQuery.problem`), or would only fail again: its run failed
        the way it had failed when it was resumed, at the same batch (:mod:`.failure`). ``None`` when it can be resumed."""
        folder = self._kept_folder(name)
        if not folder.exists() or not self._sees(folder.owner):
            return "its folder is gone"
        if folder.problem is not None:
            return folder.problem
        run = self.get(name)
        failure = None if run is None else run.failure
        if failure is not None and failure.repeatable and last_noted(folder.failures_file) == failure:
            return (
                f"resumed, it failed again with {failure.words()}. A resume runs that batch again with the same data and query, so it would "
                "fail the same way: change the query first (a SQL query's Change and resume)"
            )
        return None

    def delete(self, name: str) -> int:
        """Stop ``name`` and delete everything it keeps (checkpoint, result, progress, or a stray folder of that name); forget it. The bytes freed on disk."""
        kept = None if self.kept_root is None else self._kept_folder(name)
        with self._lock:
            if name in self._starting:
                raise DuplicateQueryError("name", name, "is starting: delete it once it runs")
            run = self._runs.get(name)
            if (run is not None and not self._sees(run.owner)) or (kept is not None and kept.exists() and not self._sees(kept.owner)):
                raise ConfigError("name", name, "is not a query of yours: nothing deleted")
            self._runs.pop(name, None)
        freed = 0 if kept is None else kept.size()
        if run is not None:
            run.delete()
            self.listener.unregister(name, run.log)
        if kept is not None:
            kept.delete()
        return freed

    def get(self, name: str) -> Run | None:
        with self._lock:
            run = self._runs.get(name)
        return run if run is not None and self._sees(run.owner) else None

    def holds(self, run: Run) -> bool:
        """Whether ``run`` is still this registry's (anyone's): not forgotten, not replaced by a run of its name, not lost with a session."""
        with self._lock:
            return self._runs.get(run.name) is run

    def shared_run(self, token: str) -> Run | None:
        """The run whose read-only link (:attr:`~streaming.engine.run.query.Run.share`) carries ``token``, whoever owns it, to be watched
        read-only: a kept query's latest run, as its runs share one link; ``None`` for any other text, a revoked link's among them
        (compared in constant time)."""
        with self._lock:
            runs = list(self._runs.values())
        return next((run for run in runs if run.share.names(token)), None)

    def runs(self) -> list[Run]:
        """Every run started here that this registry sees, oldest first, including stopped and failed ones."""
        with self._lock:
            return sorted((run for run in self._runs.values() if self._sees(run.owner)), key=lambda run: run.started_at)

    def others(self) -> list[StreamingQuery]:
        """Active queries on the session that were not started through this registry (a notebook's): none for a user's view, as they are
        nobody's to stop but the server's and its operator's."""
        if not self.sees_everyone:
            return []
        with self._lock:
            own = {run.query.id for run in self._runs.values()}
        return [query for query in self.spark.streams.active if query.id not in own]

    def stop(self, name: str) -> None:
        run = self.get(name)
        if run is not None:
            run.stop()

    def _forget(self, name: str, run: Run) -> None:
        run.close()
        self.listener.unregister(name, run.log)

    def remove(self, name: str) -> None:
        """Stop ``name``, delete its working folder unless it is kept, and forget it."""
        with self._lock:
            run = self._runs.get(name)
            if run is None or not self._sees(run.owner):
                return
            del self._runs[name]
        if run is not None:
            self._forget(name, run)

    def abandon(self) -> list[LostRun]:
        """Forget every run of a session whose JVM is gone, without a call into it; what each had reached, oldest first.

        The feeders (threads of this process) stop and the working folders are
        deleted, except kept ones, which can be resumed on a new session; the queries died with the JVM.
        """
        with self._lock:
            runs = sorted(self._runs.values(), key=lambda run: run.started_at)
            self._runs.clear()
        lost = []
        for run in runs:
            summaries = run.log.summaries()
            watermark = next((str(pd.Timestamp(summary["watermark"])) for summary in reversed(summaries) if pd.notna(summary.get("watermark"))), None)
            lost.append(LostRun(
                run.name, len(summaries), watermark, len(run.table), run.stopped_by_user, run.kept, str(getattr(run.config.source, "kind", "")), run.owner,
            ))
            run.sink.close(read=False)
            if run.feeder is not None:
                run.feeder.stop()
            if not run.kept:
                shutil.rmtree(run.workdir, ignore_errors=True)
        return lost

    def stop_all(self) -> None:
        """Stop every run and delete their working folders (at exit); the runs stay listed."""
        for run in self.runs():
            run.close()
