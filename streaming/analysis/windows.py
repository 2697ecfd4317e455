"""Spark's window assignment, written once: which windows ``[start, end)`` hold an event time.

Windows are aligned to the epoch: window ``k`` is ``[k * slide, k * slide + window)``,
so an event at ``t`` is in every window with ``t - window < k * slide <= t``, that is
``k`` from ``(t - window) // slide + 1`` to ``t // slide`` (``floor(window / slide)``
or ``ceil(window / slide)`` windows). The watermark model
(:mod:`~streaming.analysis.model`), the event-by-event judgement
(:mod:`~streaming.analysis.lateness`) and the explanation of one run
(:mod:`~streaming.analysis.explain`) all ask this module, in nanoseconds.
"""

from __future__ import annotations

from typing import TypeVar

import numpy as np

from ..engine.errors import ConfigError

__all__ = ["NS_PER_MS", "window_indices", "window_pairs", "window_span"]

NS_PER_MS = 1_000_000
Times = TypeVar("Times", int, np.ndarray)


def window_span(window_ms: int, slide_ms: int | None = None) -> tuple[int, int]:
    """``(window_ns, slide_ns)`` of windows of ``window_ms`` sliding by ``slide_ms`` (tumbling when ``None``).

    :class:`ConfigError` naming ``window_ms`` or ``slide_ms`` when the window is not above 0 or the slide is not above 0 and at most the window.
    """
    slide_ms = window_ms if slide_ms is None else slide_ms
    if window_ms <= 0:
        raise ConfigError("window_ms", window_ms, "must be above 0")
    if not 0 < slide_ms <= window_ms:
        raise ConfigError("slide_ms", slide_ms, f"must be above 0 and at most the window ({window_ms} ms)")
    return window_ms * NS_PER_MS, slide_ms * NS_PER_MS


def window_indices(t_ns: Times, window_ns: int, slide_ns: int) -> tuple[Times, Times]:
    """``(first, last)``: the indices ``k`` of the first and last window holding each time of ``t_ns`` (an int or an int64 array)."""
    return (t_ns - window_ns) // slide_ns + 1, t_ns // slide_ns


def window_pairs(t_ns: np.ndarray, window_ns: int, slide_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (event, window) pair of the times ``t_ns``: ``(event, start_ns)``, the index of the time and its window's start.

    Pairs come window by window back from each time's latest window (its latest windows first, then the ones before).
    """
    last_start = t_ns - np.mod(t_ns, slide_ns)
    events, starts = [], []
    for back in range(-(-window_ns // slide_ns)):
        start = last_start - back * slide_ns
        holds = t_ns < start + window_ns
        events.append(np.flatnonzero(holds))
        starts.append(start[holds])
    return np.concatenate(events).astype("int64"), np.concatenate(starts).astype("int64")
