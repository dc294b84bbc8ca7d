"""einsum / convolve / correlate: the default program runs numpy's own call (bit-identical to eager numpy);
``run_decompositions`` rewrites them into matmul / products and sums, which agree within the rounding
bound their docstrings state (``K * eps * sum |terms|``, K the number of terms in one output sum)."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

RNG = np.random.default_rng(7)


def _r(*shape, dtype=np.float32):
    return (RNG.standard_normal(shape) * 3).astype(dtype)


def _einsums(x, w, v):
    return (np.einsum("ij,jk->ik", x, w), np.einsum("ij,kj->ik", x, x), np.einsum("ij->i", x),
            np.einsum("i,i->", v, v), np.einsum("ij,j->i", x, w[:, 0]), np.einsum("...j,jk", x, w),
            np.einsum("ij,ik->jk", x, x))


def _signals(x, w, v):
    a, k = v, w[:, 0]
    return (np.convolve(a, k), np.convolve(a, k, "same"), np.convolve(a, k, "valid"),
            np.correlate(a, k), np.correlate(a, k, "full"), np.convolve(k, a, "same"))


SPEC = {"x": {0: Dim("n", max=64)}, "w": None, "v": {0: Dim("m", min=5, max=200)}}


def _inputs(n, m, dtype):
    return _r(n, 5, dtype=dtype), _r(5, 3, dtype=dtype), _r(m, dtype=dtype)


def _terms(fn, args):
    """Per output element, the count K and the sum of |terms| of its sum: the same call on |args|
    gives sum |terms|; K bounded by the largest contracted length (5 for x's columns, m for v)."""
    return fn(*[np.abs(a).astype(np.float64) for a in args])


@pytest.mark.parametrize("fn", [_einsums, _signals])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_default_program_is_bit_identical(fn, dtype):
    ep = tpe.export(fn, *_inputs(4, 9, dtype), dynamic_shapes=SPEC)
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    assert targets & {"numpy.einsum", "numpy.convolve", "numpy.correlate"}
    assert not targets & {"numpy.matmul", "numpy.sum"}  # numpy's own call runs, not a decomposition
    mod = ep.module()
    for n, m in ((1, 5), (3, 17), (40, 123)):
        args = _inputs(n, m, dtype)
        for got, want in zip(mod(*args), fn(*args)):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fn", [_einsums, _signals])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_decomposed_within_the_documented_bound(fn, dtype):
    ep = tpe.export(fn, *_inputs(4, 9, dtype), dynamic_shapes=SPEC).run_decompositions()
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    assert not targets & {"numpy.einsum", "numpy.convolve", "numpy.correlate"}
    mod = ep.module()
    eps = np.finfo(dtype).eps
    for n, m in ((1, 5), (3, 17), (40, 123)):
        args = _inputs(n, m, dtype)
        k = max(n, m, 5)
        for got, want, mag in zip(mod(*args), fn(*args), _terms(fn, args)):
            assert got.dtype == want.dtype and got.shape == want.shape
            assert np.all(np.abs(got.astype(np.float64) - want) <= 2 * k * eps * mag + np.finfo(dtype).tiny)


def test_decomposed_integers_are_exact():
    ep = tpe.export(_einsums, *_inputs(4, 9, np.int64), dynamic_shapes=SPEC).run_decompositions()
    args = _inputs(11, 30, np.int64)
    for got, want in zip(ep.module()(*args), _einsums(*args)):
        np.testing.assert_array_equal(got, want)
