"""``python -m streaming``: the engine from the shell."""

from .cli import main

raise SystemExit(main())
