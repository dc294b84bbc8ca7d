"""numpy functions of sizes: ``np.sqrt(n)``, ``np.ceil(n / 3)``, ``np.isclose(n, 5)`` are traced ops
(0-d arrays numpy computes at run time, with its own float semantics), and a value read from an
array numpy computed from sizes alone specializes those sizes (with a reason) instead of being
called data.

Each model is checked against eager numpy at sizes other than the example: the program either
computes what eager computes (same values, same dtype) or refuses the size with
ConstraintsExceededError; it never returns something else.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

SIZES = (2, 3, 7, 9, 16, 17, 30, 50)
TABLE = np.arange(100.0) ** 2


def _check_against_eager(fn, ep):
    admitted = []
    for n in SIZES:
        y = np.arange(float(n))
        try:
            got = ep.module()(y)
        except tpe.ConstraintsExceededError:
            continue
        want = fn(y)
        assert got.dtype == want.dtype and got.shape == want.shape, n
        np.testing.assert_allclose(got, want, err_msg=f"n = {n}")
        admitted.append(n)
    return admitted


def _auto(fn):
    return tpe.export(fn, np.arange(16.0), dynamic_shapes=({0: tpe.Dim.AUTO},))


# symbolic: every size admitted, values and dtypes as eager's
SYMBOLIC = {
    "ceil": lambda x: x * np.ceil(x.shape[0] / 3),
    "floor": lambda x: x * np.floor(x.shape[0] / 2),
    "rint": lambda x: x * np.rint(x.shape[0] / 4),
    "round": lambda x: x * np.round(x.shape[0] / 3),
    "around of an int": lambda x: x[: np.around(x.shape[0]) // 2],
    "trunc": lambda x: x * np.trunc(x.shape[0] / 5),
    "sqrt times array": lambda x: x * np.sqrt(x.shape[0]),
    "float32 array, float64 sqrt": lambda x: x.astype(np.float32) * np.sqrt(x.shape[0]),
    "round to a decimal": lambda x: x * np.round(x.shape[0] / 3, 1),
    "isclose of a size": lambda x: x * np.isclose(x.shape[0], 9),
    "clip of a size as a bound": lambda x: x[: np.clip(x.shape[0] - 3, 1, 8)],
    "sqrt of a negative size expression is nan": lambda x: x * np.nan_to_num(np.sqrt(x.shape[0] - 5.0), nan=-1.0),
}


@pytest.mark.parametrize("name", sorted(SYMBOLIC))
def test_numpy_functions_of_sizes_stay_dynamic(name):
    fn = SYMBOLIC[name]
    ep = _auto(fn)
    assert ep.range_constraints, "the size was specialized"
    assert _check_against_eager(fn, ep) == list(SIZES)


def test_np_round_of_a_size_has_eager_type():
    seen = {}

    def fn(x):
        seen["int"] = type(np.round(x.shape[0]))
        seen["float"] = type(np.round(x.shape[0] / 3))
        return x

    _auto(fn)
    assert seen == {"int": type(np.round(16)), "float": type(np.round(16 / 3))}


# reads of arrays computed from sizes: the sizes are pinned, the program is right at the example
PINNED = {
    "int of sqrt": lambda x: x[: int(np.sqrt(x.shape[0]))],
    "int of ceil": lambda x: x[: int(np.ceil(x.shape[0] / 3))],
    "int of log2": lambda x: x[: int(np.log2(x.shape[0]))],
    "int of a sum": lambda x: x[: int(np.arange(x.shape[0]).sum()) % 5 + 1],
    "bool of a comparison": lambda x: x * 2 if bool(np.ones(x.shape[0]).sum() > 3) else x,
    "constant table at a size": lambda x: x * float(TABLE[x.shape[0]]),
    "tolist": lambda x: x[: len(np.arange(x.shape[0]).tolist()) // 2],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_value_reads_of_size_arrays_specialize_the_sizes(name):
    fn = PINNED[name]
    ep = _auto(fn)
    assert _check_against_eager(fn, ep) == [16]
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.arange(9.0))


def test_a_named_dim_gets_the_reason_and_a_fix_that_closes_in_one_step():
    def fn(x):
        k = int(np.log2(x.shape[0]))
        return x[:k]

    spec = {"x": {0: tpe.Dim("n")}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(fn, np.arange(16.0), dynamic_shapes=spec)
    text = str(info.value)
    assert "array numpy computed from sizes" in text and "specialized to 16" in text
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(fn, np.arange(16.0), dynamic_shapes=fixed)
    np.testing.assert_array_equal(ep.module()(np.arange(16.0)), fn(np.arange(16.0)))


def test_reads_of_data_stay_data_dependent():
    with pytest.raises(tpe.DataDependentError, match="it is data, not a size"):
        _auto(lambda x: x[: int(x[0])])
    with pytest.raises(tpe.DataDependentError):
        _auto(lambda x: x * float(np.sqrt(np.count_nonzero(x > 3))))


def test_a_parameter_is_data_not_a_constant():
    class M(tpe.nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = tpe.nn.Parameter(np.ones(100))

        def forward(self, x):
            return x[: int(self.scale[x.shape[0]]) + 1]

    with pytest.raises(tpe.DataDependentError):
        tpe.export(M(), np.arange(16.0), dynamic_shapes=({0: tpe.Dim.AUTO},))


def test_math_functions_still_pin_as_documented():
    # math.sqrt / math.isqrt take a Python float / int: CPython needs a real number there
    for fn in (lambda x: x[: int(math.sqrt(x.shape[0]))], lambda x: x[: math.isqrt(x.shape[0])]):
        ep = _auto(fn)
        assert _check_against_eager(fn, ep) == [16]


def test_math_sqrt_of_a_negative_size_expression_is_a_requirement():
    spec = {"x": {0: Dim("n", max=100)}}
    with pytest.raises(tpe.ConstraintViolationError, match="math domain error") as info:
        tpe.export(lambda x: x * math.sqrt(x.shape[0] - 5), np.ones((9, 2)), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(lambda x: x * math.sqrt(x.shape[0] - 5), np.ones((9, 2)), dynamic_shapes=fixed)
    np.testing.assert_allclose(ep.module()(np.ones((5, 2))), np.zeros((5, 2)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((4, 2)))


@pytest.mark.parametrize("dtype, largest", [(np.int8, 3), (np.uint8, 6), (np.int16, 819)])
def test_a_size_in_a_narrow_integer_array_must_fit_its_dtype(dtype, largest):
    model = lambda x: np.array([x.shape[0] * 40], dtype=dtype)  # noqa: E731
    spec = {"x": {0: Dim("n", max=1000)}}
    with pytest.raises(tpe.ConstraintViolationError, match="OverflowError") as info:
        tpe.export(model, np.ones((3, 3)), dynamic_shapes=spec)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.ones((3, 3)), dynamic_shapes=fixed)
    assert ep.module()(np.ones((largest, 3)))[0] == largest * 40
    with pytest.raises(OverflowError):
        model(np.ones((largest + 1, 3)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((largest + 1, 3)))


def test_int_and_float_methods_of_sizes_pin_with_a_reason():
    import pickle

    cases = {
        "to_bytes": lambda x: x * x.shape[0].to_bytes(2, "little")[0],
        "bit_count": lambda x: x * x.shape[0].bit_count(),
        "pickle": lambda x: x * pickle.loads(pickle.dumps(x.shape[0])),
        "float hex": lambda x: x * len((x.shape[0] / 3).hex()),
        "float modulo": lambda x: x * ((x.shape[0] / 3) % 1.0),
        "is_integer": lambda x: x * (x.shape[0] / 2).is_integer(),
    }
    for name, fn in cases.items():
        ep = _auto(fn)
        assert _check_against_eager(fn, ep) == [16], name
        with pytest.raises(tpe.ConstraintViolationError, match="specialized"):
            tpe.export(fn, np.arange(16.0), dynamic_shapes={"x": {0: Dim("n")}})


def test_a_broadcast_the_example_itself_cannot_do_is_numpys_error_at_the_line():
    with pytest.raises(tpe.CaptureError, match=r"operands could not be broadcast together") as info:
        tpe.export(lambda x: x + np.zeros((1, 512)), np.ones((2, 16)), dynamic_shapes={"x": {1: Dim("m")}})
    assert "internal error" not in str(info.value) and "test_numpy_of_sizes.py" in str(info.value)


def test_as_strided_of_a_traced_array_is_refused_with_what_to_use():
    with pytest.raises(tpe.UnsupportedOpError, match="sliding_window_view") as info:
        tpe.export(lambda x: np.lib.stride_tricks.as_strided(x, (x.shape[0] - 1, 2, 3), (12, 12, 4)).sum(1),
                   np.ones((4, 3), np.float32), dynamic_shapes={"x": {0: Dim("n")}})
    assert "as_strided" in str(info.value) and "test_numpy_of_sizes.py" in str(info.value)
