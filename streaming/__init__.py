"""Streaming Lab's engine-facing library: configure, run and observe Spark Structured Streaming queries.

No Streamlit here: a notebook or a CLI uses it the same way the dashboard does.
"""

from .config import ConfigError, FeedSource, GeneratorSource, QueryConfig, RateMicroBatchSource, RateSource, SocketSource
from .durations import DurationError, format_duration, parse_duration

__all__ = [
    "ConfigError",
    "DurationError",
    "FeedSource",
    "GeneratorSource",
    "QueryConfig",
    "RateMicroBatchSource",
    "RateSource",
    "SocketSource",
    "format_duration",
    "parse_duration",
]
