"""Registered dataclasses as program inputs and outputs: export, module(), save/load,
decompositions and module views."""
from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from typing import Optional

import numpy as np
import pytest

from tensorplay_export import Dim, export, load, nn, register_dataclass, save
from tensorplay_export.errors import ArchiveError, ConstraintsExceededError
from tensorplay_export.nn import functional as F
from tensorplay_export.program.unflatten import unflatten


@dataclasses.dataclass
class Batch:
    tokens: np.ndarray
    scale: np.ndarray
    mask: Optional[np.ndarray] = None


@dataclasses.dataclass
class Result:
    logits: np.ndarray
    aux: Optional[np.ndarray] = None


@dataclasses.dataclass
class Sparse:
    values: np.ndarray
    extra: Optional[np.ndarray] = None


register_dataclass(Batch, serialized_type_name="tests.dataclass_io.Batch")
register_dataclass(Result, serialized_type_name="tests.dataclass_io.Result")
register_dataclass(Sparse, serialized_type_name="tests.dataclass_io.Sparse", return_none_fields=False)

SPEC = {"batch": Batch(tokens={0: Dim("n", max=16)}, scale=None, mask=None)}


def model(batch):
    y = F.softmax(batch.tokens * batch.scale, dim=-1)
    return Result(y, np.var(y, axis=-1) if batch.mask is None else None)


def _batch(n, seed=0):
    rng = np.random.default_rng(seed)
    return Batch(rng.standard_normal((n, 4)), rng.standard_normal(4))


def _same(a, b):
    assert type(a) is type(b)
    if dataclasses.is_dataclass(a):
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif a is None:
        assert b is None
    else:
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.fixture(scope="module")
def ep():
    return export(model, _batch(3), dynamic_shapes=SPEC)


@pytest.mark.parametrize("n", [1, 2, 9])
def test_export_and_module_keep_dataclasses(ep, n):
    b = _batch(n, n)
    out = ep.module()(b)
    assert isinstance(out, Result) and out.logits.shape == (n, 4) and out.aux.shape == (n,)
    _same(out, model(b))


def test_dataclass_inputs_keep_the_contract(ep):
    with pytest.raises(ConstraintsExceededError):
        ep.module()(_batch(17))
    with pytest.raises(TypeError, match="structured as"):
        ep.module()((_batch(2).tokens, _batch(2).scale))


def test_dims_by_field_dict_spec():
    ep = export(model, _batch(3), dynamic_shapes={"batch": {"tokens": {0: Dim("n")}}})
    _same(ep.module()(_batch(6)), model(_batch(6)))


@pytest.mark.parametrize("how", ["path", "buffer"])
def test_save_load_round_trip(ep, tmp_path, how):
    if how == "path":
        target = tmp_path / "prog.pt2"
        save(ep, target)
        loaded = load(target)
    else:
        buf = io.BytesIO()
        save(ep, buf)
        buf.seek(0)
        loaded = load(buf)
    for n in (1, 5):
        _same(loaded.module()(_batch(n, 7)), ep.module()(_batch(n, 7)))
    with pytest.raises(ConstraintsExceededError):
        loaded.module()(_batch(17))


def test_archive_records_serialized_type_name(ep, tmp_path):
    path = tmp_path / "prog.pt2"
    save(ep, path)
    with zipfile.ZipFile(path) as z:
        texts = [z.read(n).decode() for n in z.namelist() if n.endswith("program.json")]
    assert texts and all("tests.dataclass_io.Batch" in t and "tests.dataclass_io.Result" in t for t in texts)
    assert "tests.test_dataclass_io" not in texts[0]  # the pinned name, not the module path


def test_unknown_type_name_in_archive_is_refused(ep, tmp_path):
    buf = io.BytesIO()
    save(ep, buf)
    src = zipfile.ZipFile(io.BytesIO(buf.getvalue()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("program.json"):
                data = data.replace(b"tests.dataclass_io.Result", b"tests.dataclass_io.Missing")
            dst.writestr(info, data)
    out.seek(0)
    with pytest.raises(ArchiveError, match="Missing"):
        load(out)


def test_serialized_name_clash_is_an_error():
    @dataclasses.dataclass
    class Other:
        x: np.ndarray

    with pytest.raises(ValueError, match="already registered"):
        register_dataclass(Other, serialized_type_name="tests.dataclass_io.Batch")
    with pytest.raises(TypeError):
        register_dataclass(dict)


def test_return_none_fields_false_drops_none_fields(tmp_path):
    def f(s):
        return Sparse(s.values * 2.0), [Sparse(s.values, s.values + 1.0)]

    ep = export(f, Sparse(np.ones((3, 2))), dynamic_shapes={"s": {"values": {0: Dim("n")}}})
    out = ep.module()(Sparse(np.ones((4, 2))))
    assert out[0].extra is None and out[1][0].extra.shape == (4, 2)
    # A None field is no leaf: passing a value there is a different structure.
    with pytest.raises(TypeError, match="structured as"):
        ep.module()(Sparse(np.ones((4, 2)), np.ones(2)))
    save(ep, tmp_path / "s.pt2")
    loaded = load(tmp_path / "s.pt2")
    _same(loaded.module()(Sparse(np.full((2, 2), 3.0))), f(Sparse(np.full((2, 2), 3.0))))


def test_return_none_fields_true_keeps_a_none_leaf(ep):
    # Batch.mask was None at export: one constant leaf, so any other value breaks the contract.
    b = _batch(2)
    with pytest.raises(ConstraintsExceededError):
        ep.module()(Batch(b.tokens, b.scale, np.ones((2, 4))))
    out = ep.module()(b)
    assert out.aux is not None


def test_decompositions_keep_dataclass_io(ep):
    ep2 = ep.run_decompositions()
    assert not {"tpe.nn.softmax", "numpy.var"} & {n.target for n in ep2.graph.nodes}
    for n in (1, 4):
        _same(ep2.module()(_batch(n, 3)), ep.module()(_batch(n, 3)))


class Scaler(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.linspace(0.5, 2.0, 4))

    def forward(self, batch):
        return Result(batch.tokens * self.w * batch.scale)


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Scaler()

    def forward(self, batch):
        return Result(self.inner(batch).logits + 1.0)


def test_unflattened_submodule_with_dataclass_signature():
    m = Wrapper()
    ep = export(m, _batch(3), dynamic_shapes=SPEC, preserve_module_call_signature=("inner",))
    u = unflatten(ep)
    b = _batch(5, 11)
    _same(u.inner(b), m.inner(b))
    _same(u(b), m(b))


def test_treespec_json_names_the_dataclass():
    from tensorplay_export.pytree import tree_flatten, treespec_from_json, treespec_to_json

    _leaves, spec = tree_flatten(Result(np.ones(2)))
    data = json.loads(json.dumps(treespec_to_json(spec)))
    assert data["type"] == "tests.dataclass_io.Result"
    assert treespec_from_json(data) == spec


@register_dataclass
@dataclasses.dataclass(frozen=True)
class Inner:
    a: np.ndarray
    k: int = 2


@dataclasses.dataclass
class Outer:
    inner: Inner
    b: np.ndarray


register_dataclass(Outer, serialized_type_name="tests.dataclass_io.Outer")


def nested(o):
    return Outer(Inner(o.inner.a * o.inner.k, o.inner.k), o.b + 1.0)


def _outer(n, k=2):
    return Outer(Inner(np.arange(2.0 * n).reshape(n, 2), k), np.zeros(2))


@pytest.fixture(scope="module")
def nested_ep():
    spec = {"o": {"inner": {"a": {0: Dim("n")}, "k": None}, "b": None}}
    return export(nested, _outer(3), dynamic_shapes=spec)


def test_nested_frozen_dataclass_with_int_field(nested_ep):
    out = nested_ep.module()(_outer(5))
    assert isinstance(out, Outer) and isinstance(out.inner, Inner) and out.inner.k == 2
    _same(out.inner.a, nested(_outer(5)).inner.a)
    with pytest.raises(ConstraintsExceededError, match="constant 2"):
        nested_ep.module()(_outer(5, k=3))


def test_serialize_deserialize_and_package(nested_ep, tmp_path):
    from tensorplay_export import ExportedProgram, load_pt2, package_pt2

    again = ExportedProgram.deserialize(nested_ep.serialize())
    _same(again.module()(_outer(4)), nested_ep.module()(_outer(4)))
    package_pt2(tmp_path / "multi.pt2", exported_programs={"plain": nested_ep,
                                                           "decomposed": nested_ep.run_decompositions()})
    contents = load_pt2(tmp_path / "multi.pt2")
    assert set(contents.exported_programs) == {"plain", "decomposed"}
    for prog in contents.exported_programs.values():
        _same(prog.module()(_outer(2)), nested(_outer(2)))
