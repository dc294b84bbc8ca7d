"""Group normalization as plain numpy (``reshape``, ``np.mean``, elementwise ops)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["group_norm"]


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalize each group of ``C // num_groups`` channels over its channels and spatial axes.

    torch's ``F.group_norm`` (Wu & He, "Group Normalization", 2018): per sample and group,
    ``(x - mean) / sqrt(var + eps)`` with the biased variance, then per channel
    ``* weight + bias``.

    Args:
        input: (N, C, *) with at least 2 axes. weight, bias: (C,) or None.
    Returns:
        same shape and dtype as ``input``.
    Raises:
        ValueError: ``C`` not divisible by ``num_groups``, or fewer than 2 axes.
    """
    if input.ndim < 2:
        raise ValueError(f"group_norm: expected an input of at least 2 axes (N, C, ...), got {input.ndim}-D")
    n, c = input.shape[0], input.shape[1]
    if not isinstance(num_groups, (int, np.integer)) or num_groups < 1 or c % num_groups:
        raise ValueError(f"group_norm: the {c} channels must be divisible by num_groups ({num_groups})")
    spatial = tuple(input.shape[2:])
    # The group's size is a product of sizes (symbolic during capture), not -1.
    per_group = (c // num_groups) * math.prod(spatial)
    g = input.reshape(n, num_groups, per_group)
    centered = g - np.mean(g, axis=-1, keepdims=True)
    var = np.mean(centered * centered, axis=-1, keepdims=True)
    y = (centered / np.sqrt(var + float(eps))).reshape(tuple(input.shape))
    affine = (1, c) + (1,) * len(spatial)
    if weight is not None:
        y = y * weight.reshape(affine)
    if bias is not None:
        y = y + bias.reshape(affine)
    return y
