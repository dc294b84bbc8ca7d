"""End to end: guards that used to get no fix, or a fix refusing sizes the model handles.

Each case exports, applies the printed block with one refine step, exports again, and runs the
refined program against eager numpy on sizes the fix admits (and, where the old fix was too
narrow, on the sizes it used to refuse).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

pytestmark = pytest.mark.z3


def refine_once(model, *args, dynamic_shapes):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, *args, dynamic_shapes=dynamic_shapes)
    err = info.value
    assert "Suggested fixes:" in str(err), str(err)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), dynamic_shapes)
    return err, spec, tpe.export(model, *args, dynamic_shapes=spec)


def same(ep, model, *args):
    np.testing.assert_allclose(ep.module()(*args), model(*args))


def bounded_product(x, y):
    return x if x.shape[0] * y.shape[0] <= 30 else y


def test_a_product_bound_gets_a_box_that_closes_in_one_step():
    err, spec, ep = refine_once(bounded_product, np.ones(6), np.ones(5),
                                dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})
    assert sorted(err.fixes) == ["a = Dim('a', max=6)", "b = Dim('b', max=5)"]
    for a, b in ((1, 1), (6, 5), (3, 2)):
        same(ep, bounded_product, np.ones(a), np.ones(b))


def test_batchnorm_in_training_mode_gets_a_fix_for_its_element_count():
    bn = nn.BatchNorm2d(3).train()
    spec = {"x": {0: Dim("b"), 2: Dim("h"), 3: Dim("w")}}
    err, refined, ep = refine_once(bn, np.ones((4, 3, 5, 5), np.float32), dynamic_shapes=spec)
    assert len(err.fixes) == 1 and "min=2" in err.fixes[0]


def early_out_on_empty(x):
    if x.size == 0:
        return x
    return x / x.max()


def test_an_early_out_on_an_empty_array_gets_min_1_on_both_dims():
    spec = {"x": {0: Dim("a", min=0, max=64), 1: Dim("b", min=0, max=64)}}
    err, refined, ep = refine_once(early_out_on_empty, np.ones((4, 4), np.float32), dynamic_shapes=spec)
    assert sorted(err.fixes) == ["a = Dim('a', max=64)", "b = Dim('b', max=64)"]
    same(ep, early_out_on_empty, np.full((1, 64), 2.0, np.float32))


def branch_on_equal_sizes(y, z):
    if y.shape[0] == z.shape[0]:
        return y + z
    return y.sum() + z.sum()


def test_a_branch_on_two_sizes_differing_gets_a_box_on_the_example_side():
    err, spec, ep = refine_once(branch_on_equal_sizes, np.ones(3), np.ones(4),
                                dynamic_shapes={"y": {0: Dim("b")}, "z": {0: Dim("c")}})
    assert sorted(err.fixes) == ["b = Dim('b', max=3)", "c = Dim('c', min=4)"]
    same(ep, branch_on_equal_sizes, np.ones(1), np.ones(40))


def always_even_product(x):
    a = x.shape[0]
    if (a * (a + 1)) // 2 * 2 == a * (a + 1):
        return x + 1
    return x - 1


def test_a_guard_true_at_every_size_exports_with_the_full_range():
    # z3 alone cannot decide it; before, the fix a = 2*_a + 1 refused every even size
    ep = tpe.export(always_even_product, np.ones(5), dynamic_shapes={"x": {0: Dim("a")}})
    assert [(int(v.lower), v.upper) for v in ep.range_constraints.values()] == [(1, float("inf"))]
    for a in (1, 4, 5, 64):
        same(ep, always_even_product, np.ones(a))


def regroup_by_four(x):
    return x.reshape(-1, 4)


def test_a_reshape_of_a_product_gets_the_widest_lattices():
    spec = {"x": {0: Dim("a", max=40), 1: Dim("b", max=40)}}
    err, refined, ep = refine_once(regroup_by_four, np.ones((2, 6)), dynamic_shapes=spec)
    assert "a = 2*_a" in err.fixes and "b = 2*_b" in err.fixes
    same(ep, regroup_by_four, np.ones((4, 2)))   # a = 4*_a + 2 refused it


def window_size(x):
    _, h, w, _ = x.shape
    ws = 4
    if min(h, w) <= ws:
        ws = min(h, w)
    ph, pw = (-h) % ws, (-w) % ws
    x = np.pad(x, ((0, 0), (0, ph), (0, pw), (0, 0)))
    return x.reshape(x.shape[0], x.shape[1] // ws, ws, x.shape[2] // ws, ws, x.shape[3]).mean((2, 4))


def test_auto_dims_take_the_lower_bound_of_a_min_guard_as_their_ranges():
    ep = tpe.export(window_size, np.ones((1, 9, 7, 4), np.float32), dynamic_shapes={"x": {1: Dim.AUTO, 2: Dim.AUTO}})
    assert sorted((int(v.lower), v.upper) for v in ep.range_constraints.values()) == [(5, float("inf"))] * 2
    same(ep, window_size, np.ones((1, 5, 12, 4), np.float32))
    with pytest.raises(tpe.ConstraintsExceededError, match=r"\[5, inf\]"):
        ep.module()(np.ones((1, 3, 9, 4), np.float32))


def smaller_of_two(x, y):
    tpe.check(min(x.shape[0], y.shape[0]) <= 12)
    return x.sum() + y.sum()


def test_a_bound_on_a_min_bounds_one_argument_only():
    # at (19, 3) the example's branch is b; b <= 12 alone makes the guard hold (min <= b), so the
    # fix leaves a free: (5, 3) runs (the branch condition b <= a, kept as an atom, refused it)
    err, spec, ep = refine_once(smaller_of_two, np.ones(19), np.ones(3),
                                dynamic_shapes={"x": {0: Dim("a", max=64)}, "y": {0: Dim("b", min=3)}})
    assert err.fixes == ["b = Dim('b', min=3, max=12)"]
    for a, b in ((5, 3), (64, 12), (1, 7)):
        same(ep, smaller_of_two, np.ones(a), np.ones(b))


def eighths(x, y):
    tpe.check(y.shape[0] // 8 == x.shape[0])
    return x.sum() + y.sum()


def test_a_bounded_floor_equality_gets_its_level_set_when_that_is_wider():
    # b // 8 == a with b <= 20 at (2, 20): the relation b = 8*a + 4 leaves one size, (2, 20); the
    # level set a = 2, b in [16, 20] holds five, and each of them runs
    err, spec, ep = refine_once(eighths, np.ones(2), np.ones(20),
                                dynamic_shapes={"x": {0: Dim("a", min=2)}, "y": {0: Dim("b", max=20)}})
    for b in range(16, 21):
        same(ep, eighths, np.ones(2), np.ones(b))


def always_divisible(x, y):
    a, b = x.shape[0], y.shape[0]
    tpe.check((a ** 5 * b - a * b ** 5) % 30 == 0)  # true for every a, b (Fermat), hard for z3
    return x.sum() + y.sum()


def test_a_guard_reported_without_a_fix_gets_no_fix_lines():
    # when the solver cannot prove a guard under the fixes the search found, the bullet says
    # "no suggested fix": the block then prints no line about that guard's dims either
    try:
        tpe.export(always_divisible, np.ones(5), np.ones(3),
                   dynamic_shapes={"x": {0: Dim("a", max=1000)}, "y": {0: Dim("b", max=1000)}})
    except tpe.ConstraintViolationError as err:
        for v in err.violations:
            if v.unfixable is not None:
                assert not any(name in line for line in err.fixes for name in ("a", "b")), str(err)
        assert ("no suggested fix" in str(err)) != ("Suggested fixes:" in str(err)), str(err)
