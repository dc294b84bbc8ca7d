"""canonicalize: each rewrite rule gives the expected readable form, and z3
proves the rewrite sound under the ranges (STYLE E11); a seeded fuzz test
checks random guards the same way."""
from __future__ import annotations

import itertools
import math
import random

import pytest
import sympy
import z3

from solver import Translator, bounds, canonicalize
from solver.intervals import decide
from solver.numeric import value

P = dict(integer=True, positive=True)
s, b, t = sympy.symbols("s b t", **P)
n0 = sympy.Symbol("n0", integer=True, nonnegative=True)


def assert_sound(orig, new, ranges):
    """z3 proves ``orig`` and ``new`` agree for every assignment inside ``ranges``; when z3 cannot
    tell within its timeout, every point of the box says it (a box too large to enumerate fails)."""
    tr = Translator()
    solver = z3.Solver()
    solver.set("timeout", 20000)  # floors, Mod and products: z3's time varies with its context's history
    for sym, (lo, hi) in ranges.items():
        v = tr.var(sym.name)
        if lo is not None:
            solver.add(v >= lo)
        if hi is not None:
            solver.add(v <= hi)
    zo, zn = tr(orig), tr(new)
    solver.add(zo != zn)
    verdict = solver.check()
    if verdict == z3.unknown:
        _agree_everywhere(orig, new, ranges, solver.reason_unknown())
        return
    assert verdict == z3.unsat, f"{orig} -> {new} unsound: {solver.model()}"


def _agree_everywhere(orig, new, ranges, reason):
    """``orig`` and ``new`` have the same exact value at every integer point of ``ranges``."""
    if any(lo is None or hi is None for lo, hi in ranges.values()) or \
            math.prod(hi - lo + 1 for lo, hi in ranges.values()) > 10 ** 6:
        pytest.fail(f"z3 could not decide whether {orig} -> {new} is sound ({reason}), and {ranges} is "
                    f"too large a box to check point by point")
    names = [sym.name for sym in ranges]
    for point in itertools.product(*(range(lo, hi + 1) for lo, hi in ranges.values())):
        env = dict(zip(names, point))
        assert value(orig, env) == value(new, env), f"{orig} -> {new} unsound at {env}"


CASES = [
    # (name, expr, ranges, expected)
    ("min_dominated_tautology", sympy.Eq(sympy.Min(128 * s, 512 * s), 128 * s), {s: (1, 2048)}, sympy.true),
    ("max_dominated", sympy.Eq(sympy.Max(1, 16 * sympy.floor((t + 63) / 64)), 16 * sympy.floor((t + 63) / 64)),
     {t: (64, 128)}, sympy.true),
    ("eq_min_to_le", sympy.Eq(s, sympy.Min(512, s)), {s: (1, 1024)}, s <= 512),
    ("eq_max_to_ge", sympy.Eq(sympy.Max(s, 8), s), {s: (1, 1024)}, s >= 8),
    ("eq_min_dominated_away", sympy.Eq(s, sympy.Min(512, s)), {s: (1, 256)}, sympy.true),
    ("cancel_factors_to_mod", sympy.Eq(3 * b * s, 6 * b * sympy.floor(s / 2)), {b: (1, 16), s: (1, 64)},
     sympy.Eq(sympy.Mod(s, 2), 0)),
    ("mod_pattern", sympy.Eq(s - 2 * sympy.floor(s / 2), 0), {s: (1, 64)}, sympy.Eq(sympy.Mod(s, 2), 0)),
    ("constant_factor", sympy.Eq(6 * b, 24), {b: (1, 64)}, sympy.Eq(b, 4)),
    ("positive_factor_inequality", b * s > 4 * b, {b: (1, 16), s: (1, 64)}, s > 4),
    ("negative_factor_flips", -2 * s < -8, {s: (1, 64)}, s > 4),
    ("rational_content", sympy.Eq(s / 2, 3), {s: (1, 64)}, sympy.Eq(s, 6)),
    ("interval_true", s <= 2048, {s: (1, 1024)}, sympy.true),
    ("interval_false", s > 2048, {s: (1, 1024)}, sympy.false),
    ("ne_kept", sympy.Ne(s, 512), {s: (1, 1024)}, sympy.Ne(s, 512)),
    ("relation_between_dims", sympy.Eq(2 * b - 2 * s, 0), {b: (1, 16), s: (1, 64)}, sympy.Eq(b, s)),
    ("expression_min", sympy.Min(s, s + 3, 600), {s: (1, 512)}, s),
    # dominance the intervals alone miss: floors relaxed to their bounds (b // 2 <= b)
    ("min_floor_half", sympy.Min(b, sympy.floor(b / 2)), {b: (1, 50)}, sympy.floor(b / 2)),
    ("max_floor_half_shifted", sympy.Max(s - 3, sympy.floor((s - 3) / 2)), {s: (3, 50)}, s - 3),
    ("min_even_part", sympy.Min(s, 2 * sympy.floor(s / 2)), {s: (1, 50)}, 2 * sympy.floor(s / 2)),
    ("broadcast_floor_guard", sympy.Eq(sympy.Min(s, sympy.floor(b / 2)), sympy.Min(b, sympy.floor(b / 2))),
     {s: (1, 20), b: (1, 20)}, sympy.Le(sympy.floor(b / 2), s, evaluate=False)),
    # constants move across a relation (readable bounds and relations)
    ("constant_moves_le", sympy.Le(s - 1, 511, evaluate=False), {s: (1, 1024)}, s <= 512),
    ("constant_moves_ge", sympy.Ge(s - 1, 1, evaluate=False), {s: (1, 1024)}, s >= 2),
    ("constant_left_flips", sympy.Ge(512 - s, 0, evaluate=False), {s: (1, 1024)}, s <= 512),
    ("constant_moves_eq_two_dims", sympy.Eq(s - 1, b, evaluate=False), {s: (1, 100), b: (1, 100)},
     sympy.Eq(s, b + 1)),
    ("constant_stays_positive", sympy.Le(s - b + 1, 0, evaluate=False), {s: (1, 100), b: (1, 100)},
     sympy.Le(s + 1, b, evaluate=False)),
    ("constant_moves_lt_product", sympy.Lt(b * s - 1, 511, evaluate=False), {s: (1, 1024), b: (1, 4)},
     b * s < 512),
    ("constant_moves_mod", sympy.Eq(sympy.Mod(s, 3) - 1, 0, evaluate=False), {s: (1, 64)},
     sympy.Eq(sympy.Mod(s, 3), 1)),
]


@pytest.mark.parametrize("name, expr, ranges, expected", CASES, ids=[c[0] for c in CASES])
def test_rule_gives_readable_form(name, expr, ranges, expected):
    assert canonicalize(expr, ranges) == expected


@pytest.mark.z3
@pytest.mark.parametrize("name, expr, ranges, expected", CASES, ids=[c[0] for c in CASES])
def test_rule_is_sound_under_ranges(name, expr, ranges, expected):
    assert_sound(expr, canonicalize(expr, ranges), ranges)


def test_zero_size_dims_keep_the_factor():
    # with min=0 the factor n0 may be 0, so it must not be cancelled
    expr = sympy.Eq(3 * n0 * s, 6 * n0 * sympy.floor(s / 2))
    out = canonicalize(expr, {n0: (0, 16), s: (1, 64)})
    assert out.has(n0)


@pytest.mark.z3
def test_zero_size_dims_form_is_sound():
    expr = sympy.Eq(3 * n0 * s, 6 * n0 * sympy.floor(s / 2))
    ranges = {n0: (0, 16), s: (1, 64)}
    assert_sound(expr, canonicalize(expr, ranges), ranges)


def test_ranges_by_name_and_by_assumption():
    assert canonicalize(sympy.Eq(s, sympy.Min(512, s)), {"s": (1, 100)}) is sympy.true
    # no ranges: s is positive by its assumptions, so the b factor still cancels
    assert canonicalize(sympy.Eq(6 * b * s, 24 * b), {}) == sympy.Eq(s, 4)


def test_interval_helpers():
    assert bounds(sympy.Mod(s, 8), {s: (1, 1000)}) == (0, 7)
    assert bounds(sympy.floor((s + 63) / 64), {s: (64, 128)}) == (1, 2)
    assert bounds(s * b, {s: (1, None), b: (0, 3)})[0] == 0
    assert decide(sympy.Or(s > 5000, s >= 1), {s: (1, 10)}) is True
    assert decide(s <= 512, {s: (1, 1024)}) is None


def _random_expr(rng, syms, depth):
    if depth == 0 or rng.random() < 0.3:
        return rng.choice(syms + [sympy.Integer(rng.randint(1, 20))])
    kind = rng.choice(["add", "mul", "min", "max", "floor", "mod", "sub"])
    x = _random_expr(rng, syms, depth - 1)
    y = _random_expr(rng, syms, depth - 1)
    if kind == "add":
        return x + y
    if kind == "sub":
        return x - y
    if kind == "mul":
        return x * rng.randint(1, 6)
    if kind == "min":
        return sympy.Min(x, y)
    if kind == "max":
        return sympy.Max(x, y)
    k = rng.randint(2, 8)
    return sympy.floor(x / k) if kind == "floor" else sympy.Mod(x, k)


@pytest.mark.z3
def test_fuzz_canonicalize_is_sound():
    seed = 20261129
    rng = random.Random(seed)
    syms = [s, b]
    for i in range(150):
        ranges = {s: (rng.randint(1, 8), rng.choice([None, rng.randint(8, 600)])),
                  b: (rng.randint(1, 4), rng.randint(4, 64))}
        lhs = _random_expr(rng, syms, 3)
        rhs = _random_expr(rng, syms, 2)
        rel = rng.choice([sympy.Eq, sympy.Ne, sympy.Le, sympy.Lt, sympy.Ge])
        expr = rel(lhs * rng.randint(1, 4) * rng.choice([1, b]), rhs * rng.choice([1, b]))
        if expr in (sympy.true, sympy.false):
            continue
        out = canonicalize(expr, ranges)
        try:
            assert_sound(expr, out, ranges)
        except AssertionError as err:
            raise AssertionError(f"seed={seed} case={i}: {err}") from None


# -- one polynomial written two ways (factored and expanded): the difference is 0 --------------
_s0, _s1 = sympy.symbols("s0 s1", integer=True, positive=True)
_SAME = [(_s0 * (_s0 + 1), _s0**2 + _s0), (_s0 * (_s1 + 1), _s0 * _s1 + _s0),
         (2 * _s0 * (_s1 - 3), 2 * _s0 * _s1 - 6 * _s0), (_s0 * (_s0 + 1) / 2, _s0**2 / 2 + _s0 / 2)]
_RELS = [sympy.Eq, sympy.Ne, sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt]


@pytest.mark.parametrize("pair", range(len(_SAME)))
@pytest.mark.parametrize("rel", _RELS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("offset", [0, 1, -2])
def test_same_polynomial_two_ways_keeps_its_truth(pair, rel, offset):
    lhs, rhs = _SAME[pair]
    e = rel(lhs, rhs + offset, evaluate=False)
    got = canonicalize(e, {"s0": (1, 40), "s1": (1, 40)})
    for a in range(1, 9):
        for b in range(1, 9):
            want = bool(e.subs({_s0: a, _s1: b}))
            if got in (sympy.true, sympy.false):
                assert bool(got) == want, (e, got, a, b)
            else:
                assert bool(got.subs({_s0: a, _s1: b})) == want, (e, got, a, b)


def test_triangular_size_against_an_auto_dim_exports():
    import numpy as np

    import tensorplay_export as tpe
    from tensorplay_export import Dim

    def model(x, y):
        return np.zeros(x.shape[0] * (x.shape[0] + 1) // 2) + y

    ep = tpe.export(model, np.ones(4), np.ones(10), dynamic_shapes={"x": {0: Dim("n", max=30)}, "y": {0: Dim.AUTO}})
    for n in (1, 2, 7, 30):
        y = np.arange(n * (n + 1) // 2, dtype=np.float64)
        np.testing.assert_array_equal(ep.module()(np.ones(n), y), model(np.ones(n), y))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(5), np.ones(14))
