"""Remainder guards over a product or a floor of two dims, the known gaps the two-input fuzz kept
meeting (``(n*d) % 3 == 0`` from ``x.reshape(3, -1)``, ``(x_dim0*x_dim1) % 2 == 0`` from
``reshape(-1, 2)`` on Dim.DYNAMIC axes, ``(b + a // 3) % 2 == 0``): each gets a lattice fix
that one refine step applies, and the refined program runs at sizes other than the example
exactly as numpy does, refusing only sizes outside the fixed contract."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

pytestmark = pytest.mark.z3


def fix_block(err) -> list:
    text = str(err)
    assert "Suggested fixes:" in text and "will not be enough" not in text, text
    return [ln.strip() for ln in text.split("Suggested fixes:")[1].splitlines() if ln.strip()]


def sweep(ep, model, shapes):
    """Run every shape tuple; compare with numpy where the contract admits it. The admitted ones."""
    rng = np.random.default_rng(0)
    admitted = []
    for shape in shapes:
        args = [rng.standard_normal(s) for s in shape]
        try:
            got = ep.module()(*args)
        except tpe.ConstraintsExceededError:
            continue
        want = model(*args)
        assert got.shape == want.shape, shape
        np.testing.assert_allclose(got, want, err_msg=str(shape))
        admitted.append(shape)
    return admitted


def test_rows_times_columns_divisible_by_three_keeps_the_columns_free():
    def model(x):
        return x.reshape(3, -1).sum(0)

    spec = {"x": {0: Dim("n"), 1: Dim("d")}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((6, 2)), dynamic_shapes=spec)
    assert fix_block(info.value) == ["_n = Dim('_n')", "n = 3*_n"]
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.ones((6, 2)), dynamic_shapes=fixed)
    admitted = sweep(ep, model, [[(n, d)] for n in range(1, 13) for d in range(1, 8)])
    assert admitted == [[(n, d)] for n in (3, 6, 9, 12) for d in range(1, 8)]


def test_pairs_of_a_product_on_dynamic_axes_keep_the_exact_parity_guard():
    # Dim.DYNAMIC takes the guard itself (torch.export's rule): every even product is admitted
    def model(x, y):
        return (x + y).reshape(-1, 2)

    spec = {"x": {0: Dim.DYNAMIC, 1: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC, 1: Dim.DYNAMIC}}
    ep = tpe.export(model, np.ones((1, 2)), np.ones((1, 2)), dynamic_shapes=spec)
    shapes = [[(r, c), (r, c)] for r in range(1, 9) for c in range(1, 9)]
    admitted = sweep(ep, model, shapes)
    assert admitted == [[(r, c), (r, c)] for r in range(1, 9) for c in range(1, 9) if r * c % 2 == 0]
    assert sweep(ep, model, [[(2, 3), (2, 1)], [(2, 4), (1, 4)]]) == []   # the sizes must be equal


def test_parity_of_one_dim_and_a_third_of_the_other():
    def model(x, y):
        return np.concatenate([y, x[: x.shape[0] // 3]]).reshape(-1, 2, 4).sum(1)

    spec = {"x": {0: Dim("a", max=60)}, "y": {0: Dim("b", max=60)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones((7, 4)), np.ones((4, 4)), dynamic_shapes=spec)
    lines = fix_block(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    ep = tpe.export(model, np.ones((7, 4)), np.ones((4, 4)), dynamic_shapes=fixed)
    admitted = sweep(ep, model, [[(a, 4), (b, 4)] for a in range(1, 61) for b in range(1, 61)])
    assert [[(7, 4), (4, 4)]] != admitted and [(7, 4), (4, 4)] in admitted
    # a on the lattice that fixes the parity of a // 3, b on the parity that completes it
    assert "a = 6*_a + 1" in lines and "b = 2*_b" in lines, lines
    assert len(admitted) == 10 * 30


def test_a_lattice_chosen_for_a_guard_over_two_dims_says_it_is_one_choice():
    # (a + b) % 2 == 0 holds for a, b both even too: the fix (both odd at the example) says so
    def model(x, y):
        return np.concatenate([x, y]).reshape(-1, 2)

    spec = {"x": {0: Dim("a", max=100)}, "y": {0: Dim("b", max=100)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones(3), np.ones(5), dynamic_shapes=spec)
    text = str(info.value)
    assert "by one choice for a, b" in text and "other sizes satisfy it too and are refused" in text
    # a guard over one dim is exact on its lattice: no such note
    with pytest.raises(tpe.ConstraintViolationError) as one:
        tpe.export(lambda x: x.reshape(-1, 2), np.ones(4), dynamic_shapes={"x": {0: Dim("n", max=100)}})
    assert "one choice" not in str(one.value)
