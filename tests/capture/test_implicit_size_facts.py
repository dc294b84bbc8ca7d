"""Facts every real input satisfies beyond the declared ranges (capture.shape_env's docstring):
sizes never exceed sys.maxsize, an input axis expression is never negative, and a value read
from an integer array lies in its dtype's range.  Guards they imply are proved, never reported."""
import sys

import numpy as np
import pytest
import sympy
from solver import ShapeSolver

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.shape_env import SIZE_MAX, ShapeEnv


def test_size_max_is_numpys_intp_limit():
    assert SIZE_MAX == sys.maxsize == np.iinfo(np.intp).max


def test_unbounded_size_is_known_to_fit_intp_without_a_record():
    env = ShapeEnv(ShapeSolver())
    n = env.create_symbol("n", 1, None, 4, "named")
    env.guard(sympy.Le(n, SIZE_MAX), "shape", "np.int64 of a size")
    assert not env.violations
    # the fact is applied for that query only: the declared range stays unbounded
    assert env.solver.ranges["n"] == (1, None)


def test_a_guard_false_below_size_max_keeps_its_counterexample():
    env = ShapeEnv(ShapeSolver())
    n = env.create_symbol("n", 1, None, 4, "named")
    verdict = env.implies(sympy.Le(n, 100))
    assert verdict.status == "refuted"
    assert 100 < verdict.counterexample["n"] <= SIZE_MAX


@pytest.mark.parametrize("use", [
    lambda x: x + np.int64(x.shape[0]),
    lambda x: x + np.intp(x.shape[0]),
    lambda x: x + (x.shape[0] + np.int64(1)),
    lambda x: x.sum() + np.full(3, x.shape[0], dtype=np.int64),
], ids=["int64", "intp", "plus_int64", "full_int64"])
def test_int64_of_an_unbounded_size_exports_without_a_max(use):
    ep = tpe.export(use, np.ones(5), dynamic_shapes={"x": {0: Dim("n")}})
    assert ep.range_constraints[next(iter(ep.range_constraints))].upper == float("inf")
    x = np.ones(9)
    np.testing.assert_array_equal(ep.module()(x), use(x))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.uint64])
def test_value_read_from_an_integer_array_fits_its_own_dtype(dtype):
    def model(x, k):
        return x + dtype(k.item())

    ep = tpe.export(model, np.ones(3), np.array(2, dtype=dtype), dynamic_shapes={"x": {0: Dim("n")}, "k": None})
    k = np.array(np.iinfo(dtype).max // 2, dtype=dtype)
    np.testing.assert_array_equal(ep.module()(np.ones(4), k), model(np.ones(4), k))


def test_dtype_range_is_a_fact_only_for_values_read_from_data():
    env = ShapeEnv(ShapeSolver())
    u = env.unbacked_symbol(None, 3, "tpe.item_size", None, dtype=np.int8)
    assert env.implies(sympy.Le(u, 127)).status == "proved"
    assert env.implies(sympy.Le(u, 126)).status == "refuted"
    v = env.unbacked_symbol(None, 3, "tpe.item_size", None)
    assert env.implies(sympy.Le(v, 127)).status == "refuted"
    flag = env.unbacked_symbol(None, 1, "tpe.item_size", None, dtype=np.bool_)
    assert env.implies(sympy.Le(flag, 1)).status == "proved"


def _two_roots(model, z_len=4):
    a, b = Dim("a", max=20), Dim("b", max=20)
    spec = {"x": {0: a}, "y": {0: b}, "z": {0: a - b}}
    return tpe.export(model, np.ones(7), np.ones(3), np.ones(z_len), dynamic_shapes=spec)


@pytest.mark.parametrize("model", [
    lambda x, y, z: x[y.shape[0]:] + z,
    lambda x, y, z: np.zeros(x.shape[0] - y.shape[0]) + z,
    lambda x, y, z: np.zeros(z.shape[0] + 1)[1:] + z,
    lambda x, y, z: np.zeros(2 * x.shape[0] - y.shape[0])[:z.shape[0]] + z,
], ids=["slice", "zeros", "plus_one", "two_a_minus_b"])
def test_axis_over_two_roots_is_known_nonnegative(model):
    ep = _two_roots(model)
    # a real input the old box fix (a >= 7) refused
    x, y, z = np.ones(3), np.ones(2), np.ones(1)
    np.testing.assert_array_equal(ep.module()(x, y, z), model(x, y, z))


def test_axis_fact_is_assumed_once_per_expression():
    env = ShapeEnv(ShapeSolver())
    a = env.create_symbol("a", 1, 20, 7, "named")
    b = env.create_symbol("b", 1, 20, 3, "named")
    assert env.implies(a - b >= 0).status == "refuted"
    env.assume_axis(a - b)
    env.assume_axis(a - b)
    env.assume_axis(2 * a + 1)  # implied by a's range: nothing assumed
    assert env.implies(sympy.Eq(sympy.Max(0, a - sympy.Min(a, b)), a - b)).status == "proved"
    assert len(env.solver.assumptions) == 1
