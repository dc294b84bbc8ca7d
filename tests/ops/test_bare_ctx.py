"""Every registered shape rule runs as a pure function on a bare ShapeCtx.

``ShapeCtx.bare`` holds the example sizes and ranges as plain data and records each
requirement instead of asking a solver.  For every op in the registry (numpy
functions, methods, ufuncs, ``tpe.*`` ops, nn composites) the rule runs on symbolic
``ArrayInfo`` arguments next to numpy's impl on the example values:

- the rule's shape at the example sizes is numpy's (the check capture makes on every call);
- every recorded requirement holds at the example sizes;
- each data-dependent size has numpy's example value, and each value range declared
  with ``ctx.vrange`` contains the example output's values.

The last tests check mechanically that no rule reaches the environment behind the ctx.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import sympy

import tensorplay_export  # noqa: F401  (capture installs nn's composites into the registry)
from tensorplay_export.ops.ctx import BareEnv, ShapeCtx, SizeEnv
from tensorplay_export.ops.indexing import constant_vrange
from tensorplay_export.ops.lib import ACCUMULATE_UFUNCS, OUTER_UFUNCS, REDUCE_UFUNCS
from tensorplay_export.ops.random import generator_state
from tensorplay_export.ops.registry import ArrayInfo, all_ops
from tensorplay_export.ops.scatter import AT_UFUNCS, REDUCEAT_UFUNCS

n, m = sympy.symbols("n m", integer=True, positive=True)
k = sympy.Symbol("k", integer=True, positive=True)  # size 1 in the example: broadcasting follows it
e = sympy.Symbol("e", integer=True, nonnegative=True)  # may be empty
HINTS = {n: 6, m: 4, k: 1, e: 3}
RANGES = {n: (1, 64), m: (1, 64), k: (1, 64), e: (0, 64)}


def _value(expr):
    """Example value of a size expression (int, or float for float sizes)."""
    v = sympy.sympify(expr).xreplace({s: sympy.Integer(h) for s, h in HINTS.items()})
    return int(v) if v.is_Integer else float(v)


class A:
    """An array argument: symbolic shape, dtype, example values (random, ints below ``hi``, a mask)."""

    def __init__(self, *shape, dtype=np.float64, hi=None, vrange=None, mask=False, sort=False):
        self.shape, self.vrange, self.sort = shape, vrange, sort
        self.dtype = np.dtype(np.bool_ if mask else np.int64 if hi is not None else dtype)
        self.hi = hi

    def example(self, rng):
        shape = tuple(_value(d) for d in self.shape)
        kind = self.dtype.kind
        if self.hi is not None:
            out = rng.integers(0, max(_value(self.hi), 1), shape)
        elif kind == "b":
            out = rng.random(shape) < 0.5
        elif kind in "iu":
            out = rng.integers(1, 4, shape).astype(self.dtype)
        elif kind in "Mm":
            out = np.zeros(shape, self.dtype)
        elif kind == "c":
            out = (rng.uniform(0.5, 1.5, shape) + 1j * rng.uniform(0.5, 1.5, shape)).astype(self.dtype)
        else:
            out = rng.uniform(0.5, 1.5, shape).astype(self.dtype)
        return np.sort(out, axis=-1) if self.sort else out

    def info(self):
        return ArrayInfo(tuple(self.shape), self.dtype, self.vrange)


def I(*shape, hi, vrange=None):  # noqa: E743
    """An int64 index array with values in ``[0, hi)`` (``vrange``: what the rule is told)."""
    return A(*shape, hi=hi, vrange=vrange)


def M(*shape):
    """A boolean mask of data (its True count is data-dependent)."""
    return A(*shape, mask=True)


def examples(value, rng):
    if isinstance(value, A):
        return value.example(rng)
    if isinstance(value, sympy.Basic) and not value.is_Boolean:
        return _value(value)
    if isinstance(value, (tuple, list)):
        return type(value)(examples(v, rng) for v in value)
    if isinstance(value, dict):
        return {key: examples(v, rng) for key, v in value.items()}
    if isinstance(value, slice):
        return slice(examples(value.start, rng), examples(value.stop, rng), examples(value.step, rng))
    return value


def infos(value):
    """What capture hands a rule (``Tracer.info``): ArrayInfo for arrays, sympy for sizes."""
    if isinstance(value, A):
        return value.info()
    if isinstance(value, np.ndarray):
        return ArrayInfo(tuple(value.shape), value.dtype, constant_vrange(value))
    if isinstance(value, (tuple, list)):
        return type(value)(infos(v) for v in value)
    if isinstance(value, dict):
        return {key: infos(v) for key, v in value.items()}
    if isinstance(value, slice):
        return slice(infos(value.start), infos(value.stop), infos(value.step))
    return value


def c(*args, **kwargs):
    return args, kwargs


x2 = lambda: A(n, m)  # noqa: E731
# explicit cases (op name -> calls); ufuncs without an entry get generated ones below
CASES = {
    # -- reductions and scans
    **{f"numpy.{r}": [c(x2()), c(x2(), axis=1), c(x2(), axis=(0, 1), keepdims=True)]
       for r in ("sum", "prod", "mean", "any", "all", "max", "min")},
    **{f"numpy.ndarray.{r}": [c(x2(), 0), c(x2(), axis=None, keepdims=True)]
       for r in ("sum", "prod", "mean", "any", "all", "max", "min")},
    "numpy.var": [c(x2(), axis=0, ddof=1)], "numpy.std": [c(x2(), 1, keepdims=True)],
    "numpy.ndarray.var": [c(x2())], "numpy.ndarray.std": [c(x2(), axis=0)],
    "numpy.argmax": [c(x2(), 1), c(x2())], "numpy.argmin": [c(x2(), axis=0, keepdims=True)],
    "numpy.ndarray.argmax": [c(x2(), 0)], "numpy.ndarray.argmin": [c(x2())],
    "numpy.cumsum": [c(x2()), c(x2(), axis=1)], "numpy.cumprod": [c(A(e, 2), 0)],
    "numpy.ndarray.cumsum": [c(x2(), 0)], "numpy.ndarray.cumprod": [c(x2())],
    **{f"numpy.{r}": [c(x2(), axis=0), c(A(n))]
       for r in ("nansum", "nanmean", "nanmax", "nanmin", "median", "nanmedian")},
    # -- elementwise (non-ufunc) and value ranges through ufuncs
    "numpy.where": [c(M(n, 1), x2(), 0.0), c(M(k, m), A(n, 1), A(m))],
    "numpy.clip": [c(x2(), 0.7, 1.2), c(I(n, hi=n, vrange=(0, n - 1)), 1, m)],
    "numpy.ndarray.clip": [c(x2(), 0.7, 1.2)],
    "numpy.round": [c(x2(), 1)], "numpy.real": [c(A(n, dtype=np.complex128))],
    "numpy.imag": [c(A(n, dtype=np.complex128))], "numpy.nan_to_num": [c(x2())],
    "numpy.ndarray.conj": [c(A(n, dtype=np.complex128))],
    "numpy.add": [c(A(n, 1), A(m)), c(I(n, hi=n, vrange=(0, n - 1)), m), c(A(k, m), A(n, 1))],
    "numpy.subtract": [c(I(n, hi=n, vrange=(0, n - 1)), 1), c(A(n, 1), A(m))],
    "numpy.multiply": [c(I(n, hi=n, vrange=(0, n - 1)), 2), c(A(n), A(k))],
    "numpy.maximum": [c(I(n, hi=n, vrange=(0, n - 1)), I(n, hi=m, vrange=(0, m - 1)))],
    "numpy.minimum": [c(I(n, hi=n, vrange=(0, n - 1)), m)],
    "numpy.floor_divide": [c(A(n, dtype=np.int8), n)],  # a Python int must fit int8
    # -- movement
    "numpy.reshape": [c(A(n, 4), (-1, 2)), c(A(n, 3), (-1, 2)), c(x2(), (m, n)), c(A(n, m, 2), (n, -1))],
    "numpy.ndarray.reshape": [c(A(n, 4), n, 2, 2), c(x2(), (-1,))],
    "numpy.ravel": [c(x2())], "numpy.ndarray.flatten": [c(x2())],
    "numpy.transpose": [c(A(n, m, 2)), c(A(n, m, 2), (1, 0, 2))],
    "numpy.ndarray.transpose": [c(A(n, m, 2), 1, 0, 2), c(x2())],
    "numpy.permute_dims": [c(A(n, m, 2), (2, 0, 1))],
    "numpy.swapaxes": [c(A(n, m, 2), 0, 2)], "numpy.moveaxis": [c(A(n, m, 2), 0, -1)],
    "numpy.expand_dims": [c(x2(), (0, 2))],
    "numpy.squeeze": [c(A(n, 1, m)), c(A(k, n), axis=0), c(A(k, n))],
    "numpy.broadcast_to": [c(A(1, m), (n, m)), c(A(k, m), (n, m))],
    "numpy.lib.stride_tricks.sliding_window_view": [c(A(n), 3), c(x2(), (2, 2)), c(x2(), 2, axis=0),
                                                    c(A(n, m), (2, 2), axis=(1, 1)), c(A(n, m), m, axis=-1)],
    "numpy.concatenate": [c([x2(), A(2, m)]), c([x2(), A(n, 3)], axis=1), c([A(n), A(m)], axis=None)],
    "numpy.stack": [c([x2(), x2()], axis=1)],
    "numpy.hstack": [c([A(n), A(m)]), c([x2(), A(n, 2)])], "numpy.vstack": [c([A(n), A(n)]), c([x2(), A(1, m)])],
    "numpy.split": [c(x2(), 2), c(x2(), [1, 3], axis=0), c(x2(), I(3, hi=4)), c(x2(), I(2, hi=3), axis=1)],
    "numpy.array_split": [c(x2(), 4), c(x2(), [2, n - 1], axis=0), c(A(e), I(1, hi=2))],
    "numpy.tile": [c(A(n, 2), (2, 1)), c(A(n, 2), (m, 1)), c(A(n), 3)],
    "numpy.repeat": [c(A(n), 2), c(x2(), m, axis=1), c(A(n), I(n, hi=3)), c(A(n, 2), [1, 2], axis=1)],
    "numpy.pad": [c(x2(), ((1, 2), (0, m))), c(x2(), 1, mode="edge"), c(A(e, 2), ((0, 1), (0, 0)), mode="wrap")],
    "numpy.flip": [c(x2())], "numpy.fliplr": [c(x2())], "numpy.flipud": [c(x2())],
    "numpy.roll": [c(x2(), 2)],
    "numpy.ndarray.astype": [c(A(n), np.float32)], "numpy.astype": [c(A(n), np.int32)],
    "numpy.copy": [c(x2())], "numpy.ascontiguousarray": [c(x2())],
    "numpy.atleast_1d": [c(A()), c(A(n))],
    # -- indexing
    "tpe.getitem": [
        c(x2(), (slice(1, None), 0)), c(x2(), slice(None, m)), c(x2(), (Ellipsis, None, slice(None, None, 2))),
        c(x2(), slice(2, n - 1)), c(x2(), slice(-m, None)), c(x2(), (slice(None), slice(None, None, -1))),
        c(x2(), M(n, m)), c(x2(), (I(3, hi=3, vrange=(0, 2)), slice(None))), c(x2(), m),
        c(x2(), (slice(None), [True, False, True, True])), c(x2(), ([0, 2], [1, 3])),
        c(A(n, m, 2), (I(3, hi=3), slice(None), I(3, hi=2))), c(x2(), (slice(None), M(m))),
    ],
    "tpe.setitem": [c(x2(), (slice(None), 0), A(n)), c(x2(), M(n, m), 0.0), c(x2(), slice(1, None), A(1, m))],
    # -- run-time aliasing (ops/aliasing.py)
    "numpy.asfortranarray": [c(x2()), c(A(n)), c(A())],
    "tpe.is_view": [c(x2(), x2()), c(A(n * m), x2())],
    "tpe.where_view": [c(x2(), x2(), A(mask=True)), c(A(n), A(n), A(mask=True), A(mask=True))],
    "numpy.take": [c(x2(), I(3, hi=m, vrange=(0, m - 1)), axis=1), c(x2(), I(2, 2, hi=n * m)),
                   c(x2(), [0, n - 1], axis=0)],
    "numpy.take_along_axis": [c(x2(), I(n, 1, hi=m, vrange=(0, m - 1)), axis=1),
                              c(x2(), I(k, m, hi=n), axis=0)],
    "numpy.nonzero": [c(M(n, m))], "numpy.flatnonzero": [c(M(n))], "numpy.argwhere": [c(M(n, m))],
    "tpe.unique": [c(I(n, hi=3)), c(I(n, hi=3), True, True, True)],
    "numpy.sort": [c(x2()), c(x2(), axis=None)], "numpy.argsort": [c(x2(), axis=0), c(A(n), axis=None)],
    "numpy.searchsorted": [c(A(n, sort=True), A(m)), c(A(n, sort=True), A(2, m), side="right")],
    # -- creation
    "numpy.arange": [c(n), c(1, n, 2), c(n, 0, -1), c(0, n, m), c(m, n), c(sympy.Rational(1, 2) * n)],
    "numpy.zeros": [c((n, m))], "numpy.ones": [c((n, 2))], "numpy.empty": [c(n)],
    "numpy.full": [c((n, m), 1.5), c((e - 1, 2), 0)],
    "numpy.zeros_like": [c(x2()), c(A(n), shape=(m, 2))], "numpy.ones_like": [c(x2())],
    "numpy.empty_like": [c(x2())], "numpy.full_like": [c(x2(), 2.0)],
    "numpy.eye": [c(n), c(n, m, 1)], "numpy.tri": [c(n, m)], "numpy.identity": [c(n)],
    "numpy.tril": [c(x2())], "numpy.triu": [c(x2(), 1)],
    "numpy.linspace": [c(0.0, 1.0, n), c(0.0, 1.0, n, endpoint=False)],
    "tpe.linspace_retstep": [c(0.0, 1.0, n), c(0, n, m, False), c(-1.0, 1.0, 1), c(0.0, n, n + 1, dtype=np.float32)],
    "tpe.shape_array": [c(n, m, 3), c()],
    "numpy.logspace": [c(0.0, 1.0, n), c(0, 2, e, False, 2.0)], "numpy.geomspace": [c(1.0, 10.0, n, endpoint=False)],
    **{f"numpy.{w}": [c(n), c(n - 3), c(e), c(5)] for w in ("hanning", "hamming", "blackman", "bartlett")},
    "numpy.kaiser": [c(n, 5.0), c(e, 0.5)],
    "numpy.indices": [c((n, 2)), c((e, m, 3), np.int32), c(())],
    "numpy.triu_indices": [c(n), c(n, 1), c(n, -2), c(e, 0), c(4, 1, 6), c(n, 0, n)],
    "numpy.tril_indices": [c(n), c(n, 2), c(n, -1), c(e, -3), c(n, 0, m)],
    "numpy.triu_indices_from": [c(A(n, n)), c(A(n, n), -1)], "numpy.tril_indices_from": [c(A(n, n), 1), c(x2())],
    "tpe.size_scalar": [c(n, np.dtype(np.int32)), c(3, np.dtype(np.float32))],
    # -- random draws from an explicit generator state
    "tpe.random.uniform": [c(generator_state(0), (n, m)), c(generator_state(1), n, np.float32)],
    "tpe.random.normal": [c(generator_state(0), (e, 2)), c(generator_state(2), (), dtype=np.float32)],
    # -- contractions
    "numpy.matmul": [c(x2(), A(m, 3)), c(A(2, n, m), A(m)), c(A(n), A(n, m)), c(A(k, n, m), A(3, m, 2))],
    "numpy.dot": [c(x2(), A(m)), c(A(n, m, 2), A(3, 2, 4)), c(A(n), 2.0), c(A(n), A(n))],
    "numpy.inner": [c(x2(), A(3, m))], "numpy.outer": [c(A(n), A(m))],
    "numpy.tensordot": [c(A(n, m, 3), A(m, 3, 2)), c(x2(), A(m, 3), axes=([1], [0]))],
    "numpy.einsum": [c("ij,jk->ik", x2(), A(m, 3)), c("ij,jk", x2(), A(m, 3)),
                     c("...ij,...jk->...ik", A(2, n, m), A(k, m, 3)), c("ii->i", A(n, n))],
    # -- misc
    "numpy.linalg.norm": [c(x2()), c(x2(), axis=1), c(A(n), 1)],
    "numpy.diff": [c(x2()), c(x2(), 2, axis=0, prepend=A(1, m)), c(A(e))],
    "numpy.diagonal": [c(x2()), c(x2(), 1), c(x2(), -1), c(A(2, n, m), 0, 1, 2)],
    "numpy.trace": [c(x2()), c(A(n, m, 2), 0, 0, 2)],
    "numpy.diag": [c(A(n)), c(A(n), 2), c(x2(), -1)],
    "numpy.atleast_2d": [c(A(n)), c(x2())],
    "numpy.count_nonzero": [c(x2()), c(x2(), axis=0)],
    # -- runtime input checks (side-effect ops)
    "tpe.check_input": [c(A(n, 3), "x", (None, 3), np.dtype(np.float64), "(n, 3)")],
    "tpe.derived_root": [c(A(n), "x", 0, 2, 0, 1, None, "2*r", "r")],
    "tpe.assert_range": [c(n, 1, 64, "x.shape[0]", "n")],
    "tpe.assert_dim": [c(A(n), "x", 0, n, "x.shape[0]", "dim n")],
    "tpe.assert_guard": [c(True, "x.shape[0]", n, "n >= 1", ("n",), (n,))],
    "tpe.check_size": [c(True, "u0 >= 1", "model.py:3", ("n",), (n,))],
    "tpe.check_int": [c(n, "k", 1, 0, None, None, "n", "n"), c(2 * n, "k", 2, 0, 1, 64, "2*n", "n")],
    "tpe.assert_int": [c(n, "k", n, "x.shape[0]", "dim n")],
    "tpe.size_value": [c(2 * n + 1, "int")],
    "tpe.item_size": [c(A(1, hi=5), "model.py:3"), c(A(hi=9), "model.py:4")],
    # -- nn composites
    "tpe.nn.relu": [c(x2())], "tpe.nn.gelu": [c(x2(), approximate="tanh")], "tpe.nn.erf": [c(A(n))],
    "tpe.nn.erfc": [c(A(n))], "tpe.nn.sigmoid": [c(x2())], "tpe.nn.silu": [c(x2())], "tpe.nn.tanh": [c(x2())],
    "tpe.nn.softmax": [c(x2(), 0), c(A(e, 2), -1)], "tpe.nn.log_softmax": [c(x2(), dim=-1)],
    "tpe.nn.normalize": [c(A(n, 4))],
    "tpe.nn.linear": [c(A(n, m, 4), A(3, 4), A(3)), c(A(n, 4), A(4))],
    "tpe.nn.layer_norm": [c(A(n, m, 4), (4,), A(4), A(4))], "tpe.nn.rms_norm": [c(A(n, 4), 4, weight=A(4))],
    "tpe.nn.batch_norm": [c(A(n, 3, m), A(3), A(3), A(3), A(3))], "tpe.nn.batch_stats": [c(A(n, 3, m, 2))],
    "tpe.nn.embedding": [c(I(n, hi=m, vrange=(0, m - 1)), A(m, 3)), c(I(n, 2, hi=5), A(5, 3))],
    "tpe.nn.one_hot": [c(I(n, m, hi=4), 4)],
    "tpe.nn.scaled_dot_product_attention": [
        c(A(n, 2, m, 4), A(n, 2, m, 4), A(n, 2, m, 3), attn_mask=M(n, 1, 1, m), is_causal=True),
        c(A(2, n, 4), A(2, m, 4), A(2, m, 3))],
    "tpe.nn.pad": [c(A(n, m, 3), (1, 2, 0, 3)), c(A(2, e), (1, 1), mode="replicate")],
    "tpe.nn.cross_entropy": [c(A(n, 4, m), I(n, m, hi=4), reduction="none"), c(A(n, 4), A(n, 4))],
    "tpe.nn.conv2d": [c(A(n, 4, 9, m + 4), A(6, 2, 3, 2), A(6), stride=(2, 1), padding=1, dilation=(1, 2), groups=2),
                      c(A(3, n, m), A(2, 3, 3, 4), padding="same")],
    "tpe.nn.conv1d": [c(A(2, 4, n), A(6, 4, 3), padding=2, dilation=2)],
    "tpe.nn.max_pool2d": [c(A(2, 3, n, m + 3), 3, 2, 1, ceil_mode=True), c(A(2, 3, n + 3, 7), (2, 3), dilation=2)],
    "tpe.nn.avg_pool2d": [c(A(2, 3, n, m + 3), 2, 3, ceil_mode=True)],
}

CASES.update({
    # -- reductions added with the stats ops
    **{f"numpy.{r}": [c(x2(), 1), c(x2()), c(A(e, m), axis=0, keepdims=True)] for r in ("nanargmax", "nanargmin")},
    **{f"numpy.{r}": [c(x2()), c(x2(), axis=1), c(A(e, 2), 0)] for r in ("nancumsum", "nancumprod")},
    "numpy.nanprod": [c(x2(), axis=0), c(A(n)), c(x2(), 1, None, None, True), c(A(e, m), axis=(0, 1))],
    "numpy.nanstd": [c(x2(), axis=0), c(x2(), 1, None, None, 1, True)],
    "numpy.nanvar": [c(A(n)), c(x2(), axis=1, ddof=1, keepdims=True), c(x2(), where=M(k, m))],
    **{f"numpy.{r}": [c(A(n)), c(x2(), axis=1, include_initial=True), c(A(e), include_initial=True),
                      c(A(n, m, 2), axis=0)]
       for r in ("cumulative_sum", "cumulative_prod") if hasattr(np, r)},  # registered on numpy >= 2.1
    # -- order statistics and binning
    "numpy.percentile": [c(x2(), 50.0), c(x2(), [25.0, 75.0], axis=1), c(A(e, m), A(2, k), axis=0, keepdims=True),
                         c(x2(), 40.0, axis=0, method="inverted_cdf", weights=A(n))],
    "numpy.quantile": [c(A(e, m), 0.5, axis=0), c(x2(), [0.2, 0.8], axis=(0, 1), keepdims=True),
                       c(x2(), 0.3, axis=None, method="inverted_cdf", weights=A(n, m))],
    "numpy.nanpercentile": [c(A(e, m), 40.0, axis=0), c(x2(), A(3), axis=1)],
    "numpy.nanquantile": [c(x2(), [0.2, 0.8], axis=1), c(A(e), 0.5)],
    "numpy.histogram": [c(A(n), m), c(A(n, m), A(e, sort=True)), c(A(n), 5, weights=A(n)),
                        c(x2(), [0.5, 1.0, 1.5]), c(A(n), bins=m, range=(0.0, 2.0), density=True)],
    "numpy.digitize": [c(x2(), A(m, sort=True)), c(A(n), [0.7, 1.0, 1.2], right=True)],
    "numpy.average": [c(x2()), c(x2(), axis=0, weights=A(n)), c(x2(), 1, A(n, m), keepdims=True),
                      c(A(n, m, 2), axis=(0, 2), weights=A(n, 2))],
    "numpy.ptp": [c(x2(), axis=1), c(A(e, 2), axis=0), c(x2(), keepdims=True)],
    # -- selection
    "numpy.partition": [c(x2(), 2), c(x2(), -2, axis=0), c(A(n), [1, n - 1]), c(x2(), m, axis=None)],
    "numpy.argpartition": [c(x2(), 1, axis=0), c(A(n), n - 2), c(A(e, m), [0, m - 1], axis=1),
                           c(x2(), 0, axis=None)],
    "numpy.isin": [c(x2(), A(m)), c(I(n, hi=3), [0, 1], invert=True)],
    # -- grids
    "numpy.meshgrid": [c(A(n), A(m)), c(A(n), A(m), A(2), indexing="ij", sparse=True),
                       c(A(n), A(m), A(3), sparse=True), c(A(n, 2), A(e)), c(A(n))],
    "numpy.kron": [c(A(n, 2), A(3, m)), c(A(n), A(2, m)), c(x2(), 2.0), c(A(2, 3), A(4))],
    "numpy.ix_": [c(I(n, hi=n), I(m, hi=m)), c(I(n, hi=n)), c([0, 2], I(m, hi=m), [1])],
    "numpy.unravel_index": [c(I(n, hi=n * m, vrange=(0, n * m - 1)), (n, m)),
                            c(I(3, 2, hi=6, vrange=(0, 5)), (n, m, 2), order="F"),
                            c(m, (n, m)), c([0, n - 1], (n, 2))],
    "numpy.broadcast_arrays": [c(A(n, 1), A(m)), c(A(k, m), A(n, 1), A(m)), c(A(n), 1.0)],
    # -- signal
    "numpy.convolve": [c(A(n), A(m)), c(A(n), A(m), mode="same"), c(A(m), A(n), "valid"), c(A(e), 2.0),
                       c(A(n), A(3), 1), c(A(3), A(n), mode=0)],
    "numpy.correlate": [c(A(n), A(m)), c(A(m), A(n), mode="same"), c(A(n), A(e), "full"), c(A(3), A(n), 1)],
    "numpy.interp": [c(x2(), A(m, sort=True), A(m)), c(A(n), A(e, sort=True), A(e), left=0.0),
                     c(0.7, A(n, sort=True), A(n))],
    "numpy.isclose": [c(A(n, 1), A(m)), c(x2(), 1.0, rtol=A(m)), c(A(k, m), A(n, 1), atol=A(n, 1))],
    # -- scatter and segments
    "tpe.put_along_axis": [c(x2(), I(n, 1, hi=m, vrange=(0, m - 1)), A(n, 1), axis=1),
                           c(x2(), I(k, m, hi=n, vrange=(0, n - 1)), A(m), axis=0),
                           c(x2(), I(3, hi=n * m, vrange=(0, 5)), A(1), axis=None),
                           c(x2(), I(n, 2, hi=2, vrange=(-m, 1)), 0.0, 1)],
    "numpy.bincount": [c(I(n, hi=5)), c(I(n, hi=m, vrange=(0, m - 1)), minlength=m),
                       c(I(n, hi=4, vrange=(0, 3)), A(n), minlength=2), c(I(n, hi=3, vrange=(0, 2)), minlength=m),
                       c(I(e, hi=n, vrange=(0, n - 1)), None, 0)],
})

def _accumulate_dtype(u):
    """A dtype numpy has an accumulate loop for: ints for bit ops, bools for logic and comparisons."""
    if u.startswith(("bitwise", "left_", "right_")) or u in ("gcd", "lcm"):
        return np.int64
    if u.startswith("logical") or u in ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal"):
        return np.bool_
    return np.float64


CASES.update({
    # -- numpy's Python-level functions (ops/lib.py)
    "numpy.select": [c([M(n, m), M(n, 1)], [x2(), A(m)], 0.5), c([M(n)], [A(n)])],
    "numpy.cov": [c(x2()), c(A(n)), c(x2(), rowvar=False), c(A(k, m), rowvar=False), c(x2(), A(2, m)),
                  c(A(k, m)), c(x2(), A(k, n), rowvar=False), c(A(n, k), rowvar=False)],
    "numpy.corrcoef": [c(x2()), c(x2(), rowvar=False), c(x2(), A(2, m)), c(A(k, m))],
    "numpy.lexsort": [c((A(n), A(n))), c(A(2, n, m), axis=0), c([A(n, m)])],
    **{f"numpy.{u}.accumulate": [c(A(n, m, dtype=_accumulate_dtype(u)), axis=1), c(A(e, dtype=_accumulate_dtype(u)))]
       for u in ACCUMULATE_UFUNCS},
    **{f"numpy.{u}.outer": [c(A(n, dtype=np.int64 if u.startswith("bitwise") else
                              np.bool_ if u.startswith("logical") else np.float64),
                            A(2, m, dtype=np.int64 if u.startswith("bitwise") else
                              np.bool_ if u.startswith("logical") else np.float64))]
       for u in OUTER_UFUNCS},
    "numpy.append": [c(x2(), A(3)), c(x2(), A(2, m), axis=0), c(x2(), A(n, 1), 1)],
    "numpy.delete": [c(x2(), 0, axis=0), c(x2(), [0, -1], 1), c(A(n), slice(1, None, 2)), c(x2(), [1, 2]),
                     c(A(k), [0, -1]), c(A(n), [])],
    "numpy.insert": [c(x2(), 0, 0.0, axis=0), c(x2(), -1, A(1, m), 0), c(x2(), [0, 2], A(m), 0), c(A(n), 1, 5.0),
                     c(x2(), 2, A(2, n), axis=1), c(x2(), 1, A(n), axis=1)],
    "numpy.ndarray.view": [c(x2(), np.int64), c(A(n, dtype=np.float32), np.uint32), c(A(e))],
    "numpy.rot90": [c(x2()), c(x2(), 2), c(A(n, m, 2), 3, (2, 0))],
    "numpy.block": [c([[x2(), A(n, 2)], [A(3, m), A(3, 2)]]), c([A(n), A(m)]), c([[A(n)], [A(n)]]),
                    c([A(2, n, m), A(2, n, 1)])],
    "numpy.column_stack": [c([A(n), A(n)]), c([x2(), A(n)]), c((A(n, 2), A(n, m)))],
    "numpy.dstack": [c([x2(), x2()]), c([A(n), A(n)]), c([A(n, m, 2), A(n, m, 1)])],
    "numpy.atleast_3d": [c(A()), c(A(n)), c(x2()), c(A(n, m, 2, 1))],
    "numpy.ediff1d": [c(x2()), c(A(e)), c(A(n), to_end=A(m), to_begin=2.0)],
    "numpy.vander": [c(A(n)), c(A(n), m), c(A(e), 3, True)],
    "numpy.polyval": [c(A(n), x2()), c(A(m), 0.7), c(A(n, m), A(n, 1)), c(A(e), A(n))],
    "numpy.trapezoid": [c(x2()), c(x2(), axis=0), c(x2(), A(m)), c(x2(), A(n, m), axis=0), c(A(e, 2), dx=0.5, axis=0)],
    "numpy.resize": [c(x2(), (n + 1, m)), c(A(n), 7), c(A(e), (m, 2))],
    "numpy.ravel_multi_index": [c((I(n, hi=2, vrange=(0, 1)), I(n, hi=m, vrange=(0, m - 1))), (2, m)),
                                c((I(k, hi=3), I(n, hi=3)), (n, 3), mode="wrap"), c((I(hi=2), 1), (n, m))],
    "tpe.fill_diagonal": [c(x2(), 0.0), c(A(n, n), A(n), True), c(A(3, 3, 3), 1.0)],
})

# keepdims passed by position: its place differs between reductions (after out / overwrite_input / ddof)
for _name, _args in {"sum": (0, None, None, True), "mean": (1, None, None, True), "any": (0, None, True),
                     "all": (1, None, True), "max": (0, None, True), "nansum": (1, None, None, True),
                     "nanmean": (0, None, None, True), "median": (0, None, False, True),
                     "nanmedian": (1, None, False, True), "var": (0, None, None, 1, True)}.items():
    CASES[f"numpy.{_name}"] = CASES[f"numpy.{_name}"] + [c(x2(), *_args)]
for _name, _args in {"sum": (0, None, None, True), "min": (1, None, True), "std": (0, None, None, 0, True)}.items():
    CASES[f"numpy.ndarray.{_name}"] = CASES[f"numpy.ndarray.{_name}"] + [c(x2(), *_args)]


def _reduceat_cases(name):
    """Segments along a dynamic axis: constant starts with a symbolic one, a traced index array."""
    dtype = np.int64 if name.startswith("bitwise") else np.bool_ if name.startswith("logical") else np.float64
    return [c(A(n, m, dtype=dtype), [0, 2, n - 1]),
            c(A(n, m, dtype=dtype), I(n, hi=m, vrange=(0, m - 1)), axis=1),
            c(A(e, m, dtype=dtype), I(3, hi=e, vrange=(0, e - 1)), 0)]


def _at_cases(name):
    """Scatter by an index array, a constant key with a symbolic index, a slice and index, a mask."""
    dtype = np.int64 if name.startswith("bitwise") else np.bool_ if name.startswith("logical") else np.float64
    one = np.ones((), dtype).item()
    return [c(A(n, m, dtype=dtype), I(e, hi=4, vrange=(0, 3)), A(e, m, dtype=dtype)),
            c(A(n, m, dtype=dtype), [2, n - 1], A(m, dtype=dtype)),
            c(A(n, m, dtype=dtype), (slice(1, None), I(3, hi=m, vrange=(0, m - 1))), A(k, 3, dtype=dtype)),
            c(A(n, m, dtype=dtype), (Ellipsis, I(2, hi=m, vrange=(-m, m - 1))), one),
            c(A(n, m, dtype=dtype), M(n, m), one)]


CASES.update({f"numpy.{u}.reduceat": _reduceat_cases(u) for u in REDUCEAT_UFUNCS})
CASES.update({f"tpe.{u}_at": _at_cases(u) for u in AT_UFUNCS})

CASES.update({
    # -- numpy.fft: transform lengths (n/s given or the axis's size), rfft keeps n // 2 + 1
    **{f"numpy.fft.{f}": [c(x2()), c(x2(), axis=0), c(x2(), n, 0), c(A(n), 5)] for f in ("fft", "ifft", "rfft", "ihfft")},
    **{f"numpy.fft.{f}": [c(A(n, m, dtype=np.complex128)), c(A(n, m, dtype=np.complex128), n, 0),
                          c(A(n, dtype=np.complex128), 7)] for f in ("irfft", "hfft")},
    **{f"numpy.fft.{f}": [c(x2()), c(A(2, n, m), (m, 3), (1, 2)), c(A(n, m, 2), axes=(0, 1))]
       for f in ("fft2", "ifft2", "rfft2", "fftn", "ifftn", "rfftn")},
    **{f"numpy.fft.{f}": [c(A(n, m, dtype=np.complex128)), c(A(n, m, dtype=np.complex128), (n, 5), (0, 1))]
       for f in ("irfft2", "irfftn")},
    "numpy.fft.fftfreq": [c(n), c(2 * n + 1, 0.25), c(7, 0.1), c(n, A(n)), c(m, d=A(1))],
    "numpy.fft.rfftfreq": [c(n), c(2 * n + 1, 0.25), c(7, 0.1), c(n, A(n // 2 + 1))],
    "numpy.fft.fftshift": [c(x2()), c(x2(), axes=0)], "numpy.fft.ifftshift": [c(x2()), c(x2(), axes=1)],
    # -- numpy.linalg matrix functions: square matrices (cholesky: 1x1 positive ones are SPD)
    "numpy.linalg.inv": [c(A(n, n)), c(A(2, n, n))], "numpy.linalg.det": [c(A(n, n)), c(A(m, n, n))],
    "numpy.linalg.cholesky": [c(A(k, k)), c(A(n, k, k))], "numpy.linalg.matrix_power": [c(A(n, n), 3)],
    "numpy.linalg.eigvalsh": [c(A(n, n)), c(A(2, m, m))],
    "numpy.linalg.eigh": [c(A(n, n)), c(A(2, m, m), "U")], "numpy.linalg.slogdet": [c(A(n, n)), c(A(m, n, n))],
    "numpy.linalg.pinv": [c(x2()), c(A(2, n, m))],
    "numpy.linalg.solve": [c(A(n, n), A(n)), c(A(n, n), A(n, m)), c(A(2, n, n), A(1, n, m))],
    "numpy.linalg.qr": [c(x2()), c(A(2, n, m), "complete"), c(A(m, n), mode="raw"), c(A(e, 3))],
    "tpe.linalg.qr_r": [c(x2()), c(A(2, m, n), "r")],
    "numpy.linalg.svd": [c(x2()), c(A(2, n, m), False), c(A(n, n), hermitian=True), c(A(e, 2), full_matrices=False)],
    "tpe.linalg.svd_values": [c(x2()), c(A(2, m, n), compute_uv=False)],
    "numpy.linalg.svdvals": [c(x2()), c(A(3, n, m))],
})

CASES.update({
    # -- vectors, matrices, einsum's interleaved form, unstack (ops/linalg.py, ops/movement.py)
    "numpy.vdot": [c(x2(), A(m, n)), c(A(n), A(n)), c(A(), A())],
    "numpy.vecdot": [c(x2(), A(m)), c(A(n, 1, m), A(k, m)), c(x2(), x2(), axis=0),
                     c(x2(), x2(), axis=0, keepdims=True)],
    "numpy.matrix_transpose": [c(x2()), c(A(2, n, m))],
    "numpy.cross": [c(A(n, 3), A(n, 3)), c(A(n, 2), A(1, 3)), c(A(n, 2), A(n, 2)), c(A(3, n), A(3, n), axis=0),
                    c(A(n, 3), A(m, 1, 3), axisc=0)],
    "numpy.unstack": [c(A(n, 3), axis=1), c(x2()), c(A(2, n))],
    # -- the long tail (ops/numpy_tail.py)
    **{f"numpy.{f}": [c(x2()), c(A(e, 3))] for f in ("sinc", "fix", "isposinf", "isneginf", "iscomplex", "isreal",
                                                     "angle", "sort_complex")},
    "numpy.unwrap": [c(x2()), c(x2(), axis=0), c(A(e, 3), None, 1)],
    "numpy.hsplit": [c(x2(), 2), c(A(n), [1, 3]), c(A(2, n, m), [1])],
    "numpy.vsplit": [c(x2(), 2), c(A(n, 3), [2, 4])], "numpy.dsplit": [c(A(2, n, m), 2), c(A(1, 2, n), [1])],
    "numpy.rollaxis": [c(A(n, m, 2), 2), c(A(n, m, 2), 0, 3), c(A(n, m, 2), -1, 1), c(x2(), 1, 1)],
    "numpy.diagflat": [c(x2()), c(A(n), 2), c(A(e), -1)],
    "numpy.matvec": [c(A(2, n, m), A(m)), c(A(n, m), A(k, m)), c(A(k, n, m), A(3, m))],
    "numpy.vecmat": [c(A(n), A(2, n, m)), c(A(k, n), A(3, n, m))],
    "numpy.unique_values": [c(x2()), c(A(e))], "numpy.unique_counts": [c(x2()), c(A(n, hi=3))],
    "numpy.unique_inverse": [c(x2()), c(A(n, hi=3))], "numpy.unique_all": [c(x2()), c(A(n, m, hi=4))],
    "numpy.setxor1d": [c(A(n), A(m)), c(A(n, hi=5), A(m, hi=5))],
    "tpe.put": [c(x2(), A(3, hi=4), 1.0), c(x2(), [0, -1], A(2)), c(A(n), A(m, hi=9), 0.0, "wrap")],
    "tpe.putmask": [c(x2(), A(n, m, mask=True), 0.0), c(A(n), A(n, mask=True), A(3))],
    "tpe.place": [c(x2(), A(n, m, mask=True), A(3))],
    "tpe.fill": [c(x2(), 1.0), c(A(e), 0.0)],
    "tpe.sort_in_place": [c(x2()), c(x2(), 0), c(A(e, 3), -1)],
    "tpe.partition_in_place": [c(x2(), 1), c(x2(), 2, 0), c(A(n, m), [0, 3])],
    "numpy.gradient": [c(x2()), c(x2(), 0.5, 2.0), c(A(n, m, 2), axis=(0, 2), edge_order=1)],
    "tpe.gradient_one": [c(A(n)), c(x2(), axis=1), c(A(n), A(n))],
    "numpy.choose": [c(A(n, m, hi=2), [x2(), x2()]), c(A(n, 1, hi=3), [A(m), A(1, m), A(n, m)])],
    "numpy.packbits": [c(A(n, m, mask=True)), c(A(n, m, mask=True), 1), c(A(e, 3, mask=True), 0)],
    "numpy.unpackbits": [c(A(n, m, dtype=np.uint8)), c(A(n, m, dtype=np.uint8), 0, 5, "little"),
                         c(A(n, 2, dtype=np.uint8), axis=0, count=-3), c(A(e, 3, dtype=np.uint8), axis=1, count=m),
                         c(A(n, 3, dtype=np.uint8), count=-n)],
    "numpy.i0": [c(x2()), c(A(e, 2, dtype=np.float32)), c(A(n, dtype=np.int64))],
    "numpy.diag_indices": [c(n), c(m, 3), c(4)],
    "numpy.diag_indices_from": [c(A(n, n)), c(A(m, m, m))],
    # -- polynomials (ops/polynomial.py)
    "numpy.polyadd": [c(A(n), A(m)), c(A(n), 2.0), c(A(3), A(e))],
    "numpy.polysub": [c(A(n), A(m)), c(A(4), A(n))],
    "numpy.polymul": [c(A(n), A(m)), c(A(e), A(3)), c(A(n), 2.0)],
    "numpy.polyder": [c(A(n)), c(A(n), 2), c(A(e), 5)],
    "numpy.polyint": [c(A(n)), c(A(n), 2, [1.0, 2.0]), c(A(e), 3, A(k)), c(A(n), 1, 3.0)],
    "numpy.polyfit": [c(A(n), A(n), 2), c(A(n), A(n, m), 1), c(A(n), A(n), 1, None, False, A(n))],
    # -- tensor inverses (ops/matrix.py)
    "numpy.linalg.tensorinv": [c(A(n, 2, 2 * n)), c(A(6, 2, 3), 1), c(A(n, m, n * m), ind=2)],
    "numpy.linalg.tensorsolve": [c(A(n, 2, n, 2), A(n, 2)), c(A(n, n), A(n)), c(A(n, n, 2, 2), A(n, 2), (1,)),
                                 c(A(e, 2, e, 2), A(e, 2))],
    "numpy.linalg.multi_dot": [c([x2(), A(m, 3)]), c([A(n), A(n, m), A(m)]), c([x2(), A(m, n), A(n, 2), A(2)])],
    "numpy.linalg.cond": [c(A(n, n)), c(A(2, n, n), "fro"), c(A(n, m))],
    "numpy.linalg.matrix_rank": [c(x2()), c(A(2, n, m)), c(A(n))],
    # -- numpy.linalg's array-API entry points (ops/linalg_namespace.py)
    "numpy.linalg.vecdot": [c(x2(), A(m)), c(A(n, 1, m), A(k, m)), c(x2(), x2(), axis=0)],
    "numpy.linalg.cross": [c(A(n, 3), A(n, 3)), c(A(3, n), A(3, 1), axis=0), c(A(n, 1, 3), A(m, 3))],
    "numpy.linalg.matrix_transpose": [c(x2()), c(A(2, n, m))],
    "numpy.linalg.outer": [c(A(n), A(m)), c(A(e), A(3))],
    "numpy.linalg.diagonal": [c(x2()), c(A(2, n, m), offset=1), c(A(n, n), offset=-2)],
    "numpy.linalg.trace": [c(x2()), c(A(2, n, m), offset=1), c(A(n, n), dtype=np.float32)],
    "numpy.linalg.matrix_norm": [c(x2()), c(A(2, n, m), keepdims=True), c(A(e, m), ord=-1), c(A(n, e), ord=2),
                                 c(A(n, m), ord=-np.inf)],
    "numpy.linalg.vector_norm": [c(x2()), c(A(2, n, m), axis=(0, 2), keepdims=True), c(A(e, m), axis=1, ord=np.inf),
                                 c(A(n, m), axis=0, ord=-np.inf), c(x2(), keepdims=True)],
    "numpy.linalg.tensordot": [c(x2(), A(m, 3), axes=1), c(A(n, m), A(n, m)), c(A(2, n), A(n, 2), axes=([1], [0]))],
    "numpy.linalg.matmul": [c(x2(), A(m, 3)), c(A(2, n, m), A(m)), c(A(n), A(n, m))],
    **{f"numpy.{u}.reduce": [c(A(n, m, dtype=np.int64 if u in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm")
                                 else np.bool_ if u == "logical_xor" else np.float64), axis=1),
                             c(A(e, m, dtype=np.int64 if u in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm")
                                 else np.bool_ if u == "logical_xor" else np.float64), 0, None, None, True, 3),
                             c(A(n, m, dtype=np.int64 if u in ("bitwise_and", "bitwise_or", "bitwise_xor", "gcd", "lcm")
                                 else np.bool_ if u == "logical_xor" else np.float64), axis=-1)]
       for u in REDUCE_UFUNCS},
    # -- selections and set operations (ops/sets.py)
    "numpy.compress": [c([True, False, True], x2(), axis=1), c(M(n), x2(), axis=0), c(M(4), x2()),
                       c([False, True], x2(), 0)],
    "numpy.ndarray.compress": [c(x2(), M(m), axis=1), c(x2(), [True, True])],
    "numpy.extract": [c(M(n, m), x2()), c(M(n), A(n, 2)), c([1, 0, 1], x2())],
    "numpy.trim_zeros": [c(I(n, hi=2)), c(I(n, hi=2), "b"), c(I(n, m, hi=2)), c(I(n, m, hi=2), "f", axis=1)],
    "numpy.setdiff1d": [c(I(n, hi=3), I(m, hi=2)), c(I(n, m, hi=4), [0, 1])],
    "numpy.intersect1d": [c(I(n, hi=3), I(m, hi=3)), c(I(n, hi=4), [1, 2])],
    "tpe.intersect1d_indices": [c(I(n, hi=3), I(m, hi=3))],
    "numpy.union1d": [c(I(n, hi=3), I(m, hi=3)), c(I(n, 2, hi=5), [7])],
})
CASES["tpe.unique"] = CASES["tpe.unique"] + [c(I(n, 2, hi=2), axis=0), c(I(n, m, hi=2), True, True, True, axis=1)]
CASES["numpy.einsum"] = CASES["numpy.einsum"] + [c(x2(), [0, 1], A(m, 3), [1, 2], [0, 2]), c(x2(), [0, 1]),
                                                 c(A(2, n, m), [Ellipsis, 1], A(m), [1], [Ellipsis])]

# rules that are not for capture to call: they must refuse (and say so)
REFUSES = {"tpe.item": TypeError}


def _ufunc_case(uf):
    """One call of a ufunc on arrays of its first loop's dtypes, broadcast (n, 1) x (m,) x ..."""
    loops = [t.split("->")[0] for t in uf.types if "O" not in t]
    ins = next((t for pref in "dl?" for t in loops if set(t) == {pref}), loops[0])
    shapes = [(n, 1), (m,), (n, m)]
    args = []
    for i, ch in enumerate(ins):
        dtype = np.dtype(f"{ch}8[s]") if ch in "Mm" else np.dtype(ch)
        args.append(A(*(shapes[i % 3] if uf.nin > 1 else (n, 3)), dtype=dtype))
    return c(*args)


def _all_cases():
    out = []
    for name, op in sorted(all_ops().items()):
        if name in REFUSES:
            continue
        calls = CASES.get(name)
        if calls is None and isinstance(op.impl, np.ufunc):
            calls = [_ufunc_case(op.impl)]
        for i, (args, kwargs) in enumerate(calls or ()):
            out.append(pytest.param(name, args, kwargs, id=f"{name}-{i}"))
    return out


def run_bare(name, args, kwargs):
    """The op's impl on examples and its rule on a bare ctx; returns (ctx, shapes, outputs)."""
    from solver import canonicalize

    op = all_ops()[name]
    rng = np.random.default_rng(0)
    ex_args, ex_kwargs = examples(args, rng), examples(kwargs, rng)
    with np.errstate(all="ignore"):
        result = op.impl(*ex_args, **ex_kwargs)
    outs = list(result) if op.multi_output else [result]
    concrete = [tuple(np.shape(o)) for o in outs]
    ctx = ShapeCtx.bare(HINTS, RANGES, op=name, concrete=concrete, canon=canonicalize)
    shapes = op.shape_rule(ctx, *infos(args), **infos(kwargs))
    shapes = list(shapes) if op.multi_output else [shapes]
    return ctx, shapes, outs


@pytest.mark.parametrize("name,args,kwargs", _all_cases())
def test_rule_on_a_bare_ctx_matches_numpy(name, args, kwargs):
    ctx, shapes, outs = run_bare(name, args, kwargs)
    assert len(shapes) == len(outs), (name, shapes)
    for shape, out in zip(shapes, outs):
        assert all(isinstance(d, (int, sympy.Basic)) for d in shape), (name, shape)
        assert tuple(ctx.hint(d) for d in shape) == np.shape(out), (name, shape, np.shape(out))
    for record in ctx.recorded:
        assert ctx.hint(record.expr) is True, (name, record.expr, record.reason)
        assert record.op == name and record.kind in ("shape", "index_bounds", "specialization")
    for index, axis, sym in ctx.unbacked:
        assert ctx.data_dependent(sym) and ctx.hint(sym) == np.shape(outs[index])[axis], (name, sym)
    for index, (lo, hi) in ctx.vranges.items():
        values = np.asarray(outs[index])
        if values.size and values.dtype.kind in "iub":
            assert ctx.hint(lo) <= values.min() and values.max() <= ctx.hint(hi), (name, index, lo, hi)


def test_every_registered_op_has_a_bare_case():
    ops = all_ops()
    generated = {name for name, op in ops.items() if isinstance(op.impl, np.ufunc)}
    assert not set(CASES) - set(ops), f"cases for ops not in the registry: {sorted(set(CASES) - set(ops))}"
    missing = set(ops) - set(CASES) - generated - set(REFUSES)
    assert not missing, f"ops without a bare-ctx case: {sorted(missing)}"


@pytest.mark.parametrize("name,error", sorted(REFUSES.items()))
def test_rules_not_for_capture_refuse(name, error):
    ctx = ShapeCtx.bare(HINTS, RANGES, op=name)
    with pytest.raises(error):
        all_ops()[name].shape_rule(ctx, ArrayInfo((n,), np.dtype(np.float64)), 0)


# -- the bare ctx itself ----------------------------------------------------------------------------
def test_bare_ctx_records_instead_of_deciding():
    ctx = ShapeCtx.bare(hints={n: 8}, ranges={n: (1, 64)})
    ctx.require(sympy.Le(n, 50), lambda: f"{n} at most 50")
    ctx.eq(n, n, "identical: folded")
    ctx.require(sympy.true, "folded")
    assert ctx.choose(sympy.Lt(n, 10), "branch") is True
    ctx.pin(n, "pinned")
    assert [(r.expr, r.kind, r.reason, r.op) for r in ctx.recorded] == [
        (sympy.Le(n, 50), "shape", "n at most 50", "test"), (sympy.Lt(n, 10), "shape", "branch", "test"),
        (sympy.Eq(n, 8), "specialization", "pinned", "test")]
    assert ctx.hint(3 * n - 1) == 23 and ctx.hint(sympy.Gt(n, 9)) is False


def test_bare_ctx_broadcasts_by_the_example():
    ctx = ShapeCtx.bare(HINTS, RANGES, op="numpy.add")
    assert ctx.broadcast((k, m), (n, 1)) == (n, m)
    assert [(r.expr, r.reason) for r in ctx.recorded] == [
        (sympy.Eq(k, 1), "broadcasting in `+`: k (size 1 in the example) with n")]
    with pytest.raises(ValueError, match="cannot broadcast"):
        ctx.broadcast((n,), (m,))


def test_bare_ctx_canon_is_range_aware_when_given_a_canonicalizer():
    from solver import canonicalize

    assert ShapeCtx.bare(HINTS, RANGES, canon=canonicalize).canon(sympy.Max(n - 1, 0)) == n - 1
    assert ShapeCtx.bare(HINTS, RANGES).canon(sympy.Max(n - 1, 0)) == sympy.Max(n - 1, 0)


def test_bare_ctx_makes_data_dependent_sizes():
    ctx = ShapeCtx.bare(HINTS, RANGES, op="numpy.flatnonzero", concrete=[(5,)])
    u = ctx.new_unbacked(n)
    assert ctx.unbacked == [(0, 0, u)] and ctx.hint(u) == 5 and ctx.data_dependent(2 * u + n)
    assert not ctx.data_dependent(n) and not ctx.data_dependent(3)


def test_bincount_length_is_data_dependent_with_minlength_as_lower_bound():
    # values in [0, 3], minlength 2: the length is unbacked in [2, 4]; below a symbolic minlength, it is m
    env = BareEnv(HINTS, RANGES)
    ctx = ShapeCtx(env, "numpy.bincount", None, [(4,)])
    x = ArrayInfo((n,), np.dtype(np.int64), (0, 3))
    (u,) = all_ops()["numpy.bincount"].shape_rule(ctx, x, None, 2)
    assert ctx.unbacked == [(0, 0, u)] and env.ranges[u] == (2, 4) and ctx.hint(u) == 4
    below = ArrayInfo((n,), np.dtype(np.int64), (0, m - 1))
    assert all_ops()["numpy.bincount"].shape_rule(ShapeCtx.bare(HINTS, RANGES), below, minlength=m) == (m,)


def test_correlate_refuses_a_0d_operand_like_numpy():
    rule = all_ops()["numpy.correlate"].shape_rule
    for a, v in ((A(n), 2.0), (2.0, A(n))):
        with pytest.raises(ValueError, match="too small depth"):
            np.correlate(*examples((a, v), np.random.default_rng(0)))
        with pytest.raises(ValueError, match="too small depth"):
            rule(ShapeCtx.bare(HINTS, RANGES, op="numpy.correlate"), *infos((a, v)))
    assert all_ops()["numpy.convolve"].shape_rule(ShapeCtx.bare(HINTS, RANGES), A(n).info(), 2.0) == (n,)


def test_the_capture_env_and_the_bare_env_implement_the_protocol():
    from solver import ShapeSolver

    from tensorplay_export.capture.shape_env import ShapeEnv

    assert isinstance(ShapeEnv(ShapeSolver(timeout_ms=200), "export"), SizeEnv)
    assert isinstance(BareEnv(HINTS, RANGES), SizeEnv)
    assert ShapeCtx(ShapeEnv(ShapeSolver(timeout_ms=200), "export"), "numpy.add", None, [()]).recorded is None


# -- mechanical: rules reach sizes only through the ctx's methods ----------------------------------
PKG = Path(__file__).resolve().parents[2] / "tensorplay_export"
RULE_FILES = sorted((PKG / "ops").glob("*.py")) + [PKG / "nn" / "_composites.py"]


def test_no_rule_reaches_the_env_behind_the_ctx():
    found = []
    for path in RULE_FILES:
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bctx\.(_?env|_\w+)\b", line):
                found.append(f"{path.relative_to(PKG)}:{lineno}: {line.strip()}")
    assert not found, "rules must use ShapeCtx's methods, not the env behind it:\n" + "\n".join(found)


def test_ops_never_import_capture():
    found = []
    for path in sorted((PKG / "ops").glob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"^\s*(from|import)\s+(\.\.|tensorplay_export\.)capture\b", line):
                found.append(f"{path.name}:{lineno}: {line.strip()}")
    assert not found, "ops -> records only:\n" + "\n".join(found)
