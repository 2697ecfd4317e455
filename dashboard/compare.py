"""Parts of the Compare page: 2-4 configurations on one feed or dataset, checked before Spark sees them, and their results."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import pandas as pd
import streamlit as st

from streaming.analysis.compare import MAX_CONFIGS, MIN_CONFIGS, Comparison, compare, config_label
from streaming.analysis.triggers import LatencyComparison, compare_latency
from streaming.charts.compare import MAX_WINDOWS_SHOWN, comparison_counts
from streaming.charts.latency import latency_cdf_figure
from streaming.engine.arrival import DEFAULT_ARRIVAL, describe_rule
from streaming.engine.errors import ConfigError, brief
from streaming.engine.query.config import OUTPUT_MODES, FeedSource, QueryConfig, TriggerKind
from streaming.engine.run.registry import QueryRegistry
from streaming.engine.sources.kafka import KafkaSource

from .data import choice_of, data_select, data_source, data_widgets
from .jobs import Job, job_controls, start_job
from .kafka import kafka_source, topic_shape
from .live import open_in_live
from .shared import KEPT, InputErrors, arrival_widget, get_registry, readable_seconds, show_code, watermark_widget, windows_widgets

__all__ = [
    "COMPARE_JOB", "LATENCY_JOB", "SLOT_DEFAULTS", "CompareInputs", "LatencyInputs", "compare_inputs", "compare_results", "compare_slot_widgets", "experiment",
    "latency_inputs", "latency_results", "latency_widgets", "query_comparison", "slot_columns", "start_compare", "start_latency",
]

COMPARE_JOB = "exp_compare_job"


@dataclass(frozen=True)
class CompareInputs:
    feed: str
    source: FeedSource | KafkaSource
    configs: list[QueryConfig]
    labels: list[str]

    @property
    def recall(self) -> tuple:
        """What identifies this comparison for a reloaded page: the page, the data and the configurations."""
        return ("compare", self.feed, tuple(self.configs), tuple(self.labels))


def compare_inputs(
    feed: str | None, slots: Sequence[Mapping[str, Any]],
    batching: Mapping[str, Any] | None = None, aggregation: str = "count", deduplicate: bool = False, topic: Mapping[str, Any] | None = None,
    arrival: str = DEFAULT_ARRIVAL,
) -> CompareInputs:
    """The comparison's validated configs, one per slot (``window, slide, watermark, output_mode``).

    ``feed`` is a label of :func:`dashboard.data.data_choices`; ``batching``,
    ``aggregation`` and ``deduplicate`` are a dataset's, shared by every slot, as the arrival rule is (one comparison, one rule).
    With ``topic`` (:func:`dashboard.kafka.kafka_widgets`' values) every config
    replays that topic, from its earliest offsets to its end when the comparison starts.
    :class:`InputErrors` lists every bad slot as ``Config N: field: 'value' ...``.
    """
    try:
        source: FeedSource | KafkaSource = kafka_source(topic) if topic is not None else data_source(choice_of(feed), batching)
    except ConfigError as err:
        raise InputErrors([err]) from None
    if source.replays_offsets:
        feed = f"topic {source.label}"
    if not MIN_CONFIGS <= len(slots) <= MAX_CONFIGS:
        raise InputErrors([ConfigError("configs", len(slots), f"given; compare needs {MIN_CONFIGS} to {MAX_CONFIGS}")])
    errors: list[ConfigError] = []
    configs: list[QueryConfig] = []
    for number, slot in enumerate(slots, start=1):
        try:
            configs.append(QueryConfig(source, trigger="default", aggregation=aggregation, deduplicate=deduplicate, arrival=arrival, **slot))  # type: ignore[arg-type]
        except ConfigError as err:
            errors.append(ConfigError(f"Config {number}: {err.field}", err.value, err.reason))
    if errors:
        raise InputErrors(errors)
    labels = [f"{number}: {config_label(config)}" for number, config in enumerate(configs, start=1)]
    return CompareInputs(str(feed), source, configs, labels)


def start_compare(registry: QueryRegistry, inputs: CompareInputs, key: str = COMPARE_JOB) -> None:
    """Start the comparison of ``inputs`` on ``registry`` in the background (job in ``st.session_state[key]``) and rerun."""

    def work(job: Job) -> Comparison:
        bounded = inputs.source.bounded_now()  # one bound for every config: they replay the same records
        configs = [config.with_changes(source=bounded) for config in inputs.configs]
        return compare(registry, bounded.address, configs, labels=inputs.labels, cancel=job.cancel, report=job.report)

    start_job(key, f"Comparison of {len(inputs.configs)} configs on {inputs.feed}", inputs, work, inputs.recall)


# Defaults of the comparison slots, for the web_clicks feed: a short and a long watermark, sliding append, no watermark.
SLOT_DEFAULTS: tuple[dict[str, Any], ...] = (
    {"window": "1 minute", "slide": None, "watermark": "30 seconds", "output_mode": "update"},
    {"window": "1 minute", "slide": None, "watermark": "5 minutes", "output_mode": "update"},
    {"window": "1 minute", "slide": "30 seconds", "watermark": "30 seconds", "output_mode": "append"},
    {"window": "1 minute", "slide": None, "watermark": None, "output_mode": "complete"},
)


def compare_slot_widgets(number: int, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration's windows (fixed or session), watermark and output mode; keys start ``cmp_{number}_``."""
    st.markdown(f"**Config {number}**")
    window, slide, session_gap = windows_widgets(f"cmp_{number}", defaults["window"], defaults["slide"])
    watermark = watermark_widget(f"cmp_{number}", defaults["watermark"])
    modes = list(OUTPUT_MODES)
    output_mode = st.selectbox("Output mode", modes, index=modes.index(defaults["output_mode"]), key=f"cmp_{number}_output_mode", **KEPT)
    return {"window": window, "slide": slide, "session_gap": session_gap, "watermark": watermark, "output_mode": output_mode}


MAX_KEYS_SHOWN = 10
"""Keys the comparison chart draws at first; the busiest ones."""

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
    "output_delay_seconds": st.column_config.TextColumn("output delay"),
    "max_output_delay_seconds": st.column_config.TextColumn("max output delay"),
    "output_delay_batches": st.column_config.NumberColumn("output delay (batches)", format="%.1f"),
    "windows_never_emitted": st.column_config.NumberColumn("never emitted"),
    "mean_batch_duration_ms": st.column_config.NumberColumn("mean batch (ms)", format="%.0f"),
    "batches": st.column_config.NumberColumn("batches"),
}
"""The summary columns shown, in order; window, slide, watermark and output mode are in the label."""


def compare_results(job: Job) -> None:
    """The finished comparison: one summary row per config, the counts side by side, the code of each config."""
    comparison: Comparison = job.result
    no_data = ", ".join(str(int((run.progress["num_input_rows"] == 0).sum())) for run in comparison.runs)
    st.caption(f"{job.inputs.feed}: {len(comparison.runs)} configs in {comparison.wall_seconds:.0f} s "
               f"{'(run concurrently: batch durations are measured while they share the cores)' if comparison.concurrent else ''}. "
               f"Every config replayed under {describe_rule(job.inputs.configs[0].ran_arrival())} (no-data batches, config by config: {no_data}).")
    summary = readable_seconds(comparison.summary(), ["output_delay_seconds", "max_output_delay_seconds"])
    st.dataframe(summary[[name for name in COMPARE_COLUMNS if name in summary.columns]], hide_index=True, column_config=dict(COMPARE_COLUMNS))
    every_key = comparison.keys()
    exact = pd.concat([run.exact for run in comparison.runs])
    volume = exact.assign(key=exact["key"].astype(str)).groupby("key")["count"].sum().sort_values(ascending=False, kind="stable")
    busiest = set(volume.index[:MAX_KEYS_SHOWN])
    default = every_key if len(every_key) <= MAX_KEYS_SHOWN else [key for key in every_key if key in busiest]
    keys = st.multiselect("Keys", every_key, default=default, key="cmp_keys",
                          help=f"The {MAX_KEYS_SHOWN} keys with the most events at first, when there are more")
    st.plotly_chart(comparison_counts(comparison, keys=keys or every_key), key="cmp_chart_counts")
    windows = len({start for run in comparison.runs for start in run.result["window_start"]})
    st.caption(
        "Same event-time axis and the same colour per key in every panel; a legend entry toggles its key everywhere."
        + (f" The latest {MAX_WINDOWS_SHOWN} of {windows:,} windows are shown: drag to pan, double-click for all." if windows > MAX_WINDOWS_SHOWN else "")
    )
    columns = st.columns(len(comparison.runs))
    for number, (column, run) in enumerate(zip(columns, comparison.runs), start=1):
        with column:
            st.markdown(f"**{run.label}**")
            open_in_live(run.config, key=f"cmp_open_live_{number}")
            show_code(run.config, key=f"cmp_code_{number}")


# --- latency: the same pass-through query under several triggers, on records published live ---------------------------

LATENCY_JOB = "exp_latency_job"
LATENCY_TRIGGERS: Mapping[str, str] = {
    "default": "Micro-batch, default trigger", "processing_time": "Micro-batch every 1 second", "real_time": "Real-time mode",
}


@dataclass(frozen=True)
class LatencyInputs:
    source: KafkaSource
    configs: list[QueryConfig]
    rate: int
    seconds: float

    @property
    def recall(self) -> tuple:
        return ("latency", self.source, tuple(self.configs), self.rate, self.seconds)


def latency_inputs(topic: Mapping[str, Any], triggers: Sequence[str], real_time_batch: str, rate: int, seconds: float) -> LatencyInputs:
    """The latency comparison's validated inputs: one pass-through config per trigger on the topic's shape; :class:`InputErrors` naming what does not fit."""
    errors: list[ConfigError] = []
    try:
        source = replace(kafka_source(topic), max_offsets_per_trigger=None)
    except ConfigError as err:
        raise InputErrors([err]) from None
    if not 2 <= len(triggers) <= 3:
        errors.append(ConfigError("triggers", list(triggers), "choose 2 or 3 to compare"))
    intervals = {"default": None, "processing_time": "1 second", "real_time": real_time_batch}
    configs = []
    for trigger in triggers:
        try:
            configs.append(QueryConfig(
                source, aggregation="none", watermark=None, output_mode="update", trigger=cast("TriggerKind", trigger), trigger_interval=intervals[trigger],
            ))
        except ConfigError as err:
            errors.append(err)
    if not 10 <= seconds <= 300:
        errors.append(ConfigError("seconds", seconds, "must be between 10 and 300"))
    if errors:
        raise InputErrors(errors)
    return LatencyInputs(source, configs, int(rate), float(seconds))


def latency_widgets() -> dict[str, Any]:
    """The triggers to compare, the real-time batch length, the rate and how long to publish."""
    triggers = st.multiselect(
        "Triggers", list(LATENCY_TRIGGERS), default=["default", "real_time"], format_func=LATENCY_TRIGGERS.__getitem__, key="cmp_lat_triggers", **KEPT,
    )
    left, middle, right = st.columns(3)
    batch = left.text_input("Real-time batch length", value="10 seconds", key="cmp_lat_batch", **KEPT, help="How often Spark checkpoints in real-time mode (at least 5 seconds)")
    rate = middle.number_input("Records a second", min_value=1, max_value=20_000, value=1_000, step=500, key="cmp_lat_rate", **KEPT)
    seconds = right.number_input("Seconds to publish", min_value=10, max_value=300, value=20, step=10, key="cmp_lat_seconds", **KEPT)
    return {"triggers": triggers, "real_time_batch": batch, "rate": int(rate), "seconds": float(seconds)}


def start_latency(registry: QueryRegistry, inputs: LatencyInputs, key: str = LATENCY_JOB) -> None:
    """Start the latency comparison of ``inputs`` in the background and rerun."""

    def work(job: Job) -> LatencyComparison:
        return compare_latency(registry, inputs.source, inputs.configs, rate=inputs.rate, seconds=inputs.seconds, cancel=job.cancel, report=job.report)

    start_job(key, f"Latency of {len(inputs.configs)} triggers on {inputs.source.topic}", inputs, work, inputs.recall)


def latency_results(job: Job) -> None:
    """Each trigger's latency percentiles, throughput and cores held, and the latency distributions on one axis."""
    comparison: LatencyComparison = job.result
    st.caption(
        f"{comparison.records:,} records published at {comparison.rate:,}/s for {comparison.seconds:g} s into a topic of {comparison.partitions} "
        f"partition(s) made for the comparison; the first {comparison.warm_up:g} s are not counted (the queries were starting). Latency: from each "
        "record's Kafka timestamp to the moment the sink received its row."
    )
    st.dataframe(comparison.summary(), hide_index=True, column_config={
        "label": st.column_config.TextColumn("trigger"), "records": st.column_config.NumberColumn("records", format="%d"),
        **{name: st.column_config.NumberColumn(name.replace("_ms", " (ms)"), format="%.0f") for name in ("p50_ms", "p95_ms", "p99_ms", "max_ms")},
        "rows_per_second": st.column_config.NumberColumn("rows/s", format="%.0f"), "cores_held": st.column_config.TextColumn("cores held"),
    })
    st.plotly_chart(latency_cdf_figure({run.label: comparison.counted(run) for run in comparison.runs}), key="cmp_chart_latency")


def experiment(
    what: str, inputs_of: Callable[[], Any], key: str, button: str, button_key: str, *, ready: bool,
    start: Callable[[Any], None], render: Callable[[Job], None], idle_text: str,
) -> None:
    """One experiment of the page: its inputs (``inputs_of``, which may raise :class:`InputErrors`), its button and its job.

    Refused inputs are listed, naming field and value, and only this experiment is left out: the page's others stay.
    """
    try:
        inputs = inputs_of()
    except InputErrors as err:
        for error in err.errors:
            st.error(f"Cannot run this {what}: {brief(str(error))}")
        return
    job_controls(
        key, button, button_key, ready=ready, start=lambda: start(inputs), render=render, idle_text=idle_text, help_text="Runs in the background",
        recall=inputs.recall,
    )


def slot_columns(count: int, widgets: Callable[[int, Mapping[str, Any]], dict[str, Any]], defaults: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One bordered column per configuration, drawn by ``widgets(number, defaults[number - 1])``; their values, in order."""
    slots = []
    for number, column in enumerate(st.columns(count), start=1):
        with column, st.container(border=True):
            slots.append(widgets(number, defaults[number - 1]))
    return slots


def query_comparison(ready: bool) -> None:
    """The comparison of 2-4 query configurations on one feed, dataset or topic; on a topic, also the latency of triggers."""
    st.caption(
        "Replays the same feed, dataset or topic offsets under each configuration and measures every run against the exact answer for its own "
        "window and slide. Append runs hold only finalized windows: compare them on *completeness (finalized windows)*; "
        "an append run of session windows holds only the sessions it closed (the tuner also counts those still open)."
    )
    feed_column, count_column = st.columns([2, 1])
    with feed_column:
        if st.toggle("A Kafka topic", key="cmp_from_topic", **KEPT, help="Its records from the earliest offsets to those latest when the comparison starts"):
            feed, shape = None, topic_shape("cmp")
        else:
            feed = data_select("cmp_feed")
            shape = data_widgets("cmp", feed)
    with count_column:
        count = st.number_input("Configurations", min_value=2, max_value=4, value=2, step=1, key="cmp_count", **KEPT)
        arrival = arrival_widget("cmp")
    slots = slot_columns(int(count), compare_slot_widgets, SLOT_DEFAULTS)
    experiment(
        "comparison", lambda: compare_inputs(feed, slots, arrival=arrival, **shape), COMPARE_JOB, "Run comparison", "cmp_run", ready=ready,
        start=lambda inputs: start_compare(get_registry(), inputs), render=compare_results,
        idle_text="Set up the configurations and press **Run comparison**.",
    )
    if not st.session_state.get("cmp_from_topic"):
        return
    st.divider()
    st.subheader("Latency: the same query, micro-batches against real-time mode")
    st.caption(
        "Publishes the topic's latest messages again, at a fixed rate, into a topic made for the comparison, and runs the query under each "
        "trigger at once, passing rows through (what real-time mode runs on Spark 4.2): how long after it was produced each record reached the sink."
    )
    chosen = latency_widgets()
    experiment(
        "latency comparison", lambda: latency_inputs(shape["topic"], **chosen), LATENCY_JOB, "Compare latency", "cmp_lat_run",
        ready=ready, start=lambda inputs: start_latency(get_registry(), inputs), render=latency_results,
        idle_text="Choose the triggers and press **Compare latency**.",
    )
