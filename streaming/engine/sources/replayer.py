"""Handing files to Spark's file source one micro-batch at a time: the replay of a feed or a dataset."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..builders import stage_file
from ..output.latency import PRODUCED
from .base import Loss, stage_upto

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

__all__ = ["FeedReplayer", "handed_over", "pace", "pace_or_lose", "read_all"]

LOG = logging.getLogger(__name__)


def _folder(path: str | Path) -> str:
    return os.path.realpath(path)


def read_all(handed: Mapping[str, int], sources: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the file sources of a batch's progress (``sources``) have read every file ``handed`` to them (folder → files handed).

    A file source's ``logOffset`` counts the files it has read, one a batch, from 0, also across a resume. A folder two sources read (a
    view joined with itself) is read when the slower has read it; a folder handed files that no source reads (a view the query never
    uses) is passed over. A source that is not a file source of these folders (a topic) has no files to count: never all read.
    """
    read: dict[str, int] = {}
    for source in sources:
        description, end = str(source.get("description") or ""), source.get("endOffset")
        offset = end.get("logOffset") if isinstance(end, dict) else None
        if not (description.startswith("FileStreamSource[") and description.endswith("]")) or not isinstance(offset, int):
            return False
        folder = _folder(description[len("FileStreamSource["):-1].removeprefix("file:"))
        read[folder] = min(read.get(folder, offset + 1), offset + 1)
    counted = {_folder(folder): files for folder, files in handed.items()}
    return any(folder in counted for folder in read) and all(files >= counted[folder] for folder, files in read.items() if folder in counted)


class _Steps(Protocol):
    """What :func:`pace` steps: a replayer, or the replayers of a SQL query's views as one."""

    staged: int

    def stage_next(self) -> bool: ...


def pace(steps: _Steps, pauses: Sequence[float], stop: threading.Event, idle: Callable[[], None] | None) -> None:
    """Hand ``steps`` over one at a time, waiting ``pauses[i]`` seconds after step ``i`` and then, under the quiet rule, for ``idle()``.

    Returns once every step is handed over, once ``stop`` is set, or when ``idle`` raises (the query stopped or failed: nothing is left to pace).
    """
    while steps.stage_next():
        if stop.wait(pauses[min(steps.staged, len(pauses)) - 1] if pauses else 0.0):
            return
        if idle is not None:
            try:
                idle()
            except Exception as err:  # noqa: BLE001 - the query ended under the replay: its own status says why
                LOG.info("paced replay stopped after %d steps: the query ended (%s)", steps.staged, type(err).__name__)
                return
            if stop.is_set():
                return


def pace_or_lose(steps: _Steps, pauses: Sequence[float], stop: threading.Event, idle: Callable[[], None] | None, loss: Loss) -> None:
    """:func:`pace`, on a thread of its own: a step that cannot be handed over (the staging folder went: a kept query's folder deleted under it)
    ends the pace and is told to ``loss``."""
    try:
        pace(steps, pauses, stop, idle)
    except OSError as err:
        LOG.warning("paced replay stopped after %d steps: %s", steps.staged, err)
        loss.lose(f"the replay could not hand its file {steps.staged + 1} over (was its folder deleted?): {err.strerror}: {err.filename}")


def handed_over(raw: DataFrame) -> Column:
    """``produced_ms`` of a row read from a replayer's staging folder: when its file was handed over (its modification time, epoch ms).

    Read from the file source's metadata column, which a column of the data named ``_metadata`` does not hide.
    """
    from pyspark.sql import functions as F

    return F.unix_millis(raw.metadataColumn("_metadata").getField("file_modification_time")).alias(PRODUCED)


class FeedReplayer:
    """Hands a feed's files to Spark's file source one at a time, in file-name order.

    Each file is written atomically into ``staging``; its modification time is
    when it was handed over, in whole milliseconds and strictly increasing (at
    least 1 ms after the file before it, also after the files an earlier run of
    a kept query staged there), so with ``maxFilesPerTrigger=1`` each file is
    exactly one micro-batch, and a row's latency can be measured from its
    file's modification time (Spark's ``_metadata.file_modification_time``). With ``seconds_per_file > 0``, :meth:`start` runs a daemon
    thread that stages one file per interval (or, with ``pauses``, waits
    ``pauses[i]`` seconds after file ``i``); with ``0`` the caller steps it
    with :meth:`stage_next` (the runner does, waiting for the query to go idle
    between files, as a paced stream would) or stages everything with
    :meth:`stage_all`.

    Under the quiet arrival rule (:mod:`streaming.engine.arrival`) a paced
    replay is given :attr:`idle`, which returns once Spark has run every batch
    it has (the no-data batch a watermark move causes included): the thread
    then hands the next file over after its pause *and* after ``idle()``, so
    the batches Spark runs do not depend on how busy the machine is.
    """

    def __init__(self, files: list[Path], staging: Path, seconds_per_file: float, pauses: Sequence[float] | None = None) -> None:
        self.files = list(files)
        self.staging = Path(staging)
        self.seconds_per_file = seconds_per_file
        self.pauses = [float(seconds_per_file)] * len(self.files) if pauses is None else [float(pause) for pause in pauses]
        """Seconds to wait after staging each file before the next (paced replays only)."""
        self.staging.mkdir(parents=True, exist_ok=True)
        earlier = [path for path in self.staging.iterdir() if not path.name.startswith(".")]
        self.staged = len(earlier)
        """Files handed over so far: a staging folder kept from an earlier run goes on after its files."""
        self.done = threading.Event()
        if self.staged >= len(self.files):
            self.done.set()
        self._stop = threading.Event()
        self._last_ms = max((path.stat().st_mtime_ns // 1_000_000 for path in earlier), default=0)
        self._thread: threading.Thread | None = None
        self._loss = Loss()
        self.idle: Callable[[], None] | None = None
        """Under the quiet rule: waits until Spark is idle; the paced thread calls it before handing each next file over."""

    @property
    def stepped(self) -> bool:
        """True when the caller, not a thread, decides when the next file is staged."""
        return self.seconds_per_file == 0

    first_at_start = False
    """Spark waits for the first file a press hands over."""

    @property
    def handed_files(self) -> dict[str, int]:
        return {str(self.staging): self.staged}

    @property
    def paced(self) -> bool:
        return not self.stepped

    def start_quiet(self, idle: Callable[[], None]) -> None:
        self.idle = idle
        self.start()

    @property
    def steps(self) -> int:
        """Files in the feed: one micro-batch each."""
        return len(self.files)

    def stage_next(self) -> bool:
        """Stage the next file; ``False`` when every file is staged already."""
        index = self.staged
        if index >= len(self.files):
            self.done.set()
            return False
        self._last_ms = max(time.time_ns() // 1_000_000, self._last_ms + 1)
        stage_file(self.files[index], self.staging, index, self._last_ms)
        self.staged = index + 1
        if self.staged == len(self.files):
            self.done.set()
        return True

    def stage_all(self, upto: int | None = None) -> None:
        stage_upto(self, upto)

    def _run(self) -> None:
        pace_or_lose(self, self.pauses, self._stop, self.idle, self._loss)

    def on_lost(self, tell: Callable[[str], None]) -> None:
        self._loss.on_lost(tell)

    def start(self) -> None:
        if not self.stepped:
            self._thread = threading.Thread(target=self._run, name="feed-replayer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
