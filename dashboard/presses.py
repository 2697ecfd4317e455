"""Presses of a page's buttons, counted in the browser (``presses.js``), so that quick presses are each applied.

Streamlit merges the triggers of one button that arrive while the script
still runs: the Step through page's Next batch waits for Spark's batch, so a
second and third press in that time moved one batch, not two. The page counts
each press (a click or the button's key) and sends a running count with the
latest presses in order, under the token the server gave it; :func:`counted` returns the ones the server has not
applied yet, and the page marks them seen once it has kept their effect. Without a browser (``AppTest``), the buttons' own callbacks act.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import streamlit as st

__all__ = ["Presses", "counted", "forget", "unseen"]

_presses = st.components.v2.component("streaming_lab.presses", js=Path(__file__).with_name("presses.js").read_text(encoding="utf-8"), isolate_styles=False)


def unseen(value: Mapping[str, Any] | None, token: str, seen: int, actions: Collection[str]) -> tuple[list[str], int]:
    """The presses in ``value`` (the page's report: its token, running count and latest presses) after the first ``seen``, oldest first,
    and the count they bring it to. A report under another token (a page left open across a server restart, presses made before the page
    was left) brings none; so does one the page could not have sent, and a press of no known action is passed over."""
    if not value or value.get("token") != token or not isinstance(count := value.get("count"), int) or not isinstance(log := value.get("log"), list):
        return [], seen
    new = max(0, count - seen)
    return ([press for press in log[max(0, len(log) - new):] if press in actions] if new else []), max(seen, count)


def _ignore() -> None:
    """The presses are read where the component is drawn, in the order they were made; the change needs no callback of its own."""


class Presses(list[str]):
    """Presses not applied yet, oldest first; :meth:`seen` marks them applied."""

    def __init__(self, presses: Sequence[str], holder: dict[str, Any], count: int) -> None:
        super().__init__(presses)
        self._holder, self._count = holder, count

    def seen(self) -> None:
        """Mark these presses applied. It touches no widget state through Streamlit's session state, where a rerun could interrupt it:
        kept after the effect of the presses, nothing comes between the two."""
        self._holder["seen"] = self._count


def _holder(key: str) -> dict[str, Any]:
    """The presses ``key`` counts in this session: its token (a new one forgets the page's count) and how many were applied."""
    holder: dict[str, Any] = st.session_state.setdefault(f"{key}_presses", {})
    if "token" not in holder:
        holder.update(token=uuid.uuid4().hex, seen=0)
    return holder


def forget(key: str) -> None:
    """Forget the presses ``key`` counted and has not applied (the page was left, or what they would move was closed): the page counts
    from 0 again under a new token, so a press made before never moves what comes next."""
    _holder(key).update(token=uuid.uuid4().hex, seen=0)


def counted(*, key: str, buttons: Mapping[str, str], keys: Mapping[str, str]) -> Presses:
    """The presses of ``buttons`` (widget key → action) and ``keys`` (a key as ``"Shift+ArrowRight"`` → widget key) made in the page and
    not yet marked :meth:`~Presses.seen`, oldest first."""
    strays = sorted(set(keys.values()) - set(buttons))
    if strays:
        raise ValueError(f"keys: {strays} are not among the buttons ({', '.join(buttons)})")
    holder = _holder(key)
    result = _presses(
        data={"token": holder["token"], "buttons": dict(buttons), "keys": dict(keys)}, key=key, default={"presses": None},
        on_presses_change=_ignore,
    )
    presses, count = unseen(result.get("presses") if result else None, holder["token"], holder["seen"], set(buttons.values()))
    return Presses(presses, holder, count)
