"""Every shared acceptance case through save/load: the loaded program admits and refuses exactly
the sizes the original does, computes the same values, and keeps every symbol's range.

This is the save->load closure over the corpus: whatever export (or draft_export, or one refine
after a violation) produces must load back.  A case export cannot turn into a program yet is
skipped here (tests/cases and the reliability suite report it); a program that saves must load.
The cases live beside the project (``../shared/cases``, see conftest.py); without them this skips.
"""
from __future__ import annotations

import importlib.util
import io
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.graph.ir import iter_exprs

from _shared import NO_CASES, case_files, case_params, load_case as _load

FILES = case_files()


def _program(case):
    """The program the corpus exports for ``case``; skips when export produces none."""
    args, kwargs = case.make_inputs(**case.EXAMPLE)
    spec = case.dynamic_shapes()
    outcome = case.EXPECT["outcome"]
    try:
        if outcome == "data_dependent":
            ep = tpe.draft_export(case.model, *args, dynamic_shapes=spec, **kwargs).exported_program
            if ep is None:
                pytest.skip("draft_export produced no program")
            return ep
        if outcome == "violation":
            try:
                tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
            except tpe.ConstraintViolationError as err:
                spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
        return tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
    except (tpe.ConstraintViolationError, tpe.DataDependentError, tpe.UnsupportedOpError, ValueError) as err:
        pytest.skip(f"export produces no program for this case ({type(err).__name__}), nothing to save")


def _leaves(value):
    if isinstance(value, dict):
        return [a for k in value for a in _leaves(value[k])]
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _leaves(v)]
    return [np.asarray(value)]


def _call(module, args, kwargs):
    try:
        return "ok", module(*args, **kwargs)
    except tpe.ConstraintsExceededError:
        return "refused", None


@pytest.mark.skipif(not FILES, reason=NO_CASES)
@pytest.mark.parametrize("path", case_params(FILES))
def test_case_roundtrip(path):
    case = _load(path)
    ep = _program(case)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    loaded = tpe.load(io.BytesIO(buf.getvalue()))
    symbols = set()
    for node in loaded.graph.nodes:
        symbols |= {s for e in iter_exprs((node.args, node.kwargs, node.meta.get("shape"))) for s in e.free_symbols}
    assert symbols <= set(loaded.range_constraints)
    assert loaded.range_constraints == ep.range_constraints
    grid = case.EXPECT["grid"]
    before, after = ep.module(), loaded.module()
    for combo in itertools.product(*grid.values()):
        sizes = dict(zip(grid, combo))
        args, kwargs = case.make_inputs(**sizes)
        want, got = _call(before, args, kwargs), _call(after, args, kwargs)
        assert got[0] == want[0], sizes
        for g, w in zip(_leaves(got[1]), _leaves(want[1])):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w, err_msg=str(sizes))
    tpe.save(loaded, buf2 := io.BytesIO())
    assert buf2.getvalue() == buf.getvalue()
