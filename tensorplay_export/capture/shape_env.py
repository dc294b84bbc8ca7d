"""ShapeEnv: the size symbols of one capture, their example values, and the guard log.

Every requirement a traced run places on sizes goes through :meth:`ShapeEnv.guard`:

1. the requirement is canonicalized over the declared ranges
   (``solver.canonicalize``: ``Eq(seq, Min(512, seq))`` -> ``seq <= 512``);
2. it must hold for the example sizes (otherwise capture itself is wrong: an
   internal error);
3. AUTO replacements found so far are substituted (``s0 := dx + dy``);
4. the solver is asked whether the assumptions imply it (:meth:`ShapeEnv.implies`: with
   the implicit facts below where the first answer needs them).  Proved -> nothing
   is recorded.  Otherwise, in this order:

   - it involves a data-dependent (unbacked) symbol: a ``data_dependent``
     record; ``export`` stops with ``DataDependentError``, ``draft`` mode
     assumes it and goes on;
   - it involves an AUTO or DYNAMIC symbol: accepted.  The solver assumes it,
     it becomes a runtime contract guard, and a linear equality that can be
     solved for an AUTO or DYNAMIC symbol with integer coefficients becomes a
     replacement used from then on.  Except when it pins a DYNAMIC symbol to
     one size (``Dim.DYNAMIC`` is AUTO that refuses a specialization, as in
     torch.export): a violation whose record says which (``GuardRecord.pins``);
   - otherwise (named dims only): a violation, recorded and also assumed so
     capture goes on and every problem is reported at once.

Facts every input that can exist satisfies, beyond the declared ranges:

- every size symbol, root or unbacked, is at most ``SIZE_MAX`` (``sys.maxsize``, numpy's
  ``npy_intp``: no axis, count or index is larger), so ``np.int64(n)`` needs no contract;
- every input axis expression (``a - b`` of a derived dim over several roots) is a size,
  ``>= 0`` (:meth:`ShapeEnv.assume_axis`), assumed as the roots' ranges are;
- a value read from an integer array (``k.item()``) lies in its dtype's range
  (:meth:`ShapeEnv.unbacked_symbol`'s ``dtype``).

The first and the last are applied to a query only when the answer without them is not
"proved" and its counterexample breaks one of them (or there is none), so they cost
nothing on the common path and never put ``sys.maxsize`` into a counterexample.

Guards are deduplicated by their canonical expression.  Each record carries
its ``cause`` (``records.CAUSES``: broadcasting, reshape, ``len()``...) as the
emitting code states it; reports read that field, never the reason text.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import sympy

from solver import ShapeSolver, UnboundSymbolError, canonicalize, evaluate

from ..errors import CaptureError
from ..ops.ctx import size_equality
from ..records import GuardRecord, SourceLoc
from ..violations import data_dependent_error, index_bounds_text
from .symbolic import flat_floors
from .frames import user_source

# numpy's npy_intp: the largest axis length, element count or index any array can have
SIZE_MAX = sys.maxsize

# Symbol kinds whose guards are accepted into the contract (a DYNAMIC one unless it is pinned).
_INFERRED = ("auto", "dynamic")


def _canonicalize(expr: Any, ranges: dict) -> Any:
    return canonicalize(expr, ranges)


@dataclass(frozen=True)
class FalseRequirement:
    """A requirement of a shape rule that the example sizes break.

    ``expr``: the requirement (canonical, replacements substituted); ``eager``: the weaker
    condition numpy itself runs under when the rule gave one (``ShapeCtx.require``'s
    ``eager``), else None; ``cause``: as for :meth:`ShapeEnv.guard`.  :meth:`numpy_needs`
    is what numpy needs, so its negation is where numpy raises as it did on the example.
    """

    expr: Any
    eager: Any
    cause: Optional[str]
    reason: str

    def numpy_needs(self) -> Any:
        return self.eager if self.eager is not None else self.expr


class RequirementFalseAtExample(CaptureError):
    """An op's shape rule required something the example sizes break (``matmul`` of 3x4 by 5x2).

    For an op numpy has not run yet (a deferred value) numpy itself fails on the example,
    so capture runs it there and reports numpy's own error at the model's line; after
    numpy ran fine it is the rule's fault (an internal error, as its text says).
    ``requirement``: the :class:`FalseRequirement`.
    """

    def __init__(self, *args: Any, requirement: Optional[FalseRequirement] = None) -> None:
        super().__init__(*args)
        self.requirement = requirement


class ShapeEnv:
    """Symbols, hints, ranges, AUTO replacements and the guard log of one capture.

    Args:
        solver: a ``solver.ShapeSolver`` (passed in, never a module global).
        mode: ``"export"`` (data-dependent guards raise) or ``"draft"`` (assumed).
    """

    def __init__(self, solver: Any, mode: str = "export") -> None:
        self.solver = solver
        self.mode = mode
        self.hints: dict[sympy.Symbol, int] = {}
        self.ranges: dict[sympy.Symbol, tuple[int, Optional[int]]] = {}
        self.kinds: dict[sympy.Symbol, str] = {}            # named | dynamic | auto | unbacked | root
        self.names: dict[sympy.Symbol, str] = {}
        self.unbacked_source: dict[sympy.Symbol, tuple[str, Optional[SourceLoc]]] = {}
        self.replacements: dict[sympy.Symbol, sympy.Expr] = {}
        self.violations: list[GuardRecord] = []
        self.accepted: list[GuardRecord] = []
        self.data_dependent: list[GuardRecord] = []
        self.tracer: Any = None                               # set by capture (for SymInt ufuncs)
        self._seen: dict = {}                                 # canonical guards met (ordered: rollback)
        self._hint_cache: dict = {}
        self._dominance: dict = {}                            # Min/Max argument order -> proved at every size
        self._counters = {"auto": 0, "unbacked": 0}
        self._taken: set[str] = set()                         # user Dim names and every name made
        self._unbacked_by_key: dict = {}                      # same_as key -> unbacked symbol
        self._facts: dict[sympy.Symbol, list] = {}            # implicit facts per symbol (see module doc)
        # guards: requirements received; folded: decided without the solver (sympy / canonical form);
        # queries: solver.implies calls; solver_seconds: time spent in them
        self.stats = {"guards": 0, "folded": 0, "queries": 0, "solver_seconds": 0.0}

    # -- symbols --------------------------------------------------------------
    def create_symbol(self, name: str, lower: int, upper: Optional[int], hint: Optional[int],
                      kind: str) -> sympy.Symbol:
        """A size symbol named ``name`` with inclusive range ``[lower, upper]``.

        Sizes >= 1 are ``positive``, others ``nonnegative`` (never an assumption
        set to False: that would assert the opposite).
        """
        if lower >= 1:
            sym = sympy.Symbol(name, integer=True, positive=True)
        else:
            sym = sympy.Symbol(name, integer=True, nonnegative=True)
        if sym in self.ranges:
            return sym
        declared = self.solver.declare(name, lower=lower, upper=upper, example=hint)
        if declared != sym:  # the solver built its own symbol with other assumptions
            sym = declared
        self.ranges[sym] = (lower, upper)
        if hint is not None:
            self.hints[sym] = int(hint)
        self.kinds[sym] = kind
        self.names[sym] = name
        self._taken.add(name)
        return sym

    def reserve_names(self, names: Any) -> None:
        """Keep ``names`` (the user's Dim names) from the symbols export names itself."""
        self._taken.update(names)

    def fresh_name(self, want: str) -> str:
        """``want``, or ``want_1``, ``want_2``... when a user Dim or another symbol has it."""
        name, k = want, 0
        while name in self._taken:
            k += 1
            name = f"{want}_{k}"
        return name

    def _next_name(self, prefix: str, counter: str) -> str:
        while True:
            n = self._counters[counter]
            self._counters[counter] += 1
            if f"{prefix}{n}" not in self._taken:
                return f"{prefix}{n}"

    def auto_symbol(self, hint: int, lower: int = 1, upper: Optional[int] = None) -> sympy.Symbol:
        """A fresh ``s<n>`` (skipping names taken) in ``[lower, upper]`` for a Dim.AUTO axis."""
        return self.create_symbol(self._next_name("s", "auto"), lower, upper, hint, "auto")

    def unbacked_symbol(self, upper: Any, hint: int, op: str, source: Optional[SourceLoc],
                        lower: int = 0, same_as: Any = None, dtype: Any = None) -> sympy.Symbol:
        """A data-dependent size ``u<n>`` in ``[lower, upper]`` with the example's value as hint.

        ``dtype``: the numpy dtype of the array the value was read from (``k.item()``), or
        None.  An integer dtype's range (``np.iinfo``; ``[0, 1]`` for bool) is a fact about
        the value, so ``np.int64(k.item())`` of an int64 ``k`` needs no guard.

        ``same_as``: the key of the graph value the size is a function of (the True count
        of one mask node: ``("nonzero", node)``).  The first request with a key makes the
        symbol and later ones get it back, so ``x[m]`` and ``g[m]`` have one length and
        ``x[m] * g[m][:, None]`` needs no guard; distinct keys never share one, whatever
        their example values.

        Raises:
            CaptureError: (internal) a shared symbol's example value differs from ``hint``.
        """
        if same_as is not None:
            known = self._unbacked_by_key.get(same_as)
            if known is not None:
                if self.hints.get(known) != int(hint):
                    raise CaptureError(f"internal error: {op} shares {known} (example {self.hints.get(known)}) "
                                       f"but numpy gives {hint}")
                return known
        upper_int = self._upper_bound(upper) if upper is not None else None
        sym = self.create_symbol(self._next_name("u", "unbacked"), int(lower), upper_int, hint, "unbacked")
        if upper_int is None and upper is not None:
            self.solver.assume(sympy.Le(sym, upper))
        self.unbacked_source[sym] = (op, source)
        if dtype is not None:
            self._dtype_facts(sym, np.dtype(dtype))
        if same_as is not None:
            self._unbacked_by_key[same_as] = sym
        return sym

    def _dtype_facts(self, sym: sympy.Symbol, dtype: np.dtype) -> None:
        """Record that ``sym``, a value read from an array of ``dtype``, lies in its range."""
        if dtype == np.bool_:
            lo, hi = 0, 1
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = int(info.min), int(info.max)
        else:
            return
        facts = self._facts.setdefault(sym, [])
        facts.append(sympy.Ge(sym, lo))
        facts.append(sympy.Le(sym, hi))

    def assume_axis(self, expr: Any) -> None:
        """State that ``expr``, the size expression of an input axis, is a size: ``>= 0``.

        A derived dim over one root is checked to be a size over its root's whole range
        before capture (``specs.normalize``); over several roots (``a - b``) only the inputs
        can say so, and every input that exists does.  An integer or a root symbol (whose
        range says it) needs nothing.
        """
        expr = sympy.sympify(expr)
        if not isinstance(expr, sympy.Expr) or expr.is_Atom:
            return
        fact = sympy.Ge(expr, 0)
        if fact is sympy.true or self.solver.implies(fact).status == "proved":
            return
        self.solver.assume(fact)

    def implies(self, expr: Any) -> Any:
        """``solver.implies(expr)`` with the implicit facts of the module docstring.

        The facts are assumed (then forgotten) only when the plain answer is not "proved"
        and its counterexample breaks one of them or there is none: a counterexample that
        keeps them all refutes the guard under them too.

        Raises:
            UnsupportedExpressionError: as ``solver.implies``.
        """
        verdict = self.solver.implies(expr)
        if verdict.status == "proved":
            return verdict
        facts = self._implicit_facts(expr)
        if not facts:
            return verdict
        cex = verdict.counterexample
        if verdict.status == "refuted" and cex:
            point = {s: cex[s.name] for f in facts for s in f.free_symbols if s.name in cex}
            try:
                kept = all(evaluate(f, point) is True for f in facts)
            except Exception:  # noqa: BLE001 - a fact not evaluable at the point: ask with the facts
                kept = False
            if kept:
                return verdict
        token = self.solver.checkpoint()
        try:
            for fact in facts:
                self.solver.assume(fact)
            return self.solver.implies(expr)
        finally:
            self.solver.rollback(token)

    def _implicit_facts(self, expr: Any) -> list:
        """The implicit facts about the symbols of ``expr``: ``s <= SIZE_MAX`` for each size
        symbol not declared below it, and the dtype range of each value read from data."""
        facts = []
        for sym in sorted(getattr(expr, "free_symbols", ()), key=lambda v: v.name):
            if sym not in self.ranges:
                continue
            facts.extend(self._facts.get(sym, ()))
            hi = self.ranges[sym][1]
            if hi is None or hi > SIZE_MAX:
                facts.append(sympy.Le(sym, SIZE_MAX))
        return facts

    def _upper_bound(self, expr: Any) -> Optional[int]:
        """Largest value of a size expression over the ranges (monotone products/sums of sizes), or None."""
        expr = sympy.sympify(expr)
        if expr.is_Integer:
            return int(expr)
        if not (expr.is_polynomial() and all(c >= 0 for c in expr.as_coefficients_dict().values())):
            return None
        top = {}
        for s in expr.free_symbols:
            hi = self.ranges.get(s, (None, None))[1]
            if hi is None:
                return None
            top[s] = hi
        value = evaluate(expr, top)
        return value if type(value) is int else None

    def is_unbacked(self, sym: sympy.Symbol) -> bool:
        return self.kinds.get(sym) == "unbacked"

    # -- example values -------------------------------------------------------
    def hint(self, expr: Any) -> Any:
        """The value of ``expr`` at the example sizes (int, float or bool)."""
        if isinstance(expr, (int, float, bool)):
            return expr
        cached = self._hint_cache.get(expr)
        if cached is not None:
            return cached
        try:
            out = evaluate(expr, self.hints)
        except UnboundSymbolError as err:
            raise CaptureError(f"internal error: no example value for {set(err.symbols)} in {expr}") from None
        self._hint_cache[expr] = out
        return out

    def canon(self, expr: Any) -> Any:
        """Range-aware canonical form (``Max(dx - 1, 0)`` -> ``dx - 1`` when dx >= 1).

        Towers of floors are folded first (:func:`.symbolic.flat_floors`), and a ``Min``/``Max``
        argument that another one dominates at every size (``Min(t // 2, 2 * (t // 4))`` is
        ``2 * (t // 4)``) is dropped even where the ranges' intervals cannot show it
        (:meth:`_dominated_dropped`): a size built through a chain of slices and poolings
        stays the size of one, not a tree that grows with every layer.
        """
        if not isinstance(expr, sympy.Basic) or expr.is_Atom:
            return expr
        out = _canonicalize(flat_floors(expr), self.ranges)
        if isinstance(out, sympy.Basic) and out.has(sympy.Min, sympy.Max):
            out = self._dominated_dropped(out)
        return out

    def _dominated_dropped(self, expr: Any) -> Any:
        """``expr`` without the ``Min``/``Max`` arguments z3 proves dominated for every size.

        "Every size": each symbol only at least its lower bound (0 or 1, as its sympy
        assumptions say), never the declared ranges or accepted guards, so the form stays
        equal at any range a fix may later choose (the ranges' own dominations are
        ``solver.canonicalize``'s, above).  A query that is not proved keeps the argument.
        """
        def walk(e: Any) -> Any:
            if e.is_Atom or not e.has(sympy.Min, sympy.Max):
                return e
            args = [walk(a) for a in e.args]
            if isinstance(e, (sympy.Min, sympy.Max)):
                kept: list = []
                for a in args:
                    if any(self._always(e.func, k, a) for k in kept):
                        continue
                    kept = [k for k in kept if not self._always(e.func, a, k)]
                    kept.append(a)
                return kept[0] if len(kept) == 1 else e.func(*kept, evaluate=False)
            return e.func(*args) if any(a is not b for a, b in zip(args, e.args)) else e

        return walk(expr)

    def _always(self, kind: Any, a: Any, b: Any) -> bool:
        """Whether ``a`` is the ``kind`` (Min/Max) of ``{a, b}`` for every size (see above)."""
        rel = sympy.Le(a, b) if kind is sympy.Min else sympy.Ge(a, b)
        if rel is sympy.true or rel is sympy.false:
            return rel is sympy.true
        if rel.has(sympy.Piecewise, sympy.Pow) or not rel.free_symbols or not all(
                s.is_integer and s.is_nonnegative for s in rel.free_symbols):
            return False
        known = self._dominance.get(rel)
        if known is None:
            plain = ShapeSolver(timeout_ms=100)
            for sym in rel.free_symbols:
                plain.declare(sym.name, lower=1 if sym.is_positive else 0)
            try:
                known = plain.implies(rel).status == "proved"
            except Exception as err:  # noqa: BLE001 - a construct the solver cannot translate: kept
                if type(err).__name__ != "UnsupportedExpressionError":
                    raise
                known = False
            self._dominance[rel] = known
        return known

    # -- guards ---------------------------------------------------------------
    def guard(self, expr: Any, kind: str, reason: str, source: Optional[SourceLoc] = None,
              op: Optional[str] = None, cause: Optional[str] = None, eager: Any = None,
              note: Optional[str] = None) -> None:
        """Require ``expr`` (a sympy boolean that holds at the hints); see the module docstring.

        ``cause``: why (one of ``records.CAUSES``); None for the one ``kind`` implies.
        ``eager``: the weaker condition eager numpy runs under (``GuardRecord.eager``; or a
        function returning it, called only when a record is made), or None.
        ``note``: said under the guard's bullet when it is reported (``GuardRecord.notes``),
        where its source line does not explain it (a ``"guard"``'s reason is not printed).

        Raises:
            DataDependentError: in export mode, for a guard on a data-dependent size.
            CaptureError: internal error, the requirement is false for the example.
        """
        self.stats["guards"] += 1
        expr = asked = sympy.sympify(expr)
        if expr is sympy.true:
            self.stats["folded"] += 1
            return
        if self.replacements:
            expr = self._substitute(expr)
        expr = self.canon(expr)
        if expr is sympy.true:
            self.stats["folded"] += 1
            return
        if expr is sympy.false or self.hint(expr) is not True:
            failed = self._false_requirement(expr, eager, cause, reason)
            if cause == "index_bounds":  # a plain CaptureError to whoever sees its text; the tracer reads
                # worded from the requirement as asked: its canonical form may be a bare False
                produced = {s.name: f"{op} at {at}" if at is not None else op
                            for s, (op, at) in self.unbacked_source.items() if s in asked.free_symbols}
                err = CaptureError(index_bounds_text(asked, expr is sympy.false, reason,
                                                     self._hint_text(expr), source, produced))
                err.requirement = failed  # (the FalseRequirement, as RequirementFalseAtExample has it)
                raise err
            raise RequirementFalseAtExample(f"internal error: requirement {expr} ({reason}) is false for the "
                                            f"example sizes {self._hint_text(expr)}", requirement=failed)
        if expr in self._seen:
            return
        # seen under the form it arrives in: a float guard is rationalized below, and its next
        # arrival must not reach the solver again
        self._seen[expr] = None
        if expr.has(sympy.Float):
            expr = sympy.nsimplify(expr, rational=True)
        started = time.perf_counter()
        try:
            self.stats["queries"] += 1
            verdict = self.implies(expr)
        except Exception as err:  # an expression the solver cannot translate (s**0.5 > 3)
            if type(err).__name__ != "UnsupportedExpressionError":
                raise
            # a size exponent (2**n) is what z3 cannot translate: pinning its exponent first leaves
            # the other sizes (a trimmed length t // 2**n * 2**n) to be reasoned about
            exponents = {s for p in expr.atoms(sympy.Pow) for s in p.exp.free_symbols if s in self.hints}
            pinned = exponents if exponents and exponents < expr.free_symbols else expr.free_symbols
            for sym in sorted(pinned, key=lambda v: v.name):
                self.guard(sympy.Eq(sym, self.hints[sym]), "specialization",
                           f"{reason}; the solver cannot reason about {expr}", source, op, cause)
            if pinned is not expr.free_symbols:
                self.guard(expr.xreplace({s: sympy.Integer(self.hints[s]) for s in pinned}), kind, reason,
                           source, op, cause, eager, note)
            return
        finally:
            self.stats["solver_seconds"] += time.perf_counter() - started
        if verdict.status == "proved":
            return
        record = GuardRecord(expr, kind, reason, source, op, cause=cause or "")
        if eager is not None:
            eager = sympy.sympify(eager() if callable(eager) else eager)
            record.eager = self._substitute(eager) if self.replacements else eager
        if note:
            record.notes.append(note)
        if verdict.status == "unknown":
            record.notes.append(f"the solver could not decide it: {verdict.reason}")
        syms = expr.free_symbols
        unbacked = [s for s in syms if self.kinds.get(s) == "unbacked"]
        if unbacked:
            record.kind = "data_dependent"
            if cause == "hashed":  # the rendered error says the guard only; say why it was asked
                record.notes.append(reason)
            self.data_dependent.append(record)
            if self.mode == "export":
                raise self._data_dependent_error(record, unbacked)
            self.solver.assume(expr)
            return
        if any(self.kinds.get(s) in _INFERRED for s in syms):
            pinned = self._pinned_dynamic(expr)
            if pinned:  # a Dim.DYNAMIC axis may be refined, never specialized (torch's rule)
                record.pins = pinned
                self.solver.assume(expr)
                self.violations.append(record)
                return
            self.accepted.append(record)
            # replace first: the replaced symbol's range is checked before the solver learns the
            # equality (which would make that range look implied)
            self._maybe_replace(expr, source, op)
            self.solver.assume(expr)
            return
        self.solver.assume(expr)
        self.violations.append(record)

    def _false_requirement(self, expr: Any, eager: Any, cause: Optional[str],
                           reason: str) -> Optional[FalseRequirement]:
        """What a requirement false at the example broke, for the tracer to tell a model that
        catches numpy's error there; None when numpy's own condition (``eager``) has no form
        here: the requirement alone may be stronger than what numpy needs."""
        if eager is None:
            return FalseRequirement(expr, None, cause, reason)
        try:
            eager = sympy.sympify(eager() if callable(eager) else eager)
            eager = self.canon(self._substitute(eager) if self.replacements else eager)
        except Exception:  # noqa: BLE001 - no condition to branch on: the error stays as it is
            return None
        return FalseRequirement(expr, eager, cause, reason)

    def evaluate(self, expr: Any, reason: str, source: Optional[SourceLoc] = None) -> bool:
        """``bool()`` of a symbolic condition in user code: follow the example and guard it."""
        expr = sympy.sympify(expr)
        taken = bool(self.hint(expr))
        if source is None:
            source = user_source(2)
        self.guard(expr if taken else sympy.Not(expr), "guard", reason, source, cause="branch")
        return taken

    def specialize(self, expr: Any, reason: str, source: Optional[SourceLoc] = None,
                   cause: str = "specialization", op: Optional[str] = None) -> Any:
        """Pin ``expr`` to its example value (``int(s)``); records ``Eq(expr, value)``.

        ``cause``: which construct pinned it (``"python_int"``, ``"len"``, ``"iteration"``, or
        ``"specialization"`` for any other); the violation report's hint depends on it.
        ``op``: the op whose argument needed the constant (capture's pins of rule arguments).
        """
        value = self.hint(expr)
        if source is None:
            source = user_source(2)
        e = sympy.sympify(expr)
        if isinstance(value, float) or e.has(sympy.Float):
            # a float of sizes: pin the sizes themselves (the solver reasons over integers)
            for sym in sorted(e.free_symbols, key=lambda v: v.name):
                self.guard(sympy.Eq(sym, self.hints[sym]), "specialization", reason, source, op, cause=cause)
            return value
        self.guard(sympy.Eq(expr, value), "specialization", reason, source, op, cause=cause)
        return value

    # -- trying a rule ------------------------------------------------------------
    def checkpoint(self) -> tuple:
        """A token of the guard log and the solver's assumptions, for :meth:`rollback`.

        Capture takes one before a shape rule that gets a symbolic size argument: if the rule
        fails half-way (it needs a constant there), the guards it emitted before failing are
        forgotten and the rule runs again with that argument pinned (``capture.tracer``).
        """
        return (len(self.violations), len(self.accepted), len(self.data_dependent), len(self._seen),
                self.replacements, self.solver.checkpoint())

    def rollback(self, token: tuple) -> None:
        """Forget the guards recorded since :meth:`checkpoint` gave ``token``.

        Symbols made since then (a data-dependent size of the failed rule) stay, unused.
        """
        n_viol, n_acc, n_dd, n_seen, replacements, solver_token = token
        del self.violations[n_viol:]
        del self.accepted[n_acc:]
        del self.data_dependent[n_dd:]
        for expr in list(self._seen)[n_seen:]:
            del self._seen[expr]
        self.replacements = replacements  # _maybe_replace builds a new dict, never mutates this one
        self.solver.rollback(solver_token)

    # -- helpers --------------------------------------------------------------
    def _pinned_dynamic(self, expr: sympy.Basic) -> dict[str, int]:
        """``{name: example size}`` of the ``Dim.DYNAMIC`` symbols that accepting ``expr`` pins.

        A DYNAMIC axis takes every refinement (a range, a relation, a modulus) as ``Dim.AUTO``
        does, but a guard that leaves it one size (``n == 4``, ``n == m`` with ``m`` static,
        ``n >= 4`` under ``max=4``) is a specialization, which torch reports for
        ``Dim.DYNAMIC`` (pytorch/pytorch#137029).  The symbols asked about are the guard's
        and those replaced by an expression of them (``m := n``); one already reported as
        pinned is not reported again.  The solver decides ``expr -> d == hint`` under what
        is assumed so far; an undecided query is not a pin (the guard is then a contract
        guard, checked at run time).
        """
        syms = expr.free_symbols
        candidates = [s for s in syms if self.kinds.get(s) == "dynamic"]
        candidates += [a for a, e in self.replacements.items()
                       if self.kinds.get(a) == "dynamic" and e.free_symbols & syms]
        if not candidates:
            return {}
        reported = {n for r in self.violations for n in r.pins}
        pinned = {}
        for d in sorted(set(candidates), key=lambda v: v.name):
            if d.name in reported or d not in self.hints:
                continue
            self.stats["queries"] += 1
            if self.solver.implies(sympy.Or(sympy.Not(expr), sympy.Eq(d, self.hints[d]))).status == "proved":
                pinned[d.name] = self.hints[d]
        return pinned

    def _maybe_replace(self, expr: sympy.Basic, source: Optional[SourceLoc] = None,
                       op: Optional[str] = None) -> None:
        """Record ``a := e`` for a linear equality solvable for an AUTO or DYNAMIC symbol ``a``.

        AUTO symbols are replaced first (by name), then DYNAMIC ones, the one made last
        first (``y_dim0 := x_dim0``: the contract keeps the first input's name).
        """
        if not isinstance(expr, sympy.Eq):
            return
        diff = sympy.expand(expr.lhs - expr.rhs)
        free = [s for s in diff.free_symbols if s not in self.replacements]
        order = {s: i for i, s in enumerate(self.ranges)}
        autos = sorted((s for s in free if self.kinds.get(s) == "auto"), key=lambda s: s.name)
        autos += sorted((s for s in free if self.kinds.get(s) == "dynamic"), key=lambda s: -order.get(s, 0))
        for a in autos:
            indep, dep = diff.as_independent(a, as_Add=True)
            coeff = self._coefficient(dep, a)
            if coeff is None or coeff == 0 or coeff.free_symbols:
                continue
            solution = sympy.expand(-indep / coeff)
            if a in solution.free_symbols:
                continue
            if not all(c.is_Integer for c in solution.as_coefficients_dict().values()):
                continue
            self.replacements = {k: v.xreplace({a: solution}) for k, v in self.replacements.items()}
            self.replacements[a] = solution
            lo, hi = self.ranges[a]
            # The replaced symbol's own range must still hold; over named dims alone that is a
            # violation (what remains after constraining the AUTO/DYNAMIC dims), else a contract guard.
            for bound in (sympy.Ge(solution, lo), sympy.Le(solution, hi) if hi is not None else None):
                if bound is not None:
                    self.guard(bound, "shape", f"{a} = {solution} must stay in the range of {a}", source, op,
                               cause="auto_range")
            # so must what was accepted for it before (a table bound a <= 8 is b <= 9 once a := b - 1):
            # over named dims alone, asked again, that is what remains for them
            for rec in [r for r in self.accepted if a in r.expr.free_symbols]:
                again = self._substitute(rec.expr)
                if again.free_symbols and not any(self.kinds.get(s) in _INFERRED for s in again.free_symbols):
                    self.guard(again, rec.kind, f"{rec.reason}; with {a} = {solution}" if rec.reason else
                               f"{a} = {solution}", rec.source, rec.op, cause=rec.cause)
            return

    def _substitute(self, expr: sympy.Basic) -> sympy.Basic:
        """``expr.xreplace(self.replacements)``, without sympy's equality test on a rebuilt ``Eq``.

        Rebuilding ``Eq(s0, floor(s2/3 + 2/3))`` as ``Eq(floor(s1/2 + 1/2), floor(s2/3 + 2/3))``
        makes sympy try to decide it (``floor``'s ``_eval_is_eq`` rewrites both sides; tens of
        ms each, issue 13); ``ops.ctx.size_equality`` decides it only when the sides differ by
        a number and leaves any other to the canonicalization and the solver.
        """
        if not isinstance(expr, (sympy.Eq, sympy.Ne)):
            return expr.xreplace(self.replacements)
        lhs, rhs = expr.lhs.xreplace(self.replacements), expr.rhs.xreplace(self.replacements)
        if lhs is expr.lhs and rhs is expr.rhs:
            return expr
        return size_equality(lhs, rhs, type(expr))

    def _coefficient(self, dep: sympy.Expr, a: sympy.Symbol) -> Optional[sympy.Expr]:
        """``simplify(dep / a)`` (0 for ``dep == 0``), or None where that is not a constant.

        ``dep``: the terms of an expanded difference that involve ``a``.  The common cases
        are decided without ``simplify`` (whose cost dominated exports with many AUTO
        relations, issue 13), with the same answer:

        - every term is ``number * a``: the coefficient is their sum (what simplify returns);
        - ``a`` also occurs inside a function (``floor(a/2 + 1/2)``): ``dep / a`` can only be a
          constant ``k`` if ``dep == k*a`` at every ``a`` of its range, so sample values of
          ``a`` in its range whose quotients ``dep/a`` differ prove it is not one (None: the
          caller skips ``a``, as it did for simplify's non-constant result); quotients all
          0 mean 0 or no constant, skipped alike.  Otherwise simplify decides.
        """
        if dep == 0:
            return sympy.Integer(0)
        coeff = sympy.Integer(0)
        for term in sympy.Add.make_args(dep):
            number, rest = term.as_coeff_Mul()
            if rest != a:
                break
            coeff += number
        else:
            return coeff
        lo, hi = self.ranges.get(a, (1, None))
        first = max(int(lo), 1)
        samples = [v for v in (first, first + 1, first + 2, first + 3, first + 97) if hi is None or v <= hi]
        quotients = set()
        for value in samples:
            try:
                at = dep.xreplace({a: sympy.Integer(value)})
            except ZeroDivisionError:  # a Mod or floor by a size that is 0 there: not this sample
                continue
            if not at.is_Rational:  # other symbols left, or no number: simplify decides
                quotients = set()
                break
            quotients.add(at / value)
        if len(quotients) > 1 or quotients == {0}:
            # not a constant, or (if any) the constant 0: the caller skips ``a`` either way
            return None
        return sympy.simplify(dep / a)

    def _hint_text(self, expr: Any) -> str:
        syms = sorted(getattr(expr, "free_symbols", ()), key=lambda s: s.name)
        return ", ".join(f"{s} = {self.hints.get(s)}" for s in syms)

    def _data_dependent_error(self, record: GuardRecord, unbacked: list) -> Exception:
        sym = sorted(unbacked, key=lambda s: s.name)[0]
        op, produced = self.unbacked_source.get(sym, ("?", None))
        return data_dependent_error(record, symbol=sym, op=op, produced_at=produced, hint=self.hints.get(sym),
                                    lower=0, upper=self.ranges[sym][1])
