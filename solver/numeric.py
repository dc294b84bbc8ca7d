"""Exact evaluation of size expressions at plain integers: the fix search's first filter.

The fix search checks candidate ranges and lattices point by point before it
asks z3 about what integers cannot settle (unbounded or very long ranges).  It
evaluates with the solver's one size evaluator (:func:`.evaluation.evaluate_exact`,
about a hundred times cheaper than substituting into sympy); here any failure
(a division by zero, a missing name, an unsupported construct) becomes
``NumericError``, which callers treat as "cannot tell", never as "holds".
"""
from __future__ import annotations

from typing import Mapping

from .evaluation import UnboundSymbolError, evaluate_exact


class NumericError(ValueError):
    """The expression has no exact integer value at this point (or a construct is unsupported)."""


def value(expr, env: Mapping[str, int]):
    """The exact value (int, Fraction or bool) of ``expr`` at ``env``; ``NumericError`` for any failure."""
    try:
        return evaluate_exact(expr, env)
    except (UnboundSymbolError, KeyError, ZeroDivisionError, TypeError, ValueError, OverflowError) as err:
        raise NumericError(f"cannot evaluate {expr} at {dict(env)}: {type(err).__name__}: {err}") from None


def holds(expr, env: Mapping[str, int]):
    """True/False for a guard at ``env``; None when it cannot be evaluated exactly."""
    try:
        v = value(expr, env)
    except NumericError:
        return None
    return v if isinstance(v, bool) else None
