"""Parsing and formatting of durations such as ``"5 minutes"``, ``"30s"`` or ``"1 hour 30 minutes"``.

Spark accepts interval strings like ``"10 minutes"``; people type ``"10m"`` or
``"90 sec"``. :func:`parse_duration` accepts both and returns whole milliseconds,
:func:`format_duration` turns milliseconds back into the canonical Spark form
(``"1 minute"``, ``"90 seconds"``), which is what the query builder passes on.
"""

from __future__ import annotations

import re
from decimal import Decimal

from .errors import ConfigError

__all__ = ["DurationError", "format_duration", "human_duration", "parse_duration"]

_UNIT_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1_000,
    "sec": 1_000,
    "secs": 1_000,
    "second": 1_000,
    "seconds": 1_000,
    "m": 60_000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hr": 3_600_000,
    "hrs": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}

_PART = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)\s*")

# Largest to smallest: the first unit that divides a value exactly names it.
_CANONICAL = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1_000), ("millisecond", 1))


class DurationError(ConfigError):
    """A duration string that cannot be read; names the field, the text and why (``watermark: 'soon' is not a duration: ...``)."""

    def __init__(self, field_name: str, value: object, problem: str) -> None:
        super().__init__(field_name, value, f"is not a duration: {problem}")


def parse_duration(text: str, *, field: str = "duration") -> int:
    """Return the length of ``text`` in whole milliseconds.

    Accepts one or more ``<number> <unit>`` parts (``"1 hour 30 minutes"``,
    ``"1h30m"``, ``"2.5 s"``) and a bare ``"0"``. Units: ms, s/sec/second(s),
    m/min/minute(s), h/hr/hour(s), d/day(s). Raises :class:`DurationError`
    naming ``field`` and the text when it is empty, negative, has an unknown
    unit or a fraction of a millisecond.
    """
    if not isinstance(text, str):
        raise DurationError(field, text, "expected a duration string such as '5 minutes'")
    stripped = text.strip().lower()
    if stripped == "0":
        return 0
    if not stripped:
        raise DurationError(field, text, "it is empty; write e.g. '5 minutes' or '30s'")
    if stripped.startswith("-"):
        raise DurationError(field, text, "it is negative; durations must be 0 or more")
    total = Decimal(0)
    position = 0
    while position < len(stripped):
        match = _PART.match(stripped, position)
        if match is None:
            raise DurationError(field, text, "cannot parse it; write e.g. '5 minutes', '30s' or '1h30m'")
        number, unit = match.groups()
        if unit not in _UNIT_MS:
            raise DurationError(field, text, f"unknown unit {unit!r}; use ms, s, m, h or d")
        total += Decimal(number) * _UNIT_MS[unit]
        position = match.end()
    if total != total.to_integral_value():
        raise DurationError(field, text, "not a whole number of milliseconds")
    return int(total)


def format_duration(ms: int) -> str:
    """Canonical Spark interval string for ``ms`` milliseconds: ``60000 -> "1 minute"``."""
    if ms < 0:
        raise DurationError("duration", ms, f"{ms} ms is negative")
    if ms == 0:
        return "0 seconds"
    for name, size in _CANONICAL:
        if ms % size == 0:
            count = ms // size
            return f"{count} {name}" if count == 1 else f"{count} {name}s"
    raise AssertionError("unreachable: milliseconds divide every integer")


def human_duration(seconds: float) -> str:
    """``seconds`` in the largest unit that keeps it readable: ``0.4 s``, ``45 s``, ``12.5 min``, ``4.5 h``, ``3.2 d``; ``–`` for NaN."""
    if seconds != seconds:
        return "–"
    size = abs(seconds)
    for unit, span in (("d", 86_400.0), ("h", 3_600.0), ("min", 60.0)):
        if size >= span:
            return f"{seconds / span:.1f} {unit}"
    return f"{seconds:.1f} s" if size < 10 else f"{seconds:.0f} s"
