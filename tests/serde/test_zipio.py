"""The zip container: deterministic aligned writing, atomic publishing, distrustful reading."""
from __future__ import annotations

import io
import os
import struct
import zipfile

import numpy as np
import pytest

from tensorplay_export.errors import ArchiveError
from tensorplay_export.serde.zipio import ALIGN, ZipReader, check_member_name, write_atomic, write_zip, zip_bytes

from conftest import repack

MEMBERS = {"b.npy": np.arange(7, dtype=np.float32), "a/x.bin": b"hello", "c/d/e.npy": np.ones((3, 5)),
           "z": b"", "u\u00e9.txt": b"unicode name"}


def test_same_members_same_bytes_in_any_order():
    one = zip_bytes(MEMBERS)
    two = zip_bytes(dict(reversed(list(MEMBERS.items()))))
    assert one == two
    with zipfile.ZipFile(io.BytesIO(one)) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == sorted(MEMBERS)
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and i.compress_type == zipfile.ZIP_STORED for i in infos)
        assert zf.testzip() is None


def test_every_member_starts_64_byte_aligned():
    data = zip_bytes(MEMBERS)
    with ZipReader(io.BytesIO(data)) as zr:
        for name in zr.names:
            assert zr.data_offset(name) % ALIGN == 0, name
    # the local headers agree (independent parse)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            n, m = struct.unpack("<HH", data[info.header_offset + 26: info.header_offset + 30])
            assert (info.header_offset + 30 + n + m) % ALIGN == 0


def test_atomic_write_publishes_on_success(tmp_path):
    target = tmp_path / "a.zip"
    write_atomic(target, lambda fh: write_zip(fh, MEMBERS))
    assert zipfile.is_zipfile(target)
    assert [p.name for p in tmp_path.iterdir()] == ["a.zip"]


def test_atomic_write_failure_leaves_nothing(tmp_path):
    target = tmp_path / "a.zip"

    def explode(fh):
        fh.write(b"partial archive bytes")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomic(target, explode)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_failure_keeps_old_file(tmp_path):
    target = tmp_path / "a.zip"
    target.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        write_atomic(target, lambda fh: (fh.write(b"new"), (_ for _ in ()).throw(KeyboardInterrupt()))[0])
    assert target.read_bytes() == b"old" and len(list(tmp_path.iterdir())) == 1


def test_write_to_file_object_matches_path(tmp_path):
    buf = io.BytesIO()
    write_atomic(buf, lambda fh: write_zip(fh, MEMBERS))
    write_atomic(tmp_path / "p.zip", lambda fh: write_zip(fh, MEMBERS))
    assert buf.getvalue() == (tmp_path / "p.zip").read_bytes()


def test_object_arrays_refused_on_write():
    with pytest.raises(ArchiveError, match="object"):
        zip_bytes({"a.npy": np.array([{}], dtype=object)})


@pytest.mark.parametrize("name", ["/etc/passwd", "../x", "a/../../x", "a//b", "./a", "a\\b", "C:evil",
                                  "a/\x00b", "", "x/."])
def test_unsafe_names_refused(name):
    with pytest.raises(ArchiveError):
        check_member_name(name)


def test_reader_refuses_traversal_member():
    data = repack({"ok": b"1", "../evil": b"2"})
    with pytest.raises(ArchiveError, match=r"'\.\./evil'"):
        ZipReader(io.BytesIO(data))


def test_reader_refuses_duplicates():
    data = repack([("a", b"1"), ("a", b"2")])
    with pytest.raises(ArchiveError, match="duplicate member"):
        ZipReader(io.BytesIO(data))


@pytest.mark.parametrize("data", [b"", b"not a zip at all", b"PK\x03\x04" + b"\0" * 40])
def test_reader_refuses_non_zip(data):
    with pytest.raises(ArchiveError, match="not a readable zip"):
        ZipReader(io.BytesIO(data))


def test_reader_refuses_truncated():
    data = zip_bytes(MEMBERS)
    for cut in (10, len(data) // 2, len(data) - 5):
        with pytest.raises(ArchiveError):
            ZipReader(io.BytesIO(data[:cut]))


def test_bit_flip_in_data_is_a_crc_error():
    data = bytearray(zip_bytes({"a": b"x" * 100}))
    with ZipReader(io.BytesIO(bytes(data))) as zr:
        start = zr.data_offset("a")
    data[start + 10] ^= 0xFF
    with ZipReader(io.BytesIO(bytes(data))) as zr:
        with pytest.raises(ArchiveError, match="'a'"):
            zr.read("a", 1000)


def _patch_central(data: bytes, field_offset: int, fmt: str, value: int) -> bytes:
    """Overwrite a field of the (single) central directory entry."""
    pos = data.rfind(b"PK\x01\x02")
    out = bytearray(data)
    struct.pack_into(fmt, out, pos + field_offset, value)
    return bytes(out)


def test_declared_size_checked_before_reading():
    data = zip_bytes({"a": b"x" * 100})
    with ZipReader(io.BytesIO(data)) as zr:
        with pytest.raises(ArchiveError, match="exceeds the limit"):
            zr.read("a", 50)


def test_stored_member_with_lying_size_refused():
    data = _patch_central(zip_bytes({"a": b"x" * 100}), 24, "<L", 10**9)  # uncompressed size
    with pytest.raises(ArchiveError, match="stored member declares"):
        ZipReader(io.BytesIO(data))


def test_zip_bomb_ratio_refused():
    data = repack({"bomb": b"\0" * (4 << 20)}, compress=zipfile.ZIP_DEFLATED)
    with pytest.raises(ArchiveError, match="zip bomb"):
        ZipReader(io.BytesIO(data))


def test_encrypted_flag_refused():
    data = _patch_central(zip_bytes({"a": b"x"}), 8, "<H", 0x1)
    with pytest.raises(ArchiveError, match="encrypted"):
        ZipReader(io.BytesIO(data))


def test_unknown_compression_refused():
    data = _patch_central(zip_bytes({"a": b"x"}), 10, "<H", 12)  # bzip2
    with pytest.raises(ArchiveError, match="compression method"):
        ZipReader(io.BytesIO(data))


def test_overlapping_members_refused():
    """A member whose local header and data lie inside another member's data (overlap zip bomb)."""
    inner = repack({"b": b"y" * 10})
    local_part = inner[:inner.find(b"PK\x01\x02")]
    b_entry = bytearray(inner[inner.find(b"PK\x01\x02"):inner.rfind(b"PK\x05\x06")])
    outer = repack({"a": local_part})
    with zipfile.ZipFile(io.BytesIO(outer)) as zf:
        info = zf.getinfo("a")
    n, m = struct.unpack("<HH", outer[info.header_offset + 26: info.header_offset + 30])
    struct.pack_into("<L", b_entry, 42, info.header_offset + 30 + n + m)
    eocd = outer.rfind(b"PK\x05\x06")
    sig, d1, d2, n1, n2, size, offset, clen = struct.unpack("<4s4H2LH", outer[eocd:eocd + 22])
    tail = struct.pack("<4s4H2LH", sig, d1, d2, n1 + 1, n2 + 1, size + len(b_entry), offset, 0)
    crafted = outer[:eocd] + bytes(b_entry) + tail
    with zipfile.ZipFile(io.BytesIO(crafted)) as zf:  # the plain zipfile module reads both
        assert zf.read("b") == b"y" * 10
    with pytest.raises(ArchiveError, match="overlaps member 'a'"):
        ZipReader(io.BytesIO(crafted))


def test_missing_member_named():
    with ZipReader(io.BytesIO(zip_bytes({"a": b"1"}))) as zr:
        with pytest.raises(ArchiveError, match="archive member 'nope': missing"):
            zr.read("nope", 10)


def test_reader_by_path_and_memmap_offsets(tmp_path):
    path = tmp_path / "a.zip"
    write_atomic(path, lambda fh: write_zip(fh, MEMBERS))
    with ZipReader(path) as zr:
        assert zr.path == os.fspath(path)
        raw = path.read_bytes()
        off = zr.data_offset("a/x.bin")
        assert raw[off:off + 5] == b"hello"


def test_zip64_records_keep_alignment(monkeypatch):
    """Members above the ZIP64 limit get ZIP64 local records; data stays 64-byte aligned."""
    from tensorplay_export.serde.npyio import read_npy

    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 100)  # force ZIP64 records on small members
    data = zip_bytes({"a.npy": np.arange(50.0), "b": b"x" * 10, "c.npy": np.ones((7, 3), np.float32)})
    monkeypatch.undo()
    with ZipReader(io.BytesIO(data)) as zr:
        assert all(zr.data_offset(n) % ALIGN == 0 for n in zr.names)
        assert read_npy(zr, "a.npy").sum() == 1225.0
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
