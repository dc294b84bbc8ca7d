"""Group normalization layer (torch's ``nn.GroupNorm``)."""

from __future__ import annotations

import numpy as np

from tensorplay_export.nn import functional as F
from tensorplay_export.nn.module import Module, Parameter

__all__ = ["GroupNorm"]


class GroupNorm(Module):
    """Normalize groups of ``num_channels // num_groups`` channels (see `F.group_norm`).

    Shapes: (N, C, *) -> same. Parameters (``affine``): weight (C,) ones, bias (C,) zeros.

    Raises:
        ValueError: ``num_channels`` not divisible by ``num_groups``.
    """

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, *,
                 dtype=np.float32) -> None:
        super().__init__()
        if num_groups < 1 or num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        if affine:
            self.weight = Parameter(np.ones(num_channels, dtype))
            self.bias = Parameter(np.zeros(num_channels, dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)

    def forward(self, x):
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected an input (N, {self.num_channels}, *), got shape {tuple(x.shape)}")
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
