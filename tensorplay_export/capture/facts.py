"""``tpe.check(cond)``: a fact about sizes stated in model code (as ``torch._check`` is).

What it does depends on where it runs and on what ``cond`` is:

- outside a capture (eager numpy): ``cond`` is a plain truth value; False raises
  :class:`~tensorplay_export.errors.ConstraintsExceededError` with the caller's
  ``file:line``, anything true is a no-op;
- during a capture, on backed sizes only (input dims): a guard like an assert
  (``ShapeEnv.guard``, cause ``"check"``).  Proved: nothing.  Over a named dim:
  a violation with a fix (``Dim("n", min=2)``).  Over ``Dim.AUTO`` or
  ``Dim.DYNAMIC``: accepted, the dim narrows (a DYNAMIC one left one size is a
  violation);
- during a capture, on a data-dependent (unbacked) size: the solver assumes it
  for the rest of the capture (later ops may rely on it without a guard) and a
  ``tpe.check_size`` node (a side-effect op, :mod:`tensorplay_export.ops.checks`)
  checks it on every call of the program, so the assumption travels with it
  through save/load, decompositions and unflatten.

A condition false for the example inputs raises ``ConstraintsExceededError`` at
capture, as eager would.
"""
from __future__ import annotations

from typing import Any

import sympy

from ..errors import ConstraintsExceededError
from ..graph.printing import format_guard
from .frames import user_source
from .symbolic import SymBool
from .traced import TracedArray
from .tracer import current

__all__ = ["check", "CheckOnValuesError"]


class CheckOnValuesError(TypeError):
    """``tpe.check`` was given a condition on an array's values (``x.sum() > 0``) during capture.

    A ``TypeError`` (the argument is of the wrong kind), raised by this package, so capture
    reports it as it is: eager numpy accepts such a check, which would otherwise make it look
    like a symbolic size's fault.
    """


def check(cond: Any, message: Any = None) -> None:
    """State that ``cond`` holds (``tpe.check(idx.shape[0] >= 2)``); see the module docstring.

    Args:
        cond: a Python/numpy bool, or a symbolic size condition (``x.shape[0] % 2 == 0``).
        message: a ``str``, or a function of no arguments returning one (torch's
            ``torch._check(cond, lambda: "...")``): shown with the condition when it fails,
            at export and in the program's run-time check.

    Raises:
        ConstraintsExceededError: ``cond`` is false (eager, or the example inputs at capture),
            naming the condition and the caller's ``file:line``.
        CheckOnValuesError: (a TypeError) ``cond`` is an array being traced: a fact about
            array values, which no size contract can state.
        ConstraintViolationError: (from ``export``) a backed check narrows a named dim.
    """
    src = user_source(2)
    note = _message_text(message, src)
    tracer = current()
    if isinstance(cond, TracedArray):
        raise CheckOnValuesError(
            "tpe.check takes a condition on sizes (tpe.check(x.shape[0] >= 2)), not an array's values: this "
            "condition is an array computed from data, which the program's size contract cannot state. For "
            "values, handle them in the model with array operations (np.where(cond, a, b), np.clip), check "
            "them before calling the program, or read a size from data and check that "
            f"(k = idx.max().item(); tpe.check(k < n))\n  at {src}")
    if tracer is None or not isinstance(cond, SymBool):
        if not bool(cond):
            raise ConstraintsExceededError(f"tpe.check failed{note} at {src}")
        return
    env = tracer.env
    expr = sympy.sympify(cond.expr)
    if expr is sympy.true:
        return
    if expr is sympy.false or env.hint(expr) is not True:
        raise ConstraintsExceededError(
            f"tpe.check({format_guard(expr)}) is false for the example inputs ({_values(env, expr)}){note}"
            f"\n  at {src}")
    if not any(env.is_unbacked(s) for s in expr.free_symbols):
        env.guard(expr, "guard", f"tpe.check({format_guard(expr)}){note}", src, cause="check",
                  note=f"the check's message: {note[2:-1]}" if note else None)
        return
    env.solver.assume(expr)
    syms = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
    # the run-time check prints tpe.check(<text>): the message reads as the call's second argument
    text = format_guard(expr) if message is None else f"{format_guard(expr)}, {note[2:-1]!r}"
    tracer.graph.call_function(
        "tpe.check_size", (expr, text, str(src) if src is not None else "?",
                           tuple(s.name for s in syms), syms),
        meta=tracer.node_meta(src, shape=None, dtype=None))


def _message_text(message: Any, src: Any) -> str:
    """`` ("...")`` of a check's message (a str, or a function of no arguments returning one), or ""."""
    if message is None:
        return ""
    if callable(message) and not isinstance(message, str):
        from .symbolic import PRINTING

        token = PRINTING.set("screen")  # sizes in the text print as their names (n), none is pinned
        try:
            message = message()
        finally:
            PRINTING.reset(token)
    if not isinstance(message, str):
        raise TypeError(f"tpe.check's message must be a str or a function of no arguments returning one, "
                        f"got {type(message).__name__}\n  at {src}")
    return f" ({message})"


def _values(env: Any, expr: Any) -> str:
    return ", ".join(f"{s} = {env.hint(s)}" for s in sorted(expr.free_symbols, key=lambda s: s.name))
