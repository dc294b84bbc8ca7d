"""Namedtuples (numpy's results, ``collections.namedtuple``, ``typing.NamedTuple``) as program
inputs and outputs: pytree nodes rebuilt as the same type by the program, ``module()``, a
loaded archive (without importing anything the archive names) and module views."""
from __future__ import annotations

import collections
import io
import json
import sys
import typing
import zipfile

import numpy as np
import pytest

from tensorplay_export import Dim, export, load, nn, pytree, save
from tensorplay_export.errors import ArchiveError
from tensorplay_export.program.unflatten import unflatten

Point = collections.namedtuple("Point", "xy weight")


class Pair(typing.NamedTuple):
    left: np.ndarray
    right: np.ndarray


class Registered(typing.NamedTuple):
    value: np.ndarray
    count: np.ndarray


pytree.register_namedtuple(Registered, serialized_type_name="tests.namedtuple_io.Registered")

N = Dim("n", min=2, max=64)


def _rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _spd(n, seed=0):
    a = _rand(n, n, seed=seed)
    return a @ a.T + n * np.eye(n)


def _same(got, want):
    assert type(got) is type(want)
    if isinstance(want, tuple):
        assert getattr(type(got), "_fields", None) == getattr(type(want), "_fields", None)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    elif isinstance(want, dict):
        assert list(got) == list(want)
        for k in want:
            _same(got[k], want[k])
    else:
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)


def _same_fields(got, want):
    """A loaded program's namedtuple of a type it built: same name, fields and values."""
    assert type(got).__name__ == type(want).__name__ and type(got)._fields == type(want)._fields
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-10)


def svd(x):
    return np.linalg.svd(x, full_matrices=False)


def eigh(a):
    return np.linalg.eigh(a)


def slogdet(a):
    return np.linalg.slogdet(a)


def points(p):
    return Point(p.xy * p.weight[:, None], p.weight.sum()), {"pair": Pair(p.xy[:, 0], p.xy[:, 1] - 1.0)}


@pytest.fixture(scope="module")
def svd_ep():
    return export(svd, _rand(5, 3), dynamic_shapes=({0: N},))


@pytest.fixture(scope="module")
def points_ep():
    return export(points, Point(_rand(4, 2), _rand(4, seed=1)), dynamic_shapes=(Point({0: N}, {0: N}),))


@pytest.mark.parametrize("n", [2, 7, 13])
def test_svd_returned_whole_keeps_numpy_svdresult(svd_ep, n):
    x = _rand(n, 3, seed=n)
    got, want = svd_ep.module()(x), svd(x)
    assert type(got) is type(want) and got._fields == ("U", "S", "Vh")
    _same(got, want)
    _same(svd_ep.module()(x=x), want)


@pytest.mark.parametrize("fn, make", [(eigh, lambda n: _spd(n, n)), (slogdet, lambda n: _spd(n, n)),
                                      (slogdet, lambda n: np.stack([_spd(n, 1), -_spd(n, 2)]))])
def test_eigh_and_slogdet_returned_whole(fn, make):
    ep = export(fn, make(4), dynamic_shapes=({-1: N, -2: N},))
    for n in (2, 5, 9):
        a = make(n)
        got, want = ep.module()(a), fn(a)
        assert type(got) is type(want)
        _same(got, want)


@pytest.mark.parametrize("n", [2, 6, 11])
def test_user_namedtuples_in_and_out(points_ep, n):
    p = Point(_rand(n, 2, seed=n), _rand(n, seed=n + 1))
    got, want = points_ep.module()(p), points(p)
    _same(got, want)
    assert type(got[0]) is Point and type(got[1]["pair"]) is Pair


def test_namedtuple_input_specs_by_tuple_and_by_field_dict():
    p = Point(_rand(4, 2), _rand(4, seed=1))
    for spec in (((({0: N}, {0: N})),), ({"xy": {0: N}, "weight": {0: N}},)):
        ep = export(points, p, dynamic_shapes=spec)
        q = Point(_rand(9, 2, seed=3), _rand(9, seed=4))
        _same(ep.module()(q), points(q))


def test_namedtuple_input_leaf_paths_name_the_fields(points_ep):
    assert [p for p, _ in pytree.tree_leaves_with_path(Point(1, 2), "p")] == ["p.xy", "p.weight"]
    assert {n.name for n in points_ep.graph.nodes if n.op == "placeholder"} == {"p_xy", "p_weight"}


def test_a_plain_tuple_is_not_the_namedtuple(points_ep):
    with pytest.raises(TypeError, match="structured as"):
        points_ep.module()((_rand(3, 2), _rand(3)))


def _round_trip(ep):
    buf = io.BytesIO()
    save(ep, buf)
    buf.seek(0)
    return load(buf), buf.getvalue()


def test_loaded_program_returns_numpy_result_types(svd_ep):
    loaded, _ = _round_trip(svd_ep)
    for n in (3, 10):
        x = _rand(n, 3, seed=n)
        got = loaded.module()(x)
        assert type(got) is type(np.linalg.svd(x))
        _same(got, svd(x))


def test_loaded_program_builds_unregistered_types_by_name_and_fields(points_ep):
    loaded, _ = _round_trip(points_ep)
    for n in (2, 8):
        p = Point(_rand(n, 2, seed=n), _rand(n, seed=n + 1))
        got, want = loaded.module()(p), points(p)  # the caller's own Point is accepted
        _same_fields(got[0], want[0])
        _same_fields(got[1]["pair"], want[1]["pair"])
        assert type(got[0]) is not Point  # built from the archive's name and fields, not imported
    # the built types flatten to the stored names again: re-saving the loaded program keeps them
    again, _ = _round_trip(loaded)
    p = Point(_rand(5, 2), _rand(5, seed=2))
    _same_fields(again.module()(p)[0], points(p)[0])


def test_registered_namedtuple_loads_as_its_class():
    def model(x):
        return Registered(x * 3.0, x.sum(axis=0))

    ep = export(model, _rand(4, 2), dynamic_shapes=({0: N},))
    loaded, raw = _round_trip(ep)
    assert b"tests.namedtuple_io.Registered" in raw or "tests.namedtuple_io.Registered" in _program_json(raw)
    for n in (2, 12):
        x = _rand(n, 2, seed=n)
        _same(loaded.module()(x), model(x))


def _program_json(raw: bytes) -> str:
    with zipfile.ZipFile(io.BytesIO(raw)) as z:
        return "".join(z.read(n).decode() for n in z.namelist() if n.endswith("program.json"))


def _edited(raw: bytes, old: str, new: str) -> io.BytesIO:
    src = zipfile.ZipFile(io.BytesIO(raw))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("program.json"):
                assert old.encode() in data
                data = data.replace(old.encode(), new.encode())
            dst.writestr(info, data)
    out.seek(0)
    return out


def test_archive_type_names_are_never_imported(points_ep):
    _, raw = _round_trip(points_ep)
    stored = f"{Point.__module__}.Point"
    assert stored in _program_json(raw)
    assert "tpe_hostile_module" not in sys.modules
    loaded = load(_edited(raw, f'"{stored}"', '"tpe_hostile_module.sub.Evil"'))
    assert "tpe_hostile_module" not in sys.modules and "tpe_hostile_module.sub" not in sys.modules
    evil = pytree.resolve_namedtuple("tpe_hostile_module.sub.Evil", ("xy", "weight"))
    assert evil.__name__ == "Evil" and evil._fields == ("xy", "weight")
    p = Point(_rand(3, 2), _rand(3, seed=1))
    got = loaded.module()(evil(*p))[0]  # the input spec names the edited type now
    assert type(got) is evil
    np.testing.assert_allclose(got.xy, points(p)[0].xy)
    assert "tpe_hostile_module" not in sys.modules


@pytest.mark.parametrize("bad", ['"__class__"', '"import os"', '"_x"', '"for"'])
def test_archive_with_a_bad_namedtuple_field_is_refused(points_ep, bad):
    _, raw = _round_trip(points_ep)
    with pytest.raises(ArchiveError, match="namedtuple"):
        load(_edited(raw, '"weight"', bad))


def test_treespec_json_of_a_namedtuple():
    _, spec = pytree.tree_flatten([Point(1, (2, 3))])
    data = json.loads(json.dumps(pytree.treespec_to_json(spec)))
    node = data["children"][0]
    assert node["type"] == "namedtuple" and node["fields"] == ["xy", "weight"]
    assert node["name"] == f"{Point.__module__}.Point"
    back = pytree.treespec_from_json(data)
    assert back == spec  # same name, fields and children: equal, though the class may differ
    assert pytree.tree_unflatten([1, 2, 3], back) == [Point(1, (2, 3))]
    with pytest.raises(ArchiveError, match="namedtuple"):
        pytree.treespec_from_json({"type": "namedtuple", "name": "x.Y", "fields": ["a"], "children": []})


def test_namedtuple_spec_differs_from_tuple_and_other_names():
    Other = collections.namedtuple("Other", "xy weight")
    _, p = pytree.tree_flatten(Point(1, 2))
    assert p != pytree.tree_flatten((1, 2))[1] and p != pytree.tree_flatten(Other(1, 2))[1]
    assert repr(p) == f"{Point.__module__}.Point(xy=*, weight=*)"


def test_register_namedtuple_errors():
    with pytest.raises(TypeError, match="namedtuple"):
        pytree.register_namedtuple(tuple)
    Clash = collections.namedtuple("Clash", "a")
    with pytest.raises(ValueError, match="already registered"):
        pytree.register_namedtuple(Clash, serialized_type_name="tests.namedtuple_io.Registered")


class Inner(nn.Module):
    def forward(self, x):
        return Pair(x * 2.0, x.mean(axis=0))


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        r = self.inner(x)
        return Pair(r.left + 1.0, r.right)


def test_unflattened_submodule_returns_its_namedtuple():
    m = Outer()
    ep = export(m, _rand(4, 3), dynamic_shapes=({0: N},), preserve_module_call_signature=("inner",))
    u = unflatten(ep)
    for n in (2, 9):
        x = _rand(n, 3, seed=n)
        _same(u(x), m(x))
        _same(ep.module()(x), m(x))


def test_a_namedtuple_with_renamed_fields_saves_and_loads(tmp_path):
    renamed = collections.namedtuple("Renamed", ["a", "def"], rename=True)   # fields ('a', '_1')

    def model(x):
        return renamed(x + 1, x * 2)

    ep = export(model, np.ones((3, 2)), dynamic_shapes={"x": {0: Dim("n")}})
    save(ep, tmp_path / "r.pt2")
    loaded = load(tmp_path / "r.pt2")
    x = np.arange(10.0).reshape(5, 2)
    got = loaded.module()(x)
    assert got._fields == ("a", "_1")
    np.testing.assert_array_equal(got._1, x * 2)
