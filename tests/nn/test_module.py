"""Module / Parameter behaviours: registration, traversal, state dicts, call hook, errors."""

import copy
import pickle
import re

import numpy as np
import pytest

from tensorplay_export.nn.module import _CALL_HOOK, IncompatibleKeys, Module, Parameter


class Leaf(Module):
    def __init__(self, n=3):
        super().__init__()
        self.weight = Parameter(np.arange(n * n, dtype=np.float32).reshape(n, n))
        self.bias = Parameter(np.zeros(n, np.float32))
        self.register_buffer("count", np.zeros((), np.int64))
        self.register_buffer("scratch", np.ones(n, np.float32), persistent=False)

    def forward(self, x):
        return x @ self.weight + self.bias


class Tree(Module):
    def __init__(self):
        super().__init__()
        self.a = Leaf()
        self.b = Leaf()
        self.scale = Parameter(np.ones((), np.float32))

    def forward(self, x):
        return self.b(self.a(x)) * self.scale


# ---------------------------------------------------------------- Parameter
def test_parameter_is_ndarray_subclass_sharing_memory():
    data = np.zeros(3, np.float32)
    p = Parameter(data)
    assert isinstance(p, np.ndarray) and isinstance(p, Parameter)
    assert p.requires_grad is True
    p[0] = 5
    assert data[0] == 5
    assert Parameter(data, requires_grad=False).requires_grad is False


def test_parameter_results_are_plain_arrays():
    p = Parameter(np.ones((2, 3), np.float32))
    for r in (p * 2, p + p, np.exp(p), p @ p.T, p[0], p[:, 1:], p.reshape(3, 2), p.T, np.sum(p, axis=0),
              np.concatenate([p, p]), p.astype(np.float64), p.copy()):
        assert type(r) is np.ndarray, type(r)
    assert (p * 2).dtype == np.float32


def test_parameter_copy_and_pickle_keep_type():
    p = Parameter(np.ones(2, np.float32), requires_grad=False)
    for q in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert isinstance(q, Parameter) and q.requires_grad is False
        np.testing.assert_array_equal(q, p)
    assert repr(p).startswith("Parameter containing:\narray(")


# ------------------------------------------------------------- registration
def test_attribute_assignment_registers_params_modules_and_reads_from_dicts():
    m = Tree()
    assert list(m._parameters) == ["scale"]
    assert list(m._modules) == ["a", "b"]
    assert "weight" not in m.a.__dict__ and m.a.weight is m.a._parameters["weight"]
    assert m.a.count is m.a._buffers["count"]
    assert m.a._non_persistent_buffers_set == {"scratch"}


def test_buffer_assignment_stores_any_value_type():
    m = Leaf()

    class Traced:  # what capture might swap in
        shape = ()
        dtype = np.int64

    t = Traced()
    m.count = t
    assert m._buffers["count"] is t and m.count is t
    m.count = 7  # even a Python int stays a buffer value
    assert m._buffers["count"] == 7 and "count" not in m.__dict__
    m.count = np.ones((), np.int64)
    assert list(m.named_buffers())[0][0] == "count"


def test_swapped_dict_entries_are_what_forward_sees():
    m = Leaf()
    real = m._parameters["weight"]
    m._parameters["weight"] = np.eye(3, dtype=np.float32)
    np.testing.assert_array_equal(m(np.ones((1, 3), np.float32)), [[1, 1, 1]])
    m._parameters["weight"] = real
    assert m.weight is real


def test_reassigning_parameter_and_module_names():
    m = Tree()
    m.scale = Parameter(np.full((), 2, np.float32))
    assert float(m.scale) == 2
    m.scale = None
    assert m.scale is None and "scale" in m._parameters
    with pytest.raises(TypeError, match="cannot assign 'ndarray' as parameter 'scale'"):
        m.scale = np.ones(())
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'a'"):
        m.a = 3
    m.a = None
    assert m.a is None
    # A plain attribute turned into a parameter moves out of __dict__.
    m.extra = 1
    m.extra = Parameter(np.ones(1, np.float32))
    assert "extra" not in m.__dict__ and "extra" in m._parameters


def test_registration_errors():
    class Early(Module):
        def __init__(self):
            self.w = Parameter(np.ones(1))

    with pytest.raises(AttributeError, match=re.escape("cannot assign parameters before Module.__init__() call")):
        Early()
    m = Leaf()
    with pytest.raises(KeyError, match="contain"):
        m.register_buffer("a.b", np.ones(1))
    with pytest.raises(KeyError, match="empty"):
        m.register_parameter("", None)
    with pytest.raises(KeyError, match="already exists"):
        m.register_buffer("weight", np.ones(1))
    with pytest.raises(TypeError, match="nn.Parameter or None required"):
        m.register_parameter("p2", np.ones(1))
    with pytest.raises(TypeError, match="an array or None required"):
        m.register_buffer("b2", [1, 2])
    with pytest.raises(TypeError, match="is not a Module subclass"):
        m.add_module("c", object())
    with pytest.raises(AttributeError, match="'Leaf' object has no attribute 'nope'"):
        m.nope


def test_register_buffer_persistence_toggle_and_delattr():
    m = Leaf()
    m.register_buffer("scratch", np.zeros(2), persistent=True)
    assert "scratch" in m.state_dict()
    del m.scratch
    assert "scratch" not in dict(m.named_buffers())
    m.add_module("child", Leaf())
    del m.child
    assert "child" not in m._modules


# ---------------------------------------------------------------- traversal
def test_named_traversals():
    m = Tree()
    assert [n for n, _ in m.named_parameters()] == ["scale", "a.weight", "a.bias", "b.weight", "b.bias"]
    assert [n for n, _ in m.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in m.named_parameters(prefix="model")][1] == "model.a.weight"
    assert [n for n, _ in m.named_buffers()] == ["a.count", "a.scratch", "b.count", "b.scratch"]
    assert [n for n, _ in m.named_modules()] == ["", "a", "b"]
    assert [n for n, _ in m.named_children()] == ["a", "b"]
    assert list(m.children()) == [m.a, m.b]
    assert len(list(m.modules())) == 3 and len(list(m.parameters())) == 5 and len(list(m.buffers())) == 4
    assert m.get_submodule("a") is m.a and m.get_submodule("") is m
    with pytest.raises(AttributeError, match="no submodule 'zz'"):
        m.get_submodule("a.zz")


def test_shared_modules_and_tied_parameters():
    m = Tree()
    m.b = m.a  # the same module twice
    assert [n for n, _ in m.named_modules()] == ["", "a"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b"]
    assert [n for n, _ in m.named_parameters()] == ["scale", "a.weight", "a.bias"]
    sd = m.state_dict()
    assert list(sd) == ["scale", "a.weight", "a.bias", "a.count", "b.weight", "b.bias", "b.count"]


# --------------------------------------------------------------- state dict
def test_state_dict_content_and_sharing():
    m = Tree()
    sd = m.state_dict()
    assert list(sd) == ["scale", "a.weight", "a.bias", "a.count", "b.weight", "b.bias", "b.count"]
    assert type(sd["a.weight"]) is np.ndarray and np.shares_memory(sd["a.weight"], m.a.weight)
    assert isinstance(m.state_dict(keep_vars=True)["a.weight"], Parameter)
    assert list(m.a.state_dict(prefix="x."))[0] == "x.weight"


def test_load_state_dict_round_trip_in_place():
    src, dst = Tree(), Tree()
    for p in src.parameters():
        p[...] = np.random.default_rng(0).standard_normal(p.shape)
    w_before = dst.a.weight
    result = dst.load_state_dict({k: v.astype(np.float64) for k, v in src.state_dict().items()})
    assert result == IncompatibleKeys([], [])
    assert dst.a.weight is w_before and dst.a.weight.dtype == np.float32
    for (k, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_load_state_dict_errors_are_all_reported_and_nothing_changes():
    m = Tree()
    sd = dict(m.state_dict())
    del sd["a.bias"]
    sd["a.weight"] = np.ones((2, 2))
    sd["zzz"] = np.ones(1)
    before = m.b.weight.copy()
    sd["b.weight"] = before + 1
    with pytest.raises(RuntimeError) as exc:
        m.load_state_dict(sd)
    text = str(exc.value)
    assert text.startswith("Error(s) in loading state_dict for Tree:")
    assert 'Missing key(s) in state_dict: "a.bias".' in text
    assert 'Unexpected key(s) in state_dict: "zzz".' in text
    assert ("size mismatch for a.weight: copying a param with shape (2, 2) from checkpoint, "
            "the shape in current model is (3, 3).") in text
    np.testing.assert_array_equal(m.b.weight, before)


def test_load_state_dict_non_strict():
    m = Leaf()
    res = m.load_state_dict({"weight": np.eye(3), "other": np.ones(1)}, strict=False)
    assert res.missing_keys == ["bias", "count"] and res.unexpected_keys == ["other"]
    np.testing.assert_array_equal(m.weight, np.eye(3))
    with pytest.raises(RuntimeError, match="size mismatch for weight"):
        m.load_state_dict({"weight": np.eye(2)}, strict=False)
    with pytest.raises(RuntimeError, match="value for bias: expected an array, got dict"):
        m.load_state_dict({"bias": {"x": 1}}, strict=False)


# ---------------------------------------------------------- call and modes
def test_call_runs_forward_without_hook():
    m = Leaf()
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(m(x), x @ m.weight + m.bias)


def test_call_hook_protocol():
    m = Tree()
    calls = []

    def hook(module, args, kwargs):
        calls.append((type(module).__name__, len(args), dict(kwargs)))
        return module.forward(*args, **kwargs)

    token = _CALL_HOOK.set(hook)
    try:
        out = m(np.ones((1, 3), np.float32))
    finally:
        _CALL_HOOK.reset(token)
    assert calls == [("Tree", 1, {}), ("Leaf", 1, {}), ("Leaf", 1, {})]
    assert out.shape == (1, 3)
    assert _CALL_HOOK.get() is None


def test_forward_missing():
    with pytest.raises(NotImplementedError, match='missing the required "forward"'):
        Module()(1)


def test_train_eval():
    m = Tree()
    assert m.training and m.a.training
    assert m.eval() is m
    assert not m.training and not m.a.training and not m.b.training
    m.train()
    assert m.b.training
    with pytest.raises(ValueError):
        m.train("no")


def test_repr_and_dir():
    m = Tree()
    text = repr(m)
    assert text.startswith("Tree(\n  (a): Leaf()\n  (b): Leaf()\n)")
    assert "weight" in dir(m.a) and "a" in dir(m)


def test_deepcopy_module():
    m = Tree()
    c = copy.deepcopy(m)
    assert isinstance(c.a.weight, Parameter) and not np.shares_memory(c.a.weight, m.a.weight)
    np.testing.assert_array_equal(c.a.weight, m.a.weight)


def test_load_state_dict_into_read_only_arrays():
    m = Leaf()
    m.weight.flags.writeable = False
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    m.count = np.zeros((), np.int64)
    m._buffers["count"].flags.writeable = False
    m.load_state_dict({"weight": np.eye(3), "bias": ro, "count": np.array(4)})
    assert isinstance(m.weight, Parameter) and m.weight.dtype == np.float32
    np.testing.assert_array_equal(m.weight, np.eye(3))
    assert int(m.count) == 4 and m.count.dtype == np.int64 and type(m.count) is np.ndarray
