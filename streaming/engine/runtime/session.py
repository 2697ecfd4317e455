"""The one SparkSession the product runs on, and the starter that makes it in the background.

Local by default: ``local[*]``, shuffle partitions sized to the cores (the
default 200 makes a windowed count on a laptop miss a 1 s trigger), UTC session
time zone, driver bound to loopback. ``SPARK_MASTER`` (e.g.
``spark://127.0.0.1:7077``) attaches to a standalone cluster instead, and
``SPARK_REMOTE`` (e.g. ``sc://127.0.0.1:15002``) to a Spark Connect server.

Creating a session takes seconds (a JVM starts), and the first streaming query
on it seconds more (classes load, code is generated, locally the Python callback server
starts). :class:`SessionStarter` does both in a background thread (the warm-up
query is passed in: :func:`streaming.engine.run.query.warm_up`), so the dashboard
shows a status while it happens instead of freezing on Start.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ..errors import ConfigError
from .archive import archive_options, archive_path
from .jars import connector_jars

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

__all__ = [
    "DEFAULT_JAVA_OPTIONS", "SessionStarter", "StarterStatus", "driver_archive", "driver_classpath", "forget_session", "freeze_heap", "get_session", "is_connect", "java_options",
    "remote_address", "server_reachable", "server_settings", "session_alive", "session_settings", "start_early", "take_early",
]

APP_NAME = "streaming-lab"
LOG = logging.getLogger(__name__)
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
StarterStatus = Literal["starting", "ready", "failed"]

DRIVER_JAVA_OPTIONS = ["-Xss32m", "-XX:+ExitOnOutOfMemoryError"]
"""``-XX:+ExitOnOutOfMemoryError``: a driver that ran out of heap is in no state to go on (any of its threads may have lost its work
half-done); it ends, and the app starts a new session as after a crash (:mod:`.heap` ends one whose heap stays full without the error).

``-Xss32m``: a stop during a ``foreachBatch`` call makes the stream execution thread match the
Python error's text against Spark's regex ``...calling((.|\\r\\n|\\r|\\n)*)(java.lang.InterruptedException|...``
(``StreamExecution.isInterruptionException``, SPARK-39218). That pattern recurses once per
character, and a text of a few thousand characters overflows the default 1 MiB thread stack:
the thread dies with a ``StackOverflowError`` printed to the terminal instead of stopping
quietly. A 32 MiB stack (address space; only the pages used are committed) lets the match end."""


JAVA_OPTIONS_VARIABLE = "STREAMING_LAB_JAVA_OPTIONS"
"""Environment variable of further options for the Spark driver's JVM (and a Connect server's), after the lab's own
(as Spark reads ``spark.driver.extraJavaOptions``: split at spaces, quotes kept together); unset, :data:`DEFAULT_JAVA_OPTIONS`.

The test suite sets ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC``: its many short queries over a
few rows spend their JVM time planning, and the optimising compiler's work rarely pays back
there (``tests/engine/test_sql.py``: 160 → 140 s). The app keeps both compilers, which a long run
over large batches needs (the first compiler alone made the benchmark's large batches 4.3 times slower)."""

DEFAULT_JAVA_OPTIONS = "-XX:CompileThresholdScaling=3"
"""The driver's JIT compiles a method after three times the JVM's default number of calls and loops.

Until a driver's first result row its two compilers took 6.9 of the 12.2 s of CPU its JVM used (4.8 s the optimising one), on a
machine of two cores where the driver's own threads and Python want the same cores. Compiling later leaves the rarely run code of a
start interpreted and compiles what runs on: a fresh process to the generator's first row (cold-start benchmark, 4 runs of each
interleaved) 8.24-8.52 s → 7.60-8.01 s, mean 0.63 s less (the first batch 0.26 s, the JVM's launch 0.16 s); 2 gave no more, 10 less.
What runs long is compiled as before: a replay of 3,000,000 rows in ten CSV files (``replay --window '1 minute'``) 16.8-16.9 s →
16.1-17.2 s, the web_clicks feed 21.4 s both. A new query on a warm session pays a little: its first batch, median of 6 after the
warm-up, 0.44-0.48 → 0.47-0.48 s."""


FOLD_SETTINGS = {"spark.sql.streaming.stateStore.commitValidation.enabled": "false", "spark.sql.limit.initialNumPartitions": "1024"}
"""Settings for the ``foreachBatch`` fold every query of a classic session writes to.

Spark (4.2 and later) checks after each ``foreachBatch`` call of a stateful query that every
state store committed, to catch a function that reads only some partitions
(``show()``, ``limit()``). The fold collects every row of every batch, so the check
finds nothing and costs its time: measured on this project's overhead query
(4,000,000 rows a batch), 60-70 ms of a 700-800 ms batch.

The fold's ``limit(budget + 1).collect()`` reads a batch's partitions one job at a time, first one partition, then four times as many
(``spark.sql.limit.initialNumPartitions``, 1 by default): a batch of two partitions ran two jobs (Spark's status tracker: 100 jobs for 50
batches). Up to 1,024 partitions are read in one job, so a batch is one job, and which rows it keeps does not change (a take keeps the
partitions' order). Measured on 2 cores, a windowed count stepped one 50-row file at a time (a batch and the no-data batch after it
each step, the median of 3 interleaved runs): 620 → 534 ms a step."""

CHECKPOINT_FILES = "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
"""How Spark writes its checkpoint and state files: through Hadoop's ``FileSystem`` rather than its default ``FileContext``.

On a local disk without Hadoop's native library, ``FileContext``'s rename asks for a
link status by forking ``readlink`` (several times per file), and every file created
forks ``chmod``: about 45 processes a micro-batch, each forked from the driver's JVM.
Writing through ``FileSystem`` forks no ``readlink`` (rename is a local rename, atomic
on one file system): measured on the stepped replay of ``web_clicks``, 358 → 219 ms a
micro-batch (``walCommit`` and ``commitOffsets`` 45 → 15 ms each)."""

CONNECT_RETRIES = 5
"""Retries of a Spark Connect call while the server is unavailable: after 50, 200, 800, 2000 and 2000 ms, then the call fails."""


def session_settings(environ: Mapping[str, str], cores: int) -> dict[str, str]:
    """Spark settings for a session on this machine; pure, so it is tested without a JVM.

    With ``SPARK_REMOTE`` only the settings a Spark Connect client may change
    (per session, SQL ones); the server is started with the others
    (:func:`server_settings`, used by :mod:`streaming.engine.runtime.connect`).
    """
    settings = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(max(1, cores)),
        "spark.sql.streaming.numRecentProgressUpdates": "100",
        "spark.sql.streaming.checkpointFileManagerClass": CHECKPOINT_FILES,
    }
    if "SPARK_REMOTE" in environ:
        return settings
    host = environ.get("SPARK_LOCAL_IP", "127.0.0.1")
    settings.update({"spark.driver.host": host, "spark.driver.bindAddress": host})
    settings["spark.master"] = _master(environ)
    settings.update(FOLD_SETTINGS)
    settings.update(server_settings(environ))
    return settings


def server_settings(environ: Mapping[str, str], jars: Sequence[Path] | None = None, *, master: str | None = None) -> dict[str, str]:
    """The settings fixed when a Spark driver starts: memory, UI history caps, the log configuration, the thread stack, the class
    archive (and any :data:`JAVA_OPTIONS_VARIABLE` options), the jars, and FAIR scheduling between pools, so that one user's query
    takes no more than its share of the task slots (:mod:`~streaming.engine.runtime.pools`; a Connect client cannot set a pool).

    ``jars`` (default: Spark's Kafka connector as set-up fetched it, :func:`~streaming.engine.runtime.jars.connector_jars`) are local
    files: on the class path of a local driver (:func:`driver_classpath`; ``master`` defaults to ``SPARK_MASTER``), as ``spark.jars``
    when a cluster's executors must fetch them from it. A local driver given them as ``spark.jars`` also serves them to its own executor,
    and a new process reached the generator's first row, a query that reads no topic, later (cold-start benchmark, 2 cores, 4 runs of
    each interleaved: 8.37-8.76 s with the jars as ``spark.jars``, 7.94-8.98 s, mean 0.2 s less, with them on the class path; the JVM's
    launch 1.22-1.33 s against 1.02-1.13 s). The class archive set-up made for this JDK, PySpark and class path
    (:mod:`~streaming.engine.runtime.archive`) is mapped when it was made.
    """
    jars = connector_jars() if jars is None else jars
    classpath = driver_classpath(environ, jars, master=master)
    return {
        **({"spark.driver.extraClassPath": os.pathsep.join(map(str, classpath))} if classpath else {}),
        **({"spark.jars": ",".join(map(str, jars))} if jars and not classpath else {}),
        "spark.ui.showConsoleProgress": "false",
        "spark.scheduler.mode": "FAIR",  # each owner's queries in a pool of their own (streaming.engine.runtime.pools)
        "spark.driver.memory": environ.get("SPARK_DRIVER_MEMORY", "2g"),
        # The Spark UI keeps every job, stage and SQL execution up to these caps; a
        # micro-batch makes several, so a long run would hold thousands of each.
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.ui.retainedTasks": "20000",
        "spark.sql.ui.retainedExecutions": "100",
        "spark.ui.retainedDeadExecutors": "10",
        "spark.driver.extraJavaOptions": " ".join(
            [*DRIVER_JAVA_OPTIONS, f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}", *archive_options(driver_archive(environ, jars, master=master)), java_options(environ)]
        ).strip(),
    }


def driver_classpath(environ: Mapping[str, str], jars: Sequence[Path] | None = None, *, master: str | None = None) -> list[Path]:
    """The jars a driver of ``master`` (default ``SPARK_MASTER``, else ``local[*]``) takes on its class path: ``jars`` (default the
    connector's) when it is ``local`` or ``local[...]``, whose executors run in its JVM; none otherwise (a standalone cluster's or a
    ``local-cluster``'s executors are other JVMs, which fetch them as ``spark.jars``)."""
    master = _master(environ) if master is None else master
    return list(connector_jars() if jars is None else jars) if master == "local" or master.startswith("local[") else []


def driver_archive(environ: Mapping[str, str], jars: Sequence[Path] | None = None, *, master: str | None = None) -> Path:
    """The class archive a driver of ``master`` started in ``environ`` maps once it is made: the one for its JDK, PySpark and
    :func:`driver_classpath`. Set-up makes it by this name (``python -m streaming archive``), so the two cannot name different files."""
    return archive_path(environ, classpath=driver_classpath(environ, jars, master=master))


def _master(environ: Mapping[str, str]) -> str:
    """The master a session started in ``environ`` runs on: ``SPARK_MASTER``, else ``local[*]``."""
    return environ.get("SPARK_MASTER", "local[*]")


def java_options(environ: Mapping[str, str]) -> str:
    """The options :data:`JAVA_OPTIONS_VARIABLE` gives the driver's JVM after the lab's own: its value (empty: none), or
    :data:`DEFAULT_JAVA_OPTIONS` when it is unset."""
    return environ.get(JAVA_OPTIONS_VARIABLE, DEFAULT_JAVA_OPTIONS)


def get_session(environ: Mapping[str, str] | None = None) -> SparkSession:
    """Create (or return the running) SparkSession configured by :func:`session_settings`.

    With ``SPARK_REMOTE`` a Spark Connect client; :class:`ConfigError` when it is not a Connect URL,
    ``ConnectionError`` when its server does not accept connections.

    Sets ``PYSPARK_PYTHON`` to this interpreter (so Python workers find the same
    packages) and ``SPARK_LOCAL_IP`` to loopback unless they are set already.
    """
    from pyspark.sql import SparkSession

    env = os.environ if environ is None else environ
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName(APP_NAME)
    if "SPARK_REMOTE" in env:
        remote_address(env["SPARK_REMOTE"])
        if not server_reachable(env["SPARK_REMOTE"], timeout=5.0):
            raise ConnectionError(f"the Spark Connect server at SPARK_REMOTE={env['SPARK_REMOTE']} does not accept connections")
        builder = builder.remote(env["SPARK_REMOTE"])
    for key, value in session_settings(env, os.cpu_count() or 1).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if is_connect(spark):
        from pyspark.sql.connect.client.retries import DefaultPolicy

        # The client's own policy retries an unreachable server for 10 minutes, holding the page that asked; give up after about 5 s.
        spark.client.set_retry_policies([DefaultPolicy(max_retries=CONNECT_RETRIES, initial_backoff=50, max_backoff=2000)])
    else:
        spark.sparkContext.setLogLevel(env.get("SPARK_LOG_LEVEL", "ERROR"))
    return spark


def is_connect(spark: SparkSession | StreamingQuery) -> bool:
    """True when ``spark``, a session or a query it started, is Spark Connect's (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def remote_address(url: str) -> tuple[str, int]:
    """``(host, port)`` of a Spark Connect URL (``sc://host:port/;params``; port 15002 when absent); :class:`ConfigError` naming ``SPARK_REMOTE`` otherwise."""
    from urllib.parse import urlparse

    parsed = urlparse(url.split(";", 1)[0])
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if parsed.scheme != "sc" or not parsed.hostname or port == -1:
        raise ConfigError("SPARK_REMOTE", url, "is not a Spark Connect URL (sc://host:port)")
    return parsed.hostname, port or 15002


def server_reachable(url: str, timeout: float = 1.0) -> bool:
    """True when the Spark Connect server at ``url`` accepts a connection within ``timeout`` seconds (never for a URL that is not one)."""
    import socket

    try:
        with socket.create_connection(remote_address(url), timeout=timeout):
            return True
    except (OSError, ConfigError):
        return False


def session_alive(spark: SparkSession) -> bool:
    """False when a classic session's JVM has exited, does not answer or was stopped, or a Connect session's server does not accept connections.

    Cheap enough for every page view: a look at the JVM process and one local
    Py4J call; on Connect, one TCP connection to the server (a Spark call to a
    dead server would be retried for minutes by the client).
    """
    if is_connect(spark):
        if getattr(spark.client, "is_closed", False):  # e.g. the server restarted: this client's session is gone for good
            return False
        url = os.environ.get("SPARK_REMOTE")
        return url is None or server_reachable(url)
    context = spark.sparkContext
    process = getattr(getattr(context, "_gateway", None), "proc", None)
    if process is not None and process.poll() is not None:
        return False
    try:
        return not context._jsc.sc().isStopped()
    except Exception:  # noqa: BLE001 - Py4J raises connection errors of several kinds once the JVM is gone
        return False


def forget_session() -> None:
    """Drop PySpark's references to a dead session, so that :func:`get_session` starts a new JVM (or a new Connect client).

    ``SparkSession.builder.getOrCreate()`` would otherwise hand back the dead
    session; stopping it is impossible without its JVM (or server).
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if "SPARK_REMOTE" in os.environ:
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        ConnectSession._default_session = None
        ConnectSession._active_session.session = None
        return

    with SparkContext._lock:
        SparkContext._active_spark_context = None
        SparkContext._gateway = None
        SparkContext._jvm = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None


def freeze_heap() -> None:
    """Collect, then move every object this process holds to the collector's permanent generation (``gc.freeze``).

    Call once what the process keeps for its life is loaded: the session starter does it when the
    session is ready and warm. A full collection then no longer walks the objects of pandas, Spark,
    Streamlit and Plotly (about 135,000): measured on this project's app, 28-39 ms per full collection
    before, under 0.1 ms after. Those collections run in whichever thread allocates, most often the
    live view's, whose ticks paid for them. Frozen objects are still freed when no longer referenced;
    only a reference cycle among them stays.
    """
    gc.collect()
    gc.freeze()


class SessionStarter:
    """Creates the session, then warms it up, in a background thread; thread-safe.

    ``status`` is ``"starting"`` until the session exists, then ``"ready"``;
    ``"failed"`` when creating the session raised, with the reason in ``error``.
    The warm-up runs after that, on the ready session (:attr:`warming` while it
    does): a first query started meanwhile shares the JVM with it, and still
    shows its first rows sooner than one waiting for the warm-up would (the
    served app's Start was enabled 18 s after the server, 8 of them the warm-up's).
    A failed warm-up only logs: the session still works.
    Once warmed up, the process's heap is frozen (:func:`freeze_heap`).
    ``create`` and ``warm`` are passed in so a test can drive the starter
    without a JVM.
    """

    def __init__(
        self,
        create: Callable[[], SparkSession] = get_session,
        warm: Callable[[SparkSession], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._create = create
        self._warm = warm
        self._clock = clock
        self._ready = threading.Event()
        self._warmed = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._session: SparkSession | None = None
        self.error: str | None = None
        self.started_at: float | None = None
        self.seconds: float | None = None
        self.phase = "waiting to start"
        """What the start is doing now, in words (the sidebar shows it): the JVM and the session, then the warm-up query, then ``ready``."""
        self.phases: dict[str, float] = {}
        """Seconds each phase took, once it ended: ``session`` (the JVM and the session), ``warm-up``."""

    def start(self) -> SessionStarter:
        """Start the background thread unless it runs already; returns ``self``."""
        with self._lock:
            if self._thread is None:
                self.started_at = self._clock()
                self._thread = threading.Thread(target=self._run, name="spark-session-starter", daemon=True)
                self._thread.start()
        return self

    def _run(self) -> None:
        begun = self._clock()
        session = None
        try:
            self.phase = "launching the JVM and the session"
            session = self._create()
        except Exception as err:
            LOG.exception("creating the Spark session failed")
            self.error = f"{type(err).__name__}: {err}"
        else:
            self.phases["session"] = self._clock() - begun
            self.phase = "ready" if self._warm is None else "warming up the planner with a first query"
            self._session = session
        self.seconds = self._clock() - (self.started_at or 0.0)
        self._ready.set()
        try:
            if session is not None and self._warm is not None:
                warming = self._clock()
                try:
                    self._warm(session)
                except Exception:
                    LOG.warning("warming up the Spark session failed", exc_info=True)
                self.phases["warm-up"] = self._clock() - warming
                self.phase = "ready"
            if session is not None:
                freeze_heap()
        finally:
            self._warmed.set()

    @property
    def warming(self) -> bool:
        """True while the warm-up query runs on the ready session."""
        return self._ready.is_set() and not self._warmed.is_set()

    @property
    def status(self) -> StarterStatus:
        if not self._ready.is_set():
            return "starting"
        return "failed" if self._session is None else "ready"

    def wait(self, timeout: float | None = None) -> SparkSession:
        """The session, once it is ready; starts the thread if needed.

        Raises ``TimeoutError`` after ``timeout`` seconds and ``RuntimeError``
        with the reason when the session could not be created.
        """
        self.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"the Spark session is still starting after {timeout} s")
        if self._session is None:
            raise RuntimeError(f"the Spark session could not be created: {self.error}")
        return self._session


_early: list[SessionStarter] = []


def start_early(starter: SessionStarter) -> SessionStarter:
    """Start ``starter`` now, before the code that will use it is imported; :func:`take_early` hands it over, once.

    For a server whose first page would otherwise begin the session: ``python -m dashboard.serve`` calls this first, so the JVM
    launches while the app's pandas, Plotly and Streamlit are imported (2-3 s on 2 cores). Importing this module imports none of them.
    """
    _early.append(starter.start())
    return starter


def take_early() -> SessionStarter | None:
    """The starter :func:`start_early` began, the first time it is asked for; ``None`` after that, or when none was begun."""
    try:
        return _early.pop()
    except IndexError:
        return None
