"""A broadcast against a static size of another input names that input's axis and why it is static
(ArrayInfo.sites, set by capture for model inputs; the reason is the guard record's text)."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def add(x, y):
    return x + y


def _arrays(n, m=4):
    rng = np.random.default_rng(n)
    return rng.standard_normal((n, m)).astype(np.float32), rng.standard_normal((n, m)).astype(np.float32)


@pytest.mark.parametrize("y_spec, why", [
    (None, "3 (y.shape[0], static: no Dim for y in dynamic_shapes)"),
    ({}, "3 (y.shape[0], static: no Dim for y in dynamic_shapes)"),
    ({0: Dim.STATIC}, "3 (y.shape[0], static: no Dim for y in dynamic_shapes)"),
    ({1: Dim("m")}, "3 (y.shape[0], static: y's dynamic_shapes entry has no Dim for axis 0)"),
])
def test_broadcast_reason_names_the_static_partner(y_spec, why):
    n = Dim("n")
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(add, *_arrays(3), dynamic_shapes={"x": {0: n}, "y": y_spec})
    text = str(info.value)
    assert f"broadcasting in `+`: n with {why}" in text and "n == 3" in text


def test_partner_on_the_left_and_in_a_draft_record():
    report = tpe.draft_export(lambda x, y: y * x, *_arrays(3), dynamic_shapes={"x": {0: Dim("n")}, "y": None})
    reasons = [f.guard.reason for f in report.failures if getattr(f, "guard", None) is not None]
    assert any("3 (y.shape[0], static: no Dim for y in dynamic_shapes) with n" in r for r in reasons), reasons


def test_the_shared_dim_fix_exports_and_matches_eager():
    n = Dim("n", max=64)
    ep = tpe.export(add, *_arrays(3), dynamic_shapes={"x": {0: n}, "y": {0: n}})
    for size in (1, 2, 9):
        x, y = _arrays(size)
        np.testing.assert_array_equal(ep.module()(x, y), add(x, y))


def test_a_derived_or_dynamic_partner_gets_no_site_text():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(add, *_arrays(3), dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("k")}})
    assert "static" not in str(info.value).split("Suggested fixes")[0]


def test_concatenate_names_the_static_partner_too():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(lambda x, y: np.concatenate([x, y]), *_arrays(3), dynamic_shapes={"x": {1: Dim("m")}, "y": None})
    assert ("concatenate: axis 1 sizes m and 4 (y.shape[1], static: no Dim for y in dynamic_shapes) must match"
            in str(info.value))
    m = Dim("m", max=16)
    ep = tpe.export(lambda x, y: np.concatenate([x, y]), *_arrays(3), dynamic_shapes={"x": {1: m}, "y": {1: m}})
    for size in (1, 5):
        x, y = _arrays(3, size)
        np.testing.assert_array_equal(ep.module()(x, y), np.concatenate([x, y]))
