"""Profile warm exports with pyinstrument and list where the time goes.

Run:  python benchmarks/profile_export.py [--model gpt|mlp|minilm] [--layers 24] [--repeat 3]
                                          [--top 10] [--html PATH] [--tree]

Exports the model once (cold, not profiled), then profiles ``--repeat`` warm exports and
prints the time of the export's phases (capture, replay check, codegen, ...), then two
top-N lists over the sampled frames:

- inclusive: time under each function (a recursive function counted once per stack),
  as a percentage of the profiled time;
- self: time spent in the function's own code (not in its callees).

``--html`` also writes pyinstrument's interactive page; ``--tree`` prints its call tree.
Needs ``pip install pyinstrument``. On a shared, loaded 2-core machine run it with
``OPENBLAS_NUM_THREADS=1``: multi-threaded BLAS on small example matrices otherwise
dominates the profile with thread hand-off waits.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import _common as C  # noqa: E402


def case(model: str, layers: int) -> tuple[Any, tuple, Any]:
    """(model, example args, dynamic_shapes) as bench_export uses them."""
    if model == "gpt":
        return C.build_gpt(layers), (C.gpt_ids(*C.GPT_EXAMPLE),), C.gpt_spec()
    if model == "mlp":
        return C.build_mlp(layers), (C.mlp_input(C.MLP_EXAMPLE_BATCH),), C.mlp_spec()
    if model == "minilm":
        m, inputs, spec = C.minilm_case()
        return m, tuple(inputs), spec
    raise ValueError(f"unknown model {model!r} (gpt, mlp, minilm)")


# Phases of an export worth tracking across optimizations: (function, file suffix, meaning).
PHASES = [
    ("capture", "tensorplay_export/export.py", "capture (trace + replay)"),
    ("lift_module_state", "capture/state.py", "  lift module state to placeholders"),
    ("call", "capture/tracer.py", "  Tracer.call (every traced op: numpy + shape rule + node)"),
    ("hook", "tensorplay_export/export.py", "  nn.functional composite hook"),
    ("guard", "tensorplay_export/shape_env.py", "  ShapeEnv.guard"),
    ("user_source", "tensorplay_export/shape_env.py", "  user_source (stack walk)"),
    ("check_replay", "capture/replay.py", "  replay check (second numpy run)"),
    ("build_program", "tensorplay_export/export.py", "build_program"),
    ("finish_graph", "tensorplay_export/program/build.py", "  runtime checks / contract"),
    ("recompile", "tensorplay_export/codegen.py", "  codegen + compile"),
]


def phases(root: Any) -> list[tuple[str, float]]:
    """Inclusive seconds of each PHASES entry found in the tree (recursion counted once)."""
    totals = {meaning: 0.0 for _f, _p, meaning in PHASES}

    def walk(frame: Any, active: frozenset) -> None:
        for fn, suffix, meaning in PHASES:
            if frame.function == fn and (frame.file_path or "").endswith(suffix) and meaning not in active:
                totals[meaning] += frame.time
                active = active | {meaning}
        for child in frame.children:
            if not child.is_synthetic_leaf:
                walk(child, active)

    walk(root, frozenset())
    return [(m, totals[m]) for _f, _p, m in PHASES if totals[m] > 0]


def _label(frame: Any) -> str:
    path = frame.file_path_short or frame.file_path or ""
    return f"{frame.function}  {path}:{frame.line_no}"


def aggregate(root: Any) -> tuple[dict[str, float], dict[str, float], float]:
    """(inclusive seconds, self seconds, total seconds) per function label of a frame tree."""
    inclusive: dict[str, float] = defaultdict(float)
    own: dict[str, float] = defaultdict(float)

    def walk(frame: Any, active: frozenset) -> None:
        label = _label(frame)
        if label not in active:
            inclusive[label] += frame.time
            active = active | {label}
        # pyinstrument keeps a function's own time in synthetic "[self]" leaves: fold them in.
        real = [c for c in frame.children if not c.is_synthetic_leaf]
        own[label] += max(frame.time - sum(c.time for c in real), 0.0)
        for child in real:
            walk(child, active)

    walk(root, frozenset())
    return dict(inclusive), dict(own), root.time


def callers(root: Any, needle: str) -> dict[str, float]:
    """Seconds of frames whose label contains ``needle``, by the label of their caller."""
    out: dict[str, float] = defaultdict(float)

    def walk(frame: Any, parent: str) -> None:
        label = _label(frame)
        if needle in label:
            out[parent] += frame.time
        for child in frame.children:
            if not child.is_synthetic_leaf:
                walk(child, label)

    walk(root, "")
    return dict(out)


def top(table: dict[str, float], total: float, n: int, skip: tuple = ()) -> list[tuple[str, float, float]]:
    """The ``n`` largest entries as (label, seconds, percent of total), skipping labels containing ``skip``."""
    rows = [(k, v, 100.0 * v / total) for k, v in table.items() if not any(s in k for s in skip)]
    rows.sort(key=lambda r: -r[1])
    return rows[:n]


def profile(model: Any, args: tuple, spec: Any, repeat: int, interval: float = 0.0005) -> Any:
    """pyinstrument session of ``repeat`` warm exports (after one unprofiled export)."""
    from pyinstrument import Profiler

    import tensorplay_export as tpe

    tpe.export(model, *args, dynamic_shapes=spec)
    profiler = Profiler(interval=interval)
    profiler.start()
    for _ in range(repeat):
        tpe.export(model, *args, dynamic_shapes=spec)
    profiler.stop()
    return profiler


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="gpt", choices=["gpt", "mlp", "minilm"])
    parser.add_argument("--layers", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3, help="profiled warm exports")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--html", help="write pyinstrument's HTML page here")
    parser.add_argument("--callers", action="append", default=[],
                        help="also list the callers of functions whose label contains this text")
    parser.add_argument("--tree", action="store_true", help="print pyinstrument's call tree too")
    args = parser.parse_args(argv)
    C.print_header(f"profile: warm export of {args.model} ({args.layers} layers)", "profile_export", argv)
    model, ex_args, spec = case(args.model, args.layers)
    profiler = profile(model, ex_args, spec, args.repeat)
    session = profiler.last_session
    root = session.root_frame()
    inclusive, own, total = aggregate(root)
    print(f"profiled {args.repeat} warm exports: {total:.3f} s wall ({session.cpu_time:.3f} s CPU), "
          f"{session.sample_count} samples")
    print("\nphases (inclusive, percent of profiled wall time):")
    for meaning, seconds in phases(root):
        print(f"  {100.0 * seconds / total:5.1f}%  {seconds:7.3f} s  {meaning}")
    skip = ("<module>", "profile  ", "export  tensorplay_export/export.py")
    print(f"\ntop {args.top} inclusive (percent of profiled wall time):")
    for label, seconds, pct in top(inclusive, total, args.top, skip):
        print(f"  {pct:5.1f}%  {seconds:7.3f} s  {label}")
    print(f"\ntop {args.top} self:")
    for label, seconds, pct in top(own, total, args.top):
        print(f"  {pct:5.1f}%  {seconds:7.3f} s  {label}")
    for needle in args.callers:
        print(f"\ncallers of {needle!r}:")
        for label, seconds, pct in top(callers(root, needle), total, args.top):
            print(f"  {pct:5.1f}%  {seconds:7.3f} s  {label}")
    if args.tree:
        print(profiler.output_text(unicode=False, color=False))
    if args.html:
        Path(args.html).write_text(profiler.output_html())
        print(f"html: {args.html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
