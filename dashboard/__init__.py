"""The Streamlit dashboard: page scripts in ``pages/``, routed by ``app.py``; the parts they draw in one module per page family.

``shared`` holds the session, the registry and the widgets several pages use;
``data`` the data a page runs on; ``live``, ``sql``, ``queries``, ``tuner``,
``sql_tuner``, ``compare``, ``sql_compare``, ``joins``, ``live_join``,
``join_compare``, ``datasets``, ``kafka`` and ``walkthrough`` the parts of their
pages; ``jobs`` the background jobs of the experiment pages. Only this package
imports Streamlit; the engine, analysis and figures live in :mod:`streaming`.
"""
