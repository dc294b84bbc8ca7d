"""The compiled-code cache (graph/codecache.py): hits skip compile(), bad entries are ignored.

Every test points ``TPE_CODE_CACHE`` at its own directory; compile() is counted through the
module's global name, so a hit is seen as "compile was not called".
"""
from __future__ import annotations

import builtins
import hashlib
import linecache
import marshal
import os
import stat
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn
from tensorplay_export.graph import codecache
from tensorplay_export.graph.codecache import cache_dir, compile_source

RAISE_LINE = 3  # the line of SOURCE that raises, 1-based


def source(marker: int = 0, lines: int = 60) -> str:
    """A module defining ``forward(x)`` (over the cache's minimum size); it raises for x < 0."""
    body = "".join(f"    v{i} = v{i - 1} * 2 + {marker}\n" for i in range(1, lines))
    src = ("def forward(x):\n"
           "    if x < 0:\n"
           "        raise ValueError('negative input')\n"
           "    v0 = x\n" + body + f"    return v{lines - 1}\n")
    assert len(src) >= codecache.MIN_SOURCE_CHARS
    return src


def expected(x: int, marker: int = 0, lines: int = 60) -> int:
    v = x
    for _ in range(1, lines):
        v = v * 2 + marker
    return v


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh cache directory (not created yet) and a counter of compile() calls."""
    folder = tmp_path / "code"
    monkeypatch.setenv("TPE_CODE_CACHE", str(folder))
    calls = []

    def counting_compile(*args, **kwargs):
        calls.append(args[1])
        return builtins.compile(*args, **kwargs)

    monkeypatch.setattr(codecache, "compile", counting_compile, raising=False)
    return folder, calls


def run(code, x):
    namespace = {}
    exec(code, namespace)
    return namespace["forward"](x)


def entries(folder):
    return sorted(p.name for p in folder.iterdir())


def only_entry(folder):
    names = entries(folder)
    assert len(names) == 1 and names[0].endswith(".code"), names
    return folder / names[0]


def test_second_compile_of_a_source_is_a_hit(cache):
    folder, calls = cache
    src = source()
    first = compile_source(src, "<first>")
    assert calls == ["<first>"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    entry = only_entry(folder)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    second = compile_source(src, "<second>")
    assert calls == ["<first>"]  # a hit: not compiled again
    assert second.co_filename == "<second>" and first.co_filename == "<first>"
    assert second.co_code == first.co_code
    for x in (0, 1, 7):
        assert run(second, x) == run(first, x) == expected(x)
    # a different source is a different entry, compiled once
    other = compile_source(source(marker=1), "<other>")
    assert calls == ["<first>", "<other>"] and len(entries(folder)) == 2
    assert run(other, 3) == expected(3, marker=1)


def test_small_sources_are_compiled_and_not_written(cache):
    folder, calls = cache
    src = "def forward(x):\n    return x + 1\n"
    assert run(compile_source(src, "<a>"), 1) == 2
    assert run(compile_source(src, "<b>"), 1) == 2
    assert calls == ["<a>", "<b>"]
    assert not folder.exists() or entries(folder) == []


def test_a_traceback_from_a_hit_shows_the_generated_line(cache):
    _, calls = cache
    src = source()
    compile_source(src, "<tpe-cache-test-1>")
    filename = "<tpe-cache-test-2>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    try:
        code = compile_source(src, filename)
        assert calls == ["<tpe-cache-test-1>"]
        with pytest.raises(ValueError, match="negative input") as info:
            run(code, -1)
        frame = traceback.extract_tb(info.value.__traceback__)[-1]
        assert (frame.filename, frame.lineno, frame.name) == (filename, RAISE_LINE, "forward")
        assert frame.line == "raise ValueError('negative input')"
    finally:
        del linecache.cache[filename]


def test_nested_code_objects_carry_the_filename_on_a_hit(cache):
    _, calls = cache
    src = source() + (
        "def outer(x):\n"
        "    def inner(y):\n"
        "        return [v for v in (lambda z: z)(y)]\n"
        "    return sum(v for v in inner(x))\n"
        "def fails():\n"
        "    def inner():\n"
        "        raise KeyError('inside')\n"
        "    inner()\n")
    compile_source(src, "<one>")
    code = compile_source(src, "<two>")
    assert calls == ["<one>"]
    seen = []

    def walk(c):
        seen.append(c.co_filename)
        for k in c.co_consts:
            if isinstance(k, type(c)):
                walk(k)

    walk(code)
    assert len(seen) >= 5 and set(seen) == {"<two>"}  # module, outer, inner, lambda, genexpr, ...
    namespace = {}
    exec(code, namespace)
    assert namespace["outer"]([1, 2, 3]) == 6
    with pytest.raises(KeyError) as info:
        namespace["fails"]()
    frames = traceback.extract_tb(info.value.__traceback__)
    assert [(f.filename, f.name) for f in frames[-2:]] == [("<two>", "fails"), ("<two>", "inner")]


@pytest.mark.parametrize("value", ["0", "off", "OFF", "", "false", "no"])
def test_turned_off_by_the_environment(value, tmp_path, monkeypatch, cache):
    _, calls = cache
    monkeypatch.setenv("TPE_CODE_CACHE", value)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() is None
    src = source()
    for name in ("<a>", "<b>"):
        assert run(compile_source(src, name), 2) == expected(2)
    assert calls == ["<a>", "<b>"]
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()


def test_default_location(tmp_path, monkeypatch, cache):
    _, calls = cache
    monkeypatch.delenv("TPE_CODE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == str(tmp_path / "xdg" / "tensorplay_export" / "code")
    compile_source(source(), "<a>")
    only_entry(tmp_path / "xdg" / "tensorplay_export" / "code")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == str(tmp_path / "home" / ".cache" / "tensorplay_export" / "code")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/xdg")  # ignored, as the XDG spec says
    assert cache_dir() == str(tmp_path / "home" / ".cache" / "tensorplay_export" / "code")
    monkeypatch.setenv("TPE_CODE_CACHE", "~/elsewhere")
    assert cache_dir() == str(tmp_path / "home" / "elsewhere")


def primed(cache):
    """The cache folder with one entry of source(), and that entry's path."""
    folder, calls = cache
    compile_source(source(), "<prime>")
    assert calls == ["<prime>"]
    return folder, only_entry(folder)


def expect_recompiled(cache, name="<again>"):
    """compile_source compiles again (the entry was ignored) and still gives working code."""
    _, calls = cache
    before = len(calls)
    code = compile_source(source(), name)
    assert calls[before:] == [name]
    assert code.co_filename == name and run(code, 5) == expected(5)


def header_of(entry) -> bytes:
    """The entry's header: format line and key line (the digest line follows)."""
    data = entry.read_bytes()
    first = data.index(b"\n")
    return data[:data.index(b"\n", first + 1) + 1]


def sealed(header: bytes, payload: bytes) -> bytes:
    """An entry whose digest line matches ``payload``: only what comes after the digest is wrong."""
    return header + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


@pytest.mark.parametrize("damage", ["garbage", "sealed garbage", "empty", "truncated", "sealed truncation",
                                    "flipped bit", "wrong key", "wrong format", "sealed non-code", "oversized"])
def test_a_damaged_entry_is_ignored_and_rewritten(damage, cache, monkeypatch):
    folder, entry = primed(cache)
    good = entry.read_bytes()
    header = header_of(entry)
    payload = good[len(header) + 65:]
    assert sealed(header, payload) == good
    if damage == "garbage":
        entry.write_bytes(header + b"\xff\x00 not marshal data")
    elif damage == "sealed garbage":  # reaches marshal, which refuses it
        entry.write_bytes(sealed(header, b"\xff\x00 not marshal data"))
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "truncated":
        entry.write_bytes(good[:len(good) // 2])
    elif damage == "sealed truncation":
        entry.write_bytes(sealed(header, payload[:len(payload) // 2]))
    elif damage == "flipped bit":
        middle = len(good) - len(payload) // 2
        entry.write_bytes(good[:middle] + bytes([good[middle] ^ 0x10]) + good[middle + 1:])
    elif damage == "wrong key":
        other = header.replace(entry.stem.encode(), b"0" * 64)
        assert other != header
        entry.write_bytes(other + good[len(header):])
    elif damage == "wrong format":
        entry.write_bytes(header.replace(b"tpe-code-cache 1", b"tpe-code-cache 0") + good[len(header):])
    elif damage == "sealed non-code":
        entry.write_bytes(sealed(header, marshal.dumps(("def forward(x): ...", 42))))
    elif damage == "oversized":
        monkeypatch.setattr(codecache, "MAX_ENTRY_BYTES", len(good) - 1)
    os.chmod(entry, 0o600)
    expect_recompiled(cache)
    if damage != "oversized":  # the miss wrote the entry anew: the next call hits
        assert entry.read_bytes() == good
        expect_hit = compile_source(source(), "<hit>")
        assert cache[1][-1] == "<again>" and run(expect_hit, 1) == expected(1)


@pytest.mark.parametrize("where,bits", [("file", stat.S_IWOTH), ("file", stat.S_IWGRP),
                                        ("dir", stat.S_IWOTH), ("dir", stat.S_IWGRP)])
def test_an_entry_others_may_write_is_ignored(where, bits, cache):
    folder, entry = primed(cache)
    target = entry if where == "file" else folder
    os.chmod(target, stat.S_IMODE(target.stat().st_mode) | bits)
    expect_recompiled(cache)
    if where == "dir":
        expect_recompiled(cache, "<and again>")  # an unsafe directory is neither read nor written
        assert entries(folder) == [entry.name]
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    else:
        # the miss replaced the entry by a private one, which the next call reads
        assert stat.S_IMODE(entry.stat().st_mode) == 0o600
        code = compile_source(source(), "<hit>")
        assert cache[1][-1] == "<again>" and run(code, 2) == expected(2)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_an_entry_of_another_user_is_ignored(cache):
    folder, entry = primed(cache)
    os.chown(entry, 12345, -1)
    expect_recompiled(cache)
    assert entry.stat().st_uid == os.geteuid()  # replaced by the miss's own entry
    os.chown(folder, 12345, -1)
    expect_recompiled(cache)
    expect_recompiled(cache, "<and again>")


def test_a_symlinked_entry_is_ignored_and_not_followed_on_write(cache, tmp_path):
    folder, entry = primed(cache)
    elsewhere = tmp_path / "elsewhere.code"
    elsewhere.write_bytes(entry.read_bytes())
    os.chmod(elsewhere, 0o600)
    entry.unlink()
    entry.symlink_to(elsewhere)
    expect_recompiled(cache)
    assert not entry.is_symlink() and entry.is_file()  # the link itself was replaced
    assert elsewhere.read_bytes() == entry.read_bytes()


def test_a_fifo_under_the_entry_name_does_not_block(cache):
    folder, entry = primed(cache)
    entry.unlink()
    os.mkfifo(entry, 0o600)
    expect_recompiled(cache)
    assert entry.is_file()


def test_a_symlinked_cache_directory_is_not_used(cache, tmp_path, monkeypatch):
    # a link can point a cache elsewhere after the checks (ssh's rule checks the path itself)
    folder, entry = primed(cache)
    link = tmp_path / "link"
    link.symlink_to(folder)
    monkeypatch.setenv("TPE_CODE_CACHE", str(link))
    expect_recompiled(cache, "<via link>")
    expect_recompiled(cache, "<via link again>")  # nothing was written through the link either
    assert entries(folder) == [entry.name]


def test_a_parent_another_user_can_change_makes_the_cache_unused(cache, tmp_path, monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("chown to another user needs root")
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chown(parent, 1234, 1234)
    monkeypatch.setenv("TPE_CODE_CACHE", str(parent / "code"))
    expect_recompiled(cache, "<foreign parent>")
    expect_recompiled(cache, "<foreign parent again>")
    os.chown(parent, 0, 0)
    os.chmod(parent, 0o777)  # writable by all and not sticky: anyone could swap the folder
    expect_recompiled(cache, "<open parent>")
    expect_recompiled(cache, "<open parent again>")
    os.chmod(parent, 0o1777)  # sticky, as /tmp: others cannot rename what is ours
    compile_source(source(), "<sticky parent>")
    before = len(cache[1])
    compile_source(source(), "<sticky hit>")
    assert len(cache[1]) == before


def test_a_relative_cache_path_after_the_working_directory_is_gone(cache, tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    monkeypatch.setenv("TPE_CODE_CACHE", "relative/code")
    assert cache_dir() is None
    expect_recompiled(cache, "<no cwd>")


def test_temporaries_a_killed_writer_left_are_removed_by_the_next_write(cache):
    folder, entry = primed(cache)
    stale = folder / f".{'0' * 16}.99999.1.0.tmp"
    fresh = folder / f".{'1' * 16}.99999.1.1.tmp"
    stale.write_bytes(b"half an entry")
    fresh.write_bytes(b"a writer at work")
    old = os.stat(stale).st_mtime - 3600
    os.utime(stale, (old, old))
    compile_source(source(marker=1), "<another source>")  # a miss: a write, which tidies first
    assert not stale.exists() and fresh.exists()


def test_the_cache_keeps_the_entries_used_last(cache, monkeypatch):
    folder, calls = cache
    monkeypatch.setattr(codecache, "MAX_ENTRIES", 3)
    for marker in range(3):
        compile_source(source(marker), f"<m{marker}>")
    first = folder / only_entry_of(folder, source(0))
    old = os.stat(first).st_mtime - 60
    for marker in (1, 2):
        path = folder / only_entry_of(folder, source(marker))
        os.utime(path, (old - 10, old - 10))
    os.utime(first, (old - 20, old - 20))
    compile_source(source(0), "<hit refreshes m0>")  # a hit: m0 becomes the newest
    compile_source(source(3), "<m3>")                # a write: the folder keeps the 3 used last
    names = entries(folder)
    assert len(names) == 3 and only_entry_of(folder, source(0)) in names
    assert only_entry_of(folder, source(3)) in names
    assert only_entry_of(folder, source(1)) not in names  # the oldest one went


def test_a_source_above_the_size_limit_is_compiled_and_not_written(cache, monkeypatch):
    folder, calls = cache
    monkeypatch.setattr(codecache, "MAX_SOURCE_CHARS", 2000)
    big = source(lines=200)
    assert len(big) > 2000
    compile_source(big, "<big>")
    compile_source(big, "<big again>")
    assert calls == ["<big>", "<big again>"] and not (folder.exists() and entries(folder))


def only_entry_of(folder, src) -> str:
    """The entry file name of ``src``."""
    return codecache._key(src.encode()) + ".code"


def test_a_cache_that_cannot_be_created_or_written_still_compiles(cache, tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("TPE_CODE_CACHE", str(blocker / "code"))
    expect_recompiled(cache, "<one>")
    expect_recompiled(cache, "<two>")
    monkeypatch.setenv("TPE_CODE_CACHE", str(blocker))  # a file, not a directory
    expect_recompiled(cache, "<three>")
    assert blocker.read_text() == "not a directory"


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_write_leaves_no_temporary_file(error, cache, monkeypatch):
    folder, calls = cache

    def failing_replace(src, dst):
        raise error

    monkeypatch.setattr(codecache.os, "replace", failing_replace)
    if isinstance(error, OSError):
        expect_recompiled(cache)
    else:
        with pytest.raises(KeyboardInterrupt):  # an interrupt is the user's: it propagates
            compile_source(source(), "<interrupted>")
    assert entries(folder) == []  # no entry, no temporary file


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes read-only folders")
def test_a_read_only_cache_directory_still_compiles(cache):
    folder, entry = primed(cache)
    entry.unlink()
    os.chmod(folder, 0o500)
    try:
        expect_recompiled(cache, "<one>")
        expect_recompiled(cache, "<two>")
    finally:
        os.chmod(folder, 0o700)
    assert entries(folder) == []


def test_concurrent_writers_of_one_source(cache):
    folder, calls = cache
    src = source(marker=3)
    barrier = threading.Barrier(6)
    results, errors = [], []

    def worker(k):
        try:
            barrier.wait()
            results.append(run(compile_source(src, f"<thread-{k}>"), 4))
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and results == [expected(4, marker=3)] * 6
    only_entry(folder)  # one entry, no temporary file left by any writer
    before = len(calls)
    compile_source(src, "<after>")
    assert len(calls) == before


class _Mlp(nn.Module):
    """x: (b, 8) -> (b, 4) through ten layers (a forward over the cache's minimum size)."""

    def __init__(self) -> None:
        super().__init__()
        rng = np.random.default_rng(0)
        for k in range(9):
            setattr(self, f"l{k}", nn.Linear(8, 8, rng=rng))
        self.out = nn.Linear(8, 4, rng=rng)

    def forward(self, x):
        for k in range(9):
            x = nn.functional.gelu(getattr(self, f"l{k}")(x)) + x
        return self.out(x)


def test_loading_an_archive_twice_hits_the_cache(cache, tmp_path, monkeypatch):
    folder, calls = cache
    model = _Mlp().eval()
    ep = tpe.export(model, np.ones((3, 8), np.float32), dynamic_shapes={"x": {0: tpe.Dim("b", min=2, max=64)}})
    path = tmp_path / "mlp.pt2"
    tpe.save(ep, path)
    # a fresh cache, as in another process on another machine: the first load compiles
    monkeypatch.setenv("TPE_CODE_CACHE", str(tmp_path / "fresh"))
    del calls[:]
    first = tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]
    out_first = {}
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((n, 8)).astype(np.float32) for n in (2, 5, 17)]
    for k, x in enumerate(xs):
        out_first[k] = first.module()(x)
    compiled_by_first = len(calls)
    assert compiled_by_first >= 1 and len(entries(tmp_path / "fresh")) >= 1
    second = tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]
    outs = [second.module()(x) for x in xs]
    assert len(calls) == compiled_by_first  # the second load (and its module view) compiled nothing
    assert min(len(first.graph_module.code), len(first.module().code)) >= codecache.MIN_SOURCE_CHARS
    for k, x in enumerate(xs):
        want = model(x)
        np.testing.assert_allclose(out_first[k], want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(outs[k], out_first[k])
    # a check that fails in the generated code of a hit names its generated line
    with pytest.raises(tpe.ConstraintsExceededError) as info:
        second.module()(np.ones((65, 8), np.float32))
    generated = [f for f in traceback.extract_tb(info.value.__traceback__) if f.filename.startswith("<tpe-graph-")]
    assert generated and all(f.line for f in generated)


_CHILD = """
import sys
from tensorplay_export.graph.codecache import compile_source
namespace = {}
exec(compile_source(sys.argv[1], "<child>"), namespace)
print(namespace["forward"](2))
"""


def test_an_entry_written_by_another_process_is_a_hit_at_the_same_optimization_level(cache):
    import subprocess
    import sys

    folder, calls = cache
    src = source(marker=5)
    root = str(Path(codecache.__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root, "TPE_CODE_CACHE": str(folder)}
    child = subprocess.run([sys.executable, "-c", _CHILD, src], env=env, capture_output=True, text=True,
                           timeout=300, check=True)
    assert int(child.stdout) == expected(2, marker=5)
    entry = only_entry(folder)
    code = compile_source(src, "<parent>")
    assert calls == [] and run(code, 2) == expected(2, marker=5)
    # python -O compiles differently (asserts dropped): its own entry
    subprocess.run([sys.executable, "-O", "-c", _CHILD, src], env=env, check=True, timeout=300,
                   capture_output=True)
    assert len(entries(folder)) == 2 and entry.name in entries(folder)
