"""Not collected by the suite (no ``test_`` name): ``test_interrupted_run`` runs it as a child pytest and ends it with SIGTERM.

It holds a Spark session, the run's Kafka broker and a served app until it is stopped from outside.
"""

from __future__ import annotations

import threading

import pytest

from benchmarks.browser import served_app


@pytest.fixture
def app(tmp_path):
    with served_app(tmp_path) as served:
        yield served


def test_holds_spark_a_broker_and_a_server_until_the_run_is_ended(spark, kafka_broker, app) -> None:
    print(f"HELD {kafka_broker.bootstrap} {app.url} {app.process.pid}", flush=True)
    assert not threading.Event().wait(600), "nobody ended the run"
