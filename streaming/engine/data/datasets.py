"""Datasets: the user's own event files, kept under the data root.

A dataset is a folder directly under the data root (``STREAMING_LAB_DATA``,
default ``./data``) holding files of one format: CSV (``.csv``), JSON lines
(``.json``, ``.jsonl``, ``.ndjson``) or Parquet (``.parquet``), replayed in
file-name order.

The rules that keep a browser inside its lane:

- Every name that comes from a user (a dataset, an uploaded file, a new name)
  goes through :func:`plain_name`: it is kept exactly as typed or refused with
  the reason (a path separator, ``..``, a lone surrogate, a character that
  does not print or is not an ASCII letter, digit, ``.``, ``_`` or ``-``, a
  leading dot, ``_`` or ``-``, more than :data:`MAX_NAME_LENGTH` characters).
  Never rewritten: a name stored otherwise than typed (``../../etc/passwd.csv``
  as ``passwd.csv``) leaves its user believing the file went where they asked,
  and makes two names they typed differently one file.
- Every folder and file the store touches is resolved (symbolic links
  followed) and must lie inside the data root; anything else is refused.
- Nothing stored is overwritten or lost by an upload: a file is written under
  a hidden temporary name, read back in its format, and only then renamed into
  place; a file whose name is already in the dataset is refused. Each file of
  an upload is judged on its own, so one bad file does not cost the good ones.
- Datasets are shared by every user of a server (demo data), unless the
  uploader keeps one to themselves (``private``): its folder then says whose
  it is (``.owner``, :mod:`streaming.engine.owners`), and a store that reads
  as another owner neither lists, reads, renames, deletes nor adds to it.

Errors are :class:`~streaming.engine.errors.ConfigError` naming the file or
dataset and the reason. The store is not locked: two tabs uploading the same
file name at the same moment may both be refused, never both kept.
"""

from __future__ import annotations

import codecs
import csv
import json
import os
import re
import shutil
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Literal

from ..errors import ConfigError, first_line
from ..owners import check_owner, visible

__all__ = [
    "DATA_ROOT_VARIABLE",
    "DEFAULT_MAX_UPLOAD_MB",
    "FORMATS",
    "FORMATS_IN_WORDS",
    "MAX_UPLOAD_VARIABLE",
    "DatasetStore",
    "FileFormat",
    "Upload",
    "UploadReport",
    "column_names",
    "count_rows",
    "csv_header",
    "data_root",
    "detect_format",
    "file_format",
    "max_upload_mb",
    "plain_name",
    "require_same_columns",
]

FileFormat = Literal["csv", "json", "parquet"]

FORMATS: Mapping[str, FileFormat] = {".csv": "csv", ".json": "json", ".jsonl": "json", ".ndjson": "json", ".parquet": "parquet"}
"""File-name suffix (lower case) → the format it is read as."""

DATA_ROOT_VARIABLE = "STREAMING_LAB_DATA"
MAX_UPLOAD_VARIABLE = "STREAMING_LAB_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 200
MAX_NAME_LENGTH = 100
"""The longest name a user may give: well inside a file name's limit on Linux, macOS and Windows (255), so that a name with a prefix
or a suffix the lab adds (a hidden upload's, a copy's) still fits."""
COLUMNS_FILE = ".columns.json"
"""Where a dataset's saved column mapping is kept, in its folder (hidden: never a data file)."""
OWNER_FILE = ".owner"
"""Whose dataset it is (:mod:`streaming.engine.owners`), in its folder, when its uploader kept it to themselves; none: shared."""

_PLAIN = re.compile(r"[A-Za-z0-9._-]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_SEPARATOR = re.compile(r"[/\\]")
_LEADING = {
    ".": "starts with a dot: a hidden name, which the lab keeps for its own files",
    "_": "starts with '_', which Spark's file source skips as a hidden file",
    "-": "starts with '-', which a command-line tool reads as an option",
}
FORMATS_IN_WORDS = "CSV (.csv), JSON lines (.json, .jsonl, .ndjson) or Parquet (.parquet)"


def folder_owner(folder: Path) -> str | None:
    """Whose the dataset in ``folder`` is (its :data:`OWNER_FILE`), or ``None``: shared."""
    try:
        return (Path(folder) / OWNER_FILE).read_text().strip() or None
    except OSError:
        return None


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


def plain_name(name: object, field_name: str = "name") -> str:
    """``name`` itself when it can name a file or folder exactly as typed; :class:`ConfigError` naming ``field_name`` and why otherwise.

    The first reason found is given (see the module docstring). A name too long
    to show is shown by its first 40 characters, so the message stays a line.
    """
    if not isinstance(name, str):
        raise ConfigError(field_name, name, "must be text")
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(field_name, f"{name[:40]}…", f"is {len(name):,} characters long; a name has at most {MAX_NAME_LENGTH}")
    if reason := _name_problem(name):
        raise ConfigError(field_name, name, reason)
    return name


def _name_problem(name: str) -> str | None:
    """Why ``name`` cannot be kept as typed, or ``None``: the text, then a path, then how it starts and ends, then each character."""
    if not name:
        return "is empty; a name needs at least one letter or digit"
    if (surrogate := _SURROGATE.search(name)) is not None:
        return f"holds a lone surrogate (U+{ord(surrogate.group()):04X} at {surrogate.start()}); a name is valid Unicode text"
    if (control := _CONTROL.search(name)) is not None:
        return f"holds a control character ({control.group()!r} at {control.start()}); a name is printable text"
    if (hidden := next((index for index, char in enumerate(name) if not char.isprintable()), None)) is not None:
        return f"holds a character that does not print (U+{ord(name[hidden]):04X} at {hidden}); a name is printable text"
    if ".." in _SEPARATOR.split(name):
        return "names a parent folder ('..'); a name is one file or folder, not a path"
    if (separator := _SEPARATOR.search(name)) is not None:
        return f"holds a path separator ({separator.group()!r} at {separator.start()}); a name is one file or folder, not a path"
    if name[0] in _LEADING:
        return _LEADING[name[0]]
    if name.endswith("."):
        return "ends with a dot, which Windows drops from a name"
    if (other := next((index for index, char in enumerate(name) if not _PLAIN.fullmatch(char)), None)) is not None:
        return f"holds {name[other]!r} at {other}; a name is ASCII letters, digits, '.', '_' and '-'"
    return None


def file_format(name: str) -> FileFormat:
    """The format of a file by its suffix; :class:`ConfigError` for any other suffix."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix not in FORMATS:
        raise ConfigError("file", name, f"is not {FORMATS_IN_WORDS}")
    return FORMATS[suffix]


def detect_format(path: Path, field_name: str = "PATH", choose: str = "--format") -> FileFormat:
    """The format of a file by its name, or of a folder's data files (which must all have one); :class:`ConfigError` naming ``field_name`` otherwise."""
    names = [path.name] if path.is_file() else [child.name for child in path.iterdir() if child.is_file() and not child.name.startswith(".")]
    found = sorted({FORMATS[Path(name).suffix.lower()] for name in names if Path(name).suffix.lower() in FORMATS})
    if not found:
        raise ConfigError(field_name, str(path), "holds no CSV (.csv), JSON lines (.json, .jsonl, .ndjson) or Parquet (.parquet) files")
    if len(found) > 1:
        raise ConfigError(field_name, str(path), f"holds files of several formats ({', '.join(found)}); choose one with {choose}")
    return found[0]


def count_rows(path: Path, fmt: FileFormat, shown_name: str | None = None) -> int:
    """The number of rows in ``path`` read as ``fmt``; :class:`ConfigError` naming the file when it cannot be read or is empty.

    CSV must be UTF-8 text with a header and a row; JSON lines UTF-8 text with
    at least one line that is a JSON object (Spark reads the others as
    malformed rows, which a query counts); Parquet a readable footer and a row.
    """
    import pyarrow as pa
    import pyarrow.csv
    import pyarrow.parquet

    name = shown_name or path.name
    if path.stat().st_size == 0:
        raise ConfigError("file", name, "is empty")
    try:
        if fmt == "parquet":
            rows = pyarrow.parquet.ParquetFile(path).metadata.num_rows
        elif fmt == "csv":
            _require_text(path, name)
            rows = pyarrow.csv.read_csv(path).num_rows
        else:
            _require_text(path, name)
            return _json_lines(path, name)
    except (pa.ArrowException, OSError) as err:
        raise ConfigError("file", name, f"cannot be read as {fmt}: {first_line(err)}") from None
    if rows == 0:
        raise ConfigError("file", name, "holds no rows" + (" (only a header)" if fmt == "csv" else ""))
    return rows


def _json_lines(path: Path, name: str) -> int:
    """The non-blank lines of a JSON-lines file; :class:`ConfigError` unless at least one is a JSON object."""
    lines = objects = 0
    with path.open(encoding="utf-8", errors="replace", newline="") as handle:
        for line in handle:
            if not line.strip():
                continue
            lines += 1
            if objects == 0:
                try:
                    objects += isinstance(json.loads(line), dict)
                except ValueError:
                    continue
                except RecursionError:  # a line nested ~1,000 levels deep: refused here, not a crash of the page
                    raise ConfigError("file", name, f"nests JSON too deeply on line {lines} to be read as a row") from None
    if lines == 0:
        raise ConfigError("file", name, "holds no rows")
    if objects == 0:
        raise ConfigError("file", name, "cannot be read as json: no line is a JSON object")
    return lines


def csv_header(path: Path) -> list[str]:
    """The column names in the first line of the CSV file ``path``; :class:`ConfigError` when it is not UTF-8 text."""
    try:
        with Path(path).open(newline="", encoding="utf-8") as handle:
            return [name.strip() for name in next(csv.reader(handle), [])]
    except UnicodeDecodeError:
        raise ConfigError("source.path", str(path), "is not UTF-8 text") from None


def column_names(path: Path, fmt: FileFormat) -> list[str] | None:
    """The column names a CSV header or a Parquet schema declares (``None`` for JSON lines, whose fields may vary by line)."""
    if fmt == "csv":
        return csv_header(path)
    if fmt == "parquet":
        import pyarrow.parquet

        return list(pyarrow.parquet.read_schema(path).names)
    return None


def require_same_columns(files: Sequence[Path], fmt: FileFormat, shown: Sequence[str] | None = None) -> None:
    """:class:`ConfigError` naming the first of ``files`` whose columns differ from the first file's (Spark reads CSV columns by position)."""
    expected = column_names(files[0], fmt) if files else None
    for index, path in enumerate(files[1:], start=1):
        got = column_names(path, fmt)
        if got != expected:
            name = shown[index] if shown else path.name
            raise ConfigError("file", name, f"has columns {got}, but {files[0].name} has {expected}; every file of a dataset needs the same columns")


def _require_text(path: Path, name: str, chunk_bytes: int = 1 << 20) -> None:
    """:class:`ConfigError` unless the whole file is UTF-8 text without NUL bytes, naming the first bad byte's offset.

    Read in chunks through an incremental decoder: a bad byte far into a big file is found, holding one chunk in memory.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    offset = 0
    with path.open("rb") as handle:
        while chunk := handle.read(chunk_bytes):
            if (nul := chunk.find(b"\x00")) >= 0:
                raise ConfigError("file", name, f"is binary, not text (a NUL byte at byte {offset + nul})")
            pending = len(decoder.getstate()[0])  # the bytes of a character the last chunk cut, decoded with this one
            try:
                decoder.decode(chunk)
            except UnicodeDecodeError as err:
                raise ConfigError("file", name, f"is not UTF-8 text (byte {offset - pending + err.start})") from None
            offset += len(chunk)
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as err:
        raise ConfigError("file", name, f"is not UTF-8 text (it ends inside a character, byte {offset - len(err.object) + err.start})") from None


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
    """The datasets under ``root`` that ``owner`` sees (the shared ones and their own; ``None``: every one); uploads larger than
    ``max_bytes`` are refused."""

    root: Path
    max_bytes: int = DEFAULT_MAX_UPLOAD_MB * 1024 * 1024
    owner: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root).resolve())
        check_owner(self.owner)
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
        return sorted(folder.name for folder in self.root.iterdir() if self._listed(folder))

    def _listed(self, folder: Path) -> bool:
        """Whether ``folder``, a path directly under the root, is a dataset :meth:`names` lists: a visible folder of the root, not hidden,
        holding a data file. :meth:`folder` asks it of the one folder it is given rather than listing them all (it runs once for each
        dataset a page shows)."""
        return (
            folder.is_dir() and not folder.name.startswith(".") and folder.resolve().parent == self.root and self._holds_data(folder)
            and self._sees(folder)
        )

    def _sees(self, folder: Path) -> bool:
        return visible(folder_owner(folder), self.owner)

    def folder(self, name: str) -> Path:
        """The folder of dataset ``name``; :class:`ConfigError` unless it is a listed dataset inside the root."""
        if not self._listed(self.root / plain_name(name, "dataset")):
            raise ConfigError("dataset", name, f"is not one of the datasets {self.names()}")
        return _inside(self.root / name, self.root, "dataset", name)

    def files(self, name: str) -> list[Path]:
        """The data files of dataset ``name`` in replay (file-name) order."""
        return self._data_files(self.folder(name))

    def file_format(self, name: str) -> FileFormat:
        """The format of dataset ``name``'s files."""
        return FORMATS[self.files(name)[0].suffix.lower()]

    def add(self, name: str, uploads: Iterable[Upload], *, private: bool = False) -> UploadReport:
        """Store ``uploads`` in dataset ``name`` (made when new; with ``private``, as the store's owner's alone); see :class:`UploadReport`
        and the module docstring."""
        if private and self.owner is None:
            raise ConfigError("private", private, "needs an owner: this store reads as the server")
        folder = _inside(self.root / plain_name(name, "dataset"), self.root, "dataset", name)
        report = UploadReport(name)
        if folder.is_dir() and not self._sees(folder):
            raise ConfigError("dataset", name, "is taken by another user's dataset: choose another name")
        known = self._data_files(folder) if folder.is_dir() else []
        fmt: FileFormat | None = FORMATS[known[0].suffix.lower()] if known else None
        for upload in uploads:
            try:
                stored, rows = self._store(folder, upload, fmt, self.owner if private else None)
            except ConfigError as err:
                report.refused.append(err)
                continue
            report.kept[stored.name] = rows
            fmt = fmt or FORMATS[stored.suffix.lower()]
        if not report.kept and folder.is_dir() and not self._data_files(folder) and {path.name for path in folder.iterdir()} <= {OWNER_FILE}:
            shutil.rmtree(folder)
        return report

    def _store(self, folder: Path, upload: Upload, fmt: FileFormat | None, owner: str | None) -> tuple[Path, int]:
        known_files = self._data_files(folder) if folder.is_dir() else []
        file_name = plain_name(upload.name, "file")
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
        new = not folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        if new and owner is not None:
            (folder / OWNER_FILE).write_text(owner + "\n")
        part = folder / f".upload-{uuid.uuid4().hex}{target.suffix}"
        try:
            part.write_bytes(upload.data)
            rows = count_rows(part, own, upload.name)
            if known_files:
                require_same_columns([known_files[0], part], own, [known_files[0].name, upload.name])
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
        path = self.folder(name) / COLUMNS_FILE
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        return saved if isinstance(saved, dict) else None

    def rename(self, old: str, new: str) -> str:
        """Rename dataset ``old`` to ``new`` (kept as typed, :func:`plain_name`); returns the new name. Refused when ``new`` is taken."""
        source = self.folder(old)
        target = _inside(self.root / plain_name(new, "new name"), self.root, "new name", new)
        if target.exists():
            raise ConfigError("new name", new, "is already taken by a dataset or a file in the data root")
        source.rename(target)
        return new

    def delete(self, name: str) -> None:
        """Delete dataset ``name`` and its files."""
        shutil.rmtree(self.folder(name))

    @staticmethod
    def _data_files(folder: Path) -> list[Path]:
        inside = folder.resolve()
        return sorted(path for path in folder.iterdir() if _data_file(path, inside))

    @staticmethod
    def _holds_data(folder: Path) -> bool:
        """Whether ``folder`` holds a data file: the first one found answers. :meth:`names` asks it of every folder on each rerun of a page
        with a dataset picker: listing every file instead, the Live page's sidebar took 0.35 s a rerun over the sample datasets alone, and
        more with every file a user uploads."""
        inside = folder.resolve()
        return any(_data_file(path, inside) for path in folder.iterdir())


def _data_file(path: Path, folder: Path) -> bool:
    """Whether ``path`` is a data file of the resolved ``folder``: a file of a known format, not hidden, not a link out of it."""
    return not path.name.startswith(".") and path.suffix.lower() in FORMATS and path.is_file() and path.resolve().parent == folder


def _inside(path: Path, parent: Path, field_name: str, given: str) -> Path:
    """``path`` resolved (links followed); :class:`ConfigError` unless it sits directly in ``parent``."""
    resolved = path.resolve()
    if resolved.parent != parent:
        raise ConfigError(field_name, given, f"is outside the data root ({parent})")
    return resolved


def _size(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else f"{size / 1024:.1f} KB"

