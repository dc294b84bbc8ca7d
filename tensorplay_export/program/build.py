"""Building an ExportedProgram from a capture: AUTO replacements, runtime input checks, signature.

:func:`build_program` turns a :class:`~tensorplay_export.capture.entry.CaptureResult`
into an :class:`~tensorplay_export.program.exported.ExportedProgram`: the AUTO
replacements are applied to the graph, the contract (root ranges, accepted
guards, input sites) is inserted as ``tpe.*`` check nodes ahead of all
compute (:mod:`.input_checks`), and the graph signature and module-call
entries are recorded.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import sympy

from solver.forms import linear_bound, min_max_parts

from ..capture.entry import CaptureResult
from ..capture.symbolic import SymBool, SymFloat, SymInt
from ..capture.traced import TracedArray
from ..errors import CaptureError
from ..graph.codegen import GraphModule
from ..graph.ir import Graph, Node, map_exprs
from ..ops.ctx import as_dim
from ..ops.registry import has_side_effect
from ..records import ValueRange
from ..specs.binding import signature_target
from ..specs.dims import EqualityConstraint
from ..specs.normalize import equality_constraints_from
from .call_binding import call_parameters
from .exported import ExportedProgram
from .input_checks import InputContract, InputSite, IntSite, insert_input_checks
from .signature import (
    ConstantArgument, ExportGraphSignature, InputKind, InputSpec, ModuleCallEntry, ModuleCallSignature,
    OutputKind, OutputSpec, SymBoolArgument, SymFloatArgument, SymIntArgument, TensorArgument,
)

__all__ = ["build_program", "finish_graph", "fold_simple_bounds", "eliminate_dead_code"]


def eliminate_dead_code(graph: Graph) -> bool:
    """Erase unused call nodes, keeping symbol binds and side-effect ops (the input checks)."""
    return graph.eliminate_dead_code(is_impure=lambda n: has_side_effect(n.target))


def fold_simple_bounds(ranges: dict, guards: list) -> tuple[dict, list]:
    """Move bounds on one root (``s0 <= 512``, ``s0 >= 2``) from ``guards`` into ``ranges``.

    A program built with ``Dim.AUTO`` keeps such an accepted guard as an extra
    runtime check beside the root's declared range ``[1, inf]``; as a contract
    both say the same thing, and a range is what users and ``diff`` compare.
    Equalities and other guards are kept in order.
    """
    ranges = dict(ranges)
    kept = []
    # a bound on a Min or Max (Swin's min(H, W) > 4) is one bound per argument
    parts = [p for g in guards for p in (min_max_parts(g) if len(min_max_parts(g)) > 1 else [g])
             if p is not sympy.true]
    for g in parts:
        bound = (linear_bound(g) if isinstance(g, (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)) else None)
        if bound is None or bound[0] not in ranges:
            kept.append(g)
            continue
        r, lo, hi = bound
        old_lo, old_hi = ranges[r]
        new_lo = old_lo if lo is None else max(old_lo, lo)
        new_hi = old_hi if hi is None else (hi if old_hi is None else min(old_hi, hi))
        ranges[r] = (new_lo, new_hi)
    return ranges, kept


def finish_graph(result: CaptureResult, extra_guards: tuple = ()) -> Any:
    """Apply AUTO replacements, insert the runtime checks; returns (contract, ranges).

    ``extra_guards``: GuardRecords (or sympy booleans) the program checks besides the
    accepted ones (draft_export passes its violations).
    """
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
    # A bound accepted on one AUTO or DYNAMIC root (s0 <= 512) is its range: range_constraints
    # and the runtime range check state it, instead of [1, inf] plus an extra guard.
    auto = {s: (int(v.lower), None if v.upper == math.inf else int(v.upper))
            for s, v in ranges.items() if env.kinds.get(s) in ("auto", "dynamic")}
    folded, guards = fold_simple_bounds(auto, guards)
    for s, (lo, hi) in folded.items():
        lo, hi = _admitted_extent(s, lo, hi, guards, env.hints.get(s))
        ranges[s] = ValueRange(lo, math.inf if hi is None else hi)
    int_sites = [IntSite(path, ph, as_dim(sub(size))) for path, ph, size in result.int_sites]
    contract = InputContract(sites, ranges, guards, {s: env.names.get(s, s.name) for s in ranges}, int_sites)
    insert_input_checks(graph, contract)
    all_ranges = dict(ranges)
    checked = _checked_conditions(graph)
    for sym, (lo, hi) in env.ranges.items():
        if env.kinds.get(sym) == "unbacked":
            lo, hi = _admitted_extent(sym, int(lo), None if hi is None else int(hi), checked, env.hints.get(sym))
            all_ranges[sym] = ValueRange(int(lo), math.inf if hi is None else int(hi))
    return contract, all_ranges


def _checked_conditions(graph: Graph) -> list:
    """The size conditions the program checks at run time on data-dependent sizes: each
    ``tpe.check_size`` (a ``tpe.check`` of the model) and each ``tpe.assert_guard`` over sizes
    (draft's assumed data-dependent guards); read from the nodes' arguments, so a loaded or
    rewritten program states the same facts."""
    out = []
    for node in graph.nodes:
        if node.op != "call_function" or node.target not in ("tpe.check_size", "tpe.assert_guard"):
            continue
        cond = node.args[0] if node.args else None
        if isinstance(cond, sympy.Basic) and not isinstance(cond, sympy.Expr) and cond not in (sympy.true, sympy.false):
            out.append(cond)
    return out


def _admitted_extent(sym: Any, lo: int, hi: Any, guards: list, hint: Any) -> tuple:
    """An AUTO root's (or a data-dependent size's) range as the least and greatest size its own
    guards admit (``s // 2 >= 2`` and ``s % 4 == 0`` over ``[2, inf]`` report ``[4, inf]``;
    ``tpe.check(u0 >= 4)`` and ``tpe.check(u0 <= 7)`` report ``u0: [4, 7]``, as torch's
    ``range_constraints`` after ``torch._check``), decided by the solver; the guards stay
    runtime checks (a range does not state their gaps)."""
    conds = [g for g in guards if g.free_symbols == {sym}]
    if not conds or hint is None:
        return lo, hi
    from solver import value_extent

    try:
        return value_extent(conds, sym.name, lo, hi, int(hint))
    except Exception:  # noqa: BLE001 - the range is a report: when the solver cannot say, keep it
        return lo, hi


_SIZE_ARGUMENTS = {"int": SymIntArgument, "float": SymFloatArgument, "bool": SymBoolArgument}


def _output_argument(value: Any, index: int) -> Any:
    """The signature's record of output ``index``: an array node, a size node, or a constant."""
    if not isinstance(value, Node):
        return ConstantArgument(f"out{index}", value)
    if value.target == "tpe.size_value":
        return _SIZE_ARGUMENTS[value.args[1]](value.name)
    return TensorArgument(value.name)


def _call_size_output(graph: Graph, value: Any, fqn: str, call_id: Any) -> Any:
    """A preserved module call's output: a constant, or (a size) a ``tpe.size_value`` node in the call.

    A submodule returning ``x.shape[0] + 1`` hands its caller a size expression, not a
    node; the module's recorded signature names a node computing it, placed at the end
    of the call's nodes (with the call's ``module_stack``, so ``unflatten`` runs it as
    part of that call).  ``tpe.size_value`` is a side-effect op, so dead-code
    elimination keeps it although only the signature reads it.
    """
    kind = {SymBool: "bool", SymFloat: "float", SymInt: "int"}.get(type(value))
    if kind is None or not sympy.sympify(value.expr).free_symbols:
        return ConstantArgument("", value if kind is None else value.env.hint(value.expr))
    entry = (fqn, call_id)
    region = [n for n in graph.nodes if entry in (n.meta.get("module_stack") or ())]
    if region:
        stack = tuple(region[-1].meta["module_stack"])
        stack = stack[:stack.index(entry) + 1]
        anchor = region[-1]._next
    else:
        stack, anchor = (entry,), graph.output_node
    with graph.inserting_before(anchor):
        node = graph.call_function("tpe.size_value", (sympy.sympify(value.expr), kind), name_hint=f"sym_{kind}",
                                   meta={"shape": None, "dtype": None, "size_kind": kind, "source": None,
                                         "module_path": fqn, "module_stack": stack})
    return _SIZE_ARGUMENTS[kind](node.name)


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

    contract, ranges = finish_graph(result, tuple(extra_guards))
    graph = result.graph
    input_specs = []
    state_dict: dict = {}
    constants: dict = {}
    attribute_fqns = _array_attributes(model)
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
            target = attribute_fqns.get(id(value), target)
            input_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(name), target))
            constants[target] = value
        elif kind == "user_input":
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name)))
        elif kind == "user_input_symint":  # a dynamic int input (torch's SymInt input)
            input_specs.append(InputSpec(InputKind.USER_INPUT, SymIntArgument(name)))
        else:
            input_specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(name, value)))
    order = {n.name: i for i, n in enumerate(graph.placeholders())}
    input_specs.sort(key=lambda s: order[s.arg.name])
    out_node = graph.output_node
    output_specs = []
    values = out_node.args[0]
    n_par = len(result.param_mutations)
    n_mut = len(result.mutations)
    n_in_mut = len(result.input_mutations)
    for i, v in enumerate(values):
        arg = _output_argument(v, i)
        if i < n_par:
            output_specs.append(OutputSpec(OutputKind.PARAMETER_MUTATION, arg, result.param_mutations[i][0]))
            continue
        i -= n_par
        if i < n_mut:
            output_specs.append(OutputSpec(OutputKind.BUFFER_MUTATION, arg, result.mutations[i][0]))
        elif i < n_mut + n_in_mut:
            output_specs.append(OutputSpec(OutputKind.USER_INPUT_MUTATION, arg,
                                           result.input_mutations[i - n_mut][0]))
        else:
            output_specs.append(OutputSpec(OutputKind.USER_OUTPUT, arg))
    signature = ExportGraphSignature(input_specs, output_specs)
    params, forward_name = call_parameters(signature_target(model))
    arg_names = None if params is None else [p.name for p in params]
    root = ModuleCallEntry("", ModuleCallSignature([], [], result.in_spec, result.out_spec, arg_names))
    root.signature.parameters, root.signature.forward_name = params, forward_name
    entries = [root]
    def call_signature(record: Any, fqn: str, call_id: Any) -> Any:
        (ins, ispec), (outs, ospec) = record
        return ModuleCallSignature(
            [TensorArgument(v.node.name) if isinstance(v, TracedArray) else ConstantArgument("", v)
             for v in ins],
            [TensorArgument(v.node.name) if isinstance(v, TracedArray) else _call_size_output(graph, v, fqn, call_id)
             for v in outs], ispec, ospec)

    # one entry per module (first call); a preserved module's k-th further call is ``fqn@k``
    seen_calls: dict = {}
    for fqn, call_id in result.calls.log:
        if fqn == "":
            continue
        k = seen_calls.get(fqn, 0)
        seen_calls[fqn] = k + 1
        sigs = result.calls.signatures.get(fqn)
        if k == 0:
            entries.append(ModuleCallEntry(fqn, call_signature(sigs[0], fqn, call_id) if sigs else None))
        elif sigs is not None and k < len(sigs):
            entries.append(ModuleCallEntry(f"{fqn}@{k}", call_signature(sigs[k], fqn, call_id)))
    placeholder_of_path = {path: ph for path, ph, _s, _d in result.sites}
    equalities = []
    for eq in equality_constraints_from(result.leaf_specs):
        # array axes only (torch's equality constraints tie tensor dims): an int input tied to an
        # axis is checked by its tpe.assert_int and stated by the contract's int inputs
        axes = tuple((placeholder_of_path.get(p, p), a) for p, a in eq.sites if a is not None)
        if len(axes) > 1:
            equalities.append(type(eq)(axes, eq.name))
    equalities = _with_inferred_ties(equalities, result)
    gm = GraphModule(graph, op_table=result.op_table or None)
    ep = ExportedProgram(gm, signature, example_inputs=(args, kwargs), dynamic_shapes=dynamic_shapes,
                         module_call_graph=entries, range_constraints=ranges,
                         equality_constraints=equalities, state_dict=state_dict, constants=constants)
    compile_module(ep)
    return ep


def _with_inferred_ties(named: list, result: CaptureResult) -> list:
    """``named`` plus the input axes capture tied together (a ``Dim.AUTO`` axis found equal to
    another axis): one EqualityConstraint per size symbol shared by two or more input axes.

    The runtime checks enforce these ties already (``tpe_assert_dim``); listing them makes
    ``equality_constraints`` say what the program checks.  A named Dim's constraint is
    widened to every axis tied to it and keeps its name.
    """
    groups: dict = {}
    for _path, placeholder, shape, _dtype in result.sites:
        for axis, size in enumerate(shape):
            size = sympy.sympify(size).xreplace(result.env.replacements)
            if isinstance(size, sympy.Symbol):
                groups.setdefault(size, []).append((placeholder, axis))
    by_name = {eq.name: eq for eq in named}
    out = list(named)
    for sym, sites in groups.items():
        if len(sites) < 2:
            continue
        known = by_name.get(sym.name)
        if known is not None:
            if set(sites) > set(known.sites):
                out[out.index(known)] = type(known)(tuple(sites), known.name)
            continue
        if any(set(sites) <= set(eq.sites) for eq in named):
            continue
        out.append(EqualityConstraint(tuple(sites), sym.name))
    return out


def _array_attributes(model: Any) -> dict[int, str]:
    """``id(array) -> "sub.table"`` for the plain ndarray attributes of the model's modules.

    A lifted constant that is a module attribute gets its qualified name as its
    target (``InputSpec.target``, the ``tensor_constants`` key); one that is not
    (a module global, an array built during capture) keeps its placeholder name.
    """
    named = getattr(model, "named_modules", None)
    if not callable(named):
        return {}
    out: dict[int, str] = {}
    for fqn, module in named():
        for key, value in vars(module).items():
            if type(value) is np.ndarray:
                out.setdefault(id(value), f"{fqn}.{key}" if fqn else key)
    return out


def compile_module(ep: ExportedProgram) -> None:
    """Build ``ep.module()`` now, generating and compiling its forward (every later view shares it).

    As load does: a code generator or compiler failure (an unprintable
    expression, source nested too deeply) surfaces at export, not at the
    program's first call.

    Raises:
        CaptureError: the generated source does not compile (a bug in the code
            generator; the compiler's error is its ``__cause__``).
    """
    try:
        ep.module()  # the program's cached module: the first module() call would build the same
    except (SyntaxError, RecursionError) as e:
        raise CaptureError(f"the program's generated code does not compile ({type(e).__name__}: {e}); "
                           "this is a bug in tensorplay_export's code generator: please report it "
                           "with the model") from e
