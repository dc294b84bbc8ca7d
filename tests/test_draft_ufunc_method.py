"""draft_export runs a ufunc method without a shape rule opaquely, as it runs an unsupported
function (sizes pinned, capture goes on, a program is built); a call that stops capture is filed
under its own heading, not under the opaque ops'."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import UnsupportedOpError

POS = np.ones((64, 4), np.float32)


def _model(x):
    a = np.logaddexp2.reduceat(x, [0, 2], axis=2)  # no shape rule: run opaquely
    return np.logaddexp.accumulate(x, axis=1) + POS[: x.shape[1]] + a.sum()


def test_an_unsupported_ufunc_method_runs_opaquely_and_capture_goes_on():
    x = np.random.default_rng(0).standard_normal((2, 10, 4)).astype(np.float32)
    report = tpe.draft_export(_model, x, dynamic_shapes={"x": {0: Dim("b", max=8), 1: Dim("t", max=128)}})
    kinds = [f.kind for f in report.failures]
    assert "unsupported_op" in kinds and "unsupported_call" not in kinds, str(report)
    opaque = next(f for f in report.failures if f.kind == "unsupported_op")
    assert "numpy.logaddexp2.reduceat" in opaque.message
    ep = report.exported_program
    assert ep is not None and ep.opaque_ops == ("tpe.opaque.numpy.logaddexp2.reduceat",)
    np.testing.assert_array_equal(ep.module()(x), _model(x))
    assert "Ops without shape rules (run opaquely" in str(report)


def test_logaddexp_accumulate_has_a_rule_so_draft_reports_the_violation_after_it():
    def model(x):
        return np.logaddexp.accumulate(x, axis=1) + POS[: x.shape[1]]

    x = np.ones((2, 10, 4), np.float32)
    report = tpe.draft_export(model, x, dynamic_shapes={"x": {0: Dim("b", max=8), 1: Dim("t", max=128)}})
    assert [f.kind for f in report.failures] == ["constraint_violation"], str(report)
    assert "t <= 64" in report.failures[0].message
    assert report.exported_program is not None


def test_a_call_that_stops_capture_is_not_filed_as_run_opaquely():
    def model(x):
        y = x.copy()
        np.logaddexp.at(y, [0, 1], 1.0)  # ufunc.at writes in place: no opaque fallback
        return y

    report = tpe.draft_export(model, np.ones((5, 4), np.float32), dynamic_shapes={"x": {0: Dim("b", max=8)}})
    assert [f.kind for f in report.failures] == ["unsupported_call"]
    assert report.exported_program is None
    text = str(report)
    assert "run opaquely" not in text and "Unsupported calls (capture stopped there" in text
    with pytest.raises(UnsupportedOpError, match="logaddexp.at"):
        report.raise_on_failure()
