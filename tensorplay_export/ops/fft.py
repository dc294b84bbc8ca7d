"""Discrete Fourier transforms (``numpy.fft``): output sizes along the transformed axes.

numpy's rules (``numpy/fft/_pocketfft.py``): a transform of length ``n`` (the ``n``/``s``
argument, else the axis's size) crops or zero-pads its axis to ``n`` and needs ``n >= 1``;
``rfft`` keeps ``n // 2 + 1`` frequencies; ``irfft`` returns ``n`` points, ``n`` defaulting
to ``2 * (m - 1)`` for ``m`` input frequencies.  The ``*2``/``*n`` forms apply the same rule
on each axis of ``axes`` (default: the last ``len(s)`` axes, or all), the real forms only on
the last of them.  Values are numpy's own at run time (the impl is numpy's function).

``fftfreq(n, d)`` / ``rfftfreq(n, d)`` (``numpy/fft/_helper.py``) take a length, no array:
``n`` and ``n // 2 + 1`` sample frequencies of ``1 / (n * d)`` each (float64 for a
Python ``d``); ``n = 0`` divides by zero there.  During capture they are creation
functions (``capture/patching.py``), so ``fftfreq(x.shape[0])`` keeps the size symbolic.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..records import sympy
from .ctx import is_static
from .elementwise import shape_of
from .registry import register_op


def _axis(axis: Any, ndim: int, name: str) -> int:
    a = int(axis)
    if not -ndim <= a < ndim:
        raise ValueError(f"{name}: axis {a} is out of bounds for an array of dimension {ndim}")
    return a % ndim


def _points(ctx: Any, n: Any, name: str) -> Any:
    """A transform length: at least 1 point (numpy raises ``Invalid number of data points``)."""
    if is_static(n):
        if int(n) < 1:
            raise ValueError(f"{name}: invalid number of data points ({int(n)}) specified")
        return int(n)
    ctx.require(sympy.Ge(n, 1), f"{name}: the transform length {ctx.text(n)} must be at least 1 (numpy raises for 0)")
    return n


def _half_plus_one(ctx: Any, n: Any) -> Any:
    return int(n) // 2 + 1 if is_static(n) else ctx.canon(sympy.floor(n / 2) + 1)


def _default_irfft_points(ctx: Any, m: Any) -> Any:
    return 2 * (int(m) - 1) if is_static(m) else ctx.canon(2 * (m - 1))


def _one_axis(kind: str, name: str):
    def rule(ctx: Any, a: Any, n: Optional[Any] = None, axis: int = -1, norm: Any = None, out: Any = None) -> tuple:
        shape = list(shape_of(a))
        if not shape:
            raise ValueError(f"{name}: the input must have at least one axis")
        ax = _axis(axis, len(shape), name)
        m = shape[ax]
        if kind == "irfft":
            length = _points(ctx, n if n is not None else _default_irfft_points(ctx, m), name)
            shape[ax] = length
        else:
            length = _points(ctx, n if n is not None else m, name)
            shape[ax] = _half_plus_one(ctx, length) if kind == "rfft" else length
        return tuple(shape)
    return rule


def _many_axes(kind: str, name: str, default_axes: Optional[tuple]):
    def rule(ctx: Any, a: Any, s: Optional[Any] = None, axes: Optional[Any] = None, norm: Any = None,
             out: Any = None) -> tuple:
        shape = list(shape_of(a))
        ndim = len(shape)
        if axes is None:
            axes = default_axes if default_axes is not None else (
                tuple(range(ndim - len(s), ndim)) if s is not None else tuple(range(ndim)))
        axes = [_axis(ax, ndim, name) for ax in axes]
        if s is not None and len(s) != len(axes):
            raise ValueError(f"{name}: shape and axes have different lengths")
        for i, ax in enumerate(axes):
            last = i == len(axes) - 1
            given = s[i] if s is not None else None
            if kind == "irfft" and last:
                length = given if given is not None else _default_irfft_points(ctx, shape[ax])
                shape[ax] = _points(ctx, length, name)
                continue
            length = _points(ctx, given if given is not None else shape[ax], name)
            shape[ax] = _half_plus_one(ctx, length) if kind == "rfft" and last else length
        return tuple(shape)
    return rule


for _fn, _kind in ((np.fft.fft, "c"), (np.fft.ifft, "c"), (np.fft.rfft, "rfft"), (np.fft.irfft, "irfft"),
                   (np.fft.hfft, "irfft"), (np.fft.ihfft, "rfft")):
    register_op(f"numpy.fft.{_fn.__name__}", _fn, _one_axis(_kind, f"numpy.fft.{_fn.__name__}"),
                numpy_funcs=(_fn,))

for _fn, _kind, _axes in ((np.fft.fft2, "c", (-2, -1)), (np.fft.ifft2, "c", (-2, -1)),
                          (np.fft.rfft2, "rfft", (-2, -1)), (np.fft.irfft2, "irfft", (-2, -1)),
                          (np.fft.fftn, "c", None), (np.fft.ifftn, "c", None),
                          (np.fft.rfftn, "rfft", None), (np.fft.irfftn, "irfft", None)):
    register_op(f"numpy.fft.{_fn.__name__}", _fn, _many_axes(_kind, f"numpy.fft.{_fn.__name__}", _axes),
                numpy_funcs=(_fn,))


def _shift_rule(ctx: Any, x: Any, axes: Any = None) -> tuple:
    return tuple(shape_of(x))


def _freq_rule(kind: str, name: str):
    def rule(ctx: Any, n: Any, d: Any = 1.0, device: Any = None) -> tuple:
        if not (is_static(n) or (isinstance(n, sympy.Basic) and n.is_integer)):
            raise ValueError(f"{name}: n should be an integer, got {n!r}")
        if is_static(n):
            if int(n) < 1:  # numpy: ZeroDivisionError for 0, a negative dimension below it
                raise ValueError(f"{name}: n must be at least 1, got {int(n)}")
            length = int(n)
        else:
            ctx.require(sympy.Ge(n, 1), f"{name}: the length {ctx.text(n)} must be at least 1 (numpy divides by n * d)")
            length = n
        out = (_half_plus_one(ctx, length),) if kind == "rfft" else (length,)
        return tuple(ctx.broadcast(out, tuple(shape_of(d))))  # an array d broadcasts against the frequencies
    return rule


register_op("numpy.fft.fftfreq", np.fft.fftfreq, _freq_rule("c", "numpy.fft.fftfreq"),
            numpy_funcs=(np.fft.fftfreq,), doc="numpy.fft.fftfreq(n, d): n sample frequencies")
register_op("numpy.fft.rfftfreq", np.fft.rfftfreq, _freq_rule("rfft", "numpy.fft.rfftfreq"),
            numpy_funcs=(np.fft.rfftfreq,), doc="numpy.fft.rfftfreq(n, d): n // 2 + 1 sample frequencies")


# fftshift/ifftshift roll by n // 2 along each axis: numpy's own code computes that at run time
register_op("numpy.fft.fftshift", np.fft.fftshift, _shift_rule, numpy_funcs=(np.fft.fftshift,))
register_op("numpy.fft.ifftshift", np.fft.ifftshift, _shift_rule, numpy_funcs=(np.fft.ifftshift,))
