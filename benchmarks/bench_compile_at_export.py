"""What compiling the program's generated code at export costs (issue 15, item 9).

Run:  python benchmarks/bench_compile_at_export.py [--layers 24] [--runs 9] [--quick]

``export`` generates and compiles the forward ``module()`` runs before it returns
(``program.build.compile_module``), so a code generator or compiler failure
surfaces at export rather than at the program's first call.  The compiled code
is shared by every view of the program (``module()``, the eager safety net's
run, archive runners), so it is paid once.  This prints, from one run, the warm
median of a whole GPT export, of one generate + compile of its forward, and the
share of the second in the first.  No timing is asserted anywhere.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--quick", action="store_true", help="2 layers, 2 runs (a smoke test)")
    args = ap.parse_args(argv)
    if args.quick:
        args.layers, args.runs = 2, 2

    import tensorplay_export as tpe
    from tensorplay_export.program.build import compile_module

    model, ids, spec = C.build_gpt(args.layers), C.gpt_ids(*C.GPT_EXAMPLE), C.gpt_spec()
    ep = tpe.export(model, ids, dynamic_shapes=spec)

    def compile_again() -> None:
        ep.graph_module.derived_code = None  # as on a fresh program
        ep.invalidate_unlifted()  # else module() returns the cached view and generates nothing
        compile_module(ep)

    times = C.interleaved({"export": lambda: tpe.export(model, ids, dynamic_shapes=spec),
                           "compile": compile_again}, runs=args.runs)
    export_s, compile_s = C.median(times["export"]), C.median(times["compile"])
    C.print_header(f"compile at export, GPT-{args.layers} from {C.GPT_EXAMPLE}", "bench_compile_at_export",
                   argv)
    print(C.table(["", "seconds", "share of export"], [
        ["export (compiles once)", export_s, 1.0],
        ["generate + compile the forward", compile_s, compile_s / export_s],
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
