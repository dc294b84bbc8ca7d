"""The loader's fast paths refuse exactly what its checks refuse.

Loading decodes a recurring value once (stored symbols, dtypes, source lines,
shapes), skips walks that look for dicts or size expressions when a node holds
none, and tests exact JSON types before the checks that word a problem.  Each
test here damages a value *after* an intact copy of it primed those shortcuts,
and expects the refusal (and words) the checks give.
"""
from __future__ import annotations

import io
import json
import struct
import zipfile

import numpy as np
import pytest

from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde import values
from tensorplay_export.serde.exprs import ExprBudget
from tensorplay_export.serde.program_load import _Repeats
from tensorplay_export.serde.zipio import ZipReader, check_member_name, zip_bytes

from conftest import archive_bytes
from test_hostile import PROGRAM, edit, expect_error, load_bytes, node
from _shared import program_bytes, program_doc

N = {"k": "sym", "v": ["Symbol", "N", {"integer": True, "positive": True}]}
S = {"k": "sym", "v": ["Symbol", "S", {"integer": True, "positive": True}]}


def with_int_assumption(sym: dict) -> dict:
    """The same symbol with ``integer: 1`` (equal to ``True`` for Python, not for the format)."""
    return {"k": "sym", "v": ["Symbol", sym["v"][1], {"integer": 1, "positive": True}]}


@pytest.fixture(scope="module")
def good(small_program) -> bytes:
    return archive_bytes(small_program)


def test_the_intact_archive_loads(good):
    assert load_bytes(good).module()(np.ones((3, 4, 8), np.float32)).shape == (3, 4, 8)


@pytest.mark.parametrize("doc_fn", [
    # a shape equal (by ==) to the shapes decoded before it
    lambda d: node(d, "add")["meta"].update(shape={"k": "tuple", "v": [with_int_assumption(N), S, 8]}),
    # a symbol in the arguments, after the same symbol was decoded many times
    lambda d: node(d, "getitem")["args"][1]["v"].__setitem__(1, with_int_assumption(S)),
    # a bind, after the shapes that name the same symbol
    lambda d: node(d, "check_x")["meta"]["bind"]["v"][0].__setitem__(1, with_int_assumption(N)),
])
def test_an_int_for_a_bool_is_refused_after_the_real_symbol(good, doc_fn):
    expect_error(edit(good, doc_fn), PROGRAM, "unsupported assumption")


def test_a_float_for_an_int_in_a_repeated_shape_is_refused(good):
    def doc_fn(d):
        node(d, "add")["meta"]["shape"]["v"][2] = 8.0  # == 8, but a bare JSON float
    expect_error(edit(good, doc_fn), PROGRAM, "malformed value 8.0")


def test_a_tagged_float_for_an_int_in_a_repeated_shape_is_refused(good):
    def doc_fn(d):
        node(d, "add")["meta"]["shape"]["v"][2] = {"k": "float", "v": (8.0).hex()}
    expect_error(edit(good, doc_fn), PROGRAM, "meta['shape'] of node 'add' must be a tuple of ints")


def test_a_non_integer_shape_entry_after_checked_ones(good):
    half = {"k": "sym", "v": ["Mul", ["Rational", 1, 2], N["v"]]}
    expect_error(edit(good, lambda d: node(d, "add")["meta"].update(shape={"k": "tuple", "v": [half, S, 8]})),
                 PROGRAM, "whose value is not an integer")


def test_a_non_integer_slice_bound_after_integer_ones(good):
    half = {"k": "sym", "v": ["Mul", ["Rational", 1, 2], S["v"]]}
    expect_error(edit(good, lambda d: node(d, "getitem")["args"][1]["v"].__setitem__(1, half)),
                 PROGRAM, "as a size of tpe.getitem")


def test_a_dict_argument_is_still_walked_for_its_keys(good):
    bad = {"k": "dict", "v": [[{"k": "tuple", "v": [1]}, 1]]}
    expect_error(edit(good, lambda d: node(d, "add")["args"].append(bad)), PROGRAM, "dict key of type tuple")


@pytest.mark.parametrize("doc_fn, words", [
    (lambda d: node(d, "add").update(extra=1), "unknown key"),
    (lambda d: node(d, "add").update(name="a" * 300), "longer than 256"),
    (lambda d: node(d, "add").update(target=7), "must be a string"),
    (lambda d: node(d, "add").update(args={"k": "tuple", "v": []}), "must be a JSON array"),
    (lambda d: node(d, "add").update(op="get_attr"), "unknown opcode"),
    (lambda d: node(d, "add").update(kwargs=[["a"]]), "must be [name, value] pairs"),
    (lambda d: node(d, "add").update(meta=[]), "meta of node 'add' must be an object"),
    (lambda d: d["weights"][1].update(extra=1), "unknown key"),
    (lambda d: d["weights"][1].update(fqn=5), "must be a string"),
    (lambda d: d["weights"][1].update(role=1), "has role 1"),
    (lambda d: d["weights"][1].update(shape=[True]), "invalid shape"),
    (lambda d: d["weights"][1].update(shape=8), "must be a JSON array"),
    (lambda d: d["signature"]["inputs"][1]["arg"].update(extra=1), "unknown key"),
    (lambda d: d["signature"]["inputs"][1]["arg"].update(name=5), "must be a string"),
    (lambda d: d["signature"]["inputs"][1].update(kind=["PARAMETER"]), "unknown input kind"),
    (lambda d: d["signature"]["outputs"][0].update(kind="NOPE"), "unknown output kind"),
    (lambda d: d["signature"]["outputs"][0]["arg"].update(k="Nope"), "malformed argument record"),
])
def test_exact_type_shortcuts_fall_back_to_the_worded_checks(good, doc_fn, words):
    expect_error(edit(good, doc_fn), PROGRAM, words)


def test_repeats_take_the_budget_a_fresh_decode_would():
    shape = {"k": "tuple", "v": [N, S, {"k": "sym", "v": ["Add", N["v"], S["v"]]}]}
    copies = json.loads(json.dumps([shape] * 3))  # one document: three equal values
    dec = values.Decoder("m.json", budget=ExprBudget(12), stored=True)
    repeats = _Repeats(dec)
    first = repeats.value(copies[0])
    assert dec.budget.left == 12 - 5  # two symbols, then Add over two symbols
    assert repeats.value(copies[1]) is first  # shared: a tuple of stored expressions
    assert dec.budget.left == 2 and dec.exprs == 6
    with pytest.raises(ArchiveError, match="more than 12 nodes in total"):
        repeats.value(copies[2])


def test_repeats_share_nothing_that_can_change():
    dec = values.Decoder("m.json", stored=True)
    repeats = _Repeats(dec)
    raw = json.loads('[{"k": "tuple", "v": [[1, 2], 3]}, {"k": "tuple", "v": [[1, 2], 3]}]')
    one, two = repeats.value(raw[0]), repeats.value(raw[1])  # a list inside: each node gets its own
    assert one == two == ([1, 2], 3) and one[0] is not two[0]


def test_symbol_cache_needs_exact_bools():
    dec = values.Decoder("m.json", stored=True)
    a = dec.value(N)
    assert dec.value(json.loads(json.dumps(N))) is a
    with pytest.raises(ArchiveError, match="unsupported assumption"):
        dec.value(with_int_assumption(N))


def test_dtype_cache_keeps_refusing_bad_dtypes():
    assert values.decode_dtype("<f4", "m") is values.decode_dtype("<f4", "m")
    for bad in ("|O8", "<f4\n", 4, "<V0x"):
        with pytest.raises(ArchiveError):
            values.decode_dtype(bad, "m")


# -- the zip container: one pread per local header ---------------------------------------

def _local_header_offsets(data: bytes) -> dict[str, int]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {i.filename: i.header_offset for i in zf.infolist()}


def _both_ways(data: bytes, tmp_path) -> list:
    """A ZipReader over ``data`` from memory and by path (the path reads headers with pread)."""
    path = tmp_path / "a.zip"
    path.write_bytes(data)
    return [lambda: ZipReader(io.BytesIO(data)), lambda: ZipReader(path)]


def test_local_name_that_differs_is_refused(tmp_path):
    data = bytearray(zip_bytes({"ab.bin": b"1", "cd.bin": b"2"}))
    off = _local_header_offsets(bytes(data))["cd.bin"]
    data[off + 30: off + 32] = b"xy"
    for open_reader in _both_ways(bytes(data), tmp_path):
        with pytest.raises(ArchiveError, match="'cd.bin'.*local header name differs"):
            open_reader()


def test_local_name_of_another_length_is_refused(tmp_path):
    data = bytearray(zip_bytes({"ab.bin": b"1", "cd.bin": b"2"}))
    off = _local_header_offsets(bytes(data))["cd.bin"]
    data[off + 26: off + 28] = struct.pack("<H", 5)  # name length 5: "cd.bi"
    for open_reader in _both_ways(bytes(data), tmp_path):
        with pytest.raises(ArchiveError, match="local header name differs"):
            open_reader()


def test_bad_local_signature_is_refused(tmp_path):
    data = bytearray(zip_bytes({"ab.bin": b"1", "cd.bin": b"2"}))
    off = _local_header_offsets(bytes(data))["cd.bin"]
    data[off: off + 4] = b"PK\x05\x06"
    for open_reader in _both_ways(bytes(data), tmp_path):
        with pytest.raises(ArchiveError, match="bad local header signature"):
            open_reader()


def test_non_ascii_names_agree_both_ways(tmp_path):
    data = zip_bytes({"u\u00e9/\u20ac.bin": b"x", "plain": b"y"})
    for open_reader in _both_ways(data, tmp_path):
        with open_reader() as zr:
            assert zr.read("u\u00e9/\u20ac.bin", 10) == b"x"


@pytest.mark.parametrize("name", ["a\x00b", "a\x1fb", "a\x7fb", "tab\there", "new\nline"])
def test_control_characters_in_names_are_refused(name):
    with pytest.raises(ArchiveError, match="control character"):
        check_member_name(name)


@pytest.mark.parametrize("name", ["a\u0080b", "caf\u00e9", "x/y z.npy", "~a"])
def test_other_characters_are_allowed(name):
    assert check_member_name(name) == name


def test_mapped_weights_are_memmaps_of_the_archive(small_program, tmp_path):
    import tensorplay_export as tpe

    path = tmp_path / "m.pt2"
    tpe.save(small_program, path)
    ep = tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]
    for name, value in ep.state_dict.items():
        assert isinstance(value, np.memmap) and value.filename == str(path) and not value.flags.writeable
        assert value.ctypes.data % 64 == 0
        np.testing.assert_array_equal(value, small_program.state_dict[name])


def test_segment_rule_matches_its_definition():
    """A name is refused for its segments exactly when splitting on '/' gives '', '.' or '..'."""
    import itertools

    pieces = ["a", ".", "/", "..", "...", "b/", ".a"]
    for k in range(1, 6):
        for parts in itertools.product(pieces, repeat=k):
            name = "".join(parts)
            bad = any(p in ("", ".", "..") for p in name.split("/"))
            if name.startswith("/"):
                continue  # refused earlier, as an absolute path
            try:
                check_member_name(name)
                refused = False
            except ArchiveError as err:
                refused = "segment" in str(err)
            assert refused == bad, name


# -- look-ups of records decoded before (Decoder.known), module stacks, recorded inputs ----

def test_known_answers_only_for_exact_records_decoded_before():
    dec = values.Decoder("m.json", stored=True)
    dtype = {"k": "dtype", "v": "<f4"}
    source = {"k": "source", "file": "model.py", "line": 3}
    assert dec.known(source) is None  # not decoded yet by this decoder
    loc = dec.value(source)
    assert dec.known(json.loads(json.dumps(source))) is loc
    assert dec.known(dtype) is dec.value(dtype) is np.dtype("<f4")
    for odd in (dtype | {"x": 1}, {"k": "dtype", "v": ["<f4"]}, source | {"x": 1},
                {"k": "source", "file": "model.py", "line": True}, {"k": "source", "file": "model.py", "line": 3.0},
                {"k": "tuple", "v": []}, [dtype], "<f4", None):
        assert dec.known(odd) is None  # then value() decodes it, with its checks


@pytest.mark.parametrize("doc_fn, words", [
    (lambda d: node(d, "add")["meta"]["dtype"].update(x=1), "value of kind 'dtype' must have keys"),
    (lambda d: node(d, "add")["meta"]["source"].update(x=1), "value of kind 'source' must have keys"),
    (lambda d: node(d, "add")["meta"]["source"].update(line=3.0), "integer line"),
    (lambda d: node(d, "add")["meta"]["module_stack"]["v"][0]["v"].__setitem__(1, 2 ** 300), "more than 256 bits"),
    (lambda d: node(d, "add")["meta"]["module_stack"]["v"][0]["v"].__setitem__(1, 1.0), "malformed value 1.0"),
    (lambda d: node(d, "add")["meta"]["module_stack"]["v"][0].update(x=1), "value of kind 'tuple' must have keys"),
    (lambda d: node(d, "add")["args"][0].update(x=1), "value of kind 'node' must have keys"),
])
def test_records_damaged_after_intact_copies_are_refused(good, doc_fn, words):
    doc = program_doc(zipfile.ZipFile(io.BytesIO(good)).read(PROGRAM))
    assert node(doc, "add")["meta"].keys() >= {"dtype", "source", "module_stack"}  # the edits have targets
    expect_error(edit(good, doc_fn), PROGRAM, words)


def test_module_stack_entries_keep_their_exact_types(good):
    def doc_fn(d):
        node(d, "add")["meta"]["module_stack"]["v"][0]["v"][1] = True  # == 1 for Python, a bool here
    ep = load_bytes(edit(good, doc_fn))
    stacks = {n.name: n.meta.get("module_stack") for n in ep.graph_module._graph.nodes}
    assert type(stacks["add"][0][1]) is bool
    assert all(type(i) is int for name, s in stacks.items() if s and name != "add" for _, i in s)


def test_recorded_inputs_are_the_nodes_in_the_arguments(good, hand_program):
    """The loader hands create_node the references it resolved only when no other argument can
    hold a Node; the output's list of Nodes, a tuple key and keywords take the search."""
    from tensorplay_export.graph.ir import _input_nodes

    for data in (good, archive_bytes(hand_program)):
        graph = load_bytes(data).graph_module._graph
        out = graph.output_node
        assert out._inputs and out._inputs == tuple(out._args[0])  # Nodes inside a list argument
        for n in graph.nodes:
            assert n._inputs == _input_nodes(n._args, n._kwargs)
            assert all(n in i.users for i in n._inputs)
