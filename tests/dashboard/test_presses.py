"""Presses counted in the browser (``dashboard/presses.py``): each applied once, in order, whatever reruns they arrived in."""

from __future__ import annotations

from dashboard.presses import unseen


def test_presses_merged_into_one_report_are_each_returned_in_order_and_once() -> None:
    report = {"session": "s", "count": 3, "log": ["next", "next", "back"]}
    assert unseen(report, "s", 0) == (["next", "next", "back"], 3)
    assert unseen(report, "s", 3) == ([], 3)  # the same report in a later rerun brings nothing
    assert unseen({"session": "s", "count": 5, "log": ["next", "next", "back", "file", "end"]}, "s", 3) == (["file", "end"], 5)


def test_a_report_of_another_session_or_none_brings_nothing() -> None:
    assert unseen({"session": "old", "count": 7, "log": ["next"] * 7}, "s", 0) == ([], 0)
    assert unseen(None, "s", 2) == ([], 2)


def test_more_presses_than_the_report_keeps_apply_those_it_keeps() -> None:
    assert unseen({"session": "s", "count": 150, "log": ["next"] * 100}, "s", 0) == (["next"] * 100, 150)
