"""value_extent: the least and greatest size that conditions on one size admit (the reported
range of a Dim.AUTO root whose accepted guards are nonlinear)."""
from __future__ import annotations

import numpy as np
import sympy

import tensorplay_export as tpe
from solver import value_extent
from tensorplay_export.nn import functional as F

s = sympy.Symbol("s", integer=True, positive=True)


def _brute(conds, lower, upper):
    ok = [v for v in range(lower, upper + 1) if all(bool(c.subs(s, v)) for c in conds)]
    return ok[0], ok[-1]


def test_ends_match_a_brute_force_scan():
    for conds in ([sympy.floor(s / 2) >= 2, sympy.Eq(sympy.Mod(s, 4), 0)], [sympy.Ne(s, 4)], [s * s <= 1000],
                  [sympy.Eq(sympy.Mod(s, 3), 1), s * s >= 50]):
        example = next(v for v in range(1, 200) if all(bool(c.subs(s, v)) for c in conds))
        assert value_extent(conds, "s", 1, 200, example) == _brute(conds, 1, 200), conds


def test_no_upper_end_stays_unbounded():
    assert value_extent([sympy.Eq(sympy.Mod(s, 4), 0)], "s", 2, None, 8) == (4, None)
    assert value_extent([s * s <= 1000], "s", 1, None, 8) == (1, 31)


def test_auto_range_of_a_pooling_pyramid_is_what_the_program_admits():
    def pyramid(x):
        a = F.max_pool2d(x, 2)
        return a + F.max_pool2d(a, 2).repeat(2, axis=2).repeat(2, axis=3)

    ep = tpe.export(pyramid, np.ones((1, 1, 8, 8), np.float32),
                    dynamic_shapes={"x": {2: tpe.Dim.AUTO, 3: tpe.Dim.AUTO}})
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == [(4, np.inf), (4, np.inf)]
    x = np.random.default_rng(0).standard_normal((1, 1, 12, 4)).astype(np.float32)
    np.testing.assert_array_equal(ep.module()(x), pyramid(x))
