"""Numpy integers where numpy takes an int: shape rules see them as the Python ints numpy reads.

numpy reads an axis, a shape entry, a section count, a pad width, ``tensordot``'s ``axes``, a
``delete`` index ... through ``operator.index``, so ``np.int64(2)``, ``np.int32(2)`` and a
constant 0-d integer array holding 2 mean what ``2`` means.  Such values come from any numpy
arithmetic on sizes (``np.prod(x.shape) // 4``).  The registry hands every integer parameter
to the rule through ``as_index`` (one place for every op); a numpy scalar used as a value
(a ufunc operand, a fill value) keeps its dtype.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy

from _exact import same_as_eager
from tensorplay_export import Dim
from tensorplay_export.ops.registry import INDEX_PARAMS, ArrayInfo, as_index
from test_bare_ctx import _all_cases, run_bare

# np.intp is np.int64 on 64-bit platforms: the same type counts once
NUMPY_INTS = tuple(dict.fromkeys((np.int64, np.int32, np.int16, np.intp)))


def _with(value, kind):
    """``value`` with every Python int in it (not bools) replaced by ``kind(int)``."""
    if type(value) is int:
        return kind(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_with(v, kind) for v in value)
    if isinstance(value, dict):
        return {k: _with(v, kind) for k, v in value.items()}
    return value


def _has_int(value):
    if type(value) is int:
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_int(v) for v in value)
    if isinstance(value, dict):
        return any(_has_int(v) for v in value.values())
    return False


_INT_CASES = [p for p in _all_cases() if _has_int(p.values[1:])]


# -- every registered rule, on the bare ctx's calls: numpy ints give what Python ints give ---------
@pytest.mark.parametrize("kind", [np.int64, np.int32], ids=["int64", "int32"])
@pytest.mark.parametrize("name,args,kwargs", _INT_CASES)
def test_rule_sees_numpy_ints_as_python_ints(name, args, kwargs, kind):
    ctx, shapes, _ = run_bare(name, args, kwargs)
    n_ctx, n_shapes, n_outs = run_bare(name, _with(args, kind), _with(kwargs, kind))
    assert n_shapes == shapes, (name, shapes, n_shapes)
    assert [(r.expr, r.kind) for r in n_ctx.recorded] == [(r.expr, r.kind) for r in ctx.recorded], name
    for shape, out in zip(n_shapes, n_outs):
        assert all(isinstance(d, (int, sympy.Basic)) and not isinstance(d, np.integer) for d in shape), shape
        assert tuple(n_ctx.hint(d) for d in shape) == np.shape(out), (name, shape, np.shape(out))


def test_the_sweep_covers_the_size_taking_ops():
    names = {p.values[0] for p in _INT_CASES}
    for op in ("numpy.reshape", "numpy.ndarray.reshape", "numpy.split", "numpy.array_split", "numpy.hsplit",
               "numpy.pad", "numpy.tensordot", "numpy.delete", "numpy.insert", "numpy.tile", "numpy.repeat",
               "numpy.roll", "numpy.moveaxis", "numpy.eye", "numpy.fft.rfft", "numpy.diff"):
        assert op in names, op


# -- end to end: export with a dynamic dim, eager numpy bit for bit at other sizes, archive round trip --
def _int_arg_models(I):  # noqa: E741
    """Models passing the numpy integer type ``I`` wherever numpy takes an int; x is (n, 6)."""
    return {
        "reshape(I(-1), 3)": lambda x: x.reshape(I(-1), 3),
        "reshape((I(-1), I(2)))": lambda x: x.reshape((I(-1), I(2))),
        "reshape([2, I(-1)])": lambda x: x.reshape([2, I(-1)]),
        "np.reshape(x, (3, I(-1)))": lambda x: np.reshape(x, (3, I(-1))),
        "split(x, I(2), axis=1)": lambda x: np.split(x, I(2), axis=1),
        "split(x, [I(1), I(4)], axis=I(1))": lambda x: np.split(x, [I(1), I(4)], axis=I(1)),
        "array_split(x, I(4), axis=1)": lambda x: np.array_split(x, I(4), axis=1),
        "hsplit(x, I(3))": lambda x: np.hsplit(x, I(3)),
        "pad(x, I(2))": lambda x: np.pad(x, I(2)),
        "pad(x, (I(1), I(2)))": lambda x: np.pad(x, (I(1), I(2))),
        "pad(x, ((I(1), 0), (I(0), I(3))), edge)": lambda x: np.pad(x, ((I(1), 0), (I(0), I(3))), mode="edge"),
        "tensordot(x, x.T, axes=I(1))": lambda x: np.tensordot(x, x.T, axes=I(1)),
        "tensordot(x, x, axes=([I(0)], [I(0)]))": lambda x: np.tensordot(x, x, axes=([I(0)], [I(0)])),
        "delete(x, I(-1), axis=0)": lambda x: np.delete(x, I(-1), axis=0),
        "delete(x, I(1), axis=I(1))": lambda x: np.delete(x, I(1), axis=I(1)),
        "insert(x, I(1), 0.0, axis=I(1))": lambda x: np.insert(x, I(1), 0.0, axis=I(1)),
        "insert(x, I(0), 7.0, axis=0)": lambda x: np.insert(x, I(0), 7.0, axis=0),
        "sum(axis=I(1))": lambda x: x.sum(axis=I(1)),
        "mean(axis=(I(0), I(-1)), keepdims)": lambda x: x.mean(axis=(I(0), I(-1)), keepdims=True),
        "concatenate(axis=I(1))": lambda x: np.concatenate([x, x], axis=I(1)),
        "stack(axis=I(-1))": lambda x: np.stack([x, x], axis=I(-1)),
        "expand_dims(x, I(0))": lambda x: np.expand_dims(x, I(0)),
        "moveaxis(x, I(0), I(-1))": lambda x: np.moveaxis(x, I(0), I(-1)),
        "swapaxes(x, I(0), I(1))": lambda x: np.swapaxes(x, I(0), I(1)),
        "transpose(I(1), I(0))": lambda x: x.transpose(I(1), I(0)),
        "roll(x, I(2), axis=I(1))": lambda x: np.roll(x, I(2), axis=I(1)),
        "repeat(x, I(2), axis=I(0))": lambda x: np.repeat(x, I(2), axis=I(0)),
        "tile(x, (I(2), I(1)))": lambda x: np.tile(x, (I(2), I(1))),
        "diff(x, n=I(2), axis=I(1))": lambda x: np.diff(x, n=I(2), axis=I(1)),
        "cumsum(x, axis=I(0))": lambda x: np.cumsum(x, axis=I(0)),
        "argmax(x, axis=I(1))": lambda x: np.argmax(x, axis=I(1)),
        "take(x, [0, 2], axis=I(1))": lambda x: np.take(x, [0, 2], axis=I(1)),
        "flip(x, axis=I(0))": lambda x: np.flip(x, axis=I(0)),
        "tril(x, k=I(-1))": lambda x: np.tril(x, k=I(-1)),
        "diagonal(x, offset=I(1))": lambda x: np.diagonal(x, offset=I(1)),
        "rfft(x, n=I(8), axis=I(1))": lambda x: np.fft.rfft(x, n=I(8), axis=I(1)),
        "round(x, decimals=I(1))": lambda x: np.round(x, decimals=I(1)),
        "zeros((n, I(3)))": lambda x: np.zeros((x.shape[0], I(3)), dtype=x.dtype),
        "eye(n, k=I(1))": lambda x: np.eye(x.shape[0], k=I(1)),
        "var(x, axis=I(1), ddof=I(1))": lambda x: np.var(x, axis=I(1), ddof=I(1)),
        "broadcast_to(x[:, :1], (n, I(4)))": lambda x: np.broadcast_to(x[:, :1], (x.shape[0], I(4))),
        "partition(x, I(2), axis=I(1))": lambda x: np.partition(x, I(2), axis=I(1)),
    }


def _make(n):
    return (np.arange(n * 6, dtype=np.float32).reshape(n, 6) * 0.5 - 3.0,)


_E2E = [pytest.param(I, label, id=f"{np.dtype(I).name}-{label}") for I in NUMPY_INTS for label in _int_arg_models(I)]


@pytest.mark.parametrize("kind,label", _E2E)
def test_numpy_int_argument_exports_and_matches_eager(kind, label):
    fn = _int_arg_models(kind)[label]
    same_as_eager(fn, _make, {"x": {0: Dim("n", max=64)}}, 4, (1, 3, 9))


def test_static_export_with_numpy_ints_matches_eager():
    # no dynamic dim at all: the rule's shape must still be numpy's (it was (-1, 4) for reshape)
    fn = lambda x: (x.reshape(np.int64(-1), 3), np.split(x, np.int64(2), axis=1)[1])  # noqa: E731
    same_as_eager(fn, _make, None, 4, (4,))


# -- constant 0-d integer arrays: numpy reads them by __index__ too -------------------------------
@pytest.mark.parametrize("label,fn", [
    ("reshape(np.array(-1), 3)", lambda x: x.reshape(np.array(-1), 3)),
    ("split(x, np.array(3), axis=1)", lambda x: np.split(x, np.array(3), axis=1)),
    ("pad(x, np.array(1))", lambda x: np.pad(x, np.array(1))),
    ("sum(axis=np.array(1))", lambda x: x.sum(axis=np.array(1))),
    ("roll(x, np.array(2, np.int32), axis=1)", lambda x: np.roll(x, np.array(2, np.int32), axis=1)),
], ids=lambda v: v if isinstance(v, str) else "")
def test_constant_zero_d_int_array_as_int_argument(label, fn):
    same_as_eager(fn, _make, {"x": {0: Dim("n", max=64)}}, 4, (1, 3, 9))


# -- numpy scalars as values keep their dtype ----------------------------------------------------
@pytest.mark.parametrize("label,fn", [
    ("int8 array + np.int32(1)", lambda x: x.astype(np.int8) + np.int32(1)),
    ("int8 array * np.int64(3)", lambda x: x.astype(np.int8) * np.int64(3)),
    ("float32 array + np.float64(2.0)", lambda x: x + np.float64(2.0)),
    ("full((n, 2), np.int32(3))", lambda x: np.full((x.shape[0], np.int64(2)), np.int32(3))),
    ("clip(int8, np.int16(0), np.int16(2))", lambda x: np.clip(x.astype(np.int8), np.int16(0), np.int16(2))),
    ("where(x > 0, x, np.float64(2.0))", lambda x: np.where(x > 0, x, np.float64(2.0))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_numpy_scalar_values_keep_their_dtype(label, fn):
    same_as_eager(fn, _make, {"x": {0: Dim("n", max=64)}}, 4, (1, 3, 9))


# -- as_index itself --------------------------------------------------------------------------------
def test_as_index_reads_as_operator_index_does():
    n = sympy.Symbol("n", integer=True, positive=True)
    for kind in (np.int64, np.int32, np.uint8, np.intp):
        out = as_index(kind(3))
        assert type(out) is int and out == 3
    assert as_index((np.int64(1), [np.int32(2), 3])) == (1, [2, 3])
    assert type(as_index((np.int64(1),))[0]) is int
    plain = (1, 2)
    assert as_index(plain) is plain  # nothing to convert: the same object
    zero_d = ArrayInfo((), np.dtype(np.int64), (5, 5))
    assert as_index(zero_d) == 5 and type(as_index(zero_d)) is int
    assert as_index(ArrayInfo((), np.dtype(np.int64), (n, n))) == n  # a size as a 0-d array
    for kept in (ArrayInfo((), np.dtype(np.int64), (0, 5)),      # values not one constant
                 ArrayInfo((), np.dtype(np.int64), None),        # unknown values (data)
                 ArrayInfo((2,), np.dtype(np.int64), (1, 1)),    # not 0-d
                 ArrayInfo((), np.dtype(np.float64), (1, 1)),    # numpy refuses a float index
                 np.True_, True, 2.5, np.float32(2.0), None, n):
        assert as_index(kept) is kept


def test_index_params_are_parameters_numpy_reads_as_ints():
    assert {"axis", "axes", "shape", "indices_or_sections", "pad_width", "repeats", "reps", "k", "obj",
            "n", "num"} <= INDEX_PARAMS
    # value parameters stay out: there a numpy scalar's dtype reaches the result
    assert not {"fill_value", "a_min", "a_max", "x1", "x2", "values", "start", "stop", "step",
                "constant_values"} & INDEX_PARAMS


def test_integer_parameters_are_read_from_signatures_at_the_first_call_not_at_registration(monkeypatch):
    """Registering the opset is on every load's import path, where no shape rule runs."""
    import inspect

    from tensorplay_export.ops import registry

    read = []
    real = inspect.signature
    monkeypatch.setattr(registry.inspect, "signature", lambda f, *a, **k: (read.append(f), real(f, *a, **k))[1])

    def rule(ctx, a, newshape):
        return newshape

    wrapped = registry._with_index_args(np.reshape, rule)
    assert read == []
    got = wrapped(None, np.ones(3), np.int64(3))
    assert got == 3 and type(got) is int
    assert read
    before = len(read)
    wrapped(None, np.ones(3), np.int64(3))
    assert len(read) == before  # read once
