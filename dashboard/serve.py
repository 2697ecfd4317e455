"""``python -m dashboard.serve [streamlit run's options]``: serve the app (``make run``) with Spark starting as the server does.

``streamlit run app.py`` runs the app's script only when a browser opens a page, so Spark started at the first view: its launch and
warm-up began a few seconds after the server, once a browser had loaded the page (on 2 cores the served app's Start was enabled 12-15 s
after the server answered, ``make bench``). Here the session's background start (:func:`dashboard.shared.session_starter`) begins before
the server does, in the same process, and the first page finds it started; everything else is ``streamlit run``'s.
"""

from __future__ import annotations

import sys
from pathlib import Path

from streamlit.web import cli

from dashboard.shared import session_starter

APP = Path(__file__).resolve().parents[1] / "app.py"


def main(argv: list[str]) -> None:
    session_starter()
    sys.argv = ["streamlit", "run", str(APP), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
