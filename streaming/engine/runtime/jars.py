"""The JVM parts the lab takes from Maven Central: Spark's Kafka connector and an Apache Kafka broker.

Both are pinned in the POMs under ``jvm/`` and fetched once by ``make`` (the
set-up of ``make run`` and ``make test``) into ``jvm/lib/``, which git ignores;
nothing is resolved at run time. :func:`connector_jars` is what every Spark
driver the lab starts gets on its class path (as ``spark.jars`` on a standalone
cluster); :func:`broker_classpath` is
what :mod:`streaming.engine.kafka.broker` runs the broker with.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import ConfigError

__all__ = ["CONNECTOR_POM", "JVM_DIR", "LIB_DIR", "broker_classpath", "connector_coordinates", "connector_jars", "connector_version", "require_connector"]

JVM_DIR = Path(__file__).resolve().parents[3] / "jvm"
"""The POMs that pin the JVM parts, and (under ``lib/``) the jars fetched from them."""
LIB_DIR = JVM_DIR / "lib"
CONNECTOR_POM = JVM_DIR / "kafka-connector.pom.xml"
CONNECTOR_COORDINATES = "org.apache.spark:spark-sql-kafka-0-10_2.13"
SETUP_HINT = "run `make jars` (or `make run`, which does it first) to fetch it from Maven Central"


def _jars(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jar")) if folder.is_dir() else []


def connector_jars(lib: Path = LIB_DIR) -> list[Path]:
    """The connector's jars (``spark-sql-kafka``, its token provider, ``kafka-clients``, ``commons-pool2``), or ``[]`` before set-up."""
    return _jars(lib / "kafka-connector")


def broker_classpath(lib: Path = LIB_DIR) -> list[Path]:
    """The Kafka broker's jars, or ``[]`` before set-up."""
    return _jars(lib / "kafka-broker")


def connector_version(pom: Path = CONNECTOR_POM) -> str:
    """The Spark version the connector is pinned at (``spark.version`` of its POM)."""
    match = re.search(r"<spark\.version>([^<]+)</spark\.version>", pom.read_text(encoding="utf-8"))
    if match is None:
        raise ValueError(f"{pom.name} sets no spark.version")
    return match.group(1).strip()


def connector_coordinates(pom: Path = CONNECTOR_POM) -> str:
    """``group:artifact:version`` of the connector, as ``--packages`` takes it."""
    return f"{CONNECTOR_COORDINATES}:{connector_version(pom)}"


def require_connector(lib: Path = LIB_DIR) -> list[Path]:
    """:func:`connector_jars`, or :class:`ConfigError` saying how to fetch it when it is missing."""
    jars = connector_jars(lib)
    if not any(path.name.startswith("spark-sql-kafka") for path in jars):
        raise ConfigError("source", "kafka", f"needs Spark's Kafka connector, which is not fetched: {SETUP_HINT}")
    return jars
