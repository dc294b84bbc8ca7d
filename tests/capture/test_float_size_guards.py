"""Float arithmetic on sizes is decided and computed as Python runs it (IEEE-754 binary64,
round to nearest even, Python's order of operations): solver.floats.

Each model is exported over a bounded range and run at EVERY size of it: a size the program
admits must give eager numpy's output, and the admitted sizes must be exactly those where
eager takes the example's path (computed here with Python floats), including the sizes where
float rounding differs from exact arithmetic (4 * 0.3 / 0.1 is 11.999999999999998,
3 * 0.1 * 3 is 0.9000000000000001).
"""
from __future__ import annotations

import math
import os
import tempfile

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from solver import ShapeSolver, evaluate
from solver.floats import FConst, FDiv, FMul
from tensorplay_export import Dim

TOP = 64


def vec(n):
    return np.arange(1.0, n + 1.0)


def branch_model(cond):
    def model(x):
        return x * 2 if cond(x.shape[0]) else x - 1
    return model


# name -> (model, example size, the sizes that take the example's path (None: all of them))
BRANCHES = {
    "n * 0.3 / 0.1 < 12": (lambda n: n * 0.3 / 0.1 < 12, 7),  # 4 * 0.3 / 0.1 < 12 holds in floats
    "n * 0.1 * 3 > 0.9": (lambda n: n * 0.1 * 3 > 0.9, 2),    # 3 * 0.1 * 3 > 0.9 holds in floats
    "n / 3 < 4.7": (lambda n: n / 3 < 4.7, 5),
    "n / 3 == 1 / 3 * n": (lambda n: n / 3 == 1 / 3 * n, 1),  # true at some sizes only
    "n ** 0.5 > 4.2": (lambda n: n ** 0.5 > 4.2, 30),
    "n * 0.1 + n * 0.2 < n * 0.3": (lambda n: n * 0.1 + n * 0.2 < n * 0.3, 4),
    "n * 0.1 + n * 0.2 == n * 0.3": (lambda n: n * 0.1 + n * 0.2 == n * 0.3, 10),
    "(n + 0.1) * 3 >= 30.3": (lambda n: (n + 0.1) * 3 >= 30.3, 20),
}


def admitted(ep, model, make):
    """The sizes in [1, TOP] the program runs at; each run's output is checked against eager."""
    ok = []
    for k in range(1, TOP + 1):
        try:
            got = ep.module()(make(k))
        except tpe.ConstraintsExceededError:
            continue
        want = model(make(k))
        assert got.shape == want.shape and got.dtype == want.dtype, k
        assert np.array_equal(got, want), (k, got, want)
        ok.append(k)
    return ok


@pytest.mark.parametrize("name", list(BRANCHES))
def test_a_float_branch_admits_exactly_the_sizes_where_python_takes_it(name):
    cond, example = BRANCHES[name]
    model = branch_model(cond)
    ep = tpe.export(model, vec(example), dynamic_shapes=({0: Dim.AUTO(max=TOP)},))
    path = [k for k in range(1, TOP + 1) if cond(k) == cond(example)]
    got = admitted(ep, model, vec)
    # the guard is decided on Python's floats: no size of the other path is admitted (a wrong
    # result), and an interval of the example's path is (at least the example)
    assert set(got) <= set(path) and example in got
    if name in ("n * 0.3 / 0.1 < 12", "n * 0.1 * 3 > 0.9", "n / 3 < 4.7", "n ** 0.5 > 4.2",
                "(n + 0.1) * 3 >= 30.3"):
        assert got == path  # a monotone guard: its sizes are one interval, all admitted


def test_the_suggested_fix_closes_in_one_step_and_is_right_in_floats():
    # 4 * 0.3 / 0.1 is 11.999999999999998 < 12: the branch of n = 7 starts at 5, not at 4
    model = branch_model(lambda n: n * 0.3 / 0.1 < 12)
    spec = {"x": {0: Dim("n", max=40)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, vec(7), dynamic_shapes=spec)
    text = str(info.value)
    # the guard reads in Python's order, and its counterexample is where rounding decides
    assert "n * 0.3 / 0.1 >= 12" in text and "counterexample: n = 4" in text and "min=5" in text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(model, vec(7), dynamic_shapes=spec)  # one step
    assert admitted(ep, model, vec) == list(range(5, 41))


def test_the_fix_of_the_mirror_case_does_not_admit_a_size_of_the_other_branch():
    # 3 * 0.1 * 3 is 0.9000000000000001 > 0.9: n = 3 takes the other branch, so n <= 2
    model = branch_model(lambda n: n * 0.1 * 3 > 0.9)
    spec = {"x": {0: Dim("n", max=40)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, vec(2), dynamic_shapes=spec)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, vec(2), dynamic_shapes=spec)
    assert admitted(ep, model, vec) == [1, 2]
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(vec(3))


SIZES = {  # int() of a size pins it, as int(n) does (the name int cannot be replaced: type(v) is int)
    "math.trunc(n * 0.5)": lambda n: math.trunc(n * 0.5),
    "math.trunc(n * 0.3)": lambda n: math.trunc(n * 0.3),
    "math.ceil(n * 1.5)": lambda n: math.ceil(n * 1.5),
    "math.ceil(n * 0.1)": lambda n: math.ceil(n * 0.1),
    "math.floor(n * 0.7 + 0.2)": lambda n: math.floor(n * 0.7 + 0.2),
    "round(n / 3 * 0.3)": lambda n: round(n / 3 * 0.3),
}


@pytest.mark.parametrize("name", list(SIZES))
def test_a_size_rounded_from_a_float_is_python_rounding_at_every_size(name):
    size = SIZES[name]

    def model(x):
        return x[: size(x.shape[0])] * 3

    ep = tpe.export(model, vec(9), dynamic_shapes=({0: Dim("n", max=TOP)},))  # no pin, no violation
    assert admitted(ep, model, vec) == list(range(1, TOP + 1))


def test_float_size_scalar_in_an_op_is_computed_in_pythons_order():
    def model(x):
        n = x.shape[0]
        return x * (n * 0.1 * 3) + (n * 0.1 + n * 0.2)

    ep = tpe.export(model, vec(5), dynamic_shapes=({0: Dim("n", max=TOP)},))
    assert admitted(ep, model, vec) == list(range(1, TOP + 1))  # bit-identical at every size


def test_a_program_with_float_guards_saves_and_loads():
    def model(x):
        n = x.shape[0]
        y = x * (n * 0.1 * 3)
        if n * 0.1 * 3 > 0.9:
            y = y + 1
        return y[: math.floor(n * 0.3)]

    ep = tpe.export(model, vec(7), dynamic_shapes=({0: Dim.AUTO(max=TOP)},))
    path = os.path.join(tempfile.mkdtemp(), "floats.tpe")
    tpe.save(ep, path)
    loaded = tpe.load(path)
    assert str(loaded.range_constraints) == str(ep.range_constraints)
    assert admitted(loaded, model, vec) == list(range(3, TOP + 1))  # 3 * 0.1 * 3 > 0.9 in floats


def test_the_solver_decides_float_guards_in_float_arithmetic():
    s = ShapeSolver()
    n = s.declare("n", 4, 40, example=7)
    ratio = FDiv(FMul(n, sympy.Float(0.3)), sympy.Float(0.1))
    assert evaluate(ratio, {n: 4}) == 4 * 0.3 / 0.1 == 11.999999999999998
    v = s.implies(ratio >= 12)
    assert v.refuted and v.counterexample == {"n": 4}  # exact arithmetic would prove it
    s.assume(n >= 5)
    assert s.implies(ratio >= 12).proved
    unbounded = ShapeSolver()
    m = unbounded.declare("m", 1)
    # fails from some size on: the first one is found by bisection over the unbounded range
    third = FMul(FDiv(m, sympy.Integer(3)), sympy.Integer(3))
    v = unbounded.implies(sympy.Lt(third, 2 ** 60))
    k = v.counterexample["m"]
    assert v.refuted and (k / 3) * 3 >= 2 ** 60 > ((k - 1) / 3) * 3  # Python's int / int, then * 3
    product = FMul(FMul(m, sympy.Float(0.1)), sympy.Integer(3))
    v = unbounded.satisfiable(sympy.Gt(product, FConst(sympy.Float(0.9))) & sympy.Le(m, 3))
    assert v.proved and v.counterexample == {"m": 3}


def test_int_of_a_float_size_pins_it_as_int_of_a_size_does():
    model = lambda x: x[: int(x.shape[0] * 0.3)]  # noqa: E731
    with pytest.raises(tpe.ConstraintViolationError, match=r"int\(\).*math.trunc"):
        tpe.export(model, vec(9), dynamic_shapes=({0: Dim("n", max=TOP)},))
    ep = tpe.export(model, vec(9), dynamic_shapes=({0: Dim.AUTO(max=TOP)},))
    assert admitted(ep, model, vec) == [9]


def test_dtype_float_and_int_in_model_code_are_numpys():
    def model(x):
        n = x.shape[0]
        return x + np.zeros(n, dtype=float) + np.ones(n, dtype=int)

    ep = tpe.export(model, vec(4), dynamic_shapes=({0: Dim("n", max=9)},))
    assert admitted(ep, model, vec) == list(range(1, 10))


def test_arange_of_the_floor_of_a_float_size_is_dynamic_and_exact():
    """nn.Upsample(scale_factor=1.3) and np.arange(math.floor(n * 1.3)): the bound is an integer."""
    import math

    from tensorplay_export import nn

    def f(x):
        return np.arange(math.floor(x.shape[0] * 1.3)) + x.sum()

    ep = tpe.export(f, np.ones(9), dynamic_shapes={"x": {0: tpe.Dim.AUTO}})
    for n in range(1, 65):
        x = np.ones(n)
        np.testing.assert_array_equal(ep.module()(x), f(x))
    up = nn.Upsample(scale_factor=1.3)
    img = np.ones((1, 2, 7, 9), np.float32)
    ep = tpe.export(up, img, dynamic_shapes={"x": {2: tpe.Dim.AUTO, 3: tpe.Dim.AUTO}})
    for h, w in ((3, 4), (7, 9), (13, 10)):
        x = np.random.default_rng(h).standard_normal((1, 2, h, w)).astype(np.float32)
        np.testing.assert_array_equal(ep.module()(x), up(x))


@pytest.mark.parametrize("cond", [
    lambda n: math.sqrt(n) * math.sqrt(n) < n,
    lambda n: math.sqrt(n) ** 2 == n,
    lambda n: math.sqrt(2 * n) == math.sqrt(2) * math.sqrt(n),
    lambda n: n / math.sqrt(n) == math.sqrt(n),
], ids=["product", "square", "split root", "quotient"])
def test_roots_of_sizes_are_never_simplified_into_a_wrong_branch(cond):
    """sympy's algebra is exact (sqrt(n)*sqrt(n) is n to it); Python's rounded roots are not: such a
    comparison pins, and the program equals eager wherever it admits a size."""
    def model(x):
        return x * 2 if cond(x.shape[0]) else x - 1

    ep = tpe.export(model, np.ones(11), dynamic_shapes={"x": {0: tpe.Dim.AUTO}})
    for n in range(1, 41):
        x = np.ones(n)
        try:
            got = ep.module()(x)
        except tpe.ConstraintsExceededError:
            continue
        np.testing.assert_array_equal(got, model(x))


def test_a_float_guard_that_is_not_monotone_is_swept_over_a_long_range():
    """(n + 0.1) - n > 0.05 and n / 10 * 10 == n hold at every n <= 10**6 (numpy's binary64 sweep,
    confirmed by the one evaluator); a guard failing at a single size deep in the range is caught."""
    def holds_everywhere(x):
        n = x.shape[0]
        return x * 2 if (n + 0.1) - n > 0.05 and n / 10 * 10 == n else x

    ep = tpe.export(holds_everywhere, np.ones(7), dynamic_shapes={"x": {0: tpe.Dim("n", max=10**6)}})
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(1, 10**6)]

    from solver import ShapeSolver
    from solver.floats import FAdd, FConst, FMul, FSub

    solver = ShapeSolver()
    n = solver.declare("n", 1, 2 * 10**6)
    wiggle = sympy.Ne(FMul(FSub(FAdd(n, sympy.Float(0.1)), n), sympy.Float(10.0)), FConst(sympy.Float(1.0)))
    v = solver.implies(wiggle)
    if v.status == "refuted":  # a size where ((n + 0.1) - n) * 10 is exactly 1.0
        k = v.counterexample["n"]
        assert ((k + 0.1) - k) * 10.0 == 1.0
    else:
        assert v.status == "proved"
        assert all(((k + 0.1) - k) * 10.0 != 1.0 for k in range(1, 2 * 10**6 + 1, 997))
