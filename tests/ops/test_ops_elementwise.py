"""Elementwise ops with dynamic sizes: ufuncs through operators and np.f calls, broadcasting, where, clip."""
import numpy as np
import pytest

from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 3),)


@pytest.mark.parametrize("fn, op", [
    (lambda x: x + 1.0, "numpy.add"),
    (lambda x: 2.0 - x, "numpy.subtract"),
    (lambda x: x * x, "numpy.multiply"),
    (lambda x: x / 3, "numpy.divide"),
    (lambda x: x // 0.5, "numpy.floor_divide"),
    (lambda x: x % 0.7, "numpy.remainder"),
    (lambda x: abs(x) ** 0.5, "numpy.power"),
    (lambda x: -x, "numpy.negative"),
    (lambda x: np.exp(x), "numpy.exp"),
    (lambda x: np.log(np.abs(x) + 1), "numpy.log"),
    (lambda x: np.sqrt(np.abs(x)), "numpy.sqrt"),
    (lambda x: np.tanh(x), "numpy.tanh"),
    (lambda x: np.sign(x), "numpy.sign"),
    (lambda x: np.maximum(x, 0), "numpy.maximum"),
    (lambda x: np.minimum(x, x[:, :1]), "numpy.minimum"),
    (lambda x: np.power(x, 2), "numpy.power"),
    (lambda x: np.isnan(x), "numpy.isnan"),
    (lambda x: np.isfinite(x), "numpy.isfinite"),
    (lambda x: (x > 0) & (x < 1), "numpy.bitwise_and"),
    (lambda x: np.logical_or(x > 0, x < -1), "numpy.logical_or"),
    (lambda x: ~(x > 0), "numpy.invert"),
    (lambda x: x == x[:1], "numpy.equal"),
    (lambda x: x >= 0.5, "numpy.greater_equal"),
])
def test_ufuncs(fn, op):
    check(fn, one, SPEC, ops=[op])


def test_where_and_clip():
    check(lambda x: np.where(x > 0, x, -np.inf), one, SPEC, ops=["numpy.where"])
    check(lambda x: np.clip(x, -0.5, 0.5) + x.clip(0, 1), one, SPEC, ops=["numpy.clip", "numpy.ndarray.clip"])
    check(lambda x: np.round(x, 1), one, SPEC, ops=["numpy.round"])


def test_erf_style_math_via_tanh_gelu():
    def gelu(x):
        return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))
    check(gelu, one, SPEC)


def test_broadcast_symbolic_with_static_one():
    def make(n):
        return randn(n, 1), randn(1, 4)
    check(lambda a, b: a + b, make, {"a": {0: Dim("n", max=64)}, "b": None}, ops=["numpy.add"])


def test_inplace_operators_match_eager():
    def f(x):
        y = x.copy()
        y += 1
        y *= 2
        y -= x
        y /= 3
        return y
    check(f, one, SPEC)


def test_divmod_ufunc_two_outputs():
    check(lambda x: np.divmod(x, 0.3), one, SPEC, ops=["numpy.divmod"])


def test_python_int_overflow_guard_for_small_int_dtypes():
    import tensorplay_export as tpe

    with pytest.raises(tpe.ConstraintViolationError, match=r"n <= 127"):
        tpe.export(lambda x: x.astype(np.int8) + x.shape[0], randn(5, 3),
                   dynamic_shapes={"x": {0: Dim("n", max=500)}})


POS = np.zeros((512, 3), np.float32)


def test_broadcast_reason_names_the_operator_and_the_bounded_slice():
    import tensorplay_export as tpe

    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x + POS[: x.shape[0]], randn(8, 3), dynamic_shapes={"x": {0: Dim("seq", max=1024)}})
    assert "guard seq <= 512 (broadcasting in `+`: seq with Min(512, seq), a slice of at most 512)" in str(err.value)
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x, y: x * y, randn(8, 3), randn(8, 3),
                   dynamic_shapes={"x": {0: Dim("a", max=64)}, "y": {0: Dim("b", max=64)}})
    assert "(broadcasting in `*`: a with b)" in str(err.value)
