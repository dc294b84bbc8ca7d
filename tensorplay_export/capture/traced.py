"""TracedArray: the duck-typed stand-in for a numpy array during capture.

It is deliberately *not* an ndarray subclass: numpy would then read its data
without asking (``np.asarray``, ``tolist``, ``memoryview``) and silently bake
example values into the program.  Instead every route into numpy dispatches
to the tracer (``__array_ufunc__``, ``__array_function__``, methods,
operators, indexing), and ``__array__`` raises with the user's line.

Writes (``__setitem__``, in-place operators) are applied in place on the
example value (eager semantics, so views see them) and recorded as a
functional node that the traced array is rebound to; the replay check at the
end of capture catches writes the functional graph cannot express.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..errors import CaptureError, UnsupportedOpError
from ..ops.registry import func_name, get_op, lookup_func, lookup_method, plain_flag, refusal
from .frames import user_source
from .symbolic import SymBool, wrap_int

_UFUNC_REDUCE = {"add": "numpy.sum", "multiply": "numpy.prod", "maximum": "numpy.max",
                 "minimum": "numpy.min", "logical_and": "numpy.all", "logical_or": "numpy.any"}
_UFUNC_ACCUMULATE = {"add": "numpy.cumsum", "multiply": "numpy.cumprod"}


class _FlatReader:
    """``x.flat`` during capture: reads ``x.flat[i]`` / ``x.flat[a:b:c]`` with static ints, as
    ``x.ravel()[...]`` (numpy's values: C order).  Writes and iteration are refused: numpy's flatiter
    writes through to ``x`` and yields Python scalars one by one."""

    def __init__(self, array: "TracedArray") -> None:
        self._array = array

    def __getitem__(self, key: Any) -> Any:
        parts = (key.start, key.stop, key.step) if isinstance(key, slice) else (key,)
        if not all(p is None or (isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)))
                   for p in parts):
            raise UnsupportedOpError(f"ndarray.flat[...] is supported during capture with a Python int or a slice "
                                     f"of Python ints only; index x.ravel() instead\n  at {user_source(2)}")
        src = user_source(2)
        flat = self._array._tracer.call(get_op("numpy.ravel"), (self._array,), {}, source=src)
        return flat._tracer.call(get_op("tpe.getitem"), (flat, key), {}, source=src)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise UnsupportedOpError(f"a write into ndarray.flat is not supported during capture; write into "
                                 f"x.reshape(-1) (a view of a C-contiguous x) or build the array with "
                                 f"np.where\n  at {user_source(2)}")

    def __iter__(self):
        raise UnsupportedOpError(f"iterating over ndarray.flat is not supported during capture (one Python "
                                 f"scalar per element); use x.ravel() and vectorized numpy\n  at {user_source(2)}")


class TracedArray:
    """A traced value: graph node, symbolic shape, dtype, example value, value range."""

    __slots__ = ("_tracer", "_node", "_shape", "_value", "_thunk", "_dtype", "vrange", "_lazy", "__weakref__")
    __array_priority__ = 1000
    __hash__ = None  # like ndarray

    def __init__(self, tracer: Any, node: Any, shape: tuple, example: Any,
                 vrange: Optional[tuple] = None) -> None:
        self._tracer = tracer
        self._node = node
        self._shape = tuple(shape)
        self._value = example
        self._thunk: Any = None   # (op, args, kwargs, source, np.geterr() then) while the value is not computed
        self._dtype: Any = None   # the value's dtype while it is not computed
        self.vrange = vrange
        self._lazy: Optional[str] = None
        if tracer.borrowed is not None:
            tracer.borrowed.note(self, example)

    @property
    def example(self) -> Any:
        """numpy's value on the example inputs, computed (from its ancestors) on first read."""
        if self._thunk is not None:
            self._tracer.force(self)
        return self._value

    @example.setter
    def example(self, value: Any) -> None:
        self._value, self._thunk, self._dtype = value, None, None
        if self._tracer.borrowed is not None:
            self._tracer.borrowed.note(self, value)

    # -- identity ------------------------------------------------------------
    @property
    def __class__(self) -> type:
        # isinstance(x, np.ndarray) must not change branches in model code during capture
        # (type(x) still says TracedArray; numpy's C code is not fooled and dispatches to us).
        return np.ndarray

    @property
    def node(self) -> Any:
        if self._node is None:
            self._node = self._tracer.materialize(self)
        return self._node

    def _rebind(self, other: "TracedArray") -> None:
        """After an in-place write: this array now is ``other``'s node (same example object)."""
        self._node = other.node
        self._shape = other._shape
        self.vrange = other.vrange
        self._tracer.aliases.wrote(self)  # views of this array, or the array this is a view of

    def __repr__(self) -> str:
        shape = ", ".join(str(d) for d in self._shape)
        return f"TracedArray(shape=({shape}), dtype={self.dtype})"

    # -- properties ------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        tracer = self._tracer
        if tracer.model_frame is None and tracer._return_source is None:
            tracer.note_model_frame()  # a size the model may return: remember where it returns
        env = tracer.env
        return tuple(d if isinstance(d, int) else wrap_int(d, env) for d in self._shape)

    @shape.setter
    def shape(self, value: Any) -> None:
        """``a.shape = (2, -1)``: numpy's in-place reshape (no copy, or numpy's own error).

        Followed for an array an op made whose memory nothing else shares (no view of it was
        taken, it is no view): it becomes its reshape.  Anything else is refused with what
        to write instead, since a program cannot change the shape of the caller's array, and
        a view's (or a viewed array's) new shape would change what later writes reach.
        """
        from ..errors import UnsupportedOpError

        src = user_source(2)
        tracer = self._tracer
        tracer.force_all()  # as before a write: every view made so far is noted
        aliases = tracer.aliases
        if self.node.op != "call_function" or aliases.shares_memory(self):
            what = "an input, parameter or constant of the model" if self.node.op != "call_function" \
                else "an array that shares memory with another (a view, or one a view was taken of)"
            raise UnsupportedOpError(f"a.shape = ... on {what}: the program cannot change that array's shape in "
                                     f"place; write a = a.reshape(...) instead\n  at {src}")
        new = tracer.call(get_op("numpy.reshape"), (self, value), {}, source=src)
        # the reshape replaces this array (numpy changes its shape in place): no view of it
        tracer.force_all()  # a deferred reshape is noted as a view when computed: now, then dropped
        aliases.forget_view(new, self)
        example = self.example
        example.shape = new.example.shape  # eager's own check: numpy refuses a reshape that needs a copy
        new.example = example
        self._node = new.node
        self._shape = new._shape
        self.vrange = new.vrange

    @property
    def dtype(self) -> np.dtype:
        if self._thunk is not None:
            return self._dtype
        value = self._value
        return value.dtype if isinstance(value, (np.ndarray, np.generic)) else np.asarray(value).dtype

    @property
    def ndim(self) -> int:
        return len(self._shape)

    @property
    def size(self) -> Any:
        out: Any = 1
        for d in self.shape:
            out = out * d
        return out

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> Any:
        return self.size * self.itemsize

    @property
    def device(self) -> str:
        """The array API device: numpy's one device, ``"cpu"``."""
        return "cpu"

    def to_device(self, device: Any, /, *, stream: Any = None) -> "TracedArray":
        """The array itself, as numpy's ``to_device("cpu")`` (numpy raises its own error for another device)."""
        np.empty(0).to_device(device, stream=stream)
        return self

    @property
    def T(self) -> "TracedArray":
        return self._call("numpy.transpose", (self,))

    @property
    def mT(self) -> "TracedArray":
        return self._call("numpy.swapaxes", (self, -1, -2))

    @property
    def real(self) -> "TracedArray":
        return self._call("numpy.real", (self,))

    @property
    def imag(self) -> "TracedArray":
        return self._call("numpy.imag", (self,))

    @property
    def flat(self) -> "_FlatReader":
        return _FlatReader(self)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of unsized object")
        n = self._shape[0]
        if isinstance(n, int) or n.is_Integer:
            return int(n)
        # CPython needs a Python int: pin the size, saying it was len() (violations.py gives the
        # "use x.shape[0]" hint for this cause)
        return int(self._tracer.env.specialize(n, "len() of an array is a Python int", user_source(2), cause="len"))

    def __iter__(self):
        n = self.shape[0] if self._shape else None
        if n is None:
            raise TypeError("iteration over a 0-d array")
        for i in range(n):
            yield self[i]

    # -- dispatch ----------------------------------------------------------------
    def _call(self, name: str, args: tuple, kwargs: Optional[dict] = None) -> Any:
        return self._tracer.call(get_op(name), args, kwargs or {}, source=user_source(3))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        tracer = self._tracer
        # a registry method needs no source line until it is called (the stack walk is per call)
        op = lookup_method(name) or tracer.op_for_method(name, user_source(2))
        if op is None:
            if hasattr(np.ndarray, name):
                why = refusal(getattr(np.ndarray, name))  # a documented refusal says what to write instead
                raise UnsupportedOpError(f"ndarray.{name} is not supported during capture: {why}\n  at {user_source(2)}"
                                         if why else f"ndarray.{name} has no shape rule (not supported during "
                                         f"capture)\n  at {user_source(2)}")
            raise AttributeError(f"'TracedArray' (standing in for numpy.ndarray) has no attribute {name!r}")

        def method(*args: Any, **kwargs: Any) -> Any:
            src = user_source(2)
            result = tracer.call(op, (self, *args), kwargs, source=src)
            if op.writes_arg is not None:  # a.fill(v), a.sort(): numpy writes into a and returns None
                return _write_back(op, (self, *args), result, src)
            return result

        method.__name__ = name
        return method

    def __array_function__(self, func: Any, types: Any, args: tuple, kwargs: dict) -> Any:
        if func in _METADATA and lookup_func(func) is None:
            return _METADATA[func](*args, **kwargs)
        src = user_source(2)  # one stack walk per call
        op = self._tracer.op_for_func(func, src)
        if op is None:
            why = refusal(func)  # a documented refusal says why and what to write instead
            raise UnsupportedOpError(f"{func_name(func)} is not supported during capture: {why}\n  at {src}"
                                     if why else f"{func_name(func)} has no shape rule (not supported during "
                                     f"capture)\n  at {src}")
        args, kwargs, write_into, what = _without_in_place_flag(op, func, tuple(args), dict(kwargs), src)
        result = self._tracer.call(op, args, kwargs, source=src)
        if op.writes_arg is not None:
            return _write_back(op, args, result, src)
        if write_into is not None:  # numpy wrote the result into that argument and returned it
            if not isinstance(write_into, TracedArray) or not isinstance(write_into.example, np.ndarray):
                return result
            write_into._write_all(result, src, what)
            return write_into
        if func is np.unique and isinstance(result, tuple) and len(result) == 1:
            return result[0]
        return result

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        src = user_source(2)
        out = kwargs.pop("out", None)
        if method == "__call__":
            op = self._tracer.op_for_func(ufunc, src)
            if op is None:
                raise UnsupportedOpError(f"{func_name(ufunc)} has no shape rule (not supported during "
                                         f"capture)\n  at {src}")
            result = self._tracer.call(op, tuple(inputs), kwargs, source=src)
        elif method == "reduce" and ufunc.__name__ in _UFUNC_REDUCE:
            kwargs.setdefault("axis", 0)
            result = self._tracer.call(get_op(_UFUNC_REDUCE[ufunc.__name__]), tuple(inputs), kwargs,
                                       source=src)
        elif method == "accumulate" and ufunc.__name__ in _UFUNC_ACCUMULATE:
            kwargs.setdefault("axis", 0)
            result = self._tracer.call(get_op(_UFUNC_ACCUMULATE[ufunc.__name__]), tuple(inputs), kwargs,
                                       source=src)
        elif (op := lookup_func(getattr(ufunc, method, None))) is not None:  # np.add.at, .reduceat
            result = self._tracer.call(op, tuple(inputs), kwargs, source=src)
            if op.writes_arg is not None:
                return _write_back(op, inputs, result, src)
        elif self._tracer.draft is not None and method != "at":  # ufunc.at writes in place: no opaque value
            from .draft_log import opaque_for

            op = opaque_for(self._tracer, f"{func_name(ufunc)}.{method}", getattr(ufunc, method), src)
            result = self._tracer.call(op, tuple(inputs), kwargs, source=src)
        else:
            raise UnsupportedOpError(f"{func_name(ufunc)}.{method} is not supported during capture"
                                     f"\n  at {src}")
        if out is None:
            return result
        targets = out if isinstance(out, tuple) else (out,)
        results = result if isinstance(result, tuple) else (result,)
        for target, value in zip(targets, results):
            if not isinstance(target, TracedArray):
                raise UnsupportedOpError(
                    f"out= of {func_name(ufunc)} must be an array the model traces (an input, module state or "
                    f"an array it made); a plain ndarray written in place would not be part of the program. "
                    f"Assign the result instead\n  at {src}")
            target._write_all(value, src)
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        asker = _numpy_caller()
        who = f"numpy's {asker} asked" if asker else "numpy asked"
        advice = (" (it runs Python per element or slice: no shape rule describes an arbitrary "
                  "callback; write it with vectorized numpy, np.where and broadcasting)"
                  if asker and asker.split(".")[0] in _CALLBACK_FUNCS else "")
        raise CaptureError(
            f"{who} for the concrete data of a traced array (np.asarray/np.array/an unsupported "
            f"path){advice}; that would bake the example values into the program.\n"
            f"  at {user_source(2)}")

    @property
    def __array_interface__(self) -> dict:
        # as_strided reads raw memory through it: a clear refusal; any other asker (numpy's C
        # coercion, np.vectorize) falls back to __array__, whose refusal names it
        asker = _numpy_caller()
        if asker is None or "as_strided" not in asker:
            raise AttributeError("__array_interface__")
        raise UnsupportedOpError(
            f"numpy's {asker} asked for the raw memory of a traced array (__array_interface__): "
            f"strides and pointers are no shape rule capture can follow. Write it with slicing, "
            f"np.lib.stride_tricks.sliding_window_view or reshape instead\n  at {user_source(2)}")

    # -- concretization of values: data-dependent --------------------------------
    # export mode raises DataDependentError; draft mode follows the example with a runtime check
    def _read(self, name: str, what: str) -> Any:
        return self._tracer.read_value(self, name, what, user_source(3))

    def __bool__(self) -> bool:
        return self._read("__bool__", "branches on the truth value")

    def __float__(self) -> float:
        return self._read("__float__", "reads the float value")

    def __int__(self) -> int:
        return self._read("__int__", "reads the int value")

    def __index__(self) -> int:
        return self._read("__index__", "uses as a Python int the value")

    def __complex__(self) -> complex:
        return self._read("__complex__", "reads the complex value")

    def item(self, *args: Any) -> Any:
        return self._read("item" if not args else "item(*args)", "reads .item()")

    def tolist(self) -> Any:
        return self._read("tolist", "reads .tolist()")

    # -- indexing --------------------------------------------------------------------
    def __getitem__(self, key: Any) -> "TracedArray":
        return self._tracer.call(get_op("tpe.getitem"), (self, _read_slice_bounds(key)), {},
                                 source=user_source(2))

    def __setitem__(self, key: Any, value: Any) -> None:
        key = _read_slice_bounds(key)
        src = user_source(2)
        self._tracer.force_all()  # writes follow eager order: every deferred value is computed first
        new = self._tracer.call(get_op("tpe.setitem"), (self, key, value), {}, source=src)
        # eager semantics: write into the example (views of it see the write)
        self._tracer.writable_example(self)[self._tracer.example(key)] = self._tracer.example(value)
        new.example = self.example
        self._rebind(new)
        self._tracer.writes.append(("setitem", src))

    def _write_all(self, value: Any, src: Any, what: str = "in-place") -> None:
        """``self[...] = value`` for in-place operators and ``out=`` (``what``: the write, as the
        replay check's message names it)."""
        self._tracer.force_all()
        new = self._tracer.call(get_op("tpe.setitem"), (self, Ellipsis, value), {}, source=src)
        np.copyto(self._tracer.writable_example(self), self._tracer.example(value), casting="same_kind")
        new.example = self.example
        self._rebind(new)
        self._tracer.writes.append((what, src))

    def _inplace(self, name: str, other: Any) -> "TracedArray":
        src = user_source(3)
        result = self._tracer.call(get_op(name), (self, other), {}, source=src)
        if not isinstance(self.example, np.ndarray):  # a 0-d value: rebinding the name is enough
            return result
        self._write_all(result, src)
        return self

    # -- operators ---------------------------------------------------------------------
    def _bin(self, name: str, other: Any, reflected: bool = False) -> Any:
        args = (other, self) if reflected else (self, other)
        return self._tracer.call(get_op(name), args, {}, source=user_source(3))

    def __add__(self, o): return self._bin("numpy.add", o)
    def __radd__(self, o): return self._bin("numpy.add", o, True)
    def __sub__(self, o): return self._bin("numpy.subtract", o)
    def __rsub__(self, o): return self._bin("numpy.subtract", o, True)
    def __mul__(self, o): return self._bin("numpy.multiply", o)
    def __rmul__(self, o): return self._bin("numpy.multiply", o, True)
    def __truediv__(self, o): return self._bin("numpy.divide", o)
    def __rtruediv__(self, o): return self._bin("numpy.divide", o, True)
    def __floordiv__(self, o): return self._bin("numpy.floor_divide", o)
    def __rfloordiv__(self, o): return self._bin("numpy.floor_divide", o, True)
    def __mod__(self, o): return self._bin("numpy.remainder", o)
    def __rmod__(self, o): return self._bin("numpy.remainder", o, True)
    def __pow__(self, o): return self._bin("numpy.power", o)
    def __rpow__(self, o): return self._bin("numpy.power", o, True)
    def __matmul__(self, o): return self._bin("numpy.matmul", o)
    def __rmatmul__(self, o): return self._bin("numpy.matmul", o, True)
    def __and__(self, o): return self._bin("numpy.bitwise_and", o)
    def __rand__(self, o): return self._bin("numpy.bitwise_and", o, True)
    def __or__(self, o): return self._bin("numpy.bitwise_or", o)
    def __ror__(self, o): return self._bin("numpy.bitwise_or", o, True)
    def __xor__(self, o): return self._bin("numpy.bitwise_xor", o)
    def __rxor__(self, o): return self._bin("numpy.bitwise_xor", o, True)
    def __lshift__(self, o): return self._bin("numpy.left_shift", o)
    def __rshift__(self, o): return self._bin("numpy.right_shift", o)
    def __eq__(self, o): return self._bin("numpy.equal", o)
    def __ne__(self, o): return self._bin("numpy.not_equal", o)
    def __lt__(self, o): return self._bin("numpy.less", o)
    def __le__(self, o): return self._bin("numpy.less_equal", o)
    def __gt__(self, o): return self._bin("numpy.greater", o)
    def __ge__(self, o): return self._bin("numpy.greater_equal", o)

    def __divmod__(self, o):
        return (self // o, self % o)

    def __neg__(self): return self._call("numpy.negative", (self,))
    def __pos__(self): return self._call("numpy.positive", (self,))
    def __abs__(self): return self._call("numpy.absolute", (self,))
    def __invert__(self): return self._call("numpy.invert", (self,))

    def __iadd__(self, o): return self._inplace("numpy.add", o)
    def __isub__(self, o): return self._inplace("numpy.subtract", o)
    def __imul__(self, o): return self._inplace("numpy.multiply", o)
    def __itruediv__(self, o): return self._inplace("numpy.divide", o)
    def __ifloordiv__(self, o): return self._inplace("numpy.floor_divide", o)
    def __imod__(self, o): return self._inplace("numpy.remainder", o)
    def __ipow__(self, o): return self._inplace("numpy.power", o)
    def __imatmul__(self, o): return self._inplace("numpy.matmul", o)
    def __iand__(self, o): return self._inplace("numpy.bitwise_and", o)
    def __ior__(self, o): return self._inplace("numpy.bitwise_or", o)
    def __ixor__(self, o): return self._inplace("numpy.bitwise_xor", o)


# A flag that makes numpy write into its first argument (``OpDef.writing_flag``, the registry's one
# table of them) is never recorded.  ``overwrite_input=True`` leaves the input in an order numpy does
# not define, which no program can promise to reproduce: refused, with what to write instead.
# ``nan_to_num(copy=False)`` replaces in place and returns its argument: capture computes the
# functional result and writes it into the argument, as a write of the model (an input mutation when
# the argument is an input).
def _flag_position(op: Any) -> tuple[Optional[int], Optional[str]]:
    """``(position, first)``: where ``op``'s writing flag binds positionally (None: keyword only)
    and the name of its first parameter (the argument numpy writes into)."""
    params = list(op.signature().parameters.values())  # register_op checked it has the flag
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    at = positional.index(op.writing_flag.param) if op.writing_flag.param in positional else None
    return at, params[0].name if params else None


def _without_in_place_flag(op: Any, func: Any, args: tuple, kwargs: dict, src: Any) -> tuple[tuple, dict, Any, str]:
    """``(args, kwargs, target, what)``: the call without a flag that makes numpy write into an
    argument, the argument numpy would have written the result into (None: no such write) and
    that write as the replay check names it.

    Raises:
        UnsupportedOpError: a flag that leaves the input scrambled (``overwrite_input=True``).
    """
    flag = op.writing_flag
    if flag is None:
        return args, kwargs, None, ""
    at, first = _flag_position(op)
    if at is not None and len(args) > at:
        value = args[at]
    elif flag.param in kwargs:
        value = kwargs[flag.param]
    else:
        return args, kwargs, None, ""  # the default never writes
    if not flag.writes(value):
        return args, kwargs, None, ""
    if flag.scrambles:
        raise UnsupportedOpError(
            f"{func_name(func)}(..., {flag.param}=True) leaves its input in an order numpy does not "
            f"define, which a program cannot promise to reproduce: drop {flag.param} (the result is "
            f"the same)\n  at {src}")
    if not plain_flag(value):
        return args, kwargs, None, ""  # numpy decides by the value's truthiness (or raises) when the op runs
    if at is not None and len(args) > at:
        args = args[:at] + (flag.off,) + args[at + 1:]
    else:
        kwargs[flag.param] = flag.off
    return args, kwargs, args[0] if args else kwargs.get(first), f"{func_name(func)}({flag.param}={value!r:.20})"


def _write_back(op: Any, args: Any, result: "TracedArray", src: Any) -> None:
    """Finish an op numpy runs in place (``op.writes_arg``): ``np.add.at``, ``np.put_along_axis``.

    The op's functional result is written into the target's example (views see it, as in
    eager numpy), the target is rebound to the result's node, and None is returned as numpy does.
    """
    target = args[op.writes_arg] if len(args) > op.writes_arg else None
    if isinstance(target, TracedArray):
        target._tracer.force_all()
    if not isinstance(target, TracedArray):
        raise UnsupportedOpError(f"{op.name}: the array written in place must be a traced array during "
                                 f"capture (create it inside the model or pass it as an input)\n  at {src}")
    if isinstance(target.example, np.ndarray):
        np.copyto(target._tracer.writable_example(target), result.example, casting="unsafe")
        result.example = target.example
    target._rebind(result)
    target._tracer.writes.append((op.name, src))
    return None


def _dtype_of_any(v: Any) -> Any:
    return v.dtype if isinstance(v, TracedArray) else v


def _copyto(dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
    if not isinstance(dst, TracedArray):
        raise UnsupportedOpError(f"np.copyto into a plain array from a traced one\n  at {user_source(3)}")
    if where is not True:
        src = dst._tracer.call(get_op("numpy.where"), (where, src, dst), {}, source=user_source(3))
    dst._write_all(src, user_source(3))


def _size(a: Any, axis: Any = None) -> Any:
    return a.size if axis is None else a.shape[axis]


# numpy functions that only read metadata (or write in place): answered without a node
_METADATA = {
    np.shape: lambda a: a.shape,
    np.ndim: lambda a: a.ndim,
    np.size: _size,
    np.result_type: lambda *xs: np.result_type(*[_dtype_of_any(x) for x in xs]),
    np.iscomplexobj: lambda x: x.dtype.kind == "c",
    np.isrealobj: lambda x: x.dtype.kind != "c",
    np.copyto: _copyto,
}


def _read_slice_bounds(key: Any) -> Any:
    """``key`` with traced arrays used as slice bounds read as numpy reads them, through
    ``__index__`` (``x[s:s + n]`` with ``n = counts[i]``): a data-dependent read, so export
    raises DataDependentError at the user's line and draft_export assumes the example's value."""
    def read(k: Any) -> Any:
        if isinstance(k, slice) and any(type(b) is SymBool for b in (k.start, k.stop, k.step)):
            k = slice(*(b.as_int() if type(b) is SymBool else b for b in (k.start, k.stop, k.step)))  # x[(n > 3):]
        if isinstance(k, slice) and any(isinstance(b, TracedArray) for b in (k.start, k.stop, k.step)):
            return slice(*(b._read("slice_bound", "uses as a slice bound a value") if isinstance(b, TracedArray) else b
                           for b in (k.start, k.stop, k.step)))
        return k

    return tuple(read(k) for k in key) if type(key) is tuple else read(key)


# numpy functions that run a Python callback (the README's "left out on purpose" table)
_CALLBACK_FUNCS = frozenset({"vectorize", "frompyfunc", "apply_along_axis", "apply_over_axes", "piecewise"})


def _numpy_caller() -> Optional[str]:
    """The outermost numpy function on the stack above this call (``vectorize.__call__``), or None."""
    import sys

    frame, found = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "numpy" or module.startswith("numpy."):
            found = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
        elif found is not None:
            break
        frame = frame.f_back
    return found
