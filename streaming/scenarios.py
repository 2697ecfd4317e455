"""Guided scenarios: a bundled feed, a query preset and what to look at, step by step.

Each :class:`Scenario` is stepped through one micro-batch at a time
(:class:`~streaming.engine.run.walkthrough.Walkthrough`); the captions are made
from what Spark did (:mod:`streaming.analysis.explain`), the notes here only
say where to look. A scenario with two presets runs both side by side on the
same feed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine.data.datasets import FileFormat
from .engine.data.feeds import SAMPLE_FEEDS
from .engine.errors import ConfigError
from .engine.query.config import FEED_COLUMNS, ColumnMapping, FeedSource, QueryConfig
from .engine.sources import KafkaSource

__all__ = ["SCENARIOS", "Scenario"]

SCENARIO_FEEDS = SAMPLE_FEEDS / "scenarios"
"""Feeds written by hand for one scenario each; not listed among the sample feeds."""


@dataclass(frozen=True)
class Scenario:
    """A feed replayed one file per micro-batch under one or two presets, with a note per data step (the file handed over, from 0)."""

    name: str
    title: str
    summary: str
    feed: Path | None
    presets: tuple[dict[str, Any], ...]
    """The query settings of each run (:class:`~streaming.engine.query.config.QueryConfig`'s keyword arguments, the source left out)."""
    notes: dict[int, str] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    """What each preset shows, when there are two side by side."""
    columns: ColumnMapping = FEED_COLUMNS
    """The feed's columns (default: the sample feeds' ``event_time``, ``key``)."""
    file_format: FileFormat = "csv"
    source: FeedSource | KafkaSource | None = None
    """A replayed source given whole (a dataset with its batching rule, a topic's range); ``feed``, ``columns`` and ``file_format`` are then its own."""

    def __post_init__(self) -> None:
        if (self.feed is None) == (self.source is None):
            raise ConfigError("feed", self.feed, "and source: give exactly one of the two")
        if not self.name.isidentifier():
            raise ConfigError("name", self.name, "must be letters, digits and underscores")
        if not 1 <= len(self.presets) <= 2:
            raise ConfigError("presets", len(self.presets), "must be one or two (side by side)")
        if len(self.presets) > 1 and len(self.labels) != len(self.presets):
            raise ConfigError("labels", self.labels, "must name each preset shown side by side")

    def configs(self) -> list[QueryConfig]:
        """The query of each preset on the scenario's feed (one file per micro-batch) or topic (one planned batch of records per micro-batch)."""
        source = self.source
        if source is None:
            assert self.feed is not None  # __post_init__: one of the two is given
            source = FeedSource(self.feed, seconds_per_file=0, file_format=self.file_format, columns=self.columns)
        return [QueryConfig(source, **preset) for preset in self.presets]

    @classmethod
    def of(cls, source: FeedSource | KafkaSource, preset: dict[str, Any], title: str) -> Scenario:
        """A scenario of the user's own: ``source`` (files stepped one a micro-batch, or a topic's range) under one ``preset``, with no notes.

        :class:`ConfigError` naming the field for a topic a walkthrough cannot step through (:meth:`~streaming.engine.sources.kafka.KafkaSource.steppable`).
        """
        return cls("own", title, "Your data, one micro-batch at a time.", None, (preset,), source=source.steppable())

    def note(self, step: int) -> str | None:
        """What to look at once ``step`` steps (files) have been handed over (``0``: before the first)."""
        return self.notes.get(step)


GUIDE = SAMPLE_FEEDS / "guide_words"
GUIDE_QUERY = {"window": "10 minutes", "slide": "5 minutes", "watermark": "10 minutes"}

SCENARIOS: dict[str, Scenario] = {
    scenario.name: scenario
    for scenario in (
        Scenario(
            "word_count", "The guide's word count",
            "Words counted as they arrive, in complete mode: every batch writes the whole result table again. "
            "One window spans the day, so the counts are the guide's running word count.",
            GUIDE, ({"window": "1 day", "watermark": None, "output_mode": "complete"},),
            {
                0: "Press Next batch: the first file brings two words.",
                1: "Complete mode emits every row each batch, changed or not.",
                3: "A row updates as its word comes again.",
            },
        ),
        Scenario(
            "late_data", "Late data: update and append side by side",
            "The guide's watermark example: 10-minute windows sliding every 5 minutes and a 10-minute watermark, "
            "in update mode (left) and append mode (right).",
            GUIDE, ({**GUIDE_QUERY, "output_mode": "update"}, {**GUIDE_QUERY, "output_mode": "append"}),
            {
                0: "Nothing has arrived. Press Next batch.",
                1: "Update mode shows counts at once; append mode waits for the watermark.",
                2: "The 12:09 cat comes with the 12:14 dog, behind it but ahead of the watermark (11:58): it is counted. The 12:14 dog moves the watermark to 12:04.",
                3: "The 12:21 owl moves the watermark to 12:11 for the next batch. Press Next: append mode then emits 12:00–12:10, once.",
                4: "The 12:04 donkey arrives behind the watermark: its windows are closed, and it is dropped in both modes.",
            },
            labels=("update mode", "append mode"),
        ),
        Scenario(
            "watermark_too_small", "A watermark too small loses events",
            "Page clicks with up to 15 s of jitter and a few clicks 4 minutes late, counted per minute with a watermark of 0 seconds: "
            "any click behind the newest one is behind the watermark once its window has ended.",
            SAMPLE_FEEDS / "web_clicks", ({"window": "1 minute", "watermark": "0 seconds", "output_mode": "update"},),
            {
                2: "Watch the dropped rows: each arrived after a newer click had closed its window.",
                10: "Run to end and compare the rows dropped with the next scenario's none.",
            },
        ),
        Scenario(
            "watermark_too_large", "A watermark too large grows the state",
            "The same clicks with a 10-minute watermark: nothing is dropped, but every window waits 10 minutes in the state "
            "before it is let go, and append mode emits nothing until then.",
            SAMPLE_FEEDS / "web_clicks", ({"window": "1 minute", "watermark": "10 minutes", "output_mode": "append"},),
            {
                3: "The state grows with every minute of clicks; nothing is emitted yet.",
                20: "Only windows 10 minutes behind the newest click are emitted and let go of.",
            },
        ),
        Scenario(
            "idle_source", "An idle source stalls the watermark",
            "Three files of words, then two empty ones, then one more word half an hour later. While no event arrives "
            "the watermark cannot move, so append mode holds every open window.",
            SCENARIO_FEEDS / "quiet_words", ({**GUIDE_QUERY, "output_mode": "append"},),
            {
                3: "The 12:21 owl moves the watermark to 12:11: the next batch emits 12:00–12:10. The other windows wait for newer events.",
                4: "An empty file: a batch of no rows. The watermark stays where it was, and nothing is emitted.",
                6: "A word at 12:33 moves the watermark to 12:23: the next batch emits the windows that waited, at last.",
            },
        ),
        Scenario(
            "duplicates", "Duplicates dropped within the watermark",
            "Orders delivered twice (the same order_id in the next batch), deduplicated within a 2-minute watermark before "
            "they are summed per store and minute. A duplicate found in the state is dropped; Spark counts those apart from late rows.",
            SAMPLE_FEEDS / "orders_jsonl", ({"window": "1 minute", "watermark": "2 minutes", "output_mode": "update", "deduplicate": True, "aggregation": "sum"},),
            {
                1: "The first duplicates arrive in the second batch: the caption says how many the deduplication dropped.",
                5: "Late orders are behind the watermark: dropped by the deduplication, before any window.",
            },
            columns=ColumnMapping(event_time="ts", time_format="epoch_ms", key="store", value="amount", dedup_id="order_id"),
            file_format="json",
        ),
        Scenario(
            "session_windows", "Session windows",
            "The guide's words grouped in sessions that close 5 minutes after a word's last event, emitted in append mode "
            "once the watermark passes a session's end.",
            GUIDE, ({"session_gap": "5 minutes", "watermark": "2 minutes", "output_mode": "append"},),
            {
                2: "The 12:14 dog comes 7 minutes after the 12:07 one: more than the gap, so it starts a new session. The watermark moves to 12:12.",
                3: "The 12:07 dog's session ended at 12:12, so it was emitted. The 12:08 dog comes too late for it and opens a session of its own.",
            },
        ),
        Scenario(
            "zero_delay", "The zero-delay surprise",
            "Events deduplicated by id with a watermark delay of 0: the watermark is the newest event time itself, and "
            "an event at exactly that time is already late (an event is dropped when its time is at or before the watermark).",
            SCENARIO_FEEDS / "zero_delay", ({"window": "1 minute", "watermark": "0 seconds", "output_mode": "update", "deduplicate": True},),
            {
                1: "The newest event time is 12:00:05, so the watermark is 12:00:05 for the next batch.",
                2: "The cat at 12:00:05 is not newer than the watermark: it is dropped, though it is not behind the newest event.",
                3: "Two owls with the same id: the second is a duplicate.",
            },
            columns=ColumnMapping(event_time="event_time", time_format="yyyy-MM-dd HH:mm:ss", key="key", dedup_id="id"),
        ),
    )
}
