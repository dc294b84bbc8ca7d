"""``python -m tensorplay_export``: the ``tensorplay-export`` command (see :mod:`tensorplay_export.cli`)."""
from .cli import main

raise SystemExit(main())
