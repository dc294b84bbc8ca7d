"""Transposed convolution as plain numpy over the existing ``conv2d`` composite.

A transposed convolution with stride ``s`` is a stride-1 convolution of the input with
``s - 1`` zeros inserted between neighbours, padded by ``d*(k-1) - p`` on each side (plus
``output_padding`` at the end), with the kernel flipped and its in/out axes swapped
(Dumoulin & Visin, "A guide to convolution arithmetic for deep learning", 2016, section 4).
When the kernel equals the stride (the usual 2x upsampling of U-Nets) the windows do
not overlap and the result is one einsum and a reshape, with no zero-filled copy.
"""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn._conv import _pair, conv2d

__all__ = ["conv_transpose1d", "conv_transpose2d"]


def _insert_zeros(x, stride: int, axis: int):
    """``stride - 1`` zeros between neighbours along ``axis``: size n -> (n - 1) * stride + 1."""
    if stride == 1:
        return x
    n = x.shape[axis]
    zeros_shape = list(x.shape)
    zeros_shape.insert(axis + 1, stride - 1)
    spread = np.concatenate([np.expand_dims(x, axis + 1), np.zeros(tuple(zeros_shape), x.dtype)], axis=axis + 1)
    merged = tuple(x.shape[:axis]) + (n * stride,) + tuple(x.shape[axis + 1:])
    index = [slice(None)] * x.ndim
    index[axis] = slice(0, (n - 1) * stride + 1)
    return spread.reshape(merged)[tuple(index)]


def _pad_or_crop(x, before: int, after: int, axis: int):
    """Pad ``axis`` with zeros (a positive amount) or crop it (a negative one), at each end."""
    widths = [(0, 0)] * x.ndim
    widths[axis] = (max(before, 0), max(after, 0))
    if before > 0 or after > 0:
        x = np.pad(x, widths)
    if before < 0 or after < 0:
        index = [slice(None)] * x.ndim
        index[axis] = slice(max(-before, 0), x.shape[axis] - max(-after, 0))
        x = x[tuple(index)]
    return x


def _size_pair(v, name: str) -> tuple:
    """``_pair`` keeping sizes as they are: an output_padding computed from traced sizes (a
    ``SymInt``) must not become a Python int (that would pin it)."""
    if isinstance(v, (tuple, list)):
        if len(v) != 2:
            raise ValueError(f"{name} must be an int or a pair, got {v!r}")
        return tuple(int(o) if isinstance(o, (int, np.integer)) else o for o in v)
    return _size_pair((v, v), name)


def _flipped_kernel(weight, groups: int):
    """(C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), spatially flipped: the conv2d kernel."""
    c_in, og, kh, kw = weight.shape
    w = weight.reshape(groups, c_in // groups, og, kh, kw).transpose(0, 2, 1, 3, 4)
    return w.reshape(groups * og, c_in // groups, kh, kw)[:, :, ::-1, ::-1]


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1):
    """2-D transposed convolution (torch's ``F.conv_transpose2d``, same argument order).

    Args:
        input: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_in, C_out // groups, kh, kw). bias: (C_out,) or None.
        stride, padding, output_padding, dilation: int or (h, w); ``output_padding`` must be
            smaller than the stride or the dilation (torch's rule).
        groups: C_in must be divisible by it.
    Returns:
        (N, C_out, H_out, W_out),
        ``H_out = (H - 1)*stride - 2*padding + dilation*(kh - 1) + output_padding + 1`` (W alike).
    Raises:
        ValueError: channel/group mismatch, or an output_padding that is too large.
    """
    unbatched = input.ndim == 3
    x = input[None] if unbatched else input
    if x.ndim != 4:
        raise ValueError(f"conv_transpose2d: expected a 3-D or 4-D input, got {input.ndim}-D")
    c_in, og, kh, kw = weight.shape
    if x.shape[1] != c_in or c_in % groups:
        raise ValueError(f"conv_transpose2d: input has {x.shape[1]} channels, weight {tuple(weight.shape)} "
                         f"with groups={groups} expects {c_in} (divisible by groups)")
    stride, padding = _pair(stride, "stride"), _pair(padding, "padding")
    out_pad, dilation = _size_pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    for op_, s, d in zip(out_pad, stride, dilation):
        if not 0 <= op_ < max(s, d):
            raise ValueError(f"conv_transpose2d: output_padding {output_padding} must be smaller than "
                             f"either stride {stride} or dilation {dilation}")
    c_out = og * groups
    no_out_pad = all(type(o) is int and o == 0 for o in out_pad)  # a size expression: the general path
    if (kh, kw) == stride and padding == (0, 0) and no_out_pad and dilation == (1, 1):
        out = _non_overlapping(x, weight, groups)
    else:
        for axis, (k, s, p, o, d) in enumerate(zip((kh, kw), stride, padding, out_pad, dilation)):
            x = _insert_zeros(x, s, 2 + axis)
            edge = d * (k - 1) - p
            if type(o) is int or edge < 0:
                x = _pad_or_crop(x, edge, edge + o, 2 + axis)
            else:  # output_padding from output_size, a size >= 0: zeros at the end, no branch on it
                x = _pad_or_crop(x, edge, edge, 2 + axis)
                widths = [(0, 0)] * x.ndim
                widths[2 + axis] = (0, o)
                x = np.pad(x, widths)
        out = conv2d(x, _flipped_kernel(weight, groups), None, 1, 0, dilation, groups)
    if bias is not None:
        out = out + bias.reshape(1, c_out, 1, 1)
    return out[0] if unbatched else out


def _non_overlapping(x, weight, groups: int):
    """kernel == stride, no padding: each input cell writes its own (kh, kw) block of the output."""
    n, c_in, h, w = x.shape
    _, og, kh, kw = weight.shape
    xg = x.reshape(n, groups, c_in // groups, h, w)
    wg = weight.reshape(groups, c_in // groups, og, kh, kw)
    y = np.einsum("ngchw,gcokl->ngohkwl", xg, wg)
    return y.reshape(n, groups * og, h * kh, w * kw)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups: int = 1,
                     dilation=1):
    """1-D transposed convolution (torch's ``F.conv_transpose1d``), as a 2-D one over a height-1 image.

    Args:
        input: (N, C_in, L) or (C_in, L). weight: (C_in, C_out // groups, k). bias: (C_out,) or None.
    Returns:
        (N, C_out, L_out), ``L_out = (L - 1)*stride - 2*padding + dilation*(k - 1) + output_padding + 1``.
    """
    unbatched = input.ndim == 2
    x = input[None] if unbatched else input
    one = lambda v: int(v[0] if isinstance(v, (tuple, list)) else v)  # noqa: E731
    pad = output_padding[0] if isinstance(output_padding, (tuple, list)) else output_padding
    out = conv_transpose2d(x[:, :, None, :], weight[:, :, None, :], bias, stride=(1, one(stride)),
                           padding=(0, one(padding)), output_padding=(0, pad), groups=groups,
                           dilation=(1, one(dilation)))[:, :, 0, :]
    return out[0] if unbatched else out
