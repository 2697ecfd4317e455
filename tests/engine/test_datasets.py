"""The dataset store: names, confinement to the data root, and uploads that never lose what is stored."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet
import pytest

from streaming.engine.data.datasets import DatasetStore, Upload, data_root, file_format, max_upload_mb, plain_name
from streaming.engine.errors import ConfigError

CSV = b"event_time,key\n2026-03-02 14:01:01,a\n2026-03-02 14:01:05,b\n"
JSON_LINES = b'{"ts": 1772460061196, "user": "a"}\n{"ts": 1772460065000, "user": "b"}\n{"ts": 1772460066000, "user": "a"}\n'


def parquet_bytes(rows: int = 4) -> bytes:
    sink = io.BytesIO()
    pyarrow.parquet.write_table(pa.table({"ts": list(range(rows)), "key": ["k"] * rows}), sink)
    return sink.getvalue()


@pytest.fixture
def make_store(tmp_path: Path):
    def make(max_bytes: int = 1 << 20) -> DatasetStore:
        return DatasetStore(tmp_path / "data", max_bytes)

    return make


@pytest.mark.parametrize("given", ["clicks.csv", "part-0001.jsonl", "2026_03_orders.parquet", "v1.2", "a..b.csv", "x" * 96 + ".csv"])
def test_a_plain_name_is_kept_as_typed(given: str) -> None:
    assert plain_name(given, "file") == given


@pytest.mark.parametrize(
    ("given", "reason"),
    [
        ("", "is empty"),
        ("../../etc/passwd.csv", "names a parent folder ('..')"),
        ("..", "names a parent folder ('..')"),
        ("C:\\Users\\me\\export.parquet", "holds a path separator ('\\\\' at 2)"),
        ("/etc", "holds a path separator ('/' at 0)"),
        ("bad\udc80name.csv", "holds a lone surrogate (U+DC80 at 3)"),
        ("a\0b.csv", "holds a control character ('\\x00' at 1)"),
        ("evil\u202egnp.csv", "holds a character that does not print (U+202E at 4)"),
        (".hidden.csv", "starts with a dot"),
        ("_SUCCESS.csv", "starts with '_'"),
        ("-rf.csv", "starts with '-'"),
        ("clicks.", "ends with a dot"),
        ("my events (1).csv", "holds ' ' at 2"),
        ("café.jsonl", "holds 'é' at 3"),
        ("数据.csv", "holds '数' at 0"),
        ("x" * 150 + ".csv", "is 154 characters long; a name has at most 100"),
        ("x" * 5000 + ".csv", "is 5,004 characters long"),
    ],
)
def test_a_name_not_kept_as_typed_is_refused_with_its_reason(given: str, reason: str) -> None:
    """A name was rewritten without a word: ``../../etc/passwd.csv`` kept as ``passwd.csv``, a lone surrogate as ``_``."""
    with pytest.raises(ConfigError, match=re.escape(reason)) as caught:
        plain_name(given, "file")
    assert caught.value.field == "file" and len(str(caught.value)) < 200


def test_data_root_and_upload_limit_come_from_the_environment(tmp_path: Path) -> None:
    assert data_root({}, tmp_path) == (tmp_path / "data").resolve()
    assert data_root({"STREAMING_LAB_DATA": str(tmp_path / "elsewhere")}, tmp_path) == (tmp_path / "elsewhere").resolve()
    assert max_upload_mb({}) == 200
    assert max_upload_mb({"STREAMING_LAB_MAX_UPLOAD_MB": "5"}) == 5
    for bad in ("five", "0", "-3"):
        with pytest.raises(ConfigError, match="STREAMING_LAB_MAX_UPLOAD_MB"):
            max_upload_mb({"STREAMING_LAB_MAX_UPLOAD_MB": bad})
    assert DatasetStore.from_environment({"STREAMING_LAB_MAX_UPLOAD_MB": "2"}, tmp_path).max_bytes == 2 * 1024 * 1024


def test_file_format_by_suffix() -> None:
    assert [file_format(name) for name in ("a.csv", "b.JSONL", "c.json", "d.ndjson", "e.parquet")] == ["csv", "json", "json", "json", "parquet"]
    with pytest.raises(ConfigError, match="is not CSV"):
        file_format("notes.txt")


def test_each_format_is_stored_with_its_row_count(make_store) -> None:
    store = make_store()
    assert store.names() == []
    reports = [
        store.add("clicks", [Upload("part-1.csv", CSV), Upload("part-0.csv", CSV)]),
        store.add("kafka_dump", [Upload("topic.jsonl", JSON_LINES)]),
        store.add("lake", [Upload("x.parquet", parquet_bytes(4))]),
    ]
    assert [(report.dataset, report.kept, report.refused) for report in reports] == [
        ("clicks", {"part-1.csv": 2, "part-0.csv": 2}, []),
        ("kafka_dump", {"topic.jsonl": 3}, []),
        ("lake", {"x.parquet": 4}, []),
    ]
    assert store.names() == ["clicks", "kafka_dump", "lake"]
    assert [path.name for path in store.files("clicks")] == ["part-0.csv", "part-1.csv"]
    assert [store.file_format(name) for name in store.names()] == ["csv", "json", "parquet"]


def test_bad_files_are_refused_one_by_one_and_the_good_ones_kept(make_store) -> None:
    store = make_store(max_bytes=4096)
    report = store.add("mixed", [
        Upload("binary.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
        Upload("empty.csv", b""),
        Upload("header_only.csv", b"event_time,key\n"),
        Upload("broken.jsonl", b'{"a": \n'),
        Upload("notes.txt", b"hello"),
        Upload("huge.csv", b"event_time,key\n" + b"2026-03-02 14:01:01,a\n" * 400),
        Upload("good.csv", CSV),
        Upload("table.parquet", parquet_bytes()),
        Upload("cut.csv", b"event_time,key\n2026-03-02 14:01:01,\xc3"),
    ])
    assert report.kept == {"good.csv": 2}
    reasons = {error.value: error.reason for error in report.refused}
    assert set(reasons) == {"binary.csv", "empty.csv", "header_only.csv", "broken.jsonl", "notes.txt", "huge.csv", "table.parquet", "cut.csv"}
    assert reasons["binary.csv"] == "is binary, not text (a NUL byte at byte 8)"
    assert reasons["cut.csv"].startswith("is not UTF-8 text (it ends inside a character, byte 35)")
    assert reasons["empty.csv"] == "is empty"
    assert reasons["header_only.csv"] == "holds no rows (only a header)"
    assert reasons["broken.jsonl"].startswith("cannot be read as json")
    assert reasons["notes.txt"].startswith("is not CSV")
    assert reasons["huge.csv"] == "is 8.6 KB, above the upload limit of 4.0 KB (STREAMING_LAB_MAX_UPLOAD_MB)"
    assert "holds csv files" in reasons["table.parquet"]
    assert all(error.field == "file" for error in report.refused)
    assert sorted(path.name for path in (store.root / "mixed").iterdir()) == ["good.csv"]


def test_a_bad_byte_far_into_a_file_is_found(make_store) -> None:
    rows = 4_000  # 88 KB of good rows before it
    report = make_store().add("late", [Upload("late.csv", b"event_time,key\n" + b"2026-03-02 14:01:01,a\n" * rows + b"2026-03-02 14:01:01,\xe9\n")])
    assert report.kept == {} and [error.reason for error in report.refused] == [f"is not UTF-8 text (byte {15 + 22 * rows + 20})"]


def test_an_upload_never_overwrites_a_stored_file(make_store) -> None:
    store = make_store()
    store.add("clicks", [Upload("part.csv", CSV)])
    again = store.add("clicks", [Upload("part.csv", b"event_time,key\n2030-01-01 00:00:00,z\n")])
    assert again.kept == {} and "already in dataset 'clicks'" in again.refused[0].reason
    assert (store.root / "clicks" / "part.csv").read_bytes() == CSV


def test_a_refused_first_upload_leaves_no_dataset(make_store) -> None:
    store = make_store()
    report = store.add("nothing", [Upload("empty.csv", b"")])
    assert report.kept == {} and store.names() == []
    assert not (store.root / "nothing").exists()
    deep = ('{"a": ' * 5000) + "1" + ("}" * 5000) + "\n"  # raised RecursionError out of the upload, leaving the folder behind
    report = store.add("deep", [Upload("deep.jsonl", deep.encode())])
    assert [(error.value, error.reason) for error in report.refused] == [("deep.jsonl", "nests JSON too deeply on line 1 to be read as a row")]
    assert store.names() == [] and not (store.root / "deep").exists()


def test_paths_are_confined_to_the_data_root(make_store, tmp_path: Path) -> None:
    store = make_store()
    for name in ("../outside", "/etc", "missing"):
        with pytest.raises(ConfigError) as caught:
            store.folder(name)
        assert caught.value.field == "dataset"
    store.add("inside", [Upload("a.csv", CSV)])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.csv").write_bytes(CSV)
    (store.root / "linked").symlink_to(elsewhere, target_is_directory=True)
    assert store.names() == ["inside"]
    with pytest.raises(ConfigError):
        store.files("linked")
    with pytest.raises(ConfigError):
        store.add("linked", [Upload("more.csv", CSV)])
    assert sorted(path.name for path in elsewhere.iterdir()) == ["secret.csv"]


def test_the_probes_names_are_refused_and_nothing_is_written(make_store, tmp_path: Path) -> None:
    """``../../etc/passwd.csv`` was kept as ``passwd.csv``, a dataset ``../../tmp/x/evil`` stored as ``evil``, and a lone surrogate
    became ``_``, none of it said: each is refused naming why, and the upload's other files are judged on their own."""
    store = make_store()
    for name, reason in (("../../tmp/x/evil", "names a parent folder ('..')"), ("bad\udc80name", "holds a lone surrogate (U+DC80 at 3)")):
        with pytest.raises(ConfigError, match=re.escape(reason)) as caught:
            store.add(name, [Upload("a.csv", CSV)])
        assert (caught.value.field, caught.value.value) == ("dataset", name)
    report = store.add("clicks", [Upload("../../etc/passwd.csv", CSV), Upload("bad\udc80name.csv", CSV), Upload("good.csv", CSV)])
    assert report.kept == {"good.csv": 2}
    assert [(error.field, error.value, error.reason.split(";")[0]) for error in report.refused] == [
        ("file", "../../etc/passwd.csv", "names a parent folder ('..')"),
        ("file", "bad\udc80name.csv", "holds a lone surrogate (U+DC80 at 3)"),
    ]
    assert sorted(path.relative_to(tmp_path).as_posix() for path in tmp_path.rglob("*")) == ["data", "data/clicks", "data/clicks/good.csv"]


def test_rename_and_delete(make_store) -> None:
    store = make_store()
    store.add("a", [Upload("x.csv", CSV)])
    store.add("b", [Upload("y.csv", CSV)])
    with pytest.raises(ConfigError, match=re.escape("holds ' ' at 2")) as caught:
        store.rename("a", "my clicks")  # was renamed my_clicks without a word
    assert (caught.value.field, caught.value.value) == ("new name", "my clicks")
    with pytest.raises(ConfigError, match=re.escape("names a parent folder ('..')")):
        store.rename("a", "../a")
    assert store.rename("a", "my_clicks") == "my_clicks"
    assert store.names() == ["b", "my_clicks"]
    with pytest.raises(ConfigError, match="already taken"):
        store.rename("b", "my_clicks")
    assert [path.name for path in store.files("b")] == ["y.csv"]
    store.delete("b")
    assert store.names() == ["my_clicks"]
    with pytest.raises(ConfigError):
        store.delete("b")


def test_a_saved_mapping_stays_with_its_dataset(make_store) -> None:
    store = make_store()
    store.add("clicks", [Upload("x.csv", CSV)])
    assert store.saved_columns("clicks") is None
    store.save_columns("clicks", {"event_time": "event_time", "time_format": "auto", "key": None})
    store.save_columns("clicks", {"event_time": "event_time", "time_format": "auto", "key": "key"})
    assert store.saved_columns("clicks") == {"event_time": "event_time", "time_format": "auto", "key": "key"}
    assert [path.name for path in store.files("clicks")] == ["x.csv"]
    assert store.rename("clicks", "views") == "views"
    assert store.saved_columns("views") == {"event_time": "event_time", "time_format": "auto", "key": "key"}
    (store.root / "views" / ".columns.json").write_text("{not json")
    assert store.saved_columns("views") is None


def test_json_lines_are_kept_when_one_line_is_broken_and_refused_when_none_is_an_object(make_store) -> None:
    store = make_store()
    report = store.add("kafka", [
        Upload("ok.jsonl", b'{"ts": 1}\n{"ts": \n\n{"ts": 3}\n'),
        Upload("none.jsonl", b"[1, 2]\nnot json\n"),
    ])
    assert report.kept == {"ok.jsonl": 3}  # Spark reads the broken line as a malformed row, which a query counts
    assert [(error.value, error.reason) for error in report.refused] == [("none.jsonl", "cannot be read as json: no line is a JSON object")]


def test_every_file_of_a_dataset_has_the_same_columns(make_store, tmp_path: Path) -> None:
    store = make_store()
    store.add("clicks", [Upload("a.csv", CSV)])
    report = store.add("clicks", [Upload("b.csv", b"key,event_time\nx,2026-03-02 14:00:00\n"), Upload("c.csv", CSV)])
    assert report.kept == {"c.csv": 2}
    assert "has columns ['key', 'event_time'], but a.csv has ['event_time', 'key']" in report.refused[0].reason
    store.add("lake", [Upload("a.parquet", parquet_bytes())])
    sink = io.BytesIO()
    pyarrow.parquet.write_table(pa.table({"other": [1]}), sink)
    assert store.add("lake", [Upload("b.parquet", sink.getvalue())]).refused[0].field == "file"


def test_a_dataset_kept_private_is_its_uploaders_alone_and_the_others_are_shared(make_store, tmp_path: Path) -> None:
    """Datasets uploaded on a shared server were seen and deleted by every user: demo data stays shared, a private one is not."""
    from dataclasses import replace

    server = make_store()
    alice, bob = replace(server, owner="workspace:" + "a" * 32), replace(server, owner="user:bob@example.com")
    assert alice.add("orders", [Upload("a.csv", b"ts,key\n1,k\n")], private=True).kept == {"a.csv": 1}
    bob.add("shared", [Upload("s.csv", b"ts,key\n1,k\n")])
    with pytest.raises(ConfigError, match="needs an owner"):
        server.add("nobody", [Upload("n.csv", b"ts,key\n1,k\n")], private=True)
    assert (alice.names(), bob.names(), server.names()) == (["orders", "shared"], ["shared"], ["orders", "shared"])
    for touch in (lambda: bob.files("orders"), lambda: bob.delete("orders"), lambda: bob.rename("orders", "mine"), lambda: bob.saved_columns("orders")):
        with pytest.raises(ConfigError, match="is not one of the datasets"):
            touch()
    with pytest.raises(ConfigError, match="taken by another user's dataset"):
        bob.add("orders", [Upload("b.csv", b"ts,key\n2,k\n")])
    assert [path.name for path in alice.files("orders")] == ["a.csv"]
    assert bob.add("refused", [Upload("empty.csv", b"")], private=True).kept == {} and not (tmp_path / "data" / "refused").exists()  # no folder left holding only its owner
