"""Re-exporting a program's module (torch's retraceability): ``export(ep.module(), ...)`` gives
the same contract as ``ep``, and an exported module called inside another model keeps its sizes
symbolic (program/retrace.py: the graph runs through the caller's capture, its input checks
become the caller's requirements)."""
from __future__ import annotations

import numpy as np
import pytest

from _shared import refused, roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim

RNG = np.random.default_rng(7)


def arr(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


def same(got, want):
    if isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    if type(want) in (int, float, bool):
        assert type(got) is type(want) and got == want
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def _item_model(x, k):
    u = k.item()
    tpe.check(u <= x.shape[0])
    return x[:u] * 2


T8 = np.arange(8.0, dtype=np.float32)

# name -> (model, example args, spec, inputs at three other sizes)
CASES = {
    "arange": (lambda x: x + np.arange(x.shape[0], dtype=np.float32), (arr(4),), ({0: Dim("n")},),
               [(arr(1),), (arr(7),), (arr(12),)]),
    "zeros": (lambda x: np.zeros((x.shape[0], 2), np.float32) + x[:, None], (arr(4),), ({0: Dim("n")},),
              [(arr(1),), (arr(5),), (arr(9),)]),
    "eye": (lambda x: np.eye(x.shape[0], dtype=np.float32) @ x, (arr(3, 2),), ({0: Dim("n")},),
            [(arr(1, 2),), (arr(5, 2),), (arr(8, 2),)]),
    "full_of_a_sum": (lambda x, y: np.full(x.shape[0] + y.shape[0], 1.0, np.float32),
                      (arr(2), arr(3)), ({0: Dim("a")}, {0: Dim("b")}),
                      [(arr(1), arr(1)), (arr(4), arr(2)), (arr(6), arr(9))]),
    "slice_by_min": (lambda x: x[: min(x.shape[0], 4)], (arr(6),), ({0: Dim("n")},),
                     [(arr(2),), (arr(4),), (arr(11),)]),
    "item_checked": (_item_model, (arr(5), np.array(3)), ({0: Dim("n")}, None),
                     [(arr(5), np.array(0)), (arr(7), np.array(7)), (arr(9), np.array(4))]),
    "size_output": (lambda x: (x * 2, x.shape[0] * 3), (arr(3),), ({0: Dim("n")},),
                    [(arr(1),), (arr(6),), (arr(10),)]),
    "slice_by_max": (lambda x, y: x[: max(x.shape[0] - y.shape[0], 1)], (arr(6), arr(2)),
                     ({0: Dim("n")}, {0: Dim("k")}), [(arr(2), arr(5)), (arr(5), arr(1)), (arr(9), arr(3))]),
    "constant_table": (lambda x: x + T8[: x.shape[0]], (arr(3),), ({0: Dim("n", max=8)},),
                       [(arr(1),), (arr(5),), (arr(8),)]),
    "typed_sizes": (lambda x: (np.zeros(x.shape[0] + np.int32(1), np.float32), x[: x.shape[0] // np.int64(2)],
                               x.shape[0] + np.int32(1)), (arr(4),), ({0: Dim("n", max=1024)},),  # int32 holds n + 1
                    [(arr(1),), (arr(5),), (arr(9),)]),
    "float_and_bool_size_outputs": (lambda x: (x * 2, x.shape[0] * 1.0, x.shape[0] > 3), (arr(4),),
                                    ({0: Dim("n")},), [(arr(1),), (arr(3),), (arr(8),)]),
    "floor_div": (lambda x: x.reshape(-1)[: x.shape[0] // 2 + 1], (arr(6, 2),), ({0: Dim("n")},),
                  [(arr(1, 2),), (arr(3, 2),), (arr(10, 2),)]),
}


def _auto(spec):
    return tuple(None if s is None else {k: Dim.AUTO for k in s} for s in spec)


@pytest.mark.parametrize("name", sorted(CASES))
def test_reexport_with_the_same_spec_keeps_the_contract(name):
    model, args, spec, others = CASES[name]
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), *args, dynamic_shapes=spec)
    assert ep2.range_constraints == ep.range_constraints
    for inputs in others:
        same(ep2.module()(*inputs), model(*inputs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_reexport_with_auto_dims_is_as_dynamic_as_the_program(name):
    model, args, spec, others = CASES[name]
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), *args, dynamic_shapes=_auto(spec))
    # one AUTO symbol per named dim, with the same range (AUTO symbols are named s0, s1, ...)
    assert sorted(map(str, ep2.range_constraints.values())) == sorted(map(str, ep.range_constraints.values()))
    for inputs in others:
        same(ep2.module()(*inputs), model(*inputs))
    loaded = roundtrip(ep2)
    for inputs in others:
        same(loaded.module()(*inputs), model(*inputs))


def test_refusals_of_the_reexport_are_the_programs():
    def model(x, y):
        return x.reshape(2, -1) + y[: x.shape[0] // 2][:, None][:1]

    ep = tpe.export(model, arr(4), arr(6), dynamic_shapes=({0: Dim.AUTO}, {0: Dim("m", max=9)}))
    ep2 = tpe.export(ep.module(), arr(4), arr(6), dynamic_shapes=({0: Dim.AUTO}, {0: Dim("m", max=9)}))
    assert ep2.range_constraints.keys() == ep.range_constraints.keys()
    seen = set()
    for n in range(1, 12):
        for m in range(1, 12):
            inputs = (arr(n), arr(m))
            verdict = refused(ep, *inputs)
            assert refused(ep2, *inputs) == verdict, (n, m)
            seen.add(verdict)
            if not verdict:
                same(ep2.module()(*inputs), model(*inputs))
    assert seen == {True, False}


def test_a_derived_dim_program_reexports_with_auto_dims():
    dx = Dim("dx", max=20)
    ep = tpe.export(lambda x, y: x + y[1:], arr(3), arr(4), dynamic_shapes=({0: dx}, {0: dx + 1}))
    ep2 = tpe.export(ep.module(), arr(3), arr(4), dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
    for n in (1, 7, 20):
        x, y = arr(n), arr(n + 1)
        same(ep2.module()(x, y), x + y[1:])
    assert refused(ep2, arr(21), arr(22)) and refused(ep2, arr(4), arr(4))


def test_a_multiple_relation_of_the_program_is_a_violation_with_its_fix_over_a_free_dim():
    ep = tpe.export(lambda x: x.reshape(-1, 2).sum(1), arr(6), dynamic_shapes=({0: 2 * Dim("h")},))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(ep.module(), arr(6), dynamic_shapes=({0: Dim("n")},))
    text = str(info.value)
    assert "% 2" in text and "Suggested fixes:" in text
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, ({0: Dim("n")},))
    ep2 = tpe.export(ep.module(), arr(6), dynamic_shapes=spec)
    for n in (2, 8, 14):
        x = arr(n)
        same(ep2.module()(x), x.reshape(-1, 2).sum(1))
    assert refused(ep2, arr(5))


def test_the_programs_range_narrows_an_auto_dim_and_is_a_violation_over_a_named_one():
    ep = tpe.export(lambda x: x + T8[: x.shape[0]], arr(3), dynamic_shapes=({0: Dim("n", max=8)},))
    ep2 = tpe.export(ep.module(), arr(3), dynamic_shapes=({0: Dim.AUTO},))
    assert [(r.lower, r.upper) for r in ep2.range_constraints.values()] == [(1, 8)]
    assert refused(ep2, arr(9))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(ep.module(), arr(3), dynamic_shapes=({0: Dim("n")},))
    text = str(info.value)
    assert "admits its input x.shape[0] in [1, 8] (its dim n)" in text  # the bullet names the program's own range
    assert "n = Dim('n', max=8)" in text
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, ({0: Dim("n")},))
    assert tpe.export(ep.module(), arr(3), dynamic_shapes=refined).range_constraints == ep.range_constraints


def test_a_model_calling_an_exported_module_stays_dynamic():
    inner = tpe.export(lambda x: x + np.arange(x.shape[0], dtype=np.float32), arr(3),
                       dynamic_shapes={"x": {0: Dim("n")}}).module()

    def outer(x):
        return inner(x) * 2 + np.ones(x.shape[0], np.float32)

    ep = tpe.export(outer, arr(3), dynamic_shapes={"x": {0: Dim("n")}})
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, float("inf"))]
    for n in (1, 6, 13):
        x = arr(n)
        same(ep.module()(x), outer(x))


def test_a_model_calling_a_bounded_exported_module_inherits_its_range():
    inner = tpe.export(lambda x: x + T8[: x.shape[0]], arr(3), dynamic_shapes=({0: Dim("n", max=8)},)).module()

    def outer(x, y):
        return inner(x[1:]) + y

    ep = tpe.export(outer, arr(4), arr(3), dynamic_shapes=({0: Dim.AUTO}, {0: Dim.AUTO}))
    # x's axis is y's plus one (an AUTO relation): the symbol left is y's, in the inner's [1, 8]
    assert sorted((r.lower, r.upper) for r in ep.range_constraints.values()) == [(1, 8)]
    for n in (2, 5, 9):
        x, y = arr(n), arr(n - 1)
        same(ep.module()(x, y), outer(x, y))
    assert refused(ep, arr(10), arr(9))
    m = Dim("m")
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(outer, arr(4), arr(3), dynamic_shapes=({0: m}, {0: m - 1}))
    assert "m = Dim('m', min=2, max=9)" in str(info.value)


def test_draft_export_of_the_module_reports_no_failure():
    for name in ("arange", "eye", "slice_by_min", "item_checked", "size_output"):
        model, args, spec, others = CASES[name]
        ep = tpe.export(model, *args, dynamic_shapes=spec)
        report = tpe.draft_export(ep.module(), *args, dynamic_shapes=spec)
        assert report.successful() and not report.failures, name
        for inputs in others:
            same(report.exported_program.module()(*inputs), model(*inputs))


def test_a_loaded_program_reexports_with_its_contract():
    model, args, spec, others = CASES["slice_by_max"]
    ep = roundtrip(tpe.export(model, *args, dynamic_shapes=spec))
    ep2 = tpe.export(ep.module(), *args, dynamic_shapes=spec)
    assert ep2.range_constraints == ep.range_constraints
    for inputs in others:
        same(ep2.module()(*inputs), model(*inputs))


def test_a_decomposed_program_reexports():
    def model(x):
        return tpe.nn.functional.softmax(x, dim=-1)[:, : x.shape[1] - 1]

    spec = {"x": {0: Dim("n"), 1: Dim("k", min=2, max=9)}}
    ep = tpe.export(model, arr(3, 4), dynamic_shapes=spec).run_decompositions()
    ep2 = tpe.export(ep.module(), arr(3, 4), dynamic_shapes=spec)
    assert ep2.range_constraints == ep.range_constraints
    for shape in ((1, 2), (5, 9), (7, 3)):
        x = arr(*shape)
        same(ep2.module()(x), model(x))


def test_nn_layers_reexport_with_their_parameters():
    net = tpe.nn.Sequential(tpe.nn.Linear(4, 8), tpe.nn.GELU(), tpe.nn.LayerNorm(8), tpe.nn.Linear(8, 2))
    spec = ({0: Dim("b")},)
    ep = tpe.export(net, arr(3, 4), dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), arr(3, 4), dynamic_shapes=spec)
    kinds = lambda p: [(s.kind, s.target) for s in p.graph_signature.input_specs]  # noqa: E731
    assert kinds(ep2) == kinds(ep)
    assert ep2.range_constraints == ep.range_constraints
    for b in (1, 5, 16):
        x = arr(b, 4)
        same(ep2.module()(x), net(x))


def test_reexport_twice_is_still_the_same_program():
    model, args, spec, others = CASES["zeros"]
    ep = tpe.export(model, *args, dynamic_shapes=spec)
    ep3 = tpe.export(tpe.export(ep.module(), *args, dynamic_shapes=spec).module(), *args, dynamic_shapes=spec)
    assert ep3.code == tpe.export(ep.module(), *args, dynamic_shapes=spec).code
    for inputs in others:
        same(ep3.module()(*inputs), model(*inputs))


def test_an_example_outside_the_programs_contract_is_refused_at_reexport():
    ep = tpe.export(lambda x: x + T8[: x.shape[0]], arr(3), dynamic_shapes=({0: Dim("n", max=8)},))
    with pytest.raises(tpe.ConstraintsExceededError):
        tpe.export(ep.module(), arr(9), dynamic_shapes=({0: Dim.AUTO},))
