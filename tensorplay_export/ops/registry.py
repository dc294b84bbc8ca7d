"""The op registry: the single opset of ``tensorplay_export``.

Every operation a captured program may run is an :class:`OpDef` registered
here under a qualified name (``"numpy.add"``, ``"numpy.ndarray.reshape"``,
``"tpe.getitem"``).  Graphs, codegen and serialization name ops only by that
string and resolve them with :func:`get_op`; nothing else is ever imported by
name when a program is loaded.

Conventions for adding an op (read before writing one):

- **Name.** ``"numpy.<func>"`` for a numpy function or ufunc (same name as in
  the ``numpy`` namespace), ``"numpy.ndarray.<method>"`` only when the method
  differs from the function (``reshape`` takes ``*shape``), ``"tpe.<name>"``
  for ops of our own (indexing, shape arrays, tuple access).
- **impl.** A plain callable run on concrete values: numpy arrays, Python
  ints (symbolic sizes arrive as their example/runtime ints), numpy scalars,
  slices.  Capture runs it on the example values; generated code runs it at
  run time.  It must not look at capture state.
- **shape_rule.** ``rule(ctx, *args, **kwargs) -> shape`` (or a list of shapes
  when ``multi_output=True``).  Arguments mirror the impl's, except that every
  array is an :class:`ArrayInfo` (``.shape`` a tuple of ``int | sympy.Expr``,
  ``.dtype``, ``.vrange`` the known value range or None) and every symbolic
  int is a ``sympy.Expr``.  The rule is pure: it reads its arguments and emits
  requirements only through ``ctx`` (:class:`~tensorplay_export.ops.ctx.ShapeCtx`):
  ``ctx.require(cond, reason)`` (a guard that must hold), ``ctx.eq(a, b, reason)``
  (two sizes equal; free when already identical), ``ctx.bounds(cond, reason)``
  (index values stay inside an array: kind ``index_bounds``),
  ``ctx.choose(cond, reason)`` (follow the example's side of a comparison and
  record it), ``ctx.pin(d, reason)`` (pin a size to the example's: kind
  ``specialization``), ``ctx.broadcast(*shapes)`` / ``ctx.broadcast_dim(a, b)``
  (the one broadcasting helper; ``ctx.stretch(v, s, ...)`` for one-way broadcasting: assigned
  values, ``broadcast_to``), ``ctx.hint(expr)`` (example value), ``ctx.canon(expr)``
  (range-aware cleanup of Min/Max/floor/Mod), ``ctx.new_unbacked(upper, out,
  axis, lower=0)`` (a data-dependent size ``u<n>`` for output ``out``'s ``axis``,
  bound at run time from that output; ``lower`` a size numpy guarantees it reaches), ``ctx.data_dependent(expr)`` (whether a size
  involves one), ``ctx.vrange(lo, hi, out)`` (value range of an integer
  output) and ``ctx.text(size)`` / ``ctx.sized(size, site)`` (a size in a reason, printed by
  the one printer's readable form: write ``f"... {ctx.text(n)} ..."``, never ``{n}``, so the
  reason reads like its guard; ``site`` an ``ArrayInfo.sites`` entry naming another input's
  static axis).  Nothing else: a rule never reaches the environment behind the ctx
  (the capture's ShapeEnv), so it runs on ``ShapeCtx.bare(hints, ranges)`` in a
  test (``tests/ops/test_bare_ctx.py`` runs every registered rule so).  It never
  branches with a plain ``if`` on a sympy relation: use ``ctx.choose``.  Emit minimal guards (``Eq(Mod(n, 4), 0)``, not
  ``Eq(3*b*n, 12*b*floor(n/4))``): ``ctx.require`` canonicalizes, but a rule
  that knows the simpler form should say it.  Raise ``ValueError`` for argument
  errors numpy would raise too (capture reports them with the user's line).
- **Shapes returned** are tuples of Python ints (static) and sympy expressions
  (symbolic); a static size must stay a plain int so user code sees ints.
- **Value ranges**: a rule whose integer output is bounded by sizes calls
  ``ctx.vrange`` (``arange(s)`` -> ``(0, s - 1)``); it enables index-bounds
  guards downstream (``take``/``a[idx]``).  Unknown values (user data): no call.
- **multi_output=True**: the impl returns a tuple and the rule a list of shapes;
  capture adds one ``tpe.item`` node per output.
- **variant.** For a numpy function whose output count depends on its arguments
  (``np.linalg.svd(a, compute_uv=False)`` returns one array, else three): a callable
  taking the call's arguments that names the registered op this call runs as
  (None: this op).  Capture resolves it before running anything, so each op keeps
  one fixed output structure.
- **numpy_funcs / methods.** The numpy callables (functions, ufuncs) and the
  ``ndarray`` method names that dispatch to this op during capture.  A ufunc
  method other than ``__call__`` is named by its bound method (``np.add.at``,
  ``np.add.reduceat``: equal and hashable across attribute reads).
- **lazy.** How capture may defer running the op on the example values (the
  value is computed only when something reads it): ``"same"`` (dtype of the
  first array argument), ``"proxy"`` (dtype from the impl run on small proxies),
  ``"ufunc"``; empty means capture's own table (``capture/lazy.py``) decides.
- **writes_arg.** For a numpy function that writes into one of its arguments
  and returns None (``np.add.at``, ``np.put_along_axis``): that argument's
  position.  The op is registered under a ``"tpe.<name>"`` name and its impl is
  the *functional* form (it returns the updated copy, like ``tpe.setitem``);
  capture writes the result into the target's example in place (eager
  semantics, views see it), rebinds the traced target to the new node and
  returns None to the model, as numpy does.
- **writing_flag.** For a numpy function that a flag makes write into its first
  argument (``median(a, overwrite_input=True)``, ``nan_to_num(x, copy=False)``): a
  :class:`WritingFlag` naming the parameter and saying which values write.  This
  is the one table of such flags: capture never records a call that writes
  (``overwrite_input`` is refused, ``copy=False`` is recorded as the model's own
  write into its argument: capture/traced.py), and loading refuses a program that
  passes one (serde/program_load.py).
- **out_impl.** Optional, for an op whose result is always a new array of its own
  (never a view of an argument): ``out_impl(*args, out=buf, **kwargs)`` computes
  exactly what ``impl`` computes (bit-identical) and writes it into ``buf``, an
  array of the result's shape and dtype that may be the first argument itself,
  and returns the result (``buf``, or a new array where writing into ``buf``
  could change the result).  Generated code calls it when the first argument is
  a dead buffer of the program (graph/reuse.py); an op table that replaces the
  impl drops it.
- **Op table overlays.**  A capture may need ops that must not enter the
  global opset: ``draft_export`` runs a numpy callable without a shape rule as
  an *opaque* op (:func:`make_opaque_op`, named ``"tpe.opaque.<numpy name>"``,
  every size it sees pinned to the example's).  Such ops live in a per-capture
  overlay, a plain ``dict[str, OpDef]`` (``CaptureResult.op_table``): capture
  resolves names there first (:func:`resolve_op`), and the program built from
  it runs them through ``GraphModule(graph, op_table=overlay)``.
  The registry itself is never changed after import, so concurrent captures and
  ``export`` never see another capture's overlay (a program using an overlay op
  cannot be serialized: its name is not in the opset).
- **Refusals.**  A numpy callable capture refuses on purpose (its result's type or size is the
  data's: ``np.allclose``, ``np.linalg.eig``) is no op: :func:`register_refusal` records why
  and what to write instead, and capture's UnsupportedOpError says it
  (``tests/ops/opset_inventory.py`` lists what is covered, refused and still missing).
- Registering an op without a shape rule raises ``TypeError``.  Capture checks
  every op on every call: substituting the example sizes into the rule's
  shape must give numpy's shape (else an internal error names both).  Add a
  test for each op in ``tests/ops/`` (``test_ops_registry.py`` walks the registry)
  and its example calls to ``CASES`` in ``tests/ops/test_bare_ctx.py`` (which runs
  every registered rule on a bare ctx and fails for an op without a case).
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..errors import UnsupportedOpError
from ..records import sympy

# the values whose truthiness a writing flag's rule reads without running numpy: anything else
# (a string, a list, an array that arrives at run time) is counted as writing
_PLAIN_FLAG_TYPES = (bool, int, float, np.bool_, np.integer, np.floating)


def plain_flag(value: Any) -> bool:
    """Whether ``value`` is None or a Python/numpy bool, int or float (numpy reads it by its truthiness)."""
    return value is None or isinstance(value, _PLAIN_FLAG_TYPES)


@dataclass(frozen=True)
class WritingFlag:
    """A parameter of a numpy function whose value can make it write into its first argument.

    ``param``: the parameter's name (bound by position or keyword, as the signature says).
    ``writes(value) -> bool``: whether ``value`` makes numpy write; True for any value that
    is not a :func:`plain_flag` (whose effect numpy decides only when it runs), so a loaded
    program passing one is refused.  ``off``: a value that never writes.  ``scrambles``: the
    write leaves the input in an order numpy does not define (``overwrite_input``; capture
    refuses it), else it leaves the result there (``copy=False``; capture records that write).
    Absent, the parameter's default never writes (``tests/effects/test_in_place_flags.py`` checks each).
    """

    param: str
    writes: Callable[[Any], bool]
    off: Any
    scrambles: bool

    @classmethod
    def when_true(cls, param: str, scrambles: bool) -> "WritingFlag":
        """A flag that writes when true (numpy's ``if overwrite_input:``); None and 0 do not."""
        return cls(param, lambda v: not plain_flag(v) or bool(v), False, scrambles)

    @classmethod
    def unless_true(cls, param: str, scrambles: bool) -> "WritingFlag":
        """A flag that writes unless true (``copy``: None and False write, as numpy's ``np.array(x, copy=copy)``)."""
        return cls(param, lambda v: not plain_flag(v) or not v, True, scrambles)


@dataclass
class OpDef:
    """One registered op: name, numpy implementation, pure shape rule, extras."""

    name: str
    impl: Callable[..., Any]
    shape_rule: Callable[..., Any]
    decomposition: Optional[Callable[..., Any]] = None
    numpy_funcs: tuple = ()
    methods: tuple = ()
    multi_output: bool = False
    doc: str = ""
    side_effect: bool = False  # kept by dead-code elimination although nothing reads it (input checks)
    writes_arg: Optional[int] = None
    lazy: str = ""  # capture may defer the example run: "same"/"proxy"/"ufunc" (capture/lazy.py); "" = its table
    variant: Optional[Callable[..., Optional[str]]] = None  # (call's args) -> the op this call runs as, or None
    out_impl: Optional[Callable[..., Any]] = None  # the impl writing into a dead buffer ``out=`` (see above)
    # the result depends on the operands' memory layout, not only their values (tpe.is_view):
    # generated code gives every value that reaches it the layout eager numpy gives it
    observes_layout: bool = False
    # a flag that makes numpy write into the first argument (WritingFlag; see above), or None
    writing_flag: Optional[WritingFlag] = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.impl(*args, **kwargs)

    def signature(self) -> Optional[inspect.Signature]:
        """The implementation's call signature (what a call in generated code must fit), or None."""
        try:
            return inspect.signature(self.impl)
        except (TypeError, ValueError):  # some ufuncs and builtins have none
            return None


_OPS: dict[str, OpDef] = {}
_BY_FUNC: dict[Any, OpDef] = {}
_BY_METHOD: dict[str, OpDef] = {}


def register_op(name: str, impl: Callable[..., Any], shape_rule: Callable[..., Any], *,
                decomposition: Optional[Callable[..., Any]] = None, numpy_funcs: tuple = (),
                methods: tuple = (), multi_output: bool = False, doc: str = "",
                side_effect: bool = False, writes_arg: Optional[int] = None, lazy: str = "",
                variant: Optional[Callable[..., Optional[str]]] = None,
                out_impl: Optional[Callable[..., Any]] = None, observes_layout: bool = False,
                writing_flag: Optional[WritingFlag] = None) -> OpDef:
    """Register an op and return its :class:`OpDef`.

    Raises:
        TypeError: ``impl`` or ``shape_rule`` is not callable (an op without a shape rule).
        ValueError: ``name`` is already registered, or ``writing_flag`` names a parameter the
            impl's signature does not have.
    """
    if not callable(shape_rule):
        raise TypeError(f"op {name!r} needs a shape rule; got {shape_rule!r}")
    if not callable(impl):
        raise TypeError(f"op {name!r} needs a callable impl; got {impl!r}")
    if name in _OPS:
        raise ValueError(f"op {name!r} is already registered")
    shape_rule = _with_index_args(impl, shape_rule)
    op = OpDef(name, impl, shape_rule, decomposition, tuple(numpy_funcs), tuple(methods),
               multi_output, doc, side_effect, writes_arg, lazy, variant, out_impl, observes_layout,
               writing_flag)
    if writing_flag is not None:
        sig = op.signature()
        if sig is None or writing_flag.param not in sig.parameters:
            raise ValueError(f"op {name!r}: its writing flag {writing_flag.param!r} is not a parameter of its impl")
    _OPS[name] = op
    for func in op.numpy_funcs:
        _BY_FUNC[func] = op
    for method in op.methods:
        _BY_METHOD[method] = op
    return op


# The parameters of numpy functions that numpy reads as integers: it calls ``operator.index`` on
# the value (or on each item of a sequence of them), so ``np.int64(2)``, ``np.uint8(2)`` and a
# 0-d integer array holding 2 mean exactly what ``2`` means there.  Value parameters
# (``fill_value``, ``a_min``, ufunc operands, ``arange``'s ``start``) are not listed: there a
# numpy scalar carries its dtype into the result.
INDEX_PARAMS = frozenset({
    "axis", "axes", "axis1", "axis2", "axisa", "axisb", "axisc", "source", "destination",
    "shape", "new_shape", "newshape", "normalized_shape", "dims", "dimensions", "window_shape", "s",
    "indices_or_sections", "pad_width", "repeats", "reps", "shift", "obj",
    "k", "kth", "n", "N", "M", "ndim", "num", "count", "offset", "minlength", "ndmin",
    "decimals", "deg", "edge_order", "ddof", "bins",
})


def as_index(value: Any) -> Any:
    """``value`` as a shape rule sees an integer parameter: what ``operator.index`` gives numpy.

    A numpy integer scalar becomes the Python int it holds; a 0-d integer array whose value is
    known exactly (its ``ArrayInfo.vrange`` is one value: a constant, or a size) becomes that
    int or size expression; tuples and lists are converted item by item.  Anything else (None,
    a Python int, a size, an index array, a bool) is returned as it is.
    """
    if value is None or type(value) is int:
        return value
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (tuple, list)):
        items = [as_index(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(value, ArrayInfo) and value.shape == () and value.vrange is not None \
            and value.dtype is not None and np.dtype(value.dtype).kind in "iu":
        lo, hi = value.vrange
        if lo is not None and lo == hi:
            lo = sympy.sympify(lo)
            return int(lo) if lo.is_Integer else lo
    return value


def _positional_names(func: Callable[..., Any], skip: int) -> tuple[list[Optional[str]], Optional[str]]:
    """The names of ``func``'s positional parameters after the first ``skip``, and its ``*args`` name."""
    try:
        params = list(inspect.signature(func).parameters.values())[skip:]
    except (TypeError, ValueError):
        return [], None
    named: list[Optional[str]] = []
    rest = None
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            rest = p.name
            break
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            named.append(p.name)
    return named, rest


def _with_index_args(impl: Callable[..., Any], rule: Callable[..., Any]) -> Callable[..., Any]:
    """``rule`` receiving every integer parameter (:data:`INDEX_PARAMS`) through :func:`as_index`.

    This is the one place a call's arguments reach a numpy op's shape rule, so no rule sees a
    numpy integer scalar where numpy reads an int (``x.reshape(np.int64(-1), 4)``,
    ``np.split(x, np.int64(2))``).  A position's parameter is named by the rule's own signature,
    else by the impl's (a rule taking ``*args`` for the rest).  Only the rule's view changes: the
    impl and the graph get the argument as the model passed it.  ``tpe.*`` ops are included:
    a variant (``tpe.linspace_retstep``) or a writing form (``tpe.add_at``) gets the model's
    arguments too.

    The signatures are read at the rule's first call, not at registration: registering the
    opset is on the import path of every load, and ``inspect.signature`` of a thousand ops
    doubled the import of ``ops.families`` (45 -> 81 ms CPU); a loaded program runs no rule.
    """
    plan: list = []  # [(flags, tail_flag)] once read; [None] when no parameter is an integer one

    def read_plan() -> Optional[tuple]:
        rule_named, rule_rest = _positional_names(rule, 1)
        impl_named, impl_rest = _positional_names(impl, 0)
        width = max(len(rule_named), len(impl_named))
        names = [rule_named[i] if i < len(rule_named) else impl_named[i] for i in range(width)]
        flags = tuple(n in INDEX_PARAMS for n in names)
        tail_flag = (rule_rest if rule_rest is not None else impl_rest) in INDEX_PARAMS
        if not (any(flags) or tail_flag or INDEX_PARAMS & (_all_names(rule) | _all_names(impl))):
            return None
        return flags, tail_flag

    @functools.wraps(rule)
    def rule_on_indices(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        if not plan:
            plan.append(read_plan())
        if plan[0] is None:
            return rule(ctx, *args, **kwargs)
        flags, tail_flag = plan[0]
        if args:
            args = tuple(as_index(a) if (flags[i] if i < len(flags) else tail_flag) else a
                         for i, a in enumerate(args))
        if kwargs:
            kwargs = {k: as_index(v) if k in INDEX_PARAMS else v for k, v in kwargs.items()}
        return rule(ctx, *args, **kwargs)

    return rule_on_indices


def _all_names(func: Callable[..., Any]) -> set:
    """Every parameter name of ``func``; all of :data:`INDEX_PARAMS` when it takes ``**kwargs``
    or has no signature (any of them may arrive)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return set(INDEX_PARAMS)
    return {p.name for p in params if p.kind is not p.VAR_KEYWORD} | (
        set(INDEX_PARAMS) if any(p.kind is p.VAR_KEYWORD for p in params) else set())


def op(name: str, impl: Callable[..., Any], **extra: Any) -> Callable[[Callable], Callable]:
    """Decorator form: ``@op("numpy.tile", np.tile, numpy_funcs=(np.tile,))`` on the shape rule."""
    def wrap(rule: Callable) -> Callable:
        register_op(name, impl, rule, **extra)
        return rule
    return wrap


def get_op(name: str) -> OpDef:
    """The op registered as ``name``.

    Raises:
        UnsupportedOpError: no such op (e.g. a program written by a newer version).
    """
    _ensure_loaded()
    try:
        return _OPS[name]
    except KeyError:
        raise UnsupportedOpError(f"unknown op {name!r}: it is not in the op registry") from None


def has_op(name: str) -> bool:
    _ensure_loaded()
    return name in _OPS


def lookup_func(func: Any) -> Optional[OpDef]:
    """The op a numpy function / ufunc dispatches to during capture, or None."""
    _ensure_loaded()
    try:
        return _BY_FUNC.get(func)
    except TypeError:  # unhashable callable
        return None


def lookup_method(name: str) -> Optional[OpDef]:
    """The op an ``ndarray`` method name dispatches to during capture, or None."""
    _ensure_loaded()
    return _BY_METHOD.get(name)


def resolve_op(name: str, overlay: Optional[Mapping[str, Any]] = None) -> OpDef:
    """The op named ``name`` in ``overlay`` (a per-capture or per-program op table) or else in the registry.

    This is the one name -> op rule: capture, the Interpreter, generated code and
    unflatten all resolve through it.  An overlay maps names to :class:`OpDef`
    (draft's opaque ops), or to a plain callable that replaces the op's
    implementation when a graph runs (a hand-built :class:`GraphModule`, a
    benchmark's timed checks); such an op keeps the registered shape rule, if any.

    Raises:
        UnsupportedOpError: neither has it.
    """
    if overlay:
        hit = overlay.get(name)
        if isinstance(hit, OpDef):
            return hit
        if hit is not None:
            base = _OPS.get(name)
            if base is not None:
                return replace(base, impl=hit, out_impl=None)  # the replacement alone runs
            return OpDef(name, hit, _no_shape_rule, doc="an op table's implementation (runs graphs only)")
    return get_op(name)


def _no_shape_rule(ctx: Any, *args: Any, **kwargs: Any) -> Any:
    raise UnsupportedOpError("an op table's plain callable has no shape rule; register the op to capture it")


_REFUSALS: dict[Any, str] = {}


def register_refusal(func: Any, why: str) -> None:
    """Record that capture refuses the numpy callable ``func``, and why (what to write instead).

    A documented refusal is not an op: capture raises UnsupportedOpError with ``why`` in the
    message (``numpy.allclose ... returns a Python bool computed from the values``).
    """
    _REFUSALS[func] = why


def refusal(func: Any) -> Optional[str]:
    """Why capture refuses the numpy callable ``func`` (:func:`register_refusal`), or None."""
    _ensure_loaded()
    try:
        return _REFUSALS.get(func)
    except TypeError:  # unhashable callable
        return None


def has_side_effect(name: str) -> bool:
    """Whether the registered op ``name`` runs for its effect (an input check): dead-code elimination keeps it."""
    op = _OPS.get(name)
    return op is not None and op.side_effect


OPAQUE_PREFIX = "tpe.opaque."


def make_opaque_op(qualname: str, impl: Callable[..., Any], multi_output: bool = False) -> OpDef:
    """An op for a numpy callable without a shape rule, for one capture's overlay (never registered).

    Args:
        qualname: the callable's printable name (``func_name(np.unwrap)`` ->
            ``"numpy.unwrap"``); the op is ``"tpe.opaque.<qualname>"``.
        impl: the numpy callable itself.
        multi_output: the call returns a tuple or list of arrays (``np.linalg.eig``'s
            ``EigResult``, ``np.gradient`` over several axes): one output per item.

    Returns:
        an :class:`OpDef` whose shape rule pins every symbolic size among its
        arguments to the example's (a ``specialization`` guard each) and returns
        numpy's shape (each item's), so a program using it is sound, and specialized there.
    """
    name = f"{OPAQUE_PREFIX}{qualname}"
    return OpDef(name, impl, _opaque_rule(qualname, multi_output), multi_output=multi_output,
                 doc=f"draft_export only: {qualname} run without a shape rule (sizes pinned)")


def _opaque_rule(qualname: str, multi_output: bool = False) -> Callable[..., Any]:
    def sizes(value: Any) -> list:
        if isinstance(value, ArrayInfo):
            return list(value.shape)
        if isinstance(value, sympy.Expr):
            return [value]
        if isinstance(value, (tuple, list)):
            return [d for v in value for d in sizes(v)]
        if isinstance(value, dict):
            return [d for v in value.values() for d in sizes(v)]
        if isinstance(value, slice):
            return sizes((value.start, value.stop, value.step))
        return []

    def rule(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        for d in sizes((args, kwargs)):
            if isinstance(d, sympy.Expr) and not d.is_number:
                ctx.pin(d, f"{qualname} has no shape rule")
        return list(ctx.concrete) if multi_output else ctx.concrete[0]

    return rule


def all_ops() -> dict[str, OpDef]:
    """A copy of the registry (name -> OpDef), every op family loaded."""
    _ensure_loaded()
    return dict(_OPS)


def func_name(func: Any) -> str:
    """Printable name of a numpy callable for error messages (``numpy.linalg.inv``)."""
    module = getattr(func, "__module__", None) or "numpy"
    name = getattr(func, "__name__", repr(func))
    if module.startswith("numpy"):
        module = "numpy" if module in ("numpy", "numpy._core.multiarray", "numpy._core.numeric",
                                       "numpy._core.fromnumeric", "numpy._core.umath") else module
    return f"{module}.{name}"


_LOADED = False


def _ensure_loaded() -> None:
    """Import every op family module once (they register themselves on import)."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    from . import families  # noqa: F401  (registers all ops)


@dataclass
class ArrayInfo:
    """What a shape rule sees of an array argument.

    ``shape``: tuple of ``int | sympy.Expr``; ``dtype``: ``np.dtype``;
    ``vrange``: ``(lo, hi)`` sympy/int bounds of the values when known (integer
    index arrays built from sizes), else None; ``key``: the array's value number
    during capture (equal keys: the same graph value, i.e. the same node after
    merging pure ops on the same inputs), None when not known.  Rules pass it to
    ``ctx.new_unbacked(..., same_as=...)`` so selections by one mask share a size.
    ``sites``: None, or per axis a text saying where a static size comes from (a model
    input's static axis: ``"y.shape[0], static: no Dim for y in dynamic_shapes"``), else None;
    rules hand it to ``ctx.broadcast(..., sites=...)`` so a reason names the other input.
    """

    shape: tuple
    dtype: Any
    vrange: Optional[tuple] = None
    key: Any = field(default=None, compare=False, repr=False)
    # per axis: where a static size comes from, for reasons ("y.shape[0], static: no Dim for y in
    # dynamic_shapes"), or None; set for a model input's static axes (capture/tracer.py)
    sites: Optional[tuple] = field(default=None, compare=False, repr=False)

    @property
    def ndim(self) -> int:
        return len(self.shape)

