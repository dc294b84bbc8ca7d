"""numpy's poly* functions over coefficient arrays (ops/polynomial.py): eager numpy at other sizes
of a dynamic length, through save/load too; the guards and refusals their shapes need."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _exact import same_as_eager
from tensorplay_export import Dim
from tensorplay_export.errors import UnsupportedOpError

SPEC = {"a": {0: Dim("n", max=64)}, "b": None}


def coeffs(n):
    rng = np.random.default_rng(n)
    return rng.standard_normal(n), rng.standard_normal(3).astype(np.float32)


def ints(n):
    rng = np.random.default_rng(n)
    return rng.integers(-5, 5, n).astype(np.int32), rng.integers(-5, 5, 3).astype(np.int8)


@pytest.mark.parametrize("make", [coeffs, ints])
def test_polyadd_polysub_pad_to_the_longer_operand(make):
    def fn(a, b):
        return np.polyadd(a, b), np.polysub(a, b), np.polysub(b, a), np.polyadd(a, a[0])

    ep = same_as_eager(fn, make, SPEC, 5, (1, 2, 3, 9))
    assert "numpy.polyadd" in {n.target for n in ep.graph.nodes}


@pytest.mark.parametrize("make", [coeffs, ints])
def test_polyder_polyint_drop_and_add_terms(make):
    def fn(a, b):
        return (np.polyder(a), np.polyder(a, 2), np.polyder(a, 7), np.polyint(a), np.polyint(a, 2, k=[1.0, 2.0]),
                np.polyint(a, 3, k=2.5), np.polyint(a, 1, k=b[:1]))

    same_as_eager(fn, make, SPEC, 5, (1, 2, 4, 9))


def test_polymul_length_follows_the_leading_zeros():
    # numpy trims each operand's leading zeros first (poly1d): the length is the data's
    def make(n):
        a, b = coeffs(n)
        a[: n // 2] = 0.0
        return a, b

    ep = same_as_eager(lambda a, b: np.polymul(a, b), make, SPEC, 6, (1, 2, 5, 9))
    assert any(str(s).startswith("u") for s in ep.range_constraints)  # a data-dependent size
    zeros = lambda n: (np.zeros(n), np.zeros(3, np.float32))  # noqa: E731
    same_as_eager(lambda a, b: np.polymul(a, b), zeros, SPEC, 4, (1, 3))


def test_polyfit_one_and_several_columns_and_weights():
    spec = {"x": {0: Dim("n", min=4, max=64)}, "y": {0: Dim("n", min=4, max=64)}}

    def make(n):
        x = np.linspace(-1.0, 1.0, n)
        noise = 0.01 * np.random.default_rng(n).standard_normal((n, 2))
        return x, np.stack([x ** 2 - x, np.cos(3 * x)], axis=1) + noise

    def fn(x, y):
        return np.polyfit(x, y, 2), np.polyfit(x, y[:, 1], 3), np.polyfit(x, y[:, 0], 1, w=np.abs(x) + 1.0)

    same_as_eager(fn, make, spec, 7, (4, 5, 12))


def test_polyfit_degree_may_be_a_size():
    # deg = n - 1: the interpolating polynomial, n coefficients
    spec = {"x": {0: Dim("n", min=2, max=12)}, "y": {0: Dim("n", min=2, max=12)}}

    def make(n):
        x = np.linspace(-1.0, 1.0, n)
        return x, np.sin(2 * x)

    same_as_eager(lambda x, y: np.polyfit(x, y, x.shape[0] - 1), make, spec, 5, (2, 3, 8))


def test_polyfit_needs_points_of_x_and_y_alike():
    with pytest.raises(tpe.ConstraintViolationError, match="x and y must have the same length"):
        tpe.export(lambda x, y: np.polyfit(x, y, 1), np.linspace(0, 1, 5), np.ones(5),
                   dynamic_shapes={"x": {0: Dim("n", max=16)}, "y": {0: Dim("m", max=16)}})


def test_polyint_constants_of_a_dynamic_length_are_a_guard():
    # numpy: k of length 1 or at least m; integrating 3 times with k of length n leaves n == 2 out
    def fn(a, b):
        return np.polyint(b, 3, k=a)

    with pytest.raises(tpe.ConstraintViolationError, match=r"n == 1 or n >= 3[\s\S]*counterexample: n = 2"):
        tpe.export(fn, *coeffs(3), dynamic_shapes=SPEC)
    same_as_eager(fn, coeffs, {"a": {0: Dim("n", min=3, max=64)}, "b": None}, 3, (4, 9))


@pytest.mark.parametrize("fn,match", [
    (lambda a, b: np.polyadd(np.poly1d([1.0, 2.0]), a), "pass the coefficient array p.coeffs"),
    (lambda a, b: np.polymul(a, np.poly1d([1.0, 2.0])), "pass the coefficient array p.coeffs"),
    (lambda a, b: np.polyder(a, 0), r"returns p itself .*: use p"),
    (lambda a, b: np.polyint(a, 0), r"returns p itself .*: use p"),
    (lambda a, b: np.polyadd(a[:, None] * b, a[:, None] * b), "once per 1-d coefficient array"),
    (lambda a, b: np.polyfit(b, b, 1, full=True), "full=True or cov="),
    (lambda a, b: np.polyfit(b, b, 1, cov=True), "np.polyval"),
])
def test_refusals_say_what_to_write_instead(fn, match):
    with pytest.raises(UnsupportedOpError, match=match):
        tpe.export(fn, *coeffs(4), dynamic_shapes=SPEC)
