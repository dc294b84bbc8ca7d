"""tensorplay_export.pytree: flatten/unflatten, leaf paths, dataclasses, JSON TreeSpecs."""
from __future__ import annotations

import collections
import json
import sys
from dataclasses import dataclass
from typing import Optional

import numpy as np
import pytest

from tensorplay_export import pytree
from tensorplay_export.errors import ArchiveError

Point = collections.namedtuple("Point", "x y")


@dataclass
class Pair:
    a: object
    b: Optional[object] = None


@dataclass
class Sparse:
    values: object
    mask: Optional[object] = None


pytree.register_dataclass(Pair, serialized_type_name="tests.Pair")
pytree.register_dataclass(Sparse, serialized_type_name="tests.Sparse", return_none_fields=False)


def test_flatten_order_and_roundtrip():
    x, y = np.ones(2), np.zeros(3)
    tree = ((x, [1, None, {"k": y, "j": "s"}]), {"z": (2.5,)})
    leaves, spec = pytree.tree_flatten(tree)
    assert leaves[0] is x and leaves[1] == 1 and leaves[2] is y and leaves[3:] == ["s", 2.5]
    assert [type(v).__name__ for v in leaves] == ["ndarray", "int", "ndarray", "str", "float"]
    assert spec.num_leaves == 5
    back = pytree.tree_unflatten(leaves, spec)
    assert back[0][0] is x and back[0][1][1] is None and list(back[0][1][2]) == ["k", "j"]
    assert back[1] == {"z": (2.5,)}
    assert type(back[0]) is tuple and type(back[0][1]) is list


def test_none_has_no_leaves_and_namedtuple_is_a_node():
    from collections import namedtuple

    P = namedtuple("P", "a b")
    leaves, spec = pytree.tree_flatten([None, P(1, [2])])
    assert leaves == [1, 2]
    back = pytree.tree_unflatten(leaves, spec)
    assert back == [None, P(1, [2])] and type(back[1]) is P
    assert pytree.tree_map(lambda v: v * 10, P(1, 2)) == P(10, 20)


def test_unflatten_wrong_leaf_count():
    _, spec = pytree.tree_flatten((1, 2))
    with pytest.raises(ValueError, match="needs 2 leaves, got 3"):
        pytree.tree_unflatten([1, 2, 3], spec)


def test_paths():
    got = pytree.tree_leaves_with_path({"scale": 1, "bias": [2, (3,)]}, "extras")
    assert got == [("extras['scale']", 1), ("extras['bias'][0]", 2), ("extras['bias'][1][0]", 3)]
    assert pytree.tree_leaves_with_path((5, 6), "args") == [("args[0]", 5), ("args[1]", 6)]
    assert pytree.tree_leaves_with_path(Pair(1, 2), "p") == [("p.a", 1), ("p.b", 2)]
    assert pytree.tree_leaves_with_path(7, "x") == [("x", 7)]


def test_dataclass_return_none_fields_true_keeps_a_none_leaf():
    leaves, spec = pytree.tree_flatten(Pair(np.ones(1)))
    assert len(leaves) == 2 and leaves[1] is None
    back = pytree.tree_unflatten(leaves, spec)
    assert isinstance(back, Pair) and back.b is None
    assert pytree.tree_leaves_with_path(Pair(1), "p") == [("p.a", 1), ("p.b", None)]


def test_dataclass_return_none_fields_false_drops_none_fields():
    leaves, spec = pytree.tree_flatten(Sparse(np.ones(1)))
    assert len(leaves) == 1
    back = pytree.tree_unflatten(leaves, spec)
    assert isinstance(back, Sparse) and back.mask is None
    leaves2, spec2 = pytree.tree_flatten(Sparse(1, 2))
    assert leaves2 == [1, 2] and spec2 != spec


def test_register_dataclass_errors():
    class NotDC:
        pass

    with pytest.raises(TypeError, match="dataclass"):
        pytree.register_dataclass(NotDC)

    @dataclass
    class Other:
        v: int

    with pytest.raises(ValueError, match="already registered"):
        pytree.register_dataclass(Other, serialized_type_name="tests.Pair")
    with pytest.raises(ValueError, match="reserved"):
        pytree.register_dataclass(Other, serialized_type_name="dict")
    assert pytree.register_dataclass(Other) is Other
    assert pytree.is_registered_dataclass(Other(1))


def test_tree_map():
    assert pytree.tree_map(lambda v: v * 2, {"a": (1, [2])}) == {"a": (2, [4])}


def test_json_roundtrip():
    tree = ({"x": 1, 3: [2, None], None: Pair(4), True: Sparse(5)}, (6,))
    leaves, spec = pytree.tree_flatten(tree)
    data = json.loads(json.dumps(pytree.treespec_to_json(spec)))
    spec2 = pytree.treespec_from_json(data)
    assert spec2 == spec
    assert pytree.tree_unflatten(leaves, spec2) == tree


def test_json_unknown_dataclass_is_archive_error():
    data = pytree.treespec_to_json(pytree.tree_flatten(Pair(1))[1])
    data["type"] = "os.system"
    with pytest.raises(ArchiveError, match="unknown type 'os.system'"):
        pytree.treespec_from_json(data)


@pytest.mark.parametrize("bad", [
    None, [], {"type": 3}, {"type": "tuple"}, {"type": "dict", "children": [], "keys": [{"t": "set", "v": 1}]},
    {"type": "tuple", "children": [{"type": "nope", "children": []}]},
    {"type": "tests.Pair", "fields": ["zz"], "children": [{"type": "leaf"}]},
])
def test_json_malformed_is_archive_error(bad):
    if isinstance(bad, dict) and bad.get("type") == "dict" and bad.get("keys"):
        bad["children"] = [{"type": "leaf"}]
    with pytest.raises(ArchiveError):
        pytree.treespec_from_json(bad)


def test_json_refuses_unserializable_keys():
    _, spec = pytree.tree_flatten({(1, 2): 3})
    with pytest.raises(ValueError, match="cannot serialize dict key"):
        pytree.treespec_to_json(spec)


def _trees():
    from hypothesis import strategies as st

    leaves = st.one_of(st.integers(-5, 5), st.text(max_size=3), st.none(), st.floats(allow_nan=False))
    keys = st.one_of(st.text(max_size=4), st.integers(-3, 3))
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple),
                                st.dictionaries(keys, inner, max_size=3),
                                st.builds(Pair, inner, inner), st.builds(Sparse, inner, inner)),
        max_leaves=12)


def test_property_flatten_unflatten_and_json_roundtrip():
    from hypothesis import given, settings

    @settings(max_examples=200, deadline=None)
    @given(_trees())
    def check(tree):
        leaves, spec = pytree.tree_flatten(tree)
        assert pytree.tree_unflatten(leaves, spec) == tree
        spec2 = pytree.treespec_from_json(json.loads(json.dumps(pytree.treespec_to_json(spec))))
        assert spec2 == spec
        assert [p for p, _ in pytree.tree_leaves_with_path(tree, "t")] == \
            [p for p, _ in pytree.tree_leaves_with_path(pytree.tree_unflatten(leaves, spec2), "t")]
        assert len(pytree.tree_leaves_with_path(tree)) == len(leaves)

    check()


def _fake_main(monkeypatch, file=None, spec_name=None):
    import types

    main = types.ModuleType("__main__")
    if file is not None:
        main.__file__ = file
    main.__spec__ = types.SimpleNamespace(name=spec_name) if spec_name else None
    monkeypatch.setitem(sys.modules, "__main__", main)


def _main_class(name="Batch"):
    import dataclasses

    cls = dataclasses.make_dataclass(name, [("a", int)])
    cls.__module__ = "__main__"
    return cls


def test_default_type_name_names_a_script_as_importing_it_does(monkeypatch):
    cls = _main_class()
    _fake_main(monkeypatch, file="/somewhere/train.py")
    assert pytree.default_type_name(cls) == "train.Batch"
    _fake_main(monkeypatch, file="/somewhere/run.py", spec_name="pkg.train")  # python -m pkg.train
    assert pytree.default_type_name(cls) == "pkg.train.Batch"
    _fake_main(monkeypatch)  # a notebook or a REPL: no file
    assert pytree.default_type_name(cls) == "__main__.Batch"
    _fake_main(monkeypatch, file="/somewhere/my-script.py")  # no module name imports it
    assert pytree.default_type_name(cls) == "__main__.Batch"
    assert pytree.default_type_name(Point) == f"{__name__}.Point"


def test_a_script_class_imported_again_by_name_registers_under_the_same_name(monkeypatch):
    import dataclasses

    _fake_main(monkeypatch, file="/somewhere/tpe_test_script.py")
    as_main = pytree.register_dataclass(_main_class("Twice"))
    again = dataclasses.make_dataclass("Twice", [("a", int)])
    again.__module__ = "tpe_test_script"
    pytree.register_dataclass(again)  # no clash: the same class, once as __main__ and once imported
    _, spec = pytree.tree_flatten(as_main(1))
    assert spec.kind == "tpe_test_script.Twice"
    assert type(pytree.tree_unflatten([2], spec)) is again
    other = dataclasses.make_dataclass("Twice", [("a", int)])
    other.__module__ = "elsewhere"
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_dataclass(other, serialized_type_name="tpe_test_script.Twice")


def test_leaf_paths_read_from_a_spec_are_the_paths_of_its_trees_leaves():
    import collections

    from tensorplay_export.pytree import tree_flatten, tree_leaves_with_path, treespec_leaf_paths

    Pair = collections.namedtuple("Pair", "a b")
    trees = [
        {"x": 1, "it's]": [2, (3, None)], 3: Pair(4, [5])},
        (1, [], {}, None, ((2,),)),
        7,
    ]
    for tree in trees:
        _, spec = tree_flatten(tree)
        assert treespec_leaf_paths(spec, "arg") == [p for p, _ in tree_leaves_with_path(tree, "arg")]
