"""PARAMETER_MUTATION outputs in archives (issue 16 item 3): only what capture emits loads."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim, nn
from tensorplay_export.errors import ArchiveError

from conftest import archive_bytes, members_of, repack
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"


class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones(4, np.float32))
        self.register_buffer("b", np.zeros(4, np.float32))

    def forward(self, x):
        np.multiply(self.w, 2, out=self.w)
        return x * self.w + self.b


@pytest.fixture(scope="module")
def good() -> bytes:
    ep = tpe.export_for_training(Step(), np.ones((3, 4), np.float32), dynamic_shapes={"x": {0: Dim("n", max=8)}})
    return archive_bytes(ep)


def edit(data, doc_fn):
    members = members_of(data)
    doc = program_doc(members[PROGRAM])
    doc_fn(doc)
    members[PROGRAM] = program_bytes(doc)
    return repack(members)


def test_good_archive_applies_the_update(good):
    run = tpe.load(io.BytesIO(good)).module()
    np.testing.assert_allclose(run(np.ones((2, 4), np.float32)), np.full((2, 4), 2.0))
    np.testing.assert_allclose(run(np.ones((2, 4), np.float32)), np.full((2, 4), 4.0))


def _target(name):
    def doc_fn(doc):
        doc["signature"]["outputs"][0]["target"] = name
    return doc_fn


def _insert(position, value, target="w", kind="PARAMETER_MUTATION"):
    def doc_fn(doc):
        out = next(n for n in doc["graph"]["nodes"] if n["op"] == "output")
        out["args"][0].insert(position, {"k": "node", "v": value})
        doc["signature"]["outputs"].insert(position, {"kind": kind, "arg": {"k": "TensorArgument", "name": value},
                                                      "target": target})
    return doc_fn


def _written_value(doc):
    return doc["signature"]["outputs"][0]["arg"]["name"]


def _twice(doc):
    _insert(1, _written_value(doc))(doc)


def _after_results(doc):
    _insert(len(doc["signature"]["outputs"]), _written_value(doc))(doc)


@pytest.mark.parametrize("doc_fn, words", [
    (_target("b"), "not a parameter"),
    (_target("x"), "not a parameter"),
    (_target("nope"), "not a parameter"),
    (_target(None), "not a parameter"),
    (_twice, "twice"),
    (_after_results, "order"),
    (_insert(0, "p_w"), "not computed by the graph"),
    (_insert(0, "multiply_1"), "shape"),
], ids=["buffer", "user-input", "unknown", "none", "twice", "after-results", "placeholder", "wrong-shape"])
def test_parameter_mutations_outside_what_capture_emits_are_refused(good, doc_fn, words):
    with pytest.raises(ArchiveError) as info:
        tpe.load(io.BytesIO(edit(good, doc_fn)))
    assert PROGRAM in str(info.value) and words in str(info.value), str(info.value)
