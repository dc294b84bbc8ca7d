"""Atomic save leaves nothing behind: the writer's pid names its temporary, a later save of the
same target sweeps temporaries whose writer is gone (SIGKILL), SIGTERM removes the temporary
where the default handler is in place (never replacing an application's handler), and the
folder is fsynced after the rename.

Process tests run a child that stops mid-save; every wait has a hang ceiling.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tensorplay_export.serde import zipio
from tensorplay_export.serde.zipio import write_atomic, write_zip

ROOT = Path(__file__).resolve().parents[2]
CEILING_S = 60.0
MEMBERS = {"a.txt": b"new archive"}
posix_only = pytest.mark.skipif(os.name != "posix", reason="signals and pids as on POSIX")


def temporaries(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".tpe-"))


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(CEILING_S)
    return child.pid


def test_temporary_is_named_by_the_writers_pid(tmp_path):
    seen = []

    def write(fh):
        seen.extend(temporaries(tmp_path))
        write_zip(fh, MEMBERS)
    write_atomic(tmp_path / "a.zip", write)
    assert len(seen) == 1
    assert re.fullmatch(rf"\.tpe-a\.zip\.{os.getpid()}-[0-9a-f]{{8}}\.[a-z0-9_]+\.tmp", seen[0]), seen
    assert temporaries(tmp_path) == []


@posix_only
def test_stale_temporaries_of_the_same_target_are_swept(tmp_path):
    tag = zipio._host_tag()
    gone, alive = dead_pid(), os.getppid()
    stale = tmp_path / f".tpe-a.zip.{gone}-{tag}.abc123.tmp"
    live = tmp_path / f".tpe-a.zip.{alive}-{tag}.def456.tmp"
    mine = tmp_path / f".tpe-a.zip.{os.getpid()}-{tag}.ghi789.tmp"  # another thread of ours may be writing
    other_target = tmp_path / f".tpe-b.zip.{gone}-{tag}.jkl012.tmp"
    other_host = tmp_path / f".tpe-a.zip.{gone}-{'0' * 8 if tag != '0' * 8 else '1' * 8}.mno345.tmp"
    longer_name = tmp_path / f".tpe-a.zip.1.{gone}-{tag}.pqr678.tmp"  # a temporary of target 'a.zip.1'
    for p in (stale, live, mine, other_target, other_host, longer_name):
        p.write_bytes(b"x" * 1000)
    write_atomic(tmp_path / "a.zip", lambda fh: write_zip(fh, MEMBERS))
    left = set(temporaries(tmp_path))
    assert stale.name not in left
    assert left == {live.name, mine.name, other_target.name, other_host.name, longer_name.name}


CHILD = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {root!r})
    from tensorplay_export.serde.zipio import write_atomic
    target, marker, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "app-handler":
        signal.signal(signal.SIGTERM, lambda *a: open(marker + ".app", "w").close() or sys.exit(3))
    def write(fh):
        fh.write(b"partial" * 1000)
        fh.flush()
        open(marker, "w").close()
        time.sleep(120)
    write_atomic(target, write)
""")


def start_child(tmp_path: Path, mode: str = "plain"):
    target = tmp_path / "out" / "model.pt2"
    target.parent.mkdir()
    target.write_bytes(b"old archive")
    marker = tmp_path / "writing"
    script = tmp_path / "child.py"
    script.write_text(CHILD.format(root=str(ROOT)))
    child = subprocess.Popen([sys.executable, str(script), str(target), str(marker), mode])
    t0 = time.monotonic()
    while not marker.exists():
        assert child.poll() is None, "the child died before it started writing"
        assert time.monotonic() - t0 < CEILING_S, "the child never started writing"
        time.sleep(0.02)
    return child, target


@posix_only
def test_sigkill_mid_save_then_next_save_sweeps(tmp_path):
    child, target = start_child(tmp_path)
    assert len(temporaries(target.parent)) == 1
    child.kill()
    child.wait(CEILING_S)
    assert target.read_bytes() == b"old archive"
    assert len(temporaries(target.parent)) == 1  # SIGKILL cannot be handled ...
    write_atomic(target, lambda fh: write_zip(fh, MEMBERS))  # ... the next save of the target sweeps it
    assert temporaries(target.parent) == []


@posix_only
def test_sigterm_mid_save_removes_the_temporary(tmp_path):
    child, target = start_child(tmp_path)
    child.terminate()
    assert child.wait(CEILING_S) == -signal.SIGTERM  # still dies of SIGTERM, as without the save
    assert target.read_bytes() == b"old archive"
    assert temporaries(target.parent) == []


@posix_only
def test_sigterm_goes_to_the_applications_own_handler(tmp_path):
    child, target = start_child(tmp_path, "app-handler")
    child.terminate()
    assert child.wait(CEILING_S) == 3  # the application's handler ran (and its SystemExit cleaned up)
    assert (tmp_path / "writing.app").exists()
    assert target.read_bytes() == b"old archive"
    assert temporaries(target.parent) == []


def test_handler_untouched_off_the_main_thread_and_restored_after(tmp_path):
    seen = {}

    def write(fh):
        seen[threading.current_thread().name] = signal.getsignal(signal.SIGTERM)
        write_zip(fh, MEMBERS)
    before = signal.getsignal(signal.SIGTERM)
    t = threading.Thread(target=write_atomic, args=(tmp_path / "t.zip", write), name="saver")
    t.start()
    t.join(CEILING_S)
    assert seen["saver"] is before
    write_atomic(tmp_path / "m.zip", write)
    if before is signal.SIG_DFL and os.name == "posix":
        assert seen["MainThread"] is not signal.SIG_DFL  # the cleanup handler, during the save only
    assert signal.getsignal(signal.SIGTERM) is before


@posix_only
def test_folder_fsynced_after_the_rename(tmp_path, monkeypatch):
    import stat

    log = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (log.append(("fsync", stat.S_ISDIR(os.fstat(fd).st_mode))),
                                                 real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (log.append(("replace", None)), real_replace(a, b))[1])
    write_atomic(tmp_path / "a.zip", lambda fh: write_zip(fh, MEMBERS))
    assert log == [("fsync", False), ("replace", None), ("fsync", True)]


def test_save_into_a_missing_folder_or_over_a_folder_names_the_target(tmp_path):
    import errno

    import numpy as np

    import tensorplay_export as tpe

    ep = tpe.export(lambda x: x + 1, np.ones(3))
    target = tmp_path / "no" / "such" / "a.pt2"
    with pytest.raises(FileNotFoundError) as err:
        tpe.save(ep, target)
    assert err.value.filename == str(target) and err.value.errno == errno.ENOENT
    assert "does not exist" in str(err.value)
    with pytest.raises(IsADirectoryError) as err:
        tpe.save(ep, tmp_path)
    assert err.value.filename == str(tmp_path)
    assert list(tmp_path.iterdir()) == []  # no temporary left behind
