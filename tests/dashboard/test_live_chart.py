"""The live chart (``dashboard/live_chart.py``): one element per key whatever its figure, so a refresh redraws the chart in place; and the
Plotly.js the browser draws it with, served from the app's static files. The drawing itself is the browser tests' (their charts are these)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard.live_chart import PLOTLY_JS, serve_plotly_js


def _refreshed_chart() -> None:
    import plotly.graph_objects as go
    import streamlit as st

    from dashboard.live_chart import live_chart

    st.session_state["ticks"] = st.session_state.get("ticks", 0) + 1
    live_chart(go.Figure(go.Scatter(x=list(range(st.session_state["ticks"]))), layout={"title": {"text": "counts"}}), key="counts")


def test_a_refreshed_figure_is_sent_to_the_same_chart() -> None:
    at = AppTest.from_function(_refreshed_chart).run()
    assert not at.exception, at.exception
    (first,) = at.get("bidi_component")
    at.run()
    (second,) = at.get("bidi_component")
    assert second.key == "counts" and second.proto.id == first.proto.id  # the same element: the browser redraws it, not a new one
    assert second.proto.bytes != first.proto.bytes and '"counts"' in second.proto.bytes.decode()


def test_plotly_js_is_served_once_whole_and_replaced_when_it_is_not_the_installed_one(tmp_path: Path) -> None:
    fresh, stale = tmp_path / "fresh", tmp_path / "stale"
    assert serve_plotly_js(fresh) and (fresh / "plotly.min.js").read_bytes() == PLOTLY_JS.read_bytes()
    stale.mkdir()
    (stale / "plotly.min.js").write_text("half a file")
    assert serve_plotly_js(stale) and (stale / "plotly.min.js").stat().st_size == PLOTLY_JS.stat().st_size
    assert sorted(path.name for path in stale.iterdir()) == ["plotly.min.js"]  # no partial copy left beside it


def test_a_folder_that_cannot_be_written_says_so_instead_of_failing(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    assert serve_plotly_js(blocked) is False
