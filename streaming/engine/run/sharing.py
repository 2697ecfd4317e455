"""A read-only link to a query: the random token it carries, and what its owner lets its viewers see beyond the view.

A link is for an audience (a presenter's demo): whoever holds the token watches the query's numbers and charts, whoever they are. The
query's text, its program and its report name the owner's SQL and the server's paths, so a viewer gets them only when the owner grants
them (:class:`Grants`). A link names a kept query, not one run of it: the kept folder keeps it
(:meth:`~streaming.engine.run.checkpoints.KeptQuery.share`), so a resumed run and a restarted server answer the same link, and the
owner ends it by revoking it (:meth:`Share.revoked`) or by deleting the query.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import ConfigError

__all__ = ["Grants", "Share"]

TOKEN_BYTES = 18
"""Random bytes of a token: as many as a workspace key's, so a link is as hard to guess."""


@dataclass(frozen=True)
class Grants:
    """What a viewer of a read-only link sees beyond the run's numbers and charts, as its owner ticked it; nothing unless ticked."""

    code: bool = False
    """The query's text and Show code's program: both hold the owner's SQL and the server's paths of the files it reads."""
    report: bool = False
    """The report download: the view as one HTML file, with the query and its program only when ``code`` is granted too."""

    def to_dict(self) -> dict[str, bool]:
        return {"code": self.code, "report": self.report}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Grants:
        """The grants a record holds; :class:`ConfigError` for a field the lab does not write or a value that is not ``true`` or ``false``."""
        unknown = sorted(set(record) - {"code", "report"})
        if unknown:
            raise ConfigError("grants", unknown[0], "is not something a read-only link can grant: only code and report")
        for name, value in record.items():
            if not isinstance(value, bool):
                raise ConfigError(f"grants.{name}", value, "must be true or false")
        return cls(**record)


@dataclass(frozen=True)
class Share:
    """A query's read-only link: its token, and what the owner granted its viewers."""

    token: str = field(repr=False)
    grants: Grants = Grants()

    @classmethod
    def new(cls, grants: Grants = Grants()) -> Share:
        """A link no one holds yet, with ``grants``."""
        return cls(secrets.token_urlsafe(TOKEN_BYTES), grants)

    def names(self, token: str) -> bool:
        """Whether ``token`` is this link's, compared in constant time: a page that answers a guess must not tell how close it came."""
        return hmac.compare_digest(self.token.encode(), str(token).encode())

    def revoked(self) -> Share:
        """A new link with the same grants: whoever holds the old one sees the query no more."""
        return Share.new(self.grants)

    def granting(self, grants: Grants) -> Share:
        """The same link with ``grants``: a viewer who opened it sees the change at their next refresh."""
        return replace(self, grants=grants)

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "grants": self.grants.to_dict()}

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> Share:
        """The link a record holds; :class:`ConfigError` for a token the lab would not have made, or grants it would not have written."""
        token = record.get("token") if isinstance(record, Mapping) else None
        if not isinstance(token, str) or len(token) < TOKEN_BYTES or not token.replace("-", "").replace("_", "").isalnum() or not token.isascii():
            raise ConfigError("share.token", token, "is not a token the lab makes: URL-safe letters, digits, '-' and '_'")
        grants = record.get("grants", {})
        if not isinstance(grants, Mapping):
            raise ConfigError("share.grants", grants, "must be a record of code and report")
        return cls(token, Grants.from_dict(grants))
