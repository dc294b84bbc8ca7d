"""Float arithmetic on sizes as Python runs it: IEEE-754 binary64, round to nearest (ties to even).

``x.shape[0] * 0.3 / 0.1`` is three roundings in that order; sympy would fold
``0.3 / 0.1`` to ``3.0`` and reassociate the product, and exact arithmetic says
``4 * 0.3 / 0.1 == 12`` where Python computes ``11.999999999999998``.  So a float
expression whose value rounding can change is kept as a tree of these nodes, one
per Python operation, which sympy neither reorders nor folds:

- ``FAdd(a, b)``, ``FSub(a, b)``, ``FMul(a, b)``, ``FDiv(a, b)``, ``FPow(a, b)``:
  ``float(a) op float(b)``, one rounding (``FPow``: the C library's ``pow``, as
  Python's ``**`` on floats); ``FDiv`` of two integers is Python's ``int / int``,
  the exact quotient rounded once (the same below 2**53);
- ``FFloor(a)``, ``FCeil(a)``, ``FTrunc(a)``, ``FRound(a)``: the integer Python's
  ``math.floor``, ``math.ceil``, ``int()`` / ``math.trunc`` and ``round`` give
  (ties to even);
- ``FConst(c)``: the float constant ``c`` on the other side of a comparison with
  a float node (a ``Float`` kept out of every rationalization).

An operand is a node, a ``sympy.Float`` constant (its binary value), or an exact
size expression (an integer, or a dyadic rational such as ``n/4`` that a float
holds exactly), converted to a float by correct rounding as Python's ``float()``
does (exact below 2**53).  Relations between a node and anything else compare
exact values, as Python compares a float with an int.

Where they are decided: :func:`decide_box` (called by ``ShapeSolver`` before z3)
uses that every operation above is monotone in each operand (rounding is
monotone), so a comparison whose operands move one way in each size holds on a box
of sizes iff it holds at its corners, and a one-size comparison admits an interval
found by bisection; everything is evaluated with Python floats
(:func:`solver.evaluate`).  What it cannot decide goes to z3's floating-point theory
(``solver.translate``) and, on a timeout, to enumerating the bounded box.  Sizes are
taken to be below ``2**63`` (numpy's ``intp``) where a range is unbounded.
"""
from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Mapping, Optional

import sympy

from .bisection import last_holding

__all__ = ["FAdd", "FSub", "FMul", "FDiv", "FPow", "FFloor", "FCeil", "FTrunc", "FRound", "FConst",
           "FLOAT_NODES", "INT_NODES", "NODES", "has_float_ops", "decide_box", "SIZE_CAP"]

# the largest size numpy can hold (intp): the top of an unbounded range for a float guard
SIZE_CAP = 2 ** 63 - 1


class _FloatNode(sympy.Function):
    """A Python float operation on sizes (see the module docstring); sympy never evaluates it."""

    _text: str = ""
    _level: int = 9  # Python operator precedence (higher binds tighter)

    def _eval_subs(self, old: Any, new: Any) -> Any:
        # nsimplify(rational=True) and subs of numbers replace Float atoms by decimal rationals;
        # a node's constants are binary values that the operation rounds with: keep them
        if isinstance(old, sympy.Float):
            return self
        return None

    def _sympystr(self, printer: Any) -> str:
        return readable(self, printer._print)


class _Binary(_FloatNode):
    nargs = 2

    @classmethod
    def eval(cls, a: Any, b: Any) -> Any:
        return _folded(cls, (a, b), sympy.Float)


class FAdd(_Binary):
    _text, _level = "+", 5


class FSub(_Binary):
    _text, _level = "-", 5


class FMul(_Binary):
    _text, _level = "*", 6


class FDiv(_Binary):
    _text, _level = "/", 6


class FPow(_Binary):
    _text, _level = "**", 8


class FConst(_FloatNode):
    nargs = 1


class _ToInt(_FloatNode):
    nargs = 1

    @classmethod
    def eval(cls, a: Any) -> Any:
        return _folded(cls, (a,), sympy.Integer)

    def _eval_is_integer(self) -> bool:
        return True


class FFloor(_ToInt):
    _text = "math.floor"


class FCeil(_ToInt):
    _text = "math.ceil"


class FTrunc(_ToInt):
    _text = "int"


class FRound(_ToInt):
    _text = "round"


FLOAT_NODES = (FAdd, FSub, FMul, FDiv, FPow, FConst)
INT_NODES = (FFloor, FCeil, FTrunc, FRound)
NODES = FLOAT_NODES + INT_NODES

_BINARY_PY: dict = {FAdd: lambda a, b: a + b, FSub: lambda a, b: a - b, FMul: lambda a, b: a * b,
                    FDiv: lambda a, b: a / b, FPow: lambda a, b: _pow(a, b)}
_UNARY_PY: dict = {FFloor: math.floor, FCeil: math.ceil, FTrunc: math.trunc, FRound: round,
                   FConst: lambda a: a}


def _folded(cls: type, args: tuple, number: type) -> Any:
    """The node's value once every operand is a number (sizes substituted), computed as Python
    does; None (stay unevaluated) while a size is left or where Python raises."""
    if not all(isinstance(a, sympy.Number) and a.is_finite for a in args):
        return None
    values = [float(a) if isinstance(a, sympy.Float) else (int(a) if a.is_Integer else float(a)) for a in args]
    try:
        if cls is FDiv and all(type(v) is int for v in values):
            out = values[0] / values[1]
        else:
            out = python_op(cls)(*[float(v) for v in values])
    except (ArithmeticError, ValueError):
        return None
    return number(out) if math.isfinite(out) else None


def _pow(a: float, b: float) -> float:
    out = a ** b
    if type(out) is not float:  # (-8.0) ** 0.5 is complex in Python: no size value
        raise ValueError(f"{a} ** {b} is not a real number")
    return out


def python_op(node_class: type) -> Callable:
    """The Python function of a node class on Python floats (``FDiv``: ``a / b``)."""
    return _BINARY_PY.get(node_class) or _UNARY_PY[node_class]


def has_float_ops(expr: Any) -> bool:
    """Whether ``expr`` holds a float operation node."""
    return isinstance(expr, sympy.Basic) and expr.has(*NODES)


def readable(e: Any, show: Callable[[Any], str]) -> str:
    """The text of a node for messages, in Python's notation and order (``n * 0.3 / 0.1``)."""
    cls = type(e)
    if cls is FConst:
        return repr(float(e.args[0]))
    if issubclass(cls, _ToInt):
        return f"{cls._text}({show(e.args[0])})"
    a, b = e.args
    left = _wrapped(a, show, cls._level if cls is not FPow else cls._level + 1)
    right = _wrapped(b, show, cls._level + 1 if cls is not FPow else cls._level)
    return f"{left} {cls._text} {right}"


def _wrapped(arg: Any, show: Callable, level: int) -> str:
    # a constant reads as Python prints the float (0.3333333333333333, not sympy's 15 digits)
    text = repr(float(arg)) if isinstance(arg, sympy.Float) else show(arg)
    if isinstance(arg, _Binary):
        inner = type(arg)._level
    elif isinstance(arg, (sympy.Symbol, _FloatNode, sympy.Function)) or (arg.is_Number and not arg.is_negative
                                                                            and arg.is_Integer) \
            or isinstance(arg, sympy.Float) and not arg.is_negative:
        inner = 9
    else:
        inner = 0
    return f"({text})" if inner < level else text


# -- deciding over boxes of sizes ----------------------------------------------------------------------

_REL = (sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge)


def decide_box(kind: str, c: Any, names: list, bounds: Mapping, assumptions: list,
               value: Callable[[Any, dict], Any]) -> Optional[tuple]:
    """Decide a guard with float nodes over the box ``bounds`` (name -> (lo, hi|None)).

    Args:
        kind: ``"implies"`` (does ``c`` hold at every point?) or ``"satisfiable"``.
        c: the (canonical) guard.
        names: the sizes involved (``c``'s and its connected ``assumptions``').
        assumptions: residual assumptions connected to ``c``.
        value: the one evaluator (``evaluate_exact``-like: raises where there is no value).

    Returns:
        ``(holds, point)``: for ``implies``, ``(True, None)`` or ``(False, counterexample)``;
        for ``satisfiable``, ``(True, witness)`` or ``(False, None)``; None when this
        procedure cannot tell (the caller asks z3, then enumerates).
    """
    box = {}
    for n in names:
        lo, hi = bounds[n]
        box[n] = (-SIZE_CAP - 1 if lo is None else lo, SIZE_CAP if hi is None else hi)
        if box[n][0] > box[n][1]:
            return None
    try:
        if len(names) == 1:
            return _one_size(kind, c, names[0], box[names[0]], assumptions, value)
        if assumptions:
            return None
        return _corners(kind, c, names, box, value)
    except (ArithmeticError, ValueError, TypeError, _NotMonotone):
        pass
    if len(names) == 1:
        return _vector_sweep(kind, c, names[0], box[names[0]], assumptions, value)
    return None


MAX_SWEPT_POINTS = 1 << 22  # one size's range a vector sweep evaluates whole (~0.1 s)


def _vector_sweep(kind: str, c: Any, name: str, span: tuple, assumptions: list,
                  value: Callable) -> Optional[tuple]:
    """Decide a one-size guard that is not monotone by evaluating it at every size of a bounded
    range at once, with numpy's binary64 arithmetic (the operations Python's floats do, in the
    same order: one array operation per float node); None when the range is too long or the
    expression holds anything but float nodes over integer arithmetic of the size.

    A counterexample (or witness) is confirmed with the one evaluator; a verdict that holds
    everywhere is spot-checked with it at the ends and at sizes spread over the range.
    """
    import numpy as np

    lo, hi = span
    if lo < 0 or hi - lo + 1 > MAX_SWEPT_POINTS or hi >= 1 << 53:
        return None
    points = np.arange(lo, hi + 1, dtype=np.int64)
    try:
        mask = np.ones(points.shape, bool)
        for a in assumptions:
            mask &= np.asarray(_vector_value(a, name, points), bool)
        got = np.asarray(_vector_value(c, name, points), bool)
    except (_NotVectorized, ArithmeticError, ValueError, TypeError, FloatingPointError):
        return None
    at = lambda e, v: value(e, {name: v})  # noqa: E731
    if kind == "implies":
        bad = np.flatnonzero(mask & ~got)
        if bad.size:
            v = int(points[bad[0]])
            return (False, {name: v}) if at(c, v) is False else None
        spread = np.flatnonzero(mask)[:: max(1, int(mask.sum()) // 64)]
        if all(at(c, int(points[i])) is True for i in list(spread) + list(np.flatnonzero(mask)[-1:])):
            return True, None
        return None
    good = np.flatnonzero(mask & got)
    if good.size:
        v = int(points[good[0]])
        return (True, {name: v}) if at(c, v) is True else None
    return False, None


class _NotVectorized(Exception):
    pass


_VECTOR_NODES = {"FAdd": "add", "FSub": "subtract", "FMul": "multiply", "FDiv": "true_divide",
                 "FFloor": "floor", "FCeil": "ceil", "FTrunc": "trunc", "FRound": "rint"}
_VECTOR_RELS = {sympy.Eq: "equal", sympy.Ne: "not_equal", sympy.Lt: "less", sympy.Le: "less_equal",
                sympy.Gt: "greater", sympy.Ge: "greater_equal"}


def _vector_value(e: Any, name: str, points: Any) -> Any:
    """``e`` at every size of ``points`` (int64): float nodes as numpy's float64 operations (IEEE
    round to nearest even, as Python's floats), integer arithmetic exactly in int64; raises
    ``_NotVectorized`` for anything else (an exact rational, sympy's floor, a float sum without
    an order)."""
    import numpy as np

    if e.is_Symbol:
        if e.name != name:
            raise _NotVectorized
        return points
    if e.is_Integer:
        return int(e)
    if isinstance(e, sympy.Float):
        return float(e)
    if e is sympy.true or e is sympy.false:
        return bool(e)
    cls = type(e).__name__
    if cls in _VECTOR_NODES:
        args = [_vector_value(a, name, points) for a in e.args]
        fn = getattr(np, _VECTOR_NODES[cls])
        out = fn(*[np.asarray(a, dtype=np.float64) if cls not in ("FFloor", "FCeil", "FTrunc", "FRound")
                   else a for a in args])
        return np.asarray(out, dtype=np.int64) if cls in ("FFloor", "FCeil", "FTrunc", "FRound") else out
    if cls == "FConst":
        return float(e.args[0])
    if type(e) in _VECTOR_RELS:
        return getattr(np, _VECTOR_RELS[type(e)])(_vector_value(e.lhs, name, points),
                                                   _vector_value(e.rhs, name, points))
    if isinstance(e, (sympy.And, sympy.Or)):
        parts = [np.asarray(_vector_value(a, name, points), bool) for a in e.args]
        return np.logical_and.reduce(parts) if isinstance(e, sympy.And) else np.logical_or.reduce(parts)
    if isinstance(e, sympy.Not):
        return ~np.asarray(_vector_value(e.args[0], name, points), bool)
    if isinstance(e, (sympy.Add, sympy.Mul)):
        args = [_vector_value(a, name, points) for a in e.args]
        floats = [a for a in args if isinstance(a, float) or getattr(a, "dtype", None) == np.float64]
        if len(floats) > 1 or (floats and isinstance(e, sympy.Mul) and len(args) > 2):
            raise _NotVectorized  # several float terms: sympy's sum has no Python order
        out = args[0]
        for a in args[1:]:
            out = out + a if isinstance(e, sympy.Add) else out * a
        return out
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and 0 <= int(e.exp) <= 3:
        base = _vector_value(e.base, name, points)
        if getattr(base, "dtype", None) == np.float64 or isinstance(base, float):
            raise _NotVectorized
        return base ** int(e.exp)
    raise _NotVectorized


class _NotMonotone(Exception):
    pass


def _one_size(kind: str, c: Any, name: str, span: tuple, assumptions: list, value: Callable) -> Optional[tuple]:
    lo, hi = span
    at = lambda e, v: value(e, {name: v})  # noqa: E731
    for a in assumptions:  # each narrows the interval (a monotone comparison admits an interval)
        if lo > hi:
            break
        lo, hi = _admitted(a, name, lo, hi, at)
    if lo > hi:  # no admitted size: implies is vacuous, nothing is satisfiable
        return (True, None) if kind == "implies" else (False, None)
    if kind == "satisfiable":
        for part in sympy.And.make_args(c):
            if isinstance(part, sympy.Ne):
                return None  # true around an equality's interval: not one interval
            lo, hi = _admitted(part, name, lo, hi, at)
            if lo > hi:
                return False, None
        return True, {name: lo}
    for part in sympy.And.make_args(c):
        if isinstance(part, sympy.Ne):
            eq = _admitted(sympy.Eq(part.lhs, part.rhs, evaluate=False), name, lo, hi, at)
            if eq[0] <= eq[1]:
                return False, {name: eq[0]}
            continue
        sub = _admitted(part, name, lo, hi, at)
        if sub != (lo, hi):
            # fails somewhere: the failing size next to the admitted part (where rounding decides)
            point = lo if sub[0] > sub[1] else (sub[0] - 1 if sub[0] > lo else sub[1] + 1)
            return False, {name: point}
    return True, None


def _admitted(rel: Any, name: str, lo: int, hi: int, at: Callable) -> tuple:
    """The sub-interval of ``[lo, hi]`` where the one-size relation ``rel`` holds (monotone: an
    interval), by bisection with Python float evaluation; ``_NotMonotone`` when it is not."""
    if not isinstance(rel, _REL + (sympy.Eq,)):
        raise _NotMonotone
    d = _direction(rel.lhs - rel.rhs, name)
    if d is None:
        raise _NotMonotone
    if isinstance(rel, sympy.Eq):
        if d == 0:
            return (lo, hi) if at(rel, lo) else (hi + 1, hi)
        # lhs - rhs moves one way: it is 0 on an interval, between the last point below and the first above
        below = _first(lambda v: _sign(at(rel.lhs, v), at(rel.rhs, v)) * d >= 0, lo, hi)
        above = _first(lambda v: _sign(at(rel.lhs, v), at(rel.rhs, v)) * d > 0, lo, hi)
        return (below, above - 1) if below < above else (hi + 1, hi)
    if d == 0:
        return (lo, hi) if at(rel, lo) else (hi + 1, hi)
    # the relation holds on a prefix (d > 0 for < and <=, d < 0 for > and >=) or a suffix
    prefix = (d > 0) == isinstance(rel, (sympy.Lt, sympy.Le))
    if prefix:
        first_false = _first(lambda v: not at(rel, v), lo, hi)
        return (lo, first_false - 1)
    first_true = _first(lambda v: at(rel, v), lo, hi)
    return (first_true, hi)


def _sign(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _first(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """The first ``v`` in ``[lo, hi]`` with ``pred(v)`` for a predicate false then true; ``hi + 1`` if none."""
    if not pred(hi):
        return hi + 1
    if pred(lo):
        return lo
    # the last size where pred is still false, next to hi where it holds (extent's binary search)
    return last_holding(lambda m: not pred(m), lo, hi) + 1


def _corners(kind: str, c: Any, names: list, box: dict, value: Callable) -> Optional[tuple]:
    parts = sympy.And.make_args(c) if kind == "implies" else (c,)
    for part in parts:
        if not isinstance(part, _REL + (sympy.Eq,)):
            return None
        diff = part.lhs - part.rhs
        for n in names:
            if _direction(diff, n) is None:
                return None
    # a comparison whose sides move one way in each size is extreme at a corner of the box
    for point in itertools.product(*[sorted({box[n][0], box[n][1]}) for n in names]):
        env = dict(zip(names, point))
        truth = value(c, env)
        if kind == "implies" and truth is False:
            return False, env
        if kind == "satisfiable" and truth is True:
            return True, env
        if not isinstance(truth, bool):
            return None
    if kind == "implies":
        # And of monotone comparisons: each holds at its own extreme corner, so at every point;
        # an equality holds everywhere once it holds at every corner (its sides are monotone)
        return True, None
    if isinstance(c, sympy.Eq):
        return None  # an equality may hold between corners
    return False, None


def _direction(e: Any, name: str) -> Optional[int]:
    """How ``e`` moves as size ``name`` grows with the other sizes fixed: 1 (never down), -1
    (never up), 0 (independent), or None (not known to be monotone).  Rounding to a float is
    monotone, so each float operation moves as its exact counterpart does."""
    if name not in {s.name for s in e.free_symbols}:
        return 0
    if isinstance(e, sympy.Symbol):
        return 1
    if isinstance(e, sympy.Add):
        return _merge([_direction(a, name) for a in e.args])
    if isinstance(e, sympy.Mul):
        coeff, rest = e.as_coeff_Mul()
        if coeff.is_Number and coeff != 1:
            d = _direction(rest, name)
            return None if d is None else (d if coeff > 0 else -d)
        return None
    if isinstance(e, (sympy.floor, sympy.ceiling, FConst) + INT_NODES):
        return _direction(e.args[0], name)
    if isinstance(e, (FAdd, FSub)):
        da, db = _direction(e.args[0], name), _direction(e.args[1], name)
        if da is None or db is None:
            return None
        return _merge([da, db if isinstance(e, FAdd) else -db])
    if isinstance(e, (FMul, FDiv)):
        a, b = e.args
        if not b.free_symbols and b.is_Number:
            if b == 0:
                return None
            d = _direction(a, name)
            return None if d is None else (d if b > 0 else -d)
        if isinstance(e, FMul) and not a.free_symbols and a.is_Number:
            if a == 0:
                return None
            d = _direction(b, name)
            return None if d is None else (d if a > 0 else -d)
        return None
    if isinstance(e, FPow):
        a, b = e.args
        if b.free_symbols or not b.is_Number or not _nonnegative_base(a):
            return None
        d = _direction(a, name)
        if d is None or b == 0:
            return None if d is None else 0
        return d if b > 0 else -d
    return None


def _nonnegative_base(a: Any) -> bool:
    """Whether ``a`` (a pow base) is a size expression sympy knows is >= 0 (sizes are)."""
    if isinstance(a, _FloatNode):
        if isinstance(a, (FMul, FDiv)):
            return all(_nonnegative_base(x) for x in a.args)
        if isinstance(a, FAdd):
            return all(_nonnegative_base(x) for x in a.args)
        return False
    return bool(a.is_nonnegative)


def _merge(ds: list) -> Optional[int]:
    if any(d is None for d in ds):
        return None
    moving = {d for d in ds if d != 0}
    if len(moving) > 1:
        return None
    return moving.pop() if moving else 0
