"""The one expression printer (graph/printing.py): its Python form, its readable form, and the
mechanical checks that the tree has one printer, one UnsupportedExpressionError and one resolve_op."""
from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
import sympy

import solver
from tensorplay_export.graph.printing import UnsupportedExpressionError, format_guard, pyexpr
from tensorplay_export.records import ValueRange, format_bound, format_range, format_range_brackets

ROOT = Path(__file__).resolve().parent.parent
s = sympy.Symbol("s", integer=True, positive=True)
b = sympy.Symbol("b", integer=True, positive=True)
N = {s: "s", b: "b"}
floor, Mod, Min, Max = sympy.floor, sympy.Mod, sympy.Min, sympy.Max


def _values(expr, sv, bv):
    want = expr.subs({s: sv, b: bv})
    return bool(want) if isinstance(want, sympy.logic.boolalg.Boolean) else float(want)


# -- the Python form -----------------------------------------------------------------------------

@pytest.mark.parametrize("expr, text", [
    (s + 1, "s + 1"),
    (2 * s - 3, "2 * s - 3"),
    (3 - s, "3 - s"),
    (-s, "-s"),
    (s * b, "b * s"),
    (s**2, "s**2"),
    ((s + 1)**2, "(s + 1)**2"),
    (sympy.floor(s / 2), "s // 2"),
    (sympy.floor((s + 1) / 2), "(s + 1) // 2"),
    (2 * sympy.floor(s / 2), "2 * (s // 2)"),
    (sympy.floor(s / b), "s // b"),
    (sympy.ceiling(s / 4), "-(-s // 4)"),
    (sympy.Mod(s, 4), "s % 4"),
    (sympy.Mod(s + 1, b), "(s + 1) % b"),
    (sympy.Min(s, 512), "min(512, s)"),
    (sympy.Max(s, b, 8), "max(8, b, s)"),
    (sympy.Eq(sympy.Mod(s, 2), 0), "s % 2 == 0"),
    (sympy.Le(s, 512), "s <= 512"),
    (sympy.Ne(s, b), "s != b"),
    (sympy.And(s <= 512, sympy.Eq(b, 2 * s)), "b == 2 * s and s <= 512"),
    (sympy.Or(sympy.Eq(s, 1), sympy.Eq(s, b)), None),  # Or prints its args in sympy order
    (sympy.Not(sympy.Eq(s, 1)), "s != 1"),
    (sympy.Integer(7), "7"),
    (sympy.Rational(1, 2), "1 / 2"),
    (sympy.true, "True"),
    # negative coefficients
    (-2 * s, "-(2 * s)"),
    (3 - 2 * s, "3 - 2 * s"),
    (-2 * Mod(s, b), "-(2 * (s % b))"),
    (34 - 2 * Mod(s, 4), "34 - 2 * (s % 4)"),
    (-floor(s / 2), "-(s // 2)"),
    (s - floor(s / 2), "s - s // 2"),
    (b - 3 * floor((s + 1) / 2), "b - 3 * ((s + 1) // 2)"),
    (floor(-s / 4), "-s // 4"),
    # precedence of % and // beside *
    (Mod(3 * s, 2 * b), "3 * s % (2 * b)"),
    (floor(s * b / 4), "b * s // 4"),
    (sympy.Gt(2 * s, b + 1), "2 * s > b + 1"),
    (sympy.Or(sympy.Eq(s, 1), sympy.And(s > 3, sympy.Ne(b, 1))), "s > 3 and b != 1 or s == 1"),
    (sympy.Not(sympy.And(s < 3, b < 3)), "not (b < 3 and s < 3)"),
    (sympy.Abs(s - b), "abs(b - s)"),
])
def test_python_form(expr, text):
    got = pyexpr(expr, N)
    if text is not None:
        assert got == text
    # what it means: Python evaluates it to sympy's value at integer sizes
    for sv in (1, 2, 5, 16):
        for bv in (1, 3, 8):
            assert eval(got, {}, {"s": sv, "b": bv}) == _values(expr, sv, bv), (got, sv, bv)


def test_python_form_piecewise():
    pw = sympy.Piecewise((s, s < 8), (2 * s, s < 16), (0, True))
    text = pyexpr(pw, N)
    assert text == "(s if s < 8 else (2 * s if s < 16 else 0))"
    for v in (1, 8, 20):
        assert eval(text, {}, {"s": v}) == pw.subs(s, v)


def test_python_form_names_and_plain_values():
    S, E, I, lam = (sympy.Symbol(n, integer=True, positive=True) for n in ("S", "E", "I", "lambda"))
    assert pyexpr(S * E + I + lam, {S: "S", E: "E", I: "I", lam: "lambda_1"}) == "E * S + I + lambda_1"
    assert pyexpr(3, {}) == "3" and pyexpr(True, {}) == "True"
    with pytest.raises(KeyError, match="t"):
        pyexpr(sympy.Symbol("t") + 1, N)


@pytest.mark.parametrize("expr, construct, words", [
    (sympy.sin(s), "sin", "cannot generate Python for sin"),
    (sympy.Piecewise((s, s < 8)), "Piecewise", "final True"),
    (s**b, "Pow", "non-constant exponent"),
    (sympy.Eq(sympy.Mod(sympy.sin(s), 2), 0), "sin", "cannot generate Python for sin"),
])
def test_python_form_unsupported_names_the_construct(expr, construct, words):
    with pytest.raises(UnsupportedExpressionError, match=words) as info:
        pyexpr(expr, N)
    assert info.value.construct == construct  # and the message says it in words


def test_one_unsupported_expression_error():
    """Codegen's and the solver's are the same class, caught by either family of except clauses."""
    assert UnsupportedExpressionError is solver.UnsupportedExpressionError
    assert issubclass(UnsupportedExpressionError, TypeError)
    assert issubclass(UnsupportedExpressionError, NotImplementedError)
    with pytest.raises(UnsupportedExpressionError) as info:
        solver.to_z3(sympy.sin(s) > 0)
    assert info.value.construct == "sin" and "solver cannot translate `sin`" in str(info.value)
    for family in (TypeError, NotImplementedError):
        with pytest.raises(family):
            pyexpr(sympy.sin(s), N)


# -- the readable form ---------------------------------------------------------------------------

@pytest.mark.parametrize("expr, text", [
    # precedence: % and // bind like *
    (sympy.Eq(3 * s, 6 * floor(s / 2)), "3*s == 6*(s // 2)"),
    (2 * floor((s + 63) / 64) <= 5, "2*((s + 63) // 64) <= 5"),
    (Mod(3 * s, 2 * b), "(3*s) % (2*b)"),
    (floor(s * b / 4), "(b*s) // 4"),
    (floor(s / (2 * b)) + 1, "s // (2*b) + 1"),
    (sympy.Eq(Mod(s + b, 4), 0), "(b + s) % 4 == 0"),
    # negative coefficients
    (-2 * s, "-2*s"),
    (3 - 2 * s, "3 - 2*s"),
    (-2 * Mod(s, b), "-2*(s % b)"),
    (34 - 2 * Mod(s, 4), "34 - 2*(s % 4)"),
    (-floor(s / 2), "-(s // 2)"),
    (s - floor(s / 2), "s - s // 2"),
    (b - 3 * floor((s + 1) / 2), "b - 3*((s + 1) // 2)"),
    (floor(-s / 4), "(-s) // 4"),
    # sympy's own notation where Python has none in messages
    (Min(s, 512), "Min(512, s)"),
    (Max(s, b, 8), "Max(8, b, s)"),
    (sympy.Not(sympy.Eq(Min(s, 3), 3)), "s < 3"),
    (sympy.ceiling(s / 4), "ceiling(s/4)"),
    (sympy.Piecewise((s, s < 8), (0, True)), "Piecewise((s, s < 8), (0, True))"),
    # relations and logic
    (sympy.Eq(s, b), "s == b"),
    (sympy.Ne(s, 1), "s != 1"),
    (s <= 512, "s <= 512"),
    (sympy.Gt(2 * s, b + 1), "2*s > b + 1"),
    (sympy.And(s <= 512, sympy.Eq(b, 2 * s)), "b == 2*s and s <= 512"),
    (sympy.Or(sympy.Eq(s, 1), sympy.And(s > 3, sympy.Ne(b, 1))), "(b != 1 and s > 3) or s == 1"),
    (sympy.Not(sympy.And(s < 3, b < 3)), "not (b < 3 and s < 3)"),
    (sympy.true, "True"),
    (sympy.sin(s) > 0, "sin(s) > 0"),  # anything prints
])
def test_readable_form(expr, text):
    assert format_guard(expr) == text


@pytest.mark.parametrize("expr", [
    -2 * Mod(s, b), 34 - 2 * Mod(s, 4), -floor(s / 2), s - floor(s / 2), b - 3 * floor((s + 1) / 2),
    floor(-s / 4), Mod(3 * s, 2 * b), -Mod(s, 3) + b, floor((b - 2 * Mod(s, b)) / 3),
    sympy.Eq(-3 * floor(s / 2), -b), sympy.Or(sympy.Eq(s, 1), sympy.And(s > 3, sympy.Ne(b, 1))),
    sympy.Not(sympy.Eq(Min(s, 3), 3)),
])
def test_readable_form_reads_as_the_same_value(expr):
    """Read as Python (Min/Max as min/max), the text has the expression's value: no precedence slips."""
    text = format_guard(expr)
    for sv in (1, 2, 5, 16):
        for bv in (1, 3, 8):
            assert eval(text, {"Min": min, "Max": max}, {"s": sv, "b": bv}) == _values(expr, sv, bv), text


def test_readable_form_over_display_names():
    rows, cols = sympy.symbols("s0 s1", integer=True, positive=True)
    assert format_guard(sympy.Eq(2 * cols, rows), {rows: "rows", cols: "cols"}) == "2*cols == rows"
    assert format_guard(sympy.Eq(Mod(rows, 2), 0), {cols: "cols"}) == "s0 % 2 == 0"  # unnamed: own name


# -- the range formatter -------------------------------------------------------------------------

def test_range_formatter():
    assert format_bound(512) == "512" and format_bound(None) == "inf" and format_bound(math.inf) == "inf"
    assert format_range_brackets(1, 512) == "[1, 512]" and format_range_brackets(2, None) == "[2, inf]"
    assert str(ValueRange(0)) == "[0, inf]" and str(ValueRange(1, 8)) == "[1, 8]"
    assert format_range("s", 1, 1024) == "s <= 1024"
    assert format_range("s", 2, 1024) == "2 <= s <= 1024"
    assert format_range("s", 0, math.inf) == "s >= 0"


# -- one of each, mechanically -------------------------------------------------------------------

def _modules():
    for top in ("tensorplay_export", "solver"):
        for path in sorted((ROOT / top).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), ast.parse(path.read_text(), str(path))


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def test_one_unsupported_expression_error_class_and_one_resolve_op():
    classes = [p for p, tree in _modules() for n in ast.walk(tree)
               if isinstance(n, ast.ClassDef) and n.name == "UnsupportedExpressionError"]
    defs = [p for p, tree in _modules() for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "resolve_op"]
    assert classes == ["solver/translate.py"]
    assert defs == ["tensorplay_export/ops/registry.py"]


def test_one_sympy_printer():
    """Only graph/printing.py subclasses a sympy printer (every expression prints through it)."""
    found = []
    for path, tree in _modules():
        from_printing = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                         and (n.module or "").startswith("sympy.printing") for a in n.names}
        for n in ast.walk(tree):
            if isinstance(n, ast.ClassDef):
                bases = [_dotted(base) for base in n.bases]
                if any(b in from_printing or "printing." in b or b.endswith("Printer") for b in bases):
                    found.append(f"{path}:{n.name}")
    assert found == ["tensorplay_export/graph/printing.py:ExprPrinter"]


def test_an_integer_size_over_a_constant_divisor_prints_as_floor_division():
    # Min(2*a, 2*b)/2 (a strided slice's length after a lattice fix): an int in Python, not a float
    import sympy as sp

    from tensorplay_export.graph.printing import pyexpr

    a, b = sp.symbols("a b", integer=True, positive=True)
    names = {a: "a", b: "b"}
    expr = sp.Mul(sp.Rational(1, 2), sp.Min(2 * a, 2 * b), evaluate=False)
    text = pyexpr(expr, names)
    assert "//" in text and eval(text, {"min": min}, {"a": 3, "b": 5}) == 3
    assert isinstance(eval(text, {"min": min}, {"a": 3, "b": 5}), int)
    assert "/" in pyexpr(a / 3, names) and "//" not in pyexpr(a / 3, names)  # not a multiple: unchanged


# -- readable floors and products (a conv stack's sizes) ------------------------------------------

_H = floor(floor(s / 2 - sympy.Rational(1, 2)) / 2)  # two stride-2 convs: ((s - 1) // 2) // 2
_W = floor(floor(b / 2 - sympy.Rational(1, 2)) / 2)


@pytest.mark.parametrize("expr, text", [
    (_H, "(s - 1) // 4"),  # floor(floor(y)/2) == floor(y/2): one //
    (floor(floor(s / 3) / 2), "s // 6"),
    (_H + 1, "(s + 3) // 4"),  # floor(y) + k == floor(y + k)
    (floor(s / 3) - 1, "(s - 3) // 3"),
    (floor(s / 3) + 2 * s, "2*s + s // 3"),  # not floor + a constant: as it was
    (sympy.Eq(_H * _W + _H + _W, 15), "((b + 3) // 4)*((s + 3) // 4) == 16"),  # (A + 1)*(B + 1) - 1
    (4 * _H * _W + 4 * _H + 4 * _W + 4, "4*((b + 3) // 4)*((s + 3) // 4)"),
    (sympy.Ne(s ** 2 + 2 * s + 1, 9), "(s + 1)**2 != 9"),
    # factoring that does not read shorter is left alone
    (sympy.Le(s * b + s, 10), "b*s + s <= 10"),
    (2 * s + 2, "2*s + 2"),
    (sympy.Eq(s * b + s + b, 2 * s), "b*s + b + s == 2*s"),  # no numeric side: as it was
])
def test_readable_floors_and_products(expr, text):
    assert format_guard(expr) == text


@pytest.mark.parametrize("expr", [
    _H, _H + 1, floor(s / 3) - 1, floor(floor(s / 3) / 2), sympy.Eq(_H * _W + _H + _W, 15),
    4 * _H * _W + 4 * _H + 4 * _W + 4, sympy.Ne(s ** 2 + 2 * s + 1, 9), sympy.Lt(_H * _W + 2 * _H, 7),
])
def test_readable_floors_and_products_keep_the_value(expr):
    text = format_guard(expr)
    for sv in range(1, 40, 3):
        for bv in (1, 2, 7, 16, 33):
            assert eval(text, {}, {"s": sv, "b": bv}) == _values(expr, sv, bv), (text, sv, bv)


def test_a_leading_negative_remainder_keeps_its_parentheses():
    # Python's unary minus binds before % and //: "-b % 3" would read (-b) % 3
    expr = sympy.Le(-Mod(b, 3) + floor(5 * b / 3), 2)
    assert format_guard(expr) == "-(b % 3) + (5*b) // 3 <= 2"
    assert format_guard(-Mod(b, 3) + b) == "b - b % 3"


def test_readable_form_of_random_size_expressions_reads_as_their_value():
    """A seeded corpus of sums, products, nested floors and remainders (with a constant side): the
    readable text, read as Python, has the expression's value at every assignment."""
    import random

    rng = random.Random(11)

    def term(depth):
        r = rng.random()
        if depth <= 0 or r < 0.3:
            return rng.choice([s, b, sympy.Integer(rng.randint(-3, 5))])
        if r < 0.5:
            return floor(build(depth - 1) / rng.choice([2, 3, 4]))
        if r < 0.6:
            return floor(floor(build(depth - 1) / 2) / rng.choice([2, 3]))
        if r < 0.7:
            return Mod(build(depth - 1), rng.choice([2, 3]))
        return build(depth - 1)

    def build(depth):
        r, x, y = rng.random(), term(depth - 1), term(depth - 1)
        if r < 0.4:
            return x + y
        if r < 0.7:
            return x * y
        if r < 0.85:
            return x - y
        return rng.randint(-3, 4) * x + y + rng.randint(-2, 2)

    checked = 0
    for _ in range(250):
        expr = build(3)
        if rng.random() < 0.5:
            expr = rng.choice([sympy.Eq, sympy.Ne, sympy.Le, sympy.Lt])(expr, rng.randint(-5, 20))
        if expr in (sympy.true, sympy.false):
            continue
        text = format_guard(expr)
        for sv in (1, 2, 5, 16):
            for bv in (1, 3, 7):
                assert eval(text, {}, {"s": sv, "b": bv}) == _values(expr, sv, bv), (expr, text, sv, bv)
        checked += 1
    assert checked > 150
