"""Parsing and formatting of durations (no Spark)."""

from __future__ import annotations

import pytest

from streaming.engine.durations import DurationError, format_duration, human_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("0", 0),
        (" 0 ", 0),
        ("0 seconds", 0),
        ("5 minutes", 300_000),
        ("1 minute", 60_000),
        ("30s", 30_000),
        ("90 sec", 90_000),
        ("10m", 600_000),
        ("2 mins", 120_000),
        ("250 ms", 250),
        ("1 millisecond", 1),
        ("1 hour 30 minutes", 5_400_000),
        ("1h30m", 5_400_000),
        ("2 hrs", 7_200_000),
        ("1 day", 86_400_000),
        ("2d", 172_800_000),
        ("2.5 s", 2_500),
        ("0.5 minutes", 30_000),
        ("  10 Minutes  ", 600_000),
        ("1 MINUTE", 60_000),
        # decimal fractions that binary floats cannot hold exactly
        ("1.005 s", 1_005),
        ("4.35 s", 4_350),
        ("0.001s", 1),
    ],
)
def test_parse_duration_accepts(text: str, ms: int) -> None:
    result = parse_duration(text)
    assert result == ms
    assert isinstance(result, int)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("-1 minute", "negative"),
        ("-0", "negative"),
        ("5 fortnights", "unknown unit 'fortnights'"),
        ("five minutes", "cannot parse"),
        ("5", "cannot parse"),
        ("minutes", "cannot parse"),
        ("1 minute and 5 s", "cannot parse"),
        ("0.5 ms", "whole number of milliseconds"),
        ("1.0005 s", "whole number of milliseconds"),
    ],
)
def test_parse_duration_refuses_with_field_and_text(text: str, fragment: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(text, field="watermark")
    message = str(caught.value)
    assert message.startswith("watermark: ")
    assert fragment in message
    if text.strip():
        assert repr(text) in message


@pytest.mark.parametrize("value", [None, 5, 5.0, b"5 minutes"])
def test_parse_duration_refuses_non_strings(value: object) -> None:
    with pytest.raises(DurationError, match=r"^slide: .* is not a duration: expected a duration string"):
        parse_duration(value, field="slide")  # type: ignore[arg-type]


def test_duration_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_default_field_name_is_duration() -> None:
    with pytest.raises(DurationError, match=r"^duration: "):
        parse_duration("soon")


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0 seconds"),
        (1, "1 millisecond"),
        (1_500, "1500 milliseconds"),
        (1_000, "1 second"),
        (90_000, "90 seconds"),
        (60_000, "1 minute"),
        (600_000, "10 minutes"),
        (3_600_000, "1 hour"),
        (5_400_000, "90 minutes"),
        (7_200_000, "2 hours"),
        (86_400_000, "1 day"),
        (172_800_000, "2 days"),
    ],
)
def test_format_duration(ms: int, text: str) -> None:
    assert format_duration(ms) == text


def test_format_duration_refuses_negative() -> None:
    with pytest.raises(DurationError, match="-5 ms is negative"):
        format_duration(-5)


@pytest.mark.parametrize("ms", [0, 1, 999, 1_000, 1_001, 59_999, 60_000, 61_000, 3_599_000, 3_600_000, 90_061_001])
def test_format_then_parse_round_trips(ms: int) -> None:
    assert parse_duration(format_duration(ms)) == ms


@pytest.mark.parametrize(("seconds", "text"), [(0.42, "0.4 s"), (45, "45 s"), (750, "12.5 min"), (16_260.1, "4.5 h"), (276_480, "3.2 d"), (float("nan"), "–")])
def test_human_durations_take_the_largest_readable_unit(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text
