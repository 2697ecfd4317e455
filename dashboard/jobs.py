"""Background jobs of the experiment pages (Watermark tuner, Compare): start, watch, and take turns.

An experiment replays a whole feed several times (:func:`streaming.analysis.tune.tune`,
:func:`streaming.analysis.compare.compare`) and takes minutes, so it never runs in the
script thread:

- **Start.** A page's button calls :func:`start_job` with inputs already
  validated (each page's ``*_inputs`` raises :class:`~dashboard.shared.InputErrors`
  naming field and value before anything touches Spark) and work that closes
  over the shared registry, fetched in the script thread. It creates a
  :class:`Job` (one daemon thread running the work), keeps it in
  ``st.session_state`` under the page's key (each browser session has its own
  job; a rerun, a page switch or a widget change never loses it) and reruns the
  page, which then draws its button disabled until the job is done.
- **Watch.** :func:`job_view` draws the job: while it runs, the fragment
  :func:`job_progress` ticks every ``REFRESH_SECONDS`` showing the elapsed
  seconds (the rest of the page stays responsive) and, once the job is done,
  asks for one full rerun; that run draws the result (or the error) outside
  the fragment, so a finished job stops ticking.
- **Share.** Experiments of all sessions take turns: a job waits for the one
  server-wide gate (``st.cache_resource``) before it starts its queries, and
  says so meanwhile, so two sweeps never compete for the shared session's
  cores (which would skew the batch durations they measure).

The thread touches no Streamlit API; it only calls the engine. The engine's
functions stop and remove their own queries, whether they succeed or fail.
- **Recall.** The server also keeps its latest jobs by page and inputs
  (:class:`RecentJobs`): a reloaded page, or another tab, with the same inputs
  shows the running job or its result instead of an empty page.
- **Cancel.** While it runs a job shows what it does now (the work's
  ``report``) and a Cancel button; the work stops its queries within a
  micro-batch and ends with :class:`~streaming.engine.errors.Cancelled`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from streaming.engine.errors import Cancelled, ConfigError, failure_words

from .shared import REFRESH_SECONDS

__all__ = ["Job", "RecentJobs", "current_job", "job_controls", "job_progress", "job_view", "recent_jobs", "start_job"]

LOG = logging.getLogger(__name__)


@dataclass(eq=False)
class Job:
    """One experiment running in a background thread; read by the script thread, written by the worker.

    ``result`` or ``error`` is set before ``done`` turns true, and neither
    changes afterwards.
    """

    what: str
    inputs: Any
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    waiting: bool = True
    result: Any = None
    error: BaseException | None = None
    status: str = ""
    """What the work says it is doing now (``report``), shown while it runs."""
    partial: Any = None
    """A first answer the work has given before its end (``preview``), shown while it runs."""
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set by Cancel: the work stops its queries within a micro-batch and raises :class:`~streaming.engine.errors.Cancelled`."""
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @classmethod
    def start(cls, what: str, inputs: Any, work: Callable[[Job], Any], gate: threading.Lock | None = None) -> Job:
        """A job running ``work(job)`` in a new daemon thread, after acquiring ``gate`` when given.

        ``work`` reads :attr:`cancel` and calls :meth:`report`; a job cancelled
        while it waits for the gate never starts its work.
        """
        job = cls(what, inputs)
        job._thread = threading.Thread(target=job._run, args=(work, gate), name=f"experiment-{what}", daemon=True)
        job._thread.start()
        return job

    def _run(self, work: Callable[[Job], Any], gate: threading.Lock | None) -> None:
        try:
            with gate if gate is not None else contextlib.nullcontext():
                self.waiting = False
                if self.cancel.is_set():
                    raise Cancelled(f"{self.what}: cancelled before it started")
                self.result = work(self)
        except BaseException as err:
            self.error = err
            if not isinstance(err, (Cancelled, ConfigError)):
                LOG.error("%s failed", self.what, exc_info=err)  # the page shows a brief reason; the log keeps the whole of it
        finally:
            self.finished = time.monotonic()
            self._done.set()

    def report(self, status: str) -> None:
        self.status = status

    def preview(self, partial: Any) -> None:
        self.partial = partial

    @property
    def cancelled(self) -> bool:
        return isinstance(self.error, Cancelled)

    @property
    def done(self) -> bool:
        return self._done.is_set()

    @property
    def elapsed(self) -> float:
        """Seconds since the job started, until it finished."""
        return (self.finished if self.finished is not None else time.monotonic()) - self.started

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the job; ``True`` when it is done."""
        return self._done.wait(timeout)


@st.cache_resource(show_spinner=False)
def _experiment_gate() -> threading.Lock:
    """The server-wide turn of experiments: one sweep or comparison at a time on the shared session."""
    return threading.Lock()


RECENT_JOBS = 20
"""How many jobs the server keeps for reloaded pages (the oldest is forgotten first)."""


class RecentJobs:
    """The latest jobs of the server by what they ran (page and inputs), running or succeeded: a reload finds them again. Thread-safe."""

    def __init__(self, size: int = RECENT_JOBS) -> None:
        self.size = size
        self._jobs: OrderedDict[Hashable, Job] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, recall: Hashable, job: Job) -> None:
        with self._lock:
            self._jobs[recall] = job
            self._jobs.move_to_end(recall)
            while len(self._jobs) > self.size:
                self._jobs.popitem(last=False)

    def get(self, recall: Hashable) -> Job | None:
        """The job run for ``recall``, unless it failed or was cancelled (those are shown only to who ran them)."""
        with self._lock:
            job = self._jobs.get(recall)
        return None if job is None or (job.done and job.error is not None) else job


@st.cache_resource(show_spinner=False)
def recent_jobs() -> RecentJobs:
    """The one record of recent jobs of this server process."""
    return RecentJobs()


def current_job(key: str, recall: Hashable | None = None) -> Job | None:
    """The job this browser session keeps under ``key``; else the server's running or finished job for ``recall`` (the same page and inputs)."""
    job = st.session_state.get(key)
    if isinstance(job, Job):
        return job
    return None if recall is None else recent_jobs().get(recall)


def start_job(key: str, what: str, inputs: Any, work: Callable[[Job], Any], recall: Hashable | None = None) -> None:
    """Start ``work`` as this session's job under ``key`` (and the server's for ``recall``), then rerun: the page redraws with its button disabled."""
    job = Job.start(what, inputs, work, _experiment_gate())
    st.session_state[key] = job
    if recall is not None:
        recent_jobs().put(recall, job)
    st.rerun()


@st.fragment(run_every=REFRESH_SECONDS)
def job_progress(job: Job, partial: Callable[[Any], None] | None = None) -> None:
    """Elapsed seconds of a running ``job``, and ``partial(job.partial)`` once the work has given a first answer, every ``REFRESH_SECONDS``; one full rerun once it is done."""
    if job.done:
        st.rerun()
    if job.waiting:
        st.info(f"{job.what}: waiting for another experiment on the shared Spark session to finish… ({job.elapsed:.0f} s)", icon=":material/hourglass_empty:")
    elif job.cancel.is_set():
        st.info(f"{job.what}: cancelling… (the current micro-batch ends first) {job.elapsed:.0f} s", icon=":material/hourglass_bottom:")
    else:
        st.info(f"{job.what}: running… {job.elapsed:.0f} s" + (f" · {job.status}" if job.status else ""), icon=":material/hourglass_top:")
    if st.button("Cancel", key=f"cancel_{id(job)}", disabled=job.cancel.is_set(), help="Stops the replays within a micro-batch"):
        job.cancel.set()
        st.rerun(scope="fragment")
    st.caption("The replays run in the background; you may change the inputs or leave the page and come back.")
    if partial is not None and job.partial is not None:
        partial(job.partial)


def job_view(job: Job | None, render: Callable[[Job], None], idle_text: str, partial: Callable[[Any], None] | None = None) -> None:
    """``idle_text`` without a job, the progress fragment (with ``partial``, see :func:`job_progress`) while it runs, then ``render(job)`` or its error."""
    if job is None:
        st.info(idle_text)
    elif not job.done:
        job_progress(job, partial)
    elif job.cancelled:
        st.warning(f"{job.what}: cancelled after {job.elapsed:.0f} s; its queries are stopped.")
    elif job.error is not None:
        st.error(f"{job.what} failed after {job.elapsed:.0f} s: {type(job.error).__name__}: {failure_words(str(job.error))}. What it had measured is not kept; run it again.")
    else:
        render(job)


def job_controls(
    key: str, button: str, button_key: str, *, ready: bool, start: Callable[[], None], render: Callable[[Job], None], idle_text: str, help_text: str,
    recall: Hashable | None = None, partial: Callable[[Any], None] | None = None,
) -> None:
    """An experiment page's run button and its job: the button (disabled while the job runs or Spark is not ready) calls ``start``.

    Without a job of its own, a browser session (a reloaded page, another
    tab) is shown the server's job for ``recall``: the same inputs, running or done.
    """
    job = current_job(key, recall)
    running = job is not None and not job.done
    if st.button(button, key=button_key, type="primary", disabled=running or not ready, help=help_text):
        start()
    job_view(job, render, idle_text, partial)
