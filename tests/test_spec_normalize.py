"""tensorplay_export.specs.normalize: spec forms, normalize errors, the helpers capture uses."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import pytest

from tensorplay_export import pytree
from tensorplay_export.specs.dims import (
    AdditionalInputs, Constraint, Dim, EqualityConstraint, ShapesCollection,
)
from tensorplay_export.specs.normalize import (
    LeafSpec, collect_dims, equality_constraints_from, input_leaf_paths, named_dim_infos,
    normalize_dynamic_shapes,
)


# --- normalize: forms ------------------------------------------------------------------------

def f_xy(x, y):
    return x + y


def arr(*shape):
    return np.zeros(shape, dtype=np.float32)


def axes(leaves):
    return [None if l is None else (l.path, l.axes) for l in leaves]


def test_none_is_all_static():
    x, y = arr(2, 3), arr(2, 3)
    assert axes(normalize_dynamic_shapes(f_xy, (x, y), {}, None)) == [("x", {}), ("y", {})]


def test_dict_tuple_list_forms_agree():
    x, y = arr(4, 3), arr(4, 3)
    b = Dim("b", max=8)
    want = [("x", {0: b}), ("y", {0: b, 1: Dim.AUTO})]
    for spec in ({"x": {0: b}, "y": {0: b, 1: Dim.AUTO}},
                 ({0: b}, (b, Dim.AUTO)),
                 [(b, None), [b, Dim.AUTO]],
                 {"x": (b, Dim.STATIC), "y": {-2: b, -1: Dim.AUTO}},
                 {"x": [b, 3], "y": {0: b, 1: Dim.AUTO}}):
        assert axes(normalize_dynamic_shapes(f_xy, (x, y), {}, spec)) == want


def test_kwargs_nested_case_shape():
    def model(x, *, extras):
        return x * extras["scale"] + extras["bias"]

    b = Dim("batch", max=32)
    x, scale, bias = arr(4, 3), arr(4, 3), arr(3)
    spec = {"x": {0: b}, "extras": {"scale": {0: b}, "bias": None}}
    got = normalize_dynamic_shapes(model, (x,), {"extras": {"scale": scale, "bias": bias}}, spec)
    assert axes(got) == [("x", {0: b}), ("extras['scale']", {0: b}), ("extras['bias']", {})]
    assert got[0].axes[0] is got[1].axes[0]
    # the same paths as input_leaf_paths, in tree_flatten((args, kwargs)) order
    assert [l.path for l in got] == input_leaf_paths(model, (x,), {"extras": {"scale": scale, "bias": bias}})
    # positional form over (args, kwargs) inputs
    got2 = normalize_dynamic_shapes(model, (x,), {"extras": {"scale": scale, "bias": bias}},
                                    ({0: b}, {"scale": (b, None), "bias": None}))
    assert axes(got2) == axes(got)


def test_non_array_leaves_are_none_and_aligned_with_flatten():
    def model(x, n, opts):
        return x

    x = arr(2)
    args, kwargs = (x, 3, {"mode": "a", "w": arr(5)}), {}
    got = normalize_dynamic_shapes(model, args, kwargs, {"x": {0: Dim("b")}, "opts": {"w": {0: Dim.AUTO}}})
    leaves, _ = pytree.tree_flatten((args, kwargs))
    assert len(got) == len(leaves)
    assert axes(got) == [("x", {0: Dim("b")}), None, None, ("opts['w']", {0: Dim.AUTO})]


def test_var_args_and_var_kwargs():
    def model(x, *args, scale=1, **kwargs):
        return x

    x, a, c, k = arr(2), arr(3), arr(4), arr(5)
    b = Dim("b")
    got = normalize_dynamic_shapes(model, (x, a, (c,)), {"k": k},
                                   {"x": {0: b}, "args": ({0: b}, ({0: Dim.AUTO},)), "kwargs": {"k": (Dim.DYNAMIC,)}})
    assert axes(got) == [("x", {0: b}), ("args[0]", {0: b}), ("args[1][0]", {0: Dim.AUTO}),
                         ("kwargs['k']", {0: Dim.DYNAMIC})]
    # a **kwargs item may also be named directly
    got = normalize_dynamic_shapes(model, (x,), {"k": k}, {"k": {0: b}})
    assert axes(got) == [("x", {}), ("kwargs['k']", {0: b})]


def test_module_forward_signature_is_used():
    class M:
        def forward(self, tokens, mask=None):
            return tokens

        def __call__(self, *a, **k):
            return self.forward(*a, **k)

    t = arr(2, 7)
    got = normalize_dynamic_shapes(M(), (t,), {}, {"tokens": {1: Dim("seq")}, "mask": None})
    assert axes(got) == [("tokens", {1: Dim("seq")})]


def test_dataclass_input():
    @dataclass
    class Batch:
        ids: object
        mask: object = None

    pytree.register_dataclass(Batch, serialized_type_name="tests.dyn.Batch")

    def model(batch):
        return batch.ids

    s = Dim("s")
    inp = Batch(arr(2, 5), None)
    got = normalize_dynamic_shapes(model, (inp,), {}, {"batch": {"ids": {1: s}}})
    assert axes(got) == [("batch.ids", {1: s}), None]
    got = normalize_dynamic_shapes(model, (inp,), {}, {"batch": Batch({1: s}, None)})
    assert axes(got)[0] == ("batch.ids", {1: s})
    with pytest.raises(ValueError, match=r"spec for 'batch.mask' gives dims \{0: Dim\('s'\)\}, but the input is None"):
        normalize_dynamic_shapes(model, (inp,), {}, {"batch": {"mask": {0: s}}})


def test_shapes_collection():
    def model(x, *, extras):
        return x

    x, scale, bias = arr(4, 3), arr(4, 3), arr(3)
    b = Dim("b")
    sc = ShapesCollection()
    sc[x] = {0: b}
    sc[scale] = (b, None)
    assert x in sc and bias not in sc and sc[x] == {0: b} and len(sc) == 2
    kwargs = {"extras": {"scale": scale, "bias": bias}}
    got = normalize_dynamic_shapes(model, (x,), kwargs, sc)
    assert axes(got) == [("x", {0: b}), ("extras['scale']", {0: b}), ("extras['bias']", {})]
    assert sc.dynamic_shapes(model, (x,), kwargs) == {"x": {0: b}, "extras": {"scale": (b, None), "bias": None}}
    with pytest.raises(KeyError):
        sc[bias]
    with pytest.raises(TypeError, match="input arrays"):
        sc[3] = {0: b}
    stranger = ShapesCollection()
    stranger[arr(4, 3)] = {0: b}  # equal values, different object
    with pytest.raises(ValueError, match="not model inputs"):
        normalize_dynamic_shapes(model, (x,), kwargs, stranger)


def test_additional_inputs():
    def model(x, *, extras):
        return x

    def inputs(b, s):
        return (arr(b, s, 3),), {"extras": {"scale": arr(b, 3), "bias": arr(3)}}

    ai = AdditionalInputs()
    ai.add(*inputs(5, 7))
    ai.add(*inputs(2, 7))
    assert len(ai) == 2
    args, kwargs = inputs(4, 7)
    # x.shape[0] and extras['scale'].shape[0] are 4, 5, 2 in every set: one shared dim (issue 16 item 6)
    shared = Dim("x_dim0")
    assert ai.dynamic_shapes(model, args, kwargs) == {
        "x": {0: shared}, "extras": {"scale": {0: shared}, "bias": None}}
    got = normalize_dynamic_shapes(model, args, kwargs, ai)
    assert axes(got) == [("x", {0: shared}), ("extras['scale']", {0: shared}), ("extras['bias']", {})]

    bad = AdditionalInputs()
    bad.add((arr(5, 7),), {"extras": {"scale": arr(5, 3)}})
    with pytest.raises(ValueError, match="structure"):
        bad.dynamic_shapes(model, args, kwargs)
    rank = AdditionalInputs()
    rank.add((arr(5, 7, 3, 1),), {"extras": {"scale": arr(5, 3), "bias": arr(3)}})
    with pytest.raises(ValueError, match="'x' has rank 4, the export example has rank 3"):
        rank.dynamic_shapes(model, args, kwargs)
    with pytest.raises(ValueError, match="no example sets"):
        AdditionalInputs().dynamic_shapes(model, args, kwargs)


# --- normalize: errors -----------------------------------------------------------------------

def err(spec, args=None, model=f_xy, kwargs=None):
    args = args if args is not None else (arr(2, 3), arr(2, 3))
    with pytest.raises(ValueError) as info:
        normalize_dynamic_shapes(model, args, kwargs or {}, spec)
    return str(info.value)


def test_error_rank_mismatch():
    assert "spec for 'y' has 3 axes but the input has rank 2" in err({"y": (None, None, Dim("b"))})
    assert "spec for 'x' names axis 2, but the input has rank 2" in err({"x": {2: Dim("b")}})


def test_error_unknown_argument():
    msg = err({"z": {0: Dim("b")}})
    assert "names argument 'z' that the model does not take" in msg and "'x', 'y'" in msg


def test_error_int_disagrees_with_example():
    assert "spec for 'x' pins axis 1 to 4, but the example has size 3 there" in err({"x": {1: 4}})


def test_error_wrong_number_of_positional_entries():
    assert "tuple of 1 entries, but the model received 2 inputs ('x', 'y')" in err(({0: Dim("b")},))


def test_error_bad_axis_value_and_key():
    assert "axis 0 must be a Dim" in err({"x": {0: "batch"}})
    assert "axes must be ints" in err({"x": {"0": Dim("b")}})
    assert "is the class Dim" in err({"x": {0: Dim}})
    assert "must be a dict {axis: Dim} or a tuple/list" in err({"x": Dim("b")})


def test_error_spec_on_non_array_and_structure():
    def model(x, n, opts):
        return x

    args = (arr(2), 3, {"w": arr(2)})
    # an int input may be dynamic, but its spec is the Dim itself (torch's SymInt input), not axes
    assert "the Dim itself, not a dict of axes" in err({"n": {0: Dim("b")}}, args, model)
    assert "spec for 'opts' names 'v', which the input does not have" in err({"opts": {"v": None}}, args, model)
    args2 = ((arr(1), arr(1)), 3, {})
    assert "spec for 'x' must be a tuple/list of 2 entries" in err({"x": ({0: Dim("b")},)}, args2, model)


def test_error_same_name_two_ranges():
    msg = err({"x": {0: Dim("b", max=4)}, "y": {0: Dim("b", max=8)}})
    assert "Dim name 'b' is used with two different ranges" in msg and "x.shape[0]" in msg and "y.shape[0]" in msg


def test_error_whole_spec_types():
    assert "dynamic_shapes must be a dict" in err(Dim("b"))
    sc = ShapesCollection()
    assert "must be the whole dynamic_shapes argument" in err({"x": sc})


def test_bad_binding_is_type_error():
    with pytest.raises(TypeError, match="do not match the model's signature"):
        normalize_dynamic_shapes(f_xy, (arr(1),), {}, None)


def test_example_inputs_passed_as_one_tuple_get_a_hint():
    """torch.export's habit, export(model, (x, y)): the message says how this API takes them."""
    with pytest.raises(TypeError, match=r"positional arguments \(export\(model, x, y\)\), not one tuple"):
        normalize_dynamic_shapes(f_xy, ((arr(1), arr(1)),), {}, None)
    with pytest.raises(TypeError) as err:  # a tuple that would not fit either: no hint
        normalize_dynamic_shapes(f_xy, ((arr(1),),), {}, None)
    assert "not one tuple" not in str(err.value)


def test_default_parameter_may_be_named_static_only():
    def model(x, mask=None):
        return x

    assert axes(normalize_dynamic_shapes(model, (arr(2),), {}, {"x": None, "mask": None})) == [("x", {})]
    assert "names argument 'mask'" in err({"mask": {0: Dim("b")}}, (arr(2),), model)


# --- helpers for capture --------------------------------------------------------------------

def test_constraints_and_equalities():
    b = Dim("b", max=8)
    x, y = arr(4, 3), arr(9, 3)
    leaves = normalize_dynamic_shapes(f_xy, (x, y), {}, {"x": {0: b}, "y": {0: 2 * b + 1}})
    assert collect_dims(leaves) == {"b": b}
    assert leaves[1].constraints() == [Constraint("y", 0, "2*b + 1", 3, 17, root="b", scale=2, offset=1)]
    assert leaves[0].constraints() == [Constraint("x", 0, "b", 1, 8)]
    leaves = normalize_dynamic_shapes(f_xy, (x, x), {}, {"x": {0: b}, "y": {0: b}})
    assert equality_constraints_from(leaves) == [EqualityConstraint((("x", 0), ("y", 0)), "b")]
    assert isinstance(leaves[0], LeafSpec)


def test_named_dim_infos_and_checks():
    from tensorplay_export.errors import ConstraintsExceededError

    b = Dim("b", max=8)
    x, y = arr(4, 3), arr(9, 3)
    spec = {"x": {0: b}, "y": {0: 2 * b + 1}}
    leaves = normalize_dynamic_shapes(f_xy, (x, y), {}, spec)
    infos = named_dim_infos(leaves, [x, y])
    assert list(infos) == ["b"]
    got = infos["b"]
    assert (got.name, got.lower, got.upper, got.hint, got.sites, got.kind) == ("b", 1, 8, 4, ["x.shape[0]"], "named")

    only_derived = named_dim_infos(normalize_dynamic_shapes(f_xy, (x, y), {}, {"y": {0: 2 * b + 1}}), [x, y])
    assert only_derived["b"].hint == 4 and only_derived["b"].sites == ["(y.shape[0] - 1)/2"]
    for d, site in [(b - 1, "y.shape[0] + 1"), (3 * b, "y.shape[0]/3"), (b + 2, "y.shape[0] - 2")]:
        leaves = normalize_dynamic_shapes(f_xy, (x, arr(6, 3)), {}, {"y": {0: d}})
        assert named_dim_infos(leaves, [x, arr(6, 3)])["b"].sites == [site]
    assert math.isinf(named_dim_infos(normalize_dynamic_shapes(f_xy, (x, y), {}, {"x": {0: Dim("u")}}),
                                      [x, y])["u"].upper)

    def fails(spec, x, y, msg):
        leaves = normalize_dynamic_shapes(f_xy, (x, y), {}, spec)
        with pytest.raises(ConstraintsExceededError, match=re.escape(msg)):
            named_dim_infos(leaves, [x, y])

    fails({"x": {1: Dim("seq", max=2)}}, arr(4, 3), y, "x.shape[1] = 3 is outside seq in [1, 2]")
    fails({"x": {0: Dim("seq", min=5)}}, arr(4, 3), y, "x.shape[0] = 4 is outside seq in [5, inf]")
    fails({"x": {0: b}, "y": {0: b}}, arr(4, 3), arr(5, 3), "y.shape[0] = 5 but x.shape[0] = 4")
    fails({"x": {0: b}, "y": {0: 2 * b}}, arr(4, 3), arr(10, 3),
          "y.shape[0] = 10 needs b = 5, but x.shape[0] gives b = 4; y.shape[0] must be 8")
    fails({"y": {0: 2 * b}}, x, arr(9, 3), "y.shape[0] = 9 is not 2*b for any integer b")
    assert named_dim_infos(normalize_dynamic_shapes(f_xy, (arr(40, 3), y), {}, {"x": {0: b}}),
                           [arr(40, 3), y], check=False)["b"].hint == 40


def test_shapes_collection_with_var_args_and_kwargs():
    def model(x, *rest, **extra):
        return x

    x, a, k = arr(2), arr(3), arr(4)
    b = Dim("b")
    sc = ShapesCollection()
    sc[a] = {0: b}
    sc[k] = (Dim.AUTO,)
    assert sc.dynamic_shapes(model, (x, a), {"k": k}) == {"x": None, "rest": ({0: b},), "extra": {"k": (Dim.AUTO,)}}
    got = normalize_dynamic_shapes(model, (x, a), {"k": k}, sc)
    assert axes(got) == [("x", {}), ("rest[0]", {0: b}), ("extra['k']", {0: Dim.AUTO})]


def test_error_key_of_a_dict_input_suggests_nesting():
    def model(inputs):
        return inputs["x"]

    msg = err({"x": {0: Dim("b")}}, ({"x": arr(2)},), model)
    assert "names argument 'x' that the model does not take" in msg
    assert "'x' is a key of input 'inputs', so nest it: {'inputs': {'x': ...}}" in msg
