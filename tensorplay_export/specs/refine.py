"""Apply the ``Suggested fixes:`` block of a ConstraintViolationError to a spec.

Only the lines after ``Suggested fixes:`` are read, up to the end of the text
or the first blank line.  Each line is one of (issue 4 / the solver's forms)::

    name = Dim('name', min=..., max=...)   # a range (also a new root such as _dx)
    name = 4                               # specialize to a constant
    dy = dx | dx + 1 | dx - 1 | 2*dx | 2*dx + 1   # a relation k*dx + c, k >= 1
    dy = 32 - dx | 64 - 2*dx               # a decreasing relation k*dx + c, k <= -1
    dz = dx + dy | dx - dy + 1 | 2*dx + dy  # a relation over several dims (integer coefficients)
    x_dim0 = Dim.AUTO(min=10)              # a ranged hint at a site, widened (same kind kept)

A relation's right-hand side is a sum of terms ``k*name``, ``name*k``, ``name``
and integer constants joined by ``+``/``-`` (in any order; a leading ``-`` is
allowed); a name used twice is added up, and a form whose dims cancel out is refused.

A ``Dim.DYNAMIC`` axis has no user name: the error names it after its site
(``x_dim0`` for ``x.shape[0]``; ``x_dim0_1`` when a user Dim is already called
``x_dim0``) and a fix line for that name replaces the ``Dim.DYNAMIC`` at that
axis with the named Dim, constant or relation.  A tuple/list spec does not name
its inputs, so the axis's note in the message says which entry holds its input
(``errors.DYNAMIC_ENTRY_MARK``); refine reads that to place the fix.  A hint line
(``x_dim0 = Dim.AUTO(min=10)``, from an example outside a ranged ``Dim.AUTO`` or
``Dim.DYNAMIC``) replaces the hint at the site it names with the one written, of the
same kind (an AUTO axis stays AUTO).

Lines are parsed by a strict grammar (regular expressions, never ``eval``), so
any Dim name that is an identifier works, keywords included.  Range and new
root lines are applied before relations, so a derived dim is rebased on its
refined root whatever the line order.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from solver import ConstantFix as _Const, RangeFix as _Range, RelationFix as _Rel

from .. import pytree
from .binding import leaf_name
from .dims import AdditionalInputs, Dim, ShapesCollection, _DerivedDim, is_auto, is_dynamic
# the marker phrases of a ConstraintViolationError's text, defined once where the text is rendered
from ..errors import DYNAMIC_ENTRY_MARK, FIXES_HEADER, NO_FIXES_HEAD, UNFIXABLE_MARK, WHAT_WORKS_MARK

__all__ = ["refine_dynamic_shapes_from_suggested_fixes", "parse_suggested_fixes", "parse_fix_line",
           "combine_fix_rounds", "dynamic_entry_lines", "dynamic_hint_names", "RangeFix", "ConstFix", "RelationFix", "HintFix"]

HEADER = FIXES_HEADER
_FORMS = ("name = Dim('name', min=..., max=...)", "name = 4", "dy = dx + 1", "dy = 2*dx", "dy = 2*dx - 1",
          "dy = 32 - dx", "dy = 64 - 2*dx", "dz = dx + dy", "dz = dx - dy + 1", "x_dim0 = Dim.AUTO(min=...)")

_NAME = r"[^\W\d]\w*"
_INT = r"-?\d+"
_RANGE_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*Dim\(\s*(?P<q>['\"])(?P<name>{_NAME})(?P=q)\s*"
                       rf"(?P<kw>(?:,\s*\w+\s*=\s*\S+?\s*)*),?\s*\)$")
_KW_RE = re.compile(rf"\s*(?P<key>\w+)\s*=\s*(?P<value>{_INT}|None)\s*")
_HINT_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*Dim\.(?P<kind>AUTO|DYNAMIC)\s*(?:\(\s*(?P<kw>(?:\w+\s*=\s*\S+?\s*,?\s*)*)\))?$")
_CONST_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*(?P<value>{_INT})$")
_REL_RE = re.compile(rf"^(?P<lhs>{_NAME})\s*=\s*(?P<rhs>.+)$")
# one signed term of a relation's right-hand side: k*name, name*k, name or an integer
_TERM_RE = re.compile(rf"\s*(?P<sign>[+-])?\s*(?:(?P<k>\d+)\s*\*\s*(?P<n1>{_NAME})|(?P<n2>{_NAME})\s*\*\s*(?P<k2>\d+)"
                      rf"|(?P<n3>{_NAME})|(?P<c>\d+))\s*")


@dataclass(frozen=True)
class RangeFix:
    name: str
    min: Optional[int]
    max: Optional[int]
    line: str


@dataclass(frozen=True)
class HintFix:
    """``x_dim0 = Dim.AUTO(min=10)``: the hint at the site named ``name`` becomes this one."""

    name: str
    kind: str
    min: Optional[int]
    max: Optional[int]
    line: str

    @property
    def hint(self) -> Any:
        return getattr(Dim, self.kind)(min=self.min, max=self.max)


@dataclass(frozen=True)
class ConstFix:
    name: str
    value: int
    line: str


@dataclass(frozen=True)
class RelationFix:
    """``name = scale*root + offset`` (``root`` one dim, ``scale != 0``), or over several dims
    ``name = sum(k*root) + offset`` (``root`` None, ``scale`` 0, ``terms`` the ``(root, k)`` pairs).

    ``terms`` is filled for both forms (one pair over one root).
    """

    name: str
    root: Optional[str]
    scale: int
    offset: int
    line: str
    terms: tuple = ()

    def __post_init__(self):
        if not self.terms and self.root is not None:
            object.__setattr__(self, "terms", ((self.root, self.scale),))

    @property
    def roots(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.terms)


def _relation(name: str, coeffs: dict, offset: int, line: str) -> "RelationFix":
    """A RelationFix from ``{root: k}`` (zero coefficients dropped, at least one left)."""
    terms = tuple((r, k) for r, k in coeffs.items() if k != 0)
    if len(terms) == 1:
        return RelationFix(name, terms[0][0], terms[0][1], offset, line)
    return RelationFix(name, None, 0, offset, line, terms)


def _parse_linear(rhs: str) -> Optional[tuple[dict, int]]:
    """``({name: k}, c)`` for a sum of signed terms, None when ``rhs`` is not one."""
    pos, coeffs, offset, first = 0, {}, 0, True
    rhs = rhs.strip()
    while pos < len(rhs):
        m = _TERM_RE.match(rhs, pos)
        if m is None or m.end() == pos or (m["sign"] is None and not first):
            return None
        sign = -1 if m["sign"] == "-" else 1
        name = m["n1"] or m["n2"] or m["n3"]
        if name is None:
            offset += sign * int(m["c"])
        else:
            k = int(m["k"] or m["k2"] or 1)
            coeffs[name] = coeffs.get(name, 0) + sign * k
        pos, first = m.end(), False
    if first or not coeffs:
        return None
    return coeffs, offset


Fix = Union[RangeFix, ConstFix, RelationFix, HintFix]


NO_FIXES = NO_FIXES_HEAD   # starts the closing line when no fix line applies (errors.NO_FIXES_LINE)
_GUARD_RE = re.compile(r"satisfy the guard (?P<guard>.+)$")


def _without_reason(text: str) -> str:
    """The guard of ``<guard> (<reason>)``: drop one trailing parenthesised group opened after a space.

    The group is found by balancing from the last ``)``, so a guard that holds
    parentheses itself (``dx == (dy + 1) // 2``, ``dx == Max(1, dy)``) stays whole.
    """
    text = text.rstrip()
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i - 1] if i > 1 and text[i - 1] == " " else text
    return text


def _nothing_to_apply(lines: list[str]) -> str:
    """Why a message without a fix block has nothing to apply (quoting its unfixable guards)."""
    guards, advice = [], []
    for i, line in enumerate(lines):
        m = _GUARD_RE.search(line)
        if m:
            guards.append(_without_reason(m["guard"]))
        text = line.strip()
        if text.startswith(UNFIXABLE_MARK):
            works = text.find(WHAT_WORKS_MARK)
            advice.append(text[works:] if works >= 0 else text[len(UNFIXABLE_MARK):].strip())
    if not guards and not advice and not any(line.strip().startswith(NO_FIXES) for line in lines):
        return (f"nothing to apply: the message has no '{HEADER}' block. A ConstraintViolationError or "
                f"draft_export report prints one only when a Dim change fixes a guard; if you passed part "
                f"of the text, pass the whole str(err)")
    out = "there are no suggested fixes to apply"
    if guards:
        out += f": the message found no fix form that makes {'; '.join(guards)} hold"
    if advice:
        out += ". Instead, as the message says: " + " | ".join(advice)
    return out


def _fix_block(message: str) -> list[str]:
    lines = str(message).splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == HEADER), None)
    if start is None:
        raise ValueError(_nothing_to_apply(lines))
    block = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        block.append(line.strip())
    if not block:
        raise ValueError(f"the '{HEADER}' block of the message has no fix lines")
    return block


def parse_fix_line(line: str) -> Fix:
    """Parse one fix line; ValueError (quoting the line and the accepted forms) if malformed.

    A trailing ``# comment`` is ignored, as the seed's own examples write them.
    """
    line = line.split("#", 1)[0].strip()
    m = _RANGE_RE.match(line)
    if m:
        if m["lhs"] != m["name"]:
            raise ValueError(f"fix line {line!r}: the Dim is named {m['name']!r} but assigned to {m['lhs']!r}")
        bounds = _bounds(line, m["kw"])
        return RangeFix(m["name"], bounds.get("min"), bounds.get("max"), line)
    m = _HINT_RE.match(line)
    if m:
        bounds = _bounds(line, m["kw"] or "")
        return HintFix(m["lhs"], m["kind"], bounds.get("min"), bounds.get("max"), line)
    m = _CONST_RE.match(line)
    if m:
        return ConstFix(m["lhs"], int(m["value"]), line)
    m = _REL_RE.match(line)
    parsed = _parse_linear(m["rhs"]) if m else None
    if parsed is not None:
        coeffs, offset = parsed
        if "Dim" in coeffs:
            raise ValueError(f"fix line {line!r} is malformed; accepted forms: {', '.join(_FORMS)}")
        if m["lhs"] in coeffs:
            raise ValueError(f"fix line {line!r} defines {m['lhs']!r} through itself")
        if not any(coeffs.values()):
            raise ValueError(f"fix line {line!r}: its dims cancel out; a constant is written {m['lhs']} = <int>")
        return _relation(m["lhs"], coeffs, offset, line)
    raise ValueError(f"cannot apply fix line {line!r}; accepted forms: {', '.join(_FORMS)}")


def _bounds(line: str, kw: str) -> dict[str, Optional[int]]:
    """``{"min": ..., "max": ...}`` of a range's keywords (``min=10, max=None``)."""
    bounds: dict[str, Optional[int]] = {}
    for part in filter(None, (p for p in kw.strip().split(","))):
        km = _KW_RE.fullmatch(part)
        if km is None or km["key"] not in ("min", "max") or km["key"] in bounds:
            raise ValueError(f"fix line {line!r}: cannot read {part.strip()!r}; a range takes "
                             f"min=<int> and/or max=<int>")
        bounds[km["key"]] = None if km["value"] == "None" else int(km["value"])
    return bounds


_DYNAMIC_ENTRY_RE = re.compile(rf"is Dim\.(?:DYNAMIC|AUTO) \((?P<name>{_NAME}) in .*{re.escape(DYNAMIC_ENTRY_MARK)} "
                               rf"(?P<entry>\d+)\.\s*$")


def dynamic_entry_lines(message: str) -> list[str]:
    """The lines of ``message`` that say which tuple/list spec entry holds a Dim.DYNAMIC axis."""
    return [line for line in str(message).splitlines() if _DYNAMIC_ENTRY_RE.search(line)]


def _dynamic_entries(message: str) -> dict[str, int]:
    """``{DYNAMIC axis name: its input's entry in a tuple/list spec}`` from the message's notes."""
    out: dict[str, int] = {}
    for line in str(message).splitlines():
        m = _DYNAMIC_ENTRY_RE.search(line)
        if m:
            out.setdefault(m["name"], int(m["entry"]))
    return out


def parse_suggested_fixes(message: str) -> list[Fix]:
    """The fixes in the ``Suggested fixes:`` block of ``message``, in order."""
    return [parse_fix_line(line) for line in _fix_block(message) if line.split("#", 1)[0].strip()]


# --- walking a spec -------------------------------------------------------------------------

def _dims_in(spec: Any, out: dict[str, Dim]) -> None:
    """Collect the root Dims of ``spec`` by name (first object seen for a name wins)."""
    if isinstance(spec, Dim):
        out.setdefault(spec.name, spec)
    elif isinstance(spec, _DerivedDim):
        for root in spec.roots:
            out.setdefault(root.name, root)
    elif isinstance(spec, dict):
        for v in spec.values():
            _dims_in(v, out)
    elif isinstance(spec, (tuple, list)):
        for v in spec:
            _dims_in(v, out)
    elif isinstance(spec, ShapesCollection):
        for _, v in spec.items():
            _dims_in(v, out)
    elif _spec_fields(spec) is not None:
        for f in _spec_fields(spec):
            _dims_in(getattr(spec, f), out)


def _spec_fields(spec: Any) -> Optional[tuple[str, ...]]:
    """The fields of a registered dataclass instance used as a spec (``Two(a={0: dx}, b=None)``), else None.

    A spec may mirror a dataclass input with an instance of the same class whose
    fields hold the fields' specs (normalize accepts it); refine walks and rebuilds
    it field by field, as ``register_dataclass`` flattens the input.
    """
    entry = pytree._BY_CLASS.get(type(spec))
    return None if entry is None else entry.fields


def _is_axes(spec: Any) -> bool:
    """A per-array axes spec (``{0: Dim}`` or ``(Dim, None)``) rather than a container of specs."""
    from .dims import _DimHint

    def axis_value(v: Any) -> bool:
        return v is None or isinstance(v, (int, Dim, _DerivedDim, _DimHint))

    if isinstance(spec, dict):
        return bool(spec) and all(isinstance(k, int) and not isinstance(k, bool) for k in spec) \
            and all(axis_value(v) for v in spec.values())
    if isinstance(spec, (tuple, list)):
        return any(v is not None for v in spec) and all(axis_value(v) for v in spec)
    return False


@dataclass(frozen=True)
class _DynamicSite:
    """A ``Dim.DYNAMIC`` in the spec: where it is (keys from the spec's root) and the name capture gives it."""

    loc: tuple
    pattern: Any   # compiled regex over symbol names (the input's name is unknown for positional specs)
    hint: Any = None   # the Dim.DYNAMIC there (its range, when it has one)


def _dynamic_sites(spec: Any, auto: bool = False) -> list[_DynamicSite]:
    """Every ``Dim.DYNAMIC`` of ``spec`` with the symbol name capture gives it (``x_dim0``).

    Capture names a DYNAMIC axis ``<leaf name>_dim<axis>`` after the input's path
    (``x``, ``extras['scale']``, ``args[1]``).  A dict spec gives the argument
    names; a tuple/list or ShapesCollection spec does not, so there any
    argument name matches and the rest of the path must.  ``auto``: ``Dim.AUTO`` hints too
    (named the same way; only a hint fix line names one).
    """
    out: list[_DynamicSite] = []
    unknown = "R"  # stands for an argument name a positional spec does not give

    def head_of(path: Optional[str], known: bool) -> str:
        if path is None:
            return r"[^\W\d]\w*"
        if not known:  # any argument name, then the known rest of the path
            return r"[^\W\d]\w*?" + re.escape(leaf_name(path)[len(unknown):])
        return re.escape(leaf_name(path))

    def walk(node: Any, path: Optional[str], known: bool, loc: tuple) -> None:
        if path is not None and (is_dynamic(node) or (auto and is_auto(node))):
            # a dynamic int input: the hint is its whole spec, and capture names it after the input
            out.append(_DynamicSite(loc, re.compile(f"^{head_of(path, known)}(?:_\\d+)?$"), node))
            return
        # a top-level tuple/list is by input position (normalize), never one array's axes
        if _is_axes(node) and not (top and not loc and isinstance(node, (tuple, list))):
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for axis, d in items:
                if not (is_dynamic(d) or (auto and is_auto(d))):
                    continue
                tail = rf"_dim{axis}" if axis >= 0 else r"_dim\d+"  # a negative axis needs the rank
                head = head_of(path, known)
                # capture adds _1, _2... when a user Dim already has the site's name
                out.append(_DynamicSite(loc + (axis,), re.compile(f"^{head}{tail}(?:_\\d+)?$"), d))
            return
        if isinstance(node, dict):
            for k, v in node.items():
                walk(v, (f"{path}[{k!r}]" if path is not None else str(k)), known, loc + (k,))
        elif isinstance(node, (tuple, list)):
            for i, v in enumerate(node):
                walk(v, (f"{path}[{i}]" if path is not None else unknown), path is not None and known,
                     loc + (i,))
        elif _spec_fields(node) is not None and path is not None:  # a dataclass spec: paths ``p.a``
            for f in _spec_fields(node):
                walk(getattr(node, f), f"{path}.{f}", known, loc + (f,))

    top = not isinstance(spec, ShapesCollection)
    if not top:
        for i, (_array, v) in enumerate(spec.items()):
            walk(v, unknown, False, (i,))
    else:
        walk(spec, None, True, ())
    return out


def dynamic_hint_names(spec: Any, names: Any) -> set:
    """Those of ``names`` (root symbols no user ``Dim`` names) that are ``Dim.DYNAMIC`` axes of ``spec``.

    Capture names a ``Dim.DYNAMIC`` axis after its site (``x_dim0`` for ``x.shape[0]``) and a
    ``Dim.AUTO`` axis ``s<n>``, so a name is DYNAMIC when a DYNAMIC site of the spec gives it
    (the rule refine uses to place a fix).  ``spec``: the user's ``dynamic_shapes`` as the
    program keeps it (an ``AdditionalInputs`` by the spec it inferred; None: no names).
    """
    if isinstance(spec, AdditionalInputs):
        spec = spec.spec
    if spec is None:
        return set()
    sites = _dynamic_sites(spec)
    return {n for n in names if any(site.pattern.match(n) for site in sites)}


def _input_spec(old: Any, new: Any, parent: Any) -> Any:
    """A dim that is a whole input's spec (an int input's ``Dim``, not an axis of an array's) and
    became a constant is ``None``: an int input is static by ``None``, as the spec forms say."""
    if isinstance(new, int) and isinstance(old, (Dim, _DerivedDim)) and not _is_axes(parent):
        return None
    return new


def _rebuild(spec: Any, repl: dict[str, Any], memo: dict, dyn: Optional[dict] = None, loc: tuple = ()) -> Any:
    """``spec`` with named dims replaced by ``repl`` and the DYNAMIC hints at ``dyn`` locations replaced."""
    dyn = dyn or {}
    if is_dynamic(spec) or is_auto(spec):
        return dyn.get(loc, spec)
    if isinstance(spec, Dim):
        return repl.get(spec.name, spec)
    if isinstance(spec, _DerivedDim):
        if not any(r.name in repl for r in spec.roots):
            return spec
        key = (tuple((id(r), r.name, k) for r, k in spec.terms), spec.offset)
        if key not in memo:  # equal derived dims in the spec map to one object
            memo[key] = _linear([(repl.get(r.name, r), k) for r, k in spec.terms], spec.offset)
        return memo[key]
    if isinstance(spec, dict):
        return {k: _input_spec(v, _rebuild(v, repl, memo, dyn, loc + (k,)), spec) for k, v in spec.items()}
    if isinstance(spec, tuple) and type(spec) is tuple:
        return tuple(_input_spec(v, _rebuild(v, repl, memo, dyn, loc + (i,)), spec) for i, v in enumerate(spec))
    if isinstance(spec, list):
        return [_input_spec(v, _rebuild(v, repl, memo, dyn, loc + (i,)), spec) for i, v in enumerate(spec)]
    if isinstance(spec, ShapesCollection):
        out = ShapesCollection()
        for i, (array, v) in enumerate(spec.items()):
            out[array] = _rebuild(v, repl, memo, dyn, loc + (i,))
        return out
    fields = _spec_fields(spec)
    if fields is not None:  # register_dataclass promises an __init__ taking every field by name
        return type(spec)(**{f: _rebuild(getattr(spec, f), repl, memo, dyn, loc + (f,)) for f in fields})
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


def _linear(terms: list, offset: int) -> Any:
    """``sum(k*base) + offset`` over Dims, derived dims and ints, folded onto the final roots.

    All ints (or roots that cancel out: ``dx + dy`` with ``dy = 32 - dx``) give an int;
    a bare root gives that very Dim object (so the dims stay shared).
    """
    if len(terms) == 1 and not isinstance(terms[0][0], _DerivedDim):
        return _affine(terms[0][0], terms[0][1], offset)
    coeffs: dict[str, list] = {}
    for base, k in terms:
        if isinstance(base, int):
            offset += k * base
            continue
        for root, kk in base.terms:
            coeffs.setdefault(root.name, [root, 0])[1] += k * kk
        offset += k * (base.offset if isinstance(base, _DerivedDim) else 0)
    kept = [(r, k) for r, k in coeffs.values() if k != 0]
    if not kept:
        return offset
    if len(kept) == 1 and kept[0][1] == 1 and offset == 0:
        return kept[0][0]
    return _DerivedDim(terms=kept, offset=offset)


def refine_dynamic_shapes_from_suggested_fixes(message: str, dynamic_shapes: Any) -> Any:
    """Apply the suggested fixes in ``message`` to ``dynamic_shapes``.

    Args:
        message: the whole text of a ``ConstraintViolationError``, of a ``ConstraintsExceededError``
            for an example outside its declared range, or of a draft_export report (``str(err)``).
        dynamic_shapes: the spec passed to ``export`` (dict, tuple, list, nested,
            or a ShapesCollection).

    Returns:
        A new spec with the same structure: every occurrence of a fixed dim is
        replaced by one shared new object (a ``Dim``, a derived dim, or an int for
        a specialization); derived dims are rebased on their refined roots; dims
        no fix mentions keep their original objects.

    Raises:
        ValueError: no ``Suggested fixes:`` block (the text says whether the message
            reports only guards no fix can express, and what it says to do instead), a
            malformed line, a fix naming a dim that is neither in the spec (a named Dim,
            or a Dim.DYNAMIC axis by its site name such as ``x_dim0``) nor defined by
            another fix line, a dim fixed twice, a cyclic relation, or an AdditionalInputs that has not
            inferred a spec yet (an AdditionalInputs that has is refined as its explicit spec dict).
    """
    if isinstance(dynamic_shapes, AdditionalInputs):
        # refine the explicit spec it inferred for the export that failed (its DYNAMIC axes are
        # named by site, its shared dims by name); the result is that spec dict, refined
        if dynamic_shapes.spec is None:
            raise ValueError("this AdditionalInputs has not inferred a spec yet: export with it first "
                             "(or call .dynamic_shapes(model, args, kwargs)), then refine")
        dynamic_shapes = dynamic_shapes.spec
    fixes = parse_suggested_fixes(message)
    hint_by_name = {f.name: f for f in fixes if isinstance(f, HintFix)}
    fixes = [f for f in fixes if not isinstance(f, HintFix)]
    existing: dict[str, Any] = {}
    _dims_in(dynamic_shapes, existing)
    # A Dim.DYNAMIC axis is named by its site (x_dim0 for x.shape[0]); a fix for that name
    # replaces the DYNAMIC hint there with a named Dim (or a constant / relation).
    dyn_sites = _dynamic_sites(dynamic_shapes)
    dyn_hits: dict[str, list[tuple]] = {}
    mentioned = {f.name for f in fixes} | {r for f in fixes if isinstance(f, RelationFix) for r in f.roots}
    # a tuple/list spec names no input: the message says which entry holds each DYNAMIC axis
    entries = _dynamic_entries(message) if isinstance(dynamic_shapes, (tuple, list)) else {}
    for name in sorted(mentioned - set(existing)):
        matched = [site for site in dyn_sites if site.pattern.match(name)
                   and (name not in entries or site.loc[0] == entries[name])]
        if matched:
            dyn_hits[name] = [site.loc for site in matched]
            # a named Dim with the DYNAMIC axis's range (unbounded for a plain one), or with the range
            # a hint line of the same block gives it
            hint = hint_by_name[name].hint if name in hint_by_name else matched[0].hint
            existing[name] = Dim(name, min=hint.min, max=hint.max)

    # A positional spec matches any argument name, so a new root (``_y_dim0`` of
    # ``y_dim0 = 4*_y_dim0``) also looks like a site.  A name that a range line defines and a
    # relation uses is that new root when the message places the DYNAMIC axes (entry notes)
    # but not this name, or when the sites cannot take every name.
    new_roots = ({f.name for f in fixes if isinstance(f, RangeFix)}
                 & {r for f in fixes if isinstance(f, RelationFix) for r in f.roots}) & set(dyn_hits)
    if entries:
        new_roots -= set(entries)
    elif _placements(dyn_hits):
        new_roots = set()
    for name in new_roots:
        del dyn_hits[name]
        del existing[name]
    by_name: dict[str, Fix] = {}
    for fix in fixes:
        prev = by_name.get(fix.name)
        if prev is not None and prev != fix and prev.line != fix.line:
            raise ValueError(f"fix lines {prev.line!r} and {fix.line!r} both define {fix.name!r}")
        by_name[fix.name] = fix
    used_as_root = {r for f in fixes if isinstance(f, RelationFix) for r in f.roots}
    for fix in fixes:
        if fix.name not in existing and fix.name not in used_as_root:
            known = ", ".join(sorted(existing)) or "none"
            raise ValueError(f"fix line {fix.line!r} names dim {fix.name!r}, which is not in dynamic_shapes "
                             f"(its named dims: {known}) nor used by another fix line")
        for root in (fix.roots if isinstance(fix, RelationFix) else ()):
            if root not in existing and root not in by_name:
                raise ValueError(f"fix line {fix.line!r} relates {fix.name!r} to {root!r}, which is neither "
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
        value = _linear([(resolve(r, stack + (name,)), k) for r, k in fix.terms], fix.offset)
        if isinstance(value, int) and value < 0:
            raise ValueError(f"fix line {fix.line!r} gives {name!r} the negative size {value}")
        resolved[name] = value
        return value

    for fix in fixes:
        resolve(fix.name, ())
    values = {name: resolve(name, ()) for name in dyn_hits}
    # a hint line: the hint of that kind at the site it names, replaced by the one written
    for fix in hint_by_name.values():
        if fix.name in dyn_hits:  # also named by another line: placed above as a Dim with this range
            continue
        if fix.name in existing:
            raise ValueError(f"fix line {fix.line!r} names {fix.name!r}, a named Dim of the spec; a hint line "
                             f"names a Dim.AUTO or Dim.DYNAMIC axis by its site")
        sites = [site.loc for site in _dynamic_sites(dynamic_shapes, auto=True)
                 if site.pattern.match(fix.name) and site.hint.kind == fix.kind
                 and (fix.name not in entries or site.loc[0] == entries[fix.name])]
        if not sites:
            raise ValueError(f"fix line {fix.line!r} names {fix.name!r}, but the spec has no Dim.{fix.kind} at a "
                             f"site of that name (x_dim0 is x.shape[0])")
        dyn_hits[fix.name] = sites
        values[fix.name] = fix.hint
    # A positional spec does not say which argument is x, so x_dim0 may match several
    # DYNAMIC axes: try every one-to-one placement; they must all give the same spec.
    results = [_rebuild(dynamic_shapes, resolved, {}, {loc: values[n] for n, loc in placed.items()})
               for placed in _placements(dyn_hits)]
    if not results:
        raise ValueError(f"fix lines name the Dim.DYNAMIC axes {', '.join(sorted(dyn_hits))}, but the spec "
                         f"has too few Dim.DYNAMIC axes for them all")
    if any(not _same_spec(results[0], other) for other in results[1:]):
        raise ValueError(f"fix lines name {', '.join(sorted(dyn_hits))}, Dim.DYNAMIC axes named after their "
                         f"input, but this positional spec does not say which input is which; write "
                         f"dynamic_shapes as a dict keyed by argument name and refine it with the same message")
    return results[0]


_MAX_PLACEMENTS = 5040  # 7! : more DYNAMIC candidates than that is not worth guessing


def _placements(hits: dict[str, list[tuple]]) -> list[dict[str, tuple]]:
    """Every one-to-one choice ``name -> location`` with each name at one of its candidate locations."""
    names = sorted(hits, key=lambda n: (len(hits[n]), n))
    out: list[dict[str, tuple]] = []

    def place(i: int, chosen: dict[str, tuple]) -> None:
        if len(out) > _MAX_PLACEMENTS:
            return
        if i == len(names):
            out.append(dict(chosen))
            return
        for loc in hits[names[i]]:
            if loc not in chosen.values():
                chosen[names[i]] = loc
                place(i + 1, chosen)
                del chosen[names[i]]

    place(0, {})
    return out[:_MAX_PLACEMENTS + 1]


def _same_spec(a: Any, b: Any) -> bool:
    if isinstance(a, ShapesCollection) and isinstance(b, ShapesCollection):
        return [v for _, v in a.items()] == [v for _, v in b.items()]
    return type(a) is type(b) and a == b


# --- one block from several rounds ----------------------------------------------------------

def combine_fix_rounds(rounds: list[list[str]], user_names: set[str]) -> list[str]:
    """One fix block, applicable to the original spec, from the fix lines of successive rounds.

    Round ``i + 1`` was computed on the spec refined by rounds ``0..i``, so its lines
    may redefine a root an earlier round introduced (``_h = 2*__h`` after ``h = 2*_h``).
    The later line for a name wins; relations are then composed down to their final
    roots (``h = 4*__h``), constants substituted, intermediate roots that nothing uses
    any more dropped, and a final root renamed to ``_<dim>`` when that name is free
    (``h = 4*_h``, ``_h = Dim('_h', max=64)``).  Lines of forms this grammar does not
    read are kept as they are.  A single round is returned unchanged.

    Args:
        rounds: fix lines per round, in order.
        user_names: the dims the user's spec names (they are never dropped or renamed).
    """
    if len(rounds) <= 1:
        return list(rounds[0]) if rounds else []
    fixes: dict[str, Any] = {}
    for lines in rounds:
        for line in lines:
            try:
                fix = parse_fix_line(line)
            except ValueError:
                fixes[line] = line   # a form refine reads only whole: kept as is
                continue
            fixes[fix.name] = fix
    for _ in range(len(fixes) + 1):   # compose relations through relations and constants
        changed = False
        for name, fix in list(fixes.items()):
            if not isinstance(fix, RelationFix):
                continue
            if not any(isinstance(fixes.get(r), (RelationFix, ConstFix)) for r in fix.roots):
                continue
            coeffs: dict[str, int] = {}
            offset = fix.offset
            for r, k in fix.terms:
                base = fixes.get(r)
                if isinstance(base, RelationFix):
                    for br, bk in base.terms:
                        coeffs[br] = coeffs.get(br, 0) + k * bk
                    offset += k * base.offset
                elif isinstance(base, ConstFix):
                    offset += k * base.value
                else:
                    coeffs[r] = coeffs.get(r, 0) + k
            if any(coeffs.values()):
                fixes[name] = _relation(name, coeffs, offset, "")
            else:
                fixes[name] = ConstFix(name, offset, "")
            changed = True
        if not changed:
            break
    used = {r for f in fixes.values() if isinstance(f, RelationFix) for r in f.roots}
    fixes = {n: f for n, f in fixes.items() if isinstance(f, str) or n in user_names or n in used}
    rename: dict[str, str] = {}
    taken = set(fixes) | set(user_names)
    for root in sorted(used - set(user_names)):
        want = "_" + root.lstrip("_")
        if want != root and want not in taken:
            rename[root] = want
            taken.add(want)

    def line(f: Any) -> str:
        if isinstance(f, str):
            return f
        name = rename.get(f.name, f.name)
        if isinstance(f, HintFix):
            return f.line
        if isinstance(f, RangeFix):
            return _Range(name, 1 if f.min is None else f.min, f.max).line
        if isinstance(f, ConstFix):
            return _Const(name, f.value).line
        return _Rel(name, terms=tuple((rename.get(r, r), k) for r, k in f.terms), offset=f.offset).line

    roots = [line(f) for f in fixes.values() if isinstance(f, RangeFix)]
    rest = [line(f) for f in fixes.values() if not isinstance(f, RangeFix)]
    return roots + rest
