"""``python -m tensorplay_export``: the ``tensorplay-export`` command (see :mod:`tensorplay_export.cli`)."""
from .face.cli import main

raise SystemExit(main())
