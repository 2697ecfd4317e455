"""The class archive a Spark driver starts from: the classes it loads for a session and a first query, mapped from one file.

Before its first result row a driver loads and verifies some twenty thousand classes, on the two cores the JIT compilers also want.
The JDK's Class Data Sharing maps them from an archive instead: JDK 17's dynamic archive, written by one JVM as it exits
(``-XX:ArchiveClassesAtExit``) and mapped by every later one (``-XX:SharedArchiveFile``). Measured on the cold-start benchmark
(a fresh process to the generator's first row, 2 cores): 13.9 → 9.9 s (the JVM's launch 2.2 → 1.3 s, the rest of the session
4.0 → 2.2 s, the query's start 2.1 → 1.6 s); under the test suite's options 11.5 → 8.1 s.

It is made at set-up (``make`` runs ``python -m streaming archive``) by a session that runs the lab's first queries, and named by what
it was made with: the JDK, PySpark's jars and the jars on a local driver's class path (the Kafka connector's). A JVM of another JDK or
class path refuses an archive and starts without it, as it does when there is none: the lab never depends on it, it is only faster
with it.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .jars import JVM_DIR

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ARCHIVE_DIR", "archive_options", "archive_path", "build_archive"]

ARCHIVE_DIR = JVM_DIR / "archive"
"""Where set-up writes the archive (git ignores it)."""


def _java(environ: Mapping[str, str]) -> str:
    """The JVM PySpark launches, as it finds it: ``JAVA_HOME``'s, or the ``java`` on the path."""
    home = environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java", path=environ.get("PATH"))
    return os.path.realpath(found) if found else "java"


def _pyspark_jars() -> Path:
    spec = importlib.util.find_spec("pyspark")  # found, not imported: the session's settings are read before PySpark is
    assert spec is not None and spec.origin is not None, "PySpark is not installed"
    return Path(spec.origin).parent / "jars"


def archive_path(environ: Mapping[str, str] | None = None, *, classpath: Sequence[Path], folder: Path = ARCHIVE_DIR, jars: Path | None = None) -> Path:
    """The archive for this JDK, PySpark's jars (the folder ``jars``) and the jars on the driver's ``classpath`` before them, whether made or
    not: another JDK, another PySpark, other jars on the class path, another name. A jar is named by its size and modification time, as
    the JVM checks it: a jar written again (PySpark installed again, the connector fetched again) makes the JVM refuse the archive, and
    gives another name, which set-up then makes."""
    env = os.environ if environ is None else environ
    jars = _pyspark_jars() if jars is None else jars
    made_of = [_java(env), *sorted(_jar(path) for path in jars.glob("*.jar")), *(f"classpath {_jar(path)}" for path in classpath)]
    return folder / f"spark-{hashlib.sha256(chr(10).join(made_of).encode()).hexdigest()[:16]}.jsa"


def _jar(path: Path) -> str:
    stat = path.stat()
    return f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}"


def _option(name: str, path: Path) -> str:
    """``-XX:name=path``, quoted when the path holds a space (Spark splits ``extraJavaOptions`` at spaces, quotes kept together)."""
    option = f"-XX:{name}={path}"
    return f"'{option}'" if any(character.isspace() for character in option) else option


def archive_options(path: Path) -> list[str]:
    """The driver's JVM options that map ``path``, when it was made; none otherwise. A JVM that cannot map it says nothing and starts
    without it (its ``cds`` warnings off: they would go to the server's terminal on every start)."""
    return [_option("SharedArchiveFile", path), "-Xlog:cds*=off"] if path.is_file() else []


def build_archive(create: Callable[[list[str]], SparkSession], workload: Callable[[SparkSession], None], path: Path, *, timeout: float = 300.0) -> bool:
    """Make the archive at ``path`` unless it is made; ``False`` when it was there already.

    ``create(options)`` starts a session whose driver takes the JVM ``options``, ``workload(session)`` runs what the lab runs first; the
    session is then stopped and its JVM exits, writing the classes it loaded. The file is written under a hidden name and renamed once
    whole; archives made for another JDK, PySpark or class path are deleted.
    """
    if path.is_file():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.iterdir():
        if old.suffix in {".jsa", ".partial"}:
            old.unlink(missing_ok=True)
    partial = path.with_name(f".{path.stem}-{os.getpid()}.partial")
    spark = create([_option("ArchiveClassesAtExit", partial), "-Xlog:cds*=off"])
    process = getattr(spark.sparkContext._gateway, "proc", None)
    try:
        workload(spark)
    finally:
        spark.stop()
        if process is not None:  # the driver exits once its standard input closes, and writes the archive as it does
            process.stdin.close()
            process.wait(timeout)
    if not partial.is_file():
        raise RuntimeError(f"the JVM wrote no class archive at {partial}")
    partial.replace(path)
    return True
