"""Smaller seed points (issue 18, item 5), each checked on a real export."""
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.errors import ArchiveError

sys.path.insert(0, str(Path(__file__).parent))
from serde.conftest import Small, small_inputs  # noqa: E402


class Sub(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.table = np.linspace(-1.0, 1.0, 4, dtype=np.float32)

    def forward(self, x):
        return self.fc(x) + self.table


class Top(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sub = Sub()

    def forward(self, x):
        return self.sub(x) * 2


def _x(n):
    return np.random.default_rng(n).standard_normal((n, 4)).astype(np.float32)


def test_unknown_preserved_path_names_the_known_ones():
    with pytest.raises(ValueError, match=re.escape("names 'sub.fcc', which is no submodule path of the model; "
                                                   "known paths: 'sub', 'sub.fc'")):
        tpe.export(Top(), _x(3), preserve_module_call_signature=("sub.fcc",))
    ep = tpe.export(Top(), _x(3), preserve_module_call_signature=("sub",))
    assert any(e.fqn == "sub" and e.signature is not None for e in ep.module_call_graph)


def test_auto_ties_are_listed_as_equality_constraints():
    def f(x, y):
        return x + y

    a = np.ones((4, 3), np.float32)
    auto = tpe.Dim.AUTO
    ep = tpe.export(f, a, a.copy(), dynamic_shapes={"x": {0: auto, 1: auto}, "y": {0: auto, 1: auto}})
    sites = sorted(tuple(sorted(eq.sites)) for eq in ep.equality_constraints)
    assert sites == [(("x", 0), ("y", 0)), (("x", 1), ("y", 1))]
    # listed ties are what the program enforces
    m = ep.module()
    np.testing.assert_array_equal(m(np.ones((7, 2), np.float32), np.ones((7, 2), np.float32)), np.full((7, 2), 2.0))
    with pytest.raises(tpe.ConstraintsExceededError):
        m(np.ones((7, 2), np.float32), np.ones((6, 2), np.float32))
    d = tpe.Dim("d")  # a named Dim keeps its one constraint and its name
    named = tpe.export(f, a, a.copy(), dynamic_shapes={"x": {0: d}, "y": {0: d}})
    assert [(eq.name, eq.sites) for eq in named.equality_constraints] == [("d", (("x", 0), ("y", 0)))]


def test_refine_reads_fix_lines_with_trailing_comments():
    msg = ("Constraints violated\nSuggested fixes:\n"
           "  dx = Dim('dx', max=64)   # a range\n"
           "  dy = 2*dx                # a relation\n")
    dx, dy = tpe.Dim("dx"), tpe.Dim("dy")
    spec = tpe.refine_dynamic_shapes_from_suggested_fixes(msg, {"x": {0: dx}, "y": {0: dy}})
    assert spec["x"][0].max == 64 and str(spec["y"][0]) == "2*dx"


def test_constant_targets_are_qualified_names():
    ep = tpe.export(Top(), _x(3), dynamic_shapes={"x": {0: tpe.Dim("n", max=32)}})
    consts = {s.target for s in ep.graph_signature.input_specs if s.kind == tpe.InputKind.CONSTANT_TENSOR}
    assert consts == {"sub.table"}
    np.testing.assert_array_equal(ep.tensor_constants["sub.table"], Top().sub.table)
    m = ep.module()
    np.testing.assert_array_equal(m.sub.table, ep.tensor_constants["sub.table"])
    assert "self.sub.table" in m.code
    ref = Top()
    ref.sub.fc.weight[...] = ep.state_dict["sub.fc.weight"]
    ref.sub.fc.bias[...] = ep.state_dict["sub.fc.bias"]
    for n in (1, 9):
        np.testing.assert_allclose(m(_x(n)), ref(_x(n)), rtol=1e-5, atol=1e-6)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    buf.seek(0)
    back = tpe.load(buf)
    assert back.tensor_constants.keys() == {"sub.table"}
    np.testing.assert_allclose(back.module()(_x(5)), m(_x(5)), rtol=1e-6)


def test_save_of_a_non_program_is_a_type_error():
    for bad in (object(), "model.pt2", lambda x: x):
        with pytest.raises(TypeError, match="not an ExportedProgram"):
            tpe.save(bad, io.BytesIO())


def test_equality_constraint_needs_two_sites():
    with pytest.raises(ValueError, match="two or more input sites"):
        tpe.EqualityConstraint((("x", 0),))
    assert len(tpe.EqualityConstraint((("x", 0), ("y", 0))).sites) == 2


def test_short_names_find_the_composite():
    table = tpe.default_decompositions()
    assert "tanh" in table and table["tanh"] is table["tpe.nn.tanh"]
    assert "numpy.tanh" not in table        # the primitive is never decomposed
    assert table["var"] is table["numpy.var"]
    table.remove("tanh")
    assert "tanh" not in table and "tpe.nn.tanh" not in table


def test_fromkeys_without_value_takes_the_builtin_builders():
    builtins = tpe.default_decompositions()
    table = tpe.CustomDecompTable.fromkeys(["var", "tanh"])
    assert list(table) == ["numpy.var", "tpe.nn.tanh"]
    assert table["var"] is builtins["var"] and table["tanh"] is builtins["tanh"]
    with pytest.raises(KeyError, match="has no built-in decomposition"):
        tpe.CustomDecompTable.fromkeys(["add"])

    def var(x):
        return np.var(x, axis=-1)

    ep = tpe.export(var, _x(5), dynamic_shapes={"x": {0: tpe.Dim("n", max=32)}})
    dec = ep.run_decompositions(table)
    assert not any(n.target == "numpy.var" for n in dec.graph.nodes)
    for n in (2, 11):
        np.testing.assert_allclose(dec.module()(_x(n)), var(_x(n)), rtol=1e-5)


def test_deserialize_program_bytes_without_samples():
    ep = tpe.export(Small(), small_inputs(), dynamic_shapes={"x": {0: tpe.Dim("N", max=4), 1: tpe.Dim("S", max=8)}})
    art = ep.serialize()
    back = tpe.ExportedProgram.deserialize(art.exported_program, state_dict=art.state_dict, constants=art.constants)
    assert back.example_inputs == {}
    for n, s in ((1, 1), (3, 7)):
        np.testing.assert_allclose(back.module()(small_inputs(n, s)), ep.module()(small_inputs(n, s)), rtol=1e-6)
    with pytest.raises(ArchiveError, match="missing from the artifact"):
        tpe.ExportedProgram.deserialize(art.exported_program)
