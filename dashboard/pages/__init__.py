"""Page scripts, routed by ``app.py`` with ``st.navigation``; each draws one page from the parts in :mod:`dashboard`."""
