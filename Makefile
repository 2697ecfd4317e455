# Two entry points: `make run` serves the dashboard, `make test` runs the suite.
# `make test-fast` runs the tests that need neither Spark, Kafka nor a browser (a minute or two: run it often).
# `make lint` runs ruff and mypy (CI runs it before the tests); `make bench` the benchmarks (dashboard, tuner, Kafka, latency, stepped replay, then joins, replayed and live, a press of Next on Step through, SQL: a check's latency and a SQL query against the form's, a shared server: another user's page under one user's exploding query, and a read-only link's audience: the app's CPU per viewer and the presenter's refresh rate);
# `make connect` starts a local Spark Connect server and prints the SPARK_REMOTE to run the app against it.
# `make kafka` starts a local Apache Kafka broker and prints the KAFKA_BOOTSTRAP to use; `make kafka-stop` stops it.
# All create .venv from the pinned requirements.txt first (once, and again when it changes), and fetch the
# JVM parts pinned in jvm/*.pom.xml (Spark's Kafka connector, the Kafka broker) from Maven Central into jvm/lib/;
# run, test and bench also make the class archive Spark's driver starts from (jvm/archive/, about 40 s, once and again after the
# jars or streaming/engine/runtime/archive.py change), and go on without it if it cannot be made.

PYTHON ?= python3
MVN ?= mvn
VENV := .venv
STAMP := $(VENV)/.installed-requirements
JARS := jvm/lib/.fetched
ARCHIVE := jvm/archive/.made
FETCH := $(MVN) -q -B -Dstyle.color=never dependency:copy-dependencies -DincludeScope=runtime

.PHONY: run test test-fast lint bench connect kafka kafka-stop jars java archive

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	cp requirements.txt $(STAMP)

$(JARS): jvm/kafka-connector.pom.xml jvm/kafka-broker.pom.xml
	@command -v $(MVN) >/dev/null 2>&1 || { echo "Maven (mvn) is required to fetch Spark's Kafka connector and the Kafka broker from Maven Central (install e.g. maven)." >&2; exit 1; }
	rm -rf jvm/lib
	$(FETCH) -f jvm/kafka-connector.pom.xml -DoutputDirectory=$(CURDIR)/jvm/lib/kafka-connector
	$(FETCH) -f jvm/kafka-broker.pom.xml -DoutputDirectory=$(CURDIR)/jvm/lib/kafka-broker
	touch $@

jars: $(JARS)

$(ARCHIVE): $(STAMP) $(JARS) streaming/engine/runtime/archive.py | java
	-$(VENV)/bin/python -m streaming archive
	@mkdir -p $(@D) && touch $@

archive: $(ARCHIVE)

java:
	@command -v java >/dev/null 2>&1 || { echo "Java 17 is required by Spark and was not found on PATH (install e.g. openjdk-17-jre-headless, or set JAVA_HOME)." >&2; exit 1; }

run: java $(STAMP) $(JARS) $(ARCHIVE)
	$(VENV)/bin/python -m dashboard.serve

test: java $(STAMP) $(JARS) $(ARCHIVE)
	$(VENV)/bin/python -m pytest

test-fast: $(STAMP)
	$(VENV)/bin/python -m pytest -m "not spark"

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

connect: $(STAMP) $(JARS) java
	$(VENV)/bin/python -m streaming.engine.runtime.connect --folder "$${STREAMING_LAB_DATA:-data}/.connect" $(CONNECT_ARGS)

bench: java $(STAMP) $(JARS) $(ARCHIVE)
	$(VENV)/bin/python -m benchmarks.bench $(BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.sweep $(SWEEP_ARGS)
	$(VENV)/bin/python -m benchmarks.kafka $(KAFKA_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.latency $(LATENCY_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.replay $(REPLAY_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.join $(JOIN_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.join_live $(JOIN_LIVE_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.walkthrough
	$(VENV)/bin/python -m benchmarks.sql $(SQL_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.shared $(SHARED_BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.viewers $(VIEWERS_BENCH_ARGS)

kafka: $(STAMP) $(JARS) java
	$(VENV)/bin/python -m streaming.engine.kafka.broker $(KAFKA_ARGS)

kafka-stop: $(STAMP)
	$(VENV)/bin/python -m streaming.engine.kafka.broker --stop $(KAFKA_ARGS)
