"""Module views of an exported program: the source model's hierarchy, executable.

:func:`unflatten` turns an :class:`~tensorplay_export.program.ExportedProgram`
into an :class:`UnflattenedModule`: calling it runs the whole program (as
``ep.module()`` does), and its attributes mirror the source model, so
``u.encoder.layers[0].attn`` is a :class:`InterpreterModule` holding that
submodule's parameters and buffers (``u.encoder.layers[0].attn.q.weight``)
which, called, runs the part of the graph that submodule's ``forward`` produced.

Where a submodule's graph region comes from:

- every ``call_function`` node carries ``meta["module_path"]``, the fqn of the
  innermost module whose ``forward`` made it; the region of ``fqn`` is the
  nodes whose path is ``fqn`` or below it;
- capture records exact call boundaries: ``meta["module_stack"]`` is the
  ``(fqn, call_id)`` of every enclosing call, outermost first, so a module
  called several times has one group of nodes per ``call_id``, even for calls
  with nothing in between (``m(m(x))``).  Calling the view runs the first
  call's nodes (``view.num_calls`` says how many were recorded);
- programs where some node with a ``module_path`` has no matching
  ``module_stack`` (built by hand, older archives, a pass that copied only the
  path) fall back to *runs*: maximal stretches of the module's nodes in graph
  order, each run one call (two back-to-back calls then look like one);
- a run's inputs are the values it reads from outside: lifted state (taken
  from the view) and everything else, which are the call's arguments in
  first-use order.  With ``preserve_module_call_signature`` the recorded
  signature of the first call (inputs, outputs and their pytree specs) is used
  instead; the ``k``-th further call's signature is the ``module_call_graph``
  entry ``fqn@k``;
- sizes: symbols are bound from the arguments' shapes (an axis whose recorded
  size is a bare symbol, or ``k*s + c``).

Submodule calls do not re-check the program's input contract (only the
root call does); outputs are the run's values read outside it (one value, or
a tuple in graph order).
"""
from __future__ import annotations

import abc
from typing import Any, Iterator, Optional

import numpy as np

from solver import UnboundSymbolError, evaluate

from ..errors import ConstraintsExceededError
from ..graph.interpreter import Interpreter
from ..graph.ir import Node
from ..records import sympy
from .call_binding import same_constant

__all__ = ["unflatten", "UnflattenedModule", "InterpreterModule", "FlatArgsAdapter", "check_preserved_paths"]


def check_preserved_paths(model: Any, paths: tuple) -> None:
    """Refuse ``preserve_module_call_signature`` entries that name no submodule of ``model``.

    Known paths are the fqns of ``model.named_modules()`` other than the root
    (none for a plain function).  A typo would otherwise record nothing and
    leave ``unflatten`` without the signature the user asked for.

    Raises:
        ValueError: naming each unknown path and listing the known ones.
    """
    if not paths:
        return
    named = getattr(model, "named_modules", None)
    known = [fqn for fqn, _ in named()] if callable(named) else []
    known = [k for k in known if k]
    unknown = [p for p in paths if p not in known]
    if unknown:
        listed = ", ".join(repr(k) for k in known) if known else "none (the model has no submodules)"
        raise ValueError(f"preserve_module_call_signature names {', '.join(repr(p) for p in unknown)}, which "
                         f"is no submodule path of the model; known paths: {listed}")


class FlatArgsAdapter(abc.ABC):
    """Adapt one flattened argument layout into another.

    Subclass it and implement :meth:`adapt`; :class:`UnflattenedModule` calls it
    when a call's arguments flatten to a different structure than the program
    was exported with.
    """

    @abc.abstractmethod
    def adapt(self, target_spec: Any, input_spec: Any, input_args: list) -> list:
        """Leaves laid out for ``target_spec`` from ``input_args`` laid out by ``input_spec``.

        Args:
            target_spec: ``TreeSpec`` of ``(args, kwargs)`` the program expects.
            input_spec: ``TreeSpec`` of the ``(args, kwargs)`` actually passed.
            input_args: the passed leaves, flattened by ``input_spec``.
        Returns:
            a list of leaves that ``target_spec`` unflattens.
        """


class InterpreterModule:
    """One module of the view: children, parameters and buffers as attributes; callable.

    Children named ``0, 1, ...`` (a ``ModuleList``) are reachable by index
    (``layers[0]``), iteration and ``len``; any child by ``view["name"]``.
    """

    def __init__(self, root: "UnflattenedModule", fqn: str) -> None:
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_fqn", fqn)
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "_state", {})   # attribute name -> state target

    # -- attributes ---------------------------------------------------------
    @property
    def fqn(self) -> str:
        return self._fqn

    def __getattr__(self, name: str) -> Any:
        modules = object.__getattribute__(self, "_modules")
        if name in modules:
            return modules[name]
        state = object.__getattribute__(self, "_state")
        if name in state:
            return self._root._values[state[name]]
        raise AttributeError(f"module view {self._fqn or '<root>'!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("module views are read-only; export the changed model again")

    def __dir__(self) -> list:
        return sorted(set(super().__dir__()) | set(self._modules) | set(self._state))

    def __getitem__(self, key: Any) -> "InterpreterModule":
        name = str(int(key) % len(self._modules)) if isinstance(key, int) else str(key)
        try:
            return self._modules[name]
        except KeyError:
            raise KeyError(f"module view {self._fqn or '<root>'!r} has no child {key!r}") from None

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator["InterpreterModule"]:
        return iter(self._modules.values())

    def named_children(self) -> Iterator[tuple[str, "InterpreterModule"]]:
        return iter(self._modules.items())

    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, "InterpreterModule"]]:
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def named_parameters(self) -> Iterator[tuple[str, Any]]:
        return self._named_state(self._root._params)

    def named_buffers(self) -> Iterator[tuple[str, Any]]:
        return self._named_state(self._root._buffers)

    def _named_state(self, targets: set) -> Iterator[tuple[str, Any]]:
        for fqn, module in self.named_modules():
            for attr, target in module._state.items():
                if target in targets:
                    yield (f"{fqn}.{attr}" if fqn else attr), self._root._values[target]

    def state_dict(self) -> dict[str, Any]:
        return dict(self.named_parameters()) | {k: v for k, v in self.named_buffers()
                                                if self._root._persistent.get(self._full(k), True)}

    def _full(self, name: str) -> str:
        return f"{self._fqn}.{name}" if self._fqn else name

    # -- calling ------------------------------------------------------------
    @property
    def num_calls(self) -> int:
        """How many calls of this module the capture recorded (that made graph nodes)."""
        return len(self._root._runs(self._fqn))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._root._call_submodule(self._fqn, args, kwargs)

    forward = __call__

    def __repr__(self) -> str:
        kids = ", ".join(self._modules)
        return f"InterpreterModule({self._fqn or '<root>'!r}, children=[{kids}])"


class UnflattenedModule(InterpreterModule):
    """Executable module view retaining the captured root module hierarchy.

    Args:
        export_module: the ExportedProgram.
        flat_args_adapter: used when a root call's arguments flatten to another
            structure than the exported one.

    Calling it runs the whole program with its runtime input checks.
    """

    def __init__(self, export_module: Any, flat_args_adapter: Optional[FlatArgsAdapter] = None,
                 preserve_ops: tuple = ()) -> None:
        super().__init__(self, "")
        from .signature import InputKind

        if flat_args_adapter is not None and not isinstance(flat_args_adapter, FlatArgsAdapter):
            raise TypeError(f"flat_args_adapter must be a FlatArgsAdapter, got {type(flat_args_adapter).__name__}")
        ep = export_module
        sig = ep.graph_signature
        values = {**ep.constants, **ep.state_dict}
        params = {s.target for s in sig.input_specs if s.kind == InputKind.PARAMETER}
        buffers = {s.target for s in sig.input_specs if s.kind == InputKind.BUFFER}
        persistent = {s.target: bool(s.persistent) for s in sig.input_specs if s.kind == InputKind.BUFFER}
        by_placeholder = {s.arg.name: s.target for s in sig.input_specs
                          if s.kind != InputKind.USER_INPUT and s.target is not None}
        for name, value in (("_ep", ep), ("_adapter", flat_args_adapter), ("preserve_ops", tuple(preserve_ops)),
                            ("_values", values), ("_params", params), ("_buffers", buffers),
                            ("_persistent", persistent), ("_by_placeholder", by_placeholder),
                            ("_run_cache", {}), ("_signatures", {}), ("_stacks", {})):
            object.__setattr__(self, name, value)
        for entry in ep.module_call_graph:
            if entry.fqn:
                fqn, _at, k = entry.fqn.partition("@")  # "fqn@k": the k-th further call
                self._ensure(fqn)
                if entry.signature is not None:
                    self._signatures.setdefault(fqn, {})[int(k) if k.isdigit() else 0] = entry.signature
        for node in ep.graph.nodes:
            path = node.meta.get("module_path")
            if path:
                self._ensure(path)
        for target in values:
            owner, _, attr = target.rpartition(".")
            module = self._ensure(owner) if owner else self
            module._state[attr] = target

    def _ensure(self, fqn: str) -> InterpreterModule:
        module: InterpreterModule = self
        done = []
        for part in fqn.split("."):
            done.append(part)
            child = module._modules.get(part)
            if child is None:
                child = InterpreterModule(self, ".".join(done))
                module._modules[part] = child
            module = child
        return module

    def __repr__(self) -> str:
        tree = "\n".join(f"  {fqn}" for fqn, _m in self.named_modules() if fqn)
        return f"UnflattenedModule(\n{tree}\n)" if tree else "UnflattenedModule(flat)"

    # -- views of the program ----------------------------------------------------
    @property
    def exported_program(self) -> Any:
        return self._ep

    @property
    def graph(self) -> Any:
        return self._ep.graph

    @property
    def module_call_graph(self) -> list:
        return self._ep.module_call_graph

    @property
    def code(self) -> str:
        return self._ep.code

    # -- the root call ------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from ..pytree import tree_flatten, tree_unflatten

        root = self._ep.module_call_graph[0].signature if self._ep.module_call_graph else None
        target_spec = getattr(root, "in_spec", None)
        if self._adapter is not None and target_spec is not None:
            leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
            if spec != target_spec:
                flat = list(self._adapter.adapt(target_spec=target_spec, input_spec=spec, input_args=leaves))
                if len(flat) != target_spec.num_leaves:
                    raise TypeError(f"flat_args_adapter returned {len(flat)} values, the program takes "
                                    f"{target_spec.num_leaves}")
                args, kwargs = tree_unflatten(flat, target_spec)
        module = self._ep.module()
        out = module(*args, **kwargs)
        for fqn, value in module.named_buffers():  # buffer write-backs (running stats, generator state)
            if fqn in self._values:
                self._values[fqn] = value
        return out

    forward = __call__

    def _buffer_writes(self) -> tuple[dict, set]:
        """``{node: buffer fqn}`` of the program's ``BUFFER_MUTATION`` outputs, and the nodes it returns as results."""
        from .signature import OutputKind

        out = self._ep.graph.output_node
        values = list(out.args[0]) if out is not None and out.args else []
        writes, results = {}, set()
        for spec, value in zip(self._ep.graph_signature.output_specs, values):
            if not isinstance(value, Node):
                continue
            if spec.kind == OutputKind.BUFFER_MUTATION:
                writes[value] = spec.target
            else:
                results.add(value)
        return writes, results

    # -- submodule calls ----------------------------------------------------------
    def _runs(self, fqn: str) -> list[list[Node]]:
        """Compute nodes of each call of ``fqn`` (its descendants' included), in call order.

        Grouped by ``meta["module_stack"]`` when the graph has it, else maximal runs in graph order.
        """
        cached = self._run_cache.get(fqn)
        if cached is not None:
            return cached
        runs: list[list[Node]] = []
        if "stacks" not in self._stacks:
            self._stacks["stacks"] = _node_stacks(self._ep.graph.nodes)
        stacks = self._stacks["stacks"]
        if stacks is not None:
            runs = self._runs_from_stacks(fqn, stacks)
            self._run_cache[fqn] = runs
            return runs
        current: list[Node] = []
        prefix = fqn + "."
        for node in self._ep.graph.nodes:
            if node.op != "call_function":
                continue
            path = node.meta.get("module_path")
            if path is None and node.target == "tpe.item" and isinstance(node.args[0], Node):
                path = node.args[0].meta.get("module_path")  # element of a multi-output op
            if path is None:  # runtime checks and other program-level nodes
                continue
            if path == fqn or path.startswith(prefix):
                current.append(node)
            elif current:
                runs.append(current)
                current = []
        if current:
            runs.append(current)
        self._run_cache[fqn] = runs
        return runs

    def _runs_from_stacks(self, fqn: str, stacks: dict) -> list[list[Node]]:
        """Nodes grouped by exact call boundaries: ``meta["module_stack"]`` is the tuple of
        ``(fqn, call_id)`` of every enclosing module call, outermost first."""
        calls: dict[Any, list[Node]] = {}
        for node, stack in stacks.items():
            for entry in stack:
                if entry[0] == fqn:
                    calls.setdefault(entry[1], []).append(node)
                    break
        return list(calls.values())

    def _call_submodule(self, fqn: str, args: tuple, kwargs: dict) -> Any:
        if fqn == "":
            return self(*args, **kwargs)
        runs = self._runs(fqn)
        if not runs:
            raise NotImplementedError(f"module {fqn!r} made no graph nodes in the captured call "
                                      "(it was not called, or it returns its input unchanged)")
        nodes = runs[0]
        inside = set(nodes)
        external: list[Node] = []
        for node in nodes:
            for inp in node.all_input_nodes:
                if inp not in inside and inp not in external:
                    external.append(inp)
        writes, returned = self._buffer_writes()
        # a buffer's next value only the program's output reads is state, not a result of the call
        outputs = [n for n in nodes if any(u not in inside for u in n.users)
                   and not (n in writes and n not in returned
                            and all(u in inside or u.op == "output" for u in n.users))]
        env: dict[Node, Any] = {}
        state_inputs = [n for n in external if n.op == "placeholder" and n.name in self._by_placeholder]
        for n in state_inputs:
            env[n] = self._values[self._by_placeholder[n.name]]
        arg_inputs = [n for n in external if n not in state_inputs]
        sig = self._signatures.get(fqn, {}).get(0)
        out_spec = None
        if sig is not None and getattr(sig, "in_spec", None) is not None:
            from ..pytree import tree_flatten

            leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
            if spec != sig.in_spec:
                raise TypeError(f"module {fqn!r} was called with inputs structured as {spec!r}, "
                                f"but it was exported for {sig.in_spec!r}")
            by_name = {n.name: n for n in self._ep.graph.nodes}
            for k, (arg, leaf) in enumerate(zip(sig.inputs, leaves)):
                node = by_name.get(getattr(arg, "name", None))
                if node is not None and type(arg).__name__ == "TensorArgument":
                    env[node] = leaf
                elif type(arg).__name__ == "ConstantArgument" and not same_constant(leaf, arg.value):
                    # the graph computed with the recorded value, as ExportedModule's calls check
                    where = _call_paths(args, kwargs)[k]
                    raise ConstraintsExceededError(
                        f"module {fqn!r}: argument {where} = {leaf!r:.80}, but the program was exported "
                        f"with the constant {arg.value!r:.80}; export again passing this value to get a "
                        f"program for it")
            # Outputs: graph values by name; constants (a None field, a number) as recorded.
            # a size the module returns is a tpe.size_value node named by a Sym*Argument
            outputs = [by_name[a.name] if type(a).__name__ in _NODE_ARGS and a.name in by_name
                       else _Const(getattr(a, "value", None)) for a in sig.outputs]
            sized = [by_name[a.name] for a in sig.inputs
                     if type(a).__name__ == "TensorArgument" and a.name in by_name]
            external = external + [n for n in sized if n not in external]
            out_spec = sig.out_spec
            missing = [n.name for n in arg_inputs if n not in env]
            if missing:
                raise NotImplementedError(f"module {fqn!r} reads {missing} from outside its recorded inputs")
        else:
            if kwargs:
                raise TypeError(f"module view {fqn!r} takes positional arrays only (no recorded signature; "
                                "export with preserve_module_call_signature to call it with keywords)")
            if len(args) != len(arg_inputs):
                raise TypeError(f"module view {fqn!r} takes {len(arg_inputs)} positional arguments "
                                f"(values {[n.name for n in arg_inputs]} of its first recorded call), "
                                f"got {len(args)}")
            for node, value in zip(arg_inputs, args):
                env[node] = value
        run = _CallInterpreter(fqn, self._ep.graph, getattr(self._ep.graph_module, "op_table", None))
        run.run(initial_env=env, symbols=_argument_sizes(fqn, env, external), nodes=nodes)
        results = run.env
        for node, target in writes.items():  # the call advances its buffers, as eager does
            if node in inside and node in results and target in self._values:
                self._values[target] = results[node]
        values = [o.value if isinstance(o, _Const) else results[o] for o in outputs]
        if out_spec is not None:
            from ..pytree import tree_unflatten

            return tree_unflatten(values, out_spec)
        return values[0] if len(values) == 1 else tuple(values)


def _node_stacks(nodes: list[Node]) -> Optional[dict[Node, tuple]]:
    """The module stack of every compute node (``()`` for program-level nodes), or None.

    A ``tpe.item`` node without ``module_stack`` takes its multi-output op's.  None
    when some node's stack was not recorded by capture for it: a node with a
    ``module_path`` but no stack, or whose stack's innermost call is another module
    (a pass spliced it in and copied only the path); the caller then falls back to runs.
    """
    out: dict[Node, tuple] = {}
    for node in nodes:
        if node.op != "call_function":
            continue
        stack = node.meta.get("module_stack")
        if stack is None and node.target == "tpe.item" and node.args and isinstance(node.args[0], Node):
            stack = node.args[0].meta.get("module_stack")
        path = node.meta.get("module_path")
        if path is not None and (not stack or stack[-1][0] != path):
            return None
        out[node] = tuple(stack or ())
    return out


class _Const:
    """A constant output of a recorded module call signature."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _call_paths(args: tuple, kwargs: dict) -> list[str]:
    """Each leaf of a call's arguments as the user wrote it (``args[0]``, ``scale``, ``cfg['k']``)."""
    from ..pytree import tree_leaves_with_path

    paths = [p for p, _ in tree_leaves_with_path(tuple(args), "args")]
    # tree_flatten's order of the keyword arguments; the first key as the keyword itself
    for p, _ in tree_leaves_with_path(dict(kwargs)):
        key, _, rest = p[2:].partition("']")
        paths.append(key + rest)
    return paths


class _CallInterpreter(Interpreter):
    """Runs the nodes of one recorded call of a module view; keeps every value (the
    call's results are read from ``env``) and says which view lacks a size."""

    free_values = False

    def __init__(self, fqn: str, graph: Any, op_table: Any) -> None:
        super().__init__(graph, op_table)
        self.fqn = fqn

    def eval_expr(self, expr: sympy.Basic) -> Any:
        try:
            return evaluate(expr, self.symbols)
        except UnboundSymbolError as err:
            raise RuntimeError(f"module view {self.fqn!r}: the sizes {sorted(s.name for s in err.symbols)} "
                               "cannot be derived from the arguments' shapes") from None


_NODE_ARGS = ("TensorArgument", "SymIntArgument", "SymFloatArgument", "SymBoolArgument")


def _argument_sizes(fqn: str, env: dict, external: list[Node]) -> dict:
    """``Symbol -> int`` read from the shapes of a call's inputs: an axis whose recorded
    size is a bare symbol binds it; then ``k*s + c`` binds ``s`` where ``s`` is still unbound."""
    symbols: dict[sympy.Symbol, int] = {}
    for node in external:
        shape = node.meta.get("shape")
        value = env.get(node)
        if shape is None or value is None:
            continue
        got = np.shape(value)
        if len(got) != len(shape):
            raise ValueError(f"module view {fqn!r}: input {node.name} must have {len(shape)} axes "
                             f"(shape {tuple(shape)}), got {got}")
        for d, size in zip(shape, got):
            if isinstance(d, sympy.Symbol):
                symbols.setdefault(d, int(size))
    for node in external:  # k*s + c sizes bind s when s is not bound directly
        shape, value = node.meta.get("shape"), env.get(node)
        if shape is None or value is None:
            continue
        for d, size in zip(shape, np.shape(value)):
            if isinstance(d, sympy.Basic) and not d.is_Integer and len(d.free_symbols) == 1:
                (s,) = d.free_symbols
                if s not in symbols and d.is_polynomial(s) and sympy.degree(d, s) == 1:
                    k, c = sympy.Poly(d, s).all_coeffs()
                    if (int(size) - c) % k == 0:
                        symbols[s] = int((int(size) - c) // k)
    return symbols


def unflatten(module: Any, flat_args_adapter: Optional[FlatArgsAdapter] = None,
              preserve_ops: Any = ()) -> UnflattenedModule:
    """Build an executable module view from an exported program.

    Args:
        module: the ExportedProgram.
        flat_args_adapter: a :class:`FlatArgsAdapter` for root calls whose
            arguments flatten to another structure than the exported one.
        preserve_ops: op targets (callables, names) the view must keep as they
            are; the view never rewrites ops, so this only validates that each
            names a registered op and records them (``view.preserve_ops``).

    Returns:
        an :class:`UnflattenedModule`; without recorded module calls (a plain
        function was exported) it is the flat view: callable, no children.

    Raises:
        TypeError: ``module`` is not an ExportedProgram-like object or the adapter is not a FlatArgsAdapter.
        KeyError: an entry of ``preserve_ops`` names no registered op.
    """
    from .decompositions.table import canonical_target

    if not hasattr(module, "graph_signature") or not hasattr(module, "module"):
        raise TypeError(f"unflatten takes an ExportedProgram, got {type(module).__name__}")
    names = []
    for op in tuple(preserve_ops or ()):
        name = canonical_target(op)
        if name is None:
            raise KeyError(f"preserve_ops entry {op!r} names no op in the op registry")
        names.append(name)
    return UnflattenedModule(module, flat_args_adapter, tuple(names))
