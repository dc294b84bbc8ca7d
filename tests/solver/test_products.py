"""Products of sizes as sizes of their own (solver/products.py): the linear over-approximation
proves what follows for any value of the product, and never proves a false claim."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from solver import ShapeSolver
from solver.products import abstract_products
from tensorplay_export import Dim

pytestmark = pytest.mark.z3

b, t, s = sympy.symbols("b t s", integer=True)
BOUNDS = {"b": (1, 8), "t": (1, 128), "s": (0, 2048)}


def test_one_fresh_symbol_per_product_with_the_factors_range():
    ab = abstract_products([sympy.Le(2 * b * t - 1, s - 1), sympy.Eq(s, b * t)], BOUNDS)
    assert ab is not None and len(ab.products) == 1
    (p, mono), = ab.products.items()
    assert mono == b * t and ab.bounds[p] == (1, 1024)
    assert ab.exprs[1] == sympy.Eq(s, p) and ab.exprs[0] == sympy.Le(2 * p - 1, s - 1)
    assert len(ab.envelopes) == 4


def test_no_products_or_possibly_negative_factors_give_nothing():
    assert abstract_products([sympy.Le(b + t, 9)], BOUNDS) is None
    assert abstract_products([sympy.Le(b * t, 9)], {"b": (-3, 8), "t": (1, 4)}) is None


def test_envelopes_hold_at_every_point_of_the_box():
    ab = abstract_products([sympy.Le(b * t, 0)], {"b": (2, 5), "t": (3, 7)})
    (p, mono), = ab.products.items()
    for bv in range(2, 6):
        for tv in range(3, 8):
            point = {b: bv, t: tv, p: bv * tv}
            assert all(bool(e.subs(point)) for e in ab.envelopes), (bv, tv)


def _linearized(solver, guard):
    names = sorted(x.name for x in guard.free_symbols | {a for e in solver.assumptions for a in e.free_symbols})
    return solver._implied_linearized(guard, names, list(solver.assumptions))


def test_linearized_proof_is_sound():
    solver = ShapeSolver()
    bb, tt = solver.declare("b", 1, 16), solver.declare("t", 1, 16)
    assert _linearized(solver, sympy.Le(bb * tt, 100)) is None          # false at b = t = 16
    assert _linearized(solver, sympy.Le(bb * tt, 256)).status == "proved"
    assert _linearized(solver, sympy.Ge(bb * tt, bb)).status == "proved"  # McCormick: (b-1)(t-1) >= 0
    ss = solver.declare("s", 0, 4096)
    solver.assume(sympy.Eq(ss, bb * tt))
    assert _linearized(solver, sympy.Le(bb * tt - 1, ss - 1)).status == "proved"
    assert _linearized(solver, sympy.Le(ss, 255)) is None


E = 4


def _dispatch(x, eid):
    counts = np.bincount(eid, minlength=E)
    start, outs = 0, []
    for e in range(E):
        n = counts[e].item()
        outs.append(x[start:start + n])
        start = start + n
    ys = np.concatenate(outs, 0)
    tpe.check(ys.shape[0] == x.shape[0])
    out = np.empty_like(ys)
    out[np.argsort(eid, kind="stable")] = ys
    return out


def moe(x, eid):  # (b, t, d) tokens flattened to (b*t, d) before the dispatch
    return _dispatch(x.reshape(-1, x.shape[-1]), eid.reshape(-1))


def test_a_checked_fact_over_a_product_of_dims_closes_the_write_guard():
    rng = np.random.default_rng(3)
    spec = {"x": {0: Dim("b", max=8), 1: Dim("t", max=128)}, "eid": {0: Dim("b", max=8), 1: Dim("t", max=128)}}
    x = np.arange(12.0).reshape(2, 3, 2)
    ep = tpe.export(moe, x, rng.integers(0, E, (2, 3)), dynamic_shapes=spec)
    for bv, tv in ((1, 1), (2, 5), (3, 17), (8, 128)):
        xs = rng.standard_normal((bv, tv, 2))
        ids = rng.integers(0, E, (bv, tv))
        np.testing.assert_array_equal(ep.module()(xs, ids), moe(xs, ids))
