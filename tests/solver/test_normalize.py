"""normalize.alternatives: each rule gives the expected atoms, the atoms hold at the
example, and z3 proves that every alternative's atoms imply the guard under the
ranges (the soundness the fix search relies on)."""
from __future__ import annotations

import pytest
import sympy
import z3

from solver import Translator, evaluate
from solver.normalize import alternatives, split_product

pytestmark = pytest.mark.z3

P = dict(integer=True, positive=True)
dx, dy, dz, h, w, a, b = sympy.symbols("dx dy dz h w a b", **P)
floor = sympy.floor


def assert_implies(atoms, guard, ranges):
    """z3: the conjunction of ``atoms`` implies ``guard`` for every integer point in ``ranges``."""
    tr = Translator()
    s = z3.Solver()
    for name, (lo, hi) in ranges.items():
        v = tr.var(name)
        if lo is not None:
            s.add(v >= lo)
        if hi is not None:
            s.add(v <= hi)
    for atom in atoms:
        s.add(tr(atom))
    s.add(z3.Not(tr(guard)))
    s.set("timeout", 20000)  # nonlinear (floor products): z3's time varies with its context's history
    verdict = s.check()
    if verdict == z3.unknown:  # decide by every point instead, when the box is small enough
        assert _implies_everywhere(atoms, guard, ranges), f"{atoms} do not imply {guard}"
        return
    assert verdict == z3.unsat, f"{atoms} do not imply {guard}: {s.model()}"


def _implies_everywhere(atoms, guard, ranges) -> bool:
    import itertools

    import numpy as np

    names = sorted(ranges)
    assert all(lo is not None and hi is not None for lo, hi in ranges.values())
    assert np.prod([hi - lo + 1 for lo, hi in ranges.values()]) <= 10 ** 6, "too many points to enumerate"
    grids = np.meshgrid(*[np.arange(ranges[n][0], ranges[n][1] + 1) for n in names], indexing="ij")
    syms = [sympy.Symbol(n, **P) for n in names]
    holds = sympy.lambdify(syms, sympy.And(*atoms), "numpy")(*grids)
    wanted = sympy.lambdify(syms, guard, "numpy")(*grids)
    return bool(np.all(~np.broadcast_to(holds, grids[0].shape) | np.broadcast_to(wanted, grids[0].shape)))


def check(guard, ranges, hints, expected):
    alts = alternatives(guard, hints, ranges)
    assert [set(alt) for alt in alts] == [set(e) for e in expected], alts
    for alt in alts:
        assert all(evaluate(atom, hints) is True for atom in alt), (alt, hints)
        assert_implies(alt, guard, ranges)
    return alts


UNBOUNDED = {"dx": (1, None), "dy": (1, None), "dz": (1, None)}


def test_min_inside_max_is_branched_innermost_first():
    # x + y[2:]: the guard; the example takes dy - 2, so dy >= 2 is kept
    guard = sympy.Eq(dx, sympy.Max(0, dy - sympy.Min(2, dy)))
    check(guard, UNBOUNDED, {"dx": 5, "dy": 7}, [[dy >= 2, sympy.Eq(dx + 2, dy)]])


def test_min_branch_keeps_the_branch_condition():
    # x[:3] + y: Min(3, dx) == dy at dx = 5 is dy == 3 with dx >= 3
    check(sympy.Eq(sympy.Min(3, dx), dy), UNBOUNDED, {"dx": 5, "dy": 3}, [[dx >= 3, sympy.Eq(dy, 3)]])


def test_tied_min_gives_both_branches():
    check(sympy.Eq(sympy.Min(3, dx), dy), UNBOUNDED, {"dx": 3, "dy": 3},
          [[dx >= 3, sympy.Eq(dy, 3)], [dx <= 3, sympy.Eq(dx, dy)]])


def test_max_branch():
    check(sympy.Eq(sympy.Max(dx, 8), dy), UNBOUNDED, {"dx": 3, "dy": 8}, [[dx <= 8, sympy.Eq(dy, 8)]])


def test_abs_branch():
    check(sympy.Eq(sympy.Abs(dx - dy), 2), UNBOUNDED, {"dx": 7, "dy": 5},
          [[sympy.Ge(dx - dy, 0), sympy.Eq(dx, dy + 2)]])


def test_piecewise_branch_negates_earlier_conditions():
    guard = sympy.Eq(sympy.Piecewise((dy, dx > 4), (2 * dy, True)), 8)
    check(guard, UNBOUNDED, {"dx": 2, "dy": 4}, [[dx <= 4, sympy.Eq(dy, 4)]])


def test_or_gives_each_true_disjunct_relations_first():
    guard = sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))
    check(guard, UNBOUNDED, {"dx": 1, "dy": 1}, [[sympy.Eq(dx, dy)], [sympy.Eq(dx, 1)], [sympy.Eq(dy, 1)]])


def test_and_splits():
    check(sympy.And(dx <= 8, sympy.Eq(sympy.Min(dy, 4), 4)), UNBOUNDED, {"dx": 3, "dy": 5},
          [[dx <= 8, dy >= 4]])


def test_branch_the_ranges_decide_needs_no_condition():
    # with dy >= 2 declared, canonicalize already drops Min(2, dy): nothing to keep
    check(sympy.Eq(dx, sympy.Max(0, dy - sympy.Min(2, dy))), {"dx": (1, None), "dy": (2, None)},
          {"dx": 5, "dy": 7}, [[sympy.Eq(dx + 2, dy)]])


def test_nested_floor_product_splits_per_factor():
    # two levels of a reshape pooling pyramid
    guard = sympy.Eq(floor(h / 2) * floor(w / 2), 4 * floor(floor(h / 2) / 2) * floor(floor(w / 2) / 2))
    ranges = {"h": (1, 256), "w": (1, 256)}
    check(guard, ranges, {"h": 16, "w": 24},
          [[sympy.Eq(floor(h / 2), 2 * floor(h / 4)), sympy.Eq(floor(w / 2), 2 * floor(w / 4))]])


FLOOR_CASES = [
    (floor(floor(h / 2) / 2), floor(h / 4)),
    (floor(floor(floor(h / 2) / 2) / 2), floor(h / 8)),
    (floor((floor(h / 3) + 2) / 5), floor((h + 6) / 15)),
    (sympy.ceiling((sympy.ceiling(h / 3) + 1) / 2), sympy.ceiling((h + 3) / 6)),
    (floor(floor(h / 2) / 2) * floor(w / 2), floor(h / 4) * floor(w / 2)),
]


@pytest.mark.parametrize("expr, flat", FLOOR_CASES, ids=[str(c[0]) for c in FLOOR_CASES])
def test_nested_floors_flatten_soundly(expr, flat):
    from solver.normalize import flatten_floors

    got = flatten_floors(expr)
    assert got == flat
    tr = Translator()
    s = z3.Solver()
    s.set("timeout", 20000)      # floor products: z3's time varies with its context's history
    s.add(tr(expr) != tr(got))   # over every integer, negative ones included (no box to fall back on)
    verdict = s.check()
    assert verdict != z3.unknown, f"z3 could not decide {expr} == {got} ({s.reason_unknown()})"
    assert verdict == z3.unsat, f"{expr} != {got} at {s.model()}"


def test_product_split_uses_the_example_ratio():
    guard = sympy.Eq(h * floor(w / 2), 6 * floor(h / 3) * floor(w / 4))
    parts = split_product(guard, {"h": 9, "w": 8})   # 9*4 == 6*3*2: ratios 3 (h) and 2 (w)
    assert parts == [sympy.Eq(h, 3 * floor(h / 3)), sympy.Eq(floor(w / 2), 2 * floor(w / 4))]
    assert_implies(parts, guard, {"h": (1, 64), "w": (1, 64)})
    assert split_product(guard, {"h": 9, "w": 6}) is None   # the example violates it: no split


def test_product_with_a_symbol_on_one_side_is_left_whole():
    # h*w == 16 is for pinning, the caller's last resort, not for a per-factor split
    check(sympy.Eq(h * w, 16), {"h": (1, 64), "w": (1, 64)}, {"h": 4, "w": 4}, [[sympy.Eq(h * w, 16)]])
    assert split_product(sympy.Eq(h * w, 16), {"h": 4, "w": 4}) is None


def test_example_violating_guard_is_left_whole():
    guard = sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1))
    assert alternatives(guard, {"dx": 3, "dy": 4}, UNBOUNDED) == [[guard]]


@pytest.mark.parametrize("seed", range(6))
def test_fuzz_alternatives_are_sufficient_and_hold_at_example(seed):
    import random

    rng = random.Random(seed)
    syms = [dx, dy]
    ranges = {"dx": (1, 40), "dy": (1, 40)}

    def expr(depth):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(syms + [sympy.Integer(rng.randint(0, 6))])
        op = rng.choice(["add", "sub", "min", "max", "abs", "floor"])
        x, y = expr(depth - 1), expr(depth - 1)
        return {"add": lambda: x + y, "sub": lambda: x - y, "min": lambda: sympy.Min(x, y),
                "max": lambda: sympy.Max(x, y), "abs": lambda: sympy.Abs(x - y),
                "floor": lambda: floor(x / 2)}[op]()

    done = 0
    for _ in range(200):
        guard = rng.choice([sympy.Eq, sympy.Le, sympy.Ge])(expr(3), expr(3))
        if guard in (sympy.true, sympy.false):
            continue
        hints = {"dx": rng.randint(1, 40), "dy": rng.randint(1, 40)}
        if evaluate(guard, hints) is not True:
            continue
        for alt in alternatives(guard, hints, ranges):
            assert all(evaluate(atom, hints) is True for atom in alt), (guard, hints, alt)
            assert_implies(alt, guard, ranges)
        done += 1
        if done >= 25:
            break
    assert done >= 10


# rule 3a: an inequality with a Max (or Abs) on its smaller side, or a Min on its larger side, splits
# into the inequalities it is equivalent to, with no branch of the example kept
@pytest.mark.parametrize("guard, expected", [
    (sympy.Le(sympy.Max(dx, dy), sympy.Min(dx, dy) + 29), [dx <= dy + 29, dy <= dx + 29]),
    (sympy.Le(sympy.Abs(dx - dy), 29), [dx - dy <= 29, dy - dx <= 29]),
    (sympy.Ge(sympy.Min(dx, dy), dz + 1), [dz + 1 <= dx, dz + 1 <= dy]),
    (sympy.Le(sympy.Max(dx, dy) - sympy.Min(dx, dz), 10), [dx - dz <= 10, dy - dx <= 10, dy - dz <= 10]),
    (sympy.Le(sympy.Max(dx, 2 * dy) + 3, 40), [dx + 3 <= 40, 2 * dy + 3 <= 40]),
], ids=["max-below-min", "abs", "min-above", "max-minus-min", "max-plus-constant"])
def test_max_and_min_inequalities_split_without_a_branch(guard, expected):
    ranges = {"dx": (1, 100), "dy": (1, 100), "dz": (1, 100)}
    hints = {"dx": 5, "dy": 9, "dz": 3}
    (alt,) = alternatives(guard, hints, ranges)
    assert {sympy.simplify(a) for a in alt} >= {sympy.simplify(e) for e in expected}, alt
    for atom in alt:
        assert evaluate(atom, hints) is True
    assert_implies(alt, guard, ranges)
    assert_implies([guard], sympy.And(*alt), ranges)  # and back: an equivalence, nothing narrowed



def test_a_min_on_the_smaller_side_is_the_or_of_its_arguments():
    # Min(a, b) <= 12 at (19, 3): b <= 12 alone, no branch condition b <= a (which refused (5, 3))
    check(sympy.Min(dx, dy) <= 12, UNBOUNDED, {"dx": 19, "dy": 3}, [[dy <= 12]])
    # both arguments satisfy it at the example: each is an alternative
    check(sympy.Min(dx, dy) <= 12, UNBOUNDED, {"dx": 5, "dy": 3}, [[dx <= 12], [dy <= 12]])
    # a Min inside a sum distributes: Min(dy, 6) + dx <= 11 at (2, 17) is dx <= 5
    check(sympy.Min(dy, 6) + dx <= 11, UNBOUNDED, {"dx": 2, "dy": 17}, [[dx <= 5]])


def test_a_max_on_the_larger_side_is_the_or_of_its_arguments():
    check(sympy.Max(dx, dy) >= 4, {"dx": (3, 16), "dy": (0, 20)}, {"dx": 11, "dy": 13}, [[dx >= 4], [dy >= 4]])
    check(sympy.Max(dx, dy) > 4, UNBOUNDED, {"dx": 2, "dy": 13}, [[dy > 4]])
