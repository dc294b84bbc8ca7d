"""Functions of (stacks of) matrices (``numpy.linalg``): inv, solve, det, slogdet, cholesky, pinv,
eigvalsh, eigh, matrix_power, qr, svd, svdvals, tensorinv, tensorsolve (``numpy.trace`` is in misc).

numpy's linalg rules (``numpy/linalg/_linalg.py``): the last two axes are the matrix, the
leading axes a batch; square-matrix functions need ``m == n`` (``LinAlgError: Last 2
dimensions of the array must be square``); ``solve(a, b)`` treats ``b`` as a batch of
vectors only when it is 1-d (numpy 2), otherwise as matrices ``(..., n, k)``, and the
batches broadcast.  Values are numpy's own at run time (singular matrices raise there).

``tensorinv(a, ind)`` and ``tensorsolve(a, b, axes)`` flatten a tensor into one square matrix
(numpy's docs and ``_linalg.py``): ``tensorinv`` inverts ``a.reshape(P, -1)`` for ``P`` the product
of ``a.shape[ind:]``, so that product must be >= 1 and equal the product of ``a.shape[:ind]`` (a
guard each), and returns ``a.shape[ind:] + a.shape[:ind]``; ``tensorsolve`` moves ``axes`` to the
end, keeps the last ``a.ndim - b.ndim`` axes as the solution's shape ``Q`` (``P`` its product),
needs ``a.size == P ** 2`` (for ``P >= 1``: the other axes' product is ``P``) and ``b.size == P``.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..records import sympy
from .ctx import is_static, prod
from .elementwise import shape_of
from .registry import register_op


def _matrix(ctx: Any, a: Any, name: str, square: bool = True) -> tuple:
    shape = tuple(shape_of(a))
    if len(shape) < 2:
        raise np.linalg.LinAlgError(
            f"{len(shape)}-dimensional array given. Array must be at least two-dimensional ({name})")
    if square:
        ctx.eq(shape[-2], shape[-1], f"{name}: the last 2 axes must be square ({ctx.text(shape[-2])} x "
                                     f"{ctx.text(shape[-1])})")
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
        ctx.eq(sb[0], n, f"numpy.linalg.solve: b has {ctx.text(sb[0])} rows for a {ctx.text(n)} x {ctx.text(n)} system")
        return sa[:-2] + (n,)
    if len(sb) < 2:
        raise ValueError("numpy.linalg.solve: b must be at least one-dimensional")
    ctx.eq(sb[-2], n, f"numpy.linalg.solve: b has {ctx.text(sb[-2])} rows for a {ctx.text(n)} x {ctx.text(n)} system")
    return tuple(ctx.broadcast(sa[:-2], sb[:-2])) + (n, sb[-1])



for _fn in (np.linalg.inv, np.linalg.cholesky, np.linalg.matrix_power):
    register_op(f"numpy.linalg.{_fn.__name__}", _fn, _same_rule(f"numpy.linalg.{_fn.__name__}"),
                numpy_funcs=(_fn,))
register_op("numpy.linalg.det", np.linalg.det, _det_rule, numpy_funcs=(np.linalg.det,))
register_op("numpy.linalg.eigvalsh", np.linalg.eigvalsh, _eigvalsh_rule, numpy_funcs=(np.linalg.eigvalsh,))
register_op("numpy.linalg.pinv", np.linalg.pinv, _pinv_rule, numpy_funcs=(np.linalg.pinv,))
register_op("numpy.linalg.solve", np.linalg.solve, _solve_rule, numpy_funcs=(np.linalg.solve,))


def _slogdet_rule(ctx: Any, a: Any) -> list:
    """numpy.linalg.slogdet of ``(..., M, M)``: SlogdetResult(sign ``(...)``, logabsdet ``(...)``)."""
    lead = _matrix(ctx, a, "numpy.linalg.slogdet")[:-2]
    return [lead, lead]


def _eigh_rule(ctx: Any, a: Any, UPLO: str = "L") -> list:  # noqa: N803 - numpy's name
    """numpy.linalg.eigh of ``(..., M, M)``: EighResult(eigenvalues ``(..., M)``, eigenvectors ``(..., M, M)``)."""
    shape = _matrix(ctx, a, "numpy.linalg.eigh")
    return [shape[:-1], shape]


# (numpy.linalg.eig is left out: its dtype is complex or real depending on the values.)
register_op("numpy.linalg.slogdet", np.linalg.slogdet, _slogdet_rule, numpy_funcs=(np.linalg.slogdet,),
            multi_output=True, doc="numpy.linalg.slogdet: SlogdetResult(sign, logabsdet)")
register_op("numpy.linalg.eigh", np.linalg.eigh, _eigh_rule, numpy_funcs=(np.linalg.eigh,),
            multi_output=True, doc="numpy.linalg.eigh: EighResult(eigenvalues, eigenvectors)")


# -- factorizations: qr and svd (K = min(M, N)) ----------------------------------------------------------
def _k(ctx: Any, m: Any, n: Any) -> Any:
    if is_static(m) and is_static(n):
        return min(int(m), int(n))
    return ctx.canon(sympy.Min(m, n))


def _qr_rule(ctx: Any, a: Any, mode: str = "reduced") -> list:
    """numpy.linalg.qr of ``(..., M, N)``: ``reduced`` Q ``(..., M, K)``, R ``(..., K, N)``;
    ``complete`` Q ``(..., M, M)``, R ``(..., M, N)``; ``raw`` h ``(..., N, M)``, tau ``(..., K)``."""
    shape = _matrix(ctx, a, "numpy.linalg.qr", square=False)
    lead, m, n = shape[:-2], shape[-2], shape[-1]
    k = _k(ctx, m, n)
    if mode == "reduced":
        return [lead + (m, k), lead + (k, n)]
    if mode == "complete":
        return [lead + (m, m), lead + (m, n)]
    if mode == "raw":
        return [lead + (n, m), lead + (k,)]
    raise ValueError(f"numpy.linalg.qr: unrecognized mode {mode!r} (numpy 2 takes 'reduced', 'complete', "
                     "'r' or 'raw')")


def _qr_variant(a: Any, mode: str = "reduced") -> Any:
    return "tpe.linalg.qr_r" if mode == "r" else None


def _qr_r(a: Any, mode: str = "r") -> Any:
    return np.linalg.qr(a, mode="r")


def _qr_r_rule(ctx: Any, a: Any, mode: str = "r") -> tuple:
    shape = _matrix(ctx, a, "numpy.linalg.qr", square=False)
    return shape[:-2] + (_k(ctx, shape[-2], shape[-1]), shape[-1])


register_op("numpy.linalg.qr", np.linalg.qr, _qr_rule, numpy_funcs=(np.linalg.qr,), multi_output=True,
            variant=_qr_variant, doc="numpy.linalg.qr: QRResult(Q, R) (or (h, tau) for mode='raw')")
register_op("tpe.linalg.qr_r", _qr_r, _qr_r_rule, doc="numpy.linalg.qr(a, mode='r'): R alone")


def _svd_rule(ctx: Any, a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> list:
    """numpy.linalg.svd of ``(..., M, N)``: U ``(..., M, M)``, S ``(..., K)``, Vh ``(..., N, N)``
    (``full_matrices=False``: U ``(..., M, K)``, Vh ``(..., K, N)``)."""
    shape = _matrix(ctx, a, "numpy.linalg.svd", square=bool(hermitian))
    lead, m, n = shape[:-2], shape[-2], shape[-1]
    k = _k(ctx, m, n)
    if full_matrices:
        return [lead + (m, m), lead + (k,), lead + (n, n)]
    return [lead + (m, k), lead + (k,), lead + (k, n)]


def _svd_variant(a: Any, full_matrices: bool = True, compute_uv: bool = True, hermitian: bool = False) -> Any:
    return None if compute_uv else "tpe.linalg.svd_values"


def _svd_values(a: Any, full_matrices: bool = True, compute_uv: bool = False, hermitian: bool = False) -> Any:
    return np.linalg.svd(a, full_matrices, False, hermitian)


def _svd_values_rule(ctx: Any, a: Any, full_matrices: bool = True, compute_uv: bool = False,
                     hermitian: bool = False) -> tuple:
    shape = _matrix(ctx, a, "numpy.linalg.svd", square=bool(hermitian))
    return shape[:-2] + (_k(ctx, shape[-2], shape[-1]),)


register_op("numpy.linalg.svd", np.linalg.svd, _svd_rule, numpy_funcs=(np.linalg.svd,), multi_output=True,
            variant=_svd_variant, doc="numpy.linalg.svd: SVDResult(U, S, Vh)")
register_op("tpe.linalg.svd_values", _svd_values, _svd_values_rule,
            doc="numpy.linalg.svd(a, compute_uv=False): the singular values alone")
register_op("numpy.linalg.svdvals", np.linalg.svdvals, lambda ctx, x: _svd_values_rule(ctx, x),
            numpy_funcs=(np.linalg.svdvals,))


# -- tensorinv / tensorsolve: a tensor flattened into one square matrix --------------------------------------
def _tensorinv_rule(ctx: Any, a: Any, ind: Any = 2) -> tuple:
    """``a.shape[ind:] + a.shape[:ind]``; both products equal and nonzero (the matrix numpy inverts)."""
    shape = tuple(shape_of(a))
    ind = int(ind)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    rows, cols = prod(shape[:ind]), prod(shape[ind:])
    if not is_static(cols):
        ctx.require(sympy.Ge(cols, 1), lambda: f"numpy.linalg.tensorinv: the product of a.shape[{ind}:] "
                                               f"({ctx.text(cols)}) must be >= 1 (numpy reshapes a to (it, -1))")
    ctx.eq(rows, cols, f"numpy.linalg.tensorinv: the product of a.shape[:{ind}] ({ctx.text(rows)}) must equal the "
                       f"product of a.shape[{ind}:] ({ctx.text(cols)}), a square matrix")
    return shape[ind:] + shape[:ind]


def _tensorsolve_rule(ctx: Any, a: Any, b: Any, axes: Any = None) -> tuple:
    """The last ``a.ndim - b.ndim`` axes of ``a`` (after moving ``axes`` to the end), as numpy slices them."""
    sa, sb = list(shape_of(a)), tuple(shape_of(b))
    an = len(sa)
    if axes is not None:
        order = list(range(an))
        for k in axes:
            order.remove(k)  # numpy's own ValueError for an axis not in range(a.ndim)
            order.insert(an, k)
        sa = [sa[i] for i in order]
    q = tuple(sa[-(an - len(sb)):])  # numpy's slice: a.ndim == b.ndim keeps every axis
    lead = prod(sa[:an - len(q)])
    p = prod(q)
    name = "numpy.linalg.tensorsolve"
    empty = int(p) == 0 if is_static(p) else ctx.choose(
        sympy.Eq(p, 0), lambda: f"{name}: whether the solution is empty ({ctx.text(p)} values) decides what a must be")
    if not empty:
        ctx.eq(lead, p, f"{name}: Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
                        f"prod(a.shape[:b.ndim]) ({ctx.text(p)} and {ctx.text(lead)})")
    ctx.eq(prod(sb), p, f"{name}: b has {ctx.text(prod(sb))} values for {ctx.text(p)} unknowns")
    return q


register_op("numpy.linalg.tensorinv", np.linalg.tensorinv, _tensorinv_rule, numpy_funcs=(np.linalg.tensorinv,))
register_op("numpy.linalg.tensorsolve", np.linalg.tensorsolve, _tensorsolve_rule,
            numpy_funcs=(np.linalg.tensorsolve,))
