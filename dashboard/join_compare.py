"""Parts of the Compare page for joins: 2-4 join configurations over the same two sides, checked before Spark sees them, and their results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from streaming.analysis.join_compare import JoinComparison, compare_joins, join_label
from streaming.charts.join import join_comparison_figure
from streaming.engine.errors import ConfigError
from streaming.engine.join.join import JoinConfig, JoinSide
from streaming.engine.run.registry import QueryRegistry

from .compare import experiment, slot_columns
from .datasets import dataset_store
from .jobs import Job, start_job
from .joins import DEFAULT_SIDES, SideChoice, config_view, policy_widget, shared_columns, side_choices, side_widgets, type_and_range
from .shared import KEPT, InputErrors, get_registry, show_code

__all__ = [
    "JOIN_COMPARE_JOB", "JOIN_SLOT_DEFAULTS", "JoinCompareInputs", "join_compare_inputs", "join_compare_results", "join_comparison", "join_sides_widgets",
    "join_slot_widgets", "start_join_compare",
]

JOIN_COMPARE_JOB = "exp_join_compare_job"

JOIN_SLOT_DEFAULTS: tuple[dict[str, str], ...] = (
    {"join_type": "left_outer", "lower": "0 seconds", "upper": "2 minutes", "left_watermark": "1 minute", "right_watermark": "30 seconds", "policy": "min"},
    {"join_type": "left_outer", "lower": "0 seconds", "upper": "2 minutes", "left_watermark": "1 minute", "right_watermark": "30 seconds", "policy": "max"},
    {"join_type": "left_outer", "lower": "0 seconds", "upper": "2 minutes", "left_watermark": "10 seconds", "right_watermark": "10 seconds", "policy": "min"},
    {"join_type": "inner", "lower": "0 seconds", "upper": "2 minutes", "left_watermark": "5 minutes", "right_watermark": "5 minutes", "policy": "min"},
)
"""The slots' first values, for the ad feeds: Spark's default policy, the other one, short delays, an inner join with long ones."""


@dataclass(frozen=True)
class JoinCompareInputs:
    configs: list[JoinConfig]
    labels: list[str]

    @property
    def recall(self) -> tuple:
        """What identifies this comparison for a reloaded page: the page and the configurations."""
        return ("compare-joins", tuple(self.configs), tuple(self.labels))


def join_sides_widgets() -> dict[str, Any]:
    """The two sides every configuration replays (data, event-time column, how times are written) and the keys they join on."""
    choices = side_choices(dataset_store())
    left_column, right_column, keys_column = st.columns(3)
    with left_column, st.container(border=True):
        left = side_widgets("left", choices, DEFAULT_SIDES[0], "cmpj", delays=False)
    with right_column, st.container(border=True):
        right = side_widgets("right", choices, DEFAULT_SIDES[1], "cmpj", delays=False)
    with keys_column, st.container(border=True):
        shared = shared_columns(left[0], right[0], (left[1], right[1]))
        on = st.multiselect(
            "Join keys", shared, default=shared[:1], key=f"cmpj_on_{left[0].label}_{right[0].label}", help="Columns named alike on both sides, equal in a match",
        )
    return {"left": left[:3], "right": right[:3], "on": tuple(on)}


def join_slot_widgets(number: int, defaults: Mapping[str, str]) -> dict[str, Any]:
    """One configuration: join type, time range, each side's watermark delay (empty: none) and the policy; keys start ``cmpj_{number}_``."""
    st.markdown(f"**Config {number}**")
    prefix = f"cmpj_{number}"
    join_type, (lower, upper) = type_and_range(prefix, dict(defaults))
    delays = st.columns(2)
    watermarks = {
        side: column.text_input(f"{side.title()} delay", value=defaults[f"{side}_watermark"], key=f"{prefix}_{side}_watermark", **KEPT,
                                help="The side's watermark delay; empty: no watermark on this side")
        for column, side in zip(delays, ("left", "right"))
    }
    return {"join_type": join_type, "within": (lower, upper) if lower.strip() or upper.strip() else None, "watermarks": watermarks, "policy": policy_widget(prefix, defaults["policy"])}


def join_compare_inputs(sides: Mapping[str, Any], slots: Sequence[Mapping[str, Any]]) -> JoinCompareInputs:
    """One :class:`JoinConfig` per slot over ``sides``; :class:`InputErrors` lists every bad slot as ``Config N: field: 'value' ...``."""
    errors: list[ConfigError] = []
    configs: list[JoinConfig] = []
    for number, slot in enumerate(slots, start=1):
        try:
            made = []
            for side in ("left", "right"):
                choice, event_time, time_format = sides[side]
                assert isinstance(choice, SideChoice)
                delay = slot["watermarks"][side].strip() or None
                made.append(JoinSide(choice.folder, event_time, delay, choice.file_format, time_format, side=side))
            configs.append(JoinConfig(made[0], made[1], on=sides["on"], within=slot["within"], join_type=slot["join_type"], policy=slot["policy"]))
        except ConfigError as err:
            errors.append(ConfigError(f"Config {number}: {err.field}", err.value, err.reason))
    if errors:
        raise InputErrors(errors)
    return JoinCompareInputs(configs, [f"{number}: {join_label(config)}" for number, config in enumerate(configs, start=1)])


def start_join_compare(registry: QueryRegistry, inputs: JoinCompareInputs, key: str = JOIN_COMPARE_JOB) -> None:
    """Start the comparison of ``inputs`` on ``registry`` in the background (job in ``st.session_state[key]``) and rerun."""

    def work(job: Job) -> JoinComparison:
        return compare_joins(registry.spark, inputs.configs, registry.listener, labels=inputs.labels, cancel=job.cancel, report=job.report)

    first = inputs.configs[0]
    start_job(key, f"Comparison of {len(inputs.configs)} joins of {first.left.label} and {first.right.label}", inputs, work, inputs.recall)


JOIN_COMPARE_COLUMNS: Mapping[str, Any] = {
    "label": st.column_config.TextColumn("config"),
    "completeness": st.column_config.NumberColumn("completeness", format="percent", help="The exact join's pairs the run emitted (a left semi join: its left rows)"),
    "pairs": st.column_config.NumberColumn("pairs found"),
    "exact_pairs": st.column_config.NumberColumn("exact pairs", help="The batch join of all rows, for this config's keys and range"),
    "null_rows": st.column_config.NumberColumn("rows with NULLs"),
    "null_row_wait_batches": st.column_config.NumberColumn("NULL row wait (batches)", format="%.1f",
                                                           help="Micro-batches from a row's arrival to its NULL row, on average: an outer join's output delay"),
    "rows_dropped_by_watermark": st.column_config.NumberColumn("dropped (Spark)"),
    "peak_state_rows": st.column_config.NumberColumn("peak state rows"),
    "final_state_rows": st.column_config.NumberColumn("state rows at the end"),
    "final_watermark": st.column_config.DatetimeColumn("final watermark"),
    "batches": st.column_config.NumberColumn("batches"),
}


def join_compare_results(job: Job) -> None:
    """The finished comparison: one summary row per config, the watermark, rows emitted and state side by side, each config's warnings and code."""
    comparison: JoinComparison = job.result
    first = comparison.runs[0].config
    st.caption(f"{first.left.label} joined with {first.right.label} on {', '.join(first.on)}: {len(comparison.runs)} configs in {comparison.wall_seconds:.0f} s")
    st.dataframe(comparison.summary(), hide_index=True, column_config=dict(JOIN_COMPARE_COLUMNS), key="cmpj_summary")
    st.plotly_chart(join_comparison_figure({run.label: run.timeline for run in comparison.runs}), key="cmpj_chart")
    for number, (column, run) in enumerate(zip(st.columns(len(comparison.runs)), comparison.runs), start=1):
        with column:
            st.markdown(f"**{run.label}**")
            config_view(run.config)
            show_code(run.config, key=f"cmpj_code_{number}")


def join_comparison(ready: bool) -> None:
    """The comparison of 2-4 joins of the same two sides: the sides and keys, one column per configuration, the run and its results."""
    st.caption(
        "Replays the same two sides under each join configuration and measures every run against the exact (batch) join of all rows for its own "
        "keys and time range: the pairs it found, its rows with NULLs and how long they waited, what it dropped and the state it kept."
    )
    sides = join_sides_widgets()
    count = st.number_input("Configurations", min_value=2, max_value=4, value=2, step=1, key="cmpj_count", **KEPT)
    slots = slot_columns(int(count), join_slot_widgets, JOIN_SLOT_DEFAULTS)
    experiment(
        "join comparison", lambda: join_compare_inputs(sides, slots), JOIN_COMPARE_JOB, "Run comparison", "cmpj_run", ready=ready,
        start=lambda inputs: start_join_compare(get_registry(), inputs), render=join_compare_results,
        idle_text="Set up the joins and press **Run comparison**.",
    )
