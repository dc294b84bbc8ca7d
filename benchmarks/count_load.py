"""Repeat one archive load N times, for instruction counts (issue 19 goal 3).

Run under valgrind, once with N and once with 0; the difference divided by N is the
instructions of one warm load (no timer, so a loaded machine gives the same figure)::

    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \\
        python benchmarks/count_load.py ARCHIVE 10          # and again with 0

``ARCHIVE`` is a ``.pt2`` written by ``tpe.save``; it is loaded with
``load_pt2(..., load_weights_from_disk=True)``, two untimed loads first (imports, the
compiled-code cache).  With ``--jax BLOB NPY_DIR`` the same count is made for
``jax.export.deserialize`` of a serialized ``Exported`` plus ``np.load`` of every ``.npy``
in ``NPY_DIR`` (jax is not a dependency; see bench_archive.py for a side venv).  Set
``PYTHONHASHSEED=0`` for counts that repeat exactly.
"""
from __future__ import annotations

import argparse
import glob
import os


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("archive", help="a .pt2 archive (ignored with --jax)")
    parser.add_argument("n", type=int, help="loads after the two warm-up loads")
    parser.add_argument("--jax", nargs=2, metavar=("BLOB", "NPY_DIR"), help="count jax's load instead")
    args = parser.parse_args()
    if args.jax:
        import jax
        import numpy as np

        blob, folder = args.jax
        files = sorted(glob.glob(os.path.join(folder, "*.npy")))

        def load() -> object:
            with open(blob, "rb") as fh:
                return jax.export.deserialize(bytearray(fh.read())), [np.load(f) for f in files]
    else:
        import tensorplay_export as tpe

        def load() -> object:
            return tpe.load_pt2(args.archive, load_weights_from_disk=True)
    for _ in range(2 + args.n):
        load()


if __name__ == "__main__":
    main()
