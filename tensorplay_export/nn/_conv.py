"""Convolution and pooling over numpy, by window gathering (im2col) with ``np.take``.

A window view is built with two integer-index gathers (rows, then columns), so every
step is an ordinary numpy op with a shape rule (``np.arange``, ``np.take``,
``reshape``, ``transpose``, ``np.matmul``) and sizes read from ``x.shape`` stay
symbolic during capture. The gathered array holds ``N*C*H_out*kh*W_out*kw`` elements.
"""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn._dispatch import composite

__all__ = ["conv1d", "conv2d", "max_pool2d", "avg_pool2d"]


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{name} must be an int or a pair, got {v!r}")
        return int(v[0]), int(v[1])
    return int(v), int(v)


def _windows(xp, kernel, stride, dilation):
    """Sliding windows of ``xp`` (N, C, Hp, Wp) -> (N, C, H_out, kh, W_out, kw)."""
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    for size, k, d in ((xp.shape[2], kh, dh), (xp.shape[3], kw, dw)):
        # torch refuses a window larger than the (padded) input; so does eager here, as the
        # shape rule does for a program (a traced size is the rule's to check: no branch)
        if type(size) is int and size < d * (k - 1) + 1:
            raise ValueError(f"the padded input size {size} is smaller than the window {d * (k - 1) + 1} "
                             "(kernel size can't be greater than the actual input size)")
    h_out = (xp.shape[2] - dh * (kh - 1) - 1) // sh + 1
    w_out = (xp.shape[3] - dw * (kw - 1) - 1) // sw + 1
    rows = np.arange(h_out)[:, None] * sh + np.arange(kh)[None, :] * dh  # (H_out, kh)
    cols = np.arange(w_out)[:, None] * sw + np.arange(kw)[None, :] * dw  # (W_out, kw)
    return np.take(np.take(xp, rows, axis=2), cols, axis=4)


def _same_padding(kernel, dilation) -> tuple[tuple[int, int], tuple[int, int]]:
    # Total padding d*(k-1) per axis, the odd element on the right (as torch).
    out = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        out.append((total // 2, total - total // 2))
    return out[0], out[1]


@composite("tpe.nn.conv2d")
def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """2-D cross-correlation (torch's conv2d).

    Args:
        x: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_out, C_in // groups, kh, kw). bias: (C_out,) or None.
        stride, dilation: int or (h, w). padding: int, (h, w), "valid" or "same" (stride 1 only).
        groups: C_in and C_out must both be divisible by it.
    Returns:
        (N, C_out, H_out, W_out) with ``H_out = (H + 2*pad_h - dil_h*(kh-1) - 1) // stride_h + 1``
        (unbatched in, unbatched out).
    Raises:
        ValueError: channel/group mismatch, "same" with stride > 1, or a bad padding string.
    """
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    c_out, c_per_group, kh, kw = weight.shape
    stride, dilation = _pair(stride, "stride"), _pair(dilation, "dilation")
    if x.shape[1] != c_per_group * groups or c_out % groups:
        raise ValueError(f"conv2d: input has {x.shape[1]} channels, weight {tuple(weight.shape)} "
                         f"with groups={groups} expects {c_per_group * groups}")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0), (0, 0))
        elif padding == "same":
            if stride != (1, 1):
                raise ValueError("conv2d: padding='same' is not supported for strided convolutions")
            pads = _same_padding((kh, kw), dilation)
        else:
            raise ValueError(f"conv2d: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    else:
        ph, pw = _pair(padding, "padding")
        pads = ((ph, ph), (pw, pw))
    if any(pads[0] + pads[1]):
        x = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    win = _windows(x, (kh, kw), stride, dilation)  # (N, C, Ho, kh, Wo, kw)
    n, _, h_out, _, w_out, _ = win.shape
    og = c_out // groups
    k = c_per_group * kh * kw
    cols = win.reshape(n, groups, c_per_group, h_out, kh, w_out, kw)
    cols = cols.transpose(0, 1, 3, 5, 2, 4, 6).reshape(n, groups, h_out, w_out, k)
    w = weight.reshape(groups, og, k).transpose(0, 2, 1)[:, None]  # (g, 1, K, og)
    out = np.matmul(cols, w)  # (N, g, Ho, Wo, og)
    out = out.transpose(0, 1, 4, 2, 3).reshape(n, c_out, h_out, w_out)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out[0] if unbatched else out


@composite("tpe.nn.conv1d")
def conv1d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups: int = 1):
    """1-D cross-correlation (torch's conv1d), computed as a conv2d over a height-1 image.

    Args:
        x: (N, C_in, L) or unbatched (C_in, L). weight: (C_out, C_in // groups, k). bias: (C_out,) or None.
        stride, dilation: int. padding: int, "valid" or "same".
    Returns:
        (N, C_out, L_out), ``L_out = (L + 2*padding - dilation*(k-1) - 1) // stride + 1``.
    """
    unbatched = x.ndim == 2
    if unbatched:
        x = x[None]
    if isinstance(padding, str):
        pad2 = padding
    else:
        pad2 = (0, int(padding[0] if isinstance(padding, (tuple, list)) else padding))
    one = lambda v: int(v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
    out = conv2d(x[:, :, None, :], weight[:, :, None, :], bias, stride=(1, one(stride)),
                 padding=pad2, dilation=(1, one(dilation)), groups=groups)[:, :, 0, :]
    return out[0] if unbatched else out


def _pool_setup(x, kernel_size, stride, padding, dilation, ceil_mode):
    """Normalize pooling arguments; returns kernel, stride, dilation, ((top, bottom), (left, right))."""
    kernel = _pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (tuple, list)) and not stride) \
        else _pair(stride, "stride")
    pad = _pair(padding, "padding")
    dilation = _pair(dilation, "dilation")
    for p, k in zip(pad, kernel):
        if p > k // 2:
            raise ValueError(f"pad should be at most half of effective kernel size, got pad={p}, kernel={k}")
    pads = []
    for axis, (k, s, p, d) in enumerate(zip(kernel, stride, pad, dilation)):
        extra = ceil_mode_size(x.shape[2 + axis], k, s, p, d)[1] if ceil_mode else 0
        pads.append((p, p + extra))
    return kernel, stride, dilation, tuple(pads)


def ceil_mode_size(size, k: int, s: int, p: int, d: int):
    """(output size, extra right padding) of a ceil_mode pooling axis, without branching on ``size``.

    torch's rule: ``out = ceil((size + 2p - d(k-1) - 1) / s) + 1``, minus one when the
    last window would start at or beyond ``size + p`` (inside the right padding).  The
    last-window offset ``t = (out - 1)*s - (size + p)`` lies in ``[lo, lo + s - 1]`` with
    ``lo = p - d(k-1) - 1`` (static), so "t >= 0" is the integer ``(t + B) // B`` for any
    ``B > max(-lo, lo + s - 1)``, and it is statically 0 when ``lo + s - 1 < 0`` (stride not
    larger than the window, the common case).  The extra padding the windows read past
    ``size + 2p`` is ``(-span) % s`` when no window is dropped and 0 when one is.  So the
    composite's body and its decomposition need no guard the shape rule does not state.
    Works on ints, symbolic sizes and sympy expressions alike (``//`` and ``%`` only).
    """
    span = size + 2 * p - d * (k - 1) - 1
    out = -(-span // s) + 1
    lo = p - d * (k - 1) - 1
    if lo + s - 1 < 0:
        return out, (-span) % s
    big = s + abs(lo) + 1
    drop = ((out - 1) * s - (size + p) + big) // big
    return out - drop, (1 - drop) * ((-span) % s)


@composite("tpe.nn.max_pool2d")
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """Maximum over sliding windows; padding never wins (it is -inf).

    Args:
        x: (N, C, H, W) or unbatched (C, H, W). kernel_size, stride (default kernel_size),
        padding (at most half the kernel), dilation: int or (h, w). ceil_mode: keep partial windows.
    Returns:
        (N, C, H_out, W_out), same dtype.
    Raises:
        NotImplementedError: ``return_indices=True``.
    """
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    kernel, stride, dilation, pads = _pool_setup(x, kernel_size, stride, padding, dilation, ceil_mode)
    if ceil_mode or any(pads[0] + pads[1]):  # ceil_mode pads by a computed (maybe zero) amount
        fill = -np.inf if np.issubdtype(x.dtype, np.floating) else np.iinfo(x.dtype).min
        x = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]), constant_values=fill)
    out = np.max(_windows(x, kernel, stride, dilation), axis=(3, 5))
    return out[0] if unbatched else out


@composite("tpe.nn.avg_pool2d")
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None):
    """Mean over sliding windows.

    Args:
        x: (N, C, H, W) or unbatched (C, H, W). kernel_size, stride (default kernel_size), padding.
        ceil_mode: keep partial windows at the end (the part beyond the padding is never counted).
        count_include_pad: count zero padding in the divisor.
        divisor_override: divide every window sum by this instead.
    Returns:
        (N, C, H_out, W_out), same dtype.
    """
    unbatched = x.ndim == 3
    if unbatched:
        x = x[None]
    kernel, stride, dilation, pads = _pool_setup(x, kernel_size, stride, padding, 1, ceil_mode)
    h, w = x.shape[2], x.shape[3]
    if ceil_mode or any(pads[0] + pads[1]):  # ceil_mode pads by a computed (maybe zero) amount
        x = np.pad(x, ((0, 0), (0, 0), pads[0], pads[1]))
    sums = np.sum(_windows(x, kernel, stride, dilation), axis=(3, 5))
    if divisor_override is not None:
        return _unbatch(sums / float(divisor_override), unbatched)
    # With ceil_mode the extra right padding may be nonzero (it is never counted); the
    # counting path below is exact for zero extra too, so no branch on the sizes is needed.
    if count_include_pad and not ceil_mode:
        return _unbatch(sums / float(kernel[0] * kernel[1]), unbatched)
    # Count the cells each window covers: the input, plus the padding when it counts,
    # never the extra cells ceil_mode added on the right.
    (pt, _), (pl, _) = pads
    if count_include_pad:
        region = np.ones((h + 2 * pt, w + 2 * pl), dtype=x.dtype)
        inner = ((0, pads[0][1] - pt), (0, pads[1][1] - pl))
    else:
        region = np.ones((h, w), dtype=x.dtype)
        inner = pads
    mask = np.pad(region, inner)[None, None]
    counts = np.sum(_windows(mask, kernel, stride, dilation), axis=(3, 5))
    return _unbatch(sums / counts, unbatched)


def _unbatch(out, unbatched: bool):
    return out[0] if unbatched else out
