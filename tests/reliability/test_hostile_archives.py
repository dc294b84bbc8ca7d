"""Hostile archives against ``load``, ``load_pt2`` and ``ExportedProgram.deserialize``.

Every input must end in ``ArchiveError`` or a correct load, within bounded time and memory,
write nothing (the working directory is an empty folder under ``tmp_path`` and is checked
afterwards) and never run code: payloads that would create a canary file if executed (pickles,
code injected into names, symbols, paths and keys that reach generated Python source) must
leave no canary behind.  A program that loads is also run on the sample input, where it may
answer or refuse, but never run the payload.
"""
from __future__ import annotations

import builtins
import copy
import io
import json
import os
import struct
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

import tensorplay_export as tpe
from tensorplay_export import ArchiveError, Dim, nn

from _rel_util import profile_name, rel_settings
from _shared import program_bytes, program_doc

PROGRAM = "models/model/program.json"
TIME_LIMIT_S = 10.0
PEAK_LIMIT_BYTES = 256 << 20
TABLE = np.linspace(0.0, 1.0, 32, dtype=np.float32).reshape(16, 2)


class Small(nn.Module):
    """x: (n, 2), extras['scale']: (n, 2) -> {'out': (n, 2)}; a parameter, a buffer, a sliced table."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(np.arange(4, dtype=np.float32).reshape(2, 2))
        self.register_buffer("b", np.ones(2, np.float32))

    def forward(self, x, extras):
        s = x.shape[0]
        return {"out": x @ self.w + self.b + TABLE[:s] * extras["scale"]}


def sample(n: int = 3):
    x = np.linspace(-1, 1, n * 2, dtype=np.float32).reshape(n, 2)
    return (x, {"scale": np.full((n, 2), 2.0, np.float32)})


@pytest.fixture(scope="module")
def program():
    n = Dim("n", max=16)
    return tpe.export(Small(), *sample(), dynamic_shapes={"x": {0: n}, "extras": {"scale": {0: n}}})


@pytest.fixture(scope="module")
def good(program) -> bytes:
    buf = io.BytesIO()
    tpe.save(program, buf, extra_files={"note.txt": "hello"})
    return buf.getvalue()


@pytest.fixture(scope="module")
def expected(program):
    return program.module()(*sample())


def load_all(f, **kw):
    """``tpe.load``, then use the example inputs: they are read from the archive on first use."""
    ep = tpe.load(f, **kw)
    ep.example_inputs.get("args")
    return ep


def load_pt2_all(f, **kw):
    """``tpe.load_pt2``, then use every lazily read part: example inputs and files."""
    contents = tpe.load_pt2(f, **kw)
    for ep in contents.exported_programs.values():
        ep.example_inputs.get("args")
    for table in (contents.extra_files, contents.tp_files, contents.executorch_files):
        dict(table.items())
    return contents


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {i.filename: z.read(i) for i in z.infolist()}


def pack(items, compress=zipfile.ZIP_STORED) -> bytes:
    """A zip of (name, bytes) pairs in order (duplicates allowed)."""
    buf = io.BytesIO()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names; we want them
        with zipfile.ZipFile(buf, "w", compress) as z:
            for name, payload in (items.items() if isinstance(items, dict) else items):
                z.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), payload, compress_type=compress)
    return buf.getvalue()


def with_doc(data: bytes, edit) -> bytes:
    m = members(data)
    doc = program_doc(m[PROGRAM])
    edit(doc)
    m[PROGRAM] = program_bytes(doc)
    return pack(m)


class Canary:
    """A pickle payload whose execution creates ``path`` (via builtins.open)."""

    def __init__(self, path: Path):
        self.path = str(path)

    def __reduce__(self):
        return (builtins.open, (self.path, "w"))


def pickled_npy(path: Path) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.array([Canary(path), 1], dtype=object), allow_pickle=True)
    return buf.getvalue()


def pickled_npz(path: Path) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **{"0": np.array([Canary(path)], dtype=object), "1": np.ones(2)})
    return buf.getvalue()


def injections(canary: Path) -> list[str]:
    """Strings that would create the canary if they reached exec/eval as code."""
    c = str(canary)
    return [
        f"__import__('builtins').open({c!r}, 'w')",
        f"x); __import__('builtins').open({c!r}, 'w'); (",
        f"a\n__import__('builtins').open({c!r}, 'w')\n",
        f"'; __import__('builtins').open({c!r}, 'w'); '",
        f'"; __import__("builtins").open({c!r}, "w"); "',
        f"__import__('os').system('touch {c}')",
        f"lambda: 0; open({c!r}, 'w')",
    ]


def attempt(fn, workdir: Path, canary: Path):
    """Run ``fn`` bounded in time and memory; returns the program/contents or the ArchiveError.

    Fails on any other exception, a canary, or a new file in ``workdir``.
    """
    before = sorted(p.name for p in workdir.iterdir())
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = fn()
    except ArchiveError as err:
        out = err
    finally:
        elapsed = time.perf_counter() - t0
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert not canary.exists(), "a payload from the archive was executed"
    assert elapsed < TIME_LIMIT_S, f"took {elapsed:.1f}s"
    assert peak < PEAK_LIMIT_BYTES, f"peak memory {peak >> 20} MiB"
    assert sorted(p.name for p in workdir.iterdir()) == before, "the loader wrote files"
    return out


def exercise(data: bytes, workdir: Path, canary: Path, expected=None, *, full: bool = True) -> None:
    """load (and, if ``full``, load_pt2 and deserialize of the program member); run whatever loads."""
    results = [attempt(lambda: load_all(io.BytesIO(data)), workdir, canary)]
    if full:
        results.append(attempt(lambda: load_pt2_all(io.BytesIO(data), num_runners=2), workdir, canary))
    try:
        doc = members(data).get(PROGRAM) if full else None
    except Exception:  # noqa: BLE001 - not even a zip for the stdlib: nothing to deserialize
        doc = None
    if doc is not None:
        results.append(attempt(lambda: tpe.ExportedProgram.deserialize(doc), workdir, canary))
    for out in results:
        if isinstance(out, ArchiveError):
            continue
        programs = list(out.exported_programs.values()) if hasattr(out, "exported_programs") else [out]
        for ep in programs:
            if isinstance(ep, tpe.ExportedProgram):
                run_loaded(ep, workdir, canary, expected)


def run_loaded(ep, workdir: Path, canary: Path, expected) -> None:
    """A loaded program runs on the sample (or refuses it), in bounded time and memory; a payload
    never runs."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        m = ep.module()
        got = m(*sample())
    except Exception as err:  # noqa: BLE001 - a tampered but well-formed program may fail to run
        got = err
    finally:
        elapsed = time.perf_counter() - t0
        _cur, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < TIME_LIMIT_S, f"the loaded program ran for {elapsed:.1f}s"
    assert peak < PEAK_LIMIT_BYTES, f"the loaded program peaked at {peak >> 20} MiB"
    assert not canary.exists(), "a payload from the archive was executed when the program ran"
    assert not any(p.name != canary.name for p in workdir.iterdir() if p.name not in ("canary",)), \
        "running the program wrote files"
    if expected is not None and not isinstance(got, Exception):
        assert got["out"].shape == expected["out"].shape


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work, tmp_path / "canary"


# -- the valid archive --------------------------------------------------------------------------

def test_valid_archive_loads_and_matches(good, expected, sandbox):
    work, canary = sandbox
    ep = attempt(lambda: load_all(io.BytesIO(good)), work, canary)
    np.testing.assert_array_equal(ep.module()(*sample())["out"], expected["out"])
    contents = attempt(lambda: load_pt2_all(io.BytesIO(good)), work, canary)
    assert contents.extra_files == {"note.txt": "hello"}


# -- hand-written nasties -------------------------------------------------------------------------

def test_truncated_everywhere(good, sandbox):
    work, canary = sandbox
    for cut in sorted({0, 1, 4, 22, 30, 100, len(good) // 3, len(good) // 2, len(good) - 22,
                       len(good) - 1}):
        out = attempt(lambda: load_all(io.BytesIO(good[:cut])), work, canary)
        assert isinstance(out, ArchiveError), f"truncated at {cut} of {len(good)} bytes loaded"


def test_bit_flips_at_structural_offsets(good, sandbox):
    work, canary = sandbox
    offsets = [0, 1, 2, 3, 26, 28, 30] + [len(good) - k for k in (22, 18, 16, 12, 10, 8)]
    cd = good.rfind(b"PK\x01\x02")
    offsets += [cd + k for k in range(0, 46, 3)]
    for off in offsets:
        for bit in (0, 7):
            data = bytearray(good)
            data[off] ^= 1 << bit
            exercise(bytes(data), work, canary)


def test_duplicate_member_names(good, sandbox):
    work, canary = sandbox
    m = members(good)
    evil = pack(list(m.items()) + [(PROGRAM, m[PROGRAM])])
    assert isinstance(attempt(lambda: load_all(io.BytesIO(evil)), work, canary), ArchiveError)
    shadow = pack(list(m.items()) + [("models/model/weights/0.npy", m["models/model/weights/0.npy"])])
    assert isinstance(attempt(lambda: load_all(io.BytesIO(shadow)), work, canary), ArchiveError)


@pytest.mark.parametrize("name", ["../evil", "../../tmp/evil", "/etc/evil", "/abs/x", "extra/../../evil",
                                  "models/model/../../evil", "C:\\evil", "extra\\..\\evil", "extra/./x",
                                  "extra//x", "extra/\x00x", "extra/x\n"])
def test_escaping_member_names(good, sandbox, name):
    work, canary = sandbox
    m = members(good)
    m[name] = b"payload"
    evil = pack(m)
    assert isinstance(attempt(lambda: load_all(io.BytesIO(evil)), work, canary), ArchiveError)
    # also listed in the index, so only the name check can catch it
    idx = json.loads(m["archive.json"])
    idx["extra_files"][name.split("extra/", 1)[-1]] = "bytes"
    m["archive.json"] = json.dumps(idx, sort_keys=True).encode()
    evil = pack(m)
    assert isinstance(attempt(lambda: load_pt2_all(io.BytesIO(evil)), work, canary), ArchiveError)


def test_zip_bomb_deflated_member(good, sandbox):
    work, canary = sandbox
    m = members(good)
    m["extra/bomb"] = b"\0" * (64 << 20)
    idx = json.loads(m["archive.json"])
    idx["extra_files"]["bomb"] = "bytes"
    m["archive.json"] = json.dumps(idx, sort_keys=True).encode()
    evil = pack(m, zipfile.ZIP_DEFLATED)
    assert len(evil) < (1 << 20)
    out = attempt(lambda: load_pt2_all(io.BytesIO(evil)), work, canary)
    assert isinstance(out, ArchiveError)


def test_overlapping_members_bomb(good, sandbox):
    """Many central-directory entries pointing at the same local data (the overlap bomb)."""
    work, canary = sandbox
    m = members(good)
    data = pack(m)
    cd_start = struct.unpack("<L", data[-6:-2])[0]
    cd = data[cd_start:-22]
    first = cd[:46 + struct.unpack("<H", cd[28:30])[0] + struct.unpack("<H", cd[30:32])[0]]
    entries = []
    for i in range(200):
        name = f"extra/c{i:03d}".encode()
        e = bytearray(first[:46]) + name
        e[28:30] = struct.pack("<H", len(name))
        e[30:32] = b"\0\0"
        entries.append(bytes(e))
    new_cd = cd + b"".join(entries)
    eocd = bytearray(data[-22:])
    total = struct.unpack("<H", eocd[10:12])[0] + len(entries)
    eocd[8:10] = struct.pack("<H", total)
    eocd[10:12] = struct.pack("<H", total)
    eocd[12:16] = struct.pack("<L", len(new_cd))
    evil = data[:cd_start] + new_cd + bytes(eocd)
    out = attempt(lambda: load_pt2_all(io.BytesIO(evil)), work, canary)
    assert isinstance(out, ArchiveError)


def test_huge_declared_shapes(good, sandbox):
    work, canary = sandbox
    m = members(good)
    header = {"descr": "<f4", "fortran_order": False, "shape": (1 << 40, 1 << 20)}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    m["models/model/weights/0.npy"] = buf.getvalue() + b"\0" * 64
    assert isinstance(attempt(lambda: load_all(io.BytesIO(pack(m))), work, canary), ArchiveError)

    def huge(doc):
        doc["weights"][0]["shape"] = [1 << 40, 1 << 40]
    assert isinstance(attempt(lambda: load_all(io.BytesIO(with_doc(good, huge))), work, canary), ArchiveError)


def test_wrong_dtypes(good, sandbox):
    work, canary = sandbox
    m = members(good)
    buf = io.BytesIO()
    np.save(buf, np.arange(4, dtype=np.int64).reshape(2, 2))
    m["models/model/weights/0.npy"] = buf.getvalue()
    assert isinstance(attempt(lambda: load_all(io.BytesIO(pack(m))), work, canary), ArchiveError)
    for dt in ("|O", "<U0", "object", "<f4, <i4", "[('a', '<f4')]", "<f99999999", "|V0"):
        def edit(doc, dt=dt):
            doc["weights"][0]["dtype"] = dt
        assert isinstance(attempt(lambda: load_all(io.BytesIO(with_doc(good, edit))), work, canary),
                          ArchiveError), dt


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1, "NaN", None, [1], 1.5, 1 << 80])
def test_bad_ranges(good, sandbox, bad):
    work, canary = sandbox

    def edit(doc):
        doc["range_constraints"][0][1] = bad
    text = with_doc(good, edit)
    exercise(text, work, canary)
    assert isinstance(attempt(lambda: load_all(io.BytesIO(text)), work, canary), ArchiveError) or bad == -1


def test_nan_literal_json(good, sandbox):
    work, canary = sandbox
    m = members(good)
    m[PROGRAM] = m[PROGRAM].replace(b'"pickle_protocol":4', b'"pickle_protocol":NaN')
    assert isinstance(attempt(lambda: load_all(io.BytesIO(pack(m))), work, canary), ArchiveError)


@pytest.mark.parametrize("target", ["os.system", "builtins.eval", "numpy.load", "numpy.lib.format.read_array",
                                    "subprocess.run", "__import__", "tpe.nope", "numpy.add.__globals__",
                                    "tensorplay_export.serde.archive.load"])
def test_unknown_ops(good, sandbox, target):
    work, canary = sandbox

    def edit(doc):
        next(n for n in doc["graph"]["nodes"] if n["target"] == "numpy.add")["target"] = target
    assert isinstance(attempt(lambda: load_all(io.BytesIO(with_doc(good, edit))), work, canary), ArchiveError)


@pytest.mark.parametrize("type_name", ["os.PathLike", "builtins.object", "collections.OrderedDict",
                                       "tensorplay_export.nn.Module", "x" * 5000])
def test_unknown_type_names(good, sandbox, type_name):
    work, canary = sandbox

    def edit(doc):
        doc["module_call_graph"][0]["signature"]["out_spec"]["type"] = type_name
    data = with_doc(good, edit)
    assert isinstance(attempt(lambda: load_all(io.BytesIO(data)), work, canary), ArchiveError)


def test_planted_pickles_never_run(good, sandbox):
    work, canary = sandbox
    for member, payload in [("models/model/weights/0.npy", pickled_npy(canary)),
                            ("models/model/constants/0.npy", pickled_npy(canary)),
                            ("models/model/sample_inputs.npz", pickled_npz(canary)),
                            (PROGRAM, pickled_npy(canary))]:
        m = members(good)
        m[member] = payload
        out = attempt(lambda: load_all(io.BytesIO(pack(m))), work, canary)
        assert isinstance(out, ArchiveError), member
        out = attempt(lambda: load_pt2_all(io.BytesIO(pack(m))), work, canary)
        assert isinstance(out, ArchiveError), member
    # a whole pickle instead of a zip
    import pickle

    blob = pickle.dumps(Canary(canary))
    assert isinstance(attempt(lambda: load_all(io.BytesIO(blob)), work, canary), ArchiveError)
    assert isinstance(attempt(lambda: tpe.ExportedProgram.deserialize(blob), work, canary), ArchiveError)


def test_deeply_nested_json(good, sandbox):
    work, canary = sandbox
    for depth in (250, 5000, 100_000):
        m = members(good)
        m[PROGRAM] = b'{"graph":' + b"[" * depth + b"]" * depth + b"}"
        data = pack(m)
        assert isinstance(attempt(lambda: load_all(io.BytesIO(data)), work, canary), ArchiveError)
        assert isinstance(attempt(lambda: tpe.ExportedProgram.deserialize(m[PROGRAM]), work, canary),
                          ArchiveError)
        m["archive.json"] = b"[" * depth + b"]" * depth
        assert isinstance(attempt(lambda: load_pt2_all(io.BytesIO(pack(m))), work, canary), ArchiveError)


def _string_slots(doc, path=()):
    """Paths to every string value and dict key of a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield path + (("key", k),)
            yield from _string_slots(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _string_slots(v, path + (i,))
    elif isinstance(doc, str):
        yield path


def _slot_text(doc, slot):
    obj = doc
    for p in slot[:-1]:
        obj = obj[p]
    last = slot[-1]
    return last[1] if isinstance(last, tuple) else obj[last]


def _set_slot(doc, slot, text):
    *parents, last = slot
    obj = doc
    for p in parents:
        obj = obj[p]
    if isinstance(last, tuple) and last[0] == "key":
        obj[text] = obj.pop(last[1])
    else:
        obj[last] = text


def test_code_injection_through_every_string(good, sandbox):
    """Every string of the program document (node names, targets, symbol names, paths, keys,
    source files, dtype strings) replaced by a payload: the archive is refused, or it loads
    and runs without the payload ever executing (codegen must not splice it in as code)."""
    work, canary = sandbox
    doc = program_doc(members(good)[PROGRAM])
    slots = list(_string_slots(doc))
    nightly = profile_name() == "nightly"
    if not nightly:  # one slot per (place in the document, original text): 270 of 680
        distinct = {}
        for slot in slots:
            where = tuple("*" if isinstance(p, int) else p for p in slot[:-1])
            distinct.setdefault((where, repr(slot[-1]) if isinstance(slot[-1], tuple) else "",
                                 _slot_text(doc, slot)), slot)
        slots = list(distinct.values())
    payloads = injections(canary)
    for i, slot in enumerate(slots):
        evil = copy.deepcopy(doc)
        _set_slot(evil, slot, payloads[i % len(payloads)])
        m = members(good)
        m[PROGRAM] = program_bytes(evil)
        exercise(pack(m), work, canary, full=nightly)


# -- fuzzing ----------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70) | st.floats(allow_nan=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)


def _all_paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _all_paths(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _all_paths(v, path + (i,))


@rel_settings(scale=6)
@given(data=st.data())
def test_fuzz_program_document(good, tmp_path_factory, data):
    """Structure-aware mutation: replace/delete any value of program.json, several times."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    doc = program_doc(members(good)[PROGRAM])
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        paths = [p for p in _all_paths(doc) if p]
        path = data.draw(st.sampled_from(paths), label="path")
        parent = doc
        for p in path[:-1]:
            parent = parent[p]
        action = data.draw(st.sampled_from(["replace", "delete", "payload"]), label="action")
        if action == "delete":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif action == "payload":
            parent[path[-1]] = data.draw(st.sampled_from(injections(canary)), label="payload")
        else:
            parent[path[-1]] = data.draw(json_values, label="value")
    m = members(good)
    m[PROGRAM] = program_bytes(doc)
    cwd = os.getcwd()
    os.chdir(work)
    try:
        exercise(pack(m), work, canary)
    finally:
        os.chdir(cwd)


@rel_settings(scale=6)
@given(data=st.data())
def test_fuzz_raw_bytes(good, tmp_path_factory, data):
    """Byte-level damage: flips, overwrites, deletions and insertions anywhere in the archive."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    blob = bytearray(good)
    for _ in range(data.draw(st.integers(1, 6), label="edits")):
        pos = data.draw(st.integers(0, len(blob) - 1), label="pos")
        kind = data.draw(st.sampled_from(["flip", "set", "delete", "insert"]), label="kind")
        if kind == "flip":
            blob[pos] ^= 1 << data.draw(st.integers(0, 7), label="bit")
        elif kind == "set":
            blob[pos] = data.draw(st.sampled_from([0, 0xFF, 0x7F, 0x80]), label="byte")
        elif kind == "delete":
            del blob[pos:pos + data.draw(st.integers(1, 64), label="n")]
        else:
            blob[pos:pos] = data.draw(st.binary(min_size=1, max_size=32), label="bytes")
        if not blob:
            break
    cwd = os.getcwd()
    os.chdir(work)
    try:
        exercise(bytes(blob), work, canary)
    finally:
        os.chdir(cwd)


@rel_settings(scale=3)
@given(member=st.sampled_from(["format", "version", "archive.json", PROGRAM, "models/model/weights/0.npy",
                               "models/model/constants/0.npy", "models/model/sample_inputs.npz",
                               "extra/note.txt"]),
       payload=st.binary(max_size=300))
def test_fuzz_member_replacement(good, tmp_path_factory, member, payload):
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    m = members(good)
    m[member] = payload
    cwd = os.getcwd()
    os.chdir(work)
    try:
        exercise(pack(m), work, canary)
    finally:
        os.chdir(cwd)


# -- fuzzing the classes of issue 15: values, document size, lazily read members, mutation specs ---

S_TREE = ["Symbol", "n", {"integer": True, "positive": True}]


def _sym_slots(doc, path=()):
    """Paths to every ``{"k": "sym", "v": tree}`` of the document (the tree's parent)."""
    if isinstance(doc, dict):
        if doc.get("k") == "sym" and set(doc) == {"k", "v"}:
            yield path
        for k, v in doc.items():
            yield from _sym_slots(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _sym_slots(v, path + (i,))


def _at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _hostile_trees():
    leaf = st.one_of(st.just(S_TREE), st.integers(-(1 << 255) + 1, (1 << 255) - 1),
                     st.sampled_from([0, 1, -1, ["Float", 0, "1", -1, 1, 53], ["Rational", 1, 2]]))

    def tower(draw):
        t = draw(leaf)
        for _ in range(draw(st.integers(1, 6))):
            t = ["Pow", t, draw(st.sampled_from([2, 3, 16, 63, 64, -1, -64, ["Rational", 1, 2],
                                                 ["Float", 0, "1", -1, 1, 53]]))]
        return t
    return st.one_of(
        st.composite(lambda draw: tower(draw))(),
        st.builds(lambda n, x: ["Mul"] + [x] * n, st.integers(2, 400), leaf),
        st.builds(lambda n, x: ["Add", S_TREE] + [x] * n, st.integers(1, 12_000), leaf),
        st.builds(lambda head, x: [head, S_TREE, x], st.sampled_from(["Mod", "Pow"]), st.sampled_from([0, -1])),
        st.builds(lambda x: ["floor", ["Mul", S_TREE, ["Pow", x, -1]]], st.sampled_from([0, S_TREE, 2])),
        st.builds(lambda x: ["Mul", x, S_TREE], st.sampled_from([["Float", 0, "1", -1, 1, 53], ["Rational", 1, 3]])),
    )


@rel_settings(scale=4)
@given(data=st.data())
def test_fuzz_hostile_size_values(good, tmp_path_factory, data):
    """Towers of small exponents, long products and sums, zero divisors, floats where sizes go:
    refused at load or run in bounded time and memory."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    doc = program_doc(members(good)[PROGRAM])
    slots = list(_sym_slots(doc))
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        _at(doc, data.draw(st.sampled_from(slots), label="slot"))["v"] = data.draw(_hostile_trees(), label="tree")
    m = members(good)
    m[PROGRAM] = program_bytes(doc)
    exercise(pack(m), work, canary)


@rel_settings(scale=0.5)
@given(copies=st.integers(1, 120), terms=st.integers(100, 9000), where=st.sampled_from(["meta", "ranges", "dims"]))
def test_fuzz_document_size(good, tmp_path_factory, copies, terms, where):
    """Many mid-size expressions (each within the per-expression limit) in one document."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    doc = program_doc(members(good)[PROGRAM])
    big = {"k": "sym", "v": ["Add", S_TREE] + [1] * terms}
    if where == "meta":
        nodes = doc["graph"]["nodes"]
        for i in range(copies):
            nodes[i % len(nodes)]["meta"][f"junk{i}"] = big
    elif where == "ranges":
        doc["dynamic_shapes"] = {"v": [big] * copies}
    else:
        doc["example_inputs"]["leaves"] += [big] * copies
    m = members(good)
    m[PROGRAM] = program_bytes(doc)
    exercise(pack(m), work, canary, full=False)  # load only: each load decodes up to ~1M nodes


def _npy(array, fortran=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(array) if fortran else array)
    return buf.getvalue()


@rel_settings(scale=4)
@given(data=st.data())
def test_fuzz_lazily_read_members(good, tmp_path_factory, data):
    """sample_inputs.npz and extra files are read when first used: every damage is an ArchiveError
    then (load_all / load_pt2_all use them), bounded by the archive's size."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    m = members(good)
    inner = members(m["models/model/sample_inputs.npz"])
    target = data.draw(st.sampled_from(["npz", "extra"]), label="target")
    kind = data.draw(st.sampled_from(["deflate", "fortran", "truncate", "rename", "extra-member", "bomb",
                                      "pickle", "shape"]), label="kind")
    key = data.draw(st.sampled_from(sorted(inner)), label="key")
    compress = {}
    if kind == "deflate":
        compress = {key}
    elif kind == "fortran":
        inner[key] = _npy(np.ones((3, 2), np.float32), fortran=True)
    elif kind == "truncate":
        inner[key] = inner[key][:data.draw(st.integers(0, len(inner[key]) - 1), label="cut")]
    elif kind == "rename":
        inner[data.draw(st.sampled_from(["../x.npy", "a/b.npy", "x.txt", "9.npy"]), label="name")] = inner.pop(key)
    elif kind == "extra-member":
        inner["extra.npy"] = _npy(np.zeros(4))
    elif kind == "bomb":
        inner[key] = _npy(np.zeros((1 << 22,), np.float64))
        compress = {key}
    elif kind == "pickle":
        inner[key] = pickled_npy(canary)
    else:
        inner[key] = _npy(np.ones((7, 2), np.float32))
    if target == "npz":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, payload in inner.items():
                z.writestr(name, payload, compress_type=zipfile.ZIP_DEFLATED if name in compress else zipfile.ZIP_STORED)
        m["models/model/sample_inputs.npz"] = buf.getvalue()
        data_bytes = pack(m)
    else:
        payload = {"deflate": b"hello" * 1000, "bomb": bytes(48 << 20)}.get(kind, b"\x00" * 100)
        m["extra/note.txt"] = payload
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for name, p in m.items():
                z.writestr(name, p, compress_type=zipfile.ZIP_DEFLATED if name == "extra/note.txt"
                           and kind in ("deflate", "bomb") else zipfile.ZIP_STORED)
        data_bytes = buf.getvalue()
    exercise(data_bytes, work, canary)


def _output_spec_edit(data, doc):
    names = [n["name"] for n in doc["graph"]["nodes"] if n["op"] != "output"]
    targets = names + ["w", "b", "x", "extras_scale", "nope", None]
    out = next(n for n in doc["graph"]["nodes"] if n["op"] == "output")
    action = data.draw(st.sampled_from(["insert", "retarget", "rekind", "rename", "out=", "input-kind"]),
                       label="action")
    kinds = ["USER_OUTPUT", "BUFFER_MUTATION", "USER_INPUT_MUTATION", "GRADIENT_TO_PARAMETER",
             "GRADIENT_TO_USER_INPUT", "LOSS_OUTPUT", "TOKEN"]
    if action == "insert":
        value = data.draw(st.sampled_from(names), label="value")
        pos = data.draw(st.integers(0, len(doc["signature"]["outputs"])), label="pos")
        out["args"][0].insert(pos, {"k": "node", "v": value})
        doc["signature"]["outputs"].insert(pos, {"kind": data.draw(st.sampled_from(kinds), label="kind"),
                                                 "arg": {"k": "TensorArgument", "name": value},
                                                 "target": data.draw(st.sampled_from(targets), label="target")})
    elif action == "retarget":
        doc["signature"]["outputs"][0].update(kind=data.draw(st.sampled_from(kinds), label="kind"),
                                              target=data.draw(st.sampled_from(targets), label="target"))
    elif action == "rekind":
        doc["signature"]["outputs"][0]["kind"] = data.draw(st.sampled_from(kinds), label="kind")
    elif action == "rename":
        doc["signature"]["outputs"][0]["arg"]["name"] = data.draw(st.sampled_from(names), label="name")
    elif action == "out=":
        calls = [n for n in doc["graph"]["nodes"] if n["op"] == "call_function"]
        victim = data.draw(st.sampled_from(calls), label="node")
        victim["kwargs"].append(["out", {"k": "node", "v": data.draw(st.sampled_from(names), label="into")}])
    else:
        spec = data.draw(st.sampled_from(doc["signature"]["inputs"]), label="input")
        spec["kind"] = data.draw(st.sampled_from(["USER_INPUT", "PARAMETER", "BUFFER", "CONSTANT_TENSOR", "TOKEN"]),
                                 label="kind")


@rel_settings(scale=4)
@given(data=st.data())
def test_fuzz_mutation_specs(good, expected, tmp_path_factory, data):
    """Output/input spec edits and out= arguments: refused, or the program neither writes into the
    caller's arrays nor its weights unless capture would have (a user input it writes back)."""
    work = tmp_path_factory.mktemp("work")
    canary = work.parent / f"{work.name}-canary"
    doc = program_doc(members(good)[PROGRAM])
    for _ in range(data.draw(st.integers(1, 2), label="edits")):
        _output_spec_edit(data, doc)
    m = members(good)
    m[PROGRAM] = program_bytes(doc)
    blob = pack(m)
    exercise(blob, work, canary)
    try:
        ep = tpe.load(io.BytesIO(blob))
    except ArchiveError:
        return
    weights = {k: np.array(v) for k, v in ep.state_dict.items()}
    args = sample()
    before = [a.copy() for a in (args[0], args[1]["scale"])]
    try:
        ep.module()(*args)
    except Exception:  # noqa: BLE001 - refusing to run is fine
        pass
    for k, v in ep.state_dict.items():
        assert np.array_equal(v, weights[k]), f"the program wrote into its weight {k!r}"
    mutated = {s.target for s in ep.graph_signature.output_specs if s.kind.name == "USER_INPUT_MUTATION"}
    for name, (arr, old) in zip(("x", "extras_scale"), zip((args[0], args[1]["scale"]), before)):
        if name not in mutated:
            assert np.array_equal(arr, old), f"the program wrote into the caller's input {name!r}"


def test_canary_payloads_are_live(tmp_path):
    """The canaries above mean something: unpickled or exec'd, they do create the file."""
    canary = tmp_path / "canary"
    np.load(io.BytesIO(pickled_npy(canary)), allow_pickle=True)
    assert canary.exists()
    canary.unlink()
    exec(injections(canary)[0])  # noqa: S102 - the payload run on purpose, once, to prove it works
    assert canary.exists()
