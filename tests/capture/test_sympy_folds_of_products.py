"""sympy 1.14 folds ``Mod`` and ``floor`` of products of sums wrongly (``Mod((2*t + 1)*(4*t + 2), 6)``
is 0, though 50 % 6 is 2 at t = 2; ``floor((2*n + 2)*(2*n + 6)/6)`` stays the fraction): capture
expands such dividends first and checks a fold against Python at a few sizes, so no such fold
becomes a wrong branch, a dropped check or a shape that is no integer."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.symbolic import _floordiv, sym_mod

t = sympy.Symbol("t", integer=True, positive=True)


@pytest.mark.parametrize("dividend, divisor", [
    ((2 * t + 1) * (4 * t + 2), 6),
    ((6 * t + 5) ** 4 + 3, 6),
    ((2 * t + 2) * (2 * t + 6), 6),
    (t * (t + 1) * (t + 2), 4),
])
def test_remainders_and_quotients_of_products_equal_pythons(dividend, divisor):
    mod, quot = sym_mod(dividend, divisor), _floordiv(dividend, divisor)
    for v in range(1, 40):
        exact = int(dividend.subs(t, v))
        assert int(mod.subs(t, v)) == exact % divisor
        assert int(quot.subs(t, v)) == exact // divisor


def _branch(x):
    n = x.shape[0] + 1
    if (n * (2 * n)) % 6 == 0:
        return x * 2.0
    return x * 3.0


def test_a_branch_on_the_remainder_of_a_product_is_a_guard_not_a_wrong_branch():
    # exported at a = 2 (n = 3: the remainder is 0), the branch holds for a = 2 mod 3 only
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_branch, np.ones(2), dynamic_shapes={"x": {0: Dim("a", max=50)}})
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), {"x": {0: Dim("a", max=50)}})
    ep = tpe.export(_branch, np.ones(2), dynamic_shapes=spec)
    for a in (2, 5, 8, 47):
        np.testing.assert_array_equal(ep.module()(np.arange(float(a))), _branch(np.arange(float(a))))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.arange(3.0))  # a = 3: the other branch, outside the refined contract


def _quotient_shape(x):
    n = x.shape[0]
    return np.ones(((2 * n + 2) * (2 * n + 6)) // 6)


@pytest.mark.parametrize("example", [2, 4])
def test_the_quotient_of_a_product_is_an_integer_size(example):
    ep = tpe.export(_quotient_shape, np.ones(example), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    for n in range(1, 12):
        assert ep.module()(np.ones(n)).shape == _quotient_shape(np.ones(n)).shape


def _fourth_power(x):
    a = x.shape[0]
    tpe.check((a ** 4 + 3) % 6 == 4)
    return x.sum()


def test_a_lattice_fix_of_a_polynomial_remainder_applies_in_one_step():
    spec = {"x": {0: Dim("a", max=20)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_fourth_power, np.ones(5), dynamic_shapes=spec)
    ep = tpe.export(_fourth_power, np.ones(5),
                    dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec))
    for a in (5, 11, 17):
        assert float(ep.module()(np.ones(a))) == a
