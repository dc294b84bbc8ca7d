"""``b ** n`` of a size n (b a Python int >= 2) is computed at run time, not pinned.

The size is ``Pow(b, n)``; capture requires it to be an int numpy can hold as a size
(``0 <= n <= 62`` for b = 2: a guard at the model's line, whose fix is the range), so the
program scales or sizes arrays by ``2**n`` at every admitted n, as eager numpy does.
Other powers keep their rules (a float base, a size base: pinned as before).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def scale(x):
    return x * 2 ** x.shape[0]


def test_power_of_two_by_a_size_is_computed_at_run_time():
    ep = tpe.export(scale, np.ones(5), dynamic_shapes={"x": {0: Dim("n", max=60)}})
    assert [str(s) for s in ep.range_constraints] == ["n"]
    for n in (1, 7, 33, 60):
        assert np.array_equal(ep.module()(np.ones(n)), scale(np.ones(n)))


def test_exponent_beyond_int64_is_a_violation_with_the_range_fix():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(scale, np.ones(5), dynamic_shapes={"x": {0: Dim("n")}})
    text = str(info.value)
    assert "n <= 62" in text and "test_power_of_size.py:" in text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, {"x": {0: Dim("n")}})
    ep = tpe.export(scale, np.ones(5), dynamic_shapes=spec)
    assert int(next(iter(ep.range_constraints.values())).upper) == 62


def test_other_bases_fit_their_own_range():
    def f(x):
        return np.zeros(3 ** (x.shape[0] - 3))

    ep = tpe.export(f, np.ones(5), dynamic_shapes={"x": {0: Dim("n", min=3, max=12)}})
    for n in (3, 4, 12):
        assert ep.module()(np.ones(n)).shape == f(np.ones(n)).shape
    with pytest.raises(tpe.ConstraintViolationError, match="n <= 42"):  # 3**39 fits int64, 3**40 does not
        tpe.export(f, np.ones(5), dynamic_shapes={"x": {0: Dim("n", min=3)}})


def test_a_size_base_is_still_pinned():
    with pytest.raises(tpe.ConstraintViolationError, match="exponent"):
        tpe.export(lambda x: x * x.shape[1] ** x.shape[0], np.ones((2, 3)),
                   dynamic_shapes={"x": {0: Dim("n", max=8), 1: Dim("m", max=8)}})


def test_generated_code_prints_the_power_of_a_size():
    import sympy

    from tensorplay_export.graph.printing import pyexpr

    n = sympy.Symbol("n", integer=True, positive=True)
    for expr in (2 ** n, 2 ** (n - 3), 3 * 5 ** (n % 4)):
        text = pyexpr(expr, {n: "n"})
        for v in (3, 4, 11):
            assert eval(text, {}, {"n": v}) == expr.subs(n, v)


def _pyramid(x, n: int):
    b, t = x.shape
    k = 2 ** n
    return x[:, :t // k * k].reshape(b, -1, k).mean(-1)


def test_a_guard_the_solver_cannot_read_pins_the_exponent_not_the_other_sizes():
    # Mod(Min(t, 2**n*(t // 2**n)), 2**n) == 0 has a size exponent z3 cannot translate: pinning n
    # leaves t // 8 * 8, which the solver decides, so t stays dynamic
    spec = {"x": {0: Dim("b"), 1: Dim("t", min=64, max=4096)}, "n": Dim("n", min=0, max=6)}
    x = np.ones((2, 64))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_pyramid, x, 3, dynamic_shapes=spec)
    text = str(info.value)
    assert "n = n was specialized to 3" in text and "x.shape[1] was specialized" not in text
    ep = tpe.export(_pyramid, x, 3, dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec))
    for t in (64, 65, 100, 4096):
        xt = np.arange(2.0 * t).reshape(2, t)
        np.testing.assert_allclose(ep.module()(xt, 3), _pyramid(xt, 3))


@pytest.mark.parametrize("use", [
    lambda x, n: np.zeros(x.shape[1] // 2 ** n + 1),
    lambda x, n: np.arange(x.shape[1] // 2 ** n),
    lambda x, n: x * (x.shape[1] // 2 ** n),
    lambda x, n: np.zeros(-(-x.shape[1] // 2 ** n)),
    lambda x, n: x[:, ::2 ** n],
])
def test_a_quotient_by_a_power_of_a_size_is_an_integer_and_saves(use):
    # sympy writes t / 2**n as t*2**(-n): a fraction, never an int (the floor was dropped and the
    # program computed float sizes); its exponent -n lies in [-64, 64], which the archive stores
    import io

    spec = {"x": {0: Dim("b"), 1: Dim("t")}, "n": Dim("n", min=0, max=6)}
    ep = tpe.export(use, np.ones((2, 64)), 3, dynamic_shapes=spec)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    loaded = tpe.load(io.BytesIO(buf.getvalue()))
    for t in (1, 7, 100, 1000):
        for n in (0, 2, 6):
            want = use(np.ones((2, t)), n)
            for program in (ep, loaded):
                got = program.module()(np.ones((2, t)), n)
                assert got.dtype == want.dtype and np.array_equal(got, want)
