"""Dim.DYNAMIC as torch.export defines it (pytorch/pytorch#137029): like Dim.AUTO it infers
ranges and relations, but a specialization (the axis left one size) is an error.

Every exported program is run at sizes other than the example against eager numpy, and
refuses sizes outside what the model needs.
"""
from __future__ import annotations

import textwrap

import numpy as np
import pytest

from _shared import roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.cli import main

D = Dim.DYNAMIC
T10 = np.arange(10.0)
T8 = np.arange(8.0)


def agrees(ep, model, *args):
    """The program and eager numpy give the same outputs on ``args``."""
    got, want = ep.module()(*args), model(*args)
    for g, w in zip(got, want) if isinstance(want, tuple) else ((got, want),):
        assert g.shape == w.shape
        np.testing.assert_array_equal(g, w)


def refused(ep, *args):
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(*args)


def ranges(ep):
    return {str(s): (v.lower, v.upper) for s, v in ep.range_constraints.items()}


INF = float("inf")


# --- the routing in ShapeEnv.guard ----------------------------------------------------------------

def test_shape_env_accepts_a_refinement_and_records_a_pin_with_its_size():
    import sympy
    from solver import ShapeSolver

    from tensorplay_export.capture.shape_env import ShapeEnv

    env = ShapeEnv(ShapeSolver())
    a = env.create_symbol("x_dim0", 1, None, 6, "dynamic")
    b = env.create_symbol("y_dim0", 1, None, 6, "dynamic")
    n = env.create_symbol("n", 1, None, 6, "named")
    env.guard(sympy.Le(a, 10), "shape", "a table of 10 rows")
    env.guard(sympy.Eq(a, b), "shape", "broadcast")        # y_dim0 := x_dim0 (the later one is replaced)
    assert not env.violations and env.replacements == {b: a} and len(env.accepted) == 2
    env.guard(sympy.Eq(b, n), "shape", "broadcast")        # x_dim0 := n: the DYNAMIC axis follows the named dim
    assert env.replacements == {b: n, a: n}
    # what was accepted for x_dim0 (<= 10) now remains on n alone: n's violation, not a pin
    [rec] = env.violations
    assert rec.expr == sympy.Le(n, 10) and rec.pins == {} and "with x_dim0 = n" in rec.reason
    env2 = ShapeEnv(ShapeSolver())
    c = env2.create_symbol("z_dim0", 1, 8, 8, "dynamic")
    env2.guard(sympy.Ge(c, 5), "guard", "a branch")        # [5, 8]: a refinement
    env2.guard(sympy.Ge(c, 8), "guard", "a branch")        # [8, 8]: a specialization
    assert [r.pins for r in env2.violations] == [{"z_dim0": 8}] and len(env2.accepted) == 1


# --- refinements are accepted and become the contract -----------------------------------------

def add(x, y):
    return x + y


def test_a_relation_between_dynamic_axes_is_an_equality_of_the_contract():
    spec = {"x": {0: D}, "y": {0: D}}
    ep = tpe.export(add, np.ones((4, 3)), np.ones((4, 3)), dynamic_shapes=spec)
    assert ranges(ep) == {"x_dim0": (1, INF)}
    assert [c.sites for c in ep.equality_constraints] == [(("x", 0), ("y", 0))]
    for prog in (ep, roundtrip(ep)):
        assert prog.dynamic_shapes == spec
        for n in (1, 2, 9, 33):
            agrees(prog, add, np.arange(3.0 * n).reshape(n, 3), np.full((n, 3), 2.0))
        refused(prog, np.ones((5, 3)), np.ones((6, 3)))
        refused(prog, np.ones((5, 3)), np.ones((1, 3)))   # the example's disjunct: equal sizes


def test_an_affine_relation_between_dynamic_axes():
    def model(x, y):
        return np.concatenate([x, x]) + y[1:]

    ep = tpe.export(model, np.ones(3), np.ones(7), dynamic_shapes=({0: D}, {0: D}))
    assert ranges(ep) == {"x_dim0": (1, INF)}
    for n in (1, 4, 20):
        agrees(ep, model, np.arange(n * 1.0), np.arange(2 * n + 1.0))
    refused(ep, np.ones(4), np.ones(8))


def test_a_table_lookup_narrows_the_range():
    def model(x):
        return x + T10[: x.shape[0]]

    ep = tpe.export(model, np.ones(5), dynamic_shapes={"x": {0: D}})
    assert ranges(ep) == {"x_dim0": (1, 10)}
    for n in (1, 7, 10):
        agrees(ep, model, np.full(n, 3.0))
    refused(ep, np.ones(11))


def test_a_branch_narrows_the_range_from_below():
    def model(x):
        if x.shape[0] >= 3:
            return x[:3] * 2
        return x

    ep = tpe.export(model, np.ones(5), dynamic_shapes={"x": {0: D}})
    assert ranges(ep) == {"x_dim0": (3, INF)}
    for n in (3, 4, 50):
        agrees(ep, model, np.arange(n * 1.0))
    refused(ep, np.ones(2))


def test_a_reshape_puts_the_modulus_into_the_contract(tmp_path, monkeypatch, capsys):
    def model(x):
        return x.reshape(-1, 4).sum(1)

    ep = tpe.export(model, np.ones(8), dynamic_shapes={"x": {0: D}})
    assert ranges(ep) == {"x_dim0": (4, INF)}
    for n in (4, 12, 40):
        agrees(ep, model, np.arange(n * 1.0))
    for n in (2, 6, 10):
        refused(ep, np.ones(n))
    # the CLI's contract says the same
    tpe.save(ep, str(tmp_path / "div.pt2"))
    assert main(["contract", str(tmp_path / "div.pt2")]) == 0
    out = capsys.readouterr().out
    assert "Divisibility:" in out and "x_dim0 % 4 == 0" in out


def test_torch_dim_hint_ranges_auto_min_and_dynamic_max_meet():
    # torch's test_dim_hint_ranges: AUTO(min=4) and DYNAMIC(max=16) tied by x + y give [4, 16]
    spec = {"x": {0: Dim.AUTO(min=4)}, "y": {0: Dim.DYNAMIC(max=16)}}
    ep = tpe.export(add, np.ones(6), np.ones(6), dynamic_shapes=spec)
    assert list(ranges(ep).values()) == [(4, 16)]
    for n in (4, 16):
        agrees(ep, add, np.arange(n * 1.0), np.ones(n))
    for n in (3, 17):
        refused(ep, np.ones(n), np.ones(n))


def test_torch_dim_dynamic_relations_and_a_modulus_over_two_axes():
    # torch's test_dim_dynamic: u[1:] + w + x ties three axes, y.flatten() + z gives z = y0*y1,
    # and x.view(x.shape[0] - 1, -1) keeps its divisibility as one runtime guard
    def relations(u, w, x, y, z):
        return u[1:] + w + x, y.reshape(-1) + z

    spec = {"u": (D,), "w": (D,), "x": (D,), "y": (D, D), "z": (D,)}
    ep = tpe.export(relations, np.ones(5), np.ones(4), np.ones(4), np.ones((4, 4)), np.ones(16), dynamic_shapes=spec)
    assert ranges(ep) == {"u_dim0": (2, INF), "y_dim0": (1, INF), "y_dim1": (1, INF)}
    rng = np.random.default_rng(0)
    agrees(ep, relations, *(rng.standard_normal(s) for s in ((6,), (5,), (5,), (7, 8), (56,))))
    refused(ep, np.ones(6), np.ones(5), np.ones(4), np.ones((7, 8)), np.ones(56))
    refused(ep, np.ones(6), np.ones(5), np.ones(5), np.ones((7, 8)), np.ones(55))

    def view(x):
        return x.reshape(x.shape[0] - 1, -1)

    ep = tpe.export(view, np.ones((3, 4)), dynamic_shapes={"x": (D, D)})
    assert [n.target for n in ep.graph.nodes if n.op == "call_function"].count("tpe.assert_guard") == 1
    agrees(ep, view, np.arange(40.0).reshape(5, 8))
    refused(ep, np.ones((4, 2)))


def test_torch_dim_dynamic_complains_when_a_check_specializes():
    def specialize(x):
        tpe.check(x.shape[0] == 4)
        return x + 2

    with pytest.raises(tpe.ConstraintViolationError, match=r"specialized it to the constant 4.*replace it with "
                                                           r"either Dim.STATIC or Dim.AUTO"):
        tpe.export(specialize, np.ones((4, 8)), dynamic_shapes={"x": (D, D)})


def test_a_size_one_example_without_broadcasting_stays_dynamic():
    # torch specializes a 0/1 example; exact reasoning keeps it dynamic when nothing pins it
    ep = tpe.export(lambda x: x * 2, np.ones((1, 3)), dynamic_shapes={"x": {0: D}})
    assert ranges(ep) == {"x_dim0": (1, INF)}
    for n in (1, 2, 9):
        agrees(ep, lambda x: x * 2, np.arange(3.0 * n).reshape(n, 3))


def test_an_empty_example_stays_dynamic_from_zero():
    ep = tpe.export(lambda x: x * 2, np.ones((0, 3)), dynamic_shapes={"x": {0: D}})
    assert ranges(ep) == {"x_dim0": (0, INF)}
    for n in (0, 1, 6):
        agrees(ep, lambda x: x * 2, np.ones((n, 3)))


# --- a specialization is an error, closed by one refine step ------------------------------------

def pinned_by_branch(x):
    if x.shape[0] == 4:
        return x * 2
    return x


@pytest.mark.parametrize("spec", [{"x": {0: D}}, ({0: D},)], ids=["dict", "tuple"])
def test_a_branch_on_one_size_is_a_specialization_error_with_a_fix(spec):
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(pinned_by_branch, np.ones(4), dynamic_shapes=spec)
    text = str(info.value)
    assert text.startswith("Constraints violated (x_dim0)!\n  - x_dim0 = x.shape[0] was specialized to 4\n")
    assert ("x.shape[0] is Dim.DYNAMIC (x_dim0 in [1, inf]), but the model specialized it to the constant 4"
            in text)
    assert "replace it with either Dim.STATIC or Dim.AUTO (which accepts the specialization)" in text
    assert text.endswith("Suggested fixes:\n  x_dim0 = 4")
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == (({0: 4},) if isinstance(spec, tuple) else {"x": {0: 4}})
    ep = tpe.export(pinned_by_branch, np.ones(4), dynamic_shapes=refined)
    agrees(ep, pinned_by_branch, np.arange(4.0))
    refused(ep, np.ones(5))
    # Dim.AUTO takes the specialization silently (the program accepts only 4)
    ep = tpe.export(pinned_by_branch, np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO}})
    agrees(ep, pinned_by_branch, np.arange(4.0))
    refused(ep, np.ones(5))


def test_equality_with_a_static_axis_is_a_specialization():
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(add, np.ones(4), np.ones(4), dynamic_shapes={"x": {0: D}, "y": None})
    text = str(info.value)
    assert "x_dim0 = x.shape[0] was specialized to 4 (broadcasting in `+`: x_dim0 with 4" in text
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, {"x": {0: D}, "y": None})
    assert refined == {"x": {0: 4}, "y": None}
    agrees(tpe.export(add, np.ones(4), np.ones(4), dynamic_shapes=refined), add, np.arange(4.0), np.ones(4))


def test_a_range_that_leaves_one_size_is_a_specialization():
    def model(x):
        return x[:4] * 2 if x.shape[0] >= 4 else x

    spec = {"x": {0: Dim.DYNAMIC(max=4)}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones(4), dynamic_shapes=spec)
    text = str(info.value)
    assert "x_dim0 = x.shape[0] was specialized to 4 (the guard x_dim0 >= 4 leaves it that one size)" in text
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == {"x": {0: 4}}
    agrees(tpe.export(model, np.ones(4), dynamic_shapes=refined), model, np.arange(4.0))


def test_a_size_one_example_broadcast_is_not_specialized_silently():
    # numpy broadcasts y's size 1; exact reasoning about 1 makes it y == 1, a specialization
    spec = {"x": {0: D}, "y": {0: D}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(add, np.ones(4), np.ones(1), dynamic_shapes=spec)
    text = str(info.value)
    assert "y_dim0 = y.shape[0] was specialized to 1" in text and "x_dim0" not in text.split("Suggested")[1]
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == {"x": {0: D}, "y": {0: 1}}
    ep = tpe.export(add, np.ones(4), np.ones(1), dynamic_shapes=refined)
    for n in (1, 7):
        agrees(ep, add, np.arange(n * 1.0), np.full(1, 2.0))
    refused(ep, np.ones(3), np.ones(3))


def test_a_relation_through_a_pinned_axis_pins_the_other_and_one_step_closes():
    def model(x, y):
        return x + T8[:4], y * x

    spec = {"x": {0: D}, "y": {0: D}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes=spec)
    text = str(info.value)
    assert "but the model specialized it to the constant 4" in text
    assert "one refine step will not be enough" not in text
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == {"x": {0: 4}, "y": {0: 4}}
    agrees(tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes=refined), model, np.arange(4.0), np.ones(4))


# --- named dims beside DYNAMIC axes: the DYNAMIC axes are constrained first ---------------------

def test_a_dynamic_axis_follows_a_named_dim_without_a_violation():
    n = Dim("n", max=16)
    ep = tpe.export(add, np.ones(5), np.ones(5), dynamic_shapes={"x": {0: n}, "y": {0: D}})
    assert ranges(ep) == {"n": (1, 16)}
    for k in (1, 16):
        agrees(ep, add, np.arange(k * 1.0), np.ones(k))
    refused(ep, np.ones(5), np.ones(6))
    refused(ep, np.ones(17), np.ones(17))


def test_what_remains_on_the_named_dim_is_its_violation():
    # y's table bound y <= 8 becomes n <= 8 once y := n: a violation on n only; y stays DYNAMIC
    def model(x, y):
        return x + y, y + T8[: y.shape[0]]

    spec = {"x": {0: Dim("n")}, "y": {0: D}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, np.ones(5), np.ones(5), dynamic_shapes=spec)
    text = str(info.value)
    assert text.startswith("Constraints violated (n)!") and text.endswith("Suggested fixes:\n  n = Dim('n', max=8)")
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    assert refined == {"x": {0: Dim("n", max=8)}, "y": {0: D}}
    ep = tpe.export(model, np.ones(5), np.ones(5), dynamic_shapes=refined)
    for k in (1, 8):
        agrees(ep, model, np.arange(k * 1.0), np.full(k, 2.0))
    refused(ep, np.ones(9), np.ones(9))


# --- draft_export ------------------------------------------------------------------------------

def test_draft_export_accepts_refinements_and_reports_a_specialization():
    def model(x, y):
        return pinned_by_branch(x), y + T10[: y.shape[0]]

    spec = {"x": {0: D}, "y": {0: D}}
    report = tpe.draft_export(model, np.ones(4), np.ones(6), dynamic_shapes=spec)
    (failure,) = report.failures
    assert failure.kind == "constraint_violation" and "x_dim0 = x.shape[0] was specialized to 4" in failure.message
    assert report.fixes == ["x_dim0 = 4"]
    assert [a.split("  (at ")[0] for a in report.accepted] == ["y_dim0 <= 10"]
    ep = tpe.export(model, np.ones(4), np.ones(6),
                    dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(str(report), spec))
    for k in (1, 10):
        agrees(ep, model, np.arange(4.0), np.arange(k * 1.0))
    refused(ep, np.ones(4), np.ones(11))
    # refinements only: no failure, the draft's program has the inferred contract
    clean = tpe.draft_export(lambda x, y: x + y, np.ones(4), np.ones(4), dynamic_shapes=spec)
    assert clean.failures == [] and clean.successful()
    refused(clean.exported_program, np.ones(4), np.ones(5))


# --- AdditionalInputs: the sets are checked against the inferred contract ------------------------

def test_additional_inputs_sets_inside_the_inferred_contract_export_and_verify():
    def model(x, y):
        return x + T10[: x.shape[0]], y[1:] * x

    ai = tpe.AdditionalInputs()
    ai.add((np.ones(2), np.ones(3)))
    ai.add((np.ones(9), np.ones(10)))
    ep = tpe.export(model, np.ones(4), np.ones(5), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: D}, "y": {0: D}}
    assert ranges(ep) == {"x_dim0": (1, 10)}
    ai.verify(ep)
    agrees(ep, model, np.arange(10.0), np.arange(11.0))
    refused(ep, np.ones(11), np.ones(12))


def test_additional_inputs_shared_dim_takes_a_refinement_like_dynamic():
    # x and y vary together: one shared dim, which narrows to the table as a DYNAMIC axis does
    def model(x, y):
        return x + y + T10[: x.shape[0]]

    ai = tpe.AdditionalInputs()
    ai.add((np.ones(6), np.ones(6)))
    ai.add((np.ones(9), np.ones(9)))
    ep = tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes=ai)
    assert ai.spec == {"x": {0: Dim("x_dim0")}, "y": {0: Dim("x_dim0")}} and ai.shared == {"x_dim0"}
    assert ranges(ep) == {"x_dim0": (1, 10)}
    ai.verify(ep)
    agrees(ep, model, np.arange(10.0), np.ones(10))
    refused(ep, np.ones(11), np.ones(11))
    refused(ep, np.ones(5), np.ones(6))
    ai.add((np.ones(12), np.ones(12)))
    with pytest.raises(tpe.ConstraintsExceededError, match=r"^AdditionalInputs set 2 \(x.shape\[0\] = 12, "
                                                           r"y.shape\[0\] = 12\) is outside"):
        tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes=ai)


def test_an_additional_inputs_set_outside_the_inferred_contract_is_named_at_export():
    def model(x, y):
        return x + T10[: x.shape[0]], y[1:] * x

    ai = tpe.AdditionalInputs()
    ai.add((np.ones(2), np.ones(3)))
    ai.add((np.ones(12), np.ones(13)))   # x = 12 is past the table
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.export(model, np.ones(4), np.ones(5), dynamic_shapes=ai)
    text = str(info.value)
    assert text.startswith("AdditionalInputs set 1 (x.shape[0] = 12, y.shape[0] = 13) is outside the exported "
                           "program's contract: x.shape[0] = 12")
    assert "x_dim0 in [1, 10]" in text


def test_draft_export_reports_an_additional_inputs_set_outside_the_contract():
    ai = tpe.AdditionalInputs()
    ai.add((np.ones(2), np.ones(2)))
    ai.add((np.ones(4), np.ones(7)))
    report = tpe.draft_export(add, np.ones(5), np.ones(5), dynamic_shapes=ai)
    (failure,) = report.failures
    assert failure.kind == "example_out_of_range"
    assert failure.message.startswith("AdditionalInputs set 1 (x.shape[0] = 4, y.shape[0] = 7) is outside")
    refused(report.exported_program, np.ones(4), np.ones(7))
    agrees(report.exported_program, add, np.arange(6.0), np.ones(6))


def test_an_additional_inputs_set_of_another_dtype_is_refused_naming_input_and_dtypes():
    # the program is specialized on the example's dtypes: a float64 set would pass export and
    # then be refused by every call of the program
    ai = tpe.AdditionalInputs()
    ai.add((np.ones((3, 4), np.float32), np.ones(4, np.float32)))
    ai.add((np.ones((5, 4), np.float32), np.ones(4, np.float64)))
    with pytest.raises(TypeError, match=r"^AdditionalInputs set 1: input 'y' has dtype float64, but the export "
                                        r"example has dtype float32; .*\.astype\(np\.float32\)"):
        tpe.export(add, np.ones((2, 4), np.float32), np.ones(4, np.float32), dynamic_shapes=ai)
    report = tpe.draft_export(add, np.ones((2, 4), np.float32), np.ones(4, np.float32), dynamic_shapes=ai)
    assert [f.kind for f in report.failures] == ["spec_error"]
    assert "'y' has dtype float64" in report.failures[0].message


# --- the CLI ------------------------------------------------------------------------------------

CLI_TARGET = textwrap.dedent('''
    import numpy as np
    from tensorplay_export import Dim

    T = np.arange(10.0)


    def model(x):
        return x + T[: x.shape[0]]


    def refined():
        return model, (np.ones(5),), {"x": {0: Dim.DYNAMIC}}


    def pinned():
        return (lambda x: x + T[:4]), (np.ones(4),), {"x": {0: Dim.DYNAMIC}}
''')


def test_cli_check_passes_a_refinement_and_fails_a_specialization(tmp_path, monkeypatch, capsys):
    (tmp_path / "dyn_models.py").write_text(CLI_TARGET)
    monkeypatch.chdir(tmp_path)
    assert main(["check", "dyn_models.py:refined"]) == 0
    capsys.readouterr()
    assert main(["check", "dyn_models.py:pinned"]) == 1
    out = capsys.readouterr().out
    assert "specialized it to the constant 4" in out and "x_dim0 = 4" in out
    assert main(["export", "dyn_models.py:refined", "-o", "old.pt2"]) == 0
    assert main(["contract", "old.pt2"]) == 0
    assert "x_dim0 in [1, 10]" in capsys.readouterr().out
    assert main(["diff", "old.pt2", "old.pt2"]) == 0
