"""Export time of a model with many ``Dim.AUTO`` relations (issue 13, "The mechanism").

Run:  python benchmarks/bench_auto_relations.py [--runs 7] [--inputs 30] [--profile] [--quick]

The model (the concrete reading of the issue's description):

- ``--inputs`` (30) float32 inputs passed as one list ``xs``; input ``i`` has stride
  ``a = 1 + i % 4`` and offset ``c = (i // 4) % 4``, so the 16 pairs of ``a in 1..4``,
  ``c in 0..3`` are cycled (30 inputs cover every pair at least once);
- input ``i`` has shape ``(batch, a*s + c, 16)`` with ``batch = 2`` (static), ``s = 8``
  in the example, and ``Dim.AUTO`` on axis 1 (nothing else is dynamic);
- ``forward``: each input is sliced ``x[:, c::a]`` (length ``s`` at the example) and the
  slices are summed elementwise in input order, then reduced with ``.sum()``.

Every ``+`` broadcasts axis 1 of the running sum against the next slice, so each input adds
an equality between AUTO sizes (``s0 == floor((s1 + 1)/2)``, ...); the linear ones become
AUTO replacements.  The figures printed are the warm median of ``export`` (the first call in
the process is discarded), and the same with ``solver.canon``'s cache of canonical forms
cleared before each call (what an export that shares no guard with an earlier one costs).  ``--profile`` adds cProfile top-10s of one warm export
(cumulative, restricted to shape_env / solver / sympy, and by own time).  No timing is asserted anywhere.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

import numpy as np  # noqa: E402

BATCH = 2
EXAMPLE_S = 8
WIDTH = 16


def strides(n: int) -> list[tuple[int, int]]:
    """(a, c) of input i: a = 1 + i % 4, c = (i // 4) % 4."""
    return [(1 + i % 4, (i // 4) % 4) for i in range(n)]


def build(n: int = 30, s: int = EXAMPLE_S) -> tuple[Any, tuple, dict]:
    """(model, example args, dynamic_shapes) of the benchmark with ``n`` inputs."""
    from tensorplay_export import Dim

    pairs = strides(n)

    def model(xs):
        out = None
        for x, (a, c) in zip(xs, pairs):
            y = x[:, c::a]
            out = y if out is None else out + y
        return out.sum()

    args = (example_inputs(n, s),)
    spec = {"xs": [{1: Dim.AUTO} for _ in pairs]}
    return model, args, spec


def example_inputs(n: int, s: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((BATCH, a * s + c, WIDTH)).astype(np.float32) for a, c in strides(n)]


def main(argv: Any = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--inputs", type=int, default=30)
    p.add_argument("--profile", action="store_true", help="print a cProfile top-10 of one warm export")
    p.add_argument("--quick", action="store_true", help="8 inputs, 2 runs (smoke test)")
    a = p.parse_args(argv)
    if a.quick:
        a.inputs, a.runs = 8, 2
    import tensorplay_export as tpe
    from solver.canon import clear_cache

    model, args, spec = build(a.inputs)
    run = lambda: tpe.export(model, *args, dynamic_shapes=spec)  # noqa: E731

    def fresh():  # as a process's first export of this model: no canonical form cached from a previous one
        clear_cache()
        return run()

    times = C.interleaved({"export": run, "fresh": fresh}, runs=a.runs, warmup=1)
    times, fresh_times = times["export"], times["fresh"]
    ep = run()
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    print(f"command: python benchmarks/bench_auto_relations.py {argv_text}".rstrip())
    print(C.machine_line())
    stats = C.export_stats(model, args, spec)
    print(f"inputs: {a.inputs}  runs: {a.runs}  symbols in range_constraints: {len(ep.range_constraints)}")
    print(f"stats: {stats}")
    print(f"export s (warm median): {C.median(times):.3f}  (min {min(times):.3f}, max {max(times):.3f})")
    print(f"export s (warm median, canonical-form cache cleared before each): {C.median(fresh_times):.3f}  "
          f"(min {min(fresh_times):.3f}, max {max(fresh_times):.3f})")
    if a.profile:
        prof = cProfile.Profile()
        prof.enable()
        run()
        prof.disable()
        out = io.StringIO()
        st = pstats.Stats(prof, stream=out)
        out.write("cProfile top-10 by cumulative time, under the capture (shape_env, solver, sympy):\n")
        st.sort_stats("cumulative").print_stats(r"shape_env|solver|sympy", 10)
        out.write("cProfile top-10 by own time:\n")
        st.sort_stats("tottime").print_stats(10)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
