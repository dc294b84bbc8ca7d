"""Names that mean another name once Python's parser reads them, files that are also something
else (found by a hostile-archive review).

``str.isidentifier`` accepts fullwidth letters (``ｏｕｔ``, ``ｆｏｒｗａｒｄ``), and the parser NFKC-normalizes
identifiers (PEP 3131), so such a name written into generated source named another thing: an
``out=`` keyword writing into the caller's input, a weight path reading the forward function's
``__globals__``.  Generated source now writes only ASCII identifiers as names (others go through
strings), keywords must be ASCII, and an archive must start with its first member (a shared
library with an archive appended was a loadable polyglot).
"""
from __future__ import annotations

import builtins
import collections
import io
import json
import zipfile

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.serde.zipio import write_zip
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"
FULLWIDTH = {c: chr(ord(c) + 0xFEE0) for c in "abcdefghijklmnopqrstuvwxyz"}


def fullwidth(text: str) -> str:
    return "".join(FULLWIDTH.get(c, c) for c in text)


def archive(ep) -> dict:
    buf = io.BytesIO()
    tpe.save(ep, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
        return {n: z.read(n) for n in z.namelist()}


def rebuilt(members: dict, doc: dict) -> io.BytesIO:
    members = dict(members)
    members[PROGRAM] = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    out = io.BytesIO()
    write_zip(out, dict(sorted(members.items())))
    out.seek(0)
    return out


def renamed(value, old: str, new: str):
    if isinstance(value, dict):
        return {k: new if k in ("fqn", "target") and v == old else renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, old, new) for v in value]
    return value


@pytest.fixture(scope="module")
def plain():
    members = archive(tpe.export(lambda x: x * 2 + 1, np.ones((3, 4)), dynamic_shapes=({0: tpe.Dim("b")},)))
    return members, members[PROGRAM]


class WithWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.ones((4,)))

    def forward(self, x):
        return x + self.w


def test_a_fullwidth_out_keyword_is_refused_at_load(plain):
    members, doc = plain[0], json.loads(plain[1])
    add = next(n for n in doc["graph"]["nodes"] if n["name"] == "add")
    add["target"] = "numpy.clip"  # takes **kwargs, which numpy would hand out= to
    add["args"] = [{"k": "node", "v": "multiply"}, {"k": "float", "v": (0.0).hex()}, {"k": "float", "v": (0.0).hex()}]
    add["kwargs"] = [[fullwidth("out"), {"k": "node", "v": "x"}]]
    with pytest.raises(tpe.ArchiveError, match="not an ASCII Python identifier"):
        tpe.load(rebuilt(members, doc))


def test_a_dunder_part_naming_a_module_slot_is_refused():
    members = archive(tpe.export(WithWeight(), np.ones((3, 4))))
    doc = renamed(program_doc(members[PROGRAM]), "w", fullwidth("forward") + ".__class__")
    with pytest.raises(tpe.ArchiveError, match="invalid state name"):
        tpe.load(rebuilt(members, doc))


@pytest.mark.parametrize("part", ["__globals__", "globals"])
def test_a_fullwidth_path_with_another_part_reads_its_own_weight(part, monkeypatch):
    members = archive(tpe.export(WithWeight(), np.ones((3, 4))))
    doc = renamed(program_doc(members[PROGRAM]), "w", fullwidth("forward") + "." + part)
    ep = tpe.load(rebuilt(members, doc))
    printed = []
    monkeypatch.setattr(builtins, "print", lambda *a, **k: printed.append(a))
    np.testing.assert_array_equal(ep.module()(np.zeros((3, 4))), np.ones((3, 4)))
    assert not printed


def test_a_fullwidth_weight_path_reads_its_own_weight_and_nothing_else(monkeypatch):
    members = archive(tpe.export(WithWeight(), np.ones((3, 4))))
    doc = renamed(program_doc(members[PROGRAM]), "w", fullwidth("forward") + ".globals")
    ep = tpe.load(rebuilt(members, doc))
    code = ep.module().code
    assert fullwidth("forward") not in code.replace(repr(fullwidth("forward")), "")  # only inside a string
    printed = []
    monkeypatch.setattr(builtins, "print", lambda *a, **k: printed.append(a))
    np.testing.assert_array_equal(ep.module()(np.zeros((3, 4))), np.ones((3, 4)))
    assert not printed


def test_generated_source_writes_non_ascii_names_through_strings():
    from tensorplay_export.graph.codegen import attr_text

    assert attr_text("fc.weight") == "self.fc.weight"
    assert attr_text(fullwidth("v") + ".ctypes") == f"getattr(self, {fullwidth('v')!r}).ctypes"
    assert attr_text("h.0.w") == "getattr(self.h, '0').w"


def test_namedtuple_fields_equal_after_normalization_are_refused():
    P = collections.namedtuple("P", ["a", "b"])
    members = archive(tpe.export(lambda x: P(x + 1, x * 2), np.ones((3, 4))))
    doc = program_doc(members[PROGRAM])
    spec = doc["module_call_graph"][0]["signature"]["out_spec"]
    spec["fields"], spec["name"] = ["a", fullwidth("a")], "somewhere.Q"
    with pytest.raises(tpe.ArchiveError, match="repeated field names"):
        tpe.load(rebuilt(members, doc))


@pytest.mark.parametrize("prefix", [b"\x7fELF" + b"\0" * 60, b"#!/bin/sh\nexit 0\n" * 200])
def test_bytes_in_front_of_the_first_member_are_refused(plain, prefix, tmp_path):
    members, doc = plain[0], json.loads(plain[1])
    good = rebuilt(members, doc).getvalue()
    path = tmp_path / "polyglot.pt2"
    path.write_bytes(prefix + good)
    with pytest.raises(tpe.ArchiveError, match="bytes before the first member"):
        tpe.load(path)
    with pytest.raises(tpe.ArchiveError, match="bytes before the first member"):
        tpe.load_pt2(str(path), load_weights_from_disk=True)
    tpe.load(io.BytesIO(good))  # the same archive without the prefix loads


@pytest.mark.parametrize("receiver", ["abc", {"k": "pytype", "v": "str"}, 3, {"k": "tuple", "v": [1, 2]}])
def test_array_methods_on_a_constant_receiver_are_refused(plain, receiver):
    members, doc = plain[0], json.loads(plain[1])
    add = next(n for n in doc["graph"]["nodes"] if n["name"] == "add")
    add["target"], add["args"], add["kwargs"] = "numpy.ndarray.astype", [receiver, "float32"], []
    with pytest.raises(tpe.ArchiveError, match="not on an array"):
        tpe.load(rebuilt(members, doc))
    add["target"], add["args"] = "tpe.getitem", [receiver, 0]
    with pytest.raises(tpe.ArchiveError, match="not on an array"):
        tpe.load(rebuilt(members, doc))


@pytest.mark.parametrize("fn", [lambda x: np.sqrt(x.shape), lambda x: np.add(x.shape, 1),
                                lambda x: (x * 2, np.sqrt([x.shape[0], 4]))], ids=["sqrt", "add", "beside"])
def test_a_constant_array_output_saves_and_loads(fn, tmp_path):
    # the sizes are pinned, so the model returns a constant array: what save writes, load reads
    ep = tpe.export(fn, np.ones(12), dynamic_shapes={"x": {0: tpe.Dim.AUTO}})
    tpe.save(ep, tmp_path / "c.pt2")
    back = tpe.load(tmp_path / "c.pt2")
    got, want = back.module()(np.ones(12)), fn(np.ones(12))
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        np.testing.assert_array_equal(g, w)
