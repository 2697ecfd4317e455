"""Parts of the Watermark tuner page: the sweep's inputs, checked before Spark sees them, and its results."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

import pandas as pd
import streamlit as st

from streaming.analysis.model import grid
from streaming.analysis.profile import LatenessProfile, lateness_profile, proposed_delays, replayed_topic_events
from streaming.analysis.tune import (
    SHOWN,
    Confirmation,
    TunePlan,
    TuneResult,
    confirm,
    recommend,
)
from streaming.app.tune import run_sweep, sweep_plan
from streaming.charts import lateness as lateness_charts
from streaming.charts import tuner as tuner_charts
from streaming.engine.arrival import DEFAULT_ARRIVAL, rule_words
from streaming.engine.durations import format_duration, human_duration, parse_duration
from streaming.engine.errors import ConfigError, attempt
from streaming.engine.query.config import FeedSource
from streaming.engine.run.registry import QueryRegistry
from streaming.engine.sources.kafka import KafkaSource
from streaming.report import figures_report

from .data import choice_of, data_select, data_source, data_widgets, events_of, source_fingerprint
from .jobs import Job, job_controls, start_job
from .kafka import kafka_source, topic_shape
from .live import open_in_live
from .shared import KEPT, arrival_widget, get_registry, percent, readable_seconds, show_code, windows_widgets

__all__ = [
    "COMPLETENESS_TEXT",
    "CONFIRM_JOB",
    "DEFAULT_DELAYS",
    "TUNE_JOB",
    "TuneInputs",
    "confirmation_view",
    "lateness_section",
    "model_answer",
    "recommendation_text",
    "start_tune",
    "tune_inputs",
    "tune_results",
    "tune_widgets",
]

TUNE_JOB = "exp_tune_job"
CONFIRM_JOB = "exp_confirm_job"
DEFAULT_DELAYS = "0 seconds, 30 seconds, 1 minute, 2 minutes, 5 minutes, 10 minutes"
DEFAULT_TARGET = 0.99
MAX_DELAYS = 50
"""The most delays of a sweep the watermark model computes."""
MAX_SPARK_DELAYS = 8
"""A sweep that runs Spark for every delay (session windows, deduplication) runs one query per delay: at most this many."""

COMPLETENESS_TEXT = (
    "**Completeness** is the share of the exact answer a run's final result table holds: the sum of the "
    "counts in the update-mode result table ÷ the sum of the counts of the exact batch answer over the "
    "whole feed (no watermark), overall and per window. A sum, average or other aggregate is measured by "
    "the rows it was computed over; with duplicates dropped it can pass 100%: a short delay forgets an id "
    "sooner, and its late duplicate is counted again. **Output delay** is what append mode would wait: "
    "how long after a window's end (in event time, and in micro-batches) the watermark passes it and an "
    "append-mode run would emit it."
)


@dataclass(frozen=True)
class TuneInputs(TunePlan):
    """A sweep's validated inputs (:func:`~streaming.app.tune.sweep_plan`) and the label of the data swept: a sample feed, a dataset
    or a topic."""

    feed: str = ""

    @property
    def source(self) -> FeedSource | KafkaSource:
        return cast("FeedSource | KafkaSource", self.query.source)

    @property
    def recall(self) -> tuple:
        """What identifies this sweep for a reloaded page: the page, the data, the shape, the delays and the target."""
        return ("tune", self.feed, self.query, tuple(self.delays), self.target)


def tune_inputs(
    feed: str | None, window: str, slide: str | None, delays: str, target: object,
    batching: Mapping[str, Any] | None = None, aggregation: str = "count", deduplicate: bool = False, session_gap: str | None = None,
    topic: Mapping[str, Any] | None = None, arrival: str = DEFAULT_ARRIVAL,
) -> TuneInputs:
    """The sweep's validated inputs; :class:`InputErrors` lists every bad field, named with its value.

    ``feed`` is a label of :func:`dashboard.data.data_choices`; ``batching``,
    ``aggregation`` and ``deduplicate`` are a dataset's (:func:`dashboard.data.data_widgets`).
    With ``topic`` (the values of :func:`dashboard.kafka.kafka_widgets`) the sweep
    replays that topic instead, from its earliest offsets to its end when it starts. ``arrival`` is the arrival rule the sweep and its
    recommendation assume (a topic's range is replayed busy).
    """
    errors: list[ConfigError] = []
    source: FeedSource | KafkaSource | None = attempt(errors, lambda: kafka_source(topic) if topic is not None else data_source(choice_of(feed), batching))
    if source is not None and source.replays_offsets:
        feed = f"topic {source.label}"
    plan = sweep_plan(
        source, delays=delays, target=target, window=window, slide=slide, aggregation=aggregation, deduplicate=deduplicate, session_gap=session_gap,
        errors=errors, max_delays=MAX_DELAYS, max_spark_delays=MAX_SPARK_DELAYS, arrival=arrival,
    )
    return TuneInputs(plan.query, plan.delays, plan.target, str(feed))


def start_tune(registry: QueryRegistry, inputs: TuneInputs, key: str = TUNE_JOB) -> None:
    """Start the sweep of ``inputs`` on ``registry`` in the background (job in ``st.session_state[key]``) and rerun."""

    def work(job: Job) -> TuneResult:
        return run_sweep(registry, inputs, cancel=job.cancel, report=job.report, preview=job.preview)

    start_job(key, f"Sweep of {len(inputs.delays)} delays on {inputs.feed}", inputs, work, inputs.recall)


@st.cache_data(max_entries=16, show_spinner=False)
def _profile(fingerprint: tuple, _events: pd.DataFrame) -> LatenessProfile:
    """The lateness profile of the events read for ``fingerprint`` (:func:`dashboard.data.source_fingerprint`)."""
    return lateness_profile(_events)


def _seconds(value: Any) -> str:
    return "–" if pd.isna(value) else human_duration(pd.Timedelta(value).total_seconds())


@st.cache_data(max_entries=4, ttl=60, show_spinner="Reading the topic's records…")
def _topic_events(_spark: Any, source: KafkaSource) -> pd.DataFrame:
    """The records of ``source``'s topic as a replay from its earliest offsets to its end now reads them, batch by batch (kept a minute)."""
    return replayed_topic_events(_spark, source)[0]


def _events(source: FeedSource | KafkaSource) -> pd.DataFrame:
    topic, feed = source.as_topic, source.as_feed
    if topic is not None:
        return _topic_events(get_registry().spark, topic)
    assert feed is not None  # the tuner offers files and topics
    return events_of(feed)


def lateness_section(source: FeedSource | KafkaSource, ready: bool) -> None:
    """On demand, how late the events of ``source`` are: percentiles, the histogram, the latest keys; the first thing to see before choosing delays."""
    if not st.toggle("How late are the events?", key="tune_profile", help="Reads the data once (cached) and shows how far behind the stream events arrive"):
        return
    if not ready:
        st.info("The profile reads the data with Spark: it shows once Spark is ready.")
        return
    try:
        events = _events(source)
        feed = source.as_feed
        fingerprint = source_fingerprint(feed) if feed is not None else ("topic", source.address, len(events))
        profile = _profile(fingerprint, events)
    except ConfigError as err:
        st.error(f"Cannot read the events: {err}")
        return
    summary = profile.behind_stream
    columns = st.columns(6)
    for column, (label, name) in zip(columns, [("p50", "p50"), ("p95", "p95"), ("p99", "p99"), ("p99.9", "p999"), ("max", "max")]):
        column.metric(f"{label} behind the stream", _seconds(summary[name]))
    columns[5].metric("late events", f"{summary['late_events']} of {summary['events']}")
    proposal = ", ".join(format_duration(ms) for ms in proposed_delays(summary))
    left, right = st.columns([4, 1])
    left.caption(f"Delays around these percentiles, to sweep: **{proposal}**.")
    right.button(
        "Sweep these delays", key="tune_use_proposal", on_click=lambda: st.session_state.update({"tune_delays": proposal}),
        help="Put them in the delays field above",
    )
    st.plotly_chart(lateness_charts.lateness_figure(profile.stream_lateness), key="tune_profile_stream")
    if profile.behind_arrival is not None and profile.arrival_lateness is not None:
        arrival = profile.behind_arrival
        st.caption(
            f"Behind their arrival time (arrival − event time): p50 {_seconds(arrival['p50'])}, p95 {_seconds(arrival['p95'])}, "
            f"p99 {_seconds(arrival['p99'])}, p99.9 {_seconds(arrival['p999'])}, max {_seconds(arrival['max'])}."
        )
        st.plotly_chart(
            lateness_charts.lateness_figure(profile.arrival_lateness, title="How long events took to arrive", xaxis_title="{unit} from event time to arrival"),
            key="tune_profile_arrival",
        )
    st.dataframe(profile.per_key.head(50), hide_index=True, column_config={"key": st.column_config.TextColumn("key (latest first)")})


def tune_widgets() -> dict[str, Any]:
    """Data (and, for a dataset, its batching and aggregate), window (and slide), delays and target: the keyword arguments of :func:`tune_inputs`."""
    columns = st.columns([3, 3, 5, 2])
    with columns[0]:
        if st.toggle("A Kafka topic", key="tune_from_topic", **KEPT, help="Its records from the earliest offsets to those latest when the sweep starts"):
            feed, shape = None, topic_shape("tune")
        else:
            feed = data_select("tune_feed")
            shape = data_widgets("tune", feed)
    with columns[1]:
        window, slide, session_gap = windows_widgets("tune")
    with columns[2]:
        delays = st.text_input("Watermark delays (comma-separated)", value=DEFAULT_DELAYS, key="tune_delays", **KEPT,
                               help=f"At most {MAX_DELAYS} (computed by the model), or {MAX_SPARK_DELAYS} for session windows and deduplication (one replay each), e.g. '0s, 30 seconds, 2m'")
    with columns[3]:
        target = st.number_input("Completeness target", value=DEFAULT_TARGET, step=0.01, format="%.3f", key="tune_target", **KEPT,
                                 help="Greater than 0 and at most 1: the smallest delay reaching it is recommended")
    arrival = arrival_widget("tune")
    return {"feed": feed, "window": window, "slide": slide, "session_gap": session_gap, "delays": delays, "target": target, **shape, "arrival": arrival}


TUNE_COLUMNS: Mapping[str, Any] = {
    "delay": st.column_config.TextColumn("delay"),
    "completeness": st.column_config.NumberColumn("completeness", format="percent"),
    "completeness_quiet": st.column_config.NumberColumn("quiet", format="percent", help="The model's completeness under the quiet arrival rule: a no-data batch between arrivals"),
    "completeness_busy": st.column_config.NumberColumn("busy", format="percent", help="The model's completeness under the busy arrival rule: batches back to back"),
    "counted": st.column_config.NumberColumn("counted", help="Sum of the counts in the final result table"),
    "exact": st.column_config.NumberColumn("exact", help="Sum of the counts of the exact answer"),
    "rows_dropped_by_watermark": st.column_config.NumberColumn("dropped (Spark)", help="numRowsDroppedByWatermark, summed: partially aggregated groups, not events"),
    "lost_pairs": st.column_config.NumberColumn("lost (exact)", help="exact − counted: (event, window) pairs the watermark threw away"),
    "peak_state_rows": st.column_config.NumberColumn("peak state rows"),
    "mean_state_rows": st.column_config.NumberColumn("mean state rows", format="%.1f"),
    "peak_state_memory_bytes": st.column_config.NumberColumn("peak state memory", format="bytes"),
    "mean_state_memory_bytes": st.column_config.NumberColumn("mean state memory", format="bytes"),
    "output_delay_seconds": st.column_config.TextColumn("output delay", help="Mean over emitted windows, event time"),
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


def confirmation_view(confirmation: Confirmation) -> None:
    """The model and Spark side by side for one delay: a success when they agree, a loud error naming each difference when not."""
    spark = confirmation.spark
    if confirmation.agree:
        st.success(
            f"Confirmed on Spark at {confirmation.delay}: completeness {percent(spark['completeness'])}, {spark['counted']} of "
            f"{spark['exact']} rows counted, {spark['rows_dropped_by_watermark']} rows dropped by the watermark: the model and Spark agree."
        )
    else:
        st.error(
            f"The model and Spark disagree at {confirmation.delay}: " + "; ".join(confirmation.differences())
            + ". This is a bug in the model: please report it with the data and these settings. Spark's numbers are the true ones."
        )
    st.dataframe(
        pd.DataFrame({
            "measure": [name.removesuffix("_seconds").replace("_", " ") for name in SHOWN],
            "model": [_measure(name, confirmation.model[name]) for name in SHOWN],
            "Spark": [_measure(name, spark[name]) for name in SHOWN],
        }),
        hide_index=True,
    )


def _measure(name: str, value: Any) -> str:
    """One measure of a confirmation as a person reads it: a share in percent, the output delay in its best unit, a count with separators."""
    if value is None or pd.isna(value):
        return "–"
    if name == "completeness":
        return percent(float(value))
    if name == "output_delay_seconds":
        return human_duration(float(value))
    return f"{value:,.1f}" if isinstance(value, float) and not value.is_integer() else f"{int(value):,}"


def _method(result: TuneResult, inputs: TuneInputs) -> None:
    if result.confirmation is None:
        note = f" ({result.model_note})" if result.model_note else ""
        st.caption(f"Spark ran every delay{note}.")
        return
    st.caption(
        f"The watermark model computed all {len(result.outcomes)} delays from the data in one pass; one delay ran on Spark to check it, "
        "and sized the state memory (bytes per state row measured there × the model's state rows)."
    )
    confirmation_view(result.confirmation)
    with st.expander("Confirm another delay on Spark"):
        delays = [outcome.delay for outcome in result.outcomes]
        delay = st.selectbox("Delay", delays, key="tune_confirm_delay")

        def start() -> None:
            registry = get_registry()  # here: the job's thread has no browser session to ask whose it is

            def work(job: Job) -> Confirmation:
                return confirm(registry, result, str(delay), cancel=job.cancel, report=job.report)

            start_job(CONFIRM_JOB, f"Spark run at {delay}", inputs, work, ("confirm", inputs.recall, delay))

        job_controls(
            CONFIRM_JOB, "Run on Spark", "tune_confirm", ready=True, start=start,
            render=lambda job: confirmation_view(job.result), idle_text="Pick a delay and press **Run on Spark**: one replay.",
            help_text="Replays the data once with this delay and compares with the model", recall=("confirm", inputs.recall, delay),
        )


MAX_GRID_WINDOWS = 10


def parse_windows(text: str, limit: int = MAX_GRID_WINDOWS) -> list[int]:
    """Comma-separated window lengths in ms, distinct and sorted; :class:`ConfigError` on ``windows``."""
    lengths = []
    for item in (item.strip() for item in str(text).split(",")):
        if not item:
            continue
        try:
            length = parse_duration(item, field="windows")
        except ConfigError as err:
            raise ConfigError("windows", item, err.reason) from None
        if length <= 0:
            raise ConfigError("windows", item, "must be longer than 0")
        lengths.append(length)
    if not lengths:
        raise ConfigError("windows", text, "names no window length")
    if len(set(lengths)) > limit:
        raise ConfigError("windows", text, f"lists {len(set(lengths))} window lengths; at most {limit}")
    return sorted(set(lengths))


def _grid_section(result: TuneResult, inputs: TuneInputs) -> None:
    """Windows × delays by the model: completeness (with the target's contour), state and output delay as heat maps; one window's curve and code."""
    if result.timeline is None:
        return
    with st.expander("Windows × delays (the model)"):
        base = result.query.window_ms
        default = ", ".join(format_duration(base * factor // 2) for factor in (1, 2, 4, 8))
        try:
            windows = parse_windows(st.text_input("Window lengths (tumbling)", value=default, key="tune_grid_windows"))
        except ConfigError as err:
            st.error(str(err))
            return
        delays = [outcome.delay_ms or 0 for outcome in result.outcomes]
        table = grid(result.timeline, windows, delays)
        st.plotly_chart(tuner_charts.grid_heatmap(table, "completeness", "Completeness", target=result.target, percent=True), key="tune_grid_completeness")
        left, right = st.columns(2)
        left.plotly_chart(tuner_charts.grid_heatmap(table, "peak_state_rows", "Peak state rows"), key="tune_grid_state")
        right.plotly_chart(tuner_charts.grid_heatmap(table, "output_delay_seconds", "Mean output delay (s)"), key="tune_grid_delay")
        window = st.selectbox("Window", windows, format_func=format_duration, key="tune_grid_window")
        rows = table[table["window_ms"] == window].assign(delay=[format_duration(int(ms)) for ms in table.loc[table["window_ms"] == window, "delay_ms"]])
        st.plotly_chart(tuner_charts.completeness_vs_state({"delays": rows.to_dict("records"), "target": result.target,
                                                             "recommended": recommend(rows.to_dict("records"), result.target)}), key="tune_grid_curve")
        chosen = recommend(rows.to_dict("records"), result.target)
        if chosen is None:
            st.caption(f"No delay reaches {percent(result.target)} with {format_duration(window)} windows.")
            return
        config = replace(inputs.config(chosen), window=format_duration(window), slide=None)
        st.markdown(f"**{format_duration(window)} windows, watermark {chosen}** (the smallest delay reaching {percent(result.target)})")
        show_code(config, key="tune_grid_code")


MODEL_COLUMNS = ("delay", "completeness", "completeness_quiet", "completeness_busy", "counted", "exact", "lost_pairs", "peak_state_rows", "mean_state_rows", "output_delay_seconds",
                 "windows_never_emitted", "recommended")
"""The columns of the model's answer shown while Spark confirms it (state memory needs Spark's bytes per row)."""


def model_answer(result: TuneResult) -> None:
    """The watermark model's answer, shown at once while Spark confirms it: the recommendation and one row per delay."""
    _recommendation(result, f" (the watermark model, in {result.wall_seconds:.1f} s; Spark is confirming it)")
    _delays_table(result, MODEL_COLUMNS)


def _recommendation(result: TuneResult, note: str = "") -> None:
    (st.success if result.recommended is not None else st.warning)(recommendation_text(result) + note)
    st.caption(
        f"Under the {result.arrival} arrival rule: {rule_words(result.arrival)}."
        + (" The quiet and busy columns give the model's completeness under each rule: they bound what a real stream sees." if result.by_rule else "")
    )


def _delays_frame(result: TuneResult, columns: Iterable[str]) -> pd.DataFrame:
    """One row per delay of ``result``, the ``columns`` it has, the output delay in its unit."""
    shown = readable_seconds(tuner_charts.tune_frame(result), ["output_delay_seconds"])
    for rule, values in (result.by_rule or {}).items():  # the two rules bound what a real stream sees
        shown[f"completeness_{rule}"] = values
    return shown[[name for name in columns if name in shown.columns]]


def _delays_table(result: TuneResult, columns: Iterable[str]) -> None:
    st.dataframe(_delays_frame(result, columns), hide_index=True, column_config=dict(TUNE_COLUMNS))


def tune_results(job: Job) -> None:
    """The finished sweep: recommendation, one row per delay, the two trade-offs, per-window completeness, code."""
    inputs: TuneInputs = job.inputs
    result: TuneResult = job.result
    shape = result.window if result.slide is None else f"{result.window} sliding every {result.slide}"
    if inputs.query.session_gap is not None:
        shape = f"session (gap {inputs.query.session_gap}, append mode; sessions still open at the end read from the state)"
    what = "count" if inputs.query.aggregation == "count" else inputs.query.measure
    if inputs.query.deduplicate:
        what += " after dropping duplicates"
    st.caption(
        f"{inputs.feed}: {what} per window of {shape}, {len(result.outcomes)} delays, target {percent(result.target)}: "
        f"{result.wall_seconds:.0f} s {'(delays run concurrently)' if result.concurrent else '(one delay at a time)'}."
    )
    _recommendation(result)
    _method(result, inputs)
    _delays_table(result, TUNE_COLUMNS)
    figures = [tuner_charts.completeness_vs_state(result), tuner_charts.completeness_vs_output_delay(result)]
    left, right = st.columns(2)
    left.plotly_chart(figures[0], key="tune_chart_state")
    right.plotly_chart(figures[1], key="tune_chart_delay")
    summary = (
        f"{inputs.feed}: {what} per window of {shape}, {len(result.outcomes)} delays, target {percent(result.target)}.",
        recommendation_text(result),
    )
    st.download_button(
        "Download report (HTML)", lambda: figures_report("Watermark tuner", summary, figures, [("One row per delay", _delays_frame(result, TUNE_COLUMNS))]),
        file_name="watermark-tuner.html", mime="text/html", key="tune_report", on_click="ignore", icon=":material/download:",
        help="The recommendation, the table and the two trade-offs as one HTML file that opens without a server",
    )
    _per_window(result)
    _grid_section(result, inputs)
    if result.recommended is None:
        st.caption("No recommended configuration to export: add longer delays or lower the target.")
        return
    st.markdown(f"**Recommended query** ({inputs.config(result.recommended).output_mode} mode, watermark {result.recommended})")
    open_in_live(inputs.config(result.recommended), key="tune_open_live")
    show_code(inputs.config(result.recommended), key="tune_code")
