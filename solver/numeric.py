"""Exact evaluation of size expressions at plain integers: the fix search's first filter.

``compile_int(expr)`` turns a sympy size expression or guard into a Python
function of ``{name: int}`` that computes the same value as sympy would
(``evaluate`` in ``decide.py``) with Python integers and ``Fraction``s only:
``floor``/``ceiling`` by exact floor division, ``Mod`` with the sign of the
divisor (Python's ``%`` on ints and Fractions is sympy's ``Mod``), ``Min``,
``Max``, ``Abs``, ``Piecewise``, relations and ``And``/``Or``/``Not``.

It is about a hundred times cheaper than substituting into sympy, so the fix
search checks candidate ranges and lattices point by point here and asks z3
only about what integers cannot settle (unbounded or very long ranges). A
division by zero or an unknown construct raises ``NumericError``; callers treat
the point as "cannot tell", never as "holds".
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable, Mapping

import sympy
from sympy.core.relational import Relational
from sympy.logic import boolalg


class NumericError(ValueError):
    """The expression has no exact integer value at this point (or a construct is unsupported)."""


Fn = Callable[[Mapping[str, int]], object]
_CACHE: dict = {}
_CACHE_MAX = 4096


def compile_int(expr) -> Fn:
    """A function ``env -> value`` equal to ``expr`` at integer sizes ``env`` ({name: int}).

    Raises:
        NumericError: when called, if ``expr`` divides by zero or uses an unsupported
            construct (compiling never raises for those; evaluation does).
    """
    expr = sympy.sympify(expr)
    fn = _CACHE.get(expr)
    if fn is None:
        try:
            fn = _compile(expr)
        except NumericError as err:
            msg = str(err)

            def fn(env, msg=msg):
                raise NumericError(msg)
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[expr] = fn
    return fn


def value(expr, env: Mapping[str, int]):
    """``compile_int(expr)(env)``, with ``NumericError`` for any failure (missing name included)."""
    try:
        return compile_int(expr)(env)
    except NumericError:
        raise
    except (KeyError, ZeroDivisionError, TypeError, ValueError, OverflowError) as err:
        raise NumericError(f"cannot evaluate {expr} at {dict(env)}: {type(err).__name__}: {err}") from None


def holds(expr, env: Mapping[str, int]):
    """True/False for a guard at ``env``; None when it cannot be evaluated exactly."""
    try:
        v = value(expr, env)
    except NumericError:
        return None
    return v if isinstance(v, bool) else None


def _norm(v):
    if isinstance(v, Fraction) and v.denominator == 1:
        return v.numerator
    return v


def _compile(e) -> Fn:
    if e is sympy.true:
        return lambda env: True
    if e is sympy.false:
        return lambda env: False
    if isinstance(e, sympy.Integer):
        c = int(e)
        return lambda env: c
    if isinstance(e, sympy.Rational):
        c = Fraction(int(e.p), int(e.q))
        return lambda env: c
    if isinstance(e, sympy.Symbol):
        name = e.name
        return lambda env: env[name]
    if isinstance(e, sympy.Add):
        parts = [_compile(a) for a in e.args]
        return lambda env: _norm(sum(p(env) for p in parts))
    if isinstance(e, sympy.Mul):
        parts = [_compile(a) for a in e.args]

        def mul(env):
            out = 1
            for p in parts:
                out = out * p(env)
            return _norm(out)
        return mul
    if isinstance(e, sympy.Pow):
        base, exp = e.args
        if not exp.is_Integer:
            raise NumericError(f"non-integer power in {e}")
        n = int(exp)
        b = _compile(base)
        if n >= 0:
            return lambda env: b(env) ** n
        return lambda env: _norm(Fraction(1) / (Fraction(b(env)) ** -n))
    if isinstance(e, sympy.floor):
        a = _compile(e.args[0])
        return lambda env: math.floor(a(env))
    if isinstance(e, sympy.ceiling):
        a = _compile(e.args[0])
        return lambda env: math.ceil(a(env))
    if isinstance(e, sympy.Mod):
        a, b = (_compile(x) for x in e.args)
        return lambda env: _norm(a(env) % b(env))
    if isinstance(e, sympy.Min):
        parts = [_compile(a) for a in e.args]
        return lambda env: min(p(env) for p in parts)
    if isinstance(e, sympy.Max):
        parts = [_compile(a) for a in e.args]
        return lambda env: max(p(env) for p in parts)
    if isinstance(e, sympy.Abs):
        a = _compile(e.args[0])
        return lambda env: abs(a(env))
    if isinstance(e, sympy.Piecewise):
        pairs = [(_compile(v), _compile(c)) for v, c in e.args]

        def piecewise(env):
            for v, c in pairs:
                if c(env) is True:
                    return v(env)
            raise NumericError(f"no branch of {e} holds")
        return piecewise
    if isinstance(e, boolalg.ITE):
        c, a, b = (_compile(x) for x in e.args)
        return lambda env: a(env) if c(env) is True else b(env)
    if isinstance(e, Relational):
        lhs, rhs = _compile(e.lhs), _compile(e.rhs)
        op = _REL.get(type(e))
        if op is None:
            raise NumericError(f"unsupported relation {type(e).__name__}")
        return lambda env: op(lhs(env), rhs(env))
    if isinstance(e, sympy.And):
        parts = [_compile(a) for a in e.args]
        return lambda env: all(p(env) for p in parts)
    if isinstance(e, sympy.Or):
        parts = [_compile(a) for a in e.args]
        return lambda env: any(p(env) for p in parts)
    if isinstance(e, sympy.Not):
        a = _compile(e.args[0])
        return lambda env: not a(env)
    raise NumericError(f"unsupported construct {type(e).__name__} in {e}")


_REL = {
    sympy.Eq: lambda a, b: a == b,
    sympy.Ne: lambda a, b: a != b,
    sympy.Lt: lambda a, b: a < b,
    sympy.Le: lambda a, b: a <= b,
    sympy.Gt: lambda a, b: a > b,
    sympy.Ge: lambda a, b: a >= b,
}
