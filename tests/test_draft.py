"""draft_export: every failure kind is reported with its source line; the program is built and checked."""
from __future__ import annotations

import builtins
import io
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.face.draft import DraftExportReport, FailureReport, draft_export
from tensorplay_export.errors import ConstraintsExceededError, ConstraintViolationError
from tensorplay_export.ops.registry import func_name, lookup_func
from tensorplay_export.specs.refine import refine_dynamic_shapes_from_suggested_fixes

HERE = Path(__file__)
POS = np.arange(512 * 4, dtype=np.float32).reshape(512, 4)


def line_of(marker: str) -> int:
    """Line number of the line in this file ending with ``# <marker>``."""
    for number, line in enumerate(HERE.read_text().splitlines(), 1):
        if line.rstrip().endswith(f"# {marker}"):
            return number
    raise AssertionError(f"marker {marker} not found")


# -- models ------------------------------------------------------------------------------------------
def too_long(x):
    return x + POS[: x.shape[0]]  # L_too_long


def auto_pinned(x):
    return x + np.ones(8, dtype=np.float32)  # L_auto


def nonzero_branch(x):
    nz = np.nonzero(x > 0)[0]
    if nz.shape[0] > 3:  # L_dd
        return x * 2.0
    return x


# an elementwise numpy function the op registry has no rule for (the registry grows: pick one at run time)
from _opaque import NO_RULE  # noqa: E402  (a numpy function without a shape rule)


def no_shape_rule(x):
    return NO_RULE(x) * 2.0  # L_unsupported


def raises(x):
    return x @ np.ones((3, 3))  # L_numpy


def value_branch(x):
    if x.sum() > 0:  # L_value
        return x + 1.0
    return x


def three_problems(x, y):
    h = x + POS[: x.shape[0]]  # L_three_a
    g = h * y  # L_three_b
    idx = np.nonzero(g[:, 0] > 0)[0]
    if idx.shape[0] > 0:  # L_three_c
        return g
    return -g


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", np.zeros((), dtype=np.int64))
        self.scale = nn.Parameter(np.full((4,), 2.0, dtype=np.float32))

    def forward(self, x):
        self.steps = self.steps + 1
        return x * self.scale


def x84(n=8):
    return np.random.default_rng(0).standard_normal((n, 4)).astype(np.float32)


def positive(n=10):
    v = np.random.default_rng(1).standard_normal((n, 3))
    v[:6, 0] = np.abs(v[:6, 0]) + 0.1
    v[6:, 0] = -np.abs(v[6:, 0]) - 0.1
    return v


# -- failure kinds ----------------------------------------------------------------------------------------
def _only(report: DraftExportReport, kind: str) -> FailureReport:
    found = [f for f in report.failures if f.kind == kind]
    assert found, f"no {kind} failure in:\n{report}"
    return found[0]


def test_violation_reported_with_source_fix_and_program():
    report = draft_export(too_long, x84(), dynamic_shapes={"x": {0: Dim("n", max=1024)}})
    f = _only(report, "constraint_violation")
    assert f.source.lineno == line_of("L_too_long") and f.source.filename == str(HERE)
    assert "x + POS[: x.shape[0]]" in f.source_text
    assert "counterexample: n = 513" in f.message
    assert f.fix == "n = Dim('n', max=512)"
    assert not report.successful()
    ep = report.exported_program
    assert ep.opaque_ops == ()
    assert ep is not None and report.validation.ok and report.comparison.ok
    assert report.comparison.max_abs == 0.0
    # the violated guard is a runtime check of the draft program
    np.testing.assert_array_equal(ep.module()(x84(300)), too_long(x84(300)))
    with pytest.raises(ConstraintsExceededError):
        ep.module()(x84(600))


def test_fix_block_round_trips_through_refine():
    spec = {"x": {0: Dim("n", max=1024)}}
    report = draft_export(too_long, x84(), dynamic_shapes=spec)
    text = str(report)
    assert text.count("Suggested fixes:") == 1
    refined = refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(too_long, x84(), dynamic_shapes=refined)
    assert ep.range_constraints and max(v.upper for v in ep.range_constraints.values()) == 512
    assert draft_export(too_long, x84(), dynamic_shapes=refined).successful()


def test_auto_specialization():
    report = draft_export(auto_pinned, np.ones(8, np.float32), dynamic_shapes={"x": {0: Dim.AUTO}})
    f = _only(report, "auto_specialization")
    assert f.source.lineno == line_of("L_auto")
    assert "pinned it to 8" in f.message and f.fix is None
    assert report.exported_program is not None
    with pytest.raises(ConstraintsExceededError):
        report.exported_program.module()(np.ones(9, np.float32))


def test_data_dependent_guard_assumed_and_checked_at_run_time():
    report = draft_export(nonzero_branch, positive(), dynamic_shapes={"x": {0: Dim("n", max=100)}})
    f = _only(report, "data_dependent")
    assert f.source.lineno == line_of("L_dd")
    assert "u0 > 3" in f.message and "checks it at run time" in f.message
    ep = report.exported_program
    assert ep is not None and report.comparison.ok
    np.testing.assert_allclose(ep.module()(positive(20)), positive(20) * 2.0)
    few = -np.abs(positive(20)) - 0.1  # no nonzero: the example's branch does not hold
    with pytest.raises(ConstraintsExceededError):
        ep.module()(few)


def test_unsupported_op_runs_opaquely_at_example_sizes():
    report = draft_export(no_shape_rule, x84(), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    f = _only(report, "unsupported_op")
    assert f.source.lineno == line_of("L_unsupported") and func_name(NO_RULE) in f.message
    spec = _only(report, "constraint_violation")  # the pinned size is a violation with a fix
    assert spec.fix == "n = 8"
    ep = report.exported_program
    assert ep is not None and report.comparison.ok
    assert ep.opaque_ops == (f"tpe.opaque.{func_name(NO_RULE)}",)
    with pytest.raises(tpe.ArchiveError, match="opaque ops"):  # no process could load it
        tpe.save(ep, io.BytesIO())
    np.testing.assert_allclose(ep.module()(x84()), no_shape_rule(x84()))
    with pytest.raises(ConstraintsExceededError):
        ep.module()(x84(9))
    with pytest.raises(tpe.UnsupportedOpError):  # export itself still refuses it
        tpe.export(no_shape_rule, x84(), dynamic_shapes={"x": {0: Dim("n", max=64)}})


def test_branch_on_array_value_assumed_and_checked_at_run_time():
    x = np.abs(x84()) + 0.1
    with pytest.raises(tpe.DataDependentError):
        tpe.export(value_branch, x, dynamic_shapes={"x": {0: Dim("n")}})
    report = draft_export(value_branch, x, dynamic_shapes={"x": {0: Dim("n")}})
    f = _only(report, "data_dependent")
    assert f.source.lineno == line_of("L_value") and "truth value" in f.message
    m = report.exported_program.module()
    np.testing.assert_allclose(m(np.ones((3, 4), np.float32)), np.full((3, 4), 2.0))
    with pytest.raises(ConstraintsExceededError, match="x.sum"):
        m(-np.ones((3, 4), np.float32))


def test_numpy_error_in_model_gives_no_program():
    report = draft_export(raises, x84(), dynamic_shapes={"x": {0: Dim("n")}})
    f = _only(report, "numpy_error")
    assert f.source.lineno == line_of("L_numpy") and "ValueError" in f.message
    assert report.exported_program is None and not report.successful()


def test_spec_and_range_problems_are_reported_not_raised():
    r1 = draft_export(too_long, x84(), dynamic_shapes={"y": {0: Dim("n")}})
    assert _only(r1, "spec_error").message
    r2 = draft_export(too_long, x84(), dynamic_shapes={"x": {0: Dim("n", max=4)}})
    assert "outside" in _only(r2, "example_out_of_range").message
    assert r1.exported_program is None and r2.exported_program is None


def test_three_problems_at_once_grouped_by_kind():
    x, y = x84(), np.ones((8, 4), np.float32)
    report = draft_export(three_problems, x, y,
                          dynamic_shapes={"x": {0: Dim("n", max=1024)}, "y": {0: Dim("m", max=1024)}})
    kinds = [f.kind for f in report.failures]
    assert kinds.count("constraint_violation") == 2 and "data_dependent" in kinds
    lines = {f.source.lineno for f in report.failures}
    assert {line_of("L_three_a"), line_of("L_three_b"), line_of("L_three_c")} <= lines
    text = str(report)
    assert text.index("Constraint violations") < text.index("Data-dependent guards") < text.index("Suggested fixes:")
    refined = refine_dynamic_shapes_from_suggested_fixes(text, {"x": {0: Dim("n", max=1024)},
                                                                "y": {0: Dim("m", max=1024)}})
    again = draft_export(three_problems, x, y, dynamic_shapes=refined)
    assert [f.kind for f in again.failures] == ["data_dependent"]


def test_successful_and_raise_on_failure():
    ok = draft_export(too_long, x84(), dynamic_shapes={"x": {0: Dim("n", max=512)}})
    assert ok.successful() and ok.failures == []
    ok.raise_on_failure()
    bad = draft_export(three_problems, x84(), np.ones((8, 4), np.float32),
                       dynamic_shapes={"x": {0: Dim("n", max=1024)}, "y": {0: Dim("m", max=1024)}})
    with pytest.raises(ConstraintViolationError) as info:
        bad.raise_on_failure()
    for f in bad.failures:
        assert f.summary in str(info.value)
    spec = {"x": {0: Dim("n", max=1024)}, "y": {0: Dim("m", max=1024)}}
    refined = refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    assert tpe.draft_export(three_problems, x84(), np.ones((8, 4), np.float32), dynamic_shapes=refined).failures[0].kind \
        == "data_dependent"


def test_model_state_is_not_changed():
    model = Counter()
    before_scale = model.scale.copy()
    report = draft_export(model, x84(), dynamic_shapes={"x": {0: Dim("n")}})
    assert report.exported_program is not None and report.comparison.ok
    assert int(model.steps) == 0
    np.testing.assert_array_equal(model.scale, before_scale)
    assert "steps" in dict(model.named_buffers())


def test_never_raises_for_model_errors():
    def broken(x):
        raise RuntimeError("boom")  # L_boom

    report = draft_export(broken, x84())
    f = report.failures[0]
    assert f.kind == "numpy_error" and f.source.lineno == line_of("L_boom") and "boom" in f.message


def test_public_names():
    from tensorplay_export.face import draft

    assert draft.draft_export is draft_export
    assert tpe.draft_export is draft_export and tpe.DraftExportReport is DraftExportReport


def test_opaque_ops_leave_the_registry_afterwards():
    from tensorplay_export.ops.registry import all_ops

    before = set(all_ops())
    report = draft_export(no_shape_rule, x84(), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    assert set(all_ops()) == before
    np.testing.assert_allclose(report.exported_program.module()(x84()), no_shape_rule(x84()))


# -- the shared acceptance cases (when the checkout has them beside it) ------------------------------------
from _shared import case_params, load_case as _load_case  # noqa: E402


@pytest.mark.parametrize("path", case_params())
def test_acceptance_case_through_draft_export(path):
    from tensorplay_export.face.contract import contract_of

    case = _load_case(path)
    args, kwargs = case.make_inputs(**case.EXAMPLE)
    spec = case.dynamic_shapes()
    report = draft_export(case.model, *args, dynamic_shapes=spec, **kwargs)
    assert report.exported_program is not None and report.validation.ok and report.comparison.ok
    outcome = case.EXPECT["outcome"]
    if outcome == "ok":
        assert report.successful(), str(report)
        ep = tpe.export(case.model, *args, dynamic_shapes=spec, **kwargs)
        assert contract_of(report.exported_program).to_json() == contract_of(ep).to_json()
    elif outcome == "violation":
        assert {f.kind for f in report.failures} == {"constraint_violation"}
        assert all(f.source is not None and Path(f.source.filename).resolve() == Path(path).resolve()
                   for f in report.failures)
        refined = refine_dynamic_shapes_from_suggested_fixes(str(report), spec)
        tpe.export(case.model, *args, dynamic_shapes=refined, **kwargs)
    else:
        assert [f.kind for f in report.failures] == ["data_dependent"]


# -- the two checks of the draft program --------------------------------------------------------------------
class _StubProgram:
    """Stands in for an ExportedProgram whose module returns fixed outputs."""

    def __init__(self, outputs):
        self.outputs = outputs

    def module(self):
        return lambda *a, **k: self.outputs

    def invalidate_unlifted(self):
        pass


def test_numerical_comparison_reports_max_abs_and_rel_difference():
    from tensorplay_export.face.draft import _compare

    eager = (np.array([1.0, 2.0, 4.0]), np.array([1, 2]))
    same = _compare(_StubProgram((np.array([1.0, 2.0, 4.0]), np.array([1, 2]))), eager, (), {})
    assert same.ok and same.max_abs == 0.0 and same.max_rel == 0.0 and same.outputs == 2
    off = _compare(_StubProgram((np.array([1.0, 2.5, 4.0]), np.array([1, 2]))), eager, (), {})
    assert not off.ok and off.max_abs == pytest.approx(0.5) and off.max_rel == pytest.approx(0.25)
    assert "output 0" in off.note
    shape = _compare(_StubProgram((np.zeros(2), np.array([1, 2]))), eager, (), {})
    assert not shape.ok and "shape" in shape.note
    count = _compare(_StubProgram((np.zeros(3),)), eager, (), {})
    assert not count.ok and "returns 1 values" in count.note


def test_structural_validation_flags_a_broken_graph():
    from tensorplay_export.face.draft import _validate

    report = draft_export(too_long, x84(), dynamic_shapes={"x": {0: Dim("n", max=512)}})
    ep = report.exported_program
    assert _validate(ep).ok
    out = ep.graph.output_node
    with ep.graph.inserting_before(out):
        ep.graph.call_function("numpy.negative", (ep.graph.placeholders()[-1],), meta={})
    result = _validate(ep)
    assert not result.ok and any("no shape in meta" in p for p in result.problems)


# -- per-guard fixes, pinned AUTO sizes, random numbers ------------------------------------------------
def fixable_and_not(x):
    row = x[1]  # L_fixable
    if (x.shape[0] - x.shape[1]) ** 2 <= 100:  # L_unfixable
        return row * 2.0
    return row


def test_a_guard_no_fix_expresses_has_no_fix():
    spec = {"x": {0: Dim("h", max=64), 1: Dim("w", max=64)}}
    report = draft_export(fixable_and_not, np.ones((8, 8), np.float32), dynamic_shapes=spec)
    by_line = {f.source.lineno: f for f in report.failures if f.kind == "constraint_violation"}
    assert by_line[line_of("L_fixable")].fix == "h = Dim('h', min=2, max=64)"
    unfixable = by_line[line_of("L_unfixable")]
    assert unfixable.fix is None and "no suggested fix" in unfixable.message
    assert report.fixes == ["h = Dim('h', min=2, max=64)"]


def len_pinned(x):
    # CPython's own len (builtins.len) must return a Python int; plain len() in model code is
    # capture's and stays symbolic (tests/capture/test_len_and_math.py)
    return x * builtins.len(x)  # L_len


def test_auto_size_pinned_by_len_says_how_to_keep_it_dynamic():
    report = draft_export(len_pinned, x84(), dynamic_shapes={"x": {0: Dim.AUTO}})
    f = _only(report, "auto_specialization")
    assert f.source.lineno == line_of("L_len")
    assert "pinned it to 8 (len() of an array is a Python int)" in f.message
    assert "to keep it dynamic: use x.shape[0] instead of len(x)" in f.message


def draws_noise(x):
    return x + np.random.normal(size=x.shape)  # L_random


def test_random_numbers_have_their_own_kind():
    report = draft_export(draws_noise, x84(), dynamic_shapes={"x": {0: Dim("n")}})
    f = _only(report, "random_numbers")
    assert f.source.lineno == line_of("L_random") and "numpy.random.normal" in f.message
    assert not [g for g in report.failures if g.kind == "unsupported_op"]
    text = str(report)
    assert "Random numbers drawn inside the model" in text and "Ops without shape rules" not in text
    with pytest.raises(tpe.UnsupportedOpError):
        report.raise_on_failure()


def doubles_rows(x, y):
    return np.repeat(x, 2, axis=0) + y


def test_examples_breaking_a_derived_dim_are_out_of_range_before_the_model_runs():
    dx = Dim("dx")
    spec = {"x": {0: dx}, "y": {0: 2 * dx}}
    report = draft_export(doubles_rows, np.ones((4, 3)), np.ones((3, 3)), dynamic_shapes=spec)
    f = _only(report, "example_out_of_range")
    assert "y.shape[0] = 3 is outside 2*dx" in f.message
    assert [g.kind for g in report.failures] == ["example_out_of_range"]  # no numpy broadcast error
    assert report.exported_program is None
    with pytest.raises(ConstraintsExceededError, match="outside 2\\*dx"):
        report.raise_on_failure()
    assert draft_export(doubles_rows, np.ones((4, 3)), np.ones((8, 3)), dynamic_shapes=spec).successful()


def nonfinite_outputs(x):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x) * 2, x / 0.0  # inf, -inf and nan positions


class _FixedProgram:
    """Stands in for an ExportedProgram whose module returns fixed outputs."""

    def __init__(self, out):
        self.out = out

    def module(self):
        return lambda *a, **k: self.out

    def invalidate_unlifted(self):
        pass


def test_comparison_treats_equal_infs_and_nans_as_equal_and_diffs_finite_positions(recwarn):
    import warnings

    from tensorplay_export.face.draft import _compare

    warnings.filterwarnings("error", category=RuntimeWarning, module="tensorplay_export.face.draft")
    x = np.array([[0.0, -1.0, 2.0], [1.0, 3.0, 0.0]], np.float32)
    report = draft_export(nonfinite_outputs, x, dynamic_shapes={"x": {0: Dim("n")}})
    assert report.successful() and report.comparison.ok
    assert report.comparison.max_abs == 0.0 and report.comparison.nonfinite == 9
    assert "over finite positions (9 inf/nan)" in str(report)

    eager = (np.array([np.inf, -np.inf, np.nan, 1.0]),)
    same = _compare(_FixedProgram((eager[0].copy(),)), eager, (), {})
    assert same.ok and same.max_abs == 0.0 and same.nonfinite == 3
    for got in ([-np.inf, -np.inf, np.nan, 1.0],  # inf vs -inf
                [np.inf, -np.inf, 0.0, 1.0],  # nan vs a number
                [np.inf, 5.0, np.nan, 1.0]):  # -inf vs a number
        c = _compare(_FixedProgram((np.array(got),)), eager, (), {})
        assert not c.ok and "1 inf/nan position(s) where eager has a different value" in c.note
        assert c.max_abs == 0.0  # the finite positions agree; the diff is not inf
    c = _compare(_FixedProgram((np.array([np.inf, -np.inf, np.nan, 1.5]),)), eager, (), {})
    assert not c.ok and c.max_abs == 0.5 and "max abs diff 0.5 over finite positions" in c.note
    assert not [w for w in recwarn if w.filename.endswith("draft.py")]


def returns_size(x):
    y = x * 2
    return y, x.shape[0]  # L_ret_size


def returns_shape(x):
    return x.shape  # L_ret_shape


class ReturnsRows(nn.Module):
    def forward(self, x):
        n = _rows(x)
        return x + 1, n  # L_ret_module


def _rows(a):
    return a.shape[0]


@pytest.mark.parametrize("model, marker", [(returns_size, "L_ret_size"), (returns_shape, "L_ret_shape"),
                                           (ReturnsRows(), "L_ret_module")])
def test_a_returned_size_is_computed_at_run_time_not_pinned(model, marker):
    """Issue 16 item 1: a size output is a SymIntArgument, so neither draft nor export pins it."""
    spec = {"x": {0: Dim("n")}}
    report = draft_export(model, x84(), dynamic_shapes=spec)
    assert not [f for f in report.failures if f.kind == "constraint_violation"], str(report)
    ep = tpe.export(model, x84(), dynamic_shapes=spec)
    assert "SymIntArgument" in [type(s.arg).__name__ for s in ep.graph_signature.output_specs]
    got, want = ep.module()(x84(5)), model(x84(5))
    if model is returns_shape:
        assert got == want == (5, 4)
    else:
        np.testing.assert_allclose(got[0], want[0])
        assert (type(got[1]), got[1]) == (int, want[1]) == (int, 5)
