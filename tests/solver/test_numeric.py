"""numeric.value: exact integer evaluation (the solver's one evaluator, evaluate_exact) agrees with sympy's own at every point
(negative sizes, rationals, floor/ceiling/Mod of either sign, Min/Max/Abs/Piecewise,
relations and logic); a division by zero or an unknown construct is "cannot tell"."""
from __future__ import annotations

import itertools
import random

import pytest
import sympy

from solver import evaluate
from solver.numeric import NumericError, holds, value

a, b = sympy.symbols("a b", integer=True)
POINTS = list(itertools.product([-7, -3, -1, 0, 1, 2, 5, 9, 64, 65], [-4, -1, 1, 2, 3, 7]))

EXPRS = [
    a + 3 * b - 7, a * b - 2, a ** 3 - b ** 2, sympy.floor(a / 4), sympy.floor((a + 63) / 64),
    sympy.floor(a / -3), sympy.floor(a / b), sympy.ceiling(a / 5), sympy.ceiling(a / b), sympy.Mod(a, 4),
    sympy.Mod(a, -3), sympy.Mod(a, b), sympy.Mod(a ** 2 + a, 8), sympy.Mod(3 * a / 2, 3), sympy.Mod(a / 2, 1),
    sympy.Min(a, b, 3), sympy.Max(1, 16 * sympy.floor((a + 63) / 64)), sympy.Abs(a - b),
    sympy.Piecewise((a, a > b), (b - 1, True)), a / 2 + b / 3, sympy.floor(sympy.floor(a / 2) / 3),
]
BOOLS = [
    sympy.Eq(a, b), sympy.Ne(a, 2 * b), a < b, a <= b + 1, a > 3, a >= b, sympy.Eq(a / 2, 3),
    sympy.And(a > 0, b < 2), sympy.Or(sympy.Eq(a, b), sympy.Eq(a, 1)), sympy.Not(sympy.Eq(a, 3)),
    sympy.Eq(sympy.Mod(a, b), 0),
]


@pytest.mark.parametrize("expr", EXPRS + BOOLS, ids=str)
def test_matches_sympy_at_points(expr):
    for x, y in POINTS:
        env = {"a": x, "b": y}
        want = expr.xreplace({a: x, b: y})  # sympy's own exact value
        if not (want.is_Boolean or want.is_finite):
            want = None  # sympy gives nan/zoo (a zero divisor): numeric must not invent a value
        if want is None:
            with pytest.raises(NumericError):
                value(expr, env)
        else:
            assert value(expr, env) == want, (expr, env)


def test_fuzz_against_sympy():
    rng = random.Random(11)

    def expr(depth):
        if depth == 0 or rng.random() < 0.25:
            return rng.choice([a, b, sympy.Integer(rng.randint(-5, 9))])
        x, y = expr(depth - 1), expr(depth - 1)
        k = rng.randint(1, 6)
        return rng.choice([lambda: x + y, lambda: x - y, lambda: x * y, lambda: sympy.floor(x / k),
                           lambda: sympy.ceiling(x / k), lambda: sympy.Mod(x, k), lambda: sympy.Min(x, y),
                           lambda: sympy.Max(x, y), lambda: sympy.Abs(x)])()
    for _ in range(300):
        e = expr(4)
        env = {"a": rng.randint(-20, 40), "b": rng.randint(-20, 40)}
        assert value(e, env) == e.xreplace({a: env["a"], b: env["b"]}), (e, env)
        assert float(value(e, env)) == evaluate(e, env)


def test_cannot_tell_is_none():
    assert holds(sympy.Eq(sympy.Mod(a, b), 0), {"a": 3, "b": 0}) is None     # Mod(3, 0)
    assert holds(sympy.Eq(a, 1), {"b": 1}) is None                            # no value for a
    assert holds(a + 1, {"a": 1}) is None                                     # not a guard
    assert holds(a <= 4, {"a": 4}) is True and holds(a <= 4, {"a": 5}) is False
