"""``a.shape = (...)``, numpy's in-place reshape, during capture (TracedArray.shape's setter)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def flat_pairs(x):
    a = x * 2
    a.shape = (-1, 2)
    return a.sum(1) + a.shape[0]


def test_a_fresh_array_takes_its_new_shape_at_every_size():
    ep = tpe.export(flat_pairs, np.arange(12.0).reshape(3, 4), dynamic_shapes={"x": {0: Dim("n", max=32)}})
    for n in (1, 2, 5, 32):
        x = np.arange(n * 4.0).reshape(n, 4)
        np.testing.assert_array_equal(ep.module()(x), flat_pairs(x))


def test_the_shape_of_an_input_is_not_changed_in_place():
    def model(x):
        x.shape = (-1,)
        return x

    with pytest.raises(tpe.UnsupportedOpError, match=r"input, parameter or constant.*a = a.reshape"):
        tpe.export(model, np.ones((2, 3)))


def test_a_view_keeps_its_shape():
    def model(x):
        a = x * 1
        v = a[:, :2]
        v.shape = (-1,)
        return v

    with pytest.raises(tpe.UnsupportedOpError, match="shares memory"):
        tpe.export(model, np.ones((2, 3)))


def test_an_array_a_view_was_taken_of_keeps_its_shape():
    def model(x):
        a = x * 1
        row = a[0]
        a.shape = (-1,)
        return a, row

    with pytest.raises(tpe.UnsupportedOpError, match="shares memory"):
        tpe.export(model, np.ones((2, 3)))


def test_the_shape_can_be_set_twice():
    def model(x):
        y = x * 1
        y.shape = (-1,)
        y.shape = (4, -1)
        return y

    ep = tpe.export(model, np.ones((2, 4)), dynamic_shapes={"x": {0: Dim("n", max=16)}})
    for n in (1, 2, 6):
        x = np.arange(n * 4.0).reshape(n, 4)
        np.testing.assert_array_equal(ep.module()(x), model(x))
