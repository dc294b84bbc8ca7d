"""Decompositions: the table API, the pass, and every default entry on dynamic sizes."""
from __future__ import annotations

import numpy as np
import pytest

from tensorplay_export import Dim, export
from tensorplay_export.program.decompositions.table import (CustomDecompTable, apply_decompositions, canonical_target,
                                      default_decompositions)
from tensorplay_export.program.decompositions import DecompositionError, traced_builder
from tensorplay_export.errors import ConstraintsExceededError
from tensorplay_export.nn import functional as F
from tensorplay_export.program.signature import InputKind


# ------------------------------------------------------------------ one case per default entry
# name -> (model, make(n, rng) -> args, dynamic_shapes (over Dim "n"), sizes to run, extra Dim kwargs)
def _f(shape_fn, dtype=np.float64):
    def make(n, rng):
        return tuple(rng.standard_normal(s).astype(dtype) for s in shape_fn(n))
    return make


def m_var(x):
    return np.var(x, axis=0, ddof=1), x.var(axis=1, keepdims=True), np.var(x)


def m_std(x):
    return np.std(x, axis=(0, 1), keepdims=True), x.std(axis=1)


def m_einsum(a, b, sq):
    c = a[None] * np.ones((2, 1, 1))
    return (np.einsum("ij,jk->ik", a, b), np.einsum("ij->ji", a), np.einsum("ij,ij,ij->i", a, a, a),
            np.einsum("ij,kj", a, a), np.einsum("ij->", a), np.einsum("...ij,jk->...ik", c, b),
            np.einsum("bij,jk", c, b), np.einsum("ii->i", sq), np.einsum("ii", sq), np.einsum("ij,ji->", sq, sq),
            np.einsum("i...,i...->...", c.transpose(1, 0, 2), a[:, None]), np.einsum("iij->j", sq[:, :, None] * a[:, None]))


def m_tensordot(a, b):
    return np.tensordot(a, b, axes=([1, 2], [1, 0])), np.tensordot(a, a, axes=([0, 1], [0, 1]))


def m_dot(a, b):
    return np.dot(a, b), np.dot(a, b[:, 0]), np.dot(a[0], b)


def m_inner(a, b):
    return np.inner(a, b), np.inner(a[:, 0], a[:, 1])


def m_outer(a, b):
    return np.outer(a[:, 0], b), np.outer(b, a)


def m_clip(x):
    return np.clip(x, -0.5, 0.5), x.clip(min=0.1), np.clip(x, x[:1], 1.0)


def m_linspace(x):
    n = x.shape[0]
    return (x + np.linspace(0.0, 1.0, n), x + np.linspace(-2.0, 3.0, n, endpoint=False),
            np.linspace(1.0, 2.0, n, dtype=np.float32))


def m_tri(x):
    return np.tri(x.shape[0], x.shape[1], k=1) * x, np.tri(x.shape[0], dtype=np.int32)


def m_tril(x):
    return np.tril(x, k=-1), np.tril(x)


def m_triu(x):
    return np.triu(x, 1), np.triu(x)


def m_moveaxis(x):
    return np.moveaxis(x, 0, -1), np.moveaxis(x, [0, 1], [2, 0])


def m_array_split(x):
    a, b, c = np.array_split(x, 3, axis=0)
    p, q = np.array_split(x, [1], axis=1)
    return a, b * 2.0, c.sum(axis=0), p, q


def m_split(x):
    a, b = np.split(x, 2, axis=1)
    c, d = np.split(x, [1], axis=0)
    return a + b, c, d


def m_linear(x, w, b):
    return F.linear(x, w, b), F.linear(x, w)


def m_relu(x):
    return F.relu(x)


def m_gelu(x):
    return F.gelu(x), F.gelu(x, approximate="tanh")


def m_erf(x):
    return F.erf(x)


def m_erfc(x):
    return F.erfc(x)


def m_sigmoid(x):
    return F.sigmoid(x)


def m_silu(x):
    return F.silu(x)


def m_tanh(x):
    return F.tanh(x)


def m_softmax(x):
    return F.softmax(x, dim=-1), F.softmax(x, dim=0)


def m_log_softmax(x):
    return F.log_softmax(x, dim=1)


def m_layer_norm(x, w, b):
    return F.layer_norm(x, (4,), w, b), F.layer_norm(x, 4)


def m_rms_norm(x, w, b):
    return F.rms_norm(x, (4,), w), F.rms_norm(x, (4,), eps=1e-6)


def m_normalize(x):
    return F.normalize(x), F.normalize(x, p=1.0, dim=0)


def m_batch_norm(x, mean, var):
    return F.batch_norm(x, mean, var, mean * 0.5 + 1.0, var - 0.5, training=False)


def m_batch_stats(x, mean, var):
    return F.batch_norm(x, None, None, training=True)


def m_embedding(ids, w):
    return F.embedding(ids, w)


def m_one_hot(ids, w):
    return F.one_hot(ids, 10)


def m_sdpa(q, k, v):
    return (F.scaled_dot_product_attention(q, k, v),
            F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3))


def m_pad(x):
    return F.pad(x, (1, 2)), F.pad(x, (1, 1, 0, 1), mode="replicate", value=0.0)


def m_cross_entropy(logits, target):
    return F.cross_entropy(logits, target), F.cross_entropy(logits, target, reduction="none",
                                                            label_smoothing=0.1)


def m_conv2d(x, w):
    return F.conv2d(x, w, padding=1), F.conv2d(x, w, stride=2)


def m_conv1d(x, w):
    return F.conv1d(x, w, padding=1)


def m_max_pool2d(x):
    return F.max_pool2d(x, 2)


def m_avg_pool2d(x):
    return F.avg_pool2d(x, 2, stride=1, padding=1)


def _ints(shape_fn, high):
    def make(n, rng):
        shapes = shape_fn(n)
        return (rng.integers(0, high, size=shapes[0]), rng.standard_normal(shapes[1]))
    return make


def _bn(n, rng):
    return (rng.standard_normal((n, 3, 2)), rng.standard_normal(3), rng.random(3) + 0.5)


def _ce(n, rng):
    return (rng.standard_normal((n, 5)), rng.integers(0, 5, size=n))


N0 = {0: Dim("n", max=64)}
SIZES = (1, 2, 5)
CASES = {
    "numpy.var": (m_var, _f(lambda n: [(3, n)]), {"x": {1: Dim("n", max=64)}}, SIZES),
    "numpy.std": (m_std, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "numpy.einsum": (m_einsum, _f(lambda n: [(n, 3), (3, 4), (n, n)]),
                     {"a": N0, "b": None, "sq": {0: Dim("n", max=64), 1: Dim("n", max=64)}}, SIZES),
    "numpy.tensordot": (m_tensordot, _f(lambda n: [(n, 3, 4), (4, 3, 5)]), {"a": N0, "b": None}, SIZES),
    "numpy.dot": (m_dot, _f(lambda n: [(n, 3), (3, 2)]), {"a": N0, "b": None}, SIZES),
    "numpy.inner": (m_inner, _f(lambda n: [(n, 3), (2, 3)]), {"a": N0, "b": None}, SIZES),
    "numpy.outer": (m_outer, _f(lambda n: [(n, 3), (4,)]), {"a": N0, "b": None}, SIZES),
    "numpy.clip": (m_clip, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "numpy.linspace": (m_linspace, _f(lambda n: [(n,)]), {"x": N0}, SIZES),
    "numpy.tri": (m_tri, _f(lambda n: [(n, 4)]), {"x": N0}, SIZES),
    "numpy.tril": (m_tril, _f(lambda n: [(n, 4)]), {"x": N0}, SIZES),
    "numpy.triu": (m_triu, _f(lambda n: [(3, n)]), {"x": {1: Dim("n", max=64)}}, SIZES),
    "numpy.moveaxis": (m_moveaxis, _f(lambda n: [(n, 2, 3)]), {"x": N0}, SIZES),
    "numpy.array_split": (m_array_split, _f(lambda n: [(n, 2)]), {"x": N0}, (1, 2, 3, 5, 7)),
    "numpy.split": (m_split, _f(lambda n: [(n, 4)]), {"x": N0}, SIZES),
    "tpe.nn.linear": (m_linear, _f(lambda n: [(n, 4), (3, 4), (3,)]), {"x": N0, "w": None, "b": None}, SIZES),
    "tpe.nn.relu": (m_relu, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.gelu": (m_gelu, _f(lambda n: [(n, 3)], np.float32), {"x": N0}, SIZES),
    "tpe.nn.erf": (m_erf, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.erfc": (m_erfc, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.sigmoid": (m_sigmoid, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.silu": (m_silu, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.tanh": (m_tanh, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.softmax": (m_softmax, _f(lambda n: [(n, 3)], np.float32), {"x": N0}, SIZES),
    "tpe.nn.log_softmax": (m_log_softmax, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.layer_norm": (m_layer_norm, _f(lambda n: [(2, n, 4), (4,), (4,)]),
                          {"x": {1: Dim("n", max=64)}, "w": None, "b": None}, SIZES),
    "tpe.nn.rms_norm": (m_rms_norm, _f(lambda n: [(n, 4), (4,), (4,)]), {"x": N0, "w": None, "b": None}, SIZES),
    "tpe.nn.normalize": (m_normalize, _f(lambda n: [(n, 3)]), {"x": N0}, SIZES),
    "tpe.nn.batch_norm": (m_batch_norm, _bn, {"x": N0, "mean": None, "var": None}, SIZES),
    "tpe.nn.batch_stats": (m_batch_stats, _bn, {"x": {0: Dim("n", min=2, max=64)}, "mean": None, "var": None},
                           (2, 3, 5)),
    "tpe.nn.embedding": (m_embedding, _ints(lambda n: [(n,), (10, 4)], 10), {"ids": N0, "w": None}, SIZES),
    "tpe.nn.one_hot": (m_one_hot, _ints(lambda n: [(n,), (10, 4)], 10), {"ids": N0, "w": None}, SIZES),
    "tpe.nn.scaled_dot_product_attention": (
        m_sdpa, _f(lambda n: [(2, n, 4), (2, n, 4), (2, n, 3)]),
        {"q": {1: Dim("n", max=64)}, "k": {1: Dim("n", max=64)}, "v": {1: Dim("n", max=64)}}, SIZES),
    "tpe.nn.pad": (m_pad, _f(lambda n: [(2, n, 3)]), {"x": {1: Dim("n", max=64)}}, SIZES),
    "tpe.nn.cross_entropy": (m_cross_entropy, _ce, {"logits": N0, "target": N0}, SIZES),
    "tpe.nn.conv2d": (m_conv2d, _f(lambda n: [(1, 2, n, 5), (3, 2, 3, 3)]),
                      {"x": {2: Dim("n", min=3, max=64)}, "w": None}, (3, 4, 7)),
    "tpe.nn.conv1d": (m_conv1d, _f(lambda n: [(2, 2, n), (3, 2, 3)]), {"x": {2: Dim("n", max=64)}, "w": None},
                      SIZES),
    "tpe.nn.max_pool2d": (m_max_pool2d, _f(lambda n: [(1, 2, n, 4)]), {"x": {2: Dim("n", min=2, max=64)}},
                          (2, 3, 6)),
    "tpe.nn.avg_pool2d": (m_avg_pool2d, _f(lambda n: [(1, 2, n, 4)]), {"x": {2: Dim("n", max=64)}},
                          SIZES),
}

from ops._decomp_cases import CASES as _MORE_CASES  # noqa: E402  (the composites of tests/ops, checked here too)

CASES.update(_MORE_CASES)


def _targets(ep) -> set:
    return {canonical_target(n.target) for n in ep.graph.nodes if n.op == "call_function"}


def _close(a, b):
    if isinstance(a, (tuple, list)):
        assert isinstance(b, (tuple, list)) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, (a.shape, b.shape, a.dtype, b.dtype)
    tol = 2e-5 if a.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_every_default_entry_has_a_case():
    assert set(default_decompositions()) == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_entry_preserves_numerics_on_dynamic_sizes(name):
    model, make, dyn, sizes = CASES[name]
    rng = np.random.default_rng(0)
    args = make(4 if name != "tpe.nn.conv2d" else 5, rng)
    ep = export(model, *args, dynamic_shapes=dyn)
    assert name in _targets(ep), f"the case for {name} does not exercise it"
    before_code = ep.code
    ep2 = ep.run_decompositions()
    assert ep.code == before_code  # the original is untouched
    ep2.graph.lint()
    assert name not in _targets(ep2)
    assert not any(t in default_decompositions() for t in _targets(ep2) if t is not None)
    assert ep2.range_constraints == ep.range_constraints
    # Same inputs; arrays a decomposition builds from Python data (np.arange(3)) may add lifted constants.
    kept = [(s.kind, s.arg.name) for s in ep2.graph_signature.input_specs if s.kind != InputKind.CONSTANT_TENSOR]
    assert kept == [(s.kind, s.arg.name) for s in ep.graph_signature.input_specs if s.kind != InputKind.CONSTANT_TENSOR]
    assert [s.kind for s in ep2.graph_signature.output_specs] == [s.kind for s in ep.graph_signature.output_specs]
    for n in sizes:
        inputs = make(n, np.random.default_rng(n))
        _close(ep.module()(*inputs), ep2.module()(*inputs))


def test_contract_checks_survive():
    ep = export(m_softmax, np.ones((4, 3), np.float32), dynamic_shapes={"x": {0: Dim("n", max=8)}})
    ep2 = ep.run_decompositions()
    with pytest.raises(ConstraintsExceededError):
        ep2.module()(np.ones((9, 3), np.float32))
    with pytest.raises(TypeError):
        ep2.module()(np.ones((4, 3), np.float64))
    with pytest.raises(ConstraintsExceededError):
        ep2.module()(np.ones((4, 2), np.float32))


def test_source_and_module_path_inherited():
    from tensorplay_export import nn

    class Block(nn.Module):
        def forward(self, x):
            return F.softmax(x, dim=-1)

    class Top(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x) * 2.0

    ep = export(Top(), np.ones((2, 3)))
    src = next(n for n in ep.graph.nodes if n.target == "tpe.nn.softmax").meta["source"]
    ep2 = ep.run_decompositions()
    new = [n for n in ep2.graph.nodes if n.target in ("numpy.exp", "numpy.max", "numpy.sum")]
    assert len(new) == 3
    assert all(n.meta.get("module_path") == "block" and n.meta.get("source") == src for n in new)


# ---------------------------------------------------------------------------------- the table
def _b1(graph, node):
    return node.args[0]


def _b2(graph, node):
    return node.args[0]


def test_keys_normalize_to_registry_names():
    t = default_decompositions()
    assert t[np.var] is t["var"] is t["numpy.var"] is t["numpy.ndarray.var"] is t[np.ndarray.var]
    assert t[F.softmax] is t["softmax"] is t["tpe.nn.softmax"]
    assert canonical_target(np.clip) == canonical_target("clip") == "numpy.clip"
    assert "numpy.var" in list(t)
    assert np.std in t and "std" in t and "no_such_op" not in t and 3 not in t


def test_remove_preserves_the_op():
    t = default_decompositions()
    builder = t.remove(np.var)
    assert callable(builder) and np.var not in t and "var" not in t
    with pytest.raises(KeyError):
        t.remove("var")
    ep = export(m_softmax_var, np.ones((3, 4)))
    ep2 = ep.run_decompositions(t)
    targets = _targets(ep2)
    assert "numpy.var" in targets and "tpe.nn.softmax" not in targets


def m_softmax_var(x):
    return F.softmax(x) + np.var(x, axis=1, keepdims=True)


def test_mutable_mapping_protocol():
    t = CustomDecompTable(defaults=False)
    assert len(t) == 0 and list(t) == [] and t.get("var") is None
    t["var"] = _b1
    t[np.std] = _b2
    t.update({"clip": _b1}, tanh=_b2)
    assert list(t) == ["numpy.var", "numpy.std", "numpy.clip", "numpy.tanh"]
    assert dict(t.items())["numpy.clip"] is _b1 and len(t) == 4
    assert t.popitem() == ("numpy.tanh", _b2)  # LIFO
    assert t.pop("clip") is _b1 and t.pop("clip", None) is None
    assert t.setdefault("var", _b2) is _b1 and t.setdefault("einsum", _b2) is _b2
    c = t.copy()
    assert isinstance(c, CustomDecompTable) and c == t and c is not t
    c["var"] = _b2
    assert t["var"] is _b1
    del t["einsum"]
    assert "einsum" not in t
    f = CustomDecompTable.fromkeys(["var", np.std], _b1)
    assert list(f) == ["numpy.var", "numpy.std"] and f.materialize() == {"numpy.var": _b1, "numpy.std": _b1}
    t.clear()
    assert len(t) == 0
    with pytest.raises(KeyError):
        t.popitem()
    with pytest.raises(KeyError):
        t["var"]


@pytest.mark.parametrize("insert", [
    lambda t: t.__setitem__("var", 3),
    lambda t: t.update({"var": "not callable"}),
    lambda t: t.update([("var", None)]),
    lambda t: t.setdefault("var"),
    lambda t: CustomDecompTable.fromkeys(["var"], "not callable"),  # None means the built-in builder
    lambda t: CustomDecompTable({"var": 1.5}),
    lambda t: CustomDecompTable([("var", object())], defaults=False),
])
def test_every_insertion_rejects_non_callables(insert):
    t = CustomDecompTable(defaults=False)
    with pytest.raises(TypeError, match="must be a callable"):
        insert(t)
    assert "var" not in t


def test_unknown_target_is_rejected():
    with pytest.raises(KeyError, match="names no op"):
        CustomDecompTable(defaults=False)["definitely_not_an_op"] = _b1


def test_defaults_and_materialize():
    a, b = default_decompositions(), default_decompositions()
    assert a == b and a is not b
    a.remove("softmax")
    assert "softmax" in b  # fresh tables
    m = a.materialize()
    assert type(m) is dict and "tpe.nn.softmax" not in m and "numpy.var" in m
    t = CustomDecompTable({"var": _b1})  # entries override the defaults
    assert t["var"] is _b1 and "softmax" in t


# ------------------------------------------------------------------------------ custom builders
def test_hand_written_builder_with_call_function():
    def relu_as_where(graph, node):
        (x,) = node.args
        meta = dict(node.meta)
        cond = graph.call_function("numpy.greater", (x, 0.0), meta={**meta, "dtype": np.dtype(bool)})
        return graph.call_function("numpy.where", (cond, x, 0.0), meta=meta)

    ep = export(m_relu, np.arange(-3.0, 3.0).reshape(2, 3), dynamic_shapes={"x": N0})
    ep2 = ep.run_decompositions({F.relu: relu_as_where})
    assert {"numpy.greater", "numpy.where"} <= _targets(ep2) and "tpe.nn.relu" not in _targets(ep2)
    x = np.linspace(-1, 1, 15).reshape(5, 3)
    _close(ep.module()(x), ep2.module()(x))


def test_builder_may_decline_with_notimplemented():
    ep = export(m_relu, np.ones((2, 3)))
    ep2 = ep.run_decompositions({"relu": lambda g, n: NotImplemented})
    assert "tpe.nn.relu" in _targets(ep2)
    ep3 = ep.run_decompositions({"relu": lambda g, n: n})  # returning the node itself keeps it too
    assert ep3.code == ep.code


def test_traced_builder_for_user_code_and_output_rename():
    def my_var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.mean((a - np.mean(a, axis=axis, keepdims=True)) ** 2, axis=axis, keepdims=keepdims)

    def model(x):
        return np.var(x, axis=0)

    ep = export(model, np.ones((4, 3)), dynamic_shapes={"x": N0})
    ep2 = ep.run_decompositions({"var": traced_builder(my_var)})
    out_name = ep2.graph_signature.output_specs[0].arg.name
    assert out_name == ep2.graph.output_node.args[0][0].name
    x = np.random.default_rng(1).standard_normal((6, 3))
    _close(ep2.module()(x), np.var(x, axis=0))


def test_bad_builder_results_are_reported():
    ep = export(m_relu, np.ones((2, 3)))
    with pytest.raises(DecompositionError, match="must return a Node"):
        ep.run_decompositions({"relu": lambda g, n: 3})
    with pytest.raises(DecompositionError, match="dtype"):
        ep.run_decompositions({"relu": traced_builder(lambda x: x.astype(np.float32))})
    with pytest.raises(TypeError):
        ep.run_decompositions(42)


def test_traced_builder_outside_the_pass():
    ep = export(m_relu, np.ones((2, 3)))
    node = next(n for n in ep.graph.nodes if n.target == "tpe.nn.relu")
    with pytest.raises(DecompositionError, match="only runs inside"):
        traced_builder(np.abs)(ep.graph, node)


def test_apply_decompositions_is_run_decompositions():
    ep = export(m_softmax_var, np.ones((3, 4)), dynamic_shapes={"x": N0})
    a, b = apply_decompositions(ep), ep.run_decompositions()
    assert a.code == b.code
    assert ep.run_decompositions(CustomDecompTable(defaults=False)).code == ep.code


def test_state_and_mutations_survive():
    from tensorplay_export import nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.register_buffer("count", np.zeros(()))

        def forward(self, x):
            self.count = self.count + 1.0
            return F.gelu(self.lin(x))

    m = M()
    ep = export(m, np.ones((2, 4)), dynamic_shapes={"x": N0})
    ep2 = ep.run_decompositions()
    assert "tpe.nn.linear" not in _targets(ep2) and "tpe.nn.gelu" not in _targets(ep2)
    assert ep2.state_dict.keys() == ep.state_dict.keys()
    assert [s.kind for s in ep2.graph_signature.output_specs] == [s.kind for s in ep.graph_signature.output_specs]
    x = np.random.default_rng(2).standard_normal((5, 4))
    mod = ep2.module()
    _close(mod(x), ep.module()(x))
    mod(x)
    assert float(mod.state_dict()["count"]) == 2.0


# ------------------------------------------------------------------------ the acceptance cases
from _shared import NO_CASES, SHARED_CASES as CASES_DIR, case_params, load_case as _load_case  # noqa: E402


def _flat(value):
    if isinstance(value, (tuple, list)):
        return [a for v in value for a in _flat(v)]
    if isinstance(value, dict):
        return [a for k in sorted(value) for a in _flat(value[k])]
    return [np.asarray(value)]


@pytest.mark.skipif(not CASES_DIR.is_dir(), reason=NO_CASES)
@pytest.mark.parametrize("name", case_params(as_name=True))
def test_decomposed_acceptance_cases_keep_contract_and_numerics(name):
    import itertools

    case = _load_case(name)
    if case.EXPECT["outcome"] != "ok":
        pytest.skip("only cases that export as they are")
    args, kwargs = case.make_inputs(**case.EXAMPLE)
    ep = export(case.model, *args, dynamic_shapes=case.dynamic_shapes(), **kwargs)
    ep2 = ep.run_decompositions()
    ep2.graph.lint()
    assert not any(t in default_decompositions() for t in _targets(ep2) if t is not None)
    grid = case.EXPECT["grid"]
    names = list(grid)
    for combo in itertools.product(*(grid[n] for n in names)):
        sizes = dict(zip(names, combo))
        a, k = case.make_inputs(**sizes)
        if case.EXPECT["admits"](**sizes):
            for g, w in zip(_flat(ep2.module()(*a, **k)), _flat(ep.module()(*a, **k))):
                assert g.shape == w.shape and g.dtype == w.dtype, sizes
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=str(sizes))
        else:
            with pytest.raises(ConstraintsExceededError):
                ep2.module()(*a, **k)


# ------------------------------------------------------------------ data-dependent sizes, archives
def m_masked(x):
    return F.softmax(x[x > 0] * 2.0), np.var(x, axis=0)


def test_data_dependent_requirement_becomes_a_runtime_check():
    ep = export(m_masked, np.array([1.0, -2.0, 3.0, 0.5]), dynamic_shapes={"x": N0})
    ep2 = ep.run_decompositions()
    assert "tpe.nn.softmax" not in _targets(ep2)
    checks = [n for n in ep2.graph.nodes if n.target == "tpe.assert_guard"]
    assert len(checks) == 1 and str(checks[0].args[0]) == "u0 >= 1"
    for x in (np.array([1.0, 2.0]), np.array([-1.0, 2.0, 3.0, -4.0, 5.0])):
        _close(ep2.module()(x), ep.module()(x))
    with pytest.raises(ValueError):  # the composite itself cannot take an empty selection
        ep.module()(np.array([-1.0, -2.0]))
    with pytest.raises(ConstraintsExceededError, match="u0 >= 1"):
        ep2.module()(np.array([-1.0, -2.0]))


def test_decomposed_program_saves_and_loads(tmp_path):
    from tensorplay_export import load, save

    model, make, dyn, sizes = CASES["tpe.nn.conv1d"]
    ep = export(model, *make(4, np.random.default_rng(0)), dynamic_shapes=dyn)
    ep2 = ep.run_decompositions()
    save(ep2, tmp_path / "d.pt2")
    loaded = load(tmp_path / "d.pt2")
    save(ep, tmp_path / "o.pt2")
    redone = load(tmp_path / "o.pt2").run_decompositions()  # a loaded program decomposes too
    for n in sizes:
        inputs = make(n, np.random.default_rng(n))
        _close(loaded.module()(*inputs), ep.module()(*inputs))
        _close(redone.module()(*inputs), ep.module()(*inputs))
    with pytest.raises(ConstraintsExceededError):
        loaded.module()(*make(65, np.random.default_rng(0)))


def test_contract_narrowing_is_refused():
    # A builder that needs more of the sizes than the contract promises is an error, not a silent change.
    def needs_even(x):
        n = x.shape[0]
        return np.tanh(x.reshape(n // 2, 2).reshape(n))

    ep = export(m_tanh, np.ones(4), dynamic_shapes={"x": N0})
    with pytest.raises(DecompositionError, match="does not imply"):
        ep.run_decompositions({F.tanh: traced_builder(needs_even)})


def test_builders_that_never_settle_are_stopped():
    def again(graph, node):
        return graph.call_function(node.target, node.args, node.kwargs, meta=dict(node.meta))

    ep = export(m_relu, np.ones((2, 3)))
    with pytest.raises(RuntimeError, match="did not settle"):
        ep.run_decompositions({"relu": again})


def test_decompositions_of_decompositions_run_until_settled():
    # dot -> tensordot is done in one builder; a table whose builder emits another entry's op
    # (here: var emitted as np.std(...)**2, std decomposed next round) settles in two rounds.
    def var_via_std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        return np.std(a, axis=axis, ddof=ddof, keepdims=keepdims) ** 2

    table = default_decompositions()
    table["var"] = traced_builder(var_via_std)
    ep = export(m_var, np.random.default_rng(0).standard_normal((3, 4)), dynamic_shapes={"x": {1: Dim("n")}})
    ep2 = ep.run_decompositions(table)
    assert not {"numpy.var", "numpy.std"} & _targets(ep2)
    x = np.random.default_rng(5).standard_normal((3, 6))
    _close(ep2.module()(x), ep.module()(x))


# ------------------------------------------------------------------ draft programs, module calls
def test_draft_program_with_an_opaque_op_decomposes():
    from tensorplay_export import draft_export, nn

    from _opaque import NO_RULE as no_rule

    class Opaque(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return no_rule(self.lin(x) ** 2).var(axis=-1)  # values >= 0: the opaque op's result stays real

    model = Opaque()
    x = np.random.default_rng(0).standard_normal((8, 4)).astype(np.float32)
    ep = draft_export(model, x, dynamic_shapes={"x": {0: Dim("n", max=64)}}).exported_program
    ep2 = ep.run_decompositions()
    targets = [n.target for n in ep2.graph.nodes if n.op == "call_function"]
    assert "tpe.nn.linear" not in targets and "numpy.ndarray.var" not in targets
    assert any(t.startswith("tpe.opaque.") for t in targets)
    assert ep2.opaque_ops == ep.opaque_ops and len(ep.opaque_ops) == 1
    np.testing.assert_allclose(ep2.module()(x), model(x), rtol=1e-5)


def test_replacement_nodes_keep_the_module_call_of_the_node():
    from tensorplay_export import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return F.softmax(self.lin(x), dim=-1)

    model = Block()
    x = np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32)
    ep = export(model, x, dynamic_shapes={"x": {0: Dim("n", max=16)}})
    stack_of = {n.target: n.meta.get("module_stack") for n in ep.graph.nodes if n.op == "call_function"}
    ep2 = ep.run_decompositions()
    for node in ep2.graph.nodes:
        if node.target in ("numpy.matmul", "numpy.transpose"):
            assert node.meta["module_stack"] == stack_of["tpe.nn.linear"]
        if node.target == "numpy.exp":
            assert node.meta["module_stack"] == stack_of["tpe.nn.softmax"]
    np.testing.assert_allclose(ep2.module()(x), model(x), rtol=1e-5)
