"""unflatten: module views of an exported program."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, export, nn
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.nn import functional as F
from tensorplay_export.program.unflatten import FlatArgsAdapter, InterpreterModule, UnflattenedModule, unflatten


class Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q = nn.Linear(4, 4)

    def forward(self, x):
        return F.softmax(self.q(x), dim=-1)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attn()
        self.norm = nn.LayerNorm(4)

    def forward(self, x):
        return self.norm(x + self.attn(x))


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer(), Layer()])
        self.register_buffer("offset", np.linspace(0.0, 1.0, 4))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x + self.offset


class Top(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = self.encoder(x)
        return self.head(h) + self.head(h * 2.0)  # head is called twice


SEQ = {"x": {0: Dim("n", max=32)}}


@pytest.fixture(scope="module")
def model():
    np.random.seed(0)
    m = Top()
    for _name, p in m.named_parameters():
        p[...] = np.random.default_rng(len(_name)).standard_normal(p.shape)
    return m


@pytest.fixture(scope="module")
def view(model):
    return unflatten(export(model, np.ones((3, 4)), dynamic_shapes=SEQ))


@pytest.mark.parametrize("n", [1, 2, 7])
def test_root_call_matches_model(model, view, n):
    x = np.random.default_rng(n).standard_normal((n, 4))
    np.testing.assert_allclose(view(x), model(x), rtol=1e-12)


def test_root_call_checks_the_contract(view):
    with pytest.raises(ConstraintsExceededError):
        view(np.ones((33, 4)))


@pytest.mark.parametrize("n", [1, 5])
def test_submodule_calls_match_the_source_modules(model, view, n):
    x = np.random.default_rng(10 + n).standard_normal((n, 4))
    np.testing.assert_allclose(view.encoder.layers[0].attn(x), model.encoder.layers[0].attn(x), rtol=1e-12)
    np.testing.assert_allclose(view.encoder.layers[1](x), model.encoder.layers[1](x), rtol=1e-12)
    np.testing.assert_allclose(view.encoder(x), model.encoder(x), rtol=1e-12)
    np.testing.assert_allclose(view.encoder.layers[0].attn.q(x), model.encoder.layers[0].attn.q(x), rtol=1e-12)


def test_module_called_twice(model, view):
    assert view.head.num_calls == 2
    assert view.encoder.layers[0].num_calls == 1
    h = np.random.default_rng(3).standard_normal((6, 4))
    np.testing.assert_allclose(view.head(h), model.head(h), rtol=1e-12)


def test_attributes_mirror_the_model(model, view):
    assert isinstance(view, UnflattenedModule) and isinstance(view.encoder, InterpreterModule)
    assert len(view.encoder.layers) == 2 and [m.fqn for m in view.encoder.layers] == \
        ["encoder.layers.0", "encoder.layers.1"]
    assert view.encoder.layers[-1] is view.encoder.layers[1] is view.encoder.layers["1"]
    np.testing.assert_array_equal(view.encoder.layers[0].attn.q.weight, model.encoder.layers[0].attn.q.weight)
    np.testing.assert_array_equal(view.encoder.offset, model.encoder.offset)
    assert dict(view.named_parameters()).keys() == dict(model.named_parameters()).keys()
    assert set(view.state_dict()) == set(model.state_dict())
    assert [fqn for fqn, _ in view.named_modules()] == [fqn for fqn, _ in model.named_modules()]
    with pytest.raises(AttributeError):
        view.encoder.nothing_here
    with pytest.raises(AttributeError):
        view.encoder.layers[0].attn.q.weight2 = 1
    assert "encoder" in repr(view)


def test_wrong_argument_count_is_explained(view):
    with pytest.raises(TypeError, match="takes 1 positional"):
        view.encoder.layers[0].attn(np.ones((2, 4)), np.ones((2, 4)))


def test_preserved_signature_is_used(model):
    ep = export(model, np.ones((3, 4)), dynamic_shapes=SEQ,
                preserve_module_call_signature=("encoder.layers.0.attn",))
    u = unflatten(ep)
    x = np.random.default_rng(4).standard_normal((4, 4))
    np.testing.assert_allclose(u.encoder.layers[0].attn(x), model.encoder.layers[0].attn(x), rtol=1e-12)
    with pytest.raises(TypeError, match="structured as"):
        u.encoder.layers[0].attn([x])


def test_plain_function_gives_flat_view():
    def f(x, y):
        return np.tanh(x) + y

    u = unflatten(export(f, np.ones((2, 3)), np.ones((2, 3))))
    assert len(u) == 0 and list(u.named_modules()) == [("", u)] and repr(u) == "UnflattenedModule(flat)"
    x = np.random.default_rng(0).standard_normal((2, 3))
    np.testing.assert_allclose(u(x, x), np.tanh(x) + x)


class SwapKwargs(FlatArgsAdapter):
    """Callers pass (y, x) positionally; the program takes (x, y)."""

    def adapt(self, target_spec, input_spec, input_args):
        assert input_spec != target_spec
        return list(reversed(input_args))


def test_flat_args_adapter():
    def f(x, *, y):
        return x - y

    ep = export(f, np.ones(3), y=np.zeros(3))
    u = unflatten(ep, flat_args_adapter=SwapKwargs())
    a, b = np.arange(3.0), np.full(3, 10.0)
    np.testing.assert_allclose(u(b, a), a - b)   # adapted: (y, x) -> x=a, y=b
    np.testing.assert_allclose(u(a, y=b), a - b)  # already the exported layout: no adaptation
    with pytest.raises(TypeError):
        FlatArgsAdapter()  # abstract
    with pytest.raises(TypeError, match="FlatArgsAdapter"):
        unflatten(ep, flat_args_adapter=lambda *a: a)


class DropExtra(FlatArgsAdapter):
    def adapt(self, target_spec, input_spec, input_args):
        return input_args[: target_spec.num_leaves]


def test_adapter_dropping_extra_arguments():
    ep = export(lambda x: x * 2.0, np.ones(2))
    u = unflatten(ep, flat_args_adapter=DropExtra())
    np.testing.assert_allclose(u(np.ones(2), np.ones(5)), np.full(2, 2.0))


def test_preserve_ops_are_validated():
    ep = export(lambda x: F.softmax(x), np.ones((2, 2)))
    assert unflatten(ep, preserve_ops=(F.softmax, "var")).preserve_ops == ("tpe.nn.softmax", "numpy.var")
    with pytest.raises(KeyError):
        unflatten(ep, preserve_ops=("not_an_op",))
    with pytest.raises(TypeError):
        unflatten(object())


def test_unflatten_after_decompositions(model):
    ep = export(model, np.ones((3, 4)), dynamic_shapes=SEQ).run_decompositions()
    u = unflatten(ep)
    x = np.random.default_rng(8).standard_normal((5, 4))
    np.testing.assert_allclose(u.encoder.layers[1].attn(x), model.encoder.layers[1].attn(x), rtol=1e-12)
    np.testing.assert_allclose(u(x), model(x), rtol=1e-12)


class Splitter(nn.Module):
    def forward(self, x):
        a, b = np.split(x, 2, axis=-1)
        return np.tanh(a) * b


class WithSplit(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = Splitter()

    def forward(self, x):
        return self.split(x * 3.0) + 1.0


def test_multi_output_ops_inside_a_submodule():
    m = WithSplit()
    u = unflatten(export(m, np.ones((3, 4)), dynamic_shapes=SEQ))
    x = np.random.default_rng(6).standard_normal((5, 4))
    np.testing.assert_allclose(u.split(x), m.split(x))
    np.testing.assert_allclose(u(x), m(x))


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        return self.block(self.block(x))  # two calls with nothing in between


def test_back_to_back_calls_are_two_calls():
    # capture records exact call boundaries (meta["module_stack"]), so m(m(x)) is two calls
    m = Twice()
    ep = export(m, np.ones((3, 4)), dynamic_shapes=SEQ)
    linears = [n for n in ep.graph.nodes if n.target == "tpe.nn.linear"]
    assert [n.meta["module_stack"] for n in linears] == [(("", 0), ("block", 1)), (("", 0), ("block", 2))]
    u = unflatten(ep)
    assert u.block.num_calls == 2
    x = np.random.default_rng(9).standard_normal((2, 4))
    np.testing.assert_allclose(u.block(x), m.block(x))
    np.testing.assert_allclose(u(x), m(x))


def test_without_module_stack_back_to_back_calls_look_like_one_run():
    # hand-built or older programs carry only module_path: the run heuristic is the fallback
    ep = export(Twice(), np.ones((3, 4)), dynamic_shapes=SEQ)
    for node in ep.graph.nodes:
        node.meta.pop("module_stack", None)
    assert unflatten(ep).block.num_calls == 1


def test_every_call_of_a_preserved_module_has_a_signature(tmp_path):
    from tensorplay_export import load, save

    m = Twice()
    ep = export(m, np.ones((3, 4)), dynamic_shapes=SEQ, preserve_module_call_signature=("block",))
    entries = {e.fqn: e.signature for e in ep.module_call_graph}
    assert list(entries) == ["", "block", "block@1"]
    first, second = entries["block"], entries["block@1"]
    assert first.outputs[0].name == second.inputs[0].name  # the second call reads the first's output
    x = np.random.default_rng(4).standard_normal((5, 4))
    for prog in (ep, load(save(ep, tmp_path / "twice.pt2") or tmp_path / "twice.pt2")):
        u = unflatten(prog)
        assert [c for c, _ in u.named_modules()] == ["", "block"] and u.block.num_calls == 2
        np.testing.assert_allclose(u.block(x), m.block(x))


def test_view_of_a_loaded_program(model, tmp_path):
    from tensorplay_export import load, save

    save(export(model, np.ones((3, 4)), dynamic_shapes=SEQ), tmp_path / "m.pt2")
    u = unflatten(load(tmp_path / "m.pt2"))
    x = np.random.default_rng(12).standard_normal((4, 4))
    np.testing.assert_allclose(u.encoder.layers[1].attn(x), model.encoder.layers[1].attn(x), rtol=1e-12)
    assert u.head.num_calls == 2


def test_gpt_example_views_and_decompositions():
    gpt = pytest.importorskip("examples.gpt")
    m = gpt.build_gpt(n_layer=2, d_model=32, n_head=4, vocab=64)
    ids = np.random.default_rng(0).integers(0, 64, size=(2, 9))
    ep = gpt.export_gpt(m, ids)
    dec = ep.run_decompositions()
    assert not any(n.target.startswith("tpe.nn.") for n in dec.graph.nodes)
    for shape in [(1, 1), (3, 17)]:
        x = np.random.default_rng(shape[1]).integers(0, 64, size=shape)
        np.testing.assert_allclose(dec.module()(x), ep.module()(x), rtol=1e-12)
    for prog in (ep, dec):
        u = unflatten(prog)
        h = np.random.default_rng(2).standard_normal((2, 5, 32))
        np.testing.assert_allclose(u.h[0](h), m.h[0](h), rtol=1e-12)
        np.testing.assert_allclose(u.h[1].attn(h), m.h[1].attn(h), rtol=1e-12)
        np.testing.assert_allclose(u.ln_f(h), m.ln_f(h), rtol=1e-12)


def test_a_module_view_refuses_a_constant_argument_other_than_the_exported_one():
    from tensorplay_export import nn as tnn

    class Blk(tnn.Module):
        def __init__(self):
            super().__init__()
            self.fc = tnn.Linear(8, 8, rng=0)

        def forward(self, x, scale=1.0):
            return self.fc(x) * scale

    class Enc(tnn.Module):
        def __init__(self):
            super().__init__()
            self.layers = tnn.ModuleList([Blk()])

        def forward(self, x):
            return self.layers[0](x, scale=2.0)

    m = Enc().eval()
    x = np.arange(24, dtype=np.float32).reshape(3, 8)
    ep = tpe.export(m, x, dynamic_shapes={"x": {0: tpe.Dim("b")}}, preserve_module_call_signature=("layers.0",))
    view = tpe.unflatten(ep).layers[0]
    for n in (1, 3, 5):
        y = np.arange(n * 8, dtype=np.float32).reshape(n, 8)
        np.testing.assert_array_equal(view(y, scale=2.0), m.layers[0](y, scale=2.0))
    for bad in (3.0, "garbage"):
        with pytest.raises(tpe.ConstraintsExceededError, match=r"argument scale = .*exported with the constant 2.0"):
            view(x, scale=bad)
