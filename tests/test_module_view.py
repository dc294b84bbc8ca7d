"""ExportedProgram.module(): a module reading its state as attributes, owning copies, binding calls as eager."""
import re

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.graph.codegen import GraphModule
from tensorplay_export.program.exported import ExportedModule, StateModule

TABLE = np.linspace(0.0, 1.0, 6, dtype=np.float32)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.register_buffer("steps", np.zeros(1, np.float32))
        self.register_buffer("offset", np.full(6, 0.5, np.float32), persistent=False)

    def forward(self, x):
        self.steps = self.steps + 1
        return self.fc(x) + self.offset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Block()
        self.layers = nn.ModuleList([nn.Linear(6, 6), nn.Linear(6, 3)])

    def forward(self, x):
        h = self.block(x) + TABLE
        for layer in self.layers:
            h = layer(h)
        return h


def _export(model=None, n=4):
    model = model or Net()
    x = np.random.default_rng(0).standard_normal((n, 6)).astype(np.float32)
    return model, tpe.export(model, x, dynamic_shapes={"x": {0: tpe.Dim("n", max=64)}})


def _x(n, seed=1):
    return np.random.default_rng(seed).standard_normal((n, 6)).astype(np.float32)


# -- item 1: module() is a module over attributes ----------------------------------

def test_module_reads_state_as_attributes():
    model, ep = _export()
    m = ep.module()
    assert isinstance(m, ExportedModule) and isinstance(m, GraphModule)
    assert isinstance(m.block, StateModule) and isinstance(m.block.fc, StateModule)
    np.testing.assert_array_equal(m.block.fc.weight, model.block.fc.weight)
    np.testing.assert_array_equal(getattr(m.layers, "1").bias, model.layers[1].bias)
    np.testing.assert_array_equal(m.block.offset, model.block.offset)
    code = m.code
    header = code.splitlines()[0]
    assert header == "def forward(self, x):"           # the user arguments only
    # one statement reads the state (an attrgetter global), each name beside its attribute
    assert code.count(") = read_attrs(self)\n") == 1
    assert "        p_block_fc_weight,  # self.block.fc.weight\n" in code
    assert "        p_layers_0_weight,  # getattr(self.layers, '0').weight\n" in code
    assert [n.op for n in m.graph.nodes].count("get_attr") == len(ep.graph_signature.input_specs) - 1
    assert ep.code.splitlines()[0].startswith("def forward(self, p_block_fc_weight")  # the program stays functional
    for n in (1, 4, 37):
        np.testing.assert_allclose(m(_x(n)), Net.forward(model, _x(n)), rtol=1e-5, atol=1e-6)


def test_assigned_attribute_is_what_the_module_runs():
    model, ep = _export()
    m = ep.module()
    x = _x(5)
    before = m(x)
    m.block.fc.weight = np.zeros((6, 6), np.float32)   # a new array assigned through the module
    after = m(x)
    model.block.fc.weight = nn.Parameter(np.zeros((6, 6), np.float32))
    np.testing.assert_allclose(after, model(x), rtol=1e-5, atol=1e-6)
    assert not np.allclose(before, after)
    assert not np.any(ep.state_dict["block.fc.weight"] == 0)  # the program keeps its values


def test_view_graph_is_its_own_copy_made_when_read():
    """module()'s forward is generated from the program's graph; its own graph (get_attr nodes)
    is a copy made on first read, and recompiling from it gives the same source."""
    model, ep = _export()
    m = ep.module()
    code = m.code
    graph = m.graph
    assert graph is not ep.graph and m.graph is graph
    assert {n.name for n in graph.nodes} == {n.name for n in ep.graph.nodes}
    state = {s.arg.name: s.target for s in ep.graph_signature.input_specs if s.target}
    reads = {n.name: n.target for n in graph.nodes if n.op == "get_attr"}
    assert reads == state                                # every state placeholder, as its path
    assert all(n.op == "placeholder" for n in ep.graph.nodes if n.name in state)  # the program's stay
    graph.output_node.prev.meta["note"] = "the view's own"   # nodes and meta are the view's
    assert "note" not in ep.graph.output_node.prev.meta
    m.recompile()
    assert m.code == code
    x = _x(6)
    np.testing.assert_allclose(m(x), Net.forward(model, x), rtol=1e-5, atol=1e-6)
    other = ExportedModule(ep)                           # another view shares the compiled forward
    assert other.code == code and other.graph is not graph


def test_state_named_like_the_module_api_is_kept_apart():
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.code = nn.Parameter(np.full(3, 2.0, np.float32))

        def forward(self, x):
            return x * self.code

    x = np.ones((2, 3), np.float32)
    ep = tpe.export(Odd(), x)
    m = ep.module()
    assert isinstance(m.code, str) and "self._shadowed.code" in m.code
    np.testing.assert_array_equal(m(x), np.full((2, 3), 2.0, np.float32))
    assert dict(m.named_parameters())["code"][0] == 2.0


# -- item 2: no aliasing -------------------------------------------------------------

def test_writing_the_model_after_export_changes_nothing():
    model, ep = _export()
    xs = [_x(n, seed=n) for n in (2, 4, 9)]
    want = [ep.module()(x) for x in xs]
    ep.invalidate_unlifted()
    kept = {k: np.array(v) for k, v in ep.state_dict.items()}
    expected_eager = [model(x) for x in xs]
    for name, value in [*model.named_parameters(), *model.named_buffers()]:
        value[...] = 7   # every parameter and buffer, in place
    assert all(np.all(v == 7) for _, v in [*model.named_parameters(), *model.named_buffers()])
    ep.invalidate_unlifted()
    for x, w, e in zip(xs, want, expected_eager):
        np.testing.assert_array_equal(ep.module()(x), w)
        np.testing.assert_allclose(w, e, rtol=1e-5, atol=1e-6)
    for name, value in ep.state_dict.items():
        np.testing.assert_array_equal(value, kept[name])
        assert not value.flags.writeable
    np.testing.assert_array_equal(ep.constants["block.offset"], np.full(6, 0.5, np.float32))


def test_writing_a_lifted_global_after_export_changes_nothing():
    model, ep = _export()
    x = _x(6)
    want = ep.module()(x)
    saved = TABLE.copy()
    try:
        TABLE[...] = 100.0   # a module global the forward reads: a lifted constant
        assert not np.allclose(model(x), want)
        np.testing.assert_array_equal(ep.module()(x), want)
    finally:
        TABLE[...] = saved


def test_program_arrays_are_read_only():
    _, ep = _export()
    with pytest.raises(ValueError, match="read-only"):
        ep.state_dict["block.fc.weight"][0, 0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        ep.module().block.fc.weight[0, 0] = 1.0


def test_mmap_loaded_state_is_not_copied(tmp_path):
    _, ep = _export()
    path = tmp_path / "net.pt2"
    tpe.package_pt2(path, exported_programs={"net": ep})
    loaded = tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["net"]
    weight = loaded.state_dict["block.fc.weight"]
    assert isinstance(weight, np.memmap) and not weight.flags.writeable   # the file's pages, mapped read-only
    assert loaded.module().block.fc.weight is weight                      # kept, not copied
    x = _x(7)
    np.testing.assert_array_equal(loaded.module()(x), ep.module()(x))


# -- item 3: caching and state ----------------------------------------------------------

def test_module_cache_and_state_rule(tmp_path):
    model, ep = _export()
    m = ep.module()
    assert ep.module() is m                     # cached
    x = _x(3)
    m(x)
    m(x)
    assert m.block.steps[0] == 2                 # buffer mutations stay in that module
    assert dict(m.named_buffers())["block.steps"][0] == 2 and m.state_dict()["block.steps"][0] == 2
    assert ep.state_dict["block.steps"][0] == 0  # the program keeps its own values
    path = tmp_path / "a.pt2"
    tpe.save(ep, path)
    assert tpe.load(path).state_dict["block.steps"][0] == 0   # and so does save
    ep.invalidate_unlifted()                     # drops the module and its state changes
    fresh = ep.module()
    assert fresh is not m and fresh.block.steps[0] == 0
    assert m.block.steps[0] == 2                 # the old module keeps its own


# -- item 4: calls with defaults and arity ------------------------------------------------

def scaled(x, n=3):
    return x * n


def test_default_passed_positionally_or_by_keyword():
    x = np.ones((4, 2), np.float32)
    ep = tpe.export(scaled, x)
    m = ep.module()
    for call in (lambda: m(x), lambda: m(x, 3), lambda: m(x, n=3), lambda: m(x=x, n=3)):
        np.testing.assert_array_equal(call(), x * 3)


def test_extra_and_unknown_arguments_raise_type_error_like_eager():
    x = np.ones((4, 2), np.float32)
    m = tpe.export(scaled, x).module()
    with pytest.raises(TypeError) as eager:
        scaled(x, 3, "junk")
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments but 3 were given") as got:
        m(x, 3, "junk")
    assert str(eager.value).endswith("takes from 1 to 2 positional arguments but 3 were given")
    assert str(got.value) == str(eager.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'k'"):
        m(x, k=1)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        m(x, x=x)


def test_other_value_of_a_folded_default_is_a_contract_error():
    x = np.ones((4, 2), np.float32)
    m = tpe.export(scaled, x).module()
    with pytest.raises(ConstraintsExceededError, match=re.escape("argument n = 4, but the program was exported "
                                                                 "with n = 3 (its default)")):
        m(x, 4)
    with pytest.raises(ConstraintsExceededError, match=re.escape("argument n = 3.0")):
        m(x, n=3.0)  # equal but another type: not the exported value


def test_passed_constant_checked_and_omitted_only_when_default():
    x = np.ones((5, 2), np.float32)
    m = tpe.export(scaled, x, 3).module()       # passed explicitly, equal to the default
    np.testing.assert_array_equal(m(x), x * 3)  # omitted: the exported value is the default
    np.testing.assert_array_equal(m(x, 3), x * 3)
    with pytest.raises(ConstraintsExceededError, match=re.escape("input n = 5, but the program was exported "
                                                                 "with the constant 3")):
        m(x, 5)
    m2 = tpe.export(scaled, x, 2).module()      # a non-default value: it must be passed
    np.testing.assert_array_equal(m2(x, 2), x * 2)
    with pytest.raises(TypeError, match="was exported with argument 'n' given"):
        m2(x)


def test_binding_survives_save_and_load(tmp_path):
    x = np.ones((3, 2), np.float32)
    path = tmp_path / "f.pt2"
    tpe.save(tpe.export(scaled, x), path)
    m = tpe.load(path).module()
    np.testing.assert_array_equal(m(x, n=3), x * 3)
    with pytest.raises(TypeError, match="takes from 1 to 2 positional arguments but 3 were given"):
        m(x, 3, 4)
    with pytest.raises(ConstraintsExceededError, match="argument n = 4"):
        m(x, 4)


def test_var_positional_and_keyword_items_are_fixed_by_the_export_call():
    def f(x, *rest, **opts):
        return x + sum(rest) + opts.get("bias", 0)

    x = np.ones((2, 2), np.float32)
    m = tpe.export(f, x, 1, bias=2).module()
    np.testing.assert_array_equal(m(x, 1, bias=2), f(x, 1, bias=2))
    with pytest.raises(TypeError, match=r"exported with 1 extra positional argument\(s\) in \*rest, got 2"):
        m(x, 1, 1, bias=2)
    with pytest.raises(TypeError, match=r"keyword arguments \['bias'\] in \*\*opts, got \['bias', 'c'\]"):
        m(x, 1, bias=2, c=0)


def test_module_view_has_the_exported_callables_signature():
    import inspect

    def f(x, y, *, scale=2.0):
        return x * scale + y

    dx = tpe.Dim("dx", max=16)
    ep = tpe.export(f, np.ones(3), np.ones(3), dynamic_shapes={"x": {0: dx}, "y": {0: dx}, "scale": None})
    m = ep.module()
    assert str(inspect.signature(m)) == "(x, y, *, scale=2.0)" == str(inspect.signature(m.forward))
    again = tpe.export(m, np.ones(3), np.ones(3), dynamic_shapes={"x": {0: dx}, "y": {0: dx}, "scale": None})
    np.testing.assert_array_equal(again.module()(np.ones(5), np.arange(5.0)), f(np.ones(5), np.arange(5.0)))


def test_calling_the_program_itself_says_to_call_its_module():
    ep = tpe.export(lambda x: x * 2, np.ones(3))
    with pytest.raises(RuntimeError, match=r"Unable to call ExportedProgram directly.*module\(\)"):
        ep(np.ones(3))
    np.testing.assert_array_equal(ep.module()(np.ones(3)), np.full(3, 2.0))
