"""capture(..., mode="draft"): opaque ops in a per-capture overlay, assumed value reads, runtime checks.

Nothing is patched: the tracer consults its mode, the registry never changes.
"""
import threading

import numpy as np
import pytest

from tensorplay_export import Dim
from tensorplay_export.capture.draft_log import DraftLog
from tensorplay_export.capture.traced import TracedArray
from tensorplay_export.errors import ConstraintsExceededError, DataDependentError, UnsupportedOpError
from tensorplay_export.capture.entry import capture
from tensorplay_export.program.build import build_program
from tensorplay_export.ops.registry import all_ops, func_name, lookup_func

from _opaque import NO_RULE  # noqa: E402  (a numpy function without a shape rule)
SPEC = {"x": {0: Dim("n", max=64)}}


def x84(n=8):
    return np.linspace(-1.0, 1.0, n * 4, dtype=np.float32).reshape(n, 4)


def opaque_model(x):
    return NO_RULE(x) * 2.0


def value_model(x):
    if x.sum() > 0:
        return x + 1.0
    return x


def item_model(x):
    k = x[0, 0].item()
    return x * k


def test_opaque_op_lives_in_the_capture_overlay_not_the_registry():
    before = set(all_ops())
    with pytest.raises(UnsupportedOpError, match=func_name(NO_RULE)):
        capture(opaque_model, (x84(),), {}, SPEC, mode="export")
    result = capture(opaque_model, (x84(),), {}, SPEC, mode="draft")
    name = f"tpe.opaque.{func_name(NO_RULE)}"
    assert set(result.op_table) == {name} and set(all_ops()) == before
    assert [q for q, _src in result.draft.unsupported] == [func_name(NO_RULE)]
    assert any(n.target == name for n in result.graph.nodes)
    # the rule pinned n to the example: a violation (export would refuse it)
    assert [str(r.expr) for r in result.violations] == ["Eq(n, 8)"]
    ep = build_program(result, opaque_model, (x84(),), {}, SPEC, extra_guards=result.violations)
    assert ep.graph_module.op_table[name].impl is NO_RULE
    np.testing.assert_allclose(ep.module()(x84()), opaque_model(x84()))
    with pytest.raises(ConstraintsExceededError):
        ep.module()(x84(9))


def test_without_extra_guards_the_program_does_not_check_the_violations():
    result = capture(opaque_model, (x84(),), {}, SPEC, mode="draft")
    ep = build_program(result, opaque_model, (x84(),), {}, SPEC)
    assert "n == 8" not in ep.code.replace("_sym_", "")
    checked = build_program(capture(opaque_model, (x84(),), {}, SPEC, mode="draft"), opaque_model,
                            (x84(),), {}, SPEC, extra_guards=[r.expr for r in result.violations])
    with pytest.raises(ConstraintsExceededError):
        checked.module()(x84(9))


def test_value_read_follows_the_example_with_a_runtime_check():
    x = np.abs(x84()) + 0.1
    with pytest.raises(DataDependentError, match="truth value"):
        capture(value_model, (x,), {}, SPEC, mode="export")
    log = DraftLog()
    result = capture(value_model, (x,), {}, SPEC, mode="draft", draft_log=log)
    assert result.draft is log and [v[:2] for v in log.values] == [("branches on the truth value", "True")]
    guards = [n for n in result.graph.nodes if n.target == "tpe.assert_guard"]
    assert len(guards) == 1 and "x.sum() > 0" in guards[0].args[1]
    m = build_program(result, value_model, (x,), {}, SPEC).module()
    np.testing.assert_allclose(m(x), x + 1.0)
    with pytest.raises(ConstraintsExceededError, match="x.sum"):
        m(-x)


def test_item_read_is_pinned_to_the_example_value():
    x = np.full((3, 4), 2.0, np.float32)
    result = capture(item_model, (x,), {}, SPEC, mode="draft")
    assert result.draft.values[0][:2] == ("reads .item()", "2.0")
    m = build_program(result, item_model, (x,), {}, SPEC).module()
    np.testing.assert_allclose(m(x), x * 2.0)
    with pytest.raises(ConstraintsExceededError):
        m(np.full((3, 4), 3.0, np.float32))


def test_data_dependent_guard_gets_a_check_after_its_binding_node():
    def model(x):
        nz = np.nonzero(x > 0)[0]
        return x * 2.0 if nz.shape[0] > 3 else x

    x = np.linspace(-1.0, 1.0, 10, dtype=np.float32)
    result = capture(model, (x,), {}, {"x": {0: Dim("n", max=100)}}, mode="draft")
    nodes = result.graph.nodes
    binder = next(i for i, n in enumerate(nodes)
                  if any(result.env.is_unbacked(s) for s in (n.meta.get("bind") or {}).values()))
    check = next(i for i, n in enumerate(nodes) if n.target == "tpe.assert_guard")
    assert check == binder + 1 and result.draft.problems == []


def test_log_survives_a_capture_that_raises():
    def model(x):
        if x.sum() > 0:
            pass
        return x @ np.ones((3, 3))

    log = DraftLog()
    with pytest.raises(Exception):
        capture(model, (np.ones((2, 4), np.float32),), {}, None, mode="draft", draft_log=log)
    assert [v[0] for v in log.values] == ["branches on the truth value"]


def test_value_reads_are_not_patched_on_the_class():
    methods = {name: TracedArray.__dict__[name] for name in ("__bool__", "__int__", "__index__", "item")}
    capture(value_model, (np.abs(x84()) + 0.1,), {}, SPEC, mode="draft")
    assert {name: TracedArray.__dict__[name] for name in methods} == methods


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        capture(value_model, (x84(),), {}, SPEC, mode="drafty")


def test_export_in_another_thread_is_unaffected_by_a_draft_capture():
    errors: list = []
    barrier = threading.Barrier(2)

    def draft():
        barrier.wait()
        for _ in range(5):
            capture(opaque_model, (x84(),), {}, SPEC, mode="draft")

    def export():
        barrier.wait()
        for _ in range(5):
            try:
                capture(opaque_model, (x84(),), {}, SPEC, mode="export")
            except UnsupportedOpError:
                continue
            errors.append("export saw an opaque op")

    threads = [threading.Thread(target=draft), threading.Thread(target=export)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# -- an opaque op that returns a tuple or list of arrays: one output per item --------------------------
def _eig_model(x):
    res = np.linalg.eig(x[:, :4].T @ x[:, :4])      # EigResult(eigenvalues, eigenvectors) of a 4x4
    return np.sort(res.eigenvalues.real).sum() + x, np.abs(res[1]).sum()


def _histogram2d_model(x):
    h, ex, ey = np.histogram2d(x[:, 0], x[:, 1], bins=3)  # a tuple of three arrays over the n rows
    return x * h.sum() + ex.sum() + ey.sum()


def _lstsq_model(x):
    coef, residuals, rank, singular = np.linalg.lstsq(x[:4, :3], x[:4, 3], rcond=None)  # a 4-tuple
    return x[:, :3] * coef + singular.sum()


@pytest.mark.parametrize("model, sizes", [(_eig_model, (6, 3, 8)), (_histogram2d_model, (6,)),
                                          (_lstsq_model, (6, 4, 8))], ids=["eig", "histogram2d", "lstsq"])
def test_an_opaque_op_returning_several_arrays_gives_a_program(model, sizes):
    import tensorplay_export as tpe

    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 4))
    report = tpe.draft_export(model, x, dynamic_shapes={"x": {0: Dim("n", max=8)}})
    kinds = {f.kind for f in report.failures}
    assert "capture_error" not in kinds and "numpy_error" not in kinds, str(report)
    assert "unsupported_op" in kinds, str(report)  # (pick another function if this one gets a rule)
    ep = report.exported_program
    assert ep is not None
    for n in sizes:  # the program runs the op again on new values (at other sizes where none was pinned)
        xn = rng.standard_normal((n, 4))
        got, want = ep.module()(xn), model(xn)
        for g, w in zip(got if isinstance(want, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9)
    if sizes == (6,):  # the op saw the dynamic size: pinned, so other sizes are refused
        with pytest.raises(ConstraintsExceededError):
            ep.module()(rng.standard_normal((5, 4)))
