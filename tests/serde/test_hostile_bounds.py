"""Hostile archives that are well formed but costly, or that a writer would never produce.

Each test builds the hostile input from the real ``Small`` program and expects an
ArchiveError naming the member at load, within a hang ceiling (never a micro-timing).
"""
from __future__ import annotations

import io
import json
import math
import time

import numpy as np
import pytest
import sympy

import tensorplay_export as tpe
from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde.exprs import decode_expr, encode_expr

from conftest import archive_bytes, members_of, repack
from test_hostile import PROGRAM, edit, expect_error, load_bytes, node
from _shared import program_bytes, program_doc

HANG_CEILING_S = 30.0  # bounds a hang; the loads here take milliseconds
S_TREE = ["Symbol", "S", {"integer": True, "positive": True}]


@pytest.fixture(scope="module")
def good(small_program) -> bytes:
    return archive_bytes(small_program)


def set_slice_stop(tree):
    """A doc_fn putting ``tree`` where the generated code computes ``TABLE[:S]``'s stop."""
    def doc_fn(doc):
        node(doc, "getitem")["args"][1]["v"][1] = {"k": "sym", "v": tree}
    return doc_fn


def bounded_error(data: bytes, member: str, words: str) -> None:
    t0 = time.perf_counter()
    expect_error(data, member, words)
    assert time.perf_counter() - t0 < HANG_CEILING_S


# --- item 1: size values bounded by bit length, not single exponents --------------------------

def pow_tower(base, levels: int, exponent: int = 64):
    for _ in range(levels):
        base = ["Pow", base, exponent]
    return base


def test_pow_tower_refused_at_load(good):
    """Every exponent <= 64, but S**64**64**64 would take minutes and all memory at the first call."""
    bounded_error(edit(good, set_slice_stop(pow_tower(S_TREE, 3))), PROGRAM, "bits")


def test_pow_tower_of_literals_refused(good):
    bounded_error(edit(good, set_slice_stop(pow_tower(2**200, 2))), PROGRAM, "bits")


def test_product_of_large_literals_refused():
    with pytest.raises(ArchiveError, match="bits"):
        decode_expr(["Mul"] + [2**255 - 1] * 64, "m")


def test_one_power_of_a_size_still_loads():
    s = sympy.Symbol("S", integer=True, positive=True)
    for e in (s**64, s**2 * (s + 1)**3, sympy.Integer(2)**64 * s, 1 / s**3):
        assert decode_expr(json.loads(json.dumps(encode_expr(e)))) == e


def test_writer_refuses_what_the_reader_refuses():
    s = sympy.Symbol("S", integer=True, positive=True)
    tower = sympy.Pow(sympy.Pow(sympy.Pow(s, 64, evaluate=False), 64, evaluate=False), 64, evaluate=False)
    with pytest.raises(ValueError, match="bits"):
        encode_expr(tower)


# --- item 2: a budget for the whole document -------------------------------------------------------

def test_document_expression_budget(good):
    """~1.8 MB of small sums (each under the per-expression limit) in node meta.

    Distinct sums: the meta table stores equal values once and decodes them once, so
    only distinct ones add to the work (test_meta_table.py)."""
    def doc_fn(doc):
        meta = node(doc, "matmul")["meta"]
        for i in range(100):
            meta[f"junk{i}"] = {"k": "sym", "v": ["Add", S_TREE, i + 2] + [1] * 9000}
    data = edit(good, doc_fn)
    assert len(data) < 3 << 20
    bounded_error(data, PROGRAM, "in total")


def test_one_huge_sum_refused(good):
    bounded_error(edit(good, set_slice_stop(["Add", S_TREE] + [1] * 20_000)), PROGRAM, "nodes")


def test_document_budget_spans_ranges_signature_and_graph(good):
    """The budget is one per document: expressions outside the graph count too."""
    def doc_fn(doc):
        meta = node(doc, "matmul")["meta"]
        for i in range(60):
            meta[f"junk{i}"] = {"k": "sym", "v": ["Add", S_TREE] + [1] * 9000}
        doc["dynamic_shapes"] = {"v": [{"k": "sym", "v": ["Add", S_TREE] + [1] * 9000} for _ in range(60)]}
    bounded_error(edit(good, doc_fn), PROGRAM, "in total")


# --- item 3: sample inputs and files read when asked for; decompressed bytes capped -------------

def _noisy_zeros(n: int) -> bytes:
    """``n`` bytes deflate compresses about 300:1 (under the per-member ratio limit of 1000:1)."""
    rng = np.random.default_rng(0)
    data = np.zeros(n, np.uint8)
    data[rng.integers(0, n, n // 1000)] = rng.integers(1, 255, n // 1000, dtype=np.uint8)
    return data.tobytes()


def _deflated_zip(items: dict[str, bytes], deflate: set[str]) -> bytes:
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in items.items():
            zf.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED)
    return buf.getvalue()


def _npy(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def _peak_of(fn):
    import tracemalloc

    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    except ArchiveError as err:
        out = err
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.perf_counter() - t0 < HANG_CEILING_S
    return out, peak


def test_deflated_extra_file_capped_by_archive_size(small_program):
    """40 MiB that deflate to ~130 KiB: under the per-member ratio, over 32x the archive + 16 MiB."""
    data = archive_bytes(small_program, extra_files={"big.bin": b"x"})
    members = members_of(data)
    members["extra/big.bin"] = _noisy_zeros(40 << 20)
    bomb = _deflated_zip(members, {"extra/big.bin"})
    assert len(bomb) < 1 << 20
    out, peak = _peak_of(lambda: tpe.load_pt2(io.BytesIO(bomb)))
    assert isinstance(out, ArchiveError) and "extra/big.bin" in str(out) and "zip bomb" in str(out), out
    assert peak < 16 << 20


def test_deflated_sample_arrays_refused_and_not_read_at_load(good):
    """A stored .npz whose inner .npy is deflated: load must not inflate it, use refuses it."""
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f4", "fortran_order": False, "shape": (2, 5 << 20, 8)})
    inner = _deflated_zip({"0.npy": header.getvalue() + bytes(320 << 20)}, {"0.npy"})
    assert len(inner) < 1 << 20
    members = members_of(good)
    members["models/model/sample_inputs.npz"] = inner
    data = repack(members)
    ep, peak = _peak_of(lambda: tpe.load(io.BytesIO(data)))
    assert not isinstance(ep, ArchiveError), ep
    assert peak < 32 << 20
    with pytest.raises(ArchiveError, match=r"sample_inputs.npz.*(uncompressed|zip bomb)"):
        ep.example_inputs["args"]
    small = _deflated_zip({"0.npy": _npy(np.ones((2, 5, 8), np.float32))}, {"0.npy"})
    members["models/model/sample_inputs.npz"] = small
    with pytest.raises(ArchiveError, match=r"sample_inputs.npz.*uncompressed"):
        tpe.load(io.BytesIO(repack(members))).example_inputs["args"]


def test_compressed_sample_npz_refused(good):
    members = members_of(good)
    data = _deflated_zip(members, {"models/model/sample_inputs.npz"})
    expect_error(data, "sample_inputs.npz", "uncompressed")


def test_sample_inputs_read_when_first_used(small_program, tmp_path):
    path = tmp_path / "p.pt2"
    tpe.save(small_program, path)
    ep = tpe.load(path)
    assert "first used" in repr(ep.example_inputs)
    np.testing.assert_array_equal(ep.example_inputs["args"][0], small_program.example_inputs["args"][0])
    assert tpe.load(path).module()(*small_program.example_inputs["args"]) is not None


def test_sample_inputs_of_a_replaced_archive_are_refused(small_program, hand_program, tmp_path):
    path = tmp_path / "p.pt2"
    tpe.save(small_program, path)
    ep = tpe.load(path)
    tpe.save(hand_program, path)  # another archive at the same path before the inputs were used
    with pytest.raises(ArchiveError, match=r"sample_inputs.npz.*changed since it was loaded"):
        ep.example_inputs["args"]


def test_lazy_members_outlive_a_closed_file_object(small_program):
    data = archive_bytes(small_program, extra_files={"note.txt": "hello", "raw.bin": b"\x00\x01"})
    f = io.BytesIO(data)
    ep = tpe.load(f)
    contents = tpe.load_pt2(f)
    f.close()
    assert contents.extra_files == {"note.txt": "hello", "raw.bin": b"\x00\x01"}
    assert sorted(contents.extra_files) == ["note.txt", "raw.bin"]
    np.testing.assert_array_equal(ep.example_inputs["args"][0], small_program.example_inputs["args"][0])
    import copy
    import pickle

    assert pickle.loads(pickle.dumps(contents.extra_files)) == {"note.txt": "hello", "raw.bin": b"\x00\x01"}
    assert type(copy.deepcopy(ep.example_inputs)) is dict


def test_damaged_extra_file_reported_when_looked_up(small_program):
    data = archive_bytes(small_program, extra_files={"note.txt": "hello"})
    i = data.index(b"hello")
    damaged = data[:i] + b"jello" + data[i + 5:]
    contents = tpe.load_pt2(io.BytesIO(damaged))
    with pytest.raises(ArchiveError, match=r"extra/note.txt.*CRC"):
        contents.extra_files["note.txt"]


# --- item 4: what capture never emits: out=, and mutation outputs outside the allowlist -----------

def _out_kwarg(target_node, name="add_1"):
    def doc_fn(doc):
        node(doc, name)["kwargs"] = [["out", {"k": "node", "v": target_node}]]
    return doc_fn


@pytest.mark.parametrize("target", ["x", "p_weight", "multiply"])
def test_out_keyword_refused(good, target):
    """``numpy.add(..., out=x)`` would write into the caller's array (or the weights) on every call."""
    bounded_error(edit(good, _out_kwarg(target)), PROGRAM, "out=")


def test_out_keyword_naming_a_constant_refused(good):
    def doc_fn(doc):
        node(doc, "add_1")["kwargs"] = [["out", {"k": "ndarray", "dtype": "<f4", "shape": [2, 5, 8],
                                                 "v": "00" * 320}]]
    bounded_error(edit(good, doc_fn), PROGRAM, "out=")


def _mutation(kind, arg, target, value=None, position=0):
    """Add an output ``value`` (a node name) with spec ``kind``/``arg``/``target`` at ``position``."""
    def doc_fn(doc):
        out = node(doc, "output")
        out["args"][0].insert(position, {"k": "node", "v": value or arg})
        doc["signature"]["outputs"].insert(position, {"kind": kind, "arg": {"k": "TensorArgument", "name": arg},
                                                      "target": target})
    return doc_fn


def test_good_archive_has_the_expected_layout(good):
    doc = program_doc(members_of(good)[PROGRAM])
    assert [s["kind"] for s in doc["signature"]["outputs"]] == ["USER_OUTPUT"]
    assert node(doc, "output")["args"] == [[{"k": "node", "v": "add_1"}]]


@pytest.mark.parametrize("edit_fn, words", [
    (_mutation("USER_INPUT_MUTATION", "add", "p_weight"), "not a user input"),
    (_mutation("USER_INPUT_MUTATION", "add", "c_TABLE"), "not a user input"),
    (_mutation("USER_INPUT_MUTATION", "x", "x"), "not computed by the graph"),
    (_mutation("USER_INPUT_MUTATION", "add", "x", value="multiply"), "returns 'multiply'"),
    (_mutation("USER_INPUT_MUTATION", "add", "nope"), "not a user input"),
    (_mutation("BUFFER_MUTATION", "add", "weight"), "not a buffer"),
    (_mutation("BUFFER_MUTATION", "add", "shift", position=1), "order"),
    (_mutation("GRADIENT_TO_PARAMETER", "add", "weight"), "output kind GRADIENT_TO_PARAMETER"),
    (_mutation("LOSS_OUTPUT", "add", None), "output kind LOSS_OUTPUT"),
    (_mutation("TOKEN", "add", None), "output kind TOKEN"),
])
def test_output_specs_outside_the_allowlist_refused(good, edit_fn, words):
    bounded_error(edit(good, edit_fn), PROGRAM, words)


def test_input_mutation_must_match_its_input(good):
    """A write-back the shape/dtype of some other value than the input is not one capture emits."""
    bounded_error(edit(good, _mutation("USER_INPUT_MUTATION", "getitem", "x")), PROGRAM, "shape")


def test_two_mutations_of_one_input_refused(good):
    def doc_fn(doc):
        _mutation("USER_INPUT_MUTATION", "add", "x")(doc)
        _mutation("USER_INPUT_MUTATION", "multiply", "x", position=1)(doc)
    bounded_error(edit(good, doc_fn), PROGRAM, "twice")


def test_input_kind_outside_the_allowlist_refused(good):
    def doc_fn(doc):
        doc["signature"]["inputs"][4].update(kind="TOKEN")
    bounded_error(edit(good, doc_fn), PROGRAM, "input kind TOKEN")


def test_user_output_spec_must_name_the_returned_node(good):
    def doc_fn(doc):
        doc["signature"]["outputs"][0]["arg"]["name"] = "multiply"
    bounded_error(edit(good, doc_fn), PROGRAM, "returns 'add_1'")


def test_a_real_input_mutation_round_trips():
    def model(x, y):
        y[...] = x.sum(axis=0)
        return x * 2.0
    x, y = np.ones((4, 3)), np.zeros(3)
    ep = tpe.export(model, x, y, dynamic_shapes={"x": {0: tpe.Dim("n", max=32)}, "y": None})
    loaded = load_bytes(archive_bytes(ep))
    y2 = np.zeros(3)
    out = loaded.module()(np.ones((5, 3)), y2)
    np.testing.assert_array_equal(y2, np.full(3, 5.0))
    np.testing.assert_array_equal(out, np.full((5, 3), 2.0))


# --- item 6: Fortran-order .npy members refused (weights would come back transposed) ----------------

def test_fortran_order_weight_refused(good):
    weight = np.arange(64, dtype=np.float32).reshape(8, 8)
    raw = io.BytesIO()
    np.save(raw, np.asfortranarray(weight))
    assert b"'fortran_order': True" in raw.getvalue()
    bounded_error(edit(good, models__model__weights__0_DOT_npy=raw.getvalue()), "weights/0.npy", "C order")


def test_fortran_order_sample_array_refused(good):
    raw = io.BytesIO()
    np.save(raw, np.asfortranarray(np.ones((2, 5, 8), np.float32)))
    npz = repack({"0.npy": raw.getvalue()})
    expect_error(edit(good, models__model__sample_inputs_DOT_npz=npz), "sample_inputs.npz", "C order")


def test_fortran_flag_on_a_vector_refused_too(good):
    """numpy writes fortran_order False for every C-contiguous array, 1-d included: anything else is not ours."""
    raw = io.BytesIO()
    np.save(raw, np.ones(8, np.float32))
    data = raw.getvalue().replace(b"'fortran_order': False", b"'fortran_order': True ")
    bounded_error(edit(good, models__model__weights__1_DOT_npy=data), "weights/1.npy", "C order")


# --- item 7: what saves, loads ---------------------------------------------------------------------

def _sqrt_scale(x):
    return x / math.sqrt(x.shape[0])


def _half_scale(x):
    return x * (x.shape[1] * 0.5)


def _reciprocal(x):
    return x * (1 / x.shape[0]) + x.shape[1] ** 2


@pytest.mark.parametrize("model", [_sqrt_scale, _half_scale, _reciprocal], ids=lambda f: f.__name__)
def test_float_size_expressions_round_trip(model):
    x = np.arange(12.0).reshape(4, 3)
    ep = tpe.export(model, x, dynamic_shapes={"x": {0: tpe.Dim("n", max=64), 1: tpe.Dim("m", max=8)}})
    blob = archive_bytes(ep)
    loaded = load_bytes(blob)
    for shape in ((4, 3), (9, 2), (1, 8)):
        x = np.arange(float(np.prod(shape))).reshape(shape)
        np.testing.assert_array_equal(loaded.module()(x), ep.module()(x))
    assert archive_bytes(loaded) == blob


def test_save_refuses_an_expression_load_would_refuse():
    from tensorplay_export.graph.codegen import GraphModule
    from tensorplay_export.graph.ir import Graph
    from tensorplay_export.program.exported import ExportedProgram, signature_from_graph

    s = sympy.Symbol("s", integer=True, positive=True)
    g = Graph()
    x = g.placeholder("x", meta={"shape": (s,), "dtype": np.dtype("f8"), "bind": {0: s}})
    y = g.call_function("numpy.multiply", (x, s**100), meta={"shape": (s,), "dtype": np.dtype("f8")})
    g.output([y])
    ep = ExportedProgram(GraphModule(g), signature_from_graph(g))
    with pytest.raises(ArchiveError, match="exponent"):
        archive_bytes(ep)


# --- item 8: refused at load, not raw errors at the first call ---------------------------------------

FLOAT_HALF = ["Float", 0, "1", -1, 1, 53]  # 0.5


@pytest.mark.parametrize("name", ["not an identifier", "class", "__import__('os').system('x')", "a-b", ""])
def test_hostile_keyword_names_refused(good, name):
    def doc_fn(doc):
        node(doc, "add_1")["kwargs"] = [[name, 1]]
    bounded_error(edit(good, doc_fn), PROGRAM, "keyword")


@pytest.mark.parametrize("kwargs, words", [
    ([["bogus", 1]], "do not fit numpy.add"),
    ([["casting", "unsafe"], ["dtype", None], ["where", True], ["order", "K"], ["subok", True],
      ["signature", None], ["extra", 1]], "do not fit"),
])
def test_keywords_the_op_does_not_take_refused(good, kwargs, words):
    def doc_fn(doc):
        node(doc, "add_1")["kwargs"] = kwargs
    bounded_error(edit(good, doc_fn), PROGRAM, words)


def test_too_many_positional_arguments_refused(good):
    def doc_fn(doc):
        node(doc, "matmul")["args"] += [1, 2, 3]
    bounded_error(edit(good, doc_fn), PROGRAM, "do not fit numpy.matmul")


@pytest.mark.parametrize("tree", [["Mod", S_TREE, 0], ["Pow", 0, -1], ["floor", ["Mul", S_TREE, ["Pow", 0, -1]]]])
def test_division_by_a_literal_zero_refused(good, tree):
    bounded_error(edit(good, set_slice_stop(tree)), PROGRAM, "by zero")


@pytest.mark.parametrize("tree", [FLOAT_HALF, ["Mul", FLOAT_HALF, S_TREE], ["Mul", ["Rational", 1, 2], S_TREE],
                                  ["Pow", S_TREE, FLOAT_HALF]])
def test_float_in_a_slice_refused(good, tree):
    bounded_error(edit(good, set_slice_stop(tree)), PROGRAM, "integer")


def test_float_in_a_reshape_refused():
    def model(x):
        return x.reshape(x.shape[0], -1)
    ep = tpe.export(model, np.ones((4, 3, 2)), dynamic_shapes={"x": {0: tpe.Dim("n", max=64)}})
    data = archive_bytes(ep)
    doc = program_doc(members_of(data)[PROGRAM])
    reshape = next(n for n in doc["graph"]["nodes"] if "reshape" in n["target"])
    text = json.dumps(reshape["args"])
    assert '"Symbol", "n"' in text
    sym = ["Symbol", "n", {"integer": True, "positive": True}]

    def doc_fn(doc):
        node = next(n for n in doc["graph"]["nodes"] if "reshape" in n["target"])
        node["args"] = json.loads(text.replace(json.dumps(sym), json.dumps(["Mul", FLOAT_HALF, sym]), 1))
    bounded_error(edit(data, doc_fn), PROGRAM, "integer")


def test_float_in_a_meta_shape_refused(good):
    def doc_fn(doc):
        node(doc, "matmul")["meta"]["shape"]["v"][0] = {"k": "sym", "v": ["Mul", FLOAT_HALF, S_TREE]}
    bounded_error(edit(good, doc_fn), PROGRAM, "integer")


# --- item 9: generated code always compiles, checked at save and at load -----------------------------

def _chain(x):
    h = x
    for _ in range(300):
        h = h * 1.001 + 1.0
    return h


def test_long_chain_of_inlined_ops_compiles_and_round_trips():
    """600 binary ops, each the only operand of the next: inlining them all nests 600 parentheses."""
    x = np.ones((4, 3))
    ep = tpe.export(_chain, x)
    want = _chain(x)
    np.testing.assert_allclose(ep.module()(x), want)
    loaded = load_bytes(archive_bytes(ep))
    np.testing.assert_allclose(loaded.module()(x), want)


def test_source_that_does_not_compile_refused_at_load(good):
    """A 5,000-term sum generates one Python expression too deep for the compiler: refused at load."""
    bounded_error(edit(good, set_slice_stop(["Add", S_TREE] + [1] * 5000)), PROGRAM, "graph module")


def test_program_is_compiled_at_export_and_after_decompositions(small_program):
    assert small_program.graph_module.derived_code is not None  # the forward module() runs
    assert small_program.run_decompositions().graph_module.derived_code is not None


def test_code_that_does_not_compile_fails_export_not_the_first_call(monkeypatch):
    """With the inlining bound lifted, the chain nests too deeply: export itself says so."""
    from tensorplay_export.graph import codegen

    monkeypatch.setattr(codegen, "_MAX_INLINE_DEPTH", 10**6)
    with pytest.raises(tpe.CaptureError, match="generated code does not compile.*nested parentheses"):
        tpe.export(_chain, np.ones((4, 3)))


def test_loaded_module_is_compiled_at_load(small_program):
    loaded = load_bytes(archive_bytes(small_program))
    assert loaded.graph_module.derived_code is not None


# --- item 5: range_constraints must be the ranges the graph's checks enforce ---------------------------

def test_range_check_node_looser_than_range_constraints_refused(good):
    def doc_fn(doc):
        node(doc, "assert_range_1")["args"][2] = 4096  # S checked up to 4096, but the contract says 64
    bounded_error(edit(good, doc_fn), PROGRAM, "range_constraints")


def test_range_constraints_tighter_than_the_check_refused(good):
    def doc_fn(doc):
        doc["range_constraints"][1][2] = 32
    bounded_error(edit(good, doc_fn), PROGRAM, "checks S in [1, 64]")


def test_range_check_removed_refused(good):
    def doc_fn(doc):
        doc["graph"]["nodes"] = [n for n in doc["graph"]["nodes"] if n["name"] != "assert_range_1"]
    bounded_error(edit(good, doc_fn), PROGRAM, "no check")


def test_range_check_of_a_symbol_without_a_range_refused(good):
    def doc_fn(doc):
        doc["range_constraints"] = [r for r in doc["range_constraints"] if r[0][1] != "S"]
    bounded_error(edit(good, doc_fn), PROGRAM, "no entry")


def test_derived_root_bounds_cross_checked():
    n = tpe.Dim("n", max=20)
    ep = tpe.export(lambda x: x * 2.0, np.ones(8), dynamic_shapes={"x": {0: 2 * n}})
    data = archive_bytes(ep)
    assert load_bytes(data).range_constraints == ep.range_constraints
    doc = program_doc(members_of(data)[PROGRAM])
    root = next(n for n in doc["graph"]["nodes"] if n["target"] == "tpe.derived_root")
    assert root["args"][5:7] == [1, 20], root["args"]

    def doc_fn(doc):
        next(n for n in doc["graph"]["nodes"] if n["target"] == "tpe.derived_root")["args"][6] = 1000
    bounded_error(edit(data, doc_fn), PROGRAM, "range_constraints")


def test_resave_over_the_archive_it_was_loaded_from(small_program, tmp_path):
    """The lazily read sample inputs are read before the save replaces the file."""
    path = tmp_path / "p.pt2"
    tpe.save(small_program, path)
    first = path.read_bytes()
    tpe.save(tpe.load(path), path)
    assert path.read_bytes() == first
    contents = tpe.load_pt2(path)
    tpe.package_pt2(path, exported_programs=contents.exported_programs, extra_files=dict(contents.extra_files))
    assert path.read_bytes() == first
