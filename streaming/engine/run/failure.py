"""What a failed run failed with, and whether resuming it would only fail again.

Spark resumes a query by running again the micro-batch it had not committed:
the same offsets, the same data, the same plan. A failure that comes from the
data or the query (a cast the data breaks, a state schema the query no longer
matches) therefore comes back at the same batch on every resume; one that comes
from outside (a broker away, a folder deleted, a lost session) may not. So the
lab lets a failed query be resumed, notes the failure it was resumed from in its
kept folder (``failures.jsonl``) once the resume has started, and offers no more
resumes once a resume has failed with the same condition at the same batch: the
page says what to change instead. A change applied to the query clears the notes.

A failure is compared by Spark's error condition (``CAST_INVALID_INPUT``), not
its text, which names the run's ids and differs every time.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import brief
from ..jsonl import drop_cut_line, read_json_lines
from ..sql.guard import conditions

__all__ = ["Failure", "failure_of", "last_noted", "note"]

_IDS = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_WRAPPERS = frozenset({"STREAM_FAILED"})
"""Conditions that wrap the one a batch failed with."""


@dataclass(frozen=True)
class Failure:
    """A run's failure: Spark's error condition (or the error's first line, ids left out, when it names none) and the batch that failed.

    Only a failure with a condition is ``repeatable``: Spark names one for what the data or the query causes (a cast, a state schema);
    a broker away, a folder deleted or the server's batch budget name none, and may pass."""

    condition: str
    batch: int
    repeatable: bool = True

    def words(self) -> str:
        return f"{self.condition} at batch {self.batch}"


def failure_of(error: str, last_batch_id: int, *, repeatable: bool = True) -> Failure:
    """The :class:`Failure` of a run that ended with ``error`` after committing batch ``last_batch_id`` (-1: none): the next batch failed.
    ``repeatable=False`` for a failure the lab caused (the server's batch budget), which the load decides."""
    text = error.split("terminated with exception:", 1)[-1]
    named = [found for found in conditions(text) if found not in _WRAPPERS]
    if named:
        return Failure(named[0], last_batch_id + 1, repeatable)
    return Failure(_IDS.sub("…", brief(text, 200)), last_batch_id + 1, False)


def note(path: Path, failure: Failure) -> None:
    """Append ``failure`` to the failures file ``path`` (:mod:`~streaming.engine.jsonl`: a line cut short by a crash removed first)."""
    drop_cut_line(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(asdict(failure)) + "\n")


def last_noted(path: Path) -> Failure | None:
    """The last failure noted in ``path``; ``None`` when there is none or it cannot be read."""
    noted = read_json_lines(path)
    try:
        values = noted[-1]
        return Failure(str(values["condition"]), int(values["batch"]), bool(values.get("repeatable", True)))
    except (IndexError, KeyError, TypeError, ValueError, AttributeError):
        return None
