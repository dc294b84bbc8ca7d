"""A damaged JSON contract given to `contract` or `diff` is refused with one error that names the
file, the field and what the field must be: its structure is checked before anything is read
(nesting, every field's JSON type, the output treespec, what each expression stands for)."""
from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.face.cli import main
from tensorplay_export.face.contract import contract_of, diff_contracts, load_contract
from tensorplay_export.face.contract_schema import nesting_depth
from tensorplay_export.serde.exprs import encode_expr


def _model(x, y, n: int):
    z = np.concatenate([x, y], axis=0)
    return {"h": z[: x.shape[0]] * 2, "pair": (z.reshape(-1), None), "size": x.shape[0] + 1}


@pytest.fixture(scope="module")
def document():
    """A contract with inputs, dims, a guard, sized and unsized outputs, an int input and a dict
    output structure: every kind of field a contract has."""
    ep = tpe.export(_model, np.zeros((4, 8), np.float32), np.zeros((6, 8), np.float32), 3,
                    dynamic_shapes={"x": {0: Dim("b", max=64)}, "y": {0: Dim("c", max=32)}, "n": Dim("n", max=9)})
    doc = contract_of(ep).to_json()
    b, c = (sympy.Symbol(v, integer=True, positive=True) for v in "bc")
    doc["guards"] = [{"text": "b + c <= 90", "tree": encode_expr(b + c <= 90)}]
    return doc


def _write(tmp_path, doc, name="damaged.json"):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return str(path)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, err.strip()


def test_the_damage_the_first_users_met_is_worded(document, tmp_path, capsys):
    archive = str(tmp_path / "m.pt2")
    tpe.save(tpe.export(lambda x: x * 2, np.zeros((2, 16), np.float32),
                        dynamic_shapes={"x": {0: Dim("batch", max=64)}}), archive)
    outputs_a_string = dict(document, outputs="x")
    checks_an_int = dict(document, runtime_checks=1)
    cases = [("[" * 100_000 + "]" * 100_000, "deep.json", "arrays and objects nested 100000 levels deep, at most 200 expected"),
             (outputs_a_string, "outputs.json", 'outputs must be an array of output objects, got "x"'),
             (checks_an_int, "checks.json", "runtime_checks must be an array of strings, got 1")]
    for doc, name, says in cases:
        path = _write(tmp_path, doc, name)
        code, err = _cli(capsys, "diff", path, archive)
        assert code == 2 and err == f"error: OLD: {name}: malformed contract: {says}", err
        code, err = _cli(capsys, "contract", path)
        assert code == 2 and err == f"error: {name}: malformed contract: {says}", err


def test_the_innermost_wrong_field_is_named(document, tmp_path):
    edits = [
        (("inputs", 0, "shape_tree", 0), "b", "inputs[0].shape_tree[0] must be a size: an integer >= 0 or an "
                                             "expression tree"),
        (("dims", 1, "max"), -3, "dims[1].max must be an integer >= 0 or null (unbounded), got -3"),
        (("dims", 0, "max"), 0, "dims[0].max must be null or at least min (1), got 0"),
        (("outputs", 2, "dtype"), 5, "outputs[2].dtype must be a string or null, got 5"),
        (("output_structure", "keys", 1, "t"), ["str"], "output_structure.keys[1] must be a key"),
        (("output_structure", "children", 1, "children"), None,
         "output_structure.children[1].children must be an array of treespec nodes, got null"),
        (("int_inputs", 0, "size_tree"), True, "int_inputs[0].size_tree must be a size"),
    ]
    for where, value, says in edits:
        doc = copy.deepcopy(document)
        *parents, last = where
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value
        with pytest.raises(ValueError) as err:
            load_contract(_write(tmp_path, doc))
        assert str(err.value).startswith(f"damaged.json: malformed contract: {says}"), str(err.value)


def test_an_expression_must_stand_for_what_its_field_holds(document, tmp_path):
    b = sympy.Symbol("b", integer=True, positive=True)
    for field, tree, says in (("symbol", encode_expr(b + 1), "dims[0].symbol must be a size symbol"),
                              ("guard", encode_expr(b + 1), "guards[0].tree must be a condition"),
                              ("shape", encode_expr(sympy.Eq(b, 2)), "inputs[0].shape_tree[0] must be a size "
                                                                     "expression")):
        doc = copy.deepcopy(document)
        if field == "symbol":
            doc["dims"][0]["symbol"] = tree
        elif field == "guard":
            doc["guards"][0]["tree"] = tree
        else:
            doc["inputs"][0]["shape_tree"][0] = tree
        with pytest.raises(ValueError, match="^damaged.json: malformed contract: " + says.replace("[", r"\[")
                           .replace("]", r"\]")):
            load_contract(_write(tmp_path, doc))


def _paths(value, at=()):
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, at + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, at + (i,))


def test_no_single_damaged_field_gets_past_unworded(document, tmp_path):
    """Every field, at every depth, replaced by values of other JSON types: the contract loads
    (and diffs against the original) or a ValueError names the file; nothing else escapes."""
    original = load_contract(_write(tmp_path, document, "original.json"))
    b = sympy.Symbol("b", integer=True, positive=True)
    wrong = ["x", -1, True, None, [], {}, ["Add", "q"], 1.5, encode_expr(b), encode_expr(sympy.Eq(b, 3))]
    loaded = 0
    for where in list(_paths(document))[1:]:
        for value in wrong:
            doc = copy.deepcopy(document)
            *parents, last = where
            node = doc
            for key in parents:
                node = node[key]
            node[last] = value
            try:
                contract = load_contract(_write(tmp_path, doc))
            except ValueError as err:
                assert str(err).startswith("damaged.json"), (where, value, err)
                continue
            loaded += 1
            contract.describe()
            diff_contracts(original, contract)
            diff_contracts(contract, original)
    assert loaded  # texts the reader does not use (a shape's text) may hold anything


def test_nesting_is_measured_outside_strings():
    assert nesting_depth('{"a": [[1], {"b": "[[[[{{"}]}') == 3
    assert nesting_depth('["\\"[[[", []]') == 2
