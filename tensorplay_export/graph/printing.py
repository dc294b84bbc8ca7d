"""Expression printing: the one printer of size expressions, in two forms.

- the **Python form** (:func:`pyexpr`, :func:`tree_text`) is source text that
  generated code evaluates: ``s // 2 + 1``, ``2 * (s // 2)``, ``-(-s // 4)``,
  ``min(512, s)``, ``(s if s < 8 else 0)``, ``b == 2 * s and s <= 512``.  It
  prints operator trees (:mod:`.stored`: the archive's grammar), so a loaded
  program's stored expressions print without sympy, and a sympy expression
  prints through its tree: an exported program and its loaded copy have the
  same source.  It refuses a construct Python cannot express with
  :class:`~solver.translate.UnsupportedExpressionError` naming it, and a
  symbol without a Python name with ``KeyError``.
- the **readable form** (:func:`format_guard`) is the text messages show:
  ``2*(n // 4) == n``, ``n % (2*m) == 0``, ``Min(3, n) <= m``,
  ``(m != 1 and n < 3) or n == m``.  It prints any sympy expression (what it
  does not know reads as sympy's ``str``), optionally over display names; it is
  :class:`ExprPrinter`, the tree's only sympy printer, defined when first used
  (sympy is not imported to load and run a program).

Both forms print ``a % b``, ``a // b`` for ``floor(a/b)``, ``==`` / ``!=``,
``and`` / ``or`` / ``not`` and symbol names alike; the Python form
parenthesizes by Python's operator precedence and orders the terms of a sum
as sympy prints them (lexicographic in the symbols, constants last).

Ranges read through :mod:`tensorplay_export.records` (``format_range``,
``format_range_brackets``, ``format_bound``), which every layer may import.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

from ..records import sympy
from .stored import (SizeExpr, exponent_sign, float_value as _float_value, number_value as _num_value, symbol_key,
                     sympy_tree)

__all__ = ["pyexpr", "tree_text", "format_guard", "UnsupportedExpressionError"]

# Python operator precedence, low to high (the Python form parenthesizes by these).
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _POW, _ATOM = range(1, 10)
_REL_TEXT = {"Eq": "==", "Ne": "!=", "Lt": "<", "Le": "<=", "Gt": ">", "Ge": ">="}
# sympy's class names of the relations: And/Or order their arguments by them, as sympy does
_REL_CLASS = {"Eq": "Equality", "Ne": "Unequality", "Lt": "StrictLessThan", "Le": "LessThan",
              "Gt": "StrictGreaterThan", "Ge": "GreaterThan"}
_SUPPORTED = ("+ - * integer powers, floor division, Mod, Min, Max, Abs, Piecewise, relations, "
              "And, Or, Not")


def _unsupported() -> type:
    # The error class lives in the solver, whose package imports z3: loading and running a
    # program prints size expressions but must not import z3 (cold start, issue 19).
    from solver.translate import UnsupportedExpressionError

    return UnsupportedExpressionError


def __getattr__(name: str) -> Any:
    if name == "UnsupportedExpressionError":
        return _unsupported()
    if name == "ExprPrinter":
        return _readable_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the Python form, over trees ------------------------------------------------------------------

def _unknown(e: Any) -> tuple:
    """A subexpression outside the grammar, kept in the tree so the printer can name it."""
    return ("?", type(e).__name__, str(e))


def _is_num(t: Any) -> bool:
    return type(t) is int or (type(t) is tuple and t[0] in ("Rational", "Float"))






def _negative(t: Any) -> bool:
    """sympy's ``could_extract_minus_sign`` for the terms and products the printer meets."""
    if type(t) is int:
        return t < 0
    head = t[0]
    if head == "Rational":
        return t[1] < 0
    if head == "Float":
        return bool(t[1]) and int(t[2], 16) != 0
    if head == "Mul":
        return _is_num(t[1]) and _negative(t[1])
    return False


def _negate(t: Any) -> Any:
    """``-t`` for a term :func:`_negative` accepts."""
    if type(t) is int:
        return -t
    head = t[0]
    if head == "Rational":
        return ("Rational", -t[1], t[2])
    if head == "Float":
        return ("Float", 1 - t[1]) + t[2:]
    coeff, rest = _negate(t[1]), t[2:]
    if coeff == 1:
        return rest[0] if len(rest) == 1 else ("Mul",) + rest
    return ("Mul", coeff) + rest


def _mul(coeff: Any, factors: list) -> Any:
    if not factors:
        return coeff
    if coeff == 1 and type(coeff) is int:
        return factors[0] if len(factors) == 1 else ("Mul",) + tuple(factors)
    return ("Mul", coeff) + tuple(factors)


def _pow(base: Any, k: int) -> Any:
    return base if k == 1 else ("Pow", base, k)


def _scale(t: Any, k: int) -> Any:
    """``k * t`` for an integer ``k`` (coefficients merged, as sympy would)."""
    if k == 1:
        return t
    if type(t) is int:
        return t * k
    if t[0] == "Mul":
        if type(t[1]) is int:
            return _mul(t[1] * k, list(t[2:]))
        return ("Mul", k) + t[1:]
    return ("Mul", k, t)


def _negated_exponent(e: Any) -> Any:
    """``-e`` for a size exponent of negative form (``-n``, ``1 - n``: every size term's
    coefficient negative), else None: ``2**(-n)`` is the denominator ``2**n``."""
    if exponent_sign(e) != -1:
        return None
    terms = e[1:] if e[0] == "Add" else (e,)

    def neg(x: Any) -> Any:
        if type(x) is int:
            return -x
        k, rest = -x[1], x[2:]
        return rest[0] if k == 1 and len(rest) == 1 else ("Mul", k, *rest) if k != 1 else ("Mul", *rest)
    out = tuple(neg(x) for x in terms)
    return out[0] if len(out) == 1 else ("Add", *out)


def _numer_denom(t: Any) -> tuple[Any, Any]:
    """``(a, b)`` with ``t == a/b`` (sympy's ``as_numer_denom`` on the trees codegen meets): the
    operands of ``floor(t)`` printed as ``a // b``."""
    if type(t) is int:
        return t, 1
    head = t[0]
    if head == "Rational":
        return t[1], t[2]
    if head == "Pow" and type(t[2]) is int and t[2] < 0:
        return 1, _pow(t[1], -t[2])
    if head == "Pow" and _negated_exponent(t[2]) is not None:  # t / 2**n is t*2**(-n)
        return 1, ("Pow", t[1], _negated_exponent(t[2]))
    if head == "Mul":
        coeff, den_coeff, num, den = 1, 1, [], []
        for f in t[1:]:
            if type(f) is int:
                coeff = f
            elif f[0] == "Rational":
                coeff, den_coeff = f[1], f[2]
            elif _is_num(f):
                coeff = f
            elif f[0] == "Pow" and type(f[2]) is int and f[2] < 0:
                den.append(_pow(f[1], -f[2]))
            elif f[0] == "Pow" and _negated_exponent(f[2]) is not None:
                den.append(("Pow", f[1], _negated_exponent(f[2])))
            else:
                num.append(f)
        return _mul(coeff, num), _mul(den_coeff, den)
    if head == "Add":
        parts = [_numer_denom(a) for a in t[1:]]
        dens = [d for _, d in parts]
        if all(d == dens[0] for d in dens):
            return ("Add",) + tuple(n for n, _ in parts), dens[0]
        if all(type(d) is int for d in dens):
            lcm = math.lcm(*dens)
            return ("Add",) + tuple(_scale(n, lcm // d) for n, d in parts), lcm
    return t, 1


def _multiple_of(t: Any, k: int) -> bool:
    """Whether the integer-valued tree ``t`` is a multiple of ``k`` at every assignment
    (structurally: ``2*a``, ``Min(2*a, 2*b)``, ``4*a + 2*b``)."""
    if type(t) is int:
        return t % k == 0
    if type(t) is not tuple or not _integer(t):
        return False
    head = t[0]
    if head == "Mul":
        return any(type(f) is int and f % k == 0 for f in t[1:])
    if head in ("Add", "Min", "Max"):
        return all(_multiple_of(a, k) for a in t[1:])
    if head == "Abs":
        return _multiple_of(t[1], k)
    return False


def _integer(t: Any) -> bool:
    from .stored import integer_valued

    return integer_valued(t)


def _factors(t: Any) -> tuple[Any, dict]:
    """A term as (numeric coefficient, {generator: exponent}): how sympy orders the terms of a sum."""
    if _is_num(t):
        return t, {}
    gens: dict = {}
    coeff: Any = 1
    for f in (t[1:] if t[0] == "Mul" else (t,)):
        if _is_num(f):
            coeff = f
        elif type(f) is tuple and f[0] == "Pow" and _is_num(f[2]):
            gens[f[1]] = gens.get(f[1], 0) + _num_value(f[2])
        else:
            gens[f] = gens.get(f, 0) + 1
    return coeff, gens


def _gen_key(g: Any) -> tuple:
    if type(g) is tuple and g[0] == "Symbol":
        return (0, g[1], repr(g[2]))
    return (1, repr(g))


def _ordered_terms(terms: tuple) -> list:
    """The terms of a sum in sympy's printing order: lexicographic in the generators (symbols by
    name, then other factors), higher powers first, constants last; ``3 - s``, not ``-s + 3``."""
    parts = [_factors(t) for t in terms]
    gens = sorted({g for _, gs in parts for g in gs}, key=_gen_key)
    vectors = [tuple(gs.get(g, 0) for g in gens) for _, gs in parts]
    order = sorted(range(len(terms)), key=lambda i: vectors[i], reverse=True)
    out = [terms[i] for i in order]
    if (len(gens) == 1 and len(out) == 2 and _is_num(out[1]) and not _negative(out[1])
            and _negative(out[0])):
        out.reverse()  # one generator: sympy writes the positive constant first (3 - s)
    return out


def _arg_key(t: Any) -> tuple:
    """How Min/Max/And/Or order their arguments (sympy's ``default_sort_key``, for the cases met):
    numbers, then symbols by name, then the rest (logic before relations, by sympy class name)."""
    if _is_num(t):
        return (0, _num_value(t), "")
    head = t[0]
    if head == "Symbol":
        return (1, 0, t[1])
    if head in ("And", "Or", "Not"):
        return (2, 0, head)
    return (3, 0, _REL_CLASS.get(head, head), repr(t))


class _PyPrinter:
    """The Python form of one tree over ``names`` (symbol key -> variable name)."""

    def __init__(self, names: Mapping) -> None:
        self.names = names

    def text(self, t: Any) -> str:
        if type(t) is int:
            return str(t)
        head = t[0]
        method = _PY_METHODS.get(head)
        if method is None:
            if head == "?":
                construct, where = t[1], t[2]
            else:
                construct, where = head, _plain(t)
            raise _unsupported()(
                construct, where,
                message=f"cannot generate Python for {construct} in {where}; supported: {_SUPPORTED}")
        return method(self, t)

    def wrap(self, t: Any, level: int) -> str:
        text = self.text(t)
        return f"({text})" if _precedence(t) < level else text

    def binary(self, a: Any, op: str, b: Any) -> str:
        # `a * b % c` is `(a * b) % c` in Python; the right operand needs its own parentheses
        return f"{self.wrap(a, _MUL)} {op} {self.wrap(b, _UNARY)}"

    def symbol(self, t: tuple) -> str:
        try:
            return self.names[t]
        except KeyError:
            raise KeyError(f"symbol {t[1]} has no Python name (is it bound before use?)") from None

    def boolean(self, t: tuple) -> str:
        return "True" if t[0] == "true" else "False"

    def rational(self, t: tuple) -> str:
        p, q = t[1], t[2]
        return f"{p} / {q}" if p >= 0 else f"-{-p} / {q}"

    def float_(self, t: tuple) -> str:
        v = _float_value(t)
        return repr(v) if math.isfinite(v) else f"float('{v}')"

    def infinity(self, t: tuple) -> str:
        return "float('inf')" if t[0] == "oo" else "float('-inf')"

    def add(self, t: tuple) -> str:
        terms = _ordered_terms(t[1:])
        out = self.wrap(terms[0], _ADD)
        for term in terms[1:]:
            if _negative(term):
                out += f" - {self.wrap(_negate(term), _MUL)}"
            else:
                out += f" + {self.wrap(term, _MUL)}"
        return out

    def mul(self, t: tuple) -> str:
        if _negative(t):
            return f"-{self.wrap(_negate(t), _POW)}"
        num, den = _numer_denom(t)
        if den != 1:
            if type(den) is int and den > 1 and _multiple_of(num, den):
                # an integer size written over a constant (Min(2*a, 2*b)/2): exact as //, and an int
                return self.binary(num, "//", den)
            return f"{self.wrap(num, _MUL)} / {self.wrap(den, _POW)}"
        # Factors of mul level (a // b, a % b) are wrapped: 2 * (a // b) != 2 * a // b.
        return " * ".join(self.wrap(f, _UNARY) for f in t[1:])

    def pow(self, t: tuple) -> str:
        base, exp = t[1], t[2]
        if type(exp) is int and exp < 0:
            return f"1 / {self.wrap(_pow(base, -exp), _POW)}"
        if not _is_num(exp):
            if type(base) is int and base >= 2:  # 2**n of a size (capture guards n into int64's range)
                return f"{base}**{self.wrap(exp, _ATOM)}"
            raise _unsupported()("Pow", _plain(t), message=f"power with a non-constant exponent: {_plain(t)}")
        exp_text = str(exp) if type(exp) is int else f"({self.text(exp)})"
        return f"{self.wrap(base, _POW + 1)}**{exp_text}"

    def floor(self, t: tuple) -> str:
        num, den = _numer_denom(t[1])
        if _has_float_op(num):  # of a float (solver.floats): divide as a float, as the evaluator does
            return f"math_floor({self.text(num)} / {self.wrap(den, _UNARY)})" if den != 1 \
                else f"math_floor({self.text(num)})"
        if den != 1:
            return self.binary(num, "//", den)
        return self.text(num) if _integer(num) else f"math_floor({self.text(num)})"

    def ceiling(self, t: tuple) -> str:
        num, den = _numer_denom(t[1])
        if den == 1 and _integer(num):
            return self.text(num)
        if _has_float_op(num):  # of a float (solver.floats): `//` would give a float
            return f"-math_floor(-({self.text(num)}) / {self.wrap(den, _UNARY)})" if den != 1 \
                else f"-math_floor(-({self.text(num)}))"
        return f"-(-{self.wrap(num, _POW)} // {self.wrap(den, _UNARY)})"

    def mod(self, t: tuple) -> str:
        return self.binary(t[1], "%", t[2])

    def float_op(self, t: tuple) -> str:
        # a float operation on sizes (solver.floats) in Python's order: the right operand keeps
        # its parentheses, float arithmetic is not associative (a + (b + c) != a + b + c)
        op, level = _FLOAT_OPS[t[0]]
        if t[0] == "FPow":
            return f"{self.wrap(t[1], _POW + 1)} ** {self.wrap(t[2], _POW)}"
        return f"{self.wrap(t[1], level)} {op} {self.wrap(t[2], level + 1)}"

    def float_const(self, t: tuple) -> str:
        return self.text(t[1])

    def float_to_int(self, t: tuple) -> str:
        x = self.text(t[1])
        return {"FFloor": f"math_floor({x})", "FCeil": f"-math_floor(-({x}))", "FTrunc": f"int({x})",
                "FRound": f"round({x})"}[t[0]]

    def minmax(self, t: tuple) -> str:
        args = sorted(t[1:], key=_arg_key)
        return f"{t[0].lower()}({', '.join(self.text(a) for a in args)})"

    def abs_(self, t: tuple) -> str:
        return f"abs({self.text(t[1])})"

    def piecewise(self, t: tuple) -> str:
        pieces = t[1:]
        if pieces[-1][1] != ("true",):
            raise _unsupported()("Piecewise", _plain(t), message=f"Piecewise without a final True branch: {_plain(t)}")
        out = self.wrap(pieces[-1][0], _OR)
        for x, c in reversed(pieces[:-1]):
            out = f"({self.wrap(x, _OR)} if {self.wrap(c, _OR)} else {out})"
        return out

    def relation(self, t: tuple) -> str:
        return f"{self.wrap(t[1], _ADD)} {_REL_TEXT[t[0]]} {self.wrap(t[2], _ADD)}"

    def join(self, t: tuple, word: str, level: int) -> str:
        return f" {word} ".join(self.wrap(a, level) for a in sorted(t[1:], key=_arg_key))

    def and_(self, t: tuple) -> str:
        return self.join(t, "and", _NOT)

    def or_(self, t: tuple) -> str:
        return self.join(t, "or", _AND)

    def not_(self, t: tuple) -> str:
        return f"not {self.wrap(t[1], _NOT)}"


_PY_METHODS = {
    "Symbol": _PyPrinter.symbol, "true": _PyPrinter.boolean, "false": _PyPrinter.boolean,
    "Rational": _PyPrinter.rational, "Float": _PyPrinter.float_, "oo": _PyPrinter.infinity,
    "-oo": _PyPrinter.infinity, "Add": _PyPrinter.add, "Mul": _PyPrinter.mul, "Pow": _PyPrinter.pow,
    "floor": _PyPrinter.floor, "ceiling": _PyPrinter.ceiling, "Mod": _PyPrinter.mod,
    "Min": _PyPrinter.minmax, "Max": _PyPrinter.minmax, "Abs": _PyPrinter.abs_,
    "Piecewise": _PyPrinter.piecewise, **{h: _PyPrinter.relation for h in _REL_TEXT},
    "And": _PyPrinter.and_, "Or": _PyPrinter.or_, "Not": _PyPrinter.not_,
    **{h: _PyPrinter.float_op for h in ("FAdd", "FSub", "FMul", "FDiv", "FPow")}, "FConst": _PyPrinter.float_const,
    **{h: _PyPrinter.float_to_int for h in ("FFloor", "FCeil", "FTrunc", "FRound")},
}


def _has_float_op(t: Any) -> bool:
    if type(t) is not tuple or not t:
        return False
    if type(t[0]) is str and (t[0] in _FLOAT_OPS or t[0] == "FConst"):
        return True
    return any(_has_float_op(a) for a in t if type(a) is tuple)  # Piecewise pairs too


_FLOAT_OPS = {"FAdd": ("+", _ADD), "FSub": ("-", _ADD), "FMul": ("*", _MUL), "FDiv": ("/", _MUL),
              "FPow": ("**", _POW)}


def _precedence(t: Any) -> int:
    """How tightly ``t``'s Python form binds (one of the ``_OR`` ... ``_ATOM`` levels)."""
    if type(t) is int:
        return _UNARY if t < 0 else _ATOM
    head = t[0]
    if head in _FLOAT_OPS:
        return _FLOAT_OPS[head][1]
    if head == "FConst":
        return _precedence(t[1])
    if head == "FCeil":
        return _UNARY
    if head == "Rational":
        return _MUL
    if head == "Float":
        v = _float_value(t)
        return _UNARY if math.isfinite(v) and v < 0 else _ATOM
    if head == "-oo":
        return _UNARY
    if head == "Add":
        return _ADD
    if head == "Mul":
        return _UNARY if _negative(t) else _MUL
    if head == "Pow":
        return _MUL if type(t[2]) is int and t[2] < 0 else _POW
    if head == "floor" and _has_float_op(t[1]):
        return _ATOM  # math_floor(...)
    if head == "floor":
        num, den = _numer_denom(t[1])
        if den != 1:
            return _MUL
        return _precedence(num) if _integer(num) else _ATOM
    if head == "ceiling":
        num, den = _numer_denom(t[1])
        return _precedence(num) if den == 1 and _integer(num) else _UNARY
    if head == "Mod":
        return _MUL
    if head in _REL_TEXT:
        return _CMP
    return {"And": _AND, "Or": _OR, "Not": _NOT}.get(head, _ATOM)


def _plain(t: Any) -> str:
    """A tree as text for messages, in function notation (never raises): ``Lt(s, 8)``."""
    if type(t) is not tuple or not t:
        return str(t)
    head = t[0]
    if head == "Symbol":
        return str(t[1])
    if head == "?":
        return str(t[2])
    if head in ("Rational", "Float", "oo", "-oo", "true", "false"):
        try:
            return tree_text(t)
        except Exception:  # noqa: BLE001 - malformed data: shown as it is
            return repr(t)
    if head == "Piecewise":
        return "Piecewise(" + ", ".join(f"({_plain(x)}, {_plain(c)})" for x, c in t[1:]) + ")"
    return f"{head}({', '.join(_plain(a) for a in t[1:])})"


class _OwnNames(Mapping):
    """Every symbol named by its own name (the Python form for messages and ``str(SizeExpr)``)."""

    def __getitem__(self, key: Any) -> str:
        return key[1]

    def __iter__(self):
        return iter(())

    def __len__(self) -> int:
        return 0


def tree_text(tree: Any, names: Optional[Mapping] = None) -> str:
    """The Python form of an operator tree (:mod:`.stored`) over ``names`` (symbol key, see
    :func:`~.stored.symbol_key`, -> variable name; default: each symbol's own name).

    Raises:
        UnsupportedExpressionError: a construct outside the Python form (``err.construct``).
        KeyError: a symbol missing from ``names``.
    """
    return _PyPrinter(_OwnNames() if names is None else names).text(tree)


def pyexpr(expr: Any, names: Mapping[sympy.Symbol, str]) -> str:
    """The Python form: ``expr`` as Python source over the variable names in ``names``.

    Args:
        expr: a sympy expression, a :class:`~.stored.SizeExpr`, or a Python int/bool.
            Supported: integers, rationals, floats, ``+ - *``, powers,
            ``floor(a/b)`` -> ``a // b``, ``ceiling(a/b)``, ``Mod`` -> ``%``,
            ``Min``/``Max`` -> ``min()``/``max()``, ``Abs``, ``Piecewise``
            (with a final ``True`` branch) -> conditional expression,
            relations, ``And``/``Or``/``Not``, ``true``/``false``.
        names: symbol (sympy Symbol, SizeExpr symbol, or symbol key) -> Python variable name.

    Returns:
        Python source text evaluating to the same value for integer symbol values.

    Raises:
        UnsupportedExpressionError: any other construct (``err.construct`` names it).
        KeyError: a symbol missing from ``names``.

    >>> s = sympy.Symbol("s", integer=True, positive=True)
    >>> pyexpr(sympy.floor(s / 2) + 1, {s: "s"})
    's // 2 + 1'
    """
    keyed = {k if type(k) is tuple else symbol_key(k): v for k, v in names.items()}
    tree = expr.tree if type(expr) is SizeExpr else sympy_tree(expr, _unknown)
    return tree_text(tree, keyed)


def python_tree(expr: Any) -> Any:
    """The tree codegen prints for ``expr`` (a SizeExpr's own; a sympy expression's, with constructs
    outside the grammar kept for the printer to name)."""
    return expr.tree if type(expr) is SizeExpr else sympy_tree(expr, _unknown)


# -- the readable form (sympy's printer, defined on first use) ------------------------------------

def _binary_on_top(text: str) -> bool:
    """Whether printed ``text`` is a ``%`` or ``//`` outside any parentheses (``b % 3``, ``(s + 3) // 4``)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif depth == 0 and (text.startswith(" % ", i) or text.startswith(" // ", i)):
            return True
    return False


def _collapsed_floor(arg: Any) -> tuple:
    """``(num, den)`` with ``floor(arg) == floor(num/den)``, nested floors by a positive integer
    collapsed: ``floor(floor(y)/b) == floor(y/b)`` for every real ``y`` and integer ``b >= 1``, so
    ``floor(floor((h - 1)/2)/2)`` reads ``(h - 1) // 4`` (it prints as ``((h - 1) // 2) // 2``
    otherwise)."""
    num, den = arg.as_numer_denom()
    while isinstance(num, sympy.floor) and den.is_Integer and den > 1:
        inner_num, inner_den = num.args[0].as_numer_denom()
        num, den = inner_num, inner_den * den
    return num, den



def _readable_class() -> type:
    """:class:`ExprPrinter`, defined on first use (it subclasses sympy's StrPrinter)."""
    global _EXPR_PRINTER
    if _EXPR_PRINTER is not None:
        return _EXPR_PRINTER
    from sympy.printing.precedence import PRECEDENCE, precedence
    from sympy.printing.str import StrPrinter

    class ExprPrinter(StrPrinter):
        """The readable expression printer (messages): sympy's notation, with ``%`` and ``//``
        read as Python operators, ``==``/``!=``, ``and``/``or``/``not``.

        Args:
            names: symbol -> the text it prints as (default: the symbol's own name).

        Use :func:`format_guard` rather than this class.
        """

        def __init__(self, names: Optional[Mapping] = None) -> None:
            super().__init__()
            self.names = names if names is not None else {}

        def _binary(self, a: Any, op: str, b: Any) -> str:
            return f"{self.parenthesize(a, PRECEDENCE['Mul'])} {op} {self.parenthesize(b, PRECEDENCE['Mul'])}"

        def parenthesize(self, item: Any, level: int, strict: bool = False) -> str:
            # `%` and `//` read as Python operators, which bind like `*`: wrap them inside
            # products and powers so `2*(n // 4)` does not read as `(2*n) // 4`.  A negative
            # product asks at the level of `+`: `-2*(n % 4)`, `-(n // 2)`, not `-2*n % 4`.
            if isinstance(item, (sympy.Mod, sympy.floor)) and level >= PRECEDENCE["Add"]:
                return f"({self._print(item)})"
            return super().parenthesize(item, level, strict)

        def _print_sum(self, expr: Any, order: Any = None) -> str:
            # As StrPrinter's _print_Add, except that a negative product prints as `-` and its negation, so
            # `n - n // 2` keeps no parentheses while `-(n // 2)` alone needs them (parenthesize
            # above); StrPrinter strips the `-` off the term's text instead.
            terms = self._as_ordered_terms(expr, order=order)
            prec = precedence(expr)
            out = []
            for term in terms:
                if term.is_Mul and term.could_extract_minus_sign():
                    sign, t, term = "-", self._print(-term), -term
                else:
                    t = self._print(term)
                    sign = "-" if t.startswith("-") and not term.is_Add else "+"
                    t = t[1:] if sign == "-" else t
                out += [sign, f"({t})" if precedence(term) < prec or term.is_Add else t]
            sign = out.pop(0)
            if sign == "-" and _binary_on_top(out[0]):
                out[0] = f"({out[0]})"  # Python's unary minus binds first: -b % 3 is (-b) % 3
            return ("" if sign == "+" else sign) + " ".join(out)

        def _print_Symbol(self, expr: Any) -> str:
            return self.names.get(expr, expr.name)

        def _print_Mod(self, expr: Any) -> str:
            a, b = expr.args
            return self._binary(a, "%", b)

        def _print_floor(self, expr: Any) -> str:
            num, den = _collapsed_floor(expr.args[0])
            if den != 1:
                return self._binary(num, "//", den)
            return f"floor({self._print(expr.args[0])})"

        def _print_Add(self, expr: Any, order: Any = None) -> str:
            # floor(y) + k with an integer k is floor(y + k): `(h + 3) // 4`, not `(h - 1) // 4 + 1`
            const, rest = expr.as_coeff_Add()
            if const.is_Integer and isinstance(rest, sympy.floor):
                num, den = _collapsed_floor(rest.args[0])
                if den != 1 and den.is_Integer:
                    return self._binary(sympy.expand(num + const * den), "//", den)
            plain = self._print_sum(expr, order)
            product = _factored(expr)
            if product is expr:
                return plain
            other = self._print(product)
            return other if len(other) < len(plain) else plain

        def _print_Relational(self, expr: Any) -> str:
            bound = _clamp_resolved(expr)
            if bound is not None:
                return self._print(bound)
            lhs, rhs = expr.lhs, expr.rhs
            plain = self._relation(expr.rel_op, lhs, rhs)
            lhs2, rhs2 = _readable_relation(expr)
            if lhs2 is lhs:
                return plain
            other = self._relation(expr.rel_op, lhs2, rhs2)
            return other if len(other) < len(plain) else plain

        def _relation(self, rel_op: str, lhs: Any, rhs: Any) -> str:
            return f"{self._print(lhs)} {rel_op} {self._print(rhs)}"

        def _join(self, expr: Any, word: str) -> str:
            parts = []
            for arg in sorted(expr.args, key=str):
                text = self._print(arg)
                parts.append(f"({text})" if isinstance(arg, (sympy.And, sympy.Or)) else text)
            return f" {word} ".join(parts)

        def _print_And(self, expr: Any) -> str:
            return self._join(expr, "and")

        def _print_Or(self, expr: Any) -> str:
            return self._join(expr, "or")

        def _print_Not(self, expr: Any) -> str:
            return f"not ({self._print(expr.args[0])})"

    _EXPR_PRINTER = ExprPrinter
    return ExprPrinter


_FACTOR_MAX_OPS = 40  # sympy.factor on a guard of a few dozen operations is milliseconds; skip larger ones


def _nonlinear(expr: Any) -> bool:
    """Whether a sum has a term multiplying two non-constant factors (something to factor)."""
    for term in expr.args:
        factors = [f for f in sympy.Mul.make_args(term) if not f.is_number]
        if len(factors) > 1 or any(f.is_Pow for f in factors):
            return True
    return False


def _factorable(expr: Any) -> bool:
    return (isinstance(expr, sympy.Add) and _nonlinear(expr)
            and sympy.count_ops(expr) <= _FACTOR_MAX_OPS)


def _completed(q: Any) -> Optional[tuple]:
    """``(F, r)`` with ``q == F + r``, ``F`` a product of sums and ``r`` an integer, or None:
    ``a*b + a + b == (a + 1)*(b + 1) - 1``.  For a generator ``x`` of degree 1,
    ``q == x*R + S``; when ``S == k*R + r`` (polynomial division, integer ``k`` and ``r``),
    ``q == (x + k)*R + r``."""
    gens = sorted(q.atoms(sympy.Symbol, sympy.floor, sympy.Mod, sympy.Min, sympy.Max), key=sympy.default_sort_key)
    for x in gens:
        r_coeff = q.coeff(x, 1)
        if r_coeff.is_number or r_coeff.has(x):
            continue
        rest = sympy.expand(q - x * r_coeff)
        if rest.has(x):
            continue
        try:
            k, r = sympy.div(rest, r_coeff)
        except Exception:  # noqa: BLE001 - not polynomials in common generators: no completion
            continue
        if k.is_Integer and r.is_Integer:
            return sympy.Mul(x + k, sympy.factor(r_coeff), evaluate=False), r
    return None


def _factored(expr: Any) -> Any:
    """``expr`` factored when that prints shorter (``4*(a + 1)*(b + 1)``), else ``expr``."""
    if not _factorable(expr):
        return expr
    try:
        out = sympy.factor(expr)
    except Exception:  # noqa: BLE001 - sympy cannot factor over these generators: print as it is
        return expr
    return out if isinstance(out, (sympy.Mul, sympy.Pow)) and out != expr else expr


def _clamp_resolved(expr: Any) -> Any:
    """An ``==`` / ``!=`` between a size and the clamped length of a slice, as the bound it states,
    or None: ``t == Max(0, -Min(448, past) + Min(448, past + t))`` reads ``past + t <= 448``.

    Each step is an equivalence for every value of the symbols (integer sizes), using only the
    symbols' own assumptions (``t.is_positive``), never a declared range, so the text says what the
    guard decides:

    - ``s == Max(0, F)`` with ``s > 0``: ``s == F``;
    - ``T == Min(A, B) + R`` (one clamp, ``R`` free of clamps): ``A <= B`` when ``T - R`` is ``A``
      (``Max``: ``A >= B``); several arguments: ``A`` below each of the others;
    - ``s == Min(c, X) - Min(c, Y)`` with ``s > 0`` and ``X - Y == s`` (the window ``[Y, X)`` of a
      table of ``c`` rows): ``X <= c`` (past the end the window loses rows; ``Max`` likewise ``Y >= c``).
    """
    if not isinstance(expr, (sympy.Eq, sympy.Ne)) or not expr.has(sympy.Min, sympy.Max):
        return None
    for s, f in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
        out = _clamp_equal(s, f)
        if out is not None:
            out = out if isinstance(expr, sympy.Eq) else sympy.Not(out)
            # a constant on the right, as the other guards print: `s < 3`, not `3 > s`
            return out.reversed if isinstance(out, sympy.Rel) and out.lhs.is_number else out
    return None


def _clamp_equal(s: Any, f: Any) -> Any:
    """``s == f`` without its clamps (see :func:`_clamp_resolved`), or None."""
    if isinstance(f, sympy.Max) and len(f.args) == 2 and 0 in f.args and s.is_positive:
        f = next(a for a in f.args if a != 0)
    clamps = [(c, t) for term in sympy.Add.make_args(f) for c, t in [term.as_coeff_Mul()]
              if isinstance(t, (sympy.Min, sympy.Max))]
    rest = f - sum(c * t for c, t in clamps)
    if rest.has(sympy.Min, sympy.Max):
        return None
    if len(clamps) == 1 and clamps[0][0] == 1:
        _, clamp = clamps[0]
        target = sympy.expand(s - rest)
        for a in clamp.args:
            if sympy.expand(a - target) == 0:
                rel = sympy.Le if isinstance(clamp, sympy.Min) else sympy.Ge
                return sympy.And(*(rel(a, b) for b in clamp.args if b is not a))
        return None
    if len(clamps) == 2 and rest == 0 and s.is_positive and {c for c, _ in clamps} == {1, -1}:
        (_, hi), (_, lo) = sorted(clamps, key=lambda ct: -ct[0])
        if type(hi) is not type(lo) or len(hi.args) != 2 or len(lo.args) != 2:
            return None
        common = set(hi.args) & set(lo.args)
        if len(common) != 1:
            return None
        (c,) = common
        x = next(a for a in hi.args if a != c)
        y = next(a for a in lo.args if a != c)
        if sympy.expand(x - y - s) != 0:
            return None
        return sympy.Le(x, c) if isinstance(hi, sympy.Min) else sympy.Ge(y, c)
    return None


def _readable_relation(expr: Any) -> tuple:
    """``(lhs, rhs)`` of a relation with a numeric side, its other side factored when that reads
    better: ``a*b + a + b == 15`` reads ``(a + 1)*(b + 1) == 16`` (the same relation: a constant
    moved across).  Other relations come back as they are."""
    lhs, rhs = expr.lhs, expr.rhs
    if not rhs.is_number or not _factorable(lhs):
        return lhs, rhs
    const, q = lhs.as_coeff_Add()
    whole = _factored(lhs)
    if whole is not lhs:
        return whole, rhs
    done = _completed(q)
    if done is None:
        return lhs, rhs
    product, r = done
    return product, rhs - const - r

_EXPR_PRINTER: Optional[type] = None
_READABLE: Any = None


def format_guard(expr: Any, names: Optional[Mapping[sympy.Symbol, str]] = None) -> str:
    """The readable form: text for a size guard or expression in a message.

    Args:
        expr: any sympy expression, a :class:`~.stored.SizeExpr` (read as its sympy
            expression), or a Python value.
        names: symbol -> display name (default: each symbol's own name).

    >>> n, m = sympy.symbols("n m", integer=True, positive=True)
    >>> format_guard(sympy.Eq(2 * sympy.floor(n / 4), m))
    '2*(n // 4) == m'
    >>> format_guard(sympy.Eq(2 * m, n), {m: "cols", n: "rows"})
    '2*cols == rows'
    """
    global _READABLE
    if type(expr) is SizeExpr:
        expr = expr.to_sympy()
    if names:
        return _readable_class()(names).doprint(expr)
    if _READABLE is None:
        _READABLE = _readable_class()()
    return _READABLE.doprint(expr)
