"""Symbolic sizes seen by user code during capture: SymInt, SymFloat, SymBool.

``x.shape[i]`` on a traced array returns a :class:`SymInt` for a symbolic axis
(static axes stay plain Python ints).  Arithmetic stays symbolic; the result
collapses back to a plain ``int`` whenever sympy folds it to a number
(``s - s`` is ``0``).  Turning a symbolic value into a Python value is where
guards come from:

- ``bool(SymBool)`` (an ``if``/``assert``/``while`` on a comparison) records a
  guard with the user's source line and follows the example's branch;
- ``int()``/``__index__``/``__format__`` specialize: they record
  ``Eq(expr, example)`` (kind ``"specialization"``) and return the example;
- ``float(SymFloat)`` specializes the same way.

``str(s)``, ``repr(s)`` and ``f"{s}"`` in model code specialize too (recorded
reason "converted to text"): model code that uses the text as data
(``int(str(n))``, ``repr(x.shape) == "(6, 4)"``, a cache key, a file name) must
see the example's digits, as eager does.  ``print(x.shape)`` is the exception:
text handed straight to ``print`` for stdout or stderr goes to a person, not to
the computation, so it shows the symbolic form (``(n, 2)``, as torch.export
prints ``s0``) without a guard; printing into another file object pins as
``str()`` does (see :data:`PRINTING`).  ``print(f"{n}")`` formats before print
sees it and still pins.  Library code (messages, reports) gets the symbolic text
(``"seq"``).

``math.floor``/``math.ceil``/``math.trunc``/``round`` of a size-derived float
(``s / 4``) stay exact integer expressions (``ceiling(s/4)``, round-half-even
as ``floor``/``Mod``) when the float is exact enough that Python's float
arithmetic gives the same integer at every size (:attr:`SymFloat.exact`);
otherwise they specialize with the function named in the reason.  Shifts of
a size by a constant are exact (``n >> 1`` is ``floor(n/2)``), ``n & (2**k - 1)``
is ``Mod(n, 2**k)``; other bitwise operators specialize.

``hash()`` of a size from model code pins it (reason "hashed (dict or set
lookup)", cause ``"hashed"``): a dict or set finds its key by the hash, so
``SCALE.get(n)`` and ``n in {8, 16}`` can only answer as eager does for the
example's value.  Library code never hashes a size (it keys by ``.expr``); it
gets an internal error.

Type checks answer as eager does where Python lets them: ``__class__`` is
``int``/``float``/``bool`` for model code, so ``isinstance(n, int)``,
``numbers.Integral`` and ``np.isscalar(n)`` are true; the library (and
sympy) see the real class.  ``type(n) is int`` cannot be intercepted.

A size combined with a numpy scalar (``n + np.int32(1)``) carries eager's
numpy type in :attr:`SymInt.numpy_type` (None: a Python int): it is still a size
in shapes and indexing, and the tracer hands it to ops as a numpy scalar of
that type, so arrays promote as eager's do (numpy 2 rules).

Float arithmetic on sizes whose value float rounding can change (``n * 0.3 / 0.1``,
``n / 7``, ``n * 0.1 + n * 0.2``) is kept as the solver's float operation nodes
(:mod:`solver.floats`: ``FDiv(FMul(n, 0.3), 0.1)``), one per Python operation in Python's
order, so guards are decided, and programs compute, in eager's IEEE-754 arithmetic; a float
a Python float holds exactly (``n / 4``, ``n * 0.5``) stays a sympy expression.  A
comparison with a float compares exact values, as Python does; ``math.floor``/``ceil``/
``trunc``/``round`` of a float the exact value does not settle are the nodes ``FFloor`` ...
(an integer size).  Float ``//`` and ``%`` whose exact value is unknown pin their sizes.

Every object holds the :class:`~tensorplay_export.shape_env.ShapeEnv` that
created its symbols; this module imports neither z3 nor the tracer (only the frame rules of
:mod:`.frames`, the package's errors and the solver's float nodes, which need sympy only).
``SymInt.__array_ufunc__`` (``np.sqrt(s)``) is forwarded to ``env.tracer``,
set by capture.
"""
from __future__ import annotations

import builtins
import contextvars
import itertools
import math
import numbers
import operator
from typing import Any, Callable

import numpy as np
import sympy

from solver.floats import FAdd, FCeil, FConst, FDiv, FFloor, FMul, FPow, FRound, FSub, FTrunc, has_float_ops

from ..errors import CaptureError
from ..graph.printing import format_guard
from .frames import asked_by_library as _asked_by_library, user_source

# While model code's print() formats its arguments (capture's builtins, patching.py):
# "screen" (stdout/stderr: sizes print symbolically, no guard) or "file" (any other file
# object: the text may be read back, so the digits are data and pin, as str() does).
PRINTING: contextvars.ContextVar[str] = contextvars.ContextVar("tpe_printing", default="")

def _is_int_like(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def to_expr(value: Any) -> Any:
    """sympy form of an int-like operand, or NotImplemented for anything else (a size
    comparison is the int 0 or 1, as a Python bool is in arithmetic)."""
    if isinstance(value, SymBool):
        return sympy.Piecewise((sympy.Integer(1), value.expr), (sympy.Integer(0), True))
    if isinstance(value, (SymInt, SymFloat)):
        return value.expr
    if isinstance(value, (bool, np.bool_)):
        return sympy.Integer(int(value))
    if isinstance(value, (int, np.integer)):
        return sympy.Integer(int(value))
    if isinstance(value, (float, np.floating)):
        return sympy.Float(float(value))
    return NotImplemented


def wrap_int(expr: Any, env: Any, dtype: Any = None) -> Any:
    """A plain int when ``expr`` is a number, else a SymInt (``dtype``: a numpy integer type
    the value has in eager, e.g. after ``n + np.int32(1)``; a number is then that numpy scalar).

    A narrow ``dtype`` wraps around as numpy's scalar arithmetic does (:func:`wrapped`)."""
    if dtype is not None:
        expr = wrapped(sympy.sympify(expr), env, np.dtype(dtype))
    if isinstance(expr, (int,)):
        return expr if dtype is None else dtype.type(expr)
    if expr.is_Integer:
        return int(expr) if dtype is None else np.dtype(dtype).type(int(expr))
    return SymInt(expr, env, dtype)


def wrapped(expr: Any, env: Any, dtype: np.dtype) -> Any:
    """``expr`` as numpy's integer scalar of ``dtype`` holds it: modulo ``2**bits`` into the
    dtype's range, as numpy scalar arithmetic wraps on overflow (``np.int8(2) * 70`` is
    ``12``, with a RuntimeWarning), or ``expr`` itself when the ranges keep it inside.

    Each operation on a typed size wraps its own result, as numpy's does; wrapping is exact
    for ``+ - *`` chains and shifts.  ``int64`` is left as it is (sizes are far from its
    limits; ``uint64`` wraps below zero)."""
    if dtype.kind not in "iu" or dtype == np.int64 or not isinstance(expr, sympy.Basic) or expr.is_Integer \
            and np.iinfo(dtype).min <= int(expr) <= np.iinfo(dtype).max:
        return expr
    info = np.iinfo(dtype)
    lo, hi = int(info.min), int(info.max)
    if not expr.is_Integer:
        inside = sympy.And(expr >= lo, expr <= hi)
        if inside is sympy.true or env.implies(inside).status == "proved":
            return expr
    return sym_mod(expr - lo, hi - lo + 1) + lo


# A size expression with more operations than this is pinned to its example value (a recorded
# specialization).  sympy's automatic evaluation and every later walk (guards, canonicalize,
# z3, codegen) treat an expression as a tree, so a loop that reuses a size twice per step
# (k = (7*k + 3) % 1000 + k // 3) doubles the work each step.  The sizes of ordinary models
# have fewer than 20 operations.
MAX_SIZE_OPS = 200
_OPS_CACHE: dict = {}


def size_ops(expr: Any) -> int:
    """Operations in ``expr`` counted as a tree (a shared subexpression counts at every use).

    Walks only the distinct subexpressions not seen before (memoized across calls), so an
    arithmetic result costs about its new nodes.
    """
    args = expr.args
    if not args:
        return 0
    n = _OPS_CACHE.get(expr)
    if n is None:
        n = 1
        for a in args:
            n += size_ops(a)
        if len(_OPS_CACHE) > 100_000:  # bound the memory of a long session
            _OPS_CACHE.clear()
        _OPS_CACHE[expr] = n
    return n


def bounded(expr: Any, env: Any) -> Any:
    """``expr``, or its example value when it has more than ``MAX_SIZE_OPS`` operations.

    The pin specializes each size the expression is made of (``env.specialize``; the reason
    names the count, the source is the user's line): a guard over the large expression itself
    would hand the solver, its fix search and the runtime checks the same blow-up.
    """
    if not isinstance(expr, sympy.Basic) or not expr.args:
        return expr
    n = size_ops(expr)
    if n <= MAX_SIZE_OPS:
        return expr
    value = env.hint(expr)
    reason = (f"size expression too large to reason about ({n} operations); pinned to its "
              f"example value {value}")
    for sym in sorted(expr.free_symbols, key=lambda v: v.name):
        env.specialize(sym, reason)
    return sympy.Integer(value) if isinstance(value, int) else sympy.Float(value)


def wrap_float(expr: Any, env: Any, exact: Any = None, dtype: Any = None) -> Any:
    """A plain float when ``expr`` is a number, else a SymFloat (``exact``: see SymFloat;
    ``dtype``: a numpy floating type the value has in eager, as for :func:`wrap_int`)."""
    expr = sympy.sympify(expr)
    if expr.is_Number:
        return float(expr) if dtype is None else dtype.type(float(expr))
    # Keep float arithmetic explicit so printed code divides as floats.
    return SymFloat(expr, env, exact, dtype)


def _short_dyadic(value: Any) -> Any:
    """Exact value of a float constant whose sums/products with sizes stay exact in binary floating point.

    ``0.5``, ``0.25``, ``3.0``: ``s * 0.5`` is computed without rounding for any
    realistic size, so ``ceil(s * 0.5)`` at run time is ``ceiling(s/2)``.
    ``0.1`` is not (its binary value has a 53-bit mantissa): None.
    """
    if not math.isfinite(value):
        return None
    r = sympy.Rational(float(value))
    q = int(r.q)
    if q & (q - 1) == 0 and q <= 2 ** 16 and abs(int(r.p)) < 2 ** 24:
        return r
    return None


def _represented_exactly(e: Any) -> bool:
    """Whether a float size with exact value ``e`` holds ``e`` itself, not a rounding of it.

    True for ``(linear integer form of sizes) / 2**k`` with short coefficients (``t / 4``,
    ``(3*n + 1) / 8``): sizes stay below 2**40, so the numerator fits the 53-bit mantissa and
    dividing by a power of two is exact; ``t / 4 * 1.25`` is then as exact as ``1.25 * t / 4``.
    """
    num, den = sympy.fraction(sympy.together(e))
    if not den.is_Integer or int(den) <= 0 or int(den) & (int(den) - 1) or int(den) > 2 ** 16:
        return False
    terms = sympy.Add.make_args(sympy.expand(num))
    for term in terms:
        coeff, rest = term.as_coeff_Mul()
        if not coeff.is_Integer or abs(int(coeff)) >= 2 ** 10:
            return False
        if rest != 1 and not (rest.is_Symbol and rest.is_integer):
            return False
    return True


def _exact_operand(value: Any) -> tuple:
    """(kind, exact value): kind "int" (sizes, ints), "dyadic" (short float constants), "float"
    (a SymFloat with an exact value) or None (no exact value known)."""
    if isinstance(value, SymInt):
        return "int", value.expr
    if _is_int_like(value):
        return "int", sympy.Integer(int(value))
    if isinstance(value, SymFloat):
        if value.exact is None:
            return None, None
        return ("dyadic" if _represented_exactly(value.exact) else "float"), value.exact
    if isinstance(value, (float, np.floating)):
        r = _short_dyadic(value)
        return ("dyadic", r) if r is not None else (None, None)
    return None, None


def _exact_result(fn: Callable, left: Any, right: Any) -> Any:
    """The exact rational value of ``fn(left, right)`` computed in floats, or None when float
    rounding could make floor/ceil/round of the float differ from those of the rational.

    Why these cases: a float that is the correctly rounded value of a rational ``P/q`` (one
    rounding) can only sit on the wrong side of an integer or a half-integer when the rational
    is that integer/half-integer itself, and those are exactly representable (sizes < 2**40).
    Adding integers or short dyadic constants, dividing by an integer, and scaling by a power
    of two keep that property; multiplying by anything else (``s / 49 * 49``) or adding two
    rounded floats does not.
    """
    (ka, a), (kb, b) = _exact_operand(left), _exact_operand(right)
    if ka is None or kb is None:
        return None
    exact_kinds = ("int", "dyadic")
    if fn in (operator.add, operator.sub):
        return fn(a, b) if ka in exact_kinds or kb in exact_kinds else None
    if fn is operator.mul:
        if ka in exact_kinds and kb in exact_kinds:
            return a * b
        k = b if ka == "float" else a
        if k.is_Rational and k != 0 and abs(k.p) == 1 and int(k.q) & (int(k.q) - 1) == 0:
            return a * b  # a power of two scales without rounding
        return None
    if fn is _truediv:
        if kb == "float" or (kb == "dyadic" and b == 0):
            return None
        if ka == "float" and kb == "int" and b.is_Integer and b == 0:
            return None
        return a / b
    return None


def round_half_even(e: Any) -> Any:
    """Python's ``round(e)`` (ties to even) of a rational size expression, as exact integer
    arithmetic (``floor``, ``Mod``, ``Piecewise``), or None when ``e``'s denominator is not
    known positive.

    ``round(n/2)`` for n = 5, 7 is 2, 4: with ``r = floor(e + 1/2)``, a tie (``2e`` odd) whose
    ``r`` is odd rounds down to the even ``r - 1``.
    """
    num, den = sympy.fraction(sympy.together(e))
    if den == 1:
        return num
    if not den.is_positive:
        return None
    r = sympy.floor((2 * num + den) / (2 * den))
    tie = sympy.Eq(sym_mod(2 * num, 2 * den), den)
    if tie is sympy.false:
        return r
    return sympy.Piecewise((r - 1, sympy.And(tie, sympy.Eq(sym_mod(r, 2), 1))), (r, True))


def trunc_exact(e: Any) -> Any:
    """``math.trunc(e)`` of a rational size expression (toward zero)."""
    if e.is_nonnegative:
        return sympy.floor(e)
    if e.is_nonpositive:
        return sympy.ceiling(e)
    num, den = sympy.fraction(sympy.together(e))
    cond = sympy.Ge(num, 0) if den.is_positive else sympy.Ge(e, 0)
    return sympy.Piecewise((sympy.floor(e), cond), (sympy.ceiling(e), True))


def wrap_bool(expr: Any, env: Any) -> Any:
    if expr is sympy.true or expr is True:
        return True
    if expr is sympy.false or expr is False:
        return False
    return SymBool(expr, env)


def sym_mod(a: Any, b: Any) -> Any:
    """``sympy.Mod(a, b)`` with each ``Mod`` inside ``a`` first written as ``x - m*floor(x/m)``.

    Why: sympy 1.14 folds ``Mod(k*Mod(x, m), m)`` to ``k*Mod(x, m)``, which is wrong
    (``x = 2, k = 3, m = 4``: ``(3*2) % 4`` is 2, not 6), so ``(n % 4 * 3) % 4`` and a chain
    of int8 wraparounds would compute other sizes than eager.  The floor form folds correctly.
    """
    a = sympy.sympify(a)
    if isinstance(a, sympy.Basic) and a.has(sympy.Mod):
        a = a.replace(lambda e: isinstance(e, sympy.Mod),
                      lambda e: e.args[0] - e.args[1] * sympy.floor(e.args[0] / e.args[1]))
    if not _nonlinear(a):
        return sympy.Mod(a, b)
    a = _expanded(a)
    return _checked_fold(sympy.Mod(a, b), a, b, operator.mod, lambda: sympy.Mod(a, b, evaluate=False))


def _floordiv(a, b):
    a = sympy.sympify(a)
    if not _nonlinear(a):
        return flat_floors(sympy.floor(a / b))
    a = _expanded(a)
    return _checked_fold(flat_floors(sympy.floor(a / b)), a, b, operator.floordiv,
                         lambda: sympy.floor(sympy.Mul(a, sympy.Pow(b, -1), evaluate=False), evaluate=False))


def _nonlinear(a: Any) -> bool:
    """Whether ``a`` multiplies sizes (a product of two factors holding symbols, or a power of one):
    the dividends whose ``Mod`` and ``floor`` sympy 1.14 folds wrongly (``Mod((2*t + 1)*(4*t + 2), 6)``
    is 0 there, though 50 % 6 is 2 at t = 2; ``floor((2*n + 2)*(2*n + 6)/6)`` stays the fraction)."""
    if not isinstance(a, sympy.Basic) or a.is_Atom:
        return False
    for n in sympy.preorder_traversal(a):
        if isinstance(n, sympy.Mul) and sum(1 for f in n.args if f.free_symbols) >= 2:
            return True
        if isinstance(n, sympy.Pow) and n.base.free_symbols and n.exp.is_Integer and n.exp >= 2:
            return True
    return False


def _expanded(a: Any) -> Any:
    """A nonlinear dividend expanded when it is a polynomial of degree at most 8: of the expanded
    polynomial sympy folds ``Mod`` and ``floor`` right (:func:`_nonlinear`)."""
    if a.is_polynomial() and sympy.total_degree(a) <= 8:
        return sympy.expand(a)
    return a


_FOLD_POINTS = (1, 2, 3, 5, 8, 13)  # sizes a folded remainder or quotient is checked at


def _checked_fold(folded: Any, a: Any, b: Any, op: Callable, unevaluated: Callable) -> Any:
    """``folded`` (sympy's evaluated ``a % b`` or ``a // b`` of a nonlinear ``a``) when it equals
    Python's ``op`` at a few sizes of its symbols, else the operation left unevaluated: a fold
    sympy gets wrong must not become the program's size (:func:`_nonlinear`)."""
    if folded.free_symbols - a.free_symbols or not isinstance(b, (int, sympy.Integer)) or int(b) == 0:
        return folded
    syms = sorted(a.free_symbols, key=lambda s: s.name)
    if len(syms) > 3 or not a.is_polynomial(*syms):
        return folded
    for values in itertools.islice(itertools.product(_FOLD_POINTS, repeat=len(syms)), 64):
        point = dict(zip(syms, values))
        exact = a.xreplace(point)
        if not exact.is_Integer:
            continue
        got = folded.xreplace(point)
        if not got.is_Integer or int(got) != op(int(exact), int(b)):
            return unevaluated()
    return folded


def flat_floors(expr: Any) -> Any:
    """``expr`` with each ``floor((floor(u) + m) / k)`` written ``floor((u + m) / k)``.

    The identity holds for every real ``u``, integer-valued ``m`` and integer ``k >= 1``
    (``floor(x / k)`` for an integer ``k`` depends only on ``floor(x)``); a chain of halvings
    (``t // 2 // 2 // 2``, a pooling pyramid) is then one floor, ``floor(t/8)``, not a tower
    the solver's interval bounds relax one level at a time.  Bottom-up, so towers fold whole.
    """
    if not isinstance(expr, sympy.Basic) or not expr.has(sympy.floor):
        return expr
    return expr.replace(lambda e: isinstance(e, sympy.floor), _flat_floor)


def _flat_floor(e: Any) -> Any:
    arg = e.args[0]
    k = sympy.Integer(1)
    for term in sympy.Add.make_args(arg):
        coeff = term.as_coeff_Mul()[0]
        if not coeff.is_Rational:
            return e
        k = sympy.ilcm(k, coeff.q)
    whole = sympy.expand(arg * k)
    inner = [t for t in sympy.Add.make_args(whole) if isinstance(t, sympy.floor)]
    rest = whole - inner[0] if len(inner) == 1 else None
    if rest is None or rest.is_integer is not True:
        return e
    return sympy.floor((inner[0].args[0] + rest) / k)


def _truediv(a, b):
    return a * sympy.Float(1.0) / b


# Python's float operation of each arithmetic rule, as a solver float node (solver.floats)
_FLOAT_NODE: dict = {operator.add: FAdd, operator.sub: FSub, operator.mul: FMul, _truediv: FDiv,
                     operator.pow: FPow}


def _float_operand(value: Any) -> Any:
    """``value`` as a float node's operand: a node, a ``Float`` constant (its binary value), or an
    exact size expression that the float holds exactly (``n``, ``n/4``); None for anything else."""
    if isinstance(value, SymFloat):
        e = value.exact
        if e is not None and not has_float_ops(value.expr) and (
                _represented_exactly(e) or sympy.fraction(sympy.together(e))[1] == 1):
            return e
        # a float only nodes compute exactly (math.sqrt(n) is n**0.5 to sympy, pow to Python): None
        return value.expr if _node_form(value.expr) else None
    if isinstance(value, (SymInt, SymBool)):
        return to_expr(value)
    if isinstance(value, (bool, np.bool_)) or _is_int_like(value):
        return sympy.Integer(int(value))
    if isinstance(value, (float, np.floating)):
        # 53 bits: the constant's binary value (inf and nan have no place in a node: None pins)
        return sympy.Float(float(value)) if math.isfinite(value) else None
    return None


def _node_form(e: Any) -> bool:
    """Whether ``e`` computes as Python does: float nodes over exact size expressions, no other
    float (a ``Float`` outside a node, a fractional power)."""
    if isinstance(e, (FAdd, FSub, FMul, FDiv, FPow, FConst, FFloor, FCeil, FTrunc, FRound)):
        return True
    if isinstance(e, sympy.Float) or (isinstance(e, sympy.Pow) and not e.exp.is_Integer):
        return False
    return all(_node_form(a) for a in e.args)


def _float_result(fn: Callable, left: Any, right: Any, env: Any) -> Any:
    """``left fn right`` where Python computes a float (a SymFloat, or a float with no size left).

    Exact when no rounding happens anywhere (``n / 4``, ``n * 0.5 + 1``): sympy's expression is
    the value in any order.  Otherwise the float node of the operation (``FMul(n, 0.3)``), so
    the guards, the solver and the program round as Python does, once per operation in
    Python's order; the exact rational value is kept (:attr:`SymFloat.exact`) where one
    rounding cannot move floor/ceil/round (see :func:`_exact_result`).  Float ``//`` and
    ``%`` with no exact value pin their sizes.
    """
    a, b = to_expr(left), to_expr(right)
    if fn is _floordiv:
        q = _exact_result(_truediv, left, right)
        exact = None if q is None else sympy.floor(q)  # a // b of floats is floor(a / b), an integral float
        expr = None if exact is None else sympy.Float(1.0) * exact
    elif fn is sym_mod:
        (ka, ea), (kb, eb) = _exact_operand(left), _exact_operand(right)
        exact = fn(ea, eb) if ka in ("int", "dyadic") and kb in ("int", "dyadic") and eb != 0 else None
        expr = None if exact is None else sympy.Float(1.0) * exact
    else:
        exact = _exact_result(fn, left, right)
        expr = fn(a, b) if exact is not None and _represented_exactly(exact) else None
        node = _FLOAT_NODE.get(fn)
        pa, pb = _float_operand(left), _float_operand(right)
        if expr is None and node is not None and pa is not None and pb is not None:
            expr = node(pa, pb)
        elif expr is None and node is not None:
            # an operand no node computes as Python does (1 / math.sqrt(n) is n**(-0.5) to sympy):
            # sympy's expression, as before float nodes; a guard on it pins (the solver refuses it).
            # But sympy's algebra is exact: math.sqrt(n) * math.sqrt(n) is n to it, where Python's
            # product of two rounded roots is not; a result whose root sympy cancelled pins instead.
            expr = fn(a, b)
            if not _fractional_power(expr):
                return _pinned_float_op(fn, left, right)
    if expr is None:
        return _pinned_float_op(fn, left, right)
    return wrap_float(bounded(expr, env), env, exact)


def _pinned_float_op(fn: Callable, left: Any, right: Any) -> Any:
    """Python's own ``fn`` on the example's values, each size pinned with the operation as reason."""
    reason = f"float `{_OP_TEXT.get(fn, fn.__name__)}` of a size with no exact form (divide sizes by integers to stay symbolic)"

    def concrete(v: Any) -> Any:
        if isinstance(v, _SymNumber):
            return v._typed(v.env.specialize(v.expr, reason, user_source(4)))
        if isinstance(v, SymBool):
            return bool(v)
        return v
    return _PYOP.get(fn, fn)(concrete(left), concrete(right))


def _float_relation(rel: Callable, left: Any, right: Any) -> Any:
    """``left rel right`` with a float on a side, as Python compares: the exact values.

    The exact rational forms compare when no side was rounded (``n / 4 < 3``, ``n < 2.5``), or
    one was rounded once and the other is an integer or half-integer (``n / 3 < 2``): a float
    rounded from a rational with a small denominator cannot cross those (see
    :func:`_exact_result`).  Otherwise the float's node is compared with the other side
    (``FMul(FMul(n, 0.1), 3.0) > FConst(0.9)``): a float constant stays its binary value.
    """
    (ka, a), (kb, b) = _exact_operand(left), _exact_operand(right)
    if ka is not None and kb is not None and _exact_comparable(ka, a, kb, b):
        return rel(a, b)
    if _rooted(left) or _rooted(right):
        # a float only sympy's exact algebra computes (a root of a size): sympy would decide
        # sqrt(2*n) == sqrt(2)*sqrt(n) as true, Python's rounded values need not agree; pinned
        reason = "compared as a float computed from a root of a size (math.sqrt: Python's rounded value)"

        def concrete(v: Any) -> Any:
            if isinstance(v, _SymNumber):
                return v._typed(v.env.specialize(v.expr, reason, user_source(4)))
            return bool(v) if isinstance(v, SymBool) else v
        return _RELATIONS[rel](concrete(left), concrete(right))
    return rel(_compared_side(left), _compared_side(right))


def _fractional_power(e: Any) -> bool:
    return any(isinstance(p, sympy.Pow) and not p.exp.is_Integer for p in sympy.preorder_traversal(e))


def _rooted(value: Any) -> bool:
    """A SymFloat that no float node computes as Python does (``math.sqrt(n)``, ``n ** (1/3)``)."""
    return isinstance(value, SymFloat) and _float_operand(value) is None


def _exact_comparable(ka: str, a: Any, kb: str, b: Any) -> bool:
    plain = ("int", "dyadic")
    if ka in plain and kb in plain:
        return True
    other = b if ka == "float" else a
    if "float" in (ka, kb) and (ka in plain or kb in plain):
        return bool(other.is_Rational and int(sympy.Rational(other).q) <= 2)  # an integer or a half
    return False


def _compared_side(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        # inf compares as sympy's oo (n < oo is true); a finite constant keeps its binary value
        return FConst(sympy.Float(float(value))) if math.isfinite(value) else to_expr(value)
    out = _float_operand(value)
    return to_expr(value) if out is None else out


def _require_live(env: Any, other: Any = None) -> None:
    """Refuse a size whose capture has finished, or one of another capture beside it.

    A cache in model code (``functools.lru_cache``, a global dict) can keep a size past its
    export; the next export (or an eager call) would then compare or compute with symbols
    that mean nothing there.

    Raises:
        CaptureError: naming the user's line and what to do.
    """
    tracer = env.tracer
    stale = tracer is not None and not tracer.is_current()
    if not stale and (other is None or getattr(other, "env", env) is env):
        return
    raise CaptureError(
        "a size from an export that has finished was used here (kept by a cache such as "
        "functools.lru_cache or a global dict in the model?); sizes are symbolic only while export "
        "traces the model: clear that cache (f.cache_clear()) and key it by plain ints computed "
        f"outside the model\n  at {user_source(3)}")


def require_fits(sizes: list, dtype: np.dtype, what: str) -> None:
    """Each size among ``sizes`` that numpy stores in the integer ``dtype`` must fit it: numpy
    raises OverflowError for a Python int out of its range (NEP 50).  At the example that is
    the model's own error (numpy's, at its line); at other sizes a requirement of the contract.

    Raises:
        CaptureError: a size does not fit at the example.
    """
    info = np.iinfo(dtype)
    src = user_source(3)
    for v in sizes:
        if not isinstance(v, SymInt):
            continue
        example = int(v.env.hint(v.expr))
        if not info.min <= example <= info.max:
            raise CaptureError(f"{what} raised OverflowError: Python integer {example} out of bounds for "
                               f"{dtype}\n  at {src}")
        v.env.guard(sympy.And(v.expr >= int(info.min), v.expr <= int(info.max)), "shape",
                    f"{what} of a size: numpy raises OverflowError for a value {dtype} cannot hold", src,
                    cause="shape")


class _SymNumber:
    """What SymInt and SymFloat share: printing, hashing, float(), comparisons, numpy ufuncs.

    ``numpy_type``: the numpy scalar type (``np.dtype``) eager code would hold here, or None
    for a Python number.  Model code sees it as ``.dtype`` (an AttributeError for a Python
    number, so ``hasattr(n, "dtype")`` answers as in eager).
    """

    __slots__ = ("expr", "env", "numpy_type")
    _eager_class: type = object  # what model code's isinstance() sees (int / float)

    def __init__(self, expr: sympy.Expr, env: Any, dtype: Any = None) -> None:
        self.expr = expr
        self.env = env
        self.numpy_type = None if dtype is None else np.dtype(dtype)

    def __repr__(self) -> str:
        return self._text("converted to text with repr()", repr)

    def _text(self, what: str, convert: Callable) -> str:
        """The text of this size (``convert``: ``str``, ``repr`` or a ``format`` with a spec):
        symbolic for the library, the example's digits for model code, which records a
        specialization (text is data: ``int(str(n))``)."""
        printing = PRINTING.get()
        if printing == "screen" or (not printing and _asked_by_library(3)):
            return str(self.expr)
        value = self.env.specialize(self.expr, f"{what} (its digits are data)", user_source(3))
        return convert(self._typed(value))

    @property
    def __class__(self) -> type:
        # model code's isinstance(n, int) / numbers.Integral / np.isscalar answer as in eager;
        # the library and sympy see the real class (sympy's converters dispatch on __class__
        # and would turn a SymInt into an Integer through int(), pinning it unrecorded)
        if _asked_by_library():
            return type(self)
        if self.numpy_type is not None:
            return self.numpy_type.type
        return self._eager_class

    def __hash__(self) -> int:
        if _asked_by_library():
            raise CaptureError(f"internal error: library code hashed the size {self.expr} (key by its "
                               "sympy expression, .expr, instead)")
        _require_live(self.env)
        value = self.env.hint(self.expr)
        reason = (f"hashed (dict or set lookup); a lookup can only find the example's value "
                  f"{value} (compare instead, e.g. `{self.expr} == {value}`, to stay dynamic)")
        return hash(self._typed(self.env.specialize(self.expr, reason, cause="hashed")))

    @property
    def dtype(self) -> Any:
        if self.numpy_type is None:
            raise AttributeError(f"'{self._eager_class.__name__}' object has no attribute 'dtype'")
        return self.numpy_type

    def item(self) -> Any:
        """``np.int32(n).item()``: the Python number (a numpy scalar method)."""
        if self.numpy_type is None:
            raise AttributeError(f"'{self._eager_class.__name__}' object has no attribute 'item'")
        return type(self)(self.expr, self.env)

    def _numpy_only(self, name: str) -> None:
        if self.numpy_type is None:  # a Python number has none of numpy's scalar attributes
            raise AttributeError(f"'{self._eager_class.__name__}' object has no attribute '{name}'")

    @property
    def itemsize(self) -> int:
        """``np.int32(n).itemsize``: the type's size in bytes, the same at every size."""
        self._numpy_only("itemsize")
        return self.numpy_type.itemsize

    @property
    def nbytes(self) -> int:
        self._numpy_only("nbytes")
        return self.numpy_type.itemsize

    def tolist(self) -> Any:
        """``np.int8(n).tolist()``: the Python number, as :meth:`item`."""
        self._numpy_only("tolist")
        return type(self)(self.expr, self.env)

    def _bits(self, what: str) -> Any:
        # the bytes of the value are data (another type's view, a buffer): the example's, pinned
        return self._typed(self.env.specialize(self.expr, f"{what} (its bytes are data)", user_source(3)))

    def view(self, *args: Any, **kwargs: Any) -> Any:
        """``np.int16(n).view(np.uint16)``: the same bits as another type.  Between integer types of
        one width that is the value modulo ``2**bits`` in the new type's range (two's complement),
        a size expression; any other view reads the example's bits and pins the size."""
        self._numpy_only("view")
        if len(args) == 1 and not kwargs and isinstance(self, SymInt):
            try:
                target = np.dtype(args[0])
            except TypeError:
                target = None
            if target is not None and target.kind in "iu" and target.itemsize == self.numpy_type.itemsize:
                return wrap_int(self.expr, self.env, target)
        return self._bits("reinterpreted with .view()").view(*args, **kwargs)

    def tobytes(self, *args: Any, **kwargs: Any) -> bytes:
        """``np.int64(n).tobytes()``: the example's bytes; the size is pinned."""
        self._numpy_only("tobytes")
        return self._bits("converted with .tobytes()").tobytes(*args, **kwargs)

    def astype(self, dtype: Any) -> Any:
        """``(n + np.int32(1)).astype(np.int64)`` (a numpy scalar method): the same size, retyped."""
        if self.numpy_type is None:
            raise AttributeError(f"'{self._eager_class.__name__}' object has no attribute 'astype'")
        return as_type_of(self, np.dtype(dtype).type(self.example()))

    def __copy__(self) -> "_SymNumber":
        return self  # immutable, as an int is

    def __deepcopy__(self, memo: dict) -> "_SymNumber":
        return self

    def __reduce__(self) -> tuple:
        # pickle (and anything serializing through it) stores the number eager code holds
        value = self._typed(self.env.specialize(self.expr, "pickled (pickle stores a plain number)"))
        return type(value), (value,)

    def _typed(self, value: Any) -> Any:
        """``value`` (the example's) as the Python or numpy scalar eager code holds."""
        return value if self.numpy_type is None else self.numpy_type.type(value)

    def example(self) -> Any:
        """The value eager code holds at the example sizes (a numpy scalar if ``dtype``)."""
        return self._typed(self.env.hint(self.expr))

    def __float__(self) -> float:
        return float(self.env.specialize(self.expr, "converted with float()"))

    # -- comparisons (SymBool; guards happen only on bool()) ----------------
    def _cmp(self, other: Any, rel: Callable) -> Any:
        if isinstance(other, (_SymNumber, SymBool)) and other.env is not self.env:
            _require_live(self.env, other)
        o = to_expr(other)
        if o is NotImplemented:
            return self._with_other_number(other, _RELATIONS[rel], False)
        if isinstance(self, SymFloat) or isinstance(other, (float, np.floating, SymFloat)):
            return wrap_bool(_float_relation(rel, self, other), self.env)
        return wrap_bool(rel(self.expr, o), self.env)

    def _with_other_number(self, other: Any, pyop: Callable, reflected: bool) -> Any:
        """``pyop(self, other)`` for a number without a size form (complex, ``decimal.Decimal``):
        Python's own operation on the example's value, the size pinned; NotImplemented for
        anything that is not a number (arrays and the rest decide by their own methods)."""
        if not isinstance(other, numbers.Number) or isinstance(other, (_SymNumber, SymBool)):
            return NotImplemented
        name = type(other).__name__
        value = self._typed(self.env.specialize(
            self.expr, f"met a {name} number (a size has no symbolic form with {name} numbers)", user_source(3)))
        return pyop(other, value) if reflected else pyop(value, other)

    def __eq__(self, o):
        if o is self:
            return True
        return self._cmp(o, sympy.Eq)

    def __ne__(self, o):
        if o is self:
            return False
        return self._cmp(o, sympy.Ne)

    def __lt__(self, o): return self._cmp(o, sympy.Lt)
    def __le__(self, o): return self._cmp(o, sympy.Le)
    def __gt__(self, o): return self._cmp(o, sympy.Gt)
    def __ge__(self, o): return self._cmp(o, sympy.Ge)

    # -- numpy ----------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # np.int32(1) + n and np.maximum(n, 3) reach here (numpy scalars call the ufunc rather
        # than defer): with scalar operands only they are size arithmetic, typed as the ufunc
        # types its result on the example values (np.add(6, 1) is an np.int64)
        if ufunc.__name__ in _UFUNC_COMPARE:
            # numpy hands a numpy scalar to a comparison as a 0-d array (np.int32(2) < n); other
            # 0-d arrays stay arrays (a traced op), as numpy keeps them
            inputs = tuple(v[()] if type(v) is np.ndarray and v.ndim == 0 else v for v in inputs)
        if method == "__call__" and not kwargs and all(
                isinstance(v, (_SymNumber, int, float, np.integer, np.floating)) for v in inputs):
            out = _scalar_ufunc(ufunc, inputs)
            if out is not NotImplemented:
                return out
        tracer = getattr(self.env, "tracer", None)
        if tracer is None:
            return NotImplemented
        return tracer.sym_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        # np.isclose(n, 5), np.clip(n, 1, 8): a numpy function given sizes (and no traced array,
        # whose own hook then runs) is the traced op, a 0-d array numpy computes at run time;
        # a function with no op runs numpy's own code on the sizes, as before numpy dispatched
        if any(not issubclass(t, _SymNumber) for t in types):
            return NotImplemented
        tracer = getattr(self.env, "tracer", None)
        if tracer is None or getattr(tracer, "in_impl", False):
            return func._implementation(*args, **kwargs)
        return tracer.sym_function(func, args, kwargs)

    def _float_floordiv(self, o: Any, reflected: bool) -> Any:
        """``//`` with a float result: exact when the float quotient is (``n // 2.0`` is ``floor(n/2)``)."""
        return self._op(o, _floordiv, reflected, result="float")


def _constant_exponent(e: Any) -> Any:
    """``e`` as a power's exponent: a symbolic size is pinned to its example value.

    ``2**n`` has no form the solver decides (z3's integer theory has no
    exponentiation by a variable) and no bounded form an archive may hold, so
    the exponent specializes with a reason at the user's line, as a shift count
    does; powers by constants stay symbolic.
    """
    if isinstance(e, _SymNumber):
        return e.env.specialize(e.expr, f"exponent of `**` ({format_guard(e.expr)}): only constant exponents "
                                        "stay symbolic")
    return e


class SymInt(_SymNumber):
    """A symbolic integer size: ``expr`` over the env's size symbols."""

    __slots__ = ()
    _eager_class = int

    # -- example value and printing -----------------------------------------
    @property
    def hint(self) -> int:
        """The value this size has in the example inputs."""
        return int(self.env.hint(self.expr))

    def __str__(self) -> str:
        # text used as data (int(str(n)), keys, names) must be the digits eager code sees
        return self._text("converted to text with str()", str)

    def __format__(self, spec: str) -> str:
        what = "formatted into an f-string/format()" if not spec else f"formatted with {spec!r}"
        return self._text(what, lambda v: format(v, spec))

    # -- concretization (specializes) ---------------------------------------
    def __index__(self) -> int:
        _require_live(self.env)
        if _called_by_array_iter():
            return self.env.specialize(self.expr, "iterating over an array (a Python loop over its rows)",
                                       cause="iteration")
        return self.env.specialize(
            self.expr, "used as a Python int (__index__: range(), a Python index, a numpy scalar "
            "constructor, or indexing a plain array capture could not reach; register such an array with "
            "register_buffer(..., persistent=False) or pass it as an input)", cause="python_int")

    def __int__(self) -> int:
        return self.env.specialize(self.expr, "converted with int()")

    # int's methods that return plain Python values: the example's, with the size pinned
    def to_bytes(self, *args: Any, **kwargs: Any) -> bytes:
        return self.env.specialize(self.expr, "converted with int.to_bytes()").to_bytes(*args, **kwargs)

    def bit_count(self) -> int:
        return self.env.specialize(self.expr, "counted with int.bit_count()").bit_count()

    from_bytes = staticmethod(int.from_bytes)

    def __bool__(self) -> bool:
        _require_live(self.env)
        return self.env.evaluate(sympy.Ne(self.expr, 0), "truth value of a size")

    # -- arithmetic -----------------------------------------------------------
    def _op(self, other: Any, fn: Callable, reflected: bool = False, result: str = "int") -> Any:
        if isinstance(other, _SymNumber) and other.env is not self.env:
            _require_live(self.env, other)
        o = to_expr(other)
        if o is NotImplemented:
            return self._with_other_number(other, _PYOP.get(fn, fn), reflected)
        if _rounded_narrow_float(self) or _rounded_narrow_float(other):
            out = _numpy_op(self, other, fn, reflected)
            if out is not NotImplemented:
                return out
        a, b = (o, self.expr) if reflected else (self.expr, o)
        if result == "int" and not isinstance(other, (float, SymFloat)) and not _has_float(o):
            out = wrap_int(bounded(fn(a, b), self.env), self.env)
        else:
            out = _float_result(fn, *((other, self) if reflected else (self, other)), self.env)
        return _typed_result(out, self, other, fn, reflected)

    def __add__(self, o): return self._op(o, operator.add)
    def __radd__(self, o): return self._op(o, operator.add, True)
    def __sub__(self, o): return self._op(o, operator.sub)
    def __rsub__(self, o): return self._op(o, operator.sub, True)
    def __mul__(self, o): return self._op(o, operator.mul)
    def __rmul__(self, o): return self._op(o, operator.mul, True)

    # -- bitwise: exact where integer arithmetic says it, else specialize ------
    def _shift_count(self, o: Any, what: str) -> Any:
        if isinstance(o, SymInt):
            o = o.env.specialize(o.expr, f"shift count of `{what}` (only constant shifts stay symbolic)")
        if not _is_int_like(o):
            return NotImplemented
        if int(o) < 0:
            raise ValueError("negative shift count")
        return int(o)

    def __rshift__(self, o):
        k = self._shift_count(o, ">>")
        if k is NotImplemented:
            return k
        return _numpy_typed(wrap_int(sympy.floor(self.expr / 2 ** k), self.env), operator.rshift, self, o)

    def __lshift__(self, o):
        k = self._shift_count(o, "<<")
        if k is NotImplemented:
            return k
        return _numpy_typed(wrap_int(self.expr * 2 ** k, self.env), operator.lshift, self, o)

    def __rrshift__(self, o):
        if not _is_int_like(o):
            return NotImplemented
        # o itself (not int(o)): an np.int32 keeps its type, as in eager
        return o >> self._typed(self.env.specialize(self.expr, "shift count of `>>` (only constant shifts stay "
                                                    "symbolic)"))

    def __rlshift__(self, o):
        if not _is_int_like(o):
            return NotImplemented
        return o << self._typed(self.env.specialize(self.expr, "shift count of `<<` (only constant shifts stay "
                                                    "symbolic)"))

    def _bitwise(self, o: Any, fn: Callable, text: str) -> Any:
        if not (_is_int_like(o) or isinstance(o, SymInt)):
            return NotImplemented
        if text == "&" and _is_int_like(o) and int(o) >= 0 and (int(o) + 1) & int(o) == 0:
            # n & (2**k - 1) is n mod 2**k for every integer n (two's complement)
            return _numpy_typed(wrap_int(sym_mod(self.expr, int(o) + 1), self.env), operator.and_, self, o)
        reason = f"bitwise `{text}` on a size (only `& (2**k - 1)` and shifts by a constant stay symbolic)"
        a = self._typed(self.env.specialize(self.expr, reason))
        b = o._typed(o.env.specialize(o.expr, reason)) if isinstance(o, SymInt) else o
        return fn(a, b)

    def __and__(self, o): return self._bitwise(o, operator.and_, "&")
    def __rand__(self, o): return self._bitwise(o, operator.and_, "&")
    def __or__(self, o): return self._bitwise(o, operator.or_, "|")
    def __ror__(self, o): return self._bitwise(o, operator.or_, "|")
    def __xor__(self, o): return self._bitwise(o, operator.xor, "^")
    def __rxor__(self, o): return self._bitwise(o, operator.xor, "^")

    def __invert__(self): return wrap_int(-self.expr - 1, self.env, self.numpy_type)

    def _divisor_nonzero(self, o: Any, reflected: bool, what: str) -> None:
        """A size divisor is a requirement: Python raises ZeroDivisionError where it is 0
        (``7 // (n // 3)`` at n < 3), so the contract admits only sizes where it is not.
        numpy scalars divide by 0 without raising (inf, 0, a warning): no requirement then."""
        divisor = self if reflected else o
        numpy_scalars = self.numpy_type is not None or getattr(o, "numpy_type", None) is not None \
            or isinstance(o, np.generic)
        if not isinstance(divisor, SymInt) or numpy_scalars:
            return
        self.env.guard(sympy.Ne(divisor.expr, 0), "shape", f"a size divisor of `{what}`: Python raises "
                       f"ZeroDivisionError where it is 0", user_source(3), cause="shape")

    def __floordiv__(self, o):
        if isinstance(o, (float, SymFloat)):
            return self._float_floordiv(o, False)
        self._divisor_nonzero(o, False, "//")
        return self._op(o, _floordiv)

    def __rfloordiv__(self, o):
        if isinstance(o, (float, SymFloat)):
            return self._float_floordiv(o, True)
        self._divisor_nonzero(o, True, "//")
        return self._op(o, _floordiv, True)

    def __mod__(self, o):
        self._divisor_nonzero(o, False, "%")
        return self._op(o, sym_mod)

    def __rmod__(self, o):
        self._divisor_nonzero(o, True, "%")
        return self._op(o, sym_mod, True)

    def __truediv__(self, o):
        self._divisor_nonzero(o, False, "/")
        return self._op(o, _truediv, result="float")

    def __rtruediv__(self, o):
        self._divisor_nonzero(o, True, "/")
        return self._op(o, _truediv, True, result="float")

    def __divmod__(self, o):
        return (self // o, self % o)

    def __rdivmod__(self, o):
        return (o // self, o % self)

    def __pow__(self, o, mod=None):
        o = _constant_exponent(o)
        if mod is not None:
            if not (_is_int_like(o) and int(o) >= 0 and (_is_int_like(mod) or isinstance(mod, SymInt))):
                # pow(n, -1, 7) (a modular inverse) has no size form: Python's own pow on the
                # example's values (its TypeError/ValueError for other operands, as eager)
                value = self._typed(self.env.specialize(self.expr, "pow() with a modulus and a negative "
                                                        "exponent (no symbolic form)", user_source(2)))
                if isinstance(mod, SymInt):
                    mod = mod._typed(mod.env.specialize(mod.expr, "modulus of pow()", user_source(2)))
                return pow(value, o, mod)
            return self._op(o, operator.pow) % mod  # pow(n, k, m) == n**k % m for k >= 0
        if _is_int_like(o) and int(o) >= 0:
            return self._op(o, operator.pow)
        return self._op(o, operator.pow, result="float")

    def __rpow__(self, o):
        if type(o) is int and o >= 2 and self.numpy_type is None and self.hint >= 0:
            return self._power_of(o)
        return pow(o, _constant_exponent(self))

    def _power_of(self, base: int) -> "SymInt":
        """``base ** self`` for a Python int ``base >= 2``: the size ``Pow(base, n)``, computed at
        run time, with guards at the user's line that it is an int (``n >= 0``: a negative
        exponent gives a float) and fits numpy's int64 sizes (``n <= 62`` for base 2), so an
        array the program sizes or scales by it is what eager numpy makes."""
        top = 0
        while base ** (top + 1) <= int(np.iinfo(np.int64).max):
            top += 1
        reason = (f"{base}**{format_guard(self.expr)} is a size only for {format_guard(self.expr)} "
                  f"in [0, {top}] (an int that fits numpy's int64)")
        source = user_source(3)
        self.env.guard(sympy.Ge(self.expr, 0), "shape", reason, source, cause="shape")
        self.env.guard(sympy.Le(self.expr, top), "shape", reason, source, cause="shape")
        return wrap_int(sympy.Pow(base, self.expr), self.env)

    def __neg__(self): return wrap_int(-self.expr, self.env, self.numpy_type)
    def __pos__(self): return self
    def __abs__(self): return wrap_int(sympy.Abs(self.expr), self.env, self.numpy_type)
    def __round__(self, ndigits=None):
        if ndigits is None:
            return self if self.numpy_type is None else SymInt(self.expr, self.env)  # round(np.int32(7)) is an int
        if int(ndigits) >= 0:
            return self
        # round(n, -k): round-half-even to a multiple of 10**k, exact in integers
        q = 10 ** (-int(ndigits))
        return wrap_int(round_half_even(self.expr / q) * q, self.env, self.numpy_type)

    def __trunc__(self):
        if self.numpy_type is not None:  # as eager: numpy integers define no __trunc__
            raise TypeError(f"type numpy.{self.numpy_type.type.__name__} doesn't define __trunc__ method")
        return self

    def __floor__(self): return self if self.numpy_type is None else SymInt(self.expr, self.env)
    def __ceil__(self): return self if self.numpy_type is None else SymInt(self.expr, self.env)

    def bit_length(self) -> int:
        """``int.bit_length``: the same answer for every size in ``[2**(b-1), 2**b - 1]``, so
        that range is required (two guards at the user's line) rather than the size pinned."""
        value = int(self.env.hint(self.expr))
        b = abs(value).bit_length()
        reason = f"{self.expr}.bit_length() is {b} only for {self.expr} in [{2 ** (b - 1) if b else 0}, {2 ** b - 1}]"
        source = user_source(2)
        if b == 0:
            self.env.guard(sympy.Eq(self.expr, 0), "guard", reason, source, cause="bit_length")
        elif value > 0:
            self.env.guard(sympy.Ge(self.expr, 2 ** (b - 1)), "guard", reason, source, cause="bit_length")
            self.env.guard(sympy.Le(self.expr, 2 ** b - 1), "guard", reason, source, cause="bit_length")
        else:
            self.env.specialize(self.expr, f"{self.expr}.bit_length() of a negative value", source)
        return b

    def is_integer(self) -> bool:
        return True

    def as_integer_ratio(self) -> tuple:
        return (self, 1)

    @property
    def real(self) -> "SymInt":
        return self

    @property
    def imag(self) -> int:
        return 0

    @property
    def numerator(self) -> "SymInt":
        return self

    @property
    def denominator(self) -> int:
        return 1

    def conjugate(self) -> "SymInt":
        return self

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.__index__(), dtype=dtype)


def _rounded_narrow_float(value: Any) -> bool:
    """Whether ``value`` is a float16/float32 size that eager holds rounded to its type
    (``np.float32(n) / 3``): the float64 expression is not that value, so arithmetic on it
    would round once where eager rounds at every step.  ``np.float32(n)`` itself is exact."""
    if not isinstance(value, SymFloat) or value.numpy_type is None or value.numpy_type.kind != "f" \
            or value.numpy_type.itemsize >= 8:
        return False
    if value.exact is None or sympy.fraction(sympy.together(value.exact))[1] != 1:
        return True
    # an integer: exact in the type only below 2**(mantissa bits + 1) (2048 for float16)
    top = value.env._upper_bound(value.exact)
    return top is None or top > 2 ** (np.finfo(value.numpy_type).nmant + 1)


def _typed_result(out: Any, a: Any, other: Any, fn: Callable, reflected: bool) -> Any:
    """``a fn other``'s result ``out`` with the numpy scalar type eager's would carry.

    A numpy float result with no exact value (``np.int64(n) ** 0.5``, ``np.float32(n) * 0.1``)
    is numpy's own arithmetic at run time, not a float64 expression evaluated in sympy's order.
    """
    out = _numpy_typed(out, fn, other, a) if reflected else _numpy_typed(out, fn, a, other)
    if isinstance(out, SymFloat) and out.numpy_type is not None and out.exact is None:
        routed = _numpy_op(a, other, fn, reflected)
        if routed is not NotImplemented:
            return routed
    return out


def _numpy_op(left: Any, right: Any, fn: Callable, reflected: bool) -> Any:
    """``fn`` of sizes as numpy's ufunc on eager's operands (typed sizes as their numpy scalars),
    a traced 0-d value computed at run time with numpy's own rounding, or NotImplemented."""
    ufunc = _FN_UFUNC.get(fn)
    tracer = getattr(left.env, "tracer", None)
    if ufunc is None or tracer is None:
        return NotImplemented
    a, b = (right, left) if reflected else (left, right)
    return tracer.sym_ufunc(ufunc, "__call__", (a, b), {})


def _called_by_array_iter() -> bool:
    """Whether the Python frame asking for ``__index__`` is a traced array's ``__iter__``
    (``for v in x`` calls ``range(x.shape[0])`` there), so the reason can say "iterating"."""
    import os
    import sys

    frame = sys._getframe(2)
    code = frame.f_code if frame is not None else None
    return (code is not None and code.co_name == "__iter__"
            and code.co_filename.endswith(os.path.join("capture", "traced.py")))


def _has_float(expr: Any) -> bool:
    return isinstance(expr, sympy.Basic) and expr.has(sympy.Float)


# the Python operator each arithmetic rule computes (what eager code runs on its values)
_PYOP: dict = {_floordiv: operator.floordiv, sym_mod: operator.mod, _truediv: operator.truediv}
_FN_UFUNC: dict = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply, _truediv: np.true_divide,
                   _floordiv: np.floor_divide, sym_mod: np.remainder, operator.pow: np.power}
_OP_TEXT: dict = {operator.add: "+", operator.sub: "-", operator.mul: "*", _truediv: "/", _floordiv: "//",
                   sym_mod: "%", operator.pow: "**"}
_TO_INT_NODE: dict = {sympy.floor: FFloor, sympy.ceiling: FCeil, trunc_exact: FTrunc, round_half_even: FRound}
_RELATIONS: dict = {sympy.Eq: operator.eq, sympy.Ne: operator.ne, sympy.Lt: operator.lt, sympy.Le: operator.le,
                    sympy.Gt: operator.gt, sympy.Ge: operator.ge}
# numpy ufuncs on two scalars that are size arithmetic: (method, reflected method)
_UFUNC_DUNDERS = {
    "add": ("__add__", "__radd__"), "subtract": ("__sub__", "__rsub__"),
    "multiply": ("__mul__", "__rmul__"), "true_divide": ("__truediv__", "__rtruediv__"),
    "divide": ("__truediv__", "__rtruediv__"), "floor_divide": ("__floordiv__", "__rfloordiv__"),
    "remainder": ("__mod__", "__rmod__"), "power": ("__pow__", "__rpow__"),
}


# Other one-operand ufuncs of a size (np.sqrt(n), np.ceil(n / 3)) are traced ops: a 0-d array
# numpy computes from the size at run time, with numpy's own float semantics (nan, inf,
# rounding), which a size expression would not follow.
_UFUNC_UNARY = {"negative": operator.neg, "positive": operator.pos, "absolute": operator.abs}
_UFUNC_COMPARE = {"less": ("__lt__", "__gt__"), "less_equal": ("__le__", "__ge__"),
                  "greater": ("__gt__", "__lt__"), "greater_equal": ("__ge__", "__le__"),
                  "equal": ("__eq__", "__eq__"), "not_equal": ("__ne__", "__ne__")}


def _scalar_ufunc(ufunc: Any, inputs: tuple) -> Any:
    """``ufunc(*inputs)`` on scalars (at least one a size) as size arithmetic, or NotImplemented."""
    name = ufunc.__name__
    if len(inputs) == 1 and name in _UFUNC_UNARY:
        out = _UFUNC_UNARY[name](inputs[0])
    elif len(inputs) == 2 and name in ("maximum", "minimum") and all(
            isinstance(v, SymInt) or _is_int_like(v) for v in inputs):
        out = (sym_max if name == "maximum" else sym_min)(*inputs)
    elif name in ("power", "float_power") and len(inputs) == 2 and isinstance(inputs[1], _SymNumber):
        # np.power(2.0, n): a size exponent has no size form (`**` pins it); the traced op
        # computes numpy's own power at run time
        return NotImplemented
    elif len(inputs) == 2 and (name in _UFUNC_DUNDERS or name in _UFUNC_COMPARE):
        # the size's own method (a numpy scalar's would call this ufunc again); a comparison
        # gives a SymBool, whose bool() guards as for n < 3
        left, right = inputs
        names = _UFUNC_DUNDERS.get(name) or _UFUNC_COMPARE[name]
        out = (getattr(left, names[0])(right) if isinstance(left, _SymNumber)
               else getattr(right, names[1])(left))
    else:
        return NotImplemented
    if out is NotImplemented:
        return out
    try:
        with np.errstate(all="ignore"):
            eager = ufunc(*[_eager_value(v) for v in inputs])
    except (ArithmeticError, ValueError, TypeError):
        return out
    return as_type_of(out, eager)


def _numpy_type_of(value: Any) -> Any:
    if isinstance(value, _SymNumber):
        return value.numpy_type
    if isinstance(value, np.generic):
        return value.dtype
    return None


def _eager_value(value: Any) -> Any:
    return value.example() if isinstance(value, _SymNumber) else value


def _numpy_typed(out: Any, fn: Callable, left: Any, right: Any) -> Any:
    """``out`` (the symbolic result of ``fn(left, right)``) with the numpy scalar type eager
    arithmetic gives it, when an operand is a numpy scalar or a typed size.

    The type is read off eager's own result at the example values (``5 + np.int32(1)`` is an
    ``np.int32``; ``np.int32(5) / 2`` an ``np.float64``), so numpy's promotion rules are
    numpy's, not restated here.  Overflow of the narrow type is not modelled (sizes are small).
    """
    if _numpy_type_of(left) is None and _numpy_type_of(right) is None:
        return out
    for size, other in ((left, right), (right, left)):
        typed = _numpy_type_of(other)
        if isinstance(size, SymInt) and size.numpy_type is None and typed is not None and typed.kind in "iu":
            # numpy 2 (NEP 50) converts a Python int operand to the other's integer type, and
            # raises OverflowError when it does not fit
            require_fits([size], typed, f"a size (a Python int) met with a numpy {typed} scalar")
    pyop = _PYOP.get(fn, fn)
    try:
        with np.errstate(all="ignore"):
            eager = pyop(_eager_value(left), _eager_value(right))
    except (ArithmeticError, ValueError, TypeError):
        return out
    return as_type_of(out, eager)


def as_type_of(out: Any, eager: Any) -> Any:
    """``out`` with the numpy scalar type of ``eager`` (its value at the example), if it has one."""
    if not isinstance(eager, np.generic) or isinstance(out, SymBool):
        return out
    dtype = eager.dtype
    if isinstance(out, (int, float, np.generic)):
        return eager  # no size left in it: eager's own value (wrapped, if it overflowed)
    if not isinstance(out, _SymNumber):
        return out  # a traced value numpy computes at run time (its own type already)
    if dtype.kind in "iu" and isinstance(out, SymInt):
        return wrap_int(out.expr, out.env, dtype)
    if dtype.kind == "f":
        if isinstance(out, SymFloat):
            return SymFloat(out.expr, out.env, out.exact, dtype)
        return SymFloat(sympy.Float(1.0) * out.expr, out.env, out.expr, dtype)
    return out


class SymFloat(_SymNumber):
    """A float computed from sizes (``s / 4``, ``s ** 0.5``); replays as a Python float.

    ``expr`` is the printed float expression (``0.25*s``).  ``exact`` is the
    same value as an exact rational expression (``s/4``) when float rounding
    cannot change its floor/ceil/round at any size (see ``_exact_result``), else
    None; ``math.floor``/``math.ceil``/``math.trunc``/``round`` use it to give an
    integer size expression instead of specializing.
    """

    __slots__ = ("exact",)
    _eager_class = float

    def __init__(self, expr: sympy.Expr, env: Any, exact: Any = None, dtype: Any = None) -> None:
        super().__init__(expr, env, dtype)
        self.exact = exact

    @property
    def hint(self) -> float:
        return float(self.env.hint(self.expr))

    def __str__(self) -> str:
        return self._text("converted to text with str()", lambda v: str(float(v) if self.numpy_type is None else v))

    def __int__(self) -> int:
        return int(self.env.specialize(self.expr, "converted with int() (math.trunc() stays symbolic)"))

    def __format__(self, spec: str) -> str:
        return self._text(f"formatted with {spec!r}" if spec else "formatted into an f-string/format()",
                          lambda v: format(float(v) if self.numpy_type is None else v, spec))

    def __bool__(self) -> bool:
        return self.env.evaluate(sympy.Ne(self.expr, 0), "truth value of a float size")

    def _op(self, other, fn, reflected=False, result="float"):  # result: always a float (as SymInt._op's)
        if isinstance(other, _SymNumber) and other.env is not self.env:
            _require_live(self.env, other)
        o = to_expr(other)
        if o is NotImplemented:
            return self._with_other_number(other, _PYOP.get(fn, fn), reflected)
        if _rounded_narrow_float(self) or _rounded_narrow_float(other):
            out = _numpy_op(self, other, fn, reflected)
            if out is not NotImplemented:
                return out
        out = _float_result(fn, *((other, self) if reflected else (self, other)), self.env)
        return _typed_result(out, self, other, fn, reflected)

    def __add__(self, o): return self._op(o, operator.add)
    def __radd__(self, o): return self._op(o, operator.add, True)
    def __sub__(self, o): return self._op(o, operator.sub)
    def __rsub__(self, o): return self._op(o, operator.sub, True)
    def __mul__(self, o): return self._op(o, operator.mul)
    def __rmul__(self, o): return self._op(o, operator.mul, True)
    def __truediv__(self, o): return self._op(o, _truediv)
    def __rtruediv__(self, o): return self._op(o, _truediv, True)
    def __pow__(self, o): return self._op(_constant_exponent(o), operator.pow)
    def __rpow__(self, o): return pow(o, _constant_exponent(self))
    def __neg__(self):
        return wrap_float(-self.expr, self.env, None if self.exact is None else -self.exact, self.numpy_type)

    def __pos__(self): return self
    def __abs__(self): return wrap_float(sympy.Abs(self.expr), self.env, dtype=self.numpy_type)

    def __floordiv__(self, o): return self._float_floordiv(o, False)
    def __rfloordiv__(self, o): return self._float_floordiv(o, True)

    # float's other operations and methods: the example's value, the sizes pinned with a reason
    def _pinned(self, what: str) -> float:
        return self._typed(self.env.specialize(self.expr, what))

    def __mod__(self, o): return self._pinned("taken modulo (float %)") % o
    def __rmod__(self, o): return o % self._pinned("taken modulo (float %)")
    def __divmod__(self, o): return divmod(self._pinned("divided with divmod()"), o)
    def __rdivmod__(self, o): return divmod(o, self._pinned("divided with divmod()"))
    def hex(self) -> str: return float(self._pinned("converted with float.hex()")).hex()
    def as_integer_ratio(self) -> tuple:
        return float(self._pinned("converted with as_integer_ratio()")).as_integer_ratio()
    def is_integer(self) -> bool:
        if self.exact is not None and sympy.fraction(sympy.together(self.exact))[1] == 1 \
                and not _rounded_narrow_float(self):
            return True  # float(n), np.float64(2 * n): an integer at every size
        return float(self._pinned("tested with is_integer()")).is_integer()
    def conjugate(self): return self

    @property
    def real(self): return self

    @property
    def imag(self) -> float: return 0.0

    # -- to integers: exact when ``exact`` is known, else specialize naming the function --
    def _to_int(self, build: Callable, concrete: Callable, what: str) -> Any:
        out = build(self.exact) if self.exact is not None else None
        if out is not None:
            return wrap_int(out, self.env)
        node = _TO_INT_NODE.get(build)
        if node is not None and not _rounded_narrow_float(self) and self.numpy_type is None \
                and _float_operand(self) is not None:
            # Python's own rounding of the float it holds (math.floor(n * 0.3)): an integer size
            return wrap_int(bounded(node(_float_operand(self)), self.env), self.env)
        value = self.env.specialize(
            self.expr, f"{what} of a float size that float rounding makes inexact (divide sizes by "
            "integers, e.g. n / 4, to keep it symbolic)")
        return concrete(value)

    def __round__(self, ndigits=None):
        if ndigits is not None:
            return round(float(self.env.specialize(self.expr, f"rounded with round(x, {ndigits})")), ndigits)
        return self._to_int(round_half_even, round, "rounded with round()")

    def __trunc__(self): return self._to_int(trunc_exact, math.trunc, "converted with math.trunc()")
    def __floor__(self): return self._to_int(sympy.floor, math.floor, "rounded with math.floor()")
    def __ceil__(self): return self._to_int(sympy.ceiling, math.ceil, "rounded with math.ceil()")


class SymBool:
    """A symbolic comparison; ``bool()`` records a guard and follows the example."""

    __slots__ = ("expr", "env")

    def __init__(self, expr: sympy.Basic, env: Any) -> None:
        self.expr = expr
        self.env = env

    def __bool__(self) -> bool:
        _require_live(self.env)
        return self.env.evaluate(self.expr, "branch on a size comparison")

    def __repr__(self) -> str:
        printing = PRINTING.get()
        if printing == "screen" or (not printing and _asked_by_library()):
            return str(self.expr)
        return repr(bool(self))  # model code: "True" / "False", as eager prints a comparison

    __str__ = __repr__

    @property
    def __class__(self) -> type:
        return SymBool if _asked_by_library() else bool  # isinstance(n > 2, bool), as in eager

    def __hash__(self) -> int:
        if _asked_by_library():
            raise CaptureError(f"internal error: library code hashed the condition {self.expr} (key by its "
                               "sympy expression, .expr, instead)")
        _require_live(self.env)
        return hash(self.env.evaluate(self.expr, "hashed (dict or set lookup) a size comparison"))

    def _logic(self, other, fn, reflected=False):
        if isinstance(other, SymBool):
            o = other.expr
        elif isinstance(other, bool):
            o = sympy.true if other else sympy.false
        else:
            return NotImplemented
        a, b = (o, self.expr) if reflected else (self.expr, o)
        return wrap_bool(fn(a, b), self.env)

    def __and__(self, o): return self._logic(o, sympy.And)
    def __rand__(self, o): return self._logic(o, sympy.And, True)
    def __or__(self, o): return self._logic(o, sympy.Or)
    def __ror__(self, o): return self._logic(o, sympy.Or, True)
    # ==, != and ^ between two bools compare their 0/1 values: the same truth as Equivalent /
    # Xor, in a form generated code and the solver both read (Eq/Ne of Piecewise sizes)
    def __xor__(self, o): return self._number(operator.ne, o) if isinstance(o, (SymBool, bool)) else NotImplemented
    def __rxor__(self, o): return self._number(operator.ne, o, True) if isinstance(o, (SymBool, bool)) else NotImplemented
    def __invert__(self): return -self.as_int() - 1  # a Python bool is an int: ~True == -2

    def __eq__(self, o):
        return self._number(operator.eq, o)

    def __ne__(self, o):
        return self._number(operator.ne, o)

    # -- as a number: a Python bool is the int 0 or 1 (True + 1 == 2, 2.0 * (n > 3)) ----------
    def as_int(self) -> Any:
        """The int eager code computes with: 1 where the condition holds, else 0 (a SymInt)."""
        return wrap_int(to_expr(self), self.env)

    def _number(self, fn: Callable, other: Any, reflected: bool = False) -> Any:
        if isinstance(other, SymBool):
            other = other.as_int()
        elif isinstance(other, bool):
            other = int(other)
        elif not isinstance(other, (int, float, SymInt, SymFloat)):
            return NotImplemented  # arrays and the rest: their reflected method decides
        a, b = (other, self.as_int()) if reflected else (self.as_int(), other)
        return fn(a, b)

    def __add__(self, o): return self._number(operator.add, o)
    def __radd__(self, o): return self._number(operator.add, o, True)
    def __sub__(self, o): return self._number(operator.sub, o)
    def __rsub__(self, o): return self._number(operator.sub, o, True)
    def __mul__(self, o): return self._number(operator.mul, o)
    def __rmul__(self, o): return self._number(operator.mul, o, True)
    def __truediv__(self, o): return self._number(operator.truediv, o)
    def __rtruediv__(self, o): return self._number(operator.truediv, o, True)
    def __floordiv__(self, o): return self._number(operator.floordiv, o)
    def __rfloordiv__(self, o): return self._number(operator.floordiv, o, True)
    def __mod__(self, o): return self._number(operator.mod, o)
    def __rmod__(self, o): return self._number(operator.mod, o, True)
    def __pow__(self, o): return self._number(operator.pow, o)
    def __rpow__(self, o): return self._number(operator.pow, o, True)
    def __lshift__(self, o): return self._number(operator.lshift, o)
    def __rlshift__(self, o): return self._number(operator.lshift, o, True)
    def __rshift__(self, o): return self._number(operator.rshift, o)
    def __rrshift__(self, o): return self._number(operator.rshift, o, True)
    def __divmod__(self, o): return self._number(divmod, o)
    def __rdivmod__(self, o): return self._number(divmod, o, True)
    def __lt__(self, o): return self._number(operator.lt, o)
    def __le__(self, o): return self._number(operator.le, o)
    def __gt__(self, o): return self._number(operator.gt, o)
    def __ge__(self, o): return self._number(operator.ge, o)
    def __neg__(self): return -self.as_int()
    def __pos__(self): return self.as_int()
    def __abs__(self): return self.as_int()

    def __float__(self) -> float:
        return float(bool(self))

    def __int__(self) -> int:
        return int(bool(self))

    __index__ = __int__


def is_symbolic(value: Any) -> bool:
    return isinstance(value, (SymInt, SymFloat, SymBool))


def _minmax(builtin: Callable, sym: Callable, args: tuple, kwargs: dict) -> Any:
    values = args[0] if len(args) == 1 else args
    if kwargs or len(args) == 0:
        return builtin(*args, **kwargs)
    if len(args) == 1:
        try:
            values = list(values)
        except TypeError:
            return builtin(*args, **kwargs)
    syms = [v for v in values if isinstance(v, SymInt)]
    if not syms or not all(isinstance(v, SymInt) or _is_int_like(v) for v in values):
        return builtin(*args, **kwargs)
    types = {_numpy_type_of(v) for v in values}
    if len(types) > 1:
        # min(n, np.int32(3)) is whichever value is smaller, with its own type: the comparisons
        # (guards) decide it as eager does
        return builtin(*args, **kwargs)
    env = syms[0].env
    return wrap_int(sym(*[to_expr(v) for v in values]), env, types.pop())


def sym_min(*args: Any, **kwargs: Any) -> Any:
    """``min`` that stays symbolic on sizes (``Min(s, 512)``) instead of recording a guard."""
    return _minmax(builtins.min, sympy.Min, args, kwargs)


def sym_max(*args: Any, **kwargs: Any) -> Any:
    """``max`` that stays symbolic on sizes (``Max(8, b)``) instead of recording a guard."""
    return _minmax(builtins.max, sympy.Max, args, kwargs)


def sym_sqrt(value: Any) -> Any:
    """``math.sqrt`` on a size as a symbolic float; a negative argument is a requirement (math.sqrt
    raises ValueError there, where ``** 0.5`` would give a complex number)."""
    if isinstance(value, (SymInt, SymFloat)):
        value.env.guard(value.expr >= 0, "shape", "math.sqrt of a size expression: math raises ValueError "
                        "(math domain error) below 0", user_source(2), cause="shape")
        return wrap_float(value.expr ** sympy.Float(0.5), value.env)
    return math.sqrt(value)


class _FloatType(type):
    """Metaclass of :class:`sym_float`: instance and subclass checks, attributes are ``float``'s."""

    def __instancecheck__(cls, obj: Any) -> bool:
        if isinstance(obj, SymFloat):  # as eager: a Python float, or an np.float64 (a float subclass)
            return obj.numpy_type is None or obj.numpy_type == np.float64
        return isinstance(obj, float)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, float)

    def __getattr__(cls, name: str) -> Any:
        return getattr(float, name)

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], SymBool):
            args = (args[0].as_int(),)  # float(n > 3): 1.0 where it holds, computed at run time
        if len(args) == 1 and not kwargs and isinstance(args[0], (SymInt, SymFloat)):
            value = args[0]
            if _rounded_narrow_float(value):  # float(np.float32(n) / 3): the float32-rounded value
                return float(value.env.specialize(value.expr, "converted with float() from a rounded "
                                                  f"{value.numpy_type} value", user_source(2)))
            if isinstance(value, SymFloat) and value.numpy_type is not None:
                return SymFloat(value.expr, value.env, value.exact)  # a Python float, as float() gives
            # 1.0*s keeps the value a float in printed code (an int array times it promotes as eager does)
            return value if isinstance(value, SymFloat) else SymFloat(sympy.Float(1.0) * value.expr, value.env,
                                                                       value.expr)
        return float(*args, **kwargs)


class sym_float(metaclass=_FloatType):  # noqa: N801  (stands in for the builtin ``float``)
    """``float`` as model code sees it during capture: ``float(s)`` of a size is a SymFloat.

    Python's ``float()`` must return a real float (``__float__`` cannot stay
    symbolic), so capture resolves the name ``float`` in model code to this
    class instead, like ``min``/``max``.  Anything else is the builtin:
    ``float("1.5")``, ``isinstance(v, float)``, ``float.fromhex``.  As a dtype
    (``np.zeros(n, dtype=float)``) it is numpy's ``float64``, as ``float`` is.
    """

    dtype = np.dtype(float)  # numpy reads a type's .dtype: dtype=float in model code is float64
