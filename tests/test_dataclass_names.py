"""Archives of dataclass programs read as data: unregistered class names are kept, never imported."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from tensorplay_export import Dim, export, load, pytree, register_dataclass, save
from tensorplay_export.errors import ArchiveError
from tensorplay_export.face.contract import contract_of, load_contract


@dataclasses.dataclass
class Pair:
    tokens: np.ndarray
    scale: np.ndarray


register_dataclass(Pair, serialized_type_name="tests.dataclass_names.Pair")


def model(p):
    return p.tokens * p.scale


@pytest.fixture
def archive(tmp_path, monkeypatch):
    ep = export(model, Pair(np.ones((3, 4)), np.arange(4.0)), dynamic_shapes={"p": Pair({0: Dim("n", max=9)}, None)})
    path = tmp_path / "pair.pt2"
    save(ep, path)
    # as in a process that never imported this module: the name is not registered
    monkeypatch.delitem(pytree._BY_NAME, "tests.dataclass_names.Pair")
    return path


def test_strict_load_still_refuses_an_unregistered_name(archive):
    with pytest.raises(ArchiveError, match="register the dataclass"):
        load(archive)


def test_the_contract_and_code_read_without_the_class(archive):
    c = load_contract(str(archive))
    assert c.inputs[0][0] == "p.tokens" and str(c.inputs[0][2][0]) == "n" and c.outputs[0][0][1] == 4
    with pytree.unregistered_dataclasses_as_names():
        ep = load(archive)
        (arg,) = ep.example_inputs["args"]  # built when first read: inside the block as well
    assert contract_of(ep).describe() == c.describe()
    assert "def forward(self, p_tokens, p_scale)" in ep.code
    assert isinstance(arg, pytree.UnresolvedDataclass) and arg.name == "tests.dataclass_names.Pair"
    assert [k for k, _v in arg.fields] == ["tokens", "scale"]
    with pytest.raises(TypeError):  # a call is checked against the structure it was exported for
        ep.module()(np.ones((3, 4)))


def test_registering_the_class_later_makes_the_program_run(archive, monkeypatch):
    with pytree.unregistered_dataclasses_as_names():
        ep = load(archive)
    monkeypatch.setitem(pytree._BY_NAME, "tests.dataclass_names.Pair", pytree._BY_CLASS[Pair])
    out = ep.module()(Pair(np.ones((5, 4)), np.arange(4.0)))
    np.testing.assert_array_equal(out, np.ones((5, 4)) * np.arange(4.0))
