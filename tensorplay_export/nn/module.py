"""`Module` and `Parameter`: a torch-like module system over numpy arrays.

State lives in four ordered dicts on every module:

- ``_parameters``: name -> `Parameter` (or ``None``)
- ``_buffers``: name -> array (or ``None``); names in ``_non_persistent_buffers_set``
  are left out of `Module.state_dict`
- ``_modules``: name -> child `Module` (or ``None``)

``__getattr__`` reads from those dicts, so whatever sits in them is what ``forward``
sees. Capture relies on that: it runs a shallow clone of the module tree whose
dicts hold traced arrays (``capture.state.clone_module_tree``), so the user's module
is never changed and other threads calling it meanwhile see its own arrays.
Assigning to a name that is already a buffer stores into ``_buffers`` whatever the
value type (a forward that updates running statistics assigns traced arrays).

Calls go through ``_CALL_HOOK``: when the context variable holds a callable,
``module(*args, **kwargs)`` becomes ``hook(module, args, kwargs)`` (the hook calls
``module.forward`` itself); otherwise it is ``module.forward(*args, **kwargs)``.
"""

from __future__ import annotations

import contextvars
from collections import OrderedDict
from typing import Any, Callable, Iterator, NamedTuple

import numpy as np

__all__ = ["Module", "Parameter", "IncompatibleKeys", "_CALL_HOOK"]

# Set by capture while it traces a model; None means a plain eager call.
_CALL_HOOK: contextvars.ContextVar = contextvars.ContextVar("tpe_module_call_hook", default=None)


def _plain(obj: Any) -> Any:
    """Strip the `Parameter` type from arrays inside (nested) tuples, lists and dicts."""
    if isinstance(obj, Parameter):
        return obj.view(np.ndarray)
    if isinstance(obj, tuple):
        return tuple(_plain(o) for o in obj)
    if isinstance(obj, list):
        return [_plain(o) for o in obj]
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


def _same_memory(a: Any, b: Any) -> bool:
    """Whether ndarray ``a`` is exactly ``b``'s memory (a plain view of the whole of it)."""
    return (type(a) is np.ndarray and isinstance(b, np.ndarray) and a.shape == b.shape and a.dtype == b.dtype
            and a.strides == b.strides and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


class Parameter(np.ndarray):
    """An array that a `Module` registers as a parameter when assigned to an attribute.

    ``Parameter(data)`` wraps ``np.asarray(data)`` without copying (a view of the same
    memory). Arithmetic, numpy functions, indexing and reshaping of a parameter give
    plain ``np.ndarray`` results, so derived arrays are never mistaken for parameters.

    Args:
        data: array-like; the parameter's value (shape and dtype are kept).
        requires_grad (bool, *optional*, defaults to True): kept for torch parity;
            nothing here computes gradients.
    """

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> "Parameter":
        if data is None:
            data = np.empty((0,), dtype=np.float32)
        obj = np.asarray(data).view(cls)
        obj.requires_grad = bool(requires_grad)
        return obj

    def __array_finalize__(self, obj: Any) -> None:
        self.requires_grad = getattr(obj, "requires_grad", True)

    # Results of computations are plain arrays, not parameters.
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = _plain(inputs)
        if "out" in kwargs:
            kwargs["out"] = _plain(kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_plain(args), **_plain(kwargs))

    def __getitem__(self, key):
        return self.view(np.ndarray)[key]

    def reshape(self, *shape, **kwargs):
        return self.view(np.ndarray).reshape(*shape, **kwargs)

    def transpose(self, *axes):
        return self.view(np.ndarray).transpose(*axes)

    @property
    def T(self):
        return self.view(np.ndarray).T

    def astype(self, *args, **kwargs):
        return self.view(np.ndarray).astype(*args, **kwargs)

    def copy(self, order="C"):
        return self.view(np.ndarray).copy(order=order)

    def ravel(self, order="C"):
        return self.view(np.ndarray).ravel(order=order)

    def flatten(self, order="C"):
        return self.view(np.ndarray).flatten(order=order)

    def squeeze(self, axis=None):
        return self.view(np.ndarray).squeeze(axis=axis)

    def swapaxes(self, axis1, axis2):
        return self.view(np.ndarray).swapaxes(axis1, axis2)

    def __reduce__(self):
        # Pickle/deepcopy as a Parameter, keeping requires_grad.
        return (Parameter, (self.view(np.ndarray).copy(), self.requires_grad))

    def __deepcopy__(self, memo):
        return Parameter(self.view(np.ndarray).copy(), self.requires_grad)

    def __repr__(self) -> str:
        return f"Parameter containing:\n{np.ndarray.__repr__(self.view(np.ndarray))}"


class IncompatibleKeys(NamedTuple):
    """What `Module.load_state_dict` returns: keys missing from, and unexpected in, the state."""

    missing_keys: list[str]
    unexpected_keys: list[str]


def _is_array_like(value: Any) -> bool:
    # ndarrays, and duck arrays (capture's traced arrays) that carry a shape and dtype.
    return isinstance(value, np.ndarray) or (hasattr(value, "shape") and hasattr(value, "dtype"))


def _check_name(kind: str, name: Any) -> None:
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a str, got {type(name).__name__}")
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got {name!r}")


class Module:
    """Base class of every layer and model; subclasses define ``forward``.

    Call ``super().__init__()`` first in a subclass ``__init__``, then assign
    parameters (`Parameter`), submodules (`Module`) and buffers
    (`register_buffer`) as attributes. ``module(*args, **kwargs)`` runs ``forward``.

    Example:
        >>> class Affine(Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = Parameter(np.ones((2, 2), np.float32))
        ...     def forward(self, x):
        ...         return x @ self.w
        >>> [name for name, _ in Affine().named_parameters()]
        ['w']
    """

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())

    # ------------------------------------------------------------------ calling
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        hook = _CALL_HOOK.get()
        return self.forward(*args, **kwargs) if hook is None else hook(self, args, kwargs)

    # ------------------------------------------------------------ registration
    def _require_init(self, what: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (a `Parameter` or ``None``) under ``name``.

        Raises:
            AttributeError: before ``Module.__init__`` ran.
            TypeError: ``param`` is not a `Parameter` or ``None``; ``name`` is not a str.
            KeyError: ``name`` is empty, contains ".", or is already a non-parameter attribute.
        """
        self._require_init("parameters")
        _check_name("parameter", name)
        if name not in self._parameters and (hasattr(type(self), name) or name in self.__dict__
                                             or name in self._buffers or name in self._modules):
            raise KeyError(f"attribute {name!r} already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__!r} object to parameter {name!r} "
                            "(nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, value: Any, persistent: bool = True) -> None:
        """Register an array ``value`` (or ``None``) as a buffer named ``name``.

        Persistent buffers are part of `state_dict`; non-persistent ones are not, but
        are still module state (listed by `named_buffers`, lifted by capture).

        Raises:
            AttributeError: before ``Module.__init__`` ran.
            TypeError: ``value`` is not an array or ``None``; ``name`` is not a str.
            KeyError: ``name`` is empty, contains ".", or is already a non-buffer attribute.
        """
        self._require_init("buffers")
        _check_name("buffer", name)
        if name not in self._buffers and (hasattr(type(self), name) or name in self.__dict__
                                          or name in self._parameters or name in self._modules):
            raise KeyError(f"attribute {name!r} already exists")
        if value is not None and not _is_array_like(value):
            raise TypeError(f"cannot assign {type(value).__name__!r} object to buffer {name!r} "
                            "(an array or None required)")
        if isinstance(value, Parameter):
            value = value.view(np.ndarray)
        self._buffers[name] = value
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        """Register ``module`` (a `Module` or ``None``) as a child named ``name``.

        Raises:
            TypeError: ``module`` is not a `Module` or ``None``; ``name`` is not a str.
            KeyError: ``name`` is empty, contains ".", or is already a non-module attribute.
        """
        self._require_init("child modules")
        _check_name("module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if name not in self._modules and (hasattr(type(self), name) or name in self.__dict__
                                          or name in self._parameters or name in self._buffers):
            raise KeyError(f"attribute {name!r} already exists")
        self._modules[name] = module

    register_module = add_module

    # ------------------------------------------------------ attribute protocol
    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails. Read __dict__ directly so that a
        # half-built object (copy/pickle before __init__) raises AttributeError
        # instead of recursing.
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            values = d.get(store)
            if values is not None and name in values:
                return values[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        buffers = d.get("_buffers")
        if buffers is not None and name in buffers:
            # Whatever the type: forward may assign updated (or traced) buffer values.
            if isinstance(value, Parameter):
                value = value.view(np.ndarray)
            buffers[name] = value
            return
        if isinstance(value, Parameter):
            self._require_init("parameters")
            self._forget(name)
            _check_name("parameter", name)
            self._parameters[name] = value
            return
        params = d.get("_parameters")
        if params is not None and name in params:
            if value is params[name] or _same_memory(value, params[name]):
                # ``self.w += g``: the in-place operator returns the parameter (a plain view of
                # it, in eager numpy; the parameter's traced value, during capture)
                return
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__!r} as parameter {name!r} "
                                "(nn.Parameter or None expected)")
            params[name] = None
            return
        if isinstance(value, Module):
            self._require_init("child modules")
            self._forget(name)
            self._modules[name] = value
            return
        modules = d.get("_modules")
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__!r} as child module {name!r} "
                                "(nn.Module or None expected)")
            modules[name] = None
            return
        # an exported module (ep.module()) assigned here is a submodule, as torch's GraphModule
        # is: capture lifts its state under this name (capture.state); object.__setattr__ skips it
        held = d.get("_exported_submodules")  # name -> None, in assignment order
        if getattr(type(value), "_tpe_capture_submodule", None) is not None:
            if held is None:
                held = d["_exported_submodules"] = {}
            held[name] = None
        elif held is not None:
            held.pop(name, None)
        object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        """Remove ``name`` from every store, so a new assignment can re-register it."""
        self.__dict__.pop(name, None)
        self._parameters.pop(name, None)
        self._buffers.pop(name, None)
        self._non_persistent_buffers_set.discard(name)
        self._modules.pop(name, None)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        keys = list(super().__dir__())
        keys += list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(k for k in keys if not k[:1].isdigit()))

    # ------------------------------------------------------------- traversal
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(fqn, module)`` for this module ("" ) and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is None:
                continue
            sub = f"{prefix}.{name}" if prefix else name
            yield from child.named_modules(memo, sub, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        """Yield ``(name, child)`` for the direct children (each module once)."""
        seen: set[int] = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self) -> Iterator["Module"]:
        for _, child in self.named_children():
            yield child

    def _named_members(self, store: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for owner_name, owner in owners:
            for name, value in getattr(owner, store).items():
                if value is None:
                    continue
                if remove_duplicate:
                    if id(value) in seen:
                        continue
                    seen.add(id(value))
                yield (f"{owner_name}.{name}" if owner_name else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """Yield ``(fqn, parameter)``; a parameter shared by several modules comes once (first fqn)."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """Yield ``(fqn, buffer)`` for every buffer, persistent or not (``None`` skipped)."""
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> "Module":
        """The descendant at dotted path ``target`` ("" is self).

        Raises:
            AttributeError: a path component is missing or not a Module.
        """
        mod: Module = self
        if target == "":
            return mod
        walked = []
        for item in target.split("."):
            child = mod._modules.get(item) if isinstance(mod, Module) else None
            if child is None:
                where = ".".join(walked) or type(self).__name__
                raise AttributeError(f"{where} has no submodule {item!r} (looking up {target!r})")
            walked.append(item)
            mod = child
        return mod

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call ``fn`` on every submodule (children first) and on self; returns self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ state dicts
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> "OrderedDict[str, Any]":
        """Parameters and persistent buffers by dotted fqn, in registration order.

        Every fqn is listed, including each alias of a shared (tied) parameter.
        Values share memory with the module's arrays; with ``keep_vars=False``
        parameters are given as plain ``np.ndarray`` views.
        """
        out = OrderedDict() if destination is None else destination
        for mod_name, mod in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            dot = f"{mod_name}." if mod_name else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    out[dot + name] = p if keep_vars or not isinstance(p, Parameter) else p.view(np.ndarray)
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent_buffers_set:
                    out[dot + name] = b
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> IncompatibleKeys:
        """Copy arrays from ``state_dict`` into this module's parameters and persistent buffers.

        Values are copied in place (cast to the existing dtype), so tied parameters stay tied.

        Args:
            state_dict: fqn -> array-like, as `state_dict` gives.
            strict (bool, *optional*, defaults to True): missing and unexpected keys are errors.

        Returns:
            `IncompatibleKeys` (missing_keys, unexpected_keys).

        Raises:
            RuntimeError: listing every problem at once: missing / unexpected keys (strict only),
                shape mismatches and non-array values (always).
        """
        expected: dict[str, tuple[Module, str, str]] = {}
        for mod_name, mod in self.named_modules(remove_duplicate=False):
            dot = f"{mod_name}." if mod_name else ""
            for name, p in mod._parameters.items():
                if p is not None:
                    expected[dot + name] = (mod, "_parameters", name)
            for name, b in mod._buffers.items():
                if b is not None and name not in mod._non_persistent_buffers_set:
                    expected[dot + name] = (mod, "_buffers", name)
        missing = [k for k in expected if k not in state_dict]
        unexpected = [k for k in state_dict if k not in expected]
        errors: list[str] = []
        if strict and missing:
            errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
        updates = []
        for key, (mod, store, name) in expected.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            current = getattr(mod, store)[name]
            try:
                arr = np.asarray(value)
            except Exception as exc:  # a non-array value: report, don't crash midway
                errors.append(f"value for {key}: cannot convert {type(value).__name__} to an array ({exc})")
                continue
            if arr.dtype == object:
                errors.append(f"value for {key}: expected an array, got {type(value).__name__}")
                continue
            if tuple(arr.shape) != tuple(current.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {tuple(arr.shape)} "
                              f"from checkpoint, the shape in current model is {tuple(current.shape)}.")
                continue
            updates.append((mod, store, name, current, arr))
        if errors:
            detail = "\n\t".join(errors)
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{detail}")
        # Apply only after every check passed, so a failed load changes nothing.
        for mod, store, name, current, arr in updates:
            if isinstance(current, np.ndarray) and current.flags.writeable:
                current[...] = arr
            else:  # read-only (e.g. memory-mapped) or not an ndarray: replace, keeping the kind
                fresh = np.array(arr, dtype=current.dtype)
                getattr(mod, store)[name] = Parameter(fresh, current.requires_grad) \
                    if isinstance(current, Parameter) else fresh
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------ train/eval
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on self and every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> "Module":
        """Same as ``train(False)``."""
        return self.train(False)

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        """One-line description of this module's own settings (override in layers)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        body = "\n  ".join(lines)
        return f"{self._get_name()}(\n  {body}\n)"
