"""*A checkpoint of your own* on a shared server: a user is offered their own kept queries' checkpoints and the folders brought to the
data root, never another owner's, and the operator every one."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import checkpoint

ALICE, BOB = "workspace:" + "a" * 32, "user:bob@example.com"


def _checkpoint(folder: Path) -> None:
    (folder / "offsets").mkdir(parents=True)
    (folder / "metadata").write_text("{}")


def _kept(root: Path, name: str, owner: str | None) -> None:
    folder = root / ".queries" / name
    _checkpoint(folder / "checkpoint")
    (folder / "query.json").write_text(json.dumps({"name": name, "config": {}, **({"owner": owner} if owner else {})}))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """Two owners' kept queries and the server's own, a private dataset folder of Alice's holding a checkpoint, a folder brought to the
    data root, a checkpoint in a hidden server folder, and a kept query's folder that lost its query.json."""
    data = tmp_path / "data"
    _kept(data, "alices", ALICE)
    _kept(data, "bobs", BOB)
    _kept(data, "servers", None)
    (data / "alices_orders").mkdir(parents=True)
    (data / "alices_orders" / ".owner").write_text(ALICE + "\n")
    _checkpoint(data / "alices_orders" / "job")
    _checkpoint(data / "jobs" / "orders")
    _checkpoint(data / ".connect" / "job")
    _checkpoint(data / ".queries" / "stray" / "checkpoint")
    return data


def test_a_user_is_offered_their_own_checkpoints_and_the_brought_ones_not_another_owners(root: Path) -> None:
    """As user B, the picker listed `.queries/<A's query>/checkpoint` for every query of A: its last batch, watermark, offsets and state
    schemas, and a SQL text checked against it answered with A's grouping."""
    assert checkpoint.checkpoint_folders(root, BOB) == [Path(".queries/bobs/checkpoint"), Path(".queries/servers/checkpoint"), Path("jobs/orders")]
    assert checkpoint.checkpoint_folders(root, ALICE) == [
        Path(".queries/alices/checkpoint"), Path(".queries/servers/checkpoint"), Path("alices_orders/job"), Path("jobs/orders"),
    ]
    assert checkpoint.checkpoint_folders(root) == [  # the operator's (and the server's own view): every one
        Path(".connect/job"), Path(".queries/alices/checkpoint"), Path(".queries/bobs/checkpoint"), Path(".queries/servers/checkpoint"),
        Path(".queries/stray/checkpoint"), Path("alices_orders/job"), Path("jobs/orders"),
    ]


def _panel(registry) -> None:
    """Run as a script of its own (AppTest), so its annotations could name nothing the test module imports."""
    from dashboard.checkpoint import checkpoint_panel

    checkpoint_panel(registry)


def test_a_folder_set_in_the_session_state_is_read_only_when_it_is_offered(root: Path, monkeypatch) -> None:
    """The choice is checked against the viewer's folders again before anything is read: a state that names another owner's folder reads
    nothing of it."""
    read: list[Path] = []
    monkeypatch.setenv("STREAMING_LAB_DATA", str(root))
    facts = {"last_batch": None, "watermark": None, "sources": [], "operators": [], "query": None}
    monkeypatch.setattr(checkpoint, "checkpoint_facts", lambda spark, folder: read.append(folder.relative_to(root)) or facts)
    bob = SimpleNamespace(owner=BOB, sees_everyone=False, spark=None)
    for crafted in (Path(".queries/alices/checkpoint"), Path("alices_orders/job"), ".queries/alices/checkpoint", Path("../elsewhere")):
        at = AppTest.from_function(_panel, args=(bob,))
        at.session_state["ckpt_folder"] = crafted
        at.run()
        assert not at.exception, at.exception
        assert all("alices" not in str(folder) for folder in read), read
    assert read  # the panel still reads a folder of Bob's
