"""Run a graph node by node, with one method per opcode.

Slower than :class:`~tensorplay_export.codegen.GraphModule` but easy to
subclass (a shape-propagation or debugging pass overrides one method) and its
errors name the failing node.  Values are freed after their last use, as in
generated code.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Callable, Optional

import sympy

from .codegen import pyexpr
from ..errors import ConstraintsExceededError, InputDtypeError
from ..ops.registry import resolve_op
from .ir import Graph, Node, map_arg, map_exprs


class Interpreter:
    """Executes ``graph`` on concrete inputs.

    Args:
        graph: the graph to run.
        op_table: an op overlay, as for :class:`GraphModule`.

    ``run(*flat_inputs)`` returns the output list.  An exception raised while
    running a node is re-raised with ``While executing <node>`` appended
    (same type, original traceback); ``ConstraintsExceededError`` and the
    dtype ``TypeError`` of the input checks pass through untouched because
    their text is the user-facing contract message.
    """

    def __init__(self, graph: Graph, op_table: Optional[Mapping[str, Any]] = None) -> None:
        self.graph = graph
        self.op_table = op_table
        self.env: dict[Node, Any] = {}
        self.symbols: dict[sympy.Symbol, int] = {}
        self._inputs: list = []
        self._exprs: dict[sympy.Basic, Callable] = {}

    # -- driver ---------------------------------------------------------------
    def run(self, *flat_inputs: Any) -> list:
        nodes = self.graph.nodes
        index = {n: i for i, n in enumerate(nodes)}
        dies_at: dict[int, list[Node]] = {}
        for n in nodes:
            if n.users:
                dies_at.setdefault(max(index[u] for u in n.users), []).append(n)
        self.env, self.symbols, self._inputs = {}, {}, list(flat_inputs)
        n_placeholders = sum(1 for n in nodes if n.op == "placeholder")
        if len(flat_inputs) != n_placeholders:
            raise TypeError(f"graph takes {n_placeholders} inputs, got {len(flat_inputs)}")
        self._next_input = 0
        for i, node in enumerate(nodes):
            try:
                value = self.run_node(node)
            except (ConstraintsExceededError, InputDtypeError):
                raise
            except Exception as err:
                note = f"While executing {node.format_node()}"
                if err.args and isinstance(err.args[0], str):
                    err.args = (f"{err.args[0]}\n\n{note}",) + err.args[1:]
                else:
                    err.add_note(note)
                raise
            if node.op == "output":
                return value
            self.env[node] = value
            for axis, sym in (node.meta.get("bind") or {}).items():
                if sym not in self.symbols:
                    self.symbols[sym] = int(value if axis is None else value.shape[axis])
            for dead in dies_at.get(i, ()):
                del self.env[dead]
        return []

    def run_node(self, node: Node) -> Any:
        args = self.fetch(node.args)
        kwargs = self.fetch(node.kwargs)
        return getattr(self, node.op)(node.target, args, kwargs)

    def fetch(self, value: Any) -> Any:
        """Replace Nodes by their values and sympy expressions by their ints/bools."""
        return map_exprs(map_arg(value, self.env.__getitem__), self.eval_expr)

    def eval_expr(self, expr: sympy.Basic) -> Any:
        """Value of a symbolic int/bool under the symbols bound so far."""
        fn = self._exprs.get(expr)
        if fn is None:
            syms = sorted(expr.free_symbols, key=lambda s: s.name)
            names = {s: f"_a{i}" for i, s in enumerate(syms)}
            src = f"lambda {', '.join(names[s] for s in syms)}: {pyexpr(expr, names)}"
            import math

            fn = eval(src, {"math_floor": math.floor})  # our own generated text, never user input
            fn.symbols = syms
            self._exprs[expr] = fn
        try:
            return fn(*(self.symbols[s] for s in fn.symbols))
        except KeyError as err:
            raise RuntimeError(f"symbol {err.args[0]} is used before any node binds it") from None

    # -- one method per opcode --------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        value = self._inputs[self._next_input]
        self._next_input += 1
        return value

    def call_function(self, target: str, args: tuple, kwargs: dict) -> Any:
        return resolve_op(target, self.op_table).impl(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> list:
        return list(args[0])

