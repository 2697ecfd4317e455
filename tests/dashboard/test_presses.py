"""Presses counted in the browser (``dashboard/presses.py``): each applied once, in order, whatever reruns they arrived in; and the
Step through moves they make (``dashboard/walkthrough.py``), which a rerun interrupted before its view was kept makes again."""

from __future__ import annotations

from typing import Any

import pytest

from dashboard.presses import unseen
from dashboard.walkthrough import MOVES, HeldWalks

ACTIONS = {"next", "file", "back", "end"}


def test_presses_merged_into_one_report_are_each_returned_in_order_and_once() -> None:
    report = {"token": "s", "count": 3, "log": ["next", "next", "back"]}
    assert unseen(report, "s", 0, ACTIONS) == (["next", "next", "back"], 3)
    assert unseen(report, "s", 3, ACTIONS) == ([], 3)  # the same report in a later rerun brings nothing
    assert unseen({"token": "s", "count": 5, "log": ["next", "next", "back", "file", "end"]}, "s", 3, ACTIONS) == (["file", "end"], 5)


def test_a_report_under_another_token_or_not_one_the_page_sends_brings_nothing() -> None:
    assert unseen({"token": "old", "count": 7, "log": ["next"] * 7}, "s", 0, ACTIONS) == ([], 0)  # a page left, a server restarted
    assert unseen(None, "s", 2, ACTIONS) == ([], 2)
    assert unseen({"token": "s", "count": "7", "log": ["next"]}, "s", 2, ACTIONS) == ([], 2)
    assert unseen({"token": "s", "count": 2, "log": ["next", "rm -rf"]}, "s", 0, ACTIONS) == (["next"], 2)


def test_more_presses_than_the_report_keeps_apply_those_it_keeps() -> None:
    assert unseen({"token": "s", "count": 150, "log": ["next"] * 100}, "s", 0, ACTIONS) == (["next"] * 100, 150)


class _Walk:
    """A replay of ``steps`` files under the quiet rule: each file handed over runs its batch and the no-data batch after it."""

    def __init__(self, steps: int) -> None:
        self.steps, self.handed, self._summaries = steps, 0, []

    @property
    def finished(self) -> bool:
        return self.handed >= self.steps

    def advance(self) -> None:
        if not self.finished:
            self.handed += 1
            self._summaries += [{"num_input_rows": 2}, {"num_input_rows": 0}]

    def to_end(self) -> None:
        while not self.finished:
            self.advance()

    def summaries(self) -> list[dict[str, Any]]:
        return list(self._summaries)


class _Walks(HeldWalks):
    def __init__(self, steps: int) -> None:
        self.walks = [_Walk(steps)]  # type: ignore[list-item]


@pytest.mark.parametrize("press", sorted(MOVES))
def test_a_move_made_again_from_the_view_it_started_at_hands_spark_nothing_more(press: str) -> None:
    walks = _Walks(5)
    walks.advance()  # one file read: batches 0 (data) and 1 (no data) run, the view on batch 0
    first = MOVES[press](walks, 1)
    handed = walks.handed
    assert MOVES[press](walks, 1) == first and walks.handed == handed
    assert {"next": 2, "file": 3, "end": 10}[press] == first
