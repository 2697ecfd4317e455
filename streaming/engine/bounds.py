"""What a user may ask a shared server's Spark to plan: bounds checked before Spark analyses anything.

A user's query costs the driver's memory before it runs: Spark's analyser
turns a sliding window into one projection for each window a row falls in
(the window's length ÷ its slide, rounded up), so
``window(event_time, '10 days', '1 second')`` asks for 864,000 of them, and
checking that text as it was typed filled the driver's heap and held every
page of every user. The form's window and SQL's ``window( )`` calls are both
held to :func:`max_windows_per_row`; a SQL text is held to
:func:`max_sql_characters` before it is parsed (what a long ``IN`` list or a
deeply nested expression costs the parser and the analyser grows with the
text); and a check that runs longer than :func:`max_check_seconds` anyway is
abandoned with a plain message (:mod:`streaming.engine.sql.checker`).

Each bound is a setting of the server, an environment variable, and every
refusal names the bound and its variable, so an operator who trusts their
users can raise it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from .checks import count_setting

__all__ = [
    "CHECK_SECONDS_VARIABLE", "SQL_CHARACTERS_VARIABLE", "WINDOWS_VARIABLE", "max_check_seconds", "max_sql_characters", "max_windows_per_row",
    "too_many_windows", "windows_per_row",
]

WINDOWS_VARIABLE = "STREAMING_LAB_MAX_WINDOWS_PER_ROW"
DEFAULT_WINDOWS_PER_ROW = 1_000
"""A day's windows sliding every 90 seconds; the guide's examples slide by half a window (2 a row)."""
SQL_CHARACTERS_VARIABLE = "STREAMING_LAB_MAX_SQL_CHARACTERS"
DEFAULT_SQL_CHARACTERS = 20_000
"""Several screens of SQL: a query over a few views is a few hundred characters."""
CHECK_SECONDS_VARIABLE = "STREAMING_LAB_MAX_CHECK_SECONDS"
DEFAULT_CHECK_SECONDS = 20
"""A check is parsing and analysis only, well under a second once the server is warm: a check still running after this is not a query
being planned but a plan growing without bound."""


def _environ(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def max_windows_per_row(environ: Mapping[str, str] | None = None) -> int:
    """The most windows one row may fall in (:data:`WINDOWS_VARIABLE`, default :data:`DEFAULT_WINDOWS_PER_ROW`)."""
    return count_setting(_environ(environ), WINDOWS_VARIABLE, DEFAULT_WINDOWS_PER_ROW)


def max_sql_characters(environ: Mapping[str, str] | None = None) -> int:
    """The longest SQL text checked (:data:`SQL_CHARACTERS_VARIABLE`, default :data:`DEFAULT_SQL_CHARACTERS`)."""
    return count_setting(_environ(environ), SQL_CHARACTERS_VARIABLE, DEFAULT_SQL_CHARACTERS)


def max_check_seconds(environ: Mapping[str, str] | None = None) -> int:
    """How long a check of a SQL text may run before it is abandoned (:data:`CHECK_SECONDS_VARIABLE`, default :data:`DEFAULT_CHECK_SECONDS`)."""
    return count_setting(_environ(environ), CHECK_SECONDS_VARIABLE, DEFAULT_CHECK_SECONDS)


def windows_per_row(length: int, slide: int) -> int:
    """How many windows of ``length`` sliding every ``slide`` (the same unit, both above 0) one row falls in, as Spark plans them."""
    return -(-length // slide)


def too_many_windows(length: int, slide: int, environ: Mapping[str, str] | None = None) -> str | None:
    """Why a window of ``length`` sliding every ``slide`` is refused (more windows a row than :func:`max_windows_per_row`); ``None`` when
    it is within the bound, or when either is not above 0 (that refusal is another's)."""
    if length <= 0 or slide <= 0:
        return None
    count, bound = windows_per_row(length, slide), max_windows_per_row(environ)
    if count <= bound:
        return None
    return (
        f"puts each row in {count:,} windows, more than this server plans ({bound:,} a row, {WINDOWS_VARIABLE}): Spark plans one "
        "projection for each window a row falls in, so slide by more or make the window shorter"
    )
