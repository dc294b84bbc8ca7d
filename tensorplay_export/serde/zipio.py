"""The zip container: a deterministic, aligned writer and a distrustful reader.

Writer (:func:`write_zip`): members are written in sorted name order, all
``ZIP_STORED``, with the fixed timestamp 1980-01-01 00:00:00, Unix permissions
0644 and no comments.  Each member's data starts at an offset that is a
multiple of :data:`ALIGN` (64) bytes from the start of the archive: the local
header carries an alignment extra field (id ``0xD935``: uint16 alignment, then
zero padding).  ``.npy`` payloads therefore start aligned, and numpy's own
64-byte header padding aligns the array data, which allows ``np.memmap``.

Reader (:class:`ZipReader`): before any member is read it checks the member
count, name syntax (no absolute paths, ``..``, backslashes, drive letters,
control characters, empty segments), duplicate names, encryption,
compression method, declared sizes against limits and against the file size,
the total declared size of deflated members against the archive's own size
(:data:`MAX_INFLATE_RATIO` times it plus :data:`INFLATE_SLACK`: a small archive
cannot cost gigabytes, however its members are split), each local header
against the central directory, and that no two members' data overlap (the
overlapping-entry zip bomb).  Every failure is an
:class:`~tensorplay_export.errors.ArchiveError`.
"""
from __future__ import annotations

import errno
import io
import os
import re
import shutil
import signal
import socket
import struct
import tempfile
import threading
import zipfile
import zlib
from typing import IO, Any, Callable, Mapping

import numpy as np

from ..errors import ArchiveError
from .jsonio import fail

ALIGN = 64
_ALIGN_EXTRA_ID = 0xD935
_DATE = (1980, 1, 1, 0, 0, 0)
MAX_MEMBERS = 100_000
MAX_NAME_BYTES = 1024
MAX_MEMBER_BYTES = 1 << 40  # declared uncompressed size of one member
MAX_TOTAL_BYTES = 1 << 41  # declared uncompressed size of all members
MAX_DEFLATE_RATIO = 1000  # declared uncompressed / compressed, for deflated members
MAX_INFLATE_RATIO = 32  # all deflated members together: at most 32x the archive's size ...
INFLATE_SLACK = 16 << 20  # ... plus 16 MiB (writers store everything; this is for repacked archives)
_LOCAL_HEADER = struct.Struct("<4s5H3L2H")
_UMASK = os.umask(0)
os.umask(_UMASK)

def npy_header(array: np.ndarray) -> bytes:
    """The .npy (version 1.0, or 2.0 if needed) header for a C-contiguous ``array``."""
    buf = io.BytesIO()
    header = np.lib.format.header_data_from_array_1_0(array)
    try:
        np.lib.format.write_array_header_1_0(buf, header)
    except ValueError:  # header longer than 64 KiB: numpy's format 2.0
        buf = io.BytesIO()
        np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


def _payload_parts(value: Any) -> tuple[bytes, memoryview | bytes]:
    if isinstance(value, np.ndarray):
        array = value if value.flags.c_contiguous else value.copy(order="C")  # keeps 0-d shape
        if array.dtype.hasobject:
            raise ArchiveError("cannot store an object array (it would need pickle)")
        flat = array.reshape(-1).view(np.uint8) if array.size else np.empty(0, np.uint8)
        return npy_header(array), memoryview(flat)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return b"", bytes(value)
    raise TypeError(f"zip payload must be bytes or an ndarray, got {type(value).__name__}")


def _align_extra(offset: int, name: bytes, zip64: bool) -> bytes:
    base = offset + _LOCAL_HEADER.size + len(name) + (20 if zip64 else 0)
    pad = (-base) % ALIGN
    if pad == 0:
        return b""
    if pad < 6:
        pad += ALIGN
    return struct.pack("<HHH", _ALIGN_EXTRA_ID, pad - 4, ALIGN) + b"\0" * (pad - 6)


def write_zip(fh: IO[bytes], members: Mapping[str, Any]) -> None:
    """Write ``members`` (name -> bytes | ndarray) as a deterministic aligned zip.

    ``fh`` must be a seekable binary file positioned at 0 (so offsets are absolute).
    Arrays are streamed without an extra copy of their data.
    """
    with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(members):
            header, data = _payload_parts(members[name])
            size = len(header) + (data.nbytes if isinstance(data, memoryview) else len(data))
            info = zipfile.ZipInfo(name, date_time=_DATE)
            info.compress_type = zipfile.ZIP_STORED
            info.create_system = 3
            info.external_attr = 0o644 << 16
            info.file_size = size
            zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # the rule zipfile uses for the local header
            info.extra = _align_extra(fh.tell(), name.encode("utf-8"), zip64)
            with zf.open(info, "w", force_zip64=zip64) as out:
                out.write(header)
                out.write(data)


_ATOMIC_TMP_PREFIX = ".tpe-"
_ACTIVE_TEMPS: set[str] = set()  # temporaries being written by this process (any thread)


def _host_tag() -> str:
    """8 hex digits naming this host, so a shared folder's temporaries of other hosts are left alone."""
    return format(zlib.crc32(socket.gethostname().encode("utf-8", "replace")), "08x")


def _stale_pattern(base: str) -> "re.Pattern[str]":
    # mkstemp's random part has no dots, so a longer target name ("a.zip.1") never matches "a.zip"
    return re.compile(re.escape(f"{_ATOMIC_TMP_PREFIX}{base}.") + r"([0-9]+)-([0-9a-f]{8})\.[a-z0-9_]+\.tmp")


def _writer_gone(pid: int) -> bool:
    if pid == os.getpid() or pid <= 0:
        return False  # ours: another thread may be writing this target right now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False  # alive under another user, or we cannot tell: keep it
    return False


def _sweep_stale(folder: str, base: str) -> None:
    """Remove temporaries of this target that a writer on this host left behind when it died."""
    pattern, tag = _stale_pattern(base), _host_tag()
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or m.group(2) != tag or not _writer_gone(int(m.group(1))):
            continue
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass  # gone already, or not ours to remove


def _on_sigterm(signum: int, frame: Any) -> None:
    """Remove this process's temporaries, then die of SIGTERM as the default handler would."""
    for tmp in list(_ACTIVE_TEMPS):
        try:
            os.unlink(tmp)
        except OSError:
            pass
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def _guard_sigterm() -> Callable[[], None]:
    """Install :func:`_on_sigterm` for the save if SIGTERM has its default handler and this is the
    main thread (an application's own handler, or SIG_IGN, is never replaced); returns the undo."""
    if (not hasattr(signal, "SIGTERM") or os.name != "posix"
            or threading.current_thread() is not threading.main_thread()):
        return lambda: None
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return lambda: None
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        return lambda: None

    def undo() -> None:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    return undo


def _fsync_folder(folder: str) -> None:
    """Make the rename durable: fsync the folder (where the OS allows opening one)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(f: Any, write: Callable[[IO[bytes]], None]) -> None:
    """Run ``write(fh)`` on a fresh seekable temp file, then publish it to ``f``.

    For a path: the temp file ``.tpe-<name>.<pid>-<host>.<random>.tmp`` is created
    in the destination's folder, flushed, fsynced and renamed over the destination
    with ``os.replace`` (atomic), then the folder is fsynced.  On any failure it is
    removed and the destination is untouched.  A writer killed outright (SIGKILL,
    power loss) leaves its temporary; the next save of the same target removes
    those whose writer pid no longer runs on this host.  On SIGTERM the temporary
    is removed before the process dies, if SIGTERM still had its default handler
    and the save runs on the main thread (an application's handler is left in
    place: its exception, e.g. SystemExit, removes the temporary on the way out).
    For a writable binary file object: the finished bytes are copied into it.
    """
    if isinstance(f, (str, os.PathLike)):
        path = os.fspath(f)
        folder = os.path.dirname(os.path.abspath(path))
        base = os.path.basename(path)
        if not os.path.isdir(folder):  # say so about the user's path, not about the temporary's
            raise FileNotFoundError(errno.ENOENT, f"cannot save: the folder {folder} does not exist", path)
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "cannot save over a folder", path)
        _sweep_stale(folder, base)
        prefix = f"{_ATOMIC_TMP_PREFIX}{base}.{os.getpid()}-{_host_tag()}."
        undo = _guard_sigterm()
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
        except BaseException:
            undo()
            raise
        _ACTIVE_TEMPS.add(tmp)
        try:
            with os.fdopen(fd, "w+b") as fh:
                write(fh)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_UMASK)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        finally:
            _ACTIVE_TEMPS.discard(tmp)
            undo()
        _fsync_folder(folder)
        return
    if not hasattr(f, "write"):
        raise TypeError(f"expected a path or a writable binary file object, got {type(f).__name__}")
    with tempfile.TemporaryFile() as fh:
        write(fh)
        fh.seek(0)
        shutil.copyfileobj(fh, f, 1 << 20)


def zip_bytes(members: Mapping[str, Any]) -> bytes:
    """The archive bytes of ``members`` in memory (used for the nested ``.npz``)."""
    buf = io.BytesIO()
    write_zip(buf, members)
    return buf.getvalue()


_CONTROL = re.compile("[\x00-\x1f\x7f]")
_BAD_SEGMENT = re.compile(r"(?:^|/)\.{0,2}(?:/|$)")  # a segment that is empty, "." or ".."


def check_member_name(name: Any, where: str = "archive") -> str:
    """Refuse names that could escape an extraction folder or alias another member."""
    if not isinstance(name, str) or not name:
        fail(where, f"empty or non-text member name {name!r:.60}")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        fail(name[:80], f"member name longer than {MAX_NAME_BYTES} bytes")
    if name.startswith("/") or "\\" in name or (len(name) > 1 and name[1] == ":"):
        fail(name, "absolute or non-POSIX member path")
    if _CONTROL.search(name):
        fail(name, "control character in member name")
    if _BAD_SEGMENT.search(name):
        fail(name, "member path has an empty, '.' or '..' segment")
    return name


class ZipReader:
    """Validated read access to a zip archive (see the module docstring for the checks).

    Args:
        f: a path or a readable binary file object (a non-seekable one is read into memory).
    Attributes:
        path: the file path when opened by path (enables :meth:`data_offset` + memmap), else None.
        names: member names in archive order.
    Raises:
        ArchiveError: the container is not a valid, safe zip.
    """

    def __init__(self, f: Any, *, max_members: int = MAX_MEMBERS, max_total: int = MAX_TOTAL_BYTES):
        self.path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else None
        self._own = self.path is not None
        self.identity: tuple | None = None
        try:
            if self.path is not None:
                self._fh: IO[bytes] = open(self.path, "rb")
                st = os.fstat(self._fh.fileno())
                self.identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            else:
                self._fh = f if _seekable(f) else io.BytesIO(f.read())
            self._zf = zipfile.ZipFile(self._fh, "r")
        except FileNotFoundError:
            raise
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError,
                struct.error, NotImplementedError, AttributeError) as err:
            self.close()
            raise ArchiveError(f"archive: not a readable zip file ({type(err).__name__}: {err})") from None
        try:
            self._validate(max_members, max_total)
        except BaseException:
            self.close()
            raise

    def _check_end_record(self) -> None:
        """The end-of-central-directory record ends the file (after its comment, if any).

        zipfile looks for the last record signature in the file's tail; in an archive cut short
        that can be the end record of a zip stored inside it (an uncompressed ``.npz`` member),
        whose members it would then read as the archive's.
        """
        fh = self._fh
        size = fh.seek(0, os.SEEK_END)
        tail_len = min(size, 22 + 0xFFFF)
        fh.seek(size - tail_len)
        tail = fh.read(tail_len)
        at = tail.rfind(b"PK\x05\x06")
        while at >= 0:
            if at + 22 <= len(tail) and at + 22 + int.from_bytes(tail[at + 20:at + 22], "little") == len(tail):
                return
            at = tail.rfind(b"PK\x05\x06", 0, at)
        raise ArchiveError(f"archive: truncated or damaged: its last {min(size, 22)} bytes are no end-of-central-"
                           f"directory record ({size} bytes; was the file cut short while copying?)")

    def _validate(self, max_members: int, max_total: int) -> None:
        self._check_end_record()
        infos = self._zf.infolist()
        if len(infos) > max_members:
            raise ArchiveError(f"archive: {len(infos)} members exceed the limit of {max_members}")
        self._infos: dict[str, zipfile.ZipInfo] = {}
        self._data_start: dict[str, int] = {}
        total = inflated = 0
        self._fh.seek(0, os.SEEK_END)
        file_size = self._fh.tell()
        self.file_size = file_size
        inflate_limit = MAX_INFLATE_RATIO * file_size + INFLATE_SLACK
        dir_start = getattr(self._zf, "start_dir", file_size)
        by_name, data_start = self._infos, self._data_start
        stored, deflated = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED
        for info in infos:
            name = check_member_name(info.filename)
            if name in by_name:
                fail(name, "duplicate member name")
            if info.flag_bits & 0x1:
                fail(name, "encrypted members are not supported")
            method, size = info.compress_type, info.file_size
            if method != stored and method != deflated:
                fail(name, f"unsupported compression method {method}")
            if size > MAX_MEMBER_BYTES:
                fail(name, f"declared size {size} bytes exceeds the limit of {MAX_MEMBER_BYTES}")
            if method == stored and size != info.compress_size:
                fail(name, f"stored member declares {size} bytes but occupies {info.compress_size}")
            if method == deflated and size > MAX_DEFLATE_RATIO * max(info.compress_size, 1) + 1024:
                fail(name, f"compression ratio {size}/{info.compress_size} looks like a zip bomb")
            total += size
            if total > max_total:
                fail(name, f"declared total size exceeds the limit of {max_total} bytes")
            if method == deflated:
                inflated += size
                if inflated > inflate_limit:
                    fail(name, f"deflated members would decompress to more than {inflate_limit} bytes, "
                               f"{MAX_INFLATE_RATIO}x the archive's {file_size} bytes plus {INFLATE_SLACK}: "
                               "looks like a zip bomb")
            by_name[name] = info
            data_start[name] = self._local_data_start(info, dir_start)
        spans = sorted((i.header_offset, self._data_start[n] + i.compress_size, n)
                       for n, i in self._infos.items())
        for (_, end, name), (start, _, other) in zip(spans, spans[1:]):
            if end > start:
                fail(other, f"member data overlaps member '{name}'")
        if spans and spans[0][0] != 0:
            # a writer starts with a member; bytes in front make a file that is also something else
            # (a self-extracting or polyglot file: a shared library that is also an archive)
            fail(spans[0][2], f"{spans[0][0]} bytes before the first member: an archive starts with a "
                              f"member's local header")
        if spans and spans[-1][1] > dir_start:
            fail(spans[-1][2], "member data runs into the central directory")
        self.names = [i.filename for i in infos]

    def _local_data_start(self, info: zipfile.ZipInfo, dir_start: int) -> int:
        name = info.filename
        if info.header_offset < 0 or info.header_offset + _LOCAL_HEADER.size > dir_start:
            fail(name, "local header offset is outside the archive")
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        try:
            expected = name.encode(encoding)
        except UnicodeEncodeError:
            expected = b""
        # the header and the name the central directory gives, in one read
        raw = self._read_at(info.header_offset, _LOCAL_HEADER.size + len(expected))
        if len(raw) < _LOCAL_HEADER.size:
            fail(name, "truncated local header")
        fields = _LOCAL_HEADER.unpack(raw[:_LOCAL_HEADER.size])
        if fields[0] != b"PK\x03\x04":
            fail(name, "bad local header signature")
        # other zip readers go by the local header: it must say what the central directory says
        if (fields[2] | info.flag_bits) & 0x1:
            fail(name, "the member is encrypted; archives are never encrypted")
        if fields[3] != info.compress_type:
            fail(name, f"local header compression ({fields[3]}) differs from the central directory's "
                       f"({info.compress_type})")
        name_len, extra_len = fields[-2], fields[-1]
        if name_len != len(expected) or raw[_LOCAL_HEADER.size:] != expected:
            # not the same bytes: compare as text, as zipfile decodes names
            local_name = self._read_at(info.header_offset + _LOCAL_HEADER.size, name_len)
            if local_name.decode(encoding, "replace") != name:
                fail(name, "local header name differs from the central directory")
        return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len

    def _read_at(self, offset: int, size: int) -> bytes:
        """Up to ``size`` bytes at ``offset`` (one ``pread`` for a file opened by path)."""
        if self._own and _PREAD is not None:
            return _PREAD(self._fh.fileno(), size, offset)
        self._fh.seek(offset)
        return self._fh.read(size)

    # -- access -----------------------------------------------------------------------
    def __contains__(self, name: str) -> bool:
        return name in self._infos

    def info(self, name: str) -> zipfile.ZipInfo:
        """The validated ZipInfo; ArchiveError when the member is missing."""
        if name not in self._infos:
            fail(name, "missing from the archive")
        return self._infos[name]

    def size(self, name: str) -> int:
        """Declared uncompressed size in bytes."""
        return self.info(name).file_size

    def read(self, name: str, limit: int) -> bytes:
        """All bytes of ``name``; refuses a declared size above ``limit`` before reading."""
        info = self.info(name)
        if info.file_size > limit:
            fail(name, f"member of {info.file_size} bytes exceeds the limit of {limit} bytes")
        with self.open(name) as stream:
            try:
                data = stream.read(info.file_size + 1)
            except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError) as err:
                fail(name, f"corrupt data ({type(err).__name__}: {err})")
        if len(data) != info.file_size:
            fail(name, f"holds {len(data)} bytes but declares {info.file_size}")
        return data

    def open(self, name: str) -> IO[bytes]:
        """A stream over the member's uncompressed bytes (CRC checked at its end)."""
        info = self.info(name)
        try:
            return self._zf.open(info, "r")
        except (zipfile.BadZipFile, zlib.error, OSError, EOFError, ValueError, NotImplementedError) as err:
            fail(name, f"cannot open ({type(err).__name__}: {err})")

    def fingerprint(self, name: str) -> tuple:
        """What identifies a member's bytes: (CRC-32, method, sizes, offset)."""
        i = self.info(name)
        return (i.CRC, i.compress_type, i.compress_size, i.file_size, i.header_offset)

    def raw(self, name: str) -> bytes:
        """The member's stored (possibly deflated) payload, as it lies in the archive."""
        info = self.info(name)
        self._fh.seek(self._data_start[name])
        data = self._fh.read(info.compress_size)
        if len(data) != info.compress_size:
            fail(name, "truncated member data")
        return data

    def data_offset(self, name: str) -> int | None:
        """Absolute file offset of a STORED member's bytes (for memmap); None if compressed."""
        info = self.info(name)
        return self._data_start[name] if info.compress_type == zipfile.ZIP_STORED else None

    def mapping(self) -> np.memmap | None:
        """One read-only ``uint8`` memory map of the whole archive file (None unless opened by path).

        Made once per reader: every array member is a view into it (one ``mmap`` for all
        weights, issue 19), and each view keeps the mapping alive after the reader closes.
        """
        if self.path is None:
            return None
        if getattr(self, "_mapping", None) is None:
            if self.identity is not None and self.identity[2] == 0:
                return None
            self._mapping = np.memmap(self._fh, dtype=np.uint8, mode="r")
            self._mapped_bytes = memoryview(self._mapping)
        return self._mapping

    def mapped_bytes(self, start: int, stop: int) -> bytes:
        """``bytes(self.mapping()[start:stop])`` without an intermediate array (headers)."""
        if self.mapping() is None:
            raise ValueError("the archive is not memory-mapped")
        return self._mapped_bytes[start:stop].tobytes()

    def close(self) -> None:
        self._mapping = None  # views keep the map alive; the reader lets go of it
        self._mapped_bytes = None
        zf = getattr(self, "_zf", None)
        if zf is not None:
            zf.close()
        if self._own and getattr(self, "_fh", None) is not None:
            self._fh.close()

    def __enter__(self) -> "ZipReader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def inflate(name: str, fingerprint: tuple, raw: bytes, limit: int) -> bytes:
    """The bytes of a member from its :meth:`ZipReader.raw` payload (size and CRC-32 checked)."""
    crc, method, _csize, size, _offset = fingerprint
    if size > limit:
        fail(name, f"member of {size} bytes exceeds the limit of {limit} bytes")
    if method == zipfile.ZIP_STORED:
        data = raw
    else:
        try:
            d = zlib.decompressobj(-15)
            data = d.decompress(raw, size + 1)
        except zlib.error as err:
            fail(name, f"corrupt data (zlib.error: {err})")
    if len(data) != size:
        fail(name, f"holds {len(data)} bytes but declares {size}")
    if zlib.crc32(data) != crc:
        fail(name, "corrupt data (CRC-32 mismatch)")
    return data


class MemberSource:
    """Reads members of an archive after the :class:`ZipReader` that validated it is closed.

    For an archive opened by path the file is opened again when a member is
    asked for; if it is no longer the same file (device, inode, size, mtime) or
    the member's entry changed, that is an ArchiveError naming the member.  For
    a file object, the caller may close it after loading: :meth:`keep` holds a
    member's stored payload (never more than the archive's own bytes), which
    :meth:`read` inflates and checks when asked.
    """

    def __init__(self, zr: ZipReader) -> None:
        self.path = zr.path
        self.identity = zr.identity
        self._prints: dict[str, tuple] = {}
        self._held: dict[str, bytes] = {}

    def keep(self, zr: ZipReader, name: str) -> None:
        self._prints[name] = zr.fingerprint(name)
        if self.path is None:
            self._held[name] = zr.raw(name)

    def read(self, name: str, limit: int) -> bytes:
        print_ = self._prints[name]
        if self.path is None:
            return inflate(name, print_, self._held[name], limit)
        try:
            zr = ZipReader(self.path)
        except (FileNotFoundError, ArchiveError) as err:
            fail(name, f"cannot read it: the archive at {self.path!r} is gone or changed since it was "
                       f"loaded ({err})")
        with zr:
            if zr.identity != self.identity or name not in zr or zr.fingerprint(name) != print_:
                fail(name, f"cannot read it: the archive at {self.path!r} changed since it was loaded; "
                           "load it again")
            return zr.read(name, limit)


_PREAD = getattr(os, "pread", None)


def _seekable(f: Any) -> bool:
    try:
        return bool(f.seekable())
    except (AttributeError, OSError, ValueError):
        return False
