"""Sizes as outputs (issue 16 item 1): computed at run time from the call's sizes, never pinned."""
import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.face.contract import Contract, contract_of


def sizes(x, y):
    n, m = x.shape[0], y.shape[1]
    return {"y": x @ y, "n": n, "affine": n * 2 + 1, "area": n * m, "half": n // 2, "rest": n % 3,
            "ratio": n / m, "big": n > m}


SPEC = {"x": {0: Dim("n", max=64)}, "y": {1: Dim("m", max=64)}}


def _args(n, m):
    rng = np.random.default_rng(n * 100 + m)
    return rng.standard_normal((n, 3)), rng.standard_normal((3, m))


def _same(got, want):
    assert got.keys() == want.keys()
    np.testing.assert_allclose(got["y"], want["y"])
    for k in want:
        if k == "y":
            continue
        assert type(got[k]) is type(want[k]), (k, got[k], want[k])
        if isinstance(want[k], float):
            assert got[k] == pytest.approx(want[k], rel=1e-12)
        else:
            assert got[k] == want[k], k


SIZES = [(1, 1), (2, 7), (5, 3), (64, 64), (17, 2)]


@pytest.fixture(scope="module")
def ep():
    return tpe.export(sizes, *_args(6, 4), dynamic_shapes=SPEC)


def test_size_outputs_are_not_pinned_and_compute_eager_values(ep):
    names = [type(s.arg).__name__ for s in ep.graph_signature.output_specs]
    assert names == ["TensorArgument"] + ["SymIntArgument"] * 5 + ["SymFloatArgument", "SymBoolArgument"]
    run = ep.module()
    for n, m in SIZES:
        _same(run(*_args(n, m)), sizes(*_args(n, m)))


def test_size_outputs_survive_save_load_decompositions_and_unflatten(ep, tmp_path):
    tpe.save(ep, tmp_path / "s.pt2")
    loaded = tpe.load(tmp_path / "s.pt2")
    for run in (loaded.module(), ep.run_decompositions().module(), tpe.unflatten(ep),
                tpe.ExportedProgram.call_exported(loaded)):
        for n, m in SIZES:
            _same(run(*_args(n, m)), sizes(*_args(n, m)))


def test_contract_shows_size_outputs_with_their_expressions(ep):
    c = contract_of(ep)
    text = c.describe()
    assert "int = 2*n + 1" in text and "int = m*n" in text and "bool = n > m" in text, text
    again = Contract.from_json(c.to_json())
    assert again.describe() == text


def test_returned_size_of_a_data_dependent_selection():
    def model(x):
        picked = x[x > 0]
        return picked, picked.shape[0], picked.shape[0] * 2

    ep = tpe.export(model, np.array([1.0, -1.0, 2.0]), dynamic_shapes={"x": {0: Dim("n")}})
    run = ep.module()
    for x in (np.array([-1.0]), np.array([3.0, 1.0, -2.0, 5.0, 0.5])):
        got, want = run(x), model(x)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:] and type(got[1]) is int


def test_size_over_auto_dims_follows_their_replacement():
    def model(x, y):
        return x + y, y.shape[0] * 3

    ep = tpe.export(model, np.ones(4), np.ones(4), dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}})
    assert ep.module()(np.ones(9), np.ones(9))[1] == 27


class Inner(nn.Module):
    def forward(self, x):
        return x * 2.0, x.shape[0] + 1


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        y, k = self.inner(x)
        return y + 1.0, k * 3


def test_a_preserved_submodule_returns_its_size_through_unflatten(tmp_path):
    ep = tpe.export(Outer(), np.ones((6, 2)), dynamic_shapes={"x": {0: Dim("n")}},
                    preserve_module_call_signature=("inner",))
    tpe.save(ep, tmp_path / "o.pt2")
    for program in (ep, tpe.load(tmp_path / "o.pt2")):
        view = tpe.unflatten(program)
        y, k = view.inner(np.ones((3, 2)))
        assert (type(k), k) == (int, 4)
        np.testing.assert_allclose(y, np.full((3, 2), 2.0))
        assert view(np.ones((5, 2)))[1] == 18


def test_a_constant_size_stays_a_constant_output():
    def model(x):
        return x, x.shape[1]   # a static axis: a plain int

    ep = tpe.export(model, np.ones((3, 4)), dynamic_shapes={"x": {0: Dim("n")}})
    assert type(ep.graph_signature.output_specs[1].arg).__name__ == "ConstantArgument"
    assert ep.module()(np.ones((7, 4)))[1] == 4


def test_draft_export_keeps_size_outputs():
    report = tpe.draft_export(sizes, *_args(6, 4), dynamic_shapes=SPEC)
    run = report.exported_program.module() if hasattr(report, "exported_program") else report.program.module()
    _same(run(*_args(9, 2)), sizes(*_args(9, 2)))


def test_contract_comparison_sees_a_changed_size_output():
    from tensorplay_export.face.contract import outputs_by_sites

    spec = {"x": {0: Dim("n")}}
    one = contract_of(tpe.export(lambda x: (x, x.shape[0] + 1), np.ones((3, 2)), dynamic_shapes=spec))
    two = contract_of(tpe.export(lambda x: (x, x.shape[0] + 2), np.ones((3, 2)), dynamic_shapes=spec))
    renamed = contract_of(tpe.export(lambda x: (x, x.shape[0] + 1), np.ones((3, 2)),
                                     dynamic_shapes={"x": {0: Dim("rows")}}))
    assert outputs_by_sites(one)[1] == (["x.shape[0] + 1"], "int")
    assert outputs_by_sites(one) != outputs_by_sites(two)
    assert outputs_by_sites(one) == outputs_by_sites(renamed)
