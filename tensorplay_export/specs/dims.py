"""The dynamic-shape spec vocabulary: ``Dim``, derived dims, hints and spec containers.

A user states which input sizes may vary with ``dynamic_shapes``.  This module
holds the objects such a spec is written with: :class:`Dim` and its derived
forms (``2*dx + 1``), the ``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC`` hints,
:func:`dims`, the :class:`Constraint` / :class:`EqualityConstraint` records, and
the whole-spec containers :class:`ShapesCollection` and :class:`AdditionalInputs`.
Matching a spec against the example inputs (one ``LeafSpec`` per array leaf) is
:mod:`tensorplay_export.specs.normalize`, which imports this module; binding
inputs to argument names is :mod:`tensorplay_export.specs.binding`.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import numpy as np

from .. import pytree
from ..errors import ConstraintsExceededError, InputDtypeError
from .binding import input_leaf_paths, leaf_name, spec_by_argument

__all__ = [
    "Dim", "DerivedDim", "_DerivedDim", "dims", "ShapesCollection", "AdditionalInputs",
    "Constraint", "EqualityConstraint", "is_auto", "is_dynamic", "hint_bounds",
]

_SUPPORTED_DERIVED = ("derived dims support only integer linear forms over dims: k*dx + c (integer k != 0, "
                      "e.g. 2*dx + 1 or 32 - dx) and sums over several dims with integer coefficients "
                      "(dx + dy, dx - dy + 1)")


def _as_int(value: Any, what: str) -> int:
    """An exact Python int from an int-like value; TypeError otherwise (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {value!r} ({type(value).__name__})")
    return int(value)


class _DimHint:
    """``Dim.AUTO`` / ``Dim.DYNAMIC`` / ``Dim.STATIC``, optionally with a range.

    The plain hints are singletons (compared by identity).  ``Dim.AUTO(min=2, max=8)``
    and ``Dim.DYNAMIC(max=16)`` (torch's hints take ranges too) are new hint objects of
    the same kind whose ``min``/``max`` bound the axis: an example outside is refused at
    export, the range is in ``range_constraints`` and checked at run time.  ``min``
    None means the usual lower bound (1, or 0 for an empty example); ``max`` None is
    unbounded.  Test the kind with :func:`is_auto` / :func:`is_dynamic`, never ``is``.

    What export does with the guards on such an axis (torch.export's rule,
    pytorch/pytorch#137029): ``Dim.AUTO`` and ``Dim.DYNAMIC`` both take every
    refinement the model needs (a range, a relation to another axis, a modulus) into
    the program's contract; a guard that leaves a ``Dim.DYNAMIC`` axis one size (a
    specialization) is a ``ConstraintViolationError`` whose fix makes it static, while
    ``Dim.AUTO`` takes that too.  ``Dim.STATIC`` is the example's size.

    Raises (on call):
        TypeError: ``Dim.STATIC(...)``, a non-integer bound.
        ValueError: ``min < 0`` or ``max < min``.
    """

    __slots__ = ("kind", "min", "max")

    def __init__(self, kind: str, min: Optional[int] = None, max: Optional[int] = None):
        self.kind = kind
        self.min = min
        self.max = max

    def __call__(self, *, min: Optional[int] = None, max: Optional[int] = None) -> "_DimHint":
        if self.kind == "STATIC":
            raise TypeError("Dim.STATIC takes no range (a static axis has the example's size); "
                            "use Dim.AUTO(min=..., max=...) or Dim.DYNAMIC(min=..., max=...)")
        lo = None if min is None else _as_int(min, f"Dim.{self.kind} min")
        hi = None if max is None or (isinstance(max, float) and max == math.inf) else \
            _as_int(max, f"Dim.{self.kind} max")
        lo = self.min if lo is None else lo
        hi = self.max if hi is None else hi
        if lo is not None and lo < 0:
            raise ValueError(f"Dim.{self.kind}: min={lo} is negative; sizes are >= 0")
        if hi is not None and hi < (1 if lo is None else lo):
            raise ValueError(f"Dim.{self.kind}: max={hi} is smaller than min={1 if lo is None else lo}")
        if lo is None and hi is None:
            return getattr(Dim, self.kind)
        return _DimHint(self.kind, lo, hi)

    @property
    def ranged(self) -> bool:
        return self.min is not None or self.max is not None

    def __repr__(self) -> str:
        if not self.ranged:
            return f"Dim.{self.kind}"
        parts = ([f"min={self.min}"] if self.min is not None else []) + \
            ([f"max={self.max}"] if self.max is not None else [])
        return f"Dim.{self.kind}({', '.join(parts)})"

    def __eq__(self, other: Any) -> bool:
        if type(other) is not _DimHint:
            return NotImplemented
        return (self.kind, self.min, self.max) == (other.kind, other.min, other.max)

    def __hash__(self) -> int:
        return hash(("DimHint", self.kind, self.min, self.max))

    def __reduce__(self):
        if not self.ranged:
            return (_hint, (self.kind,))
        return (_ranged_hint, (self.kind, self.min, self.max))


def _hint(kind: str) -> _DimHint:
    return getattr(Dim, kind)


def _ranged_hint(kind: str, lo: Optional[int], hi: Optional[int]) -> _DimHint:
    return getattr(Dim, kind)(min=lo, max=hi)


def is_auto(d: Any) -> bool:
    """``Dim.AUTO``, with or without a range."""
    return type(d) is _DimHint and d.kind == "AUTO"


def is_dynamic(d: Any) -> bool:
    """``Dim.DYNAMIC``, with or without a range."""
    return type(d) is _DimHint and d.kind == "DYNAMIC"


def hint_bounds(d: _DimHint, size: int) -> tuple[int, Optional[int]]:
    """The inclusive range ``(lower, upper or None)`` of an AUTO/DYNAMIC axis with example ``size``.

    Without ``min`` the lower bound is 1, or 0 for an empty example (sizes 0 and 1 are
    reasoned about exactly, so an empty example neither specializes the axis, as
    torch.export's 0/1 specialization would, nor falls outside its own hint).
    """
    if d.min is not None:
        lo = d.min
    else:
        lo = 0 if size == 0 else 1
    return lo, d.max


class Dim:
    """A named symbolic dimension with an inclusive integer range.

    Args:
        name: any Python identifier (``"S"``, ``"N"``, ``"E"``, ``"I"`` included).
        min: smallest admitted size, default 1; ``0`` admits empty inputs.
        max: largest admitted size, default ``None`` (unbounded).

    Raises:
        TypeError: a non-string name or non-integer bound.
        ValueError: a name that is not an identifier, ``min < 0`` or ``max < min``.

    Two ``Dim`` objects with the same name and range compare equal; a name used
    with two different ranges in one spec is an error at normalize time.
    ``k*dim + c`` builds a :class:`DerivedDim`.
    """

    AUTO: _DimHint
    DYNAMIC: _DimHint
    STATIC: _DimHint

    __slots__ = ("name", "min", "max")

    def __init__(self, name: str, *, min: Optional[int] = None, max: Optional[int] = None):
        if not isinstance(name, str):
            raise TypeError(f"Dim name must be a str, got {name!r}")
        if not name.isidentifier():
            raise ValueError(f"Dim name must be a Python identifier, got {name!r}")
        lo = 1 if min is None else _as_int(min, f"Dim {name!r} min")
        if max is None or (isinstance(max, float) and max == math.inf):
            hi = None
        else:
            hi = _as_int(max, f"Dim {name!r} max")
        if lo < 0:
            raise ValueError(f"Dim {name!r}: min={lo} is negative; sizes are >= 0")
        if hi is not None and hi < lo:
            raise ValueError(f"Dim {name!r}: max={hi} is smaller than min={lo}")
        self.name = name
        self.min = lo
        self.max = hi

    @property
    def __name__(self) -> str:  # noqa: A003 - the seed's attribute name
        return self.name

    @property
    def root(self) -> "Dim":
        return self

    def __repr__(self) -> str:
        parts = [repr(self.name)]
        if self.min != 1:
            parts.append(f"min={self.min}")
        if self.max is not None:
            parts.append(f"max={self.max}")
        return f"Dim({', '.join(parts)})"

    def __eq__(self, other: Any) -> bool:
        if type(other) is not Dim:
            return NotImplemented
        return (self.name, self.min, self.max) == (other.name, other.min, other.max)

    def __hash__(self) -> int:
        return hash(("Dim", self.name, self.min, self.max))

    @property
    def roots(self) -> tuple["Dim", ...]:
        return (self,)

    @property
    def terms(self) -> tuple[tuple["Dim", int], ...]:
        return ((self, 1),)

    # integer linear arithmetic over dims; everything else is refused with what is supported.
    def __mul__(self, k: Any) -> "_DerivedDim":
        return _DerivedDim._make(self, 1, 0)._scaled(k)

    __rmul__ = __mul__

    def __add__(self, c: Any) -> "_DerivedDim":
        return _DerivedDim._make(self, 1, 0)._shifted(c, +1)

    __radd__ = __add__

    def __sub__(self, c: Any) -> "_DerivedDim":
        return _DerivedDim._make(self, 1, 0)._shifted(c, -1)

    def __rsub__(self, other: Any) -> "_DerivedDim":
        return _DerivedDim._make(self, -1, 0)._shifted(other, +1, f"{other!r} - {self.name}")

    def __neg__(self) -> "_DerivedDim":
        return _DerivedDim._make(self, -1, 0)

    def __floordiv__(self, other):
        raise NotImplementedError(f"{self.name} // {other!r}: {_SUPPORTED_DERIVED}")

    def __truediv__(self, other):
        raise NotImplementedError(f"{self.name} / {other!r}: {_SUPPORTED_DERIVED}")

    def __mod__(self, other):
        raise NotImplementedError(f"{self.name} % {other!r}: {_SUPPORTED_DERIVED}")

    def __pow__(self, other):
        raise NotImplementedError(f"{self.name} ** {other!r}: {_SUPPORTED_DERIVED}")


Dim.AUTO = _DimHint("AUTO")
Dim.DYNAMIC = _DimHint("DYNAMIC")
Dim.STATIC = _DimHint("STATIC")


class _DerivedDim:
    """A size fixed by root dims: ``sum(k_i * root_i) + offset`` with integers ``k_i != 0``.

    Built by arithmetic on :class:`Dim` objects: ``2*dx + 1``, ``dx - 1`` and
    ``32 - dx`` are over one root (``root``, ``scale``, ``offset``); ``dx + dy``
    and ``dx - dy + 1`` are over several roots (``root`` is None, ``scale`` 0;
    ``terms`` holds ``(root, coefficient)`` pairs in first-use order).  A derived
    dim of a derived dim folds into this form.  ``min``/``max`` are the implied
    range of the derived size from the roots' ranges (``max`` None when unbounded,
    ``min`` None when unbounded below).
    """

    __slots__ = ("terms", "offset")

    def __init__(self, root: Optional[Dim] = None, scale: int = 1, offset: int = 0, *,
                 terms: Any = None):
        offset = _as_int(offset, "derived dim offset")
        if terms is None:
            if type(root) is not Dim:
                raise TypeError(f"a derived dim's root must be a Dim, got {root!r}")
            terms = ((root, scale),)
        merged: dict[str, list] = {}
        for r, k in terms:
            if type(r) is not Dim:
                raise TypeError(f"a derived dim's root must be a Dim, got {r!r}")
            k = _as_int(k, "derived dim coefficient")
            if r.name in merged:
                if merged[r.name][0] != r:
                    raise ValueError(f"Dim name {r.name!r} is used with two different ranges: "
                                     f"{merged[r.name][0]!r} and {r!r}; use one Dim object")
                merged[r.name][1] += k
            else:
                merged[r.name] = [r, k]
        kept = tuple((r, k) for r, k in merged.values() if k != 0)
        if not kept:
            raise NotImplementedError(f"the dims cancel out, leaving the constant {offset}: "
                                      f"{_SUPPORTED_DERIVED}; use an int for a static size")
        self.terms, self.offset = kept, offset

    @classmethod
    def _make(cls, root: Dim, scale: int, offset: int) -> "_DerivedDim":
        return cls(root, scale, offset)

    @property
    def root(self) -> Optional[Dim]:
        """The one root dim (None for a dim over several roots)."""
        return self.terms[0][0] if len(self.terms) == 1 else None

    @property
    def scale(self) -> int:
        """The root's coefficient (0 for a dim over several roots)."""
        return self.terms[0][1] if len(self.terms) == 1 else 0

    @property
    def roots(self) -> tuple[Dim, ...]:
        return tuple(r for r, _ in self.terms)

    @property
    def name(self) -> str:
        return _linear_text([(r.name, k) for r, k in self.terms], self.offset)

    __name__ = name

    def _extreme(self, lowest: bool) -> Optional[int]:
        """The smallest (or largest) size over the roots' ranges; None when unbounded that way."""
        out = self.offset
        for r, k in self.terms:
            b = r.min if (k > 0) == lowest else r.max
            if b is None:
                return None
            out += k * b
        return out

    @property
    def min(self) -> Optional[int]:
        return self._extreme(True)

    @property
    def max(self) -> Optional[int]:
        return self._extreme(False)

    def value_at(self, sizes: dict) -> int:
        """The derived size at root sizes ``{root name: int}``."""
        return sum(k * int(sizes[r.name]) for r, k in self.terms) + self.offset

    @property
    def fn(self):
        """torch's ``_DerivedDim.fn``: the map from the root's size to this one's (``(dx + 4).fn(5) == 9``).

        Raises:
            TypeError: (on access) the dim derives from several roots, so no one-argument map exists.
        """
        root = self.root
        if root is None:
            raise TypeError(f"{self.name} derives from several roots ({', '.join(r.name for r in self.roots)}): "
                            "it has no one-argument fn; use value_at({root name: size, ...})")
        return lambda size: self.value_at({root.name: size})

    def __repr__(self) -> str:
        return self.name

    def _key(self) -> tuple:
        return (tuple(sorted(((r.name, r.min, r.max), k) for r, k in self.terms)), self.offset)

    def __eq__(self, other: Any) -> bool:
        if type(other) is not _DerivedDim:
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(("DerivedDim",) + self._key())

    def _scaled(self, k: Any) -> "_DerivedDim":
        if isinstance(k, (Dim, _DerivedDim)):
            raise TypeError(f"{self.name} * {k.name}: {_SUPPORTED_DERIVED} (a product of two dims is not)")
        if isinstance(k, bool) or not isinstance(k, numbers.Integral):
            raise TypeError(f"{self.name} * {k!r}: {_SUPPORTED_DERIVED}")
        if k == 0:
            raise NotImplementedError(f"0*({self.name}): {_SUPPORTED_DERIVED}; use an int for a static size")
        k = int(k)
        return _DerivedDim(terms=[(r, c * k) for r, c in self.terms], offset=self.offset * k)

    def _shifted(self, c: Any, sign: int, what: Optional[str] = None) -> "_DerivedDim":
        if isinstance(c, (Dim, _DerivedDim)):
            return _DerivedDim(terms=list(self.terms) + [(r, sign * k) for r, k in c.terms],
                               offset=self.offset + sign * (c.offset if isinstance(c, _DerivedDim) else 0))
        if isinstance(c, bool) or not isinstance(c, numbers.Integral):
            raise TypeError(f"{what or f'{self.name} + {c!r}'}: {_SUPPORTED_DERIVED}")
        return _DerivedDim(terms=self.terms, offset=self.offset + sign * int(c))

    def __mul__(self, k: Any) -> "_DerivedDim":
        return self._scaled(k)

    __rmul__ = __mul__

    def __add__(self, c: Any) -> "_DerivedDim":
        return self._shifted(c, +1)

    __radd__ = __add__

    def __sub__(self, c: Any) -> "_DerivedDim":
        return self._shifted(c, -1)

    def __rsub__(self, other: Any) -> "_DerivedDim":
        return self._scaled(-1)._shifted(other, +1, f"{other!r} - ({self.name})")

    def __neg__(self) -> "_DerivedDim":
        return self._scaled(-1)

    def __floordiv__(self, other):
        raise NotImplementedError(f"({self.name}) // {other!r}: {_SUPPORTED_DERIVED}")

    __truediv__ = __mod__ = __pow__ = __floordiv__


DerivedDim = _DerivedDim


def _affine_text(root: str, scale: int, offset: int) -> str:
    """``root``, ``2*root``, ``root + 1``, ``2*root - 3``, ``32 - root`` (the fix-line notation)."""
    return _linear_text([(root, scale)], offset)


def _linear_text(terms: list, offset: int) -> str:
    """``dx + dy``, ``dx - dy + 1``, ``32 - dx``, ``64 - 2*dx``, ``-dx`` (the fix-line notation).

    Positive terms first (in order), then negative ones; a form with no positive
    term starts with its offset (``32 - dx``).
    """
    def mono(name: str, k: int) -> str:
        return name if abs(k) == 1 else f"{abs(k)}*{name}"

    pos = [(n, k) for n, k in terms if k > 0]
    neg = [(n, k) for n, k in terms if k < 0]
    if pos:
        text = " + ".join(mono(n, k) for n, k in pos)
        for n, k in neg:
            text += f" - {mono(n, k)}"
        if offset > 0:
            text += f" + {offset}"
        elif offset < 0:
            text += f" - {-offset}"
        return text
    if offset != 0:
        return f"{offset}" + "".join(f" - {mono(n, k)}" for n, k in neg)
    return "-" + mono(*neg[0]) + "".join(f" - {mono(n, k)}" for n, k in neg[1:])


def dims(*names: str, min: Optional[int] = None, max: Optional[int] = None) -> tuple[Dim, ...]:
    """Several named dims with the same bounds: ``batch, seq = dims("batch", "seq", max=512)``."""
    return tuple(Dim(n, min=min, max=max) for n in names)


@dataclass
class Constraint:
    """A range restriction attached to one input dimension (seed signature).

    ``source`` is the input path (e.g. ``"x"``), ``dim`` the axis.  A derived
    dim over one root has size ``scale * root + offset`` (``scale`` may be negative:
    ``32 - dx`` is ``root='dx', scale=-1, offset=32``); one over several roots has
    ``root=None`` and ``terms`` ``{root name: coefficient}``: size ``sum(k*root) + offset``.
    """

    source: Any
    dim: int
    name: Optional[str] = None
    min: Optional[int] = None
    max: Optional[int] = None
    warn_only: bool = False
    root: Optional[str] = None
    scale: int = 1
    offset: int = 0
    terms: Optional[dict] = None


@dataclass
class EqualityConstraint:
    """Input sites ``(input name, axis)`` whose sizes must stay equal.

    Raises:
        ValueError: fewer than two sites (one site ties nothing).
    """

    sites: tuple[tuple[str, int], ...]
    name: Optional[str] = None

    def __post_init__(self) -> None:
        if len(self.sites) < 2:
            raise ValueError(f"an EqualityConstraint ties two or more input sites, got {list(self.sites)}")


# --- ShapesCollection / AdditionalInputs ---------------------------------------------------

class ShapesCollection:
    """Spec per array object, keyed by identity: ``shapes[x] = {0: batch}``.

    ``dynamic_shapes(model, args, kwargs)`` returns the equivalent spec keyed by
    argument name.  Every array given a spec must be one of the inputs.
    """

    def __init__(self):
        self._specs: dict[int, tuple[Any, Any]] = {}

    def __setitem__(self, array: Any, spec: Any) -> None:
        if not isinstance(array, np.ndarray):
            raise TypeError(f"ShapesCollection keys must be input arrays, got {type(array).__name__}")
        self._specs[id(array)] = (array, spec)  # keep the array alive so its id stays unique

    def __getitem__(self, array: Any) -> Any:
        try:
            return self._specs[id(array)][1]
        except KeyError:
            raise KeyError("this array has no spec in the ShapesCollection") from None

    def __contains__(self, array: Any) -> bool:
        return id(array) in self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def items(self) -> Iterator[tuple[Any, Any]]:
        return iter(list(self._specs.values()))

    def dynamic_shapes(self, model: Any, args: tuple, kwargs: Optional[dict] = None) -> dict:
        """The spec keyed by argument name that this collection describes.

        Raises:
            ValueError: an array in the collection is not among the inputs.
        """
        kwargs = dict(kwargs or {})
        used: set[int] = set()
        leaf_specs = []
        for leaf in pytree.tree_leaves((tuple(args), kwargs)):
            entry = self._specs.get(id(leaf)) if isinstance(leaf, np.ndarray) else None
            if entry is not None:
                used.add(id(leaf))
            leaf_specs.append(None if entry is None else entry[1])
        spec = spec_by_argument(model, tuple(args), kwargs, leaf_specs)
        unused = [a for key, (a, _) in self._specs.items() if key not in used]
        if unused:
            shapes = ", ".join(str(tuple(a.shape)) for a in unused)
            raise ValueError(f"ShapesCollection has specs for {len(unused)} array(s) that are not model inputs "
                             f"(shapes {shapes}); key it by the very array objects passed to export")
        return spec


def _same_constant(a: Any, b: Any) -> bool:
    """Two non-array inputs are the same constant (same type, equal); objects that cannot say are not."""
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == does not give a truth value
        return a is b


def _int_input(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class AdditionalInputs:
    """Infer dynamic axes from several representative input sets.

    ``add(args, kwargs)`` records one set.  An axis whose size differs between
    the sets (the export example included) is dynamic; others are static.  Axes
    whose sizes are equal in every set (``x`` and ``y`` of ``x + y`` growing
    together) share one named ``Dim`` (named after the first such axis, as a
    ``Dim.DYNAMIC`` axis is: ``x_dim0``), so the program may rely on their
    equality; an axis varying alone is ``Dim.DYNAMIC`` (``Dim.DYNAMIC(min=0)``
    when it is 0 in some set; a shared dim gets ``min=0`` likewise).  Exporting with the
    object itself, a shared dim (named in :attr:`shared`) is a DYNAMIC axis over its sites:
    it takes the ranges and relations the model needs, and only a specialization is a
    violation (its fix, refined into :attr:`spec`, names the dim).  Only
    equalities are inferred (never ``dy = 2*dx`` or other ranges).  A non-array
    input must be the same in every set: it is a constant of the program.  The contract export
    infers for the dynamic axes may be narrower than the sets (``Dim.DYNAMIC`` takes the
    ranges and relations the model needs), so export checks every set against it and raises
    ``ConstraintsExceededError`` naming a set outside.  ``verify(ep)`` runs the exported
    program on every recorded set; :attr:`spec` is the explicit spec of the last
    :meth:`dynamic_shapes` call (what ``export`` used, and what
    ``refine_dynamic_shapes_from_suggested_fixes`` refines).
    """

    def __init__(self):
        self._examples: list[tuple[tuple, dict]] = []
        self.spec: Any = None
        self.shared: frozenset = frozenset()  # names of the shared dims of the last dynamic_shapes call

    def add(self, args: Any, kwargs: Optional[dict] = None) -> None:
        if not isinstance(args, tuple):
            args = tuple(args) if isinstance(args, list) else (args,)
        self._examples.append((args, dict(kwargs or {})))

    def __len__(self) -> int:
        return len(self._examples)

    def examples(self) -> list[tuple[tuple, dict]]:
        return list(self._examples)

    def dynamic_shapes(self, model: Any, args: tuple, kwargs: Optional[dict] = None) -> dict:
        """The spec keyed by argument name: a shared ``Dim`` for axes varying together, ``Dim.DYNAMIC``
        for an axis varying alone, ``None`` elsewhere (also kept as :attr:`spec`).

        Raises:
            ValueError: no example set was added, the sets differ in structure or rank, or a
                non-array input differs between sets (the message names it).
            InputDtypeError: (a ``TypeError``) an array of a set has another dtype than the
                export example's (the message names the input, the set and both dtypes).
        """
        if not self._examples:
            raise ValueError("AdditionalInputs has no example sets; call .add(args, kwargs) first")
        kwargs = dict(kwargs or {})
        base_leaves, base_tree = pytree.tree_flatten((tuple(args), kwargs))
        paths = input_leaf_paths(model, args, kwargs)
        varies: list[set[int]] = [set() for _ in base_leaves]
        # an int input is one "axis", None (its value; see LeafSpec): it varies like an axis does
        seen: list[dict[Any, list[int]]] = [
            {ax: [int(d)] for ax, d in enumerate(b.shape)} if isinstance(b, np.ndarray) else
            {None: [int(b)]} if _int_input(b) else {} for b in base_leaves]
        for n, (a, k) in enumerate(self._examples):
            leaves, tree = pytree.tree_flatten((a, k))
            if tree != base_tree:
                raise ValueError(f"AdditionalInputs set {n} has structure {tree!r}, "
                                 f"but the export example has {base_tree!r}")
            for i, (leaf, base) in enumerate(zip(leaves, base_leaves)):
                if isinstance(base, np.ndarray) != isinstance(leaf, np.ndarray):
                    raise ValueError(f"AdditionalInputs set {n}: '{paths[i]}' is an array in one set only")
                if _int_input(base) and _int_input(leaf) and int(leaf) >= 0 and int(base) >= 0:
                    seen[i][None].append(int(leaf))
                    if int(leaf) != int(base):
                        varies[i].add(None)
                    continue
                if not isinstance(base, np.ndarray) and not _same_constant(base, leaf):
                    raise ValueError(
                        f"AdditionalInputs set {n}: input '{paths[i]}' is {leaf!r}, but the export example "
                        f"has {base!r}; a non-array input is a constant of the program (only array sizes and "
                        f"non-negative int inputs can be dynamic), so export one program per value, or pass it "
                        f"as an array (np.asarray(...)) and read it inside the model")
                if isinstance(base, np.ndarray):
                    if leaf.ndim != base.ndim:
                        raise ValueError(f"AdditionalInputs set {n}: '{paths[i]}' has rank {leaf.ndim}, "
                                         f"the export example has rank {base.ndim}")
                    if leaf.dtype != base.dtype:
                        # the program is specialized on the example's dtypes (only sizes are symbolic),
                        # so a set of another dtype would pass export and be refused by every call
                        raise InputDtypeError(
                            f"AdditionalInputs set {n}: input '{paths[i]}' has dtype {leaf.dtype}, but the "
                            f"export example has dtype {base.dtype}; a program is specialized on its inputs' "
                            f"dtypes (only sizes can be dynamic), so cast the set's array first "
                            f"(e.g. .astype(np.{base.dtype})) or export one program per dtype")
                    varies[i] |= {ax for ax in range(base.ndim) if leaf.shape[ax] != base.shape[ax]}
                    for ax in range(base.ndim):
                        seen[i][ax].append(int(leaf.shape[ax]))
        # axes varying with the same sizes in every set: one shared Dim, named after the first
        groups: dict[tuple, list[tuple[int, int]]] = {}
        for i, v in enumerate(varies):
            for ax in sorted(v, key=lambda a: -1 if a is None else a):
                groups.setdefault(tuple(seen[i][ax]), []).append((i, ax))
        shared: dict[tuple[int, int], Any] = {}
        for sizes, sites in groups.items():
            if len(sites) > 1:
                i, ax = sites[0]
                dim = Dim(leaf_name(paths[i]) if ax is None else f"{leaf_name(paths[i])}_dim{ax}",
                          min=0 if min(sizes) == 0 else None)
                shared.update((site, dim) for site in sites)
        self.shared = frozenset(d.name for d in shared.values())
        # a lone axis that is 0 in some set needs min 0 (a plain Dim.DYNAMIC starts at 1)
        def lone(i: int, ax: Any) -> Any:
            return shared.get((i, ax), Dim.DYNAMIC(min=0) if min(seen[i][ax]) == 0 else Dim.DYNAMIC)

        leaf_specs = [({ax: lone(i, ax) for ax in sorted(v)} or None) if isinstance(leaf, np.ndarray) else
                      lone(i, None) if None in v else None   # an int input's spec is the Dim itself
                      for i, (leaf, v) in enumerate(zip(base_leaves, varies))]
        self.spec = spec_by_argument(model, tuple(args), kwargs, leaf_specs)
        return self.spec

    def verify(self, ep: Any) -> None:
        """Run ``ep.module()`` on every added set; the program must admit them all.

        ``export`` already checks each set against the program's contract (only its input
        checks), since the contract it infers for the dynamic axes can be narrower than
        the sets (torch.export does the same); ``verify`` runs the whole program.

        Raises:
            ConstraintsExceededError: a set the program refuses (the message names the set
                and says what the program said); anything else the program raises.
        """
        module = ep.module()
        for n, (args, kwargs) in enumerate(self._examples):
            try:
                module(*args, **kwargs)
            except ConstraintsExceededError as err:
                raise ConstraintsExceededError(f"AdditionalInputs set {n} is outside the program's contract: "
                                               f"{err}") from err


def spec_dim_names(spec: Any) -> Optional[set]:
    """Names of the ``Dim`` objects (and derived dims' roots) in a ``dynamic_shapes`` spec; None: no spec."""
    import dataclasses

    from ..pytree import UnresolvedDataclass

    if spec is None:
        return None
    names: set = set()
    stack = [spec]
    while stack:
        item = stack.pop()
        if isinstance(item, Dim):
            names.add(item.name)
        elif isinstance(item, _DerivedDim):
            names |= {r.name for r in item.roots}
        elif isinstance(item, dict):
            stack += list(item.values())
        elif isinstance(item, (list, tuple)):
            stack += list(item)
        elif isinstance(item, UnresolvedDataclass):  # a stored dataclass spec kept by name
            stack += [v for _k, v in item.fields]
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack += [getattr(item, f.name) for f in dataclasses.fields(item)]
    return names
