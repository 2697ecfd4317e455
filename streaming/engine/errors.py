"""The one error for user input the product refuses: it names the field, the value and the reason."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["Cancelled", "ConfigError", "InputErrors", "attempt", "brief", "failure_details", "failure_words", "first_line"]

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


class InputErrors(ValueError):
    """Every problem of a form's or a command's values at once: ``errors`` are the :class:`ConfigError` of each, naming field and value."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(str(error) for error in self.errors))


T = TypeVar("T")


def attempt(errors: list[ConfigError], check: Callable[[], T]) -> T | None:
    """``check()``, or ``None`` with the :class:`ConfigError` it raised added to ``errors``: a form's other fields are still checked, and
    :class:`InputErrors` names every bad one at once."""
    try:
        return check()
    except ConfigError as err:
        errors.append(err)
        return None


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


_BRIDGE = re.compile(r"An exception was raised by the Python Proxy\.\s*Return Message:\s*", re.IGNORECASE)
_JAVA_FRAME = re.compile(r"^\s*(at [\w$.<>/]+\(.*\)|\.\.\. \d+ more)\s*$")
_PYTHON_FRAME = re.compile(r'^\s*(Traceback \(most recent call last\):|File ".*", line \d+.*|\^+|~+)\s*$')
_CAUSE = re.compile(r"^\s*(?:Caused by:\s*|:\s*)?((?:[a-z_][\w$]*\.)+([A-Z][\w$]*(?:Exception|Error))):\s*(.+)$")
_CALLING = re.compile(r"An error occurred while calling [\w.]+\.?\s*")


def failure_words(text: str, limit: int = BRIEF_CHARACTERS) -> str:
    """A failed query's reason as a page's banner says it: the deepest cause Spark or the bridge reports (``TimeoutException: Timeout of 5000ms
    expired...``), without the Python bridge's preamble, tracebacks, Java package names, frames or server paths.

    ``brief`` of the text when it names no cause.
    """
    body = _BRIDGE.sub("", text or "")
    causes = []
    for line in body.splitlines():
        if _JAVA_FRAME.match(line) or _PYTHON_FRAME.match(line):
            continue
        found = _CAUSE.match(_CALLING.sub("", line))
        if found is not None:
            causes.append(f"{found.group(2)}: {found.group(3).strip()}")
    if not causes:
        return brief(body, limit)
    return brief(causes[-1], limit)


def failure_details(text: str, lines: int = 40) -> str:
    """The failure's own text for those who want it (behind an expander): its first ``lines`` lines that are not stack frames, server paths cut."""
    kept = [
        line for line in _BRIDGE.sub("", text or "").splitlines()
        if line.strip() and not _JAVA_FRAME.match(line) and not _PYTHON_FRAME.match(line) and not (line.startswith(" ") and _CAUSE.match(line) is None)
    ]
    return "\n".join(_SERVER_PATH.sub(lambda match: "…/" + match.group(0).rstrip("/").rsplit("/", 1)[-1], line) for line in kept[:lines])
