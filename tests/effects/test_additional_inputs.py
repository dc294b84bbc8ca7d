"""AdditionalInputs where sizes vary together (issue 16 item 6): equal in every set -> one shared dim."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim


def add(x, y):
    return x + y


def _sets(*pairs):
    ai = tpe.AdditionalInputs()
    for n, m in pairs:
        ai.add((np.ones((n, 3)), np.ones((m, 3))))
    return ai


def test_axes_equal_in_every_set_share_one_dim_and_export():
    ai = _sets((2, 2), (9, 9))
    ep = tpe.export(add, np.ones((5, 3)), np.ones((5, 3)), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: Dim("x_dim0")}, "y": {0: Dim("x_dim0")}}
    assert ai.spec["x"][0] is ai.spec["y"][0]
    assert [s.name for s in ep.range_constraints] == ["x_dim0"]
    ai.verify(ep)
    run = ep.module()
    np.testing.assert_allclose(run(np.full((13, 3), 2.0), np.ones((13, 3))), np.full((13, 3), 3.0))
    with pytest.raises(tpe.ConstraintsExceededError):
        run(np.ones((4, 3)), np.ones((5, 3)))


def test_axes_that_differ_in_one_set_are_not_tied():
    # equal at the example and in one set, different in another: two DYNAMIC axes; x + y ties them
    # (torch.export's Dim.DYNAMIC), and the set (4, 7) is outside that contract: export says which
    ai = _sets((2, 2), (4, 7))
    assert ai.dynamic_shapes(add, (np.ones((5, 3)), np.ones((5, 3)))) == {"x": {0: Dim.DYNAMIC},
                                                                        "y": {0: Dim.DYNAMIC}}
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(add, np.ones((5, 3)), np.ones((5, 3)), dynamic_shapes=ai)
    assert str(info.value).startswith("AdditionalInputs set 1 (x.shape[0] = 4, y.shape[0] = 7) is outside the "
                                      "exported program's contract: y.shape[0] = 7 must equal x.shape[0] = 4 "
                                      "(dim x_dim0).")


def test_axes_varying_alone_take_the_relation_the_model_needs_when_every_set_fits():
    ai = _sets((2, 3), (6, 7))
    ep = tpe.export(lambda x, y: x + y[1:], np.ones((4, 3)), np.ones((5, 3)), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}}
    ai.verify(ep)
    run = ep.module()
    x, y = np.arange(27.0).reshape(9, 3), np.arange(30.0).reshape(10, 3)
    np.testing.assert_array_equal(run(x, y), x + y[1:])
    with pytest.raises(tpe.ConstraintsExceededError):
        run(np.ones((4, 3)), np.ones((4, 3)))


def test_verify_names_a_set_the_program_refuses():
    ai = _sets((2, 2), (6, 6))
    ep = tpe.export(add, np.ones((5, 3)), np.ones((5, 3)), dynamic_shapes={"x": {0: Dim("n", max=5)},
                                                                            "y": {0: Dim("n", max=5)}})
    with pytest.raises(tpe.ConstraintsExceededError, match=r"^AdditionalInputs set 1 is outside the program's "
                                                          r"contract: x.shape\[0\] = 6"):
        ai.verify(ep)


def test_only_equalities_are_inferred():
    # m = 2*n in every set: no relation is guessed, each axis is its own dynamic dim
    def model(x, y):
        return x.sum() + y.sum()

    ai = _sets((2, 4), (3, 6))
    spec = ai.dynamic_shapes(model, (np.ones((5, 3)), np.ones((10, 3))))
    assert spec == {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}}


def test_a_shared_dim_admits_zero_when_a_set_is_empty():
    ai = _sets((0, 0), (6, 6))
    spec = ai.dynamic_shapes(add, (np.ones((5, 3)), np.ones((5, 3))))
    assert spec["x"][0].min == 0
    ep = tpe.export(add, np.ones((5, 3)), np.ones((5, 3)), dynamic_shapes=ai)
    assert ep.module()(np.ones((0, 3)), np.ones((0, 3))).shape == (0, 3)


def test_a_shared_dim_takes_the_modulus_the_model_needs():
    # a shared dim is a Dim.DYNAMIC axis over its sites: the even row count joins the contract
    def model(x, y):
        return (x + y).reshape(-1, 6)   # needs an even row count

    ai = _sets((2, 2), (6, 6))
    ep = tpe.export(model, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=ai)
    assert ai.shared == {"x_dim0"} and [str(s) for s in ep.range_constraints] == ["x_dim0"]
    ai.verify(ep)
    x = np.arange(24.0).reshape(8, 3)
    np.testing.assert_array_equal(ep.module()(x, np.ones((8, 3))), (x + 1).reshape(-1, 6))
    for n, m in ((7, 7), (8, 6)):     # odd rows; the axes apart
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(np.ones((n, 3)), np.ones((m, 3)))


def test_a_specialization_refusing_a_set_gets_no_fix_and_the_bullet_names_the_set():
    def model(x, y):
        return (x + y) * np.ones((4, 1))   # pins the shared dim to 4: a specialization

    ai = _sets((4, 4), (4, 4))
    ai.add((np.ones((6, 3)), np.ones((6, 3))))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=ai)
    text = str(info.value)
    assert "x_dim0 = x.shape[0] = y.shape[0] was specialized to 4" in text
    # the fix x_dim0 = 4 would refuse set 2 (size 6): no fix line, and the bullet says why
    assert info.value.fixes == [] and "example set 2 (x_dim0 = 6)" in text
    with pytest.raises(ValueError, match="no suggested fixes to apply"):
        tpe.refine_dynamic_shapes_from_suggested_fixes(text, ai)


def test_refine_accepts_the_object_and_returns_the_explicit_spec_dict():
    def model(x, y):
        return (x + y) * np.ones((4, 1))

    # export's own fixes never refuse a set (above); a block written by hand still refines the
    # object's explicit spec, as torch's refine takes the spec the object inferred
    ai = _sets((2, 2), (9, 9))
    ep = tpe.export(lambda x, y: x + y, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=ai)
    ai.verify(ep)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  x_dim0 = 4", ai)
    assert isinstance(fixed, dict) and fixed == {"x": {0: 4}, "y": {0: 4}}
    ep = tpe.export(model, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=fixed)
    x = np.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(ep.module()(x, x), 2 * x)


def test_refine_of_an_unused_object_says_to_export_first():
    with pytest.raises(ValueError, match="export with it first"):
        tpe.refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  n = 4", _sets((2, 2)))


def test_a_lone_axis_empty_in_one_set_is_dynamic_from_zero():
    ai = tpe.AdditionalInputs()
    ai.add((np.ones((0, 3)), np.ones(4)))
    ai.add((np.ones((6, 3)), np.ones(4)))
    ep = tpe.export(lambda x, w: x * w[:3], np.ones((2, 3)), np.ones(4), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: Dim.DYNAMIC(min=0)}, "w": None}
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(0, float("inf"))]
    ai.verify(ep)
    np.testing.assert_array_equal(ep.module()(np.ones((0, 3)), np.ones(4)), np.ones((0, 3)))
    np.testing.assert_array_equal(ep.module()(np.full((5, 3), 2.0), np.ones(4)), np.full((5, 3), 2.0))


def test_a_non_array_input_that_differs_between_sets_is_refused_by_name():
    ai = tpe.AdditionalInputs()
    ai.add((np.ones((2, 3)),), {"scale": 1.5})
    ai.add((np.ones((4, 3)),), {"scale": 2.0})

    def model(x, *, scale):
        return x * scale

    with pytest.raises(ValueError, match=r"input 'scale' is 2.0, but the export example has 1.5"):
        tpe.export(model, np.ones((3, 3)), scale=1.5, dynamic_shapes=ai)
    # the same value in every set is fine: a constant of the program
    same = tpe.AdditionalInputs()
    same.add((np.ones((2, 3)),), {"scale": 1.5})
    same.add((np.ones((4, 3)),), {"scale": 1.5})
    ep = tpe.export(model, np.ones((3, 3)), scale=1.5, dynamic_shapes=same)
    same.verify(ep)
    np.testing.assert_array_equal(ep.module()(np.ones((7, 3)), scale=1.5), np.full((7, 3), 1.5))
