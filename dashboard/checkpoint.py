"""A checkpoint of your own: a Structured Streaming job's checkpoint folder, copied under the data root, read without running it.

It shows what :func:`~streaming.engine.run.change.checkpoint_facts` reads (the
last committed batch, the watermark it carries, each source's offsets, each
stateful operator with its state's key and value schemas) and checks a SQL
query against it (:func:`~streaming.engine.run.change.predict_on_state`):
production's "will my job resume with the new watermark?", answered before a
restart. Only folders under the data root are read, and of those only the
viewer's (:func:`checkpoint_folders`): a kept query's checkpoint holds its
owner's offsets, watermark and state schemas, and a query checked against it
answers with its grouping, so on a shared server another owner's is never
offered, nor read when a session's state names it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import streamlit as st

from streaming.engine.data.datasets import data_root, folder_owner
from streaming.engine.errors import ConfigError
from streaming.engine.owners import visible
from streaming.engine.run.change import checkpoint_facts, predict_on_state
from streaming.engine.run.checkpoints import QUERIES_FOLDER, KeptQuery
from streaming.engine.sql import SqlError, SqlQuery, SqlView

from .change import show_prediction
from .data import choice_of, data_select, data_source

if TYPE_CHECKING:
    from streaming.engine.run.registry import QueryRegistry

__all__ = ["MAX_DEPTH", "checkpoint_folders", "checkpoint_panel", "yours"]

MAX_DEPTH = 4
"""How deep under the data root a checkpoint folder is looked for."""


def checkpoint_folders(root: Path, viewer: str | None = None, depth: int = MAX_DEPTH) -> list[Path]:
    """The folders under ``root`` (at most ``depth`` levels down) that are a query's checkpoint (an ``offsets`` folder and a ``metadata``
    file) and ``viewer``'s to read (:func:`yours`), by their path under ``root``; ``viewer=None`` (the operator, the server's own view):
    every one. Links are not followed, so nothing outside the root is read."""
    found: list[Path] = []
    for folder, names, files in os.walk(root, followlinks=False):
        here = Path(folder).relative_to(root)
        checkpoint = "offsets" in names and "metadata" in files
        if checkpoint:
            found.append(here)
        if checkpoint or len(here.parts) >= depth:
            names[:] = []  # nothing below a checkpoint is another, nor below the depth
    return sorted(folder for folder in found if viewer is None or yours(root, folder, viewer))


def yours(root: Path, folder: Path, viewer: str) -> bool:
    """Whether the checkpoint ``folder`` (a path under ``root``) is ``viewer``'s to read: a kept query's checkpoint when the query is
    theirs or the server's (its ``query.json``, as the Queries page lists it); else a folder brought to the data root, in no hidden
    folder (the kept queries', a Connect server's: the server's own) and in none another owner keeps to themselves (a private dataset's
    ``.owner``, :func:`~streaming.engine.data.datasets.folder_owner`)."""
    parts = folder.parts
    if len(parts) == 3 and parts[0] == QUERIES_FOLDER:
        kept = KeptQuery(root / parts[0] / parts[1])
        if kept.exists() and kept.checkpoint == root / folder:
            return visible(kept.owner, viewer)
    if any(part.startswith(".") for part in parts):
        return False
    return all(visible(folder_owner(root.joinpath(*parts[:end])), viewer) for end in range(1, len(parts) + 1))


def _viewer(registry: QueryRegistry) -> str | None:
    """Whose checkpoints the registry's browser session reads: its owner's, or every one (``None``) for the operator and the server."""
    return None if registry.sees_everyone else registry.owner


def checkpoint_panel(registry: QueryRegistry) -> None:
    """Pick a checkpoint under the data root, see what it holds, and check a SQL query against it."""
    root = data_root(os.environ)
    folders = checkpoint_folders(root, _viewer(registry)) if root.is_dir() else []
    if not folders:
        st.caption(f"No checkpoint of yours under the data root ({root.name}/): copy a job's checkpoint folder there to read it here.")
        return
    chosen = st.selectbox("Checkpoint", folders, format_func=str, key="ckpt_folder", help="A folder with offsets/ and metadata, under the data root")
    if chosen is None:
        return
    if chosen not in folders:  # the widget keeps a value set in the session's state even when it is not one of the options
        st.error(f"Cannot read it: {ConfigError('checkpoint', str(chosen), 'is not one of your checkpoint folders')}")
        return
    try:
        facts = _facts(registry, root / chosen)
    except ConfigError as err:
        st.error(f"Cannot read it: {err}")
        return
    left, right = st.columns(2)
    left.metric("Last committed batch", "none" if facts["last_batch"] is None else facts["last_batch"])
    right.metric("Watermark it carries", facts["watermark"] or "none")
    st.caption("Each source's offsets at the last batch")
    st.dataframe(pd.DataFrame({"source": range(len(facts["sources"])), "offsets": [str(offsets) for offsets in facts["sources"]]}), hide_index=True)
    if facts["operators"]:
        st.caption("Each stateful operator and its state's schemas (Spark's state-metadata)")
        st.dataframe(pd.DataFrame(facts["operators"]).astype(str), hide_index=True, key="ckpt_operators")
    st.markdown("**Will this query resume from it?**")
    text = st.text_area("SQL", key="ckpt_sql", height=140, placeholder="SELECT ... FROM STREAM(events) WATERMARK ... GROUP BY ...",
                        help="Checked against what the checkpoint stores, without running anything")
    if not text.strip():
        return
    try:
        query = _query(facts, text)
        if query is not None:
            show_prediction(predict_on_state(registry.spark, facts, query))
    except (SqlError, ConfigError) as err:
        st.error(f"The query does not run: {err}")


def _facts(registry: QueryRegistry, folder: Path) -> dict:
    """What ``folder`` holds, read again only when a batch has committed since; a kept query's checkpoint is read with its query."""
    if (folder.parent / "query.json").is_file() and folder.name == "checkpoint":
        folder = folder.parent
    held = st.session_state.get("ckpt_facts")
    commits = folder / "checkpoint" / "commits" if (folder / "query.json").is_file() else folder / "commits"
    stamp = (str(folder), commits.stat().st_mtime_ns if commits.exists() else 0)
    if held is None or held[0] != stamp:
        held = (stamp, checkpoint_facts(registry.spark, folder))
        st.session_state["ckpt_facts"] = held
    return held[1]


def _query(facts: dict, text: str) -> SqlQuery | None:
    """``text`` over the kept query's views when the lab kept the checkpoint, else over the data chosen here as the view ``events``."""
    stored = facts.get("query")
    if stored is not None and stored.get("kind") == "sql":
        return SqlQuery.from_dict(stored).with_changes(text=text)
    label = data_select("ckpt_data", "Its view's data (the view events)")
    if label is None:
        return None
    return SqlQuery(text, (SqlView("events", data_source(choice_of(label))),))
