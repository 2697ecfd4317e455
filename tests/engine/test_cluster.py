"""The replay CLI on a real standalone cluster: a master and a worker from the pip package on 127.0.0.1.

The guide example (10-minute windows sliding every 5 minutes, 10-minute
watermark, append mode) is replayed by ``python -m streaming replay`` in a
subprocess with ``SPARK_MASTER`` pointing at the cluster, and must give the
same JSON as the local engine in this process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support import GUIDE_BATCHES, ROOT
from support.cluster import StandaloneCluster

# Four JVMs (master, worker, cluster driver + executor) plus the local session on a shared 2-core
# machine: under other engineers' load one run took 440 s, close to the suite-wide 600 s timeout.
pytestmark = [pytest.mark.cluster, pytest.mark.timeout(1200)]

APP_NAME = "streaming-lab"
WINDOW, SLIDE, WATERMARK, MODE = "10 minutes", "5 minutes", "10 minutes", "append"
EXPECTED_RESULT = [
    {"window_start": "2016-05-10 12:00:00", "window_end": "2016-05-10 12:10:00", "key": "cat", "count": 1, "value": 1},
    {"window_start": "2016-05-10 12:00:00", "window_end": "2016-05-10 12:10:00", "key": "dog", "count": 2, "value": 2},
    {"window_start": "2016-05-10 12:00:00", "window_end": "2016-05-10 12:10:00", "key": "owl", "count": 1, "value": 1},
]


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("standalone"), cores=1, memory="1g", python=sys.executable)
    try:
        cluster.start(timeout=240)
        yield cluster
    finally:
        cluster.stop()


def _comparable(outcome: dict) -> dict:
    """The replay JSON without batch durations (wall-clock, never equal between two runs)."""
    return {
        **outcome,
        "batches": [{key: value for key, value in batch.items() if key != "duration_ms"} for batch in outcome["batches"]],
    }


def _apps(state: dict) -> list[dict]:
    return state.get("activeapps", []) + state.get("completedapps", [])


def test_guide_replay_on_standalone_cluster_matches_local(standalone_cluster, write_feed, registry, tmp_path):
    from streaming.engine.run.runner import replay

    feed = write_feed(GUIDE_BATCHES)
    assert not _apps(standalone_cluster.state()), "the fresh master already lists an application"

    out = tmp_path / "cluster.json"
    env = {key: value for key, value in os.environ.items() if key not in {"SPARK_REMOTE", "PYSPARK_SUBMIT_ARGS"}}
    env.update(
        {
            "SPARK_MASTER": standalone_cluster.url,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    command = [
        sys.executable, "-m", "streaming", "replay", str(feed),
        "--window", WINDOW, "--slide", SLIDE, "--watermark", WATERMARK, "--output-mode", MODE,
        "--json", str(out),
    ]  # fmt: skip
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"replay on the cluster failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-6000:]}"
    on_cluster = json.loads(out.read_text())

    assert on_cluster["result"] == EXPECTED_RESULT
    assert on_cluster["rows_dropped_by_watermark"] == 2
    assert on_cluster["final_watermark"] == "2016-05-10 12:11:00"
    assert on_cluster["input_rows"] == 10
    assert on_cluster["malformed_rows"] == 0

    # The driver really ran on the cluster: the master registered exactly one application, ours, and
    # once the CLI exited it finished; the worker launched an executor for it that ran tasks.
    state = standalone_cluster.wait_until(
        lambda state: any(app.get("name") == APP_NAME and app.get("state") == "FINISHED" for app in state.get("completedapps", [])),
        f"application {APP_NAME} FINISHED on the master",
        timeout=120,
    )
    apps = _apps(state)
    assert [app["name"] for app in apps] == [APP_NAME], apps
    app_id = apps[0]["id"]
    executor_logs = sorted((standalone_cluster.work_dir / app_id).glob("*/stderr"))
    assert executor_logs, f"the worker launched no executor for {app_id}"
    executor_log = "\n".join(path.read_text(errors="replace") for path in executor_logs)
    assert "Running task" in executor_log, executor_log[-3000:]

    # Same answer as the local engine (this process's local[*] session).
    local = replay(registry, feed, window=WINDOW, slide=SLIDE, watermark=WATERMARK, output_mode=MODE).to_json()
    assert registry.spark.sparkContext.master.startswith("local"), registry.spark.sparkContext.master
    assert _comparable(on_cluster) == _comparable(local)
