"""Our export() against torch.export.export(strict=False), side by side in one run (issue 9).

Run:  python benchmarks/compare_torch_export.py [--gpt 12,24] [--mlp 128] [--runs 5]
                                                [--runtime-runs 5] [--quick]

Needs torch 2.13 for the torch columns (``pip install torch==2.13.0``, the CPU build);
without torch they print "n/a". Prints one table, one row per model:

- nodes / guards / solver queries / z3 calls of our export (see bench_export.py);
- our export seconds and torch.export seconds: warm medians (second and later exports in
  this process), the two exports interleaved round by round;
- ratio = torch seconds / our seconds (how many times faster we are);

then the run time of the programs: our ``module()`` against the eager numpy model, and
torch's exported module against torch eager, also interleaved (GPT batch 8 seq 128,
MLP batch 8). Same architecture on both sides (``benchmarks/_torch_models.py``, with our
weights copied in), same dynamic dims: GPT batch 2..64 and seq 2..512 with 512 learned
positions, example (2, 16); MLP width 64, batch 2..64, example batch 2.

Capture runs numpy on the example values, torch traces with fake tensors: our export
costs roughly one or two eager forwards of the example on top of the bookkeeping, so
the comparison holds for small examples like these.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

EXPORT_HEADERS = ["model", "layers", "nodes", "torch nodes", "guards", "solver queries", "z3 calls",
                  "ours s", "torch.export s", "ratio (torch/ours)"]
RUN_HEADERS = ["model", "layers", "input", "eager numpy ms", "module() ms", "ratio", "torch eager ms",
               "torch module ms", "torch ratio"]
RUNTIME_BATCH, RUNTIME_SEQ = 8, 128


class Case:
    """One model on both sides: our model/spec/example, and (with torch) its torch twin."""

    def __init__(self, family: str, layers: int, quick: bool = False) -> None:
        self.family, self.layers = family, layers
        small = {"d_model": 32, "n_head": 2} if quick else {}
        if family == "gpt":
            self.model = C.build_gpt(layers, **small)
            self.args = (C.gpt_ids(*C.GPT_EXAMPLE),)
            self.spec = C.gpt_spec()
            batch, seq = (2, 16) if quick else (RUNTIME_BATCH, RUNTIME_SEQ)
            self.run_args = (C.gpt_ids(batch, seq, seed=1),)
            self.run_input = f"({batch}, {seq})"
        else:
            self.model = C.build_mlp(layers)
            self.args = (C.mlp_input(C.MLP_EXAMPLE_BATCH),)
            self.spec = C.mlp_spec()
            self.run_args = (C.mlp_input(RUNTIME_BATCH, seed=1),)
            self.run_input = f"({RUNTIME_BATCH}, {C.MLP_WIDTH})"
        self.torch_model = None
        if C.have_torch():
            from benchmarks import _torch_models as T

            twin = T.torch_gpt(layers, **small, n_positions=C.GPT_POSITIONS) if family == "gpt" \
                else T.torch_mlp(layers, C.MLP_WIDTH)
            self.torch_model = T.load_numpy_state(twin, self.model.state_dict())

    # -- ours -------------------------------------------------------------------
    def export(self) -> Any:
        import tensorplay_export as tpe

        return tpe.export(self.model, *self.args, dynamic_shapes=self.spec)

    # -- torch ------------------------------------------------------------------
    def torch_export(self) -> Any:
        import torch
        from torch.export import Dim

        if self.family == "gpt":
            spec = ({0: Dim("batch", min=C.GPT_BATCH[0], max=C.GPT_BATCH[1]),
                     1: Dim("seq", min=C.GPT_SEQ[0], max=C.GPT_SEQ[1])},)
        else:
            spec = ({0: Dim("batch", min=C.MLP_BATCH[0], max=C.MLP_BATCH[1])},)
        args = tuple(torch.from_numpy(a) for a in self.args)
        return torch.export.export(self.torch_model, args, dynamic_shapes=spec, strict=False)


def export_row(case: Case, runs: int) -> tuple[list, Any, Any]:
    """(table row, our program, torch program or None)."""
    fns = {"ours": case.export}
    if case.torch_model is not None:
        fns["torch"] = case.torch_export
    times = C.interleaved(fns, runs, warmup=1)
    ours_s = C.median(times["ours"])
    torch_s = C.median(times["torch"]) if "torch" in times else None
    ep = case.export()
    tep = case.torch_export() if case.torch_model is not None else None
    stats = C.export_stats(case.model, case.args, case.spec)
    row = [case.family, case.layers, stats["nodes"], len(tep.graph.nodes) if tep is not None else None,
           stats["guards"], stats["solver_queries"], stats["z3_calls"], ours_s, torch_s,
           torch_s / ours_s if torch_s is not None else None]
    return row, ep, tep


def runtime_row(case: Case, ep: Any, tep: Any, runs: int) -> list:
    """Eager vs exported module, ours and torch's, interleaved; milliseconds per call."""
    module = ep.module()
    model, args = case.model, case.run_args
    fns = {"eager": lambda: model(*args), "module": lambda: module(*args)}
    if tep is not None:
        import torch

        targs = tuple(torch.from_numpy(a) for a in args)
        tmodule, tmodel = tep.module(), case.torch_model

        def torch_eager():
            with torch.no_grad():
                return tmodel(*targs)

        def torch_module():
            with torch.no_grad():
                return tmodule(*targs)

        fns.update(torch_eager=torch_eager, torch_module=torch_module)
    times = {k: C.median(v) * 1e3 for k, v in C.interleaved(fns, runs, warmup=1).items()}
    te, tm = times.get("torch_eager"), times.get("torch_module")
    return [case.family, case.layers, case.run_input, times["eager"], times["module"],
            times["module"] / times["eager"], te, tm, tm / te if te else None]


def _ints(text: str) -> list[int]:
    return [int(t) for t in text.split(",") if t.strip()]


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpt", default="12,24", help="GPT layer counts (d_model 128, 4 heads)")
    parser.add_argument("--mlp", default="128", help="MLP layer counts (width 64)")
    parser.add_argument("--runs", type=int, default=5, help="warm exports per side (median)")
    parser.add_argument("--runtime-runs", type=int, default=5, help="calls per side for the run-time rows")
    parser.add_argument("--quick", action="store_true", help="1-layer d32 GPT and 2-layer MLP, 2 runs")
    args = parser.parse_args(argv)
    torch_ok = C.have_torch()  # before the header, so it reports torch's thread count
    C.print_header("export: ours vs torch.export.export(strict=False)", "compare_torch_export", argv)
    if not torch_ok:
        print("torch: not installed (pip install torch==2.13.0); torch columns are n/a")
    if args.quick:
        cases = [Case("gpt", 1, quick=True), Case("mlp", 2)]
        runs = runtime_runs = 2
    else:
        cases = [Case("gpt", n) for n in _ints(args.gpt)] + [Case("mlp", n) for n in _ints(args.mlp)]
        runs, runtime_runs = args.runs, args.runtime_runs
    export_rows, run_rows = [], []
    for case in cases:
        row, ep, tep = export_row(case, runs)
        export_rows.append(row)
        run_rows.append(runtime_row(case, ep, tep, runtime_runs))
    print(C.table(EXPORT_HEADERS, export_rows))
    print(f"export seconds: warm medians of {runs} interleaved runs; ratio > 1: ours is faster.")
    print()
    print(C.table(RUN_HEADERS, run_rows))
    print(f"run time: medians of {runtime_runs} interleaved calls; ratio = exported module / eager "
          f"(1.0 = no overhead).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
