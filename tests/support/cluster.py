"""A throwaway standalone Spark cluster (one master, one worker) on 127.0.0.1, run from the pip package.

Both daemons are started with ``spark-class`` in their own process group, on
free ports, with their work and log folders under a caller-supplied folder;
:meth:`StandaloneCluster.stop` terminates the groups (the worker's executors
included).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

__all__ = ["StandaloneCluster", "free_port", "spark_home"]


def spark_home() -> Path:
    """The Spark distribution inside the installed pyspark package."""
    try:
        from pyspark.find_spark_home import _find_spark_home

        home = Path(_find_spark_home())
    except Exception:  # noqa: BLE001 - any failure: fall back to the package folder
        import pyspark

        home = Path(pyspark.__file__).resolve().parent
    if not (home / "bin" / "spark-class").is_file():
        raise FileNotFoundError(f"no bin/spark-class under SPARK_HOME {home}")
    return home


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class StandaloneCluster:
    """One master and one worker (``cores`` cores, ``memory`` memory) on 127.0.0.1."""

    def __init__(self, root: Path, *, cores: int = 1, memory: str = "1g", python: str = sys.executable) -> None:
        self.root = Path(root)
        self.cores = cores
        self.memory = memory
        self.home = spark_home()
        self.port = free_port()
        self.webui_port = free_port()
        self.worker_webui_port = free_port()
        self.log_dir = self.root / "logs"
        self.work_dir = self.root / "work"
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.root / "conf").mkdir(parents=True, exist_ok=True)
        self.env = {
            key: value for key, value in os.environ.items() if key not in {"SPARK_MASTER", "SPARK_REMOTE", "PYSPARK_SUBMIT_ARGS"}
        }
        self.env.update(
            {
                "SPARK_HOME": str(self.home),
                "SPARK_LOCAL_IP": "127.0.0.1",
                "SPARK_LOG_DIR": str(self.log_dir),
                "SPARK_WORKER_DIR": str(self.work_dir),
                "SPARK_CONF_DIR": str(self.root / "conf"),  # empty: no stray spark-defaults/spark-env
                "PYSPARK_PYTHON": python,
                # Fail on a taken port instead of silently binding the next one (which may be
                # another engineer's), and no REST submission server (it binds the fixed port 6066).
                "SPARK_MASTER_OPTS": "-Dspark.port.maxRetries=0 -Dspark.master.rest.enabled=false",
                "SPARK_WORKER_OPTS": "-Dspark.port.maxRetries=0",
            }
        )
        self.processes: dict[str, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def webui(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    def _spawn(self, name: str, args: list[str]) -> None:
        log = (self.log_dir / f"{name}.out").open("wb")
        try:
            self.processes[name] = subprocess.Popen(
                [str(self.home / "bin" / "spark-class"), *args],
                env=self.env,
                cwd=self.root,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() can end it with its children
            )
        finally:
            log.close()

    def state(self) -> dict[str, Any] | None:
        """The master's ``/json/`` state, or ``None`` when the web UI does not answer (yet)."""
        try:
            with urllib.request.urlopen(f"{self.webui}/json/", timeout=5) as response:
                return json.load(response)
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def log(self, name: str) -> str:
        path = self.log_dir / f"{name}.out"
        return path.read_text(errors="replace") if path.exists() else ""

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.log(name)[-4000:]}")

    def wait_until(self, predicate, what: str, timeout: float) -> dict[str, Any]:
        """Poll the master state until ``predicate(state)`` holds; raise after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            self._check_alive()
            state = self.state()
            if state is not None and predicate(state):
                return state
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- {name}\n{self.log(name)[-3000:]}" for name in self.processes)
                raise TimeoutError(f"{what} not reached after {timeout} s; last state {state}\n{logs}")
            time.sleep(0.25)

    def _launch(self, name: str, args, ready, what: str, timeout: float, attempts: int = 3) -> None:
        """Spawn daemon ``name`` with ``args()`` until ``ready(state)``; on a fast exit (a port taken
        between :func:`free_port` and the bind; retries are off) pick new ports and try again."""
        for attempt in range(attempts):
            self._spawn(name, args())
            try:
                self.wait_until(ready, what, timeout)
                return
            except RuntimeError:  # the daemon exited
                process = self.processes.pop(name)
                if attempt == attempts - 1 or "BindException" not in self.log(name):
                    self.processes[name] = process
                    raise
                (self.log_dir / f"{name}.out").rename(self.log_dir / f"{name}.{attempt}.out")
                if name == "master":
                    self.port, self.webui_port = free_port(), free_port()
                else:
                    self.worker_webui_port = free_port()

    def start(self, timeout: float = 120.0) -> None:
        """Start master then worker; return once the master lists exactly one ALIVE worker."""
        self._launch(
            "master",
            lambda: [
                "org.apache.spark.deploy.master.Master",
                "--host", "127.0.0.1",
                "--port", str(self.port),
                "--webui-port", str(self.webui_port),
            ],
            lambda state: state.get("url") == self.url,
            "master up",
            timeout,
        )  # fmt: skip
        self._launch(
            "worker",
            lambda: [
                "org.apache.spark.deploy.worker.Worker",
                self.url,
                "--host", "127.0.0.1",
                "--cores", str(self.cores),
                "--memory", self.memory,
                "--webui-port", str(self.worker_webui_port),
                "--work-dir", str(self.work_dir),
            ],
            lambda state: sum(worker.get("state") == "ALIVE" for worker in state.get("workers", [])) == 1,
            "one ALIVE worker",
            timeout,
        )  # fmt: skip

    def stop(self, timeout: float = 30.0) -> None:
        """Terminate the worker then the master (each whole process group); kill what outlives ``timeout``."""
        for name in ("worker", "master"):
            process = self.processes.get(name)
            if process is None:
                continue
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(process.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    process.wait(timeout=timeout)
                    # The JVM is gone; finish off anything left in its group (an executor, the launcher).
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                except subprocess.TimeoutExpired:
                    continue
                break
        self.processes.clear()
