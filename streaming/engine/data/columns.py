"""Which columns of a user's data hold what: the column mapping, and the columns a query reads through it.

A :class:`ColumnMapping` names the event-time column and how its times are
written (:mod:`streaming.engine.data.times`), the key (or none: one global group),
the value an aggregate reads, an id for deduplication and an arrival time.
:func:`dataset_columns` turns it into the columns every source yields:
``event_time``, ``key`` and, when mapped, ``value`` and ``dedup_id``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from ..builders import parse_key, view_select
from ..errors import ConfigError
from .times import check_time_fit, check_time_format, column_kind, quoted, time_column

if TYPE_CHECKING:
    from pyspark.sql import Column

__all__ = ["NO_KEY", "ColumnMapping", "dataset_columns", "view_columns"]


@dataclass(frozen=True)
class ColumnMapping:
    """Which columns of a user's dataset hold what, and how its times are written.

    ``event_time`` (read with ``time_format``: ``auto``, ``epoch_s``,
    ``epoch_ms`` or a Spark datetime pattern) is required; ``key`` is the
    grouping column (``None``: one global group); ``value`` the column an
    aggregate reads; ``dedup_id`` identifies duplicate deliveries;
    ``arrival`` (read with ``arrival_format``) is when each row arrived.
    Names are checked here; :meth:`check_columns` checks them against a
    dataset's columns and types.
    """

    event_time: str = "event_time"
    time_format: str = "auto"
    key: str | None = "key"
    value: str | None = None
    dedup_id: str | None = None
    arrival: str | None = None
    arrival_format: str = "auto"

    def __post_init__(self) -> None:
        for name in ("event_time", "key", "value", "dedup_id", "arrival"):
            given = getattr(self, name)
            if given is None and name != "event_time":
                continue
            if not isinstance(given, str) or not given.strip():
                raise ConfigError(f"columns.{name}", given, "must name a column")
        check_time_format(self.time_format, "columns.time_format")
        check_time_format(self.arrival_format, "columns.arrival_format")
        for role in ("key", "value", "dedup_id", "arrival"):
            if getattr(self, role) == self.event_time:
                raise ConfigError(f"columns.{role}", self.event_time, f"is the event-time column; {role} must be another column")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> ColumnMapping:
        """The mapping ``values`` describe (as :meth:`to_dict` gives them); :class:`ConfigError` for a name it does not know."""
        known = {item.name for item in fields(cls)}
        for name in values:
            if name not in known:
                raise ConfigError("columns", name, f"is not a role of a column mapping ({', '.join(sorted(known))})")
        return cls(**values)

    def to_dict(self) -> dict[str, str | None]:
        return {item.name: getattr(self, item.name) for item in fields(self)}

    def __str__(self) -> str:
        formats = {"event_time": self.time_format, "arrival": self.arrival_format}
        return ", ".join(f"{role}={name}" + (f" ({formats[role]})" if role in formats else "") for role, name in self.roles().items()) + (
            "" if self.key is not None else ", no key"
        )

    def roles(self) -> dict[str, str]:
        """The columns used, by role (``event_time``, ``key``, ...), leaving out the roles not set."""
        return {name: given for name in ("event_time", "key", "value", "dedup_id", "arrival") if (given := getattr(self, name)) is not None}

    def check_columns(self, schema: dict[str, str]) -> None:
        """:class:`ConfigError` unless every column named exists in ``schema`` (name → Spark type) with a type that fits its role."""
        for role, name in self.roles().items():
            if name not in schema:
                raise ConfigError(f"columns.{role}", name, f"is not a column of the dataset (columns: {', '.join(schema)})")
        check_time_fit(self.time_format, schema[self.event_time], "columns.time_format")
        if self.arrival is not None:
            check_time_fit(self.arrival_format, schema[self.arrival], "columns.arrival_format")
        if self.value is not None and column_kind(schema[self.value]) not in ("number", "text"):
            raise ConfigError("columns.value", self.value, f"is of type {schema[self.value]}, not a number")


NO_KEY = "all"
"""The key of every row when a dataset is grouped by no column (one global group per window)."""


def dataset_columns(mapping: ColumnMapping, schema: Mapping[str, str], no_key: str = NO_KEY) -> list[Column]:
    """``event_time``, ``key`` (and ``value`` and ``dedup_id`` when mapped, as they are) of a user's dataset, read as ``mapping`` says from columns of Spark types ``schema``.

    Like :func:`~streaming.engine.data.feeds.event_columns`: an event time that does not parse and an empty
    key are null (the query counts and leaves out such rows). Without a key
    column every row gets the key ``no_key``: one global group.
    """
    from pyspark.sql import functions as F

    mapping.check_columns(dict(schema))
    event_time = time_column(mapping.event_time, mapping.time_format, schema[mapping.event_time], "columns.time_format")
    key = F.lit(no_key) if mapping.key is None else parse_key(F.col(quoted(mapping.key)))
    value = [] if mapping.value is None else [F.col(quoted(mapping.value)).alias("value")]
    dedup_id = [] if mapping.dedup_id is None else [F.col(quoted(mapping.dedup_id)).alias("dedup_id")]
    return [event_time.alias("event_time"), key.alias("key"), *value, *dedup_id]


def view_columns(mapping: ColumnMapping, schema: Mapping[str, str]) -> list[Column]:
    """Every column of ``schema`` (name → Spark type) under its own name, as a user's SQL sees a dataset: the event-time column read as
    ``mapping`` says (a timestamp, null where it does not parse), the others as they are."""
    mapping.check_columns(dict(schema))
    check_time_fit(mapping.time_format, schema[mapping.event_time], "columns.time_format")
    return view_select(dict(schema), mapping.event_time, mapping.time_format)
