"""Size outputs in archives (issue 16 item 1): a Sym*Argument must name a tpe.size_value node the
graph returns at that position, of its kind; anything else is refused at load with ArchiveError."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import ArchiveError

from conftest import archive_bytes, members_of, repack
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"


def sizes_model(x):
    n = x.shape[0]
    return x * 2, n * 2 + 1, n > 3


@pytest.fixture(scope="module")
def good() -> bytes:
    ep = tpe.export(sizes_model, np.ones((6, 4), np.float32), dynamic_shapes={"x": {0: Dim("n", max=64)}})
    return archive_bytes(ep)


def edit(data: bytes, doc_fn) -> bytes:
    members = members_of(data)
    doc = program_doc(members[PROGRAM])
    doc_fn(doc)
    members[PROGRAM] = program_bytes(doc)
    return repack(members)


def node(doc, name):
    return next(n for n in doc["graph"]["nodes"] if n["name"] == name)


def test_good_size_archive_loads_and_computes_sizes_at_run_time(good):
    ep = tpe.load(io.BytesIO(good))
    kinds = [type(s.arg).__name__ for s in ep.graph_signature.output_specs]
    assert kinds == ["TensorArgument", "SymIntArgument", "SymBoolArgument"]
    y, k, big = ep.module()(np.ones((2, 4), np.float32))
    assert (type(k), k, type(big), big) == (int, 5, bool, False)
    assert ep.module()(np.ones((9, 4), np.float32))[1:] == (19, True)


def _spec(position, kind, name, out_kind="USER_OUTPUT"):
    def doc_fn(doc):
        doc["signature"]["outputs"][position] = {"kind": out_kind, "arg": {"k": kind, "name": name}, "target": None}
    return doc_fn


def _size_kind(value):
    def doc_fn(doc):
        node(doc, "sym_int")["args"][1] = value
    return doc_fn


def _size_of_array(doc):
    node(doc, "sym_int")["args"][0] = {"k": "node", "v": "multiply"}


def _extra_size_output(doc):
    """A spec claiming a size output the graph does not produce (the graph returns 3 values)."""
    doc["signature"]["outputs"].append({"kind": "USER_OUTPUT", "arg": {"k": "SymIntArgument", "name": "sym_int"},
                                        "target": None})


def _constant_claimed_as_size(doc):
    node(doc, "output")["args"][0][1] = 7


@pytest.mark.parametrize("doc_fn, words", [
    (_spec(0, "SymIntArgument", "multiply"), "returns an array from 'multiply'"),
    (_spec(1, "TensorArgument", "sym_int"), "returns a size (int) from 'sym_int'"),
    (_spec(1, "SymFloatArgument", "sym_int"), "but the spec is a SymFloatArgument"),
    (_spec(2, "SymIntArgument", "sym_bool"), "but the spec is a SymIntArgument"),
    (_spec(1, "SymIntArgument", "nope"), "the spec names 'nope'"),
    (_extra_size_output, "lists 4 outputs but the graph returns 3"),
    (_constant_claimed_as_size, "returns a constant there, but the spec is a SymIntArgument"),
    (_size_kind("str"), "has kind 'str'"),
    (_size_kind(["int"]), "has kind"),
    (_size_of_array, "must compute a size expression"),
    (_spec(1, "SymIntArgument", "sym_int", out_kind="BUFFER_MUTATION"), "order"),
], ids=["size-spec-on-array", "tensor-spec-on-size", "float-spec-on-int", "int-spec-on-bool", "unknown-name",
        "extra-size-output", "constant-as-size", "bad-kind", "kind-not-a-string", "size-of-an-array",
        "size-as-buffer-mutation"])
def test_size_outputs_outside_what_capture_emits_are_refused(good, doc_fn, words):
    with pytest.raises(ArchiveError) as info:
        tpe.load(io.BytesIO(edit(good, doc_fn)))
    assert PROGRAM in str(info.value) and words in str(info.value), str(info.value)
