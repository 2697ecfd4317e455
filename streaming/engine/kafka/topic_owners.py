"""Whose topics: a topic the lab published from a dataset its uploader kept to themselves is theirs alone.

A broker has no owners, and the lab lists every topic it has (a team's topics,
another tool's). Only the copies the lab makes of a private dataset carry an
owner: publishing one records it here, in a JSON file under the data root
(``.topics.json``: ``"<bootstrap>|<topic>"`` → owner), and every list of topics
a browser sees leaves out those of another owner (:func:`~streaming.engine.owners.visible`).
Deleting such a topic from the lab forgets it.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from ..owners import check_owner, visible

__all__ = ["TOPIC_OWNERS_FILE", "TopicOwners"]

TOPIC_OWNERS_FILE = ".topics.json"
_LOCK = threading.Lock()


class TopicOwners:
    """The owners of the topics the lab published from private datasets, kept in ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    @classmethod
    def under(cls, root: Path) -> TopicOwners:
        return cls(Path(root) / TOPIC_OWNERS_FILE)

    def _read(self) -> dict[str, str]:
        try:
            values = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return {str(key): str(value) for key, value in values.items()} if isinstance(values, dict) else {}

    def _write(self, values: dict[str, str]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=self.path.parent, prefix=".topics-", suffix=".json")
        with os.fdopen(handle, "w") as file:
            json.dump(values, file, indent=1, sort_keys=True)
        os.replace(name, self.path)

    @staticmethod
    def _key(bootstrap: str, topic: str) -> str:
        return f"{bootstrap.strip()}|{topic}"

    def claim(self, bootstrap: str, topic: str, owner: str | None) -> None:
        """Record ``topic`` on ``bootstrap`` as ``owner``'s (``None``: everyone's, which forgets an owner it had)."""
        owner = check_owner(owner)
        with _LOCK:
            values = self._read()
            if owner is None:
                values.pop(self._key(bootstrap, topic), None)
            else:
                values[self._key(bootstrap, topic)] = owner
            self._write(values)

    def owner_of(self, bootstrap: str, topic: str) -> str | None:
        return self._read().get(self._key(bootstrap, topic))

    def visible(self, bootstrap: str, names: Iterable[str], viewer: str | None) -> list[str]:
        """``names`` (topics on ``bootstrap``) that ``viewer`` sees: all but another owner's (``viewer=None``: the operator, all)."""
        owners = self._read()
        return [name for name in names if visible(owners.get(self._key(bootstrap, name)), viewer)]
