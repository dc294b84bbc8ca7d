"""Run a graph node by node: the one interpreter, with one method per opcode.

Generated code (:class:`~tensorplay_export.graph.codegen.GraphModule`) is the
fast way to run a whole program; everything else that runs graph nodes runs
them here: the replay check of capture (:mod:`..capture.replay`), the module
views of :func:`~tensorplay_export.program.unflatten` (one call's region of the
graph) and the example values of the decomposition tracer.  They subclass
:class:`Interpreter` and override a method, never write their own loop.

- ``run(*flat_inputs, initial_env=..., symbols=..., nodes=...)``: ``initial_env``
  gives values for some nodes, which are then not run (as in torch.fx's
  ``Interpreter.run``); ``symbols`` binds size symbols, so a size that appears
  only as ``2*s + 1`` in node arguments can be evaluated; ``nodes`` runs a part
  of the graph (a region whose inputs are in ``initial_env``).
- Sizes in node arguments are evaluated by the one size evaluator,
  :func:`solver.evaluate`, at ``self.symbols``: the given bindings plus every
  ``meta["bind"]`` of the nodes run so far (the first binding wins, as in
  generated code).
- Values are freed after their last use, as in generated code (a subclass that
  needs them all sets ``free_values = False``), and errors name the failing node.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Iterable, Optional

import numpy as np

from ..errors import ConstraintsExceededError, InputDtypeError
from ..ops.registry import resolve_op
from .ir import Graph, Node
from ..records import is_sympy, sympy

__all__ = ["Interpreter"]

# Argument leaves that stand for themselves (fetch returns them without a call).
_PLAIN = frozenset({int, float, str, bool, type(None)})


class Interpreter:
    """Executes ``graph`` on concrete inputs.

    Args:
        graph: the graph to run.
        op_table: an op overlay, as for :class:`GraphModule` (name -> OpDef or callable),
            looked up before the registry.

    Attributes (while and after a run):
        env: ``Node -> value`` of the nodes run (and of ``initial_env``).
        symbols: ``sympy.Symbol -> int``, the sizes bound so far.

    ``run`` returns the output node's list.  An exception raised while running
    a node is re-raised with ``While executing <node>`` appended (same type,
    original traceback); ``ConstraintsExceededError`` and the dtype
    ``TypeError`` of the input checks pass through untouched because their
    text is the user-facing contract message.

    Subclass hooks: ``placeholder``, ``call_function``, ``output`` (one per
    opcode), ``run_node``, ``fetch``, ``eval_expr`` (a size in an argument),
    ``bind`` (a node's ``meta["bind"]``), ``missing`` (a node read without a value).
    """

    free_values = True
    root: Any = None  # the object get_attr nodes read from (ExportedProgram.module()'s graph)

    def __init__(self, graph: Graph, op_table: Optional[Mapping[str, Any]] = None) -> None:
        self.graph = graph
        self.op_table = op_table
        self.env: dict[Node, Any] = {}
        self.symbols: dict[sympy.Symbol, int] = {}
        self._inputs: tuple = ()
        self._next_input = 0
        self._impls: dict[str, Any] = {}

    # -- driver ---------------------------------------------------------------
    def run(self, *flat_inputs: Any, initial_env: Optional[Mapping[Node, Any]] = None,
            symbols: Optional[Mapping[sympy.Symbol, Any]] = None,
            nodes: Optional[Iterable[Node]] = None) -> Any:
        """Run the graph (or ``nodes``, in their order); returns the output node's value.

        Args:
            *flat_inputs: one value per placeholder that is not in ``initial_env``, in graph order.
            initial_env: values of some nodes; those nodes are not run (their
                ``meta["bind"]`` is not read: give such sizes in ``symbols``).
            symbols: ``Symbol -> int`` sizes known before the run.
            nodes: run only these nodes (default: the whole graph); values they read
                from outside must be in ``initial_env``.

        Returns:
            the output node's list, or None when ``nodes`` has no output node
            (read the values from ``self.env``).
        """
        nodes = self.graph.nodes if nodes is None else list(nodes)
        env = self.env = dict(initial_env) if initial_env else {}
        self.symbols = {s: int(v) for s, v in symbols.items()} if symbols else {}
        self._impls = {}
        n_placeholders = sum(1 for n in nodes if n.op == "placeholder" and n not in env)
        if len(flat_inputs) != n_placeholders:
            raise TypeError(f"graph takes {n_placeholders} inputs, got {len(flat_inputs)}")
        self._inputs, self._next_input = flat_inputs, 0
        dies_at = _dies_at(nodes) if self.free_values else {}
        for i, node in enumerate(nodes):
            if node in env:
                continue
            try:
                value = self.run_node(node)
            except (ConstraintsExceededError, InputDtypeError):
                raise
            except Exception as err:
                _annotate(err, node)
                raise
            if node.op == "output":
                return value
            env[node] = value
            if node.meta.get("bind"):
                self.bind(node, value)
            dead = dies_at.get(i)
            if dead:
                for d in dead:
                    env.pop(d, None)
        return None

    def run_node(self, node: Node) -> Any:
        """Value of one node: its arguments fetched, then the method of its opcode."""
        args = self.fetch(node.args)
        kwargs = self.fetch(node.kwargs) if node.kwargs else {}
        return getattr(self, node.op)(node.target, args, kwargs)

    def fetch(self, value: Any) -> Any:
        """``value`` with Nodes replaced by their values and sympy sizes by ints/bools.

        Recurses into tuples, lists, dicts and slices (rebuilt as plain ones).
        """
        cls = type(value)
        if cls in _PLAIN:
            return value
        if cls is Node:
            try:
                return self.env[value]
            except KeyError:
                return self.missing(value)
        if cls is tuple or cls is list:
            out = [v if type(v) in _PLAIN else self.fetch(v) for v in value]
            return tuple(out) if cls is tuple else out
        if is_sympy(value):
            return self.eval_expr(value)
        if isinstance(value, tuple):
            return tuple(self.fetch(v) for v in value)
        if isinstance(value, list):
            return [self.fetch(v) for v in value]
        if isinstance(value, dict):
            return {k: self.fetch(v) for k, v in value.items()}
        if isinstance(value, slice):
            return slice(self.fetch(value.start), self.fetch(value.stop), self.fetch(value.step))
        return value

    def eval_expr(self, expr: sympy.Basic) -> Any:
        """Value of a symbolic size or guard at ``self.symbols`` (int, float or bool)."""
        # imported here: the solver package imports z3, which loading a program must not (issue 19)
        from solver import UnboundSymbolError, evaluate

        try:
            return evaluate(expr, self.symbols)
        except UnboundSymbolError as err:
            names = ", ".join(s.name for s in err.symbols)
            raise RuntimeError(f"symbol {names} is used before any node binds it") from None

    def bind(self, node: Node, value: Any) -> None:
        """Record the sizes ``node`` binds (``meta["bind"]``); a symbol's first binding wins."""
        for axis, sym in node.meta["bind"].items():
            if sym not in self.symbols:
                self.symbols[sym] = int(value if axis is None else np.shape(value)[axis])

    def missing(self, node: Node) -> Any:
        """A node was read before it has a value (not run yet, not in ``initial_env``)."""
        raise RuntimeError(f"node {node.name} is read before it has a value (a region's input "
                           "must be given in initial_env)")

    # -- one method per opcode --------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        value = self._inputs[self._next_input]
        self._next_input += 1
        return value

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Attribute path ``target`` of ``self.root`` (the module whose graph this is)."""
        if self.root is None:
            raise RuntimeError(f"get_attr {target!r} needs the module holding the attribute: set Interpreter.root")
        value = self.root
        for part in target.split("."):
            value = getattr(value, part)
        return value

    def call_function(self, target: str, args: tuple, kwargs: dict) -> Any:
        impl = self._impls.get(target)
        if impl is None:
            impl = self._impls[target] = resolve_op(target, self.op_table).impl
        return impl(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> list:
        return list(args[0])


def _dies_at(nodes: list[Node]) -> dict[int, list[Node]]:
    """Index of the last use of each node -> the nodes to free after it.

    A node read by some node outside ``nodes`` (a region's result) is never freed.
    """
    index = {n: i for i, n in enumerate(nodes)}
    dies_at: dict[int, list[Node]] = {}
    for n in nodes:
        if not n.users:
            continue
        last = -1
        for u in n.users:
            j = index.get(u)
            if j is None:
                break
            if j > last:
                last = j
        else:
            dies_at.setdefault(last, []).append(n)
    return dies_at


def _annotate(err: BaseException, node: Node) -> None:
    note = f"While executing {node.format_node()}"
    if err.args and isinstance(err.args[0], str):
        err.args = (f"{err.args[0]}\n\n{note}",) + err.args[1:]
    else:
        err.add_note(note)
