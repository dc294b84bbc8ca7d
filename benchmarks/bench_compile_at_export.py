"""What compiling the program's generated code at export costs (issue 15, item 9).

Run:  python benchmarks/bench_compile_at_export.py [--layers 24] [--runs 9] [--quick]

``export`` generates and compiles the program's Python source before it returns,
so a code generator or compiler failure surfaces at export rather than at the
program's first call.  This measures, interleaved in one run, GPT exports

- ``compile at export``: what ``export`` does;
- ``compile on first call``: the same export with the graph module left lazy
  (the pre-issue behaviour), then the cost moves to the first call;

and prints the warm median of ``export`` alone and of ``export`` + first call,
as ratios.  The total to a first result is the same work in both; only where
it is paid differs.  No timing is asserted anywhere.
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
    from tensorplay_export.graph import codegen

    model, ids, spec = C.build_gpt(args.layers), C.gpt_ids(*C.GPT_EXAMPLE), C.gpt_spec()
    eager_init = codegen.GraphModule.__init__

    def lazy_init(self, graph, op_table=None, *, lint=True, generate=False):
        eager_init(self, graph, op_table, lint=lint, generate=False)

    def export_with(init, call: bool):
        def run() -> None:
            codegen.GraphModule.__init__ = init
            try:
                ep = tpe.export(model, ids, dynamic_shapes=spec)
            finally:
                codegen.GraphModule.__init__ = eager_init
            if call:
                ep.module()(ids)
        return run

    times = C.interleaved({
        "eager export": export_with(eager_init, False),
        "lazy export": export_with(lazy_init, False),
        "eager export+call": export_with(eager_init, True),
        "lazy export+call": export_with(lazy_init, True),
    }, runs=args.runs)
    med = {k: C.median(v) for k, v in times.items()}
    C.print_header(f"compile at export, GPT-{args.layers} from {C.GPT_EXAMPLE}", "bench_compile_at_export",
                   argv)
    print(C.table(["", "compile at export (s)", "compile on first call (s)", "ratio"], [
        ["export", med["eager export"], med["lazy export"], med["eager export"] / med["lazy export"]],
        ["export + first call", med["eager export+call"], med["lazy export+call"],
         med["eager export+call"] / med["lazy export+call"]],
    ]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
