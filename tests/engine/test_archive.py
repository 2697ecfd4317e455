"""The class archive a driver starts from: named by what made it, mapped only when made, written whole or not at all."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from streaming.engine.runtime.archive import archive_options, archive_path, build_archive
from streaming.engine.runtime.session import driver_archive, session_settings


def _jars(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"jar")
    return folder


def test_an_archive_is_named_by_the_jdk_pysparks_jars_and_the_class_path_as_the_jvm_checks_them(tmp_path: Path) -> None:
    jars = _jars(tmp_path / "jars", "spark-core_2.13-4.2.0.jar", "scala-library-2.13.16.jar")
    connector = sorted(_jars(tmp_path / "connector", "kafka-clients-3.9.2.jar").glob("*.jar"))

    def named(java_home: str = "/opt/jdk-17", classpath: list[Path] = connector) -> Path:
        return archive_path({"JAVA_HOME": java_home}, classpath=classpath, folder=tmp_path, jars=jars)

    here = named()
    assert here == named() and here.parent == tmp_path and here.suffix == ".jsa"
    assert named("/opt/jdk-21") != here
    assert named(classpath=[]) != here
    os.utime(connector[0], (1_700_000_000, 1_700_000_000))  # the same jar written again: the JVM refuses an archive made before
    assert named() != here
    here = named()
    _jars(jars, "spark-connect_2.13-4.2.0.jar")
    assert named() != here


def test_a_driver_maps_the_archive_only_once_it_is_made(tmp_path: Path) -> None:
    made = tmp_path / "with space" / "spark-1.jsa"
    assert archive_options(made) == []
    made.parent.mkdir()
    made.write_bytes(b"archive")
    assert archive_options(made) == [f"'-XX:SharedArchiveFile={made}'", "-Xlog:cds*=off"]  # one option, as Spark splits extraJavaOptions
    options = session_settings({}, cores=2)["spark.driver.extraJavaOptions"]
    assert ("-XX:SharedArchiveFile=" in options) == driver_archive({}).is_file()


def test_an_archive_is_renamed_into_place_once_the_jvm_has_written_it_and_old_ones_go(tmp_path: Path) -> None:
    """The JVM is played by a process that writes the file its option names once its standard input closes, as the driver does."""
    target = tmp_path / "spark-new.jsa"
    (tmp_path / "spark-old.jsa").write_bytes(b"old")
    (tmp_path / ".spark-new-1.partial").write_bytes(b"cut")  # a build killed half-way
    ran: list[str] = []

    def create(options: list[str]) -> SimpleNamespace:
        written = options[0].removeprefix("-XX:ArchiveClassesAtExit=")
        script = f"import sys; sys.stdin.read(); open({written!r}, 'wb').write(b'classes')"
        process = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE)
        return SimpleNamespace(sparkContext=SimpleNamespace(_gateway=SimpleNamespace(proc=process)), stop=lambda: ran.append("stopped"))

    assert build_archive(create, lambda spark: ran.append("workload"), target)  # type: ignore[arg-type]
    assert ran == ["workload", "stopped"] and target.read_bytes() == b"classes"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["spark-new.jsa"]
    assert not build_archive(create, lambda spark: ran.append("again"), target)  # type: ignore[arg-type]
    assert ran == ["workload", "stopped"]

    def failing(spark: object) -> None:
        raise RuntimeError("the warm-up failed")

    other = tmp_path / "spark-other.jsa"
    with pytest.raises(RuntimeError, match="the warm-up failed"):
        build_archive(create, failing, other)  # type: ignore[arg-type]
    assert not other.exists(), "an archive is made by a whole workload or not at all"
