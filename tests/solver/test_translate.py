"""sympy -> z3 translation: every supported construct agrees with sympy's own
evaluation at concrete sizes; unsupported constructs are named in the error."""
from __future__ import annotations

import itertools
import re

import pytest
import sympy
import z3

from solver import Translator, UnsupportedExpressionError, evaluate, to_z3

pytestmark = pytest.mark.z3

a, b = sympy.symbols("a b", integer=True)
s = sympy.Symbol("s", integer=True, positive=True)

EXPRS = [
    a + 3 * b - 7,
    a * b - 2,
    a ** 3 - b ** 2,
    sympy.floor(a / 4),
    sympy.floor((a + 63) / 64),
    sympy.floor(a / -3),
    sympy.floor(a / b),
    sympy.ceiling(a / 5),
    sympy.Mod(a, 4),
    sympy.Mod(a, -3),
    sympy.Mod(a, b),
    sympy.Mod(a ** 2 + a, 8),
    sympy.Min(a, b, 3),
    sympy.Max(1, 16 * sympy.floor((a + 63) / 64)),
    sympy.Abs(a - b),
    sympy.Piecewise((a, a > b), (b - 1, True)),
]

BOOLS = [
    sympy.Eq(a, b), sympy.Ne(a, 2 * b), a < b, a <= b + 1, a > 3, a >= b,
    sympy.And(a > 0, b < 2), sympy.Or(sympy.Eq(a, b), sympy.Eq(a, 1)), sympy.Not(sympy.Eq(a, 3)),
    sympy.Implies(a > 0, b > 0), sympy.Xor(a > 0, b > 0), sympy.Eq(a / 2, 3),
]

def decided(solver):
    """``solver.check()`` under a timeout: a query z3 cannot settle fails naming why, never hangs the suite."""
    solver.set("timeout", 20000)  # z3's time on one query varies with its context's history
    verdict = solver.check()
    assert verdict != z3.unknown, f"z3 could not decide {solver.assertions()} ({solver.reason_unknown()})"
    return verdict


POINTS = [(x, y) for x, y in itertools.product([-7, -3, -1, 0, 1, 2, 5, 9, 64, 65], [-4, -1, 1, 2, 3, 7])]


def _z3_value(expr, x, y):
    t = Translator()
    e = t(expr)
    sub = z3.substitute(e, (t.var("a"), z3.IntVal(x)), (t.var("b"), z3.IntVal(y)))
    v = z3.simplify(sub)
    if z3.is_true(v):
        return True
    if z3.is_false(v):
        return False
    if z3.is_rational_value(v) and not z3.is_int_value(v):
        return sympy.Rational(v.numerator_as_long(), v.denominator_as_long())
    return v.as_long()


@pytest.mark.parametrize("expr", EXPRS + BOOLS, ids=str)
def test_translation_matches_sympy_at_points(expr):
    for x, y in POINTS:
        if expr.has(sympy.floor, sympy.Mod) and y == 0:
            continue
        want = evaluate(expr, {"a": x, "b": y})
        assert _z3_value(expr, x, y) == want, (expr, x, y)


def test_constants_and_booleans():
    assert z3.is_true(z3.simplify(to_z3(sympy.true)))
    assert z3.is_false(z3.simplify(to_z3(sympy.false)))
    assert z3.simplify(to_z3(sympy.Integer(5))).as_long() == 5
    half = z3.simplify(to_z3(sympy.Rational(1, 2)))
    assert (half.numerator_as_long(), half.denominator_as_long()) == (1, 2)


def test_same_name_same_variable():
    t = Translator()
    plain = sympy.Symbol("S")
    sized = sympy.Symbol("S", integer=True, positive=True)
    assert t(plain).eq(t(sized))


@pytest.mark.parametrize("name", ["S", "N", "E", "I", "lambda", "_n"])
def test_any_identifier_is_a_size(name):
    sym = sympy.Symbol(name, integer=True, positive=True)
    solver = z3.Solver()
    solver.add(to_z3(sympy.Eq(2 * sym, 8)))
    assert decided(solver) == z3.sat


@pytest.mark.parametrize("expr, construct", [
    (sympy.sin(a), "sin"),
    (sympy.sqrt(s), "Pow"),
    (sympy.Float(1.5) * a, "Float"),
    (sympy.log(s), "log"),
])
def test_unsupported_construct_is_named(expr, construct):
    with pytest.raises(UnsupportedExpressionError, match=re.escape(f"`{construct}`")) as info:
        to_z3(expr)
    assert info.value.construct == construct


def test_piecewise_without_default_is_rejected():
    pw = sympy.Piecewise((a, a > 0), (b, b > 0))
    with pytest.raises(UnsupportedExpressionError, match="final"):
        to_z3(pw)


# -- forms sympy's own evaluation produces (issue 13) -------------------------------------------------
p, q = sympy.symbols("p q", integer=True, positive=True)

RATIONAL_FORMS = [
    sympy.Mod(p * p - q * q, p + q),          # sympy: (p + q)*Mod((p**2 - q**2)/(p + q), 1)
    sympy.Mod(p / 2, 1),
    sympy.Mod(3 * p / 2, 3),
    2 * sympy.Mod(p / 2, 1),
    sympy.Mod(p * q + 1, q),
    sympy.Mod(p ** 2 + 3, p + 1),
    sympy.floor((p * p + 3) / (p + 1)),
    sympy.ceiling((p * p - q * q + 1) / (p + q)),
    sympy.Mod(p * q, p + q),
]


def test_sympy_rewrites_mod_into_a_rational_form():
    # the reason these forms exist: sympy does not keep Mod(p*p - q*q, p + q) as written
    e = sympy.Mod(p * p - q * q, p + q)
    assert isinstance(e, sympy.Mul) and any(isinstance(f, sympy.Mod) and f.args[1] == 1 for f in e.args)


@pytest.mark.parametrize("expr", RATIONAL_FORMS, ids=str)
def test_rational_forms_translate_and_match_sympy(expr):
    t = Translator()
    e = t(expr)
    for x, y in itertools.product([1, 2, 3, 5, 8, 13, 64], [1, 2, 4, 7, 9]):
        sub = z3.simplify(z3.substitute(e, (t.var("p"), z3.IntVal(x)), (t.var("q"), z3.IntVal(y))))
        if z3.is_rational_value(sub) and not z3.is_int_value(sub):
            got = sympy.Rational(sub.numerator_as_long(), sub.denominator_as_long())
        else:
            got = sub.as_long()
        exact = expr.xreplace({s_: {"p": x, "q": y}[s_.name] for s_ in expr.free_symbols})  # sympy's value
        assert got == exact, (expr, x, y)


def test_difference_of_squares_mod_is_proved():
    from solver import ShapeSolver

    s = ShapeSolver()
    a_, b_ = s.declare("p"), s.declare("q")
    assert s.implies(sympy.Eq(sympy.Mod(a_ * a_ - b_ * b_, a_ + b_), 0)).status == "proved"
    small = ShapeSolver()
    c_, d_ = small.declare("p", 1, 10), small.declare("q", 1, 10)
    v = small.implies(sympy.Eq(sympy.Mod(c_ * c_ + d_, c_ + d_), 0))   # false in general
    assert v.status == "refuted" and evaluate(sympy.Mod(p * p + q, p + q), v.counterexample) != 0
    # and the same fact written with floor
    f = sympy.floor((a_ * a_ - b_ * b_) / (a_ + b_))
    assert s.implies(sympy.Eq(a_ * a_ - b_ * b_ - (a_ + b_) * f, 0)).status == "proved"


def test_rational_mod_identity_is_sound():
    # Mod(n1/d1, n2/d2) == Mod(n1*d2, n2*d1)/(d1*d2): z3 proves the translation equals the
    # definition x - m*floor(x/m) over every integer (the linear cases; nonlinear ones at points above)
    x = z3.Int("p")
    t = Translator()
    for expr, direct in [
        (sympy.Mod(p / 2, 1), z3.ToReal(x) / 2 - z3.ToReal(x / 2)),          # x/2 - floor(x/2)
        (sympy.Mod(3 * p / 2, 3), z3.ToReal(3 * x) / 2 - 3 * z3.ToReal(x / 2)),
    ]:
        s = z3.Solver()
        s.add(t(expr) != direct)
        assert decided(s) == z3.unsat, expr


def test_polynomial_division_reduction_is_sound():
    # Mod(q*d + r, d) == Mod(r, d) and floor((q*d + r)/d) == q + floor(r/d) for an integer polynomial q:
    # z3 proves the reduced translation equals the plain one wherever the divisor is nonzero
    from solver.translate import _floordiv

    t = Translator()
    x, y = t.var("p"), t.var("q")
    for expr, plain in [
        (sympy.Mod(p ** 2 + 3, p + 1), (x * x + 3) - (x + 1) * _floordiv(x * x + 3, x + 1, None)),
        (sympy.floor((p * p + 3) / (p + 1)), _floordiv(x * x + 3, x + 1, None)),
        (sympy.Mod(p * q + 1, q), (x * y + 1) - y * _floordiv(x * y + 1, y, None)),
    ]:
        s = z3.Solver()
        s.set("timeout", 20000)
        s.add(x >= 1, x <= 50, y >= 1, y <= 50)
        s.add(t(expr) != plain)
        verdict = s.check()
        if verdict == z3.unknown:  # non-linear: z3 may give up on a loaded machine; the box is small, so look at every point
            for a, b in itertools.product(range(1, 51), range(1, 51)):
                sub = [(x, z3.IntVal(a)), (y, z3.IntVal(b))]
                assert z3.simplify(z3.substitute(t(expr), *sub)).eq(z3.simplify(z3.substitute(plain, *sub))), (expr, a, b)
            continue
        assert verdict == z3.unsat, expr
