"""Fix synthesis: from violated guards to verified ``dynamic_shapes`` fix lines.

``suggest_fixes(guards, dims, hints)`` follows issue 2's rules as extended by
issue 13, in this order:

1. A guard the declared ranges already imply gets no fix.
2. Each violated guard is canonicalized and normalized into *atoms*
   (``normalize.alternatives``): ``And`` split, ``Or`` resolved by the disjunct the
   example sizes (``hints``) satisfy, ``Min``/``Max``/``Abs``/``Piecewise`` replaced by
   the branch the example takes with the branch condition kept as atoms
   (``dx == Max(0, dy - Min(2, dy))`` at dy = 7 is ``dx == dy - 2`` with ``dy >= 2``),
   products of per-symbol factors split per symbol (a pooling pyramid's
   ``(h//2)*(w//2) == 4*(h//4)*(w//4)``). When the example admits several choices
   (a tie, or several true disjuncts) each combination is solved and the one whose
   fixes admit the most sizes within the declared ranges wins (ties: the first,
   relations before pinning).
3. Linear equalities between dims become derived dims (``RelationFix``): over one
   root ``dy = k*dx + c`` with any integer ``k != 0`` (``dy = 32 - dx`` is the
   decreasing form, ``k = -1``), over several roots ``dz = dx + dy`` (``terms``).
   The derived dim is one with coefficient +-1; preferred: a helper root ``_x``,
   then all coefficients positive, then an offset >= 0, then the dim later in input
   order (the order of ``dims``). A linear equality without a +-1 coefficient
   (``2*dx == 3*dy``) first puts one dim on a lattice (``dx = 3*_dx``), which makes
   the other derived (``dy = 2*_dx``). The derived dim is substituted into every
   other atom, and its own declared range becomes atoms on the roots (``dy = 2*dx``
   with ``dy <= 100`` gives ``dx <= 50``; over several roots the budget is split
   between them around the example, since ``dx + dy <= 100`` is no box).
4. A dim whose own atoms put it on a lattice ``x = k*_x + c`` is substituted into
   the guards over several dims when that makes one of them a relation
   (``dx//2 == dy`` with ``dx = 2*_dx`` is ``_dx == dy``), so both fixes come in one block.
   A remainder ``(n*a) % (k*b + c) == 0`` (``x.reshape(y.shape[0], -1)``) becomes the
   relation ``a = q*(k*b + c)``, ``q`` from the example.
5. A guard over several dims built from floors and remainders (two inputs downsampled,
   concatenated and regrouped: ``(a + b // 4) % 2 == 0``, ``(a // 2 + 1) // 2 == b // 2 + 1``)
   has choices, each solved to the end, the widest kept (``_Plan._take``):
   a dim ``x`` on the lattice of its least shift period ``P`` (``e(x + P) - e(x)`` a
   constant ``c``, proved by z3: ``periods.shift_period``) with the example's remainder,
   under which the guard is exactly ``c*_x + e(r)`` against 0 (a remainder guard drops
   ``x``, a floor equality turns linear and then a relation); for an equality of two dims
   whose floors relax to an integer slope, the relation through the example along it
   (``a // 2 == b // 2`` at a = b is ``b = a``); for a monotone inequality
   (``b // 2 + 3 <= a // 2``, a product of nonnegative floors ``(a // 2)*(b // 3) <= 30`` or of
   sizes ``a*b <= 30``, and a disequality by the side the example takes, ``b != c`` at b < c),
   the box of ranges around the example (and every other example set, ``examples``), inside what each dim's own guards leave it, whose
   worst corner holds and that admits the most sizes (an exact search over the corners,
   :mod:`.boxes`: ``a <= 31``, ``b <= 8`` there, not ``a = 6``; the inequalities over the same
   dims, ``m <= n + 29`` and ``n <= m + 29``, are solved as one box); for an equality of step
   functions, its level-set box: a sum of parts over one dim each keeps each part at its
   example value (``a // 8 == (b + 8) // 12`` at (22, 18): ``a`` in [16, 23], ``b`` in
   [16, 27]), a monotone one the widest box whose two opposite corners both hold.  A remainder
   guard whose every dim has a period (``a*b % 4 == 0``) may also put every dim on a lattice at
   once, the steps dividing the periods with the least product that holds on each residue
   class (``a = 2*_a, b = 2*_b`` at (2, 6), wider than ``a = 4*_a + 2`` with ``b = 2*_b``).
6. Last resort, for a polynomial equality over several dims that nothing above
   expresses (``h*w == 16``): pin the fewest dims to their example sizes that leave
   it expressible (one dim, or a relation). A dim that enters the equality through one
   expression of it (the downsampled size ``((h - 1)//2)//2`` of a flattened conv
   output) is pinned through that term: ``((h - 1)//2)//2 == 3`` keeps ``h`` in [13, 16].
   A guard with floors or remainders that no lattice, relation or box expresses
   (``(a + b) // 3 == a % 4``) specializes one of its dims to the example's size (the widest
   choice), so one refine step still closes it.  No other kind of guard is pinned: an
   inequality no box's corners decide (``(dx - dy)**2 <= 100``) or a relation outside the
   caller's forms stays unfixable and says so.
7. All atoms on one symbol are conjoined. Its widest sound range containing the
   example size is found for the plain range and for lattice roots
   ``x = k*_x + c`` (k: the least common multiple of every modulus the atoms use,
   its divisors, the product of the divisors the symbol passes through, the divisors of
   the example size; c the example's remainder), and
   the form admitting more sizes wins (ties: the plain range, then the smaller k).
   Candidates are checked at plain integers first (``numeric``): the integers next
   to the example bound each candidate, a candidate that cannot beat the best one
   found is dropped unproved, and a range the integers enumerate completely needs
   no solver query; z3 decides only ranges too long to enumerate. A range holding
   one value is a specialization ``x = 4``. Relations are written over the final
   roots (``dz = 3*_dx + 2`` when ``dx = 3*_dx`` and ``dz = dx + 2``), each helper root
   under the shortest free name.
8. The whole fix set is verified: with every fix substituted, each guard is proved
   under the fixed ranges, and the example sizes satisfy every fix. A fix equal
   to the current declaration is never emitted, nor one refusing another example set
   (``examples``): it is dropped and its guard reported unfixable, naming the set.

Step 1's verdicts come from ``ShapeSolver.implies``, which splits a remainder or floor guard
z3 cannot decide into the residue classes of one size, so a guard true at every size
(``2*((a*(a + 1)) // 2) == a*(a + 1)``) needs no fix instead of a lattice keeping one class.
"""
from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field
from typing import Mapping, Optional

import sympy

from . import numeric
from .boxes import Requirement, widest_box
from .canon import canonicalize, floor_relaxed
from .decide import ShapeSolver, Verdict, evaluate, make_symbol
from .intervals import bounds
from .normalize import alternatives, first
from .periods import divisor_product, monotone_signs, shift_period

_MAX_DIVISORS = 256  # lattice multiples tried per symbol (smallest first, after the LCM)
_SCAN = 64           # integers checked each way from the example before z3 is asked
_MAX_COMBOS = 16     # combinations of guard alternatives solved when the example allows several
_MAX_STEPS = 64      # relation / lattice / pinning steps per combination (plus one per dim)
_MAX_FORKS = 32      # plans solved to compare the choices of a lattice step, per combination
_MAX_LATTICE_DIMS = 4  # a lattice / specialization choice only for guards over at most this many dims
_GRID_POINTS = 4096  # sizes evaluated to check one choice of lattices for every dim of a guard
_GRID_CHOICES = 512  # choices of per-dim lattices tried, coarsest first
_GRID_CHOICES_KEPT = 4  # equally wide choices that hold, each solved to the end
_RELATIONS = (sympy.Eq, sympy.Ne, sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)


# -- fix records ------------------------------------------------------------------
@dataclass(frozen=True)
class RangeFix:
    """``name = Dim('name', min=lower, max=upper)``; ``new_root`` for a fresh ``_x`` root."""

    name: str
    lower: Optional[int] = 1
    upper: Optional[int] = None
    new_root: bool = False

    @property
    def line(self) -> str:
        args = [f"'{self.name}'"]
        if self.lower is not None and self.lower != 1:
            args.append(f"min={self.lower}")
        if self.upper is not None:
            args.append(f"max={self.upper}")
        return f"{self.name} = Dim({', '.join(args)})"


@dataclass(frozen=True)
class ConstantFix:
    """``name = value``: only one size works."""

    name: str
    value: int

    @property
    def line(self) -> str:
        return f"{self.name} = {self.value}"


@dataclass(frozen=True)
class RelationFix:
    """``name`` becomes a derived dim: ``name = sum(coeff*root) + offset``.

    Over one root: ``root`` and ``scale`` (any integer but 0; ``scale=-1,
    offset=32`` is ``name = 32 - root``), and ``terms == ((root, scale),)``.
    Over several roots (``dz = dx + dy``): ``root`` is None, ``scale`` is unused
    (1), and ``terms`` holds ``(root, coefficient)`` pairs in input order. Build
    either form with ``RelationFix(name, root, scale, offset)`` or
    ``RelationFix(name, terms=(...), offset=c)``; ``coefficients`` gives
    ``{root: coefficient}`` for both.
    """

    name: str
    root: Optional[str] = None
    scale: int = 1
    offset: int = 0
    terms: tuple = ()

    def __post_init__(self):
        if self.terms:
            terms = tuple((str(r), int(k)) for r, k in self.terms if int(k) != 0)
            if len(terms) == 1 and self.root is None:
                object.__setattr__(self, "root", terms[0][0])
                object.__setattr__(self, "scale", terms[0][1])
            elif len(terms) > 1:
                object.__setattr__(self, "root", None)
                object.__setattr__(self, "scale", 1)
            object.__setattr__(self, "terms", terms)
        elif self.root is not None:
            object.__setattr__(self, "terms", ((self.root, int(self.scale)),))

    @property
    def coefficients(self) -> dict:
        """``{root: coefficient}`` (one entry for a single-root relation)."""
        return dict(self.terms)

    @property
    def roots(self) -> tuple:
        return tuple(r for r, _ in self.terms)

    @property
    def line(self) -> str:
        return f"{self.name} = {format_linear(self.terms, self.offset)}"


def format_linear(terms, offset: int) -> str:
    """``dx + dy``, ``2*dx - 1``, ``32 - dx``: positive terms first, then the constant
    if no positive term leads, the negative terms, and a trailing constant."""
    pos = [(r, k) for r, k in terms if k > 0]
    neg = [(r, -k) for r, k in terms if k < 0]

    def term(r, k):
        return r if k == 1 else f"{k}*{r}"
    parts = [term(r, k) for r, k in pos]
    text = " + ".join(parts)
    if not pos:
        text = str(offset) if offset else ""
        if neg and not text:
            r, k = neg[0]
            text, neg = f"-{term(r, k)}", neg[1:]
    for r, k in neg:
        text += f" - {term(r, k)}"
    if pos and offset > 0:
        text += f" + {offset}"
    elif pos and offset < 0:
        text += f" - {-offset}"
    return text or "0"


@dataclass(frozen=True)
class Unfixable:
    """A guard no fix form expresses; unpacks as ``(guard, counterexample)``."""

    guard: object
    counterexample: Optional[dict]
    reason: str = ""

    def __iter__(self):
        return iter((self.guard, self.counterexample))


@dataclass(frozen=True)
class GuardCheck:
    """One input guard: its canonical (readable) form and verdict under the declared dims."""

    guard: object
    canonical: object
    verdict: Verdict


@dataclass
class FixSuggestion:
    """Result of ``suggest_fixes``.

    Attributes:
        fixes: RangeFix / ConstantFix / RelationFix records, in print order
            (new roots and ranges first, then constants, then relations).
        unfixable: ``Unfixable`` records (each unpacks as ``(guard, counterexample)``).
        checks: one ``GuardCheck`` per input guard (verdict under the declared dims).
        verified: True when, with the fixes applied, every fixable guard was proved
            and the example sizes satisfy every fix.
        searched: the fix forms the search tried, as phrases (:data:`SEARCHED_FORMS`
            for the ``relations`` asked for): what "no fix form expresses it" covers.
        complete: False when a bound cut the search short (more combinations of the
            example's branches than ``_MAX_COMBOS``, or more steps than ``_MAX_STEPS``):
            an unfixable guard may then have a fix the search did not reach.
        bound: which bound cut it short, in words ("" when ``complete``).
        boxed: the input guards (linear inequalities over several dims, ``b <= a``) the
            fixes imply through a box of per-dim ranges around the example: one box of
            many, so those fixes refuse sizes the guard itself admits.
        chosen: the input guards over several dims that the fixes imply through one choice
            among several (a lattice for some of the dims, ``(a + b) % 2 == 0`` with both odd;
            or the example's size for one): those fixes refuse sizes the guard admits too.
    """

    fixes: list = field(default_factory=list)
    unfixable: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    verified: bool = True
    searched: tuple = ()
    complete: bool = True
    bound: str = ""
    boxed: list = field(default_factory=list)
    chosen: list = field(default_factory=list)

    @property
    def lines(self) -> list:
        return [f.line for f in self.fixes]

    def __str__(self) -> str:
        return "\n".join(self.lines)


# -- entry point ------------------------------------------------------------------
RELATION_FORMS = ("increasing", "affine", "linear")

# The fix forms one search tries, per ``relations`` value, in the words the messages use.
_SINGLE_FORMS = ("Dim range", "constant", "divisibility n = k*_n + c")
_LAST_FORM = ("a lattice per dim from the period of a floor or remainder guard",
              "a box of ranges for a monotone inequality",
              "the level-set box of an equality of step functions",
              "pinning a product equality's dims to the example's sizes",
              "specializing a dim of a floor or remainder guard to the example's size")
SEARCHED_FORMS = {
    "increasing": _SINGLE_FORMS + ("relation dy = k*dx + c (k >= 1)",) + _LAST_FORM,
    "affine": _SINGLE_FORMS + ("relation dy = k*dx + c", "decreasing relation dy = c - dx") + _LAST_FORM,
    "linear": _SINGLE_FORMS + ("relation dy = k*dx + c", "decreasing relation dy = c - dx",
                               "relation over several dims dz = dx + dy") + _LAST_FORM,
}


def suggest_fixes(guards, dims: Mapping, hints: Mapping, *, timeout_ms: int = 200,
                  relations: str = "increasing", examples=()) -> FixSuggestion:
    """Verified fixes that make the declared dims imply every guard.

    Args:
        guards: sympy booleans the model requires, over root size symbols.
        dims: user dims ``{name: (lower, upper_or_None)}``, in input order (the order
            breaks ties: of two equally wide relations, the dim later in it is the
            derived one, ``dy = 32 - dx`` rather than ``dx = 32 - dy``).
        hints: example size of every symbol ``{name: int}``.
        timeout_ms: z3 time limit per query.
        relations: the derived-dim forms the caller can apply. ``"increasing"``:
            ``dy = k*dx + c`` with ``k >= 1`` (what refine reads today);
            ``"affine"``: any integer ``k != 0`` over one root (``dy = 32 - dx``);
            ``"linear"``: also over several roots (``dz = dx + dy``, a
            ``RelationFix`` with ``terms`` and ``root=None``). A guard only a
            form outside the set expresses is reported unfixable.
        examples: further example sizes ``[{name: int}, ...]`` the fixes must admit too (the
            sets of an ``AdditionalInputs``; a dim a set does not name is not checked).  Of the
            combinations solved, one whose fixes admit every set wins; a fix that still refuses
            one is dropped, with the fixes of every dim tied to it, and each guard over those
            dims is reported unfixable saying which set and size the fix refused.

    Returns:
        ``FixSuggestion`` (``.lines`` to print, ``.fixes`` to apply, ``.unfixable``).

    Raises:
        ValueError: a guard's symbol has no hint.
        UnsupportedExpressionError: a guard uses a construct the solver cannot translate.

    Example:
        >>> import sympy
        >>> dx, dy = sympy.symbols("dx dy", integer=True, positive=True)
        >>> suggest_fixes([sympy.Eq(2 * dx, dy)], {"dx": (1, 100), "dy": (1, 100)}, {"dx": 4, "dy": 8}).lines
        ["dx = Dim('dx', max=50)", 'dy = 2*dx']
    """
    if relations not in RELATION_FORMS:
        raise ValueError(f"suggest_fixes: relations must be one of {RELATION_FORMS}, got {relations!r}")
    guards = [sympy.sympify(g) for g in guards]
    ranges = {n: (_lo(r[0]), r[1]) for n, r in dims.items()}
    hints = {(k.name if isinstance(k, sympy.Symbol) else str(k)): int(v) for k, v in hints.items()}
    base = ShapeSolver(timeout_ms)
    for n, (lo, hi) in ranges.items():
        base.declare(n, lo, hi)
    out = FixSuggestion(searched=SEARCHED_FORMS[relations])
    violated = []
    for g in guards:
        for s in g.free_symbols:
            if s.name not in hints:
                raise ValueError(f"suggest_fixes: no example size (hint) for '{s.name}' in guard {g}")
            if s.name not in ranges:
                lo = 1 if s.is_positive else (0 if s.is_nonnegative else None)
                ranges[s.name] = (lo, None)
                base.declare(s.name, lo, None)
        v = base.implies(g)
        canonical = canonicalize(g, ranges)
        out.checks.append(GuardCheck(g, canonical, v))
        if v.proved:
            continue
        if evaluate(g, hints) is not True:
            out.unfixable.append(Unfixable(g, {s.name: hints[s.name] for s in g.free_symbols},
                                           "the example sizes themselves violate this guard"))
            continue
        violated.append((g, canonical, v))
    if not violated:
        return out

    ctx = _Ctx(ranges, hints, timeout_ms, relations, examples)
    # one symbol per name, with the assumptions of its declared range: the search substitutes
    # roots built the same way, and two symbols sharing a name would be two variables to sympy
    per_guard = [alternatives(_unify_symbols(canonical, ranges), hints, ranges) for _, canonical, _ in violated]
    best = None
    combos = _combinations(per_guard)
    total = math.prod(len(alts) for alts in per_guard)
    if len(combos) < total:
        out.complete = False
        out.bound = (f"the example's branches give {total} combinations and {len(combos)} were solved")
    for combo in combos:
        atoms = [(a, g, v) for (g, _, v), alt in zip(violated, combo) for a in alt]
        plan = _Plan(ctx, atoms).solve()
        if not plan.complete and out.complete:
            out.complete = False
            out.bound = f"a combination needed more than {_MAX_STEPS} relation, lattice and pinning steps"
        if best is None or _admits_all(plan.fixes(), examples) > _admits_all(best.fixes(), examples) or (
                _admits_all(plan.fixes(), examples) == _admits_all(best.fixes(), examples) and plan.key() > best.key()):
            best = plan
    out.fixes = best.fixes()
    out.unfixable.extend(best.unfixable)
    out.boxed = list(dict.fromkeys(best.boxed))
    out.chosen = list(dict.fromkeys(best.chosen))
    if examples:
        _drop_fixes_refusing(out, [g for g, _, _ in violated], examples, hints)
    _verify(ctx, best, [g for g, _, _ in violated], out)
    return out


def _refused(fixes: list, point: Mapping) -> dict:
    """``{name: fix}`` of the fixes that refuse the sizes ``point`` (a dim it does not name is not
    checked); a helper root takes the value its first relation gives it."""
    roots = {f.name: f for f in fixes if isinstance(f, RangeFix) and f.new_root}
    values = {k: int(v) for k, v in point.items()}
    out = {}
    for f in fixes:  # helper roots from their relations (a = 2*_a + 1 at a = 7: _a = 3)
        if isinstance(f, RelationFix) and len(f.terms) == 1 and f.terms[0][0] in roots and f.name in point:
            root, k = f.terms[0]
            q, rem = divmod(point[f.name] - f.offset, k)
            if rem or values.setdefault(root, q) != q:
                out[f.name] = f
    for f in fixes:
        if f.name in out:
            continue
        if isinstance(f, RangeFix):
            v = values.get(f.name)
            if v is not None and ((f.lower is not None and v < f.lower) or (f.upper is not None and v > f.upper)):
                out[f.name] = f
        elif isinstance(f, ConstantFix):
            if f.name in point and point[f.name] != f.value:
                out[f.name] = f
        elif f.name in values and all(r in values for r in f.roots):
            if values[f.name] != f.offset + sum(k * values[r] for r, k in f.terms):
                out[f.name] = f
    return out


def _admits_all(fixes: list, examples) -> bool:
    return all(not _refused(fixes, point) for point in examples)


def _drop_fixes_refusing(out: FixSuggestion, guards: list, examples, hints: Mapping) -> None:
    """Drop each fix that refuses one of ``examples`` (with every fix tied to its dims through a
    relation or a helper root), and report the guards over those dims unfixable, naming the set:
    a fix line that refuses the user's own example is never printed."""
    refusing: dict = {}
    for n, point in enumerate(examples):
        for name, f in _refused(out.fixes, point).items():
            refusing.setdefault(name, (n, point, f))
    if not refusing:
        return
    tied = set(refusing)
    changed = True
    while changed:  # every dim and root a dropped fix shares a line with
        changed = False
        for f in out.fixes:
            names = {f.name, *(f.roots if isinstance(f, RelationFix) else ())}
            if names & tied and not names <= tied:
                tied |= names
                changed = True
    out.fixes = [f for f in out.fixes if f.name not in tied]
    known = {u.guard for u in out.unfixable}
    for g in guards:
        over = {sym.name for sym in g.free_symbols} & tied
        if not over or g in known:
            continue
        name = sorted(over & set(refusing)) or sorted(over)
        n, point, f = refusing.get(name[0], next(iter(refusing.values())))
        dim = name[0] if name[0] in point else f.name
        at = {sym.name: hints[sym.name] for sym in g.free_symbols if sym.name in hints}
        bad = next(((m, p) for m, p in enumerate(examples) if evaluate(g, {**hints, **p}) is False), None)
        if bad is not None:
            m, p = bad
            sizes = ", ".join(f"{k} = {v}" for k, v in sorted(p.items()) if k in at)
            reason = (f"example set {m} ({sizes}) violates this guard itself, so no fix admits every example "
                      f"set")
        else:
            reason = (f"the fix the search found ({f.line}) refuses example set {n} ({dim} = {point.get(dim)}), "
                      f"and no fix form it tried admits every example set (the export example has {dim} = "
                      f"{hints.get(dim)})")
        out.unfixable.append(Unfixable(g, at, reason))
    out.boxed = [g for g in out.boxed if not ({s.name for s in g.free_symbols} & tied)]
    out.chosen = [g for g in out.chosen if not ({s.name for s in g.free_symbols} & tied)]


def _lo(lo):
    return None if lo is None else int(lo)


def _unify_symbols(e, ranges):
    rep = {}
    for sym in e.free_symbols:
        want = make_symbol(sym.name, ranges.get(sym.name, (1, None))[0])
        if want != sym:
            rep[sym] = want
    return e.xreplace(rep) if rep else e


def _combinations(per_guard: list) -> list:
    """Alternative combinations to solve: all when few, else each guard's alternatives alone."""
    total = 1
    for alts in per_guard:
        total *= len(alts)
    if total <= _MAX_COMBOS:
        return list(itertools.product(*per_guard))
    base = [alts[0] for alts in per_guard]
    out = [tuple(base)]
    for i, alts in enumerate(per_guard):
        for alt in alts[1:]:
            if len(out) >= _MAX_COMBOS:
                return out
            out.append(tuple(base[:i] + [alt] + base[i + 1:]))
    return out


class _Ctx:
    """Inputs of one ``suggest_fixes`` call, shared by the combinations it solves."""

    def __init__(self, ranges, hints, timeout_ms, relations="increasing", examples=()):
        self.ranges = dict(ranges)          # name -> (lo, hi|None), declared
        self.hints = dict(hints)
        self.span: dict = {}                # name -> (least, largest) size of the examples and hints
        for point in examples:
            for n, v in point.items():
                if n in self.hints:
                    lo, hi = self.span.get(n, (self.hints[n], self.hints[n]))
                    self.span[n] = (min(lo, int(v)), max(hi, int(v)))
        self.timeout_ms = timeout_ms
        self.relations = relations
        self.cache: dict = {}               # shared verdict cache for the range searches
        self.periods: dict = {}             # (expr, name, start, other ranges) -> shift_period's answer
        self.boxes: dict = {}               # (requirements, ranges, hints) -> widest_box's answer
        self.names = list(ranges)           # input order


# -- atoms -------------------------------------------------------------------------------
class _Atom:
    """One atom with the guard it came from; ``forced`` names the derived dim whose range it is."""

    __slots__ = ("expr", "guard", "verdict", "forced", "names", "_linear")

    def __init__(self, expr, guard, verdict, forced=None):
        self.expr = expr
        self.guard = guard
        self.verdict = verdict
        self.forced = forced
        self.names = frozenset(s.name for s in expr.free_symbols)
        self._linear = False  # not computed yet

    def linear(self):
        if self._linear is False:
            self._linear = _linear(self.expr)
        return self._linear


def _linear(atom):
    """``(coeffs {name: int}, const int)`` with ``sum(coeffs*x) + const == 0`` equivalent to the
    equality ``atom`` over two or more symbols (integer coefficients, content removed); else None."""
    if not isinstance(atom, sympy.Eq) or len(atom.free_symbols) < 2:
        return None
    return _linear_form(atom.lhs - atom.rhs)


def _linear_form(diff):
    syms = sorted(diff.free_symbols, key=lambda s: s.name)
    if not syms or not diff.is_polynomial(*syms):
        return None
    poly = sympy.Poly(sympy.expand(diff), *syms)
    if poly.total_degree() != 1:
        return None
    coeffs = {s.name: poly.coeff_monomial(s) for s in syms}
    const = poly.coeff_monomial(1)
    vals = list(coeffs.values()) + [const]
    if not all(v.is_Rational for v in vals):
        return None
    den = 1
    for v in vals:
        den = den * int(v.q) // math.gcd(den, int(v.q))
    ints = {n: int(v * den) for n, v in coeffs.items()}
    c = int(const * den)
    g = 0
    for v in list(ints.values()) + [c]:
        g = math.gcd(g, v)
    ints = {n: v // g for n, v in ints.items() if v != 0}
    if len(ints) < 1:
        return None
    return ints, c // g


def _multiple_form(expr):
    """``(a, b, k, c)`` for ``Eq(Mod(n*a, k*b + c), 0)`` over two dims (integers ``n``, ``k >= 1``,
    ``c``): the modulus a linear size of ``b`` (``y.shape[0]``, ``2*y.shape[0]``, ``y.shape[0] + 1``)."""
    if not isinstance(expr, sympy.Eq) or expr.rhs != 0 or not isinstance(expr.lhs, sympy.Mod):
        return None
    inner, modulus = expr.lhs.args
    coeff, rest = inner.as_coeff_Mul()
    if not coeff.is_Integer or not rest.is_Symbol or len(modulus.free_symbols) != 1 or rest in modulus.free_symbols:
        return None
    (b,) = modulus.free_symbols
    poly = sympy.Poly(sympy.expand(modulus), b) if modulus.is_polynomial(b) else None
    if poly is None or poly.degree() != 1 or not all(c.is_Integer for c in poly.all_coeffs()):
        return None
    k, c0 = (int(c) for c in poly.all_coeffs())
    if k < 1:
        return None
    return rest.name, b.name, k, c0


def _floor_equality(expr, hints: Mapping):
    """For ``side == floor(num / k)`` or ``side == ceiling(num / k)`` (``side`` and ``num``
    linear in the dims, ``k >= 2``), the linear equality through the example's remainder
    that implies it: ``num == k*side + r`` (floor, ``r = num mod k`` at the example) or
    ``num == k*side - r`` (ceiling, ``r = (-num) mod k``); else None."""
    if not isinstance(expr, sympy.Eq):
        return None
    # ``floor(num/k) + c == side`` (a strided conv's output size against another dim): the
    # floor alone on one side, the rest moved over
    diff = expr.lhs - expr.rhs
    pairs = []
    for term in sympy.Add.make_args(diff):
        if isinstance(term, (sympy.floor, sympy.ceiling)):
            pairs.append((term - diff, term))          # floor == -(diff - floor)
        elif isinstance(-term, (sympy.floor, sympy.ceiling)):
            pairs.append((diff - term, -term))         # -floor + rest == 0: floor == rest
    for side, other in pairs:
        num, den = sympy.fraction(sympy.together(other.args[0]))
        if not den.is_Integer or int(den) < 2 or _linear_form(num) is None:
            continue
        if side.free_symbols and _linear_form(side) is None:
            continue
        if not side.free_symbols and not side.is_Integer:
            continue
        k = int(den)
        num_ex = sympy.sympify(_subs_names(num, {n: sympy.Integer(v) for n, v in hints.items()}))
        if not num_ex.is_Integer:
            continue
        r = int(num_ex) % k if isinstance(other, sympy.floor) else (-int(num_ex)) % k
        rhs = k * side + r if isinstance(other, sympy.floor) else k * side - r
        eq = sympy.Eq(num, rhs)
        return eq if isinstance(eq, sympy.Eq) else None
    return None


def _dim_terms(diff) -> Optional[dict]:
    """``{name: term}`` when ``diff`` is a polynomial of degree >= 2 in one term per dim, else None.

    A term is the dim itself or a maximal expression of that dim alone that is not
    polynomial in it (``((h - 1)//2)//2``); every occurrence of a dim must be the same term,
    so fixing the terms' values fixes ``diff``.  ``h*w - 16`` -> ``{h: h, w: w}``.
    """
    terms: dict = {}
    ok = True

    def walk(e):
        nonlocal ok
        if not ok or not e.free_symbols:
            return
        if isinstance(e, sympy.Symbol) or (len(e.free_symbols) == 1 and not e.is_polynomial()):
            (sym,) = e.free_symbols
            if terms.setdefault(sym.name, e) != e:
                ok = False
            return
        if not isinstance(e, (sympy.Add, sympy.Mul, sympy.Pow)):
            ok = False
            return
        for arg in e.args:
            walk(arg)

    walk(diff)
    if not ok or len(terms) < 2:
        return None
    places = {t: sympy.Dummy(n, integer=True) for n, t in terms.items()}
    poly = sympy.expand(diff.xreplace(places))
    if poly.free_symbols - set(places.values()) or not poly.is_polynomial(*places.values()):
        return None
    if sympy.Poly(poly, *places.values()).total_degree() < 2:
        return None
    return terms


def _subs_names(e, values: Mapping):
    rep = {s: values[s.name] for s in e.free_symbols if s.name in values}
    return e.xreplace(rep) if rep else e


def _has_lattice_ops(e) -> bool:
    return e.has(sympy.Mod, sympy.floor, sympy.ceiling)


# -- one combination ------------------------------------------------------------------
@dataclass
class _Decision:
    """Per-symbol outcome: keep/narrow the range, or a lattice ``x = k*_x + c`` with ``_x`` in [lo, hi]."""

    kind: str            # "range", "div" or "fail" (the example violates the atoms)
    lo: Optional[int]
    hi: Optional[int]
    k: int = 1
    c: int = 0


class _Plan:
    """Solve one combination of guard alternatives: substitutions, then per-symbol decisions."""

    def __init__(self, ctx: _Ctx, atoms: list):
        self.ctx = ctx
        self.declared = dict(ctx.ranges)      # user dims and helper roots (helper roots: (0, None))
        self.hints = dict(ctx.hints)
        self.names = list(ctx.names)          # input order; helper roots appended
        self.new_roots: list = []
        self.subst: dict = {}                 # name -> expression over the current roots
        self.decisions: dict = {}
        self.unfixable: list = []
        self.boxed: list = []                 # input guards a box of ranges stands for (_split_step)
        self.chosen: list = []                # input guards one lattice or pinning choice stands for
        self.floor_kept: list = []            # floor equalities left for the step-function steps (_floor_step)
        self._decided: dict = {}              # (name, conds, range) -> _Decision
        self.budget = [_MAX_FORKS]            # shared with the clones a lattice step tries
        self.atoms = [_Atom(a, g, v) for a, g, v in atoms if a is not sympy.true]

    # -- helpers --------------------------------------------------------------------
    def sym(self, name):
        return make_symbol(name, self.declared.get(name, (1, None))[0])

    def order(self, name) -> int:
        return self.names.index(name) if name in self.names else len(self.names)

    def _new_root(self, base: str, hint: int) -> str:
        root = f"_{base}"
        while root in self.declared or root in self.hints:
            root = "_" + root
        self.declared[root] = (0, None)
        self.hints[root] = hint
        self.names.append(root)
        self.new_roots.append(root)
        return root

    def _normalize(self, expr, guard, verdict, forced=None) -> list:
        out = []
        for part in first(expr, self.hints, self.declared):
            if part is not sympy.true:
                out.append(_Atom(part, guard, verdict, forced))
        return out

    def apply(self, name: str, expr, guard=None, verdict=None) -> None:
        """Make ``name`` derived: ``name = expr`` (over roots), substituted everywhere."""
        expr = sympy.expand(expr)
        rep = {name: expr}
        for d in list(self.subst):
            self.subst[d] = sympy.expand(_subs_names(self.subst[d], rep))
        self.subst[name] = expr
        atoms = []
        for at in self.atoms:
            if name in at.names:
                if guard is None:
                    guard, verdict = at.guard, at.verdict
                atoms += self._normalize(_subs_names(at.expr, rep), at.guard, at.verdict, at.forced)
            else:
                atoms.append(at)
        lo, hi = self.declared.get(name, (None, None))
        for bound in ([expr >= lo] if lo is not None else []) + ([expr <= hi] if hi is not None else []):
            if bound is not sympy.true:
                atoms += self._normalize(bound, guard, verdict, forced=name)
        self.atoms = atoms

    # -- the loop ---------------------------------------------------------------------
    def solve(self) -> "_Plan":
        self.complete = False
        for _ in range(_MAX_STEPS + len(self.names)):
            floors = self._floor_options()
            if floors:
                if self._take(floors):
                    return self
                continue
            if self._relation_step() or self._unlock_step() or self._multiple_step():
                continue
            options = self._lattice_options()
            if not options:
                if self._pin_step() or self._split_step():
                    continue
                options = self._specialize_options()
                if not options:
                    self.complete = True
                    break
            if self._take(options):
                return self  # a fork solved the rest: self is now the widest of its plans
        self._final()
        return self

    def _clone(self) -> "_Plan":
        """An independent copy to try one choice on (the decision cache and fork budget are shared)."""
        twin = object.__new__(_Plan)
        twin.__dict__.update(self.__dict__)
        for k in ("declared", "hints", "subst", "decisions"):
            setattr(twin, k, dict(getattr(self, k)))
        for k in ("names", "new_roots", "unfixable", "boxed", "chosen", "atoms", "floor_kept"):
            setattr(twin, k, list(getattr(self, k)))
        return twin

    def _take(self, options: list) -> bool:
        """Apply one of ``options`` (each a function of a plan): the only one, or the one whose
        solved plan is widest (:meth:`key`; ties: the first).  True when the plans were solved
        here and ``self`` took over the winner's state; the fork budget bounds the work, and
        past it the first option is taken."""
        if len(options) == 1 or self.budget[0] < len(options):
            options[0](self)
            return False
        self.budget[0] -= len(options)
        best = None
        for option in options:
            twin = self._clone()
            option(twin)
            twin.solve()
            if best is None or twin.key() > best.key():
                best = twin
        self.__dict__.update(best.__dict__)
        return True

    def _relation_step(self) -> bool:
        self._linearize_floor_equalities()
        best = None
        for at in self.atoms:
            if len(at.names) < 2 or (best is not None and len(at.names) >= len(best[0].names)):
                continue
            lin = at.linear()
            if lin is None:
                continue
            oriented = self._orient(*lin)
            if oriented is not None:
                best = (at, oriented)
        if best is not None:
            at, (derived, expr) = best
            self.apply(derived, expr, at.guard, at.verdict)
            return True
        for at in self.atoms:  # two dims tied without a +-1 coefficient: 2*dx == 3*dy
            lin = at.linear()
            if lin is None or len(lin[0]) != 2:
                continue
            coeffs, const = lin
            x, y = sorted(coeffs, key=self.order)
            if not self._allowed({x: -coeffs[x] * coeffs[y]}):
                continue  # y = -(a/b)*x: decreasing, and the caller reads only increasing relations
            k = abs(coeffs[y])
            if k == 1:
                continue
            h = self.hints[x]
            t = self._new_root(x, (h - h % k) // k)
            self.apply(x, k * self.sym(t) + h % k, at.guard, at.verdict)
            return True
        return False

    def _linearize_floor_equalities(self) -> None:
        """``a == (b + 1) // 2`` (``x[::2]`` broadcast against another dim) becomes the linear
        equality the example's remainder picks, ``b == 2*a``: it implies the guard (with
        ``b + 1 = 2*a + r``, ``0 <= r < 2``, the floor is ``a``), and a relation fix can state it.
        Not the floor equalities :meth:`_floor_options` chose to keep."""
        for i, at in enumerate(self.atoms):
            if len(at.names) < 2 or at.linear() is not None or at.expr in self.floor_kept:
                continue
            eq = _floor_equality(at.expr, self.hints)
            if eq is not None:
                self.atoms[i] = _Atom(eq, at.guard, at.verdict, at.forced)

    def _floor_options(self) -> list:
        """Two choices for the floor equalities not yet decided (``b // 8 == a``): linearized
        into the relation the example's remainder picks (``b = 8*a + 4``), or kept whole for the
        step-function steps (the level-set box ``a = 2``, ``b`` in [16, 20] when ``b <= 20``: five
        sizes where the relation leaves one); :meth:`_take` keeps the wider.  [] when none."""
        undecided = [at.expr for at in self.atoms
                     if len(at.names) >= 2 and at.linear() is None and at.expr not in self.floor_kept
                     and _floor_equality(at.expr, self.hints) is not None]
        if not undecided:
            return []

        def linearize(plan: "_Plan") -> None:
            plan._linearize_floor_equalities()

        def keep(plan: "_Plan") -> None:
            plan.floor_kept.extend(undecided)
        return [linearize, keep]

    def _orient(self, coeffs: dict, const: int):
        """(derived, expr over the others) for ``sum(coeffs*x) + const == 0``; None without a +-1 coefficient."""
        options = []
        for d, cd in coeffs.items():
            if abs(cd) != 1:
                continue
            terms = {n: -c * cd for n, c in coeffs.items() if n != d}  # divide by cd (= 1/cd)
            offset = -const * cd
            if not self._allowed(terms):
                continue
            key = (d not in self.new_roots, not all(v > 0 for v in terms.values()), offset < 0, -self.order(d))
            options.append((key, d, terms, offset))
        if not options:
            return None
        _, d, terms, offset = min(options, key=lambda o: o[0])
        return d, sum((c * self.sym(n) for n, c in terms.items()), sympy.Integer(offset))

    def _allowed(self, terms: dict) -> bool:
        """Can the caller apply a derived dim with these root coefficients?"""
        if len(terms) > 1:
            return self.ctx.relations == "linear"
        return self.ctx.relations != "increasing" or all(k >= 1 for k in terms.values())

    def _orientable(self, rel) -> bool:
        """Is ``rel`` a linear equality some allowed derived dim expresses?"""
        lin = _linear(rel)
        if lin is None:
            return False
        coeffs, _ = lin
        return any(abs(cd) == 1 and self._allowed({n: -c * cd for n, c in coeffs.items() if n != d})
                   for d, cd in coeffs.items())

    def _singles(self) -> dict:
        by: dict = {}
        for at in self.atoms:
            if len(at.names) == 1:
                (n,) = at.names
                by.setdefault(n, []).append(at.expr)
        return by

    def _unlock_step(self) -> bool:
        """Put a dim on its lattice when that turns a guard over several dims into a relation."""
        multi = [at for at in self.atoms if len(at.names) >= 2]
        if not multi:
            return False
        singles = self._singles()
        names = sorted({n for at in multi for n in at.names}, key=self.order)
        for name in names:
            conds = singles.get(name, [])
            if not conds or not any(_has_lattice_ops(c) for c in conds):
                continue
            dec = self._decide(name, conds)
            if dec.kind != "div":
                continue
            t = make_symbol(f"_t{name}", 0)
            value = dec.k * t + dec.c
            t_hints = {**self.hints, t.name: (self.hints[name] - dec.c) // dec.k}
            unlocked = False
            for at in multi:
                if name not in at.names:
                    continue
                for part in first(_subs_names(at.expr, {name: value}), t_hints, self.declared):
                    if len(part.free_symbols) < len(at.names) or self._orientable(part):
                        unlocked = True
            if unlocked:
                h = self.hints[name]
                root = self._new_root(name, (h - dec.c) // dec.k)
                self.apply(name, dec.k * self.sym(root) + dec.c)
                return True
        return False

    def _multiple_step(self) -> bool:
        """``(n*a) % (k*b + c) == 0`` (``x.reshape(y.shape[0], -1)``) becomes the relation
        ``a = q*(k*b + c)``, ``q`` from the example (the modulus is a size, so no lattice of
        ``a`` alone expresses it)."""
        for at in self.atoms:
            if len(at.names) < 2:
                continue
            multiple = _multiple_form(at.expr)
            if multiple is None:
                continue
            a, b, k, c0 = multiple
            m0 = k * self.hints.get(b, 0) + c0 if b in self.hints else 0
            if a in self.hints and m0 > 0 and self.hints[a] % m0 == 0:
                q = self.hints[a] // m0
                if q >= 1 and self._allowed({b: q * k}):
                    self.apply(a, q * (k * self.sym(b) + c0), at.guard, at.verdict)
                    return True
        return False

    def _lattice_options(self) -> list:
        """The ways to fix the first guard over several dims built from floors and remainders.

        For each dim ``x`` that enters through a floor or a remainder, the least period ``P``
        with ``e(x + P) - e(x) == c`` (``e`` the guard's two sides subtracted;
        :func:`.periods.shift_period`, proved by z3) gives the lattice ``x = P*_x + r`` with
        the example's remainder ``r``; under it the guard is exactly ``c*_x + e(r)`` against 0:
        a remainder guard drops ``x`` (``(a + b // 4) % 2 == 0`` with ``b = 8*_b + 7`` is
        ``(a + 1) % 2 == 0``), a floor equality becomes linear in ``_x`` and then a relation
        (``(a // 2 + 1) // 2 == b // 2 + 1`` with ``a = 4*_a`` is ``b = 2*_a - 2``).  Besides
        those: an equality between two dims whose floors relax to an integer slope gives the
        relation through the example along it (``a // 2 == b // 2`` at a = b is ``b = a``),
        the guard deciding the root's range; an inequality whose sides are monotone gives a
        box of ranges around the example (:meth:`_box`).  :meth:`_take` solves each choice
        and keeps the widest, so the example's residues are the answer only when nothing
        admits more sizes.
        """
        for at in self.atoms:
            e = at.expr
            if not 2 <= len(at.names) <= _MAX_LATTICE_DIMS or not isinstance(e, _RELATIONS) \
                    or not _has_lattice_ops(e):
                continue
            kind, diff = type(e), e.lhs - e.rhs
            options, periods = [], {}
            for name in sorted(at.names, key=self.order):
                if name not in self.hints or divisor_product(diff, name) == 1:
                    continue
                found = self._period(diff, name, at.names)
                if found is None or found[0] == 1:
                    continue
                p, c = found
                periods[name] = found
                options.append(functools.partial(_Plan._lattice, at=at, name=name, p=p, c=c, kind=kind, diff=diff))
            if len(periods) == len(at.names) and all(c == 0 for _, c in periods.values()):
                options = [functools.partial(_Plan._lattice_grid, at=at, steps=steps)
                           for steps in self._grid_lattices(at, {n: p for n, (p, _) in periods.items()})] + options
            if kind is sympy.Eq and len(at.names) == 2:
                options += self._slope_options(at, diff)
            boxes = self._level_options(at, diff) if kind is sympy.Eq else []
            if kind in (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt, sympy.Ne):
                found = self._box_with(at)
                if found is not None:
                    box, also = found
                    boxes.append(functools.partial(_Plan._use_box, at=at, box=box, also=also))
            if options and not boxes:
                # a lattice or a relation may admit fewer sizes than one dim at its example size
                # ((a + b) // 3 == a % 4 at (3, 7): a = 3 keeps b in [6, 8]); a box holds the
                # specializations already (its corner search starts at the example)
                options += self._specialize_options(at)
            if options or boxes:
                return options + boxes
        return []

    def _grid_lattices(self, at, periods: Mapping) -> list:
        """The coarsest-first lattices ``{name: k}`` (``name = k*_name + r``, ``k`` dividing the
        dim's period, ``r`` the example's remainder) of every dim of ``at`` at once under which
        the guard holds: those with the least product of the ``k`` (the widest; ``a*b % 4 == 0``
        at (2, 6) gives ``a = 2*_a, b = 2*_b``, which admits every size that ``a = 4*_a + 2,
        b = 2*_b`` does and more).

        Every dim's shift by its period leaves the guard unchanged (``periods``, proved by z3
        from each dim's least size on), so the guard holds on the lattices exactly when it holds
        at one size of each residue class mod the periods that they contain: checked at the least
        such sizes of the declared ranges, at most ``_GRID_POINTS`` of them per choice."""
        names = sorted(periods, key=self.order)
        starts = {}
        for n in names:
            lo = self.declared.get(n, (1, None))[0]
            starts[n] = self.hints[n] if lo is None else lo
        per_dim = [_divisors_with_one(periods[n]) for n in names]
        if math.prod(len(d) for d in per_dim) > 64 * _GRID_CHOICES:
            return []  # too many choices to sort: the one-dim lattices remain
        choices = sorted(itertools.product(*per_dim),
                         key=lambda ks: (math.prod(ks), ks))
        found, best = [], None
        for ks in choices[:_GRID_CHOICES]:
            width = math.prod(ks)
            if best is not None and width > best:
                break
            if width == 1 or math.prod(periods[n] // k for n, k in zip(names, ks)) > _GRID_POINTS:
                continue
            axes = []
            for n, k in zip(names, ks):
                r = self.hints[n] % k
                first = starts[n] + (r - starts[n]) % k
                axes.append(range(first, first + periods[n], k))
            if all(numeric.holds(at.expr, dict(zip(names, point))) is True for point in itertools.product(*axes)):
                found.append(dict(zip(names, ks)))
                best = width
        return found[:_GRID_CHOICES_KEPT]

    def _lattice_grid(self, at, steps: Mapping) -> None:
        """Every dim of ``at`` on its lattice ``steps[name]`` (:meth:`_grid_lattices`): the guard
        holds there, so it goes (the final check proves it again)."""
        if at.forced is None:
            self.chosen.append(at.guard)
        self.atoms = [x for x in self.atoms if x is not at]
        for name in sorted(steps, key=self.order):
            k = steps[name]
            if k == 1 or name in self.subst:
                continue
            h = self.hints[name]
            root = self._new_root(name, (h - h % k) // k)
            self.apply(name, k * self.sym(root) + h % k, at.guard, at.verdict)

    def _period(self, diff, name, names):
        """:func:`.periods.shift_period` under the current ranges, cached across the forks."""
        lo = self.declared.get(name, (1, None))[0]
        others = {n: self.declared.get(n, (1, None)) for n in sorted(names) if n != name}
        key = (diff, name, lo, tuple(others.items()), self.hints[name])
        if key not in self.ctx.periods:
            try:
                found = shift_period(diff, name, self.hints, lo, others, timeout_ms=self.ctx.timeout_ms,
                                     cache=self.ctx.cache)
            except Exception:  # noqa: BLE001 - a construct z3 cannot take: no lattice for this dim
                found = None
            self.ctx.periods[key] = found
        return self.ctx.periods[key]

    def _lattice(self, at, name, p, c, kind, diff) -> None:
        """``name = p*_name + r`` (``r`` the example's remainder), the guard replaced by its exact
        form on the lattice: from the least size ``x0 = p*t0 + r`` the range admits (where the
        shift identity starts), ``e(p*t + r) == c*(t - t0) + e(x0)``."""
        h = self.hints[name]
        r = h % p
        lo = self.declared.get(name, (1, None))[0]
        t0 = 0 if lo is None or lo <= r else -(-(lo - r) // p)
        root = self._new_root(name, (h - r) // p)
        if len(at.names) > 1 and at.forced is None:  # one lattice of several dims' guard: a choice
            self.chosen.append(at.guard)
        self.atoms = [x for x in self.atoms if x is not at]
        self.apply(name, p * self.sym(root) + r, at.guard, at.verdict)
        exact = kind(c * (self.sym(root) - t0) + _subs_names(diff, {name: sympy.Integer(p * t0 + r)}), 0)
        self.atoms += self._normalize(exact, at.guard, at.verdict, at.forced)

    def _slope_options(self, at, diff) -> list:
        relaxed = diff.replace(sympy.floor, lambda u: u).replace(sympy.ceiling, lambda u: u)
        form = None if relaxed.has(sympy.Mod) else _linear_form(relaxed)
        if form is None or len(form[0]) != 2:
            return []
        coeffs, _ = form
        out = []
        for d, o in itertools.permutations(sorted(coeffs, key=self.order)):
            k = sympy.Rational(-coeffs[o], coeffs[d])
            if not k.is_Integer or not self._allowed({o: int(k)}):
                continue
            offset = self.hints[d] - int(k) * self.hints[o]
            # the relation step's preference breaks a tie: an offset >= 0, then the later dim derived
            out.append(((k < 0, offset < 0, -self.order(d)),
                        functools.partial(_Plan._relate, at=at, name=d, expr=int(k) * self.sym(o) + offset)))
        return [option for _, option in sorted(out, key=lambda o: o[0])]

    def _level_options(self, at, diff) -> list:
        """An equality of step functions held by keeping each at its example value: a box.

        When ``diff`` is a sum of parts over one dim each (``a // 8 - (b + 8) // 12``), each part
        keeps its example value (``a // 8 == 2``, ``(b + 8) // 12 == 2``), and each dim's own
        range search finds the sizes that do (a range, or a lattice for a remainder part).  On a
        box no wider set holds a separable equality, since each part must then be constant.
        Otherwise, when ``diff`` is monotone in each dim (``(a + b) // 4 - 3``), the widest box
        whose two opposite corners both give 0 (:meth:`_monotone_box` of ``diff >= 0`` and ``diff <= 0``)."""
        parts: dict = {}
        for term in sympy.Add.make_args(diff):
            names = {sym.name for sym in term.free_symbols}
            if not names:
                continue  # the constant: the parts at their example values cancel it
            if len(names) == 1:
                (n,) = names
                parts[n] = parts.get(n, sympy.Integer(0)) + term
            else:
                parts = {}
                break
        if len(parts) >= 2 and all(n in self.hints for n in parts):
            values = {}
            for n, part in parts.items():
                try:
                    v = numeric.value(part, {n: self.hints[n]})
                except numeric.NumericError:
                    return []
                if isinstance(v, bool) or v != int(v):
                    return []
                values[n] = sympy.Integer(int(v))
            pins = [sympy.Eq(parts[n], values[n]) for n in sorted(parts, key=self.order)]
            return [functools.partial(_Plan._use_box, at=at, box=pins)]
        signs = self._signs(diff)
        if not signs or any(n not in self.hints for n in signs):
            return []
        signed = tuple(sorted(signs.items()))
        box = self._monotone_box([Requirement(diff, signed, 1), Requirement(diff, signed, -1)])
        return [] if box is None else [functools.partial(_Plan._use_box, at=at, box=box)]

    def _relate(self, at, name, expr) -> None:
        self.apply(name, expr, at.guard, at.verdict)

    def _use_box(self, at, box, also=()) -> None:
        """Replace ``at`` (and the inequalities ``also`` that the box was solved with) by the box."""
        gone = [at, *also]
        self.atoms = [x for x in self.atoms if not any(x is g for g in gone)]
        for b in box:
            self.atoms += self._normalize(b, at.guard, at.verdict)
        for g in gone:
            if g.forced is None:
                self.boxed.append(g.guard)

    def _specialize_options(self, at=None) -> list:
        """The last resort for a guard over several dims built from floors or remainders that no
        lattice, relation or box expresses (or beside a lattice or a relation, for ``at``):
        specialize one of its dims to the example's size (each is tried; the widest plan wins),
        the guard then decides the others' ranges."""
        for cand in self.atoms if at is None else [at]:
            if not 2 <= len(cand.names) <= _MAX_LATTICE_DIMS or not _has_lattice_ops(cand.expr):
                continue
            return [functools.partial(_Plan._specialize, at=cand, name=n)
                    for n in sorted(cand.names, key=self.order) if n in self.hints]
        return []

    def _specialize(self, at, name) -> None:
        if at.forced is None:
            self.chosen.append(at.guard)
        self._relate(at, name, sympy.Integer(self.hints[name]))

    def _pin_step(self) -> bool:
        """Pin the fewest per-dim terms of a product equality over several dims (the last resort).

        Each dim enters the equality through one term (:func:`_dim_terms`): the dim itself
        (``h*w == 16``) or one expression of it (the downsampled size ``((h - 1)//2)//2`` of a
        flattened conv output).  Pinning a term to its example value keeps every size of the
        dim that gives the same value (``((h - 1)//2)//2 == 3`` is ``h`` in [13, 16]; the
        range search decides it), so it admits at least what pinning the dim does.
        """
        for at in self.atoms:
            e = at.expr
            if len(at.names) < 2 or not isinstance(e, sympy.Eq) or at.linear() is not None:
                continue
            terms = _dim_terms(e.lhs - e.rhs)
            if terms is None:
                continue
            names = sorted(terms, key=self.order)
            values = {n: sympy.Integer(evaluate(terms[n], self.hints)) for n in names}
            for size in range(1, len(names)):
                for subset in itertools.combinations(names, size):
                    rest = e.xreplace({terms[n]: values[n] for n in subset})
                    rest = canonicalize(rest, self.declared)
                    if rest is sympy.true or len(rest.free_symbols) <= 1 or self._orientable(rest):
                        self._pin(at, subset, terms, values)
                        return True
        return False

    def _pin(self, at, subset, terms, values) -> None:
        """Pin each dim of ``subset`` through its term: a bare dim becomes a constant, a term an atom."""
        bare = [n for n in subset if terms[n] == self.sym(n)]
        for n in bare:
            self.apply(n, values[n], at.guard, at.verdict)
        shaped = [n for n in subset if n not in bare]
        if not shaped:
            return
        rep = {terms[n]: values[n] for n in shaped}
        atoms = []
        for other in self.atoms:
            if other.names & set(shaped) and other.expr.has(*rep):
                atoms += self._normalize(other.expr.xreplace(rep), other.guard, other.verdict, other.forced)
            else:
                atoms.append(other)
        for n in shaped:
            atoms += self._normalize(sympy.Eq(terms[n], values[n]), at.guard, at.verdict)
        self.atoms = atoms

    def _split_step(self) -> bool:
        """A linear inequality over several roots (a derived dim's declared range ``dx + dy <= 100``,
        or a guard ``b <= a``): split it into a box of per-root bounds around the example.

        The box is one of many (no box is the widest), so it narrows what the model handles;
        but the spec cannot state a relation ``b <= a``, and a fix that closes in one step
        beats none.  Derived ranges split first; a guard's box is the last resort (after
        relations, unlocking and pinning found nothing).
        """
        for forced_only in (True, False):
            if self._split_atoms(forced_only):
                return True
        return False

    def _split_atoms(self, forced_only: bool) -> bool:
        for i, at in enumerate(self.atoms):
            if (forced_only and at.forced is None) or len(at.names) < 2:
                continue
            found = self._box_with(at)
            if found is None:
                continue
            box, also = found
            self._use_box(at, box, also)
            return True
        return False

    def _box_with(self, at):
        """``(box, also)``: the box for the inequality ``at`` solved together with ``also``, the
        other guards' inequalities over its dims (``m <= n + 29`` beside ``n <= m + 29``: one box
        for both is wider than the widest for the first and then what the second leaves); None
        when no box implies ``at``.  A derived dim's own range (``dx + dy <= 100``) is split
        around the example alone."""
        req = self._requirement(at.expr) if at.forced is None else None
        if req is None:
            box = self._box(at.expr)
            return None if box is None else (box, [])
        also, reqs = [], [req]
        for other in self.atoms:
            if other is at or other.forced is not None or len(other.names) < 2 or not other.names <= at.names:
                continue
            r = self._requirement(other.expr)
            if r is not None:
                also.append(other)
                reqs.append(r)
        box = self._monotone_box(reqs) if also else None
        if box is None:
            also, box = [], self._monotone_box([req])
        return None if box is None else (box, also)

    def _requirement(self, rel):
        """The :class:`.boxes.Requirement` of a monotone inequality over several dims (sums of
        floors or of dims, products of nonnegative sizes or floors: ``dx*dy <= 4096``, a
        BatchNorm's ``b*h*w >= 2``; a disequality by the side the example takes, :meth:`_sided`);
        None for anything else."""
        rel = self._sided(rel)
        if not isinstance(rel, (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)):
            return None
        diff = rel.lhs - rel.rhs if isinstance(rel, (sympy.Ge, sympy.Gt)) else rel.rhs - rel.lhs
        signs = self._signs(diff)
        if not signs or len(signs) < 2 or any(n not in self.hints for n in signs):
            return None
        return Requirement(diff, tuple(sorted(signs.items())), 1, isinstance(rel, (sympy.Lt, sympy.Gt)))

    def _sided(self, rel):
        """``rel`` as an inequality a box can imply: a disequality ``l != r`` becomes the strict
        side the example takes (``b != c`` at b = 3, c = 4 is ``b < c``), since a box of ranges
        around the example implies ``l != r`` only by keeping one side; anything else unchanged."""
        if not isinstance(rel, sympy.Ne):
            return rel
        try:
            v = numeric.value(rel.lhs - rel.rhs, {s.name: self.hints[s.name] for s in rel.free_symbols
                                                  if s.name in self.hints})
        except numeric.NumericError:
            return rel
        if isinstance(v, bool) or v == 0:
            return rel
        return sympy.Gt(rel.lhs, rel.rhs) if v > 0 else sympy.Lt(rel.lhs, rel.rhs)

    def _box(self, rel):
        """Per-root bounds around the example implying the linear inequality ``rel``, or None."""
        rel = self._sided(rel)
        if not isinstance(rel, (sympy.Le, sympy.Lt, sympy.Ge, sympy.Gt)):
            return None
        diff = rel.lhs - rel.rhs if isinstance(rel, (sympy.Ge, sympy.Gt)) else rel.rhs - rel.lhs
        strict = isinstance(rel, (sympy.Lt, sympy.Gt))
        form = _linear_form(diff)
        if form is not None and any(n in self.ctx.span for n in form[0]):
            # other example sets to contain: the corner search starts its ends at them
            signs = self._signs(diff)
            if signs and all(n in self.hints for n in signs):
                return self._monotone_box([Requirement(diff, tuple(sorted(signs.items())), 1, strict)])
        if form is None and diff.has(sympy.floor, sympy.ceiling):
            signs = self._signs(diff)
            if signs and all(n in self.hints for n in signs):
                box = self._monotone_box([Requirement(diff, tuple(sorted(signs.items())), 1, strict)])
                if box is not None:
                    return box
            # b // 2 <= a: a box for the linear bound b/2 <= a implies it (diff >= its lower bound)
            diff = floor_relaxed(diff, upper=False)
            form = _linear_form(diff)
        if form is None:
            return None
        coeffs, const = form   # sum(coeffs*x) + const >= 0 (positively scaled, so same direction)
        if strict:
            const -= 1
        slack = sum(c * self.hints[n] for n, c in coeffs.items()) + const
        if slack < 0:
            return None
        names = sorted(coeffs, key=self.order)
        # The slack is shared out evenly, but a root never takes more than its declared range
        # leaves it (q <= 4 beside p + q <= 128 takes 2, and p the rest): water-filling.
        room = {}
        for n in names:
            c = coeffs[n]
            lo, hi = self.declared.get(n, (1, None))
            edge = (self.hints[n] - lo) if c > 0 and lo is not None else (
                (hi - self.hints[n]) if c < 0 and hi is not None else None)
            room[n] = None if edge is None else max(edge, 0) * abs(c)
        share = dict.fromkeys(names, 0)
        left, open_ = slack, list(names)
        while left > 0 and open_:
            even = left // len(open_)
            extra = left % len(open_)
            full = []
            for i, n in enumerate(open_):
                want = even + (1 if i < extra else 0)
                cap = None if room[n] is None else room[n] - share[n]
                take = want if cap is None else min(want, cap)
                share[n] += take
                left -= take
                if cap is not None and take >= cap:
                    full.append(n)
            if not full:
                break
            open_ = [n for n in open_ if n not in full]
        out = []
        for n in names:
            c = coeffs[n]
            x = self.sym(n)
            out.append(x >= self.hints[n] - share[n] // c if c > 0 else x <= self.hints[n] + share[n] // -c)
        return out

    def _monotone_box(self, reqs: list):
        """Per-dim bounds around the example under which every :class:`.boxes.Requirement` of
        ``reqs`` holds (``diff >= 0``, or ``> 0``, or ``<= 0``: both for an equality), each
        ``diff`` monotone in each dim (:func:`.periods.monotone_signs`: floors of linear forms,
        ``b // 2 + 3 <= a // 2``, and products of nonnegative ones, ``(a // 2) * (b // 3) <= 30``);
        None when the example's corner fails.

        Over a box the smallest value is at the corner where each dim is at its worst end (the
        lower one where ``diff`` grows with it) and the largest at the opposite one, so the
        corners decide; :func:`.boxes.widest_box` finds the box admitting the most sizes
        within what each dim's own guards leave it (an end no corner needs is left where it is)."""
        names = sorted({n for r in reqs for n, _ in r.signs})
        singles = self._singles()
        ranges = {n: self._own_extent(n, singles.get(n, [])) for n in names}
        key = (tuple(reqs), tuple(sorted(ranges.items())), tuple((n, self.hints[n]) for n in names))
        if key not in self.ctx.boxes:  # the forks of a lattice step meet the same guard again
            span = {n: self.ctx.span[n] for n in names if n in self.ctx.span}
            self.ctx.boxes[key] = widest_box(reqs, self.hints, ranges, span=span)
        box = self.ctx.boxes[key]
        if box is None:
            return None
        out = []
        for n in sorted(box, key=self.order):
            lo, hi = box[n]
            x = self.sym(n)
            if lo is not None:
                out.append(x >= lo)
            if hi is not None:
                out.append(x <= hi)
        return out

    def _own_extent(self, name, conds):
        """The sizes of ``name`` its own atoms leave around the example (the widest range or
        lattice :meth:`_decide` finds, as its ends): a box reaching past them buys nothing, and
        counting sizes there would trade away sizes the dim keeps (``a // 4 == 1`` beside
        ``a // 4 <= b`` leaves ``a`` in [4, 7], so ``b >= 1`` is what the box needs)."""
        declared = self.declared.get(name, (1, None))
        if not conds:
            return declared
        dec = self._decide(name, conds)
        if dec.kind == "fail":
            return declared
        lo, hi = (dec.lo, dec.hi) if dec.kind == "range" else (
            None if dec.lo is None else dec.k * dec.lo + dec.c, None if dec.hi is None else dec.k * dec.hi + dec.c)
        return lo, hi

    def _signs(self, diff):
        """:func:`.periods.monotone_signs`, a product's factors tested >= 0 over the declared ranges."""
        def nonnegative(e) -> bool:
            lo = bounds(e, {n: self.declared.get(n, (1, None)) for n in (s.name for s in e.free_symbols)})[0]
            return lo >= 0
        return monotone_signs(diff, nonnegative)

    # -- per-symbol decisions ------------------------------------------------------------
    def _final(self) -> None:
        for at in self.atoms:
            if not at.names and at.expr is sympy.false and not any(u.guard == at.guard for u in self.unfixable):
                self.unfixable.append(Unfixable(at.guard, None, "the example sizes are outside the declared ranges"))
            if len(at.names) >= 2 and not any(u.guard == at.guard for u in self.unfixable):
                names = ", ".join(sorted(at.names, key=self.order))
                forms = {"increasing": "dy = k*dx + c (k >= 1)", "affine": "dy = k*dx + c",
                         "linear": "dy = k*dx + c or dz = dx + dy"}[self.ctx.relations]
                cex = at.verdict.counterexample if at.verdict is not None else None
                spread = [f"{n} in [{self.ctx.span[n][0]}, {self.ctx.span[n][1]}]"
                          for n in sorted(at.names, key=self.order)
                          if self.ctx.span.get(n, (None, None))[0] != self.ctx.span.get(n, (None, None))[1]]
                sets = (f"; a box of ranges holding every example set ({', '.join(spread)}) does not make it "
                        "hold on the whole box") if spread else ""
                self.unfixable.append(Unfixable(at.guard, cex, (
                    f"the guard ties {names} by `{at.expr}`; a fix can tie dims only as {forms}, or pin "
                    "the dims of a product equality to the example's sizes, and narrowing each dim "
                    f"separately would refuse sizes the model handles{sets}")))
        singles = self._singles()
        guard_of = {}
        for at in self.atoms:
            if len(at.names) == 1:
                guard_of.setdefault(next(iter(at.names)), at)
        for name in sorted(singles, key=self.order):
            if name in self.subst:
                continue
            dec = self._decide(name, singles[name])
            if dec.kind == "fail":
                at = guard_of[name]
                if not any(u.guard == at.guard for u in self.unfixable):
                    self.unfixable.append(Unfixable(at.guard, {name: self.hints[name]},
                                                    "the example sizes themselves violate this guard"))
                continue
            self.decisions[name] = dec
        for name, dec in list(self.decisions.items()):
            if dec.kind == "div":
                h = self.hints[name]
                root = self._new_root(name, (h - dec.c) // dec.k)
                self.declared[root] = (dec.lo, dec.hi)
                self.decisions[root] = _Decision("range", dec.lo, dec.hi)
                del self.decisions[name]
                self._compose(name, dec.k * self.sym(root) + dec.c)
        for root in list(self.new_roots):  # a helper root holding one value is a constant
            dec = self.decisions.get(root)
            lo, hi = (dec.lo, dec.hi) if dec is not None else self.declared[root]
            if root not in self.subst and lo is not None and lo == hi:
                self._compose(root, sympy.Integer(lo))
        self._tidy_root_names()

    def _tidy_root_names(self) -> None:
        """Drop the helper roots that became derived (``_a = 3*__a + 2`` inside ``a = 6*__a + 4``)
        and give each remaining one the shortest free name (``a = 6*_a + 4``)."""
        for r in [r for r in self.new_roots if r in self.subst]:
            del self.subst[r]
            self.new_roots.remove(r)
            self.names.remove(r)
            self.declared.pop(r, None)
            self.hints.pop(r, None)
            self.decisions.pop(r, None)
        taken = set(self.ctx.names) | set(self.ctx.hints) | set(self.new_roots)
        rename = {}
        for r in self.new_roots:
            short = "_" + r.lstrip("_")
            if short != r and short not in taken and short not in rename.values():
                rename[r] = short
        if not rename:
            return
        syms = {old: make_symbol(new, self.declared[old][0]) for old, new in rename.items()}
        for d in self.subst:
            self.subst[d] = _subs_names(self.subst[d], syms)
        for old, new in rename.items():
            for table in (self.declared, self.hints, self.decisions):
                if old in table:
                    table[new] = table.pop(old)
            self.new_roots[self.new_roots.index(old)] = new
            self.names[self.names.index(old)] = new

    def _compose(self, name, expr) -> None:
        expr = sympy.expand(expr)
        rep = {name: expr}
        for d in list(self.subst):
            self.subst[d] = sympy.expand(_subs_names(self.subst[d], rep))
        self.subst[name] = expr

    def _range_of(self, name):
        dec = self.decisions.get(name)
        return (dec.lo, dec.hi) if dec is not None else self.declared[name]

    def roots(self) -> list:
        """The free roots of the final contract (user dims not derived, then helper roots in use)."""
        used = set()
        for d in self.ctx.names:
            if d in self.subst:
                used |= {s.name for s in self.subst[d].free_symbols}
        return ([n for n in self.ctx.names if n not in self.subst]
                + [r for r in self.new_roots if r not in self.subst and r in used])

    def key(self):
        """Wider is larger: fewer unfixable guards, then more unbounded roots, then more sizes.

        An unbounded root counts the sizes its dims take per unit of length: a root that a dim
        steps through with scale ``k`` (``x = 2*_x``) admits ``1/k`` of them, so of two plans with
        as many unbounded roots the one with the coarser lattices is the narrower."""
        scale: dict = {}
        for d in self.ctx.names:
            if d in self.subst and not self.subst[d].is_Integer:
                for r, k in _relation(d, self.subst[d], self.order).terms:
                    scale[r] = max(scale.get(r, 1), abs(k))
        n_inf, log_count = 0, 0.0
        for r in self.roots():
            lo, hi = self._range_of(r)
            if hi is None or lo is None:
                n_inf += 1
                log_count -= math.log(scale.get(r, 1))
            else:
                log_count += math.log(max(hi - lo + 1, 1))
        return (-len({id(u.guard) for u in self.unfixable}), n_inf, round(log_count, 9))

    def fixes(self) -> list:
        new_roots, ranges_fixes, consts, rels = [], [], [], []
        roots = self.roots()
        for r in roots:
            if r in self.new_roots:
                lo, hi = self._range_of(r)
                new_roots.append(RangeFix(r, lo, hi, new_root=True))
        for n in self.ctx.names:
            if n in self.subst:
                e = self.subst[n]
                if e.is_Integer:
                    consts.append(ConstantFix(n, int(e)))
                else:
                    rels.append(_relation(n, e, self.order))
            elif n in self.decisions:
                lo, hi = self._range_of(n)
                if lo is not None and lo == hi:
                    consts.append(ConstantFix(n, lo))
                elif (lo, hi) != self.declared[n]:
                    ranges_fixes.append(RangeFix(n, lo, hi))
        return new_roots + ranges_fixes + consts + rels

    # -- the widest range / lattice of one symbol -------------------------------------------
    def _decide(self, name, conds) -> _Decision:
        conds = [c for c in conds if c is not sympy.true]
        lo, hi = self.declared[name]
        if not conds:
            return _Decision("range", lo, hi)
        key = (name, tuple(conds), lo, hi, self.hints[name])
        dec = self._decided.get(key)
        if dec is None:
            dec = self._decided[key] = self._decide_uncached(name, conds, lo, hi, self.hints[name])
        return dec

    def _decide_uncached(self, name, conds, lo, hi, h) -> _Decision:
        conj = sympy.And(*conds)
        cands = [(1, 0)]
        if any(_has_lattice_ops(c) for c in conds):
            cands += _lattices(conds, h, math.prod(divisor_product(c, name) for c in conds))
        scanned = []
        for idx, (k, c) in enumerate(cands):
            tlo = lo if k == 1 else (None if lo is None else max(0, -((c - lo) // k)))
            thi = hi if k == 1 else (None if hi is None else (hi - c) // k)
            th = (h - c) // k
            s = _scan(lambda t, k=k, c=c: numeric.holds(conj, {name: k * t + c}), th, tlo, thi)
            if s is None:
                if idx == 0:
                    return _Decision("fail", lo, hi)
                continue
            scanned.append((s, idx, k, c, tlo, thi, th))
        scanned.sort(key=lambda x: (-_count(*x[0].bound), x[1]))
        best = None  # (count, idx, decision)
        for s, idx, k, c, tlo, thi, th in scanned:
            ub = _count(*s.bound)
            if best is not None and (ub < best[0] or (ub == best[0] and idx > best[1])):
                continue
            if s.exact:
                a, b = s.a, s.b
            else:
                if k == 1:
                    sym, tconds = self.sym(name), [_subs_names(x, {name: self.sym(name)}) for x in conds]
                else:
                    sym = make_symbol(f"_t{name}", 0)
                    tconds = [canonicalize(_subs_names(x, {name: k * sym + c}), {}) for x in conds]
                a, b = self._widest(tconds, sym, tlo, thi, th, s)
            cnt = _count(a, b)
            if best is None or cnt > best[0] or (cnt == best[0] and idx < best[1]):
                best = (cnt, idx, _Decision("range" if k == 1 else "div", a, b, k, c))
        return best[2]

    def _holds(self, conds, sym, lo, hi, want_cex: bool = False):
        s = ShapeSolver(self.ctx.timeout_ms, cache=self.ctx.cache)
        s.declare(sym.name, lo, hi)
        v = s.implies(sympy.And(*conds))
        return v if want_cex else v.proved

    def _widest(self, conds, sym, lo, hi, h, scan):
        """Widest [a, b] with lo <= a <= h <= b <= hi where all conds hold, given a scan.

        ``scan`` already enumerated [scan.a, scan.b] (all hold); an end the scan
        reached exactly (a failing integer or the range's end) is kept; the other is
        found by binary search with solver queries over the whole candidate range.
        """
        b = scan.b if scan.exact_hi else self._far_end(conds, sym, h, scan.b, hi, +1)
        a = scan.a if scan.exact_lo else self._far_end(conds, sym, h, scan.a, lo, -1)
        return a, b

    def _far_end(self, conds, sym, h, good, limit, step):
        """The end farthest from ``h`` in direction ``step`` (+1 up, -1 down) such that all
        ``conds`` hold between ``h`` and it; ``good`` is known to hold, ``limit`` is the
        range's end (None: unbounded).

        One solver query over the whole candidate side first; otherwise a binary search
        whose failing queries move the bad end to their counterexample when it falls
        inside the probed span.  Upward and unbounded with no counterexample, the bad end
        doubles until a query fails.
        """
        name = sym.name

        def span(end):
            return (h, end) if step > 0 else (end, h)

        v = self._holds(conds, sym, *span(limit), want_cex=True)
        if v.proved:
            return limit
        if v.refuted:
            bad = v.counterexample[name]
        elif limit is not None:
            bad = limit
        else:
            bad = 2 * good + 2 if step > 0 else good - 1
        if (bad - good) * step <= 0:
            bad = good + step
        if limit is None and not v.refuted and step > 0:
            for _ in range(62):  # unknown over [h, oo): grow until a query fails
                if not self._holds(conds, sym, h, bad):
                    break
                good, bad = bad, bad * 2
        while abs(bad - good) > 1:
            mid = good + step * (abs(bad - good) // 2)
            vm = self._holds(conds, sym, *span(mid), want_cex=True)
            if vm.proved:
                good = mid
            else:
                cx = vm.counterexample[name] if vm.refuted else None
                inside = cx is not None and cx != good and min(good, mid) <= cx <= max(good, mid)
                bad = cx if inside else mid
        return good


def _relation(name, expr, order) -> RelationFix:
    coeffs, const = {}, 0
    for term in sympy.Add.make_args(expr):
        c, rest = term.as_coeff_Mul()
        if rest == 1:
            const += int(c)
        else:
            coeffs[rest.name] = coeffs.get(rest.name, 0) + int(c)
    terms = tuple(sorted(((r, k) for r, k in coeffs.items() if k), key=lambda rk: order(rk[0])))
    return RelationFix(name, terms=terms, offset=const)


@dataclass
class _Scan:
    a: int
    b: int
    exact_lo: bool     # a is the range's end or the integer below it fails
    exact_hi: bool
    bound: tuple       # (lo, hi) no valid interval can exceed (None = unbounded)

    @property
    def exact(self) -> bool:
        return self.exact_lo and self.exact_hi


def _scan(ok, h, lo, hi, width: int = _SCAN) -> Optional[_Scan]:
    """Integers around ``h`` where ``ok`` holds; None if it does not hold at ``h`` itself.

    Walks up to ``width`` steps each way; a step that fails (or cannot be
    evaluated) ends that side exactly, and so does the range's end.
    """
    if ok(h) is not True:
        return None
    b, exact_hi = h, False
    for t in range(h + 1, h + width + 1):
        if hi is not None and t > hi:
            exact_hi = True
            break
        if ok(t) is not True:
            exact_hi = True
            break
        b = t
    else:
        exact_hi = hi is not None and b >= hi
    a, exact_lo = h, False
    for t in range(h - 1, h - width - 1, -1):
        if lo is not None and t < lo:
            exact_lo = True
            break
        if ok(t) is not True:
            exact_lo = True
            break
        a = t
    else:
        exact_lo = lo is not None and a <= lo
    return _Scan(a, b, exact_lo, exact_hi, (a if exact_lo else lo, b if exact_hi else hi))


def _divisors(h: int) -> list:
    if h < 2:
        return []
    small = [d for d in range(2, math.isqrt(h) + 1) if h % d == 0]
    return sorted(set(small + [h // d for d in small] + [h]))


def _moduli(conds) -> set:
    """Integer moduli / divisors (``Mod(e, m)``, ``floor(e/m)``, ``ceiling(e/m)``) in ``conds``."""
    out = set()
    for c in conds:
        for m in c.atoms(sympy.Mod):
            if m.args[1].is_Integer and int(m.args[1]) > 1:
                out.add(int(m.args[1]))
        for f in c.atoms(sympy.floor, sympy.ceiling):
            den = sympy.fraction(sympy.together(f.args[0]))[1]
            if den.is_Integer and int(den) > 1:
                out.add(int(den))
    return out


def _lattices(conds, h: int, nested: int = 1) -> list:
    """Candidate roots ``x = k*_x + c`` (0 <= c < k, ``c = h mod k`` keeps the example).

    ``k`` is the least common multiple of every modulus the atoms use (56, 45 and
    8 give 2520), its divisors, the moduli's divisors, the divisors of ``nested`` (the
    product of the divisors the symbol passes through, :func:`.periods.divisor_product`:
    ``((x + 3) // 2) % 2`` repeats every 4 although its one modulus is 2) and the divisors
    of the example size; smallest ``k`` first, at most ``_MAX_DIVISORS`` of them besides the
    LCM and the moduli's product (nested ``floor``/``Mod`` repeat with it).
    """
    mods = _moduli(conds)
    ks = set(_divisors(h))
    if 1 < nested <= 10 ** 6:
        ks.update(_divisors(nested))
    lcm = product = 1
    for m in mods:
        ks.update(_divisors(m))
        lcm = lcm * m // math.gcd(lcm, m)
        product *= m
    if lcm > 1:
        ks.update(_divisors(lcm) if lcm <= 10 ** 12 else [lcm])
    picked = sorted(ks)[:_MAX_DIVISORS]
    if lcm > 1 and lcm not in picked:
        picked.append(lcm)
    # nested moduli multiply: ((t - 1) // 2) % 4 repeats every 8, which no single modulus gives
    if lcm < product <= 10 ** 6 and product not in picked:
        picked.append(product)
    return [(k, h % k) for k in sorted(picked)]


def _divisors_with_one(n: int) -> list:
    return [1] + _divisors(n)


def _count(lo, hi):
    return float("inf") if hi is None or lo is None else hi - lo + 1


# -- step 8: verification ----------------------------------------------------------------
def _verify(ctx, plan, guards, out) -> None:
    """Substitute every fix and prove every fixable guard under the fixed ranges; check the hints."""
    fixed = {f.name: f for f in out.fixes}
    hints = dict(plan.hints)
    values: dict = {}
    s = ShapeSolver(ctx.timeout_ms)
    ranges = dict(ctx.ranges)
    for f in out.fixes:
        if isinstance(f, RangeFix):
            ranges[f.name] = (f.lower, f.upper)

    def value_of(name, stack=()):
        if name in values:
            return values[name]
        f = fixed.get(name)
        if isinstance(f, ConstantFix):
            v = sympy.Integer(f.value)
        elif isinstance(f, RelationFix) and name not in stack:
            v = sympy.Integer(f.offset) + sum((k * value_of(r, stack + (name,)) for r, k in f.terms),
                                              sympy.Integer(0))
        else:
            lo, hi = ranges.get(name, (1, None))
            v = s.declare(name, lo, hi)
        values[name] = v
        return v
    ok = all(_hint_ok(f, hints) for f in out.fixes)
    unfixable = {u.guard for u in out.unfixable}
    for g in guards:
        if g in unfixable:
            continue
        rep = {sym: value_of(sym.name) for sym in g.free_symbols}
        v = s.implies(g.xreplace(rep))
        if not v.proved:
            v2 = _verify_by_assumptions(ctx, out, g)
            if v2.proved:
                continue
            ok = False
            out.unfixable.append(Unfixable(g, v.counterexample,
                                           f"no fix form makes the dims imply it ({v.status}: {v.reason})"))
    out.verified = ok


def _verify_by_assumptions(ctx, out, g) -> Verdict:
    """The same check with the fixes as solver assumptions (for a substituted guard z3 could not decide)."""
    s = ShapeSolver(ctx.timeout_ms)
    fixed = {f.name: f for f in out.fixes}
    for name in list(ctx.ranges) + [f.name for f in out.fixes if isinstance(f, RangeFix) and f.new_root]:
        f = fixed.get(name)
        if isinstance(f, RangeFix):
            s.declare(name, f.lower, f.upper)
        elif isinstance(f, RelationFix):
            s.declare(name, None, None)
        else:
            lo, hi = ctx.ranges.get(name, (1, None))
            s.declare(name, lo, hi)
    for f in out.fixes:
        if isinstance(f, ConstantFix):
            s.assume(sympy.Eq(s.symbol(f.name), f.value))
        elif isinstance(f, RelationFix):
            rhs = sympy.Integer(f.offset) + sum((k * s.symbol(r) for r, k in f.terms), sympy.Integer(0))
            s.assume(sympy.Eq(s.symbol(f.name), rhs))
    return s.implies(g)


def _hint_ok(f, hints) -> bool:
    if isinstance(f, RangeFix):
        h = hints.get(f.name)
        return h is not None and (f.lower is None or h >= f.lower) and (f.upper is None or h <= f.upper)
    if isinstance(f, ConstantFix):
        return hints.get(f.name) == f.value
    if any(r not in hints for r in f.roots):
        return False
    return hints.get(f.name) == f.offset + sum(k * hints[r] for r, k in f.terms)
