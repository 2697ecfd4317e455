"""How times are written in a user's data, and the Spark expression that reads each way.

``auto`` (timestamps as they are, ISO-8601 or ``yyyy-MM-dd HH:mm:ss[.SSS]``
text read as UTC without an offset), ``epoch_s``, ``epoch_ms``, or a Spark
datetime pattern: :func:`check_time_format` checks the name,
:func:`check_time_fit` that it can read a column of a given Spark type, and
:func:`time_column` is the expression every query, preview and analysis reads
times with, so they all agree on which values do not parse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..builders import EPOCH_SECONDS_LIMIT, column_kind, parse_time, quoted
from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["EPOCH_SECONDS_LIMIT", "TIME_FORMATS", "check_time_fit", "check_time_format", "column_kind", "quoted", "time_column"]

TIME_FORMATS = ("auto", "epoch_s", "epoch_ms")
"""The named time formats; any other value is a Spark datetime pattern (:func:`check_time_format`)."""

# Spark's datetime pattern letters that parse; the week-based ones (Y, w, W, u, e, c) are refused by Spark 3+.
_PATTERN_LETTERS = frozenset("GyDMLdQqEFahKkHmsSVzOXxZ")


def check_time_format(value: object, field_name: str = "time_format") -> str:
    """``value`` when it is ``auto``, ``epoch_s``, ``epoch_ms`` or a Spark datetime pattern; :class:`ConfigError` otherwise.

    A pattern is checked letter by letter outside its quoted text (``'T'``):
    every letter must be one Spark parses with. Letter counts (``QQQQQ``) are
    left to Spark, whose refusal the caller reports.
    """
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(field_name, value, "must be auto, epoch_s, epoch_ms or a Spark datetime pattern such as yyyy-MM-dd HH:mm:ss")
    if value in TIME_FORMATS:
        return value
    quoted, letters = False, 0
    for char in value:
        if char == "'":
            quoted = not quoted
        elif not quoted and char.isalpha():
            if char not in _PATTERN_LETTERS:
                raise ConfigError(
                    field_name, value,
                    f"uses {char!r}, which is not a Spark datetime pattern letter for parsing (letters: {''.join(sorted(_PATTERN_LETTERS))})",
                )
            letters += 1
    if quoted:
        raise ConfigError(field_name, value, "has an unclosed quote (')")
    if not letters:
        raise ConfigError(field_name, value, "has no pattern letters; e.g. yyyy-MM-dd HH:mm:ss")
    return value


def check_time_fit(time_format: object, data_type: str, field_name: str = "time_format") -> str:
    """The :func:`column_kind` of ``data_type`` when ``time_format`` can read times from it (see :func:`time_column`); :class:`ConfigError` otherwise."""
    check_time_format(time_format, field_name)
    kind = column_kind(data_type)
    if kind in ("timestamp", "date") and time_format != "auto":
        raise ConfigError(field_name, time_format, f"does not apply to a {data_type} column, which already holds times; use auto")
    if kind == "other":
        raise ConfigError(field_name, time_format, f"cannot read a time from a column of type {data_type}")
    if kind == "number" and time_format == "auto":
        raise ConfigError(field_name, "auto", f"cannot tell seconds from milliseconds in a {data_type} column; choose epoch_s or epoch_ms")
    return kind


def time_column(column: Column | str, time_format: str, data_type: str = "string", field_name: str = "time_format") -> Column:
    """The event time held by ``column`` (of Spark type ``data_type``): a timestamp, null where a value does not parse.

    - ``auto``: a timestamp column as it is, a date at midnight; text as Spark
      casts it (``2026-03-02 14:01:01.196``, ISO-8601 ``2026-03-02T14:01:01.196Z``
      or with an offset; fractional seconds optional; without an offset, in the
      session time zone, UTC). Numbers are refused: seconds or milliseconds?
    - ``epoch_s`` / ``epoch_ms``: seconds (fractions kept) or milliseconds since
      1970-01-01 UTC, from numbers or text.
    - a pattern: text (surrounding spaces trimmed) parsed with it.

    :class:`ConfigError` (naming ``field_name``) when the format does not fit
    the column's type.
    """
    from pyspark.sql import functions as F

    value = F.col(quoted(column)) if isinstance(column, str) else column
    return parse_time(value, time_format, check_time_fit(time_format, data_type, field_name))
