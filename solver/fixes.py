"""Fix synthesis: from violated guards to verified ``dynamic_shapes`` fix lines.

``suggest_fixes(guards, dims, hints)`` follows issue 2's rules, in this order:

1. A guard the declared ranges already imply gets no fix.
2. Each violated guard is canonicalized and split into atoms: ``And`` into its
   parts, ``Or`` into the disjunct the example sizes (``hints``) satisfy
   (preferring a relation between dims over pinning a dim to a constant).
3. Linear equalities between two dims become relations ``y = k*x + c`` (k >= 1
   integer); the derived dim is substituted into every other atom, and its own
   declared range becomes atoms on the root (``dy = 2*dx`` with ``dy <= 100``
   gives ``dx <= 50``). Any other guard over several dims is ``unfixable``.
4. All atoms on one symbol are conjoined. Its widest sound range containing the
   example size is found by binary search with solver queries; for guards with
   ``Mod``/``floor`` a lattice root ``x = k*_x + c`` is tried as well (k divides
   the example size, c = 0; or k divides a modulus of the guards and c is the
   example's remainder: ``Mod(n + 1, 2)`` gives ``n = 2*_n + 1``), and the form
   admitting more sizes wins (ties: the plain range). A range holding one value is a specialization ``x = 4``.
5. The whole fix set is verified: with every fix applied, each guard is proved,
   and the example sizes satisfy every fix. A fix equal to the current
   declaration is never emitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

import sympy

from .canon import canonicalize
from .decide import ShapeSolver, Verdict, evaluate, make_symbol

_MAX_DIVISORS = 48  # divisibility roots tried per symbol (smallest divisors first)


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
    """``name = scale*root + offset`` (scale >= 1): ``name`` becomes a derived dim."""

    name: str
    root: str
    scale: int = 1
    offset: int = 0

    @property
    def line(self) -> str:
        term = self.root if self.scale == 1 else f"{self.scale}*{self.root}"
        if self.offset > 0:
            term += f" + {self.offset}"
        elif self.offset < 0:
            term += f" - {-self.offset}"
        return f"{self.name} = {term}"


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
    """

    fixes: list = field(default_factory=list)
    unfixable: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    verified: bool = True

    @property
    def lines(self) -> list:
        return [f.line for f in self.fixes]

    def __str__(self) -> str:
        return "\n".join(self.lines)


# -- entry point ------------------------------------------------------------------
def suggest_fixes(guards, dims: Mapping, hints: Mapping, *, timeout_ms: int = 200) -> FixSuggestion:
    """Verified fixes that make the declared dims imply every guard.

    Args:
        guards: sympy booleans the model requires, over root size symbols.
        dims: user dims ``{name: (lower, upper_or_None)}``.
        hints: example size of every symbol ``{name: int}``.
        timeout_ms: z3 time limit per query.

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
    guards = [sympy.sympify(g) for g in guards]
    ranges = {n: (_lo(r[0]), r[1]) for n, r in dims.items()}
    hints = {(k.name if isinstance(k, sympy.Symbol) else str(k)): int(v) for k, v in hints.items()}
    base = ShapeSolver(timeout_ms)
    for n, (lo, hi) in ranges.items():
        base.declare(n, lo, hi)
    out = FixSuggestion()
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

    ctx = _Ctx(ranges, hints, timeout_ms)
    atoms: list = []
    for g, canonical, v in violated:
        for a in _resolve(sympy.to_nnf(canonical, simplify=False), hints, ranges):
            atoms.append((a, g, v))
    atoms = _relations(ctx, atoms, out)
    _per_symbol(ctx, atoms, out)
    _verify(ctx, [g for g, _, _ in violated], out)
    return out


def _lo(lo):
    return None if lo is None else int(lo)


class _Ctx:
    """Working state of one ``suggest_fixes`` call."""

    def __init__(self, ranges, hints, timeout_ms):
        self.ranges = dict(ranges)          # name -> (lo, hi|None), declared
        self.hints = dict(hints)
        self.timeout_ms = timeout_ms
        self.cache: dict = {}               # shared verdict cache for the range searches
        self.relations: dict = {}           # derived name -> (root, k, c)
        self.forced: dict = {}              # root name -> extra atoms from derived ranges
        self.names = list(ranges)           # order of preference for roots

    def sym(self, name):
        return make_symbol(name, self.ranges.get(name, (1, None))[0])


# -- step 2: pick atoms ----------------------------------------------------------------
def _resolve(e, hints, ranges) -> list:
    """Atoms of ``e``: And split, Or resolved by the disjunct the example satisfies."""
    if e is sympy.true:
        return []
    if isinstance(e, sympy.And):
        return [a for part in e.args for a in _resolve(part, hints, ranges)]
    if isinstance(e, sympy.Or):
        true_args = [a for a in e.args if evaluate(a, hints) is True]
        if not true_args:
            return [e]  # hints outside the ranges: leave it whole (reported, not narrowed)
        true_args.sort(key=_disjunct_rank)
        return _resolve(canonicalize(true_args[0], ranges), hints, ranges)
    return [e]


def _disjunct_rank(a) -> int:
    # prefer a relation between dims over pinning one dim to a constant (dx == 1)
    if isinstance(a, sympy.Eq) and len(a.free_symbols) == 1 and (a.lhs.is_Number or a.rhs.is_Number):
        return 1
    return 0


# -- step 3: relations ----------------------------------------------------------------
def _linear2(atom):
    """For ``Eq`` linear in exactly two symbols: (x, a, y, b, c) with a*x + b*y + c == 0."""
    if not isinstance(atom, sympy.Eq) or len(atom.free_symbols) != 2:
        return None
    diff = atom.lhs - atom.rhs
    syms = sorted(atom.free_symbols, key=lambda s: s.name)
    if not diff.is_polynomial(*syms):
        return None
    _, prim = sympy.expand(diff).as_content_primitive()  # a rational content keeps the degree
    poly = sympy.Poly(prim, *syms)
    if poly.total_degree() != 1:
        return None
    x, y = syms
    a, b = poly.coeff_monomial(x), poly.coeff_monomial(y)
    c = poly.coeff_monomial(1)
    if not all(v.is_Integer for v in (a, b, c)) or a == 0 or b == 0:
        return None
    return x, int(a), y, int(b), int(c)


def _orient(ctx, lin):
    """(derived, root, k, c) with derived = k*root + c, k >= 1 integer; None if impossible."""
    x, a, y, b, c = lin
    options = []
    # y = (-a/b) x - c/b  needs |b| == 1 and a, b of opposite signs
    if abs(b) == 1 and a * b < 0:
        options.append((y, x, -a // b, -c // b))
    if abs(a) == 1 and a * b < 0:
        options.append((x, y, -b // a, -c // a))
    if not options:
        return None
    if len(options) == 1:
        return options[0]

    def pref(opt):
        derived, root, k, off = opt
        # keep an offset >= 0 (dx = dy + 1), then keep the earlier-declared dim as root
        order = ctx.names.index(root.name) if root.name in ctx.names else len(ctx.names)
        return (off < 0, order)
    return min(options, key=pref)


def _relations(ctx, atoms, out) -> list:
    """Turn two-dim linear equalities into RelationFix records; return the remaining atoms."""
    atoms = list(atoms)
    while True:
        idx = oriented = None
        for i, (a, g, v) in enumerate(atoms):
            lin = _linear2(a)
            oriented = _orient(ctx, lin) if lin is not None else None
            if oriented is not None:
                idx = i
                break
        if idx is None:
            break
        _, g, v = atoms.pop(idx)
        derived, root, k, c = oriented
        ctx.relations[derived.name] = (root.name, k, c)
        for name, (r, k2, c2) in list(ctx.relations.items()):
            if r == derived.name:  # an earlier relation rooted at the now-derived dim
                ctx.relations[name] = (root.name, k2 * k, k2 * c + c2)
        expr = k * root + c
        lo, hi = ctx.ranges.get(derived.name, (1, None))
        forced = ctx.forced.setdefault(root.name, [])
        forced += ctx.forced.pop(derived.name, [])  # the derived dim's own forced ranges move to the root
        if lo is not None:
            forced.append((expr >= lo, g, v))
        if hi is not None:
            forced.append((expr <= hi, g, v))
        new = []
        for a, g2, v2 in atoms:
            a2 = _subs_name(a, derived.name, expr)
            for part in _resolve(canonicalize(a2, ctx.ranges), ctx.hints, ctx.ranges):
                new.append((part, g2, v2))
        forced[:] = [(_subs_name(e, derived.name, expr), g2, v2) for e, g2, v2 in forced]
        atoms = new
    keep = []
    for a, g, v in atoms:
        if len(a.free_symbols) <= 1:
            keep.append((a, g, v))
        elif not any(u.guard == g for u in out.unfixable):
            names = ", ".join(sorted(s.name for s in a.free_symbols))
            out.unfixable.append(Unfixable(g, v.counterexample, (
                f"the guard ties {names} by `{a}`; a fix can only tie dims as dy = k*dx + c, "
                "and narrowing each dim separately would refuse sizes the model handles")))
    return keep


def _subs_name(e, name, value):
    rep = {s: value for s in e.free_symbols if s.name == name}
    return e.xreplace(rep) if rep else e


# -- step 4: one symbol at a time -------------------------------------------------------
def _per_symbol(ctx, atoms, out) -> None:
    by_sym: dict = {}
    for a, g, v in atoms:
        if not a.free_symbols:
            continue
        (s,) = a.free_symbols
        by_sym.setdefault(s.name, []).append(a)
    for root, extra in ctx.forced.items():
        if root not in ctx.relations:
            by_sym.setdefault(root, []).extend(e for e, _, _ in extra)
    ranges_fixes, consts, new_roots, rels = [], [], [], []
    for name in sorted(by_sym, key=lambda n: (ctx.names.index(n) if n in ctx.names else 1 << 30, n)):
        conds = [c for c in by_sym[name] if c is not sympy.true]
        lo, hi = ctx.ranges.get(name, (1, None))
        h = ctx.hints[name]
        sym = ctx.sym(name)
        conds = [_subs_name(c, name, sym) for c in conds]
        if not conds or _holds(ctx, conds, sym, lo, hi):
            continue
        best_lo, best_hi = _widest(ctx, conds, sym, lo, hi, h)
        best = ("range", best_lo, best_hi, 1, 0)
        if any(c.has(sympy.Mod, sympy.floor, sympy.ceiling) for c in conds):
            for k, c0 in _lattices(conds, h):
                t = make_symbol(f"_t{name}", 0)
                tconds = [canonicalize(_subs_name(c, name, k * t + c0), {}) for c in conds]
                tlo = None if lo is None else -((c0 - lo) // k)   # ceil((lo - c0) / k)
                thi = None if hi is None else (hi - c0) // k
                if tlo is not None and tlo < 0:
                    tlo = 0
                tcand = _widest(ctx, tconds, t, tlo if tlo is not None else 0, thi, (h - c0) // k)
                if _count(*tcand) > _count(best[1], best[2]):
                    best = ("div", tcand[0], tcand[1], k, c0)
        kind, blo, bhi, k, c0 = best
        if blo == bhi:
            consts.append(ConstantFix(name, blo * k + c0))
        elif kind == "range":
            if (blo, bhi) != (lo, hi):
                ranges_fixes.append(RangeFix(name, blo, bhi))
        else:
            root = _fresh_root(ctx, name)
            new_roots.append(RangeFix(root, blo, bhi, new_root=True))
            rels.append(RelationFix(name, root, k, c0))
            ctx.ranges[root] = (blo, bhi)
            ctx.hints[root] = (h - c0) // k
    for derived, (root, k, c) in ctx.relations.items():
        rels.append(RelationFix(derived, root, k, c))
    out.fixes = new_roots + ranges_fixes + consts + rels


def _fresh_root(ctx, name) -> str:
    root = f"_{name}"
    while root in ctx.ranges or root in ctx.hints:
        root = "_" + root
    return root


def _divisors(h: int) -> list:
    if h < 2:
        return []
    small = [d for d in range(2, int(h ** 0.5) + 1) if h % d == 0]
    divs = sorted(set(small + [h // d for d in small] + [h]))
    return divs[:_MAX_DIVISORS]


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


def _lattices(conds, h: int) -> list:
    """Candidate roots ``x = k*_x + c`` (0 <= c < k, ``c = h mod k`` keeps the example).

    ``k`` runs over the divisors of the example size (``c = 0``: ``n = 4*_n``)
    and over the moduli the guards use and their divisors (``Mod(n + 1, 2)``
    with ``n = 5`` gives ``n = 2*_n + 1``); smallest ``k`` first, at most
    ``_MAX_DIVISORS`` of them.
    """
    ks = set(_divisors(h))
    for m in _moduli(conds):
        ks.update(d for d in range(2, m + 1) if m % d == 0)
    return [(k, h % k) for k in sorted(ks)[:_MAX_DIVISORS]]


def _count(lo, hi):
    return float("inf") if hi is None else hi - lo + 1


def _holds(ctx, conds, sym, lo, hi, want_cex: bool = False):
    """Are all ``conds`` proved for ``sym`` in [lo, hi]? (With ``want_cex``: the verdict.)"""
    s = ShapeSolver(ctx.timeout_ms, cache=ctx.cache)
    s.declare(sym.name, lo, hi)
    v = s.implies(sympy.And(*conds))
    return v if want_cex else v.proved


def _widest(ctx, conds, sym, lo, hi, h):
    """Widest [a, b] with lo <= a <= h <= b <= hi (hi None = unbounded) where all conds hold.

    Binary search on each end, every step a solver query over the whole
    candidate range; a refuted query's counterexample shrinks the search.
    """
    name = sym.name
    # upper end
    v = _holds(ctx, conds, sym, h, hi, want_cex=True)
    if v.proved:
        b = hi
    else:
        good = h
        bad = v.counterexample[name] if v.refuted else (hi if hi is not None else 2 * h + 2)
        if bad <= good:
            bad = good + 1
        if hi is None and not v.refuted:
            for _ in range(62):  # unknown over [h, oo): grow until a query fails
                if not _holds(ctx, conds, sym, h, bad):
                    break
                good, bad = bad, bad * 2
        while bad - good > 1:
            mid = (good + bad) // 2
            vm = _holds(ctx, conds, sym, h, mid, want_cex=True)
            if vm.proved:
                good = mid
            else:
                bad = vm.counterexample[name] if vm.refuted and good < vm.counterexample[name] <= mid else mid
        b = good
    # lower end
    v = _holds(ctx, conds, sym, lo, h, want_cex=True)
    if v.proved:
        a = lo
    else:
        good = h
        bad = v.counterexample[name] if v.refuted else (lo if lo is not None else good - 1)
        if bad >= good:
            bad = good - 1
        while good - bad > 1:
            mid = (good + bad + 1) // 2
            vm = _holds(ctx, conds, sym, mid, h, want_cex=True)
            if vm.proved:
                good = mid
            else:
                bad = vm.counterexample[name] if vm.refuted and mid <= vm.counterexample[name] < good else mid
        a = good
    return a, b


# -- step 5: verification ----------------------------------------------------------------
def _verify(ctx, guards, out) -> None:
    """Apply every fix as an assumption and prove every fixable guard; check the hints."""
    s = ShapeSolver(ctx.timeout_ms)
    fixed = {f.name: f for f in out.fixes}
    hints = dict(ctx.hints)
    for name, (lo, hi) in ctx.ranges.items():
        f = fixed.get(name)
        if isinstance(f, RangeFix):
            s.declare(name, f.lower, f.upper)
        elif isinstance(f, RelationFix):
            s.declare(name, None, None)  # a derived dim's range comes from its root
        else:
            s.declare(name, lo, hi)
    for f in out.fixes:
        if isinstance(f, ConstantFix):
            s.assume(sympy.Eq(s.symbol(f.name), f.value))
        elif isinstance(f, RelationFix):
            s.assume(sympy.Eq(s.symbol(f.name), f.scale * s.symbol(f.root) + f.offset))
    ok = True
    for f in out.fixes:
        if not _hint_ok(f, hints):
            ok = False
    unfixable = {u.guard for u in out.unfixable}
    for g in guards:
        if g in unfixable:
            continue
        v = s.implies(g)
        if not v.proved:
            ok = False
            out.unfixable.append(Unfixable(g, v.counterexample,
                                           f"no fix form makes the dims imply it ({v.status}: {v.reason})"))
    out.verified = ok


def _hint_ok(f, hints) -> bool:
    if isinstance(f, RangeFix):
        h = hints.get(f.name)
        return h is not None and (f.lower is None or h >= f.lower) and (f.upper is None or h <= f.upper)
    if isinstance(f, ConstantFix):
        return hints.get(f.name) == f.value
    return hints.get(f.name) == f.scale * hints.get(f.root, 0) + f.offset
