"""Streaming Lab's library: configure, run, observe and measure Spark Structured Streaming queries.

Layered, each layer importing only those below it: ``engine`` (itself a stack of
packages: runtime, data, kafka, output, sources, query, sql, run, join), ``analysis``
(exact answers, lateness, the watermark model, measures, tuning, Compare, explain),
``charts`` (pure Plotly figures), ``export`` (Show code), ``report`` (HTML reports), ``app`` (the use
cases the front ends share: a run as a refresh of its page shows it) and ``cli`` on top; ``docs/architecture.md`` maps them. No Streamlit here: a notebook or the CLI uses it
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
