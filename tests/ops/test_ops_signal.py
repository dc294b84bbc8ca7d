"""convolve / correlate in every mode, and interp, with dynamic lengths on either side."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

KERNEL = np.array([0.25, 0.5, 0.25])


@pytest.mark.parametrize("name", ["convolve", "correlate"])
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
def test_conv_modes_with_two_dynamic_lengths(name, mode):
    fn = getattr(np, name)

    def f(a, v):
        return fn(a, v, mode), fn(v, a, mode), fn(a, KERNEL, mode)

    def make(n):  # n < m, n == m and n > m all occur across the sizes
        return randn(n), randn(4, seed=1)[: max(1, 6 - n)].astype(np.float64)

    check(f, make, {"a": {0: Dim("n", max=64)}, "v": {0: Dim("m", max=64)}}, example=3, sizes=(1, 2, 4, 5, 6, 9),
          ops=[f"numpy.{name}"])


def test_conv_default_modes_and_int_dtypes():
    def f(a):
        return np.convolve(a, [1, 2, 1]), np.correlate(a, [1, -1]), np.convolve(a, 2)

    check(f, lambda n: (np.arange(n, dtype=np.int32),), {"a": {0: Dim("n", max=64)}}, sizes=(1, 2, 7),
          ops=["numpy.convolve", "numpy.correlate"])


def test_conv_needs_nonempty_inputs():
    with pytest.raises(tpe.ConstraintViolationError, match="cannot be empty"):
        tpe.export(lambda a: np.convolve(a, KERNEL), randn(4), dynamic_shapes={"a": {0: Dim("n", min=0, max=9)}})


def test_interp():
    def f(x, xp, fp):
        return (np.interp(x, xp, fp), np.interp(x, xp, fp, left=0.0, right=1.0), np.interp(x[:1, 0], xp, fp),
                np.interp(x, np.array([0.0, 1.0]), np.array([1.0, 3.0], np.float32)))

    def make(n):
        rng = np.random.default_rng(n)
        return rng.random((n, 2)) * 3 - 1, np.sort(rng.random(n + 1)), rng.random(n + 1).astype(np.float32)

    check(f, make, {"x": {0: Dim("n", min=0, max=64)}, "xp": {0: Dim("k", max=65)}, "fp": {0: Dim("k", max=65)}},
          sizes=(0, 1, 2, 7), ops=["numpy.interp"])
    with pytest.raises(tpe.ConstraintViolationError, match="same length"):
        tpe.export(lambda x, xp, fp: np.interp(x, xp, fp), *make(3),
                   dynamic_shapes={"x": None, "xp": {0: Dim("a", max=9)}, "fp": {0: Dim("b", max=9)}})
    with pytest.raises(tpe.ConstraintViolationError, match="cannot be empty"):
        tpe.export(lambda x, xp, fp: np.interp(x, xp, fp), *make(3),
                   dynamic_shapes={"x": None, "xp": {0: Dim("k", min=0, max=9)}, "fp": {0: Dim("k", min=0, max=9)}})
