"""``python -m dashboard.serve [streamlit run's options]``: serve the app (``make run``) with Spark starting as the server does.

``streamlit run app.py`` runs the app's script only when a browser opens a page, so Spark started at the first view: its launch and
warm-up began a few seconds after the server, once a browser had loaded the page (on 2 cores the served app's Start was enabled 12-15 s
after the server answered, ``make bench``). Here the session's background start begins first, in the same process, before even Streamlit
and the app's modules are imported (:func:`~streaming.engine.runtime.session.start_early`), and the first page takes it over
(:func:`dashboard.shared.session_starter`); everything else is ``streamlit run``'s.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from streaming.engine.runtime.session import SessionStarter, start_early

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

APP = Path(__file__).resolve().parents[1] / "app.py"


_IMPORTED = threading.Event()
"""Set once the app's modules are imported: the starter's thread imports nothing before (two threads importing at once can meet in a
cycle and one of them get a half-made module)."""


def _warm_up(spark: SparkSession) -> None:
    _IMPORTED.wait()
    from streaming.engine.run.query import warm_up

    warm_up(spark)


def main(argv: list[str]) -> None:
    import pyspark.sql  # what the starter's thread uses, imported here
    if os.environ.get("SPARK_REMOTE"):
        import pyspark.sql.connect.session  # noqa: F401 - a Connect client's, with pandas and pyarrow

    start_early(SessionStarter(warm=_warm_up))  # then the JVM launches while Streamlit and the app's modules are imported
    from streamlit.web import cli

    import dashboard.shared  # noqa: F401 - the app's modules and the warm-up's, before the first page asks for them

    _IMPORTED.set()
    sys.argv = ["streamlit", "run", str(APP), *argv]
    cli.main()


if __name__ == "__main__":
    main(sys.argv[1:])
