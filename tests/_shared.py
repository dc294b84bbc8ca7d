"""The shared acceptance cases: where they live, how they load, and which are known to fail.

They live beside the checkout (``../shared/cases``), in CI too; the environment
variable ``TPE_CASES_DIR`` overrides that.  Every test that walks them uses
:func:`case_params`, so the cases that later issues fix are strict expected
failures by name: when an issue fixes one, it removes that name from
``EXPECTED_FAILURES`` (a strict xfail that passes fails the suite).
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_CASES = Path(os.environ.get("TPE_CASES_DIR", ROOT.parent / "shared" / "cases"))

# case name -> the issue that makes it pass
EXPECTED_FAILURES: dict[str, str] = {}


def case_files() -> list[Path]:
    """Every ``case_*.py`` of the shared folder, sorted ([] when the folder is absent)."""
    return sorted(SHARED_CASES.glob("case_*.py")) if SHARED_CASES.is_dir() else []


# Cases whose violation text is not deterministic yet (counterexamples that depend on z3's state
# from earlier queries in the process): the determinism tests leave them out.  None today.
NONDETERMINISTIC: dict[str, str] = {}


def case_params(files: list[Path] | None = None, *, as_name: bool = False,
                expected: dict[str, str] = EXPECTED_FAILURES) -> list[Any]:
    """``pytest.param`` per case (path, or stem with ``as_name``); cases named in ``expected`` are strict xfail."""
    out = []
    for path in case_files() if files is None else files:
        marks = ()
        if path.stem in expected:
            marks = (pytest.mark.xfail(strict=True, reason=expected[path.stem]),)
        out.append(pytest.param(path.stem if as_name else path, id=path.stem, marks=marks))
    return out


_LOADED: dict[Path, Any] = {}


def load_case(path: Path | str) -> Any:
    """Import a case by path or name (its folder briefly on ``sys.path`` for ``_util``), once per process."""
    path = (SHARED_CASES / f"{path}.py") if isinstance(path, str) else Path(path)
    path = path.resolve()
    if path in _LOADED:
        return _LOADED[path]
    sys.path.insert(0, str(path.parent))
    try:
        name = f"_shared_case_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    _LOADED[path] = module
    return module


NO_CASES = f"the shared acceptance cases are not at {SHARED_CASES} (set TPE_CASES_DIR)"
