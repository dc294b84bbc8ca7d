"""The tracer: runs every op on example values and on symbolic shapes, recording a graph.

One :class:`Tracer` exists per capture and is reachable only through the
context variable :data:`CURRENT` (so patched numpy functions act only for the
capturing call and thread).  :meth:`Tracer.call` is the single dispatch point:

1. numpy runs the op's impl on the example values (errors are re-raised with
   the op and the user's line; one that a size requirement of the op's rule
   explains is raised as numpy's own kind, a ``NumpySizeError``, with the
   except branch a model may take recorded as a guard: :meth:`Tracer._raise_size_error`);
2. the op's pure shape rule runs on the symbolic shapes, emitting
   requirements through a :class:`~tensorplay_export.ops.ctx.ShapeCtx`;
3. the rule's shape with the example sizes substituted must equal numpy's
   shape (an internal error names the op and both shapes otherwise);
4. a ``call_function`` node is appended and traced arrays are returned.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import operator
import sys
import warnings
import weakref
from typing import Any, Iterator, Optional

import numpy as np
import sympy

from ..errors import CaptureError, DataDependentError, NumpySizeError, UnsupportedOpError, numpy_size_error
from ..graph.ir import Graph, Node
from ..graph.printing import format_guard
from ..ops.ctx import ShapeCtx, as_dim
from ..ops.indexing import constant_vrange
from ..ops.registry import ArrayInfo, OpDef, func_name, get_op, lookup_func, lookup_method, resolve_op
from ..records import SourceLoc
from .borrowed import Borrowed
from .frames import is_library_file, user_source
from .lazy import LAZY_KINDS, PLAIN_ARGS as _PLAIN, lazy_kind, pending_in, proxy_args, proxy_run_key
from .shape_env import FalseRequirement, RequirementFalseAtExample, ShapeEnv
from .stdlib import plain
from .symbolic import SymBool, SymFloat, SymInt
from .traced import TracedArray
from .views import Aliases

CURRENT: contextvars.ContextVar = contextvars.ContextVar("tpe_tracer", default=None)


def current() -> Optional["Tracer"]:
    return CURRENT.get()


class Tracer:
    """Graph, ShapeEnv and lifted constants of one capture.

    The mode is the ShapeEnv's: ``"export"`` raises where the program cannot be
    proven; ``"draft"`` goes on (opaque ops, assumed value reads, see
    :mod:`tensorplay_export.capture.draft`) and logs into ``draft``.
    """

    def __init__(self, env: ShapeEnv, graph: Optional[Graph] = None, draft: Any = None) -> None:
        from .draft_log import DraftLog

        self.env = env
        env.tracer = self
        self.mode = env.mode
        self.draft = (draft if draft is not None else DraftLog()) if env.mode == "draft" else None
        self.op_table: dict[str, OpDef] = {}             # this capture's op overlay (opaque ops)
        self.graph = graph if graph is not None else Graph()
        self.constants: dict[str, np.ndarray] = {}       # placeholder name -> value
        self._const_by_id: dict[int, Any] = {}           # id(ndarray) -> TracedArray
        self._const_keep: list = []                      # keep ids unique while tracing
        self.made_here_constants: dict[int, np.ndarray] = {}  # id -> value numpy made in the call
        self._state_by_id: dict[int, Any] = {}           # id(parameter or buffer) -> its placeholder
        self.module_clones: dict[int, Any] = {}          # id(user's module) -> its capture clone (capture.state)
        self.user_anchor: Optional[Node] = None          # constants go before this placeholder
        self.static_sites: dict = {}                     # input placeholder -> ArrayInfo.sites (reasons)
        self.module_stack: list[tuple[str, int]] = []    # (fqn, call_id) of each, outermost first
        self.module_calls: Any = None                    # the capture's ModuleCalls (entry sets it)
        self.writes: list = []                           # (op, SourceLoc) of in-place writes
        self.in_impl = False                             # numpy's own code runs: wrappers pass through
        self.function_clones: dict = {}                  # id(fn) -> (fn, clone)
        self.globals_views: dict = {}                    # id(real globals) -> GlobalsView
        # The frame that runs the model (see note_model_frame): the outermost user frame below
        # the function that built this tracer (capture), found when the model first reads a size.
        self._entry_code = sys._getframe(1).f_code
        self.model_frame: Any = None
        self._return_source: Optional[SourceLoc] = None
        # value numbering (see value_key): (op, input value keys, static args) -> first node
        self._value_numbers: dict = {}
        self._same_value: dict = {}                       # node -> the first node of its value
        self.aliases = Aliases(self)                      # views, rebuilt after writes (capture.views)
        self.borrowed: Optional[Borrowed] = None          # state read in place (capture.borrowed)
        self.pending: list = []                          # weakrefs of traced arrays not computed yet
        self.proxies: dict = {}                          # (shape, dtype, strided) -> proxy zeros (capture.lazy)
        self.proxy_runs: dict = {}                       # proxy_run_key -> (dtype, None) or None (_proxy_run)
        self._saw_pending = False                        # views() met a value not computed yet
        self._unguarded_bools = 0                        # > 0: SymBool operands of a ufunc (see call)
        self._entry_errstate = np.geterr()               # the caller's floating-point error handling
        self.model_errstate: list = []                   # kinds set by each np.errstate the model is inside

    def is_current(self) -> bool:
        """Whether this tracer's capture is running (in this thread and context)."""
        return CURRENT.get() is self

    # -- the model's frame ------------------------------------------------------
    def note_model_frame(self) -> None:
        """Remember the model's own frame (called where the model reads a symbolic size).

        Walks up from the caller to the function that built this tracer; the outermost
        frame outside the library on the way is the model's (``forward``, the function, or
        a callable's ``__call__``).  Only its frame object is kept: after the model returned,
        its ``f_lineno`` is the line of the ``return`` it executed (see :meth:`return_source`).
        """
        if self.model_frame is not None:
            return
        frame, user = sys._getframe(1), None
        while frame is not None:
            if frame.f_code is self._entry_code:
                self.model_frame = user
                return
            if not is_library_file(frame.f_code.co_filename):
                user = frame
            frame = frame.f_back

    def return_source(self) -> Optional[SourceLoc]:
        """The model's ``return`` line once it returned (None when it never read a size)."""
        if self._return_source is None and self.model_frame is not None:
            frame, self.model_frame = self.model_frame, None  # do not keep its locals alive
            self._return_source = SourceLoc(frame.f_code.co_filename, frame.f_lineno)
        return self._return_source

    # -- placeholders ----------------------------------------------------------
    def placeholder(self, name: str, value: np.ndarray, shape: tuple, meta: Optional[dict] = None,
                    vrange: Optional[tuple] = None) -> "TracedArray":
        """A graph input carrying ``value`` with symbolic ``shape``.

        Each axis expression is a size for every input that exists (``a - b >= 0`` for an
        axis declared ``a - b``): a fact from here on (``ShapeEnv.assume_axis``).
        """
        for d in shape:
            if isinstance(d, sympy.Basic):
                self.env.assume_axis(d)
        m = {"shape": tuple(shape), "dtype": np.asarray(value).dtype, "source": None}
        if meta:
            m.update(meta)
        node = self.graph.placeholder(name, meta=m)
        return TracedArray(self, node, tuple(shape), value, vrange)

    def lift_constant(self, name: str, value: np.ndarray, made_here: bool = False) -> "TracedArray":
        """A lazily lifted constant: its ``c_<name>`` placeholder appears only on first use.

        ``made_here``: numpy made ``value`` during the captured call (``np.array([6, 4])``), so
        the model owns it and may write into it (the program's graph writes into its own copy);
        a write into any other constant (a module global) is refused at the end of capture.
        """
        known = self._state_by_id.get(id(value))
        if known is None:
            known = self._const_by_id.get(id(value))
        if known is not None:
            return known
        # an integer constant's value range gives index-bounds guards (x[IDX] on a dynamic axis)
        traced = TracedArray(self, None, tuple(value.shape), value, constant_vrange(value))
        traced._lazy = name
        self._const_by_id[id(value)] = traced
        if made_here:  # the program's constant is the value numpy made; the model's writes follow it
            self.made_here_constants[id(value)] = value.copy()
        self._const_keep.append(value)
        return traced

    def lift_state_alias(self, value: np.ndarray, traced: "TracedArray") -> None:
        """Make ``value`` (a lifted parameter or buffer) lift as ``traced``, its placeholder.

        Whatever path reaches the array (a plain list attribute, a global, a module outside the
        captured tree's clones), :meth:`lift_constant` then gives its placeholder: state is
        identified by identity, so it is never lifted again as a constant beside it.
        """
        self._state_by_id[id(value)] = traced   # kept apart: a write into state is no constant write
        self._const_keep.append(value)

    def is_state_alias(self, value: np.ndarray) -> bool:
        """Whether ``value`` is a lifted parameter or buffer (:meth:`lift_state_alias`)."""
        return id(value) in self._state_by_id

    def materialize(self, traced: "TracedArray") -> Node:
        """Create the placeholder of a lazily lifted constant (before the user inputs)."""
        name = traced._lazy
        base = name if name.startswith("c_") else f"c_{name}"
        with self.graph.inserting_before(self.user_anchor):
            node = self.graph.placeholder(base, meta={"shape": tuple(np.shape(traced.example)),
                                                      "dtype": np.asarray(traced.example).dtype,
                                                      "source": None})
        self.constants[node.name] = self.made_here_constants.get(id(traced.example), traced.example)
        traced._lazy = None
        return node

    def constant_node(self, value: np.ndarray) -> Node:
        """A plain ndarray reaching an op (not lifted through globals): lift it now."""
        return self.lift_constant("c_const", value).node

    # -- value conversion ------------------------------------------------------
    def example(self, value: Any) -> Any:
        """The concrete value numpy sees for an argument (SymInt -> Python int, weak)."""
        if isinstance(value, TracedArray):
            return value.example
        if isinstance(value, SymInt):
            return value.example() if value.numpy_type is not None else int(self.env.hint(value.expr))
        if isinstance(value, SymFloat):
            return value.example() if value.numpy_type is not None else float(self.env.hint(value.expr))
        if isinstance(value, SymBool):
            return bool(self.env.hint(value.expr)) if self._unguarded_bools else bool(value)
        if isinstance(value, tuple):
            return tuple(self.example(v) for v in value)
        if isinstance(value, list):
            return [self.example(v) for v in value]
        if isinstance(value, dict):
            return {k: self.example(v) for k, v in value.items()}
        if isinstance(value, slice):
            return slice(self.example(value.start), self.example(value.stop), self.example(value.step))
        return value

    def writable_example(self, traced: "TracedArray") -> Any:
        """``traced``'s example, to be written in place: a copy by then where it shared a
        parameter's or buffer's memory with the caller (:mod:`.borrowed`)."""
        return traced.example if self.borrowed is None else self.borrowed.writable(traced)

    def info(self, value: Any) -> Any:
        """What a shape rule sees: ArrayInfo for arrays, sympy for symbolic ints."""
        if isinstance(value, TracedArray):
            return ArrayInfo(value._shape, value.dtype, value.vrange, self.value_key(value._node),
                             self.static_sites.get(value._node))
        if isinstance(value, np.ndarray):
            return ArrayInfo(tuple(value.shape), value.dtype, constant_vrange(value))
        if isinstance(value, SymFloat) and not value.expr.has(sympy.Float):
            # a float the rules must see as one (n / 3 is FDiv(n, 3), no Float in it): rules tell
            # float scalars by a Float in the expression (an int8 array times a float cannot overflow)
            return sympy.Float(1.0) * value.expr
        if isinstance(value, (SymInt, SymFloat, SymBool)):
            return value.expr
        if isinstance(value, tuple):
            return tuple(self.info(v) for v in value)
        if isinstance(value, list):
            return [self.info(v) for v in value]
        if isinstance(value, dict):
            return {k: self.info(v) for k, v in value.items()}
        if isinstance(value, slice):
            return slice(self.info(value.start), self.info(value.stop), self.info(value.step))
        return value

    def node_arg(self, value: Any) -> Any:
        """What goes into the node's args: Nodes, sympy expressions, exact constants."""
        if isinstance(value, TracedArray):
            return value.node
        if isinstance(value, (SymInt, SymFloat)) and value.numpy_type is not None:
            return self.typed_size(value).node
        if isinstance(value, (SymInt, SymFloat, SymBool)):
            return value.expr
        if isinstance(value, np.ndarray):
            return self.constant_node(value)
        if isinstance(value, tuple):
            return tuple(self.node_arg(v) for v in value)
        if isinstance(value, list):
            return [self.node_arg(v) for v in value]
        if isinstance(value, dict):
            return {k: self.node_arg(v) for k, v in value.items()}
        if isinstance(value, slice):
            # slice bounds are sizes whatever their numpy type: the expression, not a scalar node
            return slice(*[v.expr if isinstance(v, SymInt) else self.node_arg(v)
                           for v in (value.start, value.stop, value.step)])
        if isinstance(value, type) and issubclass(value, np.generic):
            return np.dtype(value)
        return value

    def views(self, value: Any) -> tuple[Any, Any, Any, bool]:
        """``(example(value), info(value), node args, deferred)`` in one walk of ``value``.

        The node-args view holds a lazily lifted constant (not yet a placeholder) as its
        TracedArray, and ``deferred`` is True when it holds one: :meth:`call` makes the
        placeholders (:meth:`node_arg`) only once the op has run and its rule has passed,
        as the three separate walks did.
        """
        t = type(value)
        if t is TracedArray:
            node = value._node
            if value._thunk is not None:
                self._saw_pending = True
            return (value._value, ArrayInfo(value._shape, value.dtype, value.vrange, self.value_key(node),
                                            self.static_sites.get(node)),
                    value if node is None else node, node is None)
        if t is tuple or t is list:
            exs, infos, nargs = [], [], []
            deferred = False
            for v in value:
                ex, info, narg, d = self.views(v)
                exs.append(ex)
                infos.append(info)
                nargs.append(narg)
                deferred = deferred or d
            if t is tuple:
                return tuple(exs), tuple(infos), tuple(nargs), deferred
            return exs, infos, nargs, deferred
        if t is dict:
            exd, infod, nargd = {}, {}, {}
            deferred = False
            for k, v in value.items():
                exd[k], infod[k], nargd[k], d = self.views(v)
                deferred = deferred or d
            return exd, infod, nargd, deferred
        if t is SymInt and value.numpy_type is None:
            return int(self.env.hint(value.expr)), value.expr, value.expr, False
        if t in _PLAIN:
            return value, value, value, False
        if t is type:  # a dtype given as a scalar type (astype(np.float32)): the node holds np.dtype
            return value, value, np.dtype(value) if issubclass(value, np.generic) else value, False
        if isinstance(value, (tuple, list, dict, slice, TracedArray, SymInt, SymFloat, SymBool, np.ndarray,
                              type)):
            # the rare kinds (and subclasses): the separate walks, in the order call made them
            return self.example(value), self.info(value), value, True
        return value, value, value, False

    def typed_size(self, value: Any) -> "TracedArray":
        """A size with a numpy type (``n + np.int32(1)``) as the 0-d numpy scalar eager code
        holds: a ``tpe.size_scalar`` node, so ops that get it promote as eager's do."""
        plain = type(value)(value.expr, value.env)  # the same size as a Python number
        return self.call(get_op("tpe.size_scalar"), (plain, value.numpy_type), {}, source=user_source(3))

    # -- op lookup and value reads (the places where the mode matters) --------------
    def op_for_func(self, func: Any, src: Any) -> Optional[OpDef]:
        """The op a numpy function / ufunc dispatches to; in draft mode an opaque one if none."""
        op = lookup_func(func)
        if op is None and self.draft is not None:
            from .draft_log import opaque_func

            op = opaque_func(self, func, src)
        return op

    def op_for_method(self, name: str, src: Any) -> Optional[OpDef]:
        """The op an ndarray method dispatches to; in draft mode an opaque one if none."""
        op = lookup_method(name)
        if op is None and self.draft is not None:
            from .draft_log import opaque_method

            op = opaque_method(self, name, src)
        return op

    def read_value(self, traced: "TracedArray", name: str, what: str, src: Any) -> Any:
        """The model reads an array's value (``bool(a)``, ``int(a)``, ``a.item()``).

        Raises:
            DataDependentError: in export mode (and in draft mode for reads it cannot assume).
        """
        if name in _SIZE_VALUE_READS:
            value = self.constant_value(traced)
            if value is not None:
                return _SIZE_VALUE_READS[name](value)
        if name in _INT_READS and traced.dtype.kind in "iu" and _one_element(traced._shape):
            size = self._item_size(traced, src)
            if size is not None:
                return size
        read = _SIZE_VALUE_READS.get(name)
        if read is not None:
            sizes = self._sizes_only(traced)
            if sizes is not None:
                return self._read_of_sizes(traced, read, what, sizes, src)
        if self.draft is not None:
            from .draft_log import VALUE_READS, assume_value

            if name in VALUE_READS:
                return assume_value(self, traced, name, src)
        raise DataDependentError(
            f"data-dependent: the model {what} of a traced array, which the program cannot know ahead "
            f"of time (it is data, not a size): compute with the array instead (masks, np.where), or "
            f"read it outside the exported function\n  at {src}")

    def constant_value(self, traced: "TracedArray") -> Optional[np.ndarray]:
        """The value of an array numpy computed from the program's constants alone (``np.array(3)``,
        a module global, ``TABLE[2]``), else None.  A read of it (``int(a)``, ``x[:a]``, ``a.tolist()``)
        is that value, as eager's: no data-dependent size, nothing pinned."""
        if self._sizes_only(traced) != set():
            return None
        self.force(traced)
        return np.asarray(traced.example)

    def _sizes_only(self, traced: "TracedArray") -> Optional[set]:
        """The size symbols an array is computed from when numpy computed it from sizes and the
        program's constants alone (``np.sqrt(n)``, ``np.arange(n).sum()``, ``TABLE[n]``); None
        when it reads an input, a parameter or buffer, or a random draw (data)."""
        if traced._node is None and traced._lazy:
            return set()  # a lifted constant not used by any node yet: reading it adds no input
        syms: set = set()
        seen: set = set()
        stack = [traced.node]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            if node.op != "call_function":
                if node.op == "placeholder" and node.name in self.constants:
                    continue  # a lifted constant: the program holds its value
                return None
            for leaf in _expr_leaves((node.args, node.kwargs)):
                syms |= leaf.free_symbols
            stack.extend(node.all_input_nodes)
        return syms

    def _read_of_sizes(self, traced: "TracedArray", read: Any, what: str, sizes: set, src: Any) -> Any:
        """The model reads the value of an array computed from sizes alone (``int(np.sqrt(n))``):
        no symbolic form follows numpy there, so each size it is computed from is specialized to
        its example value (a reason at the model's line, as ``int()`` of a float size) and the
        read gives eager's value."""
        unbacked = [s for s in sizes if self.env.kinds.get(s) == "unbacked"]
        if unbacked:  # a size read from data (x.nonzero()): pinning it would bake the example's data
            raise DataDependentError(
                f"data-dependent: the model {what} of an array computed from the data-dependent size "
                f"{', '.join(sorted(map(str, unbacked)))}, which the program cannot know ahead of time: "
                f"compute with the array instead (masks, np.where)\n  at {src}")
        code = f"`{src.text}`" if src is not None and getattr(src, "text", None) else "the model"
        for sym in sorted(sizes, key=lambda v: v.name):
            self.env.specialize(sym, f"{code} {what} of an array numpy computed from sizes (no symbolic form "
                                     f"follows numpy there; integer size arithmetic such as n // k, "
                                     f"n % k, min and max stays symbolic)", src)
        self.force(traced)
        return read(np.asarray(traced.example))

    def _item_size(self, traced: "TracedArray", src: Any) -> Optional[SymInt]:
        """``int(a)`` / ``a.item()`` / ``x[:a]`` of a one-element int array: a data-dependent
        size (an unbacked symbol, as torch.export's ``u0 = t.item()``) bound by a
        ``tpe.item_size`` node; None when the example's value is negative (no size: the read
        stays a DataDependentError).

        The symbol is a size (``>= 0``, and within the array's known value range): the node
        raises ConstraintsExceededError at the model's line for a negative value on any call,
        instead of computing with a wrong assumption.  Branching on it is a data-dependent
        guard (``tpe.check`` states facts about it), as for a ``nonzero`` count.
        """
        self.force(traced)
        value = int(np.asarray(traced.example).item())
        if value < 0:
            return None
        hi = traced.vrange[1] if traced.vrange is not None else None
        upper = hi if hi is not None and (not isinstance(hi, sympy.Basic) or hi.is_finite) else None
        where = str(src) if src is not None else "?"
        node = self.graph.call_function("tpe.item_size", (traced.node, where), {},
                                        meta=self.node_meta(src, shape=None, dtype=None))
        sym = self.env.unbacked_symbol(upper, value, "tpe.item_size", src, lower=0,
                                       dtype=np.asarray(traced.example).dtype)
        node.meta["bind"] = {None: sym}
        return SymInt(sym, self.env)

    def node_meta(self, src: Any, **extra: Any) -> dict:
        """Meta of a node made now: source line and the enclosing module calls.

        ``module_path``: fqn of the innermost call (absent outside any module);
        ``module_stack``: ``(fqn, call_id)`` of every enclosing call, outermost first
        (``()`` outside any module), so two calls of one module are told apart even
        back to back (``m(m(x))``).
        """
        meta: dict = {"source": src}
        if self.module_stack:
            meta["module_path"] = self.module_stack[-1][0]
        meta["module_stack"] = tuple(self.module_stack)
        errstate = np.geterr()
        if errstate != self._entry_errstate or self.model_errstate:
            # the kinds the model set (with np.errstate(divide="ignore"): ...), whatever their value
            # (divide="warn" while the caller's is "warn" too: a later caller's "raise" must not
            # apply): the program's statement runs under them too (graph/codegen.py); the other
            # kinds follow the caller's state at run time, as in eager
            set_here = frozenset().union(*self.model_errstate)
            changed = tuple(sorted((k, v) for k, v in errstate.items()
                                   if k in set_here or self._entry_errstate.get(k) != v))
            if changed and all(v in _PLAIN_ERRSTATES for _k, v in changed):
                meta["errstate"] = changed
        meta.update(extra)
        return meta

    # -- dispatch --------------------------------------------------------------
    def call(self, op: OpDef | str, args: tuple, kwargs: Optional[dict] = None,
             source: Any = None) -> Any:
        """Run ``op`` on examples and symbols, record a node, return traced results."""
        if isinstance(op, str):
            op = resolve_op(op, self.op_table)
        kwargs = kwargs or {}
        if op.variant is not None:  # an output structure chosen by the arguments (svd's compute_uv)
            other = op.variant(*args, **kwargs)
            if other is not None:
                op = resolve_op(other, self.op_table)
        src = source if source is not None else user_source(2)
        with self._bool_operands(op, args):
            return self._call(op, args, kwargs, src)

    @contextlib.contextmanager
    def _bool_operands(self, op: OpDef, args: tuple) -> Iterator[None]:
        """A size comparison used as a number (``x * (n > 3)``) takes no branch: an elementwise
        result's shape and dtype do not depend on the bool's value (a Python bool is a weak
        scalar), so the program computes it at run time and the example reads it unguarded,
        now and when a deferred value is computed."""
        if not (isinstance(op.impl, np.ufunc) and any(type(a) is SymBool for a in args)):
            yield
            return
        self._unguarded_bools += 1
        try:
            yield
        finally:
            self._unguarded_bools -= 1

    def _call(self, op: OpDef, args: tuple, kwargs: dict, src: Any) -> Any:
        if kwargs.get("out") is not None and op.writes_arg is None:
            return self._call_with_out(op, args, kwargs, src)
        self._saw_pending = False
        ex_args, info_args, node_args, defer_args = self.views(args)
        ex_kwargs, info_kwargs, node_kwargs, defer_kwargs = self.views(kwargs)
        if defer_args and isinstance(op.impl, np.ufunc):
            info_args = _typed_sizes_as_scalars(args, info_args)
        kind = lazy_kind(op, isinstance(op.impl, np.ufunc))
        proxy = self._proxy_run(op, kind, args, kwargs) if kind else None
        if proxy is not None:
            return self._deferred(op, args, kwargs, src, proxy, info_args, info_kwargs, node_args, node_kwargs,
                                  defer_args, defer_kwargs)
        if self._saw_pending:  # this op runs now: its deferred arguments are computed first
            self.force_args((args, kwargs))
            ex_args, ex_kwargs = self.example(args), self.example(kwargs)
        try:
            result = self._run_impl(op, ex_args, ex_kwargs, src)
        except CaptureError as err:
            if err.raised_by is not None and not isinstance(err, NumpySizeError):
                broken = self._broken_requirement(op, src, info_args, info_kwargs)
                if broken is None and not _size_leaves((args, kwargs)) and _static_arrays((info_args, info_kwargs)):
                    broken = _broken_static_requirement(op, info_args, info_kwargs)
                self._raise_size_error(err, op, src, args, kwargs, broken)
            raise
        if not op.multi_output and isinstance(result, (tuple, list)) and op.name in self.op_table:
            op = self._opaque_items(op)
        outs = list(result) if op.multi_output else [result]
        concrete = [tuple(np.shape(o)) for o in outs]
        ctx, shapes, pinned = self._rule(op, src, concrete, args, kwargs, info_args, info_kwargs)
        if pinned is not None:  # the node computes with the pinned constants the rule took
            node_args, node_kwargs = self.node_arg(pinned[0]), self.node_arg(pinned[1])
            defer_args = defer_kwargs = False
        if len(shapes) != len(outs):
            raise CaptureError(f"internal error: shape rule of {op.name} gave {len(shapes)} outputs, "
                               f"numpy gave {len(outs)}")
        shapes = [self._checked_shape(s, c, op, src) for s, c in zip(shapes, concrete)]
        meta = self.node_meta(src)
        if defer_args:
            node_args = self.node_arg(tuple(node_args))
        if defer_kwargs:
            node_kwargs = self.node_arg(dict(node_kwargs))
        if not op.multi_output:
            meta.update(shape=shapes[0], dtype=_dtype_of(result))
            node = self.graph.call_function(op.name, node_args, node_kwargs, meta=meta)
            self._number(node, op, kwargs)
            self._bind(node, 0, ctx)
            if self.user_anchor is None:
                self.user_anchor = node
            out = TracedArray(self, node, shapes[0], result, ctx.vranges.get(0))
            self.aliases.note(op, args, kwargs, out)
            return out
        meta.update(shape=None, dtype=None)
        node = self.graph.call_function(op.name, node_args, node_kwargs, meta=meta)
        self._number(node, op, kwargs)
        if self.user_anchor is None:
            self.user_anchor = node
        traced = []
        for i, (s, value) in enumerate(zip(shapes, outs)):
            item = self.graph.call_function("tpe.item", (node, i), {}, name_hint=f"{node.name}_{i}",
                                            meta=self.node_meta(src, shape=s, dtype=_dtype_of(value)))
            self._number(item, None, {})
            self._bind(item, i, ctx)
            traced.append(TracedArray(self, item, s, value, ctx.vranges.get(i)))
            self.aliases.note(op, args, kwargs, traced[-1])
        if isinstance(result, tuple):  # numpy's namedtuples (QRResult, SVDResult) keep their fields
            return type(result)(*traced) if hasattr(type(result), "_fields") else tuple(traced)
        return traced

    def _opaque_items(self, op: OpDef) -> OpDef:
        """The multi-output form of a draft opaque op whose call returned a tuple or list
        (``np.linalg.eig``'s ``(w, v)``): an output per item, as numpy gave them.

        Per call, not per op: one numpy function may return an array or a tuple depending on
        its arguments (``np.gradient``).  Same name and impl (the program runs the same call)."""
        from ..ops.registry import OPAQUE_PREFIX, make_opaque_op

        return make_opaque_op(op.name[len(OPAQUE_PREFIX):], op.impl, multi_output=True)

    def _rule(self, op: OpDef, src: Any, concrete: Optional[list], args: tuple, kwargs: dict,
              info_args: Any, info_kwargs: Any, deferred: bool = False) -> tuple:
        """Run ``op``'s shape rule: ``(ctx, list of output shapes, pinned)``; ``concrete`` is numpy's
        output shapes (None for a deferred op: unbacked sizes never come from those).

        A rule that fails on a symbolic size argument (``np.diff(x, n=k)`` where the rule needs
        an int, ``x[n > 4]`` where it needs a bool) is run again with that argument pinned to
        its example value (:meth:`_rule_with_pins`); ``pinned`` is then ``(args, kwargs)`` with
        the pinned sizes as constants (the node must hold those), else None.  The guards the
        failed run emitted are forgotten (``ShapeEnv.rollback``).  ``deferred``: numpy has not
        run on the example (its proxies fit where the example may not, ``x + zeros((1, 512))``
        at ``x.shape[1] = 16``): a rule that fails runs it, so numpy's own error is the model's.
        """
        token = self.env.checkpoint() if _size_leaves((args, kwargs)) else None
        before = self.env.checkpoint() if deferred else None
        try:
            return (*self._run_rule(op, src, concrete, info_args, info_kwargs), None)
        except UnsupportedOpError as err:
            _at_source(err, src)
            raise
        except RequirementFalseAtExample as broken:
            if deferred:  # numpy's own error on the example, at the model's line
                self.env.rollback(before)
                self._numpy_error_of(op, src, args, kwargs, broken.requirement)
            raise
        except (CaptureError, DataDependentError):
            raise
        except Exception as err:
            tried = token is not None
            if tried:
                self.env.rollback(token)
                done = self._rule_with_pins(op, src, concrete, args, kwargs)
                if done is not None:
                    return done
            if isinstance(err, (TypeError, ValueError, sympy.SympifyError)) and _has_int_array_arg(args[1:]):
                done = self._rule_with_values(op, src, concrete, args, kwargs)
                if done is not None:
                    return done
                raise DataDependentError(
                    f"data-dependent: {op.name} needs Python ints here (split points, sizes, counts) and the "
                    f"model passes the values of an array, which the program cannot know ahead of time: "
                    f"compute the result with masks or np.where, or pass the values as static arguments\n"
                    f"  at {src}") from err
            if deferred:  # numpy's own error on the example, at the model's line, if it has one
                self._numpy_error_of(op, src, args, kwargs, None)
            also = " (also with its size arguments pinned to the example's values)" if tried else ""
            raise CaptureError(f"internal error: shape rule of {op.name} failed{also}: {type(err).__name__}: "
                               f"{err}\n  at {src}") from err

    # -- numpy errors a model may catch ------------------------------------------------
    def _numpy_error_of(self, op: OpDef, src: Any, args: tuple, kwargs: dict,
                        broken: Optional[FalseRequirement]) -> None:
        """Run a deferred ``op`` on the example, whose rule failed: numpy's own error is raised
        (as :meth:`_raise_size_error` makes it, ``broken`` being the rule's false requirement or
        None); returns when numpy runs fine."""
        self.force_args((args, kwargs))
        try:
            self._run_impl(op, self.example(args), self.example(kwargs), src)
        except CaptureError as err:
            if err.raised_by is not None and not isinstance(err, NumpySizeError):
                self._raise_size_error(err, op, src, args, kwargs, broken)
            raise

    def _broken_requirement(self, op: OpDef, src: Any, info_args: Any,
                            info_kwargs: Any) -> Optional[FalseRequirement]:
        """The requirement of ``op``'s shape rule the example sizes break (numpy has just raised
        on the example), or None: the rule runs through, or fails otherwise (numpy raised for
        something else than sizes: a dtype, an axis number, values).  Nothing the run emits is
        kept (``ShapeEnv.rollback``)."""
        token = self.env.checkpoint()
        try:
            self._run_rule(op, src, None, info_args, info_kwargs)
        except CaptureError as broken:  # RequirementFalseAtExample, or the index-bounds error
            return getattr(broken, "requirement", None)
        except Exception:  # noqa: BLE001 - not a requirement on sizes: numpy's error stands as it is
            return None
        finally:
            self.env.rollback(token)
        return None

    def _raise_size_error(self, err: CaptureError, op: OpDef, src: Any, args: tuple, kwargs: dict,
                          broken: Optional[FalseRequirement]) -> None:
        """Raise numpy's error ``err`` (a CaptureError whose ``__cause__`` is numpy's exception) as a
        :class:`~tensorplay_export.errors.NumpySizeError` of numpy's kind, when numpy raised because
        the sizes break ``broken``: the model may catch it (``except ValueError:``) as it would
        eagerly, and its except branch is recorded as any branch on sizes is, a guard that
        numpy's condition is false.  The program is then admitted only where eager raises too.

        Returns (``err`` stands) when ``broken`` is None, its condition is not false at the example,
        it involves a data-dependent size, or it bounds an index array's values (which may be
        smaller at other sizes: numpy's error there is about values, not sizes).
        """
        if broken is None or err.__cause__ is None:
            return
        needs = sympy.sympify(broken.numpy_needs())
        if not isinstance(needs, sympy.logic.boolalg.Boolean):
            return
        if any(self.env.is_unbacked(s) for s in needs.free_symbols) or bool(self.env.hint(needs)):
            return
        if broken.cause == "index_bounds" and _has_array_arg((args[1:], kwargs)):
            return
        kind = numpy_size_error(type(err.__cause__))
        if kind is None:
            return
        if needs is not sympy.false:  # false at every size (a static shape, a derived dim): no branch
            why = (f"the model catches the {type(err.__cause__).__name__} numpy raises here ({broken.reason}): "
                   f"the program takes the except branch, so it is valid only at sizes where numpy raises")
            self.env.guard(sympy.Not(needs), "guard", why, src, op.name, cause="branch", note=why)
        raise kind(*err.args, raised_by=err.raised_by, requirement=needs).with_traceback(
            err.__traceback__) from err.__cause__

    def _run_rule(self, op: OpDef, src: Any, concrete: Optional[list], info_args: Any,
                  info_kwargs: Any) -> tuple:
        ctx = ShapeCtx(self.env, op.name, src, concrete, size_text=format_guard)
        shapes = op.shape_rule(ctx, *info_args, **info_kwargs)
        return ctx, (list(shapes) if op.multi_output else [shapes])

    def _rule_with_pins(self, op: OpDef, src: Any, concrete: Optional[list], args: tuple,
                        kwargs: dict) -> Optional[tuple]:
        """``op``'s rule run with symbolic size arguments pinned: ``(ctx, shapes, (args, kwargs))``
        or None when it fails even with every one pinned.

        The rule cannot take a size there (a count, an offset, a number of parts, a bool
        index): the size is specialized to its example value with a reason naming the op and
        the argument, as ``int(size)`` or ``math.log(size)`` pin one, and capture goes on
        (``draft_export`` still builds a program).  Each argument holding sizes is tried
        alone first, in order, so only the ones the rule cannot take are pinned; a size
        comparison (SymBool) is decided by a guard on the example's branch and passed as
        that Python bool, as eager passes it.
        """
        keys = [i for i, a in enumerate(args) if _size_leaves(a)]
        keys += [k for k, v in kwargs.items() if _size_leaves(v)]
        trials = [[k] for k in keys] + ([keys] if len(keys) > 1 else [])
        for trial in trials:
            token = self.env.checkpoint()
            pargs, pkwargs = list(args), dict(kwargs)
            for key in trial:
                reason = (f"{_arg_text(op, key)} of {op.name} must be a constant (its shape rule has no "
                          f"symbolic form for a size there)")
                if isinstance(key, int):
                    pargs[key] = self._pinned(args[key], op.name, reason, src)
                else:
                    pkwargs[key] = self._pinned(kwargs[key], op.name, reason, src)
            pargs = tuple(pargs)
            try:
                ctx, shapes = self._run_rule(op, src, concrete, self.info(pargs), self.info(pkwargs))
            except (CaptureError, DataDependentError, UnsupportedOpError):
                raise
            except Exception:  # noqa: BLE001 - not this argument: forget its pin, try the next
                self.env.rollback(token)
                continue
            return ctx, shapes, (pargs, pkwargs)
        return None

    def _rule_with_values(self, op: OpDef, src: Any, concrete: Optional[list], args: tuple,
                          kwargs: dict) -> Optional[tuple]:
        """``op``'s rule run with its int array arguments (past the first) read as their values:
        ``(ctx, shapes, (args, kwargs))``, or None when one of them is data or the rule fails anyway.

        numpy takes an int array where it takes ints (``x.reshape(np.array([2, -1]))``,
        ``np.tile(x, np.array([1, 2]))``); an array computed from constants alone is its value,
        and one computed from sizes too (``np.array(x.shape)``) is read as
        :meth:`_read_of_sizes` reads it (each size pinned, with the reason).  The node then
        holds the values, as it would had the model passed them as Python ints.
        """
        def values(v: Any) -> Any:
            if isinstance(v, TracedArray) and v.dtype.kind in "iu":
                sizes = self._sizes_only(v)
                if sizes is None:
                    raise _IsData
                return self._read_of_sizes(v, lambda a: a.tolist(), "uses as ints the values", sizes, src)
            if type(v) in (tuple, list):
                return type(v)(values(e) for e in v)
            return v

        token = self.env.checkpoint()
        try:
            pargs = (args[0], *(values(a) for a in args[1:])) if args else ()
            pkwargs = {k: values(v) for k, v in kwargs.items()}
            ctx, shapes = self._run_rule(op, src, concrete, self.info(pargs), self.info(pkwargs))
        except (CaptureError, DataDependentError, UnsupportedOpError):
            raise
        except Exception:  # noqa: BLE001 - data among them, or the rule fails for another reason
            self.env.rollback(token)
            return None
        return ctx, shapes, (pargs, pkwargs)

    def _pinned(self, value: Any, op: str, reason: str, src: Any) -> Any:
        """``value`` with each symbolic size in it specialized to its example value."""
        if isinstance(value, SymBool):
            taken = bool(self.env.hint(value.expr))
            self.env.guard(value.expr if taken else sympy.Not(value.expr), "guard",
                           f"{reason}: a size comparison there is a Python bool", src, op, cause="branch")
            return taken
        if isinstance(value, (SymInt, SymFloat)):
            pinned = self.env.specialize(value.expr, reason, src, op=op)
            return value.numpy_type.type(pinned) if value.numpy_type is not None else pinned
        if isinstance(value, tuple):
            return tuple(self._pinned(v, op, reason, src) for v in value)
        if isinstance(value, list):
            return [self._pinned(v, op, reason, src) for v in value]
        if isinstance(value, dict):
            return {k: self._pinned(v, op, reason, src) for k, v in value.items()}
        if isinstance(value, slice):
            return slice(*(self._pinned(v, op, reason, src) for v in (value.start, value.stop, value.step)))
        return value

    def _proxy_run(self, op: OpDef, kind: str, args: tuple, kwargs: dict) -> Optional[tuple]:
        """``(dtype, shape or None)`` of ``op`` from its impl run on proxies (:func:`.lazy.proxy_args`),
        or None: the op runs eagerly on the example."""
        proxies = proxy_args(self, op, kind, args, kwargs)
        if proxies is None:
            return None
        pargs, pkwargs, full = proxies
        # A repeated layer makes the same proxy run again and again: the package's own ops give
        # the same dtype (or the same refusal) for the same proxies, so it is run once per capture
        key = None if full or (op.name not in LAZY_KINDS and kind != "ufunc") else proxy_run_key(op, pargs, pkwargs)
        if key is not None and key in self.proxy_runs:
            return self.proxy_runs[key]
        self.in_impl = True
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                out = op.impl(*pargs, **pkwargs)
        except Exception:  # noqa: BLE001 - the proxy does not fit this call: run eagerly
            out = None
        finally:
            self.in_impl = False
        found = (out.dtype, (tuple(out.shape) if full else None)) if isinstance(out, (np.ndarray, np.generic)) \
            else None
        if key is not None:
            self.proxy_runs[key] = found
        return found

    def _deferred(self, op: OpDef, args: tuple, kwargs: dict, src: Any, proxy: tuple, info_args: Any,
                  info_kwargs: Any, node_args: Any, node_kwargs: Any, defer_args: bool,
                  defer_kwargs: bool) -> "TracedArray":
        """Record ``op`` without running numpy: node, symbolic shape and exact dtype; the value
        is computed by :meth:`force` when something reads it.  ``proxy``: (dtype, numpy's shape
        on zero-strided views of the example shapes or None), from :meth:`_proxy_run`."""
        dtype, concrete = proxy
        ctx, shapes, pinned = self._rule(op, src, None if concrete is None else [concrete], args, kwargs,
                                         info_args, info_kwargs, deferred=True)
        if pinned is not None:  # the node computes with the pinned constants the rule took
            node_args, node_kwargs = self.node_arg(pinned[0]), self.node_arg(pinned[1])
            defer_args = defer_kwargs = False
        shape = self._checked_shape(shapes[0], concrete, op, src)
        if ctx.unbacked:
            raise CaptureError(f"internal error: {op.name} is deferred but its rule made a data-dependent size"
                               f"\n  at {src}")
        meta = self.node_meta(src)
        if defer_args:
            node_args = self.node_arg(tuple(node_args))
        if defer_kwargs:
            node_kwargs = self.node_arg(dict(node_kwargs))
        meta.update(shape=shape, dtype=dtype)
        node = self.graph.call_function(op.name, node_args, node_kwargs, meta=meta)
        self._number(node, op, kwargs)
        if self.user_anchor is None:
            self.user_anchor = node
        traced = TracedArray(self, node, shape, None, ctx.vranges.get(0))
        # the floating-point error handling in force at the call (the model's np.errstate):
        # the value is computed under it whenever it is read, as eager numpy computed it then
        traced._thunk = (op, args, kwargs, src, np.geterr())
        traced._dtype = dtype
        self.pending.append(weakref.ref(traced))
        return traced

    # -- computing deferred values --------------------------------------------------
    def force(self, target: "TracedArray") -> None:
        """Compute ``target``'s value on the example, its deferred ancestors first (no recursion:
        a 24-block model's chain is deeper than Python's stack)."""
        stack = [target]
        while stack:
            t = stack[-1]
            if t._thunk is None:
                stack.pop()
                continue
            waiting = pending_in((t._thunk[1], t._thunk[2]), [])
            if waiting:
                stack.extend(waiting)
                continue
            self._compute(t)
            stack.pop()

    def force_args(self, value: Any) -> None:
        for t in pending_in(value, []):
            self.force(t)

    def force_all(self) -> None:
        """Compute every deferred value now (before a write: later reads must see eager's order)."""
        refs, self.pending = self.pending, []
        for ref in refs:
            t = ref()
            if t is not None and t._thunk is not None:
                self.force(t)

    def _compute(self, t: "TracedArray") -> None:
        """Run a deferred op on its (computed) arguments' examples; the self-check of the shape
        rule and of the dtype happens here, against what numpy gives.

        Raises:
            CaptureError: numpy raised (with the op and the user's line), or (internal) the
                recorded shape or dtype is not numpy's.
        """
        op, args, kwargs, src, errstate = t._thunk
        with self._bool_operands(op, args):
            ex_args, ex_kwargs = self.example(args), self.example(kwargs)
        with np.errstate(**errstate):
            result = self._run_impl(op, ex_args, ex_kwargs, src)
        self._checked_shape(t._shape, tuple(np.shape(result)), op, src)
        if _dtype_of(result) != t._dtype:
            raise CaptureError(f"internal error: {op.name} was recorded with dtype {t._dtype}, but numpy "
                               f"gives {_dtype_of(result)}\n  at {src}")
        t._value, t._thunk, t._dtype = result, None, None
        if self.borrowed is not None:
            self.borrowed.note(t, result)
        # Whether numpy made a view is known only now; every deferred value is computed before
        # any write (force_all), so the aliases a write must rebuild are all noted by then.
        self.aliases.note(op, args, kwargs, t)

    def _run_impl(self, op: OpDef, ex_args: tuple, ex_kwargs: dict, src: Any) -> Any:
        """numpy's implementation of ``op`` on example values (now, or when a deferred value is read).

        Raises:
            UnsupportedOpError: as the op raised it, with the user's line.
            CaptureError: numpy raised (the model's own error is its ``__cause__``).
        """
        was, self.in_impl = self.in_impl, True
        try:
            return op.impl(*ex_args, **ex_kwargs)
        except UnsupportedOpError as err:
            _at_source(err, src)
            raise
        except CaptureError:
            raise
        except Exception as err:
            raise CaptureError(f"{op.name} raised {type(err).__name__}: {err}\n  at {src}",
                               raised_by=op.name) from err
        finally:
            self.in_impl = was

    def _call_with_out(self, op: OpDef, args: tuple, kwargs: dict, src: Any) -> Any:
        """``np.sum(x, axis=0, out=z)``: the result computed, then written into ``z`` as a
        functional write (``z[...] = result``, the same as an in-place operator); returns ``z``.

        Raises:
            UnsupportedOpError: ``z`` is not a traced array (a plain ndarray the model reached
                some other way: writing it would not be part of the program).
        """
        out = kwargs["out"]
        targets = out if isinstance(out, tuple) else (out,)
        if len(targets) != 1 or not isinstance(targets[0], TracedArray):
            raise UnsupportedOpError(
                f"out= of {op.name} must be an array the model traces (an input, module state or an "
                f"array it made); a plain ndarray written in place would not be part of the program. "
                f"Assign the result instead (z = ...)\n  at {src}")
        result = self.call(op, args, {k: v for k, v in kwargs.items() if k != "out"}, source=src)
        targets[0]._write_all(result, src, f"out= of {op.name}")
        return out

    def _checked_shape(self, shape: Any, concrete: tuple, op: OpDef, src: Any) -> tuple:
        """A rule's output shape as ints and sympy sizes, checked against numpy's ``concrete``.

        Raises:
            CaptureError: (internal) the shape at the example sizes is not numpy's.
        """
        out = []
        if concrete is None:  # a deferred op: checked when its value is computed (_compute)
            return tuple(d if type(d) is int else as_dim(d) if isinstance(d, sympy.Basic) else int(d)
                         for d in shape)
        same = len(shape) == len(concrete)
        for i, d in enumerate(shape):
            if type(d) is not int:
                d = as_dim(d) if isinstance(d, sympy.Basic) else int(d)
            if same and (d if type(d) is int else self.env.hint(d)) != concrete[i]:
                same = False
            out.append(d)
        out = tuple(out)
        if not same:
            got = tuple(self.env.hint(d) for d in out)
            raise CaptureError(f"internal error: shape rule of {op.name} gives {out} = {got} for the "
                               f"example, but numpy gives {concrete}\n  at {src}")
        return out

    # -- value numbering -----------------------------------------------------------
    def value_key(self, node: Optional[Node]) -> Optional[Node]:
        """The first node computing the same value as ``node`` (None for a constant not yet lifted).

        Two calls of one pure op on the same input values with the same static arguments
        compute the same value (``m = x > 0`` twice); numbering them alike lets rules that
        make data-dependent sizes share one symbol (``ArrayInfo.key``, ``same_as``).
        Nodes are SSA values (an in-place write makes a new node), so a node's value never
        changes.
        """
        if node is None:
            return None
        return self._same_value.get(node, node)

    def _number(self, node: Node, op: Optional[OpDef], kwargs: dict) -> None:
        """Give ``node`` the value number of an earlier node with the same (op, inputs, static args)."""
        if op is not None and (op.side_effect or op.writes_arg is not None or kwargs.get("out") is not None
                               or "random" in op.name or op.name in self.op_table):
            return  # not pure, or not known to be (draft's opaque ops): the node is its own value
        try:
            key = (node.target, _frozen(node.args, self.value_key), _frozen(node.kwargs, self.value_key))
            first = self._value_numbers.setdefault(key, node)
        except TypeError:  # an unhashable static argument: the node is its own value
            return
        if first is not node:
            self._same_value[node] = first

    def _bind(self, node: Node, out: int, ctx: ShapeCtx) -> None:
        for index, axis, sym in ctx.unbacked:
            if index == out:
                node.meta.setdefault("bind", {})[axis] = sym

    def sym_function(self, func: Any, args: tuple, kwargs: dict) -> Any:
        """A numpy function called with sizes and no traced array (``np.isclose(n, 5)``): its op,
        a 0-d traced value; numpy's own code when no op is registered for it."""
        src = user_source(2)
        op = lookup_func(func)
        if op is None or op.multi_output or op.writes_arg is not None:
            token = self.env.checkpoint()
            try:
                return func._implementation(*args, **kwargs)
            except TypeError:
                # numpy's C code checks the exact type (np.result_type(np.int8, n)): the sizes as
                # the example's numbers, pinned with the function's name; guards of the failed
                # attempt are forgotten
                self.env.rollback(token)
                what = f"numpy.{getattr(func, '__name__', 'function')}()"
                return func._implementation(*plain(args, what), **plain(kwargs, what))
        return self.call(op, tuple(args), dict(kwargs), source=src)

    def sym_ufunc(self, ufunc: Any, method: str, inputs: tuple, kwargs: dict) -> Any:
        """``np.sqrt(s)`` and friends on symbolic sizes: a 0-d traced numpy value."""
        src = user_source(2)
        op = self.op_for_func(ufunc, src) if method == "__call__" else None
        if op is None:
            raise UnsupportedOpError(f"{func_name(ufunc)}.{method} on a symbolic size is not supported"
                                     f"\n  at {src}")
        return self.call(op, tuple(inputs), kwargs, source=src)




def _typed_sizes_as_scalars(args: tuple, infos: tuple) -> tuple:
    """A ufunc's rule sees an operand ``n + np.int32(1)`` as the 0-d int32 value it is (numpy 2
    promotes it as an array, never as a weak Python int that must fit the array's dtype)."""
    return tuple(ArrayInfo((), a.numpy_type, (a.expr, a.expr)) if isinstance(a, (SymInt, SymFloat)) and a.numpy_type is not None
                 else info for a, info in zip(args, infos))


# np.errstate modes a program can restore without a handler (np.seterrcall) of the model's
_PLAIN_ERRSTATES = frozenset({"ignore", "warn", "raise", "print"})

# value reads of an array computed from sizes alone: what eager gives (draft mode's table, plus
# the reads only eager code makes of such an array)
_SIZE_VALUE_READS: dict[str, Any] = {
    "__bool__": bool, "__int__": int, "__index__": operator.index, "__float__": float, "__complex__": complex,
    "item": lambda a: a.item(), "tolist": lambda a: a.tolist(), "slice_bound": operator.index,
}


def _expr_leaves(value: Any) -> Iterator[Any]:
    """The sympy expressions among a node's arguments (nested tuples, lists, dicts and slices)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, sympy.Basic):
            yield v
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, slice):
            stack.extend((v.start, v.stop, v.step))


# reads a SymInt can answer (int() and __index__ must return a real int: CPython checks)
_INT_READS = frozenset({"item", "slice_bound"})


def _one_element(shape: tuple) -> bool:
    return all(type(d) is int for d in shape) and int(np.prod(shape, dtype=np.int64)) == 1


class _IsData(Exception):
    """An int array argument computed from data: it has no value at capture time."""


def _has_int_array_arg(value: Any) -> bool:
    """Whether a traced integer array is among these arguments (top level or in tuples, lists)."""
    if isinstance(value, TracedArray):
        return value.dtype.kind in "iu"
    if isinstance(value, (tuple, list)):
        return any(_has_int_array_arg(v) for v in value)
    return False


def _static_arrays(info: Any) -> bool:
    """Whether every array a rule sees here has a static shape (capture's sizes are ints)."""
    if isinstance(info, ArrayInfo):
        return all(type(d) is int for d in info.shape)
    if isinstance(info, (tuple, list)):
        return all(_static_arrays(v) for v in info)
    if isinstance(info, dict):
        return all(_static_arrays(v) for v in info.values())
    return not isinstance(info, sympy.Basic)


def _broken_static_requirement(op: OpDef, info_args: Any, info_kwargs: Any) -> Optional[FalseRequirement]:
    """(every size of the call static) A requirement on shapes numpy's error breaks, or None.

    Rules leave static sizes to numpy (it checked the example); run as a pure function
    (``ShapeCtx.bare``) with each static axis of 2 or more a symbol at that size, the rule
    states what numpy needs of them.  One false there is false at every call (the sizes are
    static), so the except branch a model takes needs no guard (``FalseRequirement`` of
    ``false``).  Nothing reaches the capture's ShapeEnv.
    """
    hints: dict = {}

    def symbolic(value: Any) -> Any:
        if isinstance(value, ArrayInfo):
            shape = []
            for d in value.shape:
                if d >= 2:
                    sym = sympy.Symbol(f"static{len(hints)}", integer=True, positive=True)
                    hints[sym] = d
                    d = sym
                shape.append(d)
            return dataclasses.replace(value, shape=tuple(shape))
        if isinstance(value, tuple):
            return tuple(symbolic(v) for v in value)
        if isinstance(value, list):
            return [symbolic(v) for v in value]
        if isinstance(value, dict):
            return {k: symbolic(v) for k, v in value.items()}
        return value

    s_args, s_kwargs = symbolic(info_args), symbolic(info_kwargs)
    if not hints:
        return None
    ctx = ShapeCtx.bare(hints, {s: (2, None) for s in hints}, op=op.name)
    try:
        op.shape_rule(ctx, *s_args, **s_kwargs)
    except Exception:  # noqa: BLE001 - the requirements it stated before failing still count
        pass
    for record in ctx.recorded or ():
        cond = record.eager if record.eager is not None else record.expr
        try:
            false = ctx.hint(cond) is False
        except Exception:  # noqa: BLE001 - not a condition on these sizes alone
            continue
        if false:
            return FalseRequirement(sympy.false, None, record.cause or None, record.reason)
    return None


def _has_array_arg(value: Any) -> bool:
    """Whether an array (traced or not) is among these arguments (top level or in tuples,
    lists, dicts, slices): an index taken from an array's values, not from sizes and ints."""
    if isinstance(value, (TracedArray, np.ndarray)):
        return True
    if isinstance(value, (tuple, list)):
        return any(_has_array_arg(v) for v in value)
    if isinstance(value, dict):
        return any(_has_array_arg(v) for v in value.values())
    if isinstance(value, slice):
        return any(_has_array_arg(v) for v in (value.start, value.stop, value.step))
    return False


def _size_leaves(value: Any) -> bool:
    """Whether a symbolic size or size comparison is among an op's arguments (top level or in
    tuples, lists, dicts, slices)."""
    t = type(value)
    if t in _PLAIN or t is TracedArray:
        return False
    if isinstance(value, (SymInt, SymFloat, SymBool)):
        return True
    if isinstance(value, (tuple, list)):
        return any(_size_leaves(v) for v in value)
    if isinstance(value, dict):
        return any(_size_leaves(v) for v in value.values())
    if isinstance(value, slice):
        return any(_size_leaves(v) for v in (value.start, value.stop, value.step))
    return False


def _arg_text(op: OpDef, key: Any) -> str:
    """How a reason names an op's argument: ``argument `n```, from the shape rule's signature
    (its first parameter is the ctx); ``argument 2`` where the signature does not say."""
    if isinstance(key, str):
        return f"argument `{key}`"
    try:
        params = list(inspect.signature(op.shape_rule).parameters.values())[1:]
    except (TypeError, ValueError):
        params = []
    if key < len(params) and params[key].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return f"argument `{params[key].name}`"
    return f"argument {key + 1}"


def _frozen(value: Any, key: Any) -> Any:
    """A hashable form of node args (nodes by their value number ``key(node)``; exact types kept)."""
    t = type(value)
    if t in _PLAIN:  # the common leaves first: this runs on every op's arguments
        return (t, value)
    if t is tuple or t is list:
        return (t.__name__, tuple([_frozen(v, key) for v in value]))
    if isinstance(value, Node):
        return ("node", key(value))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__, tuple(_frozen(v, key) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _frozen(v, key)) for k, v in value.items()))
    if isinstance(value, slice):
        return ("slice", _frozen(value.start, key), _frozen(value.stop, key), _frozen(value.step, key))
    if isinstance(value, np.ndarray):
        raise TypeError("an array argument")
    # 1 and 1.0 and True hash alike but may give different results: keep the type
    return (type(value), value)


def static_axis_sites(path: str, shape: tuple, spec: Any) -> Optional[tuple]:
    """Per axis of the model input ``path`` (symbolic ``shape``, its ``LeafSpec`` or None): for a
    static axis, where its size comes from and why it is static, for reasons that compare a
    dynamic size with it (``"y.shape[0], static: no Dim for y in dynamic_shapes"``); None for a
    dynamic axis.  None when the input has no static axis."""
    axes = getattr(spec, "axes", None) or {}
    out = []
    for axis, d in enumerate(shape):
        if not isinstance(d, int):
            out.append(None)
        elif not axes:  # None, no entry, {} or only static axes: the spec normalizes all to no axes
            out.append(f"{path}.shape[{axis}], static: no Dim for {path} in dynamic_shapes")
        else:
            out.append(f"{path}.shape[{axis}], static: {path}'s dynamic_shapes entry has no Dim for axis {axis}")
    return tuple(out) if any(out) else None


def _at_source(err: UnsupportedOpError, src: Any) -> None:
    """Append a line ``  at file:line  `code``` (the user's line) to ``err``'s message, once.

    Rules raise without knowing the line; an error that already names a line (an inner
    op's, or a message written with one) is left as it is.  ``err`` is changed in place,
    so a bare ``raise`` keeps its type and traceback.
    """
    msg = str(err)
    if src is not None and "\n  at " not in msg:
        err.args = (f"{msg}\n  at {src}", *err.args[1:])


def _dtype_of(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    return np.asarray(value).dtype
