"""Plain records passed between capture, the solver front end and reports.

Data flows one way: capture appends ``GuardRecord``s while the model runs;
``violations.py`` builds one ``Violation`` per guard the declared dims do not
imply (counterexample, fix lines, why no fix applies) and a
``ConstraintViolationError`` that renders its text from them; ``draft_export``
turns the same records into report entries.  Nobody parses the text back.
"""
from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

import sympy


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's code something happened; text is read only when printed."""

    filename: str
    lineno: int

    @property
    def text(self) -> str:
        return linecache.getline(self.filename, self.lineno).strip()

    def __str__(self) -> str:
        import os

        base = f"{os.path.basename(self.filename)}:{self.lineno}"
        text = self.text
        return f"{base}  `{text}`" if text else base


@dataclass(frozen=True)
class ValueRange:
    """Inclusive integer range ``[lower, upper]``; ``upper`` is ``math.inf`` when unbounded."""

    lower: int
    upper: float | int = math.inf

    def __contains__(self, value: int) -> bool:
        return self.lower <= value <= self.upper

    def __str__(self) -> str:
        return format_range_brackets(self.lower, self.upper)

    __repr__ = __str__

    @property
    def is_bounded(self) -> bool:
        return self.upper != math.inf


# -- how a range reads: the one range formatter (here because every layer may import records) --

def format_bound(upper: float | int | None) -> str:
    """An upper bound as text: ``512``; ``inf`` when unbounded (None or ``math.inf``)."""
    return "inf" if upper is None or upper == math.inf else str(int(upper))


def format_range_brackets(lower: int, upper: float | int | None) -> str:
    """``[1, 512]``, ``[2, inf]``: an inclusive range (upper None or ``math.inf`` = unbounded)."""
    return f"[{lower}, {format_bound(upper)}]"


def format_range(name: str, lower: int, upper: float | int | None) -> str:
    """``seq <= 1024``, ``2 <= seq <= 1024``, ``seq >= 1``: the declared range of one dim as a guard reads."""
    if upper is None or upper == math.inf:
        return f"{name} >= {lower}"
    if lower == 1:
        return f"{name} <= {format_bound(upper)}"
    return f"{lower} <= {name} <= {format_bound(upper)}"


# GuardRecord.cause: why a guard exists, said by the code that emits it (capture/shape_env.py,
# capture/symbolic.py, ops/ctx.py and the shape rules); reports read it, never the reason text.
CAUSES: dict[str, str] = {
    "branch": "a Python bool() of a size condition in the model (if, while, and/or)",
    "broadcast": "broadcasting two sizes against each other",
    "reshape": "a reshape's element count or divisibility",
    "index_bounds": "index values must stay inside an array",
    "shape": "another requirement of an op's shape rule",
    "auto_range": "a size inferred for a Dim.AUTO axis must stay inside that axis's range",
    "python_int": "a size used as a Python int (__index__: range(), a Python index, a numpy scalar)",
    "len": "len() of an array, which is a Python int",
    "iteration": "iterating over an array in Python (a loop over its rows)",
    "specialization": "another conversion that pinned a size (int(), str(), an f-string, ...)",
    "check": "a tpe.check(...) in the model states a fact about sizes",
    "example_range": "an example input's size must be inside the range its dynamic_shapes declares",
}

_DEFAULT_CAUSE = {"guard": "branch"}  # a record made without a cause: the one its kind implies


@dataclass
class GuardRecord:
    """One requirement the traced run placed on sizes.

    ``expr`` is a sympy boolean over the root size symbols (derived dims already
    substituted) that held for the example sizes.  ``kind`` is one of
    ``"guard"`` (a Python ``bool()`` on a symbolic size in user code),
    ``"shape"`` (an op's shape rule required it, e.g. broadcasting, reshape),
    ``"specialization"`` (``int()``/``__index__`` pinned a size),
    ``"index_bounds"`` (index values must stay inside an array), or
    ``"data_dependent"`` (it involves an unbacked symbol).  ``cause`` is the
    finer why, one of :data:`CAUSES` (``"broadcast"``, ``"reshape"``, ``"len"``,
    ...), set where the guard is emitted; left empty it is the one ``kind``
    implies (``"branch"`` for ``"guard"``, else ``kind`` itself).  ``reason`` is
    text for people, never read by code.
    """

    expr: sympy.Basic
    kind: str
    reason: str
    source: Optional[SourceLoc] = None
    op: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    cause: str = ""

    def __post_init__(self) -> None:
        if not self.cause:
            self.cause = _DEFAULT_CAUSE.get(self.kind, self.kind)


@dataclass
class DimInfo:
    """A user-visible size symbol: its declared range, example size and input sites."""

    name: str
    lower: int
    upper: float | int
    hint: int
    sites: list[str] = field(default_factory=list)  # e.g. ["x.shape[1]", "mask.shape[1]"]
    kind: str = "named"  # "named" | "dynamic" | "auto" | "unbacked"

    @property
    def range(self) -> ValueRange:
        """The declared (or known) range as a ``ValueRange`` (``[1, inf]``)."""
        return ValueRange(self.lower, math.inf if self.upper is None else self.upper)


@dataclass(frozen=True)
class ExampleOutside:
    """An example size outside its declared dim, before the model ran.

    ``site`` = ``size`` (``x.shape[0] = 20``) is outside ``dim`` (``b``, or a derived
    ``2*b``) whose root ``root`` is declared in ``[lower, upper]``.
    """

    site: str
    size: int
    dim: str
    root: str
    lower: int
    upper: float | int


@dataclass(frozen=True)
class Violation:
    """One guard the declared dims do not imply, as the error and draft_export show it.

    Built once per guard by ``violations.build_violation_error``; the
    ``ConstraintViolationError`` text (``errors.violation_lines``) and each draft
    failure are rendered from these fields.

    Attributes:
        guard: what capture recorded: ``expr``, ``kind``, ``cause``, ``reason``,
            ``source`` (the user's line), ``notes`` (also readable here as properties).
        guard_text: the guard as printed (``seq <= 512``, ``n % 4 == 0``).
        names: the size symbols it mentions, sorted.
        dims: the declared ones among them: input sites, declared range, example
            size and kind (``named`` / ``dynamic``), in ``names`` order.
        ranges: their declared ranges as printed (``seq <= 1024``, ``2 <= n <= 64``).
        reason: what the bullet says after the guard ("" for a user ``if``, which
            its source line explains); for a pinned size, which construct pinned it.
        specialized_to: for a guard pinning one size: the value it was pinned to
            (the bullet then reads "was specialized to"), else None.
        counterexample: sizes inside the declared ranges where the guard fails
            (from the fix search's verdicts, moved toward the example sizes), or None.
        undecided: when there is no counterexample because the solver could not
            decide the guard: its reason; else None.
        keep_dynamic: for a pinned size: how to write the model so it stays dynamic.
        dynamic_notes: what to do about each ``Dim.DYNAMIC`` axis the guard mentions.
        fix_lines: the fix lines about this guard (``refine`` syntax); empty when
            no fix line expresses it.
        unfixable: why no fix line expresses this guard (None when one does).
        what_works: what to do instead (an axis to mark ``Dim.AUTO``, how to change
            the model), or None; printed after ``What works:``.
        example: for an example input outside its declared range (the guard is that
            range, cause ``"example_range"``): the site, its size and the range; the
            bullet then reads ``x.shape[0] = 20 is outside b in [1, 8]``.  Else None.
    """

    guard: GuardRecord
    guard_text: str
    names: tuple[str, ...]
    dims: tuple[DimInfo, ...] = ()
    ranges: tuple[str, ...] = ()
    reason: str = ""
    specialized_to: Any = None
    counterexample: Optional[Mapping[str, int]] = None
    undecided: Optional[str] = None
    keep_dynamic: Optional[str] = None
    dynamic_notes: tuple[str, ...] = ()
    fix_lines: tuple[str, ...] = ()
    unfixable: Optional[str] = None
    what_works: Optional[str] = None
    example: Optional[ExampleOutside] = None

    @property
    def expr(self) -> sympy.Basic:
        return self.guard.expr

    @property
    def kind(self) -> str:
        return self.guard.kind

    @property
    def cause(self) -> str:
        return self.guard.cause

    @property
    def source(self) -> Optional[SourceLoc]:
        return self.guard.source

    @property
    def notes(self) -> list[str]:
        return self.guard.notes
