"""Standard-library callables that need plain numbers, as model code sees them during capture.

A size (``x.shape[0]``, a :class:`~.symbolic.SymInt` while export traces) answers
``isinstance(n, int)`` as eager code expects, but C code that checks the exact type
(``PyLong_Check``) does not ask: ``json.dumps({"n": n})`` raises ``TypeError: Object of
type int is not JSON serializable``, ``decimal.Decimal(n)`` and ``datetime.timedelta(n)``
refuse it, ``pickle.dumps(n)`` writes a reduce call instead of eager's 5 bytes, and
``statistics.mean(x.shape)`` rebuilds its result with ``type(n)(...)``.

The callables listed in :data:`PINNING` take the sizes in their arguments (also inside
lists, tuples, named tuples, dicts and sets) as the example's plain numbers: each is pinned
with a specialization whose reason names the callable (a guard at the model's line, so a
named ``Dim`` reports a violation with its fix and ``Dim.AUTO`` narrows), and the real
callable runs on eager's values.  Model code reaches them through the capture's view of its
globals (``import json`` at module level, ``from decimal import Decimal``) or a local
``import`` (:func:`stdlib_view` is called by ``patching.translate`` and the capture's
``__import__``).  A class keeps answering ``isinstance`` as the real one
(:class:`PinningType`).
"""
from __future__ import annotations

import functools
import importlib
import types
from typing import Any, Callable, Optional

from .frames import user_source
from .symbolic import SymBool, SymFloat, SymInt

# module -> the attributes of it that need plain numbers ("*": every public function)
PINNING: dict[str, tuple] = {
    "json": ("dumps", "dump"),
    "pickle": ("dumps", "dump"),
    "marshal": ("dumps", "dump"),
    "decimal": ("Decimal",),
    "datetime": ("timedelta", "date", "datetime", "time"),
    "statistics": ("*",),
}


def plain(value: Any, what: str) -> Any:
    """``value`` with every size in it pinned to its example value (see the module docstring)."""
    if isinstance(value, (SymInt, SymFloat)):
        reason = f"passed to {what}, which needs a plain number (its code checks the exact type)"
        return value._typed(value.env.specialize(value.expr, reason, user_source(2)))
    if isinstance(value, SymBool):
        return bool(value)
    t = type(value)
    if t in (list, tuple, set, frozenset):
        return t(plain(v, what) for v in value)
    if t is dict:
        return {plain(k, what): plain(v, what) for k, v in value.items()}
    if isinstance(value, tuple) and hasattr(t, "_fields"):  # a named tuple
        return t(*[plain(v, what) for v in value])
    return value


def _pinning_function(fn: Callable, what: str) -> Callable:
    @functools.wraps(fn)
    def pinned(*args: Any, **kwargs: Any) -> Any:
        return fn(*plain(args, what), **plain(kwargs, what))

    pinned.__tpe_original__ = fn
    return pinned


class PinningType(type):
    """Metaclass of a class view: calling it pins the sizes in the arguments; instance and
    subclass checks, ``==`` and ``hash`` answer as for the real class (``__real__``)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        what = f"{cls.__real__.__module__}.{cls.__real__.__qualname__}()"
        return cls.__real__(*plain(args, what), **plain(kwargs, what))

    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, cls.__real__)

    def __subclasscheck__(cls, sub: Any) -> bool:
        return issubclass(sub, cls.__real__)

    def __eq__(cls, other: Any) -> bool:
        return other is cls or other is cls.__real__

    def __hash__(cls) -> int:
        return hash(cls.__real__)

    def __repr__(cls) -> str:
        return repr(cls.__real__)


def _view_of(value: Any, what: str) -> Any:
    if isinstance(value, type):
        return PinningType(value.__name__, (value,), {"__real__": value, "__module__": value.__module__,
                                                         "__slots__": ()})
    return _pinning_function(value, what)


class _PinningModule(types.ModuleType):
    """A module as model code sees it during capture: the callables of :data:`PINNING` pin."""

    def __init__(self, real: types.ModuleType, views: dict) -> None:
        super().__init__(real.__name__, real.__doc__)
        self.__dict__["_real"] = real
        self.__dict__["_views"] = views

    def __getattr__(self, name: str) -> Any:
        view = self._views.get(name)
        return view if view is not None else getattr(self._real, name)

    def __dir__(self) -> list:
        return dir(self._real)


@functools.lru_cache(maxsize=None)
def _tables() -> tuple[dict, dict]:
    """(id of a real module or callable -> its view) for the modules of :data:`PINNING`, and
    the modules themselves (kept so the ids stay theirs)."""
    by_id: dict = {}
    keep: dict = {}
    for modname, names in PINNING.items():
        module = importlib.import_module(modname)
        if names == ("*",):
            names = tuple(n for n in getattr(module, "__all__", ()) if callable(getattr(module, n, None))
                          and not isinstance(getattr(module, n), type))
        views = {}
        for name in names:
            real = getattr(module, name)
            views[name] = _view_of(real, f"{modname}.{name}()")
            by_id[id(real)] = views[name]
            keep[id(real)] = real
        by_id[id(module)] = _PinningModule(module, views)
        keep[id(module)] = module
    return by_id, keep


def stdlib_view(value: Any) -> Optional[Any]:
    """The capture's view of ``value`` (a module or callable of :data:`PINNING`), or None."""
    if not isinstance(value, (types.ModuleType, type, types.BuiltinFunctionType, types.FunctionType)):
        return None
    by_id, keep = _tables()
    view = by_id.get(id(value))
    return view if view is not None and keep[id(value)] is value else None
