"""tpe.is_view / tpe.where_view (ops/aliasing.py): numpy's own view-or-copy answer, and the value it picks."""
import numpy as np
import pytest

from tensorplay_export.ops.ctx import ShapeCtx
from tensorplay_export.ops.registry import ArrayInfo, get_op


@pytest.mark.parametrize("make,view", [
    (lambda: np.ones((4, 3)), True),                       # C-contiguous: reshape(-1) is a view
    (lambda: np.ones((8, 3))[::2], False),                 # strided rows: a copy
    (lambda: np.asfortranarray(np.ones((4, 3))), False),   # Fortran order: a copy
    (lambda: np.asfortranarray(np.ones((1, 3))), True),    # one row is both C and F: a view
    (lambda: np.ones((8, 3))[::8], True),                  # one row of a strided view: a view
])
def test_is_view_is_numpys_answer_for_reshape(make, view):
    base = make()
    out = base.reshape(-1)
    flag = get_op("tpe.is_view").impl(out, base)
    assert isinstance(flag, np.bool_) and bool(flag) is view
    out[0] = 5.0  # and the answer is what a write through it does
    assert bool(base.flat[0] == 5.0) is view


def test_is_view_of_a_copy_and_of_scalars_is_false():
    a = np.ones(3)
    assert not get_op("tpe.is_view").impl(a.copy(), a)
    assert not get_op("tpe.is_view").impl(np.float64(1.0), a)


def test_where_view_returns_the_very_object():
    new, old = np.zeros(3), np.ones(3)
    where = get_op("tpe.where_view").impl
    assert where(new, old, np.bool_(True)) is new
    assert where(new, old, np.bool_(True), np.bool_(False)) is old
    assert where(new, old) is new  # no flag: nothing to decide


def test_where_view_rule_needs_one_shape():
    ctx = ShapeCtx.bare({}, {}, op="tpe.where_view", concrete=[(2, 3)])
    rule = get_op("tpe.where_view").shape_rule
    flag = ArrayInfo((), np.dtype(bool))
    assert rule(ctx, ArrayInfo((2, 3), np.dtype("f4")), ArrayInfo((2, 3), np.dtype("f4")), flag) == (2, 3)
    with pytest.raises(ValueError, match="dimensions"):
        rule(ctx, ArrayInfo((6,), np.dtype("f4")), ArrayInfo((2, 3), np.dtype("f4")), flag)


def test_layout_observing_ops_are_flagged_in_the_registry():
    from tensorplay_export.ops.registry import all_ops

    assert {name for name, op in all_ops().items() if op.observes_layout} == {"tpe.is_view"}
