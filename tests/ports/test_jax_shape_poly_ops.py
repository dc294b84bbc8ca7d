"""Ports of jax's shape-polymorphism op harnesses, part 2: movement, creation, sorting,
reductions, contractions, convolution/pooling, select, and dtypes with sizes as values.

See test_jax_shape_poly.py for the conventions.  Every scenario is exported with named
dims, run inside the contract at sizes other than the example against eager numpy, and
refused outside it; one per family also goes through save/load.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import ConstraintViolationError
from tensorplay_export.nn import functional as F

from ports._jaxpoly import Case, params, rand, run_case

f32, i32, i64 = np.float32, np.int32, np.int64


def mat(b, d=4, dtype=f32):
    return (rand((b, d), dtype),)


def spec_b(lo=1, hi=48):
    return lambda: {"x": {0: Dim("b", min=lo, max=hi)}}


OK = [{"b": 1}, {"b": 2}, {"b": 5}, {"b": 13}, {"b": 48}]
BAD = [{"b": 49}]


def family(prefix, table, *, make=mat, lo=1, example=6, roundtrip_name=None, exact=True):
    ok = [s for s in OK if s["b"] >= lo]
    bad = BAD + ([{"b": lo - 1}] if lo > 1 else [])
    return [Case(f"{prefix}_{name}", fn, make, spec_b(lo), {"b": example}, ok=ok, bad=bad,
                 roundtrip=(name == roundtrip_name), exact=exact)
            for name, fn in table]


# --------------------------------------------------------------------------------------
# movement: concatenate, stack, split, tile, repeat, pad, broadcast_to, squeeze, flip
# --------------------------------------------------------------------------------------
MOVEMENT = [
    ("concat_self", lambda x: np.concatenate([x, x], axis=0)),
    ("concat_sin", lambda x: np.concatenate([x, np.sin(x)], axis=0)),
    ("concat_axis1", lambda x: np.concatenate([x, x[:, :1]], axis=1)),
    ("stack0", lambda x: np.stack([x, 2 * x], axis=0)),
    ("stack_last", lambda x: np.stack([x, -x], axis=-1)),
    ("vstack_hstack", lambda x: (np.vstack([x, x]), np.hstack([x, x]))),
    ("tile_rows", lambda x: np.tile(x, (2, 1))),
    ("tile_3d", lambda x: np.tile(x, (2, 1, 3))),
    ("repeat_rows", lambda x: np.repeat(x, 3, axis=0)),
    ("repeat_flat", lambda x: np.repeat(x, 2)),
    ("pad_rows", lambda x: np.pad(x, ((1, 2), (0, 0)))),
    ("pad_edge", lambda x: np.pad(x, ((2, 0), (1, 1)), mode="edge")),
    ("pad_by_size", lambda x: np.pad(x, ((0, x.shape[0]), (0, 0)))),
    ("broadcast_bb4", lambda x: np.broadcast_to(x, (x.shape[0], x.shape[0], 4))),
    ("broadcast_in_dim", lambda x: np.broadcast_to(x[:, None, :], (x.shape[0], 5, 4))),
    ("broadcast_2b", lambda x: np.broadcast_to(x[:, None, :1], (x.shape[0], 2 * x.shape[0], 4))),
    ("expand_add", lambda x: x[None, :, :] + x[:, None, :]),
    ("squeeze", lambda x: np.squeeze(x[:, None, :2], axis=1)),
    ("flip", lambda x: np.flip(x, axis=0)),
    ("roll_by_1", lambda x: np.roll(x, 1, axis=0)),
    ("transpose", lambda x: x.T @ x),
    ("moveaxis", lambda x: np.moveaxis(x[:, :, None], 0, -1)),
    ("clamp", lambda x: np.clip(x, -x[::-1], x[::-1] + 1)),
]


@pytest.mark.parametrize("case", params(family("move", MOVEMENT, roundtrip_name="pad_by_size")))
def test_movement(case):
    run_case(case)


SPLIT = [
    ("split2", lambda x: np.split(x, 2, axis=0)),
    ("split_at_half", lambda x: np.split(x, [x.shape[0] // 2], axis=0)),
    ("array_split3", lambda x: np.array_split(x, 3, axis=0)),
]


def _split_sum(x):
    a, b = np.split(x, 2, axis=0)
    return a * 2 + b


def test_split_in_two_needs_even():
    """np.split into 2 equal parts: b must be even (a divisibility fix, then it runs)."""
    spec = {"x": {0: Dim("b", max=48)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(_split_sum, rand((6, 4)), dynamic_shapes=spec)
    assert "b % 2 == 0" in str(err.value)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(_split_sum, rand((6, 4)), dynamic_shapes=spec)
    for b in (2, 4, 14, 48):
        x = rand((b, 4))
        np.testing.assert_array_equal(ep.module()(x), _split_sum(x))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((5, 4)))


def test_split_returned_even():
    """The parts of np.split returned as they are: numpy gives a list."""
    _b = Dim("_b", max=24)
    run_case(Case("split_ret_even", SPLIT[0][1], mat, lambda: {"x": {0: 2 * _b}}, {"b": 6},
                  ok=[{"b": 2}, {"b": 10}, {"b": 48}], bad=[{"b": 5}, {"b": 50}]))



@pytest.mark.parametrize("case", params(family("split", SPLIT[1:], roundtrip_name="array_split3")))
def test_split_uneven(case):
    run_case(case)


# --------------------------------------------------------------------------------------
# creation: ones/zeros/full/eye/tri/linspace/iota of symbolic length
# --------------------------------------------------------------------------------------
CREATION = [
    ("ones_b", lambda x: np.ones((x.shape[0],), np.float32)),
    ("zeros_b2", lambda x: np.zeros((x.shape[0], 2), np.int32)),
    ("full_b_of_b", lambda x: np.full((x.shape[0],), x.shape[0])),
    ("full_f32", lambda x: np.full((x.shape[0], 3), 3.5, np.float32)),
    ("empty_like_fill", lambda x: np.zeros_like(x) + np.ones_like(x[:, :1])),
    ("eye_b", lambda x: np.eye(x.shape[0])),
    ("eye_b_bp1_k1", lambda x: np.eye(x.shape[0], x.shape[0] + 1, k=1, dtype=np.float32)),
    ("identity", lambda x: np.identity(x.shape[0]) @ x),
    ("tri_b", lambda x: np.tri(x.shape[0], dtype=np.int32)),
    ("tril_x", lambda x: np.tril(x @ x.T)),
    ("triu_k1", lambda x: np.triu(x @ x.T, k=1)),
    ("linspace_b", lambda x: np.linspace(0.0, 1.0, x.shape[0])),
    ("linspace_to_b", lambda x: np.linspace(0, x.shape[0], x.shape[0] + 1, dtype=np.float32)),
    ("iota_2d", lambda x: np.arange(x.shape[0])[:, None] * 10 + np.arange(x.shape[1])[None, :]),
    ("indices", lambda x: np.indices((x.shape[0], 2))),
    ("meshgrid", lambda x: np.meshgrid(np.arange(x.shape[0]), np.arange(3), indexing="ij")),
]


@pytest.mark.parametrize("case", params(family("create", CREATION, roundtrip_name="eye_b_bp1_k1")))
def test_creation(case):
    run_case(case)


# --------------------------------------------------------------------------------------
# sort / argsort / cumsum / top-k / argmax along the dynamic axis
# --------------------------------------------------------------------------------------
SORTING = [
    ("cumsum0", lambda x: np.cumsum(x, axis=0)),
    ("cumprod0", lambda x: np.cumprod(x, axis=0)),
    ("cumsum_rev", lambda x: np.flip(np.cumsum(np.flip(x, 0), axis=0), 0)),
    ("sort0", lambda x: np.sort(x, axis=0)),
    ("argsort0", lambda x: np.argsort(x, axis=0, kind="stable")),
    ("argsort_last", lambda x: np.argsort(x.T, axis=-1, kind="stable")),
    ("argmax0", lambda x: np.argmax(x, axis=0)),
    ("argmin1", lambda x: np.argmin(x, axis=1)),
    ("topk_const", lambda x: np.sort(x, axis=0)[::-1][:1]),
    ("topk_half", lambda x: np.sort(x, axis=0)[::-1][: (x.shape[0] + 1) // 2]),
    ("topk_idx", lambda x: np.argsort(-x[:, 0], kind="stable")[: x.shape[0] // 2]),
]


@pytest.mark.parametrize("case", params(family("sort", SORTING, roundtrip_name="sort0")))
def test_sorting(case):
    run_case(case)


def test_top_k_needs_k_elements():
    """top-3 along a dim that may hold fewer than 3 elements: a violation, fixed in one step."""
    fn = lambda x: np.sort(x, axis=0)[-3:][::-1] + np.zeros((3, 1), x.dtype)  # noqa: E731
    spec = {"x": {0: Dim("b", max=48)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(fn, rand((6, 4)), dynamic_shapes=spec)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(fn, rand((6, 4)), dynamic_shapes=spec)
    for b in (3, 4, 20, 48):
        x = rand((b, 4))
        np.testing.assert_array_equal(ep.module()(x), fn(x))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((2, 4)))


# --------------------------------------------------------------------------------------
# reductions: a mean over a dynamic axis divides by a size
# --------------------------------------------------------------------------------------
REDUCE = [
    ("sum0", lambda x: x.sum(axis=0)),
    ("mean0", lambda x: x.mean(axis=0)),
    ("mean_all", lambda x: np.mean(x)),
    ("mean_keepdims", lambda x: x - x.mean(axis=0, keepdims=True)),
    ("var0", lambda x: np.var(x, axis=0)),
    ("std_all", lambda x: np.std(x)),
    ("average_w", lambda x: np.average(x, axis=0, weights=np.abs(x) + 1)),
    ("average_none", lambda x: np.average(x)),
    ("max0_min1", lambda x: (x.max(axis=0), x.min(axis=1))),
    ("prod0", lambda x: np.prod(x / 4 + 1, axis=0)),
    ("any_all", lambda x: (np.any(x > 2, axis=0), np.all(x > -5, axis=0))),
    ("logsumexp", lambda x: np.log(np.sum(np.exp(x - x.max(axis=0)), axis=0)) + x.max(axis=0)),
    ("count_nonzero", lambda x: np.count_nonzero(x > 0, axis=0)),
    ("sum_over_b", lambda x: x.sum(axis=0) / x.shape[0]),
    ("norm", lambda x: np.linalg.norm(x, axis=0)),
]


@pytest.mark.parametrize("case", params(family("reduce", REDUCE, roundtrip_name="mean0", exact=False)))
def test_reductions(case):
    run_case(case)


# --------------------------------------------------------------------------------------
# contractions over dynamic dims: matmul, dot, einsum, tensordot
# --------------------------------------------------------------------------------------
W = rand((4, 5), seed=11)


def _shared(b, s):
    return rand((b, s)), rand((s, b), seed=2)


def _shared_spec():
    b, s = Dim("b", max=24), Dim("s", max=24)
    return {"x": {0: b, 1: s}, "y": {0: s, 1: b}}


CONTRACT = [
    ("matmul_xy", lambda x, y: x @ y),
    ("dot_yx", lambda x, y: np.dot(y, x)),
    ("einsum_ij_jk", lambda x, y: np.einsum("ij,jk->ik", x, y)),
    ("einsum_trace", lambda x, y: np.einsum("ij,ji->", x, y)),
    ("einsum_outer", lambda x, y: np.einsum("ij,kl->ikjl", x, y)),
    ("tensordot", lambda x, y: np.tensordot(x, y, axes=([1], [0]))),
    ("matmul_mean", lambda x, y: (x @ y).mean(axis=1)),
    ("vdot_rows", lambda x, y: np.einsum("ij,ij->i", x, y.T)),
]
CONTRACT_CASES = [
    Case(f"contract_{name}", fn, _shared, _shared_spec, {"b": 3, "s": 5},
         ok=[{"b": 1, "s": 1}, {"b": 2, "s": 7}, {"b": 24, "s": 24}], bad=[{"b": 25, "s": 3}],
         roundtrip=(name == "einsum_ij_jk"), exact=False)
    for name, fn in CONTRACT
]


@pytest.mark.parametrize("case", params(CONTRACT_CASES))
def test_contractions(case):
    run_case(case)


def test_batched_einsum_static_weight():
    fn = lambda x: np.einsum("bsd,de->bse", x, W)  # noqa: E731
    case = Case("einsum_bsd", fn, lambda b, s: (rand((b, s, 4)),),
                lambda: {"x": {0: Dim("b", max=8), 1: Dim("s", max=16)}}, {"b": 2, "s": 3},
                ok=[{"b": 1, "s": 1}, {"b": 8, "s": 16}], bad=[{"b": 9, "s": 1}], exact=False)
    run_case(case)


def test_contraction_of_two_unrelated_dims_asks_them_equal():
    """jax: contracting a with b fails unless they are the same symbol; here a fix ties them."""
    fn = lambda x, y: x @ y  # noqa: E731
    spec = {"x": {1: Dim("a", max=24)}, "y": {0: Dim("c", max=24)}}
    x, y = rand((3, 5)), rand((5, 2))
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(fn, x, y, dynamic_shapes=spec)
    assert "a" in str(err.value) and "c" in str(err.value)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(fn, x, y, dynamic_shapes=spec)
    for s in (1, 7, 24):
        xi, yi = rand((3, s)), rand((s, 2))
        np.testing.assert_allclose(ep.module()(xi, yi), fn(xi, yi), rtol=1e-6)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((3, 4)), rand((5, 2)))


# --------------------------------------------------------------------------------------
# convolution and pooling with stride and padding on a dynamic spatial size
# --------------------------------------------------------------------------------------
KER = rand((3, 2, 3, 3), seed=5)
KER1 = rand((3, 2, 3), seed=6)


def _img(h, w=7):
    return (rand((1, 2, h, w)),)


def _seq(h):
    return (rand((2, 2, h)),)


def _ref_conv1d(x, k, stride, pad):
    """Reference cross-correlation in plain numpy (N, C, L) x (O, C, K)."""
    x = np.pad(x, ((0, 0), (0, 0), (pad, pad)))
    n_out = (x.shape[2] - k.shape[2]) // stride + 1
    out = np.zeros((x.shape[0], k.shape[0], max(n_out, 0)), x.dtype)
    for t in range(max(n_out, 0)):
        out[:, :, t] = np.einsum("ncl,ocl->no", x[:, :, t * stride: t * stride + k.shape[2]], k)
    return out


CONV2D = [
    ("s1_p0", lambda x: F.conv2d(x, KER), 3),
    ("s2_p1", lambda x: F.conv2d(x, KER, stride=2, padding=1), 2),
    ("s2_p0", lambda x: F.conv2d(x, KER, stride=2), 3),
    ("s3_d2", lambda x: F.conv2d(x, KER, stride=3, dilation=2, padding=1), 3),
    ("same", lambda x: F.conv2d(x, KER, padding="same"), 1),
    ("maxpool_2_2", lambda x: F.max_pool2d(x, 2, 2), 2),
    ("maxpool_3_2_p1", lambda x: F.max_pool2d(x, 3, 2, padding=1), 2),
    ("maxpool_ceil", lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True), 2),
    ("avgpool_2_2", lambda x: F.avg_pool2d(x, 2, 2), 2),
    ("avgpool_3_1_p1", lambda x: F.avg_pool2d(x, 3, 1, padding=1), 1),
]


def _conv_case(name, fn, lo):
    return Case(f"conv2d_{name}", fn, _img, lambda: {"x": {2: Dim("h", min=lo, max=33)}}, {"h": 9},
                ok=[{"h": lo}, {"h": lo + 1}, {"h": 10}, {"h": 17}, {"h": 33}], bad=[{"h": 34}],
                roundtrip=(name == "s2_p1"), exact=False)


@pytest.mark.parametrize("case", params([_conv_case(*c) for c in CONV2D]))
def test_conv_pool_2d(case):
    ep = run_case(case)
    # the output height follows the floor formula of the window, read from eager at each size
    for h in (case.ok[0]["h"], 11, 33):
        assert ep.module()(*_img(h)).shape == case.fn(*_img(h)).shape


@pytest.mark.parametrize("stride,pad", [(1, 0), (2, 0), (2, 1), (3, 2)])
def test_conv1d_against_reference(stride, pad):
    """The 1-d convolution harness with stride and padding, against a reference loop."""
    fn = lambda x: F.conv1d(x, KER1, stride=stride, padding=pad)  # noqa: E731
    lo = max(3 - 2 * pad, 1)
    ep = tpe.export(fn, *_seq(12), dynamic_shapes={"x": {2: Dim("h", min=lo, max=40)}})
    for h in sorted({lo, lo + 1, 12, 13, 40}):
        x = _seq(h)[0]
        np.testing.assert_allclose(ep.module()(x), _ref_conv1d(x, KER1, stride, pad), rtol=1e-5, atol=1e-5)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(*_seq(41))


def test_conv_valid_needs_window():
    """VALID convolution on h < kernel: the output would be empty/negative; a violation with a fix."""
    fn = lambda x: F.conv2d(x, KER)  # noqa: E731
    spec = {"x": {2: Dim("h", max=33)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(fn, *_img(9), dynamic_shapes=spec)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(fn, *_img(9), dynamic_shapes=spec)
    for h in (3, 4, 33):
        np.testing.assert_allclose(ep.module()(*_img(h)), fn(*_img(h)), rtol=1e-5, atol=1e-5)


def _reduce_window_sum(x, k=2, s=2):
    """jax reduce_window sum on a dynamic axis, written with strided slices of the size."""
    n = (x.shape[0] - k) // s + 1
    return sum(x[i: i + s * (n - 1) + 1: s] for i in range(k))


def test_reduce_window_by_slices():
    case = Case("reduce_window_sum", _reduce_window_sum, mat, spec_b(lo=2), {"b": 9},
                ok=[{"b": 2}, {"b": 3}, {"b": 10}, {"b": 48}], bad=[{"b": 1}, {"b": 49}])
    run_case(case)


# --------------------------------------------------------------------------------------
# where / select, comparisons with sizes
# --------------------------------------------------------------------------------------
SELECT = [
    ("where_pos", lambda x: np.where(x > 0, x, 0)),
    ("where_iota", lambda x: np.where(np.arange(x.shape[0])[:, None] < x.shape[0] // 2, x, -x)),
    ("where_scalar_b", lambda x: np.where(x > 0, x, x.shape[0])),
    ("select_list", lambda x: np.select([x < -1, x > 1], [x * 2, x / 2], default=0)),
    ("maximum_b", lambda x: np.maximum(x, x.shape[0] / 8)),
    ("mask_tril", lambda x: np.where(np.tri(x.shape[0], dtype=bool), x @ x.T, -np.inf)),
]


@pytest.mark.parametrize("case", params(family("select", SELECT, roundtrip_name="where_iota")))
def test_select(case):
    run_case(case)


def _ge1(x):
    return x * 2 if x.shape[0] >= 1 else x


def _ge3(x):
    return x * 2 if x.shape[0] >= 3 else x


def _eq3(x):
    return x[:1] if x.shape[0] == 3 else x


def test_comparison_decidable_from_range_pins_nothing():
    """b >= 1 holds on the whole range: no guard, the program runs at every size."""
    run_case(Case("cmp_ge1", _ge1, mat, spec_b(), {"b": 6}, ok=OK, bad=BAD))


def test_comparison_undecidable_is_a_violation_with_fix():
    """b >= 3 is undecided on [1, 48]: jax raises 'inconclusive'; here a guard and a fix."""
    spec = {"x": {0: Dim("b", max=48)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(_ge3, rand((6, 4)), dynamic_shapes=spec)
    msg = str(err.value)
    assert "counterexample: b = " in msg and "Suggested fixes:" in msg
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(msg, spec)
    ep = tpe.export(_ge3, rand((6, 4)), dynamic_shapes=spec)
    for b in (3, 4, 48):
        np.testing.assert_array_equal(ep.module()(rand((b, 4))), _ge3(rand((b, 4))))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((2, 4)))


def test_comparison_eq_const_is_a_violation():
    """b == 3 with b dynamic: the branch at the example (b = 6: False) holds only for b != 3."""
    spec = {"x": {0: Dim("b", max=48)}}
    with pytest.raises(ConstraintViolationError, match="counterexample: b = 3"):
        tpe.export(_eq3, rand((6, 4)), dynamic_shapes=spec)


def test_comparison_eq_const_auto_refuses_the_other_branch():
    """With Dim.AUTO the program keeps the example's branch and refuses the sizes of the other."""
    ep = tpe.export(_eq3, rand((6, 4)), dynamic_shapes={"x": {0: Dim.AUTO}})
    m = ep.module()
    for b in (6,):
        np.testing.assert_array_equal(m(rand((b, 4))), _eq3(rand((b, 4))))
    with pytest.raises(tpe.ConstraintsExceededError):
        m(rand((3, 4)))


# --------------------------------------------------------------------------------------
# relations between dims: derived dims (a = 2*b, a = b + 1), shared dims
# --------------------------------------------------------------------------------------
def test_derived_dim_twice():
    b = Dim("b", max=20)
    fn = lambda x, y: y.reshape(x.shape[0], 2, -1).sum(axis=1) + x  # noqa: E731
    run_case(Case("derived_2b", fn, lambda b: (rand((b, 3)), rand((2 * b, 3), seed=1)),
                  lambda: {"x": {0: b}, "y": {0: 2 * b}}, {"b": 3},
                  ok=[{"b": 1}, {"b": 7}, {"b": 20}], bad=[{"b": 21}], roundtrip=True))


def test_derived_dim_twice_refuses_unrelated_sizes():
    b = Dim("b", max=20)
    fn = lambda x, y: y.reshape(x.shape[0], 2, -1).sum(axis=1) + x  # noqa: E731
    ep = tpe.export(fn, rand((3, 3)), rand((6, 3)), dynamic_shapes={"x": {0: b}, "y": {0: 2 * b}})
    with pytest.raises(tpe.ConstraintsExceededError, match="y.shape\\[0\\]"):
        ep.module()(rand((3, 3)), rand((7, 3)))


def test_derived_dim_plus_one():
    b = Dim("b", max=20)
    fn = lambda x, y: y[1:] * x + y[:-1]  # noqa: E731
    run_case(Case("derived_bp1", fn, lambda b: (rand((b, 3)), rand((b + 1, 3), seed=1)),
                  lambda: {"x": {0: b}, "y": {0: b + 1}}, {"b": 3},
                  ok=[{"b": 1}, {"b": 7}, {"b": 20}], bad=[{"b": 21}]))


def test_relation_found_by_the_model_suggests_derived_dim():
    """x: (b,), y: (c,) with the model needing c == 2*b: the fix expresses c through b."""
    fn = lambda x, y: np.concatenate([x, x]) + y  # noqa: E731
    spec = {"x": {0: Dim("b", max=20)}, "y": {0: Dim("c", max=40)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(fn, rand((3,)), rand((6,)), dynamic_shapes=spec)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(fn, rand((3,)), rand((6,)), dynamic_shapes=spec)
    for b in (1, 5, 20):
        x, y = rand((b,)), rand((2 * b,), seed=1)
        np.testing.assert_array_equal(ep.module()(x, y), fn(x, y))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((5,)), rand((9,)))


def test_sum_of_two_dims_as_derived_dim():
    a, b = Dim("a", max=10), Dim("b", max=10)
    fn = lambda x, y, z: np.concatenate([x, y]) * z  # noqa: E731
    run_case(Case("derived_sum", fn,
                  lambda a, b: (rand((a,)), rand((b,), seed=1), rand((a + b,), seed=2)),
                  lambda: {"x": {0: a}, "y": {0: b}, "z": {0: a + b}}, {"a": 2, "b": 3},
                  ok=[{"a": 1, "b": 1}, {"a": 10, "b": 4}], bad=[{"a": 11, "b": 1}], roundtrip=True))


# --------------------------------------------------------------------------------------
# sizes used as values; dtypes
# --------------------------------------------------------------------------------------
VALUES = [
    ("x_times_b", lambda x: x * x.shape[0]),
    ("x_div_b_f32", lambda x: x / x.shape[0]),
    ("x_floordiv_b", lambda x: x // x.shape[0]),
    ("x_plus_b_sq", lambda x: x + x.shape[0] ** 2),
    ("full_shape_b", lambda x: np.full(x.shape, x.shape[0], dtype=x.dtype)),
    ("sqrt_b", lambda x: x * np.sqrt(x.shape[0]).astype(x.dtype)),
    ("float_b", lambda x: x * float(x.shape[0])),
    ("int_array_times_b", lambda x: (x * 8).astype(np.int32) * x.shape[0]),
    ("int8_plus_b", lambda x: (x * 2).astype(np.int8) + (x.shape[0] % 4)),
    ("array_of_dims", lambda x: np.array(x.shape) * 2),
    ("b_as_index", lambda x: x[x.shape[0] // 2]),
    ("rsqrt_scale", lambda x: x / np.sqrt(np.float32(x.shape[1] * x.shape[0]))),
    ("np_float32_b", lambda x: x * np.float32(x.shape[0])),
    ("np_float64_b", lambda x: x * np.float64(x.shape[0])),
    ("np_int64_b", lambda x: (x * 8).astype(np.int64) * np.int64(x.shape[0])),
    ("np_array_b_f32", lambda x: x * np.array(x.shape[0], dtype=np.float32)),
    ("returns_size", lambda x: (x.sum(axis=0), x.shape[0] * 2)),
    ("clip_to_b", lambda x: np.clip(x * 8, 0, x.shape[0])),
    ("int_mod_b", lambda x: (x * 8).astype(np.int32) % x.shape[0]),
]
# a numpy scalar of a size (np.float32(b), np.float64(b), np.int64(b)) is that size typed, as jax
# converts a dim to an array exactly (it specialized b before the scalar-type views of capture)
@pytest.mark.parametrize("case", params(family("value", VALUES, roundtrip_name="x_div_b_f32"), {}))
def test_sizes_as_values(case):
    run_case(case)


@pytest.mark.parametrize("fn,dtype", [
    (lambda x: x / x.shape[0], np.float32),
    (lambda x: x.mean(axis=0), np.float32),
    (lambda x: x * x.shape[0], np.float32),
    (lambda x: x.astype(np.float16) / x.shape[0], np.float16),
    (lambda x: (x * 4).astype(np.int32) // x.shape[0], np.int32),
], ids=["div", "mean", "mul", "f16_div", "i32_floordiv"])
def test_dtype_stays_with_size_operands(fn, dtype):
    """numpy 2 promotes by dtypes and Python scalars: a size is a Python int, so float32 stays."""
    ep = tpe.export(fn, rand((6, 4)), dynamic_shapes={"x": {0: Dim("b", max=48)}})
    for b in (1, 7, 48):
        got = ep.module()(rand((b, 4)))
        assert got.dtype == np.dtype(dtype) == fn(rand((b, 4))).dtype


# --------------------------------------------------------------------------------------
# more jnp harnesses: diff, convolve, median/quantile, roll, tri with k, diag, einsum forms
# --------------------------------------------------------------------------------------
MORE = [
    ("repeat_by_b", lambda x: np.repeat(x, x.shape[0], axis=0)),
    ("tile_by_b", lambda x: np.tile(x, (x.shape[0], 1))),
    ("diff0", lambda x: np.diff(x, axis=0)),
    ("convolve_full", lambda x: np.convolve(x[:, 0], np.array([1, -2, 3], np.float32))),
    ("convolve_same", lambda x: np.convolve(x[:, 0], np.array([1, -2, 3], np.float32), mode="same")),
    ("median0", lambda x: np.median(x, axis=0)),
    ("quantile0", lambda x: np.quantile(x, 0.3, axis=0)),
    ("roll_by_half", lambda x: np.roll(x, x.shape[0] // 2, axis=0)),
    ("tril_k_by_b", lambda x: np.tril(np.ones((x.shape[0], x.shape[0])), k=-(x.shape[0] // 2))),
    ("diag", lambda x: np.diag(x[:, 0])),
    ("diagonal", lambda x: np.diagonal(x @ x.T)),
    ("trace", lambda x: np.trace(x @ x.T)),
    ("einsum_ii", lambda x: np.einsum("ii->i", x @ x.T)),
    ("einsum_ellipsis", lambda x: np.einsum("...ij,jk->...ik", x[None], x.T)),
    ("einsum_contract_b", lambda x: np.einsum("bi,bj->ij", x, x)),
    ("outer", lambda x: np.outer(x[:, 0], x[:, 1])),
    ("kron", lambda x: np.kron(x[:1], np.ones((x.shape[0], 1), np.float32))),
    ("pad_wrap", lambda x: np.pad(x, ((2, 2), (0, 0)), mode="wrap")),
    ("neg_mod", lambda x: np.ones((x.shape[0] % -3 + 3,))),
    ("ceil_div", lambda x: np.ones((-(-x.shape[0] // 4),))),
    ("zeros_shape_tuple", lambda x: np.zeros(x.shape[:-1] + (3,))),
    ("argmax_keepdims", lambda x: np.argmax(x, axis=0, keepdims=True)),
    ("matmul_broadcast", lambda x: (x[:, None, :, None] * np.ones((1, 3, 1, 2), np.float32)) @ np.ones((2, 5), np.float32)),
    ("cumsum_f64", lambda x: np.cumsum(x, axis=0, dtype=np.float64)),
    ("nanmean", lambda x: np.nanmean(np.where(x > 2, np.nan, x), axis=0)),
    ("ptp", lambda x: np.ptp(x, axis=0)),
    ("histogram", lambda x: np.histogram(x[:, 0], bins=4, range=(-5, 5))[0]),
    ("arange_mod", lambda x: np.arange(x.shape[0]) % 3 == 0),
    ("searchsorted", lambda x: np.searchsorted(np.sort(x[:, 0]), np.array([0.0, 1.0], np.float32))),
    ("interp", lambda x: np.interp(np.linspace(0, 1, 5), np.linspace(0, 1, x.shape[0]), x[:, 0])),
    ("fft0", lambda x: np.fft.fft(x, axis=0)),
    ("rfft_static_axis", lambda x: np.fft.rfft(x, axis=1)),
]


@pytest.mark.parametrize("case", params(family("more", MORE, roundtrip_name="median0", exact=False), {}))
def test_more_ops(case):
    run_case(case)


def test_pad_reflect_needs_rows():
    run_case(Case("pad_reflect", lambda x: np.pad(x, ((2, 2), (0, 0)), mode="reflect"), mat, spec_b(lo=3),
                  {"b": 6}, ok=[{"b": 3}, {"b": 4}, {"b": 48}], bad=[{"b": 2}, {"b": 49}]))


def test_bincount_minlength_b_data_dependent():
    """jax 'bincount length=poly': the count's length is max(b, data) here (an unbacked size)."""
    fn = lambda x: np.bincount((np.abs(x[:, 0]) * 8).astype(np.int64) % 4, minlength=x.shape[0])  # noqa: E731
    run_case(Case("bincount", fn, mat, spec_b(), {"b": 6}, ok=OK, bad=BAD, roundtrip=True))


# --------------------------------------------------------------------------------------
# linalg with a polymorphic batch (jax: cholesky, eigh, lu, qr, svd, triangular_solve)
# --------------------------------------------------------------------------------------
def _spd(b, n=3):
    a = rand((b, n, n), seed=9) / 4
    return (a @ np.swapaxes(a, -1, -2) + 3 * np.eye(n, dtype=np.float32),)


LINALG = [
    ("inv", lambda x: np.linalg.inv(x)),
    ("cholesky", lambda x: np.linalg.cholesky(x)),
    ("qr_r", lambda x: np.abs(np.linalg.qr(x)[1])),
    ("svd_vals", lambda x: np.linalg.svd(x, compute_uv=False)),
    ("eigh_vals", lambda x: np.linalg.eigvalsh(x)),
    ("solve", lambda x: np.linalg.solve(x, x[..., :1])),
    ("det", lambda x: np.linalg.det(x)),
    ("norm_fro", lambda x: np.linalg.norm(x, axis=(-2, -1))),
    ("matrix_power", lambda x: np.linalg.matrix_power(x, 2)),
]
LINALG_CASES = [
    Case(f"linalg_{name}", fn, _spd, spec_b(), {"b": 4}, ok=[{"b": 1}, {"b": 7}, {"b": 48}], bad=BAD, exact=False)
    for name, fn in LINALG
]


@pytest.mark.parametrize("case", params(LINALG_CASES))
def test_linalg_batch(case):
    run_case(case)


# --------------------------------------------------------------------------------------
# contracts: shared dims checked at call, relations jax states as symbolic constraints
# --------------------------------------------------------------------------------------
def test_shared_dim_call_errors():
    """jax checks 'b, b' at call: a (3, 4) input names both axes; wrong rank and dtype are refused."""
    b = Dim("b", max=20)
    ep = tpe.export(lambda x: x @ x, rand((3, 3)), dynamic_shapes={"x": {0: b, 1: b}})
    with pytest.raises(tpe.ConstraintsExceededError, match=r"x.shape\[1\] = 4 must equal x.shape\[0\] = 3"):
        ep.module()(rand((3, 4)))
    with pytest.raises(tpe.ConstraintsExceededError, match="rank 3"):
        ep.module()(rand((3, 3, 1)))
    with pytest.raises(TypeError, match="float64"):
        ep.module()(np.ones((3, 3)))
    np.testing.assert_allclose(ep.module()(rand((7, 7))), rand((7, 7)) @ rand((7, 7)), rtol=1e-6)


def test_phantom_root_b_plus_1():
    """jax solves b from an input of size b + 1 alone."""
    b = Dim("b", max=20)
    run_case(Case("phantom_bp1", lambda y: y[1:] * 2 - y[:-1], lambda n: (rand((n,)),),
                  lambda: {"y": {0: b + 1}}, {"n": 5}, ok=[{"n": 2}, {"n": 9}, {"n": 21}], bad=[{"n": 1}, {"n": 22}],
                  roundtrip=True))


def test_phantom_root_2b_plus_1():
    b = Dim("b", max=20)
    run_case(Case("phantom_2bp1", lambda y: y[::2] + y[0], lambda n: (rand((n,)),),
                  lambda: {"y": {0: 2 * b + 1}}, {"n": 7}, ok=[{"n": 3}, {"n": 9}, {"n": 41}],
                  bad=[{"n": 4}, {"n": 1}, {"n": 43}], roundtrip=True))


def _prefix_add(x, y):
    return x[: y.shape[0]] + y


def test_inequality_between_dims_has_a_fix():
    """b <= a has no Dim form of its own; the fix is a box of ranges around the example that
    implies it (one of many: a note says so), closing in one refine step."""
    spec = {"x": {0: Dim("a", max=20)}, "y": {0: Dim("b", max=20)}}
    with pytest.raises(ConstraintViolationError) as err:
        tpe.export(_prefix_add, rand((5,)), rand((3,)), dynamic_shapes=spec)
    assert "Suggested fixes:" in str(err.value) and "one box of ranges" in str(err.value)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    ep = tpe.export(_prefix_add, rand((5,)), rand((3,)), dynamic_shapes=spec)
    ranges = {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}
    (a_lo, a_hi), (b_lo, b_hi) = ranges["a"], ranges["b"]
    assert b_hi <= a_lo and a_lo <= 5 and b_hi >= 3 and a_hi == 20 and b_lo == 1  # a box keeping the example
    for a, b in [(5, 3), (a_lo, b_hi), (20, 1), (a_hi, b_hi)]:
        np.testing.assert_array_equal(ep.module()(rand((a,)), rand((b,))), _prefix_add(rand((a,)), rand((b,))))


def test_inequality_between_dims_with_auto():
    """The route the error offers: Dim.AUTO on x takes b <= a and enforces it at run time."""
    spec = {"x": {0: Dim.AUTO}, "y": {0: Dim("b", max=20)}}
    ep = tpe.load(_roundtrip(tpe.export(_prefix_add, rand((5,)), rand((3,)), dynamic_shapes=spec)))
    for a, b in [(5, 3), (3, 3), (20, 1), (9, 8)]:
        np.testing.assert_array_equal(ep.module()(rand((a,)), rand((b,))), _prefix_add(rand((a,)), rand((b,))))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((2,)), rand((3,)))


# --------------------------------------------------------------------------------------
# Python-level size conversions jax refuses or keeps symbolic
# --------------------------------------------------------------------------------------
def test_int_of_true_division_names_the_symbolic_route():
    """int(b / 2) pins b; the error says which conversion stays symbolic."""
    with pytest.raises(ConstraintViolationError, match=r"int\(\).*math.trunc"):
        tpe.export(lambda x: np.zeros((int(x.shape[0] / 2),)), rand((6, 4)), dynamic_shapes={"x": {0: Dim("b", max=48)}})


def test_zero_step_from_size_is_a_violation():
    """x[::b//3] has step 0 at b < 3: a violation with counterexample, as jax refuses the slice."""
    with pytest.raises(ConstraintViolationError, match=r"counterexample: b = [12]"):
        tpe.export(lambda x: x[:: x.shape[0] // 3], rand((6, 4)), dynamic_shapes={"x": {0: Dim("b", max=48)}})


def test_negative_size_is_a_violation():
    """np.zeros((b - 2,)) is a negative dimension at b = 1: a guard b >= 2 with a fix."""
    fn = lambda x: np.zeros((x.shape[0] - 2,)) + 1  # noqa: E731
    spec = {"x": {0: Dim("b", max=48)}}
    with pytest.raises(ConstraintViolationError, match="counterexample: b = 1") as err:
        tpe.export(fn, rand((6, 4)), dynamic_shapes=spec)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err.value), spec)
    run_case(Case("neg_size_fixed", fn, mat, lambda: spec, {"b": 6}, ok=[{"b": 2}, {"b": 3}, {"b": 48}],
                  bad=[{"b": 1}, {"b": 49}]))


MORE2 = [
    ("linspace_retstep_const", lambda x: x[:1] * np.linspace(0.0, 1.0, 5, retstep=True)[1]),
    ("linspace_retstep_b", lambda x: x * np.linspace(0, x.shape[0], 4, retstep=True)[1]),
    ("linspace_endpoint_false", lambda x: np.linspace(0, 1, x.shape[0] // 2 + 1, endpoint=False)),
    ("stride_half_third", lambda x: x[x.shape[0] // 2:: max(x.shape[0] // 3, 1)]),
    ("index_minus_b", lambda x: x[-x.shape[0]]),
    ("gather_shift_minus1", lambda x: x[np.arange(x.shape[0]) - 1]),
    ("gather_reverse", lambda x: x[np.arange(x.shape[0])[::-1]]),
    ("round_third", lambda x: np.zeros((round(x.shape[0] / 3),))),
    ("ceil_half", lambda x: np.zeros((-(-x.shape[0] // 2),))),
    ("int8_sum", lambda x: (x * 4).astype(np.int8).sum(axis=0)),
    ("arange_i32_times_b", lambda x: np.arange(x.shape[0], dtype=np.int32) * x.shape[0]),
    ("reshape_4_b", lambda x: x.reshape(4, x.shape[0])),
    ("reshape_T_m1_b", lambda x: x.T.reshape(-1, x.shape[0])),
    ("mean_int", lambda x: (x * 8).astype(np.int32).mean(axis=0)),
    ("where_b_even", lambda x: x * (x.shape[0] % 2 == 0)),
    ("empty_axis_sum", lambda x: np.zeros((x.shape[0], 0)).sum(axis=0)),
    ("setitem_half", lambda x: _set(x, slice(0, x.shape[0] // 2), 0.0)),
    ("setitem_stride", lambda x: _set(x, slice(None, None, 2), -1.0)),
    ("setitem_last", lambda x: _set(x, x.shape[0] - 1, 7.0)),
    ("partition", lambda x: np.partition(x, 0, axis=0)[:1]),
    ("sort_top_min3", lambda x: -np.sort(-x, axis=0)[: min(3, x.shape[0])]),
    ("nonzero", lambda x: np.nonzero(x[:, 0] > 0)[0]),
    ("bool_mask", lambda x: x[x[:, 0] > 0]),
    ("cov", lambda x: np.cov(x.T)),
    ("lexsort", lambda x: np.lexsort((x[:, 1], x[:, 0]))),
]


def _set(x, key, value):
    y = x.copy()
    y[key] = value
    return y


@pytest.mark.parametrize("case", params(family("more2", MORE2, roundtrip_name="setitem_half", exact=False), {
    }))
def test_more_ops_2(case):
    run_case(case)


# --------------------------------------------------------------------------------------
# jnp functions jax traces under shape polymorphism whose numpy versions capture lacks
# --------------------------------------------------------------------------------------
MORE3 = [
    ("cummax", lambda x: np.maximum.accumulate(x, axis=0)),
    ("cummin", lambda x: np.minimum.accumulate(x, axis=0)),
    ("add_reduce", lambda x: np.add.reduce(x, axis=0)),
    ("multiply_outer", lambda x: np.multiply.outer(x[:, 0], x[0])),
    ("correlate_full", lambda x: np.correlate(x[:, 0], np.array([1, 2], np.float32), mode="full")),
    ("diff_n2", lambda x: np.diff(x, n=2, axis=0)),
    ("ediff1d", lambda x: np.ediff1d(x[:, 0])),
    ("fmod_b", lambda x: np.fmod(x, x.shape[0])),
    ("float_mod_b", lambda x: x % x.shape[0]),
    ("unravel_index", lambda x: np.unravel_index(np.arange(3), (x.shape[0], 4))),
    ("ravel_multi_index", lambda x: np.ravel_multi_index((np.array([0]), np.array([1])), (x.shape[0], 4))),
    ("digitize", lambda x: np.digitize(x[:, 0], np.array([-1.0, 0.0, 1.0]))),
    ("diag_indices", lambda x: (x @ x.T)[np.diag_indices(x.shape[0])]),
    ("triu_indices", lambda x: np.triu_indices(x.shape[0])),
    ("put_along_axis", lambda x: _put_along(x)),
    ("fill_diagonal", lambda x: _fill_diag(x @ x.T)),
    ("einsum_bij_bjk", lambda x: np.einsum("bij,bjk->bik", x[:, :, None], x[:, None, :])),
    ("vander", lambda x: np.vander(x[:, 0], N=x.shape[0])),
    ("polyval", lambda x: np.polyval(x[:, 0], x[0])),
    ("trapezoid", lambda x: np.trapezoid(x, axis=0)),
    ("rot90", lambda x: np.rot90(x)),
    ("block", lambda x: np.block([[x, x], [x, x]])),
    ("column_stack", lambda x: np.column_stack([x[:, 0], x[:, 1]])),
    ("dstack", lambda x: np.dstack([x, x])),
    ("atleast_3d", lambda x: np.atleast_3d(x)),
    ("resize", lambda x: np.resize(x, (x.shape[0] + 1, 4))),
    ("append", lambda x: np.append(x, x[:1], axis=0)),
    ("delete", lambda x: np.delete(x, 0, axis=0)),
    ("apply_along_axis", lambda x: np.apply_along_axis(np.sum, 0, x)),
    ("logspace_b", lambda x: np.logspace(0, 1, x.shape[0])),
    ("geomspace_b", lambda x: np.geomspace(1, 10, x.shape[0])),
    ("hanning_b", lambda x: np.hanning(x.shape[0])),
    ("hamming_scale", lambda x: x * np.hamming(x.shape[0])[:, None].astype(np.float32)),
]


def _put_along(x):
    y = x.copy()
    np.put_along_axis(y, np.argmax(y, axis=0)[None], -9.0, axis=0)
    return y


def _fill_diag(a):
    y = a.copy()
    np.fill_diagonal(y, 0.0)
    return y


_MISSING3 = "op missing: numpy.{} has no shape rule (UnsupportedOpError); jnp.{} traces under shape polymorphism"
MORE3_XFAIL = {f"more3_{n}": _MISSING3.format(op, op) for n, op in [
    ("apply_along_axis", "apply_along_axis")]}


@pytest.mark.parametrize("case", params(family("more3", MORE3, lo=2, roundtrip_name="cummax", exact=False),
                                        MORE3_XFAIL))
def test_more_ops_3(case):
    run_case(case)


def _roundtrip(ep):
    import io
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    return buf
