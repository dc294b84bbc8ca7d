"""Deterministic parameter initialization.

Layers draw their initial values from a generator: the one passed as ``rng=`` (a
``np.random.Generator`` or an int seed), else a module-wide generator that
`manual_seed` resets. Building the same model after the same ``manual_seed`` gives the
same parameters. Initial values are float32 unless a layer is given another dtype.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["manual_seed", "get_rng", "uniform", "normal", "fan_in_uniform"]

_GLOBAL = [np.random.default_rng(0)]


def manual_seed(seed: int) -> None:
    """Reset the module-wide generator that layers use when given no ``rng``."""
    _GLOBAL[0] = np.random.default_rng(seed)


def get_rng(rng: "np.random.Generator | int | None" = None) -> np.random.Generator:
    """``rng`` as a Generator: an int seeds a new one; None gives the module-wide one."""
    if rng is None:
        return _GLOBAL[0]
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)


def uniform(shape, low: float, high: float, rng=None, dtype=np.float32) -> np.ndarray:
    """U(low, high) samples of ``shape``, cast to ``dtype``."""
    return get_rng(rng).uniform(low, high, size=shape).astype(dtype)


def normal(shape, std: float = 1.0, rng=None, dtype=np.float32) -> np.ndarray:
    """N(0, std^2) samples of ``shape``, cast to ``dtype``."""
    return (get_rng(rng).standard_normal(shape) * std).astype(dtype)


def fan_in_uniform(shape, fan_in: int, rng=None, dtype=np.float32) -> np.ndarray:
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)): torch's default for Linear/Conv weights and biases."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return uniform(shape, -bound, bound, rng, dtype)
