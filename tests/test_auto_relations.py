"""Many Dim.AUTO relations (issue 13, benchmarks/bench_auto_relations.py): the contract is unchanged.

``ShapeEnv._maybe_replace`` no longer calls ``sympy.simplify`` for the coefficient of an AUTO
symbol, and substituting AUTO replacements into an equality no longer asks sympy to decide it
(both were the cost of this export).  The expected values below were recorded with the code
before that change (commit 7b77fe6); the program is also checked over a grid against eager
numpy in both directions.  No timing is asserted.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy
from solver import ShapeSolver

import tensorplay_export as tpe
from benchmarks import bench_auto_relations as B
from tensorplay_export.capture.entry import capture
from tensorplay_export.capture.shape_env import ShapeEnv

N = 30
PAIRS = B.strides(N)

# recorded before the change (7b77fe6): s0, s4, s16, s20 are replaced, the rest stay free
RANGES = {f"s{i}": (1, None) for i in range(N) if i not in (0, 4, 16, 20)}
REPLACEMENTS = {"s0": "floor(s1/2 + 1/2)", "s16": "floor(s1/2 + 1/2)",
                "s4": "floor(s1/2 + 1/2) + 1", "s20": "floor(s1/2 + 1/2) + 1"}


@pytest.fixture(scope="module")
def exported():
    model, args, spec = B.build(N)
    return model, tpe.export(model, *args, dynamic_shapes=spec)


def _upper(v):
    return None if v.upper in (sympy.oo, float("inf")) or str(v.upper) in ("oo", "inf") else int(v.upper)


def test_range_constraints_and_replacements_unchanged(exported):
    _model, ep = exported
    got = {str(k): (int(v.lower), _upper(v)) for k, v in ep.range_constraints.items()}
    assert got == RANGES
    model, args, spec = B.build(N)
    env = capture(model, args, {}, spec, mode="export").env
    assert {str(k): str(v) for k, v in env.replacements.items()} == REPLACEMENTS
    assert len(env.accepted) == N - 1 and not env.violations


def _grid():
    for s in (1, 2, 5):
        base = [a * s + c for a, c in PAIRS]
        yield base
        for i in range(N):
            for d in (-1, 1):
                sizes = list(base)
                sizes[i] += d
                if sizes[i] >= 1:
                    yield sizes


def _slice_lengths(sizes):
    return {len(range(c, n, a)) for n, (a, c) in zip(sizes, PAIRS)}


def test_program_admits_exactly_equal_slice_lengths_and_matches_eager(exported):
    model, ep = exported
    run = ep.module()
    admitted = refused = 0
    for sizes in _grid():
        rng = np.random.default_rng(sum(sizes))
        xs = [rng.standard_normal((B.BATCH, n, B.WIDTH)).astype(np.float32) for n in sizes]
        lengths = _slice_lengths(sizes)
        if len(lengths) == 1 and min(lengths) >= 1:  # the contract recorded before the change
            np.testing.assert_allclose(run(xs), model(xs), rtol=1e-5, atol=1e-4)
            admitted += 1
        else:
            with pytest.raises(tpe.ConstraintsExceededError):
                run(xs)
            refused += 1
    assert (admitted, refused) == (69, 112)  # both directions exercised


def test_coefficient_agrees_with_simplify():
    env = ShapeEnv(ShapeSolver())
    a = env.auto_symbol(8)
    b = env.auto_symbol(5)
    half = sympy.Rational(1, 2)
    cases = [3 * a, -2 * a, a / 2, sympy.floor(a / 2 + half), sympy.floor(a / 2 - sympy.Min(2, a) / 2 + half),
             sympy.Max(0, a - sympy.Min(3, a)), sympy.floor(a) * 2, sympy.floor(a + b) - b, a * b,
             sympy.Mod(a, 2) + 2 * sympy.floor(a / 2), sympy.Integer(0)]
    for dep in cases:
        want = sympy.simplify(dep / a) if dep != 0 else 0
        want_const = want != 0 and not want.free_symbols
        got = env._coefficient(dep, a)
        got_const = got is not None and got != 0 and not got.free_symbols
        assert got_const == want_const, dep
        if want_const:
            assert got == want, dep


@pytest.mark.parametrize("start,stop,step", [(2, None, 3), (None, 5, 2), (-3, None, 1), (1, -1, 2), (None, None, -2),
                                             (-2, 1, -1), (4, 4, 1)])
def test_slice_length_builds_min_max_unevaluated_with_the_same_canonical_form(monkeypatch, start, stop, step):
    """The slice rule no longer asks sympy's assumptions to order Min/Max arguments (issue 13's
    cost): after the range-aware canonicalization the length is the one sympy's evaluating
    constructors gave, and it is the length Python gives at every size."""
    from solver import canonicalize
    from tensorplay_export.ops import indexing
    from tensorplay_export.ops.ctx import BareEnv, ShapeCtx

    n = sympy.Symbol("n", integer=True, positive=True)

    def length_of():
        env = BareEnv({n: 9}, {n: (1, 64)}, canon=canonicalize)
        return sympy.sympify(indexing.slice_length(ShapeCtx(env, "getitem", None, []), n, start, stop, step))

    length = length_of()
    for size in range(1, 65):
        assert int(length.subs(n, size)) == len(range(size)[start:stop:step]), (size, length)
    monkeypatch.setattr(indexing, "_unevaluated", lambda kind, a, b: kind(a, b))   # sympy's evaluation
    assert length_of() == length
