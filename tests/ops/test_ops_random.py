"""The random op family: tpe.random.uniform / tpe.random.normal over an explicit generator state."""
import numpy as np
import pytest
import sympy

from tensorplay_export.ops.ctx import ShapeCtx
from tensorplay_export.ops.random import STATE_SIZE, generator_from_state, generator_state, state_of
from tensorplay_export.ops.registry import ArrayInfo, get_op

UNIFORM, NORMAL = get_op("tpe.random.uniform"), get_op("tpe.random.normal")


def test_state_round_trips_through_the_array():
    g = np.random.default_rng(7)
    g.random(3)
    g.integers(0, 10, 5, dtype=np.uint32)  # leaves a buffered 32-bit half (has_uint32)
    arr = state_of(g.bit_generator)
    assert arr.dtype == np.uint64 and arr.shape == (STATE_SIZE,)
    assert generator_from_state(arr).bit_generator.state == g.bit_generator.state


@pytest.mark.parametrize("seed", [0, 1, 2**40 + 3])
def test_uniform_is_default_rngs_stream_and_returns_the_next_state(seed):
    state = generator_state(seed)
    before = state.copy()
    ref = np.random.default_rng(seed)
    u1, s1 = UNIFORM.impl(state, (4, 5))
    np.testing.assert_array_equal(state, before)          # the input state is not changed
    np.testing.assert_array_equal(u1, ref.random((4, 5)))
    u2, s2 = UNIFORM.impl(s1, 7, np.float32)
    np.testing.assert_array_equal(u2, ref.random(7, dtype=np.float32))
    np.testing.assert_array_equal(s2, state_of(ref.bit_generator))
    assert u2.dtype == np.float32 and not np.array_equal(s1, s2)


def test_normal_is_default_rngs_standard_normal():
    ref = np.random.default_rng(3)
    z, s = NORMAL.impl(generator_state(3), (2, 3))
    np.testing.assert_array_equal(z, ref.standard_normal((2, 3)))
    z0, s0 = NORMAL.impl(s, ())
    assert z0.shape == () and z0 == ref.standard_normal()
    np.testing.assert_array_equal(s0, state_of(ref.bit_generator))


def test_generator_state_of_a_generator_copies_without_advancing():
    g = np.random.default_rng(11)
    g.random(2)
    state = generator_state(g)
    u, _ = UNIFORM.impl(state, 3)
    np.testing.assert_array_equal(u, g.random(3))


@pytest.mark.parametrize("bad, words", [
    (np.zeros(6, np.int64), "uint64"),
    (np.zeros(5, np.uint64), "shape (6,)"),
    (np.array([0, 1, 0, 1, 7, 0], np.uint64), "has_uint32 = 7"),
])
def test_a_bad_state_is_refused(bad, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        UNIFORM.impl(bad, 3)


def test_only_float_draws():
    with pytest.raises(ValueError, match="float32 or float64"):
        UNIFORM.impl(generator_state(0), 3, np.int64)


def test_rule_gives_the_draw_shape_and_the_state_shape():
    n = sympy.Symbol("n", integer=True, positive=True)
    ctx = ShapeCtx.bare({n: 5}, {n: (1, 64)}, op="tpe.random.uniform")
    info = ArrayInfo((STATE_SIZE,), np.dtype(np.uint64))
    assert UNIFORM.shape_rule(ctx, info, (n, 3)) == [(n, 3), (STATE_SIZE,)]
    assert NORMAL.shape_rule(ctx, info, n - 2)[0] == (n - 2,)
    assert any(r.expr == sympy.Ge(n - 2, 0) for r in ctx.recorded)   # a negative size would make numpy raise
    with pytest.raises(ValueError, match="generator state"):
        UNIFORM.shape_rule(ctx, ArrayInfo((n, 3), np.dtype(np.float32)), (n,))
