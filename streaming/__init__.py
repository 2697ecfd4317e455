"""Streaming Lab's library: configure, run, observe and measure Spark Structured Streaming queries.

Layered, each layer importing only those below it: ``engine`` (itself a stack of
packages: runtime, data, kafka, output, sources, query, sql, run, join), ``analysis``
(exact answers, lateness, the watermark model, measures, tuning, Compare, explain),
``charts`` (pure Plotly figures), ``export`` (Show code), ``report`` (HTML reports), ``app`` (the use
cases the front ends share: a run as a refresh of its page shows it) and ``cli`` on top; ``docs/architecture.md`` maps them. No Streamlit here: a notebook or the CLI uses it
the same way the dashboard does.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOMES = {
    **dict.fromkeys(("DurationError", "format_duration", "parse_duration"), ".engine.durations"),
    "ConfigError": ".engine.errors",
    **dict.fromkeys(("FeedSource", "GeneratorSource", "QueryConfig", "RateMicroBatchSource", "RateSource", "SocketSource"), ".engine.query.config"),
}
"""Where each name above lives, imported on first use: importing a light module of the package (the session's, for a server that
starts Spark before it imports anything else) must not import the query's configuration, and pandas with it (1.7 s on 2 cores)."""


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(import_module(_HOMES[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
