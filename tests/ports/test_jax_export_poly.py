"""Ports of the symbolic-shape scenarios of jax's tests/export_test.py and the non-harness
tests of shape_poly_test.py: input shapes as expressions (2*b, b + 1), the checks made when
an exported function is called, pytrees and keyword inputs, unused dims, dtypes, shape
polynomials, random draws of a symbolic shape, and save/load of such programs.
"""
from __future__ import annotations

import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.nn import functional as F

from ports._jaxpoly import Case, params, rand, run_case

DTYPES = [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.uint64, np.float16, np.float32,
          np.float64, np.complex64, np.bool_]


def _dtype_model(x):
    return x.sum(axis=0), x[::-1], np.concatenate([x, x[:1]]), np.max(x, axis=0)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_numeric_dtypes_with_poly_batch(dtype):
    """jax 'poly_numeric_dtypes': the same program over every dtype, b dynamic."""
    make = lambda b: ((np.arange(b * 3).reshape(b, 3) % 5).astype(dtype),)  # noqa: E731
    run_case(Case(f"dtype_{np.dtype(dtype).name}", _dtype_model, make, lambda: {"x": {0: Dim("b", max=20)}},
                  {"b": 4}, ok=[{"b": 1}, {"b": 7}, {"b": 20}], bad=[{"b": 21}],
                  roundtrip=np.dtype(dtype) in (np.dtype(np.float16), np.dtype(np.bool_))))


def test_input_shape_2b_checked_at_call():
    """jax 'poly_shape_checks': y declared 2*b; a call with an odd or mismatched y says what to pass."""
    b = Dim("b", max=20)
    fn = lambda x, y: y.reshape(x.shape[0], 2) + x[:, None]  # noqa: E731
    ep = tpe.export(fn, rand((3,)), rand((6,)), dynamic_shapes={"x": {0: b}, "y": {0: 2 * b}})
    with pytest.raises(ConstraintsExceededError, match=r"y.shape\[0\] = 7 must equal 2\*b = 6"):
        ep.module()(rand((3,)), rand((7,)))
    with pytest.raises(ConstraintsExceededError, match=r"y.shape\[0\] = 6 must equal 2\*b = 8"):
        ep.module()(rand((4,)), rand((6,)))
    np.testing.assert_array_equal(ep.module()(rand((5,)), rand((10,))), fn(rand((5,)), rand((10,))))


def test_divisible_input_checked_at_call():
    _b = Dim("_b", max=20)
    ep = tpe.export(lambda y: y.reshape(-1, 2), rand((6,)), dynamic_shapes={"y": {0: 2 * _b}})
    with pytest.raises(ConstraintsExceededError, match="divisible by 2"):
        ep.module()(rand((7,)))
    np.testing.assert_array_equal(ep.module()(rand((8,))), rand((8,)).reshape(-1, 2))


def test_pytree_inputs_share_a_dim():
    """jax 'poly_pytree': a dict of a list of arrays, one symbol across leaves."""
    b = Dim("b", max=20)
    fn = lambda d: d["a"] * 2 + d["b"][0][::-1]  # noqa: E731
    make = lambda n: ({"a": rand((n, 2)), "b": [rand((n, 2), seed=1)]},)  # noqa: E731
    run_case(Case("pytree", fn, make, lambda: {"d": {"a": {0: b}, "b": [{0: b}]}}, {"n": 3},
                  ok=[{"n": 1}, {"n": 9}, {"n": 20}], bad=[{"n": 21}], roundtrip=True))
    ep = tpe.export(fn, *make(3), dynamic_shapes={"d": {"a": {0: b}, "b": [{0: b}]}})
    with pytest.raises(ConstraintsExceededError, match=r"d\['b'\]\[0\].shape\[0\] = 4 must equal d\['a'\].shape\[0\] = 5"):
        ep.module()({"a": rand((5, 2)), "b": [rand((4, 2))]})


def _kw_model(x, y=None):
    return x + y[::-1]


def test_keyword_input_with_dim():
    b = Dim("b", max=20)
    ep = tpe.export(_kw_model, rand((3,)), y=rand((3,), seed=1), dynamic_shapes={"x": {0: b}, "y": {0: b}})
    for n in (1, 6, 20):
        x, y = rand((n,)), rand((n,), seed=1)
        np.testing.assert_array_equal(ep.module()(x, y=y), _kw_model(x, y=y))
    with pytest.raises(ConstraintsExceededError):
        ep.module()(rand((4,)), y=rand((5,)))


def test_unused_dim_stays_free():
    """jax 'unused_args': an input whose dim the model never reads keeps its whole range."""
    b, c = Dim("b", max=20), Dim("c", max=20)
    fn = lambda x, y: x * 2  # noqa: E731
    run_case(Case("unused", fn, lambda b, c: (rand((b,)), rand((c,))), lambda: {"x": {0: b}, "y": {0: c}},
                  {"b": 3, "c": 4}, ok=[{"b": 1, "c": 20}, {"b": 20, "c": 1}], bad=[{"b": 2, "c": 21}]))


POLYS = [
    ("concat_reshape_2_b", lambda x: np.concatenate([x, x]).reshape(2, x.shape[0])),
    ("outer_flat_unflat", lambda x: np.outer(x, x).reshape(-1).reshape(x.shape[0], x.shape[0])),
    ("b_sq_plus_b", lambda x: np.concatenate([np.outer(x, x).reshape(-1), x])),
    ("reshape_2_m1_2b", lambda x: np.tile(x, 4).reshape(2, -1, 2 * x.shape[0])),
    ("b_cubed_sum", lambda x: np.einsum("i,j,k->ijk", x, x, x).reshape(-1)[:: x.shape[0] + 1]),
    ("zeros_like_int8", lambda x: np.zeros_like(x, dtype=np.int8) + np.ones_like(x[:1], dtype=np.int8)),
    ("full_like_b", lambda x: np.full_like(x, x.shape[0])),
]


@pytest.mark.parametrize("case", params([
    Case(f"poly_{name}", fn, lambda b: (rand((b,)),), lambda: {"x": {0: Dim("b", max=16)}}, {"b": 3},
         ok=[{"b": 1}, {"b": 2}, {"b": 7}, {"b": 16}], bad=[{"b": 17}], roundtrip=(name == "b_sq_plus_b"))
    for name, fn in POLYS]))
def test_non_trivial_polynomials(case):
    run_case(case)


class _Noise(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", F.generator_state(0))

    def forward(self, x):
        u, self.state = F.random_uniform(self.state, x.shape, dtype=np.float32)
        return x + u


def test_random_draw_of_symbolic_shape():
    """jax 'random_uniform' with a shape (b, 4): the program draws b*4 values like eager."""
    ep = tpe.export(_Noise(), rand((3, 4)), dynamic_shapes={"x": {0: Dim("b", max=20)}})
    for n in (1, 5, 20):
        # a fresh program (loaded from the archive) and a fresh model start from the same state
        got = tpe.load(_saved(ep)).module()(rand((n, 4)))
        want = _Noise()(rand((n, 4)))
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ConstraintsExceededError):
        ep.module()(rand((21, 4)))


def _saved(ep):
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    return buf


def test_export_twice_gives_same_program_at_other_sizes():
    """jax caches by symbolic shapes: two exports from different examples agree everywhere."""
    fn = lambda x: np.cumsum(x[::-1], axis=0)[: x.shape[0] // 2 + 1]  # noqa: E731
    ep1 = tpe.export(fn, rand((4, 2)), dynamic_shapes={"x": {0: Dim("b", max=30)}})
    ep2 = tpe.export(fn, rand((11, 2)), dynamic_shapes={"x": {0: Dim("b", max=30)}})
    for n in (1, 2, 5, 30):
        x = rand((n, 2))
        np.testing.assert_array_equal(ep1.module()(x), fn(x))
        np.testing.assert_array_equal(ep2.module()(x), fn(x))
