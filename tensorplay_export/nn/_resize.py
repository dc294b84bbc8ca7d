"""Resizing and adaptive pooling as plain numpy: ``interpolate``, ``adaptive_avg_pool2d``, ``adaptive_max_pool2d``.

Every step is an ordinary numpy op that already has a shape rule (``np.arange``,
``np.take``, slicing, ``np.mean``/``np.max``, ``np.stack``), so capture records them
as they are and sizes read from ``x.shape`` stay symbolic. Index arithmetic follows
torch's CPU kernels (``UpSample.h``, ``AdaptivePooling.h``), cited at each function.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["interpolate", "adaptive_avg_pool2d", "adaptive_max_pool2d", "adaptive_avg_pool1d",
           "adaptive_max_pool1d"]

_MODES = ("nearest", "bilinear", "linear")


def _n_tuple(v, n: int, name: str) -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{name} must have {n} entries for a {n}-D resize, got {v!r}")
        return tuple(v)
    return (v,) * n


def _is_int(v) -> bool:
    """A Python/numpy int (not a bool)."""
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_size(v) -> bool:
    """An int, or a symbolic size (``x.shape[2]`` during a capture: an integer with ``__index__``
    whose class this layer does not import; floats and bools have no ``__index__`` or are refused)."""
    return _is_int(v) or (hasattr(type(v), "__index__") and not isinstance(v, (bool, np.bool_, float, np.floating))
                          and not isinstance(v, np.ndarray))


def _positive_size(s, given, op: str, what: str):
    """``s`` as an output size: an int stays an int, a symbolic size stays symbolic.

    Positivity is a requirement, not a type check: ``s < 1`` of a symbolic size is a guard
    (``s >= 1``) recorded at the user's call, so a spec that lets the size reach 0 gets a fix.

    Raises:
        ValueError: ``s`` is not an integer size, or is below 1 (for the example).
    """
    if not _is_size(s):
        raise ValueError(f"{op}: {what} entries must be positive ints (or sizes read from a shape), got {given!r}")
    if s < 1:
        raise ValueError(f"{op}: {what} entries must be positive ints, got {given!r}")
    return int(s) if _is_int(s) else s


def _resize_plan(x, size, scale_factor, spatial: int):
    """Per spatial axis: (output size, scale factor or None); torch's ``interpolate`` argument rules."""
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    in_sizes = tuple(x.shape[2:])
    if size is not None:
        sizes = tuple(_positive_size(s, size, "interpolate", "size") for s in _n_tuple(size, spatial, "size"))
        return sizes, (None,) * spatial
    factors = tuple(float(f) for f in _n_tuple(scale_factor, spatial, "scale_factor"))
    for f in factors:
        if not f > 0:
            raise ValueError(f"interpolate: scale_factor entries must be positive, got {scale_factor!r}")
    # torch: out = floor(in * scale), kept exact for integral scales (the common 2x).
    outs = tuple(n * int(f) if f == int(f) else math.floor(n * f) for n, f in zip(in_sizes, factors))
    return outs, factors


def _src_scale(n_in, n_out, factor):
    """The source step torch uses: ``1/scale_factor`` when one was given, else ``in/out``."""
    return 1.0 / factor if factor is not None else n_in / n_out


def _nearest_index(n_in, n_out, factor):
    """Source rows of nearest resizing: ``min(floor(dst * scale), in - 1)``, as torch's ``nearest_idx``.

    torch's kernel works in float32: ``scale = float(1/scale_factor)``, or ``float(in) / out``
    for an explicit size, and ``floorf(dst * scale)``. The same float32 steps are taken
    here, so indices agree with torch also where float rounding lands just below an
    integer (``in=2, out=82, dst=41`` gives 0, not the exact rational's 1). With an explicit
    size the scale is a 0-d array made from ``in`` at run time (``np.array`` of a size), so
    it stays exact for a symbolic ``in``. Its special cases (out == in, out == 2*in) give the
    same indices as the formula, so they need no branch on the size.
    """
    if factor is None:
        # both float32 0-d arrays (np.array of a size is made at run time, so a symbolic size stays so)
        out32 = np.float32(n_out) if _is_int(n_out) else np.array(n_out).astype(np.float32)
        scale = np.array(n_in).astype(np.float32) / out32
    else:
        scale = np.float32(1.0 / factor)
    src = np.floor(np.arange(n_out).astype(np.float32) * scale).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _linear_weights(n_in, n_out, factor, dtype):
    """(i0, i1, w1) of linear resizing with ``align_corners=False`` along one axis.

    torch's ``area_pixel_compute_source_index``: ``src = scale * (dst + 0.5) - 0.5``, clamped
    at 0; ``i0 = floor(src)``, ``i1 = min(i0 + 1, in - 1)``, ``w1 = src - i0``.
    """
    scale = _src_scale(n_in, n_out, factor)
    src = np.maximum((np.arange(n_out) + 0.5) * scale - 0.5, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    w1 = (src - i0).astype(dtype)
    return i0, i1, w1


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False):
    """Resize the trailing spatial axes of ``input`` (torch's ``F.interpolate``).

    Args:
        input: (N, C, W) or (N, C, H, W).
        size: output spatial size(s): ints, or sizes read from a shape (``skip.shape[2:]``),
            which stay symbolic in a capture (the output size is that expression; ``size >= 1``
            is a requirement). scale_factor: float(s); the output is ``floor(in * scale_factor)``
            (symbolic when ``in`` is).
        mode: "nearest", or "linear" (3-D input) / "bilinear" (4-D input) with ``align_corners``
            False or None (torch's default, half-pixel centres).
    Returns:
        (N, C, *out_sizes), the dtype of ``input``.
    Raises:
        ValueError: both or neither of size/scale_factor, a bad size, or a mode that does not
            fit the input's rank.
        NotImplementedError: align_corners=True, recompute_scale_factor=True, antialias, or
            another mode (bicubic, area, nearest-exact).
    """
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (use one of {_MODES})")
    if align_corners:
        raise NotImplementedError("interpolate: align_corners=True is not supported")
    if recompute_scale_factor or antialias:
        raise NotImplementedError("interpolate: recompute_scale_factor and antialias are not supported")
    if input.ndim not in (3, 4):
        raise ValueError(f"interpolate: expected a 3-D (N, C, W) or 4-D (N, C, H, W) input, got {input.ndim}-D")
    spatial = input.ndim - 2
    if mode in ("linear", "bilinear") and {"linear": 1, "bilinear": 2}[mode] != spatial:
        raise ValueError(f"interpolate: mode {mode!r} needs a {3 if mode == 'linear' else 4}-D input, "
                         f"got {input.ndim}-D")
    outs, factors = _resize_plan(input, size, scale_factor, spatial)
    x = input
    for k in range(spatial):
        axis = 2 + k
        n_in = input.shape[axis]
        if mode == "nearest":
            x = np.take(x, _nearest_index(n_in, outs[k], factors[k]), axis=axis)
            continue
        i0, i1, w1 = _linear_weights(n_in, outs[k], factors[k], input.dtype)
        w1 = w1.reshape((-1,) + (1,) * (input.ndim - 1 - axis))
        lo, hi = np.take(x, i0, axis=axis), np.take(x, i1, axis=axis)
        x = lo + (hi - lo) * w1
    return x


def _adaptive_bounds(n_in, n_out: int):
    """torch's adaptive windows: bin ``i`` covers ``[floor(i*in/out), ceil((i+1)*in/out))``."""
    return [((i * n_in) // n_out, -((-(i + 1) * n_in) // n_out)) for i in range(n_out)]


def _adaptive_sizes(x, output_size, spatial: int, op: str) -> tuple:
    """Static output sizes (None kept). The bins are a Python loop over the output size, so a
    symbolic size (``y.shape[2:]`` in a capture) is pinned to its example value by ``int()``: the
    specialization is reported at the model's pooling call."""
    sizes = _n_tuple(output_size, spatial, "output_size")
    out = []
    for k, s in enumerate(sizes):
        if s is None:  # torch: None keeps the input size (then each bin is one cell)
            out.append(None)
            continue
        if not _is_size(s) or s < 1:
            raise ValueError(f"{op}: output_size entries must be positive ints or None, got {output_size!r}")
        out.append(int(s))
    return tuple(out)


def _adaptive_pool(x, output_size, reduce, op: str):
    """Pool each bin of the last two (or one) axes with ``reduce(block, axes)``; a static loop over bins."""
    spatial = 2 if op.endswith("2d") else 1
    want = spatial + 2
    unbatched = x.ndim == want - 1
    if unbatched:
        x = x[None]
    if x.ndim != want:
        raise ValueError(f"{op}: expected a {want - 1}-D or {want}-D input, got {x.ndim}-D")
    sizes = _adaptive_sizes(x, output_size, spatial, op)
    axes = tuple(range(2, 2 + spatial))
    # A None entry keeps that axis: pooling over bins of one cell is the identity there.
    pool_axes = tuple(a for a, s in zip(axes, sizes) if s is not None)
    if all(s == 1 for s in sizes if s is not None):
        out = reduce(x, pool_axes) if pool_axes else x
        out = np.expand_dims(out, pool_axes) if pool_axes else out
        return out[0] if unbatched else out
    bounds = [_adaptive_bounds(x.shape[a], s) if s is not None else [None] for a, s in zip(axes, sizes)]

    def cell(block_bounds):
        index = [slice(None), slice(None)]
        for b in block_bounds:
            index.append(slice(None) if b is None else slice(b[0], b[1]))
        return reduce(x[tuple(index)], pool_axes)

    if spatial == 1:
        out = np.stack([cell((b,)) for b in bounds[0]], axis=-1)
    elif sizes[1] is None:
        out = np.stack([cell((b, None)) for b in bounds[0]], axis=-2)
    elif sizes[0] is None:
        out = np.stack([cell((None, b)) for b in bounds[1]], axis=-1)
    else:
        rows = [np.stack([cell((r, c)) for c in bounds[1]], axis=-1) for r in bounds[0]]
        out = np.stack(rows, axis=-2)
    return out[0] if unbatched else out


def _mean(block, axes):
    return np.mean(block, axis=axes)


def _max(block, axes):
    return np.max(block, axis=axes)


def adaptive_avg_pool2d(input, output_size):
    """Average over torch's adaptive bins (torch's ``F.adaptive_avg_pool2d``).

    Bin ``i`` of an axis of size ``in`` covers ``[floor(i*in/out), ceil((i+1)*in/out))``; with a
    symbolic ``in`` these are symbolic slice bounds over a static loop of ``out_h * out_w`` cells
    (``output_size=1``, the usual classifier head, is one mean).

    Args:
        input: (N, C, H, W) or (C, H, W). output_size: int, or a pair of ints / None (None keeps the size);
            a symbolic size (read from a shape) is pinned to its example value, the bins being a static loop.
    Returns:
        (N, C, out_h, out_w) (unbatched in, unbatched out), the dtype of ``input``.
    Raises:
        ValueError: a wrong rank or a non-positive output size.
    """
    return _adaptive_pool(input, output_size, _mean, "adaptive_avg_pool2d")


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    """Maximum over torch's adaptive bins (see `adaptive_avg_pool2d`); torch's ``F.adaptive_max_pool2d``.

    Raises:
        NotImplementedError: ``return_indices=True``.
        ValueError: as `adaptive_avg_pool2d`.
    """
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d: return_indices=True is not supported")
    return _adaptive_pool(input, output_size, _max, "adaptive_max_pool2d")


def adaptive_avg_pool1d(input, output_size):
    """Average over adaptive bins of the last axis: (N, C, L) or (C, L) -> (N, C, output_size)."""
    return _adaptive_pool(input, output_size, _mean, "adaptive_avg_pool1d")


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    """Maximum over adaptive bins of the last axis: (N, C, L) or (C, L) -> (N, C, output_size)."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool1d: return_indices=True is not supported")
    return _adaptive_pool(input, output_size, _max, "adaptive_max_pool1d")
