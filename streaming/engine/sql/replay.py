"""A user's SQL replayed headless: its streamed views read to their end, then what the result table and every stateful operator reached.

What ``python -m streaming replay --sql`` prints and writes: the result table
(any columns), the rows each stateful operator of the plan dropped behind the
watermark and the rows it still holds, each micro-batch, the final watermark.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..arrival import RuleFollowed
from ..errors import ConfigError
from ..output.progress import ProgressTotals, batch_records, progress_frame
from ..output.results import stamp

if TYPE_CHECKING:
    from ..run.registry import QueryRegistry
    from .query import SqlQuery

__all__ = ["SqlReplay", "explain_batches", "operators_of", "replay_sql", "tell_batches"]


@dataclass(frozen=True)
class SqlReplay(ProgressTotals, RuleFollowed):
    """What a SQL replay produced: the result table's records and frame, and one summary per micro-batch."""

    query: SqlQuery
    records: list[dict[str, Any]]
    result: pd.DataFrame
    progress: pd.DataFrame
    summaries: tuple[dict[str, Any], ...]
    outputs: dict[int, list[dict[str, Any]]] | None = None
    """When asked: each batch's output rows as JSON records, by batch id."""

    @property
    def operators(self) -> list[dict[str, Any]]:
        return operators_of(self.summaries)

    @property
    def ruled(self) -> SqlQuery:
        return self.query

    def to_json(self) -> dict[str, Any]:
        return {
            **self.arrival_facts(),
            "result": self.records,
            "rows_dropped_by_watermark": self.rows_dropped_by_watermark,
            "operators": self.operators,
            "final_watermark": stamp(self.final_watermark),
            "input_rows": self.input_rows,
            "malformed_rows": self.malformed_rows,
            "batches": batch_records(self.progress),
        }


def operators_of(summaries: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stateful operator of the plan, in Spark's order: its name, the rows its state holds after the last batch, the rows it dropped
    behind the watermark in all, and its state's memory after the last batch (bytes)."""
    last = next((summary["operators"] for summary in reversed(summaries) if summary.get("operators")), ())
    dropped = [0] * len(last)
    for summary in summaries:
        for index, operator in enumerate(summary.get("operators") or ()):
            if index < len(dropped):
                dropped[index] += int(operator[2])
    return [
        {"index": index, "name": name, "state_rows": int(rows), "rows_dropped_by_watermark": dropped[index], "memory_bytes": int(memory)}
        for index, (name, rows, _, memory) in enumerate(last)
    ]


def replay_sql(
    registry: QueryRegistry, query: SqlQuery, *, timeout: float = 600.0, cancel: threading.Event | None = None, outputs: bool = False,
    keep: Path | None = None, stop_after: int | None = None,
) -> SqlReplay:
    """Run ``query`` until its streamed views are read, under its arrival rule (:mod:`streaming.engine.arrival`: quiet steps file *i* of each
    view in once Spark is idle; busy hands every file over at once, under available-now: micro-batch *i* reads file *i* of each), stop it and
    return what it produced; with ``outputs``, each batch's output rows too.

    With ``keep`` (a folder) the run keeps its checkpoint, result and progress there, or goes on from what an earlier run kept there (made
    for the same query: :class:`~streaming.engine.run.checkpoints.KeptQuery`); the replay then holds the whole stream's result and batches.
    With ``stop_after`` it stops once that many steps (file *i* of each view) have been handed over in all: under busy, those steps run
    back to back, as available-now over them would run them.
    """
    from pyspark.errors import PySparkException

    if stop_after is not None and (isinstance(stop_after, bool) or not isinstance(stop_after, int) or stop_after < 1):
        raise ConfigError("stop_after", stop_after, "must be a whole number of at least 1")
    replayed, hand_over = query.replayed("replayed"), None
    if stop_after is not None and replayed.ran_arrival() == "busy":  # available-now would read every file: hand over the first steps only
        replayed, hand_over = replayed.with_changes(trigger="default"), stop_after
    name = f"sql_{uuid.uuid4().hex[:12]}"
    try:
        run = registry.start(
            replayed, name, max_rows=None, latency=False, record_outputs=outputs, keep=False if keep is None else Path(keep), hand_over=hand_over,
        )
    except PySparkException as err:
        registry.remove(name)
        raise query.refusal(err) from None
    try:
        try:
            run.await_idle(timeout, cancel, stop_after)
        except PySparkException as err:
            raise query.refusal(err) from None
        summaries = tuple(run.log.summaries())
        run.stop()
        emitted = None if run.table.outputs is None else {batch: run.table.as_records(rows) for batch, rows in run.table.outputs.items()}
        return SqlReplay(query, run.table.records(), run.table.frame(), progress_frame(list(summaries)), summaries, emitted)
    finally:
        registry.remove(name)


def explain_batches(outcome: SqlReplay) -> list[dict[str, Any]]:
    """Each micro-batch of a SQL replay told (:func:`tell_batches`)."""
    return tell_batches(outcome.summaries, outcome.outputs)


def tell_batches(summaries: Sequence[Mapping[str, Any]], outputs: Mapping[int, Sequence[Any]] | None = None) -> list[dict[str, Any]]:
    """Each micro-batch of a SQL query's run told from its progress ``summaries``: rows read, the watermark it ran with, the rows each stateful
    operator dropped behind it and holds after it, the rows it emitted (with ``outputs``, by batch id), and a caption saying so in words.

    What ``explain --sql`` writes, and what Step through shows of a SQL query's batch."""
    steps = []
    for summary in summaries:
        batch = int(summary["batch_id"])
        operators = [
            {"name": name, "state_rows": int(rows), "rows_dropped_by_watermark": int(dropped)} for name, rows, dropped, _ in summary.get("operators") or ()
        ]
        emitted = None if outputs is None else list(outputs.get(batch, []))
        watermark = stamp(pd.Timestamp(summary["watermark"]))
        dropped = sum(operator["rows_dropped_by_watermark"] for operator in operators)
        words = [f"Batch {batch} read {int(summary['num_input_rows'])} rows", f"ran with the watermark at {watermark}" if watermark else "ran before any watermark"]
        if dropped:
            words.append(f"dropped {dropped} behind it (" + ", ".join(f"{op['name']}: {op['rows_dropped_by_watermark']}" for op in operators if op["rows_dropped_by_watermark"]) + ")")
        if emitted is not None:
            words.append(f"emitted {len(emitted)} rows")
        if operators:
            words.append("held " + ", ".join(f"{op['state_rows']} rows in {op['name']}" for op in operators))
        steps.append({
            "batch_id": batch, "input_rows": int(summary["num_input_rows"]), "watermark": watermark, "rows_dropped_by_watermark": dropped,
            "malformed_rows": int(summary["malformed_rows"]), "operators": operators, "output": emitted, "caption": "; ".join(words) + ".",
        })
    return steps
