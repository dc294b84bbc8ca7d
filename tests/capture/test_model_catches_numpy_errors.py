"""A model's own try/except around a numpy call (EAFP fallbacks) under export.

numpy raises at the example because a size requirement of the op fails there
(``x.reshape(-1, 4)`` at n = 6).  The model's handler must see numpy's own exception
kind (``NumpySizeError`` subclasses: also a ValueError / IndexError) and the capture
must record the except branch as a guard (the requirement is false), so the program
is admitted only where eager takes the same except path.  Uncaught, export fails as
it always did (a plain CaptureError with numpy's message).
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.capture import tracer as tracer_mod
from tensorplay_export.errors import (CaptureError, ConstraintsExceededError, ConstraintViolationError,
                                      NumpySizeError)
from tensorplay_export.program.eager_check import check_against_eager

SIZES = range(1, 25)
B = np.array([1.0, -2.0, 3.0, 0.5])


def try_reshape(x):
    try:
        y = x.reshape(-1, 4)
    except ValueError:
        y = np.pad(x, (0, (-x.shape[0]) % 4)).reshape(-1, 4)
    return y.sum(1)


def try_index(x):
    try:
        return x[10] * 2.0
    except IndexError:
        return x[-1]


def try_add(x):
    try:
        return x + B
    except ValueError:  # broadcast fallback: a total against each entry
        return x.sum() + B


class Padded(nn.Module):
    """The try/except inside a submodule's forward."""

    def forward(self, x):
        try:
            y = x.reshape(-1, 4)
        except ValueError:
            y = np.pad(x, (0, (-x.shape[0]) % 4)).reshape(-1, 4)
        return y.max(1)


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Padded()

    def forward(self, x):
        return self.inner(x * 3.0) + 1.0


# (model, example size, the try body run eagerly: whether it raises is eager's path)
CASES = {
    "reshape": (try_reshape, 6, lambda x: x.reshape(-1, 4)),
    "index": (try_index, 5, lambda x: x[10]),
    "broadcast": (try_add, 6, lambda x: x + B),
    "nested module": (Outer(), 6, lambda x: x.reshape(-1, 4)),
}


def _x(n: int) -> np.ndarray:
    return np.linspace(-1.0, 2.0, n)


def _eager_takes_except(body, n: int) -> bool:
    try:
        body(_x(n))
    except (ValueError, IndexError):
        return True
    return False


def _admitted_sizes(ep, model, body) -> set:
    """Sizes 1..24 the program admits, each checked against eager numpy there."""
    admitted = set()
    for n in SIZES:
        try:
            got = ep.module()(_x(n))
        except ConstraintsExceededError:
            continue
        admitted.add(n)
        assert _eager_takes_except(body, n), f"n = {n}: the program runs where eager takes the try path"
        np.testing.assert_allclose(got, model(_x(n)), rtol=1e-12, err_msg=f"n = {n}")
    return admitted


@pytest.mark.parametrize("name", list(CASES))
def test_auto_dim_admits_exactly_the_sizes_where_eager_takes_the_except_path(name, tmp_path):
    model, n0, body = CASES[name]
    assert _eager_takes_except(body, n0)
    ep = tpe.export(model, _x(n0), dynamic_shapes={"x": {0: Dim.AUTO}})
    admitted = _admitted_sizes(ep, model, body)
    # refused sizes are exactly where eager would take the try path instead
    assert admitted == {n for n in SIZES if _eager_takes_except(body, n)}
    assert n0 in admitted and len(admitted) < len(SIZES)
    # the except branch's guard is part of the saved contract
    tpe.save(ep, tmp_path / "m.tpe")
    assert _admitted_sizes(tpe.load(tmp_path / "m.tpe"), model, body) == admitted
    # the eager safety net runs at a size the program admits, where eager also takes the except path
    report = check_against_eager(ep, model, (_x(n0),), {})
    if report.sizes is not None:
        assert all(_eager_takes_except(body, v) for v in report.sizes.values())


@pytest.mark.parametrize("name", list(CASES))
def test_named_dim_is_a_violation_whose_fix_exports(name):
    model, n0, body = CASES[name]
    spec = {"x": {0: Dim("n", max=24)}}
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(model, _x(n0), dynamic_shapes=spec)
    text = str(info.value)
    assert "Constraints violated (n)!" in text
    assert f"the model catches the {'IndexError' if name == 'index' else 'ValueError'} numpy raises here" in text
    assert "the program takes the except branch, so it is valid only at sizes where numpy raises" in text
    assert "still fails" not in text  # the fix block is verified by a re-export
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    ep = tpe.export(model, _x(n0), dynamic_shapes=refined)
    admitted = _admitted_sizes(ep, model, body)
    assert n0 in admitted
    assert admitted <= {n for n in SIZES if _eager_takes_except(body, n)}


def test_reshape_fix_for_a_not_multiple_of_4():
    """``n % 4 != 0`` is no range, modulus or relation; the fix search offers the example's
    residue class (n = 4*_n + 2), which makes the guard hold, and says so."""
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(try_reshape, _x(6), dynamic_shapes={"x": {0: Dim("n", max=24)}})
    err = info.value
    assert [v.guard_text for v in err.violations] == ["n % 4 != 0"]
    assert err.violations[0].source is not None and "x.reshape(-1, 4)" in str(err.violations[0].source)
    assert err.fixes == ["_n = Dim('_n', min=0, max=5)", "n = 4*_n + 2"]


def test_the_handler_sees_numpys_kind_and_message():
    seen = []

    def model(x):
        try:
            return x.reshape(-1, 4)
        except ValueError as e:
            seen.append(e)
            return x[None]

    tpe.export(model, _x(6), dynamic_shapes={"x": {0: Dim.AUTO}})
    err = seen[0]  # the capture's; the eager safety net's runs see numpy's plain ValueError
    assert all(type(e) is ValueError for e in seen[1:])
    assert isinstance(err, ValueError) and isinstance(err, CaptureError) and isinstance(err, NumpySizeError)
    assert str(err).startswith("numpy.ndarray.reshape raised ValueError: cannot reshape array of size 6 into shape (4)")
    assert type(err.__cause__) is ValueError and err.raised_by == "numpy.ndarray.reshape"


def test_numpys_own_class_is_caught_when_it_only_names_a_kind():
    """``except np.linalg.LinAlgError`` (inv of a non-square matrix) catches it as eagerly."""
    def model(x):
        try:
            return np.linalg.inv(x)
        except np.linalg.LinAlgError:
            return x.T @ x

    ep = tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim.AUTO}})
    for n in range(1, 9):
        x = np.arange(4.0 * n).reshape(n, 4) % 5 + np.eye(n, 4)
        if n == 4:  # eager inverts: the try path, refused
            with pytest.raises(ConstraintsExceededError):
                ep.module()(x)
        else:
            np.testing.assert_allclose(ep.module()(x), model(x))


def test_numpy_size_error_classes():
    from tensorplay_export.errors import numpy_size_error

    axis_error = numpy_size_error(np.exceptions.AxisError)  # own __init__/__str__: its builtin kinds
    assert issubclass(axis_error, ValueError) and issubclass(axis_error, IndexError)
    assert not issubclass(axis_error, np.exceptions.AxisError)
    err = numpy_size_error(np.linalg.LinAlgError)("numpy.linalg.inv raised LinAlgError: x", raised_by="numpy.linalg.inv")
    assert isinstance(err, np.linalg.LinAlgError) and isinstance(err, CaptureError)
    assert str(err) == "numpy.linalg.inv raised LinAlgError: x"
    plain = err.uncaught()
    assert type(plain) is CaptureError and str(plain) == str(err) and plain.raised_by == "numpy.linalg.inv"
    assert numpy_size_error(IndexError) is numpy_size_error(IndexError)


def test_a_requirement_false_at_every_size_needs_no_guard():
    """6*n elements never fill rows of 4 per n: numpy raises at every size, so the except
    branch takes no guard and a named dim stays whole."""
    def model(x):
        try:
            y = x.reshape(x.shape[0], -1, 4)
        except ValueError:
            y = x[:, None, :4]
        return y.sum(2)

    ep = tpe.export(model, np.ones((3, 6)), dynamic_shapes={"x": {0: Dim("n", max=24)}})
    assert str(ep.range_constraints) == "{n: [1, 24]}"
    for n in SIZES:
        x = np.arange(6.0 * n).reshape(n, 6)
        np.testing.assert_allclose(ep.module()(x), model(x))


@pytest.mark.parametrize("name", list(CASES))
def test_static_shapes_take_the_except_branch_with_no_guard(name):
    """Rules leave static sizes to numpy; run on them as symbols they still say what numpy
    needs, so the model's handler runs, and the static program needs no guard."""
    model, n0, _body = CASES[name]
    ep = tpe.export(model, _x(n0))
    assert str(ep.range_constraints) == "{}"
    x = np.random.default_rng(0).normal(size=n0)
    np.testing.assert_allclose(ep.module()(x), model(x), rtol=1e-12)


def test_static_constants_caught_by_the_model():
    def model(x):
        try:
            y = np.ones(3) + B
        except ValueError:
            y = B
        return x * y.sum()

    ep = tpe.export(model, _x(6), dynamic_shapes={"x": {0: Dim("n", max=24)}})
    for n in SIZES:
        np.testing.assert_allclose(ep.module()(_x(n)), model(_x(n)))


def test_a_deferred_op_caught_by_the_model():
    """The failing add is recorded without running numpy first (its proxies fit): the rule's
    false requirement still reaches the model as numpy's ValueError, with its guard."""
    calls = []
    real = tracer_mod.Tracer._numpy_error_of

    def spy(self, op, *rest):
        calls.append(op.name)
        return real(self, op, *rest)

    def model(x):
        try:
            y = (x * 2) + np.zeros((1, 512))
        except ValueError:
            y = (x * 2).sum(1, keepdims=True) + np.zeros((1, 512))
        return y

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tracer_mod.Tracer, "_numpy_error_of", spy)
        ep = tpe.export(model, np.ones((3, 16)), dynamic_shapes={"x": {0: Dim.AUTO, 1: Dim.AUTO}})
    assert calls == ["numpy.add"]
    for m in (1, 2, 16, 511, 512, 513):
        x = np.arange(2.0 * m).reshape(2, m)
        if m in (1, 512):  # eager broadcasts there: the try path, refused
            with pytest.raises(ConstraintsExceededError):
                ep.module()(x)
        else:
            np.testing.assert_allclose(ep.module()(x), model(x))


@pytest.mark.parametrize("spec", [None, {"x": {0: Dim.AUTO}}, {"x": {0: Dim("n", max=24)}}])
def test_an_uncaught_numpy_error_is_reported_as_before(spec):
    with pytest.raises(CaptureError) as info:
        tpe.export(lambda x: x.reshape(-1, 4), _x(6), dynamic_shapes=spec)
    err = info.value
    assert type(err) is CaptureError and err.raised_by == "numpy.ndarray.reshape"
    assert str(err).startswith("numpy.ndarray.reshape raised ValueError: cannot reshape array of size 6 into "
                               "shape (4)\n  at test_model_catches_numpy_errors.py:")
    assert type(err.__cause__) is ValueError


def test_an_uncaught_error_from_a_submodule_is_reported_as_before():
    class Inner(nn.Module):
        def forward(self, x):
            return x[10]

    class Top(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x)

    with pytest.raises(CaptureError) as info:
        tpe.export(Top(), _x(5), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert type(info.value) is CaptureError
    assert str(info.value).startswith("tpe.getitem raised IndexError: index 10 is out of bounds for axis 0 "
                                      "with size 5")


def test_errors_not_about_sizes_keep_todays_behaviour():
    """A dtype error and an index taken from an array's values are not size requirements: the
    model's handler does not see them (numpy's error at another size may differ)."""
    def dtype_error(x):
        try:
            return x | 1
        except TypeError:
            return x

    def value_index(x):
        try:
            return x[np.array([7])]
        except IndexError:
            return x[-1:]

    for model, n, start in [(dtype_error, 4, "numpy.bitwise_or raised TypeError: ufunc 'bitwise_or' not supported"),
                            (value_index, 5, "tpe.getitem raised IndexError: index 7 is out of bounds")]:
        for spec in ({"x": {0: Dim.AUTO}}, None):
            with pytest.raises(CaptureError) as info:
                tpe.export(model, _x(n), dynamic_shapes=spec)
            assert type(info.value) is CaptureError and str(info.value).startswith(start)


def test_an_index_range_outside_the_axis_is_still_a_plain_capture_error():
    """numpy's run stays inside (values 0..4) but clip's range reaches 10 on 6 rows: not numpy's
    error, so no handler sees it, and it stays a plain CaptureError with its own text."""
    def model(x, idx):
        try:
            return x[np.clip(idx, 0, 10)]
        except IndexError:
            return x[:1]

    with pytest.raises(CaptureError) as info:
        tpe.export(model, _x(6), np.array([0, 1, 4]), dynamic_shapes={"x": {0: Dim.AUTO}, "idx": None})
    assert type(info.value) is CaptureError
    assert str(info.value).startswith("index values may fall outside the array")


def test_a_broad_except_records_the_branch_too():
    """``except Exception`` caught capture's error before as well, but the program then took the
    except branch at every size; now it is admitted only where numpy raises."""
    def model(x):
        try:
            return x.reshape(-1, 4).sum(1)
        except Exception:  # noqa: BLE001 - the model's own choice
            return x[:1]

    ep = tpe.export(model, _x(6), dynamic_shapes={"x": {0: Dim.AUTO}})
    for n in SIZES:
        if n % 4 == 0:
            with pytest.raises(ConstraintsExceededError):
                ep.module()(_x(n))
        else:
            np.testing.assert_allclose(ep.module()(_x(n)), model(_x(n)))


def test_draft_export_builds_the_except_branch():
    report = tpe.draft_export(try_reshape, _x(6), dynamic_shapes={"x": {0: Dim("n", max=24)}})
    assert "satisfy the guard n % 4 != 0" in str(report)
    ep = report.exported_program
    for n in SIZES:
        if n % 4 == 0:  # eager takes the try path there: the draft program refuses it too
            with pytest.raises(ConstraintsExceededError):
                ep.module()(_x(n))
        else:
            np.testing.assert_allclose(ep.module()(_x(n)), try_reshape(_x(n)))
