"""Parts of the experiment pages (Watermark tuner, Compare); app-side, so it may import Streamlit.

An experiment replays a whole feed several times (:func:`streaming.tune.tune`,
:func:`streaming.compare.compare`) and takes minutes, so it never runs in the
script thread. The job pattern:

- **Start.** The page's button calls :func:`start_tune` / :func:`start_compare`
  with inputs already validated (:func:`tune_inputs`, :func:`compare_inputs`
  raise :class:`InputErrors` naming field and value before anything touches
  Spark) and the shared registry, fetched in the script thread. They create a
  :class:`Job` (one daemon thread running the experiment), keep it in
  ``st.session_state`` under the page's key (each browser session has its own
  job; a rerun, a page switch or a widget change never loses it) and rerun
  the page, which then draws its button disabled until the job is done.
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
A job cannot be cancelled; it ends when its replays end.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

import lab
from streaming import tune_charts
from streaming.compare import MAX_CONFIGS, MIN_CONFIGS, Comparison, compare, config_label
from streaming.config import OUTPUT_MODES, ConfigError, FeedSource, QueryConfig
from streaming.tune import TuneResult, canonical_delays, check_target, tune

__all__ = [
    "COMPARE_JOB",
    "CompareInputs",
    "DEFAULT_DELAYS",
    "InputErrors",
    "Job",
    "TUNE_JOB",
    "TuneInputs",
    "compare_inputs",
    "compare_results",
    "compare_slot_widgets",
    "current_job",
    "feed_select",
    "job_view",
    "parse_delays",
    "percent",
    "start_compare",
    "start_tune",
    "tune_inputs",
    "tune_results",
    "tune_widgets",
]

REFRESH_SECONDS = 2.0
TUNE_JOB = "exp_tune_job"
COMPARE_JOB = "exp_compare_job"
DEFAULT_DELAYS = "0 seconds, 30 seconds, 1 minute, 2 minutes, 5 minutes, 10 minutes"
DEFAULT_TARGET = 0.99
DEFAULT_FEED = "web_clicks"
MAX_DELAYS = 8
"""A sweep runs one query per delay at once on the shared session: at most this many."""

COMPLETENESS_TEXT = (
    "**Completeness** is the share of the exact answer a run's final result table holds: the sum of the "
    "counts in the update-mode result table ÷ the sum of the counts of the exact batch answer over the "
    "whole feed (no watermark), overall and per window. **Output delay** is what append mode would wait: "
    "how long after a window's end (in event time, and in micro-batches) the watermark passes it and an "
    "append-mode run would emit it."
)


# --- the job -----------------------------------------------------------------------


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
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _thread: threading.Thread | None = field(default=None, repr=False)

    @classmethod
    def start(cls, what: str, inputs: Any, work: Callable[[], Any], gate: threading.Lock | None = None) -> "Job":
        """A job running ``work()`` in a new daemon thread, after acquiring ``gate`` when given."""
        job = cls(what, inputs)
        job._thread = threading.Thread(target=job._run, args=(work, gate), name=f"experiment-{what}", daemon=True)
        job._thread.start()
        return job

    def _run(self, work: Callable[[], Any], gate: threading.Lock | None) -> None:
        try:
            if gate is None:
                self.waiting = False
                self.result = work()
            else:
                with gate:
                    self.waiting = False
                    self.result = work()
        except BaseException as err:  # noqa: BLE001 - shown on the page; the thread must not die silently
            self.error = err
        finally:
            self.finished = time.monotonic()
            self._done.set()

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


def current_job(key: str) -> Job | None:
    """The job this browser session keeps under ``key``, if any."""
    job = st.session_state.get(key)
    return job if isinstance(job, Job) else None


def _start(key: str, what: str, inputs: Any, work: Callable[[], Any]) -> None:
    """Start ``work`` as this session's job under ``key``, then rerun: the page redraws with its button disabled."""
    st.session_state[key] = Job.start(what, inputs, work, _experiment_gate())
    st.rerun()


@st.fragment(run_every=REFRESH_SECONDS)
def job_progress(job: Job) -> None:
    """Elapsed seconds of a running ``job``, every ``REFRESH_SECONDS``; one full rerun once it is done."""
    if job.done:
        st.rerun()
    if job.waiting:
        st.info(f"{job.what}: waiting for another experiment on the shared Spark session to finish… ({job.elapsed:.0f} s)", icon=":material/hourglass_empty:")
    else:
        st.info(f"{job.what}: running… {job.elapsed:.0f} s", icon=":material/hourglass_top:")
    st.caption("The replays run in the background; you may change the inputs or leave the page and come back.")


def job_view(job: Job | None, render: Callable[[Job], None], idle_text: str) -> None:
    """``idle_text`` without a job, the progress fragment while it runs, then ``render(job)`` or its error."""
    if job is None:
        st.info(idle_text)
    elif not job.done:
        job_progress(job)
    elif job.error is not None:
        st.error(f"{job.what} failed after {job.elapsed:.0f} s: {type(job.error).__name__}: {job.error}")
    else:
        render(job)


# --- input checks: pure ---------------------------------------------------------------


class InputErrors(ValueError):
    """Every problem of a form's values, each naming the field and the value."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


def percent(share: float) -> str:
    """``0.99`` → ``"99%"``, ``0.995`` → ``"99.5%"``."""
    return f"{round(share * 100, 4):g}%"


def parse_delays(text: str, limit: int = MAX_DELAYS) -> list[str]:
    """Comma-separated durations as canonical strings, smallest first; :class:`ConfigError` on ``delays``."""
    items = [item.strip() for item in str(text).split(",") if item.strip()]
    delays = canonical_delays(items)
    if len(delays) > limit:
        raise ConfigError("delays", text, f"lists {len(delays)} delays; a sweep runs at most {limit} (one query each)")
    return delays


def _feed_source(feed: str) -> FeedSource:
    """The stepped replay of a sample feed: only names of :func:`lab.feed_names`, never a free path."""
    return lab.build_source("feed", {"feed": feed, "seconds_per_file": 0})


@dataclass(frozen=True)
class TuneInputs:
    feed: str
    source: FeedSource
    window: str
    slide: str | None
    delays: list[str]
    target: float

    def config(self, delay: str) -> QueryConfig:
        """The update-mode query the sweep runs for ``delay``; the recommended one for the code panel."""
        return QueryConfig(self.source, window=self.window, slide=self.slide, watermark=delay, output_mode="update")


def tune_inputs(feed: str, window: str, slide: str | None, delays: str, target: object) -> TuneInputs:
    """The sweep's validated inputs; :class:`InputErrors` lists every bad field, named with its value."""
    errors: list[str] = []
    source = parsed = goal = None
    for check in ("feed", "delays", "target"):
        try:
            if check == "feed":
                source = _feed_source(feed)
            elif check == "delays":
                parsed = parse_delays(delays)
            else:
                goal = check_target(target)
        except ConfigError as err:
            errors.append(str(err))
    if source is not None:
        try:  # window and slide, checked the way the sweep's queries will be built
            QueryConfig(source, window=window, slide=slide, watermark=None, output_mode="update")
        except ConfigError as err:
            errors.append(str(err))
    if errors:
        raise InputErrors(errors)
    return TuneInputs(feed, source, window, slide, parsed, goal)


@dataclass(frozen=True)
class CompareInputs:
    feed: str
    source: FeedSource
    configs: list[QueryConfig]
    labels: list[str]


def compare_inputs(feed: str, slots: Sequence[Mapping[str, Any]]) -> CompareInputs:
    """The comparison's validated configs, one per slot (``window, slide, watermark, output_mode``).

    :class:`InputErrors` lists every bad slot as ``Config N: field: 'value' ...``.
    """
    try:
        source = _feed_source(feed)
    except ConfigError as err:
        raise InputErrors([str(err)]) from None
    if not MIN_CONFIGS <= len(slots) <= MAX_CONFIGS:
        raise InputErrors([f"configs: {len(slots)} given; compare needs {MIN_CONFIGS} to {MAX_CONFIGS}"])
    errors, configs = [], []
    for number, slot in enumerate(slots, start=1):
        try:
            configs.append(QueryConfig(source, trigger="default", **slot))
        except ConfigError as err:
            errors.append(f"Config {number}: {err}")
    if errors:
        raise InputErrors(errors)
    labels = [f"{number}: {config_label(config)}" for number, config in enumerate(configs, start=1)]
    return CompareInputs(feed, source, configs, labels)


# --- starting -------------------------------------------------------------------------


def start_tune(registry, inputs: TuneInputs, key: str = TUNE_JOB) -> None:
    """Start the sweep of ``inputs`` on ``registry`` in the background (job in ``st.session_state[key]``) and rerun."""

    def work() -> TuneResult:
        return tune(registry, inputs.source.path, window=inputs.window, slide=inputs.slide, delays=inputs.delays, target=inputs.target)

    _start(key, f"Sweep of {len(inputs.delays)} delays on {inputs.feed}", inputs, work)


def start_compare(registry, inputs: CompareInputs, key: str = COMPARE_JOB) -> None:
    """Start the comparison of ``inputs`` on ``registry`` in the background (job in ``st.session_state[key]``) and rerun."""

    def work() -> Comparison:
        return compare(registry, inputs.source.path, inputs.configs, labels=inputs.labels)

    _start(key, f"Comparison of {len(inputs.configs)} configs on {inputs.feed}", inputs, work)


# --- widgets ----------------------------------------------------------------------------


def feed_select(feeds: Sequence[str], key: str) -> str:
    index = feeds.index(DEFAULT_FEED) if DEFAULT_FEED in feeds else 0
    return st.selectbox("Sample feed", feeds, index=index, key=key, help="A folder under sample_feeds/, replayed one file per micro-batch")


def tune_widgets(feeds: Sequence[str]) -> dict[str, Any]:
    """Feed, window (and slide), delays and target: the keyword arguments of :func:`tune_inputs`."""
    columns = st.columns([2, 2, 2, 5, 2])
    with columns[0]:
        feed = feed_select(feeds, "tune_feed")
    with columns[1]:
        window = st.text_input("Window length", value="1 minute", key="tune_window")
    with columns[2]:
        sliding = st.radio("Windows", ["tumbling", "sliding"], horizontal=True, key="tune_window_kind") == "sliding"
        slide = st.text_input("Slide", value="30 seconds", key="tune_slide") if sliding else None
    with columns[3]:
        delays = st.text_input("Watermark delays (comma-separated)", value=DEFAULT_DELAYS, key="tune_delays",
                               help=f"One replay per delay, at most {MAX_DELAYS}, e.g. '0s, 30 seconds, 2m'")
    with columns[4]:
        target = st.number_input("Completeness target", value=DEFAULT_TARGET, step=0.01, format="%.3f", key="tune_target",
                                 help="Greater than 0 and at most 1: the smallest delay reaching it is recommended")
    return {"feed": feed, "window": window, "slide": slide, "delays": delays, "target": target}


# Defaults of the comparison slots, for the web_clicks feed: a short and a long watermark, sliding append, no watermark.
SLOT_DEFAULTS: tuple[dict[str, Any], ...] = (
    {"window": "1 minute", "slide": None, "watermark": "30 seconds", "output_mode": "update"},
    {"window": "1 minute", "slide": None, "watermark": "5 minutes", "output_mode": "update"},
    {"window": "1 minute", "slide": "30 seconds", "watermark": "30 seconds", "output_mode": "append"},
    {"window": "1 minute", "slide": None, "watermark": None, "output_mode": "complete"},
)


def compare_slot_widgets(number: int, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration's window, slide, watermark and output mode; keys end in ``_{number}``."""
    st.markdown(f"**Config {number}**")
    window = st.text_input("Window length", value=defaults["window"], key=f"cmp_window_{number}")
    kinds = ["tumbling", "sliding"]
    sliding = st.radio("Windows", kinds, index=1 if defaults["slide"] else 0, horizontal=True, key=f"cmp_window_kind_{number}") == "sliding"
    slide = st.text_input("Slide", value=defaults["slide"] or "30 seconds", key=f"cmp_slide_{number}") if sliding else None
    use_watermark = st.checkbox("Watermark", value=defaults["watermark"] is not None, key=f"cmp_use_watermark_{number}")
    watermark = st.text_input("Watermark delay", value=defaults["watermark"] or "30 seconds", key=f"cmp_watermark_{number}") if use_watermark else None
    modes = list(OUTPUT_MODES)
    output_mode = st.selectbox("Output mode", modes, index=modes.index(defaults["output_mode"]), key=f"cmp_output_mode_{number}")
    return {"window": window, "slide": slide, "watermark": watermark, "output_mode": output_mode}


# --- results ------------------------------------------------------------------------------

TUNE_COLUMNS: Mapping[str, Any] = {
    "delay": st.column_config.TextColumn("delay"),
    "completeness": st.column_config.NumberColumn("completeness", format="percent"),
    "counted": st.column_config.NumberColumn("counted", help="Sum of the counts in the final result table"),
    "exact": st.column_config.NumberColumn("exact", help="Sum of the counts of the exact answer"),
    "rows_dropped_by_watermark": st.column_config.NumberColumn("dropped (Spark)", help="numRowsDroppedByWatermark, summed: partially aggregated groups, not events"),
    "lost_pairs": st.column_config.NumberColumn("lost (exact)", help="exact − counted: (event, window) pairs the watermark threw away"),
    "peak_state_rows": st.column_config.NumberColumn("peak state rows"),
    "mean_state_rows": st.column_config.NumberColumn("mean state rows", format="%.1f"),
    "peak_state_memory_bytes": st.column_config.NumberColumn("peak state memory", format="bytes"),
    "mean_state_memory_bytes": st.column_config.NumberColumn("mean state memory", format="bytes"),
    "output_delay_seconds": st.column_config.NumberColumn("output delay (s)", format="%.0f", help="Mean over emitted windows, event time"),
    "output_delay_batches": st.column_config.NumberColumn("output delay (batches)", format="%.1f", help="Mean over emitted windows"),
    "windows_never_emitted": st.column_config.NumberColumn("never emitted", help="Windows the final watermark never passed"),
    "batches": st.column_config.NumberColumn("batches"),
    "recommended": st.column_config.CheckboxColumn("recommended"),
}


def recommendation_text(result: TuneResult) -> str:
    """``"Smallest delay reaching 99%: 5 minutes"``, or which delay came closest when none reaches the target."""
    goal = percent(result.target)
    if result.recommended is not None:
        return f"Smallest delay reaching {goal}: {result.recommended}"
    best = max(result.outcomes, key=lambda outcome: outcome.completeness)
    return f"No delay reaches {goal}: the most complete is {best.delay} at {percent(best.completeness)}"


def _per_window(result: TuneResult) -> None:
    delays = [outcome.delay for outcome in result.outcomes]
    with st.expander("Per-window completeness"):
        index = delays.index(result.recommended) if result.recommended in delays else len(delays) - 1
        delay = st.selectbox("Watermark delay", delays, index=index, key="tune_window_delay")
        outcome = result.outcomes[delays.index(delay)]
        st.dataframe(
            outcome.per_window, hide_index=True,
            column_config={"completeness": st.column_config.NumberColumn("completeness", format="percent")},
        )


def tune_results(job: Job) -> None:
    """The finished sweep: recommendation, one row per delay, the two trade-offs, per-window completeness, code."""
    inputs: TuneInputs = job.inputs
    result: TuneResult = job.result
    shape = inputs.window if inputs.slide is None else f"{inputs.window} sliding every {inputs.slide}"
    st.caption(
        f"{inputs.feed}, windows of {shape}, {len(result.outcomes)} delays, target {percent(result.target)}: "
        f"{result.wall_seconds:.0f} s {'(delays run concurrently)' if result.concurrent else '(one delay at a time)'}."
    )
    text = recommendation_text(result)
    (st.success if result.recommended is not None else st.warning)(text)
    frame = tune_charts.tune_frame(result)
    st.dataframe(frame[[name for name in TUNE_COLUMNS if name in frame.columns]], hide_index=True, column_config=dict(TUNE_COLUMNS))
    left, right = st.columns(2)
    left.plotly_chart(tune_charts.completeness_vs_state(result), key="tune_chart_state")
    right.plotly_chart(tune_charts.completeness_vs_output_delay(result), key="tune_chart_delay")
    _per_window(result)
    if result.recommended is None:
        st.caption("No recommended configuration to export: add longer delays or lower the target.")
        return
    st.markdown(f"**Recommended query** (update mode, watermark {result.recommended})")
    lab.show_code(inputs.config(result.recommended), key="tune_code")


COMPARE_COLUMNS: Mapping[str, Any] = {
    "label": st.column_config.TextColumn("config"),
    "completeness": st.column_config.NumberColumn("completeness", format="percent"),
    "completeness_finalized": st.column_config.NumberColumn("completeness (finalized windows)", format="percent",
                                                            help="Over the windows ending at or before the final watermark: what append mode has emitted"),
    "counted": st.column_config.NumberColumn("counted"),
    "exact": st.column_config.NumberColumn("exact"),
    "rows_dropped_by_watermark": st.column_config.NumberColumn("dropped (Spark)"),
    "lost_pairs": st.column_config.NumberColumn("lost (exact)"),
    "peak_state_rows": st.column_config.NumberColumn("peak state rows"),
    "output_delay_seconds": st.column_config.NumberColumn("output delay (s)", format="%.0f"),
    "max_output_delay_seconds": st.column_config.NumberColumn("max output delay (s)", format="%.0f"),
    "output_delay_batches": st.column_config.NumberColumn("output delay (batches)", format="%.1f"),
    "windows_never_emitted": st.column_config.NumberColumn("never emitted"),
    "mean_batch_duration_ms": st.column_config.NumberColumn("mean batch (ms)", format="%.0f"),
    "batches": st.column_config.NumberColumn("batches"),
}
"""The summary columns shown, in order; window, slide, watermark and output mode are in the label."""


def compare_results(job: Job) -> None:
    """The finished comparison: one summary row per config, the counts side by side, the code of each config."""
    comparison: Comparison = job.result
    st.caption(f"{job.inputs.feed}: {len(comparison.runs)} configs in {comparison.wall_seconds:.0f} s "
               f"{'(run concurrently: batch durations are measured while they share the cores)' if comparison.concurrent else ''}")
    summary = comparison.summary()
    st.dataframe(summary[[name for name in COMPARE_COLUMNS if name in summary.columns]], hide_index=True, column_config=dict(COMPARE_COLUMNS))
    st.plotly_chart(tune_charts.comparison_counts(comparison), key="cmp_chart_counts")
    st.caption("Same event-time axis and the same colour per key in every panel; a legend entry toggles its key everywhere.")
    columns = st.columns(len(comparison.runs))
    for number, (column, run) in enumerate(zip(columns, comparison.runs), start=1):
        with column:
            st.markdown(f"**{run.label}**")
            lab.show_code(run.config, key=f"cmp_code_{number}")
