"""A violation's counterexample is a point where the eager model really behaves differently.

Each model below is exported with named dims; the error's counterexample must name every
size the failure depends on, and eager numpy run at it (the sizes it does not name at the
example's) must fail where the guard came from broadcasting.  Sizes 0 and 1 are avoided
when the ranges allow others (numpy broadcasts a size-1 axis, so ``b = 1, b2 = 2`` violates
``b == b2`` but runs fine); when the ranges allow nothing else the witness still exists.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def _sum_plus(x, y):
    return x.sum(axis=1) + y             # (b, s, 4) -> (b, 4) with (b2, 4)


def _add_sum(x, y):
    return (x + y).sum(axis=1)           # (n, 4) with (m, 4)


def _matmul_bias(x, w, bias):
    return x @ w + bias                  # (n, k) @ (k, h) + (h2,)


def _setitem(x, y):
    z = x.copy()
    z[: y.shape[0]] = y                  # a slot of min(n, m) rows takes y's m rows one way
    return z


CASES = [
    # (model, example shapes by input, spec, symbols -> input axis)
    (_sum_plus, [(2, 10, 4), (2, 4)], {"x": {0: Dim("b", max=8), 1: Dim("s", max=100)}, "y": {0: Dim("b2", max=8)}},
     {"b": (0, 0), "s": (0, 1), "b2": (1, 0)}),
    (_add_sum, [(5, 4), (1, 4)], {"x": {0: Dim("n", max=10)}, "y": {0: Dim("m", max=10)}},
     {"n": (0, 0), "m": (1, 0)}),
    (_add_sum, [(2, 4), (1, 4)], {"x": {0: Dim("n", max=10)}, "y": {0: Dim("m", max=10)}},
     {"n": (0, 0), "m": (1, 0)}),
    (_add_sum, [(3, 4), (3, 4)], {"x": {0: Dim("n", max=10)}, "y": {0: Dim("m", max=10)}},
     {"n": (0, 0), "m": (1, 0)}),
    (_matmul_bias, [(3, 5), (5, 6), (6,)], {"x": {0: Dim("n", max=9)}, "w": {1: Dim("h", max=9)},
                                           "bias": {0: Dim("h2", max=9)}},
     {"n": (0, 0), "h": (1, 1), "h2": (2, 0)}),
    (_setitem, [(5, 4), (3, 4)], {"x": {0: Dim("n", max=10)}, "y": {0: Dim("m", max=10)}},
     {"n": (0, 0), "m": (1, 0)}),
]


def _inputs(shapes, assignment, where):
    shapes = [list(s) for s in shapes]
    for name, value in assignment.items():
        i, axis = where[name]
        shapes[i][axis] = value
    return [np.ones(s, np.float32) for s in shapes]


@pytest.mark.parametrize("model, shapes, spec, where", CASES, ids=lambda v: getattr(v, "__name__", None))
def test_eager_fails_at_the_counterexample(model, shapes, spec, where):
    args = [np.ones(s, np.float32) for s in shapes]
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=spec)
    for v in info.value.violations:
        cex = v.counterexample
        assert cex is not None and set(v.names) <= set(cex), (v.guard_text, cex)
        assert all(value >= 2 for value in cex.values()), cex
        with pytest.raises(ValueError, match="broadcast"):
            model(*_inputs(shapes, cex, where))
        assert f"counterexample: {', '.join(f'{k} = {cex[k]}' for k in cex)}" in str(info.value)
    # the fix still works in one step, and the program matches eager at other sizes
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, *args, dynamic_shapes=refined)
    for scale in (2, 3):
        sizes = {n: min(int(r.upper), scale * (where[n][1] + 1)) for n, r in
                 ((str(s), r) for s, r in ep.range_constraints.items()) if n in where}
        call = _inputs(shapes, sizes, where)
        try:
            out = ep.module()(*call)
        except tpe.ConstraintsExceededError:
            continue
        np.testing.assert_array_equal(out, model(*call))


def test_the_counterexample_names_the_size_the_guard_was_taken_against():
    # m == 1 came from broadcasting m against n: the witness says n too, where m != n
    x, y = np.ones((2, 4), np.float32), np.ones((1, 4), np.float32)
    spec = {"x": {0: Dim("n", max=10)}, "y": {0: Dim("m", max=10)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_add_sum, x, y, dynamic_shapes=spec)
    [v] = info.value.violations
    assert v.guard_text == "m == 1"
    assert v.counterexample == {"m": 3, "n": 2}  # the example n = 2 kept, m one step past it


def test_sizes_below_two_when_the_ranges_allow_nothing_else():
    x, y = np.ones((1, 4), np.float32), np.ones((1, 4), np.float32)
    spec = {"x": {0: Dim("n", max=1)}, "y": {0: Dim("m", max=2)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_add_sum, x, y, dynamic_shapes=spec)
    [v] = info.value.violations
    assert v.counterexample == {"m": 2, "n": 1}  # numpy broadcasts here: the only point the ranges allow
