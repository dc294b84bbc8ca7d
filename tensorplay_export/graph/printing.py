"""Expression printing: the one printer of size expressions, in two forms.

- the **Python form** (:func:`pyexpr`) is source text that generated code
  evaluates: ``s // 2 + 1``, ``2 * (s // 2)``, ``-(-s // 4)``, ``min(512, s)``,
  ``(s if s < 8 else 0)``, ``b == 2 * s and s <= 512``.  It refuses a construct
  Python cannot express with :class:`~solver.translate.UnsupportedExpressionError`
  naming it, and a symbol without a Python name with ``KeyError``.
- the **readable form** (:func:`format_guard`) is the text messages show:
  ``2*(n // 4) == n``, ``n % (2*m) == 0``, ``Min(3, n) != 3``,
  ``(m != 1 and n < 3) or n == m``.  It prints any expression (what it does not
  know reads as sympy's ``str``), optionally over display names.

Both forms are :class:`ExprPrinter` (the tree's only sympy printer): the
operator forms they share (``a % b``, ``a // b`` for ``floor(a/b)``, ``==`` /
``!=``, ``and`` / ``or`` / ``not``, symbol names) are one method each; the form
decides how operands are parenthesized (Python's operator precedence, or
sympy's), how ``*`` is spaced, and which constructs are accepted.

Ranges read through :mod:`tensorplay_export.records` (``format_range``,
``format_range_brackets``, ``format_bound``), which every layer may import.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional

import sympy
from sympy.printing.precedence import PRECEDENCE, precedence
from sympy.printing.str import StrPrinter

__all__ = ["pyexpr", "format_guard", "UnsupportedExpressionError"]

# Python operator precedence, low to high (the Python form parenthesizes by these).
_OR, _AND, _NOT, _CMP, _ADD, _MUL, _UNARY, _POW, _ATOM = range(1, 10)
_REL_OPS = {sympy.Eq: "==", sympy.Ne: "!=", sympy.Lt: "<", sympy.Le: "<=",
            sympy.Gt: ">", sympy.Ge: ">="}
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
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class ExprPrinter(StrPrinter):
    """The expression printer; ``form`` is ``"readable"`` (messages) or ``"python"`` (codegen).

    Args:
        form: ``"readable"`` or ``"python"``.
        names: symbol -> the text it prints as.  The Python form requires a
            name for every symbol (``KeyError`` otherwise); the readable form
            falls back to the symbol's own name.

    Use :func:`pyexpr` and :func:`format_guard` rather than this class.
    """

    def __init__(self, form: str = "readable", names: Optional[Mapping[sympy.Symbol, str]] = None) -> None:
        if form not in ("readable", "python"):
            raise ValueError(f"form must be 'readable' or 'python', got {form!r}")
        super().__init__()
        self.python = form == "python"
        self.names = names if names is not None else {}

    # -- dispatch and operands ----------------------------------------------------------------
    def _print(self, expr: Any, **kwargs: Any) -> str:
        if not self.python:
            return super()._print(expr, **kwargs)
        for cls, method, _ in _PYTHON_FORMS:
            if isinstance(expr, cls):
                return method(self, expr)
        raise _unsupported()(
            type(expr).__name__, expr,
            message=f"cannot generate Python for {type(expr).__name__} in {expr}; supported: {_SUPPORTED}")

    def _wrap(self, expr: Any, level: int) -> str:
        """Python form: ``expr``'s text, in parentheses when it binds looser than ``level``."""
        text = self._print(expr)
        return f"({text})" if _python_precedence(expr) < level else text

    def _binary(self, a: Any, op: str, b: Any) -> str:
        """``a op b`` for the operators of multiplication's precedence (``%``, ``//``)."""
        if self.python:
            # `a * b % c` is `(a * b) % c` in Python; the right operand needs its own parentheses
            return f"{self._wrap(a, _MUL)} {op} {self._wrap(b, _UNARY)}"
        return f"{self.parenthesize(a, PRECEDENCE['Mul'])} {op} {self.parenthesize(b, PRECEDENCE['Mul'])}"

    # -- readable form only (StrPrinter's protocol; what is not here prints as sympy's str does) -
    def parenthesize(self, item: Any, level: int, strict: bool = False) -> str:
        # `%` and `//` read as Python operators, which bind like `*`: wrap them inside
        # products and powers so `2*(n // 4)` does not read as `(2*n) // 4`.  A negative
        # product asks at the level of `+`: `-2*(n % 4)`, `-(n // 2)`, not `-2*n % 4`.
        if isinstance(item, (sympy.Mod, sympy.floor)) and level >= PRECEDENCE["Add"]:
            return f"({self._print(item)})"
        return super().parenthesize(item, level, strict)

    def _print_Add(self, expr: sympy.Add, order: Any = None) -> str:
        # As StrPrinter's, except that a negative product prints as `-` and its negation, so
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
        return ("" if sign == "+" else sign) + " ".join(out)

    # -- shared by both forms -----------------------------------------------------------------
    def _print_Symbol(self, expr: sympy.Symbol) -> str:
        if not self.python:
            return self.names.get(expr, expr.name)
        try:
            return self.names[expr]
        except KeyError:
            raise KeyError(f"symbol {expr} has no Python name (is it bound before use?)") from None

    def _print_Mod(self, expr: sympy.Mod) -> str:
        a, b = expr.args
        return self._binary(a, "%", b)

    def _print_floor(self, expr: sympy.floor) -> str:
        num, den = _quotient(expr.args[0])
        if den != 1:
            return self._binary(num, "//", den)
        if not self.python:
            return f"floor({self._print(expr.args[0])})"
        return self._print(num) if num.is_integer else f"math_floor({self._print(num)})"

    def _print_Relational(self, expr: sympy.core.relational.Relational) -> str:
        op = next((text for rel, text in _REL_OPS.items() if isinstance(expr, rel)), None)
        if self.python:  # the Python form's dispatch sends only the relations of _REL_OPS here
            return f"{self._wrap(expr.lhs, _ADD)} {op} {self._wrap(expr.rhs, _ADD)}"
        if op in ("==", "!="):
            return f"{self._print(expr.lhs)} {op} {self._print(expr.rhs)}"
        return super()._print_Relational(expr)

    def _join(self, expr: sympy.Basic, word: str, level: int) -> str:
        if self.python:
            args = sorted(expr.args, key=sympy.default_sort_key)
            return f" {word} ".join(self._wrap(a, level) for a in args)
        parts = []
        for arg in sorted(expr.args, key=str):
            text = self._print(arg)
            parts.append(f"({text})" if isinstance(arg, (sympy.And, sympy.Or)) else text)
        return f" {word} ".join(parts)

    def _print_And(self, expr: sympy.And) -> str:
        return self._join(expr, "and", _NOT)

    def _print_Or(self, expr: sympy.Or) -> str:
        return self._join(expr, "or", _AND)

    def _print_Not(self, expr: sympy.Not) -> str:
        if self.python:
            return f"not {self._wrap(expr.args[0], _NOT)}"
        return f"not ({self._print(expr.args[0])})"

    # -- Python form only (dispatched through _PYTHON_FORMS) ----------------------------------
    def _py_true(self, expr: Any) -> str:
        return "True" if expr is sympy.true else "False"

    def _py_Integer(self, expr: sympy.Integer) -> str:
        return str(int(expr))

    def _py_Rational(self, expr: sympy.Rational) -> str:
        return f"{expr.p} / {expr.q}" if expr.p >= 0 else f"-{-expr.p} / {expr.q}"

    def _py_Float(self, expr: sympy.Float) -> str:
        v = float(expr)
        return repr(v) if math.isfinite(v) else f"float('{v}')"

    def _py_Infinity(self, expr: Any) -> str:
        return "float('inf')" if expr is sympy.oo else "float('-inf')"

    def _py_Add(self, expr: sympy.Add) -> str:
        terms = expr.as_ordered_terms()
        out = self._wrap(terms[0], _ADD)
        for t in terms[1:]:
            if t.could_extract_minus_sign():
                out += f" - {self._wrap(-t, _MUL)}"
            else:
                out += f" + {self._wrap(t, _MUL)}"
        return out

    def _py_Mul(self, expr: sympy.Mul) -> str:
        if expr.could_extract_minus_sign():
            return f"-{self._wrap(-expr, _POW)}"
        num, den = expr.as_numer_denom()
        if den != 1:
            return f"{self._wrap(num, _MUL)} / {self._wrap(den, _POW)}"
        # Factors of mul level (a // b, a % b) are wrapped: 2 * (a // b) != 2 * a // b.
        return " * ".join(self._wrap(f, _UNARY) for f in expr.as_ordered_factors())

    def _py_Pow(self, expr: sympy.Pow) -> str:
        base, exp = expr.args
        if exp.is_Integer and int(exp) < 0:
            return f"1 / {self._wrap(base ** -exp, _POW)}"
        if not (exp.is_Integer or exp.is_Rational or exp.is_Float):
            raise _unsupported()("Pow", expr, message=f"power with a non-constant exponent: {expr}")
        exp_text = str(int(exp)) if exp.is_Integer else f"({self._print(exp)})"
        return f"{self._wrap(base, _POW + 1)}**{exp_text}"

    def _py_ceiling(self, expr: sympy.ceiling) -> str:
        num, den = _quotient(expr.args[0])
        if den == 1 and num.is_integer:
            return self._print(num)
        return f"-(-{self._wrap(num, _POW)} // {self._wrap(den, _UNARY)})"

    def _py_MinMax(self, expr: Any) -> str:
        fn = "min" if isinstance(expr, sympy.Min) else "max"
        args = sorted(expr.args, key=sympy.default_sort_key)
        return f"{fn}({', '.join(self._print(a) for a in args)})"

    def _py_Abs(self, expr: sympy.Abs) -> str:
        return f"abs({self._print(expr.args[0])})"

    def _py_Piecewise(self, expr: sympy.Piecewise) -> str:
        pieces = list(expr.args)
        if pieces[-1].cond is not sympy.true:
            raise _unsupported()(
                "Piecewise", expr, message=f"Piecewise without a final True branch: {expr}")
        out = self._wrap(pieces[-1].expr, _OR)
        for piece in reversed(pieces[:-1]):
            out = f"({self._wrap(piece.expr, _OR)} if {self._wrap(piece.cond, _OR)} else {out})"
        return out


def _quotient(arg: Any) -> tuple[Any, Any]:
    """``(a, b)`` with ``arg == a/b``: the operands of ``floor(arg)`` printed as ``a // b``
    (the solver reads ``floor`` the same way)."""
    return arg.as_numer_denom()


def _python_precedence(e: Any) -> int:
    """How tightly ``e``'s Python form binds (one of the ``_OR`` ... ``_ATOM`` levels)."""
    for cls, _, prec in _PYTHON_FORMS:
        if isinstance(e, cls):
            return prec(e) if callable(prec) else prec
    return _ATOM


def _float_precedence(e: sympy.Float) -> int:
    v = float(e)
    return _UNARY if math.isfinite(v) and v < 0 else _ATOM


def _floor_precedence(e: sympy.floor) -> int:
    num, den = _quotient(e.args[0])
    if den != 1:
        return _MUL
    return _python_precedence(num) if num.is_integer else _ATOM


def _ceiling_precedence(e: sympy.ceiling) -> int:
    num, den = _quotient(e.args[0])
    return _python_precedence(num) if den == 1 and num.is_integer else _UNARY


# The constructs of the Python form, in the order they are tried: (class, printer, precedence).
_PYTHON_FORMS: tuple = (
    ((sympy.logic.boolalg.BooleanTrue, sympy.logic.boolalg.BooleanFalse), ExprPrinter._py_true, _ATOM),
    (sympy.Symbol, ExprPrinter._print_Symbol, _ATOM),
    (sympy.Integer, ExprPrinter._py_Integer, lambda e: _UNARY if e.is_negative else _ATOM),
    (sympy.Rational, ExprPrinter._py_Rational, _MUL),
    (sympy.Float, ExprPrinter._py_Float, _float_precedence),
    ((sympy.core.numbers.Infinity, sympy.core.numbers.NegativeInfinity), ExprPrinter._py_Infinity,
     lambda e: _ATOM if e is sympy.oo else _UNARY),
    (sympy.Add, ExprPrinter._py_Add, _ADD),
    (sympy.Mul, ExprPrinter._py_Mul, lambda e: _UNARY if e.could_extract_minus_sign() else _MUL),
    (sympy.Pow, ExprPrinter._py_Pow,
     lambda e: _MUL if e.args[1].is_Integer and int(e.args[1]) < 0 else _POW),
    (sympy.floor, ExprPrinter._print_floor, _floor_precedence),
    (sympy.ceiling, ExprPrinter._py_ceiling, _ceiling_precedence),
    (sympy.Mod, ExprPrinter._print_Mod, _MUL),
    ((sympy.Min, sympy.Max), ExprPrinter._py_MinMax, _ATOM),
    (sympy.Abs, ExprPrinter._py_Abs, _ATOM),
    (sympy.Piecewise, ExprPrinter._py_Piecewise, _ATOM),
    (tuple(_REL_OPS), ExprPrinter._print_Relational, _CMP),
    (sympy.And, ExprPrinter._print_And, _AND),
    (sympy.Or, ExprPrinter._print_Or, _OR),
    (sympy.Not, ExprPrinter._print_Not, _NOT),
)

_READABLE = ExprPrinter()


def pyexpr(expr: Any, names: Mapping[sympy.Symbol, str]) -> str:
    """The Python form: ``expr`` as Python source over the variable names in ``names``.

    Args:
        expr: a sympy expression over symbols in ``names`` (ints and Python
            bools are accepted too).  Supported: integers, rationals, floats,
            ``+ - *``, powers, ``floor(a/b)`` -> ``a // b``, ``ceiling(a/b)``,
            ``Mod`` -> ``%``, ``Min``/``Max`` -> ``min()``/``max()``, ``Abs``,
            ``Piecewise`` (with a final ``True`` branch) -> conditional
            expression, relations, ``And``/``Or``/``Not``, ``true``/``false``.
        names: symbol -> Python variable name.

    Returns:
        Python source text evaluating to the same value for integer symbol values.

    Raises:
        UnsupportedExpressionError: any other construct (``err.construct`` names it).
        KeyError: a symbol missing from ``names``.

    >>> s = sympy.Symbol("s", integer=True, positive=True)
    >>> pyexpr(sympy.floor(s / 2) + 1, {s: "s"})
    's // 2 + 1'
    """
    expr = expr if isinstance(expr, sympy.Basic) else sympy.sympify(expr)
    return ExprPrinter("python", names).doprint(expr)


def format_guard(expr: Any, names: Optional[Mapping[sympy.Symbol, str]] = None) -> str:
    """The readable form: text for a size guard or expression in a message.

    Args:
        expr: any sympy expression (or a Python value).
        names: symbol -> display name (default: each symbol's own name).

    >>> n, m = sympy.symbols("n m", integer=True, positive=True)
    >>> format_guard(sympy.Eq(2 * sympy.floor(n / 4), m))
    '2*(n // 4) == m'
    >>> format_guard(sympy.Eq(2 * m, n), {m: "cols", n: "rows"})
    '2*cols == rows'
    """
    printer = _READABLE if not names else ExprPrinter("readable", names)
    return printer.doprint(expr)
