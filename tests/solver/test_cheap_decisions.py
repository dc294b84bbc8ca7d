"""Issue 13, "The mechanism": cheaper decision paths before z3, and one canonical form per guard.

- ``ShapeSolver.declare(..., example=)``: a refutation tries the example sizes with one
  symbol moved before z3 (a new relation over a size no assumption has met), and checks
  each point against every connected assumption, so a wrong example is only a missed
  shortcut, never a wrong verdict;
- ``canonicalize`` caches by the expression and its symbols' intervals: the same guard
  asked again (capture's canonicalization, the query, the assumption) is not rebuilt, and
  other intervals give their own form.
"""
from __future__ import annotations

import itertools

import pytest
import sympy

from solver import ShapeSolver, canonicalize, evaluate
from solver import canon as canon_module

pytestmark = pytest.mark.z3

floor = sympy.floor


def chain(n: int, examples: bool = True):
    """s1 tied to n other sizes by assumed equalities s1 == ceil(s_i / a) (capture's Dim.AUTO relations).

    The examples (s1 = 8, s_i = 8*a) satisfy every assumption, as capture's always do.
    """
    s = ShapeSolver()
    strides = {i: 1 + i % 4 for i in range(2, n + 2)}
    syms = {1: s.declare("s1", 1, None, example=8 if examples else None)}
    for i, a in strides.items():
        syms[i] = s.declare(f"s{i}", 1, None, example=8 * a if examples else None)
        s.assume(sympy.Eq(syms[1], floor((syms[i] + a - 1) / a)))
    return s, syms


def test_a_new_relation_is_refuted_next_to_the_examples_without_z3():
    s, syms = chain(12)
    new = s.declare("t", 1, None, example=24)
    before = s.stats["z3_calls"]
    v = s.implies(sympy.Eq(syms[1], floor((new + 2) / 3)))
    assert v.refuted and s.stats["z3_calls"] == before
    cex = v.counterexample
    assert evaluate(sympy.Eq(syms[1], floor((new + 2) / 3)), cex) is False
    for a in s.assumptions:           # a real counterexample: every assumption holds there
        assert evaluate(a, cex) is True


def test_without_examples_z3_decides_the_same():
    s, syms = chain(12, examples=False)
    new = s.declare("t", 1, None)
    before = s.stats["z3_calls"]
    v = s.implies(sympy.Eq(syms[1], floor((new + 2) / 3)))
    assert v.refuted and s.stats["z3_calls"] > before


def test_a_wrong_example_never_makes_a_wrong_verdict():
    s = ShapeSolver()
    a = s.declare("a", 1, 100, example=7)
    b = s.declare("b", 1, 100, example=50)      # breaks the assumption below: b == 2*a
    s.assume(sympy.Eq(b, 2 * a))
    assert s.implies(sympy.Eq(sympy.Mod(b, 2), 0)).proved
    v = s.implies(b <= 100)
    assert v.proved
    v = s.implies(a <= 40)
    assert v.refuted and v.counterexample["b"] == 2 * v.counterexample["a"] and v.counterexample["a"] > 40


def test_the_probe_agrees_with_z3_on_small_grids():
    """Every verdict with examples equals the one without, over a family of guards."""
    x, y = sympy.symbols("x y", integer=True, positive=True)
    guards = [sympy.Eq(floor((x + 1) / 2), floor((y + k) / 3)) for k in range(3)]
    guards += [x + y <= 20, sympy.Eq(sympy.Mod(x + y, 2), 0), sympy.Eq(x, sympy.Max(1, y - 2))]
    for g, ex in itertools.product(guards, [(3, 4), (5, 5), (1, 9)]):
        with_ex, without = ShapeSolver(), ShapeSolver()
        with_ex.declare("x", 1, 12, example=ex[0])
        with_ex.declare("y", 1, 12, example=ex[1])
        without.declare("x", 1, 12)
        without.declare("y", 1, 12)
        for s in (with_ex, without):
            s.assume(x + y >= 4)
        v1, v2 = with_ex.implies(g), without.implies(g)
        assert v1.status == v2.status, (g, ex)
        if v1.refuted:
            assert evaluate(g, v1.counterexample) is False and v1.counterexample["x"] + v1.counterexample["y"] >= 4


def test_canonical_forms_are_cached_per_interval():
    b = sympy.Symbol("b", integer=True)
    n = sympy.Symbol("n", integer=True, positive=True)
    g = sympy.Eq(b * n, 4 * b)
    canon_module._CACHE.clear()
    assert canonicalize(g, {b: (1, 8), n: (1, 64)}) == sympy.Eq(n, 4)   # b >= 1: the factor b drops
    assert len(canon_module._CACHE) == 1
    assert canonicalize(g, {"b": (1, 8), "n": (1, 64)}) == sympy.Eq(n, 4)  # same intervals, by name
    assert len(canon_module._CACHE) == 1
    assert canonicalize(g, {b: (0, 8), n: (1, 64)}) != sympy.Eq(n, 4)    # b may be 0: it stays
    # intervals of symbols the guard does not use play no part
    assert canonicalize(g, {b: (1, 8), n: (1, 64), "other": (3, 3)}) == sympy.Eq(n, 4)
    assert len(canon_module._CACHE) == 2
