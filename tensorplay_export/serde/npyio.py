"""Reading ``.npy`` / ``.npz`` members safely: never pickle, sizes checked first.

A ``.npy`` member must be stored (not deflated), format version 1.0 or 2.0
with a header of at most :data:`MAX_HEADER_BYTES`, ``fortran_order`` False (C
order, as numpy writes every C-contiguous array), a non-object, non-structured dtype, at most
:data:`MAX_NDIM` dimensions, and exactly ``prod(shape) * itemsize`` data bytes
after the header (no truncation, no trailing bytes).  The header is parsed by
numpy's literal-only parser; nothing is unpickled, whatever the header says.

``.npz`` members are stored nested zips (read with the same :class:`ZipReader`
checks) whose members are stored ``<key>.npy``.
"""
from __future__ import annotations

import io
import math
import re
import zipfile
import zlib
from typing import Any

import numpy as np

from ..errors import ArchiveError
from .jsonio import fail
from .zipio import ZipReader, zip_bytes

MAX_HEADER_BYTES = 10_000
_FIRST_READ = 256  # bytes of a mapped member read for its header before reading up to the limit
MAX_NDIM = 64
MAX_NPZ_BYTES = 1 << 34  # sample inputs are read into memory: 16 GiB cap
_CORRUPT = (zipfile.BadZipFile, zlib.error, OSError, EOFError)


# The header numpy writes for a plain dtype: ``{'descr': '<f4', 'fortran_order': False,
# 'shape': (384, 1536), }`` padded with spaces and a newline.  Matched exactly (a strict
# subset of what numpy's literal parser accepts), it is read without ast.literal_eval;
# anything else goes through numpy's parser.  The checks after parsing are the same.
_PLAIN_HEADER = re.compile(
    rb"\{'descr': '([<>|=][a-zA-Z][0-9]{0,3})', 'fortran_order': (True|False), "
    rb"'shape': \(((?:[0-9]{1,20}, )*[0-9]{1,20},?|)\), \} *\n")


_DESCRS: dict[bytes, np.dtype] = {}  # descr -> dtype (immutable): an archive's few dtypes, parsed once


def _plain_header(raw: bytes) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    """(shape, fortran, dtype, header_bytes) of a version 1.0 header in numpy's own layout, else None."""
    if raw[:8] != b"\x93NUMPY\x01\x00" or len(raw) < 10:
        return None
    end = 10 + int.from_bytes(raw[8:10], "little")
    if end > len(raw):
        return None
    # the layers of a model repeat a few shapes: each distinct header text is parsed once
    text = raw[:end]
    known = _HEADERS.get(text)
    if known is None:
        known = _parse_plain(raw, end)
        if known is not None and end <= _FIRST_READ and len(_HEADERS) < 1024:  # bounded, whatever an archive holds
            _HEADERS[text] = known
    return known


_HEADERS: dict[bytes, tuple] = {}  # header bytes -> what _parse_plain makes of them


def _parse_plain(raw: bytes, end: int) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    m = _PLAIN_HEADER.fullmatch(raw, 10, end)
    if m is None:
        return None
    dtype = _DESCRS.get(m.group(1))
    if dtype is None:
        try:
            dtype = np.dtype(m.group(1).decode("ascii"))
        except (TypeError, ValueError):
            return None
        if len(_DESCRS) < 256:  # bounded: a hostile archive cannot grow it
            _DESCRS[m.group(1)] = dtype
    shape = tuple(int(n) for n in m.group(3).replace(b",", b" ").split())
    return shape, m.group(2) == b"True", dtype, end


def _parse_header(stream: Any, member: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran_order, dtype, header_bytes) of the .npy header at the stream start."""
    plain = _plain_header(stream.getvalue()) if isinstance(stream, io.BytesIO) else None
    if plain is not None:
        shape, fortran, dtype, header_len = plain
        _check_header(shape, dtype, member)
        stream.seek(header_len)
        return plain
    try:
        version = np.lib.format.read_magic(stream)
    except (ValueError, OSError, EOFError) as err:
        fail(member, f"not an .npy file ({err})")
    if version not in ((1, 0), (2, 0)):
        fail(member, f"unsupported .npy format version {version}")
    reader = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    try:
        shape, fortran, dtype = reader(stream, max_header_size=MAX_HEADER_BYTES)
    except (ValueError, SyntaxError, TypeError, OSError, EOFError, MemoryError) as err:
        fail(member, f"invalid .npy header ({str(err)[:200]})")
    _check_header(shape, dtype, member)
    header_len = stream.tell()
    return tuple(shape), bool(fortran), dtype, header_len


def _check_header(shape: Any, dtype: np.dtype, member: str) -> None:
    if dtype.hasobject:
        fail(member, f"object dtype {dtype} refused: loading it would need pickle")
    if dtype.fields is not None or dtype.subdtype is not None:
        fail(member, f"structured dtype {dtype} is not supported")
    if len(shape) > MAX_NDIM or any(type(n) is not int or n < 0 or n.bit_length() > 62 for n in shape):
        fail(member, f"invalid array shape {shape!r:.100}")


def read_npy(zr: ZipReader, member: str, *, mmap: bool = False, max_bytes: int | None = None) -> np.ndarray:
    """Load an ``.npy`` member as an array.

    Args:
        zr: the archive.
        member: member name (``.npy``).
        mmap: a read-only memory map of the file instead of reading, when the
            archive was opened by path and the member is stored uncompressed (a
            program keeps such an array without copying it: nobody can write
            through it, so the program's values cannot change under it).
        max_bytes: refuse larger members before reading (default: no limit
            beyond the container's own).
    Returns:
        the array: a read-only ``np.memmap`` view into the one mapping of the archive
        (:meth:`ZipReader.mapping`) when mapped, else a new writable array.
    Raises:
        ArchiveError: a compressed member, bad header, object/structured dtype,
            size mismatch, corrupt data.
    """
    info = zr.info(member)
    if info.compress_type != zipfile.ZIP_STORED:
        fail(member, "array members must be stored uncompressed")
    size = info.file_size
    if max_bytes is not None and size > max_bytes:
        fail(member, f"array member of {size} bytes exceeds the limit of {max_bytes} bytes")
    whole = zr.mapping() if mmap else None
    if whole is not None and size > 0:
        return _mapped(zr, whole, member, zr.data_offset(member), size)
    with zr.open(member) as stream:
        try:
            return _read_opened(zr, member, stream, size, mmap)
        except _CORRUPT as err:  # CRC mismatch or broken deflate stream, wherever the read hits it
            fail(member, f"corrupt data ({type(err).__name__}: {err})")


def _check_itemsize(dtype: np.dtype, member: str) -> None:
    # numpy has no array of zero-byte items it would write here (np.zeros(3, "S0") is S1)
    if dtype.itemsize == 0:
        fail(member, f"the .npy header's dtype {dtype.str} has items of zero bytes; archives store none")


def _mapped(zr: ZipReader, whole: np.memmap, member: str, offset: int, size: int) -> np.ndarray:
    """The member's array as a view into the archive's one mapping (header checked as when read).

    The reader checked, before anything was read, that the member's bytes lie inside the file.
    """
    # numpy writes a 128-byte header for all but the longest shapes: read that much first
    head = zr.mapped_bytes(offset, offset + min(size, _FIRST_READ))
    plain = _plain_header(head)  # numpy's own layout: no stream needed
    if plain is not None:
        _check_header(plain[0], plain[2], member)
    else:
        head = zr.mapped_bytes(offset, offset + min(size, MAX_HEADER_BYTES + 16))
    shape, fortran, dtype, header_len = plain or _parse_header(io.BytesIO(head), member)
    _check_itemsize(dtype, member)
    if fortran:
        fail(member, "the .npy header says fortran_order: True; archives store arrays in C order only")
    nbytes = math.prod(shape) * dtype.itemsize
    if header_len + nbytes != size:
        fail(member, f"declared shape {shape} of {dtype.str} needs {nbytes} data bytes, "
                     f"member has {size - header_len}")
    start = offset + header_len
    if nbytes == 0 or start % dtype.alignment:  # an empty or misaligned array is read instead
        return np.frombuffer(bytes(whole[start:start + nbytes]), dtype=dtype).reshape(shape).copy()
    # one memmap view made directly (slicing, view and reshape would make three), given the
    # attributes (file name, mode) a slice of the mapping has
    array = np.ndarray.__new__(np.memmap, shape, dtype, buffer=whole, offset=start)
    array.__array_finalize__(whole)
    return array


def _read_opened(zr: ZipReader, member: str, stream: Any, size: int, mmap: bool) -> np.ndarray:
    head = io.BytesIO(stream.read(min(size, MAX_HEADER_BYTES + 16)))
    shape, fortran, dtype, header_len = _parse_header(head, member)
    _check_itemsize(dtype, member)
    if fortran:  # numpy itself writes False for every C-contiguous array, 1-d and 0-d included
        fail(member, "the .npy header says fortran_order: True; archives store arrays in C order only")
    nbytes = math.prod(shape) * dtype.itemsize
    if header_len + nbytes != size:
        fail(member, f"declared shape {shape} of {dtype.str} needs {nbytes} data bytes, "
                     f"member has {size - header_len}")
    out = np.empty(shape, dtype=dtype)
    view = memoryview(out.reshape(-1).view(np.uint8)) if nbytes else memoryview(bytearray())
    got = head.readinto(view)
    while got < nbytes:
        n = stream.readinto(view[got:])
        if not n:
            break
        got += n
    if got != nbytes or stream.read(1):
        fail(member, f"data size does not match the header ({got} of {nbytes} bytes)")
    return out


def npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """A deterministic ``.npz`` (stored, aligned, fixed timestamps) of ``key -> array``."""
    return zip_bytes({f"{key}.npy": np.asarray(value) for key, value in arrays.items()})


def read_npz(zr: ZipReader, member: str) -> dict[str, np.ndarray]:
    """``key -> array`` from an ``.npz`` member, every nested ``.npy`` checked like :func:`read_npy`."""
    if zr.info(member).compress_type != zipfile.ZIP_STORED:
        fail(member, "array members must be stored uncompressed")
    return npz_from_bytes(zr.read(member, MAX_NPZ_BYTES), member)


def npz_from_bytes(data: bytes, member: str) -> dict[str, np.ndarray]:
    """``key -> array`` from the bytes of an ``.npz`` member (see :func:`read_npz`)."""
    try:
        inner = ZipReader(io.BytesIO(data))
    except ArchiveError as err:  # the outer member, in the documented form, the inner problem after it
        raise ArchiveError(f"archive member '{member}': {_inner(err)}") from None
    with inner:
        out: dict[str, np.ndarray] = {}
        for name in inner.names:
            if not name.endswith(".npy") or "/" in name:
                fail(f"{member}/{name}", "an .npz may only hold top-level .npy members")
            try:
                out[name[:-4]] = read_npy(inner, name)
            except ArchiveError as err:
                raise ArchiveError(f"archive member '{member}': {_inner(err)}") from None
        return out


def _inner(err: ArchiveError) -> str:
    """An error of a zip inside a member, worded from inside it: ``its array '0.npy': ...``."""
    text = str(err)
    prefix = "archive member '"
    if text.startswith(prefix):
        name, _, problem = text[len(prefix):].partition("': ")
        return f"its array '{name}': {problem}"
    return text[len("archive: "):] if text.startswith("archive: ") else text
