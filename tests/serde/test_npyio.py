"""Arrays inside archives: strict .npy headers, no pickle ever, memmap of aligned data."""
from __future__ import annotations

import io

import numpy as np
import pytest

from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde.npyio import npz_bytes, read_npy, read_npz
from tensorplay_export.serde.zipio import ZipReader, write_atomic, write_zip, zip_bytes

from conftest import repack


class Canary:
    """Unpickling this creates a file: proof that code ran."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def npy_file(array, allow_pickle=False) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=allow_pickle)
    return buf.getvalue()


def reader(members) -> ZipReader:
    return ZipReader(io.BytesIO(repack(members)))


ARRAYS = [np.arange(12, dtype=np.int32).reshape(3, 4), np.array(3.5), np.zeros((0, 4)),
          np.array([True, False]), np.array(["ab", "c"]), np.arange(6, dtype=">f4"),
          np.asfortranarray(np.arange(6.0).reshape(2, 3)), np.array([1 + 2j], dtype=np.complex64)]


@pytest.mark.parametrize("array", ARRAYS, ids=[str(a.dtype) for a in ARRAYS])
def test_read_roundtrip(array):
    with ZipReader(io.BytesIO(zip_bytes({"a.npy": array}))) as zr:
        back = read_npy(zr, "a.npy")
    assert back.dtype == array.dtype and back.shape == array.shape and np.array_equal(back, array)
    assert back.flags.writeable


def test_planted_pickle_refused_without_running(tmp_path):
    canary = tmp_path / "pwned"
    payload = npy_file(np.array([Canary(canary)], dtype=object), allow_pickle=True)
    with reader({"w.npy": payload}) as zr:
        with pytest.raises(ArchiveError, match=r"'w.npy'.*object dtype .* pickle"):
            read_npy(zr, "w.npy")
    assert not canary.exists()
    # the same bytes are a real pickle payload: numpy with allow_pickle=True would run it
    np.load(io.BytesIO(payload), allow_pickle=True)
    assert canary.exists()


def test_npz_with_planted_pickle_refused(tmp_path):
    canary = tmp_path / "pwned"
    inner = repack({"0.npy": npy_file(np.array([Canary(canary)], dtype=object), allow_pickle=True)})
    with reader({"s.npz": inner}) as zr:
        with pytest.raises(ArchiveError, match="s.npz.*object dtype"):
            read_npz(zr, "s.npz")
    assert not canary.exists()


@pytest.mark.parametrize("mutate, words", [
    (lambda b: b[:20], "npy"),
    (lambda b: b"XXXXXX" + b[6:], "not an .npy file"),
    (lambda b: b[:-8], "needs"),
    (lambda b: b + b"\0" * 8, "needs"),
    (lambda b: b[:6] + b"\x03\x00" + b[8:], "format version"),
    (lambda b: b.replace(b"'<f8'", b"'|O8'"), "object"),
    (lambda b: b.replace(b"(3, 4)", b"(9999999999999, 4)"), "needs"),
    (lambda b: b.replace(b"(3, 4)", b"(-3, 4)"), "invalid array shape"),
    (lambda b: b.replace(b"'descr'", b"'evil' "), "header"),
    (lambda b: b.replace(b"'<f8'", b"__import__('os')"[:4]), "header"),
])
def test_malformed_npy_refused(mutate, words):
    good = npy_file(np.zeros((3, 4)))
    with reader({"w.npy": mutate(good)}) as zr:
        with pytest.raises(ArchiveError, match=words):
            read_npy(zr, "w.npy")


def test_size_limit_checked_before_reading():
    with ZipReader(io.BytesIO(zip_bytes({"a.npy": np.zeros(1000)}))) as zr:
        with pytest.raises(ArchiveError, match="exceeds the limit"):
            read_npy(zr, "a.npy", max_bytes=100)


def test_memmap_by_path(tmp_path):
    arrays = {"w/0.npy": np.arange(1000, dtype=np.float32).reshape(10, 100), "w/1.npy": np.arange(3.0)}
    path = tmp_path / "a.zip"
    write_atomic(path, lambda fh: write_zip(fh, arrays))
    with ZipReader(path) as zr:
        mm = read_npy(zr, "w/0.npy", mmap=True)
    assert isinstance(mm, np.memmap) and mm.ctypes.data % 64 == 0
    assert np.array_equal(mm, arrays["w/0.npy"])
    assert not mm.flags.writeable  # mapped read-only: a program keeps it without copying
    with pytest.raises(ValueError, match="read-only"):
        mm[0, 0] = -1
    with ZipReader(path) as zr:
        assert read_npy(zr, "w/0.npy")[0, 0] == 0


def test_memmap_falls_back_to_reading_for_file_objects():
    with ZipReader(io.BytesIO(zip_bytes({"a.npy": np.arange(4.0)}))) as zr:
        back = read_npy(zr, "a.npy", mmap=True)
    assert not isinstance(back, np.memmap) and np.array_equal(back, np.arange(4.0))


def test_npz_roundtrip_and_determinism():
    arrays = {"0": np.arange(3), "1": np.ones((2, 2), np.float32)}
    data = npz_bytes(arrays)
    assert data == npz_bytes(dict(reversed(list(arrays.items()))))
    with reader({"s.npz": data}) as zr:
        back = read_npz(zr, "s.npz")
    assert set(back) == {"0", "1"} and all(np.array_equal(back[k], arrays[k]) for k in arrays)
    assert set(np.load(io.BytesIO(data), allow_pickle=False)) == {"0", "1"}  # a standard .npz


def test_npz_with_nested_folder_refused():
    with reader({"s.npz": repack({"a/b.npy": npy_file(np.zeros(1))})}) as zr:
        with pytest.raises(ArchiveError, match="top-level .npy"):
            read_npz(zr, "s.npz")


@pytest.mark.parametrize("array", [np.zeros((3, 5), np.float32), np.arange(4, dtype=">i8"), np.array(2.5),
                                   np.zeros((2, 3), order="F"), np.zeros((0, 4), np.bool_)])
def test_plain_header_fast_path_agrees_with_numpy(array):
    """numpy's own header layout is read without literal_eval, to the same result."""
    from tensorplay_export.serde.npyio import _parse_header, _plain_header

    raw = npy_file(array)
    fast = _plain_header(raw)
    assert fast is not None
    stream = io.BytesIO(raw)
    version = np.lib.format.read_magic(stream)
    assert version == (1, 0)
    shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    assert fast == (tuple(shape), fortran, dtype, stream.tell())
    assert _parse_header(io.BytesIO(raw), "m") == fast


def test_plain_header_refuses_what_numpy_parser_must_judge():
    """Object dtypes still fail; odd layouts fall back to numpy's literal parser."""
    from tensorplay_export.serde.npyio import _parse_header, _plain_header

    raw = npy_file(np.zeros(2, np.float32))
    obj = raw.replace(b"'<f4'", b"'|O8'")
    with pytest.raises(ArchiveError, match="object dtype"):
        _parse_header(io.BytesIO(obj), "m")
    odd = raw.replace(b"'fortran_order': False, ", b"'fortran_order':False,  ")  # same length, other spacing
    assert _plain_header(odd) is None
    assert _parse_header(io.BytesIO(odd), "m")[:3] == ((2,), False, np.dtype("float32"))
