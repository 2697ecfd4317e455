"""Whose this browser session is: the signed-in user, or the browser's private workspace.

On a server configured for sign-in (an ``[auth]`` section in ``.streamlit/secrets.toml``: Streamlit's own ``st.login`` with an
OpenID Connect provider) the owner is the signed-in user, and a page asks for sign-in first. Otherwise the owner is a private
workspace: a random key the browser keeps in a cookie, so a reload or a second tab of the same browser sees its queries and another
browser does not. Nothing else a browser sends names an owner: a key that is not one the lab makes gets a new workspace.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets

import streamlit as st

from streaming.engine.errors import ConfigError
from streaming.engine.owners import workspace_owner

__all__ = ["COOKIE", "KEY", "OPERATOR_VARIABLE", "is_operator", "operator_note", "remember_workspace", "session_owner", "sign_in_gate"]

COOKIE = "streaming_lab_workspace"
"""The cookie that keeps a browser's workspace key (a year, this site only, not sent with another site's requests)."""
KEY = "lab_workspace_key"
"""The session's workspace key in ``st.session_state``: the cookie's, or a new one until the browser sends the cookie back."""
SENT = "lab_workspace_sent"
COOKIE_SECONDS = 365 * 24 * 3600
OPERATOR_VARIABLE = "STREAMING_LAB_OPERATOR_TOKEN"
"""A secret of whoever runs the server: a browser session that opens a page with ``?operator=<it>`` sees and stops every user's queries."""
OPERATOR = "lab_operator"


def _sign_in_configured() -> bool:
    try:
        return "auth" in st.secrets  # where Streamlit's st.login reads its provider from
    except FileNotFoundError:  # no secrets.toml at all
        return False


def _signed_in() -> bool:
    return bool(st.user.get("is_logged_in"))


def _cookie_key() -> str | None:
    key = st.context.cookies.get(COOKIE)
    if key is None:
        return None
    try:
        workspace_owner(key)
    except ConfigError:
        return None
    return key


def session_owner() -> str:
    """The owner of this browser session (:mod:`streaming.engine.owners`): ``user:<email>`` when signed in, else its workspace's."""
    if _sign_in_configured() and _signed_in():
        return f"user:{st.user.get('email') or st.user.get('sub')}"
    state = st.session_state
    key = _cookie_key() or state.get(KEY)
    if not isinstance(key, str):
        key = secrets.token_urlsafe(24)
    state[KEY] = key
    return workspace_owner(key)


def is_operator() -> bool:
    """Whether this browser session is the server's operator: it opened a page with ``?operator=`` the :data:`OPERATOR_VARIABLE` secret
    (compared in constant time; the parameter is then taken off the URL). Without the variable there is no operator."""
    token = os.environ.get(OPERATOR_VARIABLE, "")
    if not token:
        return False
    given = st.query_params.get("operator")
    if given is not None:
        del st.query_params["operator"]
        st.session_state[OPERATOR] = hmac.compare_digest(given.encode(), token.encode())
    return bool(st.session_state.get(OPERATOR))


def operator_note() -> None:
    """The sidebar says when this session is the operator's."""
    if is_operator():
        st.sidebar.caption(":material/admin_panel_settings: Operator: you see, stop, resume and delete every user's queries")


def remember_workspace() -> None:
    """Have the browser keep this session's workspace key, once a session, unless it sent it already or a user is signed in."""
    if _sign_in_configured() or _cookie_key() is not None or st.session_state.get(SENT):
        return
    session_owner()
    cookie = f"{COOKIE}={st.session_state[KEY]}; Max-Age={COOKIE_SECONDS}; Path=/; SameSite=Strict"
    st.html(f"<script>document.cookie = {json.dumps(cookie)};</script>", unsafe_allow_javascript=True)
    st.session_state[SENT] = True


def sign_in_gate() -> None:
    """On a server configured for sign-in, a page for a browser not signed in is a Sign in button and nothing else; a signed-in user
    gets a Sign out button in the sidebar."""
    if not _sign_in_configured():
        return
    if _signed_in():
        st.sidebar.caption(f"Signed in as {st.user.get('email') or st.user.get('name') or 'you'}")
        st.sidebar.button("Sign out", key="lab_sign_out", on_click=st.logout)
        return
    st.title("Streaming Lab")
    st.info("This server keeps each user's queries apart: sign in to see and run yours.")
    st.button("Sign in", key="lab_sign_in", type="primary", on_click=st.login)
    st.stop()
