"""Shape ops with dynamic sizes: reshape (-1, guards), permutations, joins, splits, tile/repeat/pad."""
import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from _check import check, randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", max=64)}}


def one(n):
    return (randn(n, 4, 2),)


def test_reshape_forms():
    check(lambda x: (x.reshape(-1), x.reshape(x.shape[0], -1), np.reshape(x, (-1, 8)), x.reshape((x.shape[0], 8))),
          one, SPEC, ops=["numpy.ndarray.reshape", "numpy.reshape"])


def test_reshape_minus_one_divisibility_is_minimal_guard():
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x.reshape(-1, 4), randn(8), dynamic_shapes={"x": {0: Dim("n", max=1000)}})
    assert "n % 4 == 0" in str(err.value)
    assert err.value.violations[0].expr == sympy.Eq(sympy.Mod(sympy.Symbol("n", integer=True, positive=True), 4), 0)


def test_reshape_pairs_needs_even_seq_only():
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(lambda x: x.reshape(x.shape[0], x.shape[1] // 2, 2, 3), randn(2, 10, 3),
                   dynamic_shapes={"x": {0: Dim("b", max=8), 1: Dim("s", max=64)}})
    [rec] = err.value.violations
    assert rec.expr.free_symbols == {sympy.Symbol("s", integer=True, positive=True)}


def test_permutations():
    check(lambda x: (x.T, x.transpose(1, 0, 2), np.transpose(x, (2, 0, 1)), x.swapaxes(0, 2),
                     np.moveaxis(x, 0, -1)), one, SPEC,
          ops=["numpy.transpose", "numpy.ndarray.transpose", "numpy.swapaxes", "numpy.moveaxis"])


def test_expand_squeeze_broadcast_ravel():
    check(lambda x: (np.expand_dims(x, 1), np.squeeze(x[:, :1], axis=1), np.broadcast_to(x[:, :1], x.shape),
                     x.ravel(), x.flatten()), one, SPEC,
          ops=["numpy.expand_dims", "numpy.squeeze", "numpy.broadcast_to", "numpy.ravel"])


def test_broadcast_to_stretches_a_dynamic_axis_of_size_one_in_the_example():
    # the example's side of `d == 1 or d == b` is the requirement (was an internal error: Eq(d, b))
    ep = tpe.export(lambda x, y: np.broadcast_to(x, (y.shape[0], 4)), np.ones((1, 4)), np.ones((6, 4)),
                    dynamic_shapes=({0: Dim.AUTO}, {0: Dim("b")}))
    assert ep.module()(np.ones((1, 4)), np.ones((3, 4))).shape == (3, 4)


def test_concatenate_stack_split():
    check(lambda x: (np.concatenate([x, x], axis=0), np.stack([x, x], axis=1), np.split(x, 2, axis=1)[0],
                     np.array_split(x, 3, axis=0)[-1], np.hstack([x, x]), np.vstack([x, x])), one, SPEC,
          ops=["numpy.concatenate", "numpy.stack", "numpy.split", "numpy.array_split"])


def _assert_same_parts(got, want):
    assert type(got) is type(want) is list
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("fn", [lambda x: np.split(x, [x.shape[0] // 2, x.shape[0] - 1], axis=0),
                                lambda x: np.array_split(x, 3, axis=0),
                                lambda x: np.split(x, 2, axis=2)],
                         ids=["split_at_sizes", "array_split3", "split_static_axis"])
def test_split_parts_returned_as_numpy_list(fn):
    """numpy returns a list: the program (codegen, decomposed, loaded) returns one too, equal to eager."""
    import io

    ep = tpe.export(fn, *one(6), dynamic_shapes=SPEC)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    programs = [ep, ep.run_decompositions(), tpe.load(buf)]
    for n in (1, 2, 5, 11):
        (x,) = one(n)
        for prog in programs:
            _assert_same_parts(prog.module()(x), fn(x))


def test_split_parts_unpacked():
    def fn(x):
        a, b, c = np.array_split(x, 3)
        return a.sum(axis=0) + c.sum(axis=0) - b[:1].sum(axis=0)

    check(fn, one, SPEC, example=6, sizes=(3, 4, 8, 13), ops=["numpy.array_split"])


def test_split_of_dynamic_axis_needs_divisibility():
    with pytest.raises(tpe.ConstraintViolationError, match="n % 2 == 0"):
        tpe.export(lambda x: np.split(x, 2)[0], randn(6, 2), dynamic_shapes={"x": {0: Dim("n", max=64)}})


def test_tile_repeat_pad_flip_roll():
    check(lambda x: (np.tile(x, (2, 1, 1)), np.repeat(x, 3, axis=0), x.repeat(2), np.pad(x, ((1, 2), (0, 0), (1, 1))),
                     np.flip(x, 0), np.roll(x, 1, axis=0)), one, SPEC,
          ops=["numpy.tile", "numpy.repeat", "numpy.pad", "numpy.flip", "numpy.roll"])


def test_astype_copy():
    check(lambda x: (x.astype(np.float64), x.astype(np.int32), np.copy(x), x.copy()), one, SPEC,
          ops=["numpy.ndarray.astype", "numpy.copy"])



def _rows3(n):
    return (randn(n, 3),)


def test_reshape_minus_one_of_offset_numel_needs_divisibility():
    for fn in (lambda x: x[1:].reshape(-1, 6), lambda x: x[:-1].reshape(-1, 2, 3),
               lambda x: np.concatenate([x, x[:1]]).reshape(-1, 6)):
        with pytest.raises(tpe.ConstraintViolationError) as err:
            tpe.export(fn, randn(5, 3), dynamic_shapes=SPEC)
        assert "% 2 == 0" in str(err.value) and "n = 2*_n + 1" in str(err.value)
    check(lambda x: x[1:].reshape(-1, 6), _rows3, {"x": {0: 2 * Dim("_n", min=0, max=31) + 1}},
          sizes=(1, 3, 7, 63))


@pytest.mark.parametrize("fn", [
    lambda x: np.pad(x, ((x.shape[0] - 5, 0), (0, 0))),
    lambda x: np.tile(x, (x.shape[0] - 5, 1)),
    lambda x: np.repeat(x, x.shape[0] - 5, axis=1),
    lambda x: np.broadcast_to(x[:1], (x.shape[0] - 5, 3)),
], ids=["pad", "tile", "repeat", "broadcast_to"])
def test_counts_from_sizes_must_be_nonnegative(fn):
    spec = {"x": {0: Dim("n", max=40)}}
    with pytest.raises(tpe.ConstraintViolationError, match=r"n = Dim\('n', min=5, max=40\)"):
        tpe.export(fn, randn(8, 3), dynamic_shapes=spec)
    check(fn, _rows3, {"x": {0: Dim("n", min=5, max=40)}}, example=8, sizes=(5, 6, 40))


@pytest.mark.parametrize("axis", [0, 1, -2, None])
def test_repeat_by_an_array_of_counts_along_any_axis(axis):
    """FastSpeech's length regulator: frames repeated by per-token durations along the time axis.
    The data-dependent length binds from the repeated axis (it was read from axis 0)."""
    def f(x, d):
        return np.repeat(x, d, axis=axis)

    def make(n):
        rng = np.random.default_rng(n)
        x = randn(n, 2, 3, seed=n) if axis == 0 else randn(2, n, 3, seed=n)
        return x, rng.integers(0, 4, n * 6 if axis is None else n)

    spec = ({0 if axis == 0 else 1: Dim("n", max=32)}, {0: 6 * Dim("n", max=32) if axis is None else Dim("n", max=32)})
    ep = tpe.export(f, *make(6), dynamic_shapes=spec)
    for n in (1, 5, 32):
        x, d = make(n)
        got = ep.module()(x, d)
        assert got.shape == f(x, d).shape
        np.testing.assert_array_equal(got, f(x, d))


@pytest.mark.parametrize("axis", [0, 1])
def test_repeat_by_counts_requires_one_count_per_element_of_the_axis(axis):
    def model(x, c):
        return np.repeat(x, c, axis=axis)

    x = np.arange(12.0).reshape((3, 4) if axis == 0 else (4, 3))
    c = np.array([1, 0, 2])
    spec = ({axis: tpe.Dim("n")}, {0: tpe.Dim("c")})
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, c, dynamic_shapes=spec)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, x, c, dynamic_shapes=refined)
    for n in (1, 2, 5):
        xs = np.arange(4.0 * n).reshape((n, 4) if axis == 0 else (4, n))
        cs = np.arange(n) % 3
        np.testing.assert_array_equal(ep.module()(xs, cs), model(xs, cs))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((2, 4) if axis == 0 else (4, 2)), np.array([1, 1, 1]))
    # one count for the whole axis broadcasts, as in numpy
    ep1 = tpe.export(model, x, np.array([2]), dynamic_shapes=({axis: tpe.Dim("n")}, None))
    np.testing.assert_array_equal(ep1.module()(x, np.array([2])), model(x, np.array([2])))
