"""Re-exporting the module of a program with state: ``export(ep.module(), ...)`` lifts the same
parameters and buffers and returns the same buffer and parameter updates (program/retrace.py's
capture view), the safety net runs on a fresh copy of the module's state, and the module
exported is left as it was."""
from __future__ import annotations

import numpy as np
import pytest

from _shared import roundtrip

import tensorplay_export as tpe
from tensorplay_export import Dim, nn

RNG = np.random.default_rng(11)


def arr(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


class AddInPlace(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", np.zeros(3, np.float32))

    def forward(self, x):
        self.acc += x.sum(0)
        return x + self.acc


class WriteAll(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("acc", np.zeros(3, np.float32))

    def forward(self, x):
        self.acc[...] = self.acc + 1
        return x + self.acc


class Mixed(nn.Module):
    """A parameter, a persistent and a non-persistent buffer, a submodule with a buffer."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.norm = nn.BatchNorm1d(3)
        self.register_buffer("steps", np.zeros((), np.int64), persistent=False)
        self.register_buffer("last", np.zeros((1, 3), np.float32))

    def forward(self, x):
        self.steps += 1
        self.last = x[-1:] * 1.0
        return self.norm(self.fc(x)) + self.last


class ParamUpdate(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones(3, np.float32))

    def forward(self, x):
        np.multiply(self.w, 0.5, out=self.w)
        return x * self.w


SPEC = {"x": {0: Dim("b", min=2)}}  # BatchNorm in training needs two values per channel
MODELS = {"add_in_place": AddInPlace, "write_all": WriteAll, "mixed": Mixed, "param_update": ParamUpdate}


def _signature(ep):
    ins = [(s.kind, s.target, s.persistent) for s in ep.graph_signature.input_specs]
    outs = [(s.kind, s.target) for s in ep.graph_signature.output_specs]
    return ins, outs


def _state(module):
    return {k: np.array(v) for k, v in [*module.named_parameters(), *module.named_buffers()]}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_reexport_is_the_same_program(name):
    model = MODELS[name]()
    spec = SPEC
    ep = tpe.export(model, arr(4, 3), dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), arr(4, 3), dynamic_shapes=spec)
    assert _signature(ep2) == _signature(ep)
    assert ep2.range_constraints == ep.range_constraints
    # run side by side over a few calls at sizes other than the example: outputs and state agree
    m1, m2 = ep.module(), ep2.module()
    for b in (2, 7, 3):
        x = arr(b, 3)
        np.testing.assert_allclose(m2(x), m1(x), rtol=1e-5, atol=1e-6)
        s1, s2 = _state(m1), _state(m2)
        assert s1.keys() == s2.keys()
        for k in s1:
            np.testing.assert_allclose(s2[k], s1[k], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_reexport_matches_the_eager_model_after_save_and_load(name):
    spec = SPEC
    eager = MODELS[name]()
    ep = tpe.export(eager, arr(4, 3), dynamic_shapes=spec)  # export leaves the model as it was
    loaded = roundtrip(tpe.export(ep.module(), arr(4, 3), dynamic_shapes=spec))
    program = loaded.module()
    for b in (3, 6, 2):
        x = arr(b, 3)
        np.testing.assert_allclose(program(x), eager(x), rtol=1e-5, atol=1e-6)
    for k, v in _state(eager).items():
        np.testing.assert_allclose(_state(program)[k], v, rtol=1e-5, atol=1e-6)


def test_export_leaves_the_modules_state_as_it_was():
    ep = tpe.export(Mixed(), arr(4, 3), dynamic_shapes=SPEC)
    m = ep.module()
    m(arr(5, 3))  # advance the module's state: the re-export starts from it
    before = _state(m)
    ep2 = tpe.export(m, arr(4, 3), dynamic_shapes=SPEC)
    after = dict([*m.named_parameters(), *m.named_buffers()])
    for k, v in before.items():
        # the same values, as plain numpy (no traced array left behind)
        assert type(after[k]) is np.ndarray or isinstance(after[k], np.generic), k
        assert np.array_equal(after[k], v), k
    # the new program starts from the advanced state
    assert int(ep2.constants["steps"]) == 1
    np.testing.assert_array_equal(ep2.state_dict["last"], before["last"])


def test_the_eager_check_runs_on_a_fresh_copy_of_the_state():
    ep = tpe.export(WriteAll(), arr(4, 3), dynamic_shapes=SPEC)
    m = ep.module()
    for _ in range(3):
        m(arr(2, 3))
    acc = np.array(m.acc)
    ep2 = tpe.export(m, arr(4, 3), dynamic_shapes=SPEC)  # an advanced copy would differ by 1
    np.testing.assert_array_equal(m.acc, acc)
    x = arr(3, 3)
    np.testing.assert_allclose(ep2.module()(x), x + acc + 1, rtol=1e-6)


def test_a_stateful_exported_module_inside_another_model_is_refused():
    inner = tpe.export(AddInPlace(), arr(4, 3), dynamic_shapes=SPEC).module()
    with pytest.raises(tpe.CaptureError, match="updates its state"):
        tpe.export(lambda x: inner(x) * 2, arr(4, 3), dynamic_shapes=SPEC)
    assert np.array_equal(inner.acc, np.zeros(3, np.float32))  # nothing leaked into it


def test_a_stateless_runner_inside_another_model_exports():
    ep = tpe.export(AddInPlace(), arr(4, 3), dynamic_shapes=SPEC)
    run = tpe.ExportedProgram.call_exported(ep)

    def outer(x):
        return run(x) * 2

    ep2 = tpe.export(outer, arr(4, 3), dynamic_shapes=SPEC)
    for b in (2, 5, 9):
        x = arr(b, 3)
        np.testing.assert_allclose(ep2.module()(x), outer(x), rtol=1e-5, atol=1e-6)


def _zero_head(x):
    x[:2] = 0.0
    return x.sum(0)


def test_a_program_writing_its_input_reexports_with_the_same_input_mutation():
    spec = ({0: Dim("n", min=2)},)
    ep = tpe.export(_zero_head, arr(4, 3), dynamic_shapes=spec)
    ep2 = tpe.export(ep.module(), arr(4, 3), dynamic_shapes=spec)
    assert _signature(ep2) == _signature(ep)
    for n in (2, 5, 9):
        a = arr(n, 3)
        b, c = a.copy(), a.copy()
        np.testing.assert_allclose(ep2.module()(b), _zero_head(c), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(b, c)  # the caller's array written as eager writes it


def test_an_inner_program_writing_an_intermediate_of_the_outer_model():
    inner = tpe.export(_zero_head, arr(4, 3), dynamic_shapes=({0: Dim("n", min=2)},)).module()

    def outer(x):
        y = x * 1.0
        s = inner(y)
        return s + y.sum(0)  # sees the write into y

    ep = tpe.export(outer, arr(4, 3), dynamic_shapes=({0: Dim("n", min=2)},))
    for n in (2, 6, 11):
        a = arr(n, 3)
        np.testing.assert_allclose(ep.module()(a), outer(a.copy()), rtol=1e-5, atol=1e-6)


# --- an exported module held as a submodule of another model, exported again -------------------
# torch's ep.module() is an nn.Module: held as self.inner its state is inner.linear.weight...


class Holder(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(self.inner(x))


def _targets(ep, kind):
    return [s.target for s in ep.graph_signature.input_specs if s.kind.name == kind]


@pytest.mark.parametrize("loaded", [False, True])
def test_an_exported_submodule_keeps_its_state_under_the_attribute_that_holds_it(loaded):
    inner_ep = tpe.export(Mixed().eval(), arr(4, 3), dynamic_shapes=SPEC)
    inner = (roundtrip(inner_ep) if loaded else inner_ep).module()
    ep = tpe.export(Holder(inner), arr(4, 3), dynamic_shapes=SPEC)
    assert _targets(ep, "PARAMETER") == ["head.weight", "head.bias"] + [
        f"inner.{t}" for t in _targets(inner_ep, "PARAMETER")]
    assert _targets(ep, "BUFFER") == [f"inner.{t}" for t in _targets(inner_ep, "BUFFER")]
    assert set(ep.state_dict) == {"head.weight", "head.bias"} | {f"inner.{k}" for k in inner_ep.state_dict}
    assert not _targets(ep, "CONSTANT_TENSOR")  # never flattened into constants (c_fc_weight)
    # once more, one level deeper: the prefixes stack as torch's fqns do
    outer = Holder(ep.module())
    outer.head = nn.Linear(2, 2)
    ep3 = tpe.export(outer, arr(4, 3), dynamic_shapes=SPEC)
    assert "inner.inner.fc.weight" in ep3.state_dict and "inner.head.weight" in ep3.state_dict


def test_an_exported_submodule_updating_its_buffers_is_a_buffer_mutation_of_the_new_program():
    inner = tpe.export(Mixed().train(), arr(4, 3), dynamic_shapes=SPEC).module()
    model = Holder(inner)
    before = _state(inner)
    ep = tpe.export(model, arr(4, 3), dynamic_shapes=SPEC)
    updates = [s.target for s in ep.graph_signature.output_specs if s.kind.name == "BUFFER_MUTATION"]
    assert sorted(updates) == sorted(f"inner.{t}" for t in ("steps", "last", "norm.running_mean",
                                                             "norm.running_var", "norm.num_batches_tracked"))
    for k, v in _state(inner).items():  # neither the capture nor the net advanced the user's module
        assert np.array_equal(v, before[k]), k
    program = ep.module()
    for b in (2, 5, 3):  # the new program advances its own copy as the model advances the held module
        x = arr(b, 3)
        np.testing.assert_allclose(program(x), model(x), rtol=1e-5, atol=1e-6)
    mine = dict([*program.named_parameters(), *program.named_buffers()])
    for k, v in _state(inner).items():
        np.testing.assert_allclose(mine[f"inner.{k}"], v, rtol=1e-5, atol=1e-6)
