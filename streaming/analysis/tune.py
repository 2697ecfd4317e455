"""Watermark tuning: measure one feed under several watermark delays and weigh completeness against cost.

Where the watermark model covers the query's shape (a count or value
aggregate over fixed windows without deduplication:
:func:`streaming.analysis.model.covers`), :func:`tune` computes every delay
with the model in one pass over the data and then runs the recommended delay
(or, when none reaches the target, the largest) through real Spark once: the
:class:`Confirmation` holds both and whether they agree on completeness,
counted rows and Spark's dropped-row count -- a disagreement is a bug to report,
and the page shows it. :func:`confirm` runs any other delay likewise. The
state memory of the model's points is the bytes per state row Spark measured
on the confirming run, times the model's state rows.

Otherwise (session windows, deduplication, or ``method="spark"``), for each delay :func:`tune` runs the same query -- a windowed count or a value
aggregate of a feed or dataset, by key or global, deduplicated or not, under
the dataset's batching rule -- in update mode on the
shared session with :func:`~streaming.engine.run.runner.run_to_idle` and measures it
with :func:`streaming.analysis.measure.measure`: completeness against the exact
answer, state, and the output delay an append-mode run would have.
Completeness counts rows whatever the aggregate: a value aggregation carries
the count of rows it was computed over. With deduplication it can exceed 1: a
short delay forgets ids sooner, and a duplicate arriving later is counted again.
Session windows run in append mode (Spark allows no update mode for them): the
rows a run kept are those of the sessions it emitted plus those of the
sessions its state still holds at the end, read from the checkpoint with the
State Data Source (:func:`streaming.engine.output.state.open_sessions`); a session
still open never emitted, as an append run would have it.

The recommendation is the smallest delay whose completeness reaches ``target``.

Concurrency: by default the delays run **one after another**. Running them
concurrently (one thread and one query per delay on the shared session,
``concurrent=True``) overlaps the per-batch driver waits of small replays, but
on a 2-core machine the six-delay web_clicks sweep took 133-135 s concurrently
against 117-119 s one after another: the replays compete for the same cores.

Everything except :func:`tune` is a pure function of its arguments.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, cast

import pandas as pd

from ..engine.arrival import ARRIVAL_RULES, DEFAULT_ARRIVAL
from ..engine.data.columns import ColumnMapping
from ..engine.durations import format_duration, parse_duration
from ..engine.errors import ConfigError, InputErrors, attempt
from ..engine.output.progress import progress_frame
from ..engine.query.config import OutputMode, QueryConfig
from ..engine.run.runner import run_to_idle
from ..engine.sources import StreamSource
from .exact import exact_answer
from .measure import OutputDelay, RunMeasures, batch_reporter, measure, run_all
from .model import Timeline, covers, delay_frames, expand, sweep
from .profile import feed_events_of, replayed_topic_events

if TYPE_CHECKING:
    from ..engine.run.runner import Replay

__all__ = [
    "AGREEMENT",
    "DEFAULT_CONCURRENT",
    "Confirmation",
    "TuneMethod",
    "TunePlan",
    "TuneResult",
    "canonical_delays",
    "check_target",
    "confirm",
    "plan_tune",
    "recommend",
    "tune",
    "tune_configs",
    "tuning_output_mode",
]

DEFAULT_CONCURRENT = False
"""Run the delays of a sweep one after another unless told otherwise (see the module docstring)."""
TuneMethod = Literal["auto", "spark"]
"""``auto``: the model with one Spark confirmation where it covers the shape, Spark for every delay elsewhere; ``spark``: Spark for every delay."""
AGREEMENT = ("completeness", "counted", "exact", "rows_dropped_by_watermark")
"""What the model and Spark must agree on for a confirmation to pass."""
SHOWN = (*AGREEMENT, "peak_state_rows", "mean_state_rows", "windows_never_emitted", "output_delay_seconds")

# --------------------------------------------------------------------------- validation


def canonical_delays(delays: Iterable[str]) -> list[str]:
    """``delays`` as canonical duration strings, smallest first, duplicates removed.

    Raises :class:`~streaming.engine.query.config.ConfigError` on the field ``delays`` naming
    the value that is not a duration, or when there is none.
    """
    if isinstance(delays, str):
        raise ConfigError("delays", delays, "must be a list of durations, not one string")
    items = list(delays)
    parsed: dict[int, str] = {}
    for text in items:
        ms = parse_duration(text, field="delays")
        parsed.setdefault(ms, format_duration(ms))
    if not parsed:
        raise ConfigError("delays", items, "must name at least one watermark delay")
    return [parsed[ms] for ms in sorted(parsed)]


def check_target(target: object) -> float:
    """``target`` as a float in ``(0, 1]``, else :class:`~streaming.engine.query.config.ConfigError` on the field ``target``."""
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target <= 1:
        raise ConfigError("target", target, "must be a number greater than 0 and at most 1")
    return float(target)


# --------------------------------------------------------------------------- output delay


def _field(row: object, name: str) -> Any:
    return row[name] if isinstance(row, Mapping) else getattr(row, name)


def recommend(rows: Iterable[object], target: float) -> str | None:
    """The smallest delay whose completeness is at least ``target``, or ``None``.

    ``rows`` are :class:`RunMeasures` objects or mappings with ``delay`` (a
    duration string) and ``completeness``; their order does not matter. NaN
    completeness never qualifies.
    """
    best: tuple[int, str] | None = None
    for row in rows:
        value = _field(row, "completeness")
        if value is None or (isinstance(value, float) and math.isnan(value)) or value < target:
            continue
        delay = _field(row, "delay")
        ms = parse_duration(delay, field="delay")
        if best is None or ms < best[0]:
            best = (ms, format_duration(ms))
    return None if best is None else best[1]


# --------------------------------------------------------------------------- sweep


def tuning_output_mode(session_gap: str | None) -> OutputMode:
    """The mode a sweep runs a query in: update, or append for session windows (``session_gap``; Spark has no update mode for them)."""
    return "update" if session_gap is None else "append"


def tune_configs(query: QueryConfig, delays: Iterable[str]) -> list[QueryConfig]:
    """One config per canonical delay of ``delays``: ``query`` with that watermark, replayed under its arrival rule (:meth:`QueryConfig.replayed`).

    ``query`` gives the feed and the shape (window and slide or session gap,
    key, aggregation, deduplication, batching); its watermark, output mode and
    trigger are the tuner's: update mode, or append for session windows.
    Raises :class:`~streaming.engine.query.config.ConfigError` for a source without
    an end and a pass-through query.
    """
    if not isinstance(query, QueryConfig):
        raise ConfigError("query", query, "is not a QueryConfig")
    replayed = query.replayed("tuned")
    if query.aggregation == "none":
        raise ConfigError("aggregation", "none", "cannot be tuned: a watermark drops rows only for an aggregation")
    return [replace(replayed, watermark=delay, output_mode=tuning_output_mode(query.session_gap)) for delay in canonical_delays(delays)]


@dataclass(frozen=True)
class TunePlan:
    """A sweep's validated inputs, as the tuner page and ``python -m streaming tune`` both make them (:func:`plan_tune`)."""

    query: QueryConfig
    """The shape swept (source, windows, key, aggregate, deduplication, batching); its watermark is the first delay, its output mode the
    tuner's (:func:`tuning_output_mode`)."""
    delays: list[str]
    """The delays swept: canonical, smallest first."""
    target: float

    def config(self, delay: str) -> QueryConfig:
        """The query the sweep runs for ``delay`` (:func:`tune_configs`)."""
        [config] = tune_configs(self.query, [delay])
        return config


def plan_tune(
    source: StreamSource, *, delays: Iterable[str], target: object, window: str = "1 minute", slide: str | None = None, aggregation: str = "count",
    deduplicate: bool = False, session_gap: str | None = None, arrival: str = DEFAULT_ARRIVAL,
) -> TunePlan:
    """The sweep of ``delays`` on ``source`` under the arrival rule ``arrival``: the shape checked the way each delay's query will be built, the delays made canonical and the
    target checked; :class:`~streaming.engine.errors.InputErrors` lists every bad field at once, each named with its value."""
    errors: list[ConfigError] = []
    parsed = attempt(errors, lambda: canonical_delays(delays))
    goal = attempt(errors, lambda: check_target(target))
    query = attempt(
        errors,
        lambda: QueryConfig(
            source, window=window, slide=slide, watermark=(parsed or ["0 seconds"])[0], output_mode=tuning_output_mode(session_gap),  # type: ignore[arg-type]
            aggregation=aggregation, deduplicate=deduplicate, session_gap=session_gap, arrival=arrival,  # type: ignore[arg-type]
        ),
    )
    if query is not None and parsed is not None:
        attempt(errors, lambda: tune_configs(query, parsed))
    if errors or query is None or parsed is None or goal is None:
        raise InputErrors(errors)
    return TunePlan(query, parsed, goal)


def bound_topic(query: QueryConfig) -> QueryConfig:
    """``query`` with its topic bounded at the offsets that are its end now (asked of the brokers), from its earliest; other sources as they are.

    A sweep and its confirmation then replay the same records, whatever arrives meanwhile.
    """
    return replace(query, source=query.source.bounded_now())


@dataclass(frozen=True)
class Confirmation:
    """One delay measured by the model and by a real Spark run, side by side (the fields of :data:`SHOWN`)."""

    delay: str
    model: dict[str, Any]
    spark: dict[str, Any]

    @property
    def agree(self) -> bool:
        """True when the two are equal on every field of :data:`AGREEMENT`."""
        return not self.differences()

    def differences(self) -> list[str]:
        """``"counted: model 3832, Spark 3830"`` for each field of :data:`AGREEMENT` on which they differ."""
        return [f"{name}: model {self.model[name]}, Spark {self.spark[name]}" for name in AGREEMENT if self.model[name] != self.spark[name]]

    def to_json(self) -> dict[str, Any]:
        return {"delay": self.delay, "model": self.model, "spark": self.spark, "agree": self.agree}


@dataclass(frozen=True, eq=False)
class TuneResult:
    """The outcome of a sweep: one :class:`RunMeasures` per delay, smallest delay first."""

    query: QueryConfig
    """The shape swept, as given (its own watermark, output mode and trigger were not used)."""
    target: float
    outcomes: list[RunMeasures]
    recommended: str | None
    concurrent: bool
    wall_seconds: float
    exact: pd.DataFrame = field(repr=False)
    confirmation: Confirmation | None = None
    """The model's answer checked on Spark (``None`` when Spark measured every delay)."""
    model_note: str | None = None
    """Why Spark measured every delay when the model does not cover the shape; ``None`` otherwise."""
    timeline: Any = field(default=None, repr=False)
    """The data as the model read it (:class:`~streaming.analysis.model.Timeline`), for further sweeps such as windows × delays; ``None`` after a Spark sweep."""
    by_rule: dict[str, list[float]] | None = None
    """The model's completeness at each delay (in :attr:`outcomes`' order) under each arrival rule: the two bound what a real stream sees;
    ``None`` after a Spark sweep."""

    @property
    def arrival(self) -> str:
        """The arrival rule the sweep and its recommendation assume (:mod:`streaming.engine.arrival`)."""
        return self.query.ran_arrival()

    @property
    def method(self) -> str:
        return self.outcomes[0].method if self.outcomes else "spark"

    @property
    def feed_dir(self) -> str:
        """The feed or dataset swept, or the topic as ``kafka://HOST:PORT/TOPIC``."""
        return self.query.source.address

    @property
    def window(self) -> str:
        return format_duration(self.query.window_ms)

    @property
    def slide(self) -> str | None:
        return None if self.query.slide is None else format_duration(self.query.slide_ms)

    def frame(self) -> pd.DataFrame:
        """One row per delay with the JSON fields, for tables and charts."""
        return pd.DataFrame([outcome.to_json() for outcome in self.outcomes])

    def to_json(self) -> dict[str, Any]:
        source = self.query.source
        columns = cast(ColumnMapping, source.columns)  # a replayed source's rows are mapped
        return {
            "feed_dir": str(self.feed_dir),
            "window": None if self.query.session_gap_ms is not None else self.window,
            "slide": self.slide,
            "session_gap": None if self.query.session_gap_ms is None else format_duration(self.query.session_gap_ms),
            "aggregation": self.query.aggregation,
            "value": columns.value if self.query.aggregation != "count" else None,
            "key": columns.key,
            "dedup_by": columns.dedup_id if self.query.deduplicate else None,
            "batch_by": source.batch_rule,
            **source.bound_facts(),
            "arrival": self.arrival,
            "target": self.target,
            "delays": [outcome.to_json() for outcome in self.outcomes],
            "completeness_by_rule": self.by_rule,
            "recommended": self.recommended,
            "concurrent": self.concurrent,
            "wall_seconds": self.wall_seconds,
            "method": self.method,
            "confirmation": None if self.confirmation is None else self.confirmation.to_json(),
        }


def _final_table(replay: Replay) -> pd.DataFrame:
    """The run's result table and, for session windows, the sessions its state still holds: every row it kept."""
    if replay.open_sessions is None or not len(replay.open_sessions):
        return replay.result
    still_open = replay.open_sessions.reindex(columns=replay.result.columns)
    return pd.concat([replay.result, still_open], ignore_index=True).sort_values(["window_start", "window_end", "key"], ignore_index=True)


def tune(
    registry,
    query: QueryConfig,
    *,
    delays: list[str],
    target: float = 0.99,
    concurrent: bool | None = None,
    cancel: threading.Event | None = None,
    report: Callable[[str], None] | None = None,
    method: TuneMethod = "auto",
    preview: Callable[[TuneResult], None] | None = None,
) -> TuneResult:
    """Measure ``query``'s feed under each watermark delay (:func:`tuning_output_mode`); see the module docstring.

    ``query`` is the shape to tune (:func:`tune_configs`). Raises
    :class:`~streaming.engine.query.config.ConfigError` naming the field (``delays``,
    ``target``, ``source``, ``aggregation``, ``session_gap``, ``method``) before anything
    runs. ``concurrent=None`` uses :data:`DEFAULT_CONCURRENT` (for Spark runs). ``report`` gets a
    line on what runs now; once ``cancel`` is set the sweep stops within a
    micro-batch and raises :class:`~streaming.engine.errors.Cancelled`. When the
    model answers, ``preview`` gets its result at once, before Spark confirms it
    (no confirmation, no state memory yet); ``report`` then follows the confirmation batch by batch.
    """

    configs = tune_configs(query, delays)
    if not query.source.fixed:
        raise ConfigError("source", query.source.label, "must be bounded: a sweep replays fixed offsets (see bound_topic)")
    canonical = [format_duration(cast(int, config.watermark_ms)) for config in configs]
    goal = check_target(target)
    if method not in ("auto", "spark"):
        raise ConfigError("method", method, "is not one of auto, spark")
    note = covers(configs[0])
    if method == "auto" and note is None:
        return _model_tune(registry, query, configs, canonical, goal, cancel, report, preview)
    mode = DEFAULT_CONCURRENT if concurrent is None else bool(concurrent)
    started = time.monotonic()
    sessions = query.session_gap is not None
    replaying = f"replaying {len(configs)} delays on Spark"

    def progress(done: int, total: int) -> None:
        if report is not None:
            report(f"replayed {done} of {total} delays" + (f"; now {canonical[done]}" if done < total else ""))

    if mode:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tune-exact") as pool:
            exact_future = pool.submit(exact_answer, registry.spark, configs[0])
            replays = run_all(registry, configs, concurrent=True, open_sessions=sessions, cancel=cancel, batches=batch_reporter(report, replaying))
            exact = exact_future.result()
    else:
        if report is not None:
            report("computing the exact answer")
        exact = exact_answer(registry.spark, configs[0])
        replays = run_all(
            registry, configs, concurrent=False, open_sessions=sessions, cancel=cancel, report=progress, batches=batch_reporter(report, replaying),
        )
    wall = time.monotonic() - started
    outcomes = [measure(delay, _final_table(replay), replay.progress, exact) for delay, replay in zip(canonical, replays)]
    return TuneResult(
        query=query,
        target=goal,
        outcomes=outcomes,
        recommended=recommend(outcomes, goal),
        concurrent=mode,
        wall_seconds=round(wall, 3),
        exact=exact,
        model_note=note if method == "auto" else None,
    )


def _model_outcomes(timeline, expansion, canonical: list[str]) -> tuple[list[RunMeasures], pd.DataFrame]:
    """The model's measures of each delay, and the exact answer; state memory 0 until a Spark run says how large a state row is."""

    swept = sweep(timeline, expansion, [parse_duration(delay) for delay in canonical])
    outcomes = []
    exact = pd.DataFrame()
    for delay, row in zip(canonical, swept.itertuples(index=False)):
        result, exact, per_window, emissions = delay_frames(timeline, expansion, parse_duration(delay))
        outcomes.append(
            RunMeasures(
                delay=delay, completeness=row.completeness, counted=row.counted, exact=row.exact,
                rows_dropped_by_watermark=row.dropped_groups, lost_pairs=row.lost_pairs,
                peak_state_rows=row.peak_state_rows, mean_state_rows=row.mean_state_rows,
                peak_state_memory_bytes=0, mean_state_memory_bytes=0.0,
                output_delay=OutputDelay(
                    row.output_delay_seconds, row.max_output_delay_seconds, row.output_delay_batches, row.max_output_delay_batches,
                    row.windows_emitted, row.windows_never_emitted,
                ),
                windows_lost=row.windows_lost, mean_batch_duration_ms=0.0, batches=row.batches,
                per_window=per_window, emissions=emissions, result=result, progress=progress_frame([]), method="model",
            )
        )
    return outcomes, exact


def _shown(outcome: RunMeasures) -> dict[str, Any]:
    values = outcome.to_json()
    return {name: values[name] for name in SHOWN}


def confirm(
    registry, result: TuneResult, delay: str, *, cancel: threading.Event | None = None, report: Callable[[str], None] | None = None,
) -> Confirmation:
    """Run ``result``'s query with watermark ``delay`` (one of its delays) through Spark and hold it next to the model's answer; ``report`` follows it batch by batch."""
    delays = [outcome.delay for outcome in result.outcomes]
    canonical = canonical_delays([delay])[0]
    if canonical not in delays:
        raise ConfigError("delay", delay, f"is not one of the sweep's delays ({', '.join(map(str, delays))})")
    spark = _on_spark(registry, result.query, canonical, result.exact, cancel, report)
    return Confirmation(canonical, _shown(result.outcomes[delays.index(canonical)]), _shown(spark))


def _on_spark(
    registry, query: QueryConfig, delay: str, exact: pd.DataFrame, cancel: threading.Event | None, report: Callable[[str], None] | None = None,
) -> RunMeasures:
    """``query`` replayed through Spark under watermark ``delay`` and measured against ``exact``; ``report`` follows it batch by batch (:func:`~streaming.analysis.measure.replay_status`)."""

    [config] = tune_configs(query, [delay])
    replay = run_to_idle(registry, config, cancel=cancel, progress=batch_reporter(report, f"confirming {delay} on Spark"))
    return measure(delay, replay.result, replay.progress, exact)


def _timeline(spark, query: QueryConfig):
    """The data as the model reads it under the query's arrival rule (busy: a catch-up replay): a feed's batches, or the batches Spark's
    Kafka source cuts a topic's fixed offsets into."""

    source = query.source
    busy = query.ran_arrival() == "busy"
    topic, feed = source.as_topic, source.as_feed
    if topic is not None:
        events, batches = replayed_topic_events(spark, topic)
        return Timeline.of(events, batches, catch_up=busy)
    assert feed is not None  # the model covers files and a topic's offsets only (covers)
    events = feed_events_of(spark, feed)
    return Timeline.of(events, len(feed.files()) if feed.batching.by == "file" else None, catch_up=busy)


def _model_tune(
    registry, query: QueryConfig, configs: list[QueryConfig], canonical: list[str], goal: float,
    cancel: threading.Event | None, report: Callable[[str], None] | None, preview: Callable[[TuneResult], None] | None = None,
) -> TuneResult:
    """The model's sweep over every delay, confirmed on Spark at the recommended delay (or the largest); the state memory from Spark's bytes per state row."""

    started = time.monotonic()
    if report is not None:
        report("reading the data")
    timeline = _timeline(registry.spark, configs[0])
    expansion = expand(timeline, configs[0].window_ms, configs[0].slide_ms)
    outcomes, exact = _model_outcomes(timeline, expansion, canonical)
    by_rule = rule_bounds(timeline, configs[0], canonical)
    recommended = recommend(outcomes, goal)
    checked = recommended or canonical[-1]
    if report is not None:
        report(f"model: {len(canonical)} delays computed; confirming {checked} on Spark")
    if preview is not None:
        preview(TuneResult(
            query=query, target=goal, outcomes=outcomes, recommended=recommended, concurrent=False,
            wall_seconds=round(time.monotonic() - started, 3), exact=exact, timeline=timeline, by_rule=by_rule,
        ))
    spark = _on_spark(registry, query, checked, exact, cancel, report)
    per_row = spark.peak_state_memory_bytes / spark.peak_state_rows if spark.peak_state_rows else 0.0
    outcomes = [
        replace(outcome, peak_state_memory_bytes=round(outcome.peak_state_rows * per_row), mean_state_memory_bytes=outcome.mean_state_rows * per_row)
        for outcome in outcomes
    ]
    confirmation = Confirmation(checked, _shown(outcomes[canonical.index(checked)]), _shown(spark))
    return TuneResult(
        query=query, target=goal, outcomes=outcomes, recommended=recommended, concurrent=False,
        wall_seconds=round(time.monotonic() - started, 3), exact=exact, confirmation=confirmation, timeline=timeline, by_rule=by_rule,
    )


def rule_bounds(timeline, query: QueryConfig, canonical: list[str]) -> dict[str, list[float]]:
    """The model's completeness at each of ``canonical``'s delays under each arrival rule, ``timeline`` read under the query's own.

    The same batches, with and without a no-data batch between them: what a quiet stream and a busy one would each see.
    """
    rules = {}
    for rule in ARRIVAL_RULES:
        shaped = replace(timeline, catch_up=rule == "busy")
        swept = sweep(shaped, expand(shaped, query.window_ms, query.slide_ms), [parse_duration(delay) for delay in canonical])
        rules[rule] = [float(value) for value in swept["completeness"]]
    return rules

