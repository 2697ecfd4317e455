"""The arrival rule: one rule a run, named, followed by the form's and SQL's replays alike, and by a paced Live replay whatever the load."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from support import ROOT, wait_for

from streaming.cli import main
from streaming.engine.arrival import check_arrival, describe_rule, no_data_batches, replay_trigger
from streaming.engine.errors import ConfigError
from streaming.engine.query.config import FeedSource, QueryConfig, config_from_dict, config_to_dict
from streaming.engine.run.runner import run_to_idle
from streaming.engine.sql import SqlQuery, SqlView

FILES = 6
"""web_clicks' first 6 files: 300 rows, with rows late enough for a 30 s watermark to drop under either rule, and more under quiet
(at 0 s: 92.3 % against 96.7 %)."""
COUNT_SQL = (
    "SELECT window(event_time, '1 minute') AS w, key, count(*) AS n FROM events WATERMARK event_time DELAY OF INTERVAL 30 SECONDS "
    "WHERE key IS NOT NULL GROUP BY 1, 2"
)
"""The form's count per key and minute, in SQL: the form leaves a row without a key out (a malformed row)."""


@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("arrival") / "clicks"
    folder.mkdir()
    for path in sorted((ROOT / "sample_feeds" / "web_clicks").glob("batch-*.csv"))[:FILES]:
        shutil.copy(path, folder / path.name)
    return folder


def _config(feed: Path, arrival: str, seconds_per_file: float = 0) -> QueryConfig:
    return QueryConfig(FeedSource(feed, seconds_per_file=seconds_per_file), window="1 minute", watermark="30 seconds", arrival=arrival)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the rule, pure


def test_a_rule_is_checked_where_it_is_received_and_named_in_words(clicks: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        check_arrival("sometimes")
    assert (caught.value.field, caught.value.value) == ("arrival", "sometimes") and "quiet, busy" in caught.value.reason
    with pytest.raises(ConfigError) as caught:
        _config(clicks, "sometimes")
    assert caught.value.field == "arrival"
    assert replay_trigger("quiet") == "default" and replay_trigger("busy") == "available_now"
    assert describe_rule("busy", 1).startswith("arrival busy: batches run back to back") and describe_rule("quiet", 2).endswith("2 no-data batches")
    paced = _config(clicks, "busy", seconds_per_file=2.0)
    assert paced.replayed("tuned").trigger == "available_now" and paced.replayed("tuned").source.seconds_per_file == 0
    assert _config(clicks, "quiet", 2.0).replayed("tuned").trigger == "default"
    assert config_from_dict(config_to_dict(paced)).arrival == "busy"
    assert config_from_dict({k: v for k, v in config_to_dict(paced).items() if k != "arrival"}).arrival == "quiet"  # a query kept before the rule
    assert paced.describe()["arrival"] == "busy"


def test_a_no_data_batch_is_one_that_read_no_new_offsets() -> None:
    summaries = [
        {"source_offsets": (None, '{"logOffset":0}')},
        {"source_offsets": ('{"logOffset":0}', '{"logOffset":0}')},
        {"source_offsets": ('{"logOffset":0}', '{"logOffset":1}')},
        {"source_offsets": ('{"t":{"0":5}}', '{"t": {"0": 5}}')},
        {"source_offsets": None},
    ]
    assert no_data_batches(summaries) == 2


def test_an_unknown_rule_on_the_command_line_is_refused_before_spark_starts(clicks: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replay", str(clicks), "--window", "1 minute", "--arrival", "sometimes"])
    assert exited.value.code == 2 and "--arrival" in capsys.readouterr().err


# ---------------------------------------------------------------- one answer


def test_the_form_and_sql_tuners_give_one_answer_under_each_rule_and_spark_confirms_the_model(spark, registry, clicks: Path) -> None:
    """The same count per key and minute, tuned by the form (the model, confirmed on Spark) and in SQL (a Spark replay a delay), under each
    rule: the same completeness and Spark's rows dropped at every delay, the same recommendation; the model's confirmation agrees with Spark."""
    from streaming.analysis.sql_tune import tune_sql
    from streaming.analysis.tune import tune

    delays = ["0 seconds", "30 seconds", "2 minutes"]
    answers = {}
    for rule in ("quiet", "busy"):
        form = tune(registry, _config(clicks, rule), delays=delays, target=0.95)
        view = SqlView("events", FeedSource(clicks, seconds_per_file=0))
        sql = tune_sql(registry, SqlQuery(COUNT_SQL, (view,), arrival=rule), [(0,), (30_000,), (120_000,)], target=0.95)  # type: ignore[arg-type]
        assert (form.arrival, sql.arrival) == (rule, rule)
        assert form.confirmation is not None and form.confirmation.agree, form.confirmation.differences()
        assert [round(outcome.completeness, 6) for outcome in form.outcomes] == [round(point.completeness or 0, 6) for point in sql.points], rule
        assert [outcome.rows_dropped_by_watermark for outcome in form.outcomes] == [point.rows_dropped_by_watermark for point in sql.points], rule
        assert form.recommended == (None if sql.recommended is None else sql.recommended.label), rule
        assert form.by_rule is not None and form.by_rule[rule] == [outcome.completeness for outcome in form.outcomes]
        answers[rule] = form
    quiet, busy = answers["quiet"].outcomes, answers["busy"].outcomes
    assert quiet[0].completeness < busy[0].completeness, "the two rules must differ on this data, or the test tells nothing"
    assert (answers["quiet"].recommended, answers["busy"].recommended) == ("30 seconds", "0 seconds")  # one answer a rule, and the page says which
    assert answers["quiet"].by_rule == answers["busy"].by_rule  # both rules, whichever ran
    assert quiet[0].batches >= 2 * FILES - 2 and busy[0].batches <= FILES + 1  # quiet: a no-data batch after (nearly) every file; busy: after the last


BURN = "import time\nend = time.monotonic() + 180\nwhile time.monotonic() < end:\n    pass\n"
"""A process that keeps one core busy for three minutes at most (it is also ended in the test's ``finally``)."""


def test_a_paced_live_replay_under_the_quiet_rule_gives_the_stepped_answer_with_every_core_busy(registry, clicks: Path) -> None:
    """The Live page's replay paces files by a timer; under the quiet rule it also waits for Spark, so a saturated machine changes only its speed."""
    stepped = run_to_idle(registry, _config(clicks, "quiet").replayed("replayed"))
    assert (stepped.to_json()["arrival"], stepped.to_json()["no_data_batches"]) == ("quiet", stepped.no_data_batches) and stepped.no_data_batches > 0
    burners = [subprocess.Popen([sys.executable, "-c", BURN]) for _ in range(4)]
    name = "paced_quiet_under_load"
    try:
        run = registry.start(_config(clicks, "quiet", seconds_per_file=0.01), name, max_rows=None, latency=False)
        wait_for(lambda: run.feeder is not None and run.feeder.done.is_set(), "the paced replay did not hand every file over", 180)
        run.await_idle(180)
        summaries = run.log.summaries()
        assert all(burner.poll() is None for burner in burners), "the cores were not kept busy for the whole replay"
        pd.testing.assert_frame_equal(run.table.frame().reset_index(drop=True), stepped.result.reset_index(drop=True))
        assert [int(summary["num_input_rows"]) for summary in summaries] == [int(n) for n in stepped.progress["num_input_rows"]]
        assert no_data_batches(summaries) == stepped.no_data_batches
    finally:
        for burner in burners:
            burner.kill()
            burner.wait(10)
        registry.remove(name)
