"""Guards over several dims built from floors and remainders (two inputs downsampled, then
concatenated and regrouped): the fix search puts a dim on the lattice of its proved shift
period, relates two dims along the guard's slope, or boxes a monotone inequality, and keeps
the widest choice.  Each fix set is proved by z3 from its records alone and checked point by
point on a grid (``check_contract`` of test_fixes_issue13: admits only sizes that satisfy
every guard, keeps the example); the periods and signs are checked at plain integers."""
from __future__ import annotations

import itertools
import random

import pytest
import sympy

from solver import suggest_fixes
from solver.numeric import value
from solver.periods import divisor_product, monotone_signs, shift_period
from test_fixes_issue13 import check_contract

pytestmark = pytest.mark.z3

P = dict(integer=True, positive=True)
a, b, dx, dy = sympy.symbols("a b dx dy", **P)
floor, Mod, Eq = sympy.floor, sympy.Mod, sympy.Eq


# -- periods and signs ---------------------------------------------------------------------
def test_divisor_product_multiplies_the_divisors_a_dim_passes_through():
    e = Mod(a + floor(b / 4), 2)
    assert divisor_product(e, "a") == 2 and divisor_product(e, "b") == 8
    assert divisor_product(floor((floor(a / 2) + 1) / 2) - b, "a") == 4
    assert divisor_product(floor((floor(a / 2) + 1) / 2) - b, "b") == 1   # b enters linearly


@pytest.mark.parametrize("expr, name, want", [
    (Mod(a + floor(b / 4), 2), "a", (2, 0)),
    (Mod(a + floor(b / 4), 2), "b", (8, 0)),
    (floor((floor(a / 2) + 1) / 2) - floor(b / 2) - 1, "a", (4, 1)),
    (floor((floor(a / 2) + 1) / 2) - floor(b / 2) - 1, "b", (2, -1)),
    (Mod(dx * dy, 2), "dx", (2, 0)),
    (Mod(floor((a + b + 1) / 2), 2), "b", (4, 0)),
])
def test_shift_period_is_the_least_and_holds_at_every_integer(expr, name, want):
    hints = {"a": 16, "b": 6, "dx": 4, "dy": 3}
    others = {s.name: (1, 60) for s in expr.free_symbols if s.name != name}
    assert shift_period(expr, name, hints, 1, others) == want
    p, c = want
    sym = next(s for s in expr.free_symbols if s.name == name)
    rng = random.Random(0)
    for _ in range(300):
        env = {s.name: rng.randint(1, 60) for s in expr.free_symbols}
        shifted = {**env, name: env[name] + p}
        assert value(expr, shifted) - value(expr, env) == c, env
    for q in range(1, p):  # no smaller shift is constant
        diffs = {value(expr.xreplace({sym: sym + q}) - expr, {**{s.name: 7 for s in expr.free_symbols}, name: x})
                 for x in range(1, 4 * p)}
        assert len(diffs) > 1, q


def test_shift_period_none_when_no_shift_is_constant():
    assert shift_period(Mod(a * a, 7) - b, "a", {"a": 3, "b": 2}, 1, {"b": (1, 60)}) == (7, 0)
    assert shift_period(floor(a * a / 2) - b, "a", {"a": 3, "b": 2}, 1, {"b": (1, 60)}) is None


def test_monotone_signs():
    assert monotone_signs(floor(a / 2) - floor(b / 2) - 3) == {"a": 1, "b": -1}
    assert monotone_signs(3 - 2 * floor((a + 1) / 3) + sympy.Max(a, 4)) is None   # a both ways
    assert monotone_signs(floor(a / 2) + sympy.Min(b, 3)) == {"a": 1, "b": 1}
    assert monotone_signs(a * b) is None and monotone_signs(Mod(a, 2)) is None


# -- the fix forms ---------------------------------------------------------------------------
GRID = {"a": range(1, 101), "b": range(1, 101)}


def run(guards, dims, hints, relations="linear"):
    fs = suggest_fixes(guards, dims, hints, relations=relations)
    assert fs.unfixable == [], [u.reason for u in fs.unfixable]
    grid = {n: range(dims[n][0], dims[n][1] + 1) for n in dims}
    return fs, check_contract(fs, guards, dims, hints, grid)


def test_parity_of_a_sum_with_a_floor_puts_one_dim_on_its_lattice():
    # np.concatenate([x, y[:b // 4]]).reshape(-1, 2, ...): (a + b // 4) % 2 == 0
    guards = [Eq(Mod(a + floor(b / 4), 2), 0)]
    dims = {"a": (1, 100), "b": (1, 30)}
    fs, count = run(guards, dims, {"a": 3, "b": 15})
    # a odd keeps every b whose quarter is odd near the example; the widest of the choices
    assert fs.lines == ["_a = Dim('_a', min=0, max=49)", "b = Dim('b', min=12, max=15)", "a = 2*_a + 1"]
    assert count == 50 * 4


def test_parity_of_a_floor_of_a_sum_puts_both_dims_on_lattices():
    guards = [Eq(Mod(floor((a + b + 1) / 2), 2), 0)]
    dims = {"a": (1, 60), "b": (1, 100)}
    fs, count = run(guards, dims, {"a": 10, "b": 6})
    assert fs.lines == ["_a = Dim('_a', min=0, max=14)", "_b = Dim('_b', min=0, max=24)",
                        "a = 4*_a + 2", "b = 4*_b + 2"]
    assert count == 15 * 25


@pytest.mark.parametrize("hints, lines", [
    ({"dx": 4, "dy": 3}, ["_dx = Dim('_dx', max=50)", "dx = 2*_dx"]),
    ({"dx": 3, "dy": 4}, ["_dy = Dim('_dy', max=50)", "dy = 2*_dy"]),
])
def test_parity_of_a_product_keeps_the_even_dim_even_and_the_other_free(hints, lines):
    guards = [Eq(Mod(dx * dy, 2), 0)]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs, count = run(guards, dims, hints)
    assert fs.lines == lines and count == 50 * 100


def test_parity_with_a_third_of_one_dim():
    guards = [Eq(Mod(dy + floor(dx / 3), 2), 0)]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs, count = run(guards, dims, {"dx": 7, "dy": 4})
    assert fs.lines == ["_dx = Dim('_dx', min=0, max=16)", "_dy = Dim('_dy', max=50)", "dx = 6*_dx + 1", "dy = 2*_dy"]
    assert count == 17 * 50


def test_floor_equality_becomes_a_lattice_and_a_relation():
    # x[1:][::2] + pooled y, regrouped: (a // 2 + 1) // 2 == b // 2 + 1
    guards = [Eq(floor((floor(a / 2) + 1) / 2), floor(b / 2) + 1)]
    dims = {"a": (1, 60), "b": (1, 60)}
    fs, count = run(guards, dims, {"a": 16, "b": 6}, relations="increasing")
    assert fs.lines == ["_a = Dim('_a', min=2, max=15)", "a = 4*_a", "b = 2*_a - 2"]
    assert count == 14


@pytest.mark.parametrize("guard, hints, line", [
    (Eq(floor(a / 2), floor(b / 2)), {"a": 3, "b": 3}, "b = a"),
    (Eq(floor(a / 2) + 1, floor(b / 2)), {"a": 17, "b": 19}, "b = a + 2"),
])
def test_floor_equality_along_its_slope_is_a_relation(guard, hints, line):
    dims = {"a": (1, 30), "b": (1, 60)}
    fs, count = run([guard], dims, hints, relations="increasing")
    assert fs.lines[-1] == line
    assert count >= 28


def test_monotone_floor_inequality_gets_the_widest_box_at_the_corner():
    # x[: y.shape[0] // 2 + 3] + pooled x: b // 2 + 3 <= a // 2
    guards = [floor(b / 2) + 3 <= floor(a / 2)]
    dims = {"a": (1, 30), "b": (1, 60)}
    fs, count = run(guards, dims, {"a": 22, "b": 17})
    assert fs.lines == ["a = Dim('a', min=22, max=30)", "b = Dim('b', max=17)"]
    assert count == 9 * 17
    assert fs.boxed == guards


def test_the_example_lattice_admits_what_every_size_of_its_residue_does():
    # the search never keeps a lattice narrower than the residues that satisfy the guard
    guards = [Eq(Mod(a + floor(b / 4), 2), 0), Eq(Mod(floor((a + b + 1) / 2), 3), 0)]
    dims = {"a": (1, 48), "b": (1, 48)}
    hints = {"a": 5, "b": 12}
    assert all(value(g, hints) is True for g in guards)
    _, count = run(guards, dims, hints)
    valid = sum(all(value(g, {"a": x, "b": y}) is True for g in guards)
                for x, y in itertools.product(range(1, 49), repeat=2))
    assert 0 < count <= valid


def test_a_floor_guard_nothing_else_expresses_specializes_to_the_example():
    # no lattice (no constant shift), no slope, no monotone box: pinning closes it in one step
    guards = [Eq(floor(a * b / 3), 5)]
    dims = {"a": (1, 30), "b": (1, 100)}
    fs, count = run(guards, dims, {"a": 4, "b": 4})
    assert fs.lines == ["a = 4", "b = 4"] and count == 1


def test_a_product_inequality_without_floors_is_still_never_pinned():
    fs = suggest_fixes([dx * dy <= 4096], {"dx": (1, 1024), "dy": (1, 1024)}, {"dx": 32, "dy": 32})
    assert all(f.upper is not None and f.upper > 32 for f in fs.fixes) and fs.unfixable == []


def test_a_lattice_of_a_lattice_is_written_over_one_root_with_the_short_name():
    # a = 2*_a, then _a = 3*__a + 2: printed as a = 6*_a + 4, no intermediate root
    guards = [Eq(Mod(floor((a + 2) / 3) + floor((b - 1) / 2) + 1, 2), 0)]
    dims = {"a": (1, 60), "b": (9, 30)}
    fs, count = run(guards, dims, {"a": 4, "b": 15})
    assert fs.lines == ["_a = Dim('_a', min=0, max=9)", "_b = Dim('_b', min=2, max=6)", "a = 6*_a + 4", "b = 4*_b + 3"]
    assert count == 10 * 5
