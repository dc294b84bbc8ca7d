"""len() in model code keeps the first axis symbolic (CPython's own len() must return a Python
int, which would pin it); math functions without a symbolic form pin with their own name."""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn

SPEC = {"x": {0: tpe.Dim("n", min=2, max=64)}}


class _Trim(nn.Module):
    def forward(self, x):
        return x[: len(x) - 1] * len(x) + len([1, 2, 3])


def test_len_of_a_traced_array_stays_symbolic():
    ep = tpe.export(_Trim(), np.ones((6, 3), np.float32), dynamic_shapes=SPEC)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(2, 64)]
    for n in (2, 5, 64):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        np.testing.assert_array_equal(ep.module()(x), _Trim()(x))


def test_len_where_an_int_is_needed_still_pins():
    def model(x):
        return x * np.float32(sum([1] * len(x)))  # list * size needs a Python int

    with pytest.raises(tpe.ConstraintViolationError, match="specialized to 6"):
        tpe.export(model, np.ones((6, 3), np.float32), dynamic_shapes=SPEC)


def test_len_of_a_0d_array_raises_as_numpy_does():
    def model(x):
        return x * len(x.sum())

    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):  # the model's own error, as in eager
        tpe.export(model, np.ones((6, 3), np.float32), dynamic_shapes=SPEC)


@pytest.mark.parametrize("name", ["log", "log2", "exp"])
def test_math_of_a_size_pins_with_the_function_named(name):
    def model(x):
        return x * getattr(math, name)(x.shape[0])  # math.<name>(n) as model code spells it

    with pytest.raises(tpe.ConstraintViolationError, match=rf"math\.{name}\(\) of a size"):
        tpe.export(model, np.ones((6, 3), np.float32), dynamic_shapes=SPEC)
    ep = tpe.export(model, np.ones((6, 3), np.float32), dynamic_shapes={"x": {0: 6}})
    x = np.full((6, 3), 2.0, np.float32)
    np.testing.assert_array_equal(ep.module()(x), model(x))
