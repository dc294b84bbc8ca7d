"""Sizes built through chains of halvings, slices and pads stay the size of one step.

A pooling pyramid (``t // 2 // 2 // ...``) is one floor (``floor(t/8)``), and a slice bound
that can never exceed the axis (``x[:, : n // 2 * 2]``) is the bound, not ``Min(n, ...)``:
the capture's canonical form folds floor towers and drops a Min/Max argument z3 proves
dominated at every size.  So a U-Net that pads each upsampled level to its skip keeps its
time axis dynamic over the whole declared range, instead of pinning it as a size
expression too large to reason about.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.shape_env import ShapeEnv
from tensorplay_export.capture.symbolic import flat_floors, size_ops
from solver import ShapeSolver


def _unet(levels):
    def f(x):
        skips = []
        for _ in range(levels):
            skips.append(x)
            x = x[:, : x.shape[1] // 2 * 2].reshape(x.shape[0], -1, 2).mean(-1)
        for s in reversed(skips):
            x = np.repeat(x, 2, axis=1)
            d = s.shape[1] - x.shape[1]
            x = np.pad(x, ((0, 0), (d // 2, d - d // 2))) + s
        return x
    return f


@pytest.mark.parametrize("levels", [5, 6])
def test_unet_pad_to_skip_keeps_the_axis_dynamic(levels):
    f = _unet(levels)
    x = np.random.default_rng(0).standard_normal((2, 97 + 64 * levels))
    lo = 2 ** levels
    ep = tpe.export(f, x, dynamic_shapes={"x": {1: Dim("t", min=lo, max=5000)}})
    (sym, vr), = ep.range_constraints.items()
    assert (int(vr.lower), int(vr.upper)) == (lo, 5000)
    for t in (lo, lo + 1, 777, 4999):
        y = np.random.default_rng(t).standard_normal((2, t))
        assert np.allclose(ep.module()(y), f(y))


def test_floor_towers_fold_to_one_floor():
    t = sympy.Symbol("t", integer=True, positive=True)
    m = sympy.Symbol("m", integer=True, nonnegative=True)
    tower = sympy.floor(sympy.floor(sympy.floor(t / 2) / 2) / 2)
    assert flat_floors(tower) == sympy.floor(t / 8)
    shifted = sympy.floor((sympy.floor(t / 3) + m + 1) / 2)
    assert flat_floors(shifted) == sympy.floor((t + 3 * m + 3) / 6)
    for tv in range(0, 60):
        for mv in range(0, 4):
            at = {t: tv, m: mv}
            assert flat_floors(shifted).subs(at) == shifted.subs(at)
    # a floor of a scaled floor is no tower: left as it is
    scaled = sympy.floor((2 * sympy.floor(t / 3) + 1) / 4)
    assert flat_floors(scaled) == scaled


def test_min_argument_dominated_at_every_size_is_dropped():
    env = ShapeEnv(ShapeSolver())
    t = env.create_symbol("t", 32, 5000, 97, "named")
    half = sympy.floor(t / 2)
    got = env.canon(sympy.Min(half, 2 * sympy.floor(half / 2), evaluate=False))
    assert got == 2 * sympy.floor(t / 4)
    # not dominated either way: both arguments stay
    kept = env.canon(sympy.Min(half, 40, evaluate=False))
    assert isinstance(kept, sympy.Min)
    assert size_ops(got) <= 3
