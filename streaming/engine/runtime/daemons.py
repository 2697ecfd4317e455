"""Background server processes the lab starts and stops by pid (the Kafka broker, the Spark Connect server).

Both run in a session of their own (they outlive a ``make`` target) and keep a
pid file; these are the two things done with such a pid.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

__all__ = ["alive", "terminate"]


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def terminate(pid: int | None, timeout: float = 30.0) -> None:
    """Stop ``pid`` with SIGTERM and wait for it, with SIGKILL after ``timeout`` seconds; nothing when it is ``None`` or gone."""
    if pid is None or not alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.1)
