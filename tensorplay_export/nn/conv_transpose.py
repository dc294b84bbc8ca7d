"""Transposed convolution layers: ConvTranspose1d, ConvTranspose2d (see `F.conv_transpose2d`)."""

from __future__ import annotations

import math

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn import init
from tensorplay_export.nn.conv import _tuple, check_conv_args, conv_extra_repr
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["ConvTranspose1d", "ConvTranspose2d"]


class _ConvTransposeNd(Module):
    _dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        check_conv_args(in_channels, out_channels, groups, padding_mode)
        n = self._dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride = _tuple(kernel_size, n), _tuple(stride, n)
        self.padding, self.output_padding = _tuple(padding, n), _tuple(output_padding, n)
        self.dilation = _tuple(dilation, n)
        for o, s, d in zip(self.output_padding, self.stride, self.dilation):
            if not 0 <= o < max(s, d):
                raise ValueError(f"output_padding {self.output_padding} must be smaller than either stride "
                                 f"{self.stride} or dilation {self.dilation}")
        # torch's reset_parameters: kaiming_uniform(a=sqrt(5)) on a (C_in, C_out/g, *k) weight, whose
        # fan-in is weight.size(1) * prod(k); the bias uses the same bound.
        fan_in = (out_channels // groups) * math.prod(self.kernel_size)
        rng = init.get_rng(rng)
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(init.fan_in_uniform(shape, fan_in, rng, dtype))
        if bias:
            self.bias = Parameter(init.fan_in_uniform((out_channels,), fan_in, rng, dtype))
        else:
            self.register_parameter("bias", None)

    def _output_padding(self, x, output_size) -> tuple:
        """torch's ``_output_padding``: the output_padding that makes the output ``output_size``.

        ``output_size`` gives the last ``dims`` sizes (or the whole shape: batch and channels are
        dropped); each padding is ``output_size - default size`` and must lie in
        ``[0, max(stride, dilation))``.  Sizes of traced arrays make it a size expression and that
        requirement a guard (``0 <= h - 2*((h - 1) // 2) - 1 < 2`` for ``skip.shape`` of a stride-2
        down/up pair).

        Raises:
            ValueError: ``output_size`` of the wrong length, or a size no output_padding reaches.
        """
        if output_size is None:
            return self.output_padding
        n = self._dims
        sizes = list(output_size)
        if len(sizes) in (n + 1, n + 2):  # torch accepts (C, *spatial) and (N, C, *spatial)
            sizes = sizes[-n:]
        if len(sizes) != n:
            raise ValueError(f"{type(self).__name__}: output_size must have {n} or {n + 2} elements (got "
                             f"{len(output_size)})")
        spatial = x.shape[-n:]
        pads = []
        for i, (size, want) in enumerate(zip(spatial, sizes)):
            k, s, p, d = self.kernel_size[i], self.stride[i], self.padding[i], self.dilation[i]
            default = (size - 1) * s - 2 * p + d * (k - 1) + 1
            pad = want - default
            if not (0 <= pad and pad < max(s, d)):
                raise ValueError(f"{type(self).__name__}: requested an output size of {tuple(sizes)}, but valid "
                                 f"sizes along axis {i} range from {default} to {default + max(s, d) - 1} (for an "
                                 f"input of size {size})")
            pads.append(pad)
        return tuple(pads)

    def extra_repr(self) -> str:
        return conv_extra_repr(self, **({"output_padding": self.output_padding} if any(self.output_padding) else {}))


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution (torch's ``nn.ConvTranspose2d``).

    Shapes: (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out),
    ``H_out = (H - 1)*stride[0] - 2*padding[0] + dilation[0]*(kernel_size[0] - 1) + output_padding[0] + 1``.
    Parameters: weight (C_in, C_out/groups, kh, kw), bias (C_out,), both
    U(-1/sqrt(C_out/groups*kh*kw), +...) as torch.

    Raises:
        ValueError: channels not divisible by groups; output_padding not smaller than stride or dilation.
        ValueError (forward): an ``output_size`` no output_padding in ``[0, max(stride, dilation))``
            reaches (torch's rule).

    ``forward(x, output_size=skip.shape)`` (the U-Net idiom) picks the output_padding per axis that
    gives that size (a size expression of the traced sizes; the range it must lie in is a guard).
    """

    _dims = 2

    def forward(self, x, output_size=None):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                  self._output_padding(x, output_size), self.groups, self.dilation)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution (torch's ``nn.ConvTranspose1d``).

    Shapes: (N, C_in, L) or (C_in, L) -> (N, C_out, L_out),
    ``L_out = (L - 1)*stride - 2*padding + dilation*(kernel_size - 1) + output_padding + 1``.
    Parameters: weight (C_in, C_out/groups, k), bias (C_out,).  ``forward(x, output_size=...)`` as
    :class:`ConvTranspose2d`'s.
    """

    _dims = 1

    def forward(self, x, output_size=None):
        return F.conv_transpose1d(x, self.weight, self.bias, self.stride[0], self.padding[0],
                                  self._output_padding(x, output_size)[0], self.groups, self.dilation[0])
