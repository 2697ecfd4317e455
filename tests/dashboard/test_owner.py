"""Whose a browser session is (``dashboard/owner.py``) and who sees what an owner owns (``streaming/engine/owners.py``), without Spark."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from streaming.engine.errors import ConfigError
from streaming.engine.owners import check_owner, visible, workspace_owner


def test_a_workspace_is_the_digest_of_a_key_the_lab_would_make_and_each_owner_sees_only_its_own() -> None:
    key = "k" * 32
    owner = workspace_owner(key)
    assert owner.startswith("workspace:") and key not in owner and owner == workspace_owner(key) != workspace_owner("j" * 32)
    for bad in ("short", "x" * 65, "a" * 30 + ";path=/", "../" * 10, None):
        with pytest.raises(ConfigError, match="workspace"):
            workspace_owner(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="owner"):
        check_owner("alice")
    assert visible(owner, owner) and visible(None, owner) and visible(owner, None)
    assert not visible(owner, "user:bob@example.com") and not visible("user:bob@example.com", owner)


def _session() -> None:
    import streamlit as st

    from dashboard.owner import remember_workspace, session_owner, sign_in_gate

    sign_in_gate()
    remember_workspace()
    st.write(session_owner())


def test_a_browser_session_keeps_one_workspace_and_asks_its_browser_once_to_keep_the_key() -> None:
    at = AppTest.from_function(_session).run()
    assert not at.exception and not at.error, (at.exception, at.error)
    owner = at.markdown[0].value
    key = at.session_state["lab_workspace_key"]
    assert owner == workspace_owner(key)
    [script] = [element for element in at.main if element.type == "html"]  # the cookie, written by the browser: the key never reaches the URL
    assert f"streaming_lab_workspace={key}" in script.proto.body and "SameSite=Strict" in script.proto.body
    at.run()
    assert at.markdown[0].value == owner and not [element for element in at.main if element.type == "html"]
    assert AppTest.from_function(_session).run().markdown[0].value != owner  # another browser: another workspace


def test_a_server_configured_for_sign_in_asks_for_it_before_any_page() -> None:
    at = AppTest.from_function(_session)
    at.secrets["auth"] = {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "s" * 32, "client_id": "lab", "client_secret": "secret",
        "server_metadata_url": "https://issuer.example/.well-known/openid-configuration",
    }
    at.run()
    assert not at.exception, at.exception
    assert [button.label for button in at.button] == ["Sign in"] and not at.markdown  # nothing of the page, no workspace
    assert "lab_workspace_key" not in at.session_state


def _operator() -> None:
    import streamlit as st

    from dashboard.owner import is_operator

    st.write(f"operator: {is_operator()}")


@pytest.mark.parametrize(("token", "given", "operator"), [("s3cret-token", "s3cret-token", True), ("s3cret-token", "guess", False), ("", "", False)])
def test_only_a_session_that_opens_a_page_with_the_servers_operator_token_is_the_operator(monkeypatch, token: str, given: str, operator: bool) -> None:
    monkeypatch.setenv("STREAMING_LAB_OPERATOR_TOKEN", token)
    at = AppTest.from_function(_operator)
    at.query_params["operator"] = given
    at.run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == f"operator: {operator}"
    at.run()  # the token is not left in the address bar, and the session stays what it was
    assert at.markdown[0].value == f"operator: {operator}" and ("operator" not in at.query_params) == bool(token)


def test_a_topic_published_from_a_private_dataset_is_listed_to_its_owner_alone(tmp_path) -> None:
    from streaming.engine.kafka.topic_owners import TopicOwners

    owners, alice, bob = TopicOwners.under(tmp_path), "workspace:" + "a" * 32, "user:bob@example.com"
    owners.claim("127.0.0.1:9092", "alice-flights", alice)
    listed = ["alice-flights", "team-clicks", "orders"]
    assert owners.visible("127.0.0.1:9092", listed, alice) == listed
    assert owners.visible("127.0.0.1:9092", listed, bob) == ["team-clicks", "orders"]  # a team's topics stay everyone's
    assert owners.visible("127.0.0.1:9092", listed, None) == listed  # the operator
    assert owners.visible("broker.example:9092", listed, bob) == listed  # a topic of that name on other brokers is not hers
    owners.claim("127.0.0.1:9092", "alice-flights", None)  # deleted from the lab: forgotten
    assert owners.visible("127.0.0.1:9092", listed, bob) == listed and owners.owner_of("127.0.0.1:9092", "alice-flights") is None
    with pytest.raises(ConfigError):
        owners.claim("127.0.0.1:9092", "t", "root")  # not an owner the lab makes
    (tmp_path / ".topics.json").write_text("not json")
    assert owners.visible("127.0.0.1:9092", listed, bob) == listed  # an unreadable file hides nothing, and breaks no page


def _picker() -> None:
    import streamlit as st

    from dashboard.data import data_select

    st.write(f"chosen: {data_select('tune_feed')}")


def test_a_new_session_opens_on_the_data_its_owner_chose_last_and_a_link_still_wins() -> None:
    """A reload or a second tab (the same workspace key, from its cookie) opens on the data chosen last; another browser does not, and a
    page's link names its own."""
    first = AppTest.from_function(_picker).run()
    first.selectbox(key="tune_feed").set_value("sensor_readings").run()
    key = first.session_state["lab_workspace_key"]
    again = AppTest.from_function(_picker)
    again.session_state["lab_workspace_key"] = key
    assert again.run().markdown[0].value == "chosen: sensor_readings"
    assert AppTest.from_function(_picker).run().markdown[0].value == "chosen: web_clicks"  # another browser: its own choice
    linked = AppTest.from_function(_picker)
    linked.session_state["lab_workspace_key"] = key
    linked.query_params["tune_feed"] = "guide_words"
    assert linked.run().markdown[0].value == "chosen: guide_words"
