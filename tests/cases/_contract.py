"""Contract checker for the acceptance cases, restated in the project's own tests.

``verify(model, inputs, spec, example, admits, grid, outcome)``: export on the
example sizes (after one refine step for a violation), then at every grid point
either the program matches eager numpy (same structure, dtype, values) or it
refuses the input with ConstraintsExceededError, exactly as ``admits`` says.
"""
from __future__ import annotations

import inspect
import itertools
from pathlib import Path

import numpy as np

import tensorplay_export as tpe


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _flat(value[k])]
    return [np.asarray(value)]


def verify(model, inputs, spec, example, admits, grid, outcome="ok"):
    """Returns the final program; asserts the whole contract point by point."""
    args, kwargs = inputs(**example)
    if outcome == "violation":
        try:
            tpe.export(model, *args, dynamic_shapes=spec, **kwargs)
        except tpe.ConstraintViolationError as err:
            text = str(err)
        else:
            raise AssertionError("export accepted a model that violates the declared shapes")
        assert "Constraints violated" in text and "Suggested fixes:" in text
        source = inspect.getsourcefile(model if inspect.isfunction(model) else type(model))
        assert "counterexample" in text and f"{Path(source).name}:" in text, text
        spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(model, *args, dynamic_shapes=spec, **kwargs)
    mod = ep.module()
    names = list(grid)
    for combo in itertools.product(*(grid[n] for n in names)):
        sizes = dict(zip(names, combo))
        a, k = inputs(**sizes)
        if admits(**sizes):
            got, want = mod(*a, **k), model(*a, **k)
            for g, w in zip(_flat(got), _flat(want)):
                assert g.shape == w.shape and g.dtype == w.dtype, (sizes, g.shape, w.shape, g.dtype, w.dtype)
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(sizes))
        else:
            try:
                mod(*a, **k)
            except tpe.ConstraintsExceededError:
                continue
            raise AssertionError(f"{sizes}: accepted but the contract must refuse it")
    return ep
