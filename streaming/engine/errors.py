"""The one error for user input the product refuses: it names the field, the value and the reason."""

from __future__ import annotations

__all__ = ["Cancelled", "ConfigError", "first_line"]


class ConfigError(ValueError):
    """A value a user gave that cannot be run: ``field`` names it, ``value`` is what was given, ``reason`` says why.

    ``str(error)`` reads ``field: 'value' reason``, e.g.
    ``slide: '10 minutes' is longer than window '5 minutes'``.
    """

    def __init__(self, field_name: str, value: object, reason: str) -> None:
        self.field = field_name
        self.value = value
        self.reason = reason
        super().__init__(f"{field_name}: {value!r} {reason}")


class Cancelled(Exception):
    """A long run stopped because its user asked: raised between micro-batches, after its queries were stopped."""


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s message (Spark's run to many lines), or its type's name when it has none."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
