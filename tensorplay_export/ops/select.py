"""Selection: ``np.partition`` / ``np.argpartition`` (top-k) and ``np.isin`` (membership).

``kth`` must index the partitioned axis: ``-n <= kth <= n - 1``.  numpy checks
it only when there is something to partition, so the requirement is
``Or(Eq(n, 0), ...)``; over a size that is >= 1 sympy drops the first
disjunct and the guard reads ``n >= kth + 1``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .ctx import is_static, prod
from .elementwise import shape_of
from .reduce import norm_axes
from .registry import register_op
from ..records import sympy


def require_kth(ctx: Any, kth: Any, n: Any, what: str) -> None:
    """Each ``kth`` (an int, a size, or a sequence of them) indexes an axis of size ``n``."""
    ks = list(kth) if isinstance(kth, (list, tuple, np.ndarray)) else [kth]
    if all(is_static(k) for k in ks) and is_static(n):
        return  # numpy checked the example
    for k in ks:
        if isinstance(k, (bool, np.bool_)):
            raise TypeError(f"{what}: kth must be an integer, not a bool")
        k = sympy.sympify(int(k) if is_static(k) else k)
        n_ = sympy.sympify(n)
        if k.is_Integer:
            cond = sympy.Ge(n_, k + 1) if k >= 0 else sympy.Ge(n_, -k)
        else:
            cond = sympy.And(sympy.Le(k, n_ - 1), sympy.Ge(k, -n_))
        ctx.require(sympy.Or(sympy.Eq(n_, 0), cond),
                    lambda k=k: f"{what}: kth = {ctx.text(k)} must index the partitioned axis of size {ctx.text(n)}")


def _partition_rule(arg: bool):
    def rule(ctx: Any, a: Any, kth: Any, axis: Any = -1, kind: str = "introselect", order: Any = None) -> tuple:
        shape = shape_of(a)
        if axis is None:
            n = prod(shape)
            out: tuple = (n,)
        else:
            if not shape:
                if not arg:
                    raise ValueError("numpy.partition: a 0-d array cannot be partitioned along an axis")
                shape = (1,)  # numpy argpartitions a 0-d input as 1-d
            n = shape[norm_axes(axis, len(shape))[0]]
            out = tuple(shape)
        require_kth(ctx, kth, n, "numpy.argpartition" if arg else "numpy.partition")
        if arg:
            ctx.vrange(0, sympy.sympify(n) - 1)
        return out
    return rule


register_op("numpy.partition", np.partition, _partition_rule(False), numpy_funcs=(np.partition,))
register_op("numpy.argpartition", np.argpartition, _partition_rule(True), numpy_funcs=(np.argpartition,),
            methods=("argpartition",))


def _isin_rule(ctx: Any, element: Any, test_elements: Any, assume_unique: bool = False, invert: bool = False,
               *, kind: Any = None) -> tuple:
    return tuple(shape_of(element))


register_op("numpy.isin", np.isin, _isin_rule, numpy_funcs=(np.isin,),
            doc="numpy.isin: elementwise membership of element in test_elements (element's shape)")
