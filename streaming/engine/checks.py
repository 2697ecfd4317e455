"""Checks of single values where they are received: each raises :class:`~streaming.engine.errors.ConfigError` naming the field and the value."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from .durations import parse_duration
from .errors import ConfigError

__all__ = ["count_setting", "duration_ms", "require_choice", "require_int", "require_positive", "require_positive_duration", "require_share", "whole_second_utc"]


def duration_ms(field_name: str, value: str) -> int:
    """``value`` (a duration such as ``30 seconds``) in milliseconds; :class:`ConfigError` naming ``field_name`` when it does not parse."""
    return parse_duration(value, field=field_name)


def require_int(field_name: str, value: object, minimum: int, maximum: int | None = None) -> None:
    """Refuse ``value`` unless it is a whole number from ``minimum`` to ``maximum`` (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(field_name, value, "must be a whole number")
    if value < minimum or (maximum is not None and value > maximum):
        bound = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise ConfigError(field_name, value, f"must be {bound}")


def require_share(field_name: str, value: object) -> None:
    """Refuse ``value`` unless it is a number between 0 and 1 (inclusive)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise ConfigError(field_name, value, "must be a number between 0 and 1")


def require_positive_duration(field_name: str, value: str) -> None:
    """Refuse ``value`` unless it is a duration longer than 0."""
    if duration_ms(field_name, value) <= 0:
        raise ConfigError(field_name, value, "must be longer than 0")


def require_positive(field_name: str, value: object) -> None:
    """Refuse ``value`` unless it is a number greater than 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ConfigError(field_name, value, "must be a number greater than 0")


def require_choice(field_name: str, value: object, choices: tuple[str, ...]) -> None:
    """Refuse ``value`` unless it is one of ``choices``."""
    if value not in choices:
        raise ConfigError(field_name, value, f"is not one of {', '.join(choices)}")


def whole_second_utc(field_name: str, value: object) -> datetime:
    """``value`` as a UTC-naive datetime (an aware one converted); refused unless it is a datetime in whole seconds."""
    if not isinstance(value, datetime):
        raise ConfigError(field_name, value, "must be a datetime")
    moment = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value
    if moment.microsecond:
        raise ConfigError(field_name, value, "must be in whole seconds")
    return moment


def count_setting(environ: Mapping[str, str], variable: str, default: int) -> int:
    """The whole number of at least 1 that the environment variable ``variable`` sets (``default`` when unset); :class:`ConfigError` naming it otherwise."""
    text = environ.get(variable, str(default))
    if not text.strip().isdigit() or int(text) < 1:
        raise ConfigError(variable, text, "must be a whole number of at least 1")
    return int(text)
