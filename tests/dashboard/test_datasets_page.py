"""The Datasets page's upload form: a name that cannot be kept as typed is refused in the upload's report, and nothing is written for it."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

ROW = b"event_time,key\n2024-01-01 00:00:00,a\n"


def _upload_form(root: str) -> None:
    from dashboard.datasets import upload_form
    from streaming.engine.data.datasets import DatasetStore

    upload_form(DatasetStore(root), 1)


def _upload(root: Path, dataset: str, files: list[str]) -> AppTest:
    at = AppTest.from_function(_upload_form, args=(str(root),)).run()
    at.text_input(key="upload_name").set_value(dataset)
    at.file_uploader[0].set_value([(name, ROW, "text/csv") for name in files])
    at.button[0].click().run()
    assert not at.exception, at.exception
    return at


def _written(root: Path) -> list[str]:
    return sorted(path.relative_to(root).as_posix() for path in root.rglob("*"))


def test_a_file_name_with_a_path_is_refused_in_the_report_and_not_written(tmp_path: Path) -> None:
    """``../../etc/passwd.csv`` was kept as ``passwd.csv`` without a word."""
    at = _upload(tmp_path, "clicks", ["../../etc/passwd.csv", "b.csv"])
    assert [error.value for error in at.error] == [
        "clicks: refused '../../etc/passwd.csv': names a parent folder ('..'); a name is one file or folder, not a path. Nothing stored was changed."
    ]
    assert [success.value for success in at.success] == ["clicks: kept b.csv (1 rows)"]
    assert _written(tmp_path) == ["clicks", "clicks/b.csv"]


def test_without_a_dataset_name_a_first_file_that_cannot_name_one_is_refused(tmp_path: Path) -> None:
    """The dataset was named after the first file's name cut to its last part: ``../../etc/passwd.csv`` made a dataset ``passwd``."""
    at = _upload(tmp_path, "", ["../../etc/passwd.csv", "b.csv"])
    assert len(at.error) == 1 and at.error[0].value.startswith("Cannot store this upload: dataset name: '' is empty, and the first file's name")
    assert "'../../etc/passwd.csv' names a parent folder ('..')" in at.error[0].value and "type a dataset name" in at.error[0].value
    assert not at.success and _written(tmp_path) == []
    at = _upload(tmp_path, "", ["orders.csv"])  # a plain first name still names the dataset, without its suffix
    assert [success.value for success in at.success] == ["orders: kept orders.csv (1 rows)"] and _written(tmp_path) == ["orders", "orders/orders.csv"]
