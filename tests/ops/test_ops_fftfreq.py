"""numpy.fft.fftfreq / rfftfreq of a dynamic length: traced ops whose result has ``n`` or
``n // 2 + 1`` entries (no specialization), values exactly numpy's at other sizes, float64,
the length's requirement (``n >= 1``), through save and load."""
from __future__ import annotations

import io

import numpy as np
import pytest
from numpy.fft import fftfreq as imported_fftfreq_original
from numpy.fft import rfftfreq as imported_rfftfreq

import tensorplay_export as tpe
from tensorplay_export.records import sympy

SPEC = ({0: tpe.Dim("n", min=2, max=128)},)
SIZES = (2, 3, 5, 8, 17, 64, 127)

MODELS = {
    "fftfreq": lambda x: np.fft.fftfreq(x.shape[0]),
    "fftfreq_d": lambda x: np.fft.fftfreq(x.shape[0], 0.1),
    "fftfreq_d_kw": lambda x: x * np.fft.fftfreq(x.shape[0], d=1 / 48000),
    "rfftfreq": lambda x: np.fft.rfftfreq(x.shape[0]),
    "rfftfreq_d": lambda x: np.fft.rfftfreq(x.shape[0], 0.25) * np.abs(np.fft.rfft(x)),
    "imported_name": lambda x: imported_rfftfreq(len(x), 2.5),
    "size_expression": lambda x: np.fft.fftfreq(2 * x.shape[0] - 1, 0.5),
    "floor_size": lambda x: np.fft.rfftfreq(x.shape[0] // 2 + 3),
    "array_d": lambda x: np.fft.fftfreq(x.shape[0], np.full(x.shape[0], 0.5)),
}


def _x(n):
    return np.cos(np.arange(n) * 0.7) + 0.25


@pytest.mark.parametrize("name", sorted(MODELS))
def test_values_exact_at_other_sizes(name):
    model = MODELS[name]
    ep = tpe.export(model, _x(6), dynamic_shapes=SPEC)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(2, 128)]  # not pinned to 6
    for n in SIZES:
        got, want = ep.module()(_x(n)), model(_x(n))
        assert got.shape == want.shape and got.dtype == want.dtype == np.float64
        np.testing.assert_array_equal(got, want)


def test_result_shape_is_symbolic():
    ep = tpe.export(lambda x: (np.fft.fftfreq(x.shape[0]), np.fft.rfftfreq(x.shape[0])), _x(6),
                    dynamic_shapes=SPEC)
    nodes = {n.target: n for n in ep.graph.nodes if n.op == "call_function"}
    (n,) = ep.range_constraints
    assert nodes["numpy.fft.fftfreq"].meta["shape"] == (n,)
    assert sympy.simplify(nodes["numpy.fft.rfftfreq"].meta["shape"][0] - (sympy.floor(n / 2) + 1)) == 0


def test_numpy_is_restored_after_capture():
    tpe.export(MODELS["fftfreq"], _x(6), dynamic_shapes=SPEC)
    assert not hasattr(np.fft.fftfreq, "__tpe_original__") and not hasattr(np.fft.rfftfreq, "__tpe_original__")
    assert np.fft.fftfreq is imported_fftfreq_original


def test_static_length_stays_numpys():
    ep = tpe.export(lambda x: x[:2] * np.fft.fftfreq(2, 0.5), _x(6), dynamic_shapes=SPEC)
    np.testing.assert_array_equal(ep.module()(_x(11)), _x(11)[:2] * np.fft.fftfreq(2, 0.5))


def test_round_trip_keeps_the_length_symbolic():
    model = MODELS["rfftfreq_d"]
    buf = io.BytesIO()
    tpe.save(tpe.export(model, _x(6), dynamic_shapes=SPEC), buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for n in (3, 40):
        np.testing.assert_array_equal(loaded.module()(_x(n)), model(_x(n)))


@pytest.mark.parametrize("fn", [np.fft.fftfreq, np.fft.rfftfreq])
def test_a_zero_length_is_a_violation_with_a_fix(fn):
    def model(x):
        return fn(x.shape[0] - 3)

    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, _x(6), dynamic_shapes=SPEC)
    assert "n = Dim('n', min=4, max=128)" in str(info.value)
    with pytest.raises(ZeroDivisionError):  # what numpy does at the size the fix excludes
        model(_x(3))
