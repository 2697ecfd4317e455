"""The arrival rule: when a replay hands Spark its next micro-batch of data. One rule is chosen per run, and every page and command follows it.

A replay of files (or of a topic's fixed range) reads the same rows on every
page, but Spark's answer also depends on *when* each batch's data arrives.
After a batch that moves the watermark, Spark runs a **no-data batch** that
applies the new watermark (evicts state, closes windows in append mode) --
unless the next batch's data is already there, in which case it runs that
batch instead. A row of the next batch is then judged by an older watermark.
Both shapes are real streams, and each is one rule:

- ``quiet``: a batch's data arrives only after Spark has run the previous
  batch and the no-data batch it causes. The watermark moves between
  arrivals, as in a stream whose events trickle in. A row is judged by the
  largest event time of every batch before its own.
- ``busy``: the batches run back to back, each finding the next batch's data
  already there (a busy stream, or a backfill: Spark's available-now
  trigger). No no-data batch runs between them, only after the last.

A replay follows its rule by when it hands data over, never by a timer: under
``quiet`` the next batch's files are handed over once Spark is idle (a paced
replay waits for its pause *and* for Spark); under ``busy`` every file is
there when the query starts. Load can slow a replay down; it cannot change
its answer.

``quiet`` is the default everywhere: it drops at least as many late rows as
``busy`` does at every delay, so a delay tuned under it holds for a busy
stream too. The two bound what a real stream sees.

A live stream (the generator, rate, a socket, a topic read as it arrives)
follows no rule: when its data arrives is up to the world, so its page says
so and counts the no-data batches that ran (:func:`no_data_batches`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, Protocol, get_args

from .errors import ConfigError

__all__ = [
    "ARRIVAL_RULES",
    "DEFAULT_ARRIVAL",
    "ArrivalRule",
    "RuleFollowed",
    "check_arrival",
    "describe_rule",
    "is_no_data",
    "no_data_batches",
    "replay_trigger",
    "rule_words",
]

ArrivalRule = Literal["quiet", "busy"]
ARRIVAL_RULES: tuple[str, ...] = get_args(ArrivalRule)
DEFAULT_ARRIVAL: ArrivalRule = "quiet"

_WORDS: dict[str, str] = {
    "quiet": "each batch's data arrives after Spark has run the batch before it and the no-data batch its watermark move causes",
    "busy": "batches run back to back, the next batch's data already there (available-now): no no-data batch between them",
}


def check_arrival(value: object, field: str = "arrival") -> ArrivalRule:
    """``value`` when it names an arrival rule; :class:`ConfigError` naming ``field`` and the value otherwise."""
    if value not in ARRIVAL_RULES:
        raise ConfigError(field, value, f"is not an arrival rule: one of {', '.join(ARRIVAL_RULES)}")
    return value  # type: ignore[return-value]


def replay_trigger(rule: str) -> Literal["default", "available_now"]:
    """The trigger a replay to its end runs under ``rule``: quiet hands each batch over once Spark is idle, under the default trigger;
    busy hands every batch over at once, under available-now."""
    return "available_now" if check_arrival(rule) == "busy" else "default"


def rule_words(rule: str) -> str:
    """What ``rule`` means, in a sentence's words (for pages, reports and ``--help``)."""
    return _WORDS[check_arrival(rule)]


def describe_rule(rule: str, no_data: int | None = None) -> str:
    """``rule`` named and explained, with the no-data batches a run counted when given: what a page or report says of the rule that ran."""
    counted = "" if no_data is None else f" · {no_data} no-data batch{'es' if no_data != 1 else ''}"
    return f"arrival {rule}: {rule_words(rule)}{counted}"


def is_no_data(summary: Mapping[str, Any]) -> bool:
    """True for a batch that read nothing new: its source's start and end offsets are the same (a batch run only because the watermark moved)."""
    offsets = summary.get("source_offsets")
    if not offsets:
        return False
    start, end = offsets
    if start is None or end is None:
        return False
    try:
        return bool(json.loads(start) == json.loads(end))
    except (TypeError, ValueError):
        return bool(start == end)


def no_data_batches(summaries: Iterable[Mapping[str, Any]]) -> int:
    """How many of a run's batches (progress summaries, :func:`~streaming.engine.output.progress.summarize`) read no new data."""
    return sum(1 for summary in summaries if is_no_data(summary))


class _Ruled(Protocol):
    def ran_arrival(self) -> ArrivalRule: ...


class RuleFollowed:
    """What a finished replay says of its arrival rule (a replay of the form's query or of SQL): the rule its configuration ran under, and
    the no-data batches its batches' ``summaries`` count."""

    summaries: Any

    @property
    def ruled(self) -> _Ruled:
        """The configuration the replay ran."""
        raise NotImplementedError

    @property
    def arrival(self) -> ArrivalRule:
        return self.ruled.ran_arrival()

    @property
    def no_data_batches(self) -> int:
        """Batches Spark ran only because the watermark moved (they read nothing new)."""
        return no_data_batches(self.summaries)

    def arrival_facts(self) -> dict[str, Any]:
        """``arrival`` and ``no_data_batches``, as ``--json`` writes them."""
        return {"arrival": self.arrival, "no_data_batches": self.no_data_batches}
