"""Fix-search benchmark (issue 13): suggest_fixes on the issue's guards, and a violation
export whose one axis is reshaped 40 ways.

Run:  python benchmarks/bench_fix_search.py [--repeat 5] [--quick]

Rows:
- one per issue-13 guard set: the median wall time of ``suggest_fixes`` and the
  z3 checks it made (every ShapeSolver query that reached z3), with the lines;
- ``export, 40 reshapes``: ``tensorplay_export.export`` of a model that reshapes a
  ``Dim('n', max=100000)`` axis (example 5040) into rows of the first 40 divisors
  of 5040, up to the ConstraintViolationError, and the share of it spent in
  ``suggest_fixes``.

The search checks candidate ranges at plain integers before z3 (``solver.numeric``);
the z3 column shows what is left for z3. Timings are wall-clock medians of warm
runs (the first run of each row is discarded); nothing here is asserted.
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import sympy  # noqa: E402

import solver  # noqa: E402
import solver.decide as decide  # noqa: E402

P = dict(integer=True, positive=True)


def cases() -> list:
    """(name, guards, dims, hints, relations) for the issue's numbered items."""
    dx, dy, dz, h, w, n = sympy.symbols("dx dy dz h w n", **P)
    f, Min, Max, Mod, Eq = sympy.floor, sympy.Min, sympy.Max, sympy.Mod, sympy.Eq
    un = (1, None)
    pyramid = [Eq(Mod(h, 2), 0), Eq(Mod(w, 2), 0),
               Eq(f(h / 2) * f(w / 2), 4 * f(f(h / 2) / 2) * f(f(w / 2) / 2)),
               Eq(f(f(h / 2) / 2) * f(f(w / 2) / 2), 4 * f(f(f(h / 2) / 2) / 2) * f(f(f(w / 2) / 2) / 2))]
    rows40 = [d for d in range(2, 5041) if 5040 % d == 0][:40]
    return [
        ("1 x + y[2:]", [Eq(dx, Max(0, dy - Min(2, dy)))], {"dx": un, "dy": un}, {"dx": 5, "dy": 7}, "increasing"),
        ("2 x[:3] + y", [Eq(Min(3, dx), dy)], {"dx": un, "dy": un}, {"dx": 5, "dy": 3}, "increasing"),
        ("3 pooling pyramid", pyramid, {"h": (1, 256), "w": (1, 256)}, {"h": 16, "w": 24}, "increasing"),
        ("5 rows of 56, 45, 8", [Eq(Mod(n, 56), 0), Eq(Mod(n, 45), 0), Eq(Mod(n, 8), 0)],
         {"n": (1, 100000)}, {"n": 5040}, "increasing"),
        ("5 rows of 40 sizes", [Eq(Mod(n, k), 0) for k in rows40], {"n": (1, 100000)}, {"n": 5040}, "increasing"),
        ("6 h*w == 16", [Eq(h * w, 16)], {"h": (1, 64), "w": (1, 64)}, {"h": 4, "w": 4}, "increasing"),
        ("7 dx + dy == 32", [Eq(dx + dy, 32)], {"dx": un, "dy": un}, {"dx": 10, "dy": 22}, "affine"),
        ("8 dx + dy == dz", [Eq(dx + dy, dz)], {"dx": un, "dy": un, "dz": un}, {"dx": 3, "dy": 4, "dz": 7},
         "linear"),
    ]


class _Z3Counter:
    """Counts ShapeSolver queries that reached z3 while active."""

    def __enter__(self):
        self.calls = 0
        self._real = decide.ShapeSolver._check
        counter = self

        def check(s, z):
            counter.calls += 1
            return counter._real(s, z)
        decide.ShapeSolver._check = check
        return self

    def __exit__(self, *exc):
        decide.ShapeSolver._check = self._real


def _suggest(guards, dims, hints, relations):
    kwargs = {}
    if "relations" in inspect.signature(solver.suggest_fixes).parameters:
        kwargs["relations"] = relations  # older solvers have no relation forms beyond k >= 1
    return solver.suggest_fixes(guards, dims, hints, **kwargs)


def bench_cases(repeat: int) -> list:
    rows = []
    for name, guards, dims, hints, relations in cases():
        times = []
        for i in range(repeat + 1):
            with _Z3Counter() as z:
                t0 = time.perf_counter()
                fs = _suggest(guards, dims, hints, relations)
                dt = time.perf_counter() - t0
            if i:
                times.append(dt)
        rows.append((name, statistics.median(times), z.calls, fs.lines))
    return rows


def reshape40_model():
    rows = [d for d in range(2, 5041) if 5040 % d == 0][:40]

    def model(x):
        out = 0.0
        for k in rows:
            out = out + x.reshape(-1, k).sum()
        return out
    return model


def bench_export(repeat: int) -> tuple:
    import tensorplay_export as tpe
    from tensorplay_export import Dim

    model, x = reshape40_model(), np.zeros(5040, np.float32)
    spec = {"x": {0: Dim("n", max=100000)}}
    real = solver.suggest_fixes
    spent = [0.0]

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - t0
    solver.suggest_fixes = timed
    totals, shares, fixes = [], [], []
    try:
        for i in range(repeat + 1):
            spent[0] = 0.0
            t0 = time.perf_counter()
            try:
                tpe.export(model, x, dynamic_shapes=spec)
            except tpe.ConstraintViolationError as err:
                fixes = list(err.fixes)
            dt = time.perf_counter() - t0
            if i:
                totals.append(dt)
                shares.append(spent[0])
    finally:
        solver.suggest_fixes = real
    return statistics.median(totals), statistics.median(shares), fixes


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="warm runs per row (median)")
    ap.add_argument("--quick", action="store_true", help="one warm run per row")
    args = ap.parse_args(argv)
    repeat = 1 if args.quick else max(1, args.repeat)
    print(f"fix-search benchmark, {repeat} warm run(s) per row, solver from {Path(solver.__file__).parent}")
    head = f"| {'case':<22} | {'ms':>8} | {'z3 checks':>9} | fix lines"
    print(head)
    print("|" + "-" * 24 + "|" + "-" * 10 + "|" + "-" * 11 + "|" + "-" * 40)
    for name, dt, calls, lines in bench_cases(repeat):
        print(f"| {name:<22} | {dt * 1000:>8.1f} | {calls:>9} | {'; '.join(lines) or '(none)'}")
    total, share, fixes = bench_export(repeat)
    print(f"| {'export, 40 reshapes':<22} | {total * 1000:>8.1f} | {'':>9} | suggest_fixes {share * 1000:.1f} ms "
          f"({share / total:.0%} of the export): {'; '.join(fixes)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
