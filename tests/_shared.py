"""Where the shared acceptance cases live: beside the checkout (../shared/cases), in CI too.

Override with the environment variable TPE_CASES_DIR.
"""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_CASES = Path(os.environ.get("TPE_CASES_DIR", ROOT.parent / "shared" / "cases"))
