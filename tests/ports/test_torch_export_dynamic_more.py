"""More ports of torch.export dynamic-shape scenarios: refine over every spec container,
re-export of a program's module, hint ranges, unbacked sizes as sizes, AUTO relations,
draft_export with mixed failures.  Conventions as in test_torch_export_dynamic.py: numpy
models, runs at sizes other than the example against eager, strict xfails for faults
(recorded with repros in /work/notes/ports_torch_failures.md).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from test_torch_export_dynamic import agrees, arr, refine_once, roundtrip, same, violation

TABLE8 = np.arange(8, dtype=np.float32)


def head8_and_shift(x, y):
    """Needs x.shape[0] <= 8 and y.shape[0] == x.shape[0] + 1."""
    return x + TABLE8[: x.shape[0]], y[1:] * x


# --- refine over every container of dynamic_shapes ----------------------------------------------

@pytest.mark.parametrize("spec", [
    ({0: Dim("a")}, {0: Dim("b")}),
    [{0: Dim("a")}, {0: Dim("b")}],
    [[Dim("a")], [Dim("b")]],
    {"x": {0: Dim("a")}, "y": {0: Dim("b")}},
], ids=["tuple", "list", "list-of-axes", "dict"])
def test_refine_closes_in_one_step_for_each_container(spec):
    err, spec2, ep = refine_once(head8_and_shift, arr(4), arr(5), dynamic_shapes=spec)
    assert type(spec2) is type(spec)
    for n in (1, 8):
        agrees(ep, head8_and_shift, arr(n), arr(n + 1))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(9), arr(10))


def test_refine_closes_for_kwargs_specs():
    def model(x, *, y):
        return head8_and_shift(x, y)

    spec = {"x": {0: Dim("a")}, "y": {0: Dim("b")}}
    err, spec2, ep = refine_once(model, arr(4), y=arr(5), dynamic_shapes=spec)
    agrees(ep, model, arr(7), y=arr(8))


def test_refine_closes_for_nested_specs():
    def model(inp):
        return head8_and_shift(*inp["p"])

    spec = {"inp": {"p": ({0: Dim("a")}, {0: Dim("b")})}}
    err, spec2, ep = refine_once(model, {"p": (arr(4), arr(5))}, dynamic_shapes=spec)
    agrees(ep, model, {"p": (arr(6), arr(7))})


def test_refine_closes_for_a_shapes_collection():
    x, y = arr(4), arr(5)
    sc = tpe.ShapesCollection()
    sc[x] = {0: Dim("a")}
    sc[y] = {0: Dim("b")}
    err, sc2, ep = refine_once(head8_and_shift, x, y, dynamic_shapes=sc)
    agrees(ep, head8_and_shift, arr(2), arr(3))


def pinned_y(x, y):
    """Needs x.shape[0] <= 8 and y.shape[0] == 5 (a specialization for a Dim.DYNAMIC axis)."""
    return x + TABLE8[: x.shape[0]], y * TABLE8[:5]


def test_dynamic_hints_in_a_nested_dict_take_the_relation_and_range():
    def model(inp):
        return head8_and_shift(*inp["p"])

    spec = {"inp": {"p": ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})}}
    ep = tpe.export(model, {"p": (arr(4), arr(5))}, dynamic_shapes=spec)
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(1, 8)]
    for n in (1, 8):
        agrees(ep, model, {"p": (arr(n), arr(n + 1))})
    for n, m in ((9, 10), (4, 4)):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()({"p": (arr(n), arr(m))})


def test_refine_closes_for_a_specialized_dynamic_hint_in_a_nested_dict():
    def model(inp):
        return pinned_y(*inp["p"])

    spec = {"inp": {"p": ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})}}
    err, spec2, ep = refine_once(model, {"p": (arr(4), arr(5))}, dynamic_shapes=spec)
    assert "specialized it to the constant 5" in str(err)
    assert spec2 == {"inp": {"p": ({0: Dim.DYNAMIC}, {0: 5})}}
    agrees(ep, model, {"p": (arr(8), arr(5))})
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()({"p": (arr(9), arr(5))})


def test_additional_inputs_axes_take_the_relation_the_model_needs():
    # each axis varies alone (DYNAMIC): export infers y = x + 1 and x <= 8, which every set satisfies
    ai = tpe.AdditionalInputs()
    ai.add((arr(2), arr(3)))
    ai.add((arr(6), arr(7)))
    ep = tpe.export(head8_and_shift, arr(4), arr(5), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: Dim.DYNAMIC}, "y": {0: Dim.DYNAMIC}}
    ai.verify(ep)
    agrees(ep, head8_and_shift, arr(8), arr(9))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(9), arr(10))


def test_a_fix_refusing_an_additional_inputs_set_is_not_offered():
    # y.shape[0] == 5 is a specialization; the fix y = 5 would refuse the set with y of size 7,
    # so the error offers none and says which set (torch's would pin it and lose the set)
    ai = tpe.AdditionalInputs()
    ai.add((arr(2), arr(5)))
    ai.add((arr(6), arr(5)))
    ai.add((arr(3), arr(7)))
    err = violation(pinned_y, arr(4), arr(5), dynamic_shapes=ai)
    assert err.fixes == [] and "example set 2 (y_dim0 = 7)" in str(err)
    with pytest.raises(ValueError, match="no suggested fixes to apply"):
        tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), ai.spec)
    # the spec the message's advice leads to (y static) exports, for the sets it still admits
    ep = tpe.export(pinned_y, arr(4), arr(5), dynamic_shapes={"x": {0: Dim.DYNAMIC}, "y": {0: 5}})
    agrees(ep, pinned_y, arr(8), arr(5))


@dataclasses.dataclass
class Two:
    a: np.ndarray
    b: np.ndarray


tpe.register_dataclass(Two, serialized_type_name="tests.ports.torch_dynamic_more.Two")


def two_model(p):
    return head8_and_shift(p.a, p.b)


def test_refine_closes_for_a_dataclass_spec():
    spec = {"p": Two(a={0: Dim("a")}, b={0: Dim("b")})}
    err, spec2, ep = refine_once(two_model, Two(arr(4), arr(5)), dynamic_shapes=spec)
    agrees(ep, two_model, Two(arr(8), arr(9)))


def test_dynamic_hints_in_a_tuple_spec_take_the_relation_and_range():
    ep = tpe.export(head8_and_shift, arr(4), arr(5), dynamic_shapes=({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC}))
    agrees(ep, head8_and_shift, arr(8), arr(9))
    agrees(ep, head8_and_shift, arr(1), arr(2))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(9), arr(10))


def test_refine_closes_for_a_specialized_dynamic_hint_in_a_tuple_spec():
    spec = ({0: Dim.DYNAMIC}, {0: Dim.DYNAMIC})
    err, spec2, ep = refine_once(pinned_y, arr(4), arr(5), dynamic_shapes=spec)
    assert spec2 == ({0: Dim.DYNAMIC}, {0: 5})
    agrees(ep, pinned_y, arr(8), arr(5))


def test_dataclass_spec_given_as_a_dict_of_fields_refines():
    # the field-dict form of a dataclass spec (what AdditionalInputs produces) refines fine
    spec = {"p": {"a": {0: Dim("a")}, "b": {0: Dim("b")}}}
    err, spec2, ep = refine_once(two_model, Two(arr(4), arr(5)), dynamic_shapes=spec)
    agrees(ep, two_model, Two(arr(3), arr(4)))


def test_draft_export_fix_block_refines_nested_specs():
    def model(inp):
        return head8_and_shift(*inp["p"])

    spec = {"inp": {"p": ({0: Dim("a")}, {0: Dim("b")})}}
    report = tpe.draft_export(model, {"p": (arr(4), arr(5))}, dynamic_shapes=spec)
    assert [f.kind for f in report.failures].count("constraint_violation") == 2
    spec2 = tpe.refine_dynamic_shapes_from_suggested_fixes(str(report), spec)
    ep = tpe.export(model, {"p": (arr(4), arr(5))}, dynamic_shapes=spec2)
    agrees(ep, model, {"p": (arr(8), arr(9))})


# --- refine of derived dims when their root changes --------------------------------------------

def test_refined_root_range_carries_into_its_derived_dims():
    dx = Dim("dx")
    spec = {"x": {0: dx}, "y": {0: dx + 1}}
    out = tpe.refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  dx = Dim('dx', max=5)\n", spec)
    assert out["x"][0].max == 5
    assert out["y"][0].max == 6 and out["y"][0].root.max == 5


def test_specialized_root_specializes_its_derived_dims():
    dx = Dim("dx")
    spec = {"x": {0: dx}, "y": {0: 2 * dx + 1}}
    out = tpe.refine_dynamic_shapes_from_suggested_fixes("Suggested fixes:\n  dx = 4\n", spec)
    assert out == {"x": {0: 4}, "y": {0: 9}}


def test_fix_narrows_a_root_through_its_derived_dim():
    TABLE10 = np.arange(10.0, dtype=np.float32)

    def model(x, y):
        return x + (y + TABLE10[: y.shape[0]])[1:]

    dx = Dim("dx")
    err, spec, ep = refine_once(model, arr(5), arr(6), dynamic_shapes={"x": {0: dx}, "y": {0: dx + 1}})
    assert "dx = Dim('dx', max=9)" in str(err)
    for n in (1, 9):
        agrees(ep, model, arr(n), arr(n + 1))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(10), arr(11))


def test_fix_ties_with_scale_and_offset():
    def model(x, y):
        return np.concatenate([x, x, np.ones(1, np.float32)]) + y

    err, spec, ep = refine_once(model, arr(3), arr(7), dynamic_shapes={"x": {0: Dim("dx")}, "y": {0: Dim("dy")}})
    assert "dy = 2*dx + 1" in str(err)
    for n in (1, 6):
        agrees(ep, model, arr(n), arr(2 * n + 1))


def test_derived_dim_on_the_first_input_and_root_on_the_second():
    def model(x, y):
        return x[1:] + y

    dx = Dim("dx")
    ep = tpe.export(model, arr(5), arr(4), dynamic_shapes={"x": {0: dx + 1}, "y": {0: dx}})
    for n in (1, 7):
        agrees(ep, model, arr(n + 1), arr(n))


def test_derived_dim_reused_on_two_inputs():
    def model(x, y, z):
        return x[1:] + y + z[1:]

    dx = Dim("dx")
    ep = tpe.export(model, arr(5), arr(4), arr(5), dynamic_shapes={"x": {0: dx + 1}, "y": {0: dx}, "z": {0: dx + 1}})
    agrees(ep, model, arr(3), arr(2), arr(3))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(3), arr(2), arr(4))


def test_derived_dim_minus_one_admits_an_empty_input():
    # dx - 1 over Dim's default min 1 reaches 0: the contract admits an empty y
    def model(x, y):
        return x[1:] + y

    dx = Dim("dx")
    ep = tpe.export(model, arr(5), arr(4), dynamic_shapes={"x": {0: dx}, "y": {0: dx - 1}})
    for n in (1, 2, 6):
        agrees(ep, model, arr(n), arr(n - 1))


def test_zero_size_example_with_a_derived_dim():
    def model(x, y):
        return np.tile(x, 2) + y

    d = Dim("d", min=0, max=10)
    ep = tpe.export(model, arr(0), arr(0), dynamic_shapes={"x": {0: d}, "y": {0: 2 * d}})
    for n in (0, 1, 10):
        agrees(ep, model, arr(n), arr(2 * n))


def test_one_dim_on_two_axes_of_one_input():
    def model(x):
        return x @ x.T + x

    n = Dim("n")
    ep = tpe.export(model, arr(3, 3), dynamic_shapes={"x": {0: n, 1: n}})
    agrees(ep, model, arr(6, 6))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(6, 5))


def test_square_matmul_needs_equal_dims_fix():
    def model(x):
        return x @ x

    err, spec, ep = refine_once(model, arr(3, 3), dynamic_shapes={"x": {0: Dim("a"), 1: Dim("b")}})
    assert "b = a" in str(err)
    agrees(ep, model, arr(5, 5))


def test_dim_with_min_equal_max_is_a_fixed_size():
    ep = tpe.export(lambda x: x * 3, arr(4), dynamic_shapes={"x": {0: Dim("d", min=4, max=4)}})
    agrees(ep, lambda x: x * 3, arr(4))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(5))


# --- hints with ranges ------------------------------------------------------------------------

def test_auto_and_dynamic_hints_take_ranges():
    def model(x, y):
        return x * 2, y + 1

    ep = tpe.export(model, arr(4), arr(6), dynamic_shapes={"x": {0: Dim.AUTO(min=2, max=8)},
                                                           "y": {0: Dim.DYNAMIC(max=16)}})
    agrees(ep, model, arr(8), arr(16))
    for bad in ((arr(9), arr(6)), (arr(1), arr(6)), (arr(4), arr(17))):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep.module()(*bad)


# --- AUTO relations -----------------------------------------------------------------------------

def test_auto_dims_accept_a_divisibility_and_enforce_it():
    def model(x):
        return x.reshape(-1, 4).sum(axis=1)

    ep = tpe.export(model, arr(8), dynamic_shapes={"x": {0: Dim.AUTO}})
    for n in (4, 12, 40):
        agrees(ep, model, arr(n))
    with pytest.raises(tpe.ConstraintsExceededError, match="% 4"):
        ep.module()(arr(13))
    with pytest.raises(tpe.ConstraintsExceededError):
        roundtrip(ep).module()(arr(13))


def test_auto_dims_accept_a_sum_relation():
    def model(x, y, z):
        return np.concatenate([x, y]) * z

    ep = tpe.export(model, arr(2), arr(3), arr(5),
                    dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}, "z": {0: Dim.AUTO}})
    for a, b in ((1, 1), (4, 9)):
        agrees(ep, model, arr(a), arr(b), arr(a + b))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(4), arr(4), arr(7))


def test_auto_dim_from_an_example_of_size_one_stays_dynamic():
    # torch would specialize a size-1 example; ours keeps the AUTO axis dynamic
    ep = tpe.export(lambda x: x * 2, arr(1, 3), dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO}})
    for shape in ((1, 1), (4, 5)):
        agrees(ep, lambda x: x * 2, arr(*shape))


def test_draft_export_lists_accepted_auto_guards_and_auto_specializations():
    report = tpe.draft_export(lambda x: x.reshape(2, -1), arr(4), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert report.successful() and any("% 2" in a for a in report.accepted)
    W = np.ones(4, np.float32)
    report2 = tpe.draft_export(lambda x: x + W, arr(4), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert [f.kind for f in report2.failures] == ["auto_specialization"]
    with pytest.raises(tpe.ConstraintsExceededError):
        report2.exported_program.module()(arr(5))


# --- re-export of a program's module (torch's retraceability mode) ------------------------------

def _shift_model(x, y):
    return x + y[1:]


def test_reexport_of_the_module_with_a_positional_spec():
    dx = Dim("dx", max=20)
    ep = tpe.export(_shift_model, arr(3), arr(4), dynamic_shapes={"x": {0: dx}, "y": {0: dx + 1}})
    ep2 = tpe.export(ep.module(), arr(3), arr(4), dynamic_shapes=({0: dx}, {0: dx + 1}))
    agrees(ep2, _shift_model, arr(20), arr(21))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep2.module()(arr(21), arr(22))


def test_reexport_of_the_module_with_the_same_dict_spec():
    dx = Dim("dx", max=20)
    spec = {"x": {0: dx}, "y": {0: dx + 1}}
    ep = tpe.export(_shift_model, arr(3), arr(4), dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), arr(3), arr(4), dynamic_shapes=spec)
    agrees(ep2, _shift_model, arr(20), arr(21))


def test_reexport_of_a_loaded_module_with_kwargs_by_name():
    def model(x, *, y):
        return x + y[1:]

    dx = Dim("dx", max=20)
    spec = {"x": {0: dx}, "y": {0: dx + 1}}
    ep = roundtrip(tpe.export(model, arr(3), y=arr(4), dynamic_shapes=spec))
    ep2 = tpe.export(ep.module(), arr(3), y=arr(4), dynamic_shapes=spec)
    agrees(ep2, model, arr(5), y=arr(6))


def test_reexport_of_the_module_with_auto_dims_recovers_the_contract():
    dx = Dim("dx", max=20)
    ep = tpe.export(_shift_model, arr(3), arr(4), dynamic_shapes={"x": {0: dx}, "y": {0: dx + 1}})
    ep2 = tpe.export(ep.module(), arr(3), arr(4), dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
    agrees(ep2, _shift_model, arr(20), arr(21))
    for bad in ((arr(21), arr(22)), (arr(5), arr(5))):
        with pytest.raises(tpe.ConstraintsExceededError):
            ep2.module()(*bad)


def test_decomposed_program_keeps_the_dynamic_contract():
    def model(x):
        return tpe.nn.functional.softmax(x, dim=-1).var(axis=0)

    ep = tpe.export(model, arr(3, 4), dynamic_shapes={"x": {0: Dim("n"), 1: Dim("k", max=9)}})
    d = ep.run_decompositions()
    for shape in ((1, 1), (6, 9)):
        agrees(d, model, arr(*shape))
    with pytest.raises(tpe.ConstraintsExceededError):
        d.module()(arr(6, 10))
    agrees(roundtrip(d), model, arr(2, 9))


# --- unbacked sizes used as sizes ---------------------------------------------------------------

def test_unbacked_size_equal_to_an_input_dim_after_a_check():
    def model(x, y):
        kept = x[x > 0]
        tpe.check(kept.shape[0] == y.shape[0])
        return kept + y

    ep = tpe.export(model, np.array([1.0, 2, -1], np.float32), arr(2),
                    dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("m")}})
    agrees(ep, model, np.array([1.0, 2, 3, -4], np.float32), arr(3))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.array([1.0, 2, 3, -4], np.float32), arr(2))


def test_data_dependent_error_names_tpe_check_as_the_way_out():
    def model(x, y):
        kept = x[x > 0]
        return kept + y

    with pytest.raises(tpe.DataDependentError) as info:
        tpe.export(model, np.array([1.0, 2, -1], np.float32), arr(2),
                   dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("m")}})
    assert "tpe.check(" in str(info.value)


def test_unbacked_size_into_a_creation_op():
    def model(x):
        idx = np.nonzero(x)[0]
        tpe.check(idx.shape[0] >= 1)
        return np.ones((idx.shape[0], 2)) * idx[:, None], idx[0]

    ep = tpe.export(model, np.array([0, 1, 1]), dynamic_shapes={"x": {0: Dim("n")}})
    agrees(ep, model, np.array([1, 0, 0, 1, 1]))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.array([0, 0]))


def test_gather_by_nonzero_indices():
    def model(x, k):
        return np.take(k, np.nonzero(x)[0]) * 2

    n = Dim("n")
    ep = tpe.export(model, np.array([0, 1, 1]), arr(3), dynamic_shapes={"x": {0: n}, "k": {0: n}})
    agrees(ep, model, np.array([1, 0, 0, 1, 1]), arr(5))
    agrees(ep, model, np.array([0, 0]), arr(2))


def test_argwhere_over_two_dynamic_axes():
    def model(x):
        return np.argwhere(x > 0) * 2

    ep = tpe.export(model, np.eye(3), dynamic_shapes={"x": {0: Dim("n"), 1: Dim("m")}})
    agrees(ep, model, np.eye(4))
    agrees(ep, model, -np.ones((2, 5)))


def test_repeat_by_counts_has_a_data_dependent_length():
    def model(x, c):
        return np.repeat(x, c)

    n = Dim("n")
    ep = tpe.export(model, arr(3), np.array([1, 2, 0]), dynamic_shapes={"x": {0: n}, "c": {0: n}})
    agrees(ep, model, arr(2), np.array([3, 1]))
    agrees(ep, model, arr(4), np.array([0, 0, 0, 0]))


def test_unique_then_a_creation_op_of_its_length():
    def model(x):
        u = np.unique(x)
        return np.zeros(u.shape[0]) + u

    ep = tpe.export(model, np.array([1, 1, 2, 3]), dynamic_shapes={"x": {0: Dim("n")}})
    agrees(ep, model, np.array([4, 4, 4, 1, 2]))
    agrees(roundtrip(ep), model, np.array([7]))


def test_unbacked_slice_start():
    def model(x, y):
        return y[np.nonzero(x)[0].shape[0]:] + 1

    ep = tpe.export(model, np.array([1, 0, 1]), arr(5), dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("m")}})
    agrees(ep, model, np.array([1, 1, 1, 1]), arr(3))
    agrees(ep, model, np.array([0, 1]), arr(6))


def test_count_nonzero_used_as_a_size_is_a_data_dependent_size():
    # a size computed from data (torch: u0 = x.count_nonzero().item()) is an unbacked size
    def model(x):
        return np.zeros(np.count_nonzero(x)) + x.sum()

    ep = tpe.export(model, np.array([0, 1, 1]), dynamic_shapes={"x": {0: Dim("n")}})
    for v in ([0, 0, 0, 0], [1, 2, 3], [5], [0, 7, 0, 9, 1]):
        np.testing.assert_array_equal(ep.module()(np.array(v)), model(np.array(v)))


def test_where_with_one_argument_is_nonzero():
    def model(x):
        r, c = np.where(x > 0)
        return x[r, c] + r

    ep = tpe.export(model, np.eye(3), dynamic_shapes={"x": {0: Dim("n"), 1: Dim("m")}})
    agrees(ep, model, np.eye(4))


def test_floor_half_of_a_dim_as_a_slice_bound():
    def model(x):
        s = x.shape[0] // 2
        return x[:s] + x[s:2 * s]

    ep = tpe.export(model, arr(6), dynamic_shapes={"x": {0: Dim("n")}})
    for n in (1, 2, 7, 10):
        agrees(ep, model, arr(n))


def test_reshape_by_floor_half_needs_an_even_size_fix():
    def model(x):
        return x.reshape(x.shape[0] // 2, 2)

    err, spec, ep = refine_once(model, arr(6), dynamic_shapes={"x": {0: Dim("n")}})
    assert "n = 2*_n" in str(err)
    agrees(ep, model, arr(10))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(7))


# --- draft_export with mixed failures ----------------------------------------------------------

def test_draft_export_mixed_failures_say_the_fixes_are_not_enough():
    def model(x, y):
        k = np.nonzero(x)[0]
        if k.shape[0] > 1:
            y = y * 2
        return x + np.arange(16.0)[: x.shape[0]] + y

    spec = {"x": {0: Dim("n")}, "y": {0: Dim("m")}}
    report = tpe.draft_export(model, np.ones(4), np.ones(4), dynamic_shapes=spec)
    kinds = sorted(f.kind for f in report.failures)
    assert kinds == ["constraint_violation", "constraint_violation", "data_dependent"]
    assert report.fixes_blocked_by == ["data_dependent"]
    assert "do not make export succeed" in str(report)
    # the draft program checks the assumption it made at run time
    dp = report.exported_program
    agrees(dp, model, np.ones(6), np.ones(6))
    with pytest.raises(tpe.ConstraintsExceededError):
        dp.module()(np.array([1.0, 0, 0, 0]), np.ones(4))
    spec2 = tpe.refine_dynamic_shapes_from_suggested_fixes(str(report), spec)
    with pytest.raises(tpe.DataDependentError):
        tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes=spec2)


def test_draft_export_when_the_model_raises_on_its_example():
    def model(x):
        return x.reshape(3, -1)

    report = tpe.draft_export(model, arr(4), dynamic_shapes={"x": {0: Dim("n")}})
    assert report.exported_program is None and not report.successful()
    assert report.failures and report.failures[0].source is not None


# --- inputs that are not arrays ----------------------------------------------------------------

def test_dim_on_an_int_input_makes_it_a_symint_input():
    # as torch makes an int input a SymInt (tests/test_symint_inputs.py has the rest)
    model = lambda x, n: x * n  # noqa: E731
    ep = tpe.export(model, arr(3), 4, dynamic_shapes={"x": {0: Dim("d")}, "n": Dim("n")})
    for size, n in [(3, 4), (5, 9), (1, 1)]:
        agrees(ep, model, arr(size), n)
    with pytest.raises(tpe.ConstraintsExceededError, match="n must be an int"):
        ep.module()(arr(3), 2.0)


def test_int_input_used_as_a_size():
    def model(x, n):
        return np.zeros((n, x.shape[0]), np.float32) + x

    ep = tpe.export(model, arr(3), 4, dynamic_shapes={"x": {0: Dim("d")}, "n": None})
    agrees(ep, model, arr(5), 4)


def test_float_input_other_value_is_refused_by_name():
    ep = tpe.export(lambda x, s: x * s, arr(3), 0.5, dynamic_shapes={"x": {0: Dim("d")}, "s": None})
    agrees(ep, lambda x, s: x * s, arr(2), 0.5)
    with pytest.raises(tpe.ConstraintsExceededError, match="s = 0.25"):
        ep.module()(arr(2), 0.25)


def test_sizes_and_none_as_outputs():
    def model(x):
        return {"a": x[:, 0], "b": (x.shape[0], None)}

    ep = tpe.export(model, arr(3, 2), dynamic_shapes={"x": {0: Dim("n")}})
    agrees(ep, model, arr(5, 2))
    agrees(roundtrip(ep), model, arr(6, 2))


def test_wrong_rank_and_dtype_at_run_time_are_refused_by_name():
    ep = tpe.export(lambda x: x + 1, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("n")}})
    with pytest.raises(tpe.ConstraintsExceededError, match="rank"):
        ep.module()(np.ones(3))
    with pytest.raises(tpe.InputDtypeError, match="float64"):
        ep.module()(np.ones((3, 2), np.float32))


def test_varargs_model_takes_a_spec_for_args():
    def model(*args):
        return args[0] + args[1]

    n = Dim("n")
    ep = tpe.export(model, arr(3), arr(3), dynamic_shapes={"args": ({0: n}, {0: n})})
    agrees(ep, model, arr(5), arr(5))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(5), arr(4))


def test_submodule_with_kwargs_keeps_its_call_signature():
    class Sub(tpe.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tpe.nn.Linear(3, 3)

        def forward(self, x, *, mask=None, scale=1.0):
            y = self.fc(x) * scale
            return y if mask is None else y * mask

    class Top(tpe.nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Sub()

        def forward(self, x, m):
            return self.sub(x, mask=m, scale=2.0) + 1

    top = Top()
    b = Dim("b")
    ep = tpe.export(top, arr(2, 3), arr(2, 3), dynamic_shapes={"x": {0: b}, "m": {0: b}},
                    preserve_module_call_signature=("sub",))
    x, m = arr(5, 3), arr(5, 3)
    for prog in (ep, roundtrip(ep)):
        u = tpe.unflatten(prog)
        same(u.sub(x, mask=m, scale=2.0), top.sub(x, mask=m, scale=2.0))
        same(u(x, m), top(x, m))


# --- AdditionalInputs edge cases ---------------------------------------------------------------

def test_additional_inputs_keep_a_static_axis_static():
    ai = tpe.AdditionalInputs()
    ai.add((arr(2, 3),))
    ai.add((arr(2, 4),))
    ep = tpe.export(lambda x: x.sum(axis=1), arr(2, 5), dynamic_shapes=ai)
    agrees(ep, lambda x: x.sum(axis=1), arr(2, 9))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(3, 9))


def test_additional_inputs_with_a_different_rank_are_refused():
    ai = tpe.AdditionalInputs()
    ai.add((arr(2, 3, 1),))
    with pytest.raises(ValueError, match="rank"):
        tpe.export(lambda x: x.sum(axis=1), arr(2, 5), dynamic_shapes=ai)


def test_additional_inputs_relation_is_inferred_and_the_sets_are_checked():
    def model(x, y):
        return np.tile(x, 2)[:-1] + y

    ai = tpe.AdditionalInputs()
    ai.add((arr(3), arr(5)))
    ai.add((arr(4), arr(7)))
    ep = tpe.export(model, arr(2), arr(3), dynamic_shapes=ai)
    ai.verify(ep)
    agrees(ep, model, arr(9), arr(17))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(9), arr(18))
    # a set the inferred y = 2*x - 1 refuses: export names it
    ai.add((arr(4), arr(8)))
    with pytest.raises(tpe.ConstraintsExceededError, match=r"AdditionalInputs set 2 \(x.shape\[0\] = 4, "
                                                             r"y.shape\[0\] = 8\) is outside"):
        tpe.export(model, arr(2), arr(3), dynamic_shapes=ai)


def test_additional_inputs_with_an_empty_set_on_shared_axes():
    ai = tpe.AdditionalInputs()
    ai.add((arr(0), arr(0)))
    ai.add((arr(3), arr(3)))
    ep = tpe.export(lambda x, y: x * y, arr(2), arr(2), dynamic_shapes=ai)
    ai.verify(ep)
    agrees(ep, lambda x, y: x * y, arr(0), arr(0))


def test_additional_inputs_with_an_empty_set_on_a_lone_axis():
    ai = tpe.AdditionalInputs()
    ai.add((arr(0),))
    ai.add((arr(3),))
    ep = tpe.export(lambda x: x * 2, arr(2), dynamic_shapes=ai)
    ai.verify(ep)
    agrees(ep, lambda x: x * 2, arr(0))


def test_additional_inputs_with_a_varying_int_make_it_dynamic():
    ai = tpe.AdditionalInputs()
    ai.add((arr(2, 3), 1))
    ai.add((arr(4, 3), 2))
    model = lambda x, k: x * k  # noqa: E731
    ep = tpe.export(model, arr(3, 3), 1, dynamic_shapes=ai)
    ai.verify(ep)
    agrees(ep, model, arr(5, 3), 7)
    # a float that varies stays refused: only int inputs can be dynamic
    af = tpe.AdditionalInputs()
    af.add((arr(2, 3), 1.5))
    af.add((arr(4, 3), 2.5))
    with pytest.raises(ValueError, match="k"):
        tpe.export(model, arr(3, 3), 1.5, dynamic_shapes=af)


def test_shapes_collection_entries_may_hold_hints_and_tuples():
    x = arr(3, 4)
    sc = tpe.ShapesCollection()
    sc[x] = {0: Dim.AUTO, 1: Dim.STATIC}
    ep = tpe.export(lambda x: x.T, x, dynamic_shapes=sc)
    agrees(ep, lambda x: x.T, arr(5, 4))
    sc2 = tpe.ShapesCollection()
    sc2[x] = (Dim("a"), None)
    ep2 = tpe.export(lambda x: x.T, x, dynamic_shapes=sc2)
    agrees(ep2, lambda x: x.T, arr(6, 4))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep2.module()(arr(6, 5))


# --- tpe.check facts about unbacked sizes used later --------------------------------------------

def test_check_bounds_an_unbacked_slice_of_a_constant_table():
    def model(x):
        idx = np.nonzero(x)[0]
        tpe.check(idx.shape[0] <= 8)
        return TABLE8[: idx.shape[0]] + idx

    ep = tpe.export(model, np.array([1, 0, 1]), dynamic_shapes={"x": {0: Dim("n")}})
    for v in ([1] * 8, [0, 0, 0], [1, 0, 0, 0, 1, 1]):
        agrees(ep, model, np.array(v))
    with pytest.raises(tpe.ConstraintsExceededError, match="<= 8"):
        ep.module()(np.ones(9, dtype=np.int64))


def test_unbacked_slice_of_a_constant_table_without_a_check_is_data_dependent():
    def model(x):
        idx = np.nonzero(x)[0]
        return TABLE8[: idx.shape[0]] + idx

    with pytest.raises(tpe.DataDependentError, match="u0 <= 8"):
        tpe.export(model, np.array([1, 0, 1]), dynamic_shapes={"x": {0: Dim("n")}})


def test_check_relates_an_unbacked_size_to_an_input_dim():
    def model(x, y):
        u = np.nonzero(x)[0].shape[0]
        tpe.check(u <= y.shape[0])
        return y[:u] * 2 + np.arange(u)

    ep = tpe.export(model, np.array([1, 0, 1]), arr(4), dynamic_shapes={"x": {0: Dim("n")}, "y": {0: Dim("m")}})
    agrees(ep, model, np.array([1, 1, 1]), arr(3))
    agrees(ep, model, np.array([0]), arr(1))
    with pytest.raises(tpe.ConstraintsExceededError, match="u0 <= m"):
        ep.module()(np.array([1, 1, 1]), arr(2))


def test_check_lets_an_unbacked_index_through():
    def model(x):
        idx = np.nonzero(x)[0]
        tpe.check(idx.shape[0] >= 2)
        return idx[1] + x[: idx.shape[0]]

    ep = tpe.export(model, np.array([1, 0, 1]), dynamic_shapes={"x": {0: Dim("n")}})
    agrees(ep, model, np.array([0, 1, 1, 1]))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.array([0, 1, 0]))


def test_max_over_a_maybe_empty_mask_needs_a_check():
    def model(x):
        return x[x > 0].max()

    with pytest.raises(tpe.DataDependentError, match="u0 >= 1"):
        tpe.export(model, np.array([1.0, -1, 2]), dynamic_shapes={"x": {0: Dim("n")}})

    def checked(x):
        k = x[x > 0]
        tpe.check(k.shape[0] >= 1)
        return k.max()

    ep = tpe.export(checked, np.array([1.0, -1, 2]), dynamic_shapes={"x": {0: Dim("n")}})
    agrees(ep, checked, np.array([-3.0, 5.0, 4.0, -1.0]))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.array([-1.0, -2.0]))


# --- fixes that re-derive dims of the spec ------------------------------------------------------

def test_fix_tying_a_root_re_derives_the_dims_built_on_it():
    def model(x, y, z):
        return x + y[1:], z[2:] + x

    dx, dy = Dim("dx"), Dim("dy")
    err, spec, ep = refine_once(model, arr(3), arr(4), arr(5),
                                dynamic_shapes={"x": {0: dx}, "y": {0: dy}, "z": {0: dy + 1}})
    assert spec["z"][0].root.name == "dx" and spec["z"][0].value_at({"dx": 5}) == 7
    for n in (1, 6):
        agrees(ep, model, arr(n), arr(n + 1), arr(n + 2))


def test_fix_for_a_parity_of_a_derived_dim_moves_to_a_new_root():
    def model(x, y):
        return x * 2, y.reshape(-1, 2)

    dx = Dim("dx")
    err, spec, ep = refine_once(model, arr(3), arr(4), dynamic_shapes={"x": {0: dx}, "y": {0: dx + 1}})
    assert "dx = 2*_dx + 1" in str(err)
    for n in (1, 3, 9):
        agrees(ep, model, arr(n), arr(n + 1))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(2), arr(3))


def test_fixes_for_a_sum_and_a_parity_combine():
    def model(x, y, z):
        return np.concatenate([x, y]) + z, x.reshape(-1, 2)

    spec = {"x": {0: Dim("a")}, "y": {0: Dim("b")}, "z": {0: Dim("c")}}
    err, spec2, ep = refine_once(model, arr(2), arr(3), arr(5), dynamic_shapes=spec)
    for a, b in ((2, 1), (6, 4)):
        agrees(ep, model, arr(a), arr(b), arr(a + b))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(3), arr(1), arr(4))


def test_fixes_for_an_offset_and_a_parity_of_the_derived_side():
    def model(x, y):
        return y.reshape(-1, 2), y[1:] + x

    err, spec, ep = refine_once(model, arr(3), arr(4), dynamic_shapes={"x": {0: Dim("a")}, "y": {0: Dim("b")}})
    for n in (1, 5):
        agrees(ep, model, arr(n), arr(n + 1))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(2), arr(3))


def test_dims_helper_shares_bounds():
    a, b = tpe.dims("a", "b", min=2, max=9)
    ep = tpe.export(lambda x, y: x @ y, arr(3, 4), arr(4, 3), dynamic_shapes={"x": {0: a, 1: b}, "y": {0: b, 1: a}})
    assert sorted((v.lower, v.upper) for v in ep.range_constraints.values()) == [(2, 9), (2, 9)]
    agrees(ep, lambda x, y: x @ y, arr(9, 2), arr(2, 9))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(1, 2), arr(2, 1))


# --- torch's derived-dim scenarios, restated -----------------------------------------------------

def test_strided_slice_matches_an_odd_derived_dim():
    def model(x, y):
        return x + y[1::2]

    dx = Dim("dx", min=3, max=6)
    ep = tpe.export(model, arr(5), arr(11), dynamic_shapes=({0: dx}, {0: 2 * dx + 1}))
    for n in (3, 6):
        agrees(ep, model, arr(n), arr(2 * n + 1))


def test_offset_and_strided_slices_of_two_derived_dims():
    def model(z, y):
        return z[1:] + y[1::2]

    dx = Dim("dx", min=3, max=6)
    ep = tpe.export(model, arr(6), arr(11), dynamic_shapes=({0: dx}, {0: 2 * dx - 1}))
    agrees(ep, model, arr(5), arr(9))
    # the example does not fit this pair of forms (6 = dx + 1 gives dx = 5, but 11 != 2*5 - 1)
    with pytest.raises(tpe.ConstraintsExceededError):
        tpe.export(model, arr(6), arr(11), dynamic_shapes=({0: dx + 1}, {0: 2 * dx - 1}))
    ep2 = tpe.export(model, arr(6), arr(11), dynamic_shapes=({0: dx + 1}, {0: 2 * dx + 1}))
    agrees(ep2, model, arr(5), arr(9))
    with pytest.raises(tpe.ConstraintsExceededError, match="z.shape\\[0\\]"):
        ep2.module()(arr(8), arr(15))  # dx = 7 is above its max
    with pytest.raises(tpe.ConstraintsExceededError, match="y.shape\\[0\\]"):
        ep2.module()(arr(5), arr(8))


def test_even_derived_dim_takes_one_branch_of_a_parity_test():
    def model(w):
        if w.shape[0] % 2 == 0:
            return w[::2]
        return w[1:-1:2]

    dx = Dim("dx", min=3, max=6)
    with pytest.raises(tpe.ConstraintsExceededError, match="2\\*dx \\+ 1"):
        tpe.export(model, arr(10), dynamic_shapes=({0: 2 * dx + 1},))  # 10 is not odd
    ep = tpe.export(model, arr(10), dynamic_shapes=({0: 2 * dx},))
    agrees(ep, model, arr(8))
    with pytest.raises(tpe.ConstraintsExceededError, match="divisible by 2"):
        ep.module()(arr(9))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(14))


def test_one_derived_dim_on_two_inputs():
    def model(u, v):
        return u[::2] + v[::2]

    dx = Dim("dx", min=3, max=6)
    ep = tpe.export(model, arr(10), arr(10), dynamic_shapes=({0: 2 * dx}, {0: 2 * dx}))
    agrees(ep, model, arr(8), arr(8))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(arr(8), arr(10))


@pytest.mark.parametrize("reuse", [False, True], ids=["distinct", "same-array-object"])
def test_root_declared_through_its_derived_forms_out_of_order(reuse):
    def model(x, y, z, x1, x2):
        return x + y[1:] + z[2:] + x1 + x2

    dimy = Dim("dimy", min=5, max=7)
    dimx, dimz = dimy - 1, dimy + 1
    u, v, w = arr(5), arr(6), arr(7)
    inputs = (u, v, w, u, u) if reuse else (u, v, w, arr(5), arr(5))
    ep = tpe.export(model, *inputs, dynamic_shapes=({0: dimx}, {0: dimy}, {0: dimz}, {0: dimx}, {0: dimz - 2}))
    agrees(ep, model, arr(6), arr(7), arr(8), arr(6), arr(6))
    with pytest.raises(tpe.ConstraintsExceededError, match="x2"):
        ep.module()(arr(6), arr(7), arr(8), arr(6), arr(5))


def test_specializing_a_root_through_a_derived_dim_gives_a_root_fix_only():
    def model(x, y):
        return x.reshape(-1) + y

    dy = Dim("dy", min=6)
    spec = {"x": (dy - 6, 2), "y": (dy,)}
    err, spec2, ep = refine_once(model, arr(6, 2), arr(12), dynamic_shapes=spec)
    fixes = str(err).split("Suggested fixes:")[-1]
    assert "dy = 12" in fixes and "dy - 6 =" not in fixes
    assert spec2 == {"x": (6, 2), "y": (12,)}
    agrees(ep, model, arr(6, 2), arr(12))


@pytest.mark.xfail(strict=True, reason="differs from torch: range_constraints lists roots only; torch also gives "
                   "each derived dim its range (dx + 1: [2, 3] beside dx: [1, 2])")
def test_range_constraints_give_derived_dims_their_ranges():
    dx = Dim("dx", min=1, max=2)
    ep = tpe.export(lambda x, y: (x * 2, y * 2), arr(2), arr(3), dynamic_shapes=({0: dx}, {0: dx + 1}))
    agrees(ep, lambda x, y: (x * 2, y * 2), arr(1), arr(2))
    assert sorted(v.lower for v in ep.range_constraints.values()) == [1, 2]
    assert sorted(v.upper for v in ep.range_constraints.values()) == [2, 3]


def test_strided_slice_against_a_free_dim_gets_the_example_parity_relation():
    # x + y[::2] needs dx == (dy + 1) // 2: the fix is the relation the example's parity picks
    # (dy = 2*dx for an even dy); Dim.AUTO on x keeps every pair
    def model(x, y):
        return x + y[::2]

    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    err = violation(model, arr(4), arr(8), dynamic_shapes=spec)
    assert "dy = 2*dx" in str(err)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
    ep = tpe.export(model, arr(4), arr(8), dynamic_shapes=refined)
    for n in (1, 2, 7):
        agrees(ep, model, arr(n), arr(2 * n))
    ep = tpe.export(model, arr(4), arr(8), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim("dy")}})
    for n in (1, 2, 7, 8):
        agrees(ep, model, arr((n + 1) // 2), arr(n))


def test_refine_without_fixes_quotes_the_whole_guard():
    # a bound no fix form expresses (not monotone in dy); its text holds " (" inside the guard itself
    def model(x, y):
        if y.shape[0] * (x.shape[0] - y.shape[0]) > 600:
            return x.sum() + y.sum()
        return x.sum() - y.sum()

    spec = {"x": {0: Dim("dx")}, "y": {0: Dim("dy")}}
    err = violation(model, arr(4), arr(8), dynamic_shapes=spec)
    with pytest.raises(ValueError) as info:
        tpe.refine_dynamic_shapes_from_suggested_fixes(str(err), spec)
    assert "dy*(dx - dy) <= 600" in str(info.value)


# --- an int .item() is an unbacked size (torch's u0 = t.item()) ------------------------------

def test_int_item_used_as_a_size():
    def model(x, k):
        return np.ones(k.item()) * x.sum()

    ep = tpe.export(model, arr(3), np.array(4), dynamic_shapes={"x": {0: Dim("n")}, "k": None})
    for prog in (ep, roundtrip(ep)):
        for kk in (0, 1, 7):
            agrees(prog, model, arr(2), np.array(kk))
        with pytest.raises(tpe.ConstraintsExceededError, match="-1"):
            prog.module()(arr(2), np.array(-1))


def test_int_item_as_a_slice_bound_clamps_like_numpy():
    def model(x, k):
        return x[: k.item()] * 2

    ep = tpe.export(model, arr(5), np.array(3), dynamic_shapes={"x": {0: Dim("n")}, "k": None})
    for n, kk in ((6, 0), (6, 2), (6, 9), (1, 1)):
        agrees(ep, model, arr(n), np.array(kk))


def test_int_item_bounded_by_a_check_against_an_input_dim():
    def model(x, k):
        n = k.item()
        tpe.check(n <= x.shape[0])
        return x[:n] + np.arange(n)

    ep = tpe.export(model, arr(5), np.array(3), dynamic_shapes={"x": {0: Dim("n")}, "k": None})
    agrees(ep, model, arr(6), np.array(6))
    with pytest.raises(tpe.ConstraintsExceededError, match="tpe.check"):
        ep.module()(arr(6), np.array(7))


def test_branch_on_an_int_item_is_data_dependent_and_names_tpe_check():
    def model(x, k):
        if k.item() > 2:
            return x * 2
        return x

    with pytest.raises(tpe.DataDependentError, match="tpe.check"):
        tpe.export(model, arr(3), np.array(3))


def test_int_of_an_array_is_refused_as_documented():
    # README: int(a) returns a Python value read from the data and is refused (an int
    # .item() is the size form); torch would treat int(t) like t.item()
    def model(x):
        return np.ones(int(x.sum()))

    with pytest.raises(tpe.DataDependentError, match="int value"):
        tpe.export(model, np.array([1, 1]), dynamic_shapes={"x": {0: Dim("n")}})
