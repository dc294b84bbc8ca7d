"""The fix for a guard over several dims that only a box of ranges expresses is the widest box.

A monotone guard (``(dx // 2) * (dy // 3) <= 30``: a product of floors, each >= 0) and an
equality of two step functions (``dx // 8 == (dy + 8) // 12``, the level set of both floors)
used to fall through to the last resort, specializing one or both dims to the example.  Each
fix here is checked against a brute force over every box of the declared ranges that contains
the example (2-D prefix sums of the failing sizes): the fix admits exactly as many sizes as the
widest such box, every admitted size satisfies the guards (``check_contract``), and z3 proves
the fix set from its records alone.  The box search itself (:mod:`solver.boxes`) is checked the
same way on its own, including three dims and an unbounded side.
"""
from __future__ import annotations

import itertools

import pytest
import sympy

from solver import suggest_fixes
from solver.boxes import widest_monotone_box
from solver.numeric import value
from solver.periods import monotone_signs
from test_fixes_issue13 import check_contract

pytestmark = pytest.mark.z3

a, b, c, dx, dy = sympy.symbols("a b c dx dy", integer=True, positive=True)
floor, Mod, Eq, Min, Max = sympy.floor, sympy.Mod, sympy.Eq, sympy.Min, sympy.Max
third = sympy.Rational(2, 3)


def widest_box_count(guards, dims, hints):
    """The most sizes any box (one range per dim) inside ``dims`` holding ``hints`` admits with
    every guard true at every size of it: brute force over all boxes, two dims."""
    (n1, (lo1, hi1)), (n2, (lo2, hi2)) = dims.items()
    bad = {}
    for u in range(lo1, hi1 + 1):
        for v in range(lo2, hi2 + 1):
            bad[u, v] = 0 if all(value(g, {n1: u, n2: v}) is True for g in guards) else 1
    pre = {}  # pre[u, v]: failing sizes in [lo1, u] x [lo2, v]
    for u in range(lo1 - 1, hi1 + 1):
        for v in range(lo2 - 1, hi2 + 1):
            if u < lo1 or v < lo2:
                pre[u, v] = 0
            else:
                pre[u, v] = bad[u, v] + pre[u - 1, v] + pre[u, v - 1] - pre[u - 1, v - 1]
    best = 0
    h1, h2 = hints[n1], hints[n2]
    for x1, x2 in itertools.product(range(lo1, h1 + 1), range(h1, hi1 + 1)):
        for y1, y2 in itertools.product(range(lo2, h2 + 1), range(h2, hi2 + 1)):
            area = (x2 - x1 + 1) * (y2 - y1 + 1)
            if area > best and pre[x2, y2] - pre[x1 - 1, y2] - pre[x2, y1 - 1] + pre[x1 - 1, y1 - 1] == 0:
                best = area
    return best


def solve(guards, dims, hints):
    fs = suggest_fixes(guards, dims, hints, relations="linear")
    assert fs.unfixable == [] and fs.verified, [u.reason for u in fs.unfixable]
    grid = {n: range(lo, hi + 1) for n, (lo, hi) in dims.items()}
    return fs, check_contract(fs, guards, dims, hints, grid)


# -- a monotone inequality over several dims: the widest box, not a specialization ---------------
def test_a_product_of_floors_bound_gets_the_widest_box_not_a_specialization():
    # TAB[: (x.shape[0] // 2) * (y.shape[0] // 3)] + ones: was `dx = 6` + `dy <= 32` (32 sizes)
    guards = [floor(dx / 2) * floor(dy / 3) <= 30]
    dims, hints = {"dx": (1, 48), "dy": (1, 48)}, {"dx": 6, "dy": 6}
    fs, count = solve(guards, dims, hints)
    assert fs.lines == ["dx = Dim('dx', max=31)", "dy = Dim('dy', max=8)"]
    assert count == 31 * 8 == widest_box_count(guards, dims, hints)
    assert count > 7 * 32   # wider than the box the report expected, and than either specialization
    assert fs.boxed == guards


@pytest.mark.parametrize("guard, dims, hints", [
    (floor(b / 2) + 3 <= floor(a / 2), {"a": (1, 30), "b": (1, 60)}, {"a": 22, "b": 17}),
    (floor(a / 2) > floor(b / 3) + 1, {"a": (1, 50), "b": (1, 50)}, {"a": 10, "b": 6}),
    (floor(a / 2) ** 2 + floor(b / 2) <= 40, {"a": (1, 60), "b": (1, 60)}, {"a": 6, "b": 6}),
    (floor(a / 3) * floor((b + 1) / 2) >= 12, {"a": (1, 40), "b": (1, 40)}, {"a": 13, "b": 9}),
])
def test_monotone_inequalities_get_the_widest_box(guard, dims, hints):
    _, count = solve([guard], dims, hints)
    assert count == widest_box_count([guard], dims, hints)


@pytest.mark.parametrize("guards, dims, hints", [
    # |n - m| <= 29 (table[max - min]): two inequalities, one box for both
    ([Max(a, b) - Min(a, b) <= 29], {"a": (1, 40), "b": (1, 40)}, {"a": 5, "b": 9}),
    ([a + b <= 40, a - b <= 10], {"a": (1, 40), "b": (1, 40)}, {"a": 12, "b": 5}),
    ([floor(a / 2) + b <= 30, floor(b / 3) + 4 <= a], {"a": (1, 40), "b": (1, 40)}, {"a": 9, "b": 11}),
])
def test_inequalities_over_the_same_dims_share_the_widest_box(guards, dims, hints):
    _, count = solve(guards, dims, hints)
    assert count == widest_box_count(guards, dims, hints)


@pytest.mark.parametrize("guards, dims, hints", [
    ([a * b <= 30], {"a": (1, 40), "b": (1, 40)}, {"a": 6, "b": 5}),
    ([a * b <= 60], {"a": (1, 40), "b": (1, 40)}, {"a": 3, "b": 4}),
    ([a * b >= 12], {"a": (1, 30), "b": (1, 30)}, {"a": 5, "b": 9}),
    ([sympy.Ne(a * b, 0)], {"a": (0, 30), "b": (0, 30)}, {"a": 4, "b": 4}),
    ([sympy.Ne(a, b)], {"a": (1, 30), "b": (1, 30)}, {"a": 3, "b": 4}),
])
def test_a_product_of_sizes_or_a_disequality_gets_the_widest_box(guards, dims, hints):
    # a product of sizes (no floors) is monotone in each size too, and a disequality holds on a
    # box exactly when one side does: both used to have no fix at all
    _, count = solve(guards, dims, hints)
    assert count == widest_box_count(guards, dims, hints)


def test_a_product_bound_over_unbounded_dims_gets_a_box_containing_the_example():
    fs = suggest_fixes([dx * dy <= 1000], {"dx": (1, None), "dy": (1, None)}, {"dx": 6, "dy": 6})
    assert fs.unfixable == [] and fs.verified and fs.boxed == [dx * dy <= 1000]
    upper = {f.name: f.upper for f in fs.fixes}
    assert upper["dx"] >= 6 and upper["dy"] >= 6 and upper["dx"] * upper["dy"] == 1000


# -- an equality of step functions: the level-set box ------------------------------------------
def test_an_equality_of_two_floor_chains_gets_the_level_set_box():
    # pool(x[: dx // 4]) + y[: dy // 4][::3], paired: both floors keep their example value 2
    pooled = floor(Min(floor(dx / 4), 2 * floor(floor(dx / 4) / 2)) / 2)
    guards = [Eq(pooled, floor(floor(dy / 4) / 3 + third)), Eq(Mod(pooled, 2), 0)]
    dims, hints = {"dx": (1, 40), "dy": (1, 40)}, {"dx": 22, "dy": 18}
    fs, count = solve(guards, dims, hints)
    assert fs.lines == ["dx = Dim('dx', min=16, max=23)", "dy = Dim('dy', min=16, max=27)"]
    assert count == 8 * 12 == widest_box_count(guards, dims, hints)
    assert fs.boxed == [guards[0]]


def test_a_ceiling_against_a_multiple_gets_the_level_set_box():
    # x[::3] + y[y.shape[0] % 3:], paired: ceil(dx/3) == 3*(dy//3), even; was 2 sizes on a relation
    guards = [Eq(floor(dx / 3 + third), Max(0, dy - Min(dy, Mod(dy, 3)))), Eq(Mod(floor(dx / 3 + third), 2), 0)]
    dims, hints = {"dx": (1, 40), "dy": (1, 40)}, {"dx": 16, "dy": 6}
    fs, count = solve(guards, dims, hints)
    assert fs.lines == ["dx = Dim('dx', min=16, max=18)", "dy = Dim('dy', min=6, max=8)"]
    assert count == 9 == widest_box_count(guards, dims, hints)


def test_a_level_set_part_with_a_remainder_takes_a_lattice():
    # a // 4 == b % 3 + 1: each part at its example value; b's remainder is a lattice, not a box
    guards = [Eq(floor(a / 4), Mod(b, 3) + 1)]
    dims, hints = {"a": (1, 40), "b": (1, 30)}, {"a": 9, "b": 4}
    fs, count = solve(guards, dims, hints)
    assert fs.lines == ["_b = Dim('_b', min=0, max=9)", "a = Dim('a', min=8, max=11)", "b = 3*_b + 1"]
    assert count == 4 * 10


def test_an_unbounded_equality_keeps_its_relation_over_a_box():
    # no upper ends: the relation on lattices admits sizes without end, which no box does
    guards = [Eq(floor(dx / 8), floor((dy + 8) / 12))]
    fs = suggest_fixes(guards, {"dx": (1, None), "dy": (1, None)}, {"dx": 22, "dy": 18}, relations="linear")
    assert fs.lines == ["_dx = Dim('_dx')", "dx = 8*_dx + 6", "dy = 12*_dx - 6"] and fs.verified


def test_a_sum_parity_keeps_both_dims_on_the_example_lattice():
    # np.concatenate([x, y]).reshape(-1, 2): (dx + dy) % 2 == 0 at (3, 5).  No relation form
    # states "same parity" (dy = dx + 2*_k needs a root with no input axis), and the two odd
    # lattices admit more sizes than a relation (dy = dx + 2: 38) or a specialization (20)
    guards = [Eq(Mod(dx + dy, 2), 0)]
    dims, hints = {"dx": (1, 40), "dy": (1, 40)}, {"dx": 3, "dy": 5}
    fs, count = solve(guards, dims, hints)
    assert fs.lines == ["_dx = Dim('_dx', min=0, max=19)", "_dy = Dim('_dy', min=0, max=19)",
                        "dx = 2*_dx + 1", "dy = 2*_dy + 1"]
    assert count == 20 * 20
    assert fs.chosen == guards


# -- the box search and the signs it relies on -------------------------------------------------
def test_monotone_signs_of_products_need_nonnegative_factors():
    def nonneg(e):  # sizes >= 1 make every floor below >= 0
        return True
    assert monotone_signs(floor(a / 2) * floor(b / 3)) is None            # no test: not monotone
    assert monotone_signs(floor(a / 2) * floor(b / 3), nonneg) == {"a": 1, "b": 1}
    assert monotone_signs(30 - floor(a / 2) * floor(b / 3), nonneg) == {"a": -1, "b": -1}
    assert monotone_signs(floor(a / 2) ** 2 - b, nonneg) == {"a": 1, "b": -1}
    assert monotone_signs(floor(a / 2) * (40 - b), lambda e: False) is None  # a factor may be < 0
    assert monotone_signs(floor(a / 2) * (c - floor(a / 3)), nonneg) is None  # a both ways


def brute_box(diff, names, hints, ranges, level):
    """The widest box by enumeration of its corners (a box holds iff every size in it does)."""
    axes = []
    for n in names:
        lo, hi = ranges[n]
        axes.append([(x1, x2) for x1 in range(lo, hints[n] + 1) for x2 in range(hints[n], hi + 1)])
    best = 0
    for sides in itertools.product(*axes):
        area = 1
        for x1, x2 in sides:
            area *= x2 - x1 + 1
        if area <= best:
            continue
        if all((value(diff, dict(zip(names, p))) == 0) if level else (value(diff, dict(zip(names, p))) >= 0)
               for p in itertools.product(*(range(x1, x2 + 1) for x1, x2 in sides))):
            best = area
    return best


@pytest.mark.parametrize("diff, level, hints", [
    (20 - floor(a / 2) * floor(b / 3) - floor(c / 2), False, (4, 5, 4)),
    (floor(a / 3) + floor(b / 2) - c, False, (4, 5, 3)),
    (floor((a + b) / 4) + floor(c / 3) - 4, True, (4, 5, 6)),
])
def test_the_box_search_finds_the_widest_box_over_three_dims(diff, level, hints):
    names = ["a", "b", "c"]
    hints = dict(zip(names, hints))
    ranges = {n: (1, 9) for n in names}
    signs = monotone_signs(diff, lambda e: True)
    box = widest_monotone_box(diff, signs, hints, ranges, at_least=True, at_most=level)
    assert box is not None
    sides = []
    for n in names:
        lo, hi = box[n]
        sides.append(range(ranges[n][0] if lo is None else lo, (ranges[n][1] if hi is None else hi) + 1))
    for p in itertools.product(*sides):  # every size of the box keeps the guard
        v = value(diff, dict(zip(names, p)))
        assert (v == 0) if level else (v >= 0), p
    area = 1
    for s in sides:
        area *= len(s)
    assert area == brute_box(diff, names, hints, ranges, level)


def test_the_box_search_leaves_an_end_no_corner_needs_unbounded():
    # a // 2 >= b // 3 + 1 at (10, 6): a has no upper end, b's is the widest the corner a = 10 allows
    diff = floor(a / 2) - floor(b / 3) - 1
    box = widest_monotone_box(diff, {"a": 1, "b": -1}, {"a": 10, "b": 6}, {"a": (1, None), "b": (1, None)})
    assert box == {"a": (10, None), "b": (None, 14)}
    assert widest_monotone_box(diff, {"a": 1, "b": -1}, {"a": 2, "b": 6}, {"a": (1, None), "b": (1, None)}) is None
