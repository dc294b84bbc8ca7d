"""The kinds a model's own ``np.errstate`` sets are recorded per node whatever their value:
``with np.errstate(divide="warn")`` under a caller whose divide is already "warn" still fixes
divide for the program, so a later caller's ``divide="raise"`` does not apply (as in eager);
kinds the model does not set follow the caller at call time; our own errstate blocks record
nothing.  Programs are compared with eager numpy under a caller's state other than export's."""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import tensorplay_export as tpe

SPEC = ({0: tpe.Dim("n", min=2, max=64)},)


def _x(n):
    x = np.linspace(-1.0, 1.0, n)
    x[0] = 0.0  # 1 / 0: divide; 0 / 0: invalid
    return x


def _outcome(fn, x, **caller):
    """(values or the error's type, the warnings' categories) of ``fn(x)`` under ``np.errstate(**caller)``."""
    with warnings.catch_warnings(record=True) as seen, np.errstate(**caller):
        warnings.simplefilter("always")
        try:
            out = fn(x)
        except FloatingPointError:
            return FloatingPointError, [w.category for w in seen]
    return out, [w.category for w in seen]


def _same_as_eager(ep, model, sizes=(3, 7, 20), **caller):
    for n in sizes:
        got, got_warned = _outcome(ep.module(), _x(n), **caller)
        want, want_warned = _outcome(model, _x(n), **caller)
        assert got_warned == want_warned
        if want is FloatingPointError:
            assert got is FloatingPointError
        else:
            np.testing.assert_array_equal(got, want)
    return got, got_warned


def _export(model, **at_export):
    with warnings.catch_warnings(), np.errstate(**at_export):
        warnings.simplefilter("ignore")  # export's own eager check runs the model once
        return tpe.export(model, _x(5), dynamic_shapes=SPEC)


def warn_divide(x):
    with np.errstate(divide="warn"):
        return 1.0 / x


def ignore_divide(x):
    with np.errstate(divide="ignore"):
        return 1.0 / x


def test_a_kind_set_to_the_callers_value_is_recorded():
    ep = _export(warn_divide, divide="warn")  # the caller's divide is "warn" at export too
    assert "with np.errstate(divide='warn'):" in ep.module().code
    got, warned = _same_as_eager(ep, warn_divide, divide="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning]


def test_ignore_set_under_a_callers_ignore_is_kept_under_raise():
    ep = _export(ignore_divide, divide="ignore")
    got, warned = _same_as_eager(ep, ignore_divide, divide="raise")
    assert got is not FloatingPointError and warned == []


def test_kinds_the_model_does_not_set_follow_the_caller_at_call_time():
    def model(x):
        with np.errstate(divide="warn"):
            return x / x  # 0 / 0 is invalid, not divide

    ep = _export(model)
    got, _ = _same_as_eager(ep, model, invalid="raise")
    assert got is FloatingPointError
    got, warned = _same_as_eager(ep, model, invalid="ignore", divide="raise")
    assert got is not FloatingPointError and warned == []


def test_all_sets_every_kind():
    def model(x):
        with np.errstate(all="warn"):
            return (x / x) + 1.0 / x

    ep = _export(model)
    line = next(ln.strip() for ln in ep.module().code.splitlines() if "errstate" in ln)
    assert all(f"{k}='warn'" in line for k in ("divide", "over", "under", "invalid"))
    got, warned = _same_as_eager(ep, model, all="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning, RuntimeWarning]


def test_nested_contexts_record_only_the_kinds_still_set():
    def model(x):
        with np.errstate(divide="warn"):
            with np.errstate(invalid="warn"):
                a = x / x
            b = x / x + 1.0 / x
        return a + b

    ep = _export(model)
    lines = [ln.strip() for ln in ep.module().code.splitlines() if "errstate" in ln]
    assert lines[0] == "with np.errstate(divide='warn', invalid='warn'):"
    assert "with np.errstate(divide='warn'):" in lines[1:]
    got, _ = _same_as_eager(ep, model, all="raise")  # b's 0 / 0 raises: invalid is the caller's there
    assert got is FloatingPointError
    got, warned = _same_as_eager(ep, model, divide="raise", invalid="ignore")
    assert got is not FloatingPointError and warned == [RuntimeWarning, RuntimeWarning]


def test_decorator_form_inside_the_model():
    def model(x):
        recip = np.errstate(divide="warn")(lambda v: 1.0 / v)
        return recip(x) + 1.0

    ep = _export(model)
    assert "with np.errstate(divide='warn'):" in ep.module().code
    got, warned = _same_as_eager(ep, model, divide="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning]


def test_a_model_without_errstate_follows_the_caller_whatever_the_export_state():
    def model(x):
        return 1.0 / x

    ep = _export(model, divide="ignore")  # our own np.errstate blocks during export record nothing
    assert "errstate" not in ep.module().code
    got, _ = _same_as_eager(ep, model, divide="raise")
    assert got is FloatingPointError


def test_loaded_program_keeps_the_recorded_kinds():
    buf = io.BytesIO()
    tpe.save(_export(warn_divide, divide="warn"), buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    got, warned = _same_as_eager(loaded, warn_divide, divide="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning]


def test_numpy_errstate_is_restored_after_capture():
    original = np.errstate
    _export(warn_divide)
    assert np.errstate is original


class Layer(tpe.nn.Module):
    def forward(self, x):
        with np.errstate(divide="warn"):
            return self.scale(x)

    def scale(self, x):
        return 2.0 / x


def test_module_forward_and_its_helper_method():
    m = Layer()
    ep = _export(m, divide="warn")
    got, warned = _same_as_eager(ep, m, divide="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning]


@np.errstate(divide="warn")
def _recip_warned(v):
    return 1.0 / v


def test_a_helper_decorated_before_the_capture():
    def model(x):
        return _recip_warned(x) * 2.0

    ep = _export(model, divide="warn")
    assert "with np.errstate(divide='warn'):" in ep.module().code
    got, warned = _same_as_eager(ep, model, divide="raise")
    assert got is not FloatingPointError and warned == [RuntimeWarning]


def test_a_deferred_value_is_computed_under_the_models_errstate():
    # h[0] = 0 forces the values; sqrt(h - 1) at h = 0 raises under the model's own errstate
    def model(x):
        with np.errstate(invalid="raise"):
            h = x + 1
            h[0] = 0.0
            return np.sqrt(h - 1)

    with pytest.raises(tpe.CaptureError, match=r"numpy.sqrt raised FloatingPointError: invalid value") as info:
        tpe.export(model, np.arange(1.0, 7.0), dynamic_shapes={"x": {0: tpe.Dim("n", max=12)}})
    assert "test_model_errstate.py" in str(info.value) and "return np.sqrt(h - 1)" in str(info.value)


def test_an_error_only_the_eager_run_computes_says_why():
    def model(x):
        with np.errstate(divide="raise"):
            return x / (x - x)   # nothing reads the value while tracing

    from tensorplay_export.errors import EagerMismatchError

    with pytest.raises(EagerMismatchError) as info:
        tpe.export(model, np.arange(1.0, 7.0), dynamic_shapes={"x": {0: tpe.Dim("n", max=12)}})
    text = str(info.value)
    assert "FloatingPointError: divide by zero" in text and "under the model's own np.errstate" in text
    assert "type(n) is int" not in text   # not the generic other-path explanation
