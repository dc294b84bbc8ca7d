"""The capture entry: trace a model on its example inputs into a graph, symbols and guards.

Flow: normalize the spec -> one symbol per Dim (AUTO dims ``s0, s1, ...``) ->
copy the inputs -> trace the model (every op: numpy on the examples + shape
rule on the symbols, guards decided by the solver) -> replay check.
:func:`capture` returns everything (graph, records, env) as a
:class:`CaptureResult` and never raises for violations; ``export`` and
``draft_export`` build on it.
"""
from __future__ import annotations

import copy
import math
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import sympy

from .. import pytree
from ..errors import CaptureError, ConstraintsExceededError, NumpySizeError
from ..graph.ir import Graph
from ..nn._dispatch import _FUNCTIONAL_HOOK
from ..nn import _composites  # noqa: F401  (registers nn.functional's composite ops: ops never imports nn)
from ..ops import sizes as ops_sizes
from ..ops.registry import has_side_effect
from ..records import DimInfo, derived_site
from ..specs.binding import leaf_name
from .blas import one_blas_thread
from .frames import error_source
from .patching import clone_function, patch_numpy, unpatch_numpy
from .replay import check_replay
from .shape_env import ShapeEnv
from .python_state import module_roots, restore_contents, saved_contents
from .state import RANDOM_OP_PREFIX, ModuleCalls, buffer_mutations, check_generator_state, lift_module_state, \
    make_call_hook
from .symbolic import SymBool, SymFloat, SymInt
from .traced import TracedArray
from .tracer import CURRENT, Tracer, static_axis_sites

__all__ = ["capture", "CaptureResult", "SizeOutput", "needs_replay"]


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
    param_mutations: list = field(default_factory=list)  # (fqn, traced) parameters written in place
    int_sites: list = field(default_factory=list)   # (path, placeholder name, size expr) per dynamic int input

    @property
    def violations(self) -> list:
        return self.env.violations


def new_solver() -> Any:
    """The solver one capture decides its guards with (200 ms per query)."""
    from solver import ShapeSolver

    return ShapeSolver(timeout_ms=200)


def make_symbols(env: ShapeEnv, leaves: list, specs: list, paths: list,
                 inferred: frozenset = frozenset()) -> tuple[list, dict]:
    """Symbolic shape per array leaf; DimInfo per user-visible symbol.

    ``inferred``: names of ``Dim`` objects that are ``Dim.DYNAMIC`` axes shared by several
    sites (``AdditionalInputs.shared``: axes equal in every example set); their symbol takes
    refinements as a DYNAMIC one does.

    Raises:
        ConstraintsExceededError: an example size outside its declared range (all of them,
            as violation records with the widened ranges as fixes, see
            ``specs.normalize.example_range_error``; the bullet names the user's call),
            or two sites of one Dim with different example sizes.
    """
    from ..specs.dims import Dim, _DerivedDim, hint_bounds, is_auto, is_dynamic
    from ..specs.normalize import OutsideExample, collect_dims, example_range_error, multi_root_mismatch, site_of
    from .frames import user_source

    # the names export makes (s0, u0, x_dim0) must never take a user Dim's name
    env.reserve_names(collect_dims(specs))
    dims: dict[str, DimInfo] = {}
    shapes: list = []
    outside: list[OutsideExample] = []
    multi: list = []   # (shape list, axis, dim, size, site): dims over several roots, bound last
    for leaf, spec, path in zip(leaves, specs, paths):
        is_int = spec is not None and None in spec.axes  # a dynamic int input: one "axis", None
        if not isinstance(leaf, np.ndarray) and not is_int:
            shapes.append(None)
            continue
        shape: list = []
        for axis, size in ([(None, int(leaf))] if is_int else enumerate(leaf.shape)):
            d = spec.axes.get(axis) if spec is not None else None
            site = site_of(path, axis)
            if d is None or d is Dim.STATIC or isinstance(d, int):
                shape.append(int(size))
                continue
            if is_auto(d) or is_dynamic(d):
                lo, hi = hint_bounds(d, int(size))
                if size < lo or (hi is not None and size > hi):  # reported with the others, with a fix
                    outside.append(OutsideExample(site, int(size), d, env.fresh_name(_hint_name(path, axis)),
                                                  spec.top))
                    shape.append(int(size))
                    continue
                if is_auto(d):
                    sym = env.auto_symbol(size, lo, hi)
                    kind = "auto"
                else:
                    sym = env.create_symbol(env.fresh_name(_hint_name(path, axis)), lo, hi, size, "dynamic")
                    kind = "dynamic"
                dims[sym.name] = DimInfo(sym.name, lo, math.inf if hi is None else hi, int(size), [site], kind,
                                         spec.top if kind == "dynamic" else None)
                shape.append(sym)
                continue
            if isinstance(d, _DerivedDim) and d.root is None:
                multi.append((shape, axis, d, int(size), site))
                shape.append(int(size))
                continue
            if isinstance(d, _DerivedDim):
                root, k, c = d.root, d.scale, d.offset
                if (size - c) % k or (size - c) // k < root.min or \
                        (root.max is not None and (size - c) // k > root.max):
                    outside.append(OutsideExample(site, int(size), d))
                    shape.append(int(size))
                    continue
                rsize = (size - c) // k
                sym = _named(env, dims, root, rsize, derived_site(site, d.name), seen=(site, d, int(size)))
                shape.append(k * sym + c)
                continue
            if isinstance(d, Dim):
                if size < d.min or (d.max is not None and size > d.max):
                    outside.append(OutsideExample(site, int(size), d))
                    shape.append(int(size))
                    continue
                shape.append(_named(env, dims, d, size, site, "dynamic" if d.name in inferred else "named"))
                continue
            raise TypeError(f"unsupported dim spec {d!r} for {site}")
        shapes.append(shape)
    if outside:  # every example outside its dim, with the widened ranges as fixes
        raise example_range_error(outside, user_source())
    for shape, axis, d, size, site in multi:  # sum(k*root) + c over roots bound at other axes
        why = multi_root_mismatch(site, size, d, {n: i.hint for n, i in dims.items() if i.kind == "named"})
        if why is not None:
            raise ConstraintsExceededError(why)
        expr = sympy.Integer(d.offset)
        for r, k in d.terms:
            expr += k * env.create_symbol(r.name, r.min, r.max, dims[r.name].hint, "named")
        dims[d.roots[0].name].sites.append(derived_site(site, d.name))
        shape[axis] = expr
    return [None if s is None else tuple(s) for s in shapes], dims


def _hint_name(path: str, axis: Any) -> str:
    """The symbol name of a ``Dim.DYNAMIC`` site: ``x_dim1`` for an axis, ``n`` for an int input."""
    return leaf_name(path) if axis is None else f"{leaf_name(path)}_dim{axis}"


def _named(env: ShapeEnv, dims: dict, d: Any, size: int, site: str, kind: str = "named",
           seen: Optional[tuple] = None) -> sympy.Symbol:
    """The symbol of the named dim ``d`` at ``site`` whose root size is ``size``; ``seen``: for a
    derived dim's site, ``(the axis, the derived dim, the size it has)``, for the message.

    Raises:
        ConstraintsExceededError: the dim was bound to another size at an earlier site (torch's
            words: expected y.shape[0] to be equal to 2*dimx, where dimx = 5, but got 6).
    """
    info = dims.get(d.name)
    if info is not None:
        if info.hint != size:
            axis, form, got = seen if seen is not None else (site, d.name, size)
            want = form.value_at({d.name: info.hint}) if seen is not None else info.hint
            need = f"; it would need {want}" if seen is not None else ""
            raise ConstraintsExceededError(
                f"expected {axis} to be equal to {form}, where {d.name} = {info.hint}, but got {got} ({d.name} is "
                f"{info.hint} at {info.sites[0]}{need}): the example inputs disagree with the declared dynamic_shapes")
        info.sites.append(site)
        return env.create_symbol(d.name, d.min, d.max, size, info.kind)
    sym = env.create_symbol(d.name, d.min, d.max, size, kind)
    dims[d.name] = DimInfo(d.name, d.min, math.inf if d.max is None else d.max, int(size), [site], kind)
    return sym


def capture(model: Any, args: tuple, kwargs: Optional[dict], dynamic_shapes: Any = None, *,
            mode: str = "export", preserve_module_call_signature: tuple = (),
            draft_log: Any = None) -> CaptureResult:
    """Trace ``model`` on the examples; never raises for violations (see ``result.violations``).

    Args:
        mode: ``"export"`` or ``"draft"``.  Draft mode goes on where export raises
            (see :mod:`tensorplay_export.capture.draft_log`): ops without a shape rule run
            opaquely (``result.op_table``), value reads and data-dependent guards follow
            the example and get ``tpe.assert_guard`` runtime checks.
        draft_log: (draft mode) a :class:`~tensorplay_export.capture.draft_log.DraftLog` to fill,
            so a caller still sees what was logged when capture raises; a new one by default
            (``result.draft``).

    Raises:
        ConstraintsExceededError: an example outside its declared range.
        DataDependentError: (mode ``"export"``) a guard on a data-dependent size or a read
            of an array's value.
        UnsupportedOpError: (mode ``"export"``) an op without a shape rule.
        CaptureError: capture itself failed (with the user's line).

    numpy runs on the examples with one BLAS thread (:mod:`.blas`): the
    examples are small, and thread hand-offs cost more than they save.
    """
    with one_blas_thread():
        return _capture(model, args, kwargs, dynamic_shapes, mode=mode,
                        preserve_module_call_signature=preserve_module_call_signature, draft_log=draft_log)


def _capture(model: Any, args: tuple, kwargs: Optional[dict], dynamic_shapes: Any = None, *,
             mode: str = "export", preserve_module_call_signature: tuple = (),
             draft_log: Any = None) -> CaptureResult:
    """:func:`capture` without the BLAS thread limit; the lists and dicts of the model's modules
    and of its inputs hold what they held before when it returns or raises (:mod:`.python_state`)."""
    # the inputs' containers too: one pytree does not walk (an OrderedDict, a deque) is the caller's own
    saved = saved_contents(module_roots(model) + list(args) + list((kwargs or {}).values()))
    try:
        return _capture_run(model, args, kwargs, dynamic_shapes, mode=mode,
                            preserve_module_call_signature=preserve_module_call_signature, draft_log=draft_log)
    finally:
        restore_contents(saved)


def _capture_run(model: Any, args: tuple, kwargs: Optional[dict], dynamic_shapes: Any = None, *,
                 mode: str = "export", preserve_module_call_signature: tuple = (),
                 draft_log: Any = None) -> CaptureResult:
    if mode not in ("export", "draft"):
        raise ValueError(f"capture mode must be 'export' or 'draft', got {mode!r}")
    from ..specs.dims import AdditionalInputs
    from ..specs.normalize import input_leaf_paths, normalize_dynamic_shapes

    from ..ops.registry import all_ops

    all_ops()  # load every op family before anything is patched
    kwargs = dict(kwargs or {})
    args = tuple(args)
    specs = normalize_dynamic_shapes(model, args, kwargs, dynamic_shapes)
    leaves, in_spec = pytree.tree_flatten((args, kwargs))
    paths = input_leaf_paths(model, args, kwargs)
    env = ShapeEnv(new_solver(), mode)
    shared = dynamic_shapes.shared if isinstance(dynamic_shapes, AdditionalInputs) else frozenset()
    shapes, dims = make_symbols(env, leaves, specs, paths, shared)
    tracer = Tracer(env, draft=draft_log)
    from ..nn.module import _CALL_HOOK, Module

    # -- (retrace) an exported module offers an nn.Module over its state (program/retrace.py), so
    # its parameters and buffers are lifted, and their updates recorded, as a module's
    view = getattr(type(model), "_tpe_capture_module", None)
    if view is not None and not isinstance(model, Module):
        model = view(model) or model
    # -- (end retrace)
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
    int_sites: list = []             # (path, placeholder name, size expression) per dynamic int input
    used_names: set = set()
    for leaf, shape, path, spec in zip(work, shapes, paths, specs):
        name = leaf_name(path)
        while name in used_names:
            name += "_"
        used_names.add(name)
        if isinstance(leaf, np.ndarray):
            bind = {axis: d for axis, d in enumerate(shape) if isinstance(d, sympy.Symbol)}
            t = tracer.placeholder(name, leaf, shape, {"bind": bind} if bind else None)
            tracer.static_sites[t.node] = static_axis_sites(path, shape, spec)  # for reasons (ArrayInfo.sites)
            if tracer.user_anchor is None:
                tracer.user_anchor = t.node
            traced_leaves.append(t)
            user_arrays.append((t.node, t, pristine[len(traced_leaves) - 1]))
            sites.append((path, t.node.name, shape, leaf.dtype))
            input_kinds.append((t.node.name, "user_input", path, None, leaf))
        elif shape is not None:  # a dynamic int input: the model gets a SymInt over its size expression
            size = sympy.sympify(shape[0])
            bind = {None: size} if isinstance(size, sympy.Symbol) else None
            node = tracer.graph.placeholder(name, meta={"shape": None, "dtype": None,
                                                        **({"bind": bind} if bind else {})})
            if tracer.user_anchor is None:
                tracer.user_anchor = node
            traced_leaves.append(SymInt(size, env))
            int_sites.append((path, node.name, size))
            input_kinds.append((node.name, "user_input_symint", path, None, leaf))
        else:
            node = tracer.graph.placeholder(name, meta={"shape": None, "dtype": None})
            if tracer.user_anchor is None:
                tracer.user_anchor = node
            traced_leaves.append(leaf)
            input_kinds.append((node.name, "user_input_constant", path, None, leaf))
    t_args, t_kwargs = pytree.tree_unflatten(traced_leaves, in_spec)
    calls = ModuleCalls(tuple(preserve_module_call_signature))
    tracer.module_calls = calls  # a retraced program logs its module calls here
    token = CURRENT.set(tracer)
    hook_token = _CALL_HOOK.set(make_call_hook(tracer, state, calls)) if is_module else None
    buffer_nodes = {t.node for _f, t, _v, _p in state.buffers} if state is not None else set()
    fn_hook_token = _set_functional_hook(tracer, buffer_nodes)
    patch_numpy()
    try:
        try:
            if is_module:
                out = state.root(*t_args, **t_kwargs)  # the per-capture view: the user's module stays as it is
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
    except NumpySizeError as err:  # numpy's error no handler of the model caught: reported as any numpy error
        raise err.uncaught().with_traceback(err.__traceback__) from err.__cause__
    except Exception as err:  # noqa: BLE001 - re-raised unless it is capture's fault, not the model's
        fault = traced_only_error(err, model, args, kwargs)
        if fault is None:
            raise
        # err's traceback: its innermost user frame is the model's line (error_source, draft's report)
        raise fault.with_traceback(err.__traceback__) from err
    # A write to a user input (x[:k] = 0, x += 1, out=x) rebinds its traced array to the
    # write's node: the program returns that value and module() copies it into the caller's
    # array, as eager numpy would have changed it.
    input_mutations = [(ph.name, t) for ph, t, _before in user_arrays if t.node is not ph]
    _refuse_constant_writes(tracer)
    # a parameter written in place (np.multiply(self.w, 2, out=self.w), self.w += g) was rebound
    # to the write's node: a PARAMETER_MUTATION output that module() applies, as eager would
    param_mutations = [(fqn, t) for fqn, t, _param in state.params if t.node.op != "placeholder"] \
        if state is not None else []
    out_leaves, out_spec = pytree.tree_flatten(out)
    outputs = []
    for v in out_leaves:
        if isinstance(v, (SymInt, SymFloat)) and v.numpy_type is not None:
            v = tracer.typed_size(v)  # a numpy scalar (n + np.int32(1)) stays symbolic, as its own node
        elif isinstance(v, (SymInt, SymFloat, SymBool)):
            v = _size_output(tracer, v)
        elif not isinstance(v, _CONSTANT_OUTPUTS):
            _refuse_output(tracer, v)
        outputs.append(v)
    result = CaptureResult(tracer.graph, env, tracer, dims, sites, input_kinds, in_spec, out_spec,
                           outputs, mutations, calls, specs, tracer.op_table, tracer.draft, input_mutations,
                           param_mutations, int_sites)
    # lift constants referenced by outputs, then finish the graph
    values: list = [traced.node for _fqn, traced in param_mutations]
    for _fqn, traced in mutations:
        values.append(traced.node if isinstance(traced, TracedArray) else traced)
    for _name, traced in input_mutations:
        values.append(traced.node)
    for v in outputs:
        values.append(v.node if isinstance(v, (TracedArray, SizeOutput)) else v)
    for name, value in tracer.constants.items():
        input_kinds.append((name, "constant", name, None, value))  # ordered by placeholder later
    tracer.graph.output(values)
    inputs = {}
    for name, kind, target, persistent, value in input_kinds:
        inputs[name] = value
    for leaf, (name, kind, *_rest) in zip(pristine, [k for k in input_kinds if k[1].startswith("user")]):
        inputs[name] = leaf
    tracer.graph.eliminate_dead_code(is_impure=lambda n: has_side_effect(n.target))  # draft's value checks stay
    if tracer.draft is not None:
        from .draft_log import insert_data_dependent_checks

        insert_data_dependent_checks(tracer.graph, env, tracer.draft)
    if needs_replay(tracer):
        expected = [t.example for _f, t in param_mutations] + \
            [t.example if isinstance(t, TracedArray) else t for _f, t in mutations] + \
            [t.example for _n, t in input_mutations] + \
            [v.example if isinstance(v, (TracedArray, SizeOutput)) else v for v in outputs]
        check_replay(tracer.graph, inputs, {s: sympy.Integer(h) for s, h in env.hints.items()}, expected,
                     tracer.writes, tracer.op_table)
        if mode == "export":
            _check_unrecorded_input_writes(user_arrays, tracer.writes)
    return result


def traced_only_error(err: Exception, model: Any, args: tuple, kwargs: dict) -> Optional[CaptureError]:
    """A clear error for an exception the traced run of the model raised where an eager run
    does not, or None (``err`` is this package's own, or the model raises it eagerly too).

    A size is symbolic while export traces (``x.shape[0]`` is a SymInt, ``np.sqrt(n)`` a
    traced 0-d array): code that checks a number's exact type (C extensions,
    ``type(n) is int``) or needs its concrete value gets that instead, and raises what eager
    code never sees (``TypeError: ... not supported``).  The model is run eagerly once on
    copies of the examples (a module on a deep copy, so its state stays as it is) to tell
    the two apart; the error names the model's innermost line of ``err``'s traceback.
    """
    if type(err).__module__.split(".")[0] == "tensorplay_export":
        return None
    leaves, spec = pytree.tree_flatten((args, kwargs))
    try:
        target = copy.deepcopy(model) if not isinstance(model, (types.FunctionType, types.MethodType)) else model
        e_args, e_kwargs = pytree.tree_unflatten(
            [leaf.copy() if isinstance(leaf, np.ndarray) else leaf for leaf in leaves], spec)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            target(*e_args, **e_kwargs)
    except Exception:  # noqa: BLE001 - the model's own error (or one a copy cannot run): err stands
        return None
    detail = f" ({type(err).__name__}: {err})" if str(err) else ""
    return _traced_only_class(type(err))(
        f"the model raised {type(err).__name__} while export traced it, but runs eagerly on the example "
        f"inputs{detail}. A size is symbolic while export traces (x.shape[i] is a SymInt, np.sqrt(n) a traced "
        "0-d array): code that checks a number's exact type (a C extension, `type(n) is int`) or needs its "
        "concrete value gets that instead. Convert the size where it leaves the model's own arithmetic, e.g. "
        "int(n) (pins it to the example's value, a specialization the contract records), or compute the "
        f"value outside the model and pass it in\n  at {error_source(err)}")


# the builtin kinds a caller of export may already catch (a model's TypeError stays a TypeError)
_CATCHABLE = (TypeError, ValueError, AttributeError, LookupError, ArithmeticError, AssertionError)
_TRACED_ONLY: dict = {}


def _traced_only_class(kind: type) -> type:
    """CaptureError, also a subclass of the builtin kind of ``kind`` (``except TypeError``
    around export still catches a traced-only TypeError)."""
    base = next((b for b in _CATCHABLE if issubclass(kind, b)), None)
    if base is None:
        return CaptureError
    cls = _TRACED_ONLY.get(base)
    if cls is None:
        cls = _TRACED_ONLY[base] = type(f"Capture{base.__name__}", (CaptureError, base),
                                        {"__module__": CaptureError.__module__,
                                         "__doc__": f"A CaptureError that is also a {base.__name__}."})
    return cls


@dataclass
class SizeOutput:
    """A size the model returns (``x.shape[0] * 2 + 1``): computed at run time, never pinned.

    ``node``: its ``tpe.size_value`` node; ``expr``: the size expression; ``kind``:
    ``"int"``, ``"float"`` or ``"bool"``; ``example``: its value at the example sizes.
    """

    node: Any
    expr: Any
    kind: str
    example: Any


# what a program may return besides traced arrays and sizes: values it can hold as constants
_CONSTANT_OUTPUTS = (TracedArray, np.ndarray, np.generic, np.dtype, int, float, complex, bool, str, bytes,
                     type(None), type(Ellipsis), slice)


def _refuse_output(tracer: Tracer, v: Any) -> None:
    """Refuse a returned object the program cannot represent (a plain object, a generator).

    The program would hand back the very object capture saw, holding values of the example
    (and arrays traced on it) whatever the inputs; a leaf of the output pytree must be an
    array, a size, a number, a string or None, inside tuples, lists, dicts, namedtuples and
    registered dataclasses.

    Raises:
        CaptureError: naming the type and the model's return line.
    """
    from ..errors import CaptureError

    src = tracer.return_source()
    where = f" at {src.where}" if src is not None else ""
    raise CaptureError(
        f"the model returns a {type(v).__module__}.{type(v).__qualname__} object{where}, which an exported "
        f"program cannot return (it would return the object capture saw, built from the example's values): "
        f"return arrays, sizes, numbers, strings or None, in tuples, lists, dicts or namedtuples, or "
        f"register the class with tensorplay_export.register_dataclass if it is a dataclass")


def _size_output(tracer: Tracer, v: Any) -> Any:
    """The output a returned SymInt/SymFloat/SymBool becomes (a number if it is one)."""
    env = tracer.env
    kind = "bool" if isinstance(v, SymBool) else "float" if isinstance(v, SymFloat) else "int"
    expr = sympy.sympify(v.expr)
    example = ops_sizes.size_value(env.hint(expr), kind)
    if not expr.free_symbols:  # a number after all: a constant output, as before
        return example
    src = tracer.return_source()
    node = tracer.graph.call_function("tpe.size_value", (expr, kind), {}, name_hint=f"sym_{kind}",
                                      meta=tracer.node_meta(src, shape=None, dtype=None, size_kind=kind))
    return SizeOutput(node, expr, kind, example)


def _check_unrecorded_input_writes(user_arrays: list, writes: list) -> None:
    """Refuse a capture that changed a user input only through a view of it.

    ``v = x[:2]; v[:] = 0`` writes into ``x``'s example, but the write's node belongs to
    ``v``: the graph has no value for the new ``x``, so the caller's array would silently
    stay as it was.

    Raises:
        CaptureError: listing the writes seen during capture.
    """
    from ..errors import CaptureError

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
    a second time for nothing (a fifth of a GPT export).  Opaque ops (draft mode) may
    write into their arguments unseen, so a capture with any replays; a draft capture
    without them is compared with the eager run by ``draft_export`` anyway.
    """
    return bool(tracer.writes) or bool(tracer.op_table)


def _set_functional_hook(tracer: Tracer, buffer_nodes: set) -> Any:
    """Record each ``nn.functional`` composite called on traced values as one registry op.

    A random draw (``tpe.random.*``) must read a generator state held in a buffer
    (``buffer_nodes``: the lifted buffers' placeholders), see :func:`.state.check_generator_state`.
    """
    from ..ops.registry import has_op, get_op

    def hook(name: str, fn: Any, args: tuple, kwargs: dict) -> Any:
        if name.startswith(RANDOM_OP_PREFIX) and not tracer.in_impl:
            check_generator_state(name, args[0] if args else kwargs.get("state"), buffer_nodes)
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


def _refuse_constant_writes(tracer: Any) -> None:
    """A write into an array the program holds as a constant (a module global, a closure or a
    plain attribute: ``np.multiply(x, 2, out=BUF[:n])``) changes that array in eager numpy, and
    a program cannot: it would drop the side effect silently, so the export is refused.

    Raises:
        CaptureError: naming the array and the line of the first write.
    """
    for key, traced in tracer._const_by_id.items():
        node = traced._node
        if node is None or node.op == "placeholder" or key in tracer.made_here_constants:
            continue
        name = traced._lazy or next((k for k, v in tracer.constants.items() if v is traced.example), "an array")
        where = node.meta.get("source")  # the write that rebound it
        raise CaptureError(
            f"the model writes into {name.removeprefix('c_')!r}, an array it does not own (a module global, "
            f"a closure or a plain attribute, which the program holds as a constant): eager numpy changes "
            f"that array, a program cannot. Register it on the module (register_buffer) so the write is a "
            f"buffer mutation, pass it as an input, or write into a new array (np.empty_like)"
            + (f"\n  at {where}" if where is not None else ""))
