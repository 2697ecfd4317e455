"""Kept queries: a folder per query that outlives its run, so a stopped query resumes where it stopped.

A kept folder holds everything a run needs to go on after a stop, a crash or a
server restart:

- ``query.json``: the configuration (the form's, :func:`~streaming.engine.query.config.config_to_dict`, or a user's SQL with its
  views, :meth:`~streaming.engine.sql.query.SqlQuery.to_dict`),
  the query's name, its owner (:mod:`~streaming.engine.owners`; none: the server's own) and the start of its event time
  (``start_ms``, used by the ``rate-micro-batch`` source);
- ``checkpoint/``: Spark's checkpoint (offsets, commits, state);
- ``staging/`` and ``batches/``: the feed files handed to Spark so far (its
  file source logs them by path, so they stay where they are);
- ``result.json`` and ``result.jsonl``: the result table and the last batch
  folded into it, as a snapshot and a journal of the batches since
  (:meth:`~streaming.engine.output.results.ResultTable.keep`), so a batch Spark runs
  again after a crash is counted once;
- ``progress.jsonl``: every batch's progress;
- ``failures.jsonl``: the failures it was resumed from (:mod:`.failure`), so a resume that fails the same way is the last;
- ``share.json``: its read-only link and what the owner grants its viewers (:mod:`.sharing`), so the link names the query, not one run of it.

A folder is resumed only with the configuration it was made with, apart from
how fast the input is paced, its arrival rule and the trigger (:data:`UNCHECKED`).
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import pandas as pd

from ..errors import ConfigError
from ..output.kept_table import TableFile, journal_path
from ..output.results import ResultTable
from ..owners import check_owner
from ..query.config import QueryConfig, config_from_dict
from ..sql.query import SqlQuery
from ..sql.table import SqlTable
from .sharing import Share

KeptConfig = QueryConfig | SqlQuery
"""What a kept folder runs: the form's query or a user's SQL."""

__all__ = ["QUERIES_FOLDER", "UNCHECKED", "KeptQuery", "differences", "kept_queries", "stray_folders"]

LOG = logging.getLogger(__name__)

CHECKPOINT = "checkpoint"
"""The folder under a run's working folder (kept or not) that Spark writes the query's checkpoint to."""

QUERIES_FOLDER = ".queries"
"""The folder of kept queries under the data root (hidden: the data root's other folders are datasets)."""
UNCHECKED = ("trigger", "trigger_interval", "arrival", "source.seconds_per_file", "source.speed", "source.max_offsets_per_trigger")
"""Settings a resumed query may change: they pace the input (the arrival rule says when each batch's data arrives), not what the query
computes; a folder kept before the rule was named has none."""


def _flat(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``values`` by dotted name; a list of records (a SQL query's views) by its index: ``views.0.source.seconds_per_file``."""
    flat: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, Mapping):
            flat.update(_flat(value, f"{prefix}{name}."))
        elif isinstance(value, list) and value and all(isinstance(item, Mapping) for item in value):
            for index, item in enumerate(value):
                flat.update(_flat(item, f"{prefix}{name}.{index}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def _unchecked(name: str) -> bool:
    """Whether the setting ``name`` is one a resumed query may change (:data:`UNCHECKED`), a SQL view's source's pacing included."""
    return name in UNCHECKED or any(name.endswith(f".{setting}") for setting in UNCHECKED if setting.startswith("source."))


def differences(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """What differs between two :func:`config_to_dict` records, apart from :data:`UNCHECKED`: ``"watermark is '10 minutes' there, '5 minutes' here"``."""
    there, here = _flat(stored), _flat(given)
    return [
        _difference(name, there.get(name), here.get(name))
        for name in sorted(set(there) | set(here))
        if not _unchecked(name) and there.get(name) != here.get(name)
    ]


def _difference(name: str, there: Any, here: Any) -> str:
    """One line of :func:`differences`; a text of several lines (a SQL query's) as the lines that differ, ``-`` there and ``+`` here."""
    if isinstance(there, str) and isinstance(here, str) and "\n" in there + here:
        lines = difflib.unified_diff(there.splitlines(), here.splitlines(), lineterm="", n=0)
        return f"{name} differs:\n" + "\n".join(line for line in lines if not line.startswith(("---", "+++", "@@")))
    return f"{name} is {there!r} there, {here!r} here"


@dataclass(frozen=True)
class KeptQuery:
    """The kept folder of one query (see the module docstring); it need not exist yet."""

    folder: Path

    @property
    def name(self) -> str:
        return str(self.record().get("name") or self.folder.name)

    @property
    def owner(self) -> str | None:
        """Whose query it is (:mod:`~streaming.engine.owners`); ``None``, the server's own, also when ``query.json`` cannot be read."""
        try:
            return check_owner(self.record().get("owner"))
        except ConfigError:
            return None

    @property
    def config_file(self) -> Path:
        return self.folder / "query.json"

    @property
    def checkpoint(self) -> Path:
        return self.folder / CHECKPOINT

    @property
    def staging(self) -> Path:
        return self.folder / "staging"

    @property
    def result_file(self) -> Path:
        return self.folder / "result.json"

    @property
    def progress_file(self) -> Path:
        return self.folder / "progress.jsonl"

    @property
    def lock_file(self) -> Path:
        """The file beside the folder that a change or a try of it holds it by, one at a time (:mod:`.change`)."""
        return self.folder.with_name(f".{self.folder.name}.lock")

    @property
    def failures_file(self) -> Path:
        """The failures the query was resumed from (:mod:`.failure`)."""
        return self.folder / "failures.jsonl"

    @property
    def share_file(self) -> Path:
        """The query's read-only link (:meth:`share`): a file of its own, not a field of ``query.json``, whose time orders the kept queries
        and says when the query last changed; a link granted or revoked changes neither."""
        return self.folder / "share.json"

    def share(self) -> Share:
        """The query's read-only link, made and kept the first time it is asked for, so every run of the query answers it; one that cannot
        be read is made again (the link it held stops working: better than a link no one can revoke)."""
        try:
            return Share.from_dict(json.loads(self.share_file.read_text()))
        except FileNotFoundError:
            pass
        except (OSError, ValueError, ConfigError):
            LOG.warning("%s: its read-only link cannot be read: a new one is made", self.folder.name)
        share = Share.new()
        self.keep_share(share)
        return share

    def keep_share(self, share: Share) -> None:
        """Keep ``share`` as the query's read-only link, written whole or not at all: a reader never sees half a token."""
        partial = self.folder / f".share.json.{uuid.uuid4().hex[:8]}.partial"
        try:
            partial.write_text(json.dumps(share.to_dict()) + "\n")
            os.replace(partial, self.share_file)
        finally:
            partial.unlink(missing_ok=True)

    def exists(self) -> bool:
        return self.config_file.is_file()

    @property
    def problem(self) -> str | None:
        """Why the folder cannot be resumed (its ``query.json`` unreadable, its checkpoint gone), or ``None``; only Delete is left for it.

        A folder whose query is starting has no checkpoint yet either: ask only of a query that is not running.
        """
        try:
            self.record()["config"]
        except (ConfigError, KeyError, TypeError):
            return "its query.json cannot be read"
        if not (self.checkpoint / "metadata").is_file():
            return "its checkpoint is gone: Spark has nothing to resume it from"
        return None

    def changed_at(self) -> tuple[int, ...]:
        """The batches from which a change applied to the query ran (:mod:`.change` records each in ``query.json``); empty for none, or an
        unreadable record."""
        try:
            return tuple(int(change["until_batch"]) for change in self.record().get("changes", []))
        except (ConfigError, KeyError, TypeError, ValueError):
            return ()

    def record(self) -> dict[str, Any]:
        """What ``query.json`` holds: ``name``, ``config``, ``start_ms``; :class:`ConfigError` if it cannot be read."""
        try:
            return json.loads(self.config_file.read_text())
        except (OSError, ValueError) as err:
            raise ConfigError("checkpoint", str(self.folder), f"holds no readable query.json ({err})") from None

    def config(self) -> KeptConfig:
        """The configuration the folder was made with, validated again (its feed or dataset must still be there)."""
        stored = self.record()["config"]
        return SqlQuery.from_dict(stored) if stored.get("kind") == "sql" else config_from_dict(stored)

    def open(self, config: KeptConfig, name: str, start_ms: int, owner: str | None = None) -> int:
        """Make the folder for ``config`` (``owner``'s), or check that it was made for it; the ``start_ms`` to run with (the stored one when resuming).

        Raises :class:`ConfigError` naming what differs when the folder belongs
        to another configuration, when it holds files but no ``query.json``,
        or for a socket source, which Spark cannot resume.
        """
        self.check(config)
        if self.exists():
            return int(self.record()["start_ms"])
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.folder / ".query.json.partial"
        record = {"name": name, "config": config.to_dict(), "start_ms": int(start_ms), **({} if owner is None else {"owner": check_owner(owner)})}
        partial.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(partial, self.config_file)
        return int(start_ms)

    def check(self, config: KeptConfig) -> None:
        """:class:`ConfigError` unless the folder is new or was made for ``config`` (see :meth:`open`); nothing is written."""
        if not config.resumable:
            raise ConfigError("checkpoint", str(self.folder), f"cannot be kept for the {getattr(config.source, 'kind', config.source.label)} source: Spark keeps no offsets of it to resume from")
        if self.exists():
            changed = differences(self.record()["config"], config.to_dict())
            if changed:
                raise ConfigError("checkpoint", str(self.folder), "belongs to a different configuration: " + "; ".join(changed))
        elif self.folder.exists() and (not self.folder.is_dir() or any(self.folder.iterdir())):
            raise ConfigError("checkpoint", str(self.folder), "holds files but no query.json: not a folder this tool keeps a query in")

    def staged_files(self) -> int:
        """How many feed files have been handed to Spark so far."""
        return sum(1 for path in self.staging.iterdir() if not path.name.startswith(".")) if self.staging.is_dir() else 0

    def summary(self) -> dict[str, Any]:
        """What the Queries page lists for a kept query: batches folded into its result, result rows, when it last changed."""
        config = self.record()["config"]
        table = _stored_table(config, self.result_file)
        stored = (self.config_file, self.result_file, journal_path(self.result_file))
        changed = max((path.stat().st_mtime for path in stored if path.is_file()), default=0.0)
        return {
            "name": self.name,
            "batches": table.batches_applied,
            "result_rows": len(table),
            "last_change": pd.Timestamp(changed, unit="s").floor("s"),
        }

    def copy_to(self, target: Path) -> KeptQuery:
        """A copy of the folder at ``target`` (new) that resumes on its own, as the original would, and never touches it.

        Spark's file source logs each file it read by its path (``checkpoint/sources/N/``, a JSON line per file), and a copy's staged
        files have other paths: resumed as it is, the copy would read every file again. The copy's logs name its own files instead
        (their checksum files dropped: Hadoop reads a file with no checksum without checking it), and its checkpoint a query id of its
        own, so the copy and the original may run at once; it has no read-only link, as the original's names the original alone.
        :class:`ConfigError` when a log names a file outside the folder (a folder moved by hand): such a copy cannot be resumed as the
        original would be.
        """
        target = Path(target)
        shutil.copytree(self.folder, target, symlinks=True)
        try:
            KeptQuery(target).share_file.unlink(missing_ok=True)
            sources = target / CHECKPOINT / "sources"
            for log in sorted(sources.rglob("*")) if sources.is_dir() else []:
                if log.is_file() and not log.name.startswith("."):
                    log.write_text(_moved_log(log.read_text(encoding="utf-8"), self.folder, target), encoding="utf-8")
                    log.with_name(f".{log.name}.crc").unlink(missing_ok=True)
            metadata = target / CHECKPOINT / "metadata"
            if metadata.is_file():
                metadata.write_text(json.dumps({**json.loads(metadata.read_text(encoding="utf-8")), "id": str(uuid.uuid4())}) + "\n", encoding="utf-8")
                metadata.with_name(".metadata.crc").unlink(missing_ok=True)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        return KeptQuery(target)

    def size(self) -> int:
        """The bytes the folder's files hold."""
        return sum(path.stat().st_size for path in self.folder.rglob("*") if path.is_file()) if self.folder.is_dir() else 0

    def delete(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)
        self.lock_file.unlink(missing_ok=True)


_URI_PATH_MARKS = frozenset("/-_.!~*'(),;:$&+=@")


def _uri_char(char: str) -> str:
    """``char`` as Java's ``URI`` writes it in a path: ASCII letters, digits and marks kept, letters beyond ASCII kept unless they are white
    space or a control, anything else percent-encoded as UTF-8."""
    if char.isascii():
        kept = char.isalnum() or char in _URI_PATH_MARKS
    else:
        kept = char.isprintable() and not char.isspace()
    return char if kept else "".join(f"%{byte:02X}" for byte in char.encode("utf-8"))


def _uri_path(path: str) -> str:
    """``path`` quoted as Java's ``URI`` quotes a path, as Spark logs a file's (a space as ``%20``, ``(`` kept)."""
    return "".join(_uri_char(char) for char in path)


def _moved_log(text: str, old: Path, new: Path) -> str:
    """A file-source log (a version line, then a JSON object a file read) whose files under ``old`` are named under ``new``."""
    homes = {str(old.resolve()), str(old.absolute())}
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        uri = str(entry["path"])
        quoted = urlparse(uri).path
        local = unquote(quoted)
        home = next((home for home in homes if local.startswith(home + "/")), None)
        if home is None or not uri.endswith(quoted):
            raise ConfigError("checkpoint", str(old), f"logs a file outside its folder ({local}): a copy of it would read its files again")
        entry["path"] = uri[: len(uri) - len(quoted)] + _uri_path(str(new.absolute()) + local[len(home):])  # file:/// or file:/, as logged
        lines[index] = json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
    return "\n".join(lines)


def _stored_table(config: Mapping[str, Any], path: Path) -> ResultTable | SqlTable:
    """The result table kept at ``path`` for ``config`` (as ``query.json`` holds it); an empty one when it cannot be read."""
    from pyspark.sql.types import StructType

    empty = ResultTable(config["output_mode"], config.get("aggregation", "count"))
    try:
        if config.get("kind") != "sql":
            empty.load(path)
            return empty
        snapshot, _ = TableFile(path).read()
        if snapshot is None:
            return empty
        table = SqlTable(config["output_mode"], StructType.fromJson(json.loads(snapshot["schema"])), snapshot.get("grouping", ()))
        table.load(path)
        return table
    except (ValueError, KeyError, TypeError, ConfigError):
        return ResultTable(config["output_mode"], config.get("aggregation", "count"))


def stray_folders(root: Path) -> list[str]:
    """Folders under ``root`` that hold files but no ``query.json`` (a kept query half deleted by hand, say): they block their name until deleted."""
    if not root.is_dir():
        return []
    return sorted(
        folder.name for folder in root.iterdir()
        if folder.is_dir() and not folder.name.startswith(".") and not KeptQuery(folder).exists() and any(folder.iterdir())
    )


def kept_queries(root: Path) -> list[KeptQuery]:
    """The kept queries under ``root`` (the data root's :data:`QUERIES_FOLDER`), oldest first."""
    if not root.is_dir():
        return []
    kept = [KeptQuery(folder) for folder in root.iterdir() if folder.is_dir() and KeptQuery(folder).exists()]
    return sorted(kept, key=lambda query: (query.config_file.stat().st_mtime, query.folder.name))
