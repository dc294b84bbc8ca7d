"""Reliability suite configuration: hypothesis profiles "ci" (default) and "nightly".

Select the long run with ``TPE_HYPOTHESIS_PROFILE=nightly python -m pytest tests/reliability``.
The profiles are registered (not loaded globally, so other suites keep their own settings) in
``_rel_util``; every property test here applies the selected one through ``rel_settings``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _rel_util  # noqa: E402  (registers the profiles)


def pytest_report_header(config):
    return f"tensorplay_export reliability: hypothesis profile {_rel_util.profile_name()!r}"
