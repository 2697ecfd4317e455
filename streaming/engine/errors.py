"""The one error for user input the product refuses: it names the field, the value and the reason."""

from __future__ import annotations

import re

__all__ = ["Cancelled", "ConfigError", "brief", "first_line"]

_SERVER_PATH = re.compile(r"""(?<![\w/])(?:file:(?://)?)?(?:/[^\s/'"`,;()\[\]]+){2,}/?""")
"""An absolute path on the server (``/srv/data/...``, ``file:/tmp/...``): two or more segments; not a URL's path."""
BRIEF_CHARACTERS = 300


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


def brief(text: str, limit: int = BRIEF_CHARACTERS) -> str:
    """A failure's message as a page shows it: its first line, without the query's plan or a JVM stack, and with
    every server path cut to its last part (``.../checkpoint``), at most ``limit`` characters.

    The whole message stays where it was logged (Spark's driver log, the server's log).
    """
    head = text.split("=== Streaming Query ===")[0].split("JVM stacktrace:")[0]
    line = next((line.strip() for line in head.splitlines() if line.strip()), "no reason given")
    line = _SERVER_PATH.sub(lambda match: "…/" + match.group(0).rstrip("/").rsplit("/", 1)[-1], line)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def first_line(err: BaseException) -> str:
    """The first line of ``err``'s message (Spark's run to many lines), or its type's name when it has none."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0]
