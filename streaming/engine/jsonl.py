"""JSON-lines files the engine appends to (a kept query's progress and its result table's journal), read back after a crash.

A process killed while appending leaves its last line cut short. A reader skips
such a line; whoever appends next removes it first (:func:`drop_cut_line`), so
the next record starts a line of its own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["drop_cut_line", "read_json_lines"]


def read_json_lines(path: Path) -> list[Any]:
    """The records of the whole lines of ``path``, in order, skipping a line that is not JSON; none when there is no file."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:  # cut short by a crash
            continue
    return records


def drop_cut_line(path: Path) -> None:
    """Remove a last line of ``path`` cut short by a crash (one without its newline); nothing to do when there is no file."""
    if not path.is_file():
        return
    text = path.read_text()
    if not text.endswith("\n"):
        path.write_text(text[: text.rfind("\n") + 1])
