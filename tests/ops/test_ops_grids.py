"""meshgrid (xy / ij, dense / sparse), kron, unravel_index and broadcast_arrays on dynamic sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

N0 = Dim("n", min=0, max=64)


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(indexing, sparse):
    def f(x, y):
        gx, gy = np.meshgrid(x, y, indexing=indexing, sparse=sparse)
        gz = np.meshgrid(x, y[:2], x[:1], indexing=indexing, sparse=sparse)
        return gx, gy, gz[2], gx * gy, np.meshgrid(x)[0]

    def make(n):
        return randn(n), randn(n + 2, seed=1).astype(np.float64)

    check(f, make, {"x": {0: N0}, "y": {0: Dim("m", max=66)}}, sizes=(0, 1, 2, 7), ops=["numpy.meshgrid"])


def test_meshgrid_of_aranges_keeps_value_ranges_out_of_the_graph_shapes():
    def f(img):
        h, w = img.shape
        yy, xx = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
        return img * (yy + xx)

    check(f, lambda n: (randn(n, n + 1),), {"img": {0: Dim("h", max=32), 1: Dim("w", max=33)}}, sizes=(1, 2, 5))


def test_kron():
    def f(a, b):
        return np.kron(a, b), np.kron(a[:, 0], b), np.kron(a, b[:1].ravel()), np.kron(2, a), np.kron(a, np.eye(2))

    def make(n):
        return randn(n, 2), np.arange(3 * n, dtype=np.int32).reshape(n, 3)

    check(f, make, {"a": {0: N0}, "b": {0: N0}}, sizes=(0, 1, 2, 5), ops=["numpy.kron"])


def test_unravel_index():
    def f(x):
        flat = np.argmax(x.reshape(-1))              # in [0, n*4 - 1]
        r, c = np.unravel_index(flat, x.shape)
        rows, cols = np.unravel_index(np.arange(x.shape[0] * 4), (x.shape[0], 4))
        return r, c, rows, cols, x[rows, cols]       # value ranges known: no guard for the gather

    check(f, lambda n: (randn(n, 4),), {"x": {0: Dim("n", max=64)}}, sizes=(1, 2, 7), ops=["numpy.unravel_index"])
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: np.unravel_index(np.arange(x.shape[0]), (2, 3)), randn(5),
                   dynamic_shapes={"x": {0: Dim("n", max=64)}})
    assert err.value.violations[0].kind == "index_bounds"


def test_broadcast_arrays():
    def f(x, y):
        a, b = np.broadcast_arrays(x[:, None], y)
        return a + 0, b * 1

    check(f, lambda n: (randn(n), randn(1, 3)), {"x": {0: N0}, "y": None}, sizes=(0, 1, 4),
          ops=["numpy.broadcast_arrays"])
