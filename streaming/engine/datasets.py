"""Datasets: the user's own event files, kept under the data root.

A dataset is a folder directly under the data root (``STREAMING_LAB_DATA``,
default ``./data``) holding files of one format: CSV (``.csv``), JSON lines
(``.json``, ``.jsonl``, ``.ndjson``) or Parquet (``.parquet``), replayed in
file-name order.

The rules that keep a browser inside its lane:

- Every name that comes from a user (a dataset, an uploaded file) goes through
  :func:`safe_name`: directories are dropped, anything but letters, digits,
  ``.``, ``_`` and ``-`` becomes ``_``, and no name starts with a dot. A name
  with nothing left is refused.
- Every folder and file the store touches is resolved (symbolic links
  followed) and must lie inside the data root; anything else is refused.
- Nothing stored is overwritten or lost by an upload: a file is written under
  a hidden temporary name, read back in its format, and only then renamed into
  place; a file whose name is already in the dataset is refused. Each file of
  an upload is judged on its own, so one bad file does not cost the good ones.

Errors are :class:`~streaming.engine.errors.ConfigError` naming the file or
dataset and the reason. The store is not locked: two tabs uploading the same
file name at the same moment may both be refused, never both kept.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from .errors import ConfigError

__all__ = [
    "DATA_ROOT_VARIABLE",
    "DEFAULT_MAX_UPLOAD_MB",
    "FORMATS",
    "MAX_UPLOAD_VARIABLE",
    "DatasetStore",
    "FileFormat",
    "Upload",
    "UploadReport",
    "data_root",
    "file_format",
    "max_upload_mb",
    "read_rows",
    "safe_name",
]

FileFormat = Literal["csv", "json", "parquet"]

FORMATS: Mapping[str, FileFormat] = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}
"""File-name suffix (lower case) → the format it is read as."""

DATA_ROOT_VARIABLE = "STREAMING_LAB_DATA"
MAX_UPLOAD_VARIABLE = "STREAMING_LAB_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 200
MAX_NAME_LENGTH = 100
COLUMNS_FILE = ".columns.json"
"""Where a dataset's saved column mapping is kept, in its folder (hidden: never a data file)."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DESCRIBED = "CSV (.csv), JSON lines (.json, .jsonl, .ndjson) or Parquet (.parquet)"


def data_root(environ: Mapping[str, str], cwd: Path | None = None) -> Path:
    """The data root named by ``environ[STREAMING_LAB_DATA]``, default ``data`` under ``cwd`` (the working folder)."""
    named = environ.get(DATA_ROOT_VARIABLE, "").strip()
    base = Path.cwd() if cwd is None else cwd
    return (base / (named or "data")).resolve()


def max_upload_mb(environ: Mapping[str, str]) -> int:
    """The largest file an upload may hold, in MB: ``environ[STREAMING_LAB_MAX_UPLOAD_MB]``, default 200."""
    text = environ.get(MAX_UPLOAD_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_UPLOAD_MB
    try:
        limit = int(text)
    except ValueError:
        raise ConfigError(MAX_UPLOAD_VARIABLE, text, "must be a whole number of megabytes") from None
    if limit < 1:
        raise ConfigError(MAX_UPLOAD_VARIABLE, text, "must be at least 1")
    return limit


def safe_name(name: str, field_name: str = "name") -> str:
    """``name`` as a plain file or folder name (see the module docstring); :class:`ConfigError` when nothing is left."""
    base = PurePosixPath(unicodedata.normalize("NFKC", str(name)).replace("\\", "/")).name
    cleaned = _UNSAFE.sub("_", base).lstrip(".").strip("_")
    if len(cleaned) > MAX_NAME_LENGTH:
        _, dot, suffix = cleaned.rpartition(".")
        keep = f"{dot}{suffix}" if dot and len(suffix) <= 10 else ""
        cleaned = cleaned[: MAX_NAME_LENGTH - len(keep)] + keep
    if not cleaned.strip("._-"):
        raise ConfigError(field_name, name, "has no letters or digits to name a file by")
    return cleaned


def file_format(name: str) -> FileFormat:
    """The format of a file by its suffix; :class:`ConfigError` for any other suffix."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError("file", name, f"is not {_DESCRIBED}")
    return FORMATS[suffix]


def read_rows(path: Path, fmt: FileFormat, shown_name: str | None = None) -> int:
    """The number of rows in ``path`` read as ``fmt``; :class:`ConfigError` naming the file when it cannot be read or is empty.

    CSV and JSON lines must be UTF-8 text with at least one row (for CSV: a
    header and a row); Parquet must have a readable footer and at least one row.
    """
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.json
    import pyarrow.parquet

    name = shown_name or path.name
    if path.stat().st_size == 0:
        raise ConfigError("file", name, "is empty")
    try:
        if fmt == "parquet":
            rows = pyarrow.parquet.ParquetFile(path).metadata.num_rows
        else:
            _require_text(path, name)
            table = pyarrow.csv.read_csv(path) if fmt == "csv" else pyarrow.json.read_json(path)
            rows = table.num_rows
    except (pa.ArrowException, OSError) as err:
        raise ConfigError("file", name, f"cannot be read as {fmt}: {_first_line(err)}") from None
    if rows == 0:
        raise ConfigError("file", name, "holds no rows" + (" (only a header)" if fmt == "csv" else ""))
    return rows


def _require_text(path: Path, name: str, probe_bytes: int = 1 << 16) -> None:
    with path.open("rb") as handle:
        head = handle.read(probe_bytes)
    if b"\x00" in head:
        raise ConfigError("file", name, "is binary, not text")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not just a character cut at the probe's end
            raise ConfigError("file", name, f"is not UTF-8 text (byte {err.start})") from None


def _first_line(err: BaseException) -> str:
    return (str(err).strip().splitlines() or [type(err).__name__])[0]


@dataclass(frozen=True)
class Upload:
    """One file a user sent: its name as given and its bytes."""

    name: str
    data: bytes


@dataclass
class UploadReport:
    """What became of an upload: the files kept (stored names, rows) and the files refused (each with its reason)."""

    dataset: str
    kept: dict[str, int] = field(default_factory=dict)
    refused: list[ConfigError] = field(default_factory=list)


@dataclass(frozen=True)
class DatasetStore:
    """The datasets under ``root``; uploads larger than ``max_bytes`` are refused."""

    root: Path
    max_bytes: int = DEFAULT_MAX_UPLOAD_MB * 1024 * 1024

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())
        if isinstance(self.max_bytes, bool) or not isinstance(self.max_bytes, int) or self.max_bytes < 1:
            raise ConfigError("max_bytes", self.max_bytes, "must be a whole number of bytes, at least 1")

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], cwd: Path | None = None) -> DatasetStore:
        """The store the variables in ``environ`` describe (see :func:`data_root` and :func:`max_upload_mb`)."""
        return cls(data_root(environ, cwd), max_upload_mb(environ) * 1024 * 1024)

    def names(self) -> list[str]:
        """The datasets: folders under the root holding at least one file of a known format, sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            folder.name for folder in self.root.iterdir()
            if folder.is_dir() and not folder.name.startswith(".") and folder.resolve().parent == self.root and self._data_files(folder)
        )

    def folder(self, name: str) -> Path:
        """The folder of dataset ``name``; :class:`ConfigError` unless it is a listed dataset inside the root."""
        if name != safe_name(name, "dataset") or name not in self.names():
            raise ConfigError("dataset", name, f"is not one of the datasets {self.names()}")
        return _inside(self.root / name, self.root, "dataset", name)

    def files(self, name: str) -> list[Path]:
        """The data files of dataset ``name`` in replay (file-name) order."""
        return self._data_files(self.folder(name))

    def format(self, name: str) -> FileFormat:
        """The format of dataset ``name``'s files."""
        return FORMATS[self.files(name)[0].suffix.lower()]

    def add(self, name: str, uploads: Iterable[Upload]) -> UploadReport:
        """Store ``uploads`` in dataset ``name`` (made when new); see :class:`UploadReport` and the module docstring."""
        dataset = safe_name(name, "dataset")
        folder = _inside(self.root / dataset, self.root, "dataset", name)
        report = UploadReport(dataset)
        known = self._data_files(folder) if folder.is_dir() else []
        fmt: FileFormat | None = FORMATS[known[0].suffix.lower()] if known else None
        for upload in uploads:
            try:
                stored, rows = self._store(folder, upload, fmt)
            except ConfigError as err:
                report.refused.append(err)
                continue
            report.kept[stored.name] = rows
            fmt = fmt or FORMATS[stored.suffix.lower()]
        if not report.kept and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        return report

    def _store(self, folder: Path, upload: Upload, fmt: FileFormat | None) -> tuple[Path, int]:
        file_name = safe_name(upload.name, "file")
        own = file_format(file_name)
        if fmt is not None and own != fmt:
            raise ConfigError("file", upload.name, f"is {own}, but this dataset holds {fmt} files; a dataset holds one format")
        if len(upload.data) > self.max_bytes:
            raise ConfigError(
                "file", upload.name, f"is {_size(len(upload.data))}, above the upload limit of {_size(self.max_bytes)} ({MAX_UPLOAD_VARIABLE})"
            )
        target = _inside(folder / file_name, folder, "file", upload.name)
        if target.exists():
            raise ConfigError("file", upload.name, f"is already in dataset {folder.name!r}; nothing was overwritten")
        folder.mkdir(parents=True, exist_ok=True)
        part = folder / f".upload-{uuid.uuid4().hex}{target.suffix}"
        try:
            part.write_bytes(upload.data)
            rows = read_rows(part, own, upload.name)
            os.link(part, target)  # fails when the name was taken meanwhile; never replaces a file
        except FileExistsError:
            raise ConfigError("file", upload.name, f"is already in dataset {folder.name!r}; nothing was overwritten") from None
        finally:
            part.unlink(missing_ok=True)
        return target, rows

    def save_columns(self, name: str, columns: Mapping[str, str | None]) -> None:
        """Keep the column mapping of dataset ``name`` (role → column, formats) beside its files, replacing the last one."""
        folder = self.folder(name)
        part = folder / f".columns-{uuid.uuid4().hex}.part"
        part.write_text(json.dumps(dict(columns), indent=2, sort_keys=True))
        os.replace(part, folder / COLUMNS_FILE)

    def saved_columns(self, name: str) -> dict[str, str | None] | None:
        """The mapping saved with :meth:`save_columns`, or ``None`` when there is none (or it cannot be read)."""
        try:
            saved = json.loads((self.folder(name) / COLUMNS_FILE).read_text())
        except (OSError, ValueError):
            return None
        return saved if isinstance(saved, dict) else None

    def rename(self, old: str, new: str) -> str:
        """Rename dataset ``old`` to ``new`` (sanitised); returns the new name. Refused when ``new`` is taken."""
        source = self.folder(old)
        renamed = safe_name(new, "new name")
        target = _inside(self.root / renamed, self.root, "new name", new)
        if target.exists():
            raise ConfigError("new name", new, f"is already taken by a dataset or file under {self.root}")
        source.rename(target)
        return renamed

    def delete(self, name: str) -> None:
        """Delete dataset ``name`` and its files."""
        shutil.rmtree(self.folder(name))

    @staticmethod
    def _data_files(folder: Path) -> list[Path]:
        return sorted(
            path for path in folder.iterdir()
            if path.is_file() and not path.name.startswith(".") and path.suffix.lower() in FORMATS and path.resolve().parent == folder.resolve()
        )


def _inside(path: Path, parent: Path, field_name: str, given: str) -> Path:
    """``path`` resolved (links followed); :class:`ConfigError` unless it sits directly in ``parent``."""
    resolved = path.resolve()
    if resolved.parent != parent:
        raise ConfigError(field_name, given, f"is outside the data root ({parent})")
    return resolved


def _size(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{size / 1024:.1f} KB"

