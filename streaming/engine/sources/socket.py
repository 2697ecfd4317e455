"""Spark's ``socket`` source, fed a sample feed's rows line by line by a server the app starts on 127.0.0.1."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..checks import require_positive
from ..data.feeds import event_columns, feed_files, feed_header
from ..errors import ConfigError
from .base import Feeder, StreamSource

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["LineServer", "SocketSource"]


class LineServer:
    """A TCP server on 127.0.0.1 that sends a feed's data lines to one client, ``lines_per_second`` at a time.

    Spark's socket source connects once and reads lines; the server sends the
    feed's rows (without headers) in file order and then keeps the connection
    open until :meth:`stop`.
    """

    def __init__(self, files: list[Path], lines_per_second: float) -> None:
        self.files = list(files)
        self.interval = 1.0 / lines_per_second
        self.sent = 0
        self.done = threading.Event()
        self.handed_files: dict[str, int] | None = None
        """Lines, not files: its source counts no files."""
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.5)
        self.port: int = self._server.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, name="line-server", daemon=True)

    def _lines(self) -> Iterator[str]:
        for path in self.files:
            with path.open(newline="") as handle:
                next(handle, None)
                for line in handle:
                    if line.strip():
                        yield line.rstrip("\r\n") + "\n"

    def _serve(self) -> None:
        connection = None
        while connection is None and not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
        if connection is None:
            return
        with connection:
            for line in self._lines():
                if self._stop.wait(self.interval):
                    return
                try:
                    connection.sendall(line.encode())
                except OSError:
                    return
                self.sent += 1
            self.done.set()
            self._stop.wait()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._server.close()

    def on_lost(self, tell: Callable[[str], None]) -> None:
        """Never lost: a closed connection is Spark's socket source's to report."""


@dataclass(frozen=True)
class SocketSource(StreamSource):
    """Spark's ``socket`` source, fed from a feed folder by a line server the app starts on 127.0.0.1."""

    path: Path
    lines_per_second: float = 20.0
    kind: Literal["socket"] = field(default="socket", init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))
        if not self.path.is_dir():
            raise ConfigError("source.path", str(self.path), "is not a folder")
        feed_header(self.path)
        require_positive("source.lines_per_second", self.lines_per_second)

    @property
    def resumable(self) -> bool:
        return False  # the socket source keeps no offsets

    @property
    def label(self) -> str:
        return self.path.name

    def read(self, spark: SparkSession, staging: Path, now_ms: int) -> tuple[DataFrame, Feeder]:
        from pyspark.sql import functions as F

        header = feed_header(self.path)
        server = LineServer(feed_files(self.path), self.lines_per_second)
        fields = F.split(F.col("value"), ",")
        frame = (
            spark.readStream.format("socket")
            .option("host", "127.0.0.1")
            .option("port", server.port)
            .load()
            .select(
                *event_columns(
                    F.try_element_at(fields, F.lit(header.index("event_time") + 1)),
                    F.try_element_at(fields, F.lit(header.index("key") + 1)),
                )
            )
        )
        return frame, server
