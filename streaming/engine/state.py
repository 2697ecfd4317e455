"""What a query's state holds, read from its checkpoint with Spark's State Data Source.

``spark.read.format("statestore")`` reads the state of a checkpoint's latest
committed batch. For session windows (operator ``sessionWindowStateStoreSaveExec``)
every row is a session still open: its value holds the session window, the
grouping key and the aggregation buffers, the last of which is the count of
rows the query builder adds to every aggregation
(:func:`~streaming.engine.query.windowed_counts`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from .errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["OPEN_SESSION_COLUMNS", "open_sessions"]

OPEN_SESSION_COLUMNS = ["window_start", "window_end", "key", "count"]
SESSION_OPERATOR = "sessionWindowStateStoreSaveExec"
"""The stateful operator of ``session_window`` (``format("state-metadata")``'s ``operatorName``); with deduplication it is not the only one."""


def open_sessions(spark: SparkSession, checkpoint: Path) -> pd.DataFrame:
    """The sessions the state of ``checkpoint`` still holds: ``window_start, window_end, key, count`` (UTC-naive), sorted.

    Empty when the query has committed no state (no batch yet). A session
    query in append mode emits a session only once the watermark passes its
    end: these are the sessions its result does not hold yet.
    """
    from pyspark.sql import functions as F

    if not (Path(checkpoint) / "state").is_dir():
        return pd.DataFrame({name: pd.Series(dtype=dtype) for name, dtype in zip(OPEN_SESSION_COLUMNS, ("datetime64[ns]", "datetime64[ns]", object, "int64"))})
    operators = spark.read.format("state-metadata").load(str(checkpoint)).where(F.col("operatorName") == SESSION_OPERATOR).collect()
    if not operators:
        raise ConfigError("checkpoint", str(checkpoint), f"holds no session window state (no {SESSION_OPERATOR} operator)")
    reader = spark.read.format("statestore").option("operatorId", operators[0]["operatorId"])
    values = reader.load(str(checkpoint)).select("value.*")
    names = values.columns  # buffers may share a name (avg's and the row count are both "count"): by position
    values = values.toDF(*(f"field_{index}" for index in range(len(names))))
    window, key, count = (f"field_{names.index('session_window')}", f"field_{names.index('key')}", f"field_{len(names) - 1}")
    rows = values.select(
        F.unix_micros(F.col(window).getField("start")).alias("window_start"),
        F.unix_micros(F.col(window).getField("end")).alias("window_end"),
        F.col(key).alias("key"),
        F.col(count).alias("count"),
    ).collect()
    frame = pd.DataFrame([tuple(row) for row in rows], columns=OPEN_SESSION_COLUMNS)
    for name in ("window_start", "window_end"):
        frame[name] = pd.to_datetime(frame[name].astype("int64"), unit="us")
    frame["count"] = frame["count"].astype("int64")
    return frame.sort_values(["window_start", "window_end", "key"], ignore_index=True)
