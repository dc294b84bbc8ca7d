"""``tpe.check(cond)``: facts about sizes in model code (issue 16 item 5)."""
import io
import os

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

HERE = os.path.basename(__file__)


def _line_of(marker):
    with open(__file__) as f:
        for number, line in enumerate(f, 1):
            if line.rstrip().endswith(marker):
                return number
    raise AssertionError(marker)


# -- eager ----------------------------------------------------------------------------------------
def test_eager_true_is_a_no_op_and_false_raises_with_file_and_line():
    assert tpe.check(True) is None
    assert tpe.check(np.bool_(True)) is None
    assert tpe.check(3 > 2) is None
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        tpe.check(np.ones(3).shape[0] >= 4)  # eager-check
    assert f"{HERE}:{_line_of('# eager-check')}" in str(info.value)
    assert "tpe.check(np.ones(3).shape[0] >= 4)" in str(info.value)


# -- unbacked sizes ---------------------------------------------------------------------------------
def picks(x, g):
    idx = np.nonzero(g > 0)[0]
    tpe.check(idx.shape[0] >= 2)  # unbacked-check
    return x[idx[1]] + x[idx].sum(axis=0)   # idx[1] needs u0 >= 2


SPEC = {"x": {0: Dim("n", max=32)}, "g": {0: Dim("n", max=32)}}


def _args(n, selected, seed=0):
    rng = np.random.default_rng(seed)
    g = -np.ones(n, np.float32)
    g[rng.permutation(n)[:selected]] = 1.0
    return rng.standard_normal((n, 3)).astype(np.float32), g


def test_without_the_check_the_index_needs_a_data_dependent_guard():
    def no_check(x, g):
        idx = np.nonzero(g > 0)[0]
        return x[idx[1]] + x[idx].sum(axis=0)

    with pytest.raises(tpe.DataDependentError):
        tpe.export(no_check, *_args(8, 3), dynamic_shapes=SPEC)


def _assert_program_checks(run, what):
    for n, selected in [(2, 2), (9, 5), (32, 32)]:
        args = _args(n, selected, seed=n)
        np.testing.assert_allclose(run(*args), picks(*args), rtol=1e-5)
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        run(*_args(9, 1))
    text = str(info.value)
    assert "u0 >= 2" in text and "u0 = 1" in text, (what, text)
    assert f"{HERE}:{_line_of('# unbacked-check')}" in text, (what, text)


def test_unbacked_check_is_assumed_at_capture_and_checked_at_run_time():
    ep = tpe.export(picks, *_args(8, 3), dynamic_shapes=SPEC)
    assert any(n.target == "tpe.check_size" for n in ep.graph.nodes)
    _assert_program_checks(ep.module(), "module()")
    # eager raises alike
    with pytest.raises(tpe.ConstraintsExceededError, match=f"{HERE}:{_line_of('# unbacked-check')}"):
        picks(*_args(9, 1))


def test_unbacked_check_survives_save_load_and_decompositions(tmp_path):
    ep = tpe.export(picks, *_args(8, 3), dynamic_shapes=SPEC)
    tpe.save(ep, tmp_path / "p.pt2")
    _assert_program_checks(tpe.load(tmp_path / "p.pt2").module(), "load")
    _assert_program_checks(ep.run_decompositions().module(), "run_decompositions")


class Picker(nn.Module):
    def forward(self, x, g):
        return picks(x, g)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Picker()

    def forward(self, x, g):
        return self.inner(x, g) * 2.0


def test_unbacked_check_survives_unflatten():
    ep = tpe.export(Outer(), *_args(8, 3), dynamic_shapes=SPEC)
    view = tpe.unflatten(ep)
    args = _args(9, 4)
    np.testing.assert_allclose(view(*args), picks(*args) * 2.0, rtol=1e-5)
    with pytest.raises(tpe.ConstraintsExceededError, match="u0 >= 2"):
        view(*_args(9, 1))


def test_check_false_for_the_example_raises_at_capture():
    with pytest.raises(tpe.ConstraintsExceededError, match="false for the example.*u0 = 1"):
        tpe.export(picks, *_args(8, 1), dynamic_shapes=SPEC)


def test_check_on_array_values_is_refused_with_advice():
    def values(x):
        tpe.check(x > 0)
        return x

    with pytest.raises(TypeError, match="not an array's values"):
        tpe.export(values, np.ones(3))


# -- backed sizes -------------------------------------------------------------------------------------
def at_least_four(x):
    tpe.check(x.shape[0] >= 4)
    return x * 2.0


def test_backed_check_on_a_named_dim_is_a_violation_with_a_fix_that_refines():
    spec = {"x": {0: Dim("n")}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(at_least_four, np.ones((6, 2)), dynamic_shapes=spec)
    assert "n >= 4" in str(info.value) and "counterexample: n = 3" in str(info.value)
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(str(info.value), spec)
    assert fixed["x"][0].min == 4
    ep = tpe.export(at_least_four, np.ones((6, 2)), dynamic_shapes=fixed)
    np.testing.assert_allclose(ep.module()(np.ones((11, 2))), np.full((11, 2), 2.0))


def test_backed_check_narrows_an_auto_dim():
    ep = tpe.export(at_least_four, np.ones((6, 2)), dynamic_shapes={"x": {0: Dim.AUTO}})
    (rng,) = ep.range_constraints.values()
    assert (rng.lower, rng.upper) == (4, float("inf"))
    np.testing.assert_allclose(ep.module()(np.ones((5, 2))), np.full((5, 2), 2.0))
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(np.ones((3, 2)))


def test_backed_check_already_implied_adds_nothing():
    ep = tpe.export(at_least_four, np.ones((6, 2)), dynamic_shapes={"x": {0: Dim("n", min=5)}})
    assert not any(n.target in ("tpe.check_size", "tpe.assert_guard") for n in ep.graph.nodes)


# -- a message, as torch._check(cond, lambda: "...") takes one ------------------------------------
def _unbacked_with_message(x):
    u = x.item()
    tpe.check(u >= 2, lambda: "need at least two rows")
    return np.zeros(u)


def test_message_of_an_unbacked_check_is_in_the_runtime_error():
    ep = tpe.export(_unbacked_with_message, np.array(3))
    assert ep.module()(np.array(5)).shape == (5,)
    with pytest.raises(tpe.ConstraintsExceededError, match=r"tpe.check\(u0 >= 2, 'need at least two rows'\) failed"):
        ep.module()(np.array(1))
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    with pytest.raises(tpe.ConstraintsExceededError, match="need at least two rows"):
        tpe.load(buf).module()(np.array(0))


def test_message_as_a_str_for_a_false_example_and_eager():
    def model(x):
        tpe.check(x.shape[0] % 2 == 0, "rows come in pairs")
        return x * 2

    with pytest.raises(tpe.ConstraintsExceededError, match=r"rows come in pairs"):
        tpe.export(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})
    with pytest.raises(tpe.ConstraintsExceededError, match=r"tpe.check failed \(rows come in pairs\)"):
        model(np.ones(3))


def test_message_of_a_backed_check_is_in_the_violation():
    def model(x):
        tpe.check(x.shape[0] <= 8, lambda: "at most 8 rows")
        return x * 2

    with pytest.raises(tpe.ConstraintViolationError, match="at most 8 rows"):
        tpe.export(model, np.ones(3), dynamic_shapes={"x": {0: Dim("n")}})


def test_a_message_that_is_no_string_is_refused():
    with pytest.raises(TypeError, match="message must be a str"):
        tpe.check(True, 42)


def test_a_message_function_formatting_a_size_keeps_it_dynamic_and_is_shown():
    MSG = "rows must fit the table"

    def model(x):
        n = x.shape[0]
        tpe.check(n <= 10, lambda: f"too long: {n}")
        tpe.check(n >= 1, MSG)
        return x * 2

    ep = tpe.export(model, np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert [(v.lower, v.upper) for v in ep.range_constraints.values()] == [(1, 10)]
    np.testing.assert_array_equal(ep.module()(np.ones(7)), np.full(7, 2.0))

    def model2(x):
        tpe.check(x.shape[0] <= 10, MSG)
        return x * 2

    with pytest.raises(tpe.ConstraintViolationError, match=MSG):
        tpe.export(model2, np.ones(4), dynamic_shapes={"x": {0: Dim("n")}})
