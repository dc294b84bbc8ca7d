"""Plain records passed between capture, the solver front end and reports.

Data flows one way: capture appends ``GuardRecord``s while the model runs;
``violations.py`` builds one ``Violation`` per guard the declared dims do not
imply (counterexample, fix lines, why no fix applies) and a
``ConstraintViolationError`` that renders its text from them; ``draft_export``
turns the same records into report entries.  Nobody parses the text back.
"""
from __future__ import annotations

import functools
import keyword
import linecache
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional


class _SympyOnFirstUse:
    """The ``sympy`` module, imported on the first attribute read.

    Loading an archive and running its program must not pay sympy's import (cold
    start, issue 19), yet the capture, solver-facing and printing code spells sympy
    at module level everywhere.  Modules write ``from ..records import sympy`` and
    use ``sympy.X`` as usual; the first read imports sympy and caches the attribute
    on this object, so later reads are plain attribute lookups.  Code on the
    load-and-run path tests values with :func:`is_sympy`, which never imports it.
    """

    def __getattr__(self, name: str) -> Any:
        import sympy as module

        value = getattr(module, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        loaded = "sympy" in sys.modules
        return f"<sympy, {'imported' if loaded else 'imported on first use'}>"


sympy: Any = _SympyOnFirstUse()


def is_sympy(value: Any) -> bool:
    """``isinstance(value, sympy.Basic)`` without importing sympy (nothing is, until it is imported)."""
    module = sys.modules.get("sympy")
    return module is not None and isinstance(value, module.Basic)


class _NoSympyClass:
    """What :func:`sympy_class` answers while sympy is not imported: no value is an instance."""


def sympy_class(name: str = "Basic") -> type:
    """``sympy.<name>`` (``"Basic"``, ``"Symbol"``, ...) for an ``isinstance`` test, without importing sympy.

    Until sympy is imported no value can be a sympy object, so the answer is then a
    class nothing is an instance of; code that passes the class on (``_iter_leaves(value,
    kind)``) keeps one test for both cases.
    """
    module = sys.modules.get("sympy")
    return _NoSympyClass if module is None else getattr(module, name)


@dataclass(frozen=True)
class SourceLoc:
    """Where in the user's code something happened; text is read only when printed.

    ``stored``: the line's text as an archive stored it (None for a location in code that
    ran in this process).  A loaded location prints only that: an archive names any file,
    and reading it (``/proc/self/environ``, a settings module) would print a local file's
    contents; its own text is whatever it stored, nothing of this machine.

    ``caller``: when the line is in another file than the model's own (a helper package
    the model calls), the model's line that led there; printed after the line itself so
    the reader finds both the helper's line and their own call.  None otherwise.
    """

    filename: str
    lineno: int
    stored: Optional[str] = field(default=None, compare=False)
    caller: Optional["SourceLoc"] = field(default=None, compare=False)

    @property
    def text(self) -> str:
        if self.stored is not None:
            return self.stored
        return linecache.getline(self.filename, self.lineno).strip()

    @property
    def where(self) -> str:
        """``model.py:12``, ``pkg/layers.py:4`` (see :func:`display_location`), or ``cell 3, line 16``."""
        return display_location(self.filename, self.lineno)

    def _line(self) -> str:
        base = self.where
        text = self.text
        return f"{base}  `{text}`" if text else base

    def __str__(self) -> str:
        if self.caller is None:
            return self._line()
        return f"{self._line()}, called from {self.caller._line()}"


def source_name(text: Any) -> bool:
    """Whether generated source may hold ``text`` as a name written out (``f.out``, ``out=``):
    an ASCII identifier that is no keyword.  Python's parser NFKC-normalizes any other
    identifier (PEP 3131: fullwidth ``ｏｕｔ`` reads as ``out``), so a name that passed
    ``str.isidentifier`` could mean another name in the source; such names go through
    strings instead (``getattr(x, 'ｖ')``, ``**{'ｏｕｔ': v}``) or are refused."""
    return type(text) is str and text.isascii() and text.isidentifier() and not keyword.iskeyword(text)


def display_location(filename: str, lineno: int) -> str:
    """How a source location reads in messages and reports: ``model.py:12``, ``pkg/util.py:4``.

    The file is named so that it is found again: a file inside a package by its path from
    the package's root (``pkg_helper/__init__.py``: every package has an ``__init__.py``, so a
    base name alone does not say which); any other file by its path from the ``sys.path``
    entry it was imported from (a script's own folder is ``sys.path[0]``, so a script reads
    ``model.py``), else from the working directory when it is under it, else in full.

    Code typed into a Jupyter cell runs from a temporary file
    (``/tmp/ipykernel_812/748874039.py``) whose name means nothing to the reader;
    IPython's compiler keeps the map from those names to the cell's execution
    count (the ``In [3]`` label; its own tracebacks print ``Cell In[3], line 16``),
    so such a location reads ``cell 3, line 16``.  Pseudo-files (``<string>``) keep their name.
    """
    shell = sys.modules.get("IPython")
    if shell is not None:
        ip = getattr(shell, "get_ipython", lambda: None)()
        cells = getattr(getattr(ip, "compile", None), "_filename_map", None)
        if isinstance(cells, dict) and filename in cells:
            return f"cell {cells[filename]}, line {lineno}"
    return f"{shown_path(filename)}:{lineno}"


def shown_path(filename: str) -> str:
    """The path :func:`display_location` prints for ``filename`` (see there)."""
    if filename.startswith("<"):
        return filename
    path = os.path.abspath(filename)
    root = _package_root(os.path.dirname(path))
    if root is None:
        roots = [os.path.abspath(entry or os.curdir) for entry in sys.path if isinstance(entry, str)]
        roots = [r for r in roots if _is_under(path, r)]
        root = max(roots, key=len) if roots else None
    if root is None and _is_under(path, os.getcwd()):
        root = os.getcwd()
    return os.path.relpath(path, root) if root is not None else path


def _is_under(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


@functools.lru_cache(maxsize=512)
def _package_root(folder: str) -> Optional[str]:
    """The folder holding the outermost package that ``folder`` is in, or None (not a package)."""
    if not os.path.isfile(os.path.join(folder, "__init__.py")):
        return None
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


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
    "hashed": "hash() of a size (a dict key or set member lookup), which only finds the example's value",
    "bit_length": "int.bit_length() of a size, the same only over a range of sizes",
    "specialization": "another conversion that pinned a size (int(), str(), an f-string, ...)",
    "check": "a tpe.check(...) in the model states a fact about sizes",
    "example_range": "an example input's size must be inside the range its dynamic_shapes declares",
    "derived_range": "a derived dim is a size, never negative, over its root's whole declared range",
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
    text for people, never read by code.  ``eager``: when the guard is stricter than
    what eager numpy needs to run the op at all (broadcasting ``a == b`` taken at an
    example where they were equal; numpy also runs with either size 1), that weaker
    condition; a counterexample is then chosen where it fails too, so eager really
    behaves differently there.  None: the guard itself is eager's condition.
    ``pins``: the ``Dim.DYNAMIC`` axes (by symbol name) this guard leaves one size, with
    that size; such a guard is a violation (a DYNAMIC axis takes any other refinement).
    """

    expr: sympy.Basic
    kind: str
    reason: str
    source: Optional[SourceLoc] = None
    op: Optional[str] = None
    notes: list[str] = field(default_factory=list)
    cause: str = ""
    eager: Optional[sympy.Basic] = None
    pins: dict = field(default_factory=dict)  # {Dim.DYNAMIC symbol name: size} the guard specializes

    def __post_init__(self) -> None:
        if not self.cause:
            self.cause = _DEFAULT_CAUSE.get(self.kind, self.kind)


def derived_site(site: str, expr: Any) -> str:
    """The ``DimInfo.sites`` entry of a site whose size is a derived dim of the root: ``x.shape[2] (2*_h)``."""
    return f"{site} ({expr})"


def split_site(entry: str) -> tuple[str, Optional[str]]:
    """``("x.shape[2]", "2*_h")`` for a :func:`derived_site` entry, ``(entry, None)`` for a plain site."""
    site, sep, rest = entry.partition(" (")
    return (site, rest[:-1]) if sep and rest.endswith(")") else (entry, None)


@dataclass
class DimInfo:
    """A user-visible size symbol: its declared range, example size and input sites.

    ``sites``: ``x.shape[1]`` where the size is the symbol itself, :func:`derived_site`
    entries (``x.shape[2] (2*_h)``) where it is a derived dim of it.
    """

    name: str
    lower: int
    upper: float | int
    hint: int
    sites: list[str] = field(default_factory=list)  # e.g. ["x.shape[1]", "mask.shape[1]"]
    kind: str = "named"  # "named" | "dynamic" | "auto" | "unbacked"
    input_index: Optional[int] = None  # a Dim.DYNAMIC axis: its input's entry in a tuple/list spec

    @property
    def range(self) -> ValueRange:
        """The declared (or known) range as a ``ValueRange`` (``[1, inf]``)."""
        return ValueRange(self.lower, math.inf if self.upper is None else self.upper)

    def where(self) -> str:
        """The symbol with its sites, readably: ``n = x.shape[0] = y.shape[0]``; a root used
        through derived dims shows each as an equation, ``_h (x.shape[2] = 2*_h)``."""
        plain, derived = [], []
        for entry in self.sites:
            site, expr = split_site(entry)
            if expr is None:
                plain.append(site)
            else:
                derived.append(f"{site} = {expr}")
        text = " = ".join([self.name, *plain])
        return f"{text} ({', '.join(derived)})" if derived else text


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
        counterexample: sizes inside the declared ranges where the guard fails and eager
            numpy really behaves differently (``GuardRecord.eager`` fails too): every size of
            the guard and of that condition, each >= 2 where the ranges allow (sizes 0 and 1
            are where numpy broadcasts and specializes), moved toward the example sizes; or None.
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
        related_by: for an equality of two named dims whose fix derives one from the
            other: ``(derived dim, root dim, fix line)``; the bullet then reads torch's
            ``The values of dy = y.shape[0] must always be related to the values of
            dx = x.shape[0] by dy = dx + 1``, and the header names the derived dim.
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
    related_by: Optional[tuple[str, str, str]] = None

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
