"""Not collected by the suite (no ``test_`` name): ``test_interrupted_run`` runs it as a child pytest and ends it with SIGTERM.

It holds a Spark session and the run's Kafka broker until it is stopped from outside.
"""

from __future__ import annotations

import threading


def test_holds_spark_and_a_broker_until_the_run_is_ended(spark, kafka_broker) -> None:
    print(f"HELD {kafka_broker.bootstrap}", flush=True)
    assert not threading.Event().wait(600), "nobody ended the run"
