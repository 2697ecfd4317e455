"""Side-by-side comparison: 2–4 query configurations replayed on the same feed.

:func:`compare` runs every config to idle on the shared session (one after
another by default, as :func:`streaming.analysis.tune.tune` does) and returns, per config, the
final result table, the progress frame and one summary row measured exactly as
a watermark sweep measures a delay (:func:`streaming.analysis.measure.measure`).

Completeness of append and complete runs. Every summary row measures
``completeness`` from the run's own final result table: the sum of its counts ÷
the sum of the exact answer (``exact_answer`` with the config's own window and
slide, aggregation and deduplication). That is what a consumer of the sink actually holds. For an update run
it is the project's definition. A complete run keeps every window and, since
complete mode never drops late rows, scores 1. An **append** run's table only
holds the windows the watermark finalized, so windows still open when the feed
ends count as missing: its ``completeness`` mixes "lost to the watermark" with
"not emitted yet". To separate the two, every row also carries
``completeness_finalized``: the same ratio over only the windows that end at
or before the run's final watermark, the windows append mode has emitted. For
an append run that is exactly what it lost to lateness, and it is comparable
across output modes.

``output delay`` is the append-mode emission delay derived from the run's
watermark trajectory (see :mod:`streaming.analysis.tune`); ``drops`` is Spark's
``rows_dropped_by_watermark`` summed over batches.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..engine.durations import format_duration
from ..engine.errors import ConfigError
from ..engine.query.config import INTERVAL_TRIGGERS, QueryConfig
from ..engine.sources import StreamSource
from .exact import exact_answer
from .measure import RunMeasures, batch_reporter, finalized_completeness, measure, run_all
from .tune import DEFAULT_CONCURRENT, tuning_output_mode

__all__ = [
    "MAX_CONFIGS",
    "MIN_CONFIGS",
    "SUMMARY_COLUMNS",
    "ComparedRun",
    "Comparison",
    "compare",
    "config_label",
    "time_range",
]

MIN_CONFIGS = 2
MAX_CONFIGS = 4

SUMMARY_COLUMNS = [
    "label",
    "output_mode",
    "window",
    "slide",
    "watermark",
    "completeness",
    "completeness_finalized",
    "counted",
    "exact",
    "rows_dropped_by_watermark",
    "lost_pairs",
    "peak_state_rows",
    "output_delay_seconds",
    "max_output_delay_seconds",
    "output_delay_batches",
    "windows_never_emitted",
    "mean_batch_duration_ms",
    "batches",
]


def config_label(config: QueryConfig) -> str:
    """A short label: ``"update · 10 minutes/5 minutes · wm 10 minutes"`` (tumbling shows the window alone; a value aggregate and dedup are added)."""
    window = format_duration(config.window_ms)
    if config.slide is not None:
        window += f"/{format_duration(config.slide_ms)}"
    if config.session_gap_ms is not None:
        window = f"session {format_duration(config.session_gap_ms)}"
    watermark = "no wm" if config.watermark_ms is None else f"wm {format_duration(config.watermark_ms)}"
    parts = [config.output_mode, window, watermark]
    if config.aggregation != "count":
        parts.append(config.measure)
    if config.deduplicate:
        parts.append("dedup")
    return " · ".join(parts)


def time_range(frames: Sequence[pd.DataFrame]) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The union ``(earliest window_start, latest window_end)`` over ``frames``; ``None`` when all are empty."""
    starts = [frame["window_start"].min() for frame in frames if len(frame)]
    ends = [frame["window_end"].max() for frame in frames if len(frame)]
    if not starts:
        return None
    return pd.Timestamp(min(starts)), pd.Timestamp(max(ends))


@dataclass(frozen=True, eq=False)
class ComparedRun:
    """One config's run: result table, progress frame, exact answer and summary row."""

    label: str
    config: QueryConfig
    outcome: RunMeasures = field(repr=False)
    exact: pd.DataFrame = field(repr=False)
    completeness_finalized: float

    @property
    def result(self) -> pd.DataFrame:
        return self.outcome.result

    @property
    def progress(self) -> pd.DataFrame:
        return self.outcome.progress

    @property
    def summary(self) -> dict[str, Any]:
        row = self.outcome.to_json()
        config = self.config
        return {
            "label": self.label,
            "output_mode": config.output_mode,
            "window": format_duration(config.window_ms),
            "slide": None if config.slide is None else format_duration(config.slide_ms),
            "watermark": None if config.watermark_ms is None else format_duration(config.watermark_ms),
            "completeness": row["completeness"],
            "completeness_finalized": None if pd.isna(self.completeness_finalized) else self.completeness_finalized,
            **{name: row[name] for name in SUMMARY_COLUMNS if name in row and name != "completeness"},
        }


@dataclass(frozen=True, eq=False)
class Comparison:
    """The runs of :func:`compare`, in the order of the configs given."""

    feed_dir: Path | str
    """The feed or dataset compared, or the topic as ``kafka://HOST:PORT/TOPIC``."""
    runs: list[ComparedRun]
    concurrent: bool
    wall_seconds: float

    @property
    def labels(self) -> list[str]:
        return [run.label for run in self.runs]

    def summary(self) -> pd.DataFrame:
        """One row per config, columns :data:`SUMMARY_COLUMNS`."""
        return pd.DataFrame([run.summary for run in self.runs], columns=SUMMARY_COLUMNS)

    def time_range(self) -> tuple[pd.Timestamp, pd.Timestamp] | None:
        """The union of every run's (and every exact answer's) window span, for aligned x axes."""
        return time_range([run.result for run in self.runs] + [run.exact for run in self.runs])

    def keys(self) -> list[str]:
        """Every key seen by any run or exact answer, sorted."""
        keys: set[str] = set()
        for run in self.runs:
            keys.update(run.result["key"].astype(str))
            keys.update(run.exact["key"].astype(str))
        return sorted(keys)

    def to_json(self) -> dict[str, Any]:
        return {
            "feed_dir": str(self.feed_dir),
            "runs": [run.summary for run in self.runs],
            "concurrent": self.concurrent,
            "wall_seconds": self.wall_seconds,
        }


def _checked(feed: Path | str, configs: Sequence[QueryConfig]) -> list[QueryConfig]:
    if isinstance(configs, QueryConfig) or not isinstance(configs, Sequence):
        raise ConfigError("configs", configs, f"must be a list of {MIN_CONFIGS} to {MAX_CONFIGS} QueryConfig objects")
    if not MIN_CONFIGS <= len(configs) <= MAX_CONFIGS:
        raise ConfigError("configs", len(configs), f"given; compare needs {MIN_CONFIGS} to {MAX_CONFIGS} configurations")
    checked = []
    for index, config in enumerate(configs):
        where = f"configs[{index}]"
        if not isinstance(config, QueryConfig):
            raise ConfigError(where, config, "is not a QueryConfig")
        if config.aggregation == "none":
            raise ConfigError(f"{where}.aggregation", config.aggregation, "cannot be compared: compare measures aggregations")
        if config.trigger in INTERVAL_TRIGGERS:
            raise ConfigError(f"{where}.trigger", config.trigger, "cannot be compared: compare replays with the default trigger")
        source = config.source
        try:  # every config replays the same data (a paced feed stepped, a topic from its earliest offsets) under its arrival rule
            replayed = config.replayed("compared")
        except ConfigError as err:
            raise ConfigError(f"{where}.{err.field}", err.value, err.reason) from None
        if not source.fixed or source.bound_facts() != configs[0].source.bound_facts():
            raise ConfigError(f"{where}.source", source.label, "must be bounded where every config's is: a comparison replays fixed data")
        if not _same_place(source, feed):
            raise ConfigError(f"{where}.{source.address_field}", source.address, f"is not the compared data {str(feed)!r}")
        checked.append(replayed)
    return checked


def _same_place(source: StreamSource, feed: Path | str) -> bool:
    if source.address == str(feed):
        return True
    return not source.replays_offsets and Path(source.address).resolve() == Path(feed).resolve()


def _unique_labels(configs: Sequence[QueryConfig], labels: Sequence[str] | None) -> list[str]:
    if labels is not None:
        if len(labels) != len(configs):
            raise ConfigError("labels", list(labels), f"are {len(labels)} for {len(configs)} configs")
        if len(set(labels)) != len(labels):
            raise ConfigError("labels", list(labels), "must be different from each other")
        return list(labels)
    out: list[str] = []
    for config in configs:
        label = config_label(config)
        candidate, number = label, 2
        while candidate in out:
            candidate, number = f"{label} #{number}", number + 1
        out.append(candidate)
    return out


def _exact_shape(config: QueryConfig) -> QueryConfig:
    """``config`` with what the exact answer does not depend on (how durations are written, watermark, output mode, trigger, arrival rule) set alike."""
    return config.with_changes(
        window=format_duration(config.window_ms),
        slide=None if config.slide is None else format_duration(config.slide_ms),
        session_gap=None if config.session_gap_ms is None else format_duration(config.session_gap_ms),
        watermark="0 seconds", output_mode=tuning_output_mode(config.session_gap), trigger="default", trigger_interval=None, arrival="quiet",
    )


def compare(
    registry,
    feed_dir: Path | str,
    configs: list[QueryConfig],
    *,
    labels: list[str] | None = None,
    concurrent: bool | None = None,
    cancel: threading.Event | None = None,
    report: Callable[[str], None] | None = None,
) -> Comparison:
    """Run 2–4 ``configs`` on ``feed_dir`` and measure each against the exact answer for its own window and slide.

    Each config's source must be ``FeedSource(feed_dir, ...)`` (build it with
    ``seconds_per_file=0``; a paced one is replayed stepped anyway), or the
    topic ``feed_dir`` names (its ``address``, ``kafka://HOST:PORT/TOPIC``) bounded at the same end offsets
    in every config (:func:`~streaming.analysis.tune.bound_topic`): each replays
    those offsets from the earliest under the available-now trigger. Raises
    ``ValueError`` naming ``configs`` (or ``configs[i]...``, ``labels``) before
    anything runs. ``concurrent=None`` uses :data:`streaming.analysis.tune.DEFAULT_CONCURRENT`.
    ``report`` and ``cancel`` work as in :func:`streaming.analysis.tune.tune`.
    """

    feed = feed_dir if isinstance(feed_dir, str) and feed_dir.startswith("kafka://") else Path(feed_dir)
    checked = _checked(feed, configs)
    names = _unique_labels(checked, labels)
    mode = DEFAULT_CONCURRENT if concurrent is None else bool(concurrent)
    started = time.monotonic()
    exacts: dict[QueryConfig, pd.DataFrame] = {}
    for config in checked:
        shape = _exact_shape(config)
        if shape not in exacts:
            exacts[shape] = exact_answer(registry.spark, shape)
    def progress(done: int, total: int) -> None:
        if report is not None:
            report(f"replayed {done} of {total} configurations" + (f"; now {names[done]}" if done < total else ""))

    replays = run_all(
        registry, checked, concurrent=mode, cancel=cancel, report=progress, batches=batch_reporter(report, f"replaying {len(checked)} configurations on Spark"),
    )
    wall = time.monotonic() - started
    runs = []
    for label, config, replay in zip(names, checked, replays):
        exact = exacts[_exact_shape(config)]
        watermark = None if config.watermark_ms is None else format_duration(config.watermark_ms)
        outcome = measure(watermark, replay.result, replay.progress, exact)
        final = pd.to_datetime(replay.progress["watermark"]).dropna().max() if len(replay.progress) else pd.NaT
        runs.append(ComparedRun(label, config, outcome, exact, finalized_completeness(replay.result, exact, final)))
    return Comparison(feed, runs, mode, round(wall, 3))
