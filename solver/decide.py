"""ShapeSolver: decide size guards under declared ranges and assumptions.

Every query has three outcomes (``Verdict.status``): ``"proved"``,
``"refuted"`` (with a counterexample inside the declared ranges and the
assumptions) or ``"unknown"`` (z3 timed out or gave up; never treated as proved).

Implicit facts, written down once: every size symbol is an integer; a declared
symbol lies in its inclusive range ``[lower, upper]`` (``upper=None`` =
unbounded; the default ``lower=1`` is the fact "sizes are >= 1"); a symbol that
appears in a query without being declared gets the range its sympy assumptions
give (``positive`` -> ">= 1", ``nonnegative`` -> ">= 0", else unbounded).

Cheap cases never reach z3: the guard is canonicalized under the ranges (which
decides tautologies like ``Eq(Min(128*s, 512*s), 128*s)``), interval arithmetic
decides bounds, and results are cached on (query kind, canonical expression,
assumption state). Counters are in ``solver.stats``.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Optional

import sympy
import z3

from .budget import active_budget
from .canon import canonicalize
from .evaluation import evaluate  # the one size evaluator (re-exported here for solver.fixes)
from .floats import decide_box as _float_box, has_float_ops
from .forms import linear_bound, min_max_parts
from .intervals import INF, symbol_range
from .intervals import bounds as interval_bounds
from .numeric import holds, value as _exact_value
from .products import abstract_products
from .translate import Translator, check_supported

PROVED, REFUTED, UNKNOWN = "proved", "refuted", "unknown"


# z3 ran out of time: a query over at most this many points of bounded ranges is decided by
# evaluating each point exactly (about 50 us a point, so well under a second)
MAX_ENUMERATED_POINTS = 8192


@dataclass(frozen=True)
class Verdict:
    """Answer to one solver query.

    Attributes:
        status: ``"proved"``, ``"refuted"`` or ``"unknown"``.
        counterexample: for a refuted ``implies``, sizes ``{name: int}`` inside the
            ranges and assumptions where the guard is false; for a proved
            ``satisfiable``, a witness. ``None`` otherwise.
        reason: one line saying why.
        via: what decided it: ``"cache"``, ``"intervals"`` (canonical form and
            interval arithmetic), ``"floats"`` (a guard with float operations on sizes, in
            Python's float arithmetic: :mod:`.floats`), ``"z3"``, ``"enumeration"`` (z3 ran out of time and
            the ranges were small enough to evaluate every point exactly), or ``"budget"`` (undecided: the
            :mod:`.budget` of the work asking was spent).
    """

    status: str
    counterexample: Optional[dict] = None
    reason: str = ""
    via: str = ""

    @property
    def proved(self) -> bool:
        return self.status == PROVED

    @property
    def refuted(self) -> bool:
        return self.status == REFUTED

    @property
    def unknown(self) -> bool:
        return self.status == UNKNOWN

    def __bool__(self) -> bool:
        # a verdict is three-valued; truth-testing it would hide "unknown" (STYLE E2/E3)
        raise TypeError("Verdict has three outcomes; test .status, .proved or .refuted")


def make_symbol(name: str, lower: Optional[int] = 1) -> sympy.Symbol:
    """A size symbol with assumptions that agree exactly with ``lower``.

    ``positive=True`` for lower >= 1, ``nonnegative=True`` for lower >= 0, only
    ``integer=True`` otherwise; never an assumption set to False (that would
    assert the opposite, e.g. ``positive=False`` + ``nonnegative`` means == 0).
    """
    if lower is not None and lower >= 1:
        return sympy.Symbol(name, integer=True, positive=True)
    if lower is not None and lower >= 0:
        return sympy.Symbol(name, integer=True, nonnegative=True)
    return sympy.Symbol(name, integer=True)


def _fmt_range(name: str, lo, hi) -> str:
    hi_s = "oo" if hi is None or hi == INF else str(hi)
    return f"{name} in [{lo}, {hi_s}]"


def negated_mods_as_floors(expr):
    """``expr`` with each ``Mod(-x, k)`` (sympy prints ``Mod(3*x, 4)``) as ``k*floor((x + k - 1)/k) - x``.

    Padding a size up to a multiple (``h + (-h) % ws``, a Swin window, a ViT patch) puts
    ``(-h) % ws`` in products; z3 treats each remainder as a fresh variable and the
    products as nonlinear arithmetic it may not settle in time, while the remainder is
    exactly the distance to the next multiple, ``ws*ceil(h/ws) - h``, after which sympy
    alone sees ``ws**2*ceil(h/ws)*ceil(w/ws) == (h + (-h) % ws)*(w + (-w) % ws)`` cancel.
    Equivalent for every integer ``x`` and ``k >= 1``; ``expr`` itself when nothing matches.
    """
    rep = {}
    for m in expr.atoms(sympy.Mod):
        arg, k = m.args
        if k.is_Integer and k > 1:
            coeff, rest = arg.as_coeff_Mul()
            if coeff.is_Integer and coeff % k == k - 1 and rest.is_integer:
                rep[m] = k * sympy.floor((rest + k - 1) / k) - rest
    if not rep:
        return expr
    out = expr.xreplace(rep)
    # each relation as one expanded side against 0, so terms the rewrite made opposite cancel
    return out.xreplace({r: r.func(sympy.expand(r.lhs - r.rhs), 0) for r in out.atoms(sympy.core.relational.Relational)})


MAX_RESIDUE_CLASSES = 16  # residue classes an undecided guard is split into (ShapeSolver._by_residues)


def _divisor_lcm(expr, sym) -> int:
    """The least common multiple of the integer divisors (``floor(u/k)``, ``ceiling(u/k)``,
    ``Mod(u, k)``) whose argument contains ``sym``; 1 when there is none."""
    out = 1
    for node in sympy.preorder_traversal(expr):
        k = None
        if isinstance(node, sympy.Mod) and sym in node.args[0].free_symbols:
            k = node.args[1]
        elif isinstance(node, (sympy.floor, sympy.ceiling)) and sym in node.args[0].free_symbols:
            k = sympy.fraction(sympy.together(node.args[0]))[1]
        if k is not None:
            if not k.is_Integer or int(k) < 1:
                return 1  # a divisor that is a size: no finite set of classes
            out = out * int(k) // math.gcd(out, int(k))
    return out


class ShapeSolver:
    """Holds size symbols, their ranges and assumptions; answers guard queries.

    Args:
        timeout_ms: z3 time limit per query, in milliseconds. A query that runs
            out of time is ``"unknown"``.
        cache: optional dict to share cached verdicts between solvers (keys
            include the full assumption state, so sharing is sound).

    Example:
        >>> s = ShapeSolver()
        >>> seq = s.declare("seq", upper=1024)
        >>> s.implies(seq <= 512).status
        'refuted'
    """

    def __init__(self, timeout_ms: int = 200, *, cache: Optional[dict] = None) -> None:
        self.timeout_ms = int(timeout_ms)
        self._symbols: dict[str, sympy.Symbol] = {}
        self._declared: dict[str, tuple] = {}    # name -> (lo, hi|None) as declared
        self._implicit: set[str] = set()          # names declared implicitly by use
        self._bounds: dict[str, tuple] = {}       # name -> (lo, hi|None), tightened by assumptions
        self._assumptions: list = []              # as given (canonicalized), for reasons
        self._residual: list = []                 # assumptions not captured by _bounds
        self._cache: dict = {} if cache is None else cache
        self._state = _StateKey(())
        self._satisfiable_state: Optional[Verdict] = None
        self._tr = Translator()
        self._examples: dict[str, int] = {}       # name -> example size (declare(example=...))
        self._split_depth = 0                     # 1 inside a residue class of _by_residues
        self.stats = {"queries": 0, "cache_hits": 0, "decided_without_z3": 0,
                      "reached_z3": 0, "z3_calls": 0, "unknown": 0}
        self._update_state()

    # -- declarations and assumptions ---------------------------------------------
    def declare(self, name: str, lower: Optional[int] = 1, upper: Optional[int] = None,
                example: Optional[int] = None) -> sympy.Symbol:
        """Declare an integer size ``name`` in ``[lower, upper]`` (``upper=None``: unbounded).

        ``example``: a size the caller knows (capture's example input), usually one where
        every assumption holds; refutations then try points next to the examples before
        z3 (:meth:`_example_probe`).  A hint only: every point is checked.

        Returns:
            ``sympy.Symbol(name, integer=True, positive=True)`` for lower >= 1
            (``nonnegative=True`` for lower 0).

        Raises:
            ValueError: lower > upper, or ``name`` already declared with another range.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"declare: a size name must be a non-empty string, got {name!r}")
        if upper is not None and upper == INF:
            upper = None
        lower = None if lower is None or lower == -INF else int(lower)
        upper = None if upper is None else int(upper)
        if lower is not None and upper is not None and lower > upper:
            raise ValueError(f"declare: empty range for '{name}': lower={lower} > upper={upper}")
        old = self._declared.get(name)
        if old is not None and name not in self._implicit:
            if old != (lower, upper):
                raise ValueError(f"declare: '{name}' already declared as {_fmt_range(name, *old)}; "
                                 f"cannot redeclare as {_fmt_range(name, lower, upper)}")
            return self._symbols[name]
        self._implicit.discard(name)
        if example is not None:
            self._examples[name] = int(example)
        sym = make_symbol(name, lower)
        self._symbols[name] = sym
        self._declared[name] = (lower, upper)
        self._bounds[name] = (lower, upper)
        self._update_state()
        return sym

    def symbol(self, name: str) -> sympy.Symbol:
        """The declared symbol called ``name`` (KeyError if none)."""
        return self._symbols[name]

    @property
    def ranges(self) -> dict:
        """``{name: (lo, hi_or_None)}`` as currently known (declared ranges tightened by assumptions)."""
        return dict(self._bounds)

    @property
    def assumptions(self) -> list:
        return list(self._assumptions)

    def assume(self, expr) -> None:
        """Add an assumption (relation or And/Or/Not of relations) over size symbols.

        Simple bounds (``s <= 512``, ``Eq(b, 4)``) tighten the symbol's range and
        feed the interval fast path; the rest goes to z3 with every query.

        Raises:
            UnsupportedExpressionError: the expression cannot be translated.
        """
        e = sympy.sympify(expr)
        self._declare_free(e)
        self._tr(e)  # fail early on unsupported constructs
        c = canonicalize(e, self._bounds)
        self._assumptions.append(c if c not in (sympy.true,) else e)
        for part in (p for conj in sympy.And.make_args(c) for p in min_max_parts(conj)):
            if part is sympy.true:
                continue
            if not self._absorb_bound(part):
                self._residual.append(part)
        self._update_state()

    def checkpoint(self) -> tuple:
        """A token of the current assumptions, for :meth:`rollback` (declarations are kept).

        A caller that tries something which may fail half-way (a shape rule run with a
        symbolic argument it may not take) takes one first and rolls back on failure, so
        the assumptions of the failed try do not stay.
        """
        return (len(self._assumptions), len(self._residual), dict(self._bounds))

    def rollback(self, token: tuple) -> None:
        """Forget every assumption made since :meth:`checkpoint` gave ``token``.

        Symbols declared since then stay declared (with their declared range).
        """
        n_assumed, n_residual, bounds = token
        del self._assumptions[n_assumed:]
        del self._residual[n_residual:]
        for name, declared in self._declared.items():
            self._bounds[name] = bounds.get(name, declared)
        self._update_state()

    def _absorb_bound(self, rel) -> bool:
        """Tighten ``_bounds`` from a bound on one declared symbol (``s <= 512``, ``2*s >= 4``); True if captured."""
        bound = linear_bound(rel)
        if bound is None or bound[0].name not in self._bounds:
            return False
        sym, blo, bhi = bound
        lo, hi = self._bounds[sym.name]
        if blo is not None:
            lo = _max_lo(lo, blo)
        if bhi is not None:
            hi = _min_hi(hi, bhi)
        self._bounds[sym.name] = (lo, hi)
        return True

    def _declare_free(self, e) -> None:
        for sym in getattr(e, "free_symbols", ()):
            if sym.name not in self._declared:
                lo, _ = symbol_range(sym, {})
                lo = None if lo == -INF else lo
                self._declared[sym.name] = (lo, None)
                self._bounds[sym.name] = (lo, None)
                self._symbols[sym.name] = sym
                self._implicit.add(sym.name)
                self._update_state()

    def _update_state(self) -> None:
        self._state = _StateKey((tuple(sorted(self._bounds.items(), key=lambda kv: kv[0])),
                                 tuple(self._residual)))
        self._satisfiable_state = None

    def _empty_bounds(self) -> list:
        return [n for n, (lo, hi) in self._bounds.items()
                if lo is not None and hi is not None and lo > hi]

    # -- queries ----------------------------------------------------------------
    def implies(self, guard) -> Verdict:
        """Does every size assignment allowed by the ranges and assumptions satisfy ``guard``?

        Returns:
            ``Verdict``: proved; refuted with ``counterexample`` (a ``{name: int}``
            inside ranges and assumptions where ``guard`` is false); or unknown.

        Raises:
            UnsupportedExpressionError: a construct the translator does not support.
        """
        return self._query("implies", guard)

    def satisfiable(self, expr) -> Verdict:
        """Do some sizes satisfy ``expr`` together with the ranges and assumptions?

        ``"proved"`` = satisfiable, with a witness in ``counterexample``;
        ``"refuted"`` = contradictory, and ``reason`` names the facts involved,
        including implicit ones ("sizes are >= 1", "sizes are integers").
        """
        return self._query("satisfiable", expr)

    def is_true(self, guard) -> Optional[bool]:
        """sympy-style three-valued answer: True (proved), False (refuted), None (unknown)."""
        v = self.implies(guard)
        return True if v.proved else (False if v.refuted else None)

    def clear_cache(self) -> None:
        """Forget cached verdicts (the next queries are "cold")."""
        self._cache.clear()

    def _query(self, kind: str, expr) -> Verdict:
        self.stats["queries"] += 1
        e = expr if isinstance(expr, sympy.Basic) else sympy.sympify(expr)
        # a hit under the current state implies e's symbols were declared when it was stored
        hit = self._cache.get((kind, e, self._state))
        if hit is None:
            if not isinstance(e, (sympy.logic.boolalg.Boolean, sympy.core.relational.Relational)):
                raise TypeError(f"{kind}: expected a relation or boolean, got {e!r}")
            self._declare_free(e)
            check_supported(e)
            hit = self._cache.get((kind, e, self._state))
        key = (kind, e, self._state)
        if hit is not None:
            self.stats["cache_hits"] += 1
            self.stats["decided_without_z3"] += 1
            return Verdict(hit.status, hit.counterexample, hit.reason, "cache")
        budget = active_budget()
        if budget is not None and budget.spent:  # not cached: under another budget it may be decided
            budget.refused += 1
            self.stats["unknown"] += 1
            return Verdict(UNKNOWN, None, budget.reason, "budget")
        c = canonicalize(e, self._bounds)
        key2 = (kind, c, self._state)
        hit = self._cache.get(key2)
        if hit is not None:
            self.stats["cache_hits"] += 1
            self.stats["decided_without_z3"] += 1
            self._cache[key] = hit
            return Verdict(hit.status, hit.counterexample, hit.reason, "cache")
        before = self.stats["z3_calls"]
        v = self._decide(kind, e, c)
        if v.unknown:
            r = negated_mods_as_floors(e)
            if r is not e:
                again = self._decide(kind, r, canonicalize(r, self._bounds))
                if not again.unknown:
                    v = Verdict(again.status, again.counterexample,
                                f"{again.reason} (with each (-x) % k written as k*ceil(x/k) - x)", again.via)
        if v.unknown and kind == "implies" and self._split_depth == 0:
            split = self._by_residues(c)
            if split is not None:
                v = split
        if self.stats["z3_calls"] > before:
            self.stats["reached_z3"] += 1
        else:
            self.stats["decided_without_z3"] += 1
        if v.unknown:
            self.stats["unknown"] += 1
            if budget is not None and budget.spent:  # cut short by the budget, not by the query's timeout
                budget.refused += 1
                return Verdict(UNKNOWN, None, budget.reason, "budget")
        self._cache[key] = v
        self._cache[key2] = v
        return v

    def _decide(self, kind: str, e, c) -> Verdict:
        empty = self._empty_bounds()
        if empty:
            reason = self._contradiction_reason(None)
            if kind == "satisfiable":
                return Verdict(REFUTED, None, reason, "intervals")
            return Verdict(PROVED, None, f"vacuously true: {reason}", "intervals")
        if kind == "implies":
            if c is sympy.true:
                return Verdict(PROVED, None, "holds over the declared ranges (interval arithmetic)", "intervals")
            if c is sympy.false and not self._residual:
                cex = self._corner(e.free_symbols)
                return Verdict(REFUTED, cex, f"fails for every size in the ranges, e.g. {_fmt_cex(cex)}",
                               "intervals")
            cex = self._probe(c)
            if cex is not None:
                return Verdict(REFUTED, cex, f"fails at {_fmt_cex(cex)} (at an end of the ranges)", "intervals")
            cex = self._example_probe(c)
            if cex is not None:
                return Verdict(REFUTED, cex, f"fails at {_fmt_cex(cex)} (the example sizes with one moved)",
                               "intervals")
            if self._holds_with_remainders_bounded(c):
                return Verdict(PROVED, None, "holds with each remainder Mod(x, y) anywhere in [0, y - 1]",
                               "intervals")
            if has_float_ops(c):
                v = self._float_verdict(kind, c)
                if v is not None:
                    return v
            return self._z3_implies(e, c)
        # satisfiable
        if c is sympy.false:
            return Verdict(REFUTED, None, self._contradiction_reason(e), "intervals")
        if c is sympy.true and not self._residual:
            cex = self._corner(e.free_symbols)
            return Verdict(PROVED, cex, "every size in the ranges satisfies it", "intervals")
        if has_float_ops(c):
            v = self._float_verdict(kind, c)
            if v is not None:
                return v
        return self._z3_satisfiable(e, c)

    def _by_residues(self, c) -> Optional[Verdict]:
        """The verdict z3 ran out of time on, decided one residue class of a size at a time.

        A guard over remainders and floors by constants (``2*((a*(a + 1)) // 2) == a*(a + 1)``,
        ``(a**3 - a) % 6 == 0``) is often beyond z3's nonlinear arithmetic as written, while on
        each class ``a = P*t + r`` of the least common multiple ``P`` of the divisors ``a`` passes
        through, sympy reduces the remainders and floors to polynomials in ``t`` (or constants).
        Proved on every class is proved over the whole range; refuted on one class is refuted,
        its counterexample mapped back.  Without this, a true guard would be reported as a
        violation and a fix would keep only the example's class, refusing sizes the model
        handles.  One size is split (the one with the least ``P``, at most ``MAX_RESIDUE_CLASSES``
        classes), and a class is not split again; None when no split decides it.
        """
        candidates = []
        for sym in c.free_symbols:
            if sym.name not in self._bounds:
                continue
            period = _divisor_lcm(c, sym)
            if 1 < period <= MAX_RESIDUE_CLASSES:
                candidates.append((period, sym.name, sym))
        for period, name, sym in sorted(candidates, key=lambda x: x[:2]):
            got = self._decide_classes(c, name, sym, period)
            if got is not None:
                return got
        return None

    def _decide_classes(self, c, name: str, sym, period: int) -> Optional[Verdict]:
        lo, hi = self._bounds[name]
        fresh = f"_{name}_class"
        while fresh in self._bounds:
            fresh = "_" + fresh
        undecided = False
        for r in range(period):
            tlo = None if lo is None else -((r - lo) // period)   # ceil((lo - r) / period)
            thi = None if hi is None else (hi - r) // period
            if tlo is not None and thi is not None and tlo > thi:
                continue  # no size of the range in this class
            sub = ShapeSolver(self.timeout_ms, cache=self._cache)
            sub._split_depth = self._split_depth + 1
            for n, (nlo, nhi) in self._bounds.items():
                if n != name:
                    sub.declare(n, nlo, nhi)
            t = sub.declare(fresh, tlo, thi)
            value = period * t + r
            for a in self._residual:
                sub.assume(sympy.expand(a.xreplace({self._symbols.get(name, sym): value, sym: value})))
            v = sub.implies(sympy.expand(c.xreplace({sym: value})))
            if v.refuted:
                cex = dict(v.counterexample or {})
                if fresh in cex:
                    cex[name] = period * cex.pop(fresh) + r
                if name in cex:
                    return Verdict(REFUTED, cex, f"fails at {_fmt_cex(cex)} (decided on the sizes {name} = "
                                                 f"{period}*t + {r})", v.via)
                undecided = True
            elif not v.proved:
                undecided = True
            if undecided:
                return None
        return Verdict(PROVED, None, f"holds on each of the {period} residue classes of {name} mod {period} "
                                     "(decided one class at a time)", "residues")

    def _float_verdict(self, kind: str, c) -> Optional[Verdict]:
        """A guard with float operations on sizes (:mod:`.floats`), decided in Python's float
        arithmetic: over the box by monotonicity (corners, or bisection for one size), else by
        evaluating every point of a bounded box; None leaves it to z3's floating-point theory.
        Assumptions not connected to ``c`` matter only when they contradict each other."""
        names, assumptions = self._component(c.free_symbols)
        implies = kind == "implies"
        got = _float_box(kind, c, names, self._bounds, assumptions, _exact_value)
        if got is not None and not (implies and got[0]) and len(assumptions) < len(self._residual):
            # a point found over the connected part is real only if the other assumptions can hold
            state = self._assumptions_satisfiable()
            if state.refuted:
                if implies:
                    return Verdict(PROVED, None, f"vacuously true: {state.reason}", "floats")
                return Verdict(REFUTED, None, state.reason, "floats")
            if state.unknown:
                return None
        if got is not None:
            ok, point = got
            if implies:
                if ok:
                    return Verdict(PROVED, None, "holds over the ranges in Python's float arithmetic (each "
                                                 "operation is monotone: checked at the ends)", "floats")
                return Verdict(REFUTED, point, f"fails at {_fmt_cex(point)} (evaluated in Python's float "
                                               "arithmetic)", "floats")
            if ok:
                return Verdict(PROVED, point, f"satisfiable, e.g. {_fmt_cex(point)} (in Python's float "
                                              "arithmetic)", "floats")
            return Verdict(REFUTED, None, "no size in the ranges satisfies it in Python's float arithmetic",
                           "floats")
        if len(assumptions) < len(self._residual) and self._assumptions_satisfiable().status != PROVED:
            return None  # unconnected assumptions may be contradictory: z3 answers for all of them
        return self._enumerated(c, names, assumptions, implies)

    def _holds_with_remainders_bounded(self, c) -> bool:
        """Whether an inequality holds for any value of its remainders ``Mod(x, y)`` in ``[0, y - 1]``.

        A ring buffer's write index ``u0 % W`` must be ``< W``: true for every ``W >= 1``, but
        with a symbolic divisor z3 sees nonlinear division and may not answer within its time
        limit (the verdict would then depend on the machine's load).  Each ``c*Mod(x, y)`` term
        whose divisor is a size (lower bound >= 1) is replaced by the end of ``[0, y - 1]`` that
        makes the inequality hardest; if it still holds (canonicalization over the ranges decides
        the relaxed form), so does ``c``.  False when no term is relaxed or it cannot tell.
        """
        if not isinstance(c, (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)) or not c.atoms(sympy.Mod):
            return False
        # d <= 0 (or < 0) is wanted, so each term takes its largest value
        d = c.lhs - c.rhs if isinstance(c, (sympy.Le, sympy.Lt)) else c.rhs - c.lhs
        relaxed, changed = [], False
        for term in sympy.Add.make_args(sympy.expand(d)):
            coeff, rest = term.as_coeff_Mul()
            if isinstance(rest, sympy.Mod) and coeff.is_Rational and rest.args[0].is_integer \
                    and rest.args[1].is_integer:  # Mod(1, 3/2) is 1: [0, y - 1] holds for integers only
                y = rest.args[1]
                low = interval_bounds(y, self._bounds)[0]
                if low is not None and low >= 1:
                    relaxed.append(coeff * (y - 1) if coeff > 0 else sympy.Integer(0))
                    changed = True
                    continue
            relaxed.append(term)
        if not changed:
            return False
        strict = isinstance(c, (sympy.Lt, sympy.Gt))
        bound = sympy.Add(*relaxed)
        return canonicalize(sympy.Lt(bound, 0) if strict else sympy.Le(bound, 0), self._bounds) is sympy.true

    def _probe(self, c) -> Optional[dict]:
        """A point of the ranges where ``c`` is false and the assumptions hold, if one is cheap to find.

        Refuted guards are common (that is what a violation is); most fail at an
        end of a range (``s <= 512`` at s=1024, ``Mod(s, 4) == 0`` at s=1), and
        evaluating a few points costs far less than a z3 call. The corners come
        first, then the points one step inside them (``(h//2)*(w//2) == 4*(h//4)*(w//4)``
        holds at every corner of [1, 256]^2 and fails at h = w = 2). Points are
        evaluated exactly at plain integers (``numeric``), in a fixed order, so the
        counterexample does not depend on z3's state.
        """
        names, assumptions = self._component(c.free_symbols)
        if not names or len(names) > 3:
            return None
        corners, inner = [], []
        for n in names:
            lo, hi = self._bounds[n]
            vals = [v for v in (lo, hi) if v is not None]
            if not vals:
                return None
            corners.append(sorted(set(vals)))
            steps = [v for v in ((lo + 1) if lo is not None else None, (hi - 1) if hi is not None else None)
                     if v is not None and (lo is None or v >= lo) and (hi is None or v <= hi)]
            inner.append(sorted(set(vals + steps)))
        seen = set()
        for grid in (corners, inner):
            for point in itertools.product(*grid):
                if point in seen:
                    continue
                seen.add(point)
                assignment = dict(zip(names, point))
                if holds(c, assignment) is False and all(holds(a, assignment) is True for a in assumptions):
                    return assignment
        return None

    def _example_probe(self, c) -> Optional[dict]:
        """A refuting point next to the example sizes, checked exactly, if one is cheap to find.

        Capture asks about a new relation over a size the assumptions have not met yet
        (``Eq(floor(s1/2 + 1/2), floor(s9/3 + 2/3))`` with s1 in a chain of 20 assumed
        equalities): the corners of the ranges break the assumptions, z3 would rebuild
        the whole chain, but the example sizes satisfy it and moving the new size alone
        refutes the guard.  Tried: the example point with one symbol of ``c`` at an end
        of its range, one step inside, or one step from its example.  Every point is
        checked against the bounds and every connected assumption, so a wrong or missing
        example only costs the probe (None: z3 decides).
        """
        names, assumptions = self._component(c.free_symbols)
        if not names or any(n not in self._examples for n in names):
            return None
        base = {n: self._examples[n] for n in names}
        if not all(self._inside(n, v) for n, v in base.items()):
            return None
        for sym in sorted(c.free_symbols, key=lambda v: v.name):
            n, x = sym.name, base[sym.name]
            lo, hi = self._bounds[n]
            tries = [lo, None if lo is None else lo + 1, x - 1, x + 1, None if hi is None else hi - 1, hi,
                     2 * x + 1 if hi is None else None]
            for v in dict.fromkeys(t for t in tries if t is not None and t != x and self._inside(n, t)):
                point = {**base, n: v}
                if holds(c, point) is False and all(holds(a, point) is True for a in assumptions):
                    return point
        return None

    def _inside(self, name: str, v: int) -> bool:
        lo, hi = self._bounds[name]
        return (lo is None or v >= lo) and (hi is None or v <= hi)

    def _corner(self, syms) -> dict:
        """An assignment inside the bounds (lowest values) for ``syms``."""
        out = {}
        for s in sorted(syms, key=lambda s: s.name):
            lo, hi = self._bounds[s.name]
            out[s.name] = lo if lo is not None else (hi if hi is not None and hi < 0 else 0)
        return out

    # -- z3 -----------------------------------------------------------------------
    def _component(self, syms) -> tuple[list, list]:
        """Names and residual assumptions connected to ``syms`` (others cannot matter)."""
        names = {s.name for s in syms}
        chosen: list = []
        rest = list(self._residual)
        grew = True
        while grew:
            grew = False
            for a in list(rest):
                an = {s.name for s in a.free_symbols}
                if an & names or not an:
                    names |= an
                    chosen.append(a)
                    rest.remove(a)
                    grew = True
        return sorted(names), chosen

    def _new_solver(self, names, assumptions, track: bool = False):
        s = z3.Solver()
        s.set("timeout", self.timeout_ms)
        labels = {}
        for n in names:
            v = self._tr.var(n)
            lo, hi = self._bounds[n]
            facts = []
            if lo is not None:
                facts.append((v >= lo, self._lower_label(n, lo)))
            if hi is not None:
                facts.append((v <= hi, f"{n} <= {hi}"))
            for f, label in facts:
                if track:
                    b = z3.Bool(f"__fact{len(labels)}")
                    labels[str(b)] = label
                    s.assert_and_track(f, b)
                else:
                    s.add(f)
        for i, a in enumerate(assumptions):
            if track:
                b = z3.Bool(f"__fact{len(labels)}")
                labels[str(b)] = f"assumed {a}"
                s.assert_and_track(self._tr(a), b)
            else:
                s.add(self._tr(a))
        return s, labels

    def _lower_label(self, n: str, lo: int) -> str:
        if lo in (0, 1) and lo == self._declared[n][0]:
            # the default lower bound is a fact the user never wrote down: name it
            return f"sizes are >= {lo} ({n} >= {lo}, implicit)"
        return f"{n} >= {lo}"

    def _check(self, s) -> z3.CheckSatResult:
        self.stats["z3_calls"] += 1
        budget = active_budget()
        if budget is not None:  # z3 gets what is left of the budget when that is less than its timeout
            s.set("timeout", max(1, min(self.timeout_ms, budget.remaining_ms())))
        return s.check()

    def _model(self, s, names) -> dict:
        m = s.model()
        return {n: m.eval(self._tr.var(n), model_completion=True).as_long() for n in names}

    def _z3_implies(self, e, c) -> Verdict:
        names, assumptions = self._component(c.free_symbols | e.free_symbols)
        s, _ = self._new_solver(names, assumptions)
        s.add(z3.Not(self._tr(c)))
        r = self._check(s)
        if r == z3.sat:
            if len(assumptions) < len(self._residual) and self._assumptions_satisfiable().refuted:
                # unconnected assumptions are contradictory: the model above is no real witness
                return Verdict(PROVED, None, f"vacuously true: {self._satisfiable_state.reason}", "z3")
            cex = self._model(s, names)
            if not self._confirmed(c, assumptions, cex, False):
                return Verdict(UNKNOWN, None, f"z3's model {_fmt_cex(cex)} is no counterexample in Python's floats",
                               "z3")
            return Verdict(REFUTED, cex, f"fails at {_fmt_cex(cex)}", "z3")
        if r == z3.unknown:
            counted = self._enumerated(c, names, assumptions, True)
            if counted is not None:
                return counted
            linear = self._implied_linearized(c, names, assumptions)
            if linear is not None:
                return linear
            return Verdict(UNKNOWN, None, f"z3 could not decide within {self.timeout_ms} ms: {s.reason_unknown()}",
                           "z3")
        if self._residual:
            state = self._assumptions_satisfiable()
            if state.refuted:
                return Verdict(PROVED, None, f"vacuously true: {state.reason}", "z3")
        return Verdict(PROVED, None, "z3 found no counterexample in the ranges and assumptions", "z3")

    def _implied_linearized(self, c, names, assumptions) -> Optional[Verdict]:
        """PROVED when ``c`` follows from the assumptions with each product of sizes taken as a
        size of its own (:mod:`.products`: a linear over-approximation, so only a proof counts),
        else None."""
        ab = abstract_products([c, *assumptions], {n: self._bounds[n] for n in names})
        if ab is None:
            return None
        s, _ = self._new_solver(names, [])
        for sym, (lo, hi) in ab.bounds.items():
            v = self._tr.var(sym.name)
            s.add(v >= lo)
            if hi is not None:
                s.add(v <= hi)
        for fact in ab.envelopes + ab.exprs[1:]:
            s.add(self._tr(fact))
        s.add(z3.Not(self._tr(ab.exprs[0])))
        if self._check(s) != z3.unsat:
            return None
        terms = ", ".join(str(m) for m in ab.products.values())
        return Verdict(PROVED, None, f"holds with each product of sizes ({terms}) taken as a size of its own", "z3")

    @staticmethod
    def _confirmed(c, assumptions: list, point: dict, want: bool) -> bool:
        """Whether z3's model ``point`` is what it claims (``c`` is ``want`` there, the assumptions
        hold), evaluated exactly; only checked for float operations on sizes, whose ``**`` z3
        does not know (an uninterpreted function) and whose other operations it rounds itself."""
        if not has_float_ops(c) and not any(has_float_ops(a) for a in assumptions):
            return True
        return holds(c, point) is want and all(holds(a, point) is True for a in assumptions)

    def _assumptions_satisfiable(self) -> Verdict:
        if self._satisfiable_state is None:
            names = sorted(self._bounds)
            s, _ = self._new_solver(names, self._residual)
            r = self._check(s)
            if r == z3.unsat:
                self._satisfiable_state = Verdict(REFUTED, None, self._contradiction_reason(None), "z3")
            elif r == z3.sat:
                self._satisfiable_state = Verdict(PROVED, self._model(s, names), "assumptions are satisfiable", "z3")
            else:
                self._satisfiable_state = Verdict(UNKNOWN, None, str(s.reason_unknown()), "z3")
        return self._satisfiable_state

    def _z3_satisfiable(self, e, c) -> Verdict:
        # every assumption matters here, connected to expr or not
        names, assumptions = sorted(self._bounds), list(self._residual)
        s, _ = self._new_solver(names, assumptions)
        s.add(self._tr(c))
        r = self._check(s)
        if r == z3.sat:
            w = self._model(s, names)
            if not self._confirmed(c, assumptions, w, True):
                return Verdict(UNKNOWN, None, f"z3's model {_fmt_cex(w)} is no witness in Python's floats", "z3")
            return Verdict(PROVED, w, f"satisfiable, e.g. {_fmt_cex(w)}", "z3")
        if r == z3.unknown:
            counted = self._enumerated(c, names, assumptions, False)
            if counted is not None:
                return counted
            return Verdict(UNKNOWN, None, f"z3 could not decide within {self.timeout_ms} ms: {s.reason_unknown()}",
                           "z3")
        return Verdict(REFUTED, None, self._contradiction_reason(e), "z3")

    def _enumerated(self, c, names: list, assumptions: list, implies: bool) -> Optional[Verdict]:
        """The verdict z3 ran out of time on, by exact evaluation at every point of the ranges.

        Nonlinear guards over bounded sizes (a padded window's element count,
        ``16*((h + (-h) % 4)//4)*((w + (-w) % 4)//4) == (h + (-h) % 4)*(w + (-w) % 4)``)
        can take z3 seconds, so its verdict would depend on the machine's load; when
        every size involved is bounded and the box has at most ``MAX_ENUMERATED_POINTS``
        points, each point is evaluated exactly (``numeric``: the assumptions, then the
        query), in a fixed order, which decides the query the same way on any machine.
        None when the box is unbounded or too large, or some point cannot be evaluated, or the
        budget of the work asking is spent (:mod:`.budget`).
        """
        budget = active_budget()
        if budget is not None and budget.spent:
            return None
        axes = []
        total = 1
        for n in names:
            lo, hi = self._bounds[n]
            if lo is None or hi is None:
                return None
            total *= max(hi - lo + 1, 0)
            if total > MAX_ENUMERATED_POINTS:
                return None
            axes.append(range(lo, hi + 1))
        for point in itertools.product(*axes):
            env = dict(zip(names, point))
            facts = [holds(a, env) for a in assumptions]
            if None in facts:
                return None
            if not all(facts):
                continue
            verdict = holds(c, env)
            if verdict is None:
                return None
            if implies and not verdict:
                return Verdict(REFUTED, env, f"fails at {_fmt_cex(env)} (every point of the ranges evaluated)",
                               "enumeration")
            if not implies and verdict:
                return Verdict(PROVED, env, f"satisfiable, e.g. {_fmt_cex(env)} (every point evaluated)",
                               "enumeration")
        if implies:
            return Verdict(PROVED, None, f"holds at every one of the {total} points of the ranges "
                                         "(each evaluated exactly)", "enumeration")
        return Verdict(REFUTED, None, f"no point of the ranges satisfies it (all {total} evaluated)", "enumeration")

    def _contradiction_reason(self, e) -> str:
        """One line naming the facts (explicit and implicit) that cannot hold together."""
        if e is sympy.false:
            return ("contradictory: the query is identically false (sympy decides comparisons "
                    "from the implicit facts that sizes are integers >= 1, or >= 0 for min=0)")
        empty = self._empty_bounds()
        facts: list[str] = []
        if empty:
            for n in empty:
                lo, hi = self._bounds[n]
                facts.append(f"{n} >= {lo} and {n} <= {hi}")
        else:
            # an empty range needs no z3 call; otherwise z3's unsat core names the facts
            s, labels = self._new_solver(sorted(self._bounds), self._residual, track=True)
            if e is not None and e is not sympy.true:
                b = z3.Bool(f"__fact{len(labels)}")
                labels[str(b)] = f"the queried {e}"
                s.assert_and_track(self._tr(e), b)
            r = self._check(s)
            if r == z3.unsat:
                facts = sorted(labels[str(b)] for b in s.unsat_core())
        facts.append("sizes are integers (implicit)")
        return "contradictory: no sizes satisfy all of: " + "; ".join(facts)


class _StateKey:
    """The assumption state as a cache-key part: compared by content, hashed once."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: tuple) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return self is other or (isinstance(other, _StateKey) and self._hash == other._hash
                                 and self.value == other.value)


def _max_lo(lo, c):
    return c if lo is None else max(lo, c)


def _min_hi(hi, c):
    return c if hi is None else min(hi, c)


def _fmt_cex(cex: Mapping) -> str:
    return ", ".join(f"{k}={v}" for k, v in cex.items())
