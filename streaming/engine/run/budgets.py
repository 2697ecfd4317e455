"""What one query may take of a shared server while it runs: a micro-batch's time.

A server runs many users' queries on one Spark. The SQL checks refuse, before
Start, a plan whose generators or string builders exceed their bounds
(:mod:`streaming.engine.sql.guard`); this budget holds any query while it
runs: a micro-batch that runs past ``batch_seconds`` stops its query (Spark
cancels the batch's jobs), which ends with the reason in plain words, so the
others' pages stay usable.

A budget of output rows a batch (refused before collecting) is not here: a
limited collect runs a Spark job per few partitions (``executeTake``), which
would slow every batch of every query.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..checks import count_setting
from ..errors import ConfigError

__all__ = ["BATCH_SECONDS_VARIABLE", "Budgets"]

BATCH_SECONDS_VARIABLE = "STREAMING_LAB_MAX_BATCH_SECONDS"
DEFAULT_BATCH_SECONDS = 600
"""Ten minutes: a batch of this lab's replays takes well under a second; a first batch on a loaded machine, seconds."""


@dataclass(frozen=True)
class Budgets:
    """``batch_seconds``: the longest a micro-batch may run (``None``: no limit)."""

    batch_seconds: int | None = DEFAULT_BATCH_SECONDS

    def __post_init__(self) -> None:
        value = self.batch_seconds
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError("batch_seconds", value, "must be a whole number of at least 1, or None for no limit")

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Budgets:
        """The budget :data:`BATCH_SECONDS_VARIABLE` sets; :class:`ConfigError` naming it when it is not a whole number of at least 1."""
        return cls(count_setting(environ, BATCH_SECONDS_VARIABLE, DEFAULT_BATCH_SECONDS))

    def words(self) -> str:
        """The budget in a sentence, for the pages."""
        seconds = "no limit" if self.batch_seconds is None else f"{self.batch_seconds:,} s"
        return f"a micro-batch may run {seconds} ({BATCH_SECONDS_VARIABLE}); a SQL query's generated arrays and built strings are bounded before Start"

    def overtime(self) -> str:
        """Why a query over its budget was stopped."""
        return (
            f"a micro-batch ran longer than {self.batch_seconds:,} s, this server's budget ({BATCH_SECONDS_VARIABLE}): the query was stopped "
            "and its batch cancelled, so that it does not hold the server's cores. Bound what it generates, or read less a batch"
        )
