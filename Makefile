# Two entry points: `make run` serves the dashboard, `make test` runs the suite.
# `make lint` runs ruff and mypy (CI runs it before the tests); `make bench` the benchmarks (dashboard, then tuner);
# `make connect` starts a local Spark Connect server and prints the SPARK_REMOTE to run the app against it.
# Both create .venv from the pinned requirements.txt first (once, and again when it changes).

PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed-requirements

.PHONY: run test lint bench connect java

$(STAMP): requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	cp requirements.txt $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { echo "Java 17 is required by Spark and was not found on PATH (install e.g. openjdk-17-jre-headless, or set JAVA_HOME)." >&2; exit 1; }

run: $(STAMP) java
	$(VENV)/bin/streamlit run app.py

test: $(STAMP) java
	$(VENV)/bin/python -m pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

connect: $(STAMP) java
	$(VENV)/bin/python -m streaming.engine.connect $(CONNECT_ARGS)

bench: $(STAMP) java
	$(VENV)/bin/python -m benchmarks.bench $(BENCH_ARGS)
	$(VENV)/bin/python -m benchmarks.sweep $(SWEEP_ARGS)
