"""Plain records passed between capture, the solver front end and reports.

Data flows one way: capture appends ``GuardRecord``s while the model runs;
``violations.py`` turns the ones the declared dims do not imply into a
``ConstraintViolationError``; ``draft_export`` turns them into report entries.
"""
from __future__ import annotations

import linecache
import math
from dataclasses import dataclass, field
from typing import Optional

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


@dataclass
class GuardRecord:
    """One requirement the traced run placed on sizes.

    ``expr`` is a sympy boolean over the root size symbols (derived dims already
    substituted) that held for the example sizes.  ``kind`` is one of
    ``"guard"`` (a Python ``bool()`` on a symbolic size in user code),
    ``"shape"`` (an op's shape rule required it, e.g. broadcasting, reshape),
    ``"specialization"`` (``int()``/``__index__`` pinned a size),
    ``"index_bounds"`` (index values must stay inside an array), or
    ``"data_dependent"`` (it involves an unbacked symbol).
    """

    expr: sympy.Basic
    kind: str
    reason: str
    source: Optional[SourceLoc] = None
    op: Optional[str] = None
    notes: list[str] = field(default_factory=list)


@dataclass
class DimInfo:
    """A user-visible size symbol: its declared range, example size and input sites."""

    name: str
    lower: int
    upper: float | int
    hint: int
    sites: list[str] = field(default_factory=list)  # e.g. ["x.shape[1]", "mask.shape[1]"]
    kind: str = "named"  # "named" | "dynamic" | "auto" | "unbacked"
