"""Turn violated guards into a ConstraintViolationError with counterexamples and fixes.

Capture records every guard the model placed on sizes (``records.GuardRecord``)
and hands the ones the declared ranges do not imply to
:func:`build_violation_error`.  The text keeps the widely known layout::

    Constraints violated (seq)!
      - Not all values of seq = x.shape[1] in the specified range seq <= 1024 satisfy the guard seq <= 512
        counterexample: seq = 513
        at model.py:12  `return x + POS[:s]`
    Suggested fixes:
      seq = Dim('seq', max=512)

One bullet per violated guard (capture order, duplicates dropped).  Everything
comes from one ``solver.suggest_fixes`` call over all guards: the fix lines
(verified together) and, from its verdict on each guard under the declared
ranges, the counterexample.  Each bullet is a ``records.Violation`` built here
once; the error renders its text from them (``errors.violation_lines``) and
draft_export reads the same records.  The ``Suggested fixes:`` block is last
and is exactly what ``refine_dynamic_shapes_from_suggested_fixes`` reads; it is
left out when no fix line applies (no bogus fix is ever printed).
"""
from __future__ import annotations

import dataclasses

import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import sympy

from .errors import (  # noqa: F401
    DYNAMIC_ENTRY_MARK, NO_FIXES_LINE, UNFIXABLE_MARK, ConstraintViolationError, DataDependentError,
)
# (NO_FIXES_LINE, UNFIXABLE_MARK: the text's markers, defined in errors.py, kept importable from here)
from .graph.printing import format_guard
from .records import CAUSES, DimInfo, GuardRecord, Violation, format_range, format_range_brackets, split_site

__all__ = ["build_violation_error", "data_dependent_error", "format_data_dependent_error", "index_bounds_text",
           "format_guard", "format_range", "NO_FIXES_LINE", "UNFIXABLE_MARK", "specialization_reason"]

# Kinds of DimInfo whose names a user can write in a fix line.
_NAMED = "named"
_DYNAMIC = "dynamic"


def _solver_api():
    """The solver package (looked up at call time so tests can substitute it)."""
    import solver

    return solver


def _names(expr: Any) -> list[str]:
    return sorted({s.name for s in getattr(expr, "free_symbols", ())})


# --- solver calls ---------------------------------------------------------------------------

def _upper_or_none(upper: float | int | None) -> Optional[int]:
    return None if upper is None or upper == math.inf else int(upper)


@dataclass
class _SolverFailure:
    """Stands in for a Verdict when the fix search raised (e.g. an unsupported construct)."""

    reason: str
    status: str = "unknown"
    counterexample: Optional[dict] = None


def _verdicts(fs: Any, count: int, failure: Optional[_SolverFailure]) -> list:
    """The fix search's verdict on each guard under the declared ranges (``FixSuggestion.checks``).

    ``suggest_fixes`` decides every guard it is given before it looks for fixes;
    its verdicts carry the counterexamples, so no guard is decided twice.  When
    the search raised, each guard gets ``failure`` (which says why there is no
    counterexample).
    """
    if failure is not None:
        return [failure] * count
    checks = list(getattr(fs, "checks", None) or [])
    missing = _SolverFailure("the fix search gave no verdict on it")
    return [checks[i].verdict if i < len(checks) else missing for i in range(count)]


def _counterexample(record: GuardRecord, cex: dict, dims: Mapping[str, DimInfo]) -> dict:
    """The sizes a violation shows: a point where the guard fails and eager really differs.

    ``solver.witness`` chooses it (every size >= 2 where the ranges allow, moved toward
    the example sizes): under the guard's negation, and where the guard is stricter than
    what eager numpy needs (``record.eager``, broadcasting's ``a == b or a == 1 or b == 1``)
    under that condition's negation too, which names every size the failure depends on.
    ``cex`` (the fix search's counterexample) is the starting point; it is kept when no
    witness is found.
    """
    find = getattr(_solver_api(), "witness", None)
    if find is None:
        return cex
    conditions = [sympy.Not(record.expr)]
    if record.eager is not None and set(_names(record.eager)) <= set(dims):
        conditions.append(sympy.Not(record.eager))
    names = {n for c in conditions for n in _names(c)}
    if not names <= set(dims) or not set(cex) <= names:
        return cex
    ranges = {n: (dims[n].lower, _upper_or_none(dims[n].upper)) for n in names}
    hints = {n: int(dims[n].hint) for n in names if dims[n].hint is not None}
    for condition in (sympy.And(*conditions), conditions[0]) if len(conditions) > 1 else (conditions[0],):
        try:
            got = find(condition, ranges, hints, start=cex)
        except Exception:  # noqa: BLE001 - an odd construct: the fix search's counterexample stays
            got = None
        if got:
            return got
    return cex


def _unfixable_entries(fs: Any) -> list[tuple[Any, dict, str]]:
    """``(guard, counterexample, reason)`` for each guard the solver could not fix."""
    out = []
    for item in getattr(fs, "unfixable", None) or []:
        if isinstance(item, tuple):
            guard = item[0]
            cex = item[1] if len(item) > 1 else None
            reason = item[2] if len(item) > 2 else ""
        else:
            guard = getattr(item, "guard", None)
            cex, reason = getattr(item, "counterexample", None), getattr(item, "reason", "")
        out.append((guard, dict(cex or {}), str(reason or "")))
    return out


_LINE_NAME = re.compile(r"[^\W\d]\w*")


def _line_names(line: str) -> set[str]:
    """The dim names a fix line mentions (``Dim`` and keywords of the range form excluded)."""
    text = re.sub(r"Dim\(\s*'[^']*'", "", line)
    text = re.sub(r"\b(min|max)\s*=", "", text)
    return set(_LINE_NAME.findall(text)) - {"Dim", "None"}


# --- the records ----------------------------------------------------------------------------

def _violation(record: GuardRecord, dims: Mapping[str, DimInfo], verdict: Any,
               unfixable: Optional[tuple[dict, str]], fixed_names: set[str], fix_lines: list[str],
               scope: tuple[str, str] = ("no fix form", ""), pins: Optional[Mapping[str, int]] = None) -> Violation:
    """The ``Violation`` for one guard: everything its bullet says, as fields.

    ``scope``: what the fix search tried (:func:`_search_scope`), named by the sentence of a
    guard no form expresses.  ``pins``: every ``Dim.DYNAMIC`` axis some guard of the error
    specializes (``GuardRecord.pins`` of them all), so an axis's note reads the same in each
    bullet it is part of.
    """
    names = _names(record.expr)
    guard = format_guard(record.expr)
    dynamic = [n for n in names if n in dims and dims[n].kind == _DYNAMIC]
    value = reason = hint = None
    pinned = dict(record.pins)
    if pinned and set(pinned) == set(names) and len(set(pinned.values())) == 1:
        # a Dim.DYNAMIC axis left one size: the bullet reads "was specialized to 4"
        value = next(iter(pinned.values()))
        if record.kind == "specialization" and not _pins_an_expression(record.expr):
            reason, hint = _specialization_reason(record, names[0], value)
        elif not (isinstance(record.expr, sympy.Eq) and len(names) == 1):
            # a range or relation that pins (n >= 4 under max=4): say which guard did it
            own = record.reason if record.reason and record.kind != "guard" else ""
            reason = f"{own + '; ' if own else ''}the guard {guard} leaves it that one size"
        elif record.kind != "guard":
            reason = record.reason
    elif record.kind == "specialization" and len(names) == 1 and not _pins_an_expression(record.expr):
        value = _specialized_value(record.expr, dims.get(names[0]))
        reason, hint = _specialization_reason(record, names[0], value)
    elif record.kind == "specialization":  # ``n % 3`` pinned, not ``n``: the bullet shows the guard
        reason = record.reason
    elif record.kind != "guard":  # a user `if` explains itself by its source line
        reason = record.reason
    cex = verdict.counterexample if verdict is not None and verdict.status == "refuted" else None
    if not cex and unfixable:
        cex = unfixable[0]
    undecided = None
    if cex:
        cex = _counterexample(record, cex, dims)
    elif verdict is not None and verdict.status == "unknown":
        undecided = str(verdict.reason)
    # an unfixable guard gets no "the fix line below replaces it" promise: no line fixes it
    pins = {**(pins or {}), **pinned}
    notes = tuple(_dynamic_note(n, dims[n], fixed_names if unfixable is None else frozenset(), pins.get(n))
                  for n in dynamic)
    sentence = advice = None
    if unfixable is not None:
        advice = _auto_advice(record.expr, dims, record.cause)  # e.g. the axis Dim.AUTO would infer as a sum
        only_dynamic = not set(names) - set(dynamic)
        searched = not unfixable[1] or unfixable[1].startswith("the guard ties")  # every form tried, none fits
        if searched and (only_dynamic or (advice and len(names) > 1)):
            # the usual multi-dim case: say briefly why, then what works
            sentence = _expresses(scope, guard)
        else:
            sentence = _unfixable_sentence(names, unfixable[1], record.expr, scope)
    return Violation(
        related_by=_relation(record.expr, names, dims, fix_lines if unfixable is None and value is None else ()),
        guard=record, guard_text=guard, names=tuple(names),
        dims=tuple(dims[n] for n in names if n in dims),
        ranges=tuple(format_range(n, dims[n].lower, dims[n].upper) for n in names if n in dims),
        reason=reason or "", specialized_to=value, counterexample=cex or None, undecided=undecided,
        keep_dynamic=hint or None, dynamic_notes=notes,
        fix_lines=() if unfixable is not None else tuple(fix_lines),
        unfixable=sentence, what_works=advice or None)


def _relation(expr: Any, names: list, dims: Mapping[str, DimInfo], fix_lines: Any) -> Optional[tuple]:
    """``(derived, root, line)`` when ``expr`` ties two named dims and a fix line derives one from
    the other (``dy = dx + 1``), else None (:attr:`records.Violation.related_by`)."""
    if not isinstance(expr, sympy.Eq) or len(names) != 2 or any(
            n not in dims or dims[n].kind != _NAMED for n in names):
        return None
    diff, syms = expr.lhs - expr.rhs, sorted(expr.free_symbols, key=str)
    if not diff.is_polynomial(*syms) or sympy.Poly(diff, *syms).total_degree() != 1:
        return None  # a divisibility or a product: the guard itself is the bullet
    for line in fix_lines:
        lhs, sep, rhs = line.partition(" = ")
        if sep and lhs in names and _line_names(rhs) == set(names) - {lhs}:
            root = next(n for n in names if n != lhs)
            return lhs, root, line
    return None


def _dynamic_note(name: str, info: DimInfo, fixed_names: set[str], pinned: Any = None) -> str:
    """What a user does about a Dim.DYNAMIC axis the model cannot keep fully dynamic.

    A DYNAMIC axis has no user name, so its symbol is named after the site
    (``x_dim0`` for ``x.shape[0]``); a fix line for that name replaces the
    ``Dim.DYNAMIC`` at the site (refine applies it).  ``pinned``: the size a guard of the
    error specialized the axis to (the one thing a DYNAMIC axis refuses, as in
    torch.export), or None (a record built by hand, or an older kind of violation).
    """
    where = " and ".join(info.sites) or name
    known = f"{name} in {format_range_brackets(info.lower, info.upper)}"
    if pinned is not None:
        entry = f". {DYNAMIC_ENTRY_MARK} {info.input_index}." if info.input_index is not None else ""
        fix = (f"the fix line for {name} below replaces that Dim.DYNAMIC by {pinned} (refine applies it); or "
               if name in fixed_names else "")
        verb = "are" if len(info.sites) > 1 else "is"  # a dim AdditionalInputs shares between axes
        return (f"{where} {verb} Dim.DYNAMIC ({known}), but the model specialized it to the constant {pinned}; "
                f"a Dim.DYNAMIC axis takes ranges and relations the model needs, never one size: {fix}"
                f"replace it with either Dim.STATIC or Dim.AUTO (which accepts the specialization){entry}")
    if name in fixed_names:
        # the entry lets refine place the fix in a positional spec, which names no input
        entry = f". {DYNAMIC_ENTRY_MARK} {info.input_index}." if info.input_index is not None else ""
        return (f"{where} is Dim.DYNAMIC ({known}); the fix line for {name} below replaces that Dim.DYNAMIC "
                f"(refine applies it: a named Dim with the range the model supports, or a constant for a static "
                f"axis); or mark the axis Dim.AUTO to accept whatever the model needs, or Dim.STATIC{entry}")
    return (f"{where} is Dim.DYNAMIC ({known}), which the model cannot keep fully dynamic here; mark it "
            f"Dim.AUTO (accept what the model needs), Dim.STATIC, or a named Dim with the right range")


def _site_text(info: DimInfo) -> str:
    sites = [split_site(s)[0] for s in info.sites] or [info.name]
    return " and ".join(sites)


def _linear_solution(expr: Any, sym: sympy.Symbol) -> Optional[Any]:
    """``e`` with ``Eq(sym, e)`` equivalent to the equality ``expr`` (integer coefficients), else None."""
    diff = sympy.expand(expr.lhs - expr.rhs)
    indep, dep = diff.as_independent(sym, as_Add=True)
    coeff = sympy.simplify(dep / sym) if dep != 0 else sympy.Integer(0)
    if coeff not in (1, -1):
        return None
    solution = sympy.expand(-indep / coeff)
    if sym in solution.free_symbols or not solution.free_symbols:
        return None
    if not all(c.is_Integer for c in solution.as_coefficients_dict().values()):
        return None
    return solution


def _auto_advice(expr: Any, dims: Mapping[str, DimInfo], cause: str = "branch") -> Optional[str]:
    """What works instead of a fix line: ``Dim.AUTO`` on the input axis the guard makes dependent.

    The bullet prints it after ``WHAT_WORKS_MARK`` (``What works: declare ...``).

    For an equality solvable for one named or DYNAMIC dim (``a + b == c``), that dim's axis
    can be ``Dim.AUTO``: capture then infers it (``c := a + b``).  For any other
    guard, an ``Dim.AUTO`` axis makes the guard part of the program's contract,
    checked at run time.  None for such a guard over DYNAMIC axes only (their note says it).
    """
    syms = sorted(getattr(expr, "free_symbols", ()), key=lambda s: s.name)
    named = [s for s in syms if s.name in dims and dims[s.name].kind == _NAMED]
    dynamic = [s for s in syms if s.name in dims and dims[s.name].kind == _DYNAMIC]

    def was(s: sympy.Symbol) -> str:
        return "Dim.DYNAMIC" if dims[s.name].kind == _DYNAMIC else f"Dim({s.name!r})"

    if isinstance(expr, sympy.Eq):
        options = []
        for s in named + dynamic:
            solution = _linear_solution(expr, s)
            if solution is not None:
                coeffs = solution.as_coefficients_dict().values()
                # prefer the dim that is a plain sum of the others (c := a + b), then the last one named
                options.append((all(c > 0 for c in coeffs), syms.index(s), s, solution))
        if options:
            _, _, s, solution = max(options, key=lambda o: (o[0], o[1]))
            return (f"declare {_site_text(dims[s.name])} as Dim.AUTO instead of {was(s)}; "
                    f"it will be inferred as {format_guard(solution)} (or change the model so it does not "
                    f"need this guard)")
    if not named:
        return None  # DYNAMIC axes only: their note already says to mark them Dim.AUTO
    rhs = getattr(expr, "rhs", None)
    on_rhs = [s for s in named if rhs is not None and s in getattr(rhs, "free_symbols", ())]
    s = (on_rhs or named)[-1]
    # computing both sides of an if only helps a branch; an op's own requirement is the model's shapes
    how = ("e.g. compute both branches and select with np.where" if cause == "branch"
           else f"its op requires it: {CAUSES.get(cause, cause)}")
    return (f"change the model so it does not need this guard ({how}), pick bounds by hand that keep "
            f"every allowed combination inside it, or "
            f"declare {_site_text(dims[s.name])} as Dim.AUTO instead of Dim({s.name!r}); the program then "
            f"accepts only sizes with {format_guard(expr)} and checks it at run time")


# Pins whose construct the hint depends on (GuardRecord.cause, set by capture): ``__index__``
# (``python_int``: which construct asked is told by the source line), ``len()``, iterating.
_INDEX_CAUSES = ("python_int", "len", "iteration")
_SCALAR_CTOR = re.compile(r"\b(?:np|numpy)\.(?:u?int\d*|float\d*|complex\d*|bool_?|intp)\s*\(")
_SUBSCRIPT = re.compile(r"([^\W\d][\w.]*)\s*\[")


# `for v in x`, `enumerate(x)`, `zip(x, ...)`, `list(x)`, `map(f, x)`: the loop target is a plain name
_FOR_IN = re.compile(r"\bfor\s+[\w\s,()]+?\s+in\s+(?!range\s*\()(?:(?:enumerate|zip|list|tuple|iter|reversed)"
                     r"\s*\(\s*)?([^\W\d][\w.]*)\b(?!\s*[(\[.])")
_ITER_CALL = re.compile(r"\b(?:enumerate|zip|iter|list|tuple|reversed)\s*\(\s*([^\W\d][\w.]*)\s*[,)]"
                        r"|\bmap\s*\([^,]+,\s*([^\W\d][\w.]*)\s*\)")


def _iterated_name(text: str) -> Optional[str]:
    """The array a source line iterates over in Python (``for v in x``, ``zip(x, x[1:])``), or None."""
    for pattern in (_FOR_IN, _ITER_CALL):
        for m in pattern.finditer(text or ""):
            got = next((g for g in m.groups() if g), None)
            if got and got not in ("range", "x.shape") and not got.endswith(".shape"):
                return got
    return None


def _specialization_reason(record: GuardRecord, name: str, value: Any) -> tuple[str, Optional[str]]:
    """``(reason, hint)`` for a size pinned to its example value; the hint says how to keep it dynamic.

    ``range(n)`` and ``len(x)`` get their own hint (np.arange / x.shape arithmetic);
    the ``register_buffer`` hint appears only when the line indexes an array
    (not ``x.shape[i]``) that capture could not reach.
    """
    reason = record.reason or ""
    if record.cause not in _INDEX_CAUSES:
        return reason, None
    text = record.source.text if record.source is not None else ""
    iterated = _iterated_name(text)
    if record.cause == "iteration" or iterated is not None:
        what = iterated or "an array"
        return (f"iterating over {what} in Python (the loop unrolls for {name} = {value} rows only)",
                f"iterating over {what} runs a Python loop per row: use vectorized ops over the whole array "
                f"(x * 2, np.diff(x, axis=0), x[1:] - x[:-1], np.arange(x.shape[0]) for the row index)")
    if record.cause == "len" or re.search(r"\blen\s*\(", text):
        return ("len() of an array is a Python int",
                "use x.shape[0] instead of len(x); shape entries stay symbolic in size arithmetic")
    if re.search(r"\brange\s*\(", text):
        return ("range() over a size runs a Python loop for the example's size",
                f"replace the loop by array operations over np.arange(...) of the size, which stays symbolic "
                f"(the loop unrolls for {name} = {value} only)")
    if _SCALAR_CTOR.search(text):
        return ("converted to a numpy scalar",
                "use the size directly in array arithmetic (x * x.shape[0]) instead of converting it")
    if any(m.group(1).rsplit(".", 1)[-1] != "shape" for m in _SUBSCRIPT.finditer(text)):
        return ("used as an index into an array capture did not lift",
                "register that array on the module with register_buffer(name, array, persistent=False), or "
                "pass it as an input, so indexing it with a size is traced")
    return ("used as a Python int",
            "keep the size in array operations (np.arange, slicing, x.shape arithmetic) instead of converting it")


specialization_reason = _specialization_reason  # for other reports of pinned sizes (draft_export)


def _pins_an_expression(expr: Any) -> bool:
    """Whether ``expr`` pins a compound size (``Eq(n % 3, 2)``) rather than a size (``Eq(n, 5)``)."""
    if isinstance(expr, sympy.Eq):
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if b.is_Integer:
                return not isinstance(a, sympy.Symbol)
    return False


def _specialized_value(expr: Any, info: Optional[DimInfo]) -> Any:
    if isinstance(expr, sympy.Eq):
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(a, sympy.Symbol) and b.is_Integer:
                return int(b)
    return info.hint if info is not None else format_guard(expr)


def _expresses(scope: tuple[str, str], what: str) -> str:
    """``no fix form expresses h*w <= 1000 (searched: Dim range, ...)``."""
    subject, searched = scope
    return f"{subject} expresses {what}" + (f" ({searched})" if searched else "")


def _unfixable_sentence(names: list[str], reason: str = "", expr: Any = None,
                        scope: tuple[str, str] = ("no fix form", "")) -> str:
    """Why no fix line expresses a guard (the bullet prints it after ``UNFIXABLE_MARK``).

    ``scope`` names the forms searched (:func:`_search_scope`) when the solver gave no reason.
    """
    if reason and expr is not None and reason.startswith("the guard ties"):
        # the solver quotes the guard as sympy text (`Eq(a + b, c)`); show the readable form
        reason = re.sub(r"`[^`]*`", lambda _m: f"`{format_guard(expr)}`", reason, count=1)
    if reason:
        return (f"{reason}. Change the model so it does not need this guard for the "
                f"sizes you declare, or pick bounds by hand that keep every allowed combination inside it")
    if len(names) > 1:
        return (f"{_expresses(scope, 'how this guard ties ' + ', '.join(names) + ' together')}; change the "
                f"model so each size is checked on its own or the sizes are linked linearly, or pick max= bounds "
                f"by hand that keep every combination inside it")
    return (f"{_expresses(scope, 'this guard')}; change the model so it does not need it for the sizes you "
            f"declare")


def build_violation_error(violations: list[GuardRecord], dims: Mapping[str, DimInfo],
                          examples: Iterable[Mapping[str, int]] = ()) -> ConstraintViolationError:
    """Build (do not raise) the error for guards the declared ranges do not imply.

    Args:
        violations: the violated guards, in capture order; each ``expr`` is a sympy
            boolean over root size symbols named as the dims.
        dims: every size symbol by name (named, dynamic and auto dims) with its
            declared range, example size and input sites.
        examples: the sizes of further example sets (``AdditionalInputs``), ``{name: size}``
            each: no printed fix refuses one (``solver.suggest_fixes(examples=...)``); a guard
            whose only fix would is a bullet without a fix that names the set.

    Returns:
        A ``ConstraintViolationError`` whose text is the report described in the
        module docstring, rendered from its fields: ``err.violations`` holds one
        ``records.Violation`` per bullet (its own ``fix_lines``, ``unfixable``
        reason, ``counterexample``...), ``err.fixes`` the printed fix lines.

    Raises:
        ValueError: ``violations`` is empty.
    """
    if not violations:
        raise ValueError("build_violation_error needs at least one violated guard")
    api = _solver_api()
    records = _dedupe(violations)
    guards = [r.expr for r in records]
    used = {n for g in guards for n in _names(g)}
    # in input order (the order capture made the symbols): the solver breaks a tie between two
    # equally wide relations by it, deriving the dim later in it (dy = 32 - dx, not dx = 32 - dy)
    solver_dims = {n: (info.lower, _upper_or_none(info.upper)) for n, info in dims.items() if n in used}
    hints = {n: int(info.hint) for n, info in dims.items() if info.hint is not None}
    failure = None
    try:
        points = [{n: int(v) for n, v in p.items() if n in used} for p in examples]
        points = [p for p in points if p]
        fs = (api.suggest_fixes(guards, dims=solver_dims, hints=hints, relations="linear", examples=points)
              if points else api.suggest_fixes(guards, dims=solver_dims, hints=hints, relations="linear"))
    except Exception as err:  # noqa: BLE001 - report the violations even when no fix can be computed
        fs = _NoFixes([(g, {}, f"the solver could not synthesize a fix ({type(err).__name__}: {err})")
                       for g in guards])
        failure = _SolverFailure(f"{type(err).__name__}: {err}")  # and why no guard has a counterexample

    # Named dims and DYNAMIC axes get fix lines (a DYNAMIC axis by its site name, e.g. x_dim0:
    # refine replaces the Dim.DYNAMIC there); AUTO symbols never need one.
    lines = _writable_lines(list(getattr(fs, "lines", []) or []),
                            {n for n, info in dims.items() if info.kind in (_NAMED, _DYNAMIC)})
    unfix = _unfixable_entries(fs)
    boxed = {str(g) for g in getattr(fs, "boxed", None) or ()}
    chosen = {str(g) for g in getattr(fs, "chosen", None) or ()}
    unfix_by_text = {str(g): (cex, reason) for g, cex, reason in unfix}
    # a line about the dims of unfixable guards only is no proved fix: its bullet says "no
    # suggested fix", and printing it beside that said two things (an always-true guard z3 could
    # not decide got b = 30*_b + 3, refusing 29 of every 30 sizes)
    fixable = set().union(*(set(_names(r.expr)) for r in records if str(r.expr) not in unfix_by_text)) \
        if records else set()
    if unfix_by_text and lines:
        lines = _lines_about(fixable, lines)
    fixed_names = set().union(*(_line_names(ln) for ln in lines)) if lines else set()

    out = []
    pins = {n: v for r in records for n, v in r.pins.items()}
    for record, verdict in zip(records, _verdicts(fs, len(records), failure)):
        names = set(_names(record.expr))
        unfixable = unfix_by_text.get(str(record.expr))
        if unfixable is None and not (names & fixed_names) and verdict.status != "proved":
            # no printed fix touches this guard's dims (the search's fix was about sizes no line can
            # name): say so instead of staying silent, and do not claim that no form expresses it
            unfixable = ({}, _NO_WRITABLE_LINE)
        v = _violation(record, dims, verdict, unfixable, fixed_names, _lines_about(names, lines), _search_scope(fs),
                       pins)
        if unfixable is None and str(record.expr) in boxed:
            v = dataclasses.replace(v, dynamic_notes=v.dynamic_notes + (_box_note(v.guard_text, names),))
        elif unfixable is None and str(record.expr) in chosen:
            v = dataclasses.replace(v, dynamic_notes=v.dynamic_notes + (_choice_note(v.guard_text, names),))
        out.append(v)
    return ConstraintViolationError(violations=out, fixes=lines)


def _box_note(guard: str, names: set) -> str:
    """Under a guard the fixes imply by a box of ranges (``b <= a``: ``a >= 4``, ``b <= 4``)."""
    return (f"note: the fixes below bound {', '.join(sorted(names))} by one box of ranges around the example "
            f"that implies {guard}; a Dim range cannot state the relation itself, so sizes outside the box "
            f"that satisfy it are refused too (move the bounds if you need other sizes)")


def _choice_note(guard: str, names: set) -> str:
    """Under a guard over several dims the fixes imply by one choice (a lattice, an example size)."""
    return (f"note: the fixes below satisfy {guard} by one choice for {', '.join(sorted(names))} (a lattice "
            f"or the example's size for some of them, the one admitting most sizes); other sizes satisfy it "
            f"too and are refused (write other residues or ranges by hand if you need them)")


_NO_WRITABLE_LINE = ("no fix line can be written for it: the fix the search found is about sizes the spec "
                     "does not name (Dim.AUTO or Dim.DYNAMIC axes)")


def _search_scope(fs: Any) -> tuple[str, str]:
    """``(subject, scope)`` of the sentence "``subject`` expresses ``guard`` (``scope``)".

    ``scope`` names every fix form the search tried (``fs.searched``); when a bound cut the
    search short (``fs.complete`` False) the subject says "no fix form found" and the scope
    that a fix may exist, so the message never claims more than was searched.
    """
    forms = ", ".join(getattr(fs, "searched", ()) or ()) or "every fix form"
    if getattr(fs, "complete", True):
        return "no fix form", f"searched: {forms}"
    bound = getattr(fs, "bound", "") or "the search hit its bound"
    return "no fix form found", f"searched within its bound: {forms}; {bound}, so a fix may exist"


def _lines_about(names: set[str], lines: list[str]) -> list[str]:
    """The fix lines that concern a guard over ``names`` (and the new roots those lines use)."""
    picked = [ln for ln in lines if _line_names(ln) & names]
    used = set().union(*map(_line_names, picked)) if picked else set()
    return [ln for ln in lines if ln in picked or _range_lhs(ln) in used]


@dataclass
class _NoFixes:
    unfixable: list
    lines: tuple = ()
    checks: tuple = ()


def _range_lhs(line: str) -> Optional[str]:
    """``_n`` for ``_n = Dim('_n', ...)``; None for other lines."""
    m = re.match(r"\s*([^\W\d]\w*)\s*=\s*Dim\(", line)
    return m.group(1) if m else None


def _writable_lines(lines: list[str], writable: set[str]) -> list[str]:
    """The fix lines a user can apply: only named dims and the new roots the fixes introduce.

    A line about a Dim.DYNAMIC/AUTO symbol is dropped (those have no name to write),
    and so is a new-root line that no remaining relation uses.
    """
    roots = {r for r in map(_range_lhs, lines) if r and r.startswith("_") and r not in writable}
    kept = [ln for ln in lines if _line_names(ln) <= writable | roots]
    relations = [ln for ln in kept if _range_lhs(ln) is None]
    used = set().union(*map(_line_names, relations)) if relations else set()
    return [ln for ln in kept if _range_lhs(ln) not in roots - used]


def _dedupe(records: Iterable[GuardRecord]) -> list[GuardRecord]:
    seen = set()
    out = []
    for r in records:
        key = (str(r.expr), r.source)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


# --- data-dependent guards ------------------------------------------------------------------

def data_dependent_error(record: GuardRecord, symbol_info: Optional[Mapping[str, DimInfo]] = None, *,
                         symbol: Any = None, op: Optional[str] = None, produced_at: Any = None,
                         hint: Optional[int] = None, lower: int = 0,
                         upper: float | int | None = None) -> DataDependentError:
    """Build (do not raise) the error for a guard on a data-dependent (unbacked) size.

    Args:
        record: the guard the model asked for (``source`` = the line that asked).
        symbol_info: the unbacked symbols by name; ``hint`` is the example value,
            ``lower``/``upper`` the known range, and ``sites[0]`` says which op and
            line produced it (e.g. ``"numpy.nonzero at model.py:9  `nz = ...`"``).
        symbol, op, produced_at, hint, lower, upper: the keyword form for one
            symbol, used instead of ``symbol_info`` (``produced_at`` is a SourceLoc).

    Returns:
        A ``DataDependentError`` naming the symbol, its producer, the comparison and
        the line that asked for it, rendered from its fields (``guard``, ``guard_text``,
        ``symbols``).
    """
    if symbol_info is None:
        symbol_info = {}
        if symbol is not None:
            name = getattr(symbol, "name", str(symbol))
            where = f" at {produced_at}" if produced_at is not None else ""
            site = f"{op or 'a data-dependent op'}{where}"
            symbol_info[name] = DimInfo(name, lower, math.inf if upper is None else upper, hint, [site], "unbacked")
    names = _names(record.expr)
    unbacked = [n for n in names if n in symbol_info and symbol_info[n].kind == "unbacked"] or \
        [n for n in names if n in symbol_info]
    return DataDependentError(guard=record, guard_text=format_guard(record.expr),
                              symbols=[symbol_info[n] for n in unbacked])


format_data_dependent_error = data_dependent_error


def index_bounds_text(asked: Any, holds_nowhere: bool, reason: str, sizes: str, source: Any = None,
                      produced: Optional[Mapping[str, str]] = None) -> str:
    """The error for index values whose known range reaches outside their axis.

    numpy's own run stayed inside (this example's values were smaller), but the range the
    program knows for the values (``np.clip(i, 0, 10)``: up to 10; ``np.searchsorted(a, v)``:
    up to ``len(a)``) does not fit the axis, so no contract over sizes keeps every run inside.

    Args:
        asked: what staying inside needs, as the shape rule asked it, before any
            simplification: ``hi <= n - 1`` (the largest value is at most the last
            position) or ``lo >= -n`` (the smallest is at least the most negative index).
        holds_nowhere: whether no sizes satisfy it (``u0 <= u0 - 1``); else it fails at
            the example sizes ``sizes`` (``n = 6``).
        reason: the rule's words (``integer array index: index values up to 10 on an axis of size n``).
        source: the model's line (a ``records.SourceLoc``) or None.
        produced: for each data-dependent size in ``asked``: the op and line that produced it.

    Returns:
        The message text, in words: what may go wrong, why no size contract helps, what to do.
    """
    when = "for every size" if holds_nowhere else (f"at the example sizes ({sizes})" if sizes else
                                                    "at the example sizes")
    longer = "longer than the largest index value"
    if isinstance(asked, sympy.LessThan):
        hi, last = asked.lhs, asked.rhs
        if sympy.simplify(hi - (last + 1)) == 0:
            what = f"the index may reach the axis size {format_guard(hi)} (its last position is {format_guard(last)})"
        else:
            what = f"the index may reach {format_guard(hi)}, past the axis's last position {format_guard(last)}"
    elif isinstance(asked, sympy.GreaterThan):
        what = (f"the index may go down to {format_guard(asked.lhs)}, below {format_guard(asked.rhs)}, the "
                f"first position counted from the end")
        longer = "at least as long as the largest magnitude of a negative index"
    else:
        what = f"staying inside needs {format_guard(asked)}, which does not hold"
    dependent = ""
    if produced:
        named = "; ".join(f"{name} is the size {site} produced" for name, site in sorted(produced.items()))
        dependent = (f" This is a data-dependent bound ({named}): the array's values decide it, so no range "
                     f"in dynamic_shapes can keep the index inside.")
    at = f"\n  at {source}" if source is not None else ""
    return (f"index values may fall outside the array: {reason}. {what[0].upper()}{what[1:]} {when}; numpy's "
            f"run stayed inside only because of this example's values.{dependent} Clamp the index to the "
            f"axis (e.g. np.clip(i, 0, x.shape[0] - 1)) or make the axis {longer}{at}")
