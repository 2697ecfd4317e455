"""The Joins page's parts: the two sides and the join's form, the replay, and what each micro-batch did.

A side is a folder of the samples (the ad feeds, the sample feeds, the sample
datasets) or one of the user's datasets: only names the stores list are ever
opened. Or both sides are Kafka topics, each replayed from its earliest offsets
to those latest when the join runs. The join replays both to their end (:func:`~streaming.engine.join.join.run_join`),
then the page steps through its micro-batches.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from streaming.analysis.join import batch_caption, join_timeline, key_story, key_text, waiting_rows
from streaming.analysis.join_model import joined_completeness, model_join, model_sweep, recommend
from streaming.charts.join import join_activity_figure, join_key_figure, join_tuner_figure, join_watermarks_figure
from streaming.engine.data.datasets import DatasetStore, FileFormat, column_names, detect_format
from streaming.engine.data.feeds import SAMPLE_FEEDS, feed_files
from streaming.engine.durations import format_duration, parse_duration
from streaming.engine.errors import ConfigError, brief, failure_words
from streaming.engine.join.join import (
    JOIN_TYPES,
    POLICIES,
    JoinConfig,
    JoinOutcome,
    JoinSide,
    Side,
    TopicSide,
    bound_ranges,
    join_state,
    run_join,
    side_rows,
    unmatched_side,
)

from .datasets import dataset_store
from .kafka import kafka_source, kafka_widgets
from .shared import KEPT, get_registry, get_spark, show_code

__all__ = [
    "DEFAULT_SIDES", "LIVE_MODE", "REPLAY_MODE", "SideChoice", "config_view", "highlight", "join_form", "join_results", "key_view", "policy_widget", "run_join_form", "shared_columns",
    "side_choices", "side_widgets", "topic_keys", "topic_side_widgets", "type_and_range", "waiting_view", "watermark_widgets",
]

REPLAY_MODE, LIVE_MODE = "Replay two feeds, datasets or topic ranges", "Live: generated or Kafka streams"
"""The Joins page's two modes (its ``join_mode`` radio, which a link can set: ``?join_mode=…``)."""
OUTCOME = "join_outcome"
STATES = "join_states"
DEFAULT_SIDES = ("ad_impressions", "ad_clicks")
TIME_FORMATS = ("auto", "epoch_s", "epoch_ms")
STALE_SECONDS = 12 * 3600
"""A join's kept checkpoint folder older than this is deleted when a join starts: its session has ended."""
DEFAULTS = {"left_watermark": "1 minute", "right_watermark": "30 seconds", "lower": "0 seconds", "upper": "2 minutes", "join_type": "left_outer"}


@dataclass(frozen=True)
class SideChoice:
    """A folder one side of a join can replay: its label in the picker, where it is, its format and columns."""

    label: str
    folder: Path
    file_format: FileFormat
    columns: tuple[str, ...]


def _columns(folder: Path, fmt: FileFormat) -> tuple[str, ...]:
    files = feed_files(folder, fmt)
    if not files:
        return ()
    named = column_names(files[0], fmt)
    if named is not None:
        return tuple(named)
    with files[0].open(encoding="utf-8") as handle:  # JSON lines: the first object's fields
        first = next((line for line in handle if line.strip()), "{}")
    try:
        parsed = json.loads(first)
    except json.JSONDecodeError:
        return ()
    return tuple(parsed) if isinstance(parsed, dict) else ()


def side_choices(store: DatasetStore, samples_root: Path = SAMPLE_FEEDS) -> dict[str, SideChoice]:
    """Label → choice: every folder of data files under the samples folder, then the user's datasets (``name (dataset)``)."""
    folders = [(path.name, path) for path in sorted(Path(samples_root).iterdir()) if path.is_dir()]
    folders += [(f"{name} (dataset)", store.folder(name)) for name in store.names()]
    choices = {}
    for label, folder in folders:
        try:
            fmt = detect_format(folder)
        except ConfigError:
            continue
        columns = _columns(folder, fmt)
        if columns:
            choices[label] = SideChoice(label, folder, fmt, columns)
    return choices


def _time_guess(choice: SideChoice) -> int:
    named = [
        index for index, name in enumerate(choice.columns)
        if "time" in name.lower() or name.lower().endswith("_at") or name.lower() in ("ts", "timestamp", "date")
    ]
    return named[0] if named else 0


def side_widgets(side: str, choices: dict[str, SideChoice], default: str, prefix: str = "join", *, delays: bool = True) -> tuple[SideChoice, str, str, str | None, bool]:
    """One side: its data, event-time column and how its times are written; with ``delays``, also whether it is a static table (the right
    side) and its watermark delay. Keys start ``<prefix>_<side>``. Returns ``(choice, event time, time format, watermark, static)``."""
    labels = list(choices)
    chosen = choices[st.selectbox(f"{side.title()} side", labels, index=labels.index(default) if default in labels else 0, key=f"{prefix}_{side}", **KEPT)]
    event_time = st.selectbox(
        "Event-time column", chosen.columns, index=_time_guess(chosen), key=f"{prefix}_{side}_time_{chosen.label}", **KEPT,
        help="Read as Spark casts text (yyyy-MM-dd HH:mm:ss, ISO 8601) or as a timestamp",
    )
    time_format = st.selectbox(
        "Written as", TIME_FORMATS, key=f"{prefix}_{side}_time_format", **KEPT,
        help="auto: text as Spark casts it, or a timestamp column; epoch_s / epoch_ms: numbers since 1970-01-01 UTC",
    )
    if not delays:
        return chosen, event_time, time_format, None, False
    static = side == "right" and st.checkbox(
        "A static table", key=f"{prefix}_right_static", **KEPT, help="Each micro-batch of the left side joins against the whole table (a stream-static join; Spark reads the files listed at the start)",
    )
    if static:
        with st.expander("The table"):
            st.dataframe(_preview(chosen), hide_index=True)
        return chosen, event_time, time_format, None, True
    return chosen, event_time, time_format, watermark_widgets(side, prefix), False


def watermark_widgets(side: str, prefix: str = "join") -> str | None:
    """Whether ``side`` has a watermark, and its delay as typed (``None``: none); keys ``<prefix>_<side>_use_watermark``, ``…_watermark``."""
    use = st.checkbox("Watermark", value=True, key=f"{prefix}_{side}_use_watermark", **KEPT)
    return st.text_input("Watermark delay", value=DEFAULTS[f"{side}_watermark"], key=f"{prefix}_{side}_watermark", **KEPT) if use else None


def topic_side_widgets(side: str, prefix: str, *, replayed: bool) -> dict[str, Any]:
    """A topic side's settings (:func:`~dashboard.kafka.kafka_widgets`, one topic), keys ``<prefix>_<side>…``; ``replayed``: a range from
    the earliest offsets, with a cap a micro-batch."""
    st.markdown(f"**{side.title()} side: a topic**")
    st.caption("The join reads the event-time column mapped below, and matches on the keys chosen beside; the other roles play no part.")
    return kafka_widgets((), f"{prefix}_{side}", replayed=replayed, patterns=False)


def topic_keys(params: dict[str, dict[str, Any]], prefix: str) -> tuple[str, ...]:
    """The join keys among the value columns both topics have (``params``: each side's :func:`topic_side_widgets`), their event times left out;
    keyed by the two topics, so other topics offer their own keys."""
    names = [[name for name, _ in params[side].get("value_columns", ())] for side in ("left", "right")]
    times = {params[side].get("mapping", {}).get("event_time") for side in ("left", "right")}
    shared = [name for name in names[0] if name in names[1] and name not in times]
    topics = "_".join(str(params[side].get("topic")) for side in ("left", "right"))
    return tuple(st.multiselect("Join keys", shared, default=shared[:1], key=f"{prefix}_on_{topics}", help="Value columns named alike on both topics, equal in a match"))


def shared_columns(left: SideChoice, right: SideChoice, times: tuple[str, str]) -> list[str]:
    """The columns both sides have under the same name, their event-time columns left out: what a join can match on."""
    return [name for name in left.columns if name in right.columns and name not in times]


PREVIEW_ROWS = 20


def _preview(choice: SideChoice) -> pd.DataFrame:
    """The first rows of a side's first file, as they are written."""
    first = feed_files(choice.folder, choice.file_format)[0]
    if choice.file_format == "csv":
        return pd.read_csv(first, nrows=PREVIEW_ROWS, dtype=str)
    if choice.file_format == "json":
        return pd.read_json(first, lines=True, nrows=PREVIEW_ROWS)
    return pd.read_parquet(first).head(PREVIEW_ROWS)


def join_form() -> dict[str, Any]:
    """The join's inputs: both sides (two folders, or two topics' ranges), the keys, the time range, the type and the watermark policy."""
    topics = st.toggle(
        "Two Kafka topics", key="join_from_topics", **KEPT,
        help="Each topic's records from its earliest offsets to those latest when the join runs, at most Max offsets per trigger a micro-batch",
    )
    left_column, right_column, join_column = st.columns(3)
    if topics:
        params, watermarks = {}, {}
        for column, side in ((left_column, "left"), (right_column, "right")):
            with column, st.container(border=True):
                params[side] = topic_side_widgets(side, "join_kafka", replayed=True)
                watermarks[side] = watermark_widgets(side, "join_kafka")
        with join_column, st.container(border=True):
            on = topic_keys(params, "join_kafka")
            join_type, (lower, upper) = type_and_range("join", DEFAULTS)
            policy = policy_widget("join")
        return {
            "topics": params, "watermarks": watermarks, "static": False, "on": on, "join_type": join_type,
            "within": (lower, upper) if lower.strip() or upper.strip() else None, "policy": policy,
        }
    choices = side_choices(dataset_store())
    with left_column, st.container(border=True):
        left, left_time, left_format, left_watermark, _ = side_widgets("left", choices, DEFAULT_SIDES[0])
    with right_column, st.container(border=True):
        right, right_time, right_format, right_watermark, static = side_widgets("right", choices, DEFAULT_SIDES[1])
    with join_column, st.container(border=True):
        shared = shared_columns(left, right, (left_time, right_time))
        keys = st.multiselect("Join keys", shared, default=shared[:1], key=f"join_on_{left.label}_{right.label}", help="Columns named alike on both sides, equal in a match")
        join_type, (lower, upper) = type_and_range("join", DEFAULTS, ranged=not static)  # a table's rows match on the keys alone
        policy = policy_widget("join")
    return {
        "left": (left, left_time, left_format, left_watermark), "right": (right, right_time, right_format, right_watermark), "static": static, "on": tuple(keys), "join_type": join_type,
        "within": (lower, upper) if lower.strip() or upper.strip() else None, "policy": policy,
    }


def type_and_range(prefix: str, defaults: dict[str, str], *, ranged: bool = True) -> tuple[str, tuple[str, str]]:
    """The join type and the time range's two bounds as typed (both empty without ``ranged``), in widgets keyed ``<prefix>_type``,
    ``<prefix>_lower`` and ``<prefix>_upper``, opening on ``defaults`` (``join_type``, ``lower``, ``upper``)."""
    join_type = st.selectbox("Join type", JOIN_TYPES, index=JOIN_TYPES.index(defaults["join_type"]), key=f"{prefix}_type", **KEPT)
    if not ranged:
        return join_type, ("", "")
    lower_column, upper_column = st.columns(2)
    lower = lower_column.text_input(
        "Range from", value=defaults["lower"], key=f"{prefix}_lower", **KEPT, help="The right time is at least the left time plus this (signed)",
    )
    upper = upper_column.text_input(
        "Range to", value=defaults["upper"], key=f"{prefix}_upper", **KEPT, help="The right time is at most the left time plus this (signed)",
    )
    return join_type, (lower, upper)


def policy_widget(prefix: str, default: str = "min") -> str:
    """The watermark policy (``min``/``max``, opening on ``default``), keyed ``<prefix>_policy``."""
    return str(st.radio(
        "Global watermark", POLICIES, index=POLICIES.index(default), horizontal=True, key=f"{prefix}_policy", **KEPT,
        help="min: the slower side's (Spark's default, fewer rows dropped); max: the faster side's (results sooner, more rows of the slower side dropped)",
    ))


def config_view(config: JoinConfig, note: str = "") -> None:
    """The join in one line (with ``note`` after it) and what Spark accepts of it that a user would not expect."""
    st.caption(config.describe() + note)
    for warning in config.warnings():
        st.warning(warning)


def join_config(inputs: dict[str, Any]) -> JoinConfig:
    """The :class:`JoinConfig` of the form; :class:`ConfigError` naming the field. Topics are read from their earliest offsets: the run
    bounds them (:func:`~streaming.engine.join.join.bound_ranges`)."""
    sides: list[Side] = []
    for side in ("left", "right"):
        if "topics" in inputs:
            sides.append(TopicSide(kafka_source(inputs["topics"][side]), inputs["watermarks"][side], side=side))
            continue
        choice, event_time, time_format, watermark = inputs[side]
        sides.append(JoinSide(choice.folder, event_time, watermark, choice.file_format, time_format, side=side, static=side == "right" and inputs["static"]))
    return JoinConfig(sides[0], sides[1], on=inputs["on"], within=inputs["within"], join_type=inputs["join_type"], policy=inputs["policy"])


def run_join_form(inputs: dict[str, Any], ready: bool) -> None:
    """The Run button: replays the join to its end and keeps the outcome for the session; a refusal or a failure shows as a message."""
    try:
        config = join_config(inputs)
    except ConfigError as err:
        st.error(f"Cannot run this join: {brief(str(err))}")
        return
    config_view(config)
    code = st.container()  # drawn once the button is handled: after a run, its code is that run's
    try:
        if st.button("Run join", type="primary", disabled=not ready, key="join_run"):
            _run(config)
    finally:
        with code:
            show_code(_replayed(config), "join_code_download")


def _run(config: JoinConfig) -> None:
    """Replay ``config`` (its topics bounded now) and keep the outcome for the session; a refusal or a failure shows as a message."""
    registry = get_registry()
    _delete_stale(Path(tempfile.gettempdir()), time.time())
    folder = Path(tempfile.mkdtemp(prefix=KEPT_PREFIX))
    try:
        with st.spinner("Replaying both sides through the join…"):
            outcome = run_join(registry.spark, bound_ranges(config), registry.listener, keep=folder)
    except Exception as err:  # noqa: BLE001 - a refusal or a failed query shows as a message, never a traceback
        shutil.rmtree(folder, ignore_errors=True)
        st.error(f"{'Cannot run this join' if isinstance(err, ConfigError) else 'The join failed'}: {failure_words(str(err))}")
        return
    _forget(st.session_state.get(OUTCOME))
    st.session_state[OUTCOME] = outcome
    st.session_state[STATES] = {}
    st.session_state.pop("join_batch", None)


def _replayed(config: JoinConfig) -> JoinConfig:
    """The join Show code exports: once this session ran the form's topics, the ranges that run replayed (the form's topics are
    bounded only when a join runs); else the form's join."""
    outcome: JoinOutcome | None = st.session_state.get(OUTCOME)
    if outcome is None or not all(isinstance(side, TopicSide) for side in outcome.config.sides):
        return config
    unbounded = [replace(side, source=replace(side.source, end_offsets=None)) for side in outcome.config.sides if isinstance(side, TopicSide)]
    return outcome.config if replace(outcome.config, left=unbounded[0], right=unbounded[1]) == config else config


KEPT_PREFIX = "streaming-lab-join-page-"


def _delete_stale(root: Path, now: float) -> None:
    """Delete the kept checkpoint folders of joins under ``root`` older than :data:`STALE_SECONDS` (their sessions have ended)."""
    for folder in root.glob(f"{KEPT_PREFIX}*"):
        try:
            if now - folder.stat().st_mtime > STALE_SECONDS:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            continue


def _forget(outcome: JoinOutcome | None) -> None:
    """Delete the folder an earlier join of this session kept its checkpoint in."""
    if outcome is not None and outcome.checkpoint is not None:
        shutil.rmtree(outcome.checkpoint.parent, ignore_errors=True)


def _state(outcome: JoinOutcome, side: str, batch: int) -> pd.DataFrame:
    """A side's rows in state after ``batch``, read once per session and batch."""
    states = st.session_state.setdefault(STATES, {})
    if (side, batch) not in states:
        states[side, batch] = join_state(get_spark(), outcome, side, batch)
    return states[side, batch]


def waiting_view(outcome: JoinOutcome, timeline: pd.DataFrame, batch: int) -> None:
    """Each side's rows in the join's state after ``batch``, with when each can no longer match and when its NULL row comes."""
    config = outcome.config
    st.markdown(
        f"**Rows waiting in the join's state after micro-batch {batch}.** A row waits while the global watermark is at or before "
        "*matchable until* (a left row's time + the range's end; a right row's time − its start); the first batch running with a later "
        "watermark removes it and, in an outer join, emits its NULL row if it never matched."
    )
    if outcome.checkpoint is None:
        st.caption("This join kept no checkpoint to read its state from.")
        return
    for column, side in zip(st.columns(2), config.sides):
        with column:
            try:
                rows = waiting_rows(config, outcome.with_batches(), timeline, side.side, _state(outcome, side.side, batch), batch)
            except Exception as err:  # noqa: BLE001 - a state that cannot be read shows as a message
                st.error(f"Cannot read the {side.side} side's state: {brief(str(err))}")
                continue
            st.caption(f"{side.label} ({side.side}): {len(rows):,} rows")
            if not rows.empty:
                st.dataframe(rows, hide_index=True, key=f"join_waiting_{side.side}")


def highlight(config: JoinConfig, rows: pd.DataFrame) -> Any:
    sides = unmatched_side(config, rows)
    colors = {"left": "background-color: #fff3cd", "right": "background-color: #d1ecf1", "": ""}
    return rows.style.apply(lambda row: [colors[sides[row.name]]] * len(row), axis=1)


def join_results() -> None:
    """The last join of this session, one micro-batch at a time: its caption, the watermarks, what it emitted and kept, and its rows."""
    outcome: JoinOutcome | None = st.session_state.get(OUTCOME)
    if outcome is None:
        st.info("Choose both sides and press **Run join**.")
        return
    config = outcome.config
    if outcome.emitted is None:  # Spark Connect, whose progress did not account for every row of the memory sink
        st.info("The join's rows are shown whole: Spark's progress did not say which micro-batch wrote each one to the memory sink.")
        st.dataframe(highlight(outcome.config, outcome.result.reset_index(drop=True)), hide_index=True)
        return
    timeline = join_timeline(outcome)
    last = int(timeline["batch_id"].max()) if len(timeline) else 0
    left, right = config.left.label, config.right.label
    st.subheader(f"{len(outcome.result):,} rows over {len(timeline)} micro-batches")
    for label in outcome.unplanned():
        st.warning(
            f"{label} received records while the join replayed it: Spark's available-now replay read those too and cut its micro-batches "
            "differently from the range's plan, which the rows' batches below and the tuner's model follow. Run the join again on a still topic."
        )
    batch = int(st.columns([1, 3])[0].number_input("Micro-batch", min_value=0, max_value=last, value=last, step=1, key="join_batch"))
    st.markdown(batch_caption(outcome.config, timeline, batch))
    charts = st.columns(2)
    charts[0].plotly_chart(join_watermarks_figure(timeline, left, right, config.policy, batch), key="join_watermarks")
    charts[1].plotly_chart(join_activity_figure(timeline, left, right, batch, _side_state(outcome)), key="join_activity")
    if len(timeline):
        step = timeline[timeline["batch_id"] == batch].iloc[0]
        charts[1].caption(
            f"After batch {batch} the join's state held {step.state_rows:,} rows in {step.state_bytes / 1024:,.0f} KiB of the state store's memory"
            + ("; each side's rows in state come from the join model, whose total is Spark's." if not config.static else ".")
        )
    emitted = outcome.emitted_by(batch)
    st.markdown(f"**Rows emitted by micro-batch {batch}** — yellow: rows of {left} without a match; blue: rows of {right} without one.")
    if emitted.empty:
        st.caption("None.")
    else:
        st.dataframe(highlight(outcome.config, emitted.reset_index(drop=True)), hide_index=True)
    if config.static:
        st.caption("A stream-static join keeps no state and has no watermark on its table: each batch's rows join the whole table at once.")
    else:
        waiting_view(outcome, timeline, batch)
        key_view(outcome, timeline)
        tuner_view(outcome)
    with st.expander(f"All {len(outcome.result):,} joined rows"):
        st.dataframe(highlight(outcome.config, outcome.result.reset_index(drop=True)), hide_index=True)


def _side_rows(outcome: JoinOutcome) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sides' input rows with the batch each arrives in, read once per join of the session."""
    rows = st.session_state.setdefault(STATES, {})
    if "rows" not in rows:
        rows["rows"] = tuple(side_rows(get_spark(), side, outcome.plans.get(side.side)) for side in outcome.config.sides)
    return rows["rows"]


def key_view(outcome: JoinOutcome, timeline: pd.DataFrame) -> None:
    """Why the rows of one key were or were not joined: both sides on one time axis, each row's range and what became of it."""
    config = outcome.config
    st.markdown("**Why was a row (not) joined?** Pick a key: its rows of both sides, the times each could match, and what became of each.")
    try:
        left_rows, right_rows = _side_rows(outcome)
    except Exception as err:  # noqa: BLE001 - files that changed since the join ran show as a message
        st.error(f"Cannot read the sides' rows: {brief(str(err))}")
        return
    on = list(config.on)
    keys = sorted({key_text(tuple(values)) for rows in (left_rows, right_rows) for values in rows[on].dropna().itertuples(index=False, name=None)})
    if not keys:
        st.caption("No row has a key.")
        return
    alone = unmatched_side(outcome.config, outcome.result)
    first = outcome.result[alone != ""]
    default = key_text(tuple(first[on].iloc[0])) if len(first) else keys[0]
    key = st.selectbox("Key", keys, index=keys.index(default) if default in keys else 0, key="join_key")
    story = key_story(outcome, timeline, left_rows, right_rows, key)
    st.plotly_chart(join_key_figure(story, config.left.label, config.right.label, key), key="join_key_chart")
    st.dataframe(story[["side", "event_time", "batch", "status", "why"]], hide_index=True, key="join_key_rows")


DELAYS = "0 seconds, 15 seconds, 30 seconds, 1 minute, 2 minutes"
MAX_DELAYS = 8
SWEEP = "join_sweep"


def _delays(text: str, field_name: str) -> list[int]:
    """The delays of a comma-separated list, in ms; :class:`ConfigError` naming ``field_name``."""
    delays = sorted({parse_duration(part.strip(), field=field_name) for part in text.split(",") if part.strip()})
    if not delays or len(delays) > MAX_DELAYS:
        raise ConfigError(field_name, text, f"must list 1 to {MAX_DELAYS} delays, e.g. {DELAYS!r}")
    return delays


def tuner_view(outcome: JoinOutcome) -> None:
    """Tune the join's two delays: the join model's completeness, state and NULL-row wait per pair, a recommendation, and Spark's confirmation of it."""
    config = outcome.config
    left, right = config.left.label, config.right.label
    st.subheader("Tune the two delays")
    st.caption(
        "The join model replays the same micro-batches under every pair of delays in seconds and measures the joined pairs against the exact join "
        "of all rows; it recommends the pair that reaches the target with the smallest state, and Spark confirms it."
    )
    columns = st.columns(3)
    left_text = columns[0].text_input(f"{left} (left) delays", value=DELAYS, key="join_tune_left", **KEPT)
    right_text = columns[1].text_input(f"{right} (right) delays", value=DELAYS, key="join_tune_right", **KEPT)
    target = columns[2].number_input("Completeness target (%)", min_value=50.0, max_value=100.0, value=99.0, step=0.5, key="join_tune_target", **KEPT) / 100
    try:
        left_delays, right_delays = _delays(left_text, "left delays"), _delays(right_text, "right delays")
    except ConfigError as err:
        st.error(f"Cannot sweep these delays: {brief(str(err))}")
        return
    asked = (config, tuple(left_delays), tuple(right_delays))
    if st.button("Sweep these delays", key="join_tune_run"):
        try:
            left_rows, right_rows = _side_rows(outcome)
        except Exception as err:  # noqa: BLE001 - files that changed, or a broker gone since the join ran, show as a message
            st.error(f"Cannot read the sides' rows again: {brief(str(err))}")
            return
        with st.spinner("The join model replays every pair…"):
            sweep = model_sweep(
                left_rows, right_rows, config.left.event_time, config.right.event_time, config.on, config.bounds_ms, config.join_type,
                left_delays, right_delays, config.policy, outcome.data_batches,
            )
        st.session_state[SWEEP] = (asked, sweep)
    swept = st.session_state.get(SWEEP)
    if swept is None or swept[0] != asked:
        return
    sweep = swept[1]
    best = recommend(sweep, target)
    chosen = None if best is None else (int(best["left_delay_ms"]), int(best["right_delay_ms"]))
    st.plotly_chart(join_tuner_figure(sweep, left, right, target, chosen), key="join_tuner_chart")
    if best is None or chosen is None:
        st.warning(f"No pair of these delays finds {target * 100:g}% of the exact join's {int(sweep['exact_pairs'].iloc[0]):,} pairs: try longer delays.")
    else:
        st.markdown(
            f"**Recommended: {left} {format_duration(chosen[0])}, {right} {format_duration(chosen[1])}** (the join model): "
            f"{best['completeness'] * 100:.1f}% of the exact join's {int(best['exact_pairs']):,} pairs, at most {int(best['peak_state_rows']):,} rows in state."
        )
        if st.button("Confirm on Spark", key="join_tune_confirm"):
            _confirm(outcome, chosen, best)
    table = sweep.assign(
        left_delay=[format_duration(int(ms)) for ms in sweep["left_delay_ms"]], right_delay=[format_duration(int(ms)) for ms in sweep["right_delay_ms"]],
        completeness=[f"{share * 100:.1f}%" for share in sweep["completeness"]],
    )[["left_delay", "right_delay", "completeness", "pairs", "dropped", "null_rows", "peak_state_rows", "null_row_wait_batches"]]
    st.dataframe(table, hide_index=True, key="join_tuner_table")


def _confirm(outcome: JoinOutcome, chosen: tuple[int, int], best: pd.Series) -> None:
    """Run the recommended pair on Spark and set its completeness and state beside the model's."""
    config = outcome.config
    sides = [replace(side, watermark=format_duration(delay)) for side, delay in zip(config.sides, chosen)]
    confirmed = replace(config, left=sides[0], right=sides[1])
    registry = get_registry()
    try:
        with st.spinner("Spark replays the recommended pair…"):
            run = run_join(registry.spark, confirmed, registry.listener)
    except Exception as err:  # noqa: BLE001 - a failed confirmation shows as a message
        st.error(f"Spark could not confirm it: {failure_words(str(err))}")
        return
    left_rows, right_rows = _side_rows(outcome)
    found, exact = joined_completeness(run.result, left_rows, right_rows, config.left.event_time, config.right.event_time, config.on, config.bounds_ms)
    peak = max((int(summary["state_rows_total"]) for summary in run.summaries), default=0)
    share = found / exact if exact else 1.0
    st.success(
        f"Spark found {found:,} of the exact join's {exact:,} pairs ({share * 100:.1f}%; the model said {best['completeness'] * 100:.1f}%), "
        f"with at most {peak:,} rows in state (the model said {int(best['peak_state_rows']):,})."
    )


def _side_state(outcome: JoinOutcome) -> list[tuple[int, int]] | None:
    """Each side's rows in the join's state per batch, from the join model (whose total is Spark's); ``None`` where it does not apply."""
    config = outcome.config
    if config.static:
        return None
    cache = st.session_state.setdefault(STATES, {})
    if "side_state" not in cache:
        try:
            left_rows, right_rows = _side_rows(outcome)
        except Exception:  # noqa: BLE001 - without the rows the chart shows the total only
            return None
        model = model_join(
            left_rows, right_rows, config.left.event_time, config.right.event_time, config.on, config.bounds_ms, config.join_type,
            (config.left.watermark_ms, config.right.watermark_ms), config.policy, outcome.data_batches,
        )
        cache["side_state"] = list(model.side_state_rows)
    return cache["side_state"]
