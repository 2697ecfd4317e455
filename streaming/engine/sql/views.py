"""The views a user's SQL reads: each a source of the lab under a name, streamed or static, in a session of the run's own.

A streamed view is its source's :meth:`~streaming.engine.sources.base.StreamSource.view_frame`
(every column under its own name, the event time a TIMESTAMP); a static view
is all its rows as one batch (:meth:`~streaming.engine.sources.base.StreamSource.view_rows`),
what a stream-static join looks rows up in. A row whose event time does not
parse is left out of a streamed view and counted (the observed
``malformed_rows``, as the form's query counts it), so one bad row never
fails the query.

Views are temp views of a session made for the run (:func:`sql_session`): it
shares the SparkContext with the app's session but not its temp views, its
SQL settings or its streaming queries, so no other browser session sees or
drops them, and reading files by path in SQL is off there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..builders import INPUT_METRICS, counted_input
from ..data.columns import ColumnMapping, view_columns
from ..data.datasets import FORMATS, FileFormat, detect_format
from ..data.feeds import feed_files
from ..data.preview import dataset_schema
from ..data.times import quoted
from ..errors import ConfigError
from ..query.config import source_from_dict, source_to_dict
from ..runtime.session import is_connect
from ..sources import StreamSource
from ..sources.dataset import view_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from ..sources import Feeder

__all__ = ["DEFAULT_VIEW", "SqlView", "TableFiles", "sql_session"]

DEFAULT_VIEW = "events"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
SQL_SESSION_SETTINGS = {"spark.sql.runSQLOnFiles": "false", "spark.sql.variable.substitute": "false"}
"""Settings of a run's own session: ``csv.`/path``` and the like read nothing, ``${...}`` is not replaced (the checks refuse both first)."""


@dataclass(frozen=True)
class TableFiles:
    """A dataset read whole as a static view (a lookup table): every column as its type reads, an event-time column only if ``columns`` names one
    the data has (then a TIMESTAMP, as in a streamed view). A table needs no time of its own."""

    path: Path
    file_format: FileFormat | None = None
    columns: ColumnMapping | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.exists():
            raise ConfigError("view.path", str(self.path), "is not a folder or a file")
        if self.file_format is None:
            object.__setattr__(self, "file_format", detect_format(self.path))
        if not self.files():
            raise ConfigError("view.path", str(self.path), f"holds no {self.file_format} files")

    kind: ClassVar[str] = "table_files"
    as_topic: ClassVar[None] = None
    as_feed: ClassVar[None] = None
    """A table is neither a topic nor a replayed feed: only its files are read (:attr:`as_files`)."""

    @property
    def as_files(self) -> TableFiles:
        return self

    @property
    def label(self) -> str:
        return self.path.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "path": str(self.path.resolve()), "file_format": self.file_format,
            "columns": None if self.columns is None else self.columns.to_dict(),
        }

    @classmethod
    def from_dict(cls, values: Mapping[str, Any], field_name: str = "view.source") -> TableFiles:
        given = {name: value for name, value in values.items() if name != "kind"}
        unknown = sorted(set(given) - {"path", "file_format", "columns"})
        if unknown:
            raise ConfigError(f"{field_name}.{unknown[0]}", given[unknown[0]], "is not a field of a table of files")
        columns = given.get("columns")
        return cls(Path(given.get("path", "")), given.get("file_format"), None if columns is None else ColumnMapping.from_dict(columns))

    def files(self) -> list[Path]:
        fmt = self.file_format or "csv"
        if self.path.is_file():
            return [self.path] if FORMATS.get(self.path.suffix.lower()) == fmt else []
        return feed_files(self.path, fmt)

    def view_rows(self, spark: SparkSession) -> DataFrame:
        fmt = self.file_format or "csv"
        batch = view_batch(spark, self.files(), fmt, self.columns)
        if self.columns is None or self.columns.event_time not in batch.columns:
            return batch
        return batch.select(*view_columns(replace(self.columns, key=None, value=None, dedup_id=None, arrival=None), dataset_schema(batch)))


@dataclass(frozen=True)
class SqlView:
    """``source`` seen by a user's SQL as the view ``name``: streamed (micro-batch by micro-batch) or, with ``static``, read whole once
    (a source, or a :class:`TableFiles`, which only a static view reads)."""

    name: str
    source: StreamSource | TableFiles
    static: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _NAME.fullmatch(self.name) is None:
            raise ConfigError("view", self.name, "must be a name of letters, digits and underscores, not starting with a digit (at most 64)")
        if not isinstance(self.static, bool):
            raise ConfigError(f"view {self.name}.static", self.static, "must be true or false")
        if not isinstance(self.source, StreamSource) and not (self.static and isinstance(self.source, TableFiles)):
            raise ConfigError(f"view {self.name}", self.source, "is not a source configuration (a table of files is a static view only)")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly values: :meth:`from_dict` makes the view again."""
        return {"name": self.name, "static": self.static, "source": self.source.to_dict() if isinstance(self.source, TableFiles) else source_to_dict(self.source)}

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SqlView:
        """The view ``values`` describe (as :meth:`to_dict` gives them), its source validated again."""
        name = values.get("name")
        source = dict(values.get("source") or {})
        where = f"view {name}.source"
        made = TableFiles.from_dict(source, where) if source.get("kind") == TableFiles.kind else source_from_dict(source, where)
        return cls(str(name), made, bool(values.get("static", False)))

    @property
    def stream(self) -> StreamSource:
        """The source of a streamed view."""
        if not isinstance(self.source, StreamSource):
            raise ConfigError(f"view {self.name}", self.source.label, "is a static table, not a stream")
        return self.source

    @property
    def event_time(self) -> str:
        """The streamed view's event-time column (a TIMESTAMP)."""
        return self.stream.event_time_column

    def frame(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder | None]:
        """``(frame, feeder)``: the view's rows; a streamed view's malformed rows (no event time) counted and left out."""
        from pyspark.sql import functions as F

        if self.static:
            return self.source.view_rows(spark), None
        frame, feeder = self.stream.view_frame(spark, staging, now_ms)
        return counted_input(frame, F.col(quoted(self.event_time)).isNull(), f"{INPUT_METRICS}_{self.name}"), feeder



def sql_session(spark: SparkSession) -> SparkSession:
    """A session of its own for one run's views (see the module docstring); :class:`ConfigError` on Spark Connect, where the plan cannot be checked from here."""
    if is_connect(spark):
        raise ConfigError(
            "query", "SQL", "runs on a classic session only for now: on Spark Connect the app cannot check a query's analysed plan before it runs",
        )
    session = spark.newSession()
    for name, value in SQL_SESSION_SETTINGS.items():
        session.conf.set(name, value)
    return session
