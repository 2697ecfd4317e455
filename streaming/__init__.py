"""Streaming Lab's library: configure, run, observe and measure Spark Structured Streaming queries.

Layered, each layer importing only those below it: ``engine`` (configuration,
sources, queries, results, progress, session), ``analysis`` (exact answer,
lateness, measures, tuning, comparison), ``charts`` (pure Plotly figures), and
``export`` and ``cli`` on top. No Streamlit here: a notebook or the CLI uses it
the same way the dashboard does.
"""

from .engine.durations import DurationError, format_duration, parse_duration
from .engine.errors import ConfigError
from .engine.query.config import FeedSource, GeneratorSource, QueryConfig, RateMicroBatchSource, RateSource, SocketSource

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
