"""What of a run a page shows: its owner's page all of it, a read-only link's page the view and what the owner granted.

One value, :class:`Shown`, is handed down the Live view (:func:`~dashboard.live.live_view` to :func:`~dashboard.sql.sql_view` and
:func:`~dashboard.lateness.lateness_view`), so each panel reads what it may show from it instead of asking whose page it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from streaming.engine.run.query import Run

__all__ = ["OWNER", "Shown", "shown_by"]


@dataclass(frozen=True)
class Shown:
    """What a page shows of a run beyond its numbers and charts."""

    code: bool
    """Show code, and a SQL run's text: both hold the owner's SQL and the server's paths of the files the query reads."""
    report: bool
    """The report download (with the query and its program only with :attr:`code`)."""
    owned: bool
    """The owner's own: Change and resume, the dropped events listed and downloaded, the configuration and the latest progress (which
    name the server's paths), Spark's own words of a failure, and the state and the topic read on demand (a Spark job or a broker read
    each refresh, which a viewer would make on the owner's behalf). Never granted by a link."""


OWNER = Shown(code=True, report=True, owned=True)
"""What the owner's own page shows: everything."""


def shown_by(run: Run, link: str | None) -> Shown | None:
    """What a page opened by ``link`` (the token of a read-only link; ``None`` for the owner's own page) shows of ``run``: the view and
    what the owner granted, read from the run at each refresh so a grant or a revocation reaches a viewer already watching; ``None`` once
    the link no longer names the run (revoked)."""
    if link is None:
        return OWNER
    share = run.share
    if not share.names(link):
        return None
    return Shown(code=share.grants.code, report=share.grants.report, owned=False)
