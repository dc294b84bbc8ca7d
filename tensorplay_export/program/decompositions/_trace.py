"""Builders written as numpy functions: trace them into the graph in place of a node.

A decomposition is easiest to write, and to get right, as the numpy code it
stands for (``var = mean((a - mean(a))**2)``).  :func:`traced_builder` turns
such a function into a ``builder(graph, node)``: the node's inputs are handed
to the function as traced arrays (the capture machinery of ``export``), so
every numpy call it makes becomes a registry primitive inserted right before
the node, with its symbolic shape and dtype computed by the op's own shape
rule.  Sizes stay symbolic: ``x.shape[1]`` is the program's symbol.

Tracing needs example values (numpy runs on them, and every shape rule is
checked against numpy's result) and the program's contract (every
requirement the primitives place on sizes must already follow from it).
:class:`DecompSession` holds both for one ``run_decompositions`` call; it is
reachable through :data:`SESSION` while builders run.
"""
from __future__ import annotations

import contextvars
from typing import Any, Callable, Optional

from ...graph.interpreter import Interpreter
from ...graph.ir import Graph, Node
from ...records import sympy

__all__ = ["DecompSession", "SESSION", "traced_builder", "DecompositionError"]

_INPUT_BINDERS = ("tpe.check_input", "tpe.derived_root")
SESSION: contextvars.ContextVar = contextvars.ContextVar("tpe_decomp_session", default=None)


class DecompositionError(RuntimeError):
    """A builder failed, or its result does not match the node it replaces."""


class _ExampleValues(Interpreter):
    """The graph run on the program's example inputs, keeping every node's value.

    A node a builder inserted after the run is computed when first read (its
    inputs first), and binds its sizes as any node does.
    """

    free_values = False

    def missing(self, node: Node) -> Any:
        value = self.env[node] = self.run_node(node)
        if node.meta.get("bind"):
            self.bind(node, value)
        return value


class DecompSession:
    """Example values, symbol hints and a shape environment for decomposing one graph.

    Args:
        graph: the (copied) graph being rewritten.
        flat_inputs: one concrete value per placeholder, in order (the program's
            example inputs with its lifted state).
        ranges: ``sympy.Symbol -> ValueRange`` of the program.
        user_inputs: placeholder names of the user inputs (lifted constants go before them).
        op_table: the program's op overlay (``name -> OpDef``, e.g. a draft program's
            opaque ops), looked up before the registry when the graph runs.

    The graph is run once on ``flat_inputs`` (lazily, at the first traced
    builder) to learn every node's example value and every symbol's example size.
    """

    def __init__(self, graph: Graph, flat_inputs: Optional[list], ranges: dict,
                 user_inputs: Optional[set] = None, op_table: Optional[dict] = None) -> None:
        self.graph = graph
        self.op_table = op_table
        self.user_inputs = set(user_inputs or ())
        self._flat_inputs = flat_inputs
        self._ranges = dict(ranges)
        self._values: Optional[dict] = None
        self._hints: dict = {}
        self._interp: Optional[_ExampleValues] = None
        self._env: Any = None
        self._tracer: Any = None

    # -- example values -------------------------------------------------------
    def _run(self) -> None:
        if self._flat_inputs is None:
            raise DecompositionError(
                "this builder traces numpy code and needs example values, but the program has no "
                "example inputs (export() records them; pass them to deserialize/load)")
        interp = _ExampleValues(self.graph, self.op_table)
        interp.run(*self._flat_inputs)
        self._interp = interp
        self._values = interp.env       # every node's example value (builders add theirs)
        self._hints = interp.symbols    # every symbol's example size

    def value(self, node: Node) -> Any:
        """Example value of ``node`` (nodes added by earlier builders are evaluated on demand)."""
        if self._values is None:
            self._run()
        return self._interp.fetch(node)

    # -- tracing --------------------------------------------------------------
    @property
    def constants(self) -> dict:
        """Placeholder name -> value of the array constants builders lifted."""
        return dict(self._tracer.constants) if self._tracer is not None else {}

    @property
    def tracer(self) -> Any:
        if self._tracer is None:
            self._make_tracer()
        return self._tracer

    def _make_tracer(self) -> None:
        from solver import ShapeSolver

        from ...capture.tracer import Tracer
        from ...capture.shape_env import ShapeEnv

        if self._values is None:
            self._run()
        # "draft" mode: a requirement on a data-dependent size is assumed and recorded
        # (it becomes a runtime assertion), not raised.
        env = ShapeEnv(ShapeSolver(timeout_ms=200), "draft")
        unbacked = {sym for n in self.graph.nodes if n.op == "call_function" and n.target not in _INPUT_BINDERS
                    for sym in (n.meta.get("bind") or {}).values()}
        symbols = set(self._ranges) | set(self._hints)
        for sym in sorted(symbols, key=lambda s: s.name):
            vr = self._ranges.get(sym)
            lo = int(vr.lower) if vr is not None else 0
            hi = None if vr is None or vr.upper == float("inf") else int(vr.upper)
            env.create_symbol(sym.name, lo, hi, self._hints.get(sym), "unbacked" if sym in unbacked else "named")
        for node in self.graph.nodes:
            # The program's contract: what the runtime checks enforce may be assumed.
            if node.op == "call_function" and node.target in ("tpe.assert_guard", "tpe.check_size"):
                env.solver.assume(node.args[0])
        self._env = env
        tracer = Tracer(env, self.graph)
        # Arrays a builder makes from Python data become lifted constants, placed as
        # export places them: after the state, before the first user input.
        tracer.user_anchor = next((n for n in self.graph.nodes if n.op != "placeholder"
                                   or n.name in self.user_inputs), None)
        self._tracer = tracer

    def trace(self, fn: Callable[..., Any], node: Node) -> Any:
        """Run ``fn`` on ``node``'s inputs as traced values; new nodes go before ``node``.

        Returns:
            the node (or list of nodes, for a tuple result) that replaces ``node``.

        Raises:
            DecompositionError: ``fn`` raised, needs a size requirement the program's
                contract does not imply, lifts an array constant, or returns something
                whose shape or dtype differs from ``node``'s.
        """
        from ...capture.patching import patch_numpy, unpatch_numpy
        from ...capture.traced import TracedArray
        from ...capture.tracer import CURRENT
        from ...capture.symbolic import SymBool, SymFloat, wrap_int

        tracer = self.tracer
        env = self._env

        def wrap(value: Any) -> Any:
            if isinstance(value, Node):
                if value.meta.get("shape") is None:
                    return self.value(value)
                return TracedArray(tracer, value, tuple(value.meta["shape"]), self.value(value), None)
            if isinstance(value, sympy.Basic):
                if value.is_Boolean or value.is_Relational:
                    return SymBool(value, env)
                if value.is_Integer:
                    return int(value)
                if value.is_integer:
                    return wrap_int(value, env)
                return SymFloat(value, env)
            if isinstance(value, tuple):
                return tuple(wrap(v) for v in value)
            if isinstance(value, list):
                return [wrap(v) for v in value]
            if isinstance(value, dict):
                return {k: wrap(v) for k, v in value.items()}
            if isinstance(value, slice):
                return slice(wrap(value.start), wrap(value.stop), wrap(value.step))
            return value

        args, kwargs = wrap(node.args), wrap(node.kwargs)
        start = node.prev
        n_violations = len(env.violations)
        n_dependent = len(env.data_dependent)
        n_constants = len(tracer.constants)
        token = CURRENT.set(tracer)
        patch_numpy()
        try:
            with self.graph.inserting_before(node):
                out = fn(*args, **kwargs)
        except DecompositionError:
            raise
        except Exception as err:
            raise DecompositionError(f"decomposing {node.format_node()} failed: "
                                     f"{type(err).__name__}: {err}") from err
        finally:
            unpatch_numpy()
            CURRENT.reset(token)
        if len(env.violations) > n_violations:
            needs = "; ".join(f"{r.expr} ({r.reason})" for r in env.violations[n_violations:])
            raise DecompositionError(f"decomposing {node.format_node()} needs {needs}, which the "
                                     "program's shape contract does not imply")
        if len(env.data_dependent) > n_dependent:
            self._assert_at_run_time(env.data_dependent[n_dependent:], start, node)
        if len(tracer.constants) > n_constants:
            for ph in self.graph.placeholders():
                if ph.name in tracer.constants:
                    self._values.setdefault(ph, tracer.constants[ph.name])
        if out is NotImplemented:
            return NotImplemented
        return self._result(out, node, TracedArray)

    def _assert_at_run_time(self, records: list, start: Node, node: Node) -> None:
        """Requirements on data-dependent sizes: checked when the program runs, ahead of the
        replacement nodes (the composite itself would fail on such sizes too)."""
        with self.graph.inserting_after(start):
            for rec in reversed(records):
                syms = tuple(sorted(rec.expr.free_symbols, key=lambda s: s.name))
                first = syms[0] if syms else 0
                self.graph.call_function(
                    "tpe.assert_guard",
                    (rec.expr, f"data-dependent size {first} (in {node.name})", first, str(rec.expr),
                     tuple(s.name for s in syms), syms),
                    meta={"shape": None, "source": node.meta.get("source")}, name_hint="assert_guard")

    def _result(self, out: Any, node: Node, traced_type: type) -> Any:
        if isinstance(out, (tuple, list)):
            items = [self._result(o, node, traced_type) for o in out]
            return items
        if type(out) is not traced_type:
            raise DecompositionError(f"decomposing {node.format_node()} returned {type(out).__name__}, "
                                     "not a value computed from the node's inputs")
        result = out.node
        self._values.setdefault(result, out.example)
        return result


def traced_builder(fn: Callable[..., Any], name: Optional[str] = None) -> Callable[[Graph, Node], Any]:
    """A ``builder(graph, node)`` that traces ``fn(*node.args, **node.kwargs)`` into the graph.

    ``fn`` is plain numpy code over the op's arguments, with the op's signature.
    It may return ``NotImplemented`` for argument combinations it does not cover:
    the node is then kept as it is.

    Raises (when the builder runs):
        DecompositionError: outside ``run_decompositions``, or see :meth:`DecompSession.trace`.
    """
    def builder(graph: Graph, node: Node) -> Any:
        session = SESSION.get()
        if session is None or session.graph is not graph:
            raise DecompositionError(f"the traced builder {builder.__name__} only runs inside "
                                     "ExportedProgram.run_decompositions")
        return session.trace(fn, node)

    builder.__name__ = name or getattr(fn, "__name__", "builder")
    builder.__qualname__ = builder.__name__
    builder.__doc__ = f"Traced decomposition: {(fn.__doc__ or '').strip().splitlines()[0] if fn.__doc__ else fn!r}"
    builder.traced_fn = fn
    return builder
