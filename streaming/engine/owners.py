"""Whose a run or a kept query is on a server a team shares, and who may see it.

An owner is a string the front end gives: ``user:<email>`` for a user signed in through the server's identity provider, or
``workspace:<digest>`` for a browser's private workspace (the digest of a random key the browser keeps in a cookie, so the key
itself is never written to disk). ``None`` is the server's own: what the CLI, a test or a notebook made, and a folder kept before
queries had owners. Everyone sees the server's own, and nobody sees another owner's.
"""

from __future__ import annotations

import hashlib
import re

from .errors import ConfigError

__all__ = ["WORKSPACE_KEY_PATTERN", "check_owner", "visible", "workspace_owner"]

WORKSPACE_KEY_PATTERN = re.compile(r"[A-Za-z0-9_-]{22,64}")
"""A workspace key as the browser keeps it: URL-safe base64 of at least 16 random bytes (``secrets.token_urlsafe``)."""


def workspace_owner(key: str) -> str:
    """The owner of the workspace whose browser keeps ``key``; :class:`ConfigError` for a key the lab would not have made."""
    if not isinstance(key, str) or WORKSPACE_KEY_PATTERN.fullmatch(key) is None:
        raise ConfigError("workspace", key, "is not a workspace key: 22 to 64 letters, digits, '-' or '_'")
    return "workspace:" + hashlib.sha256(key.encode("ascii")).hexdigest()[:32]


def check_owner(owner: str | None) -> str | None:
    """``owner`` when it names one (``user:…`` or ``workspace:…``), or ``None``: the server's own."""
    if owner is None:
        return None
    if not isinstance(owner, str) or not owner.startswith(("user:", "workspace:")) or len(owner) > 300 or not owner.isprintable():
        raise ConfigError("owner", owner, "must be 'user:<name>' or 'workspace:<digest>', or None for the server's own")
    return owner


def visible(owner: str | None, viewer: str | None) -> bool:
    """Whether what ``owner`` owns is seen by ``viewer``: the server's own by everyone, the rest by its owner; ``viewer=None``
    (the CLI, the operator) sees everything."""
    return viewer is None or owner is None or owner == viewer
