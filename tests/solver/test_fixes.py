"""suggest_fixes: issue 2's right values 4-10 and 12 as exact lines, plus the
rules (no fix for a proved guard, none equal to the declaration, conjunction
per symbol, verification) and a brute-force check that the fixed contract is
sound (admits only sizes satisfying every guard) and keeps the example."""
from __future__ import annotations

import itertools

import pytest
import sympy

from solver import ConstantFix, RangeFix, RelationFix, evaluate, suggest_fixes

pytestmark = pytest.mark.z3


def sym(name):
    return sympy.Symbol(name, integer=True, positive=True)


s, dx, dy, b, n, N, E, lam = (sym(x) for x in ["s", "dx", "dy", "b", "n", "N", "E", "lambda"])


def admitted(fs, dims, point) -> bool:
    """Does the fixed contract accept ``point`` ({dim: size})? Mirrors how refine applies lines."""
    fixes = {f.name: f for f in fs.fixes}
    new_roots = {f.name: f for f in fs.fixes if isinstance(f, RangeFix) and f.new_root}
    for name, v in point.items():
        f = fixes.get(name)
        lo, hi = dims[name]
        if f is None:
            ok = v >= lo and (hi is None or v <= hi)
        elif isinstance(f, RangeFix):
            ok = v >= (f.lower if f.lower is not None else 0) and (f.upper is None or v <= f.upper)
        elif isinstance(f, ConstantFix):
            ok = v == f.value
        else:
            if f.root in new_roots:
                r = new_roots[f.root]
                q, rem = divmod(v - f.offset, f.scale)
                ok = rem == 0 and q >= (r.lower if r.lower is not None else 0) and (r.upper is None or q <= r.upper)
            else:
                ok = v == f.scale * point[f.root] + f.offset and admitted(fs, dims, {f.root: point[f.root]})
        if not ok:
            return False
    return True


def check_contract(fs, guards, dims, hints, grid):
    """Sound on the grid, keeps the example, and every fix was verified."""
    assert fs.verified
    assert admitted(fs, dims, hints)
    names = list(grid)
    for values in itertools.product(*(grid[k] for k in names)):
        point = dict(zip(names, values))
        if admitted(fs, dims, point):
            for g in guards:
                if g not in [u.guard for u in fs.unfixable]:
                    assert evaluate(g, point) is True, (g, point, fs.lines)


# -- issue 2 right values ------------------------------------------------------------------
def test_rv4_conjoined_bounds_give_one_line():
    guards = [s <= 512, sympy.Ne(s, 512)]
    fs = suggest_fixes(guards, dims={"s": (1, None)}, hints={"s": 7})
    assert fs.lines == ["s = Dim('s', max=511)"]
    assert fs.fixes == [RangeFix("s", 1, 511)]
    check_contract(fs, guards, {"s": (1, None)}, {"s": 7}, {"s": [1, 7, 510, 511, 512, 513, 4096]})


def test_rv5_broadcast_resolved_by_example_disjunct():
    guards = [sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs = suggest_fixes(guards, dims, {"dx": 8, "dy": 8})
    assert fs.lines in (["dy = dx"], ["dx = dy"])
    assert fs.unfixable == []
    v = fs.checks[0].verdict
    assert v.refuted and evaluate(guards[0], v.counterexample) is False
    check_contract(fs, guards, dims, {"dx": 8, "dy": 8}, {"dx": [1, 2, 7, 100], "dy": [1, 2, 7, 100]})


def test_rv6_offset_relation_and_forced_root_range():
    guards = [sympy.Eq(dx - 1, dy)]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs = suggest_fixes(guards, dims, {"dx": 9, "dy": 8})
    assert sorted(fs.lines) == sorted(["dx = dy + 1", "dy = Dim('dy', max=99)"])
    assert RelationFix("dx", "dy", 1, 1) in fs.fixes
    check_contract(fs, guards, dims, {"dx": 9, "dy": 8}, {"dx": [2, 9, 100, 101], "dy": [1, 8, 99, 100]})


def test_rv7_double_relation_forces_max_on_root():
    guards = [sympy.Eq(2 * dx, dy)]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs = suggest_fixes(guards, dims, {"dx": 4, "dy": 8})
    assert sorted(fs.lines) == sorted(["dy = 2*dx", "dx = Dim('dx', max=50)"])
    check_contract(fs, guards, dims, {"dx": 4, "dy": 8}, {"dx": [1, 4, 50, 51], "dy": [2, 8, 100, 102]})


def test_rv8_specialization():
    fs = suggest_fixes([sympy.Eq(6 * b, 24)], {"b": (1, 64)}, {"b": 4})
    assert fs.lines == ["b = 4"]
    assert fs.fixes == [ConstantFix("b", 4)]


def test_rv9_divisibility_root():
    guards = [sympy.Eq(sympy.Mod(n, 4), 0)]
    fs = suggest_fixes(guards, {"n": (1, 1000)}, {"n": 8})
    assert fs.lines == ["_n = Dim('_n', max=250)", "n = 4*_n"]
    check_contract(fs, guards, {"n": (1, 1000)}, {"n": 8}, {"n": list(range(1, 1010))})


def test_offset_divisibility_gets_offset_root():
    # x[1:].reshape(-1, 8) on (n, 4): Eq(Mod(n + 1, 2), 0); pinning n = 5 was the old answer
    guards = [sympy.Eq(sympy.Mod(n + 1, 2), 0)]
    fs = suggest_fixes(guards, {"n": (1, 100)}, {"n": 5})
    # n = 1 (x[1:] empty) is a valid size, so the root may be 0: the widest lattice keeps it
    assert fs.lines == ["_n = Dim('_n', min=0, max=49)", "n = 2*_n + 1"]
    assert fs.fixes == [RangeFix("_n", 0, 49, new_root=True), RelationFix("n", "_n", 2, 1)]
    adm = [v for v in range(1, 110) if admitted(fs, {"n": (1, 100)}, {"n": v})]
    assert adm == list(range(1, 100, 2))
    check_contract(fs, guards, {"n": (1, 100)}, {"n": 5}, {"n": list(range(1, 110))})


def test_offset_root_with_lower_bound_and_wider_modulus():
    guards = [sympy.Eq(sympy.Mod(n + 1, 4), 0), n >= 8]
    fs = suggest_fixes(guards, {"n": (1, 1000)}, {"n": 11})
    assert fs.lines == ["_n = Dim('_n', min=2, max=249)", "n = 4*_n + 3"]
    check_contract(fs, guards, {"n": (1, 1000)}, {"n": 11}, {"n": list(range(1, 1010))})


def test_rv10_divisibility_from_nonlinear_mods():
    guards = [sympy.Eq(sympy.Mod(s ** 2 + s, 8), 0), sympy.Ne(sympy.Mod(s + 1, 8), 0)]
    fs = suggest_fixes(guards, {"s": (1, 1024)}, {"s": 16})
    assert fs.lines == ["_s = Dim('_s', max=128)", "s = 8*_s"]
    check_contract(fs, guards, {"s": (1, 1024)}, {"s": 16}, {"s": list(range(1, 1030))})


def test_rv12_nonlinear_multi_dim_guard_is_unfixable():
    guard = (dx - dy) ** 2 <= 100   # not monotone in either dim: no box's corners decide it
    fs = suggest_fixes([guard], {"dx": (1, 1024), "dy": (1, 1024)}, {"dx": 32, "dy": 32})
    assert fs.lines == []
    assert len(fs.unfixable) == 1
    g, cex = fs.unfixable[0]
    assert g == guard and evaluate(guard, cex) is False
    assert all(1 <= cex[k] <= 1024 for k in ("dx", "dy"))
    assert "dx, dy" in fs.unfixable[0].reason


# -- rules -------------------------------------------------------------------------------
def test_proved_guard_gives_no_fix():
    fs = suggest_fixes([sympy.Eq(sympy.Min(128 * s, 512 * s), 128 * s), s <= 2048],
                       {"s": (1, 2048)}, {"s": 100})
    assert fs.lines == [] and fs.unfixable == []
    assert all(c.verdict.proved for c in fs.checks)


def test_branch_guard_gives_min_and_keeps_declared_max():
    fs = suggest_fixes([b > 4], {"b": (1, 64)}, {"b": 8})
    assert fs.lines == ["b = Dim('b', min=5, max=64)"]


def test_even_pooling_guard_from_reshape():
    guards = [sympy.Eq(3 * b * s, 6 * b * sympy.floor(s / 2))]
    dims = {"b": (1, 16), "s": (1, 64)}
    fs = suggest_fixes(guards, dims, {"b": 2, "s": 10})
    assert fs.lines == ["_s = Dim('_s', max=32)", "s = 2*_s"]
    assert str(fs.checks[0].canonical) == "Eq(Mod(s, 2), 0)"
    check_contract(fs, guards, dims, {"b": 2, "s": 10}, {"b": [1, 16], "s": list(range(1, 70))})


def test_divisibility_root_gets_min_when_needed():
    guards = [sympy.Eq(sympy.Mod(n, 4), 0), n >= 8]
    fs = suggest_fixes(guards, {"n": (1, 1000)}, {"n": 16})
    assert fs.lines == ["_n = Dim('_n', min=2, max=250)", "n = 4*_n"]


def test_min_slice_guard_becomes_max():
    guards = [sympy.Eq(s, sympy.Min(512, s))]
    dims = {"b": (1, 64), "s": (1, 1024)}
    fs = suggest_fixes(guards, dims, {"b": 2, "s": 16})
    assert fs.lines == ["s = Dim('s', max=512)"]
    assert fs.checks[0].canonical == (s <= 512)


def test_inner_dim_specialized_to_weight_rows():
    fs = suggest_fixes([sympy.Eq(n, 16)], {"n": (1, 64)}, {"n": 16})
    assert fs.lines == ["n = 16"]


def test_example_size_one_prefers_relation_over_pinning():
    guards = [sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))]
    fs = suggest_fixes(guards, {"dx": (1, 100), "dy": (1, 100)}, {"dx": 1, "dy": 1})
    assert fs.lines == ["dy = dx"]


def test_broadcast_example_with_size_one_side_specializes_that_side():
    guards = [sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))]
    fs = suggest_fixes(guards, {"dx": (1, 100), "dy": (1, 100)}, {"dx": 1, "dy": 7})
    assert fs.lines == ["dx = 1"]


def test_chained_relations_share_one_root():
    a, c = sym("a"), sym("c")
    guards = [sympy.Eq(a, b), sympy.Eq(b, c)]
    dims = {"a": (1, 50), "b": (1, 100), "c": (1, 100)}
    fs = suggest_fixes(guards, dims, {"a": 5, "b": 5, "c": 5})
    assert sorted(fs.lines) == sorted(["b = a", "c = a"])
    check_contract(fs, guards, dims, {"a": 5, "b": 5, "c": 5},
                   {"a": [1, 5, 50], "b": [1, 5, 50, 51], "c": [1, 5, 50, 60]})


def test_relation_substitutes_into_other_guards():
    # after dy = dx, dx*dy <= 4096 is a one-dim guard dx**2 <= 4096: fixable as a range
    guards = [sympy.Eq(dx, dy), dx * dy <= 4096]
    dims = {"dx": (1, 1024), "dy": (1, 1024)}
    fs = suggest_fixes(guards, dims, {"dx": 32, "dy": 32})
    assert sorted(fs.lines) == sorted(["dy = dx", "dx = Dim('dx', max=64)"])
    assert fs.unfixable == []


def test_sum_of_dims_gets_a_box_around_the_example():
    # no Dim form states dx + dy <= 50: the fix is one box that implies it, the slack shared
    fs = suggest_fixes([dx + dy <= 50], {"dx": (1, 100), "dy": (1, 100)}, {"dx": 10, "dy": 10})
    assert fs.lines == ["dx = Dim('dx', max=25)", "dy = Dim('dy', max=25)"] and fs.unfixable == []
    assert fs.boxed == [dx + dy <= 50] and fs.verified


def test_guard_false_at_example_is_unfixable():
    fs = suggest_fixes([s <= 4], {"s": (1, 100)}, {"s": 8})
    assert fs.lines == []
    assert fs.unfixable[0].counterexample == {"s": 8}


@pytest.mark.parametrize("name", ["S", "N", "E", "I", "lambda"])
def test_special_names(name):
    x = sympy.Symbol(name, integer=True, positive=True)
    fs = suggest_fixes([x <= 10], {name: (1, None)}, {name: 3})
    assert fs.lines == [f"{name} = Dim('{name}', max=10)"]


def test_zero_min_dim_range_prints_min():
    z = sympy.Symbol("z", integer=True, nonnegative=True)
    fs = suggest_fixes([z <= 10], {"z": (0, 100)}, {"z": 0})
    assert fs.lines == ["z = Dim('z', min=0, max=10)"]


def test_missing_hint_raises():
    with pytest.raises(ValueError, match="no example size"):
        suggest_fixes([s <= 4], {"s": (1, 100)}, {})


# -- line forms the violation formatter and refine rely on ------------------------------------
@pytest.mark.parametrize("fix, line", [
    (RangeFix("seq", 1, 512), "seq = Dim('seq', max=512)"),
    (RangeFix("b", 5, 64), "b = Dim('b', min=5, max=64)"),
    (RangeFix("z", 0, None), "z = Dim('z', min=0)"),
    (RangeFix("_dx", 1, 250, new_root=True), "_dx = Dim('_dx', max=250)"),
    (ConstantFix("batch", 4), "batch = 4"),
    (RelationFix("dy", "dx"), "dy = dx"),
    (RelationFix("dy", "dx", 1, 1), "dy = dx + 1"),
    (RelationFix("dy", "dx", 1, -1), "dy = dx - 1"),
    (RelationFix("dy", "dx", 2, 0), "dy = 2*dx"),
    (RelationFix("dy", "dx", 2, 1), "dy = 2*dx + 1"),
    (RelationFix("dx", "_dx", 4, 0), "dx = 4*_dx"),
])
def test_line_forms(fix, line):
    assert fix.line == line


def test_negative_offset_with_scale():
    guards = [sympy.Eq(dy, 2 * dx - 1)]
    dims = {"dx": (1, 100), "dy": (1, 100)}
    fs = suggest_fixes(guards, dims, {"dx": 4, "dy": 7})
    assert sorted(fs.lines) == sorted(["dy = 2*dx - 1", "dx = Dim('dx', max=50)"])
    check_contract(fs, guards, dims, {"dx": 4, "dy": 7}, {"dx": [1, 4, 50, 51], "dy": [1, 7, 99, 100, 101]})


def test_fix_set_is_machine_readable_and_str():
    fs = suggest_fixes([sympy.Eq(sympy.Mod(n, 4), 0)], {"n": (1, 1000)}, {"n": 8})
    assert fs.fixes == [RangeFix("_n", 1, 250, new_root=True), RelationFix("n", "_n", 4, 0)]
    assert str(fs) == "_n = Dim('_n', max=250)\nn = 4*_n"


# -- seeded fuzz: single-dim guard sets ---------------------------------------------------------
def _widest_interval(ok, h, lo, hi):
    a = h
    while a - 1 >= lo and ok(a - 1):
        a -= 1
    b = h
    while b + 1 <= hi and ok(b + 1):
        b += 1
    return b - a + 1


def test_fuzz_single_dim_fixes_are_sound_and_widest():
    import random

    seed = 7
    rng = random.Random(seed)
    for case in range(40):
        hi = rng.choice([60, 100, 200])
        guards = []
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(["le", "ge", "ne", "mod0", "mod"])
            c = rng.randint(2, hi)
            k = rng.choice([2, 3, 4, 6, 8])
            guards.append({"le": s <= c, "ge": s >= c, "ne": sympy.Ne(s, c),
                           "mod0": sympy.Eq(sympy.Mod(s, k), 0),
                           "mod": sympy.Eq(sympy.Mod(s, k), rng.randint(0, k - 1))}[kind])
        guards = [g for g in guards if g not in (sympy.true, sympy.false)]

        def ok(v):
            return all(evaluate(g, {"s": v}) for g in guards)
        good = [v for v in range(1, hi + 1) if ok(v)]
        if not guards or not good:
            continue
        h = rng.choice(good)
        fs = suggest_fixes(guards, {"s": (1, hi)}, {"s": h})
        where = f"seed={seed} case={case} guards={guards} hint={h} lines={fs.lines}"
        assert fs.verified and not fs.unfixable, where
        adm = [v for v in range(1, hi + 1) if admitted(fs, {"s": (1, hi)}, {"s": v})]
        assert h in adm, where
        assert all(ok(v) for v in adm), where
        if len(good) < hi:
            assert fs.lines, where
        # never narrower than the widest contiguous range around the example
        assert len(adm) >= _widest_interval(ok, h, 1, hi), where


def test_relation_whose_root_becomes_derived_moves_its_forced_range():
    a, c = sym("a"), sym("c")
    guards = [sympy.Eq(b, c), sympy.Eq(a, b)]
    dims = {"a": (1, 100), "b": (1, 100), "c": (1, 30)}
    fs = suggest_fixes(guards, dims, {"a": 5, "b": 5, "c": 5})
    assert sorted(fs.lines) == sorted(["a = Dim('a', max=30)", "b = a", "c = a"])
    check_contract(fs, guards, dims, {"a": 5, "b": 5, "c": 5},
                   {"a": [1, 5, 30, 31], "b": [1, 5, 30, 31], "c": [1, 5, 30, 31]})


def test_floor_equality_gets_the_relation_the_example_picks():
    # a == (b + 1) // 2 (x + y[::2]) holds when b == 2*a (example b even) or b == 2*a - 1 (odd)
    a, b = (sympy.Symbol(n, integer=True, positive=True) for n in "ab")
    guard = sympy.Eq(a, sympy.floor((b + 1) / 2))
    even = suggest_fixes([guard], {"a": (1, 64), "b": (1, 128)}, {"a": 5, "b": 10})
    assert even.lines == ["b = 2*a"] and even.verified
    odd = suggest_fixes([guard], {"a": (1, 64), "b": (1, 128)}, {"a": 5, "b": 9})
    assert odd.lines == ["b = 2*a - 1"] and odd.verified
    up = suggest_fixes([sympy.Eq(a, sympy.ceiling(b / 3))], {"a": (1, 64), "b": (1, 128)}, {"a": 4, "b": 11})
    assert up.lines == ["a = Dim('a', max=43)", "b = 3*a - 1"] and up.verified  # 3*a - 1 <= 128


def test_a_box_never_gives_a_dim_more_than_its_declared_range():
    # p + q <= 128 with q <= 4: q's share is capped by its range, p takes the rest
    p, q = (sympy.Symbol(n, integer=True, positive=True) for n in "pq")
    fs = suggest_fixes([p + q <= 128], {"p": (1, 200), "q": (1, 4)}, {"p": 10, "q": 2})
    assert fs.lines == ["p = Dim('p', max=124)"] and fs.verified


def test_a_strided_output_size_against_another_dim_gets_a_relation():
    # conv1d(k=3, stride=2) output + skip: (t - 3) // 2 + 1 == s  ->  t = 2*s + 1 (example t odd)
    t, s_ = (sympy.Symbol(n, integer=True, positive=True) for n in "ts")
    guard = sympy.Eq(sympy.floor((t - 3) / 2) + 1, s_)
    fs = suggest_fixes([guard], {"t": (1, 201), "s": (1, 100)}, {"t": 21, "s": 10})
    assert fs.lines == ["t = 2*s + 1"] and fs.verified
