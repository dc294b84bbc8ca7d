"""Replay check: run the captured graph on the examples and compare with capture.

Capture applies writes in place on the example values (eager semantics), but
the graph is functional; a write through a view (``row = m[0]; row[:] = 7``)
or an in-place op on an alias is invisible to the graph.  Replaying the graph
on pristine copies of the inputs and comparing with what capture computed
finds every such divergence, so it fails export instead of producing a wrong
program.  Values are freed after their last use (memory stays near eager).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import sympy

from ..errors import CaptureError
from ..graph.ir import Graph, Node, map_arg, map_exprs
from ..ops.registry import resolve_op


def run_graph(graph: Graph, inputs: dict[str, Any], symbols: dict, op_table: Any = None) -> list:
    """Interpret ``graph`` (placeholder name -> value); sympy args evaluated at ``symbols``.

    ``op_table``: the capture's op overlay (name -> OpDef), looked up before the registry.
    """
    nodes = graph.nodes
    last_use: dict[Node, int] = {}
    for i, node in enumerate(nodes):
        for inp in node.all_input_nodes:
            last_use[inp] = i
    env: dict[Node, Any] = {}
    sym_values = dict(symbols)

    def value(v: Any) -> Any:
        return env[v]

    def concrete(v: sympy.Basic) -> Any:
        r = v.xreplace(sym_values)
        if r is sympy.true or r is sympy.false:
            return bool(r)
        if r.is_Integer:
            return int(r)
        if r.is_number:
            return float(r)
        return r

    for i, node in enumerate(nodes):
        if node.op == "placeholder":
            env[node] = inputs[node.name]
        elif node.op == "call_function":
            args = map_exprs(map_arg(node.args, value), concrete)
            kwargs = map_exprs(map_arg(node.kwargs, value), concrete)
            env[node] = resolve_op(node.target, op_table).impl(*args, **kwargs)
        else:
            return [env[v] if isinstance(v, Node) else v for v in node.args[0]]
        for axis, sym in (node.meta.get("bind") or {}).items():
            if axis is None:
                sym_values[sym] = sympy.Integer(int(env[node]))
            else:
                sym_values[sym] = sympy.Integer(int(np.shape(env[node])[axis]))
        for inp in node.all_input_nodes:
            if last_use.get(inp) == i:
                env.pop(inp, None)
    return []


def check_replay(graph: Graph, inputs: dict[str, Any], symbols: dict, expected: list,
                 writes: list, op_table: Any = None) -> None:
    """Raise CaptureError when the functional graph does not reproduce the capture's outputs."""
    got = run_graph(graph, inputs, symbols, op_table)
    for i, (g, w) in enumerate(zip(got, expected)):
        if isinstance(w, (np.ndarray, np.generic)):
            g_arr, w_arr = np.asarray(g), np.asarray(w)
            same = g_arr.shape == w_arr.shape and g_arr.dtype == w_arr.dtype and \
                np.array_equal(g_arr, w_arr, equal_nan=g_arr.dtype.kind in "fc")
        else:
            same = True
        if not same:
            where = "".join(f"\n  {kind} at {src}" for kind, src in writes) or "\n  (no write recorded)"
            raise CaptureError(
                f"replay of the captured graph differs from the traced run at output {i}: mutation through "
                f"a view? numpy views share memory, the exported program does not. Writes seen during "
                f"capture:{where}")
