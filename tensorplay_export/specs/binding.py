"""Binding example inputs to names: which parameter each input is, and each leaf's path and placeholder name.

One rule serves capture (placeholder names, ``x.shape[0]`` sites), spec
normalization (specs keyed by argument name) and refine (``Dim.DYNAMIC`` sites
by generated name).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Optional

from .. import pytree

__all__ = ["signature_target", "input_leaf_paths", "spec_leaf_paths", "leaf_name", "spec_by_argument"]


def leaf_name(path: str) -> str:
    """A placeholder name for an input path: ``"extras['scale']"`` -> ``"extras_scale"`` (one rule for capture and refine)."""
    out = []
    for ch in path:
        out.append(ch if ch.isalnum() or ch == "_" else "_")
    name = "_".join(p for p in "".join(out).split("_") if p) or "arg"
    return name if not name[0].isdigit() else f"_{name}"


# --- binding inputs to names --------------------------------------------------------------

def signature_target(model: Any) -> Any:
    """The callable whose signature names the inputs: ``model.forward`` for a module, else ``model``."""
    forward = getattr(model, "forward", None)
    if forward is not None and callable(forward) and not inspect.isfunction(model):
        return forward
    return model


@dataclass(frozen=True)
class _TopInput:
    """One top-level input: its printed path, the parameter it binds to, and its value."""

    path: str
    param: Optional[str]    # the named parameter, or None for a *args/**kwargs item
    group: Optional[str]    # the *args / **kwargs parameter name for such items
    key: Any                # index into *args or key into **kwargs
    value: Any


def _bind_inputs(model: Any, args: tuple, kwargs: dict) -> list[_TopInput]:
    """Top-level inputs in ``tree_flatten((args, kwargs))`` order with their names."""
    try:
        sig = inspect.signature(signature_target(model))
    except (TypeError, ValueError):
        sig = None
    params = list(sig.parameters.values()) if sig is not None else []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_pos = next((p.name for p in params if p.kind == p.VAR_POSITIONAL), None)
    var_kw = next((p.name for p in params if p.kind == p.VAR_KEYWORD), None)
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as err:
            hint = ""
            if len(args) == 1 and not kwargs and isinstance(args[0], tuple):
                try:
                    sig.bind(*args[0])
                    hint = ("; export takes the example inputs as positional arguments "
                            "(export(model, x, y)), not one tuple (torch.export's export(model, (x, y)))")
                except TypeError:
                    pass
            raise TypeError(f"the example inputs do not match the model's signature {sig}: {err}{hint}") from None
    out: list[_TopInput] = []
    for i, value in enumerate(args):
        if sig is None:
            out.append(_TopInput(f"args[{i}]", None, "args", i, value))
        elif i < len(positional):
            name = positional[i].name
            out.append(_TopInput(name, name, None, None, value))
        else:
            j = i - len(positional)
            out.append(_TopInput(f"{var_pos}[{j}]", None, var_pos, j, value))
    for key, value in kwargs.items():
        if sig is None or key in named:
            out.append(_TopInput(key, key, None, None, value))
        else:
            out.append(_TopInput(f"{var_kw}[{key!r}]", None, var_kw, key, value))
    return out


def input_leaf_paths(model: Any, args: tuple, kwargs: Optional[dict] = None) -> list[str]:
    """The path of every leaf of ``tree_flatten((args, kwargs))``: ``"x"``, ``"extras['scale']"``, ``"args[1]"``."""
    out = []
    for top in _bind_inputs(model, tuple(args), dict(kwargs or {})):
        out += [p for p, _ in pytree.tree_leaves_with_path(top.value, top.path)]
    return out


def spec_leaf_paths(model: Any, in_spec: pytree.TreeSpec) -> list[str]:
    """The path of every leaf of an ``(args, kwargs)`` tree spec, bound to ``model``'s parameters as
    :func:`input_leaf_paths` binds example inputs (a loaded program's ``in_spec``, whose containers
    may be dataclasses this process has not registered).

    Raises:
        TypeError: the spec is not ``(args tuple, kwargs dict)`` or does not bind to the signature.
    """
    if in_spec.kind != "tuple" or len(in_spec.children) != 2:
        raise TypeError("an in_spec is (args tuple, kwargs dict)")
    args_spec, kwargs_spec = in_spec.children
    out = []
    for top in _bind_inputs(model, tuple(args_spec.children), dict(zip(kwargs_spec.context, kwargs_spec.children))):
        out += pytree.treespec_leaf_paths(top.value, top.path)
    return out


def spec_by_argument(model: Any, args: tuple, kwargs: dict, leaf_specs: list) -> dict:
    """A dict-by-argument-name spec from one spec per leaf of ``tree_flatten((args, kwargs))``.

    Containers are rebuilt as dicts/tuples/lists (dataclasses as dicts by field);
    ``*args`` items are grouped into a tuple and ``**kwargs`` items into a dict
    under the parameter's name.
    """
    it = iter(leaf_specs)
    spec: dict[str, Any] = {}
    for top in _bind_inputs(model, args, kwargs):
        _, tree = pytree.tree_flatten(top.value)
        sub = _rebuild_spec(tree, [next(it) for _ in range(tree.num_leaves)])
        if top.param is not None:
            spec[top.param] = sub
        elif isinstance(top.key, int):
            spec[top.group] = tuple(spec.get(top.group, ())) + (sub,)
        else:
            spec.setdefault(top.group, {})[top.key] = sub
    return spec


def _rebuild_spec(tree: pytree.TreeSpec, leaf_specs: list) -> Any:
    """A spec shaped like ``tree`` (dicts/tuples/lists; dataclasses as dicts by field)."""
    it = iter(leaf_specs)

    def build(t: pytree.TreeSpec) -> Any:
        if t.is_leaf():
            return next(it)
        if t.kind == "None":
            return None
        inner = [build(c) for c in t.children]
        if t.kind == "tuple":
            return tuple(inner)
        if t.kind == "list":
            return inner
        return dict(zip(t.context, inner))

    return build(tree)
