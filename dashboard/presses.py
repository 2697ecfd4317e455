"""Presses of a page's buttons, counted in the browser (``presses.js``), so that quick presses are each applied.

Streamlit merges the triggers of one button that arrive while the script
still runs: the Step through page's Next batch waits for Spark's batch, so a
second and third press in that time moved one batch, not two. The page counts
each press (a click or the button's key) and sends a running count with the
latest presses in order; :func:`counted` returns the ones the server has not
applied yet, and the page marks them seen once it has kept their effect. Without a browser (``AppTest``), the buttons' own callbacks act.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

__all__ = ["Presses", "counted", "unseen"]

_presses = st.components.v2.component("streaming_lab.presses", js=Path(__file__).with_name("presses.js").read_text(encoding="utf-8"), isolate_styles=False)


def unseen(value: Mapping[str, Any] | None, session: str, seen: int) -> tuple[list[str], int]:
    """The presses in ``value`` (the page's report: its session, running count and latest presses) after the first ``seen``, oldest first,
    and the count they bring it to. A report of another session (a page left open across a server restart) brings none."""
    if not value or value.get("session") != session:
        return [], seen
    count, log = int(value.get("count") or 0), list(value.get("log") or [])
    new = max(0, count - seen)
    return (log[max(0, len(log) - new):] if new else []), max(seen, count)


def _ignore() -> None:
    """The presses are read where the component is drawn, in the order they were made; the change needs no callback of its own."""


class Presses(list[str]):
    """Presses not applied yet, oldest first; :meth:`seen` marks them applied."""

    def __init__(self, presses: Sequence[str], holder: dict[str, int], count: int) -> None:
        super().__init__(presses)
        self._holder, self._count = holder, count

    def seen(self) -> None:
        """Mark these presses applied. It touches no widget state through Streamlit's session state, where a rerun could interrupt it:
        kept after the effect of the presses, nothing comes between the two."""
        self._holder["seen"] = self._count


def counted(*, key: str, buttons: Mapping[str, str], keys: Mapping[str, str]) -> Presses:
    """The presses of ``buttons`` (widget key → action) and ``keys`` (a key as ``"Shift+ArrowRight"`` → widget key) made in the page and
    not yet marked :meth:`~Presses.seen`, oldest first."""
    session = st.session_state.setdefault(f"{key}_session", uuid.uuid4().hex)
    holder: dict[str, int] = st.session_state.setdefault(f"{key}_seen", {"seen": 0})
    result = _presses(
        data={"session": session, "buttons": dict(buttons), "keys": dict(keys)}, key=key, default={"presses": None}, on_presses_change=_ignore,
    )
    presses, count = unseen(result.get("presses") if result else None, session, holder["seen"])
    return Presses(presses, holder, count)
