"""ExportedProgram.serialize()/deserialize(): the in-memory artifact (JSON bytes + arrays)."""
from __future__ import annotations

import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.errors import ArchiveError, ConstraintsExceededError
from tensorplay_export.serde import SerializedArtifact, WeightType, deserialize_program, serialize_program

from conftest import small_inputs


def test_serialize_returns_json_and_arrays(small_program):
    art = small_program.serialize()
    assert isinstance(art, SerializedArtifact)
    doc = json.loads(art.exported_program)
    assert doc["format"] == "tensorplay_export.program" and doc["schema_version"] == 3
    assert set(art.state_dict) == {"weight", "shift", "scale"} and set(art.constants) == {"c_TABLE"}
    assert set(art.example_inputs) == {"0"}
    assert art.exported_program == small_program.serialize().exported_program  # deterministic


def test_deserialize_roundtrip(small_program):
    ep = tpe.ExportedProgram.deserialize(small_program.serialize())
    x = small_inputs(4, 11)
    np.testing.assert_array_equal(ep.module()(x), small_program.module()(x))
    assert ep.range_constraints == small_program.range_constraints
    with pytest.raises(ConstraintsExceededError):
        ep.module()(small_inputs(4, 65))
    assert serialize_program(ep).exported_program == small_program.serialize().exported_program


def test_deserialize_with_state_overrides(small_program):
    art = small_program.serialize()
    new_weight = np.eye(8, dtype=np.float32)
    ep = tpe.ExportedProgram.deserialize(art, state_dict={"weight": new_weight})
    np.testing.assert_array_equal(ep.state_dict["weight"], new_weight)
    new_weight[0, 0] = 5.0  # the program owns a copy of the override
    assert ep.state_dict["weight"][0, 0] == 1.0
    with pytest.raises(ArchiveError, match=r"state_dict|weights\['weight'\]"):
        tpe.ExportedProgram.deserialize(art, state_dict={"weight": np.eye(8)})  # float64: wrong dtype


def test_deserialize_json_bytes_alone_needs_arrays(small_program):
    art = small_program.serialize()
    with pytest.raises(ArchiveError, match="missing from the artifact"):
        deserialize_program(art.exported_program)
    ep = deserialize_program(art.exported_program, state_dict=art.state_dict, constants=art.constants,
                             example_inputs=art.example_inputs)
    assert np.array_equal(ep.example_inputs["args"][0], small_program.example_inputs["args"][0])


def test_example_inputs_override(small_program):
    x = small_inputs(1, 1)
    ep = tpe.ExportedProgram.deserialize(small_program.serialize(), example_inputs=((x,), {}))
    assert ep.example_inputs["args"][0] is x


def test_opset_checked_on_deserialize(small_program):
    art = small_program.serialize(opset_version={"custom": 3})
    assert json.loads(art.exported_program)["opset_version"] == {"custom": 3, "tensorplay_export": 1}
    with pytest.raises(ArchiveError, match="opset version mismatch"):
        deserialize_program(art, expected_opset_version={"custom": 4})


def test_pickle_protocol_validated_on_serialize(small_program):
    with pytest.raises(ValueError, match="pickle_protocol"):
        small_program.serialize(pickle_protocol=7)


def test_deserialize_rejects_other_types():
    with pytest.raises(TypeError):
        deserialize_program(42)


def test_weight_type_roles():
    assert [w.name for w in WeightType] == ["PARAMETER", "BUFFER", "NON_PERSISTENT_BUFFER", "CONSTANT",
                                            "GRAPH_CONSTANT"]
    assert tpe.WeightType is WeightType and int(WeightType.PARAMETER) == 1


def test_symbols_get_their_ranges_and_assumptions_back(small_program):
    ep = tpe.ExportedProgram.deserialize(small_program.serialize())
    graph_symbols = set()
    for n in ep.graph.nodes:
        for d in n.meta.get("shape") or ():
            graph_symbols |= getattr(d, "free_symbols", set())
    assert graph_symbols and graph_symbols <= set(ep.range_constraints)
    assert all(s.is_integer and s.is_positive for s in graph_symbols)
