"""Program archives: ``save``/``load``/``package_pt2``/``load_pt2``.

Archive format, version 4
=========================

An archive is a ZIP file (PKWARE APPNOTE; ZIP64 where sizes need it).  The
key words MUST, SHOULD and MAY are used as in RFC 2119.

Members (``<m>`` is a model name matching ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``):

=====================================  ===========================================================
``format``                             the 26 ASCII bytes ``tensorplay_export.archive\\n``
``version``                            the format version in ASCII decimal plus ``\\n`` (``4\\n``)
``archive.json``                       the index (below)
``models/<m>/program.json``            the program document of model ``<m>``
``models/<m>/weights/<i>.npy``         array ``i`` of the document's ``weights`` table
``models/<m>/constants/<i>.npy``       array ``i`` of the document's ``constants`` table
``models/<m>/sample_inputs.npz``       array leaves of the example inputs, keys ``"0"``, ``"1"``, ...
                                       (present exactly when ``example_inputs`` is not null)
``extra/<name>``                       user ``extra_files`` (raw bytes; str values stored as UTF-8)
``tp_files/<name>``                    stored runner artifacts (raw bytes; never executed)
``executorch/<name>``                  ``executorch_files`` (raw bytes)
=====================================  ===========================================================

``<i>`` is a decimal index without leading zeros (0-based).  ``<name>`` is a
relative POSIX path without empty, ``.`` or ``..`` segments.  No other member
MAY be present, and no member name MAY occur twice.

Writers MUST store every member uncompressed (``ZIP_STORED``), in sorted
(code point) order of names, with timestamp 1980-01-01 00:00:00, and MUST
start each member's data at a file offset that is a multiple of 64 (padding
the local header's extra field with one extra block: id ``0xD935``, data =
uint16 little-endian alignment ``64`` then zero bytes).  ZIP64 records are
used only where a size needs them.  Together
with numpy's 64-byte ``.npy`` header alignment this makes every array's data
64-byte aligned, so a reader MAY memory-map arrays of an archive opened by
path.  ``.npy`` members are numpy format 1.0 (2.0 for huge headers), C order,
non-object, non-structured dtypes.  ``.npz`` members are ZIP files of
``<key>.npy`` members written by the same rules.  The same programs and files
therefore always give the same bytes.

JSON members are UTF-8, objects with sorted keys, separators ``,`` and ``:``,
no NaN/Infinity literals (floats are stored as ``float.hex`` strings), no
duplicate keys, nesting at most 200 deep.  ``archive.json`` has exactly the
keys ``models`` (sorted list of model names), ``opset_version`` (name -> int),
``pickle_protocol`` (int 0..5; recorded only, nothing is pickled),
``extra_files`` (name -> ``"str"`` | ``"bytes"``), ``tp_files`` and
``executorch_files`` (sorted name lists).  A program document has exactly the
keys ``format`` (``"tensorplay_export.program"``), ``schema_version`` (3),
``opset_version``, ``pickle_protocol``, ``graph`` (``{"nodes": [...],
"meta_values": [...], "source_lines": [...]}``, each node ``{op, name, target,
args, kwargs, meta}`` in execution order; a node's meta maps each key to a
string, null, or the index of its value in ``meta_values``, which holds each
distinct value once, every entry used, in order of first use node by node and
key by key in sorted order),
``signature`` (``{inputs, outputs}`` specs), ``range_constraints``
(``[[symbol, lower, upper | null], ...]`` sorted by symbol name),
``equality_constraints``, ``module_call_graph``, ``dynamic_shapes``,
``example_inputs`` (``{spec, leaves}`` or null), ``weights`` and ``constants``
(tables of ``{fqn, role, dtype, shape}``; weight roles ``parameter``,
``buffer``, ``non_persistent_buffer``; constant roles ``constant`` and
``graph_constant``, an array used directly as a node argument and referenced
from it as ``{"k": "array", "v": "graph:<j>"}``).  Values inside nodes use the tagged
encoding of :mod:`tensorplay_export.serde.values`; size expressions use the
operator trees of :mod:`tensorplay_export.serde.exprs` (never text to parse).

Readers SHOULD bound what they accept before reading it, so that time and
memory stay proportional to the archive's size (this reader: 100,000 members,
member names of 1,024 bytes, 64 MiB per program document, declared
compression ratio 1000:1 per member and, for all deflated members together,
32 times the archive's size plus 16 MiB; 64 dimensions per array; integers in
expressions below 2**256, expressions of 10,000 nodes and 500,000 nodes in all
the expressions of one document; every subexpression's value within 8,192
bits, counting a symbol as 64 bits, so ``S**64**64`` is refused although each
exponent is small) and SHOULD verify CRC-32 of every member they read
(memory-mapped arrays are not read, so not checked).  Readers MAY read
``sample_inputs.npz`` and the ``extra/``, ``tp_files/`` and ``executorch/``
members only when they are asked for (this reader does, and reports their
damage then, as an ArchiveError naming the member; an archive opened by path
that changed since it was loaded is refused then).

A ``Pow`` exponent is an integer or ``Rational`` with ``|p|, q <= 64``, or a
``Float`` of magnitude at most 64 (``x / math.sqrt(n)`` stores ``n**0.5``), or, to
an integer base ``2 <= |b| <= 64``, a size expression (``2**n``) of sums and
products whose interval under the program's range constraints lies in ``[-64, 64]``.  A
size expression used as a size (slice bounds, the shape/axis/index arguments of
the size-taking ops, ``meta["shape"]``) has an integer value.  Writers MUST NOT
write what these rules refuse (this writer raises ArchiveError instead), nor a
program whose generated source does not compile.

Readers MUST refuse (with :class:`~tensorplay_export.errors.ArchiveError`,
naming the member) a missing or wrong ``format``, a ``version`` above the
one they implement, bytes before the first member (a file that is also
something else, such as a shared library), unknown or duplicate members, unsafe names, keywords
that are not ASCII identifiers (the parser would read ``ｏｕｔ`` as ``out``), compressed
``.npy`` or ``.npz`` members (and compressed ``.npy`` inside an ``.npz``),
Fortran-order ``.npy`` headers, declared sizes above their limits (before
reading), object dtypes, arrays whose header disagrees with their table entry
or member size, ops not in their op registry, calls whose arguments the op does
not take, an ``out=`` argument (keyword or
positional), a literal zero divisor, pytree types not registered by name, and
signatures outside what capture emits: input kinds ``USER_INPUT`` (tensor or
constant), ``PARAMETER``, ``BUFFER``, ``CONSTANT_TENSOR``; output kinds
``PARAMETER_MUTATION`` (naming a parameter once, with a value the graph
computes, of that parameter's shape and dtype), ``BUFFER_MUTATION`` (naming a buffer), ``USER_INPUT_MUTATION`` (naming a user
input placeholder once, with a value the graph computes, of that input's
shape and dtype) and ``USER_OUTPUT``, in that order, each naming the value the
output node returns at its position: a ``TensorArgument`` for an array node, a
``SymIntArgument``/``SymFloatArgument``/``SymBoolArgument`` (``USER_OUTPUT``
only) for a ``tpe.size_value`` node of kind ``int``/``float``/``bool``, whose
first argument MUST be a size expression.  ``range_constraints`` MUST equal the
bounds of the graph's ``tpe.assert_range``/``tpe.derived_root`` checks, and
every symbol an input check binds that has a range MUST be checked.  Readers
MUST compile the generated source at load, so no such failure waits for the
first call.  Readers MUST NOT unpickle, ``eval`` or import anything named by
the archive.

Format changelog: 4 (2026-12-02, issue 19 goal 3): program schema 3: node meta values are
stored once each in ``graph.meta_values`` and named by index (a model's nodes share a few
shapes, dtypes, source records and module stacks; GPT-24's document 387 -> 259 KB, and each
value is decoded once per document instead of once per node); version 1 to 3 archives load.
3 (2026-12-02): program schema 2: the graph stores the text of each source
line its records name once, ``graph.source_lines = [[file, line, text], ...]`` (one printable
line of at most 400 characters each).  A loaded location prints only the
text its archive stored and never reads the file it names (an archive naming
``/proc/self/environ`` printed the environment); version-1 and -2 archives load, their
locations without text.
2 (2026-12-01, issue 13 items 7 and 8): a DerivedDim (in
``dynamic_shapes``) may also be ``{"k": "DerivedDim", "terms": [[Dim, k], ...],
"offset": c}``, a linear form with integer coefficients ``k != 0``: decreasing
over one root (``32 - dx``: ``[[dx, -1]]``, offset 32) or over several roots
(``dx + dy``); ``k*dx + c`` with ``k >= 1`` keeps the version-1 form, and size
expressions, runtime checks and ranges keep their forms (``tpe.derived_root``
may carry a negative ``k``).  Version-1 archives load unchanged.
2, reader rules of 2026-12-01 (issue 16 items 1 and 3; version-2 bytes unchanged):
size outputs (``tpe.size_value`` nodes named by ``Sym*Argument`` output specs)
join the signature allowlist, as do ``PARAMETER_MUTATION`` outputs (issue 16
item 3; ahead of buffer write-backs); ``tpe.check_size`` is a registry op like the
other runtime checks.
1 (2026-11-29) first version.  1, reader rules of
2026-12-01 (issue 15; writers' bytes unchanged): value-bit and per-document
expression budgets, ``Float`` exponents accepted, lazy reading of samples and
files, the inflation cap, C order and stored ``.npz`` required, the signature
allowlist, ``out=`` and ill-fitting calls refused, ranges cross-checked with
the graph's checks, compile at load.
"""
from __future__ import annotations

import contextlib
import gc
import os
import queue
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from ..errors import ArchiveError
from ..program.exported import ExportedModule, ExportedProgram
from .jsonio import dumps, expect, fail, get_dict, get_list, loads
from .npyio import MAX_NPZ_BYTES, npz_bytes, npz_from_bytes, read_npy
from .program_json import (WeightType, check_pickle_protocol, normalize_opset, serialize_program)
from .program_load import build_program, check_opset, parse_document
from .zipio import MemberSource, ZipReader, check_member_name, write_atomic, write_zip

__all__ = ["save", "load", "package_pt2", "load_pt2", "PT2ArchiveContents", "ArchiveFiles", "WeightType",
           "FORMAT_MARKER", "FORMAT_VERSION"]

FORMAT_MARKER = b"tensorplay_export.archive\n"
FORMAT_VERSION = 4  # see the changelog in the module docstring (versions 1 to 3 still load)
DEFAULT_MODEL = "model"
MAX_EXTRA_BYTES = 1 << 31  # one extra/tp/executorch file, read into memory
_MODEL_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
_INDEX_KEYS = {"models", "opset_version", "pickle_protocol", "extra_files", "tp_files", "executorch_files"}


@dataclass
class PT2ArchiveContents:
    """What :func:`load_pt2` returns.

    Attributes:
        exported_programs: model name -> ExportedProgram.
        tp_runners: model name -> thread-safe callable (see :class:`Runner`).
        extra_files: name -> str (saved as str) or bytes.
        tp_files: name -> bytes of the stored runner artifacts (never executed).
        executorch_files: name -> bytes.

    The three file tables are read-only mappings (:class:`ArchiveFiles`) that
    read a file from the archive the first time it is looked up.
    """

    exported_programs: dict[str, Any] = field(default_factory=dict)
    tp_runners: dict[str, Any] = field(default_factory=dict)
    extra_files: dict[str, Any] = field(default_factory=dict)
    tp_files: dict[str, bytes] = field(default_factory=dict)
    executorch_files: dict[str, bytes] = field(default_factory=dict)


class ArchiveFiles(Mapping):
    """``name -> bytes | str`` of archive files, each read when first looked up (then kept).

    A damaged file raises ArchiveError naming its member when it is looked up.
    Copying or pickling gives a plain dict (reading every file).
    """

    def __init__(self, source: MemberSource, prefix: str, kinds: dict[str, str]) -> None:
        self._source = source
        self._prefix = prefix
        self._kinds = dict(kinds)
        self._values: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        if name in self._values:
            return self._values[name]
        kind = self._kinds[name]  # KeyError for names the archive does not hold
        member = self._prefix + name
        data = self._source.read(member, MAX_EXTRA_BYTES)
        value = _decode_text(data, member) if kind == "str" else data
        self._values[name] = value
        return value

    def __iter__(self):
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def __reduce__(self) -> Any:
        return (dict, (dict(self.items()),))

    def __repr__(self) -> str:
        return f"ArchiveFiles({sorted(self._kinds)!r}, read when looked up)"


class Runner:
    """Runs one loaded program from many threads: ``runner(*args, **kwargs)`` == ``ep.module()(...)``.

    Holds ``num_runners`` independent module views of the program (state arrays
    shared, not copied); a call borrows one, so up to ``num_runners`` calls run
    at once and the rest wait.  With ``run_single_threaded=True`` calls run one
    at a time.
    """

    def __init__(self, program: Any, num_runners: int = 1, run_single_threaded: bool = False) -> None:
        self.program = program
        self.num_runners = num_runners
        self.run_single_threaded = run_single_threaded
        self._pool: queue.Queue = queue.Queue()
        for _ in range(num_runners):
            self._pool.put(None)  # a module is built by the first call that borrows its slot (load stays lean)
        self._lock = threading.Lock() if run_single_threaded else None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        module = self._pool.get()
        try:
            if module is None:
                module = ExportedModule(self.program)
            if self._lock is not None:
                with self._lock:
                    return module(*args, **kwargs)
            return module(*args, **kwargs)
        finally:
            self._pool.put(module)

    def __repr__(self) -> str:
        return f"Runner(num_runners={self.num_runners}, run_single_threaded={self.run_single_threaded})"


# ----------------------------------------------------------------------------- writing

def _check_model_name(name: Any) -> str:
    if not isinstance(name, str) or not _MODEL_NAME.match(name):
        raise ValueError(f"model name {name!r} must match {_MODEL_NAME.pattern}")
    return name


def _file_bytes(name: str, value: Any, what: str) -> tuple[bytes, str]:
    if isinstance(value, str):
        return value.encode("utf-8"), "str"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value), "bytes"
    raise TypeError(f"{what}[{name!r}] must be str or bytes, got {type(value).__name__}")


def _named_files(files: Any, what: str) -> dict[str, bytes]:
    """tp_files: name -> bytes | path, or a list of paths (stored under their base names)."""
    if files is None:
        return {}
    if isinstance(files, (list, tuple)):
        files = {os.path.basename(os.fspath(p)): p for p in files}
    if not isinstance(files, Mapping):
        raise TypeError(f"{what} must be a mapping of name -> bytes/path or a list of paths")
    out = {}
    for name, value in files.items():
        _check_file_name(name, what)
        if isinstance(value, (bytes, bytearray, memoryview)):
            out[name] = bytes(value)
        elif isinstance(value, (str, os.PathLike)):
            with open(value, "rb") as fh:
                out[name] = fh.read()
        else:
            raise TypeError(f"{what}[{name!r}] must be bytes or a file path, got {type(value).__name__}")
    return out


def _check_file_name(name: Any, what: str) -> str:
    try:
        return check_member_name(name, what)
    except ArchiveError as err:
        raise ValueError(f"{what} name {name!r} is not a safe relative path: {err}") from None


def _program_members(name: str, ep: Any, opset: dict, protocol: int) -> dict[str, Any]:
    art = serialize_program(ep, opset_version=opset, pickle_protocol=protocol)
    base = f"models/{name}"
    members: dict[str, Any] = {f"{base}/program.json": art.exported_program}
    doc = art._doc  # the document serialize_program just wrote
    for table, source in (("weights", art.state_dict), ("constants", art.constants)):
        for i, entry in enumerate(doc[table]):
            members[f"{base}/{table}/{i}.npy"] = np.asarray(source[entry["fqn"]])
    if doc["example_inputs"] is not None:
        members[f"{base}/sample_inputs.npz"] = npz_bytes(art.example_inputs)
    return members


def package_pt2(f: Any, *, exported_programs: Any = None, tp_files: Any = None,
                extra_files: dict[str, Any] | None = None, opset_version: dict[str, int] | None = None,
                pickle_protocol: int = 4, executorch_files: dict[str, bytes] | None = None) -> Any:
    """Write programs and files into one archive (format in the module docstring).

    Args:
        f: a path (written atomically: temp file in the same folder, then
            ``os.replace``; nothing is left behind on failure) or a writable
            binary file object.
        exported_programs: an ExportedProgram (stored as ``"model"``) or
            ``{name: ExportedProgram}``.
        tp_files: runner artifacts, ``{name: bytes | path}`` or a list of paths;
            stored as bytes, never executed.
        extra_files: ``{name: str | bytes}``.
        opset_version: ``{name: int}`` recorded per program.
        pickle_protocol: validated (0..5) and recorded; nothing is pickled.
        executorch_files: ``{name: bytes}``.
    Returns:
        ``f``.
    Raises:
        ArchiveError: a program holds something the format cannot store.
        ValueError/TypeError: bad names, versions or file values.
    """
    opset = normalize_opset(opset_version)
    protocol = check_pickle_protocol(pickle_protocol)
    if exported_programs is None:
        programs: dict[str, Any] = {}
    elif isinstance(exported_programs, Mapping):
        programs = dict(exported_programs)
    else:
        programs = {DEFAULT_MODEL: exported_programs}
    members: dict[str, Any] = {"format": FORMAT_MARKER, "version": f"{FORMAT_VERSION}\n".encode("ascii")}
    for name in sorted(programs):
        if not isinstance(programs[name], ExportedProgram):
            raise TypeError(f"exported program {name!r} is a {type(programs[name]).__name__}, not an "
                            "ExportedProgram (tensorplay_export.export(...) makes one)")
        members.update(_program_members(_check_model_name(name), programs[name], opset, protocol))
    kinds = {}
    for name, value in (extra_files or {}).items():
        _check_file_name(name, "extra_files")
        members[f"extra/{name}"], kinds[name] = _file_bytes(name, value, "extra_files")
    tp = _named_files(tp_files, "tp_files")
    members.update({f"tp_files/{n}": b for n, b in tp.items()})
    et = {}
    for name, value in (executorch_files or {}).items():
        _check_file_name(name, "executorch_files")
        et[name], _ = _file_bytes(name, value, "executorch_files")
    members.update({f"executorch/{n}": b for n, b in et.items()})
    members["archive.json"] = dumps({
        "models": sorted(programs), "opset_version": opset, "pickle_protocol": protocol,
        "extra_files": kinds, "tp_files": sorted(tp), "executorch_files": sorted(et)})
    write_atomic(f, lambda fh: write_zip(fh, members))
    return f


def save(ep: Any, f: Any, *, extra_files: dict[str, Any] | None = None,
         opset_version: dict[str, int] | None = None, pickle_protocol: int = 4) -> None:
    """Save one ExportedProgram (as model ``"model"``) to a path or writable binary file.

    Same program and arguments -> byte-identical archive.  See :func:`package_pt2`.

    Raises:
        TypeError: ``ep`` is not an ExportedProgram (a mapping: use package_pt2).
    """
    if isinstance(ep, Mapping) or ep is None:
        raise TypeError("save() takes one ExportedProgram; use package_pt2 for several")
    package_pt2(f, exported_programs=ep, extra_files=extra_files, opset_version=opset_version,
                pickle_protocol=pickle_protocol)


# ----------------------------------------------------------------------------- reading

def _read_index(zr: ZipReader) -> dict:
    marker = zr.read("format", 64) if "format" in zr else None
    if marker != FORMAT_MARKER:
        fail("format", "missing or wrong format marker: not a tensorplay_export archive")
    raw = zr.read("version", 32)
    if not re.fullmatch(rb"[0-9]{1,9}\n", raw):
        fail("version", f"malformed format version {raw[:32]!r}")
    version = int(raw)
    if version > FORMAT_VERSION:
        fail("version", f"archive format version {version} is newer than this tensorplay_export "
                        f"supports ({FORMAT_VERSION}); upgrade to load it")
    if version < 1:
        fail("version", f"invalid format version {version}")
    index = get_dict(loads(zr.read("archive.json", 1 << 24), "archive.json"), "archive.json",
                     "archive index", _INDEX_KEYS)
    models = get_list(index["models"], "archive.json", "models")
    for name in models:
        if not isinstance(name, str) or not _MODEL_NAME.match(name):
            fail("archive.json", f"invalid model name {name!r:.80}")
    expect(len(set(models)) == len(models), "archive.json", "a model is listed twice")
    if not isinstance(index["extra_files"], dict) or any(v not in ("str", "bytes") for v in index["extra_files"].values()):
        fail("archive.json", "extra_files must map names to \"str\" or \"bytes\"")
    for key in ("tp_files", "executorch_files"):
        names = get_list(index[key], "archive.json", key)
        expect(all(isinstance(n, str) for n in names) and len(set(names)) == len(names),
               "archive.json", f"{key} must be a list of distinct names")
    for name in list(index["extra_files"]) + index["tp_files"] + index["executorch_files"]:
        check_member_name(name, "archive.json")
    return index


def _check_members(zr: ZipReader, index: dict) -> None:
    """Refuse any member the index does not account for (model folders are checked per model)."""
    allowed = {"format", "version", "archive.json"}
    allowed |= {f"extra/{n}" for n in index["extra_files"]}
    allowed |= {f"tp_files/{n}" for n in index["tp_files"]}
    allowed |= {f"executorch/{n}" for n in index["executorch_files"]}
    models = set(index["models"])
    for name in zr.names:
        if name in allowed:
            continue
        parts = name.split("/")
        if len(parts) >= 3 and parts[0] == "models" and parts[1] in models:
            continue
        fail(name, "unexpected member (not listed in archive.json)")
    for name in allowed:
        if name not in zr:
            fail(name, "listed in archive.json but missing from the archive")


@contextlib.contextmanager
def _collector_paused() -> Any:
    """Pause the cyclic garbage collector while a program is decoded.

    Decoding allocates tens of thousands of small objects (JSON values, nodes, records)
    and none of them is garbage until it returns, yet every few hundred allocations
    trigger a collection that walks them all again: a third of GPT-24's load time
    (issue 19).  The collector's previous state is restored, also on error.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _load_model(zr: ZipReader, name: str, expected_opset: Any, mmap: bool, source: MemberSource) -> Any:
    with _collector_paused():
        return _load_model_unpaused(zr, name, expected_opset, mmap, source)


def _load_model_unpaused(zr: ZipReader, name: str, expected_opset: Any, mmap: bool, source: MemberSource) -> Any:
    base = f"models/{name}"
    member = f"{base}/program.json"
    from .jsonio import MAX_JSON_BYTES

    document = zr.read(member, MAX_JSON_BYTES)
    doc = parse_document(document, member)
    check_opset(doc["opset_version"], expected_opset, member)
    counts = {t: len(doc[t]) if isinstance(doc[t], list) else 0 for t in ("weights", "constants")}
    expected = {member} | {f"{base}/{t}/{i}.npy" for t, n in counts.items() for i in range(n)}
    has_samples = doc["example_inputs"] is not None
    if has_samples:
        expected.add(f"{base}/sample_inputs.npz")
    for m in zr.names:
        if m.startswith(base + "/") and m not in expected:
            fail(m, "unexpected member in the model folder")

    def fetch(table: str, index: int, entry: dict) -> np.ndarray:
        array_member = f"{base}/{table}/{index}.npy"
        if array_member not in zr:
            fail(array_member, f"missing ({table} entry {entry['fqn']!r})")
        array = read_npy(zr, array_member, mmap=mmap)
        if not mmap:
            # a fresh array nobody else holds: read-only, the program keeps it without a copy
            array.setflags(write=False)
        if array.dtype != entry["dtype"] or tuple(array.shape) != entry["shape"]:
            fail(array_member, f"holds {array.dtype.str} {tuple(array.shape)}, but {table} entry "
                               f"{entry['fqn']!r} declares {entry['dtype'].str} {entry['shape']}")
        return array

    samples = None
    if has_samples:  # read when the example inputs are first used
        npz = f"{base}/sample_inputs.npz"
        if zr.info(npz).compress_type != 0:
            fail(npz, "array members must be stored uncompressed")
        source.keep(zr, npz)

        def samples() -> dict:
            return npz_from_bytes(source.read(npz, MAX_NPZ_BYTES), npz)
    return build_program(doc, member, fetch, samples, lazy_examples=True, document=document)


def _open(f: Any) -> ZipReader:
    if isinstance(f, (str, os.PathLike)) and not os.path.exists(f):
        raise FileNotFoundError(f"no archive at {os.fspath(f)!r}")
    return ZipReader(f)


def load_pt2(f: Any, *, expected_opset_version: dict[str, int] | None = None, run_single_threaded: bool = False,
             num_runners: int = 1, device_index: int = -1, load_weights_from_disk: bool = False) -> PT2ArchiveContents:
    """Load every program and file of an archive written by :func:`package_pt2`.

    Args:
        f: a path or a readable binary file object.
        expected_opset_version: ``{name: int}``; a recorded version that differs
            raises ArchiveError naming both.
        run_single_threaded: runners execute one call at a time.
        num_runners: module views per runner (calls that may run concurrently), >= 1.
        device_index: must be -1 (CPU); anything else raises ArchiveError.
        load_weights_from_disk: memory-map arrays (read-only: writing one raises ValueError) when ``f`` is a
            path; from a file object they are read.
    Raises:
        ArchiveError: anything wrong in the archive (names the member).
        FileNotFoundError: no file at the path.
    """
    if isinstance(device_index, bool) or not isinstance(device_index, int) or device_index != -1:
        raise ArchiveError(f"device_index={device_index!r}: only CPU is supported (use device_index=-1)")
    if isinstance(num_runners, bool) or not isinstance(num_runners, int) or num_runners < 1:
        raise ValueError(f"num_runners must be an int >= 1, got {num_runners!r}")
    with _open(f) as zr:
        index = _read_index(zr)
        _check_members(zr, index)
        out = PT2ArchiveContents()
        mmap = bool(load_weights_from_disk) and zr.path is not None
        source = MemberSource(zr)
        for name in index["models"]:
            ep = _load_model(zr, name, expected_opset_version, mmap, source)
            out.exported_programs[name] = ep
            out.tp_runners[name] = Runner(ep, num_runners, bool(run_single_threaded))
        tables = (("extra/", index["extra_files"]), ("tp_files/", dict.fromkeys(index["tp_files"], "bytes")),
                  ("executorch/", dict.fromkeys(index["executorch_files"], "bytes")))
        files = []
        for prefix, kinds in tables:  # read when looked up
            for n in kinds:
                _check_file_member(zr, prefix + n)
                source.keep(zr, prefix + n)
            files.append(ArchiveFiles(source, prefix, kinds))
        out.extra_files, out.tp_files, out.executorch_files = files
    return out


def _check_file_member(zr: ZipReader, member: str) -> None:
    if zr.size(member) > MAX_EXTRA_BYTES:
        fail(member, f"member of {zr.size(member)} bytes exceeds the limit of {MAX_EXTRA_BYTES} bytes")


def _decode_text(data: bytes, member: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        fail(member, "declared as text but is not UTF-8")


def load(f: Any, *, extra_files: dict[str, Any] | None = None,
         expected_opset_version: dict[str, int] | None = None) -> Any:
    """Load the ExportedProgram saved by :func:`save`.

    Args:
        f: a path or a readable binary file object.
        extra_files: a dict whose keys name extra files to read; their values
            are replaced in place with the stored contents (str or bytes).
        expected_opset_version: ``{name: int}`` that must match the recorded versions.
    Returns:
        the ExportedProgram (model ``"model"``, or the archive's only model).
    Raises:
        ArchiveError: anything wrong in the archive, a requested extra file that
            is missing, or several models and none named ``"model"``.
    """
    with _open(f) as zr:
        index = _read_index(zr)
        _check_members(zr, index)
        models = index["models"]
        if DEFAULT_MODEL in models:
            name = DEFAULT_MODEL
        elif len(models) == 1:
            name = models[0]
        else:
            fail("archive.json", f"the archive holds {len(models)} models {models}, none named "
                                 f"{DEFAULT_MODEL!r}; use load_pt2")
        ep = _load_model(zr, name, expected_opset_version, False, MemberSource(zr))
        if extra_files is not None:
            for key in list(extra_files):
                kind = index["extra_files"].get(key)
                if kind is None:
                    fail(f"extra/{key}", "requested extra file is not in the archive")
                data = zr.read(f"extra/{key}", MAX_EXTRA_BYTES)
                extra_files[key] = _decode_text(data, f"extra/{key}") if kind == "str" else data
    return ep


def serialize_to_members(ep: Any, name: str = DEFAULT_MODEL) -> dict[str, Any]:
    """The archive members of one model (for tools and tests)."""
    return _program_members(_check_model_name(name), ep, normalize_opset(None), 4)

