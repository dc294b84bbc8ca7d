"""What the model sees during capture: lazy constants, symbolic min/max, creation functions.

Numpy cannot dispatch ``POS[:s]`` on a plain ndarray global, so the model must
be handed traced values in the first place.  Two mechanisms, both scoped to
the capturing thread:

- **Cloned functions over a globals view.**  The model function (and every
  ``nn.Module.forward`` it calls, and every plain Python function it reaches
  through its globals or closure) runs as a clone whose globals are a
  :class:`GlobalsView`: a dict subclass that reads through to the real module
  dict and translates on read.  An ndarray global becomes a lazily lifted
  constant (its ``c_<name>`` placeholder appears only if an op uses it); a
  name bound to a numpy creation function becomes the patched one; a missing
  ``min``/``max`` becomes the symbolic one.  The real module dict is never
  modified, so other threads never see traced values.  (Assigning a global
  inside the model writes to the view, not the module.)  Closure cells and
  ``__defaults__`` get the same translation in the clone.
- **Patched numpy creation attributes.**  ``numpy.arange/zeros/ones/...`` (and
  ``numpy.fft.fftfreq/rfftfreq``, functions of a length only; and ``numpy.errstate``,
  which tells the tracer the kinds it sets) are replaced by wrappers for the duration of any capture (reference-counted,
  restored with an ``is`` check).  A wrapper does nothing unless this
  thread's tracer is set and is not inside an op's numpy impl, so numpy's own
  Python code and other threads get the original behaviour.
"""
from __future__ import annotations

import builtins
import functools
import math
import sys
import threading
import types
from typing import Any, Callable, Optional

import numpy as np
import sympy

from ..errors import CaptureError
from .frames import is_library_file, is_user_function, user_source
from .symbolic import (PRINTING, SymBool, SymFloat, SymInt, as_type_of, require_fits, sym_float, sym_max, sym_min,
                       sym_sqrt)
from ..ops.registry import get_op
from .index_tricks import INDEX_TRICKS, view_of as index_trick_view
from .stdlib import PinningType, plain, stdlib_view
from .lazy import PLAIN_ARGS
from .traced import TracedArray
from .tracer import CURRENT

CREATION = ("arange", "zeros", "ones", "empty", "full", "eye", "identity", "tri", "linspace",
            "array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray", "prod",
            # reductions model code applies to x.shape (a tuple of sizes numpy cannot dispatch on)
            "sum", "max", "min", "amax", "amin", "mean", "cumsum", "cumprod", "median", "sort", "argsort",
            "argmax", "argmin", "broadcast_shapes",
            # functions of sizes only (no array argument numpy could dispatch on)
            "logspace", "geomspace", "indices", "triu_indices", "tril_indices", "diag_indices",
            "hanning", "hamming", "blackman", "bartlett", "kaiser",
            # in numpy's submodules: "fft.fftfreq" is numpy.fft.fftfreq, registered as "numpy.fft.fftfreq"
            "fft.fftfreq", "fft.rfftfreq")


def _owner(name: str) -> tuple[Any, str]:
    """The module a CREATION name is an attribute of, and the attribute (``np.fft``, ``"fftfreq"``)."""
    module, _, attr = name.rpartition(".")
    return (getattr(np, module) if module else np), attr


_AS_ARRAY = ("array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray")
_ORIGINALS: dict[str, Callable] = {name: getattr(*_owner(name)) for name in CREATION}
_ORIGINALS["errstate"] = np.errstate  # replaced by ModelErrstate (below), which records the kinds it sets
_BY_ORIGINAL = {id(fn): name for name, fn in _ORIGINALS.items()}
_WRAPPERS: dict[str, Callable] = {}
_OWN_MODEL_CODE = ("tensorplay_export.nn", "tensorplay_export.program.decompositions")  # never caches arrays
_LOCK = threading.Lock()
_ACTIVE = 0


def _any_symbolic(value: Any) -> bool:
    t = type(value)
    if t is TracedArray:
        return True
    if t in PLAIN_ARGS:  # before isinstance, which asks TracedArray's __class__ property per class
        return False
    if t is tuple or t is list:
        return any(_any_symbolic(v) for v in value)
    if isinstance(value, (SymInt, TracedArray)):
        return True
    if isinstance(value, (tuple, list)):
        return any(_any_symbolic(v) for v in value)
    if isinstance(value, dict):
        return any(_any_symbolic(v) for v in value.values())
    return False


def _is_traced(value: Any) -> bool:
    return isinstance(value, TracedArray)


def _flat_scalars(data: Any) -> list | None:
    """The flat list of a (nested) sequence of ints/SymInts that contains a SymInt, else None."""
    if not isinstance(data, (list, tuple)):
        return None
    flat = []
    for v in data:
        if isinstance(v, (list, tuple)):
            return None
        flat.append(v)
    if any(isinstance(v, SymInt) for v in flat) and all(
            isinstance(v, (SymInt, int, np.integer)) and not isinstance(v, bool) for v in flat):
        return flat
    return None


def creation_call(tracer: Any, name: str, args: tuple, kwargs: dict) -> Any:
    """A numpy creation call made by model code during capture: always traced."""
    kwargs = dict(kwargs)
    kwargs.pop("like", None)
    original = _ORIGINALS[name]
    if name in _AS_ARRAY:
        data = args[0] if args else kwargs.pop("object", None)
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")

        def cast(out: Any) -> Any:
            return out if dtype is None else tracer.call(get_op("numpy.ndarray.astype"), (out, dtype), {})

        def fitting(sizes: list) -> list:
            # numpy refuses a Python int its integer dtype cannot hold, where the program's astype wraps
            if dtype is not None and np.dtype(dtype).kind in "iu":
                require_fits(sizes, np.dtype(dtype), f"np.{name}(..., dtype={np.dtype(dtype)})")
            return sizes

        if _is_traced(data):
            copy = kwargs.get("copy", True)
            if name == "array" and copy is not None and copy is not False:
                return cast(tracer.call(get_op("numpy.copy"), (data,), {}))  # copy=None/False: as asarray
            # An order makes a view when data already has that layout and a copy otherwise, as
            # numpy decides at run time: the op (capture/views.py follows a write through it),
            # never data itself.
            order = {"ascontiguousarray": "C", "asfortranarray": "F"}.get(name) or (
                args[2] if name in ("asarray", "asanyarray") and len(args) > 2 else kwargs.get("order"))
            if order in ("C", "F") and data.ndim >= 1:
                data = tracer.call(get_op("numpy.ascontiguousarray" if order == "C" else "numpy.asfortranarray"),
                                   (data,), {})
            elif name in ("ascontiguousarray", "asfortranarray") and data.ndim == 0:
                data = tracer.call(get_op("numpy.reshape"), (data, (1,)), {})  # numpy's 1-d view of a 0-d array
            if dtype is None or np.dtype(dtype) == data.dtype:
                return data
            return cast(data)
        if isinstance(data, SymInt):
            # np.array(n): a 0-d int array of the size (np.int64, or the size's numpy type)
            vec = tracer.call(get_op("tpe.shape_array"), (SymInt(data.expr, data.env),), {})
            fitting([data])
            out = tracer.call(get_op("numpy.reshape"), (vec, ()), {})
            if dtype is None and data.numpy_type is not None:
                return tracer.call(get_op("numpy.ndarray.astype"), (out, data.numpy_type), {})
            return cast(out)
        flat = _flat_scalars(data)
        if flat is not None:
            return cast(tracer.call(get_op("tpe.shape_array"), tuple(fitting(flat)), {}))
        if isinstance(data, (list, tuple)) and data and all(_is_traced(v) for v in data):
            return cast(tracer.call(get_op("numpy.stack"), (list(data),), {}))
        if isinstance(data, (SymFloat, SymBool)):
            return cast(_stacked(tracer, data))  # np.array(n / m): a 0-d float64 (never an object array)
        if isinstance(data, (list, tuple)) and _holds_symbolic(data):
            # [np.sqrt(n), 1], [n / 2, 1.5], [[n, 0], [0, m]]: each element a 0-d value, stacked
            fitting([v for v in _leaves(data) if isinstance(v, SymInt)])
            return cast(_stacked(tracer, data))
        value = original(*args, **kwargs)
        if isinstance(value, np.ndarray):
            # a new array (np.array([6, 4]), a copy of a global) is the model's own to write into;
            # np.asarray(GLOBAL) is the global itself
            fresh = not any(isinstance(v, np.ndarray) and np.shares_memory(v, value)
                            for v in _leaves([list(args), list(kwargs.values())]))
            return tracer.lift_constant("c_array", value, made_here=fresh)
        return value
    if name not in _AS_ARRAY:
        # a size argument computed from data (np.zeros(np.count_nonzero(x))): numpy reads it
        # with __index__; here it is a data-dependent size, as an int .item() is
        args = tuple(_as_size(v) for v in args)
        kwargs = {k: _as_size(v) for k, v in kwargs.items()}
    if name in _OF_SIZES:
        data = args[0] if args else kwargs.get("a")
        flat = _flat_scalars(data)
        if flat is not None and len(args) <= 1 and set(kwargs) <= {"a"} and name in _SIZE_FOLDS:
            # np.prod(x.shape), np.max(x.shape): a size (np.int64, as eager's), usable in shapes
            return _SIZE_FOLDS[name](flat)
        if flat is not None or isinstance(data, (list, tuple)) and _holds_symbolic(data):
            # np.sum([n / 2, 1]): the elements as numpy's array of them, then the op
            vec = tracer.call(get_op("tpe.shape_array"), tuple(flat), {}) if flat is not None \
                else _stacked(tracer, data)
            rest = {k: v for k, v in kwargs.items() if k != "a"}
            return tracer.call(get_op(f"numpy.{name}"), (vec, *args[1:]), rest)
        return original(*args, **kwargs)
    if name == "broadcast_shapes":
        # numpy broadcasts empty arrays of the shapes in C; here the elementwise op's own shape
        # rule does (the same guards as x + y), and its shape is the answer
        out = None
        for shape in args:
            t = tracer.call(get_op("numpy.zeros"), ((shape,) if not isinstance(shape, (tuple, list)) else tuple(shape),),
                            {"dtype": np.dtype(bool)})
            out = t if out is None else tracer.call(get_op("numpy.logical_or"), (out, t), {})
        return () if out is None else tuple(out.shape)
    if name == "full":
        fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
        dtype = args[2] if len(args) > 2 else kwargs.get("dtype")
        if isinstance(fill, SymInt) and fill.numpy_type is None and dtype is not None and np.dtype(dtype).kind in "iu":
            # numpy stores a Python int fill value in the dtype, raising OverflowError where it does not fit
            require_fits([fill], np.dtype(dtype), f"np.full(..., dtype={np.dtype(dtype)})")
    if name == "linspace":
        retstep = args[4] if len(args) > 4 else kwargs.pop("retstep", False)
        if retstep:  # (samples, step): an op with two outputs
            return tracer.call(get_op("tpe.linspace_retstep"), tuple(args[:4] + args[5:]), kwargs)
        args = args[:4] + (False,) + args[5:] if len(args) > 4 else args
    return tracer.call(get_op(f"numpy.{name}"), tuple(args), kwargs)


def _fold(flat: list, step: Callable, start: Any) -> Any:
    out = start
    for v in flat:
        out = step(out, v)
    return out


# numpy reductions of x.shape (and of the first argument only) that numpy itself would reach
# through a plain int64 array: np.prod(x.shape) and friends of a bare tuple of sizes are sizes
# (an np.int64, as eager's), others (np.cumsum(x.shape), np.mean(x.shape)) the op on tpe.shape_array
_OF_SIZES = frozenset({"prod", "sum", "max", "min", "amax", "amin", "mean", "cumsum", "cumprod", "median", "sort",
                       "argsort", "argmax", "argmin"})
_SIZE_FOLDS: dict = {
    "prod": lambda flat: _fold(flat, lambda a, b: a * b, np.int64(1)),
    "sum": lambda flat: _fold(flat, lambda a, b: a + b, np.int64(0)),
    "max": lambda flat: _as_int64(sym_max(*flat)),
    "min": lambda flat: _as_int64(sym_min(*flat)),
}


def _as_int64(value: Any) -> Any:
    return SymInt(value.expr, value.env, np.int64) if isinstance(value, SymInt) else np.int64(value)
_SIZE_FOLDS["amax"], _SIZE_FOLDS["amin"] = _SIZE_FOLDS["max"], _SIZE_FOLDS["min"]


def _holds_symbolic(data: Any) -> bool:
    return any(isinstance(v, (SymInt, SymFloat, SymBool, TracedArray)) for v in _leaves(data))


def _leaves(data: Any) -> list:
    if isinstance(data, (list, tuple)):
        return [leaf for v in data for leaf in _leaves(v)]
    return [data]


def _stacked(tracer: Any, data: Any) -> Any:
    """``np.array(data)`` of a (nested) list holding sizes or traced arrays, as traced ops.

    numpy's array coercion gives the promotion of each element's own dtype (a Python int is
    int64 there, a float float64, ``np.float32(n)`` float32): each element becomes that 0-d
    value (a size through ``tpe.size_scalar``, a plain number a constant) and ``np.stack``
    promotes them the same way.  Ragged nesting fails in stack as in numpy.
    """
    if isinstance(data, (list, tuple)):
        return tracer.call(get_op("numpy.stack"), ([_stacked(tracer, v) for v in data],), {})
    if isinstance(data, TracedArray):
        return data
    if isinstance(data, SymBool):
        return tracer.call(get_op("tpe.size_scalar"), (data.as_int(), np.dtype(bool)), {})
    if isinstance(data, (SymInt, SymFloat)):
        dtype = data.numpy_type or np.dtype(np.int64 if isinstance(data, SymInt) else np.float64)
        return tracer.call(get_op("tpe.size_scalar"), (type(data)(data.expr, data.env), dtype), {})
    return tracer.lift_constant("c_array", np.asarray(data))


def _as_size(value: Any) -> Any:
    """A one-element int traced array as the data-dependent size it stands for (``item_size``);
    tuples and lists of sizes elementwise; anything else as it is."""
    if isinstance(value, TracedArray):
        if value.dtype.kind in "iu" and value.ndim <= 1 and all(type(d) is int for d in value._shape):
            known = value._tracer.constant_value(value)
            if known is not None:  # np.zeros(np.array([2, 3])): a constant shape is its values
                # numpy scalars, so a fill value keeps its dtype (np.full(s, np.array(7, np.int8)))
                return list(known) if known.ndim else known[()]
        if value.dtype.kind in "iu" and all(type(d) is int for d in value._shape) and value.size == 1:
            return value._read("item", "uses as a size the value")
        if value.dtype.kind in "iu" and value.ndim == 1 and type(value._shape[0]) is int:
            # np.zeros(np.array(x.shape) // 2): the values as a shape (sizes, when computed from sizes)
            return tuple(_as_size(value[i]) for i in range(value._shape[0]))
        return value
    if type(value) in (tuple, list):
        return type(value)(_as_size(v) for v in value)
    return value


def _make_wrapper(name: str) -> Callable:
    original = _ORIGINALS[name]

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        tracer = CURRENT.get()
        if tracer is None or tracer.in_impl:
            return original(*args, **kwargs)
        # Only model code we run over a GlobalsView gets traced values for static creations;
        # anything else (caches, factories in other modules) would keep a traced value alive.
        caller = sys._getframe(1).f_globals
        if not (isinstance(caller, GlobalsView) or str(caller.get("__name__", "")).startswith(_OWN_MODEL_CODE)
                or _any_symbolic((args, kwargs))):
            return original(*args, **kwargs)
        return creation_call(tracer, name, args, kwargs)

    wrapper.__tpe_original__ = original
    return wrapper


for _name in CREATION:
    _WRAPPERS[_name] = _make_wrapper(_name)

_ERRSTATE_KINDS = ("divide", "over", "under", "invalid")
_NO_CALL = np.errstate()._call  # numpy's "call= not given" marker


class ModelErrstate(np.errstate):
    """``np.errstate`` as code sees it during a capture: numpy's context manager (and
    decorator), which also tells this thread's tracer which kinds the model's code sets.

    A node records the errstate kinds the model set around it (node meta ``"errstate"``,
    capture/tracer.py).  Comparing ``np.geterr()`` with the caller's state misses a kind set
    to the value it already had (``divide="warn"`` under a caller's ``"warn"``), which a
    later caller's ``"raise"`` would then override; so the kinds come from here.  ``all=``
    sets every kind; ``call=`` alone sets none.  Entered from library code (this package,
    numpy) it records nothing.
    """

    __slots__ = ("_tpe_tracer", "_tpe_model")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._tpe_tracer = None
        self._tpe_model = False  # set by the decorator form: entered for the model's function

    def _kinds(self) -> frozenset:
        if self._all is not None:
            return frozenset(_ERRSTATE_KINDS)
        return frozenset(k for k in _ERRSTATE_KINDS if getattr(self, f"_{k}") is not None)

    def __enter__(self) -> None:
        super().__enter__()
        tracer = CURRENT.get()
        if tracer is None or tracer.in_impl:
            return
        if self._tpe_model or not is_library_file(sys._getframe(1).f_code.co_filename):
            tracer.model_errstate.append(self._kinds())
            self._tpe_tracer = tracer

    def __exit__(self, *exc_info: Any) -> None:
        tracer, self._tpe_tracer = self._tpe_tracer, None
        if tracer is not None and tracer.model_errstate:
            tracer.model_errstate.pop()
        super().__exit__(*exc_info)

    def __call__(self, func: Callable, from_model: Optional[bool] = None) -> Callable:
        settings = {k: getattr(self, f"_{k}") for k in ("all",) + _ERRSTATE_KINDS}
        if self._call is not _NO_CALL:
            settings["call"] = self._call
        if from_model is None:
            from_model = not is_library_file(sys._getframe(1).f_code.co_filename)

        @functools.wraps(func)
        def inner(*args: Any, **kwargs: Any) -> Any:
            ctx = ModelErrstate(**settings)  # one per call: numpy keeps the token per call too
            ctx._tpe_model = from_model
            with ctx:
                return func(*args, **kwargs)
        return inner


_WRAPPERS["errstate"] = ModelErrstate


def patch_numpy() -> None:
    """Install the creation wrappers on ``numpy`` (reference-counted across captures)."""
    global _ACTIVE
    with _LOCK:
        if _ACTIVE == 0:
            for name, wrapper in _WRAPPERS.items():
                if getattr(*_owner(name)) is _ORIGINALS[name]:
                    setattr(*_owner(name), wrapper)
            _patch_random()
        _ACTIVE += 1


def unpatch_numpy() -> None:
    """Undo :func:`patch_numpy` when the last capture ends (only bindings still ours)."""
    global _ACTIVE
    with _LOCK:
        _ACTIVE -= 1
        if _ACTIVE == 0:
            for name, wrapper in _WRAPPERS.items():
                if getattr(*_owner(name)) is wrapper:
                    setattr(*_owner(name), _ORIGINALS[name])
            _unpatch_random()


# -- numpy.random ----------------------------------------------------------------------------------
# Draws from numpy's global or free-standing generators cannot be part of a program (a run could
# not reproduce them), so a capture refuses them; draws from module-owned generator state are
# graph ops (ops/random.py, nn.Dropout).  numpy's compiled random modules also call ``np.empty``/``np.asarray`` through the numpy
# module: with the creation wrappers installed they would get traced arrays, which they cast to
# ndarray unchecked (a segfault), and compiled code has no Python frame, so the wrappers' "only
# model code" check sees the model's frame.  So while any capture runs:
# - each compiled numpy.random module sees ``numpy`` through a :class:`_CompiledNumpyView`: the
#   creation functions are always numpy's own, and any use inside a capture (outside an op's impl)
#   is refused -- this covers Generator/RandomState methods of objects made outside the model;
# - the public numpy.random functions are wrapped to refuse with their own name.
_RANDOM_VIEWS: dict[str, Any] = {}       # compiled module name -> the view installed as its ``np``
_RANDOM_WRAPPERS: dict[str, Any] = {}    # numpy.random attribute -> (original, wrapper)


def refuse_random(what: str) -> None:
    """Raise UnsupportedOpError when a capture (outside an op's impl) is drawing random numbers."""
    tracer = CURRENT.get()
    if tracer is None or tracer.in_impl:
        return
    from ..errors import UnsupportedOpError

    # random_draw: draft_export reports it under its own kind, not as a missing shape rule
    raise UnsupportedOpError(
        f"random numbers inside the model: {what} draws them from a generator the program does not "
        f"hold, so an exported program cannot reproduce them. For dropout use nn.Dropout (it owns "
        f"its generator as a buffer, so training-mode dropout exports); for other draws keep a "
        f"generator state in a buffer of your module (nn.functional.generator_state(seed)) and draw "
        f"with nn.functional.random_uniform / random_normal; or pass them as an input (draw them "
        f"outside and call model(x, noise))"
        f"\n  at {user_source(2)}", random_draw=True)


class _CompiledNumpyView(types.ModuleType):
    """``numpy`` as numpy.random's compiled modules see it during captures."""

    def __getattr__(self, name: str) -> Any:
        refuse_random("a numpy.random generator (Generator / RandomState / seeding)")
        original = _ORIGINALS.get(name)
        return original if original is not None else getattr(np, name)


def _random_modules() -> list:
    out = []
    for modname, module in list(sys.modules.items()):
        if (modname.startswith("numpy.random.") and module is not None
                and str(getattr(module, "__file__", "")).endswith((".so", ".pyd"))
                and getattr(module, "np", None) is np):
            out.append(module)
    return out


def _random_wrapper(name: str, original: Callable) -> Callable:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        refuse_random(f"numpy.random.{name}")
        return original(*args, **kwargs)

    wrapper.__name__ = name
    wrapper.__qualname__ = name
    wrapper.__doc__ = getattr(original, "__doc__", None)
    wrapper.__tpe_original__ = original
    return wrapper


def _patch_random() -> None:
    import numpy.random as npr

    for module in _random_modules():
        view = _CompiledNumpyView("numpy")
        _RANDOM_VIEWS[module.__name__] = view
        module.np = view
    for name in getattr(npr, "__all__", ()):
        original = getattr(npr, name, None)
        if original is None or isinstance(original, type) or not callable(original):
            continue  # classes stay (isinstance checks elsewhere); their compiled code meets the view
        wrapper = _random_wrapper(name, original)
        _RANDOM_WRAPPERS[name] = (original, wrapper)
        setattr(npr, name, wrapper)


def _unpatch_random() -> None:
    import numpy.random as npr

    for modname, view in _RANDOM_VIEWS.items():
        module = sys.modules.get(modname)
        if module is not None and getattr(module, "np", None) is view:
            module.np = np
    _RANDOM_VIEWS.clear()
    for name, (original, wrapper) in _RANDOM_WRAPPERS.items():
        if getattr(npr, name, None) is wrapper:
            setattr(npr, name, original)
    _RANDOM_WRAPPERS.clear()


# -- cloned functions ----------------------------------------------------------------------------
class GlobalsView(dict):
    """Globals of a cloned function: reads through to ``real`` and translates on read."""

    def __init__(self, real: dict, tracer: Any) -> None:
        super().__init__()
        self._real = real
        self._tracer = tracer
        self._cache: dict = {}
        builtins_ = real.get("__builtins__")
        if builtins_ is not None:
            dict.__setitem__(self, "__builtins__", _capture_builtins(builtins_))
        for key in ("__name__", "__file__", "__package__", "__spec__", "__loader__"):
            if key in real:
                dict.__setitem__(self, key, real[key])

    def __getitem__(self, key: str) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        try:
            value = self._real[key]
        except KeyError:
            if key == "min":
                return sym_min
            if key == "max":
                return sym_max
            if key == "float":
                return sym_float
            if key == "len":
                return sym_len
            raise
        return translate(self._tracer, key, value)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or key in self._real


def sym_len(value: Any) -> Any:
    """``len`` for model code: a traced array's first axis stays symbolic (``x[: len(x) - 1]``).

    CPython's own ``len()`` must return a Python int, which pins the size; this one returns
    the axis's size (a SymInt), which pins only where an int is needed (``[0] * len(x)``).
    """
    if isinstance(value, TracedArray):
        if not value._shape:
            raise TypeError("len() of unsized object")
        return value.shape[0]
    return builtins.len(value)


def _capture_import(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
    """``__import__`` for cloned functions: ``import math`` inside the model gets the symbolic view."""
    module = builtins.__import__(name, globals, locals, fromlist, level)
    if module is math or module is np:
        return _MATH if module is math else _NUMPY
    return stdlib_view(module) or module


def _capture_builtins(real: Any) -> dict:
    """The builtins a cloned function runs with: the real ones, with :func:`_capture_import`.

    An ``import`` statement looks ``__import__`` up in the frame's builtins (which a function
    takes from its globals' ``__builtins__``), not in its globals, so a local ``import math``
    in ``forward`` is only reached here.
    """
    out = dict(vars(real) if isinstance(real, types.ModuleType) else real)
    out["__import__"] = _capture_import
    out["print"] = _capture_print
    return out


def _capture_print(*args: Any, **kwargs: Any) -> None:
    """``print`` for cloned functions: for stdout/stderr, sizes print symbolically (``(n, 2)``)
    and record no guard, so a debug ``print(x.shape)`` does not pin the dims it shows; text
    for another file object may be read back as data, so there they pin, as ``str()`` does."""
    file = kwargs.get("file")
    to_screen = file is None or file is sys.stdout or file is sys.stderr
    token = PRINTING.set("screen" if to_screen else "file")
    try:
        builtins.print(*args, **kwargs)
    finally:
        PRINTING.reset(token)


class _SymbolicMath:
    """``math`` as model code sees it during capture: ``sqrt`` of a size stays symbolic."""

    def __getattr__(self, name: str) -> Any:
        if name == "sqrt":
            return sym_sqrt
        value = getattr(math, name)
        return _named_pin(name, value) if name in _PINNING_MATH else value


# math functions of a float that sizes have no symbolic form for here: a size given to one is
# pinned with the function's name as the reason (not the bare "converted with float()")
_PINNING_MATH = frozenset({"log", "log2", "log10", "log1p", "exp", "exp2", "expm1", "pow", "sin", "cos",
                           "tan", "tanh", "atan", "atan2", "erf", "erfc", "gamma", "lgamma", "cbrt",
                           "isqrt", "factorial", "comb", "perm", "gcd", "lcm", "ldexp", "fmod", "modf",
                           "frexp", "remainder", "fsum", "isclose", "dist", "nextafter", "ulp", "copysign",
                           "asin", "acos", "sinh", "cosh", "asinh", "acosh", "atanh", "degrees", "radians"})


def _named_pin(name: str, fn: Callable) -> Callable:
    @functools.wraps(fn)
    def pinned(*args: Any) -> Any:
        values = []
        for a in args:
            if isinstance(a, (SymInt, SymFloat)):
                reason = f"math.{name}() of a size (it has no symbolic form here; only math.sqrt stays symbolic)"
                a = a.env.specialize(a.expr, reason)
            values.append(a)
        return fn(*values)
    return pinned


_MATH = _SymbolicMath()


class _ScalarTypeView(PinningType):
    """Metaclass of the numpy scalar types model code sees during capture (``np.float32``):
    ``np.float32(n)`` of a size is that size typed ``float32`` (a symbolic value, as eager's
    ``np.float32(16)`` is its example's); anything else is the real type's own answer.

    A view is a subclass of the real type, so numpy takes it wherever it takes the type
    (``np.zeros(3, np.float32)``, ``x.astype(np.float32)``, ``np.finfo``), and ``isinstance``,
    ``issubclass`` and ``==`` answer as for the real type; only ``x.dtype.type is np.float32``
    tells them apart.  A narrow integer type requires the size to fit (numpy raises
    ``OverflowError`` for a Python int out of its range).
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        real = cls.__real__
        if len(args) == 1 and not kwargs:
            value, kind = args[0], np.dtype(real).kind
            if isinstance(value, SymInt) and kind in "iuf" or isinstance(value, SymFloat) and kind == "f":
                if kind in "iu":
                    require_fits([value], np.dtype(real), f"np.{real.__name__}()")
                return as_type_of(value, real(value.example()))
            tracer = CURRENT.get()
            if isinstance(value, TracedArray) and kind in "biufc" and tracer is not None and not tracer.in_impl:
                # np.float32(np.sqrt(n)), np.int64(a.sum()): numpy casts the array (a scalar of a
                # 0-d one); here its cast, a 0-d traced value computed at run time
                return tracer.call(get_op("numpy.ndarray.astype"), (value, np.dtype(real)), {})
        # any other use of a size (np.timedelta64(n, "s"), np.complex128(n), np.bool_(n)): numpy's
        # C constructor needs a plain number, so the sizes are pinned with the type's name
        what = f"np.{real.__name__}()"
        return real(*plain(args, what), **plain(kwargs, what))
    # isinstance, issubclass, ==, hash and repr answer as for the real type (PinningType's)


# the numpy scalar types model code sees as views: a size converts to the numeric ones exactly
_SCALAR_VIEWS = {t: _ScalarTypeView(t.__name__, (t,), {"__real__": t, "__module__": "numpy"})
                 for t in {np.float16, np.float32, np.float64, np.int8, np.int16, np.int32, np.int64,
                           np.uint8, np.uint16, np.uint32, np.uint64, np.intc, np.intp, np.uintp, np.longlong,
                           np.ulonglong, np.single, np.double, np.half, np.longdouble,
                           # no size form: their constructors pin (above)
                           np.bool_, np.complex64, np.complex128, np.timedelta64, np.datetime64, np.str_,
                           np.bytes_}}


class _NumpyView(types.ModuleType):
    """``numpy`` as model code sees it during capture: its scalar types are the views above."""

    def __getattr__(self, name: str) -> Any:
        value = getattr(np, name)
        if isinstance(value, type):
            return _SCALAR_VIEWS.get(value, value)
        trick = INDEX_TRICKS.get(name)
        return trick if trick is not None and value is trick._real else value

    def __dir__(self) -> list:
        return dir(np)


_NUMPY = _NumpyView("numpy", np.__doc__)
_NUMPY.__dict__.update({"__file__": np.__file__, "__version__": np.__version__})


def translate(tracer: Any, name: str, value: Any) -> Any:
    """The capture-time stand-in for a value read from a global, cell or default."""
    if value is math:
        return _MATH
    if value is math.sqrt:
        return sym_sqrt
    if value is np:
        return _NUMPY
    if isinstance(value, type) and value in _SCALAR_VIEWS:
        return _SCALAR_VIEWS[value]
    if type(value) is np.ndarray:
        return tracer.lift_constant(f"c_{name}", value)
    clone = tracer.module_clones.get(id(value))
    if clone is not None:  # a module of the exported tree read through a global: its lifted state
        return clone
    trick = index_trick_view(value)  # np.mgrid, np.r_, ... read from a global (from numpy import r_)
    if trick is not None:
        return trick
    pinning = stdlib_view(value)  # json, pickle, decimal, ...: sizes given to them are pinned
    if pinning is not None:
        return pinning
    orig_name = _BY_ORIGINAL.get(id(value))
    if orig_name is not None and value is _ORIGINALS[orig_name]:
        return _WRAPPERS[orig_name]
    if is_user_function(value):  # False for anything but a plain Python function
        return clone_function(tracer, value)
    decorated = _errstate_decorated(value)
    if decorated is not None:  # @np.errstate(...) applied before the capture: the kinds still count
        settings, func = decorated
        return ModelErrstate(**settings)(translate(tracer, name, func), from_model=True)
    return value


# the code object of the function numpy's errstate decorator returns (np.errstate(...)(f))
_ERRSTATE_INNER_CODE = _ORIGINALS["errstate"]()(lambda: None).__code__


def _errstate_decorated(value: Any) -> Any:
    """``(errstate settings, the decorated function)`` of a function made by numpy's
    ``@np.errstate(...)``, else None."""
    if type(value) is not types.FunctionType or value.__code__ is not _ERRSTATE_INNER_CODE:
        return None
    cells = dict(zip(value.__code__.co_freevars, value.__closure__ or ()))
    try:
        state, func = cells["self"].cell_contents, cells["func"].cell_contents
    except (KeyError, ValueError):
        return None
    settings = {k: getattr(state, f"_{k}") for k in ("all",) + _ERRSTATE_KINDS}
    if state._call is not _NO_CALL:
        settings["call"] = state._call
    return settings, func


def clone_function(tracer: Any, fn: types.FunctionType) -> types.FunctionType:
    """``fn`` rebuilt over a :class:`GlobalsView` with translated closure cells and defaults."""
    clones = tracer.function_clones
    hit = clones.get(id(fn))
    if hit is not None and hit[0] is fn:
        return hit[1]
    views = tracer.globals_views
    view = views.get(id(fn.__globals__))
    if view is None:
        view = GlobalsView(fn.__globals__, tracer)
        views[id(fn.__globals__)] = view
    closure = None
    if fn.__closure__:
        cells = []
        for var, cell in zip(fn.__code__.co_freevars, fn.__closure__):
            try:
                content = cell.cell_contents
            except ValueError:  # empty cell (recursive def not yet bound)
                cells.append(cell)
                continue
            cells.append(types.CellType(translate(tracer, var, content)))
        closure = tuple(cells)
    defaults = fn.__defaults__
    if defaults:
        names = fn.__code__.co_varnames[fn.__code__.co_argcount - len(defaults):fn.__code__.co_argcount]
        defaults = tuple(translate(tracer, n, d) for n, d in zip(names, defaults))
    clone = types.FunctionType(fn.__code__, view, fn.__name__, defaults, closure)
    clone.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    clone.__dict__.update(fn.__dict__)
    clone.__qualname__ = fn.__qualname__
    clone.__module__ = fn.__module__
    clones[id(fn)] = (fn, clone)
    return clone
