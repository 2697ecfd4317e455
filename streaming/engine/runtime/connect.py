"""A local Spark Connect server started from the project's own pyspark, for users (``make connect``) and tests.

The pip ``pyspark`` package is a Spark home: it ships the Connect server jar
and ``sbin/spark-daemon.sh`` (not ``start-connect-server.sh``, which only the
full distribution has: that script is one line, ``spark-daemon.sh submit`` of
the server class). :class:`ConnectServer` runs it on 127.0.0.1 and a free port, with its pid file and logs in a folder of its
own (so several can run), the same driver settings as the app's local session
(:func:`~streaming.engine.runtime.session.server_settings`) and this interpreter as the
Python of its workers; :meth:`ConnectServer.url` is the ``SPARK_REMOTE`` to use.

``python -m streaming.engine.runtime.connect`` starts one and prints how to use and stop
it; ``--stop FOLDER`` stops it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .daemons import alive, terminate
from .session import server_reachable, server_settings

__all__ = ["IDENT", "ConnectServer", "main", "spark_home"]

IDENT = "streaming-lab"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def spark_home() -> Path:
    """The installed ``pyspark`` package folder, which is a Spark home (``sbin/``, ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).parent


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


PORT_VARIABLE = "CONNECT_PORT"
PORT_FILE = "port"
"""The file in a server's folder that keeps the port it last ran on."""


def _is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def chosen_port(folder: Path, environ: dict[str, str] | None = None) -> int:
    """The port a server kept in ``folder`` starts on: ``CONNECT_PORT`` when set, else the one it ran on last time while it is free, else a
    free one. A dashboard started with the old ``SPARK_REMOTE`` then reconnects after a plain restart of the server."""
    named = (os.environ if environ is None else environ).get(PORT_VARIABLE, "").strip()
    if named:
        if not named.isdigit() or not 0 < int(named) < 65536:
            raise ValueError(f"{PORT_VARIABLE}: {named!r} is not a port (1 to 65535)")
        return int(named)
    try:
        last = int((Path(folder) / PORT_FILE).read_text().strip())
    except (OSError, ValueError):
        last = 0
    return last if 0 < last < 65536 and _is_free(last) else _free_port()


class ConnectServer:
    """One local Spark Connect server whose pid file and logs live in ``folder``.

    :meth:`start` returns once the server accepts connections (or raises
    ``RuntimeError`` naming its log); :meth:`stop` ends it and is idempotent,
    and deletes the folder when it made it (no ``folder`` given).
    """

    def __init__(self, folder: Path | None = None, port: int | None = None, master: str = "local[*]") -> None:
        self._owns_folder = folder is None
        self.folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="streaming-lab-connect-"))
        self.port = port or _free_port()
        self.master = master

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    @property
    def log_dir(self) -> Path:
        return self.folder / "logs"

    @property
    def pid_file(self) -> Path:
        return self.folder / f"spark-{IDENT}-{SERVER_CLASS}-1.pid"

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    def _env(self) -> dict[str, str]:
        env = {name: value for name, value in os.environ.items() if name not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED")}
        env.update(
            SPARK_HOME=str(spark_home()), SPARK_PID_DIR=str(self.folder), SPARK_LOG_DIR=str(self.log_dir), SPARK_IDENT_STRING=IDENT,
            PYSPARK_PYTHON=env.get("PYSPARK_PYTHON", sys.executable), SPARK_LOCAL_IP="127.0.0.1",
        )
        return env

    def command(self) -> list[str]:
        settings = {
            **server_settings(os.environ, master=self.master),
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
        }
        daemon = str(spark_home() / "sbin" / "spark-daemon.sh")
        command = [daemon, "submit", SERVER_CLASS, "1", "--name", "Spark Connect server", "--master", self.master]
        for name, value in settings.items():
            command += ["--conf", f"{name}={value}"]
        return command

    def start(self, timeout: float = 120.0) -> ConnectServer:
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / PORT_FILE).write_text(f"{self.port}\n")
        done = subprocess.run(self.command(), env=self._env(), stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"spark-daemon.sh submit {SERVER_CLASS} exited with {done.returncode}: {(done.stderr or done.stdout).strip()[-500:]}")
        deadline = time.monotonic() + timeout
        while not (server_reachable(self.url, timeout=0.5) and self.pid is not None and alive(self.pid)):
            pid = self.pid
            if time.monotonic() > deadline or (pid is not None and not alive(pid)):
                self.stop()
                raise RuntimeError(f"the Spark Connect server did not start on port {self.port}; see its log in {self.log_dir}")
            time.sleep(0.25)
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` seconds); idempotent."""
        terminate(self.pid, timeout)
        self.pid_file.unlink(missing_ok=True)
        if self._owns_folder:
            shutil.rmtree(self.folder, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m streaming.engine.runtime.connect", description="Start (or stop) a local Spark Connect server from this project's pyspark.")
    top.add_argument("--port", type=int, default=None, help=f"port on 127.0.0.1 (default: {PORT_VARIABLE}, else the folder's last port while free, else a free one)")
    top.add_argument("--folder", type=Path, default=None, help="folder for its pid file, port and logs, kept (default: a new temp folder, deleted at stop)")
    top.add_argument("--stop", type=Path, default=None, metavar="FOLDER", help="stop the server whose folder this is")
    args = top.parse_args(argv)
    if args.stop is not None:
        ConnectServer(args.stop, port=1).stop()
        print(f"stopped the Spark Connect server of {args.stop}")
        return 0
    if args.folder is not None:
        running = ConnectServer(args.folder, port=1)
        if running.pid is not None and alive(running.pid):
            print(f"error: a Spark Connect server of {args.folder} runs already (pid {running.pid}); stop it first", file=sys.stderr)
            return 1
    try:
        port = args.port or (chosen_port(args.folder) if args.folder is not None else None)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    server = ConnectServer(args.folder, port=port)
    try:
        server.start()
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"Spark Connect server on {server.url} (pid {server.pid}, logs in {server.log_dir})")
    print(f"use it:   SPARK_REMOTE={server.url} make run")
    print(f"stop it:  {sys.executable} -m streaming.engine.runtime.connect --stop {server.folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
