"""The value of a size expression at concrete sizes: the one evaluator.

Every place that needs the number behind a symbolic size (the graph
interpreter, the replay check, module views, the decomposition tracer, the
shape environment's example values, the guard checks of a fix search) calls
:func:`evaluate`.  It reads sympy expressions and Python numbers only.

An expression is compiled once (cached) into nested Python closures over
exact integer / ``Fraction`` arithmetic, so evaluating ``2*s + 1`` or
``floor((s + 63) / 64)`` again costs a few microseconds, not a sympy
substitution.  Float operations on sizes (:mod:`.floats`: ``FMul(n, 0.3)``) run as
Python floats in their own order, one rounding each, as eager Python computes them;
a comparison of a float with an int or a fraction is exact, as Python's is.
Constructs it does not know (a user-defined sympy function, a
non-integer power) and arithmetic corner cases (division by zero) are
evaluated by sympy itself, so the result is always sympy's.
"""
from __future__ import annotations

import functools
import math
import operator
from fractions import Fraction
from typing import Any, Callable, Mapping

import sympy

from .floats import NODES as _FLOAT_NODES, FDiv as _FDiv, python_op as _float_op

__all__ = ["evaluate", "UnboundSymbolError"]

_Fn = Callable[[Mapping], Any]


class UnboundSymbolError(ValueError):
    """An expression was evaluated without a value for some of its symbols.

    Attributes:
        symbols: the symbols without a value, sorted by name.
        expr: the expression.
    """

    def __init__(self, symbols: Any, expr: Any) -> None:
        self.symbols = tuple(sorted(symbols, key=lambda s: s.name))
        self.expr = expr
        names = ", ".join(repr(s.name) for s in self.symbols)
        super().__init__(f"evaluate: no value for {names} in {expr}")


def evaluate(expr: Any, values: Mapping) -> Any:
    """Value of ``expr`` at concrete sizes.

    Args:
        expr: a sympy expression or boolean (a size, a guard), or a plain number.
        values: ``{Symbol: int}``; a symbol missing as a key is looked up by its
            name (``{"s": 3}`` works, as does a symbol with other assumptions).
            sympy Integers are accepted as values.

    Returns:
        ``bool`` for relations and logic, ``int`` for an integer value, else
        ``float`` (``s / 2`` at odd ``s``; any expression with a float in it).
        Arithmetic is exact until that last conversion.

    Raises:
        UnboundSymbolError (a ValueError): some free symbol has no value; it
            names all of them.
        ValueError: the expression does not reduce to a number or a truth value.

    >>> s = sympy.Symbol("s", integer=True, positive=True)
    >>> evaluate(sympy.floor((s + 63) / 64), {s: 65}), evaluate(2 * s + 1 > 9, {"s": 4})
    (2, False)
    """
    if type(expr) in _PLAIN:
        return expr
    if not isinstance(expr, sympy.Basic):
        expr = sympy.sympify(expr)
    try:
        try:
            value = _compile(expr)(values)
        except (ZeroDivisionError, OverflowError, TypeError, ValueError):
            try:
                value = _by_sympy(expr)(values)   # a corner case: sympy's own answer (zoo, nan, oo)
            except TypeError as err:  # sympy refuses it too (a comparison with zoo: a division by 0)
                raise ValueError(f"evaluate: {expr} has no value at these sizes ({err})") from None
    except _Missing:
        missing = [s for s in expr.free_symbols if _lookup(values, s) is _NONE]
        raise UnboundSymbolError(missing, expr) from None
    return _result(value)


def evaluate_exact(expr: Any, values: Mapping) -> Any:
    """The exact value of ``expr`` at ``values``: ``int``, ``fractions.Fraction`` or ``bool``.

    The same evaluator as :func:`evaluate`, without the float conversion at the end
    and without sympy's fallback for corner cases: the fix search checks candidate
    sizes with it and treats any error as "cannot tell", never as "holds".

    Raises:
        UnboundSymbolError: some free symbol has no value.
        ZeroDivisionError, OverflowError, TypeError, ValueError: no exact value here.
    """
    if not isinstance(expr, sympy.Basic):
        expr = sympy.sympify(expr)
    try:
        return _compile(expr)(values)
    except _Missing:
        missing = [s for s in expr.free_symbols if _lookup(values, s) is _NONE]
        raise UnboundSymbolError(missing, expr) from None


_PLAIN = frozenset({int, float, bool})


class _Missing(Exception):
    """A symbol has no value (turned into UnboundSymbolError by :func:`evaluate`)."""


_NONE = object()


def _lookup(values: Mapping, sym: sympy.Symbol) -> Any:
    """``values[sym]``, else the value of its name (a str key, or a Symbol of that name), else _NONE."""
    try:
        return values[sym]
    except KeyError:
        pass
    name = sym.name
    try:
        return values[name]
    except KeyError:
        pass
    for key, value in values.items():   # a Symbol spelled with other assumptions (rare: not the hot path)
        if getattr(key, "name", None) == name:
            return value
    return _NONE


def _number(value: Any) -> Any:
    """A value given for a symbol, as int / Fraction / float."""
    if type(value) is int:
        return value
    if isinstance(value, sympy.Basic):
        return _from_sympy(value, value)
    if isinstance(value, (float, Fraction)):
        return value
    return operator.index(value)   # numpy integers, bools


def _result(value: Any) -> Any:
    cls = type(value)
    if cls is int or cls is bool or cls is float:
        return value
    if cls is Fraction:
        return int(value) if value.denominator == 1 else float(value)
    return value


def _from_sympy(r: Any, expr: Any) -> Any:
    if r is sympy.true:
        return True
    if r is sympy.false:
        return False
    if isinstance(r, sympy.Integer):
        return int(r)
    if isinstance(r, sympy.Rational):
        return Fraction(int(r.p), int(r.q))
    if r.is_number:
        try:
            return float(r)
        except TypeError:
            pass
    raise ValueError(f"evaluate: '{expr}' did not reduce to a constant: {r}")


def _to_sympy(v: Any) -> Any:
    if type(v) is bool:
        return sympy.true if v else sympy.false
    if type(v) is Fraction:
        return sympy.Rational(v.numerator, v.denominator)
    if type(v) is float:
        return sympy.Float(v)
    return sympy.Integer(v)


# -- compilation ---------------------------------------------------------------

def _const(value: Any) -> _Fn:
    return lambda values: value


def _symbol(sym: sympy.Symbol) -> _Fn:
    def fn(values: Mapping) -> Any:
        try:
            v = values[sym]
        except KeyError:
            v = _lookup(values, sym)
            if v is _NONE:
                raise _Missing from None
        return v if type(v) is int else _number(v)
    return fn


def _by_sympy(expr: sympy.Basic) -> _Fn:
    """Evaluate ``expr`` by substitution (constructs the compiled form does not cover)."""
    syms = tuple(expr.free_symbols)
    lookups = [(s, _symbol(s)) for s in syms]

    def fn(values: Mapping) -> Any:
        rep = {s: _to_sympy(look(values)) for s, look in lookups}
        return _from_sympy(expr.xreplace(rep) if rep else expr, expr)
    return fn


def _fold(parts: list, start: Any, op: Callable) -> _Fn:
    """``start op f1(v) op f2(v) ...`` with the constant part folded into ``start``."""
    if len(parts) == 1:
        (f,) = parts
        return (lambda values: op(start, f(values))) if start is not None else f
    if len(parts) == 2 and start is None:
        f, g = parts
        return lambda values: op(f(values), g(values))

    def fn(values: Mapping) -> Any:
        acc = start
        for f in parts:
            acc = f(values) if acc is None else op(acc, f(values))
        return acc
    return fn


def _float_node(cls: type, fs: list) -> _Fn:
    """A float operation (``FMul(a, b)``): each operand as Python's ``float()`` gives it (correctly
    rounded), then the operation on floats, so the result is eager Python's bit for bit."""
    op = _float_op(cls)
    if len(fs) == 2:
        f, g = fs
        if cls is _FDiv:  # an int over an int divides exactly, then rounds (Python's int / int)
            def divide(values: Mapping) -> float:
                a, b = f(values), g(values)
                return a / b if type(a) is int and type(b) is int else float(a) / float(b)
            return divide
        return lambda values: op(float(f(values)), float(g(values)))
    (f,) = fs
    return lambda values: op(float(f(values)))


def _pow(base: Any, n: int) -> Any:
    if n >= 0 or type(base) is float:
        return base ** n
    return Fraction(1) / Fraction(base) ** -n


def _rounding(arg: sympy.Basic, down: bool) -> _Fn:
    """``floor(arg)`` / ``ceiling(arg)``; ``floor((s + 63)/64)`` runs as ``(s + 63) // 64`` on ints."""
    q = 1
    for term in sympy.Add.make_args(arg):
        coeff = term.as_coeff_Mul()[0]
        if isinstance(coeff, sympy.Rational):
            q = math.lcm(q, int(coeff.q))
    f = _compile(sympy.Add(*[t * q for t in sympy.Add.make_args(arg)]) if q > 1 else arg)
    rnd = math.floor if down else math.ceil

    def fn(values: Mapping) -> Any:
        v = f(values)
        if type(v) is int:
            return v // q if down else -(-v // q)
        return rnd(v / q if type(v) is float else Fraction(v) / q)
    return fn


_RELATIONS = {sympy.Eq: operator.eq, sympy.Ne: operator.ne, sympy.Lt: operator.lt,
              sympy.Le: operator.le, sympy.Gt: operator.gt, sympy.Ge: operator.ge}
_CALLS = {sympy.Abs: abs}


@functools.lru_cache(maxsize=8192)
def _compile(e: sympy.Basic) -> _Fn:
    if isinstance(e, sympy.Symbol):
        return _symbol(e)
    if e.is_Number:
        if isinstance(e, sympy.Integer):
            return _const(int(e))
        if isinstance(e, sympy.Rational):
            return _const(Fraction(int(e.p), int(e.q)))
        if isinstance(e, sympy.Float) or e is sympy.oo or e is sympy.S.NegativeInfinity:
            return _const(float(e))
        return _by_sympy(e)
    if e is sympy.true or e is sympy.false:
        return _const(e is sympy.true)
    cls = type(e)
    if cls is sympy.Add or cls is sympy.Mul:
        consts, parts = [], []
        for a in e.args:
            (consts if a.is_Number else parts).append(a)
        op = operator.add if cls is sympy.Add else operator.mul
        start = None
        if consts:
            start = _compile(functools.reduce(op, consts)).__call__({})
            if start == (0 if cls is sympy.Add else 1) and parts:
                start = None
        if not parts:
            return _const(start)
        return _fold([_compile(a) for a in parts], start, op)
    if cls is sympy.Pow:
        base, exp = e.args
        if exp.is_Integer:
            f, n = _compile(base), int(exp)
            return lambda values: _pow(f(values), n)
        return _by_sympy(e)
    if (cls is sympy.floor or cls is sympy.ceiling) and len(e.args) == 1:
        return _rounding(e.args[0], cls is sympy.floor)
    if cls in _CALLS and len(e.args) == 1:
        f, call = _compile(e.args[0]), _CALLS[cls]
        return lambda values: call(f(values))
    if cls in _FLOAT_NODES:
        return _float_node(cls, [_compile(a) for a in e.args])
    if cls is sympy.Mod:
        f, g = _compile(e.args[0]), _compile(e.args[1])
        return lambda values: f(values) % g(values)
    if cls is sympy.Min or cls is sympy.Max:
        fs, pick = [_compile(a) for a in e.args], (min if cls is sympy.Min else max)
        return lambda values: pick([f(values) for f in fs])
    if cls in _RELATIONS:
        f, g, rel = _compile(e.args[0]), _compile(e.args[1]), _RELATIONS[cls]
        return lambda values: rel(f(values), g(values))
    if cls is sympy.And or cls is sympy.Or:
        fs, want = [_compile(a) for a in e.args], cls is sympy.Or

        def logic(values: Mapping) -> bool:
            for f in fs:
                if bool(f(values)) is want:
                    return want
            return not want
        return logic
    if cls is sympy.Not:
        f = _compile(e.args[0])
        return lambda values: not f(values)
    if cls is sympy.Piecewise:
        branches = [(_compile(p.expr), _compile(p.cond)) for p in e.args]
        whole = _by_sympy(e)

        def piecewise(values: Mapping) -> Any:
            for value, cond in branches:
                if cond(values):
                    return value(values)
            return whole(values)   # no branch applies: sympy's answer (nan)
        return piecewise
    return _by_sympy(e)
