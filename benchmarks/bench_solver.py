"""Solver benchmark: guards of the kinds a 24-layer transformer trace produces.

Run:  python benchmarks/bench_solver.py [--guards 10000] [--seed 0] [--baseline 1000]

guards/s is wall-clock; "per cpu s" divides by this process's CPU time, which
stays comparable when other jobs share the machine.

Each layer of the synthetic trace emits the guards its ops would: reshape
numel equalities (products of dims), slices of a position table
(``Eq(seq, Min(L, seq))``), size branches (``seq > 4``, ``Ne(seq, L)``),
broadcasting disjunctions between the query length and a key/value length,
pooling / head-split divisibility (``Mod``, ``floor``), and Max/Min tautologies
from ceil-div padding. Constants vary by layer and op the way model configs do,
so guards repeat across layers as in a real trace.

Rows:
- cold: a fresh ShapeSolver (empty cache) decides every guard once;
- warm: the same solver decides the same guards again (cache populated);
- z3 only: a subsample sent straight to z3 (no canonical form, intervals or
  cache), as the baseline the fast path is measured against.
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import sympy
import z3

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from solver import ShapeSolver, Translator, suggest_fixes  # noqa: E402

HEAD_DIMS = [64, 80, 96, 128]
TABLE_LENS = [512, 1024, 2048]
DIVISORS = [2, 4, 8, 16]


def transformer_guards(n: int, seed: int, sym: dict, distinct: bool = False) -> list:
    """``n`` guards from repeated 24-layer traces (deterministic for a seed).

    ``distinct=True`` draws the constants from wide ranges, so nearly every
    guard is new and the cache cannot help (the per-guard cost of the fast path).
    """
    rng = random.Random(seed)
    b, s, kv = sym["batch"], sym["seq"], sym["kv"]
    out: list = []
    layer = 0
    while len(out) < n:
        if distinct:
            d, heads = rng.randint(8, 256), rng.randint(1, 64)
            L, k, pad = rng.randint(64, 4096), rng.randint(2, 64), rng.randint(2, 128)
        else:
            d = rng.choice(HEAD_DIMS)
            heads = rng.choice([4, 8, 12, 16])
            L = rng.choice(TABLE_LENS)
            k = rng.choice(DIVISORS)
            pad = rng.choice([32, 64])
        per_layer = [
            # reshape (b, s, H*d) -> (b, s, H, d): numel equality of products
            sympy.Eq(b * s * heads * d, b * s * heads * d),
            sympy.Eq(3 * b * s * d, 6 * b * d * sympy.floor(s / 2)),
            sympy.Eq(b * s * heads, heads * b * sympy.Min(s, 4096)),
            # position table slice and its readable form
            sympy.Eq(s, sympy.Min(L, s)),
            s <= L,
            # branches on sizes
            s > 4,
            sympy.Ne(s, L),
            b <= 64,
            # broadcasting q-len against kv-len (attention mask add)
            sympy.Or(sympy.Eq(s, kv), sympy.Eq(s, 1), sympy.Eq(kv, 1)),
            sympy.Or(sympy.Eq(b, 1), sympy.Eq(b, b)),
            # divisibility: pooling, head split of a dynamic width
            sympy.Eq(sympy.Mod(s, k), 0),
            sympy.Eq(sympy.Mod(b * s * d, k), 0),
            # ceil-div padding tautology and a Max that the ranges decide
            sympy.Eq(sympy.Max(1, pad * sympy.floor((s + pad - 1) / pad)), pad * sympy.floor((s + pad - 1) / pad)),
            sympy.Eq(sympy.Min(128 * s, 512 * s), 128 * s),
            kv + s <= 2 * L,
        ]
        for g in per_layer:
            if g is sympy.true:
                continue  # sympy decided it at construction; capture never sends it
            out.append(g)
        layer += 1
    return out[:n]


def run(solver: ShapeSolver, guards: list) -> dict:
    before = dict(solver.stats)
    t0, c0 = time.perf_counter(), time.process_time()
    counts = {"proved": 0, "refuted": 0, "unknown": 0}
    for g in guards:
        counts[solver.implies(g).status] += 1
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    after = solver.stats
    q = after["queries"] - before["queries"]
    return dict(seconds=dt, cpu=cpu, rate=len(guards) / dt, cpu_rate=len(guards) / cpu,
                reached_z3=(after["reached_z3"] - before["reached_z3"]) / q,
                z3_calls=after["z3_calls"] - before["z3_calls"], **counts)


def baseline_z3_only(guards: list, ranges: dict, timeout_ms: int) -> dict:
    """Every guard straight to a fresh z3 solver (ranges asserted), no fast path."""
    tr = Translator()
    t0, c0 = time.perf_counter(), time.process_time()
    for g in guards:
        sol = z3.Solver()
        sol.set("timeout", timeout_ms)
        for name, (lo, hi) in ranges.items():
            v = tr.var(name)
            sol.add(v >= lo)
            if hi is not None:
                sol.add(v <= hi)
        sol.add(z3.Not(tr(g)))
        sol.check()
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    return dict(seconds=dt, cpu=cpu, rate=len(guards) / dt, cpu_rate=len(guards) / cpu, reached_z3=1.0,
                z3_calls=len(guards))


def fix_cases() -> list:
    """The fixable right values of issue 2: (guards, dims, hints)."""
    P = dict(integer=True, positive=True)
    s, dx, dy, b, n = sympy.symbols("s dx dy b n", **P)
    d100 = {"dx": (1, 100), "dy": (1, 100)}
    return [
        ([s <= 512, sympy.Ne(s, 512)], {"s": (1, None)}, {"s": 7}),
        ([sympy.Or(sympy.Eq(dx, dy), sympy.Eq(dx, 1), sympy.Eq(dy, 1))], d100, {"dx": 8, "dy": 8}),
        ([sympy.Eq(dx - 1, dy)], d100, {"dx": 9, "dy": 8}),
        ([sympy.Eq(2 * dx, dy)], d100, {"dx": 4, "dy": 8}),
        ([sympy.Eq(6 * b, 24)], {"b": (1, 64)}, {"b": 4}),
        ([sympy.Eq(sympy.Mod(n, 4), 0)], {"n": (1, 1000)}, {"n": 8}),
        ([sympy.Eq(sympy.Mod(s ** 2 + s, 8), 0), sympy.Ne(sympy.Mod(s + 1, 8), 0)], {"s": (1, 1024)}, {"s": 16}),
        ([dx * dy <= 4096], {"dx": (1, 1024), "dy": (1, 1024)}, {"dx": 32, "dy": 32}),
    ]


def bench_fixes() -> tuple:
    cases = fix_cases()
    t0 = time.perf_counter()
    for guards, dims, hints in cases:
        suggest_fixes(guards, dims, hints)
    return len(cases), time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--guards", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline", type=int, default=1000, help="guards in the z3-only baseline (0 = skip)")
    ap.add_argument("--timeout-ms", type=int, default=200)
    args = ap.parse_args(argv)

    ranges = {"batch": (1, 64), "seq": (1, 1024), "kv": (1, 2048)}
    solver = ShapeSolver(args.timeout_ms)
    sym = {name: solver.declare(name, lo, hi) for name, (lo, hi) in ranges.items()}
    guards = transformer_guards(args.guards, args.seed, sym)
    distinct = len(set(guards))
    wide = transformer_guards(args.guards, args.seed, sym, distinct=True)

    rows = [("cold (fresh solver)", run(solver, guards)),
            ("warm (same guards again)", run(solver, guards))]
    fresh = ShapeSolver(args.timeout_ms)
    for name, (lo, hi) in ranges.items():
        fresh.declare(name, lo, hi)
    rows.append((f"cold, {len(set(wide))} distinct", run(fresh, wide)))
    rows.append(("warm, same distinct again", run(fresh, wide)))
    if args.baseline:
        rows.append((f"z3 only, {args.baseline} guards", baseline_z3_only(guards[:args.baseline], ranges,
                                                                          args.timeout_ms)))

    print(f"solver benchmark: {len(guards)} guards ({distinct} distinct), 24-layer transformer kinds, "
          f"seed {args.seed}, z3 {z3.get_version_string()}, sympy {sympy.__version__}, "
          f"timeout {args.timeout_ms} ms")
    head = (f"{'run':<28}{'wall s':>8}{'cpu s':>8}{'guards/s':>10}{'per cpu s':>11}"
            f"{'reached z3':>12}{'z3 calls':>10}")
    print(head)
    print("-" * len(head))
    for name, r in rows:
        print(f"{name:<28}{r['seconds']:>8.3f}{r['cpu']:>8.3f}{r['rate']:>10.0f}{r['cpu_rate']:>11.0f}"
              f"{r['reached_z3']:>11.2%}{r['z3_calls']:>10}")
    cold = rows[0][1]
    print(f"verdicts (cold): proved {cold['proved']}, refuted {cold['refuted']}, unknown {cold['unknown']}")
    k, dt = bench_fixes()
    print(f"suggest_fixes on issue 2's {k} fix right values: {dt * 1000:.0f} ms total, "
          f"{dt * 1000 / k:.1f} ms per verified fix set")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
