"""A failure as a page says it: the cause in plain words, Spark's own text behind an expander, no frames and no server paths."""

from __future__ import annotations

from streaming.engine.errors import failure_details, failure_words

BRIDGED = """An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):
  File "/srv/lab/.venv/lib/python3.11/site-packages/py4j/clientserver.py", line 617, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/lab/streaming/engine/sinks.py", line 114, in fold
    rows = [tuple(row) for row in batch.collect()]
py4j.protocol.Py4JJavaError: An error occurred while calling o1234.collectToPython.
: org.apache.kafka.common.errors.TimeoutException: Timeout of 5000ms expired before the position for partition clicks-0 could be determined
\tat org.apache.spark.sql.kafka010.KafkaOffsetReader.fetch(KafkaOffsetReader.scala:12)
\tat java.base/java.lang.Thread.run(Thread.java:840)
"""


def test_a_failure_through_the_python_bridge_reads_as_its_cause() -> None:
    said = failure_words(BRIDGED)
    assert said == "TimeoutException: Timeout of 5000ms expired before the position for partition clicks-0 could be determined"
    details = failure_details(BRIDGED)
    assert "Python Proxy" not in details and "Traceback" not in details and "/srv/lab" not in details and "\tat " not in details
    assert "org.apache.kafka.common.errors.TimeoutException" in details  # the whole cause, for those who open it


def test_the_deepest_cause_is_told_and_its_server_path_cut() -> None:
    text = (
        "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to stage failure\n"
        "Caused by: java.io.FileNotFoundException: /tmp/streaming-lab-q/staging/000001-a.csv (No such file or directory)\n\tat x.y.Z.read(Z.java:1)"
    )
    assert failure_words(text) == "FileNotFoundException: …/000001-a.csv (No such file or directory)"
    assert failure_words("Sorting is not supported on streaming DataFrames") == "Sorting is not supported on streaming DataFrames"
    assert failure_words("") == "no reason given"
