"""The app under ``streamlit.testing.v1.AppTest``: a page opened once the shared session is ready, reruns until a condition holds,
and what a page shows (its errors, a metric's value)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from streamlit.testing.v1 import AppTest

from dashboard import shared

from . import APP

TIMEOUT = 120  # the first run starts Spark


def new_app() -> AppTest:
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT)


def app_page(path: str) -> AppTest:
    """``path`` opened through the app, once the shared session is ready (so Start is enabled)."""
    at = new_app().run()
    assert not at.exception, at.exception
    shared.session_starter().wait(TIMEOUT)
    return at.switch_page(path).run()


def shared_link(at: AppTest) -> str:
    """The token of the read-only link the owner's Live page offers (*Share read-only*) for the run it watches."""
    return next(code.value for code in at.code if "?watch=" in code.value).rsplit("?watch=", 1)[1]


def linked_page(token: str) -> AppTest:
    """The Live page as a read-only link opens it (``?watch=token``), in a browser session of its own: another owner's, once the shared
    session is ready."""
    at = new_app()
    at.query_params["watch"] = token
    at.run()
    assert not at.exception, at.exception
    shared.session_starter().wait(TIMEOUT)
    return at.switch_page(shared.LIVE_PAGE).run()


def page_text(at: AppTest) -> str:
    """Every element of the page, main area and sidebar, as text: each one's own fields (labels, values, captions, code, help) included."""
    return "\n".join(str(node.proto) for area in (at.main, at.sidebar) for node in area if node.proto is not None)


def wait_until(at: AppTest, condition: Callable[[AppTest], bool], timeout: float) -> bool:
    """Rerun the page until ``condition(at)`` holds; ``False`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        at.run()
        assert not at.exception, at.exception
        if condition(at):
            return True
        time.sleep(0.5)
    return False


def page_errors(at: AppTest) -> list[str]:
    return [error.value for error in at.error]


def drawn_figures(at: AppTest) -> dict[str, str]:
    """Every chart of the page by its key: its figure's JSON, whether ``st.plotly_chart`` drew it or :func:`~dashboard.live_chart.live_chart`."""
    figures = {chart.key: chart.proto.spec for chart in at.get("plotly_chart")}
    figures.update({chart.key: chart.proto.bytes.decode() for chart in at.get("bidi_component")})
    return figures


def page_metric(at: AppTest, label: str) -> str:
    return next(metric.value for metric in at.metric if metric.label == label)


def spark_confirms_the_model(at: AppTest) -> str:
    """On the Joins page: press *Confirm on Spark*; assert Spark's completeness and peak state are the model's, and return the model's
    completeness as shown."""
    at.button(key="join_tune_confirm").click().run()
    assert not at.exception, at.exception
    (confirmed,) = [success.value for success in at.success]
    spark_share, model_share = re.search(r"\(([\d.]+)%; the model said ([\d.]+)%\)", confirmed).groups()
    spark_state, model_state = re.search(r"at most ([\d,]+) rows in state \(the model said ([\d,]+)\)", confirmed).groups()
    assert spark_share == model_share and spark_state == model_state, confirmed
    return model_share
