"""Convolution, batch normalization and pooling layers."""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn import init
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["Conv1d", "Conv2d", "BatchNorm1d", "BatchNorm2d", "MaxPool2d", "AvgPool2d"]


def _tuple(v, n: int) -> tuple[int, ...]:
    return tuple(int(a) for a in v) if isinstance(v, (tuple, list)) else (int(v),) * n


class _ConvNd(Module):
    _dims = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", *, rng=None,
                 dtype=np.float32) -> None:
        super().__init__()
        check_conv_args(in_channels, out_channels, groups, padding_mode)
        n = self._dims
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _tuple(kernel_size, n)
        self.stride, self.dilation = _tuple(stride, n), _tuple(dilation, n)
        self.padding = padding if isinstance(padding, str) else _tuple(padding, n)
        if isinstance(padding, str) and padding not in ("valid", "same"):
            raise ValueError(f"padding must be 'valid', 'same', an int or a tuple, got {padding!r}")
        rng = init.get_rng(rng)
        fan_in = (in_channels // groups) * int(np.prod(self.kernel_size))
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(init.fan_in_uniform(shape, fan_in, rng, dtype))
        if bias:
            self.bias = Parameter(init.fan_in_uniform((out_channels,), fan_in, rng, dtype))
        else:
            self.register_parameter("bias", None)

    def extra_repr(self) -> str:
        return conv_extra_repr(self)


class Conv1d(_ConvNd):
    """1-D convolution (cross-correlation).

    Shapes: (N, C_in, L) or (C_in, L) -> (N, C_out, L_out) or (C_out, L_out),
    ``L_out = (L + 2*padding - dilation*(kernel_size-1) - 1) // stride + 1``.
    Parameters: weight (C_out, C_in/groups, kernel_size), bias (C_out,).
    """

    _dims = 1

    def forward(self, x):
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(x, self.weight, self.bias, self.stride[0], padding, self.dilation[0], self.groups)


class Conv2d(_ConvNd):
    """2-D convolution (cross-correlation).

    Shapes: (N, C_in, H, W) or (C_in, H, W) -> (N, C_out, H_out, W_out),
    ``H_out = (H + 2*padding[0] - dilation[0]*(kernel_size[0]-1) - 1) // stride[0] + 1`` (W alike).
    Parameters: weight (C_out, C_in/groups, kh, kw), bias (C_out,).
    """

    _dims = 2

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class _BatchNorm(Module):
    _ndims: tuple[int, ...] = ()

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, *, dtype=np.float32) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(np.ones(num_features, dtype))
            self.bias = Parameter(np.zeros(num_features, dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", np.zeros(num_features, dtype))
            self.register_buffer("running_var", np.ones(num_features, dtype))
            self.register_buffer("num_batches_tracked", np.zeros((), np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, x):
        if x.ndim not in self._ndims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{n}D' for n in self._ndims)} "
                             f"input, got {x.ndim}D")
        use_batch_stats = self.training or not self.track_running_stats
        if not use_batch_stats:
            return F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0, self.eps)
        mean, var, var_unbiased = F.batch_stats(x)
        if self.training and self.track_running_stats:
            # Buffer assignment (not in-place writes), so capture sees the update as an output.
            self.num_batches_tracked = self.num_batches_tracked + 1
            if self.momentum is None:  # cumulative moving average
                factor = 1.0 / self.num_batches_tracked
            else:
                factor = float(self.momentum)
            self.running_mean = ((1.0 - factor) * self.running_mean + factor * mean).astype(self.running_mean.dtype)
            self.running_var = ((1.0 - factor) * self.running_var + factor * var_unbiased).astype(
                self.running_var.dtype)
        return F.batch_norm(x, mean, var, self.weight, self.bias, False, 0.0, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch normalization per channel.

    Shapes: (N, C) or (N, C, L) -> same. Parameters weight/bias (C,); buffers running_mean,
    running_var (C,), num_batches_tracked (). Training mode normalizes with batch statistics
    and updates the running ones; eval mode uses the running ones.
    """

    _ndims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization per channel of images.

    Shapes: (N, C, H, W) -> same. State and modes as `BatchNorm1d`.
    """

    _ndims = (4,)


class MaxPool2d(Module):
    """Max over sliding windows.

    Shapes: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out),
    ``H_out = (H + 2*padding - dilation*(kernel-1) - 1) // stride + 1`` (rounded up with ``ceil_mode``).
    """

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices: bool = False,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        if return_indices:
            raise NotImplementedError("MaxPool2d: return_indices=True is not supported")
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Mean over sliding windows.

    Shapes: (N, C, H, W) or (C, H, W) -> (N, C, H_out, W_out),
    ``H_out = (H + 2*padding - kernel) // stride + 1`` (rounded up with ``ceil_mode``).
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride if stride is not None else kernel_size, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def check_conv_args(in_channels: int, out_channels: int, groups: int, padding_mode: str) -> None:
    """Raises ValueError: channels not divisible by ``groups``; NotImplementedError: a
    ``padding_mode`` other than ``"zeros"`` (torch's others are not implemented here)."""
    if in_channels % groups or out_channels % groups:
        raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) "
                         f"must be divisible by groups ({groups})")
    if padding_mode != "zeros":
        raise NotImplementedError(f"padding_mode={padding_mode!r} (only 'zeros' is supported)")


def conv_extra_repr(m: Module, **extra: str) -> str:
    """torch's repr of a conv module's settings (``extra``: more ``key=value`` after padding,
    e.g. a transposed conv's ``output_padding``)."""
    s = (f"{m.in_channels}, {m.out_channels}, kernel_size={m.kernel_size}, "
         f"stride={m.stride}, padding={m.padding}")
    s += "".join(f", {k}={v}" for k, v in extra.items())
    if m.dilation != (1,) * m._dims:
        s += f", dilation={m.dilation}"
    if m.groups != 1:
        s += f", groups={m.groups}"
    if m.bias is None:
        s += ", bias=False"
    return s
