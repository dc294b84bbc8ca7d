"""save/load/package_pt2/load_pt2 on real exported programs: round trips, bytes, files, runners."""
from __future__ import annotations

import dataclasses
import io
import json
import threading

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export.errors import ArchiveError, ConstraintsExceededError
from tensorplay_export.serde import archive as archive_mod
from tensorplay_export.serde.zipio import ZipReader

from conftest import Small, archive_bytes, members_of, small_inputs


def roundtrip(ep, **kw):
    return tpe.load(io.BytesIO(archive_bytes(ep, **kw)))


def assert_same_program(a, b):
    assert b.code == a.code
    assert str(b.graph) == str(a.graph)
    assert b.range_constraints == a.range_constraints
    assert b.graph_signature == a.graph_signature
    assert b.equality_constraints == a.equality_constraints
    assert b.module_call_graph == a.module_call_graph
    assert b.dynamic_shapes == a.dynamic_shapes
    assert list(b.state_dict) == list(a.state_dict)
    for k in a.state_dict:
        assert np.array_equal(a.state_dict[k], b.state_dict[k]) and a.state_dict[k].dtype == b.state_dict[k].dtype
    for k in a.constants:
        assert np.array_equal(a.constants[k], b.constants[k])
    ea, eb = a.example_inputs, b.example_inputs
    assert len(ea["args"]) == len(eb["args"]) and list(ea["kwargs"]) == list(eb["kwargs"])
    for x, y in zip(ea["args"], eb["args"]):
        assert np.array_equal(x, y)


def test_roundtrip_keeps_everything(small_program):
    loaded = roundtrip(small_program)
    assert_same_program(small_program, loaded)
    for n, s in [(1, 1), (2, 5), (16, 64), (3, 7)]:
        x = small_inputs(n, s)
        np.testing.assert_array_equal(loaded.module()(x), small_program.module()(x))


@pytest.mark.parametrize("n, s", [(17, 5), (2, 65), (0, 3)])
def test_loaded_program_refuses_what_the_original_refuses(small_program, n, s):
    x = small_inputs(n, s)
    for ep in (small_program, roundtrip(small_program)):
        with pytest.raises(ConstraintsExceededError):
            ep.module()(x)


def test_wrong_dtype_still_refused_after_load(small_program):
    with pytest.raises(TypeError):
        roundtrip(small_program).module()(small_inputs().astype(np.float64))


def test_same_program_same_bytes(small_program, tmp_path):
    first = archive_bytes(small_program)
    assert archive_bytes(small_program) == first
    assert archive_bytes(roundtrip(small_program)) == first  # load + re-save is byte-identical
    tpe.save(small_program, tmp_path / "p.pt2")
    assert (tmp_path / "p.pt2").read_bytes() == first
    again = tpe.export(Small(), small_inputs(), dynamic_shapes={"x": {0: tpe.Dim("N", max=16), 1: tpe.Dim("S", max=64)}})
    assert archive_bytes(again) == first  # a fresh export of the same model too


def test_layout(small_program):
    names = sorted(members_of(archive_bytes(small_program)))
    assert names == ["archive.json", "format", "models/model/constants/0.npy", "models/model/program.json",
                     "models/model/sample_inputs.npz", "models/model/weights/0.npy",
                     "models/model/weights/1.npy", "models/model/weights/2.npy", "version"]
    members = members_of(archive_bytes(small_program))
    assert members["format"] == b"tensorplay_export.archive\n" and members["version"] == b"4\n"
    doc = json.loads(members["models/model/program.json"])
    assert [(w["fqn"], w["role"]) for w in doc["weights"]] == [
        ("weight", "parameter"), ("shift", "buffer"), ("scale", "non_persistent_buffer")]
    assert [(c["fqn"], c["role"]) for c in doc["constants"]] == [("c_TABLE", "constant")]
    assert json.loads(members["archive.json"])["pickle_protocol"] == 4


def test_hand_built_program_keeps_exact_argument_types(hand_program):
    loaded = roundtrip(hand_program)
    assert_same_program(hand_program, loaded)
    nodes = {n.name: n for n in loaded.graph.nodes}
    assert type(nodes["multiply"].args[1]) is np.float64
    assert nodes["add"].args[1] == float("inf") and type(nodes["add"].args[1]) is float
    assert nodes["astype"].args[1] == np.dtype("float32")
    assert nodes["getitem"].args[1][1] is Ellipsis
    assert nodes["getitem"].meta["module_stack"] == (("a", 0), ("a.b", 1))  # unflatten's call boundaries
    assert nodes["sum_1"].kwargs == {"axis": 0, "dtype": np.float64, "keepdims": False}
    assert np.array_equal(nodes["add_1"].args[1], np.arange(16384.0))  # the lifted graph constant
    x = np.linspace(0, 1, 7)
    for got, want in zip(loaded.graph_module(np.ones(16384), x), hand_program.graph_module(np.ones(16384), x)):
        np.testing.assert_array_equal(got, want)
    doc = json.loads(members_of(archive_bytes(hand_program))["models/model/program.json"])
    assert [c["role"] for c in doc["constants"]] == ["constant", "graph_constant"]


def test_multi_model_archive(small_program, hand_program, tmp_path):
    shifted = Small()
    shifted.weight[...] += 1.0  # same fqns as small_program, different values
    other = tpe.export(shifted, small_inputs(), dynamic_shapes={"x": {0: tpe.Dim("N", max=4), 1: tpe.Dim("S", max=8)}})
    path = tmp_path / "multi.pt2"
    out = tpe.package_pt2(path, exported_programs={"a": small_program, "b": other, "hand": hand_program},
                          extra_files={"notes.txt": "héllo", "raw/blob.bin": b"\x00\x01"},
                          tp_files={"runner.so": b"\x7fELF not executed"}, executorch_files={"m.pte": b"pte"})
    assert out == path
    contents = tpe.load_pt2(path)
    assert isinstance(contents, tpe.PT2ArchiveContents)
    assert sorted(contents.exported_programs) == ["a", "b", "hand"]
    assert_same_program(small_program, contents.exported_programs["a"])
    assert_same_program(other, contents.exported_programs["b"])
    assert not np.array_equal(contents.exported_programs["a"].state_dict["weight"],
                              contents.exported_programs["b"].state_dict["weight"])
    assert contents.extra_files == {"notes.txt": "héllo", "raw/blob.bin": b"\x00\x01"}
    assert contents.tp_files == {"runner.so": b"\x7fELF not executed"}
    assert contents.executorch_files == {"m.pte": b"pte"}
    with pytest.raises(ArchiveError, match="3 models"):
        tpe.load(path)


def test_extra_files_filled_in_place(small_program):
    data = archive_bytes(small_program, extra_files={"a.txt": "text", "b.bin": b"\xff"})
    wanted = {"a.txt": "", "b.bin": ""}
    tpe.load(io.BytesIO(data), extra_files=wanted)
    assert wanted == {"a.txt": "text", "b.bin": b"\xff"}
    with pytest.raises(ArchiveError, match="extra/nope"):
        tpe.load(io.BytesIO(data), extra_files={"nope": ""})


@pytest.mark.parametrize("name", ["../evil", "/abs", "a//b"])
def test_unsafe_extra_file_names_refused_on_save(small_program, name):
    with pytest.raises(ValueError):
        archive_bytes(small_program, extra_files={name: "x"})


def test_mmap_weights_by_path(small_program, tmp_path):
    path = tmp_path / "m.pt2"
    tpe.save(small_program, path)
    contents = tpe.load_pt2(path, load_weights_from_disk=True)
    ep = contents.exported_programs["model"]
    assert all(isinstance(v, np.memmap) for v in ep.state_dict.values())
    assert all(v.ctypes.data % 64 == 0 for v in ep.state_dict.values())
    x = small_inputs(3, 9)
    np.testing.assert_array_equal(ep.module()(x), small_program.module()(x))
    with open(path, "rb") as fh:  # from a file object the weights are read
        ep2 = tpe.load_pt2(fh, load_weights_from_disk=True).exported_programs["model"]
    assert not any(isinstance(v, np.memmap) for v in ep2.state_dict.values())


def test_runners_are_thread_safe(small_program):
    contents = tpe.load_pt2(io.BytesIO(archive_bytes(small_program)), num_runners=4)
    runner = contents.tp_runners["model"]
    inputs = [small_inputs(1 + i % 4, 1 + i % 9) for i in range(32)]
    want = [small_program.module()(x) for x in inputs]
    got: dict[int, np.ndarray] = {}
    errors = []

    def work(k: int) -> None:
        try:
            for i in range(k, len(inputs), 8):
                got[i] = runner(inputs[i])
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i, w in enumerate(want):
        np.testing.assert_array_equal(got[i], w)


def test_single_threaded_runner(small_program):
    contents = tpe.load_pt2(io.BytesIO(archive_bytes(small_program)), run_single_threaded=True)
    x = small_inputs()
    np.testing.assert_array_equal(contents.tp_runners["model"](x), small_program.module()(x))


@pytest.mark.parametrize("bad", [0, -2, True, "1"])
def test_num_runners_validated(small_program, bad):
    with pytest.raises(ValueError):
        tpe.load_pt2(io.BytesIO(archive_bytes(small_program)), num_runners=bad)


def test_device_index_other_than_cpu_refused(small_program):
    with pytest.raises(ArchiveError, match="only CPU is supported"):
        tpe.load_pt2(io.BytesIO(archive_bytes(small_program)), device_index=0)


def test_opset_version_recorded_and_checked(small_program):
    data = archive_bytes(small_program, opset_version={"numpy": 2})
    tpe.load(io.BytesIO(data), expected_opset_version={"numpy": 2})
    tpe.load(io.BytesIO(data), expected_opset_version={"tensorplay_export": 1})
    with pytest.raises(ArchiveError, match=r"opset_version=\{.*'numpy': 2.*expected_opset_version=\{'numpy': 3\}"):
        tpe.load(io.BytesIO(data), expected_opset_version={"numpy": 3})
    with pytest.raises(ArchiveError, match="opset version mismatch"):
        tpe.load_pt2(io.BytesIO(data), expected_opset_version={"other": 1})


@pytest.mark.parametrize("protocol", [-1, 6, "4", 4.0, True, None])
def test_pickle_protocol_validated(small_program, protocol):
    with pytest.raises(ValueError, match="pickle_protocol"):
        archive_bytes(small_program, pickle_protocol=protocol)


def test_pickle_protocol_recorded_only(small_program):
    data = archive_bytes(small_program, pickle_protocol=2)
    assert json.loads(members_of(data)["archive.json"])["pickle_protocol"] == 2
    assert tpe.load(io.BytesIO(data)).code == small_program.code


@pytest.mark.parametrize("opset", [{"a": -1}, {"a": "1"}, {1: 1}, ["a"]])
def test_bad_opset_version_refused_on_save(small_program, opset):
    with pytest.raises((TypeError, ValueError)):
        archive_bytes(small_program, opset_version=opset)


def test_failed_save_leaves_no_file(small_program, tmp_path, monkeypatch):
    path = tmp_path / "out.pt2"

    def broken_write(fh, members):
        fh.write(b"PK\x03\x04 half an archive")
        raise OSError("simulated failure mid-write")

    monkeypatch.setattr(archive_mod, "write_zip", broken_write)
    with pytest.raises(OSError, match="mid-write"):
        tpe.save(small_program, path)
    assert list(tmp_path.iterdir()) == []
    path.write_bytes(b"previous")
    with pytest.raises(OSError):
        tpe.save(small_program, path)
    assert path.read_bytes() == b"previous" and len(list(tmp_path.iterdir())) == 1


def test_unserializable_program_fails_before_touching_the_file(hand_program, tmp_path):
    hand_program.graph.nodes[2].meta["shape"] = (object(),)
    with pytest.raises(ArchiveError, match="cannot serialize node 'multiply'"):
        tpe.save(hand_program, tmp_path / "x.pt2")
    assert list(tmp_path.iterdir()) == []


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        tpe.load("/nonexistent/dir/x.pt2")


@dataclasses.dataclass
class Pair:
    a: np.ndarray
    b: np.ndarray


tpe.register_dataclass(Pair, serialized_type_name="tests.serde.Pair")


def test_registered_dataclass_inputs_outputs_and_spec():
    def f(p, *, scale):
        return Pair(p.a * scale, p.b + 1)

    spec = {"p": Pair(a={0: tpe.Dim("n", max=9)}, b=None), "scale": None}
    ep = tpe.export(f, Pair(np.ones((3, 2)), np.ones(2)), scale=2.0, dynamic_shapes=spec)
    loaded = roundtrip(ep)
    assert loaded.dynamic_shapes == spec
    assert type(loaded.example_inputs["args"][0]) is Pair
    out = loaded.module()(Pair(np.ones((4, 2)), np.ones(2)), scale=2.0)
    assert type(out) is Pair and out.a.shape == (4, 2)
    with pytest.raises(ConstraintsExceededError):
        loaded.module()(Pair(np.ones((10, 2)), np.ones(2)), scale=2.0)


def test_archive_reader_sees_aligned_stored_members(small_program, tmp_path):
    path = tmp_path / "a.pt2"
    tpe.save(small_program, path)
    with ZipReader(path) as zr:
        for name in zr.names:
            assert zr.data_offset(name) % 64 == 0


def test_bytes_do_not_depend_on_hash_seed(tmp_path):
    """Two fresh interpreters with different PYTHONHASHSEED export and save the same bytes."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import sys; sys.path.insert(0, sys.argv[1]);"
        "import tensorplay_export as tpe, conftest as c;"
        "ep = tpe.export(c.Small(), c.small_inputs(), dynamic_shapes={'x': {0: tpe.Dim('N', max=16), 1: tpe.Dim('S', max=64)}});"
        "tpe.save(ep, sys.argv[2])"
    )
    here = str(Path(__file__).parent)
    outs = []
    for seed in ("1", "2"):
        out = tmp_path / f"p{seed}.pt2"
        env = dict(os.environ, PYTHONHASHSEED=seed)
        subprocess.run([sys.executable, "-c", script, here, str(out)], check=True, env=env, cwd=tmp_path)
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


class _Inner(tpe.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = tpe.nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x) * 2


class _Outer(tpe.nn.Module):
    """A submodule whose call signature is preserved, and a buffer written by forward."""

    def __init__(self):
        super().__init__()
        self.inner = _Inner()
        self.register_buffer("count", np.zeros(1))

    def forward(self, x):
        self.count = self.count + 1
        return self.inner(x) + 1


def test_module_call_graph_mutation_and_unflatten_survive():
    x = np.ones((3, 4), np.float32)
    ep = tpe.export(_Outer(), x, dynamic_shapes={"x": {0: tpe.Dim("b")}}, preserve_module_call_signature=("inner",))
    loaded = roundtrip(ep)
    assert loaded.module_call_graph == ep.module_call_graph
    assert loaded.graph_signature.output_specs == ep.graph_signature.output_specs
    mod = loaded.module()
    np.testing.assert_array_equal(mod(x), ep.module()(x))
    mod(x)
    assert dict(mod.named_buffers())["count"].tolist() == [2.0]
    np.testing.assert_array_equal(tpe.unflatten(loaded).inner(x), tpe.unflatten(ep).inner(x))


def test_decomposed_program_roundtrips(small_program):
    decomposed = small_program.run_decompositions()
    loaded = roundtrip(decomposed)
    x = small_inputs(3, 6)
    np.testing.assert_allclose(loaded.module()(x), small_program.module()(x), rtol=1e-6)
    assert archive_bytes(loaded) == archive_bytes(decomposed)


def test_draft_program_keeps_unbacked_symbol_ranges():
    def model(x):
        nz = np.nonzero(x > 0)[0]
        return x[nz] * 2

    report = tpe.draft_export(model, np.array([1.0, -1.0, 2.0]), dynamic_shapes={"x": {0: tpe.Dim("n", max=100)}})
    ep = report.exported_program
    assert ep is not None
    loaded = roundtrip(ep)
    assert loaded.range_constraints == ep.range_constraints
    assert any(s.name.startswith("u") for s in loaded.range_constraints)
    x = np.array([3.0, -2.0, 0.5, 7.0])
    np.testing.assert_array_equal(loaded.module()(x), ep.module()(x))


def test_files_only_archive(tmp_path):
    path = tmp_path / "files.pt2"
    tpe.package_pt2(path, extra_files={"a": "1"})
    contents = tpe.load_pt2(path)
    assert contents.exported_programs == {} and contents.extra_files == {"a": "1"}
    with pytest.raises(ArchiveError, match="0 models"):
        tpe.load(path)


def test_identity_keyed_specs_are_recorded_as_unstored():
    x = small_inputs()
    shapes = tpe.ShapesCollection()
    shapes[x] = {0: tpe.Dim("N", max=16)}
    ep = tpe.export(Small(), x, dynamic_shapes=shapes)
    loaded = roundtrip(ep)
    assert loaded.dynamic_shapes is None  # keyed by array identity: nothing to store
    assert loaded.range_constraints == ep.range_constraints
    np.testing.assert_array_equal(loaded.module()(small_inputs(7, 5)), ep.module()(small_inputs(7, 5)))


def test_order_of_files_and_programs_does_not_change_bytes(small_program, hand_program):
    def pack(programs, extras):
        buf = io.BytesIO()
        tpe.package_pt2(buf, exported_programs=programs, extra_files=extras, tp_files={"b": b"2", "a": b"1"})
        return buf.getvalue()

    one = pack({"x": small_program, "y": hand_program}, {"b.txt": "2", "a.txt": "1"})
    two = pack({"y": hand_program, "x": small_program}, {"a.txt": "1", "b.txt": "2"})
    assert one == two
