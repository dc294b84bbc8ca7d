"""export(): capture a numpy model into an ExportedProgram with a proven shape contract.

Flow: normalize the spec -> one symbol per Dim (AUTO dims ``s0, s1, ...``) ->
copy the inputs -> trace the model (every op: numpy on the examples + shape
rule on the symbols, guards decided by the solver) -> replay check -> either
a ``ConstraintViolationError`` listing every violated guard with fixes, or an
``ExportedProgram`` whose graph starts with the runtime input checks.

:func:`capture` is the internal entry that returns everything (graph,
records, env) without raising for violations, for ``draft_export``.
"""
from __future__ import annotations

import inspect
import math
import types
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import sympy

from . import pytree
from .capture.blas import one_blas_thread
from .capture.patching import clone_function, patch_numpy, unpatch_numpy
from .capture.replay import check_replay
from .capture.state import ModuleCalls, buffer_mutations, lift_module_state, make_call_hook
from .capture.tracer import CURRENT, Tracer
from .capture.traced import TracedArray
from .errors import ConstraintsExceededError
from .graph import Graph, Node, map_exprs
from .ops.ctx import as_dim
from .records import DimInfo, ValueRange
from .shape_env import ShapeEnv
from .symbolic import SymBool, SymFloat, SymInt

__all__ = ["export", "export_for_training", "capture", "CaptureResult", "mark_opaque", "needs_replay"]


@dataclass
class CaptureResult:
    """Everything one capture produced (``export``/``draft_export`` build on it)."""

    graph: Graph
    env: ShapeEnv
    tracer: Tracer
    dims: dict                       # name -> DimInfo
    sites: list                      # (path, placeholder name, symbolic shape, dtype) per array input
    input_kinds: list                # (placeholder name, kind, target, persistent, value)
    in_spec: Any
    out_spec: Any
    outputs: list                    # flat user output values (traced or constants)
    mutations: list                  # (fqn, traced) buffer mutations
    calls: ModuleCalls
    leaf_specs: list
    op_table: dict = field(default_factory=dict)   # op overlay of this capture (draft's opaque ops)
    draft: Any = None                               # capture.draft.DraftLog in draft mode, else None
    input_mutations: list = field(default_factory=list)  # (placeholder name, traced) user inputs written

    @property
    def violations(self) -> list:
        return self.env.violations


def _solver() -> Any:
    from solver import ShapeSolver

    return ShapeSolver(timeout_ms=200)


def _leaf_name(path: str) -> str:
    out = []
    for ch in path:
        out.append(ch if ch.isalnum() or ch == "_" else "_")
    name = "_".join(p for p in "".join(out).split("_") if p) or "arg"
    return name if not name[0].isdigit() else f"_{name}"


def _make_symbols(env: ShapeEnv, leaves: list, specs: list, paths: list) -> tuple[list, dict]:
    """Symbolic shape per array leaf; DimInfo per user-visible symbol.

    Raises:
        ConstraintsExceededError: an example size outside its declared range, or two
            sites of one Dim with different example sizes.
    """
    from .dynamic_shapes import Dim, _DerivedDim

    dims: dict[str, DimInfo] = {}
    shapes: list = []
    for leaf, spec, path in zip(leaves, specs, paths):
        if not isinstance(leaf, np.ndarray):
            shapes.append(None)
            continue
        shape: list = []
        for axis, size in enumerate(leaf.shape):
            d = spec.axes.get(axis) if spec is not None else None
            site = f"{path}.shape[{axis}]"
            if d is None or d is Dim.STATIC or isinstance(d, int):
                shape.append(int(size))
                continue
            if d is Dim.AUTO:
                sym = env.auto_symbol(size)
                dims[sym.name] = DimInfo(sym.name, 1, math.inf, int(size), [site], "auto")
                shape.append(sym)
                continue
            if d is Dim.DYNAMIC:
                name = f"{_leaf_name(path)}_dim{axis}"
                sym = env.create_symbol(name, 0 if size == 0 else 1, None, size, "dynamic")
                dims[name] = DimInfo(name, env.ranges[sym][0], math.inf, int(size), [site], "dynamic")
                shape.append(sym)
                continue
            if isinstance(d, _DerivedDim):
                root, k, c = d.root, d.scale, d.offset
                if (size - c) % k or (size - c) // k < root.min or \
                        (root.max is not None and (size - c) // k > root.max):
                    raise ConstraintsExceededError(
                        f"{site} = {size} is outside {d.name} for {root.name} in "
                        f"[{root.min}, {root.max if root.max is not None else 'inf'}]")
                rsize = (size - c) // k
                sym = _named(env, dims, root, rsize, f"{site} ({d.name})")
                shape.append(k * sym + c)
                continue
            if isinstance(d, Dim):
                if size < d.min or (d.max is not None and size > d.max):
                    raise ConstraintsExceededError(
                        f"{site} = {size} is outside {d.name} in [{d.min}, {d.max if d.max is not None else 'inf'}]")
                shape.append(_named(env, dims, d, size, site))
                continue
            raise TypeError(f"unsupported dim spec {d!r} for {site}")
        shapes.append(tuple(shape))
    return shapes, dims


def _named(env: ShapeEnv, dims: dict, d: Any, size: int, site: str) -> sympy.Symbol:
    info = dims.get(d.name)
    if info is not None:
        if info.hint != size:
            raise ConstraintsExceededError(
                f"{site} = {size}, but {info.sites[0]} = {info.hint} and both are the dim {d.name}: "
                f"the example inputs disagree with the declared dynamic_shapes")
        info.sites.append(site)
        return env.create_symbol(d.name, d.min, d.max, size, "named")
    sym = env.create_symbol(d.name, d.min, d.max, size, "named")
    dims[d.name] = DimInfo(d.name, d.min, math.inf if d.max is None else d.max, int(size), [site], "named")
    return sym


def capture(model: Any, args: tuple, kwargs: Optional[dict], dynamic_shapes: Any = None, *,
            mode: str = "export", preserve_module_call_signature: tuple = (),
            draft_log: Any = None) -> CaptureResult:
    """Trace ``model`` on the examples; never raises for violations (see ``result.violations``).

    Args:
        mode: ``"export"`` or ``"draft"``.  Draft mode goes on where export raises
            (see :mod:`tensorplay_export.capture.draft`): ops without a shape rule run
            opaquely (``result.op_table``), value reads and data-dependent guards follow
            the example and get ``tpe.assert_guard`` runtime checks.
        draft_log: (draft mode) a :class:`~tensorplay_export.capture.draft.DraftLog` to fill,
            so a caller still sees what was logged when capture raises; a new one by default
            (``result.draft``).

    Raises:
        ConstraintsExceededError: an example outside its declared range.
        DataDependentError: (mode ``"export"``) a guard on a data-dependent size or a read
            of an array's value.
        UnsupportedOpError: (mode ``"export"``) an op without a shape rule.
        CaptureError: capture itself failed (with the user's line).

    numpy runs on the examples with one BLAS thread (:mod:`.capture.blas`): the
    examples are small, and thread hand-offs cost more than they save.
    """
    with one_blas_thread():
        return _capture(model, args, kwargs, dynamic_shapes, mode=mode,
                        preserve_module_call_signature=preserve_module_call_signature, draft_log=draft_log)


def _capture(model: Any, args: tuple, kwargs: Optional[dict], dynamic_shapes: Any = None, *,
             mode: str = "export", preserve_module_call_signature: tuple = (),
             draft_log: Any = None) -> CaptureResult:
    """:func:`capture` without the BLAS thread limit."""
    if mode not in ("export", "draft"):
        raise ValueError(f"capture mode must be 'export' or 'draft', got {mode!r}")
    from .spec_normalize import input_leaf_paths, normalize_dynamic_shapes

    from .ops.registry import all_ops

    all_ops()  # load every op family before anything is patched
    kwargs = dict(kwargs or {})
    args = tuple(args)
    specs = normalize_dynamic_shapes(model, args, kwargs, dynamic_shapes)
    leaves, in_spec = pytree.tree_flatten((args, kwargs))
    paths = input_leaf_paths(model, args, kwargs)
    env = ShapeEnv(_solver(), mode)
    shapes, dims = _make_symbols(env, leaves, specs, paths)
    tracer = Tracer(env, draft=draft_log)
    from .nn.module import _CALL_HOOK, Module

    is_module = isinstance(model, Module)
    state = lift_module_state(tracer, model) if is_module else None
    input_kinds: list = []
    if state is not None:
        for fqn, traced, value in state.params:
            input_kinds.append((traced.node.name, "parameter", fqn, None, np.asarray(value)))
        for fqn, traced, value, persistent in state.buffers:
            input_kinds.append((traced.node.name, "buffer", fqn, persistent, np.asarray(value)))
    # user inputs (copies, so the model cannot mutate the caller's arrays)
    work = [leaf.copy() if isinstance(leaf, np.ndarray) else leaf for leaf in leaves]
    pristine = [leaf.copy() if isinstance(leaf, np.ndarray) else leaf for leaf in leaves]
    traced_leaves: list = []
    user_arrays: list = []           # (placeholder node, traced, pristine copy) per array input
    sites: list = []
    used_names: set = set()
    for leaf, shape, path in zip(work, shapes, paths):
        name = _leaf_name(path)
        while name in used_names:
            name += "_"
        used_names.add(name)
        if isinstance(leaf, np.ndarray):
            bind = {axis: d for axis, d in enumerate(shape) if isinstance(d, sympy.Symbol)}
            t = tracer.placeholder(name, leaf, shape, {"bind": bind} if bind else None)
            if tracer.user_anchor is None:
                tracer.user_anchor = t.node
            traced_leaves.append(t)
            user_arrays.append((t.node, t, pristine[len(traced_leaves) - 1]))
            sites.append((path, t.node.name, shape, leaf.dtype))
            input_kinds.append((t.node.name, "user_input", path, None, leaf))
        else:
            node = tracer.graph.placeholder(name, meta={"shape": None, "dtype": None})
            if tracer.user_anchor is None:
                tracer.user_anchor = node
            traced_leaves.append(leaf)
            input_kinds.append((node.name, "user_input_constant", path, None, leaf))
    t_args, t_kwargs = pytree.tree_unflatten(traced_leaves, in_spec)
    calls = ModuleCalls(tuple(preserve_module_call_signature))
    token = CURRENT.set(tracer)
    hook_token = _CALL_HOOK.set(make_call_hook(tracer, state, calls)) if is_module else None
    fn_hook_token = _set_functional_hook(tracer)
    patch_numpy()
    try:
        if is_module:
            out = model(*t_args, **t_kwargs)
        elif isinstance(model, types.FunctionType):
            out = clone_function(tracer, model)(*t_args, **t_kwargs)
        elif isinstance(model, types.MethodType) and isinstance(model.__func__, types.FunctionType):
            out = clone_function(tracer, model.__func__)(model.__self__, *t_args, **t_kwargs)
        else:
            out = model(*t_args, **t_kwargs)
        mutations = buffer_mutations(state) if state is not None else []
    finally:
        unpatch_numpy()
        if fn_hook_token is not None:
            fn_hook_token[0].reset(fn_hook_token[1])
        if hook_token is not None:
            _CALL_HOOK.reset(hook_token)
        CURRENT.reset(token)
        if state is not None:
            state.restore()
    # A write to a user input (x[:k] = 0, x += 1, out=x) rebinds its traced array to the
    # write's node: the program returns that value and module() copies it into the caller's
    # array, as eager numpy would have changed it.
    input_mutations = [(ph.name, t) for ph, t, _before in user_arrays if t.node is not ph]
    out_leaves, out_spec = pytree.tree_flatten(out)
    outputs = []
    for v in out_leaves:
        if isinstance(v, (SymInt, SymFloat, SymBool)):
            v = env.specialize(v.expr, "returned as an output (outputs are arrays or Python numbers; a size "
                               "output is pinned to its example)", tracer.return_source())
        outputs.append(v)
    result = CaptureResult(tracer.graph, env, tracer, dims, sites, input_kinds, in_spec, out_spec,
                           outputs, mutations, calls, specs, tracer.op_table, tracer.draft, input_mutations)
    # lift constants referenced by outputs, then finish the graph
    values: list = []
    for _fqn, traced in mutations:
        values.append(traced.node if isinstance(traced, TracedArray) else traced)
    for _name, traced in input_mutations:
        values.append(traced.node)
    for v in outputs:
        values.append(v.node if isinstance(v, TracedArray) else v)
    for name, value in tracer.constants.items():
        input_kinds.append((name, "constant", name, None, value))  # ordered by placeholder later
    tracer.graph.output(values)
    inputs = {}
    for name, kind, target, persistent, value in input_kinds:
        inputs[name] = value
    for leaf, (name, kind, *_rest) in zip(pristine, [k for k in input_kinds if k[1].startswith("user")]):
        inputs[name] = leaf
    _eliminate_dead_code(tracer.graph)
    if tracer.draft is not None:
        from .capture.draft import insert_data_dependent_checks

        insert_data_dependent_checks(tracer.graph, env, tracer.draft)
    if needs_replay(tracer):
        expected = [t.example if isinstance(t, TracedArray) else t for _f, t in mutations] + \
            [t.example for _n, t in input_mutations] + \
            [v.example if isinstance(v, TracedArray) else v for v in outputs]
        check_replay(tracer.graph, inputs, {s: sympy.Integer(h) for s, h in env.hints.items()}, expected,
                     tracer.writes, tracer.op_table)
        if mode == "export":
            _check_unrecorded_input_writes(user_arrays, tracer.writes)
    return result


def _check_unrecorded_input_writes(user_arrays: list, writes: list) -> None:
    """Refuse a capture that changed a user input only through a view of it.

    ``v = x[:2]; v[:] = 0`` writes into ``x``'s example, but the write's node belongs to
    ``v``: the graph has no value for the new ``x``, so the caller's array would silently
    stay as it was.

    Raises:
        CaptureError: listing the writes seen during capture.
    """
    from .errors import CaptureError

    for ph, t, before in user_arrays:
        if t.node is not ph:
            continue
        now = t.example
        if now.shape == before.shape and np.array_equal(now, before, equal_nan=now.dtype.kind in "fc"):
            continue
        where = "".join(f"\n  {kind} at {src}" for kind, src in writes)
        raise CaptureError(
            f"the model changed the input {ph.name!r} through a view of it (numpy views share memory, "
            f"the exported program does not); write to the input itself instead (e.g. "
            f"{ph.name}[...] = value). Writes seen during capture:{where}")


def needs_replay(tracer: Tracer) -> bool:
    """Whether the replay check can find anything: some value was written in place.

    Every registry op is functional, so a trace without writes (``__setitem__``,
    in-place operators, ``out=``, ``np.copyto``: all in ``tracer.writes``) computes in
    the graph exactly what it computed during capture; replaying it would run numpy
    a second time for nothing (a fifth of a GPT export).  Draft captures always replay:
    their opaque ops may write into their arguments unseen.
    """
    return bool(tracer.writes) or tracer.draft is not None or bool(tracer.op_table)


def _set_functional_hook(tracer: Tracer) -> Any:
    """Record each ``nn.functional`` composite called on traced values as one registry op."""
    try:
        from .nn._dispatch import _FUNCTIONAL_HOOK
    except ImportError:
        return None
    from .ops.registry import has_op, get_op

    def hook(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        if tracer.in_impl or not (_any_traced(args) or _any_traced(kwargs)) or not has_op(name):
            return fn(*args, **kwargs)
        return tracer.call(get_op(name), tuple(args), dict(kwargs))

    return (_FUNCTIONAL_HOOK, _FUNCTIONAL_HOOK.set(hook))


def _any_traced(value: Any) -> bool:
    """A traced array or symbolic number anywhere in ``value`` (through tuples, lists, dicts).

    Runs on every ``nn.functional`` call during capture: a plain scan, no pytree flattening.
    """
    t = type(value)
    if t is TracedArray:
        return True
    if t is tuple or t is list:
        for v in value:
            if _any_traced(v):
                return True
        return False
    if t is dict:
        for v in value.values():
            if _any_traced(v):
                return True
        return False
    return isinstance(value, (SymInt, SymFloat))


def _eliminate_dead_code(graph: Graph) -> None:
    graph.eliminate_dead_code(is_impure=lambda n: bool(n.meta.get("bind")))


# -- building the program ------------------------------------------------------------------------
def _finish_graph(result: CaptureResult, extra_guards: tuple = ()) -> Any:
    """Apply AUTO replacements, insert the runtime checks; returns (contract, ranges).

    ``extra_guards``: GuardRecords (or sympy booleans) the program checks besides the
    accepted ones (draft_export passes its violations).
    """
    from .runtime_checks import InputContract, InputSite, insert_input_checks

    env = result.env
    repl = env.replacements
    graph = result.graph

    def sub(v: Any) -> Any:
        """``v`` (a size, or node args holding sizes) with the AUTO replacements applied."""
        return map_exprs(v, lambda e: e.xreplace(repl)) if repl else v

    if repl:
        for node in graph.nodes:
            if node.op == "call_function":
                node.args = sub(node.args)
                node.kwargs = sub(node.kwargs)
            if node.meta.get("shape") is not None:
                node.meta["shape"] = tuple(as_dim(sub(d)) for d in node.meta["shape"])
            bind = node.meta.get("bind")
            if bind:
                node.meta["bind"] = {a: s for a, s in bind.items() if s not in repl}
    sites = [InputSite(path, ph, tuple(as_dim(sub(d)) for d in shape), dtype)
             for path, ph, shape, dtype in result.sites]
    ranges: dict = {}
    for sym, (lo, hi) in env.ranges.items():
        if sym in repl or env.kinds.get(sym) == "unbacked":
            continue
        ranges[sym] = ValueRange(int(lo), math.inf if hi is None else int(hi))
    guards = []
    for rec in [*env.accepted, *extra_guards]:
        g = env.canon(sub(getattr(rec, "expr", rec)))
        if g is not sympy.true and g not in guards:
            guards.append(g)
    # A bound accepted on one AUTO root (s0 <= 512) is its range: range_constraints and the
    # runtime range check state it, instead of [1, inf] plus an extra guard.
    from .contract import fold_simple_bounds

    auto = {s: (int(v.lower), None if v.upper == math.inf else int(v.upper))
            for s, v in ranges.items() if env.kinds.get(s) == "auto"}
    folded, guards = fold_simple_bounds(auto, guards)
    for s, (lo, hi) in folded.items():
        ranges[s] = ValueRange(lo, math.inf if hi is None else hi)
    contract = InputContract(sites, ranges, guards, {s: env.names.get(s, s.name) for s in ranges})
    insert_input_checks(graph, contract)
    all_ranges = dict(ranges)
    for sym, (lo, hi) in env.ranges.items():
        if env.kinds.get(sym) == "unbacked":
            all_ranges[sym] = ValueRange(int(lo), math.inf if hi is None else int(hi))
    return contract, all_ranges


def build_program(result: CaptureResult, model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any, *,
                  extra_guards: Any = ()) -> Any:
    """The ExportedProgram of a capture.

    Args:
        extra_guards: GuardRecords (or sympy booleans over the input sizes) the program
            checks at run time besides the contract's accepted guards; ``draft_export``
            passes ``result.violations`` so its program is sound for what it accepts.
            Without them a capture with violations gives a program whose contract is
            too wide: ``export`` raises instead.

    Returns:
        ExportedProgram; ops of the capture's overlay (``result.op_table``) run
        through ``GraphModule(op_table=...)``.
    """
    from .codegen import GraphModule
    from .ops.registry import impl_table
    from .spec_normalize import _signature_target, equality_constraints_from
    from .program import ExportedProgram
    from .signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec, ModuleCallEntry,
                            ModuleCallSignature, OutputKind, OutputSpec, TensorArgument)

    contract, ranges = _finish_graph(result, tuple(extra_guards))
    graph = result.graph
    input_specs = []
    state_dict: dict = {}
    constants: dict = {}
    for name, kind, target, persistent, value in result.input_kinds:
        if kind == "parameter":
            input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(name), target))
            state_dict[target] = value
        elif kind == "buffer":
            input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(name), target, persistent))
            if persistent:
                state_dict[target] = value
            else:
                constants[target] = value
        elif kind == "constant":
            input_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(name), target))
            constants[target] = value
        elif kind == "user_input":
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name)))
        else:
            input_specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(name, value)))
    order = {n.name: i for i, n in enumerate(graph.placeholders())}
    input_specs.sort(key=lambda s: order[s.arg.name])
    out_node = graph.output_node
    output_specs = []
    values = out_node.args[0]
    n_mut = len(result.mutations)
    n_in_mut = len(result.input_mutations)
    for i, v in enumerate(values):
        arg = TensorArgument(v.name) if isinstance(v, Node) else ConstantArgument(f"out{i}", v)
        if i < n_mut:
            output_specs.append(OutputSpec(OutputKind.BUFFER_MUTATION, arg, result.mutations[i][0]))
        elif i < n_mut + n_in_mut:
            output_specs.append(OutputSpec(OutputKind.USER_INPUT_MUTATION, arg,
                                           result.input_mutations[i - n_mut][0]))
        else:
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, arg))
    signature = ExportGraphSignature(input_specs, output_specs)
    try:
        arg_names = list(inspect.signature(_signature_target(model)).parameters)
    except (TypeError, ValueError):
        arg_names = None
    root = ModuleCallEntry("", ModuleCallSignature([], [], result.in_spec, result.out_spec, arg_names))
    entries = [root]
    def call_signature(record: Any) -> Any:
        (ins, ispec), (outs, ospec) = record
        return ModuleCallSignature(
            [TensorArgument(v.node.name) if isinstance(v, TracedArray) else ConstantArgument("", v)
             for v in ins],
            [TensorArgument(v.node.name) if isinstance(v, TracedArray) else ConstantArgument("", v)
             for v in outs], ispec, ospec)

    # one entry per module (first call); a preserved module's k-th further call is ``fqn@k``
    seen_calls: dict = {}
    for fqn, _call_id in result.calls.log:
        if fqn == "":
            continue
        k = seen_calls.get(fqn, 0)
        seen_calls[fqn] = k + 1
        sigs = result.calls.signatures.get(fqn)
        if k == 0:
            entries.append(ModuleCallEntry(fqn, call_signature(sigs[0]) if sigs else None))
        elif sigs is not None and k < len(sigs):
            entries.append(ModuleCallEntry(f"{fqn}@{k}", call_signature(sigs[k])))
    placeholder_of_path = {path: ph for path, ph, _s, _d in result.sites}
    equalities = []
    for eq in equality_constraints_from(result.leaf_specs):
        equalities.append(type(eq)(tuple((placeholder_of_path.get(p, p), a) for p, a in eq.sites), eq.name))
    gm = GraphModule(graph, op_table=impl_table(result.op_table))
    ep = ExportedProgram(gm, signature, example_inputs=(args, kwargs), dynamic_shapes=dynamic_shapes,
                         module_call_graph=entries, range_constraints=ranges,
                         equality_constraints=equalities, state_dict=state_dict, constants=constants)
    mark_opaque(ep, graph, result.op_table)
    return ep


def mark_opaque(ep: Any, graph: Graph, op_table: Any) -> tuple:
    """Set ``ep.opaque_ops``: sorted names of the overlay ops (``tpe.opaque.*``) the graph calls.

    Opaque ops are draft_export's stand-ins for numpy functions without a shape rule:
    they exist only in the capturing process (``op_table``), never in the registry, so a
    serializer must refuse a program whose ``opaque_ops`` is not empty (loading could not
    resolve them).  ``()`` for every ``export`` program.
    """
    names = tuple(sorted({n.target for n in graph.nodes
                          if n.op == "call_function" and op_table and n.target in op_table}))
    ep.opaque_ops = names
    return names


def export(model: Any, *args: Any, dynamic_shapes: Any = None, strict: bool = False,
           preserve_module_call_signature: Any = (), **kwargs: Any) -> Any:
    """Capture ``model`` on the example inputs into an ExportedProgram.

    Args:
        model: an ``nn.Module`` or a plain callable over numpy arrays.
        *args, **kwargs: example inputs (pytrees of arrays and constants).
        dynamic_shapes: which sizes may vary (see DESIGN.md, "Conventions for dynamic shapes").
        strict: accepted; validation is identical in both modes.
        preserve_module_call_signature: submodule fqns whose call signatures are recorded.

    Returns:
        ExportedProgram whose ``module()`` checks every call against the contract.

    Raises:
        ConstraintViolationError: the model needs more than the declared dims allow.
        DataDependentError: a guard on a data-dependent size.
        ConstraintsExceededError: an example size is outside its declared range.
        UnsupportedOpError: an op without a shape rule (names the numpy function and line).
        CaptureError: numpy raised inside the model, or the replay check failed.
    """
    result = capture(model, args, kwargs, dynamic_shapes, mode="export",
                     preserve_module_call_signature=tuple(preserve_module_call_signature or ()))
    if result.env.violations:
        from .violations import build_violation_error

        raise build_violation_error(result.env.violations, result.dims)
    return build_program(result, model, args, kwargs, dynamic_shapes)


def export_for_training(model: Any, *args: Any, dynamic_shapes: Any = None, **kwargs: Any) -> Any:
    """Like :func:`export`; buffers assigned in ``forward`` are ``BUFFER_MUTATION`` outputs."""
    return export(model, *args, dynamic_shapes=dynamic_shapes, **kwargs)
