"""Top-k selection (partition / argpartition) and membership (isin) on dynamic sizes."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

N0 = Dim("n", min=0, max=64)


def test_partition_and_argpartition_top_k():
    def f(x):
        k = 2
        idx = np.argpartition(-x, k - 1, axis=1)[:, :k]     # top-2 of 4 columns
        vals = np.take_along_axis(x, idx, axis=1)           # argpartition's range [0, 3]: no guard
        return (np.sort(vals, axis=1), np.partition(x, [0, 3], axis=1)[:, [0, 3]],
                np.partition(x, -1, axis=None)[-1:], x.argpartition(0, axis=0)[:0])

    check(f, lambda n: (randn(n, 4),), {"x": {0: Dim("n", min=1, max=64)}}, sizes=(1, 2, 7),
          ops=["numpy.partition", "numpy.argpartition"])
    # partitioning an empty axis: numpy checks no kth
    check(lambda x: np.argpartition(x, 1, axis=1), lambda n: (randn(n, 4),), {"x": {0: N0}}, sizes=(0, 1, 3))


def test_kth_on_a_dynamic_axis_is_a_requirement():
    def f(x):
        return np.partition(x, 3)  # along the dynamic axis

    with pytest.raises(tpe.ConstraintViolationError, match=r"n = Dim\('n', min=4") as err:
        tpe.export(f, randn(6), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    assert "kth = 3" in str(err.value)
    check(f, lambda n: (randn(n),), {"x": {0: Dim("n", min=4, max=64)}}, sizes=(4, 5, 9))
    # an empty axis has nothing to partition: n = 0 stays allowed next to n >= 4
    with pytest.raises(tpe.ConstraintViolationError, match=r"Or\(Eq\(n, 0\), n >= 4\)|n >= 4"):
        tpe.export(f, randn(6), dynamic_shapes={"x": {0: Dim("n", min=0, max=64)}})
    with pytest.raises(tpe.ConstraintViolationError):
        tpe.export(lambda x: np.argpartition(x, -3), randn(4), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    # a kth given as a size: always in range
    check(lambda x: np.partition(x, x.shape[0] - 1), lambda n: (randn(n),), {"x": {0: Dim("n", max=64)}},
          sizes=(1, 3, 8))


def test_isin():
    def f(x, t):
        return np.isin(x, t), np.isin(x, t, invert=True), np.isin(x[0, 0], t), np.isin(x, [1, 3])

    def make(n):
        rng = np.random.default_rng(n)
        return rng.integers(0, 6, (n, 3)), rng.integers(0, 6, n + 1)

    check(f, make, {"x": {0: Dim("n", max=64)}, "t": {0: Dim("m", max=65)}}, sizes=(1, 2, 7), ops=["numpy.isin"])
    check(lambda x, t: np.isin(x, t), make, {"x": {0: N0}, "t": {0: Dim("m", max=65)}}, sizes=(0, 1, 4))
