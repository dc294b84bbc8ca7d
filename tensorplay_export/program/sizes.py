"""A program's size contract as data, read from its graph: what its checks admit, what its outputs are.

Read from the runtime-check nodes :mod:`.input_checks` inserts and from each
output's ``meta`` (shape and dtype as expressions of the input dims), so it
is the same for a fresh ``ExportedProgram`` and one loaded from an archive:
the archive format carries nothing extra.  ``face.contract`` renders it;
:mod:`.compose` decides with it whether one program's outputs fit another's
inputs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ..records import SourceLoc, sympy

__all__ = ["InputSizes", "OutputSizes", "ProgramSizes", "read_sizes"]


def _int_or_expr(d: Any) -> Any:
    return int(d) if isinstance(d, (int, np.integer)) or (isinstance(d, sympy.Basic) and d.is_Integer) else d


@dataclass
class InputSizes:
    """One array input: ``path`` (``x``, ``b.tokens``), ``dtype`` text (``"any"``: not checked),
    ``shape`` (ints and sympy expressions over root symbols), ``placeholder`` node name,
    ``source``: the first model line that reads it (None when unknown)."""

    path: str
    dtype: str
    shape: tuple
    placeholder: str = ""
    source: Optional[SourceLoc] = None


@dataclass
class OutputSizes:
    """One user output: ``shape`` (None: not an array), ``dtype`` text (``int``/``float``/``bool`` for a
    size output), ``source``: the line computing it, ``value``: a size output's expression."""

    shape: Optional[tuple]
    dtype: Optional[str]
    source: Optional[SourceLoc] = None
    value: Any = None  # a size output (``return y, n``): its expression over the input dims


@dataclass
class ProgramSizes:
    """What a program admits and returns, as sizes.

    Attributes:
        inputs: array inputs in call order.
        ranges: root symbol -> ``(lower, upper | None)`` (inclusive; None: unbounded).
        guards: sympy booleans over root symbols the program checks besides ranges.
        runtime: checks on data-dependent sizes (not part of the input contract), as sympy or text.
        outputs: user outputs in order (``out0``, ``out1``, ...).
        examples: placeholder name -> example shape, when the program has example inputs.
    """

    inputs: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    guards: list = field(default_factory=list)
    runtime: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    examples: dict = field(default_factory=dict)


def _first_use(graph: Any, name: str) -> Optional[SourceLoc]:
    for node in graph.nodes:
        if node.op == "call_function" and not str(node.target).startswith("tpe.") \
                and node.meta.get("source") is not None \
                and any(getattr(a, "name", None) == name for a in _flat_args(node.args)):
            return node.meta["source"]
    return None


def _flat_args(args: Any) -> list:
    out, stack = [], [args]
    while stack:
        a = stack.pop()
        if isinstance(a, (list, tuple)):
            stack += list(a)
        elif isinstance(a, dict):
            stack += list(a.values())
        else:
            out.append(a)
    return out


def read_sizes(ep: Any, *, examples: bool = True) -> ProgramSizes:
    """The size contract of ``ep`` (see the module docstring).

    ``examples=False`` leaves out the example shapes (they may need the archive's
    sample member, or a dataclass class to rebuild).
    """
    graph = ep.graph
    out = ProgramSizes()
    for node in graph.nodes:
        if node.op == "call_function" and node.target == "tpe.check_input":
            placeholder = getattr(node.args[0], "name", "")
            dtype = node.args[3]
            shape = tuple(_int_or_expr(d) for d in (node.meta.get("shape") or ()))
            out.inputs.append(InputSizes(str(node.args[1]), str(np.dtype(dtype)) if dtype is not None else "any",
                                         shape, placeholder, _first_use(graph, placeholder)))
    roots: set = set()
    for site in out.inputs:
        for d in site.shape:
            if isinstance(d, sympy.Basic):
                roots |= d.free_symbols
    for sym, vr in ep.range_constraints.items():
        if sym in roots:
            hi = getattr(vr, "upper", math.inf)
            out.ranges[sym] = (int(vr.lower), None if hi == math.inf else int(hi))
    for node in graph.nodes:  # a root seen only through k*r + c carries its range on the check
        if node.op == "call_function" and node.target == "tpe.derived_root":
            r = (node.meta.get("bind") or {}).get(None)
            if r is not None and r not in out.ranges:
                out.ranges[r] = (int(node.args[5]), None if node.args[6] is None else int(node.args[6]))
    for node in graph.nodes:
        if node.op == "call_function" and node.target == "tpe.assert_guard":
            g = node.args[0]
            if isinstance(g, sympy.Basic) and g.free_symbols <= roots:
                out.guards.append(g)
            else:
                out.runtime.append(g)
        elif node.op == "call_function" and node.target == "tpe.check_size":
            out.runtime.append(f"{node.args[1]}  (tpe.check at {node.args[2]})")
    out_node = graph.output_node
    values = out_node.args[0] if out_node is not None else []
    for i, spec in enumerate(ep.graph_signature.output_specs):
        if getattr(spec.kind, "name", "") not in ("USER_OUTPUT", "LOSS_OUTPUT"):
            continue
        v = values[i]
        meta = getattr(v, "meta", None)
        if getattr(v, "target", None) == "tpe.size_value":
            out.outputs.append(OutputSizes(None, str(v.args[1]), meta.get("source"), v.args[0]))
        elif meta is not None and meta.get("shape") is not None:
            shape = tuple(_int_or_expr(d) for d in meta["shape"])
            dtype = str(np.dtype(meta["dtype"])) if meta.get("dtype") is not None else None
            out.outputs.append(OutputSizes(shape, dtype, meta.get("source")))
        else:
            out.outputs.append(OutputSizes(None, None, None))
    if examples:
        out.examples = _example_shapes(ep)
    return out


def _example_shapes(ep: Any) -> dict:
    """Placeholder name -> example shape (empty when the program has no readable example inputs)."""
    from ..pytree import tree_flatten

    try:
        ex = ep.example_inputs
        if ex is None:
            return {}
        leaves = tree_flatten((tuple(ex["args"]), dict(ex["kwargs"])))[0]
    except Exception:  # noqa: BLE001 - examples are optional here (a missing class, a damaged sample)
        return {}
    user = [s for s in ep.graph_signature.input_specs if getattr(s.kind, "name", "") == "USER_INPUT"]
    if len(user) != len(leaves):
        return {}
    return {s.arg.name: tuple(int(n) for n in np.shape(leaf)) for s, leaf in zip(user, leaves)
            if isinstance(leaf, np.ndarray)}
