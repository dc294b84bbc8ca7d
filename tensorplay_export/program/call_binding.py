"""Binding a call of ``ep.module()`` to the exported callable's parameters, as eager Python binds it.

The rule (issue 18, item 4): every parameter is part of the contract.  An
array parameter is a graph input; a non-array parameter keeps its export-time
value, which is its default when the export call did not pass it.  A later
call may pass an equal value (same type and ``==``) or omit it when that value
is the default; another value raises
:class:`~tensorplay_export.errors.ConstraintsExceededError` naming the
argument, the exported value and the value seen.  Too many positional
arguments, unknown keywords, a missing argument or one given twice raise
``TypeError`` with the words eager Python uses ("f() takes from 1 to 2
positional arguments but 3 were given").

:class:`CallBinder` turns ``(args, kwargs)`` of a call into the ``(args,
kwargs)`` layout of the export call, which the program's input pytree spec
describes; the flattening and the constant-input checks follow in
:class:`~tensorplay_export.program.exported.ExportedModule`.
"""
from __future__ import annotations

import inspect
from typing import Any, Callable, Optional

import numpy as np

from ..errors import ConstraintsExceededError
from .signature import CallParameter

__all__ = ["call_parameters", "CallBinder", "same_constant"]

_KINDS = {k.name.lower(): k for k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                       inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.KEYWORD_ONLY,
                                       inspect.Parameter.VAR_KEYWORD)}
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_OMITTED = object()


def _storable(value: Any) -> bool:
    """A default an archive can write as plain JSON (and compare after loading)."""
    if value is None or type(value) in (bool, int, float, str):
        return True
    if type(value) in (tuple, list):
        return all(_storable(v) for v in value)
    return False


def call_parameters(fn: Any) -> tuple[Optional[list[CallParameter]], Optional[str]]:
    """``(parameters, name)`` of the callable ``fn`` (its ``forward`` for a module); ``(None, None)``
    when Python cannot give its signature (some builtins)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None, None
    out = []
    for p in sig.parameters.values():
        has = p.default is not inspect.Parameter.empty
        stored = has and _storable(p.default)
        out.append(CallParameter(p.name, p.kind.name.lower(), has, p.default if has else None,
                                 stored or not has))
    return out, getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)


def same_constant(got: Any, want: Any) -> bool:
    """Same type and equal: the test a non-array argument must pass against its exported value."""
    try:
        return type(got) is type(want) and bool(got == want)
    except Exception:  # an object whose == is not a plain bool
        return got is want


def _is_array(value: Any) -> bool:
    return isinstance(value, (np.ndarray, np.generic))


class CallBinder:
    """Maps a call's ``(args, kwargs)`` onto the export call's layout.

    Args:
        parameters: the callable's :class:`CallParameter` list.
        name: the callable's name, for messages (``"f"``, ``"Model.forward"``).
        n_args: how many positional arguments the export call passed.
        kw_order: the keywords the export call passed, in the spec's order.
        example: a function returning the export call's ``(args, kwargs)``, or
            None when unknown (fills an omitted argument whose export-time value
            is its default).  Called on first need only: a loaded program's
            sample inputs are read when asked for.
    """

    def __init__(self, parameters: list[CallParameter], name: Optional[str], n_args: int,
                 kw_order: list[str], example: Optional[Callable[[], Optional[tuple[tuple, dict]]]] = None) -> None:
        self.name = f"{name or 'forward'}()"
        self.params = {p.name: p for p in parameters}
        self.signature = inspect.Signature([
            inspect.Parameter(p.name, _KINDS[p.kind], default=p.default if p.has_default else inspect.Parameter.empty)
            for p in parameters])
        positional = [p.name for p in parameters if _KINDS[p.kind] in _POSITIONAL]
        self.var_pos = next((p.name for p in parameters if p.kind == "var_positional"), None)
        self.var_kw = next((p.name for p in parameters if p.kind == "var_keyword"), None)
        self.n_required = sum(1 for p in parameters if _KINDS[p.kind] in _POSITIONAL and not p.has_default)
        self.n_positional = len(positional)
        self.keywords = {p.name for p in parameters if p.kind in ("positional_or_keyword", "keyword_only")}
        # the export call's layout: a named parameter, or an item of *args / **kwargs
        self.pos_slots = [("param", positional[i]) if i < len(positional) else ("var", i - len(positional))
                          for i in range(n_args)]
        self.kw_slots = [("param", k) if k in self.keywords else ("varkw", k) for k in kw_order]
        self.n_var = sum(1 for s in self.pos_slots if s[0] == "var")
        self.var_keys = [k for kind, k in self.kw_slots if kind == "varkw"]
        given = {k for kind, k in self.pos_slots + self.kw_slots if kind == "param"}
        # parameters the export call left at their defaults: their value is folded into the graph
        self.folded = {p.name: p for p in parameters
                       if p.kind not in ("var_positional", "var_keyword") and p.name not in given}
        self._example_of = example
        self._example: Optional[tuple[tuple, dict]] = None

    @property
    def example(self) -> Optional[tuple[tuple, dict]]:
        if self._example is None and self._example_of is not None:
            self._example, self._example_of = self._example_of(), None
        return self._example

    def _too_many(self, n: int) -> TypeError:
        lo, hi = self.n_required, self.n_positional
        takes = f"{hi} positional argument{'s' if hi != 1 else ''}" if lo == hi else \
            f"from {lo} to {hi} positional arguments"
        return TypeError(f"{self.name} takes {takes} but {n} {'was' if n == 1 else 'were'} given")

    def bind(self, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        """The call's arguments in the export call's layout.

        Raises:
            TypeError: as eager Python would (too many positional arguments, an
                unknown keyword, a missing or repeated argument), or the call's
                ``*args`` / ``**kwargs`` items differ from the export call's.
            ConstraintsExceededError: a parameter the export call left at its
                default is passed with another value.
        """
        if self.var_pos is None and len(args) > self.n_positional:
            raise self._too_many(len(args))
        if self.var_kw is None:
            for k in kwargs:
                if k not in self.keywords:
                    raise TypeError(f"{self.name} got an unexpected keyword argument {k!r}")
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError as err:
            raise TypeError(f"{self.name}: {err}") from None
        values = dict(bound.arguments)
        var_args = tuple(values.pop(self.var_pos, ())) if self.var_pos else ()
        var_kwargs = dict(values.pop(self.var_kw, {})) if self.var_kw else {}
        if len(var_args) != self.n_var:
            raise TypeError(f"{self.name} was exported with {self.n_var} extra positional argument(s) "
                            f"in *{self.var_pos}, got {len(var_args)}")
        if set(var_kwargs) != set(self.var_keys):
            raise TypeError(f"{self.name} was exported with the keyword arguments {sorted(self.var_keys)} in "
                            f"**{self.var_kw}, got {sorted(var_kwargs)}")
        out_args = []
        for i, (kind, key) in enumerate(self.pos_slots):
            out_args.append(var_args[key] if kind == "var" else self._take(values, key, ("args", i)))
        out_kwargs = {}
        for kind, key in self.kw_slots:
            out_kwargs[key] = var_kwargs[key] if kind == "varkw" else self._take(values, key, ("kwargs", key))
        for name, value in values.items():
            self._check_folded(name, value)
        return tuple(out_args), out_kwargs

    def _take(self, values: dict, name: str, where: tuple) -> Any:
        if name in values:
            return values.pop(name)
        # omitted, but the export call passed it: accepted when that value was the default
        p = self.params[name]
        if self.example is not None and p.has_default and p.default_stored:
            side, key = where
            example = self.example[0][key] if side == "args" else self.example[1][key]
            if not _is_array(example) and same_constant(example, p.default):
                return example
        raise TypeError(f"{self.name} was exported with argument {name!r} given; pass it "
                        "(the program holds no path for its default)")

    def _check_folded(self, name: str, value: Any) -> None:
        p = self.folded.get(name)
        if p is None:  # cannot happen after a successful bind; kept as a plain guard
            raise TypeError(f"{self.name} got an unexpected argument {name!r}")
        if not p.default_stored:
            if value is p.default:  # in the exporting process the default object itself is at hand
                return
            raise ConstraintsExceededError(
                f"argument {name} = {value!r:.80} was left at its default when the program was exported, "
                "and the archive does not store that default to compare; omit the argument")
        if not same_constant(value, p.default):
            raise ConstraintsExceededError(
                f"argument {name} = {value!r:.80}, but the program was exported with {name} = {p.default!r:.80} "
                "(its default); export again passing this value to get a program for it")
