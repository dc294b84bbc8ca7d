"""A size passed where an op's shape rule needs a constant is pinned, never an internal error.

Capture retries a rule that fails on a symbolic size argument with that argument
specialized to its example value (the reason names the op and the argument, as
``math.log(size)`` names its function); the guards of the failed try are rolled back.
``np.diff``'s order and ``np.diagonal``/``np.diag``'s offset stay symbolic, and a size
comparison used as an index is numpy's Python-bool index (``x[True]``), decided by a guard.
Programs are checked against eager numpy at sizes other than the example.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.capture.shape_env import ShapeEnv
from tensorplay_export.capture.tracer import Tracer
from tensorplay_export.ops.ctx import ShapeCtx
from tensorplay_export.ops.indexing import getitem_shape
from tensorplay_export.ops.registry import ArrayInfo, OpDef

SPEC = {"x": {0: Dim("n", max=40)}}
RNG = np.random.default_rng(7)


def _x(n: int) -> np.ndarray:
    return RNG.standard_normal((n, 3))


def _same(ep, fn, sizes) -> list:
    """Sizes (of ``sizes``) at which the program differs from eager; refusals must be eager's too."""
    wrong = []
    for n in sizes:
        x = _x(n)
        try:
            ref = fn(x.copy())
        except Exception:  # noqa: BLE001 - eager fails: the program must refuse
            ref = None
        try:
            out = ep.module()(x.copy())
        except tpe.ConstraintsExceededError:
            continue
        if ref is None or np.shape(out) != np.shape(ref) or not np.allclose(out, ref):
            wrong.append(n)
    return wrong


def _accepted(ep, sizes) -> list:
    out = []
    for n in sizes:
        try:
            ep.module()(_x(n))
        except tpe.ConstraintsExceededError:
            continue
        out.append(n)
    return out


# -- symbolic where that is easy ----------------------------------------------------------------
def _diff_order(x):
    return np.diff(x, n=x.shape[0] // 3, axis=0)


def _diff_prepend(x):
    return np.diff(x, n=x.shape[0] // 4, axis=0, prepend=x[:2])


def _diagonal_offsets(x):
    s = x[:, :1] @ x[:, :1].T
    return np.diagonal(s, offset=-(x.shape[0] // 3)) + np.diagonal(s, offset=x.shape[0] // 2).sum()


def _diag_1d(x):
    return np.diag(x[:, 0], k=x.shape[0] // 2 - 3)


def _diag_2d(x):
    s = x[:, :1] @ x[:, :1].T
    return np.diag(s, k=x.shape[0] - 11)


@pytest.mark.parametrize("fn, lower", [(_diff_order, 3), (_diff_prepend, 4), (_diagonal_offsets, 1),
                                       (_diag_1d, 1), (_diag_2d, 1)],
                         ids=["diff-order", "diff-prepend", "diagonal-offset", "diag-1d", "diag-2d"])
def test_order_and_offset_sizes_stay_symbolic(fn, lower):
    spec = {"x": {0: Dim("n", min=lower, max=40)}}
    ep = tpe.export(fn, _x(8), dynamic_shapes=spec)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(lower, 40)]
    assert _same(ep, fn, range(lower, 41)) == []


def test_a_symbolic_diff_order_keeps_the_examples_side_of_zero():
    # n // 3 >= 1 at the example: the program needs it (numpy returns the input itself for 0)
    with pytest.raises(tpe.ConstraintViolationError, match=r"n // 3 >= 1") as info:
        tpe.export(_diff_order, _x(8), dynamic_shapes=SPEC)
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), SPEC)
    ep = tpe.export(_diff_order, _x(8), dynamic_shapes=spec)
    assert _accepted(ep, range(1, 41)) == list(range(3, 41))
    assert _same(ep, _diff_order, range(1, 41)) == []

    def zero_order(x):  # order 0 at the example: the input as it is, pinned to 0
        return np.diff(x, n=x.shape[0] - 8, axis=0) * 2

    ep = tpe.export(zero_order, _x(8), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert _accepted(ep, range(1, 41)) == [8]
    assert _same(ep, zero_order, [8]) == []


# -- pinned: a constant the rule needs ------------------------------------------------------------
def _split_count(x):
    return np.array_split(x, x.shape[0] // 2 + 1)[-1]


def _sum_axis(x):
    return x[None].sum(axis=x.shape[0] % 3)


def test_a_count_the_rule_needs_is_pinned_with_the_op_and_argument_named():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(_split_count, _x(8), dynamic_shapes=SPEC)
    text = str(info.value)
    assert "argument `indices_or_sections` of numpy.array_split must be a constant" in text, text
    assert "n // 2 == 4" in text and "test_rule_pins.py" in text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, SPEC)
    ep = tpe.export(_split_count, _x(8), dynamic_shapes=spec)
    assert _accepted(ep, range(1, 41)) == [8, 9]
    assert _same(ep, _split_count, range(1, 41)) == []


def test_draft_export_builds_a_program_around_the_pin():
    report = tpe.draft_export(_sum_axis, _x(8), dynamic_shapes=SPEC)
    assert report.exported_program is not None
    [failure] = report.failures
    assert failure.kind == "constraint_violation"
    assert failure.guard.kind == "specialization" and failure.guard.op == "numpy.ndarray.sum"
    assert "argument `axis` of numpy.ndarray.sum" in failure.guard.reason
    assert failure.guard.expr == sympy.Eq(sympy.Mod(sympy.Symbol("n", integer=True, positive=True), 3), 2)
    ep = report.exported_program
    assert _accepted(ep, range(1, 41)) == [n for n in range(1, 41) if n % 3 == 2]
    assert _same(ep, _sum_axis, range(1, 41)) == []


def test_only_the_argument_the_rule_cannot_take_is_pinned():
    # np.moveaxis's source is pinned; the array's own dynamic axis is not
    def model(x):
        return np.moveaxis(x[None] * x.shape[0], x.shape[1] - 3, 2)

    ep = tpe.export(model, _x(8), dynamic_shapes={"x": {0: Dim("n", max=40)}})
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, 40)]
    assert _same(ep, model, range(1, 41)) == []


# -- a size comparison as an index: numpy's Python-bool index -----------------------------------------
def _bool_index(x):
    return x[x.shape[0] > 4]


def _bool_beside_slice(x):
    return x[x.shape[0] > 4, :2, [0]]


@pytest.mark.parametrize("fn", [_bool_index, _bool_beside_slice], ids=["alone", "beside-others"])
@pytest.mark.parametrize("example", [8, 3])
def test_a_size_comparison_index_is_decided_by_a_guard(fn, example):
    with pytest.raises(tpe.ConstraintViolationError, match=r"n > 4|n <= 4"):
        tpe.export(fn, _x(example), dynamic_shapes=SPEC)
    ep = tpe.export(fn, _x(example), dynamic_shapes={"x": {0: Dim.AUTO}})
    taken = [n for n in range(1, 41) if (n > 4) == (example > 4)]
    assert _accepted(ep, range(1, 41)) == taken
    assert _same(ep, fn, range(1, 41)) == []
    report = tpe.draft_export(fn, _x(example), dynamic_shapes=SPEC)
    assert report.exported_program is not None and len(report.failures) == 1


@pytest.mark.parametrize("key", [True, False, (True,), (True, [0, 1]), ([0, 1], True), (slice(None), True),
                                 (slice(None), True, [0, 2]), (True, Ellipsis, 0), (0, True), (None, True),
                                 (True, True), (np.True_,), (slice(None), False, 1), (1, slice(None), True),
                                 (0, slice(None), [1, 2]), (slice(None), 0, [1, 2]), ([0, 1], slice(None), 2)],
                         ids=str)
def test_getitem_shape_follows_numpy_for_scalar_bools_and_ints_beside_arrays(key):
    n = sympy.Symbol("n", integer=True, positive=True)
    a = np.ones((4, 3, 5))
    ctx = ShapeCtx.bare({n: 4}, {n: (1, 64)})
    got = getitem_shape(ctx, (n, 3, 5), key)
    assert tuple(int(sympy.sympify(d).subs(n, 4)) for d in got) == a[key].shape


# -- the mechanism: a failed try leaves no guard behind ---------------------------------------------
def test_the_failed_try_of_a_rule_leaves_no_guard():
    from solver import ShapeSolver

    tracer = Tracer(ShapeEnv(ShapeSolver(timeout_ms=200), "export"))
    env = tracer.env
    n = env.create_symbol("n", 1, 64, 8, "named")
    x = tracer.placeholder("x", np.ones((8, 3)), (n, 3))

    def rule(ctx, a, k):
        if not isinstance(k, int):
            ctx.require(sympy.Eq(a.shape[0], 8), "only the failed try asks this")
            int(k)  # the rule needs a constant here
        return (k, 3)

    op = OpDef("test.needs_int", lambda a, k: a[:k], rule)
    out = tracer.call(op, (x, tpe.capture.symbolic.SymInt(sympy.floor(n / 2), env)))
    assert out._shape == (4, 3)
    [record] = env.violations
    assert record.kind == "specialization" and record.expr == sympy.Eq(sympy.floor(n / 2), 4)
    assert "argument `k` of test.needs_int must be a constant" in record.reason
    # the solver forgot the failed try's assumption too: n == 8 is not implied (n = 9 pins alike)
    assert env.solver.implies(sympy.Eq(n, 8)).refuted
    assert tracer.graph.nodes[-1].args[1] == 4  # the node computes with the pinned constant


def test_a_rule_that_fails_with_its_sizes_pinned_too_is_an_internal_error():
    from solver import ShapeSolver
    from tensorplay_export.errors import CaptureError

    tracer = Tracer(ShapeEnv(ShapeSolver(timeout_ms=200), "export"))
    n = tracer.env.create_symbol("n", 1, 64, 8, "named")
    x = tracer.placeholder("x", np.ones((8, 3)), (n, 3))

    def rule(ctx, a, k):
        raise KeyError("a rule bug")

    op = OpDef("test.broken", lambda a, k: a, rule)
    with pytest.raises(CaptureError, match=r"internal error: shape rule of test.broken failed \(also with its "
                                           r"size arguments pinned"):
        tracer.call(op, (x, tpe.capture.symbolic.SymInt(n - 1, tracer.env)))
    assert tracer.env.violations == []
