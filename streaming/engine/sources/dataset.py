"""A user's dataset replayed: its files read with the schema Spark infers once, cut into micro-batches by its batching rule.

The columns and types come from one batch read of every file (CSV as text,
JSON lines inferred, Parquet as written: :func:`~streaming.engine.preview.read_dataset`),
checked against the column mapping before the stream starts; then the files
of its micro-batches (:func:`~streaming.engine.batching.cut_batches`) are
handed to Spark one per micro-batch by a :class:`~.replayer.FeedReplayer`,
paced by ``seconds_per_file`` or by the arrival column × a speed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..batching import Batching, arrival_pauses, cut_batches
from ..columns import ColumnMapping, dataset_columns, view_columns
from ..datasets import FileFormat
from ..preview import dataset_schema, read_dataset, stream_schema
from .replayer import FeedReplayer, handed_over

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = ["dataset_frame", "dataset_rows", "file_stream", "view_batch"]


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
    raw = file_stream(spark, struct, file_format, staging)
    return raw.select(*selected, *([] if view else [handed_over(raw)])), replayer


def file_stream(spark: SparkSession, struct: StructType, file_format: FileFormat, folder: Path) -> DataFrame:
    """Spark's file source over ``folder``: one file per micro-batch (``maxFilesPerTrigger=1``), read with ``struct``; a malformed CSV or JSON row becomes nulls, never a failed query."""
    reader = spark.readStream.schema(struct).option("maxFilesPerTrigger", 1)
    if file_format == "csv":
        return reader.option("header", True).option("mode", "PERMISSIVE").csv(str(folder))
    if file_format == "json":
        return reader.option("mode", "PERMISSIVE").json(str(folder))
    return reader.parquet(str(folder))


def dataset_rows(spark: SparkSession, files: Sequence[Path], file_format: FileFormat, columns: ColumnMapping, *, view: bool = False) -> DataFrame:
    """Every row of a dataset as one batch DataFrame of the columns its stream yields (with ``view``, those of its SQL view)."""
    if view:
        batch = view_batch(spark, files, file_format, columns)
        return batch.select(*view_columns(columns, dataset_schema(batch)))
    batch = read_dataset(spark, files, file_format)
    return batch.select(*dataset_columns(columns, dataset_schema(batch)))


def view_batch(spark: SparkSession, files: Sequence[Path], file_format: FileFormat, columns: ColumnMapping | None) -> DataFrame:
    """A dataset's rows typed for a user's SQL: CSV columns as Spark infers them (numbers as numbers, so ``sum(amount)`` adds them), JSON lines
    and Parquet as :func:`~streaming.engine.preview.read_dataset` reads them. An event-time column written in a pattern or as epochs stays text
    for the mapping to read (:func:`~streaming.engine.columns.view_columns`)."""
    if file_format != "csv":
        return read_dataset(spark, files, file_format)
    from pyspark.sql import types as T

    inferred = read_dataset(spark, files, file_format, infer=True)
    if columns is None or columns.time_format == "auto" or columns.event_time not in inferred.columns:
        return inferred
    fields = [T.StructField(item.name, T.StringType()) if item.name == columns.event_time else item for item in inferred.schema.fields]
    return read_dataset(spark, files, file_format, T.StructType(fields))
