"""No printed fix refuses one of the user's own example sets (``AdditionalInputs``).

A fix is computed around the export example; with several example sets, a fix that refuses one
of them (``x_dim0 = 4`` beside a set with ``x.shape[0] == 1``) gives, after one refine step, a
program that refuses the user's own input, and the refined spec (a plain dict) no longer makes
export check the sets.  The search now contains every set (a box starts its ends at them), a
fix that still refuses one is dropped, and the bullet says which set and why.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from solver import suggest_fixes

pytestmark = pytest.mark.z3

a, b, n = sympy.symbols("a b n", integer=True, positive=True)


def broadcast_against_static(x, y):
    return x * y


def test_a_specialization_that_refuses_an_example_set_is_not_offered():
    sets = tpe.AdditionalInputs()
    sets.add((np.ones((1, 3)), np.ones((4, 3))))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(broadcast_against_static, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=sets)
    err = info.value
    assert err.fixes == [] and "Suggested fixes:" not in str(err)
    [v] = err.violations
    assert v.unfixable is not None and "example set 0" in v.unfixable and "x_dim0 = 1" in v.unfixable
    with pytest.raises(ValueError, match="no suggested fixes to apply"):
        tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), sets)


def test_without_other_sets_the_same_guard_keeps_its_fix():
    spec = {"x": {0: tpe.Dim.DYNAMIC}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(broadcast_against_static, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=spec)
    assert info.value.fixes == ["x_dim0 = 4"]


# -- the solver's side: suggest_fixes(examples=...) -------------------------------------------------
def test_a_box_contains_every_example_set():
    alone = suggest_fixes([a * b <= 80], {"a": (1, None), "b": (1, None)}, {"a": 6, "b": 5}, relations="linear")
    sets = [{"a": 2, "b": 12}]
    fs = suggest_fixes([a * b <= 80], {"a": (1, None), "b": (1, None)}, {"a": 6, "b": 5}, relations="linear",
                       examples=sets)
    assert fs.verified and fs.unfixable == [] and fs.fixes != alone.fixes
    upper = {f.name: f.upper for f in fs.fixes}
    assert upper["a"] >= 6 and upper["b"] >= 12 and upper["a"] * upper["b"] <= 80


def test_a_linear_bound_box_contains_every_example_set():
    fs = suggest_fixes([a + b <= 20], {"a": (1, None), "b": (1, None)}, {"a": 5, "b": 5}, relations="linear",
                       examples=[{"a": 1, "b": 14}])
    upper = {f.name: f.upper for f in fs.fixes}
    assert fs.verified and upper["b"] >= 14 and upper["a"] >= 5 and upper["a"] + upper["b"] <= 20


def test_no_box_holds_every_example_set_so_none_is_offered_and_the_reason_says_so():
    fs = suggest_fixes([a * b <= 30], {"a": (1, None), "b": (1, None)}, {"a": 6, "b": 5}, relations="linear",
                       examples=[{"a": 2, "b": 12}])
    assert fs.fixes == [] and len(fs.unfixable) == 1
    assert "every example set (a in [2, 6], b in [5, 12])" in fs.unfixable[0].reason


def test_a_lattice_refusing_an_example_set_is_dropped_and_named():
    guard = sympy.Eq(sympy.Mod(n, 2), 1)
    kept = suggest_fixes([guard], {"n": (1, None)}, {"n": 5}, examples=[{"n": 9}])
    assert kept.lines == ["_n = Dim('_n', min=0)", "n = 2*_n + 1"]
    dropped = suggest_fixes([guard], {"n": (1, None)}, {"n": 5}, examples=[{"n": 8}])
    assert dropped.fixes == [] and "example set 0" in dropped.unfixable[0].reason


def test_a_range_with_a_gap_between_the_sets_is_dropped():
    # n != 5 at n = 3: the range n <= 4 refuses the set with n = 8, which the guard admits
    fs = suggest_fixes([sympy.Ne(n, 5)], {"n": (1, None)}, {"n": 3}, examples=[{"n": 8}])
    assert fs.fixes == [] and "refuses example set 0 (n = 8)" in fs.unfixable[0].reason
