"""Dim.AUTO(min=, max=) / Dim.DYNAMIC(min=, max=): ranged hints, enforced at export and at run time."""
from __future__ import annotations

import io
import math
import pickle

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

T8 = np.arange(8.0)


def test_hint_objects_compare_by_kind_and_range():
    assert Dim.AUTO() is Dim.AUTO and Dim.DYNAMIC(min=None, max=None) is Dim.DYNAMIC
    assert Dim.AUTO(min=2, max=8) == Dim.AUTO(min=2, max=8) != Dim.AUTO(min=2)
    assert Dim.AUTO(max=8) != Dim.DYNAMIC(max=8)
    assert repr(Dim.DYNAMIC(min=0, max=16)) == "Dim.DYNAMIC(min=0, max=16)"
    assert pickle.loads(pickle.dumps(Dim.AUTO(min=3))) == Dim.AUTO(min=3)
    assert pickle.loads(pickle.dumps(Dim.AUTO)) is Dim.AUTO


@pytest.mark.parametrize("make, err, text", [
    (lambda: Dim.STATIC(max=3), TypeError, "Dim.STATIC takes no range"),
    (lambda: Dim.AUTO(min=-1), ValueError, "negative"),
    (lambda: Dim.DYNAMIC(min=5, max=4), ValueError, "smaller than min=5"),
    (lambda: Dim.AUTO(max=2.5), TypeError, "must be an integer"),
])
def test_bad_hint_ranges_are_refused(make, err, text):
    with pytest.raises(err, match=text):
        make()


def test_auto_range_is_the_symbols_range_and_checked_after_a_roundtrip():
    ep = tpe.export(lambda x: x.reshape(-1, 2) * 2, np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO(min=2, max=8)}})
    (sym, vr), = ep.range_constraints.items()
    assert (vr.lower, vr.upper) == (2, 8)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    for prog in (ep, tpe.load(buf)):
        for n in (2, 6, 8):
            np.testing.assert_array_equal(prog.module()(np.arange(n * 1.0)), np.arange(n * 1.0).reshape(-1, 2) * 2)
        for n in (10, 5):   # above the range; odd (the AUTO axis's own guard)
            with pytest.raises(tpe.ConstraintsExceededError):
                prog.module()(np.ones(n))


def test_dynamic_range_bounds_the_axis_and_an_example_outside_is_refused():
    ep = tpe.export(lambda x: x + 1, np.ones(3), dynamic_shapes={"x": {0: Dim.DYNAMIC(min=0, max=5)}})
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(0, 5)]
    np.testing.assert_array_equal(ep.module()(np.ones(0)), np.ones(0) + 1)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones(6))
    with pytest.raises(tpe.ConstraintsExceededError, match=r"x.shape\[0\] = 9 is outside its Dim.AUTO\(max=8\)"):
        tpe.export(lambda x: x * 2, np.ones(9), dynamic_shapes={"x": {0: Dim.AUTO(max=8)}})


def test_a_ranged_dynamic_axis_refines_to_a_dim_inside_its_range():
    spec = {"x": {0: Dim.DYNAMIC(min=2, max=20)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(lambda x: x + T8[: x.shape[0]], np.ones(3), dynamic_shapes=spec)
    spec2 = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    assert spec2 == {"x": {0: Dim("x_dim0", min=2, max=8)}}
    ep = tpe.export(lambda x: x + T8[: x.shape[0]], np.ones(3), dynamic_shapes=spec2)
    np.testing.assert_array_equal(ep.module()(np.ones(8)), np.ones(8) + T8)
    assert math.isfinite(next(iter(ep.range_constraints.values())).upper)


def test_a_loaded_programs_dynamic_shapes_keep_the_hint_range():
    ep = tpe.export(lambda x: x * 2, np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO(min=2, max=8)}})
    assert ep.dynamic_shapes == {"x": {0: Dim.AUTO(min=2, max=8)}}
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    assert tpe.load(buf).dynamic_shapes == {"x": {0: Dim.AUTO(min=2, max=8)}}


def test_a_hostile_ranged_hint_is_refused_at_load():
    from tensorplay_export.errors import ArchiveError
    from tensorplay_export.serde.values import Decoder

    dec = Decoder("doc")
    assert dec.value({"k": "DimHint", "v": "DYNAMIC", "min": None, "max": 16}) == Dim.DYNAMIC(max=16)
    for bad in ({"k": "DimHint", "v": "AUTO", "min": "2", "max": 8},
                {"k": "DimHint", "v": "STATIC", "min": 1, "max": 2},
                {"k": "DimHint", "v": "AUTO", "min": 9, "max": 8}):
        with pytest.raises((ArchiveError, ValueError)):
            dec.value(bad)
