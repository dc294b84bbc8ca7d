"""export(): programs, signatures, state lifting, contracts, runtime checks, a 4-layer transformer."""
from dataclasses import dataclass

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.capture.entry import capture

RNG = np.random.default_rng(0)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("steps", np.zeros((), np.int64))
        self.register_buffer("mask", np.ones(4, np.float32), persistent=False)
        self.table = np.arange(40, dtype=np.float32).reshape(10, 4)

    def forward(self, x):
        self.steps = self.steps + 1
        return self.lin(x) * self.mask + self.table[: x.shape[0]]


def test_module_state_is_lifted_with_prefixed_names_ahead_of_inputs():
    m = Counter()
    ep = tpe.export(m, randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    specs = [(s.kind.name, s.arg.name, s.target) for s in ep.graph_signature.input_specs]
    assert specs == [("PARAMETER", "p_lin_weight", "lin.weight"), ("PARAMETER", "p_lin_bias", "lin.bias"),
                     ("BUFFER", "b_steps", "steps"), ("BUFFER", "b_mask", "mask"),
                     ("CONSTANT_TENSOR", "c_table", "table"), ("USER_INPUT", "x", None)]
    assert set(ep.state_dict) == {"lin.weight", "lin.bias", "steps"}
    assert "table" in ep.tensor_constants  # a constant attribute is named by its qualified name
    assert ep.opaque_ops == ()  # only draft programs run ops without shape rules
    # the module is left exactly as it was
    assert type(m._buffers["steps"]) is np.ndarray and m.steps == 0 and type(m.table) is np.ndarray


def test_buffer_assignment_is_a_buffer_mutation_written_back_by_module():
    for fn in (tpe.export, tpe.export_for_training):
        m = Counter()
        ep = fn(m, randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
        out_kinds = [(s.kind.name, s.target) for s in ep.graph_signature.output_specs]
        assert out_kinds == [("BUFFER_MUTATION", "steps"), ("USER_OUTPUT", None)]
        mod = ep.module()
        x = randn(5, 4)
        np.testing.assert_allclose(mod(x), m(x), rtol=1e-6)
        mod(x)
        assert dict(mod.named_buffers())["steps"] == 2 and m.steps == 1


class SplitTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        a, b = np.split(self.lin(x), 2, axis=-1)
        return self.lin(np.concatenate([b, a], axis=-1)) + 1.0


def test_module_stack_records_every_call_on_every_node(tmp_path):
    ep = tpe.export(SplitTwice(), randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    compute = [n for n in ep.graph.nodes if n.op == "call_function" and not n.target.startswith("tpe.assert")
               and n.target != "tpe.check_input"]
    assert all("module_stack" in n.meta for n in compute)
    linears = [n.meta["module_stack"] for n in compute if n.target == "tpe.nn.linear"]
    assert linears == [(("", 0), ("lin", 1)), (("", 0), ("lin", 2))]
    items = [n for n in compute if n.target == "tpe.item"]
    assert items and all(n.meta["module_path"] == "" and n.meta["module_stack"] == (("", 0),) for n in items)
    assert next(n for n in compute if n.target == "numpy.add").meta["module_stack"] == (("", 0),)
    loaded = tpe.load(tpe.save(ep, tmp_path / "m.pt2") or tmp_path / "m.pt2")
    before = {n.name: n.meta.get("module_stack") for n in ep.graph.nodes}
    after = {n.name: n.meta.get("module_stack") for n in loaded.graph.nodes}
    assert after == before


def test_plain_functions_have_empty_module_stacks():
    ep = tpe.export(lambda x: x * 2.0, randn(3, 4))
    mul = next(n for n in ep.graph.nodes if n.target == "numpy.multiply")
    assert mul.meta["module_stack"] == () and "module_path" not in mul.meta


def test_preserve_module_call_signature_records_submodule_calls():
    ep = tpe.export(Counter(), randn(3, 4), preserve_module_call_signature=("lin",))
    entries = {e.fqn: e for e in ep.module_call_graph}
    assert "" in entries and entries["lin"].signature is not None
    assert [a.name for a in entries["lin"].signature.inputs] == ["x"]
    nodes = [n for n in ep.graph.nodes if n.meta.get("module_path") == "lin"]
    assert nodes


@dataclass
class Pair:
    a: np.ndarray
    b: list


tpe.register_dataclass(Pair, serialized_type_name="tests.test_export.Pair")


def test_pytree_inputs_and_outputs_with_kwargs():
    def f(x, *, extras, k=2):
        return Pair(x * extras["s"], [x.sum(axis=1), None, 3]), {"y": x + k}
    b = Dim("b", max=32)
    ep = tpe.export(f, randn(3, 4), extras={"s": randn(3, 4)}, k=2,
                    dynamic_shapes={"x": {0: b}, "extras": {"s": {0: b}}, "k": None})
    x, s = randn(6, 4), randn(6, 4)
    got, want = ep.module()(x, extras={"s": s}, k=2), f(x, extras={"s": s}, k=2)
    assert isinstance(got[0], Pair) and got[0].b[1:] == [None, 3]
    np.testing.assert_allclose(got[0].a, want[0].a)
    np.testing.assert_allclose(got[1]["y"], want[1]["y"])
    assert [(c.sites, c.name) for c in ep.equality_constraints] == [((("x", 0), ("extras_s", 0)), "b")]


def test_example_outside_declared_range_fails_export():
    with pytest.raises(tpe.ConstraintsExceededError, match=r"x.shape\[0\] = 600 is outside n in \[1, 512\]"):
        tpe.export(lambda x: x, randn(600, 2), dynamic_shapes={"x": {0: Dim("n", max=512)}})
    with pytest.raises(tpe.ConstraintsExceededError, match="disagree"):
        b = Dim("b")
        tpe.export(lambda x, y: x, randn(3, 2), randn(4, 2), dynamic_shapes={"x": {0: b}, "y": {0: b}})


def test_range_constraints_and_any_dim_name():
    S, N, E, I = Dim("S", max=9), Dim("N"), Dim("E"), Dim("I", min=0)
    ep = tpe.export(lambda a: a.sum(axis=0), randn(2, 3, 4, 5), dynamic_shapes={"a": (S, N, E, I)})
    assert {s.name: str(v) for s, v in ep.range_constraints.items()} == {
        "S": "[1, 9]", "N": "[1, inf]", "E": "[1, inf]", "I": "[0, inf]"}
    assert all(s.is_integer for s in ep.range_constraints)


def test_derived_dims_bind_and_check_the_root():
    dx = Dim("dx", max=50)
    ep = tpe.export(lambda x, y: x + y[::2], randn(3, 2), randn(6, 2), dynamic_shapes={"x": {0: dx}, "y": {0: 2 * dx}})
    assert ep.module()(randn(5, 2), randn(10, 2)).shape == (5, 2)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(5, 2), randn(9, 2))
    ep = tpe.export(lambda x: x[1:] * 2, randn(7, 2), dynamic_shapes={"x": {0: 2 * dx + 1}})
    assert ep.module()(randn(9, 2)).shape == (8, 2)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(8, 2))


def test_auto_dims_resolve_to_relations_specializations_and_divisibility():
    ep = tpe.export(lambda x: x.reshape(4, 6), randn(4, 6), dynamic_shapes={"x": {0: Dim.AUTO}})
    assert ep.range_constraints == {}
    ep = tpe.export(lambda x, y: x @ y, randn(3, 4), randn(4, 5),
                    dynamic_shapes={"x": (Dim.AUTO, Dim.AUTO), "y": (Dim.AUTO, Dim.AUTO)})
    assert sorted(s.name for s in ep.range_constraints) == ["s0", "s2", "s3"]
    mod = ep.module()
    assert mod(randn(2, 7), randn(7, 3)).shape == (2, 3)
    with pytest.raises(tpe.ConstraintsExceededError, match=r"y.shape\[0\] = 5 must equal x.shape\[1\] = 4"):
        mod(randn(3, 4), randn(5, 5))
    with pytest.raises(tpe.ConstraintsExceededError, match="rank"):
        mod(randn(3), randn(4, 5))
    with pytest.raises(TypeError, match="dtype"):
        mod(randn(3, 4).astype(np.float64), randn(4, 5))


def test_dynamic_dim_that_gets_specialized_is_a_violation():
    with pytest.raises(tpe.ConstraintViolationError, match="Dim.DYNAMIC"):
        tpe.export(lambda x: x.reshape(4, 6), randn(4, 6), dynamic_shapes={"x": {0: Dim.DYNAMIC}})
    ep = tpe.export(lambda x: x * 2, randn(4, 6), dynamic_shapes={"x": {0: Dim.DYNAMIC}})
    assert ep.module()(randn(9, 6)).shape == (9, 6)


def test_violations_are_all_reported_at_once():
    def model(x, y):
        if x.shape[0] > 4:
            x = x + 1
        return x @ np.ones((16, 2)) + y
    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(model, randn(8, 16), randn(8, 2), dynamic_shapes={
            "x": {0: Dim("dx", max=64), 1: Dim("k", max=64)}, "y": {0: Dim("dy", max=64)}})
    kinds = {str(r.expr) for r in err.value.violations}
    assert kinds == {"dx > 4", "Eq(k, 16)", "Eq(dx, dy)"}


def test_data_dependent_guard_names_both_lines():
    def model(x):
        nz = np.nonzero(x > 0)[0]
        if nz.shape[0] > 3:
            return x * 2.0
        return x
    with pytest.raises(tpe.DataDependentError) as err:
        tpe.export(model, randn(10), dynamic_shapes={"x": {0: Dim("n", max=100)}})
    text = str(err.value)
    assert "data-dependent" in text and "u0" in text and "numpy.nonzero" in text
    assert "nz = np.nonzero(x > 0)[0]" in text and "if nz.shape[0] > 3:" in text


def test_draft_capture_keeps_going_and_returns_records():
    def model(x):
        nz = np.nonzero(x > 0)[0]
        return x * 2.0 if nz.shape[0] > 3 else x
    result = capture(model, (randn(10),), {}, {"x": {0: Dim("n", max=100)}}, mode="draft")
    assert result.env.data_dependent and result.graph.output_node is not None


def test_code_is_readable_python_with_checks_first():
    ep = tpe.export(lambda x: x[1:] + 1.0, randn(5, 3), dynamic_shapes={"x": {0: Dim("n", max=9)}})
    code = ep.code
    assert code.index("tpe_check_input") < code.index("tpe_getitem")
    assert "def forward(self, x):" in code


# -- a 4-layer transformer written over numpy --------------------------------------------------
D, H, LAYERS, VOCAB, CTX = 32, 4, 4, 50, 64
W = {f"{name}{i}": randn(*shape) * 0.1 for i in range(LAYERS)
     for name, shape in (("qkv", (D, 3 * D)), ("o", (D, D)), ("up", (D, 4 * D)), ("down", (4 * D, D)))}
EMB = randn(VOCAB, D)
POS = randn(CTX, D)


def layer_norm(h):
    mu = h.mean(axis=-1, keepdims=True)
    return (h - mu) / np.sqrt(h.var(axis=-1, keepdims=True) + 1e-5)


def attention(h, i):
    b, s, d = h.shape
    q, k, v = np.split(h @ W[f"qkv{i}"], 3, axis=-1)
    q, k, v = (t.reshape(b, s, H, d // H).transpose(0, 2, 1, 3) for t in (q, k, v))
    scores = q @ k.swapaxes(-1, -2) / np.sqrt(d // H)
    scores = np.where(np.tril(np.ones((s, s), dtype=bool)), scores, -np.inf)
    w = np.exp(scores - scores.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return (w @ v).transpose(0, 2, 1, 3).reshape(b, s, d) @ W[f"o{i}"]


def transformer(ids):
    h = EMB[ids] + POS[: ids.shape[1]]
    for i in range(LAYERS):
        h = h + attention(layer_norm(h), i)
        h = h + np.maximum(layer_norm(h) @ W[f"up{i}"], 0) @ W[f"down{i}"]
    return layer_norm(h) @ EMB.T


def test_four_layer_transformer_matches_eager_on_20_random_shapes():
    ids = RNG.integers(0, VOCAB, size=(2, 7))
    ep = tpe.export(transformer, ids, dynamic_shapes={"ids": {0: Dim("batch", max=8), 1: Dim("seq", max=CTX)}})
    assert {s.name: str(v) for s, v in ep.range_constraints.items()} == {"batch": "[1, 8]", "seq": "[1, 64]"}
    mod = ep.module()
    rng = np.random.default_rng(7)
    for _ in range(20):
        b, s = int(rng.integers(1, 9)), int(rng.integers(1, CTX + 1))
        x = rng.integers(0, VOCAB, size=(b, s))
        got, want = mod(x), transformer(x)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    with pytest.raises(tpe.ConstraintsExceededError):
        mod(rng.integers(0, VOCAB, size=(2, CTX + 1)))


@pytest.mark.parametrize("spec_of", [
    lambda b, x, y: {"x": {0: b}, "y": {0: b}},
    lambda b, x, y: ({0: b}, {0: b}),
    lambda b, x, y: [(b, None), [b, 3]],
    lambda b, x, y: _collection(b, x, y),
])
def test_every_spec_form_exports_the_same_contract(spec_of):
    x, y = randn(4, 3), randn(4, 3)
    b = Dim("b", max=20)
    ep = tpe.export(lambda x, y: x * y, x, y, dynamic_shapes=spec_of(b, x, y))
    assert {s.name: str(v) for s, v in ep.range_constraints.items()} == {"b": "[1, 20]"}
    assert ep.module()(randn(7, 3), randn(7, 3)).shape == (7, 3)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(7, 3), randn(6, 3))


def _collection(b, x, y):
    shapes = tpe.ShapesCollection()
    shapes[x] = {0: b}
    shapes[y] = {0: b}
    return shapes


def test_additional_inputs_make_varying_axes_dynamic():
    extra = tpe.AdditionalInputs()
    extra.add((randn(4, 3),))
    extra.add((randn(9, 3),))
    ep = tpe.export(lambda x: x.sum(axis=1), randn(4, 3), dynamic_shapes=extra)
    assert ep.module()(randn(13, 3)).shape == (13,)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(13, 4))


def test_static_size_mismatch_is_refused_naming_the_input():
    ep = tpe.export(lambda x: x.sum(axis=0), randn(4, 3), dynamic_shapes={"x": {0: Dim("n", max=9)}})
    with pytest.raises(tpe.ConstraintsExceededError, match=r"x"):
        ep.module()(randn(4, 5))


def test_numpy_error_inside_the_model_names_op_and_line():
    with pytest.raises(tpe.CaptureError, match=r"numpy.ndarray.reshape raised ValueError(.|\n)*test_export.py:\d+"):
        tpe.export(lambda x: x.reshape(5, 7), randn(4, 3))


def test_auto_dims_are_constrained_first_and_the_rest_on_named_dims_is_a_violation():
    spec = {"x": {0: Dim("dx", max=50)}, "z": {0: Dim.AUTO}}
    with pytest.raises(tpe.ConstraintViolationError, match="dx = Dim\\('dx', min=2, max=50\\)"):
        tpe.export(lambda x, z: x[1:] + z, randn(5, 2), randn(4, 2), dynamic_shapes=spec)
    spec["x"][0] = Dim("dx", min=2, max=50)
    ep = tpe.export(lambda x, z: x[1:] + z, randn(5, 2), randn(4, 2), dynamic_shapes=spec)
    assert [s.name for s in ep.range_constraints] == ["dx"]
    assert ep.module()(randn(7, 2), randn(6, 2)).shape == (6, 2)
    with pytest.raises(tpe.ConstraintsExceededError):
        ep.module()(randn(7, 2), randn(7, 2))


# -- the replay check runs only when capture saw a write ---------------------------------------------
def _count_replays(monkeypatch):
    from tensorplay_export.capture import entry as export_mod
    calls = []
    real = export_mod.check_replay

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(export_mod, "check_replay", counting)
    return calls


def test_a_functional_trace_is_not_replayed(monkeypatch):
    calls = _count_replays(monkeypatch)
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = randn(3, 4)
    ep = tpe.export(m, x, dynamic_shapes={"x": {0: Dim("b", max=10)}})
    assert calls == []
    np.testing.assert_allclose(ep.module()(x), m(x), rtol=1e-6)


def test_writes_are_replayed(monkeypatch):
    calls = _count_replays(monkeypatch)

    def fn(x):
        y = x * 2.0
        y[0] = 0.0
        return y

    ep = tpe.export(fn, randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    assert calls == [1]
    x = randn(5, 4)
    np.testing.assert_allclose(ep.module()(x), fn(x))


def test_out_argument_of_a_numpy_function_reaches_every_view():
    def fn(x):
        y = np.zeros_like(x)
        first = y[0]  # a view: the write below reaches it, in numpy and in the program
        np.cumsum(x, axis=0, out=y)
        return first * 1.0

    ep = tpe.export(fn, randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    for b in (1, 3, 7):
        x = randn(b, 4)
        np.testing.assert_array_equal(ep.module()(x), fn(x))


def test_functional_hook_finds_traced_values_in_nested_arguments():
    from tensorplay_export.capture.entry import _any_traced

    seen = {}

    def model(x):
        seen.setdefault("flags", (_any_traced((1, [2.0, {"a": x}])), _any_traced({"k": (x.shape[0],)}),
                         _any_traced(([1.0], {"a": None}, "s", x.shape[1]))))  # the traced run's
        return x

    tpe.export(model, randn(3, 4), dynamic_shapes={"x": {0: Dim("b", max=10)}})
    assert seen["flags"] == (True, True, False)
    assert not _any_traced(([np.ones(2)], {"a": (np.float32(1),)}))


def test_composite_over_a_traced_list_argument_is_one_node():
    from tensorplay_export.nn import functional as F

    ep = tpe.export(lambda xs: F.softmax(xs[0] + xs[1], dim=-1), [randn(3, 4), randn(3, 4)],
                    dynamic_shapes={"xs": [{0: Dim("b", max=10)}, {0: Dim("b", max=10)}]})
    assert [n.target for n in ep.graph.nodes].count("tpe.nn.softmax") == 1


def _halve(x):
    x[: x.shape[0] // 2] = 0.0
    return x * 2.0


def _add_one(x):
    x += 1.0
    return x.sum(axis=0)


def _add_out(x):
    np.add(x, 1.0, out=x)
    return x[0]


def _mask_write(x):
    x[x > 2.0] = 0.0
    return x + 1.0


@pytest.mark.parametrize("fn", [_halve, _add_one, _add_out, _mask_write])
def test_writes_to_a_user_input_reach_the_caller_like_eager(fn):
    import io

    ep = tpe.export(fn, np.arange(8.0).reshape(4, 2), dynamic_shapes={"x": {0: Dim("n", max=20)}})
    assert list(ep.graph_signature.user_inputs_to_mutate.values()) == ["x"]
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    loaded = tpe.load(buf)
    for program in (ep, loaded):
        for n in (1, 2, 7, 20):
            got_in, want_in = np.arange(2.0 * n).reshape(n, 2), np.arange(2.0 * n).reshape(n, 2)
            np.testing.assert_array_equal(program.module()(got_in), fn(want_in))
            np.testing.assert_array_equal(got_in, want_in)
        # the runtime checks run before anything is written back
        too_big = np.arange(42.0).reshape(21, 2)
        with pytest.raises(tpe.ConstraintsExceededError):
            program.module()(too_big)
        np.testing.assert_array_equal(too_big, np.arange(42.0).reshape(21, 2))


def test_export_leaves_the_example_input_unchanged():
    x = np.arange(8.0).reshape(4, 2)
    tpe.export(_halve, x, dynamic_shapes={"x": {0: Dim("n", max=20)}})
    np.testing.assert_array_equal(x, np.arange(8.0).reshape(4, 2))


def test_draft_export_compares_on_copies_of_a_mutated_input():
    x = np.arange(8.0).reshape(4, 2)
    report = tpe.draft_export(_halve, x, dynamic_shapes={"x": {0: Dim("n", max=20)}})
    np.testing.assert_array_equal(x, np.arange(8.0).reshape(4, 2))
    assert report.comparison.ok, report.comparison
    got = np.arange(6.0).reshape(3, 2)
    report.exported_program.module()(got)
    np.testing.assert_array_equal(got, [[0.0, 0.0], [2.0, 3.0], [4.0, 5.0]])


def test_a_write_into_an_input_through_a_view_is_written_back():
    def fn(x):
        head = x[:2]
        head[...] = 0.0
        return x.shape[0] * 1.0

    ep = tpe.export(fn, np.ones((4, 2)), dynamic_shapes={"x": {0: Dim("n", max=20)}})
    a = np.ones((7, 2))
    assert ep.module()(a) == 7.0
    eager = np.ones((7, 2))
    fn(eager)
    np.testing.assert_array_equal(a, eager)
    np.testing.assert_array_equal(a[:2], 0.0)


def test_a_write_into_an_input_through_a_view_capture_cannot_follow_is_refused():
    def fn(x):
        part = x.real          # of a complex input: a strided view, not followed
        part[...] = 0.0
        return x.shape[0] * 1.0

    with pytest.raises(tpe.CaptureError, match=r"through a view.*\n  setitem at .*test_export.py"):
        tpe.export(fn, np.ones((4, 2), np.complex128), dynamic_shapes={"x": {0: Dim("n", max=20)}})


def test_torch_habits_get_messages_that_say_what_to_do():
    x = np.ones((3, 4))
    with pytest.raises(ValueError, match=r"pass them as separate arguments here: export\(m, x\)"):
        tpe.export(lambda x: x * 2, (x,), dynamic_shapes={"x": {0: tpe.Dim("n")}})
    with pytest.raises(TypeError, match="the model must be callable .* got int"):
        tpe.export(3, x, dynamic_shapes={"x": {0: tpe.Dim("n")}})
    # a tuple input whose spec really is wrong keeps the plain message
    with pytest.raises(ValueError) as info:
        tpe.export(lambda t: t[0] * 2, (x, 3), dynamic_shapes={"t": {0: tpe.Dim("n")}})
    assert "separate arguments" not in str(info.value)


class _Holder:
    def __init__(self, v):
        self.v = v


def _returns_holder(x):
    return _Holder(x * 2)


@pytest.mark.parametrize("model, named", [
    (_returns_holder, "_Holder object"),
    (lambda x: (v for v in x), "builtins.generator object"),
    (lambda x: (x * 2, {"extra": _Holder(1)}), "_Holder object"),
])
def test_a_returned_object_the_program_cannot_hold_is_refused_with_its_type(model, named):
    x = np.ones((4, 3), np.float32)
    with pytest.raises(tpe.CaptureError, match=named + r".*cannot return"):
        tpe.export(model, x, dynamic_shapes={"x": {0: Dim("n")}})
    report = tpe.draft_export(model, x, dynamic_shapes={"x": {0: Dim("n")}})
    assert report.exported_program is None and [f.kind for f in report.failures] == ["capture_error"]
    # constants a program can hold are still returned as they were
    ep = tpe.export(lambda x: (x * 2, "tag", None, 3.5, np.float32(2), np.dtype("f4")), x,
                    dynamic_shapes={"x": {0: Dim("n")}})
    out = ep.module()(np.ones((2, 3), np.float32))
    assert out[1:] == ("tag", None, 3.5, np.float32(2), np.dtype("f4")) and out[0].shape == (2, 3)


@pytest.mark.parametrize("spec", [
    {"x": {1: Dim("a")}, "y": {0: Dim("b")}},
    {"x": {1: Dim.AUTO}, "y": {0: Dim.AUTO}},
    ((Dim.DYNAMIC, Dim.DYNAMIC), (Dim.DYNAMIC, None)),
    None,
])
def test_an_example_the_model_cannot_run_reports_numpys_error_not_an_internal_one(spec):
    def model(x, y):
        return x @ y

    with pytest.raises(tpe.CaptureError) as info:
        tpe.export(model, np.ones((3, 4), np.float32), np.ones((5, 2), np.float32), dynamic_shapes=spec)
    assert "internal error" not in str(info.value)
    assert str(info.value).startswith("numpy.matmul raised ValueError") and info.value.raised_by == "numpy.matmul"
