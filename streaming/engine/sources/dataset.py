"""A user's dataset replayed: its files read with the schema Spark infers once, cut into micro-batches by its batching rule.

The columns and types come from one batch read of every file (CSV as text,
JSON lines inferred, Parquet as written: :func:`~streaming.engine.data.preview.read_dataset`),
checked against the column mapping before the stream starts; then the files
of its micro-batches (:func:`~streaming.engine.data.batching.cut_batches`) are
handed to Spark one per micro-batch by a :class:`~.replayer.FeedReplayer`,
paced by ``seconds_per_file`` or by the arrival column × a speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import builders
from ..data.batching import Batching, arrival_pauses, cut_batches
from ..data.columns import ColumnMapping, dataset_columns, view_columns
from ..data.datasets import FileFormat
from ..data.preview import dataset_read, dataset_schema, read_dataset, stream_schema
from .replayer import FeedReplayer, handed_over

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["dataset_frame", "dataset_rows", "view_batch"]


def dataset_frame(
    spark: SparkSession, files: Sequence[Path], file_format: FileFormat, columns: ColumnMapping, batching: Batching, staging: Path, *,
    seconds_per_file: float, speed: float | None, arrival_format: str, view: bool = False,
) -> tuple[DataFrame, FeedReplayer]:
    """The stream of a dataset's micro-batches (see the module docstring), each row with when its batch was handed over (``produced_ms``), and the replayer that hands them over.

    With ``view`` the rows are those of a SQL view (:func:`view_batch`), without ``produced_ms``.
    """
    batch = view_batch(spark, files, file_format, columns) if view else read_dataset(spark, files, file_format)
    schema, struct = dataset_schema(batch), stream_schema(batch)
    selected = view_columns(columns, schema) if view else [*dataset_columns(columns, schema)]
    cut = cut_batches(spark, files, file_format, batching, staging.parent / "batches", time_format=arrival_format, schema=schema, struct=struct)
    pauses = arrival_pauses(cut.arrivals, speed) if speed is not None and cut.arrivals is not None else None
    replayer = FeedReplayer(cut.files, staging, seconds_per_file, pauses)
    raw = builders.file_stream(spark, struct, file_format, str(staging))
    return raw.select(*selected, *([] if view else [handed_over(raw)])), replayer


def dataset_rows(spark: SparkSession, files: Sequence[Path], file_format: FileFormat, columns: ColumnMapping, *, view: bool = False) -> DataFrame:
    """Every row of a dataset as one batch DataFrame of the columns its stream yields (with ``view``, those of its SQL view)."""
    if view:
        batch = view_batch(spark, files, file_format, columns)
        return batch.select(*view_columns(columns, dataset_schema(batch)))
    batch = read_dataset(spark, files, file_format)
    return batch.select(*dataset_columns(columns, dataset_schema(batch)))


def view_batch(spark: SparkSession, files: Sequence[Path], file_format: FileFormat, columns: ColumnMapping | None) -> DataFrame:
    """A dataset's rows typed for a user's SQL (:func:`~streaming.engine.builders.view_batch`); :class:`ConfigError` naming the dataset when
    Spark cannot read its files."""
    with dataset_read(files, file_format):
        return builders.view_batch(
            spark, [str(path) for path in files], file_format, None if columns is None else columns.event_time, "auto" if columns is None else columns.time_format,
        )


