"""Rewrite the generated sample feeds (web_clicks, sensor_readings) from their specs.

Run from anywhere: ``python sample_feeds/regenerate.py``. The specs live in
:func:`streaming.feedgen.sample_specs`; guide_words is hand-written and untouched.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from streaming.feedgen import regenerate_samples  # noqa: E402

if __name__ == "__main__":
    for name, paths in regenerate_samples(HERE).items():
        print(f"{name}: {len(paths)} batch files, {sum(p.stat().st_size for p in paths)} bytes")
