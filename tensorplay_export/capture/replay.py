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

from ..errors import CaptureError
from ..graph.interpreter import Interpreter
from ..graph.ir import Graph, Node


class ReplayInterpreter(Interpreter):
    """The captured graph run again; a size a node computes replaces the capture's value.

    Capture's example sizes are the given ``symbols``; a data-dependent size the
    replay computes differently (a mask written through a view) then shows as a
    different output, reported as a replay difference, not as a failure of some
    later op that used the capture's size.
    """

    def bind(self, node: Node, value: Any) -> None:
        for axis, sym in node.meta["bind"].items():
            self.symbols[sym] = int(value if axis is None else np.shape(value)[axis])


def run_graph(graph: Graph, inputs: dict[str, Any], symbols: dict, op_table: Any = None) -> list:
    """Interpret ``graph`` (placeholder name -> value); sympy args evaluated at ``symbols``.

    ``op_table``: the capture's op overlay (name -> OpDef), looked up before the registry.
    """
    return ReplayInterpreter(graph, op_table).run(*[inputs[p.name] for p in graph.placeholders()],
                                                  symbols=symbols)


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
