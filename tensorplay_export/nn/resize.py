"""Upsampling and adaptive pooling layers: Upsample, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d.

None of them owns parameters; the arithmetic is in ``_resize.py`` (see `F.interpolate`,
`F.adaptive_avg_pool2d`).
"""

from __future__ import annotations

from tensorplay_export.nn import functional as F
from tensorplay_export.nn.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d"]


class Upsample(Module):
    """Resize the spatial axes (torch's ``nn.Upsample``; see `F.interpolate`).

    Shapes: (N, C, W) or (N, C, H, W) -> (N, C, *out), ``out = size`` or
    ``floor(in * scale_factor)`` per axis. Modes: "nearest"; "linear"/"bilinear" with
    ``align_corners`` False/None.

    Raises:
        ValueError: both or neither of ``size`` and ``scale_factor``.
        NotImplementedError: another mode, ``align_corners=True`` or ``recompute_scale_factor=True``.
    """

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None) -> None:
        super().__init__()
        if (size is None) == (scale_factor is None):
            raise ValueError("Upsample: give exactly one of size and scale_factor")
        if mode not in ("nearest", "linear", "bilinear"):
            raise NotImplementedError(f"Upsample: mode {mode!r} is not supported (nearest, linear, bilinear)")
        if align_corners or recompute_scale_factor:
            raise NotImplementedError("Upsample: align_corners=True and recompute_scale_factor=True "
                                      "are not supported")
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self) -> str:
        what = f"size={self.size}" if self.size is not None else f"scale_factor={self.scale_factor}"
        return f"{what}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")`` (torch's ``nn.UpsamplingNearest2d``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, "nearest")


class _AdaptivePool(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool):
    """Average over adaptive bins (torch's ``nn.AdaptiveAvgPool2d``; see `F.adaptive_avg_pool2d`).

    Shapes: (N, C, H, W) or (C, H, W) -> (N, C, out_h, out_w); ``output_size`` an int or a
    pair of ints/None (None keeps that size). H and W may be dynamic.
    """

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveMaxPool2d(_AdaptivePool):
    """Maximum over adaptive bins (torch's ``nn.AdaptiveMaxPool2d``); shapes as `AdaptiveAvgPool2d`.

    Raises:
        NotImplementedError: ``return_indices=True``.
    """

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        if return_indices:
            raise NotImplementedError("AdaptiveMaxPool2d: return_indices=True is not supported")
        self.return_indices = return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePool):
    """Average over adaptive bins of the last axis: (N, C, L) or (C, L) -> (N, C, output_size)."""

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """Maximum over adaptive bins of the last axis: (N, C, L) or (C, L) -> (N, C, output_size)."""

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size)
