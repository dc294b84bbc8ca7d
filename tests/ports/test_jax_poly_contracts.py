"""Ports of jax's shape-constraint scenarios: what a guard needs, whether one refine step
closes it, and whether the refined contract is as wide as the model allows.

jax decides comparisons of symbolic dims from their ranges and user constraints, and
raises 'inconclusive' otherwise; here a guard becomes a violation with a fix.  Each
scenario starts from a naive spec, applies the suggested fix once, exports, then walks a
grid of sizes: every size the program accepts must run as eager numpy does, and (where the
model's set of valid sizes is one contract) every size eager numpy runs must be accepted.
Also: convolution/pooling grids on two spatial dims, decompositions of ported programs,
zero-size and unbounded dims, non-array arguments.
"""
from __future__ import annotations

import copy
import io
import itertools

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import ConstraintsExceededError, ConstraintViolationError
from tensorplay_export.nn import functional as F

from ports._jaxpoly import assert_same, rand


def _eager(fn, args):
    try:
        return True, fn(*copy.deepcopy(args))
    except Exception:  # noqa: BLE001 - eager's own failure is the reference here
        return False, None


def export_refined_once(fn, args, spec):
    """Export; on a violation apply its fix once and export again (which must succeed)."""
    try:
        return tpe.export(fn, *args, dynamic_shapes=spec), 0
    except ConstraintViolationError as err:
        assert "Suggested fixes:" in str(err), str(err)
        spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
        return tpe.export(fn, *args, dynamic_shapes=spec), 1


def walk_grid(ep, fn, make, grid, *, widest: bool):
    accepted, refused_ok = [], []
    for sizes in grid:
        args = make(*sizes)
        ok, want = _eager(fn, args)
        try:
            got = ep.module()(*copy.deepcopy(args))
        except ConstraintsExceededError:
            if ok:
                refused_ok.append(sizes)
            continue
        assert ok, f"the program accepted {sizes}, where eager numpy fails"
        assert_same(got, want, exact=False, where=str(sizes))
        accepted.append(sizes)
    assert accepted, "the contract admits no size of the grid"
    if widest:
        assert not refused_ok, f"eager runs at {refused_ok[:5]} but the refined contract refuses them"


def one(b):
    return (rand((b, 4)),)


def two(a, b):
    return rand((a, 4)), rand((b, 4), seed=1)


SPEC1 = lambda: {"x": {0: Dim("b", max=40)}}  # noqa: E731
SPEC2 = lambda: {"x": {0: Dim("a", max=12)}, "y": {0: Dim("b", max=12)}}  # noqa: E731
G1 = [(b,) for b in range(1, 41)]
G2 = list(itertools.product(range(1, 13), range(1, 13)))
TABLE20 = np.ones((20, 4), np.float32) * np.arange(20, dtype=np.float32)[:, None]

# name, model, maker, spec, example, grid, widest (the model's valid sizes form one contract)
GUARDS = [
    ("split3", lambda x: sum(np.split(x, 3)), one, SPEC1, (6,), G1, True),
    ("reshape_m1_8", lambda x: x.reshape(-1, 8), one, SPEC1, (6,), G1, True),
    ("reshape_3_m1", lambda x: x.reshape(3, -1), one, SPEC1, (6,), G1, True),
    ("reshape_by6", lambda x: x.reshape(x.shape[0] // 6, 6, 4), one, SPEC1, (12,), G1, True),
    ("index5", lambda x: x[5], one, SPEC1, (6,), G1, True),
    ("index_neg5", lambda x: x[-5], one, SPEC1, (6,), G1, True),
    ("table_prefix", lambda x: x + TABLE20[: x.shape[0]], one, SPEC1, (6,), G1, True),
    ("table_offset3", lambda x: x + TABLE20[3: x.shape[0] + 3], one, SPEC1, (6,), G1, True),
    ("table_stride_b", lambda x: x + np.ones((100, 4), np.float32)[: x.shape[0] ** 2: x.shape[0]], one, SPEC1, (6,), G1, True),
    ("pairs_table", lambda x: x[: x.shape[0] // 2 * 2].reshape(-1, 2, 4) + np.ones((7, 2, 4), np.float32)[: x.shape[0] // 2],
     one, SPEC1, (6,), G1, True),
    ("step_b_minus_3", lambda x: x[:: x.shape[0] - 3], one, SPEC1, (6,), G1, False),
    ("branch_gt10", lambda x: x * 2 if x.shape[0] > 10 else x, one, SPEC1, (12,), G1, False),
    ("branch_even", lambda x: x * 2 if x.shape[0] % 2 == 0 else x, one, SPEC1, (6,), G1, False),
    ("branch_mod3_1", lambda x: x * 2 if x.shape[0] % 3 == 1 else x, one, SPEC1, (7,), G1, False),
    ("branch_eq6", lambda x: x * 2 if x.shape[0] == 6 else x, one, SPEC1, (6,), G1, False),
    ("branch_interval", lambda x: x * 2 if 4 <= x.shape[0] <= 9 else x, one, SPEC1, (6,), G1, False),
    ("concat_2b", lambda x, y: np.concatenate([y, y]) + x, two, SPEC2, (6, 3), G2, False),
    ("concat_b_plus_1", lambda x, y: np.concatenate([y, y[:1]]) + x, two, SPEC2, (4, 3), G2, False),
    ("sum_is_12", lambda x, y: np.concatenate([x, y]) + np.ones((12, 4), np.float32), two, SPEC2, (5, 7), G2, True),
    ("sum_at_most_24", lambda x, y: np.concatenate([x, y]) + np.ones((24, 4), np.float32)[: x.shape[0] + y.shape[0]],
     two, SPEC2, (5, 3), G2, True),
]


@pytest.mark.parametrize("name,fn,make,spec,example,grid,widest", GUARDS, ids=[g[0] for g in GUARDS])
def test_guard_fix_closes_in_one_step(name, fn, make, spec, example, grid, widest):
    ep, _ = export_refined_once(fn, make(*example), spec())
    walk_grid(ep, fn, make, grid, widest=widest)


SPEC60 = lambda: {"x": {0: Dim("b", max=60)}}  # noqa: E731
G60 = [(b,) for b in range(1, 61)]
T7 = np.ones((7, 2, 4), np.float32)
T50 = np.ones((50, 4), np.float32) * np.arange(50, dtype=np.float32)[:, None]
# several guards on one dim, or on two related dims: the one fix must cover all of them
COMBINED = [
    ("even_and_table", lambda x: x.reshape(-1, 2, 4) + T7[: x.shape[0] // 2], one, SPEC60, (6,), G60),
    ("div3_and_index5", lambda x: x.reshape(3, -1)[:, :1] + x[5], one, SPEC60, (6,), G60),
    ("div4_and_div6", lambda x: x.reshape(4, -1).sum() + x.reshape(6, -1).sum(), one, SPEC60, (12,), G60),
    ("odd", lambda x: x[1:].reshape(-1, 2, 4), one, SPEC60, (7,), G60),
    ("twice_b_table", lambda x: np.concatenate([x, x]) + T50[: 2 * x.shape[0]], one, SPEC60, (6,), G60),
    ("b_squared_table", lambda x: np.ones((x.shape[0] ** 2, 4), np.float32) + np.ones((100, 4), np.float32)[: x.shape[0] ** 2],
     one, SPEC60, (6,), G60),
    ("strided_table", lambda x: x + T50[::2][: x.shape[0]], one, SPEC60, (6,), G60),
    ("reversed_table", lambda x: x + T50[::-1][: x.shape[0]], one, SPEC60, (6,), G60),
    ("two_tables", lambda x: x + T50[: x.shape[0]] + np.ones((20, 4), np.float32)[x.shape[0] // 3: x.shape[0] // 3 + x.shape[0]],
     one, SPEC60, (6,), G60),
    ("min_clamped_table", lambda x: x[: min(x.shape[0], 30)] + T50[: min(x.shape[0], 30)], one, SPEC60, (6,), G60),
    ("decreasing_relation", lambda x, y: np.concatenate([x, y]) + np.ones((30, 4), np.float32), two,
     lambda: {"x": {0: Dim("a", max=30)}, "y": {0: Dim("b", max=30)}}, (10, 20), list(itertools.product(range(1, 31), range(1, 31)))),
    ("multiple_of_other", lambda x, y: x.reshape(y.shape[0], 3, 4).sum(1) + y, two,
     lambda: {"x": {0: Dim("a", max=30)}, "y": {0: Dim("b", max=30)}}, (9, 3), list(itertools.product(range(1, 31), range(1, 31)))),
]


@pytest.mark.parametrize("name,fn,make,spec,example,grid", COMBINED, ids=[g[0] for g in COMBINED])
def test_combined_guards_fix_closes_in_one_step_and_is_widest(name, fn, make, spec, example, grid):
    ep, _ = export_refined_once(fn, make(*example), spec())
    walk_grid(ep, fn, make, grid, widest=True)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    walk_grid(tpe.load(buf), fn, make, grid, widest=True)  # the refined contract survives save/load


def test_reshape_by_another_dim_has_no_expressible_fix_but_auto_works():
    """x.reshape(b, -1) needs a % b == 0: no Dim form states it; Dim.AUTO enforces it at run time."""
    fn = lambda x, y: x.reshape(y.shape[0], -1)  # noqa: E731
    with pytest.raises(ConstraintViolationError, match=r"\(4\*a\) % b == 0"):
        tpe.export(fn, *two(6, 3), dynamic_shapes=SPEC2())
    ep = tpe.export(fn, *two(6, 3), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim("b", max=12)}})
    walk_grid(ep, fn, two, G2, widest=False)


# --------------------------------------------------------------------------------------
# convolution and pooling on two dynamic spatial dims, refined once, over a grid
# --------------------------------------------------------------------------------------
KER = rand((2, 2, 3, 3), seed=1)


def img(h, w):
    return (rand((1, 2, h, w)),)


GHW = list(itertools.product(range(1, 19), range(1, 19)))
SPEC_HW = lambda: {"x": {2: Dim("h", max=40), 3: Dim("w", max=40)}}  # noqa: E731
CONVS = [
    ("conv_s2_p1", lambda x: F.conv2d(x, KER, stride=2, padding=1)),
    ("conv_s23_p02_d12", lambda x: F.conv2d(x, KER, stride=(2, 3), padding=(0, 2), dilation=(1, 2))),
    ("conv_s3_p1_d2", lambda x: F.conv2d(x, KER, stride=3, padding=1, dilation=2)),
    ("conv_same_d2", lambda x: F.conv2d(x, KER, padding="same", dilation=2)),
    ("maxpool_k3_s2_p1_ceil", lambda x: F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True)),
    ("maxpool_k2_s3_ceil", lambda x: F.max_pool2d(x, 2, 3, ceil_mode=True)),
    ("maxpool_k3_s2_p1_d2", lambda x: F.max_pool2d(x, 3, 2, padding=1, dilation=2)),
    ("maxpool_k4_s2", lambda x: F.max_pool2d(x, 4, 2)),
    ("avgpool_k3_s2_p1_ceil", lambda x: F.avg_pool2d(x, 3, 2, padding=1, ceil_mode=True)),
    ("avgpool_k3_s2_p1_nopad", lambda x: F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False)),
    ("avgpool_k3_s3_p1_ceil", lambda x: F.avg_pool2d(x, 3, 3, padding=1, ceil_mode=True)),
]


@pytest.mark.parametrize("name,fn", CONVS, ids=[c[0] for c in CONVS])
def test_conv_pool_grid(name, fn):
    """Output sizes follow the floor/ceil window formulas at every accepted (h, w)."""
    ep, _ = export_refined_once(fn, img(9, 10), SPEC_HW())
    # eager's window code returns empty outputs below the window; the contract may refuse those
    walk_grid(ep, fn, img, GHW, widest=False)


KER1 = rand((4, 3, 8), seed=2)


def _conv_zero_output(x):
    return F.conv1d(x, KER1, stride=2)


def test_conv_below_window_is_refused_by_eager_and_program_alike():
    """jax's zero-output conv harness gives an empty output at b = 4 for a window of 8; our nn
    follows torch instead (a window larger than the input is an error), so eager and the
    program agree: both refuse b < 8, both compute the same above it."""
    with pytest.raises(ConstraintViolationError, match="min=8"):
        tpe.export(_conv_zero_output, rand((1, 3, 12)), dynamic_shapes={"x": {2: Dim("b", max=40)}})
    ep = tpe.export(_conv_zero_output, rand((1, 3, 12)), dynamic_shapes={"x": {2: Dim("b", min=8, max=40)}})
    for b in (8, 9, 40):
        x = rand((1, 3, b))
        assert_same(ep.module()(x), _conv_zero_output(x), exact=False)
    with pytest.raises(ValueError, match="smaller than the window"):
        _conv_zero_output(rand((1, 3, 4)))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(rand((1, 3, 4)))


# --------------------------------------------------------------------------------------
# decompositions of programs with dynamic dims stay right at other sizes
# --------------------------------------------------------------------------------------
DECOMP = [
    ("var0", lambda x: np.var(x, axis=0)),
    ("std_ddof1", lambda x: np.std(x, axis=0, ddof=1)),
    ("einsum", lambda x: np.einsum("bi,bj->ij", x, x)),
    ("tensordot", lambda x: np.tensordot(x, x, axes=([0], [0]))),
    ("linspace_b", lambda x: x * np.linspace(0, 1, x.shape[0])[:, None]),
    ("linspace_const", lambda x: x[:, :3] * np.linspace(0, 1, 3)),
    ("tril", lambda x: np.tril(x @ x.T, k=-1)),
    ("moveaxis", lambda x: np.moveaxis(x[:, :, None], 0, -1)),
    ("array_split_sum", lambda x: sum(p.sum(axis=0) for p in np.array_split(x, 3))),
    ("clip", lambda x: np.clip(x, -1, x.shape[0] / 8)),
    ("softmax", lambda x: F.softmax(x, dim=0)),
    ("layer_norm", lambda x: F.layer_norm(x, (4,))),
    ("gelu", lambda x: F.gelu(x)),
    ("conv2d", lambda x: F.conv2d(x[None, None, :, :], KER[:1, :1], padding=1)),
]


@pytest.mark.parametrize("name,fn", [pytest.param(*d, id=d[0]) for d in DECOMP])
def test_decompositions_at_other_sizes(name, fn):
    ep = tpe.export(fn, rand((6, 4)), dynamic_shapes={"x": {0: Dim("b", min=3, max=40)}})
    dec = ep.run_decompositions()
    for b in (3, 4, 7, 40):
        x = rand((b, 4))
        assert_same(dec.module()(x), fn(x), exact=False, where=f"b={b}")
    with pytest.raises(ConstraintsExceededError):
        dec.module()(rand((41, 4)))


# --------------------------------------------------------------------------------------
# zero-size and unbounded dims, non-array arguments, data-dependent bounds
# --------------------------------------------------------------------------------------
def test_dim_may_be_zero():
    fn = lambda x: (x.sum(axis=0) + x.shape[0], np.concatenate([x, x[:1]]), x.mean(axis=1))  # noqa: E731
    ep = tpe.export(fn, rand((3, 4)), dynamic_shapes={"x": {0: Dim("b", min=0, max=20)}})
    for b in (0, 1, 5, 20):
        x = rand((b, 4))
        assert_same(ep.module()(x), fn(x), exact=False, where=f"b={b}")


def test_unbounded_dim_runs_large():
    fn = lambda x: np.cumsum(x)[x.shape[0] // 2:]  # noqa: E731
    ep = tpe.export(fn, rand((6,)), dynamic_shapes={"x": {0: Dim("b")}})
    x = rand((100_001,))
    assert_same(ep.module()(x), fn(x), exact=False)


def test_python_int_argument_is_fixed_and_checked():
    fn = lambda x, k: x[:k] * 2  # noqa: E731
    ep = tpe.export(fn, rand((6,)), 3, dynamic_shapes={"x": {0: Dim("b", min=3, max=20)}, "k": None})
    np.testing.assert_array_equal(ep.module()(rand((8,)), 3), fn(rand((8,)), 3))
    with pytest.raises(ConstraintsExceededError, match="k"):
        ep.module()(rand((8,)), 4)


def test_out_of_bounds_data_index_fails_like_eager():
    """An index read from data cannot be a guard: the program raises where eager raises."""
    fn = lambda x, i: np.take(x, i)  # noqa: E731
    ep = tpe.export(fn, rand((6,)), np.array([5]), dynamic_shapes={"x": {0: Dim("b", max=20)}, "i": None})
    np.testing.assert_array_equal(ep.module()(rand((8,)), np.array([5])), fn(rand((8,)), np.array([5])))
    with pytest.raises(IndexError):
        fn(rand((3,)), np.array([5]))
    with pytest.raises(IndexError):
        ep.module()(rand((3,)), np.array([5]))


DATA_DEP = [
    ("nonzero", lambda x: np.nonzero(x[:, 0] > 0)[0]),
    ("mask", lambda x: x[x[:, 0] > 0] * 2),
    ("unique", lambda x: np.unique((x[:, 0] > 0).astype(np.int8))),
    ("bincount_min_b", lambda x: np.bincount((np.abs(x[:, 0]) * 8).astype(np.int64) % 4, minlength=x.shape[0])),
]


@pytest.mark.parametrize("name,fn", DATA_DEP, ids=[d[0] for d in DATA_DEP])
def test_data_dependent_sizes_with_dynamic_batch(name, fn):
    """jax needs a static bound (size=) here; an unbacked size is checked at every call."""
    ep = tpe.export(fn, rand((6, 4)), dynamic_shapes={"x": {0: Dim("b", max=40)}})
    for b in (1, 2, 9, 40):
        x = rand((b, 4), seed=b)
        assert_same(ep.module()(x), fn(x), where=f"b={b}")


def _sum_table(x, y):
    return np.concatenate([x, y]) + np.ones((30, 4), np.float32)[: x.shape[0] + y.shape[0]]


def test_sum_of_dims_bounded_has_a_fix():
    spec = {"x": {0: Dim("a", max=30)}, "y": {0: Dim("b", max=30)}}
    ep, rounds = export_refined_once(_sum_table, two(10, 12), spec)
    assert rounds == 1
    walk_grid(ep, _sum_table, two, list(itertools.product(range(1, 31), range(1, 31))), widest=False)


def test_sum_of_dims_bounded_with_auto():
    """The route the error offers: Dim.AUTO on y enforces a + b <= 30 at run time."""
    ep = tpe.export(_sum_table, *two(10, 12), dynamic_shapes={"x": {0: Dim("a", max=30)}, "y": {0: Dim.AUTO}})
    walk_grid(ep, _sum_table, two, list(itertools.product(range(1, 31, 3), range(1, 31, 3))), widest=True)
