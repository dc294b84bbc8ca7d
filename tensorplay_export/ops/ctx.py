"""ShapeCtx: the only channel through which a shape rule emits requirements.

A rule gets symbolic shapes and returns output shapes; whatever must hold for
that answer to be right it states through the ctx, which forwards to the
capture's ShapeEnv with the op name and the user's source line attached.
"""
from __future__ import annotations

from typing import Any, Optional

import sympy

from ..records import SourceLoc


def is_static(d: Any) -> bool:
    return isinstance(d, int) or (isinstance(d, sympy.Basic) and d.is_Integer)


def as_dim(d: Any) -> Any:
    """An int for numeric sizes, else the sympy expression."""
    if isinstance(d, sympy.Basic) and d.is_Integer:
        return int(d)
    return d


# how the user wrote a binary op, for reasons ("broadcasting in `+`: seq with ...")
_OP_TEXT = {"numpy.add": "`+`", "numpy.subtract": "`-`", "numpy.multiply": "`*`", "numpy.divide": "`/`",
            "numpy.true_divide": "`/`", "numpy.floor_divide": "`//`", "numpy.remainder": "`%`",
            "numpy.power": "`**`", "numpy.matmul": "`@`", "numpy.equal": "`==`", "numpy.not_equal": "`!=`",
            "numpy.less": "`<`", "numpy.less_equal": "`<=`", "numpy.greater": "`>`",
            "numpy.greater_equal": "`>=`", "numpy.bitwise_and": "`&`", "numpy.bitwise_or": "`|`",
            "numpy.bitwise_xor": "`^`"}


def _size_text(d: Any) -> str:
    """A size for a reason; a ``Min`` with a constant says it is a slice bounded by it."""
    if isinstance(d, sympy.Min):
        consts = [int(a) for a in d.args if a.is_Integer]
        if consts:
            return f"{d}, a slice of at most {min(consts)}"
    return str(d)


def prod(dims: Any) -> Any:
    out: Any = 1
    for d in dims:
        out = out * d
    return as_dim(sympy.sympify(out)) if not isinstance(out, int) else out


class ShapeCtx:
    """Requirements channel of one op call.

    Args:
        env: the capture's ShapeEnv.
        op: the op's registry name (for records and messages).
        source: the user's source line of the call.
        concrete: numpy's output shapes on the example values (for unbacked hints).
    """

    def __init__(self, env: Any, op: str, source: Optional[SourceLoc], concrete: list) -> None:
        self.env = env
        self.op = op
        self.source = source
        self.concrete = concrete
        self.unbacked: list = []   # (out_index, axis, symbol)
        self.vranges: dict = {}    # out_index -> (lo, hi)

    def hint(self, expr: Any) -> Any:
        """Example value of a size expression or condition."""
        return self.env.hint(expr) if isinstance(expr, sympy.Basic) else expr

    def canon(self, expr: Any) -> Any:
        if isinstance(expr, sympy.Basic) and expr.has(sympy.Min, sympy.Max, sympy.floor, sympy.Mod):
            return as_dim(self.env.canon(expr))
        return as_dim(expr) if isinstance(expr, sympy.Basic) else expr

    def require(self, cond: Any, reason: Any, cause: str = "shape") -> None:
        """The op is correct only if ``cond`` holds (kind ``"shape"``).

        ``reason``: a str, or a function returning it -- called only when ``cond`` does
        not fold to true (printing sympy sizes for a reason nobody reads is costly).
        ``cause``: why, for reports (``records.CAUSES``: ``"reshape"``, ``"broadcast"``, ...).
        """
        self._guard(cond, "shape", reason, cause)

    def bounds(self, cond: Any, reason: Any) -> None:
        """Index values must stay inside an array (kind ``"index_bounds"``); ``reason`` as for require."""
        self._guard(cond, "index_bounds", reason, "index_bounds")

    def _guard(self, cond: Any, kind: str, reason: Any, cause: str) -> None:
        if cond is True or cond is sympy.true:
            self._folded()
            return
        self.env.guard(cond, kind, reason() if callable(reason) else reason, self.source, self.op, cause=cause)

    def choose(self, cond: Any, reason: Any, cause: str = "shape") -> bool:
        """Which side of ``cond`` the example takes; that side is recorded as a requirement
        (``reason``, ``cause`` as for :meth:`require`)."""
        cond = sympy.sympify(cond)
        if cond is sympy.true or cond is sympy.false:
            return bool(cond)
        taken = bool(self.env.hint(cond))
        self.require(cond if taken else sympy.Not(cond), reason, cause)
        return taken

    def pin(self, d: Any, reason: str) -> None:
        """Pin the size ``d`` to its example value (kind ``"specialization"``)."""
        if is_static(d):
            self._folded()
            return
        self.env.guard(sympy.Eq(d, self.hint(d)), "specialization", reason, self.source, self.op,
                       cause="specialization")

    def _folded(self) -> None:
        stats = getattr(self.env, "stats", None)
        if stats is not None:
            stats["guards"] += 1
            stats["folded"] += 1

    def eq(self, a: Any, b: Any, reason: str, cause: str = "shape") -> None:
        if a is b or (is_static(a) and is_static(b) and int(a) == int(b)):
            self._folded()
            return
        self.require(sympy.Eq(a, b), reason, cause)

    def broadcast_dim(self, a: Any, b: Any) -> Any:
        """One broadcast axis: the disjunct the example satisfies becomes the requirement."""
        if is_static(a) and int(a) == 1:
            return b
        if is_static(b) and int(b) == 1:
            return a
        if is_static(a) and is_static(b):
            return a  # numpy already checked them on the example
        if a == b:
            self._folded()
            return a
        ha, hb = self.hint(a), self.hint(b)
        what = f"broadcasting in {_OP_TEXT.get(self.op, self.op)}"
        if ha == hb:
            self.require(sympy.Eq(a, b), lambda: f"{what}: {_size_text(a)} with {_size_text(b)}", "broadcast")
            return b if is_static(b) else a
        if ha == 1:
            self.require(sympy.Eq(a, 1),
                         lambda: f"{what}: {_size_text(a)} (size 1 in the example) with {_size_text(b)}",
                         "broadcast")
            return b
        if hb == 1:
            self.require(sympy.Eq(b, 1),
                         lambda: f"{what}: {_size_text(b)} (size 1 in the example) with {_size_text(a)}",
                         "broadcast")
            return a
        raise ValueError(f"cannot broadcast sizes {a} and {b}")

    def broadcast(self, *shapes: tuple) -> tuple:
        """numpy broadcasting of several symbolic shapes."""
        ndim = max((len(s) for s in shapes), default=0)
        out = []
        for i in range(ndim):
            d: Any = 1
            for s in shapes:
                j = i - (ndim - len(s))
                if j >= 0:
                    d = self.broadcast_dim(d, s[j])
            out.append(as_dim(d) if isinstance(d, sympy.Basic) else d)
        return tuple(out)

    def new_unbacked(self, upper: Any, out: int = 0, axis: int = 0) -> sympy.Symbol:
        """A data-dependent size for output ``out``'s ``axis`` (range ``[0, upper]``)."""
        hint = self.concrete[out][axis]
        sym = self.env.unbacked_symbol(upper, hint, self.op, self.source)
        self.unbacked.append((out, axis, sym))
        return sym

    def vrange(self, lo: Any, hi: Any, out: int = 0) -> None:
        """Record the value range of output ``out`` (integer arrays built from sizes)."""
        self.vranges[out] = (lo, hi)
