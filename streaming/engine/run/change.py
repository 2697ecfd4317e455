"""A kept query resumed with a changed query: what the programming guide's *Recovery Semantics after Changes* predicts, and what Spark does.

Spark decides whether a changed query resumes from a checkpoint when the
query starts and its first batch loads the state: it refuses a stateful
operator that is not the one the checkpoint's state metadata names, a state
key or value schema that does not match the stored one; it resumes anything
else, including changes whose results are ill-defined (a window of another
length over windows already in state, another aggregate of the same type).

:func:`predict` reads the two queries' analysed plans and says which of
those it expects, naming what differs; :func:`resume_changed` lets Spark
decide: it keeps a copy of the folder, resumes the folder with the changed
query, and puts the copy back when Spark refuses, so a refused change leaves
the folder as it was. An applied change is recorded in the folder's
``query.json``: the configuration it ran before, and the batch it changed at.
:func:`try_change` runs the change on copies only (:meth:`KeptQuery.copy_to`),
beside the old query going on and the changed one from scratch.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ..errors import ConfigError
from ..jsonl import read_json_lines
from ..output.results import ResultTable, stamp
from ..query.config import QueryConfig
from ..sql.guard import SqlError, conditions
from ..sql.plan import plan_facts, state_facts
from ..sql.query import SqlQuery
from ..sql.replay import SqlReplay, replay_sql
from .checkpoints import KeptConfig, KeptQuery, differences
from .runner import Replay, run_to_idle

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from ..sql.plan import PlanFacts
    from .registry import QueryRegistry

    Replayed = SqlReplay | Replay

__all__ = ["FROM_SCRATCH", "GOING_ON", "TRIED", "Change", "Prediction", "Trial", "checkpoint_facts", "predict", "predict_on_state", "recover_change", "resume_changed", "sweep_trials", "try_change"]

Verdict = Literal["resumed", "refused"]
CLEAN = "nothing the state depends on changes"
"""The reason of a change Spark resumes with nothing the kept state depends on changed."""


@dataclass(frozen=True)
class Prediction:
    """What the guide's rules and the two plans predict: ``resumed`` or ``refused`` (with the condition Spark would name), and why."""

    verdict: Verdict
    condition: str | None
    reasons: tuple[str, ...]

    @property
    def clean(self) -> bool:
        """Resumed with nothing the state depends on changed: safe to apply without a word."""
        return self.verdict == "resumed" and self.reasons == (CLEAN,)

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "error_condition": self.condition, "reasons": list(self.reasons)}


def _aggregates(facts: PlanFacts) -> tuple[str, ...]:
    return tuple(name for name in facts.columns if name not in facts.grouping)


def predict(spark: SparkSession, old: KeptConfig, new: KeptConfig) -> Prediction:
    """What resuming ``old``'s checkpoint with ``new`` (two SQL queries, or two of the form's) will do, read from both queries' analysed plans.

    - another set of stateful operators (a deduplication added, a join...): refused, ``STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA``;
    - another grouping (a key added or dropped): refused, ``STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE``;
    - another number of aggregates, or aggregates that keep values of other types in state (``sum`` of an int column keeps a bigint,
      ``max`` of it an int): refused, ``STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE``;
    - otherwise resumed, with what the user is not told: a watermark that does not move back, rows in state computed by the old query
      (another filter, window or aggregate of the same type: ill-defined results), another output mode.
    """
    (before, kept_types), (after, new_types) = (_judged(spark, query) for query in (old, new))
    if tuple(before.stateful) != tuple(after.stateful):
        return Prediction("refused", "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA", (
            f"the stateful operators differ: {', '.join(before.stateful) or 'none'} in the checkpoint, {', '.join(after.stateful) or 'none'} now",
        ))
    if before.stateful and tuple(before.grouping) != tuple(after.grouping):
        return Prediction("refused", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", (
            f"the state's key differs: grouped by {', '.join(before.grouping) or 'nothing'} in the checkpoint, by {', '.join(after.grouping) or 'nothing'} now",
        ))
    if before.stateful and len(_aggregates(before)) != len(_aggregates(after)):
        return Prediction("refused", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE", (
            f"the state's value differs: {', '.join(_aggregates(before))} in the checkpoint, {', '.join(_aggregates(after))} now",
        ))
    if before.aggregates and kept_types != new_types:
        return Prediction("refused", "STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE", (
            f"the state's value types differ: {', '.join(kept_types)} in the checkpoint, {', '.join(new_types)} now "
            f"({', '.join(_aggregates(after))}: another aggregate, or the same over a column of another type)",
        ))
    reasons = []
    delays = {mark.column: mark.delay_ms for mark in before.watermarks}
    for mark in after.watermarks:
        if mark.column in delays and delays[mark.column] != mark.delay_ms:
            reasons.append(
                f"the watermark delay of {mark.column} changes ({delays[mark.column] / 1000:g} s to {mark.delay_ms / 1000:g} s): the watermark never "
                "moves back, so a longer delay saves nothing until event time passes where the old delay put it"
            )
    rewritten = _rewritten(old, new)
    if rewritten:
        reasons.append(
            f"{rewritten} over the same state: rows already in state were computed by the old query (another filter, window "
            "or aggregate of the same type gives ill-defined results, without an error)"
        )
    if old.output_mode != new.output_mode:
        reasons.append(f"the output mode changes ({old.output_mode} to {new.output_mode}): Spark resumes, emitting by the new mode from the next batch")
    return Prediction("resumed", None, tuple(reasons) or (CLEAN,))


def _judged(spark: SparkSession, query: KeptConfig) -> tuple[PlanFacts, tuple[str, ...]]:
    """``query``'s plan facts and the types its aggregation keeps in state, from one analysis: a SQL query's by its check
    (:meth:`SqlQuery.check`), the form's from the streaming DataFrame it builds (nothing starts)."""
    import tempfile

    from ..sql.checker import SqlChecker

    if isinstance(query, SqlQuery):
        with SqlChecker(spark, query.views) as checker:
            return checker.check_with_state(query.text, query.output_mode)
    with tempfile.TemporaryDirectory(prefix="lab-judged-") as staging:
        frame, feeder = query.build(spark, Path(staging), 0, latency=False)
        try:
            return state_facts(frame)
        finally:
            if feeder is not None:
                feeder.stop()


def _rewritten(old: KeptConfig, new: KeptConfig) -> str:
    """What of the query changes beyond its watermark delays and output mode, in words (empty for nothing): a SQL query's text, or the
    form's settings that shape the query (the window, the aggregate...); the pacing of the input is no change of the query."""
    if isinstance(old, SqlQuery) and isinstance(new, SqlQuery):
        return "the query's text changes" if _without_delays(old.text) != _without_delays(new.text) else ""
    settings = sorted({line.split(" ", 1)[0] for line in differences(old.to_dict(), new.to_dict())} - {"watermark", "output_mode"})
    return f"the query's {', '.join(settings)} change{'s' if len(settings) == 1 else ''}" if settings else ""


_DELAY = re.compile(r"DELAY\s+OF\s+INTERVAL\s+('[^']*'|\S+)(\s+[A-Za-z]+)?", re.IGNORECASE)


def _without_delays(text: str) -> str:
    """``text`` with every WATERMARK clause's delay blanked and its white space folded: what a change beyond the delays changes."""
    return " ".join(_DELAY.sub("DELAY", text).split())


@dataclass(frozen=True)
class Change:
    """A kept query resumed with a changed query: Spark's verdict, what was predicted, what differs, the watermark across the restart, and
    (when it resumed) the whole stream's replay."""

    verdict: Verdict
    predicted: Prediction
    differences: tuple[str, ...]
    watermark_before: str | None
    watermark_after: str | None
    error_condition: str | None = None
    error: str | None = None
    replay: Replayed | None = field(default=None, repr=False)
    carried: str = "carried"
    """What became of the kept result table (:func:`_carry_result`): carried on, or set aside when the changed query's columns differ."""

    def to_json(self) -> dict[str, Any]:
        """``change`` as the CLI contract names it; with ``result`` and ``rows_dropped_by_watermark`` over both runs when it resumed."""
        change = {
            "verdict": self.verdict, "error_condition": self.error_condition, "error": self.error, "predicted": self.predicted.to_json(),
            "differences": list(self.differences), "watermark_before": self.watermark_before, "watermark_after": self.watermark_after,
        }
        if self.replay is None:
            return {"change": change, "result": None, "rows_dropped_by_watermark": None}
        return {"change": change, **self.replay.to_json()}


def _last_watermark(folder: KeptQuery) -> str | None:
    """The watermark of the last batch the folder's progress holds (``None`` before one had a watermark)."""
    if not folder.progress_file.is_file():
        return None
    marks = [
        progress.get("eventTime", {}).get("watermark") for progress in read_json_lines(folder.progress_file)
        if isinstance(progress, dict)
    ]
    shown = [mark for mark in marks if mark and not str(mark).startswith("1970-01-01T00:00:00")]
    if not shown:
        return None
    moment = pd.Timestamp(shown[-1])
    return stamp(moment.tz_convert(None) if moment.tzinfo is not None else moment)


def resume_changed(registry: QueryRegistry, query: KeptConfig, folder: Path, *, timeout: float = 600.0, cancel: threading.Event | None = None) -> Change:
    """Resume the kept query of ``folder`` with ``query`` (see the module docstring): Spark's verdict, and the folder changed only when it resumed.

    :class:`ConfigError` when the folder keeps no query, one of the other kind (SQL for the form's, or the form's for SQL), or the change
    reads other data (the same data must go on).
    """
    with _held(Path(folder)):
        return _resume_changed(registry, query, Path(folder), timeout, cancel)


def _resume_changed(registry: QueryRegistry, query: KeptConfig, folder: Path, timeout: float, cancel: threading.Event | None) -> Change:
    from pyspark.errors import PySparkException

    kept, old = _changeable(folder, query)
    record = kept.record()
    stored = record["config"]
    changed = tuple(differences(stored, query.to_dict()))
    predicted = predict(registry.spark, old, query)
    before = _last_watermark(kept)
    batches = len(read_json_lines(kept.progress_file)) if kept.progress_file.is_file() else 0
    backup = _backed_up(kept)
    try:
        carried = _carry_result(registry.spark, kept, query, batches)
        history = [*record.get("changes", []), {"config": stored, "until_batch": batches, "result": carried}]
        _write_record(kept, {**record, "config": query.to_dict(), "changes": history})
        try:
            replay = _replay(registry, query, kept.folder, timeout, cancel)
        except (SqlError, PySparkException) as err:
            _restore(kept, backup)
            condition, message = _refusal(err)
            return Change("refused", predicted, changed, before, before, condition, message)
    except BaseException:
        if backup.exists():
            _restore(kept, backup)
        raise
    _discard(backup)
    kept.failures_file.unlink(missing_ok=True)  # another query now: what the old one failed with says nothing of it
    return Change("resumed", predicted, changed, before, _last_watermark(kept), replay=replay, carried=carried)


def _replay(registry: QueryRegistry, query: KeptConfig, keep: Path | None, timeout: float, cancel: threading.Event | None) -> Replayed:
    """``query`` replayed to the end of its data, kept in ``keep`` (or going on from it), under its arrival rule."""
    if isinstance(query, SqlQuery):
        return replay_sql(registry, query, keep=keep, timeout=timeout, cancel=cancel)
    return run_to_idle(registry, query.replayed("replayed"), keep=keep, timeout=timeout, cancel=cancel)


def _refusal(err: BaseException) -> tuple[str | None, str]:
    """``(condition, message)`` of Spark's refusal to resume: the innermost condition it names for the cause (not the ``STREAM_FAILED`` that
    wraps it), and its message in plain words."""
    if isinstance(err, SqlError):
        named = [condition for condition in conditions(err.spark_message or str(err)) if condition != "STREAM_FAILED"]
        return (named[0] if named else err.condition), err.message
    named = [condition for condition in conditions(str(err)) if condition != "STREAM_FAILED"]
    return (named[0] if named else None), str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def _changeable(folder: Path, query: KeptConfig) -> tuple[KeptQuery, KeptConfig]:
    """The kept folder and the query it keeps, which ``query`` may change; :class:`ConfigError` saying why not. A change of it that a killed
    process left mid-way is settled first (:func:`recover_change`)."""
    kept = KeptQuery(Path(folder))
    _recover(kept)
    if not kept.exists():
        raise ConfigError("--checkpoint", str(folder), "keeps no query to change: keep one first (replay --checkpoint, with --stop-after to stop it part way)")
    stored = kept.record()["config"]
    if (stored.get("kind") == "sql") != isinstance(query, SqlQuery):
        kinds = ("a SQL query", "the form's query (--window, --watermark...)") if stored.get("kind") == "sql" else ("the form's query", "a SQL query")
        raise ConfigError("--checkpoint", str(folder), f"keeps {kinds[0]}: --change resumes it with {kinds[1]}, changed")
    old = kept.config()
    read = [line for line in differences(stored, query.to_dict()) if line.startswith(("source.", "views."))]
    if read:
        raise ConfigError("--change", read[0].split(" ", 1)[0], f"reads other data than the kept query ({'; '.join(read)}): a change goes on over the same data")
    return kept, old


@dataclass(frozen=True)
class Trial:
    """A change tried on copies of a kept folder (:func:`try_change`): Spark's verdict on the changed query resumed from a copy, and when it
    resumed, the two results to hold it against, each over the same data: the old query going on from another copy, and the changed query
    run from scratch."""

    change: Change
    unchanged: Replayed | None = field(default=None, repr=False)
    fresh: Replayed | None = field(default=None, repr=False)

    def replays(self) -> dict[str, Replayed]:
        """The three replays by what each is (none when Spark refused the change): their ``result`` frames to show, their ``records``
        (typed by Spark's types) to compare."""
        if self.change.replay is None or self.unchanged is None or self.fresh is None:
            return {}
        return {TRIED: self.change.replay, GOING_ON: self.unchanged, FROM_SCRATCH: self.fresh}


TRIAL_PREFIX = ".try-"
"""How the folder of a try's copies is named, beside the kept folders (hidden: never listed as a query)."""
TRIED, GOING_ON, FROM_SCRATCH = "changed, resumed", "old query going on", "changed, from scratch"
"""The three results of a :class:`Trial`, as the page heads them."""


def try_change(registry: QueryRegistry, query: KeptConfig, folder: Path, *, timeout: float = 600.0, cancel: threading.Event | None = None) -> Trial:
    """Try ``query`` on copies of the kept folder (:meth:`KeptQuery.copy_to`), which is never touched: the changed query resumed from one
    copy (:func:`resume_changed`), and when Spark resumes it, the old query resumed from another and the changed query run from scratch, each
    to the end of the data. The copies are deleted after."""
    with _held(Path(folder)):  # the folder held while it is copied: no change or settling of it meanwhile
        kept, old = _changeable(folder, query)
        trial = kept.folder.with_name(f"{TRIAL_PREFIX}{kept.folder.name}.{uuid.uuid4().hex[:8]}")
        trial.mkdir()
        try:
            changed, unchanged = (kept.copy_to(trial / part).folder for part in ("changed", "unchanged"))  # both as the folder is now
        except BaseException:
            shutil.rmtree(trial, ignore_errors=True)
            raise
    try:
        change = resume_changed(registry, query, changed, timeout=timeout, cancel=cancel)
        if change.verdict == "refused":
            return Trial(change)
        going_on = _replay(registry, old, unchanged, timeout, cancel)
        return Trial(change, going_on, _replay(registry, query, None, timeout, cancel))
    finally:
        shutil.rmtree(trial, ignore_errors=True)


def sweep_trials(queries: Path) -> list[str]:
    """Delete the copies that tries left under the kept queries' folder ``queries`` when their server stopped mid-try, and settle each change
    a stopped process left mid-way (:func:`recover_change`); the names of what was deleted or settled. Call it when no try or change runs (a
    server's start)."""
    root = Path(queries)
    left = sorted(path for path in root.glob(f"{TRIAL_PREFIX}*") if path.is_dir()) if root.is_dir() else []
    for path in left:
        shutil.rmtree(path, ignore_errors=True)
    settled = sorted({name for path in root.glob(".*") if (name := _owner(path)) is not None}) if root.is_dir() else []
    return [path.name for path in left] + [f"{name}: {_settled(root / name)}" for name in settled]


def _settled(folder: Path) -> str:
    """:func:`recover_change` of ``folder``, or why it could not be settled (a disk error): the server starts all the same."""
    try:
        return recover_change(folder)
    except OSError as err:
        return f"not settled ({err}): its copies are left beside it"


def _discard(path: Path) -> None:
    """Delete a change's copy: renamed first to a name :func:`recover_change` deletes, so a kill mid-delete never leaves a half copy under the
    name of one to put back."""
    doomed = path.with_name(path.name.replace(".before-change-", ".refused-"))
    os.replace(path, doomed)
    shutil.rmtree(doomed, ignore_errors=True)


_BACKUP = re.compile(r"^\.(.+)\.(?:before-change|copying|refused)-[0-9a-f]{8}$")
"""The folders :func:`resume_changed` keeps beside a kept folder while it changes it: the copy being made, the copy made, and a refused change's
folder on its way out."""


def _copies(folder: Path) -> list[Path]:
    """The copies a change of ``folder`` keeps beside it (:data:`_BACKUP`): its own, not those of a folder its name is a prefix of (q.x's for q)."""
    return [path for path in folder.parent.glob(f".{glob.escape(folder.name)}.*") if _owner(path) == folder.name]


def _owner(path: Path) -> str | None:
    """The kept folder's name that ``path`` is a change's copy of (:data:`_BACKUP`), or ``None``."""
    match = _BACKUP.match(path.name)
    return match[1] if match else None


def _backed_up(kept: KeptQuery) -> Path:
    """A whole copy of the kept folder beside it, taken before a change: made under another name and renamed once complete, so a copy a
    killed process left half made is never taken for one (:func:`recover_change`)."""
    token = uuid.uuid4().hex[:8]
    copying = kept.folder.with_name(f".{kept.folder.name}.copying-{token}")
    shutil.copytree(kept.folder, copying, symlinks=True)
    backup = kept.folder.with_name(f".{kept.folder.name}.before-change-{token}")
    os.replace(copying, backup)
    return backup


def recover_change(folder: Path) -> str:
    """Settle a change of the kept ``folder`` that a killed process left mid-way (what it did, in words): the change stands when its record is
    written and the changed query committed a batch (Spark resumed it); otherwise the copy taken before it is put back, as a refusal would
    have left it. Half-made copies and a refused change's folder are deleted. A folder a change or a try holds now is left as it is."""
    if not _copies(Path(folder)):
        return "nothing to settle"
    try:
        with _held(Path(folder)):
            return _recover(KeptQuery(Path(folder)))
    except ConfigError:
        return "left as it is: a change or a try of it runs now"


@contextmanager
def _held(folder: Path) -> Iterator[None]:
    """Hold the kept ``folder`` for one change, try or settling at a time, across the server's pages and the CLI: an exclusive lock on a
    file beside it (``.NAME.lock``), released when the holder ends or dies. :class:`ConfigError` when another holds it."""
    import fcntl

    if not folder.parent.is_dir():  # no folder to change there (its checks say so)
        yield
        return
    with open(KeptQuery(folder).lock_file, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ConfigError("checkpoint", str(folder), "is being changed or tried by another page or process: try again once it is done") from None
        yield


def _recover(kept: KeptQuery) -> str:
    """:func:`recover_change` of a folder its caller holds (:func:`_held`)."""
    siblings = _copies(kept.folder)
    backups = [path for path in siblings if ".before-change-" in path.name]
    for path in siblings:
        if path not in backups:
            shutil.rmtree(path, ignore_errors=True)
    if not backups:
        return "nothing to settle"
    backup, *older = sorted(backups, key=lambda path: path.stat().st_mtime, reverse=True)
    for path in older:
        shutil.rmtree(path, ignore_errors=True)
    if not kept.folder.exists():
        os.replace(backup, kept.folder)
        return "put back: the process stopped while it put the copy back"
    try:
        before = len(KeptQuery(backup).record().get("changes", []))
    except ConfigError:  # no whole copy to put back: the folder is what is left
        _discard(backup)
        return "the folder as it is: the copy taken before the change could not be read"
    try:
        written = len(kept.record().get("changes", [])) > before
    except ConfigError:
        written = False
    batches = len(read_json_lines(kept.progress_file)) if kept.progress_file.is_file() else 0
    if written and batches > kept.changed_at()[-1]:
        _discard(backup)
        return "the change stands: Spark resumed the changed query before the process stopped"
    _restore(kept, backup)
    return "put back as it was before the change: the process stopped before Spark ran the changed query"


def _carry_result(spark: SparkSession, kept: KeptQuery, query: KeptConfig, batches: int) -> str:
    """Make the kept result table the changed query's, and say how: its rows go on, folded by the new output mode from the change on, when
    its columns are the new query's; else the old table is set aside (``result-before-change-N/``) and the new one starts empty."""
    from ..output.kept_table import TableFile, journal_path

    snapshot, journal = TableFile(kept.result_file).read()
    if snapshot is None:
        return "carried" if not journal else "carried (journal only)"
    tables = _sql_tables(spark, kept, query, snapshot) if isinstance(query, SqlQuery) else _form_tables(kept, query, snapshot)
    if tables is None:
        return "carried"
    before, after = tables
    aside = kept.folder / f"result-before-change-{batches}"
    aside.mkdir(exist_ok=True)
    for path in (kept.result_file, journal_path(kept.result_file)):
        if path.is_file():
            os.replace(path, aside / path.name)
    if after is None:
        return f"set aside in {aside.name}: the changed query's columns differ"
    after.keep(kept.result_file)
    after.apply(before.last_batch_id, before.rows())
    return f"carried, folded by the {query.output_mode} mode from the change on"


Tables = tuple[Any, Any]
"""The kept result table loaded, and the changed query's empty one (``None`` when its columns differ)."""


def _sql_tables(spark: SparkSession, kept: KeptQuery, query: SqlQuery, snapshot: dict[str, Any]) -> Tables | None:
    """For :func:`_carry_result`: ``None`` when the kept table is the changed SQL query's as it is (its schema, with the WATERMARK delays its
    metadata keeps, and its output mode)."""
    from pyspark.sql.types import StructType

    from ..sql.checker import SqlChecker
    from ..sql.guard import checked
    from ..sql.table import SqlTable

    with SqlChecker(spark, query.views) as checker:
        frame, walked = checked(checker.session, query.text, checker.names)
        schema, grouping = frame.schema, plan_facts(frame, walked).grouping
    if snapshot.get("schema") == schema.json() and snapshot.get("output_mode") == query.output_mode:
        return None
    stored = StructType.fromJson(json.loads(snapshot["schema"]))
    before = SqlTable(str(snapshot["output_mode"]), stored, snapshot.get("grouping", ()))
    before.load(kept.result_file)
    same = stored.simpleString() == schema.simpleString()  # the columns' names and types; a WATERMARK delay is kept in their metadata
    return before, SqlTable(query.output_mode, schema, grouping) if same else None


def _form_tables(kept: KeptQuery, query: QueryConfig, snapshot: dict[str, Any]) -> Tables | None:
    """For :func:`_carry_result`: ``None`` when the kept table is the changed form query's as it is (its output mode and aggregate)."""
    if snapshot.get("output_mode") == query.output_mode and snapshot.get("aggregation") == query.aggregation:
        return None
    before = ResultTable(str(snapshot["output_mode"]), str(snapshot["aggregation"]))
    before.load(kept.result_file)
    after = ResultTable(query.output_mode, query.aggregation)
    return before, after if before.row_shape == after.row_shape else None


def _write_record(kept: KeptQuery, record: dict[str, Any]) -> None:
    partial = kept.folder / ".query.json.partial"
    partial.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(partial, kept.config_file)


def _restore(kept: KeptQuery, backup: Path) -> None:
    """Put the copy taken before the change back in place of the folder (the change, refused, may have written to its checkpoint)."""
    aside = kept.folder.with_name(f".{kept.folder.name}.refused-{uuid.uuid4().hex[:8]}")
    os.replace(kept.folder, aside)
    os.replace(backup, kept.folder)
    shutil.rmtree(aside, ignore_errors=True)


def _offsets(checkpoint: Path) -> tuple[int | None, dict[str, Any], list[Any]]:
    """``(last committed batch, its offsets' metadata, each source's offset)`` from Spark's ``commits/`` and ``offsets/`` logs."""
    committed = [int(path.name) for path in (checkpoint / "commits").iterdir() if path.name.isdigit()] if (checkpoint / "commits").is_dir() else []
    if not committed:
        return None, {}, []
    last = max(committed)
    lines = (checkpoint / "offsets" / str(last)).read_text().splitlines() if (checkpoint / "offsets" / str(last)).is_file() else []
    metadata = json.loads(lines[1]) if len(lines) > 1 else {}
    sources = [None if line.strip() == "-" else json.loads(line) for line in lines[2:] if line.strip()]
    return last, metadata, sources


def checkpoint_facts(spark: SparkSession, folder: Path) -> dict[str, Any]:
    """What a checkpoint holds (a folder kept by ``replay --checkpoint``, or any Structured Streaming job's checkpoint): the last committed
    batch, the watermark it carries, each source's offsets, each stateful operator (Spark's ``state-metadata`` source) with its state's key
    and value schema, and the kept query when there is one. :class:`ConfigError` for a folder that is no checkpoint."""
    from ..output.state import state_operators, state_schema

    kept = KeptQuery(Path(folder))
    checkpoint = kept.checkpoint if kept.exists() else Path(folder)
    if not (checkpoint / "offsets").is_dir():
        raise ConfigError("DIR", str(folder), "is not a query's checkpoint (no offsets folder)")
    last, metadata, sources = _offsets(checkpoint)
    mark = metadata.get("batchWatermarkMs")
    operators = []
    for row in state_operators(spark, checkpoint).to_dict("records"):
        key, value = state_schema(spark, checkpoint, int(row["operator_id"])) if last is not None else (None, None)
        operators.append({**{name: (int(item) if hasattr(item, "__int__") and not isinstance(item, str) else item) for name, item in row.items()},
                          "key_schema": key, "value_schema": value})
    query = kept.record()["config"] if kept.exists() else None
    return {
        "checkpoint": str(checkpoint), "last_batch": last,
        "watermark": None if not mark else stamp(pd.Timestamp(int(mark), unit="ms")),
        "sources": sources, "operators": operators, "query": query,
    }


def predict_on_state(spark: SparkSession, facts: dict[str, Any], query: SqlQuery) -> Prediction:
    """What resuming the checkpoint ``facts`` describes (:func:`checkpoint_facts`) with ``query`` will do: from the kept query's plan when the
    folder keeps one (:func:`predict`), else from the stored operators and key schemas against ``query``'s plan."""
    stored = facts.get("query")
    if stored is not None and stored.get("kind") == "sql":
        return predict(spark, SqlQuery.from_dict(stored), query)
    plan = query.check(spark)
    operators = facts["operators"]
    if len(operators) != len(plan.stateful):
        return Prediction("refused", "STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA", (
            f"the checkpoint holds {len(operators)} stateful operators ({', '.join(str(op['operator']) for op in operators) or 'none'}); "
            f"the query has {len(plan.stateful)} ({', '.join(plan.stateful) or 'none'})",
        ))
    if operators and operators[0].get("key_schema") is not None and plan.aggregates:
        stored_keys = len(json.loads(operators[0]["key_schema"]).get("fields", []))
        if stored_keys != len(plan.grouping):
            return Prediction("refused", "STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE", (
                f"the state's key has {stored_keys} fields in the checkpoint; the query groups by {len(plan.grouping)} ({', '.join(plan.grouping)})",
            ))
    return Prediction("resumed", None, ("the stateful operators and the state's key match; Spark checks the value schema at the first batch",))
