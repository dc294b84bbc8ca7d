"""A persistent cache of compiled generated code, keyed by the source's content (issue 19).

``compile()`` of a large program's forward (GPT-24: 58 KB, ~880 lines) costs ~6 ms, a seventh
of loading its archive; :func:`compile_source` compiles a source once per machine, as CPython's
``__pycache__`` does for modules, and afterwards reads the code object back with ``marshal``
(~0.2 ms with the key's hash).  Export and load still ask for the code eagerly (issue 15), so
a source that does not compile fails there; a hit returns what ``compile()`` returned for the
same bytes.

Where: the directory named by ``TPE_CODE_CACHE``; ``0``, ``off``, ``false``, ``no`` or the
empty string turn the cache off.  Unset: ``$XDG_CACHE_HOME/tensorplay_export/code``, else
``~/.cache/tensorplay_export/code``.  One entry per distinct source, about its size: a
source above :data:`MAX_SOURCE_CHARS` is compiled and never written (an untrusted archive's
huge constants cannot fill the disk), and after a write the directory keeps the
:data:`MAX_ENTRIES` entries used last (a hit refreshes an entry's time), so it stays under
about ``MAX_ENTRIES * MAX_SOURCE_CHARS``.  Temporary files a killed writer left behind are
removed by the next write.  Deleting the directory clears the cache.

Trust: an entry is local state of the user, like ``__pycache__`` (``marshal`` data is code, and
is never read from an archive).  It is read only when the directory and the file belong to the
current user and neither is group- or other-writable (ssh's rule for its keys; so are the
directory's parents, up to a root-owned one, and no part of its path is a symlink), the file is a
regular file opened without following a symlink, at most :data:`MAX_ENTRY_BYTES` long, its
header names exactly the key asked for and the SHA-256 of the data after it, and that data
unmarshals to a code object.  Anything else, and any ``OSError`` while reading or writing (a
read-only home, a full disk), falls back to ``compile()``: the cache never raises.  Writes go to
a temporary file in the same directory, then ``os.replace``: concurrent writers of one key write
the same bytes, and a reader sees a whole file or none.  Platforms without ``os.geteuid``
(Windows) do not use the cache.
"""
from __future__ import annotations

import hashlib
import importlib.util
import itertools
import marshal
import os
import stat
import sys
import threading
import time
import types
from typing import Optional

__all__ = ["compile_source", "cache_dir", "usable_dir", "read_entry", "write_entry", "MAX_ENTRY_BYTES", "MIN_SOURCE_CHARS", "MAX_SOURCE_CHARS", "MAX_ENTRIES"]

# bumped when the entry layout changes; part of the key and of the header
_FORMAT = b"tpe-code-cache 1"
MAX_ENTRY_BYTES = 64 << 20
# below this, compile() costs under a tenth of a millisecond (a hit: about a third of
# that): such sources (the scratch graphs of passes, small programs) are compiled and not
# written, so they do not fill the cache
MIN_SOURCE_CHARS = 1024
MAX_SOURCE_CHARS = 4 << 20  # GPT-24's forward is 58 KB: a larger source is compiled, not kept
MAX_ENTRIES = 512
_STALE_TMP_SECONDS = 60  # a writer's temporary lives well under a second
_OFF = frozenset({"", "0", "off", "false", "no"})
_SUFFIX = ".code"
_STORED_FILENAME = "<tpe-code-cache>"
_tmp_counter = itertools.count()


def cache_dir() -> Optional[str]:
    """The cache directory ``TPE_CODE_CACHE`` (or the default) names, or None when turned off
    (or when there is no default: no absolute ``XDG_CACHE_HOME`` and no home directory).

    Read on every call, so a process may turn the cache off (or move it) at any time.
    """
    value = os.environ.get("TPE_CODE_CACHE")
    if value is not None:
        if value.strip().lower() in _OFF:
            return None
        try:
            return os.path.abspath(os.path.expanduser(value))
        except OSError:  # a relative value and a working directory that no longer exists
            return None
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):  # the XDG spec: a relative value is to be ignored
        base = os.path.join(os.path.expanduser("~"), ".cache")
    if not os.path.isabs(base):  # no home directory ("~" stayed as it was): no cache
        return None
    return os.path.join(base, "tensorplay_export", "code")


def _key(src: bytes) -> str:
    """Everything the code object depends on: the source bytes, the interpreter's bytecode
    (magic number, exact version) and the optimization level (``-O`` drops asserts).

    Not the package's version: ``compile()`` sees the source text only, which is in the key
    whole (and asking ``importlib.metadata`` costs ~30 ms, five times the compile saved)."""
    h = hashlib.sha256()
    for part in (_FORMAT, importlib.util.MAGIC_NUMBER, sys.version.encode(),
                 str(sys.flags.optimize).encode()):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    h.update(src)
    return h.hexdigest()


def _header(fmt: bytes, key: str) -> bytes:
    """The entry's first line pair; the third line is the SHA-256 of the payload."""
    return fmt + b"\n" + key.encode("ascii") + b"\n"


_DIGEST_LINE = 65  # 64 hex digits and a newline


def _private(st: os.stat_result) -> bool:
    """Owned by the current user and writable by nobody else."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def usable_dir(path: str) -> bool:
    """Create the directory (mode 0o700) if absent; True when it is a private directory whose
    path holds no symlink and whose parents nobody else can change (ssh's StrictModes rule:
    each is owned by root or the current user and not writable by others, unless sticky, as
    ``/tmp`` is)."""
    if not hasattr(os, "geteuid"):  # no owner to compare with (Windows): never trusted
        return False
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or not _private(st):
            return False
        parent = os.path.dirname(path)
        while True:
            pst = os.lstat(parent)
            if stat.S_ISLNK(pst.st_mode) or pst.st_uid not in (0, os.geteuid()):
                return False
            if pst.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not pst.st_mode & stat.S_ISVTX:
                return False
            up = os.path.dirname(parent)
            if up == parent:
                return True
            parent = up
    except (OSError, ValueError):
        return False


def read_entry(path: str, fmt: bytes, key: str) -> Optional[memoryview]:
    """The payload of the entry at ``path`` when it passes the trust rules (module docstring):
    a private regular file, at most :data:`MAX_ENTRY_BYTES`, headed by ``fmt`` and ``key``, whose
    payload's SHA-256 matches the header's; else None (never raises)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    # O_NONBLOCK: a FIFO planted under the entry's name must not block the open
    flags |= getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError:  # absent (a miss), a symlink (ELOOP), unreadable
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not _private(st) or st.st_size > MAX_ENTRY_BYTES:
            return None
        chunks, left = [], st.st_size
        while left > 0:
            chunk = os.read(fd, left)
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)
    header = _header(fmt, key)
    start = len(header) + _DIGEST_LINE
    if not data.startswith(header):
        return None
    payload = memoryview(data)[start:]
    # a damaged payload (a torn write survived a crash, a flipped bit) is never decoded
    if data[len(header):start] != hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n":
        return None
    return payload


def _read(path: str, key: str) -> Optional[types.CodeType]:
    payload = read_entry(path, _FORMAT, key)
    if payload is None:
        return None
    try:
        code = marshal.loads(payload)  # marshal is not written for malformed input: checked above
    except (EOFError, ValueError, TypeError):  # truncated or not marshal data
        return None
    return code if isinstance(code, types.CodeType) else None


def _write(folder: str, path: str, key: str, code: types.CodeType) -> None:
    try:
        # stored under a fixed filename: an entry's bytes depend on its key alone
        payload = marshal.dumps(_with_filename(code, _STORED_FILENAME))
    except ValueError:  # a constant marshal cannot write
        return
    write_entry(folder, path, _FORMAT, key, payload, _SUFFIX)


def write_entry(folder: str, path: str, fmt: bytes, key: str, payload: bytes, suffix: str) -> None:
    """Write ``payload`` under the header ``fmt``/``key`` to ``path`` atomically (a temporary in
    ``folder``, then ``os.replace``), after tidying the ``suffix`` entries of ``folder``; an
    entry above :data:`MAX_ENTRY_BYTES` or any ``OSError`` writes nothing (never raises one)."""
    data = _header(fmt, key) + hashlib.sha256(payload).hexdigest().encode("ascii") + b"\n" + payload
    if len(data) > MAX_ENTRY_BYTES:
        return
    _tidy(folder, suffix)
    tmp = os.path.join(folder, f".{key[:16]}.{os.getpid()}.{threading.get_ident()}.{next(_tmp_counter)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        return
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as error:  # an interrupt too: no temporary file stays behind
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if not isinstance(error, OSError):
            raise


def _tidy(folder: str, suffix: str) -> None:
    """Before a write: remove temporaries a killed writer left (older than a minute) and keep
    the ``MAX_ENTRIES - 1`` entries named ``*suffix`` used last.  Best effort: another process may be tidying too."""
    try:
        entries, now = [], time.time()
        with os.scandir(folder) as it:
            for e in it:
                if not e.is_file(follow_symlinks=False):
                    continue
                st = e.stat(follow_symlinks=False)
                if e.name.endswith(".tmp") and e.name.startswith(".") and now - st.st_mtime > _STALE_TMP_SECONDS:
                    os.unlink(e.path)
                elif e.name.endswith(suffix):
                    entries.append((st.st_mtime, e.path))
        if len(entries) >= MAX_ENTRIES:
            for _mtime, old in sorted(entries)[: len(entries) - MAX_ENTRIES + 1]:
                os.unlink(old)
    except OSError:
        pass


def _with_filename(code: types.CodeType, filename: str) -> types.CodeType:
    """``code`` and every code object nested in its constants, with ``co_filename`` set."""
    consts = tuple(_with_filename(c, filename) if isinstance(c, types.CodeType) else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def compile_source(src: str, filename: str) -> types.CodeType:
    """``compile(src, filename, "exec")`` (flags of the caller not inherited), through the cache.

    Args:
        src: Python source of a module (generated code).
        filename: the name tracebacks and ``linecache`` know the source by; a cached code
            object carries it, as a fresh one would.

    Returns:
        The module's code object.

    Raises:
        What ``compile()`` raises (``SyntaxError``, ``RecursionError``, ``ValueError``, ...),
        on a miss; a source compiled before compiled without error.
    """
    folder = cache_dir() if MIN_SOURCE_CHARS <= len(src) <= MAX_SOURCE_CHARS else None
    if folder is None or not usable_dir(folder):
        return compile(src, filename, "exec", dont_inherit=True)
    try:
        raw = src.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: compile() reports them
        return compile(src, filename, "exec", dont_inherit=True)
    key = _key(raw)
    path = os.path.join(folder, key + _SUFFIX)
    code = _read(path, key)
    if code is not None:
        try:
            os.utime(path)  # used now: kept when the directory is tidied
        except OSError:
            pass
        return _with_filename(code, filename)
    code = compile(src, filename, "exec", dont_inherit=True)
    _write(folder, path, key, code)
    return code
