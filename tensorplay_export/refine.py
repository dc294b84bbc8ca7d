"""Apply the ``Suggested fixes:`` block of a ConstraintViolationError to a spec.

Only the lines after ``Suggested fixes:`` are read, up to the end of the text
or the first blank line.  Each line is one of (issue 4 / the solver's forms)::

    name = Dim('name', min=..., max=...)   # a range (also a new root such as _dx)
    name = 4                               # specialize to a constant
    dy = dx | dx + 1 | dx - 1 | 2*dx | 2*dx + 1   # a relation k*dx + c, k >= 1

Lines are parsed by a strict grammar (regular expressions, never ``eval``), so
any Dim name that is an identifier works, keywords included.  Range and new
root lines are applied before relations, so a derived dim is rebased on its
refined root whatever the line order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from .dynamic_shapes import AdditionalInputs, Dim, ShapesCollection, _DerivedDim

__all__ = ["refine_dynamic_shapes_from_suggested_fixes", "parse_suggested_fixes", "parse_fix_line",
           "RangeFix", "ConstFix", "RelationFix"]

HEADER = "Suggested fixes:"
_FORMS = ("name = Dim('name', min=..., max=...)", "name = 4", "dy = dx + 1", "dy = 2*dx", "dy = 2*dx - 1")

_NAME = r"[^\W\d]\w*"
_INT = r"-?\d+"
_RANGE_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*Dim\(\s*(?P<q>['\"])(?P<name>{_NAME})(?P=q)\s*"
                       rf"(?P<kw>(?:,\s*\w+\s*=\s*\S+?\s*)*),?\s*\)$")
_KW_RE = re.compile(rf"\s*(?P<key>\w+)\s*=\s*(?P<value>{_INT}|None)\s*")
_CONST_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*(?P<value>{_INT})$")
_REL_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*(?:(?P<k>\d+)\s*\*\s*)?(?P<root>{_NAME})"
                     rf"(?:\s*\*\s*(?P<k2>\d+))?(?:\s*(?P<sign>[+-])\s*(?P<c>\d+))?$")


@dataclass(frozen=True)
class RangeFix:
    name: str
    min: Optional[int]
    max: Optional[int]
    line: str


@dataclass(frozen=True)
class ConstFix:
    name: str
    value: int
    line: str


@dataclass(frozen=True)
class RelationFix:
    """``name = scale*root + offset``."""

    name: str
    root: str
    scale: int
    offset: int
    line: str


Fix = Union[RangeFix, ConstFix, RelationFix]


def _fix_block(message: str) -> list[str]:
    lines = str(message).splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == HEADER), None)
    if start is None:
        raise ValueError(f"the message has no '{HEADER}' block; pass the whole text of the "
                         f"ConstraintViolationError (str(err))")
    block = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        block.append(line.strip())
    if not block:
        raise ValueError(f"the '{HEADER}' block of the message has no fix lines")
    return block


def parse_fix_line(line: str) -> Fix:
    """Parse one fix line; ValueError (quoting the line and the accepted forms) if malformed."""
    m = _RANGE_RE.match(line)
    if m:
        if m["lhs"] != m["name"]:
            raise ValueError(f"fix line {line!r}: the Dim is named {m['name']!r} but assigned to {m['lhs']!r}")
        bounds: dict[str, Optional[int]] = {}
        kw = m["kw"].strip()
        for part in filter(None, (p for p in kw.split(","))):
            km = _KW_RE.fullmatch(part)
            if km is None or km["key"] not in ("min", "max") or km["key"] in bounds:
                raise ValueError(f"fix line {line!r}: cannot read {part.strip()!r}; a range takes "
                                 f"min=<int> and/or max=<int>")
            bounds[km["key"]] = None if km["value"] == "None" else int(km["value"])
        return RangeFix(m["name"], bounds.get("min"), bounds.get("max"), line)
    m = _CONST_RE.match(line)
    if m:
        return ConstFix(m["lhs"], int(m["value"]), line)
    m = _REL_RE.match(line)
    if m and not (m["k"] and m["k2"]):
        scale = int(m["k"] or m["k2"] or 1)
        offset = int(m["c"] or 0) * (-1 if m["sign"] == "-" else 1)
        if scale < 1:
            raise ValueError(f"fix line {line!r}: the multiple must be >= 1")
        if m["root"] == "Dim":
            raise ValueError(f"fix line {line!r} is malformed; accepted forms: {', '.join(_FORMS)}")
        return RelationFix(m["lhs"], m["root"], scale, offset, line)
    raise ValueError(f"cannot apply fix line {line!r}; accepted forms: {', '.join(_FORMS)}")


def parse_suggested_fixes(message: str) -> list[Fix]:
    """The fixes in the ``Suggested fixes:`` block of ``message``, in order."""
    return [parse_fix_line(line) for line in _fix_block(message)]


# --- walking a spec -------------------------------------------------------------------------

def _dims_in(spec: Any, out: dict[str, Dim]) -> None:
    """Collect the root Dims of ``spec`` by name (first object seen for a name wins)."""
    if isinstance(spec, Dim):
        out.setdefault(spec.name, spec)
    elif isinstance(spec, _DerivedDim):
        out.setdefault(spec.root.name, spec.root)
    elif isinstance(spec, dict):
        for v in spec.values():
            _dims_in(v, out)
    elif isinstance(spec, (tuple, list)):
        for v in spec:
            _dims_in(v, out)
    elif isinstance(spec, ShapesCollection):
        for _, v in spec.items():
            _dims_in(v, out)


def _rebuild(spec: Any, repl: dict[str, Any], memo: dict) -> Any:
    if isinstance(spec, Dim):
        return repl.get(spec.name, spec)
    if isinstance(spec, _DerivedDim):
        new_root = repl.get(spec.root.name)
        if new_root is None:
            return spec
        key = (id(spec.root), spec.root.name, spec.scale, spec.offset)
        if key not in memo:  # equal derived dims in the spec map to one object
            memo[key] = _affine(new_root, spec.scale, spec.offset)
        return memo[key]
    if isinstance(spec, dict):
        return {k: _rebuild(v, repl, memo) for k, v in spec.items()}
    if isinstance(spec, tuple) and type(spec) is tuple:
        return tuple(_rebuild(v, repl, memo) for v in spec)
    if isinstance(spec, list):
        return [_rebuild(v, repl, memo) for v in spec]
    if isinstance(spec, ShapesCollection):
        out = ShapesCollection()
        for array, v in spec.items():
            out[array] = _rebuild(v, repl, memo)
        return out
    return spec


def _affine(base: Any, scale: int, offset: int) -> Any:
    """``scale*base + offset`` for a Dim, derived dim or int (an int stays an int)."""
    if isinstance(base, int):
        return scale * base + offset
    result = base * scale if scale != 1 else base
    if offset:
        result = result + offset
    if result is base and isinstance(base, Dim):
        return base  # dy = dx: the very same object, so the dims stay shared
    return result


def refine_dynamic_shapes_from_suggested_fixes(message: str, dynamic_shapes: Any) -> Any:
    """Apply the suggested fixes in ``message`` to ``dynamic_shapes``.

    Args:
        message: the whole text of a ``ConstraintViolationError`` (``str(err)``).
        dynamic_shapes: the spec passed to ``export`` (dict, tuple, list, nested,
            or a ShapesCollection).

    Returns:
        A new spec with the same structure: every occurrence of a fixed dim is
        replaced by one shared new object (a ``Dim``, a derived dim, or an int for
        a specialization); derived dims are rebased on their refined roots; dims
        no fix mentions keep their original objects.

    Raises:
        ValueError: no ``Suggested fixes:`` block, a malformed line, a fix naming a
            dim that is neither in the spec nor defined by another fix line, a dim
            fixed twice, a cyclic relation, or an AdditionalInputs spec.
    """
    if isinstance(dynamic_shapes, AdditionalInputs):
        raise ValueError("AdditionalInputs infers Dim.DYNAMIC axes, which have no names to refine; "
                         "write the spec with named Dims to apply suggested fixes")
    fixes = parse_suggested_fixes(message)
    existing: dict[str, Dim] = {}
    _dims_in(dynamic_shapes, existing)

    by_name: dict[str, Fix] = {}
    for fix in fixes:
        prev = by_name.get(fix.name)
        if prev is not None and prev != fix and prev.line != fix.line:
            raise ValueError(f"fix lines {prev.line!r} and {fix.line!r} both define {fix.name!r}")
        by_name[fix.name] = fix
    used_as_root = {f.root for f in fixes if isinstance(f, RelationFix)}
    for fix in fixes:
        if fix.name not in existing and fix.name not in used_as_root:
            known = ", ".join(sorted(existing)) or "none"
            raise ValueError(f"fix line {fix.line!r} names dim {fix.name!r}, which is not in dynamic_shapes "
                             f"(its named dims: {known}) nor used by another fix line")
        if isinstance(fix, RelationFix) and fix.root not in existing and fix.root not in by_name:
            raise ValueError(f"fix line {fix.line!r} relates {fix.name!r} to {fix.root!r}, which is neither "
                             f"in dynamic_shapes nor defined by an earlier fix line")

    resolved: dict[str, Any] = {}
    # Ranges, new roots and constants first: relations below are built on the refined roots.
    for fix in fixes:
        if isinstance(fix, RangeFix):
            resolved[fix.name] = Dim(fix.name, min=fix.min, max=fix.max)
        elif isinstance(fix, ConstFix):
            if fix.value < 0:
                raise ValueError(f"fix line {fix.line!r}: a size cannot be negative")
            resolved[fix.name] = fix.value

    def resolve(name: str, stack: tuple[str, ...]) -> Any:
        if name in resolved:
            return resolved[name]
        fix = by_name.get(name)
        if not isinstance(fix, RelationFix):
            return existing[name]  # untouched dim: keep the user's object
        if name in stack:
            raise ValueError(f"fix lines relate {' -> '.join(stack + (name,))} in a cycle")
        base = resolve(fix.root, stack + (name,))
        value = _affine(base, fix.scale, fix.offset)
        if isinstance(value, int) and value < 0:
            raise ValueError(f"fix line {fix.line!r} gives {name!r} the negative size {value}")
        resolved[name] = value
        return value

    for fix in fixes:
        resolve(fix.name, ())
    return _rebuild(dynamic_shapes, resolved, {})
