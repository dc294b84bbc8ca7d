"""Functions of (stacks of) matrices (``numpy.linalg``): inv, solve, det, cholesky, pinv,
eigvalsh, matrix_power (``numpy.trace`` is in misc).

numpy's linalg rules (``numpy/linalg/_linalg.py``): the last two axes are the matrix, the
leading axes a batch; square-matrix functions need ``m == n`` (``LinAlgError: Last 2
dimensions of the array must be square``); ``solve(a, b)`` treats ``b`` as a batch of
vectors only when it is 1-d (numpy 2), otherwise as matrices ``(..., n, k)``, and the
batches broadcast.  Values are numpy's own at run time (singular matrices raise there).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .elementwise import shape_of
from .registry import register_op


def _matrix(ctx: Any, a: Any, name: str, square: bool = True) -> tuple:
    shape = tuple(shape_of(a))
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional ({name})")
    if square:
        ctx.eq(shape[-2], shape[-1], f"{name}: the last 2 axes must be square ({shape[-2]} x {shape[-1]})")
    return shape


def _same_rule(name: str):
    def rule(ctx: Any, a: Any, *args: Any, **kwargs: Any) -> tuple:
        return _matrix(ctx, a, name)
    return rule


def _det_rule(ctx: Any, a: Any) -> tuple:
    return _matrix(ctx, a, "numpy.linalg.det")[:-2]


def _eigvalsh_rule(ctx: Any, a: Any, UPLO: str = "L") -> tuple:  # noqa: N803 - numpy's name
    return _matrix(ctx, a, "numpy.linalg.eigvalsh")[:-1]


def _pinv_rule(ctx: Any, a: Any, rcond: Any = None, hermitian: bool = False, **kwargs: Any) -> tuple:
    shape = _matrix(ctx, a, "numpy.linalg.pinv", square=bool(hermitian))
    return shape[:-2] + (shape[-1], shape[-2])


def _solve_rule(ctx: Any, a: Any, b: Any) -> tuple:
    sa = _matrix(ctx, a, "numpy.linalg.solve")
    sb = tuple(shape_of(b))
    n = sa[-1]
    if len(sb) == 1:
        ctx.eq(sb[0], n, f"numpy.linalg.solve: b has {sb[0]} rows for a {n} x {n} system")
        return sa[:-2] + (n,)
    if len(sb) < 2:
        raise ValueError("numpy.linalg.solve: b must be at least one-dimensional")
    ctx.eq(sb[-2], n, f"numpy.linalg.solve: b has {sb[-2]} rows for a {n} x {n} system")
    return tuple(ctx.broadcast(sa[:-2], sb[:-2])) + (n, sb[-1])



for _fn in (np.linalg.inv, np.linalg.cholesky, np.linalg.matrix_power):
    register_op(f"numpy.linalg.{_fn.__name__}", _fn, _same_rule(f"numpy.linalg.{_fn.__name__}"),
                numpy_funcs=(_fn,))
register_op("numpy.linalg.det", np.linalg.det, _det_rule, numpy_funcs=(np.linalg.det,))
register_op("numpy.linalg.eigvalsh", np.linalg.eigvalsh, _eigvalsh_rule, numpy_funcs=(np.linalg.eigvalsh,))
register_op("numpy.linalg.pinv", np.linalg.pinv, _pinv_rule, numpy_funcs=(np.linalg.pinv,))
register_op("numpy.linalg.solve", np.linalg.solve, _solve_rule, numpy_funcs=(np.linalg.solve,))
