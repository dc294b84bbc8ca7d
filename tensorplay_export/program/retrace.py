"""An exported program called while a capture runs: its graph re-run through that capture.

torch.export re-exports ``ep.module()`` (its "retraceability"), and a model may call an
exported module inside another model that is exported in turn.  Running the generated
forward under a capture would go through raw op implementations and Python builtins on
sizes (``min``, ``int``, ``math.floor``) that capture never sees, so every size they touch
would be pinned.  Instead, :func:`retrace` runs the program's graph node by node through
the one :class:`~tensorplay_export.graph.interpreter.Interpreter`, each ``call_function``
through the running tracer's op dispatch (:meth:`Tracer.call`, by registry name):

- the program's size symbols are bound to the caller's sizes: an input axis's symbol to
  the traced input's size there (``meta["bind"]`` of the input checks), a data-dependent
  symbol to the one the caller's capture makes for the same op (``u0 = k.item()``);
  every size expression in a node's arguments is evaluated over those bindings as a
  symbolic size of the caller (:meth:`_Retrace.eval_expr`);
- the program's input contract (the ``tpe.*`` check nodes ahead of its compute) becomes
  requirements of the caller's capture instead of runtime checks: an exported program
  admitting ``n <= 8`` narrows a caller's ``Dim.AUTO`` axis to ``[1, 8]``, and is a
  violation (with its fix) over a caller's named dim.  A requirement over a
  data-dependent size of the caller is assumed and checked at run time, as
  ``tpe.check`` does (a ``tpe.check_size`` node);
- ``tpe.check`` facts the program carries (``tpe.check_size``) are stated again;
  sizes it returns (``tpe.size_value``) come back as the caller's symbolic sizes.

The program stays functional: buffer and parameter updates come back as values, and the
caller decides where they go (:class:`CaptureView`: the state of a re-exported module,
lifted as a module's, so the new program has the same ``BUFFER_MUTATION`` outputs).
"""
from __future__ import annotations

from typing import Any, Callable, Optional

import numpy as np
import sympy

from ..capture.frames import user_source
from ..capture.symbolic import SymBool, SymFloat, SymInt, to_expr, wrap_bool, wrap_float, wrap_int
from ..capture.traced import TracedArray
from ..capture.tracer import current
from ..errors import CaptureError
from ..graph.interpreter import Interpreter
from ..graph.ir import Graph, Node
from ..graph.printing import format_guard
from ..ops.registry import resolve_op
from ..nn.module import Module, Parameter
from ..records import SourceLoc
from .signature import InputKind, InputSpec

__all__ = ["capturing", "retrace", "CaptureView", "capture_view"]

_STATE_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR, InputKind.CUSTOM_OBJ)


def capturing(*values: Any) -> Any:
    """The running capture's tracer when one of ``values`` (nested in tuples, lists, dicts) is
    traced (an array or a symbolic size of it), else None: then a program runs as plain code."""
    tracer = current()
    if tracer is None or tracer.in_impl:
        return None
    stack = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, (TracedArray, SymInt, SymFloat, SymBool)):
            return tracer
        if isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return None


def retrace(program: Any, leaves: list, read_state: Callable[[InputSpec], Any], tracer: Any,
            source: Optional[SourceLoc] = None, module_calls: bool = False) -> list:
    """Run ``program``'s graph through the running capture; one value per output spec.

    Args:
        program: the ExportedProgram.
        leaves: the user input values, one per ``USER_INPUT`` spec (traced arrays, plain
            arrays, constants), in order.
        read_state: the value of a state input spec (parameter, buffer, constant): a traced
            array of the caller's capture, or a plain array (then lifted as a constant of it).
        tracer: the running :class:`~tensorplay_export.capture.tracer.Tracer`.
        source: the caller's line (where the program is called); requirements of the
            program's input contract are reported there.
        module_calls: the program runs as a module of the caller's tree (a
            :class:`CaptureView`): its module calls become calls of the caller's capture under
            that module's path, so ``unflatten`` of the new program has the same submodules.
            Otherwise (a plain callable) its nodes belong to the calling module.

    Returns:
        the output node's values (traced arrays, symbolic sizes, constants), in output-spec order.

    Raises:
        ConstraintsExceededError: the example inputs are outside the program's contract.
        RuntimeError: (internal) a size symbol is used before any node binds it.
        what the capture raises for an op (DataDependentError, UnsupportedOpError, CaptureError).
    """
    graph = program.graph  # a loaded program's stored sizes become sympy here: they are reasoned about
    specs = program.graph_signature.input_specs
    flat = []
    it = iter(leaves)
    for spec in specs:
        if spec.kind in _STATE_KINDS:
            value = read_state(spec)
            if isinstance(value, np.ndarray) and type(value) is not TracedArray:
                # the caller's capture does not hold it (a plain attribute): a constant of it
                value = tracer.lift_constant(f"c_{spec.target.replace('.', '_')}", value)
            flat.append(value)
        else:
            flat.append(next(it))
    runner = _Retrace(graph, tracer, program.graph_module.op_table, source, module_calls)
    return runner.run(*flat)


class _Retrace(Interpreter):
    """The Interpreter with the caller's capture as the machine: see the module docstring.

    ``subs``: the program's size symbol -> the caller's size expression.
    """

    def __init__(self, graph: Graph, tracer: Any, op_table: Any, source: Optional[SourceLoc],
                 module_calls: bool = False) -> None:
        super().__init__(graph, op_table)
        self.tracer = tracer
        self.shape_env = tracer.env
        self.source = source
        self.subs: dict = {}
        self._node: Optional[Node] = None
        # The program's module calls become calls of the caller's capture, inside the one
        # running this program (so unflatten of a re-export has the original hierarchy):
        # program (fqn, call_id) -> the caller's (prefixed fqn, fresh call_id).
        self._base_stack = list(tracer.module_stack)
        self._prefix = self._base_stack[-1][0] if self._base_stack else ""
        self._calls: Optional[dict] = {} if module_calls else None

    # -- sizes ------------------------------------------------------------------
    def caller_expr(self, expr: sympy.Basic) -> sympy.Basic:
        """``expr`` (over the program's symbols) over the caller's sizes."""
        missing = expr.free_symbols - self.subs.keys()
        if missing:
            names = ", ".join(sorted(s.name for s in missing))
            raise RuntimeError(f"symbol {names} is used before any node binds it")
        return expr.xreplace(self.subs)

    def eval_expr(self, expr: sympy.Basic) -> Any:
        """A size in a node's arguments as the caller's symbolic size (SymInt, SymFloat or
        SymBool; a plain number when it is one), so the op's shape rule sees the expression."""
        e = self.caller_expr(expr)
        if _is_condition(e):
            return wrap_bool(e, self.shape_env)
        if e.is_Number:
            return int(e) if e.is_Integer else float(e)
        hint = self.shape_env.hint(e)
        if isinstance(hint, (bool, np.bool_)):
            return wrap_bool(e, self.shape_env)
        return wrap_int(e, self.shape_env) if isinstance(hint, (int, np.integer)) else wrap_float(e, self.shape_env)

    def bind(self, node: Node, value: Any) -> None:
        """The program's symbols a node binds, as the caller's sizes there (first binding wins)."""
        for axis, sym in node.meta["bind"].items():
            if sym in self.subs:
                continue
            size = value if axis is None else _shape_of(value)[axis]
            self.subs[sym] = sympy.sympify(to_expr(size) if not isinstance(size, int) else size)

    # -- nodes ------------------------------------------------------------------
    def run_node(self, node: Node) -> Any:
        self._node = node
        stack = node.meta.get("module_stack")
        if not stack or node.op != "call_function" or self._calls is None:
            return super().run_node(node)
        tracer = self.tracer
        saved = tracer.module_stack
        tracer.module_stack = self._base_stack + [self._caller_call(fqn, call_id) for fqn, call_id in stack if fqn]
        try:
            return super().run_node(node)
        finally:
            tracer.module_stack = saved

    def _caller_call(self, fqn: str, call_id: Any) -> tuple:
        """The caller's (fqn, call_id) for the program's module call ``(fqn, call_id)``; a call
        seen first is logged in the caller's module calls, as its call hook would log it."""
        key = (fqn, call_id)
        hit = self._calls.get(key)
        if hit is None:
            calls = getattr(self.tracer, "module_calls", None)
            name = f"{self._prefix}.{fqn}" if self._prefix else fqn
            hit = self._calls[key] = (name, calls.next_id() if calls is not None else -1 - len(self._calls))
            if calls is not None:
                calls.log.append(hit)
        return hit

    def _source(self) -> Optional[SourceLoc]:
        src = self._node.meta.get("source") if self._node is not None else None
        return src if isinstance(src, SourceLoc) else self.source

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        value = super().placeholder(target, args, kwargs)
        node = self._node
        shape = node.meta.get("shape")
        if isinstance(shape, tuple) and hasattr(value, "shape") and len(shape) == len(_shape_of(value)):
            # a graph without input checks (none were inserted): its placeholders' symbols
            for axis, d in enumerate(shape):
                if isinstance(d, sympy.Symbol) and d not in self.subs:
                    self.subs[d] = sympy.sympify(to_expr(_shape_of(value)[axis]))
        return value

    def call_function(self, target: str, args: tuple, kwargs: dict) -> Any:
        special = _SPECIAL.get(target)
        if special is not None:
            return special(self, *args, **kwargs)
        op = resolve_op(target, self.op_table)
        tracer = self.tracer
        if self.op_table and target in self.op_table and target not in tracer.op_table:
            tracer.op_table[target] = op  # an overlay op (draft's opaque ones): the new program runs it too
        errstate = self._node.meta.get("errstate")
        if errstate:  # the model's np.errstate around this op: the caller's node records it again
            with np.errstate(**dict(errstate)):
                return tracer.call(op, args, kwargs, source=self._source())
        return tracer.call(op, args, kwargs, source=self._source())

    # -- the input contract as requirements -------------------------------------------
    def require(self, expr: Any, reason: str, op: str, where: Optional[str] = None) -> None:
        """``expr`` (over the caller's sizes) as a requirement of the caller's capture.

        Over backed sizes: a guard (proved: nothing; a named dim: a violation with a fix;
        ``Dim.AUTO``: accepted, the axis narrows).  Over a data-dependent size: assumed and
        checked on every call by a ``tpe.check_size`` node, as ``tpe.check`` does.
        """
        expr = sympy.sympify(expr)
        if expr is sympy.true:
            return
        env = self.shape_env
        if not any(env.is_unbacked(s) for s in expr.free_symbols):
            env.guard(expr, "shape", reason, self.source, op, cause="shape")
            return
        if env.solver.implies(expr).status == "proved":
            return
        env.solver.assume(expr)
        syms = tuple(sorted(expr.free_symbols, key=lambda s: s.name))
        if where is None:
            where = str(self.source) if self.source is not None else "?"
        self.tracer.graph.call_function(
            "tpe.check_size", (expr, format_guard(expr), where, tuple(s.name for s in syms), syms),
            meta=self.tracer.node_meta(self.source, shape=None, dtype=None))

    def concrete_check(self, target: str, args: tuple, kwargs: dict) -> Any:
        """The check op run on the example values: the program's own error for an example
        outside its contract (rank, dtype, a size out of range)."""
        tracer = self.tracer
        was, tracer.in_impl = tracer.in_impl, True
        try:
            return super().call_function(target, self.example(args), self.example(kwargs))
        finally:
            tracer.in_impl = was

    def example(self, value: Any) -> Any:
        """``value`` at the example: arrays' example values, sizes and conditions at the example
        sizes (read without a guard: a check's verdict on the example is no branch)."""
        if isinstance(value, TracedArray):
            return value.example
        if isinstance(value, (SymInt, SymFloat, SymBool)):
            return self.shape_env.hint(value.expr)
        if isinstance(value, (tuple, list)):
            return type(value)(self.example(v) for v in value)
        if isinstance(value, dict):
            return {k: self.example(v) for k, v in value.items()}
        return value

    def check_input(self, x: Any, path: str, static: tuple, dtype: Any, text: str) -> Any:
        self.concrete_check("tpe.check_input", (x, path, static, dtype, text), {})
        shape = _shape_of(x)
        for axis, (want, got) in enumerate(zip(static, shape)):
            if want is not None and not isinstance(got, int):
                self.require(sympy.Eq(to_expr(got), want),
                             f"the exported program called here takes {path}.shape[{axis}] = {want} "
                             f"(static in its input shape {text})", "tpe.check_input")
        return x

    def derived_root(self, x: Any, path: str, axis: int, k: int, c: int, lo: int, hi: Optional[int],
                     text: str, name: str) -> Any:
        self.concrete_check("tpe.derived_root", (x, path, axis, k, c, lo, hi, text, name), {})
        size = sympy.sympify(to_expr(_shape_of(x)[axis]))
        where = f"{path}.shape[{axis}]"
        if k not in (1, -1):
            self.require(sympy.Eq(sympy.Mod(size - c, k), 0),
                         f"the exported program called here takes {where} = {text}, a multiple "
                         f"relation of its dim {name}", "tpe.derived_root")
        root = sympy.floor((size - c) / k) if k not in (1, -1) else (size - c) * k
        self._require_range(root, lo, hi, f"{where} = {text}", name, "tpe.derived_root")
        return wrap_int(root, self.shape_env)

    def assert_range(self, value: Any, lo: int, hi: Optional[int], where: str, name: str) -> None:
        self.concrete_check("tpe.assert_range", (value, lo, hi, where, name), {})
        self._require_range(sympy.sympify(to_expr(value)), lo, hi, where, name, "tpe.assert_range")

    def _require_range(self, size: Any, lo: int, hi: Optional[int], where: str, name: str, op: str) -> None:
        admitted = f"[{lo}, {'inf' if hi is None else hi}]"
        reason = f"the exported program called here admits its input {where} in {admitted} (its dim {name})"
        self.require(sympy.Ge(size, lo), reason, op)
        if hi is not None:
            self.require(sympy.Le(size, hi), reason, op)

    def check_int(self, value: Any, path: str, k: int, c: int, lo: Optional[int], hi: Optional[int],
                  text: str, name: str) -> Any:
        """A dynamic int input: the caller's int (or symbolic size) and the root it binds."""
        root = self.concrete_check("tpe.check_int", (value, path, k, c, lo, hi, text, name), {})
        if not isinstance(value, SymInt):
            return root
        size = sympy.sympify(to_expr(value))
        if k not in (1, -1):
            self.require(sympy.Eq(sympy.Mod(size - c, k), 0),
                         f"the exported program called here takes {path} = {text}, a multiple "
                         f"relation of its dim {name}", "tpe.check_int")
        r = sympy.floor((size - c) / k) if k not in (1, -1) else (size - c) * k
        if lo is not None:
            self._require_range(r, lo, hi, f"{path} = {text}", name, "tpe.check_int")
        return wrap_int(r, self.shape_env)

    def assert_int(self, value: Any, path: str, expected: Any, what: str, detail: str) -> None:
        self.concrete_check("tpe.assert_int", (value, path, expected, what, detail), {})
        got = to_expr(value) if isinstance(value, SymInt) else value
        want = to_expr(expected) if not isinstance(expected, int) else expected
        self.require(sympy.Eq(sympy.sympify(got), sympy.sympify(want)),
                     f"the exported program called here needs {path} == {what} ({detail})", "tpe.assert_int")

    def assert_dim(self, x: Any, path: str, axis: int, expected: Any, what: str, detail: str) -> None:
        self.concrete_check("tpe.assert_dim", (x, path, axis, expected, what, detail), {})
        got = to_expr(_shape_of(x)[axis]) if not isinstance(_shape_of(x)[axis], int) else _shape_of(x)[axis]
        want = to_expr(expected) if not isinstance(expected, int) else expected
        self.require(sympy.Eq(sympy.sympify(got), sympy.sympify(want)),
                     f"the exported program called here needs {path}.shape[{axis}] == {what} ({detail})",
                     "tpe.assert_dim")

    def assert_guard(self, ok: Any, where: str, value: Any, text: str, names: tuple, values: tuple) -> Any:
        if isinstance(ok, TracedArray):  # draft's check of an array value it assumed: the op again
            return self.tracer.call(resolve_op("tpe.assert_guard", self.op_table),
                                    (ok, where, value, text, names, values), {}, source=self._source())
        self.concrete_check("tpe.assert_guard", (ok, where, value, text, names, values), {})
        if isinstance(ok, SymBool):
            self.require(ok.expr, f"the exported program called here needs {text} ({where})", "tpe.assert_guard")
        return None

    def check_size(self, ok: Any, text: str, where: str, names: tuple, values: tuple) -> None:
        self.concrete_check("tpe.check_size", (ok, text, where, names, values), {})
        if isinstance(ok, SymBool):
            self.require(ok.expr, f"tpe.check({text}) of the exported program ({where})", "tpe.check_size",
                         where=where)

    # -- nodes that are no op calls of their own ------------------------------------------
    def item_size(self, array: Any, where: str) -> Any:
        """``int(a)`` of the program: the caller's data-dependent size for the same read."""
        if not isinstance(array, TracedArray):
            return self.concrete_check("tpe.item_size", (array, where), {})
        return self.tracer.read_value(array, "item", "reads .item()", self._source())

    def size_value(self, value: Any, kind: str) -> Any:
        """A size the program returns, as the Python ``kind`` it has there (``"int"``,
        ``"float"``, ``"bool"``): the caller's symbolic size (a number if it is one)."""
        if isinstance(value, (SymInt, SymFloat, SymBool)):
            expr, env = value.expr, self.shape_env
            return wrap_float(expr, env) if kind == "float" else wrap_bool(expr, env) if kind == "bool" \
                else wrap_int(expr, env) if kind == "int" else value
        return self.concrete_check("tpe.size_value", (value, kind), {})

    def size_scalar(self, value: Any, dtype: Any) -> Any:
        """A size with a numpy type (``n + np.int32(1)``): the caller's size with that type, which
        its capture records as such wherever it is used (as the first capture did)."""
        if isinstance(value, SymInt):
            return wrap_int(value.expr, self.shape_env, np.dtype(dtype))
        if isinstance(value, SymFloat):
            return wrap_float(value.expr, self.shape_env, dtype=np.dtype(dtype))
        return self.concrete_check("tpe.size_scalar", (value, dtype), {})

    def item(self, values: Any, index: int) -> Any:
        if isinstance(values, (tuple, list)):
            return values[index]
        return self.concrete_check("tpe.item", (values, index), {})


def _is_condition(e: Any) -> bool:
    """Whether a size expression is a truth value (a sympy Symbol is a Boolean too: not one)."""
    return isinstance(e, (sympy.core.relational.Relational, sympy.logic.boolalg.BooleanFunction,
                          sympy.logic.boolalg.BooleanAtom))


def _shape_of(value: Any) -> tuple:
    return tuple(value.shape) if hasattr(value, "shape") else np.shape(value)


_SPECIAL = {
    "tpe.check_input": _Retrace.check_input,
    "tpe.derived_root": _Retrace.derived_root,
    "tpe.assert_range": _Retrace.assert_range,
    "tpe.assert_dim": _Retrace.assert_dim,
    "tpe.check_int": _Retrace.check_int,
    "tpe.assert_int": _Retrace.assert_int,
    "tpe.assert_guard": _Retrace.assert_guard,
    "tpe.check_size": _Retrace.check_size,
    "tpe.item_size": _Retrace.item_size,
    "tpe.size_value": _Retrace.size_value,
    "tpe.size_scalar": _Retrace.size_scalar,
    "tpe.item": _Retrace.item,
}


# -- the state of a re-exported module ---------------------------------------------------------

def capture_view(module: Any) -> Any:
    """An ``nn.Module`` over ``module``'s (an ExportedModule's) current state, for capture: its
    parameters and buffers registered under their fqns (persistence kept), constants as plain
    attributes, and a forward that re-runs the program through the capture (:func:`retrace`)
    and writes buffer and parameter updates back as a module's forward would.  So
    ``export(ep.module(), ...)`` lifts the same parameters and buffers and records the same
    mutations as the first export.  None when the state's names cannot be a module tree
    (then the module is captured as a plain callable, its state as constants).
    """
    root = CaptureView(module)
    try:
        for spec in module._specs:
            if spec.kind not in _STATE_KINDS:
                continue
            value = module._get_path(module._paths[spec.target])
            owner, name = _owner(root, spec.target, create=True)
            if spec.kind == InputKind.PARAMETER:
                owner.register_parameter(name, Parameter(value))
            elif spec.kind == InputKind.BUFFER:
                owner.register_buffer(name, value, persistent=bool(spec.persistent))
            else:
                if name in owner.__dict__ or hasattr(type(owner), name):
                    return None
                object.__setattr__(owner, name, value)
    except (KeyError, TypeError, AttributeError):
        return None
    return root


def _owner(root: Any, target: str, create: bool = False) -> tuple:
    """``(the submodule holding target, its attribute name)``; ``create`` adds missing submodules."""
    *parents, name = target.split(".")
    owner = root
    for part in parents:
        child = owner._modules.get(part)
        if child is None:
            if not create:
                raise KeyError(target)
            child = Module()
            owner.add_module(part, child)
        owner = child
    return owner, name


class CaptureView(Module):
    """See :func:`capture_view`.  ``forward`` takes the exported callable's arguments."""

    def __init__(self, module: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_exported", module)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        module = self._exported
        leaves = module._user_leaves(args, kwargs)
        tracer = current()
        if tracer is None:
            raise CaptureError("internal error: a capture view of an exported module runs only during a capture")
        root = self

        def read(spec: Any) -> Any:
            owner, name = _owner(root, spec.target)
            return getattr(owner, name)

        outs = retrace(module._program, leaves, read, tracer, user_source(2), module_calls=True)
        for i, target, kind in module._state_updates():
            owner, name = _owner(root, target)
            if kind == "buffer":
                setattr(owner, name, outs[i])  # a buffer assignment: capture sees a buffer mutation
            else:
                param = getattr(owner, name)
                param[...] = outs[i]  # an in-place write: capture sees a parameter mutation
        return module._finish(leaves, outs)

