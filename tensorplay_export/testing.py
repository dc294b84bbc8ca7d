"""Test helpers for shape contracts (the import path users have: ``tensorplay_export.testing``)."""
from .face.testing import *  # noqa: F401,F403
from .face.testing import __all__  # noqa: F401
