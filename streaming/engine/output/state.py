"""What a query's state holds, read from its checkpoint with Spark's State Data Source.

``spark.read.format("state-metadata")`` lists a checkpoint's stateful
operators (:func:`state_operators`); ``spark.read.format("statestore")`` reads
the state of an operator at the latest committed batch (:func:`state_rows`,
its key and value flattened into columns). For session windows (operator ``sessionWindowStateStoreSaveExec``)
every row is a session still open: its value holds the session window, the
grouping key and the aggregation buffers, the last of which is the count of
rows the query builder adds to every aggregation
(:func:`~streaming.engine.run.query.windowed_counts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import ConfigError
from ..runtime.session import is_connect
from .results import stamp

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["OPEN_SESSION_COLUMNS", "OPERATOR_COLUMNS", "join_side_state", "open_sessions", "state_operators", "state_report", "state_rows"]

OPERATOR_COLUMNS = ["operator_id", "operator", "store", "partitions", "min_batch", "max_batch"]

OPEN_SESSION_COLUMNS = ["window_start", "window_end", "key", "count"]
WINDOW_OPERATOR = "stateStoreSave"
"""The stateful operator of a windowed aggregation."""
SESSION_OPERATOR = "sessionWindowStateStoreSaveExec"
"""The stateful operator of ``session_window`` (``format("state-metadata")``'s ``operatorName``); with deduplication it is not the only one."""


def open_sessions(spark: SparkSession, checkpoint: Path) -> pd.DataFrame:
    """The sessions the state of ``checkpoint`` still holds: ``window_start, window_end, key, count`` (UTC-naive), sorted.

    Empty when the query has committed no state (no batch yet). A session
    query in append mode emits a session only once the watermark passes its
    end: these are the sessions its result does not hold yet.
    """
    from pyspark.sql import functions as F

    if not _has_state(checkpoint):
        return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in zip(OPEN_SESSION_COLUMNS, ("datetime64[ns]", "datetime64[ns]", object, "int64"))})
    operators = state_operators(spark, checkpoint)
    sessions = operators.loc[operators["operator"] == SESSION_OPERATOR, "operator_id"]
    if sessions.empty:
        raise ConfigError("checkpoint", str(checkpoint), f"holds no session window state (no {SESSION_OPERATOR} operator)")
    state = _state(spark, checkpoint, int(sessions.iloc[0]))
    count = state.select("value.*").columns[-1]  # the last buffer: the row count the builder adds
    rows = state.select(
        F.unix_micros("value.session_window.start").alias("window_start"),
        F.unix_micros("value.session_window.end").alias("window_end"),
        F.col("value.key").alias("key"),
        F.col("value").getField(count).alias("count"),
    ).collect()
    frame = pd.DataFrame([tuple(row) for row in rows], columns=OPEN_SESSION_COLUMNS)
    for name in ("window_start", "window_end"):
        frame[name] = pd.to_datetime(frame[name].astype("int64"), unit="us")
    frame["count"] = frame["count"].astype("int64")
    return frame.sort_values(["window_start", "window_end", "key"], ignore_index=True)


def _state(spark: SparkSession, checkpoint: Path, operator_id: int) -> DataFrame:
    """Operator ``operator_id``'s state as ``key`` and ``value`` structs whose field names are unique.

    Aggregation buffers may share a name (avg's and the row count are both
    "count"): the structs are cast, by position, to ones with unique names, so
    that every field can be selected.
    """
    from pyspark.sql import functions as F

    _start_coordinator(spark)
    state = spark.read.format("statestore").option("operatorId", int(operator_id)).load(str(checkpoint))
    key_type, value_type = _unique_names(state.schema["key"].dataType), _unique_names(state.schema["value"].dataType)
    return state.select(F.col("key").cast(key_type).alias("key"), F.col("value").cast(value_type).alias("value"))


def _start_coordinator(spark: SparkSession) -> None:
    """Make sure the driver runs its state store coordinator, which the State Data Source asks (Spark 4.2).

    Spark starts it with a session's streaming query manager; a session that
    has started no query (the ``state`` command's) has none, and the read fails
    with ``Cannot find endpoint: spark://StateStoreCoordinator``.
    """
    if not is_connect(spark):
        spark.streams  # noqa: B018 - creating the manager starts the coordinator


def join_side_state(spark: SparkSession, checkpoint: Path, side: str, batch_id: int) -> pd.DataFrame:
    """The rows of a stream-stream join's ``side`` (``left``/``right``) in its state after micro-batch ``batch_id``: the side's columns as the
    join holds them; empty before the query has committed state."""
    if not _has_state(checkpoint):
        return pd.DataFrame()
    _start_coordinator(spark)
    state = spark.read.format("statestore").option("joinSide", side).option("batchId", int(batch_id)).load(str(checkpoint))
    return state.select("value.*").toPandas()


def _has_state(checkpoint: Path) -> bool:
    return (Path(checkpoint) / "state").is_dir()


def state_operators(spark: SparkSession, checkpoint: Path) -> pd.DataFrame:
    """The stateful operators of the query whose checkpoint is ``checkpoint``: :data:`OPERATOR_COLUMNS`; empty before its first committed state."""
    if not _has_state(checkpoint):
        return pd.DataFrame(columns=OPERATOR_COLUMNS)
    rows = spark.read.format("state-metadata").load(str(checkpoint)).select(
        "operatorId", "operatorName", "stateStoreName", "numPartitions", "minBatchId", "maxBatchId"
    ).orderBy("operatorId").collect()
    return pd.DataFrame([tuple(row) for row in rows], columns=OPERATOR_COLUMNS)


def state_schema(spark: SparkSession, checkpoint: Path, operator_id: int) -> tuple[str, str]:
    """``(key, value)``: the schemas, as JSON, of operator ``operator_id``'s state in ``checkpoint`` (as the State Data Source reads it)."""
    _start_coordinator(spark)
    state = spark.read.format("statestore").option("operatorId", int(operator_id)).load(str(checkpoint))
    return state.schema["key"].dataType.json(), state.schema["value"].dataType.json()


def _unique_names(data_type):
    """``data_type`` with every struct's repeated field names made unique (``count``, ``count_2``), recursively."""
    from pyspark.sql.types import StructField, StructType

    if not isinstance(data_type, StructType):
        return data_type
    seen: dict[str, int] = {}
    fields = []
    for field in data_type.fields:
        seen[field.name] = seen.get(field.name, 0) + 1
        name = field.name if seen[field.name] == 1 else f"{field.name}_{seen[field.name]}"
        fields.append(StructField(name, _unique_names(field.dataType), field.nullable))
    return StructType(fields)


def _leaves(data_type, path: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
    from pyspark.sql.types import StructType

    if isinstance(data_type, StructType):
        return [leaf for field in data_type.fields for leaf in _leaves(field.dataType, (*path, field.name))]
    return [(path, data_type.typeName())]


def state_rows(spark: SparkSession, checkpoint: Path, operator_id: int = 0, limit: int | None = 1000) -> pd.DataFrame:
    """The rows operator ``operator_id``'s state holds now, at most ``limit``: every field of its key and value as a column.

    ``limit=None`` reads them all. A column is named by its field (``window_start``, ``window_end``, ``key``,
    ``count`` for a windowed count), prefixed with ``value_`` when the key has
    a field of that name; times are UTC text. A state holding windows gets
    ``evicted_at_watermark``: the window's end, the watermark at which Spark
    emits (append) and evicts it; a deduplication's ``expiresAtMicros`` is
    shown as ``expires_at_watermark``.
    """
    from pyspark.sql import functions as F

    if not _has_state(checkpoint):
        return pd.DataFrame()
    state = _state(spark, checkpoint, operator_id)
    columns, names = [], []
    for path, type_name in _leaves(state.schema["key"].dataType, ("key",)) + _leaves(state.schema["value"].dataType, ("value",)):
        name = "_".join(path[1:]) or path[0]
        if name in names:
            name = f"{path[0]}_{name}"
        column = F.col(path[0])
        for part in path[1:]:
            column = column.getField(part)
        if type_name in ("timestamp", "timestamp_ntz"):
            column = F.date_format(column, "yyyy-MM-dd HH:mm:ss.SSS")
        elif path[-1] == "expiresAtMicros":  # dropDuplicatesWithinWatermark: the id is forgotten once the watermark passes this
            column, name = F.date_format(F.timestamp_micros(column), "yyyy-MM-dd HH:mm:ss.SSS"), "expires_at_watermark"
        columns.append(column.alias(name))
        names.append(name)
    selected = state.select(*columns)
    rows = (selected if limit is None else selected.limit(int(limit))).collect()
    frame = pd.DataFrame([tuple(row) for row in rows], columns=names)
    if "window_end" in frame:
        frame["evicted_at_watermark"] = frame["window_end"]
        frame = frame.sort_values([name for name in ("window_start", "window_end", "key") if name in frame], ignore_index=True)
    return frame



def state_report(spark: SparkSession, checkpoint: Path, operator_id: int | None = None, *, keyless: bool = False) -> dict[str, Any]:
    """What the state of ``checkpoint`` holds, as JSON-friendly values: ``operators``, the ``operator`` read and its ``rows``.

    By default the aggregation's operator is read (else the first). A windowed
    count's rows are ``window_start, window_end, key, count`` (times as the
    replay writes them, ``key`` null with ``keyless``); a session window's
    likewise (the sessions still open); any other state's rows are its key and
    value columns (:func:`state_rows`).
    """

    operators = state_operators(spark, checkpoint)
    listed = [
        {name: (int(value) if name not in ("operator", "store") else str(value)) for name, value in zip(OPERATOR_COLUMNS, row)}
        for row in operators.itertuples(index=False)
    ]
    if operators.empty:
        return {"operators": [], "operator": None, "rows": []}
    names = dict(zip(operators["operator_id"].astype(int), operators["operator"]))
    if operator_id is None:
        operator_id = next((found for found, name in names.items() if name in (WINDOW_OPERATOR, SESSION_OPERATOR)), min(names))
    if operator_id not in names:
        raise ConfigError("operator", operator_id, f"is not an operator of {checkpoint} (operators: {', '.join(map(str, names))})")
    if names[operator_id] == SESSION_OPERATOR:
        frame = open_sessions(spark, checkpoint)
    else:
        frame = state_rows(spark, checkpoint, operator_id, limit=None)
        if list(frame.columns[:4]) == OPEN_SESSION_COLUMNS and names[operator_id] == WINDOW_OPERATOR:
            frame = frame[OPEN_SESSION_COLUMNS].copy()
            for name in ("window_start", "window_end"):
                frame[name] = pd.to_datetime(frame[name])
    rows = []
    for record in frame.to_dict("records"):
        for name, value in record.items():
            if isinstance(value, pd.Timestamp):
                record[name] = stamp(value)
            elif hasattr(value, "item"):
                record[name] = value.item()
        if keyless and "key" in record:
            record["key"] = None
        rows.append(record)
    return {"operators": listed, "operator": int(operator_id), "rows": rows}
