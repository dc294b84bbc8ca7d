"""Hostile archives: every kind of damage ends in ArchiveError naming the member, and nothing runs.

Hand-written nasties first, then hypothesis-driven mutation of valid archives
(structure-aware JSON edits and raw byte damage), each bounded in time.
"""
from __future__ import annotations

import copy
import io
import json
import os
import re
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import tensorplay_export as tpe
from tensorplay_export.errors import ArchiveError

from conftest import archive_bytes, members_of, repack
from test_npyio import Canary, npy_file
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"
# CI runs a bounded number of fuzz examples; a nightly run raises it (TPE_FUZZ_EXAMPLES=5000).
FUZZ = int(os.environ.get("TPE_FUZZ_EXAMPLES", "120"))


@pytest.fixture(scope="module")
def good(small_program) -> bytes:
    return archive_bytes(small_program)


def load_bytes(data: bytes):
    """load, then use the example inputs (read from the archive on first use) so their damage shows."""
    ep = tpe.load(io.BytesIO(data))
    ep.example_inputs["args"]
    return ep


def edit(data: bytes, doc_fn=None, **changes) -> bytes:
    """Re-pack ``data`` with ``program.json`` edited by ``doc_fn`` and members replaced/removed."""
    members = members_of(data)
    if doc_fn is not None:
        doc = program_doc(members[PROGRAM])
        doc_fn(doc)  # edits in place; its return value is ignored
        members[PROGRAM] = program_bytes(doc)
    for name, value in changes.items():
        name = name.replace("__", "/").replace("_DOT_", ".")
        if value is None:
            members.pop(name, None)
        else:
            members[name] = value
    return repack(members)


def node(doc, name):
    return next(n for n in doc["graph"]["nodes"] if n["name"] == name)


def expect_error(data: bytes, member: str, words: str) -> None:
    with pytest.raises(ArchiveError) as info:
        load_bytes(data)
    text = str(info.value)
    assert member in text, text
    assert words in text, text


def test_good_archive_loads(good):
    assert load_bytes(good).code


# --- container and index ---------------------------------------------------------------

def test_missing_format_marker(good):
    expect_error(edit(good, format=None), "'format'", "not a tensorplay_export archive")


def test_wrong_format_marker(good):
    expect_error(edit(good, format=b"zipfile\n"), "'format'", "not a tensorplay_export archive")


def test_newer_format_version(good):
    expect_error(edit(good, version=f"{tpe.serde.FORMAT_VERSION + 1}\n".encode()), "'version'", "newer")


def test_malformed_version(good):
    expect_error(edit(good, version=b"1.0\n"), "'version'", "malformed")


def test_missing_index(good):
    expect_error(edit(good, archive_DOT_json=None), "'archive.json'", "missing")


@pytest.mark.parametrize("text, words", [
    (b"{", "invalid JSON"),
    (b'{"models": [NaN]}', "non-finite"),
    (b'{"models": [], "models": []}', "duplicate key"),
    (b"[" * 5000 + b"]" * 5000, "deeper"),
    (b"\xff\xfe", "UTF-8"),
    (b'{"models": []}', "missing key"),
])
def test_bad_index_json(good, text, words):
    expect_error(edit(good, archive_DOT_json=text), "'archive.json'", words)


def test_unexpected_top_level_member(good):
    members = members_of(good)
    members["payload.py"] = b"import os"
    expect_error(repack(members), "'payload.py'", "unexpected member")


def test_unexpected_member_in_model_folder(good):
    members = members_of(good)
    members["models/model/weights/99.npy"] = npy_file(np.zeros(1))
    expect_error(repack(members), "'models/model/weights/99.npy'", "unexpected member")


def test_missing_weight(good):
    members = members_of(good)
    del members["models/model/weights/1.npy"]
    expect_error(repack(members), "'models/model/weights/1.npy'", "missing")


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/passwd", "models/model/../../x"])
def test_escaping_member_names(good, name):
    members = members_of(good)
    members[name] = b"x"
    with pytest.raises(ArchiveError, match="segment|absolute"):
        load_bytes(repack(members))


def test_duplicate_members(good):
    items = list(members_of(good).items())
    items.append((PROGRAM, b"{}"))
    expect_error(repack(items), PROGRAM, "duplicate member")


def test_compressed_weight_refused(good):
    members = members_of(good)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if name.endswith(".npy")
                        else zipfile.ZIP_STORED)
    expect_error(buf.getvalue(), "weights/0.npy", "uncompressed")


def test_zip_bomb_extra_file(small_program):
    data = archive_bytes(small_program, extra_files={"big.bin": b"\0" * (8 << 20)})
    members = members_of(data)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, payload in members.items():
            zf.writestr(name, payload, compress_type=zipfile.ZIP_DEFLATED if name.startswith("extra/")
                        else zipfile.ZIP_STORED)
    expect_error(buf.getvalue(), "extra/big.bin", "zip bomb")


def test_truncated_archive(good):
    with pytest.raises(ArchiveError, match="not a readable zip"):
        load_bytes(good[: len(good) // 3])


# --- arrays -------------------------------------------------------------------------------

def test_planted_pickle_weight_never_runs(good, tmp_path):
    canary = tmp_path / "pwned"
    payload = npy_file(np.array([Canary(canary)], dtype=object), allow_pickle=True)
    expect_error(edit(good, models__model__weights__0_DOT_npy=payload), "weights/0.npy", "pickle")
    assert not canary.exists()


def test_planted_pickle_sample_inputs_never_run(good, tmp_path):
    canary = tmp_path / "pwned"
    npz = repack({"0.npy": npy_file(np.array([Canary(canary)], dtype=object), allow_pickle=True)})
    expect_error(edit(good, models__model__sample_inputs_DOT_npz=npz), "sample_inputs.npz", "pickle")
    assert not canary.exists()


def test_wrong_dtype_weight(good):
    expect_error(edit(good, models__model__weights__0_DOT_npy=npy_file(np.zeros((8, 8)))),
                 "weights/0.npy", "declares <f4 (8, 8)")


def test_wrong_shape_weight(good):
    bad = npy_file(np.zeros((4, 16), np.float32))
    expect_error(edit(good, models__model__weights__0_DOT_npy=bad), "weights/0.npy", "declares <f4 (8, 8)")


def test_table_disagrees_with_placeholder(good):
    def doc_fn(doc):
        doc["weights"][0]["shape"] = [4, 16]
    bad = npy_file(np.zeros((4, 16), np.float32))
    expect_error(edit(good, doc_fn, models__model__weights__0_DOT_npy=bad), PROGRAM, "placeholder 'p_weight' expects (8, 8)")


def test_huge_declared_shape(good):
    raw = npy_file(np.zeros((8, 8), np.float32)).replace(b"(8, 8)", b"(10**18,)"[:0] + b"(99999999999999, 8)")
    expect_error(edit(good, models__model__weights__0_DOT_npy=raw), "weights/0.npy", "needs")


def test_huge_shape_in_table(good):
    def doc_fn(doc):
        doc["weights"][0]["shape"] = [2**62, 2**62]
    expect_error(edit(good, doc_fn), "weights/0.npy", "declares")


# --- program document ------------------------------------------------------------------------

@pytest.mark.parametrize("doc_fn, words", [
    (lambda d: node(d, "matmul").update(target="os.system"), "unknown op 'os.system'"),
    (lambda d: node(d, "matmul").update(target="builtins.eval"), "not in the op registry"),
    (lambda d: node(d, "matmul").update(op="get_attr"), "unknown opcode"),
    (lambda d: node(d, "matmul").update(name="x; import os"), "not a fresh Python identifier"),
    (lambda d: node(d, "matmul").update(name="print"), "not a fresh Python identifier"),
    (lambda d: node(d, "matmul").update(name="check_x"), "not a fresh Python identifier"),
    (lambda d: node(d, "matmul")["args"].__setitem__(0, {"k": "node", "v": "add_1"}), "not defined earlier"),
    (lambda d: node(d, "matmul")["args"].append({"k": "pickle", "v": "gASV"}), "unknown value kind"),
    (lambda d: node(d, "matmul").update(kwargs=[[1, 2]]), "kwargs"),
    (lambda d: node(d, "matmul")["args"].append(
        {"k": "dict", "v": [[{"k": "sym", "v": ["Symbol", "__import__('os').system('x')", {}]}, 1]]}),
     "dict key of type Symbol"),
    (lambda d: d.update(schema_version=4), "newer tensorplay_export"),
    (lambda d: d.update(format="other"), "format marker"),
    (lambda d: d.update(evil=1), "unknown key"),
    (lambda d: d.pop("graph"), "missing key"),
    (lambda d: d.update(pickle_protocol=9), "pickle_protocol"),
    (lambda d: d["range_constraints"][0].__setitem__(2, 1.5), "must be integers"),
    (lambda d: d["range_constraints"][0].__setitem__(1, 999), "empty range"),
    (lambda d: d["range_constraints"][0].__setitem__(0, ["Add", 1, 2]), "must be a symbol"),
    (lambda d: d["range_constraints"].append(d["range_constraints"][0]), "two range constraints"),
    (lambda d: d["signature"]["inputs"][0].update(kind="CUSTOM_OBJ"), "custom object"),
    (lambda d: d["signature"]["inputs"][0].update(kind="EVIL"), "unknown input kind"),
    (lambda d: d["signature"]["inputs"][0]["arg"].update(k="Evil"), "malformed argument record"),
    (lambda d: d["module_call_graph"][0]["signature"]["in_spec"].update(type="evil.Type"), "unknown type 'evil.Type'"),
    (lambda d: d["dynamic_shapes"]["v"].update(v=[["x", {"k": "dataclass", "type": "os.Popen", "v": []}]]),
     "unknown dataclass type 'os.Popen'"),
    (lambda d: d["weights"][0].update(dtype="|O8"), "invalid dtype"),
    (lambda d: d["weights"][0].update(role="pickle"), "role"),
    (lambda d: d["weights"].append(d["weights"][0]), "twice"),
    (lambda d: d["graph"]["nodes"].pop(), "exactly one output"),
    (lambda d: d["graph"]["nodes"].insert(8, copy.deepcopy(d["graph"]["nodes"][0]) | {"name": "late"}),
     "placeholder after"),
    (lambda d: node(d, "check_x")["meta"]["bind"]["v"][0][1]["v"].__setitem__(2, {"positive": True, "negative": True}),
     "inconsistent assumptions"),
    (lambda d: d["example_inputs"]["leaves"].__setitem__(0, {"k": "sample", "v": "7"}), "missing sample array"),
    (lambda d: d["example_inputs"].__setitem__("spec", None), "example_inputs.spec must be a treespec"),
    (lambda d: node(d, "check_x")["meta"]["bind"]["v"][0].__setitem__(0, "0]; import os; _=x.shape[0"),
     "must map axes"),
    (lambda d: node(d, "check_x")["meta"]["bind"]["v"][0].__setitem__(0, 99), "must map axes"),
    (lambda d: node(d, "check_x")["meta"]["bind"]["v"][0].__setitem__(1, 5), "must map axes"),
    (lambda d: node(d, "matmul")["meta"].update(shape=[1, "x"]), "meta['shape']"),
    (lambda d: node(d, "matmul")["meta"].update(dtype="float32"), "meta['dtype']"),
    (lambda d: node(d, "matmul")["meta"].update(module_path=3), "meta['module_path']"),
])
def test_malformed_program_document(good, doc_fn, words):
    expect_error(edit(good, doc_fn), PROGRAM, words)


def test_bind_axis_cannot_inject_code(good, tmp_path):
    """meta['bind'] axes are written into generated source: text there must never load."""
    canary = tmp_path / "pwned"

    def doc_fn(doc):
        node(doc, "check_x")["meta"]["bind"]["v"][0][0] = f"0]; open({str(canary)!r}, 'w'); _z = x.shape[0"
    with pytest.raises(ArchiveError, match="must map axes"):
        load_bytes(edit(good, doc_fn))
    assert not canary.exists()


def test_nan_literal_in_program(good):
    text = members_of(good)[PROGRAM].replace(b'"S",{"integer":true,"positive":true}],1,64]',
                                             b'"S",{"integer":true,"positive":true}],1,NaN]')
    assert b"NaN" in text
    expect_error(edit(good, models__model__program_DOT_json=text), PROGRAM, "non-finite")


def test_deep_json_program(good):
    def doc_fn(doc):
        deep = 1
        for _ in range(400):
            deep = [deep]
        node(doc, "matmul")["meta"]["extra"] = deep
    expect_error(edit(good, doc_fn), PROGRAM, "deeper")


def test_symbol_names_never_reach_code_unsanitized(good, tmp_path):
    """Rename a size symbol to Python source: it is data, so nothing may run."""
    canary = tmp_path / "pwned"
    evil = f"__import__('os').system('touch {canary}')"
    text = members_of(good)[PROGRAM].replace(b'"Symbol","S"', json.dumps(["Symbol", evil])[1:-1].encode())
    try:
        ep = load_bytes(edit(good, models__model__program_DOT_json=text))
        ep.module()(np.zeros((2, 3, 8), np.float32))
    except ArchiveError:
        pass
    assert not canary.exists()


def test_deserialize_refuses_the_same_documents(small_program):
    art = small_program.serialize()
    doc = program_doc(art.exported_program)
    node(doc, "matmul")["target"] = "subprocess.call"
    art.exported_program = program_bytes(doc)
    with pytest.raises(ArchiveError, match="unknown op 'subprocess.call'"):
        tpe.ExportedProgram.deserialize(art)


# --- fuzzing ---------------------------------------------------------------------------------

_json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=False, allow_infinity=False),
              st.text(max_size=12), st.sampled_from(["k", "node", "sym", "Symbol", "add", "x", "<f4", "tuple"])),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.sampled_from(
        ["k", "v", "name", "op", "target", "args", "dtype", "shape", "fqn", "role"]), kids, max_size=4)),
    max_leaves=10)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def _load_or_archive_error(data: bytes) -> None:
    try:
        ep = load_bytes(data)
    except ArchiveError as err:
        assert "unanticipated" not in str(err), err  # the loader's safety net caught an unanticipated error
        return
    # a load that succeeds must give a working program or a contract error, nothing worse
    try:
        ep.module()(np.zeros((2, 3, 8), np.float32))
    except (tpe.ConstraintsExceededError, TypeError, ValueError):
        pass


@settings(max_examples=FUZZ, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_program_document(good, data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    doc = program_doc(members_of(good)[PROGRAM])
    paths = [p for p in _paths(doc) if p]
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        try:
            _set(doc, path, data.draw(_json_values))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier edit removed this path
    mutated = edit(good, models__model__program_DOT_json=program_bytes(doc))
    _load_or_archive_error(mutated)
    assert os.listdir(tmp_path) == []


@settings(max_examples=FUZZ, deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_raw_bytes(good, data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    raw = bytearray(good)
    action = data.draw(st.sampled_from(["flip", "truncate", "splice"]))
    if action == "flip":
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] ^= 1 << data.draw(st.integers(0, 7))
    elif action == "truncate":
        raw = raw[: data.draw(st.integers(0, len(raw) - 1))]
    else:
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i:i + 4] = data.draw(st.binary(min_size=1, max_size=16))
    _load_or_archive_error(bytes(raw))
    assert os.listdir(tmp_path) == []


@settings(max_examples=max(FUZZ // 2, 10), deadline=5000, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["format", "version", "archive.json", PROGRAM, "models/model/weights/0.npy",
                             "models/model/constants/0.npy", "models/model/sample_inputs.npz"]),
       payload=st.binary(max_size=200))
def test_fuzz_member_replacement(good, name, payload):
    members = members_of(good)
    members[name] = payload
    _load_or_archive_error(repack(members))


@pytest.mark.parametrize("target, args, kwargs, flag", [
    ("numpy.median", None, [["overwrite_input", True]], "overwrite_input=True"),
    ("numpy.nanmedian", [None, None, True], [], "overwrite_input=True"),
    ("numpy.nan_to_num", None, [["copy", False]], "copy=False"),
    ("numpy.nan_to_num", [False], [], "copy=False"),
    ("numpy.nan_to_num", None, [["copy", None]], "copy=None"),
], ids=["median-kw", "nanmedian-positional", "nan_to_num-kw", "nan_to_num-positional", "nan_to_num-None"])
def test_a_flag_that_writes_into_the_input_is_refused(target, args, kwargs, flag):
    ep = tpe.export(lambda x: x + np.median(x), np.arange(6.0), dynamic_shapes={"x": {0: tpe.Dim("n")}})
    data = archive_bytes(ep)

    def doc_fn(doc):
        call = next(n for n in doc["graph"]["nodes"] if n["target"] == "numpy.median")
        call["target"] = target
        call["args"] = call["args"][:1] + (args or [])
        call["kwargs"] = kwargs

    expect_error(edit(data, doc_fn), PROGRAM, f"passes {flag} to {target}, which makes numpy write into its input")
    assert load_bytes(data).module()(np.arange(4.0)).tolist() == [1.5, 2.5, 3.5, 4.5]


@pytest.mark.parametrize("descr", [b"|V0", b"|S0"])
def test_a_weight_of_zero_byte_items_is_refused_on_both_load_paths(good, descr, tmp_path):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.zeros(3, "V0"))  # numpy writes |V0 (an |S0 array would be |S1)
    data = edit(good, models__model__weights__0_DOT_npy=buf.getvalue().replace(b"|V0", descr))
    expect_error(data, "weights/0.npy", "has items of zero bytes")
    path = tmp_path / "zero.pt2"
    path.write_bytes(data)
    with pytest.raises(ArchiveError, match="has items of zero bytes"):
        tpe.load_pt2(str(path), load_weights_from_disk=True)


def test_an_empty_numpy_string_scalar_argument_loads():
    ep = tpe.export(lambda x: x * 2, np.arange(3.0))
    data = archive_bytes(ep)

    def doc_fn(doc):  # a numpy scalar of zero bytes (np.str_('')) as a keyword argument
        call = next(n for n in doc["graph"]["nodes"] if n["target"] == "numpy.multiply")
        call["kwargs"] = [["casting", {"k": "np", "dtype": "<U0", "v": ""}]]

    ep2 = load_bytes(edit(data, doc_fn))
    assert "casting=" in ep2.module().code


@pytest.mark.parametrize("names", [("weight", "weight.bias"), ("shift", "shift.scale")])
def test_state_names_held_one_inside_the_other_are_refused(good, names):
    first, second = names

    def doc_fn(doc):  # rename the second state entry everywhere to a name inside the first
        old = {"weight.bias": "shift", "shift.scale": "scale"}[second]
        for table in (doc["weights"], doc["constants"]):
            for entry in table:
                if entry["fqn"] == old:
                    entry["fqn"] = second
        for spec in doc["signature"]["inputs"]:
            if spec["target"] == old:
                spec["target"] = second

    expect_error(edit(good, doc_fn), PROGRAM, f"state names {first!r} and {second!r} collide")


@pytest.mark.parametrize("mutate, words", [
    (lambda sig: sig.update(in_spec={"type": "leaf"}), "in_spec must be (args tuple, kwargs dict"),
    (lambda sig: sig["in_spec"]["children"][0]["children"].append({"type": "leaf"}),
     "in_spec has 2 leaves for 1 user inputs"),
    (lambda sig: sig.update(out_spec={"type": "tuple", "children": [{"type": "leaf"}, {"type": "leaf"}]}),
     "out_spec has 2 leaves for 1 results"),
], ids=["leaf-in_spec", "extra-arg", "extra-output"])
def test_root_tree_specs_that_do_not_fit_the_graph_are_refused(good, mutate, words):
    expect_error(edit(good, lambda doc: mutate(doc["module_call_graph"][0]["signature"])), PROGRAM, words)


def test_a_range_below_what_its_symbol_admits_is_refused(good):
    def doc_fn(doc):  # both the listed range and the graph's check widened to -5: still refused
        for item in doc["range_constraints"]:
            item[1] = -5
        for n in doc["graph"]["nodes"]:
            if n["target"] == "tpe.assert_range":
                n["args"][1] = -5

    expect_error(edit(good, doc_fn), PROGRAM, "starts at -5, below 1, the least value its symbol admits (positive)")


def test_a_zero_minimum_of_a_nonnegative_size_loads():
    ep = tpe.export(lambda x: x * 2, np.ones((0, 3)), dynamic_shapes={"x": {0: tpe.Dim("n", min=0, max=64)}})
    loaded = load_bytes(archive_bytes(ep))
    assert [(r.lower, r.upper) for r in loaded.range_constraints.values()] == [(0, 64)]
    assert loaded.module()(np.ones((0, 3))).shape == (0, 3)


@pytest.mark.parametrize("offset, value, words", [
    (8, 8, "local header compression (8) differs from the central directory's (0)"),
    (6, 1, "the member is encrypted"),
], ids=["deflate-in-local-header", "encrypted-flag"])
def test_a_local_header_that_contradicts_the_central_directory_is_refused(good, offset, value, words, tmp_path):
    member = "models/model/weights/0.npy"
    at = zipfile.ZipFile(io.BytesIO(good)).getinfo(member).header_offset + offset
    data = bytearray(good)
    data[at:at + 2] = value.to_bytes(2, "little")
    expect_error(bytes(data), member, words)
    path = tmp_path / "local.pt2"
    path.write_bytes(bytes(data))
    with pytest.raises(ArchiveError, match=re.escape(words)):
        tpe.load_pt2(str(path), load_weights_from_disk=True)
