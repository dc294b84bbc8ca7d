"""Shared pytest configuration: import paths for the project and its test helpers, and a
private compiled-code cache for the session."""
from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
for path in (ROOT, TESTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

# The suite never writes into the user's cache (graph/codecache.py); set at import, before
# any program is compiled, so the subprocesses of CLI, notebook and cold-start tests inherit it.
_CODE_CACHE = tempfile.mkdtemp(prefix="tpe-test-code-cache-")
os.environ["TPE_CODE_CACHE"] = _CODE_CACHE
atexit.register(shutil.rmtree, _CODE_CACHE, ignore_errors=True)
