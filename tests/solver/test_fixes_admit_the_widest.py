"""Fixes for guards that used to get none, or one narrower than needed.

- a product of sizes against a bound (``a*b <= 30``, a BatchNorm's ``b*h*w >= 2``) and a
  disequality (``b != c``, ``a*b != 0`` from ``if x.size == 0``) get a box of ranges around the
  example, proved on the whole box;
- a guard that holds at every size but that z3 cannot decide as written
  (``2*((a*(a + 1)) // 2) == a*(a + 1)``) is proved one residue class at a time, so it needs no
  fix (a lattice fix would refuse every size of the other classes);
- a remainder guard over several dims (``a*b % 4 == 0`` from ``x.reshape(-1, 4)``) gets the
  per-dim lattices with the least product of steps (``a = 2*_a, b = 2*_b``), not one dim's
  full period.

Each fix is checked by brute force over the declared ranges: every size it admits satisfies the
guard, and it admits the example.
"""
from __future__ import annotations

import itertools

import pytest
import sympy

from solver import ShapeSolver, suggest_fixes
from solver.numeric import holds

pytestmark = pytest.mark.z3

a, b, c, h, w = sympy.symbols("a b c h w", integer=True, positive=True)
floor, Mod, Eq, Ne = sympy.floor, sympy.Mod, sympy.Eq, sympy.Ne


def admitted(fs, dims, point):
    """Whether the sizes ``point`` satisfy every fix of ``fs`` (ranges, constants, lattices)."""
    fixes = {f.name: f for f in fs.fixes}
    for name, size in point.items():
        lo, hi = dims[name]
        if size < lo or (hi is not None and size > hi):
            return False
        f = fixes.get(name)
        if f is None:
            continue
        if hasattr(f, "value"):
            if size != f.value:
                return False
        elif hasattr(f, "terms"):
            ((root, k),) = f.terms
            r = fixes.get(root)
            t, rem = divmod(size - f.offset, k)
            if rem or (r.lower is not None and t < r.lower) or (r.upper is not None and t > r.upper):
                return False
        elif (f.lower is not None and size < f.lower) or (f.upper is not None and size > f.upper):
            return False
    return True


def check_sound(fs, guards, dims, hints, grid):
    assert fs.verified and fs.unfixable == [] and fs.fixes
    assert admitted(fs, dims, hints)
    count = 0
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values))
        if admitted(fs, dims, point):
            count += 1
            assert all(holds(g, point) is True for g in guards), point
    return count


@pytest.mark.parametrize("guard, hints", [
    (a * b <= 30, {"a": 6, "b": 5}),
    (a * b <= 1000, {"a": 6, "b": 6}),
    (a * b >= 2, {"a": 4, "b": 3}),
    (h * w * c >= 2, {"h": 5, "w": 5, "c": 4}),
])
def test_a_product_of_sizes_against_a_bound_gets_a_box(guard, hints):
    names = sorted(hints)
    dims = {n: (1, None) for n in names}
    fs = suggest_fixes([guard], dims, hints, relations="linear")
    assert fs.boxed == [guard]
    grid = {n: range(1, 3 * hints[n] + 8) for n in names}
    assert check_sound(fs, [guard], dims, hints, grid) > 1


def test_the_product_box_at_the_example_of_a_tight_bound_is_the_example_corner():
    fs = suggest_fixes([a * b <= 30], {"a": (1, None), "b": (1, None)}, {"a": 6, "b": 5})
    assert sorted(fs.lines) == ["a = Dim('a', max=6)", "b = Dim('b', max=5)"]


def test_a_size_not_zero_over_two_dims_that_may_be_empty_gets_min_1_on_both():
    # `if x.size == 0:` taken the False way: a*b != 0 is exactly a >= 1 and b >= 1
    a0, b0 = sympy.symbols("a b", integer=True, nonnegative=True)
    dims, guard = {"a": (0, 64), "b": (0, 64)}, Ne(a0 * b0, 0)
    fs = suggest_fixes([guard], dims, {"a": 4, "b": 4}, relations="linear")
    assert sorted(fs.lines) == ["a = Dim('a', max=64)", "b = Dim('b', max=64)"]   # min=1 is the default
    assert check_sound(fs, [guard], dims, {"a": 4, "b": 4}, {"a": range(0, 65), "b": range(0, 65)}) == 64 * 64


def test_a_disequality_of_two_dims_gets_the_box_on_the_example_side():
    dims = {"b": (1, None), "c": (1, None)}
    fs = suggest_fixes([Ne(b, c)], dims, {"b": 3, "c": 4}, relations="linear")
    assert sorted(fs.lines) == ["b = Dim('b', max=3)", "c = Dim('c', min=4)"]
    flipped = suggest_fixes([Ne(b, c)], dims, {"b": 9, "c": 4}, relations="linear")
    # the bounded dim takes the room (c <= 8 admits more sizes than c <= 4 beside b >= 5)
    assert sorted(flipped.lines) == ["b = Dim('b', min=9)", "c = Dim('c', max=8)"]
    check_sound(flipped, [Ne(b, c)], dims, {"b": 9, "c": 4}, {"b": range(1, 30), "c": range(1, 30)})


# -- a guard that holds everywhere, beyond z3 as written -----------------------------------------
@pytest.mark.parametrize("guard", [
    Eq(2 * floor(a * (a + 1) / 2), a * (a + 1)),
    Eq(Mod(a ** 3 - a, 6), 0),
])
def test_a_true_guard_z3_cannot_decide_is_proved_class_by_class(guard):
    s = ShapeSolver()
    s.declare("a", 1, None)
    v = s.implies(guard)
    assert v.proved and "residue classes" in v.reason
    fs = suggest_fixes([guard], {"a": (1, None)}, {"a": 5})
    assert fs.fixes == [] and fs.unfixable == []


def test_a_guard_false_on_one_class_is_refuted_with_a_real_counterexample():
    guard = Eq(2 * floor(a * (a + 3) / 4), a * (a + 3) / 2)   # a*(a + 3)/2 even: a % 4 in {0, 1}
    s = ShapeSolver()
    s.declare("a", 1, None)
    v = s.implies(guard)
    assert v.refuted and holds(guard, v.counterexample) is False


def test_splitting_by_residues_stops_at_the_bound():
    # a modulus past MAX_RESIDUE_CLASSES is not split (the verdict stays whatever z3 said)
    from solver.decide import MAX_RESIDUE_CLASSES, _divisor_lcm
    assert _divisor_lcm(Mod(a ** 3 - a, 6) + floor(a / 4), a) == 12
    assert _divisor_lcm(Mod(a, b), a) == 1 and MAX_RESIDUE_CLASSES >= 12


# -- the widest lattices of a remainder guard over several dims ------------------------------------
@pytest.mark.parametrize("guard, hints, steps", [
    (Eq(Mod(a * b, 4), 0), {"a": 2, "b": 6}, {"a": 2, "b": 2}),
    (Eq(Mod(a * b, 6), 0), {"a": 3, "b": 4}, {"a": 3, "b": 2}),
])
def test_a_remainder_of_a_product_gets_the_lattices_with_the_fewest_steps(guard, hints, steps):
    dims = {"a": (1, 40), "b": (1, 40)}
    fs = suggest_fixes([guard], dims, hints, relations="linear")
    got = {f.name: dict(f.terms) for f in fs.fixes if hasattr(f, "terms")}
    assert {n: next(iter(t.values())) for n, t in got.items()} == steps
    count = check_sound(fs, [guard], dims, hints, {"a": range(1, 41), "b": range(1, 41)})
    assert count == (40 // steps["a"]) * (40 // steps["b"])
