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


def same_output(got, want, where, rtol=None):
    """``got`` is ``want``: structure, Python/numpy type, dtype, shape and values (bit for bit, or
    within ``rtol``)."""
    import numpy as np

    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            same_output(g, w, f"{where}[{i}]", rtol)
        return
    if isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), (where, type(got))
    elif isinstance(want, np.generic):
        assert isinstance(got, (np.generic, np.ndarray)) and np.ndim(got) == 0, (where, type(got))
    else:
        assert type(got) is type(want), (where, type(got), type(want))
    g, w = np.asarray(got), np.asarray(want)
    assert g.dtype == w.dtype and g.shape == w.shape, (where, g.dtype, w.dtype, g.shape, w.shape)
    if rtol is None:
        np.testing.assert_array_equal(g, w, err_msg=str(where), strict=True)
    else:
        np.testing.assert_allclose(g, w, rtol=rtol, err_msg=str(where))


# -- helpers the program tests share --------------------------------------------------------------

def roundtrip(ep):
    """``ep`` saved to an in-memory archive and loaded back (``tpe.save`` then ``tpe.load``)."""
    import io

    import tensorplay_export as tpe

    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    return tpe.load(buf)


def program_doc(raw: bytes) -> dict:
    """A program document (``program.json`` bytes) parsed, each node's meta spelled out in the node
    (deep copies, so an edit reaches that node alone) and no ``graph.meta_values`` table: what
    hostile-archive tests edit.  :func:`program_bytes` stores it again as a writer would."""
    import copy
    import json

    doc = json.loads(raw)
    graph = doc.get("graph")
    if isinstance(graph, dict) and "meta_values" in graph:
        table = graph.pop("meta_values")
        for node in graph["nodes"]:
            node["meta"] = {k: copy.deepcopy(table[v]) if type(v) is int else v for k, v in node["meta"].items()}
    return doc


def program_bytes(doc: dict) -> bytes:
    """``doc`` (from :func:`program_doc`, perhaps edited) as document bytes, its meta values moved into
    ``graph.meta_values`` by the writer's own rule (``intern_meta``), so the loader reads the table."""
    import json

    from tensorplay_export.serde.program_json import intern_meta

    graph = doc.get("graph")
    newer = not isinstance(doc.get("schema_version"), int) or doc["schema_version"] >= 3  # older: inline meta
    if newer and isinstance(graph, dict) and isinstance(graph.get("nodes"), list) and "meta_values" not in graph \
            and all(isinstance(n, dict) and isinstance(n.get("meta"), dict) for n in graph["nodes"]):
        graph["meta_values"] = intern_meta(graph["nodes"])
    return json.dumps(doc).encode()


def refused(ep, *args) -> bool:
    """Whether ``ep.module()`` refuses ``args`` with ``ConstraintsExceededError`` (outside its contract)."""
    import tensorplay_export as tpe

    try:
        ep.module()(*args)
    except tpe.ConstraintsExceededError:
        return True
    return False


# -- the size-use corpora's specs and example (tests/test_size_uses_corpus.py, tests/capture/...) ---

def named_spec():
    from tensorplay_export import Dim

    return {"x": {0: Dim("n", min=1, max=64), 1: Dim("m", min=1, max=64)}}


def auto_spec():
    from tensorplay_export import Dim

    return {"x": {0: Dim.AUTO, 1: Dim.AUTO}}


def x_of(n, m):
    import numpy as np

    return (np.arange(n * m, dtype=np.float32).reshape(n, m) - 3.0) / 4.0


def with_member(data: bytes, member: str, change) -> bytes:
    """The archive ``data`` with ``change(member's bytes) -> bytes`` applied to one member, every
    member re-packed with its own ZipInfo (stored, same order)."""
    import io
    import zipfile

    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            dst.writestr(info, change(body) if info.filename == member else body)
    return out.getvalue()
