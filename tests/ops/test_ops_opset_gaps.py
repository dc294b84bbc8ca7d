"""Ops that closed gaps of the opset inventory: i0, unpackbits/packbits, diag_indices(_from),
linalg.tensorinv/tensorsolve, ndarray.device/to_device, and ndarray.resize's refusal.  Each program
equals eager numpy bit for bit (and dtype for dtype) at other sizes, through save/load too; the
guards a shape needs are violations with counterexamples."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _exact import same_as_eager
from tensorplay_export import Dim
from tensorplay_export.errors import UnsupportedOpError

SPEC = {"x": {0: Dim("n", max=64)}}
SIZES = (1, 2, 9)


def floats(n, dtype=np.float64):
    return (np.random.default_rng(n).uniform(-9.0, 9.0, (n, 3)).astype(dtype),)


def bytes_(n):
    return (np.random.default_rng(n).integers(0, 256, (n, 3)).astype(np.uint8),)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16])
def test_i0_elementwise_in_numpys_dtype(dtype):
    ep = same_as_eager(lambda x: (np.i0(x), np.i0(x[0, 0])), lambda n: floats(n, dtype), SPEC, 5, SIZES)
    assert "numpy.i0" in {n.target for n in ep.graph.nodes}


def test_unpackbits_lengths_and_counts():
    def fn(x):
        return (np.unpackbits(x), np.unpackbits(x, axis=0), np.unpackbits(x, axis=1, count=5, bitorder="little"),
                np.unpackbits(x, axis=1, count=30), np.unpackbits(x, axis=0, count=-3),
                np.unpackbits(x, axis=0, count=x.shape[0]), np.unpackbits(x, count=-x.shape[0]),
                np.unpackbits(x, axis=-1, count=0))

    same_as_eager(fn, bytes_, SPEC, 5, SIZES)


def test_packbits_round_trips_unpackbits():
    def fn(x):
        bits = np.unpackbits(x, axis=0)
        return (np.packbits(bits, axis=0), np.packbits(x > 100), np.packbits(x[:, 0] > 9, bitorder="little"),
                np.packbits(bits[: x.shape[0] + 3], axis=0))

    same_as_eager(fn, bytes_, SPEC, 5, SIZES)


def test_unpackbits_negative_count_needs_enough_bits():
    # 8 * n bits less 20: numpy refuses n <= 2, a violation with a counterexample and a fix
    with pytest.raises(tpe.ConstraintViolationError, match=r"2\*n >= 5[\s\S]*counterexample: n = \d"):
        tpe.export(lambda x: np.unpackbits(x, axis=0, count=-20), *bytes_(4), dynamic_shapes=SPEC)
    same_as_eager(lambda x: np.unpackbits(x, axis=0, count=-20), bytes_, {"x": {0: Dim("n", min=3, max=64)}}, 4,
                  (3, 8))


def test_diag_indices_of_a_size_and_of_an_array():
    def fn(x):
        n = x.shape[0]
        cube = x[:, :1, None] * x[None, :, :1].reshape(1, n, 1) * x[:, 0][None, None, :]
        sq = x @ x.T
        return (*np.diag_indices(n), *np.diag_indices(n, 3), sq[np.diag_indices(n)], *np.diag_indices_from(sq),
                cube[np.diag_indices_from(cube)])

    same_as_eager(fn, floats, SPEC, 5, SIZES)


def test_diag_indices_from_requires_equal_sizes():
    spec = {"x": {0: Dim("n", max=16), 1: Dim("m", max=16)}}
    with pytest.raises(tpe.ConstraintViolationError, match=r"All dimensions of input must be of equal length"):
        tpe.export(lambda x: np.diag_indices_from(x), np.ones((3, 3)), dynamic_shapes=spec)


def _tensor(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 2, 2 * n)) + 4.0 * np.eye(2 * n).reshape(n, 2, 2 * n)
    return a, rng.standard_normal((n, 2))


def test_tensorinv_and_tensorsolve():
    spec = {"a": {0: Dim("n", max=16), 2: 2 * Dim("n", max=16)}, "b": {0: Dim("n", max=16)}}

    def fn(a, b):
        sq = a.reshape(a.shape[0], 2, a.shape[0], 2)
        return (np.linalg.tensorinv(a), np.linalg.tensorinv(a.reshape(2 * a.shape[0], -1), ind=1),
                np.linalg.tensorsolve(sq, b), np.linalg.tensorsolve(sq.transpose(0, 1, 3, 2), b, axes=(2,)))

    same_as_eager(fn, _tensor, spec, 3, (1, 2, 5))


def test_tensorinv_guards_the_square_matrix():
    spec = {"a": {0: Dim("n", max=16), 2: Dim("m", max=32)}}
    with pytest.raises(tpe.ConstraintViolationError,
                       match=r"tensorinv: the product of a.shape\[:2\] \(2\*n\) must equal the product of "
                             r"a.shape\[2:\] \(m\)[\s\S]*counterexample[\s\S]*m = 2\*n"):
        tpe.export(lambda a: np.linalg.tensorinv(a), _tensor(3)[0], dynamic_shapes=spec)


def test_tensorsolve_guards_the_unknowns():
    spec = {"a": {0: Dim("n", max=16), 2: Dim("m", max=16)}, "b": {0: Dim("n", max=16)}}
    a = _tensor(3)[0].reshape(3, 2, 3, 2)
    with pytest.raises(tpe.ConstraintViolationError, match=r"tensorsolve: Input arrays must satisfy[\s\S]*"
                                                           r"counterexample"):
        tpe.export(lambda a, b: np.linalg.tensorsolve(a, b), a, np.ones((3, 2)), dynamic_shapes=spec)


def test_device_is_cpu_and_to_device_cpu_is_the_array():
    def fn(x):
        y = x.to_device(x.device)
        assert y is x and x.device == "cpu"
        return y * 2.0

    ep = same_as_eager(fn, floats, SPEC, 5, SIZES)
    ops = [n.target for n in ep.graph.nodes if n.op == "call_function" and not n.target.startswith(("tpe.check",
                                                                                                     "tpe.assert"))]
    assert ops == ["numpy.multiply"]  # no node for to_device: the array itself
    with pytest.raises(ValueError, match="gpu"):
        tpe.export(lambda x: x.to_device("gpu"), *floats(4), dynamic_shapes=SPEC)


def test_ndarray_resize_is_refused_naming_np_resize():
    with pytest.raises(UnsupportedOpError, match=r"ndarray.resize is not supported during capture: .*"
                                                 r"np.resize\(a, new_shape\)"):
        tpe.export(lambda x: x.resize((3,)), *floats(4), dynamic_shapes=SPEC)


def test_draft_export_reports_the_resize_refusal_instead_of_running_it_opaquely():
    # an opaque op cannot write the array in place: draft files the refusal, with what to write
    def fn(x):
        y = x * 2.0
        y.resize((3, 3))
        return y

    report = tpe.draft_export(fn, *floats(4), dynamic_shapes=SPEC)
    assert [f.kind for f in report.failures] == ["unsupported_call"]
    assert "np.resize(a, new_shape)" in report.failures[0].message
