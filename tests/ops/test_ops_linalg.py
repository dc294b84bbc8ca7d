"""Contractions with dynamic sizes: matmul/@, dot, einsum, tensordot, inner, outer."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("b", max=16), 1: Dim("n", max=64)}}
W = randn(4, 5, seed=2)


def two(n):
    return (randn(max(n // 2, 1), n, 4),)


def test_matmul_dot_einsum_tensordot():
    check(lambda x: (x @ W, np.matmul(x, x.swapaxes(-1, -2)), x[0].dot(W), np.einsum("bnk,km->bmn", x, W),
                     np.tensordot(x, W, axes=([2], [0])), np.inner(x[0], x[0]), np.outer(x[0, :, 0], W[0])),
          two, SPEC, ops=["numpy.matmul", "numpy.dot", "numpy.einsum", "numpy.tensordot", "numpy.inner",
                          "numpy.outer"])


def test_dynamic_inner_dim_is_pinned():
    with pytest.raises(tpe.ConstraintViolationError, match="k = 4"):
        tpe.export(lambda x: x @ W, randn(3, 4), dynamic_shapes={"x": {1: Dim("k", max=64)}})
