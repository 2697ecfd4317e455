"""A local Apache Kafka broker for users (``make kafka``) and tests: one JVM in KRaft mode, broker and controller in one.

The broker runs from the jars ``make`` fetched from Maven Central
(:func:`~streaming.engine.runtime.jars.broker_classpath`) on 127.0.0.1 and two free
ports (clients and the controller). Its folder (by default ``.kafka/`` under
the data root) holds ``data/``, the log dirs (formatted once with Kafka's
``StorageTool``, kept across restarts, so topics survive a stop), and
``run/``: ``server.properties``, the pid file and the broker's log.

Topics keep their records whatever their timestamps (``log.retention.ms=-1``):
a replayed feed's records carry the feed's past arrival times, which the
default retention of 7 days would delete as soon as they were written.

``python -m streaming.engine.kafka.broker`` starts one and prints
``KAFKA_BOOTSTRAP=127.0.0.1:PORT`` on a line of its own and how to stop it;
``--stop`` stops it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from ..data.datasets import data_root
from ..errors import ConfigError
from ..runtime.daemons import alive, terminate
from ..runtime.jars import JVM_DIR, broker_classpath
from .topics import topic_names

__all__ = ["BOOTSTRAP_VARIABLE", "KafkaBroker", "default_folder", "main"]

BOOTSTRAP_VARIABLE = "KAFKA_BOOTSTRAP"
LOG4J_CONFIG = JVM_DIR / "broker-log4j2.properties"
JAVA_OPTIONS = ["-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true"]
"""A small heap and the serial collector: a lab broker holds a few topics on a 2-core machine."""


def default_folder(environ: Mapping[str, str] | None = None) -> Path:
    """``.kafka/`` under the data root (``STREAMING_LAB_DATA``): where ``make kafka`` keeps its broker."""
    return data_root(os.environ if environ is None else environ) / ".kafka"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _accepts(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


class KafkaBroker:
    """One local broker whose log dirs, settings, pid and log live in ``folder``.

    :meth:`start` returns once the broker accepts connections (or raises
    ``RuntimeError`` naming its log); :meth:`stop` ends it (SIGTERM, a clean
    shutdown, then SIGKILL) and is idempotent. A broker started again on the
    same folder keeps its topics; it takes the port it had when none is given.
    """

    def __init__(self, folder: Path | None = None, port: int | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_folder()
        self._port = port

    @property
    def data_dir(self) -> Path:
        return self.folder / "data"

    @property
    def run_dir(self) -> Path:
        return self.folder / "run"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "kafka.pid"

    @property
    def log_file(self) -> Path:
        return self.run_dir / "broker.log"

    @property
    def properties_file(self) -> Path:
        return self.run_dir / "server.properties"

    @property
    def port(self) -> int:
        """The client port: the one given, else the one this folder's broker listened on, else a free one (chosen once)."""
        if self._port is None:
            self._port = self._recorded_port() or _free_port()
        return self._port

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip())
        except (OSError, ValueError):
            return None

    @property
    def running(self) -> bool:
        pid = self.pid
        return pid is not None and alive(pid)

    def _recorded(self, name: str) -> int | None:
        """The port the folder's last ``server.properties`` gave ``name`` (``advertised.listeners`` or ``controller.quorum.voters``)."""
        try:
            for line in self.properties_file.read_text().splitlines():
                if line.startswith(f"{name}="):
                    return int(line.rsplit(":", 1)[1])
        except (OSError, ValueError):
            pass
        return None

    def _recorded_port(self) -> int | None:
        return self._recorded("advertised.listeners")

    def properties(self, controller_port: int) -> dict[str, str]:
        """The broker's settings: one node, both roles, loopback only, internal topics with one replica, records kept forever."""
        return {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.data_dir.resolve()),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",  # its first transactional producer creates it: 1 partition, not 50
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "log.retention.ms": "-1",
            # After a crash the controller waits out the dead broker's session before it serves again (9 s by default).
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "500",
            "auto.create.topics.enable": "false",
        }

    def _java(self, main_class: str, *args: str, heap: list[str] | None = None) -> list[str]:
        jars = broker_classpath()
        if not jars:
            raise RuntimeError("the Kafka broker's jars are not fetched: run `make jars` (or `make kafka`, which does it first)")
        classpath = os.pathsep.join(str(path) for path in jars)
        logging = f"-Dlog4j2.configurationFile={LOG4J_CONFIG.as_uri()}"
        return ["java", *(heap or JAVA_OPTIONS), logging, "-cp", classpath, main_class, *args]

    def _write_properties(self) -> None:
        controller_port = self._recorded("controller.quorum.voters") or _free_port()
        while controller_port == self.port:
            controller_port = _free_port()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{name}={value}\n" for name, value in self.properties(controller_port).items())
        self.properties_file.write_text(text)

    def _format(self) -> None:
        """Format the log dirs once (Kafka's StorageTool exits its JVM, so it runs in its own)."""
        if (self.data_dir / "meta.properties").is_file():
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = self._java("kafka.tools.StorageTool", "format", f"--cluster-id={_cluster_id()}", "-c", str(self.properties_file), heap=["-Xmx128m"])
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise RuntimeError(f"formatting the broker's storage failed: {(done.stderr or done.stdout).strip()[-500:]}")

    def start(self, timeout: float = 90.0) -> KafkaBroker:
        if self.running:
            if _accepts(self.port):
                return self
            raise RuntimeError(f"a broker of {self.folder} runs (pid {self.pid}) but does not accept connections on {self.bootstrap}; see {self.log_file}")
        self._write_properties()
        self._format()
        with self.log_file.open("ab") as log:
            process = subprocess.Popen(
                self._java("kafka.Kafka", str(self.properties_file)), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.run_dir,
            )
        self.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + timeout
        while not self._serves():
            if process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the Kafka broker did not start on {self.bootstrap}; see its log in {self.log_file}")
            time.sleep(0.2)
        return self

    def _serves(self) -> bool:
        """True once the broker answers a metadata request (it listens a moment before it serves, longer after a crash's log recovery)."""

        if not _accepts(self.port):
            return False
        try:
            topic_names(self.bootstrap, timeout=2.0)
        except ConfigError:
            return False
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after ``timeout`` seconds); idempotent. Its topics stay in ``data/``."""
        terminate(self.pid, timeout)
        self.pid_file.unlink(missing_ok=True)

    def kill(self) -> None:
        """End the broker at once (SIGKILL), as a crash would: for tests of a broker lost under a running query."""
        pid = self.pid
        if pid is not None and alive(pid):
            os.kill(pid, signal.SIGKILL)
            while alive(pid):
                time.sleep(0.05)


def _cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes in URL-safe base64 without padding, as ``kafka-storage random-uuid`` prints it.

    One in 64 starts with ``-``: it is passed as ``--cluster-id=ID``, never as a separate argument an option parser would take for a flag.
    """
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def main(argv: list[str] | None = None) -> int:
    top = argparse.ArgumentParser(prog="python -m streaming.engine.kafka.broker", description="Start (or stop) a local Apache Kafka broker for the lab.")
    top.add_argument("--port", type=int, default=None, help="client port on 127.0.0.1 (default: the one it had, else a free one)")
    top.add_argument("--folder", type=Path, default=None, help="its log dirs, settings, pid and log (default: .kafka under the data root)")
    top.add_argument("--stop", action="store_true", help="stop the broker of that folder (its topics are kept)")
    args = top.parse_args(argv)
    broker = KafkaBroker(args.folder, port=args.port)
    if args.stop:
        running = broker.running
        broker.stop()
        print(f"stopped the Kafka broker of {broker.folder}" if running else f"no Kafka broker runs from {broker.folder}")
        return 0
    try:
        broker.start()
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"Kafka broker on {broker.bootstrap} (pid {broker.pid}, topics in {broker.data_dir}, log in {broker.log_file})")
    print(f"{BOOTSTRAP_VARIABLE}={broker.bootstrap}")
    print(f"use it:   {BOOTSTRAP_VARIABLE}={broker.bootstrap} make run")
    print("stop it:  make kafka-stop" + ("" if args.folder is None else f" KAFKA_ARGS='--folder {broker.folder}'"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
