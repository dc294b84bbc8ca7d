"""Export time against the example's size (issue 19, goal 1): GPT-24 from (2, 16) to (32, 512).

Run:  python benchmarks/bench_example_size.py [--layers 24] [--runs 1] [--before /path/to/checkout]
                                              [--sizes 2x16,8x128,16x256,32x512] [--quick]
                                              [--draft-rounds N]

Exports the same GPT (batch 2..64, seq 2..512) from examples of growing size and prints
seconds per export and the ratio to the (2, 16) export.  Capture defers numpy's run on the
example (values are computed only when read) and the eager safety net runs on a small
example cut from the user's, so the ratio should stay near 1.

Then draft_export from (2, 16) (median of ``max(5, --runs)``; issue 19 goal 2).  ``--before DIR`` runs the same measurement in a subprocess on another checkout (for example
the main branch) in the same run, for a before/after table.  torch.export rows appear when
torch is installed (optional).  ``--draft-rounds N`` (with ``--before``) adds N rounds of
draft_export timings in fresh processes, the two checkouts interleaved (single-process medians
move by 10-20% between runs on a shared machine).  Each size: one warm-up export at (2, 16) in the process
first (imports, caches), then ``--runs`` exports at that size (median).  No timing is
asserted anywhere.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402

SIZES = "2x16,8x128,16x256,32x512"


def _sizes(text: str) -> list[tuple[int, int]]:
    return [tuple(int(v) for v in part.split("x")) for part in text.split(",")]  # type: ignore[misc]


def measure(layers: int, sizes: list, runs: int, d_model: int = 128, n_head: int = 4) -> dict:
    """``"BxS" -> median seconds`` of exports of GPT-``layers`` from a (B, S) example, in this process."""
    import tensorplay_export as tpe

    model, spec = C.build_gpt(layers, d_model=d_model, n_head=n_head), C.gpt_spec()
    tpe.export(model, C.gpt_ids(2, 16), dynamic_shapes=spec)  # warm-up: imports and caches
    out = {}
    for b, s in sizes:
        ids = C.gpt_ids(b, s)
        times = [C.timed(lambda: tpe.export(model, ids, dynamic_shapes=spec))[0] for _ in range(runs)]
        out[f"{b}x{s}"] = C.median(times)
    ids = C.gpt_ids(2, 16)
    out["draft 2x16"] = C.median([C.timed(lambda: tpe.draft_export(model, ids, dynamic_shapes=spec))[0]
                                  for _ in range(max(5, runs))])
    return out


def measure_draft(layers: int, runs: int, d_model: int = 128, n_head: int = 4) -> dict:
    """``{"draft 2x16": median seconds}`` of ``draft_export`` from (2, 16), in this process: one
    export and three drafts first (imports, caches, the allocator's high-water mark)."""
    import tensorplay_export as tpe

    model, spec, ids = C.build_gpt(layers, d_model=d_model, n_head=n_head), C.gpt_spec(), C.gpt_ids(2, 16)
    tpe.export(model, ids, dynamic_shapes=spec)
    for _ in range(3):
        tpe.draft_export(model, ids, dynamic_shapes=spec)
    return {"draft 2x16": C.median([C.timed(lambda: tpe.draft_export(model, ids, dynamic_shapes=spec))[0]
                                    for _ in range(max(5, runs))])}


def measure_torch(layers: int, sizes: list, runs: int, d_model: int = 128, n_head: int = 4) -> dict:
    """The same with torch.export (strict=False) on the torch twin of the model."""
    import torch
    from torch.export import Dim

    from benchmarks import _torch_models as T

    model = C.build_gpt(layers, d_model=d_model, n_head=n_head)
    twin = T.load_numpy_state(T.torch_gpt(layers, d_model=d_model, n_head=n_head, n_positions=C.GPT_POSITIONS),
                              model.state_dict())
    spec = ({0: Dim("batch", min=C.GPT_BATCH[0], max=C.GPT_BATCH[1]),
             1: Dim("seq", min=C.GPT_SEQ[0], max=C.GPT_SEQ[1])},)

    def export(ids):
        return torch.export.export(twin, (torch.from_numpy(ids),), dynamic_shapes=spec, strict=False)

    export(C.gpt_ids(2, 16))
    out = {}
    for b, s in sizes:
        ids = C.gpt_ids(b, s)
        out[f"{b}x{s}"] = C.median([C.timed(lambda: export(ids))[0] for _ in range(runs)])
    return out


def _before(checkout: str, argv: list) -> dict:
    """Run this script's measurement on ``checkout``'s package in a subprocess (imported first, so
    the script's own checkout only supplies the benchmark helpers and the GPT definition); also
    used for this checkout's own side of the draft rounds."""
    code = (f"import sys, runpy; sys.path.insert(0, {str(Path(checkout).resolve())!r}); import tensorplay_export; "
            f"runpy.run_path({str(Path(__file__).resolve())!r}, run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code, "--json", *argv], capture_output=True, text=True,
                          check=True)  # PYTHONPATH kept (site packages); the checkout goes first
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--sizes", default=SIZES, help="comma-separated BxS examples; the first is the baseline")
    ap.add_argument("--before", default=None, help="another checkout to measure in the same run (e.g. main)")
    ap.add_argument("--draft-rounds", type=int, default=0,
                    help="with --before: that many rounds of draft_export timings, each a fresh process per "
                         "checkout, the two interleaved (before first)")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--draft-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="2 small layers, sizes 2x16,4x32 (a smoke test)")
    args = ap.parse_args(argv)
    small = {"d_model": 32, "n_head": 2} if args.quick else {}
    if args.quick:
        args.layers, args.sizes = 2, "2x16,4x32"
    sizes = _sizes(args.sizes)
    if args.json:
        print(json.dumps(measure_draft(args.layers, args.runs, **small) if args.draft_only
                         else measure(args.layers, sizes, args.runs, **small)))
        return 0
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    before = None
    if args.before:
        rest, skip = [], False
        for a in passed:
            if skip:
                skip = False
                continue
            if a == "--before":
                skip = True
                continue
            if not a.startswith("--before="):
                rest.append(a)
        before = _before(args.before, rest)
    after = measure(args.layers, sizes, args.runs, **small)
    torch_s = measure_torch(args.layers, sizes, args.runs, **small) if C.have_torch() else None
    base = f"{sizes[0][0]}x{sizes[0][1]}"
    C.print_header(f"export time against the example's size, GPT-{args.layers}", "bench_example_size", argv)
    headers = ["example", "ours s", f"ratio to {base}"]
    if before is not None:
        headers += ["before s", f"before ratio to {base}"]
    if torch_s is not None:
        headers += ["torch.export s", "torch/ours"]
    rows = []
    for key in [k for k in after if not k.startswith("draft")]:
        row = [f"({key.replace('x', ', ')})", after[key], after[key] / after[base]]
        if before is not None:
            row += [before[key], before[key] / before[base]]
        if torch_s is not None:
            row += [torch_s[key], torch_s[key] / after[key]]
        rows.append(row)
    print(C.table(headers, rows))
    print(f"draft_export from (2, 16): {after['draft 2x16']:.4g} s"
          + (f", before {before['draft 2x16']:.4g} s ({before['draft 2x16'] / after['draft 2x16']:.2f}x)"
             if before is not None and "draft 2x16" in before else "") + f" (median of {max(5, args.runs)})")
    if args.before:
        print(f"before: the package of {args.before}, measured in a subprocess first")
    if args.before and args.draft_rounds:
        _draft_rounds(args, rest)
    return 0


def _draft_rounds(args: argparse.Namespace, rest: list) -> None:
    """Print draft_export medians of fresh processes, before and this checkout interleaved round by round."""
    here = str(Path(__file__).resolve().parent.parent)
    flags = []
    for i, a in enumerate(rest):
        if not (a.startswith("--draft-rounds") or (i and rest[i - 1] == "--draft-rounds")):
            flags.append(a)
    flags.append("--draft-only")
    rows = []
    for r in range(args.draft_rounds):
        then = _before(args.before, flags)["draft 2x16"]
        now = _before(here, flags)["draft 2x16"]
        rows.append([r + 1, then, now, then / now, f"{100 * (1 - now / then):.0f}%"])
    print(C.table(["round", "before s", "ours s", "before / ours", "time saved"], rows))
    print(f"draft_export from (2, 16), median of {max(5, args.runs)} per process after 1 export and 3 drafts")


if __name__ == "__main__":
    sys.exit(main())
