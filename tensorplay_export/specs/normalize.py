"""Normalizing a ``dynamic_shapes`` spec against the example inputs.

Turns any accepted spec form into one flat list, :class:`LeafSpec` per array
leaf of ``tree_flatten((args, kwargs))``, which capture consumes, and derives
what capture needs from it (the named dims, equality constraints and
``DimInfo`` records).  Ranges are *not* checked against the example sizes by
:func:`normalize_dynamic_shapes`; :func:`named_dim_infos` and capture do that
and raise ``ConstraintsExceededError``.  The spec objects themselves are in
:mod:`tensorplay_export.dynamic_shapes`.

Accepted forms (see DESIGN.md "Conventions for dynamic shapes"):

* ``None``: every size static;
* a dict keyed by argument name; a tuple/list by input position (positional
  inputs, then keyword inputs in call order);
* nested to match the input pytree (``{"extras": {"scale": {0: b}}}``);
* per array a dict ``{axis: Dim}`` or a per-axis tuple/list;
* ``None`` / an int / ``Dim.STATIC`` on an axis or subtree means static;
* ``Dim.AUTO`` and ``Dim.DYNAMIC`` hints;
* :class:`ShapesCollection` (spec keyed by array identity);
* :class:`AdditionalInputs` (axes whose size varies across example sets are dynamic).
"""
from __future__ import annotations

import dataclasses
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .. import pytree
from .dims import (
    AdditionalInputs, Constraint, Dim, EqualityConstraint, ShapesCollection, _affine_text, _DerivedDim, _DimHint,
    hint_bounds, is_auto, is_dynamic,
)
from ..errors import DYNAMIC_ENTRY_MARK, ConstraintsExceededError
from ..records import (
    DimInfo, ExampleOutside, GuardRecord, SourceLoc, Violation, derived_site, format_range, format_range_brackets,
    sympy,
)
from .binding import _bind_inputs, input_leaf_paths, signature_target

__all__ = [
    "LeafSpec", "normalize_dynamic_shapes", "input_leaf_paths", "collect_dims", "equality_constraints_from",
    "named_dim_infos", "OutsideExample", "example_range_error", "site_of",
]


@dataclass(frozen=True)
class LeafSpec:
    """The spec of one array input: its path and its dynamic axes.

    ``axes`` maps an axis (non-negative) to a :class:`Dim`, a :class:`DerivedDim`,
    ``Dim.AUTO`` or ``Dim.DYNAMIC``; an axis not listed is static.  A dynamic int
    input (torch's SymInt input) has the one key None: ``{None: Dim('n')}``.  ``top`` is the
    position of the top-level input holding the array (its entry in a tuple/list
    spec), None when not known.
    """

    path: str
    axes: dict
    top: Optional[int] = None

    def constraints(self) -> list[Constraint]:
        out = []
        for axis, d in sorted(self.axes.items()):
            if isinstance(d, Dim):
                out.append(Constraint(self.path, axis, d.name, d.min, d.max))
            elif isinstance(d, _DerivedDim) and d.root is not None:
                out.append(Constraint(self.path, axis, d.name, d.min, d.max,
                                      root=d.root.name, scale=d.scale, offset=d.offset))
            elif isinstance(d, _DerivedDim):
                out.append(Constraint(self.path, axis, d.name, d.min, d.max, root=None, scale=0,
                                      offset=d.offset, terms={r.name: k for r, k in d.terms}))
        return out


# --- normalize ----------------------------------------------------------------------------

def _is_static(spec: Any) -> bool:
    return spec is None or spec is Dim.STATIC


def _kind_name(value: Any) -> str:
    if value is None or value is pytree._NONE_LEAF:
        return "None"
    if isinstance(value, np.ndarray):
        return f"an array of rank {value.ndim}"
    return f"a {type(value).__name__}"


def normalize_dynamic_shapes(model: Any, args: Any, kwargs: Optional[dict],
                             dynamic_shapes: Any) -> list[Optional[LeafSpec]]:
    """Flatten any accepted spec form into one entry per input leaf.

    Args:
        model: the callable or module (its ``forward`` signature names the inputs).
        args, kwargs: the example inputs as passed to ``export``.
        dynamic_shapes: the user's spec (see the module docstring), or None.

    Returns:
        ``[LeafSpec | None, ...]`` aligned with ``pytree.tree_flatten((args, kwargs))[0]``:
        a :class:`LeafSpec` (maybe with no axes) for every ``np.ndarray`` leaf,
        ``None`` for every other leaf.

    Raises:
        ValueError: the spec does not match the inputs; the message names the
            argument path and says what was expected.
        TypeError: the example inputs do not bind to the model's signature.
    """
    args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
    kwargs = dict(kwargs or {})
    tops = _bind_inputs(model, args, kwargs)
    if isinstance(dynamic_shapes, AdditionalInputs):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(model, args, kwargs)
    elif isinstance(dynamic_shapes, ShapesCollection):
        dynamic_shapes = dynamic_shapes.dynamic_shapes(model, args, kwargs)

    per_top = _split_top_level(dynamic_shapes, tops, _param_names(model))
    out: list[Optional[LeafSpec]] = []
    for i, (top, spec) in enumerate(zip(tops, per_top)):
        start = len(out)
        _walk(top.value, spec, top.path, out)
        out[start:] = [None if leaf is None else dataclasses.replace(leaf, top=i) for leaf in out[start:]]
    _check_dim_names(out)
    _check_derived_nonnegative(out)
    return out


def _param_names(model: Any) -> set[str]:
    try:
        return set(inspect.signature(signature_target(model)).parameters)
    except (TypeError, ValueError):
        return set()


def _split_top_level(spec: Any, tops: list[_TopInput], all_params: set[str]) -> list[Any]:
    """The sub-spec for each top-level input."""
    names = ", ".join(repr(t.path) for t in tops) or "none"
    if _is_static(spec):
        return [None] * len(tops)
    if isinstance(spec, (tuple, list)):
        if len(spec) != len(tops):
            raise ValueError(f"dynamic_shapes is a {type(spec).__name__} of {len(spec)} entries, but the model "
                             f"received {len(tops)} inputs ({names}); give one entry per input, in order")
        return list(spec)
    if not isinstance(spec, dict):
        raise ValueError(f"dynamic_shapes must be a dict keyed by argument name, a tuple/list by position, "
                         f"a ShapesCollection, AdditionalInputs or None; got {type(spec).__name__}")
    by_param = {t.param: i for i, t in enumerate(tops) if t.param is not None}
    groups: dict[str, list[int]] = {}
    for i, t in enumerate(tops):
        if t.group is not None:
            groups.setdefault(t.group, []).append(i)
    out: list[Any] = [None] * len(tops)
    for key, sub in spec.items():
        if key in by_param:
            out[by_param[key]] = sub
        elif key in groups:
            members = groups[key]
            if isinstance(tops[members[0]].key, int):  # *args: a sequence spec
                if _is_static(sub):
                    continue
                if not isinstance(sub, (tuple, list)) or len(sub) != len(members):
                    raise ValueError(f"spec for '*{key}' must be a tuple/list of {len(members)} entries "
                                     f"(one per extra positional input), got {sub!r}")
                for i, s in zip(members, sub):
                    out[i] = s
            else:  # **kwargs: a dict spec keyed by keyword
                if _is_static(sub):
                    continue
                known = {tops[i].key: i for i in members}
                if not isinstance(sub, dict):
                    raise ValueError(f"spec for '**{key}' must be a dict keyed by keyword, got {sub!r}")
                for k, s in sub.items():
                    if k not in known:
                        raise ValueError(f"spec for '**{key}' names keyword {k!r}, which was not passed")
                    out[known[k]] = s
        else:
            kw_item = next((i for i, t in enumerate(tops) if t.group is not None and t.key == key), None)
            if kw_item is not None and isinstance(key, str):
                out[kw_item] = sub  # a **kwargs item named directly
            elif _is_static(sub) and key in all_params:
                continue  # a parameter left at its default; static is the only sensible spec
            else:
                holder = next((t.path for t in tops if isinstance(t.value, dict) and key in t.value), None)
                nest = f"; {key!r} is a key of input '{holder}', so nest it: {{'{holder}': {{{key!r}: ...}}}}" \
                    if holder else ""
                raise ValueError(f"dynamic_shapes names argument {key!r} that the model does not take "
                                 f"(or that was not passed); the inputs are {names}{nest}")
    return out


def _walk(value: Any, spec: Any, path: str, out: list) -> None:
    """Match ``spec`` against the input subtree ``value``; append one entry per leaf."""
    if isinstance(spec, (ShapesCollection, AdditionalInputs)):
        raise ValueError(f"spec for '{path}': a {type(spec).__name__} must be the whole dynamic_shapes argument")
    if isinstance(value, np.ndarray):
        out.append(LeafSpec(path, _array_axes(value, spec, path)))
        return
    parts = pytree._children(value)
    if parts is None and not _is_static(spec) and _is_int(value):
        dim = _int_dim(spec, path)
        if value < 0:  # the solver's size symbols are never negative
            raise ValueError(f"spec for '{path}' makes the int input dynamic, but its example is {int(value)}: a "
                             f"dynamic int input is a size (>= 0, as an array axis is); give a non-negative "
                             f"example, or None for '{path}' (static: the program is specialized to the value)")
        out.append(LeafSpec(path, {None: dim}))
        return
    if parts is None:  # a non-array leaf (number, string, object)
        if not _is_static(spec) and isinstance(value, (float, np.floating)) and _is_dim_like(spec):
            raise TypeError(f"spec for '{path}' gives {spec!r}, but the input is {_kind_name(value)}: only int "
                            f"inputs can be dynamic (a float input is static, the program specialized to its "
                            f"value); use None for '{path}'")
        if not _is_static(spec):
            raise ValueError(f"spec for '{path}' gives dims {spec!r}, but the input is {_kind_name(value)}, "
                             f"not an array; use None")
        out.append(None)
        return
    kind, context, values, _ = parts
    if value is None:
        if not _is_static(spec):
            raise ValueError(f"spec for '{path}' gives {spec!r}, but the input is None; use None")
        return
    if _is_static(spec):
        for p, leaf in pytree.tree_leaves_with_path(value, path):
            out.append(LeafSpec(p, {}) if isinstance(leaf, np.ndarray) else None)
        return
    if kind in ("tuple", "list"):
        if not isinstance(spec, (tuple, list)) or len(spec) != len(values):
            # torch.export takes the inputs as one tuple, export(m, (x,)): here each is its own argument
            habit = ("; if this tuple holds the model's inputs (torch.export's export(m, (x,))), pass them "
                     "as separate arguments here: export(m, x)" if isinstance(spec, dict) and spec
                     and all(isinstance(k, int) for k in spec) and all(isinstance(v, np.ndarray) for v in values)
                     else "")
            raise ValueError(f"spec for '{path}' must be a tuple/list of {len(values)} entries to match the "
                             f"input {kind} of length {len(values)}, got {spec!r}{habit}")
        for i, (v, s) in enumerate(zip(values, spec)):
            _walk(v, s, f"{path}[{i}]", out)
        return
    keyed = kind == "dict"
    if isinstance(spec, dict):
        sub = spec
    elif not keyed and type(spec) is type(value):
        sub = {f: getattr(spec, f) for f in context}
    elif not keyed and isinstance(spec, (tuple, list)) and len(spec) == len(context):
        sub = dict(zip(context, spec))
    else:
        what = "a dict with the same keys" if keyed else "a dict keyed by field name"
        raise ValueError(f"spec for '{path}' must be {what} to match the input {_kind_name(value)}, got {spec!r}")
    extra = [k for k in sub if k not in context and not (not keyed and _is_static(sub[k]))]
    if extra:
        raise ValueError(f"spec for '{path}' names {extra[0]!r}, which the input does not have "
                         f"(it has {list(context)})")
    for k, v in zip(context, values):
        _walk(v, sub.get(k), path + pytree.key_str(kind, k), out)


def _is_int(value: Any) -> bool:
    """An int input that may be dynamic: a Python int or a numpy integer scalar (not a bool)."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_dim_like(spec: Any) -> bool:
    return isinstance(spec, (Dim, _DerivedDim)) or is_auto(spec) or is_dynamic(spec)


def _int_dim(spec: Any, path: str) -> Any:
    """The dim of a dynamic int input: the spec entry is the Dim itself (torch's SymInt input
    spec), not a dict of axes."""
    if _is_dim_like(spec):
        return spec
    if isinstance(spec, type) and issubclass(spec, Dim):
        raise ValueError(f"spec for '{path}' is the class Dim; use Dim('name', ...)")
    raise ValueError(f"spec for '{path}' must be a Dim, a derived dim, Dim.AUTO, Dim.DYNAMIC or None for an "
                     f"int input (the Dim itself, not a dict of axes); got {spec!r}")


def site_of(path: str, axis: Any) -> str:
    """The text of an input site: ``x.shape[1]`` for an array axis, ``n`` for an int input
    (``axis`` None)."""
    return path if axis is None else f"{path}.shape[{axis}]"


def _array_axes(value: np.ndarray, spec: Any, path: str) -> dict:
    rank = value.ndim
    if _is_static(spec):
        return {}
    if isinstance(spec, dict):
        items = []
        for axis, d in spec.items():
            if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
                raise ValueError(f"spec for '{path}' has key {axis!r}; axes must be ints")
            if not -rank <= axis < rank:
                raise ValueError(f"spec for '{path}' names axis {axis}, but the input has rank {rank}")
            items.append((int(axis) % rank, d))
    elif isinstance(spec, (tuple, list)):
        if len(spec) != rank:
            raise ValueError(f"spec for '{path}' has {len(spec)} axes but the input has rank {rank} "
                             f"(shape {tuple(value.shape)})")
        items = list(enumerate(spec))
    else:
        raise ValueError(f"spec for '{path}' must be a dict {{axis: Dim}} or a tuple/list with one entry per "
                         f"axis (the input has rank {rank}), got {spec!r}")
    axes: dict = {}
    for axis, d in items:
        if axis in axes:
            raise ValueError(f"spec for '{path}' gives axis {axis} twice")
        if _is_static(d):
            continue
        if isinstance(d, numbers.Integral) and not isinstance(d, bool):
            if int(d) != value.shape[axis]:
                raise ValueError(f"spec for '{path}' pins axis {axis} to {int(d)}, but the example "
                                 f"has size {value.shape[axis]} there")
            continue
        if isinstance(d, (Dim, _DerivedDim)) or is_auto(d) or is_dynamic(d):
            axes[axis] = d
            continue
        if isinstance(d, type) and issubclass(d, Dim):
            raise ValueError(f"spec for '{path}' axis {axis} is the class Dim; use Dim('name', ...)")
        raise ValueError(f"spec for '{path}' axis {axis} must be a Dim, a derived dim, Dim.AUTO, "
                         f"Dim.DYNAMIC (each maybe with min=/max=), Dim.STATIC, an int or None; got {d!r}")
    return dict(sorted(axes.items()))


def _check_dim_names(leaves: list[Optional[LeafSpec]]) -> None:
    """One name, one range: two different Dims may not share a name."""
    seen: dict[str, tuple[Dim, str]] = {}
    for leaf in leaves:
        if leaf is None:
            continue
        for axis, d in leaf.axes.items():
            roots = d.roots if isinstance(d, (Dim, _DerivedDim)) else ()
            where = site_of(leaf.path, axis)
            for root in roots:
                prev = seen.get(root.name)
                if prev is None:
                    seen[root.name] = (root, where)
                elif prev[0] != root:
                    raise ValueError(f"Dim name {root.name!r} is used with two different ranges: {prev[0]!r} "
                                     f"at {prev[1]} and {root!r} at {where}; use one Dim object")


def _check_derived_nonnegative(leaves: list[Optional[LeafSpec]]) -> None:
    """A derived dim over one root is a size at every root size its range admits, so never negative.

    ``dx - 3`` with ``dx >= 1`` (or ``5 - dx`` with ``dx`` unbounded) would claim sizes no input
    has; torch.export refuses such a spec too ("Expected derived min value ... >= 0").  Refused
    here, as a violation whose fix narrows the root just enough: ``dx = Dim('dx', min=3)``
    (every derived dim of that root at once; the example sizes, never negative, stay inside).

    Raises:
        ConstraintViolationError: some single-root derived dim can be negative.
    """
    from solver.fixes import RangeFix

    from ..errors import ConstraintViolationError

    by_root: dict[str, list[tuple[str, _DerivedDim]]] = {}
    root_sites: dict[str, list[str]] = {}
    for leaf in leaves:
        if leaf is None:
            continue
        for axis, d in leaf.axes.items():
            site = site_of(leaf.path, axis)
            if isinstance(d, Dim):
                root_sites.setdefault(d.name, []).append(site)
            elif isinstance(d, _DerivedDim) and d.root is not None and (d.min is None or d.min < 0):
                by_root.setdefault(d.root.name, []).append((site, d))
    if not by_root:
        return
    violations, fixes = [], []
    for name, hits in by_root.items():
        root = hits[0][1].root
        lower, upper = root.min, root.max
        for _, d in hits:  # scale*root + offset >= 0
            if d.scale > 0:
                lower = max(lower, -(d.offset // d.scale))
            else:
                upper = min(d.offset // -d.scale, math.inf if upper is None else upper)
        sym = sympy.Symbol(name, integer=True)
        shown = " and ".join(f"{d.name} >= 0" for _, d in hits)
        site, first = hits[0]
        guard = GuardRecord(sympy.And(*[sympy.Ge(d.scale * sym + d.offset, 0) for _, d in hits]), "shape",
                            f"{site} = {first.name} is a size, so never negative", cause="derived_range")
        # a root size inside the declared range where the first derived dim is negative
        bad = root.min if first.scale > 0 else (root.max if root.max is not None else first.offset // -first.scale + 1)
        empty = upper is not None and lower > upper
        fix_lines = () if empty else (RangeFix(name, lower, upper).line,)
        fixes += fix_lines
        sites = root_sites.get(name, []) + [derived_site(s, d.name) for s, d in hits]
        violations.append(Violation(
            guard, shown, (name,), (DimInfo(name, root.min, math.inf if root.max is None else root.max, None, sites),),
            (format_range(name, root.min, root.max),),
            reason=f"{', '.join(f'{s} = {d.name}' for s, d in hits)} can be negative; sizes are >= 0",
            counterexample={name: bad}, fix_lines=fix_lines,
            unfixable=f"no {name} makes {shown} hold together" if empty else None))
    raise ConstraintViolationError(violations=violations, fixes=fixes)


def collect_dims(leaves: list[Optional[LeafSpec]]) -> dict[str, Dim]:
    """Every root :class:`Dim` in the normalized spec, by name (roots of derived dims included)."""
    out: dict[str, Dim] = {}
    for leaf in leaves:
        if leaf is None:
            continue
        for d in leaf.axes.values():
            if isinstance(d, (Dim, _DerivedDim)):
                for root in d.roots:
                    out.setdefault(root.name, root)
    return out


def equality_constraints_from(leaves: list[Optional[LeafSpec]]) -> list[EqualityConstraint]:
    """An :class:`EqualityConstraint` per named Dim used (directly) at two or more sites."""
    sites: dict[str, list[tuple[str, int]]] = {}
    for leaf in leaves:
        if leaf is None:
            continue
        for axis, d in leaf.axes.items():
            if isinstance(d, Dim):
                sites.setdefault(d.name, []).append((leaf.path, axis))
    return [EqualityConstraint(tuple(s), name) for name, s in sites.items() if len(s) > 1]


def _solve_for_root(site: str, d: _DerivedDim) -> str:
    """``site = scale*root + offset`` solved for root: ``(y.shape[0] - 1)/2``, ``y.shape[0] + 1``."""
    if d.scale < 0:  # site = offset - |k|*root  ->  root = (offset - site)/|k|
        text = f"{d.offset} - {site}" if d.offset else f"-{site}"
        return text if d.scale == -1 else f"({text})/{-d.scale}"
    text = _affine_text(site, 1, -d.offset)
    if d.scale == 1:
        return text
    return f"({text})/{d.scale}" if d.offset else f"{text}/{d.scale}"


def multi_root_mismatch(site: str, size: int, d: _DerivedDim, hints: dict) -> Optional[str]:
    """Why the example ``site = size`` breaks the dim ``d`` over several roots, or None.

    ``hints``: root name -> example size of the roots bound elsewhere.  Every root
    must be bound by another input axis (a plain Dim or a dim over one root), and
    the size must equal the form at the roots' example sizes.
    """
    missing = [r.name for r in d.roots if r.name not in hints]
    if missing:
        return (f"{site} is {d.name}, but {', '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                f"bound by no other input axis; a dim over several roots needs each root at an axis of "
                f"its own (a Dim or a k*dx + c form)")
    want = d.value_at(hints)
    if want != size:
        shown = ", ".join(f"{r.name} = {hints[r.name]}" for r in d.roots)
        return (f"{site} = {size}, but it is {d.name} = {want} at the example sizes ({shown}); "
                f"the example inputs disagree with the declared dynamic_shapes")
    return None


def named_dim_infos(leaves: list[Optional[LeafSpec]], flat_inputs: list, *,
                    check: bool = True) -> dict[str, DimInfo]:
    """``DimInfo`` per named root dim: declared range, example size (hint), input sites.

    Args:
        leaves: ``normalize_dynamic_shapes(...)`` output.
        flat_inputs: ``pytree.tree_flatten((args, kwargs))[0]`` (same order as ``leaves``).
        check: verify every example size against its dim: inside the declared range,
            the same at every site of a shared dim, and ``scale*root + offset`` for a
            derived dim with an integral root size inside the root's range.

    Returns:
        ``{name: DimInfo(name, min, max or math.inf, hint, ["x.shape[0]", ...], "named")}``.
        A root used only through derived dims gets its hint from the first such site
        and a site solved for the root: ``y.shape[0] = 2*b + 1`` gives ``"(y.shape[0] - 1)/2"``.

    Raises:
        ConstraintsExceededError: with ``check``, an example size breaks its dim,
            e.g. ``x.shape[1] = 513 is outside seq in [1, 512]`` (every such size, as
            violation records with fixes: :func:`example_range_error`).
    """
    infos: dict[str, DimInfo] = {}
    derived_sites: list[tuple[str, _DerivedDim, int]] = []
    multi_sites: list[tuple[str, _DerivedDim, int]] = []
    outside: list[OutsideExample] = []
    for leaf, value in zip(leaves, flat_inputs):
        if leaf is None:
            continue
        for axis, d in leaf.axes.items():
            site = site_of(leaf.path, axis)
            size = int(value) if axis is None else int(value.shape[axis])
            if isinstance(d, Dim):
                if check and not (d.min <= size and (d.max is None or size <= d.max)):
                    outside.append(OutsideExample(site, size, d))
                    continue
                info = infos.get(d.name)
                if info is None:
                    infos[d.name] = DimInfo(d.name, d.min, math.inf if d.max is None else d.max, size, [site])
                else:
                    if check and info.hint != size:
                        raise ConstraintsExceededError(
                            f"{site} = {size} but {info.sites[0]} = {info.hint}; both are Dim {d.name!r} "
                            f"and must be equal")
                    info.sites.append(site)
            elif isinstance(d, _DerivedDim) and d.root is None:
                multi_sites.append((site, d, size))
            elif isinstance(d, _DerivedDim):
                derived_sites.append((site, d, size))
    for site, d, size in derived_sites:
        root = d.root
        quotient, rest = divmod(size - d.offset, d.scale)
        if check and (rest != 0 or not (root.min <= quotient and (root.max is None or quotient <= root.max))):
            outside.append(OutsideExample(site, size, d))
            continue
        info = infos.get(root.name)
        if info is None:
            infos[root.name] = DimInfo(root.name, root.min, math.inf if root.max is None else root.max,
                                       quotient, [_solve_for_root(site, d)])
        elif check and info.hint != quotient:
            raise ConstraintsExceededError(
                f"{site} = {size} needs {root.name} = {quotient}, but {info.sites[0]} "
                f"gives {root.name} = {info.hint}; {site} must be {d.scale * info.hint + d.offset}")
    if outside:
        raise example_range_error(outside)
    for site, d, size in multi_sites:
        why = multi_root_mismatch(site, size, d, {n: i.hint for n, i in infos.items()})
        if why is not None and (check or why.endswith("(a Dim or a k*dx + c form)")):
            raise ConstraintsExceededError(why)
    return infos


@dataclass(frozen=True)
class OutsideExample:
    """One example size outside its dim: ``site = size`` for ``dim`` (a ``Dim``, a derived dim, or a
    ranged ``Dim.AUTO``/``Dim.DYNAMIC`` hint, which ``name`` names after its site: ``x_dim0``)."""

    site: str
    size: int
    dim: Any
    name: Optional[str] = None
    entry: Optional[int] = None   # a hint's input: its entry in a tuple/list spec (refine places the fix by it)

    @property
    def root(self) -> Any:
        return self.dim.root if isinstance(self.dim, _DerivedDim) else self.dim

    @property
    def key(self) -> str:
        """The name the fix line gives: the root Dim's, or a hint's site name."""
        return self.name if isinstance(self.dim, _DimHint) else self.root.name

    @property
    def root_size(self) -> Optional[int]:
        """The root size this example needs (``(size - offset) / scale``), None when not an integer."""
        if not isinstance(self.dim, _DerivedDim):
            return self.size
        quotient, rest = divmod(self.size - self.dim.offset, self.dim.scale)
        return None if rest or quotient < 0 else quotient  # a root size is never negative (32 - dx at 40)


def _widened_hint(o: OutsideExample) -> tuple[Violation, str]:
    """The bullet and fix line of a ranged hint whose example is outside: the same hint kind with
    its range widened just enough (``x_dim0 = Dim.AUTO(min=10)``; refine puts it back at the
    site, still a ``Dim.AUTO``, so a later export infers the axis as before)."""
    hint = o.dim
    lo, hi = hint_bounds(hint, o.size)
    widened = getattr(Dim, hint.kind)(min=None if hint.min is None else min(hint.min, o.size),
                                      max=None if hint.max is None else max(hint.max, o.size))
    line = f"{o.name} = {widened!r}"
    sym = sympy.Symbol(o.name, integer=True)
    expr = sympy.Ge(sym, lo) if hi is None else sympy.And(sympy.Ge(sym, lo), sympy.Le(sym, hi))
    upper = math.inf if hi is None else hi
    kind = "auto" if is_auto(hint) else "dynamic"
    guard = GuardRecord(expr, "shape", f"the example sizes must be inside the declared range of {hint!r}",
                        None, cause="example_range")
    text = f"its {hint!r}"
    entry = f". {DYNAMIC_ENTRY_MARK} {o.entry}." if o.entry is not None else ""
    note = (f"note: {o.site} is Dim.{hint.kind} ({o.name} in {format_range_brackets(lo, hi)}, declared {hint!r}); "
            f"the fix line for {o.name} below puts the widened {widened!r} back at that axis{entry}")
    violation = Violation(
        guard, format_range(o.name, lo, hi), (o.name,), (DimInfo(o.name, lo, upper, o.size, [o.site], kind),),
        (format_range(o.name, lo, hi),), fix_lines=(line,), dynamic_notes=(note,),
        example=ExampleOutside(o.site, o.size, text, text, lo, upper))
    return violation, line


def example_range_error(outside: list[OutsideExample], source: Optional[SourceLoc] = None
                        ) -> ConstraintsExceededError:
    """The ``ConstraintsExceededError`` for example sizes outside their declared dims, with fixes.

    One ``Violation`` per root dim (its ``example`` record: the first site outside, the
    size and the declared range; ``source``: the user's call of export, when known) and one
    fix line per root: its range widened just enough to admit every example size
    (``b = Dim('b', max=20)``; ``min=`` for a too-small example; for a derived dim the
    root's range; for a ranged ``Dim.AUTO``/``Dim.DYNAMIC`` the same hint widened, named
    after its site: ``x_dim0 = Dim.AUTO(min=10)``).  A derived dim whose size is not ``scale*root + offset`` for any
    integer root gets no fix line (``unfixable`` says why).
    """
    from solver.fixes import RangeFix

    by_root: dict[str, list[OutsideExample]] = {}
    for o in outside:
        by_root.setdefault(o.key, []).append(o)
    violations: list[Violation] = []
    fixes: list[str] = []
    for name, hits in by_root.items():
        root = hits[0].root
        first = hits[0]
        if isinstance(root, _DimHint):  # a hint is one site: no root shared with others
            violation, line = _widened_hint(first)
            violations.append(dataclasses.replace(violation, guard=dataclasses.replace(violation.guard,
                                                                                         source=source)))
            fixes.append(line)
            continue
        sym = sympy.Symbol(name, integer=True)
        expr = sympy.Ge(sym, root.min) if root.max is None else sympy.And(sympy.Ge(sym, root.min),
                                                                          sympy.Le(sym, root.max))
        guard = GuardRecord(expr, "shape", f"the example sizes must be inside the declared range of {name}",
                            source, cause="example_range")
        needed = [o.root_size for o in hits]
        off_lattice = [o for o in hits if o.root_size is None]
        fix_lines: tuple[str, ...] = ()
        unfixable = None
        if off_lattice:
            o = off_lattice[0]
            unfixable = (f"{o.site} = {o.size} is not {o.dim.name} for any integer {name} >= 0, and no range "
                         f"of {name} changes that")
        else:
            lower = min([root.min] + needed)
            upper = None if root.max is None else max([root.max] + needed)
            fix_lines = (RangeFix(name, lower, upper).line,)
            fixes += fix_lines
        upper_decl = math.inf if root.max is None else root.max
        hint = next((q for q in needed if q is not None), first.size)
        sites = []
        for o in hits:
            if o.site not in sites:
                sites.append(o.site)
        violations.append(Violation(
            guard, format_range(name, root.min, root.max), (name,),
            (DimInfo(name, root.min, upper_decl, hint, sites),), (format_range(name, root.min, root.max),),
            fix_lines=fix_lines, unfixable=unfixable,
            what_works=("pass examples that fit the declared dims, or change the dims" if off_lattice else None),
            example=ExampleOutside(first.site, first.size, first.dim.name, name, root.min, upper_decl)))
    return ConstraintsExceededError(violations=violations, fixes=fixes)
