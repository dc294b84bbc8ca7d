"""ShapeCtx: the only channel through which a shape rule emits requirements.

A rule gets symbolic shapes and returns output shapes; whatever must hold for
that answer to be right it states through the ctx, which forwards to a
:class:`SizeEnv` with the op name and the user's source line attached.  During
capture that is the capture's ShapeEnv (``capture/shape_env.py``), which decides
each requirement with the solver; :meth:`ShapeCtx.bare` builds one from plain
data (example sizes, ranges) that only records them, so a rule runs as a pure
function in a test.  Rules see the sizes only through the ctx's methods, never
the environment behind it.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Protocol, runtime_checkable

from ..records import GuardRecord, SourceLoc, is_sympy, sympy


def size_equality(lhs: Any, rhs: Any, kind: Any = None) -> Any:
    """``kind(lhs, rhs)`` (``sympy.Eq``, the default, or ``sympy.Ne``) of two sizes, decided here only
    when they differ by a number.

    sympy's own test of an equality between size expressions can be slow (``floor``'s
    ``_eval_is_eq`` rewrites both sides: tens of ms for ``Eq(s0, floor(s2/3 + 2/3))``,
    issue 13).  The guard pipeline decides the relation anyway (canonicalization, the
    example check, the solver), with the same outcome: a true one is proved and not
    recorded, a false one fails the example check.
    """
    kind = sympy.Eq if kind is None else kind
    lhs, rhs = sympy.sympify(lhs), sympy.sympify(rhs)
    gap = lhs - rhs
    if gap.is_Number:
        return kind(gap, 0)
    return kind(lhs, rhs, evaluate=False)


def is_static(d: Any) -> bool:
    return isinstance(d, int) or (is_sympy(d) and d.is_Integer)


def as_dim(d: Any) -> Any:
    """An int for numeric sizes, else the sympy expression."""
    if is_sympy(d) and d.is_Integer:
        return int(d)
    return d


# how the user wrote a binary op, for reasons ("broadcasting in `+`: seq with ...")
_OP_TEXT = {"numpy.add": "`+`", "numpy.subtract": "`-`", "numpy.multiply": "`*`", "numpy.divide": "`/`",
            "numpy.true_divide": "`/`", "numpy.floor_divide": "`//`", "numpy.remainder": "`%`",
            "numpy.power": "`**`", "numpy.matmul": "`@`", "numpy.equal": "`==`", "numpy.not_equal": "`!=`",
            "numpy.less": "`<`", "numpy.less_equal": "`<=`", "numpy.greater": "`>`",
            "numpy.greater_equal": "`>=`", "numpy.bitwise_and": "`&`", "numpy.bitwise_or": "`|`",
            "numpy.bitwise_xor": "`^`"}


def _size_text(d: Any, text: Callable[[Any], str] = str) -> str:
    """A size for a reason (printed by ``text``); a ``Min`` with a constant says it is a slice bounded by it."""
    if isinstance(d, sympy.Min):
        consts = [int(a) for a in d.args if a.is_Integer]
        if consts:
            return f"{text(d)}, a slice of at most {min(consts)}"
    window = isinstance(d, sympy.Max) and 0 in d.args
    if isinstance(d, sympy.Add):  # the Max(0, ...) dropped where it never applies (ShapeEnv.canon)
        window = all(isinstance(term.as_coeff_Mul()[1], sympy.Min) for term in d.args)
    if window:
        # the clamped length of a window ``table[a: a + t]``: ``Max(0, Min(c, a + t) - Min(c, a))``
        consts = {int(a) for m in d.atoms(sympy.Min) for a in m.args if a.is_Integer}
        if len(consts) == 1:  # one table length bounds every clamp
            return f"{text(d)}, a slice of at most {consts.pop()}"
    return text(d)


def prod(dims: Any) -> Any:
    out: Any = 1
    for d in dims:
        out = out * d
    return as_dim(sympy.sympify(out)) if not isinstance(out, int) else out


@runtime_checkable
class SizeEnv(Protocol):
    """What a :class:`ShapeCtx` needs of the size symbols it reasons about.

    Implemented by the capture's ``ShapeEnv`` (decides with the solver) and by
    :class:`BareEnv` (plain data, records only).  ``stats`` counts requirements:
    ``"guards"`` received and ``"folded"`` decided without the solver.
    """

    stats: dict

    def hint(self, expr: Any) -> Any:
        """The value of a size expression or condition at the example sizes."""

    def canon(self, expr: Any) -> Any:
        """Range-aware canonical form of a size expression."""

    def guard(self, expr: Any, kind: str, reason: str, source: Optional[SourceLoc] = None,
              op: Optional[str] = None, cause: Optional[str] = None, eager: Any = None) -> None:
        """Require ``expr`` (a sympy boolean true at the example sizes); ``cause`` says why (records.CAUSES);
        ``eager`` (given only when known) the weaker condition numpy runs under (``GuardRecord.eager``)."""

    def unbacked_symbol(self, upper: Any, hint: int, op: str, source: Optional[SourceLoc],
                        lower: int = 0, same_as: Any = None) -> sympy.Symbol:
        """A data-dependent size in ``[lower, upper]`` whose example value is ``hint``.

        ``same_as``: a hashable key naming the graph value the size is a function of
        (``("nonzero", mask_key)``); a second request with the same key returns the
        first symbol.  None: always a fresh symbol.
        """

    def is_unbacked(self, sym: sympy.Symbol) -> bool:
        """Whether ``sym`` is a data-dependent size (made by :meth:`unbacked_symbol`)."""


class BareEnv:
    """A :class:`SizeEnv` from plain data: requirements are recorded, never decided.

    Args:
        hints: ``{symbol: example size}`` of every symbol the rule's shapes use.
        ranges: ``{symbol: (lo, hi_or_None)}`` inclusive (for ``canon``).
        canon: a range-aware canonicalizer ``canon(expr, ranges)`` (``solver.canonicalize``);
            without one, expressions stay as the rule wrote them.

    ``recorded`` lists every requirement as a :class:`~tensorplay_export.records.GuardRecord`
    (those sympy already folds to true are only counted); ``unbacked`` the data-dependent
    sizes made, in order.
    """

    def __init__(self, hints: Mapping, ranges: Optional[Mapping] = None,
                 canon: Optional[Callable[[Any, Mapping], Any]] = None) -> None:
        self.hints = {s: sympy.Integer(int(v)) for s, v in hints.items()}
        self.ranges = dict(ranges or {})
        self._canon = canon
        self.recorded: list[GuardRecord] = []
        self.unbacked: list[sympy.Symbol] = []
        self._by_key: dict = {}
        self.stats = {"guards": 0, "folded": 0}

    def hint(self, expr: Any) -> Any:
        if isinstance(expr, (int, float, bool)):
            return expr
        value = sympy.sympify(expr).xreplace(self.hints)
        if value.free_symbols:
            raise KeyError(f"no example value for {sorted(map(str, value.free_symbols))} in {expr}")
        if isinstance(value, sympy.logic.boolalg.BooleanAtom) or value.is_Relational:
            return bool(value)
        if value.is_Integer:
            return int(value)
        out = float(value)
        return int(out) if out.is_integer() and not value.has(sympy.Float) else out

    def canon(self, expr: Any) -> Any:
        if self._canon is None or not isinstance(expr, sympy.Basic) or expr.is_Atom:
            return expr
        return self._canon(expr, self.ranges)

    def guard(self, expr: Any, kind: str, reason: str, source: Optional[SourceLoc] = None,
              op: Optional[str] = None, **extra: Any) -> None:
        self.stats["guards"] += 1
        expr = self.canon(sympy.sympify(expr))
        if expr is sympy.true:
            self.stats["folded"] += 1
            return
        if callable(extra.get("eager")):
            extra["eager"] = extra["eager"]()
        self.recorded.append(GuardRecord(expr, kind, reason, source, op, **extra))

    def unbacked_symbol(self, upper: Any, hint: int, op: str, source: Optional[SourceLoc],
                        lower: int = 0, same_as: Any = None) -> sympy.Symbol:
        if same_as is not None and same_as in self._by_key:
            return self._by_key[same_as]
        sym = sympy.Symbol(f"u{len(self.unbacked)}", integer=True, nonnegative=True)
        if same_as is not None:
            self._by_key[same_as] = sym
        self.unbacked.append(sym)
        self.hints[sym] = sympy.Integer(int(hint))
        self.ranges[sym] = (int(lower), int(upper) if is_static(upper) else None)
        return sym

    def is_unbacked(self, sym: sympy.Symbol) -> bool:
        return sym in self.unbacked


class ShapeCtx:
    """Requirements channel of one op call.

    Args:
        env: the :class:`SizeEnv` behind it (the capture's ShapeEnv, or a :class:`BareEnv`).
        op: the op's registry name (for records and messages).
        source: the user's source line of the call.
        concrete: numpy's output shapes on the example values (for unbacked hints).
    """

    def __init__(self, env: SizeEnv, op: str, source: Optional[SourceLoc], concrete: list,
                 size_text: Optional[Callable[[Any], str]] = None) -> None:
        self._env = env
        self._printer = size_text if size_text is not None else str
        self.op = op
        self.source = source
        self.concrete = concrete
        self.unbacked: list = []   # (out_index, axis, symbol)
        self.vranges: dict = {}    # out_index -> (lo, hi)

    @classmethod
    def bare(cls, hints: Mapping, ranges: Optional[Mapping] = None, *, op: str = "test",
             concrete: Optional[list] = None, source: Optional[SourceLoc] = None,
             canon: Optional[Callable[[Any, Mapping], Any]] = None) -> "ShapeCtx":
        """A ctx over plain data (a :class:`BareEnv`), for running a rule as a pure function.

        ``ShapeCtx.bare(hints={n: 8}, ranges={n: (1, 64)}, concrete=[(8, 3)])``: the rule's
        requirements land in :attr:`recorded` instead of going to a solver; ``concrete`` is
        numpy's output shapes (needed by rules that make data-dependent sizes).
        """
        return cls(BareEnv(hints, ranges, canon), op, source, list(concrete) if concrete is not None else [()])

    @property
    def recorded(self) -> Optional[list]:
        """The requirements a bare ctx recorded (None for a capture's: its ShapeEnv decides them)."""
        return getattr(self._env, "recorded", None)

    def text(self, value: Any) -> str:
        """A size (or a shape: tuple/list of sizes) as a reason prints it.

        Sizes print through the ``size_text`` the ctx was made with (capture hands in the one
        printer's readable form, ``graph.printing.format_guard``: ``(h - 1) // 4``), so a reason
        reads in the notation of the guard it explains; a bare ctx prints sympy's ``str``.
        Anything else prints as an f-string would.
        """
        if isinstance(value, sympy.Basic):
            return self._printer(value)
        if isinstance(value, (tuple, list)) and any(isinstance(v, sympy.Basic) for v in value):
            items = [self.text(v) for v in value]
            if isinstance(value, list):
                return "[" + ", ".join(items) + "]"
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return f"{value}"

    def hint(self, expr: Any) -> Any:
        """Example value of a size expression or condition."""
        return self._env.hint(expr) if isinstance(expr, sympy.Basic) else expr

    def canon(self, expr: Any) -> Any:
        if isinstance(expr, sympy.Basic) and expr.has(sympy.Min, sympy.Max, sympy.floor, sympy.Mod):
            return as_dim(self._env.canon(expr))
        return as_dim(expr) if isinstance(expr, sympy.Basic) else expr

    def require(self, cond: Any, reason: Any, cause: str = "shape", eager: Any = None) -> None:
        """The op is correct only if ``cond`` holds (kind ``"shape"``).

        ``reason``: a str, or a function returning it -- called only when ``cond`` does
        not fold to true (printing sympy sizes for a reason nobody reads is costly).
        ``cause``: why, for reports (``records.CAUSES``: ``"reshape"``, ``"broadcast"``, ...).
        ``eager``: the weaker condition under which numpy still runs the op, when ``cond``
        is one branch of it (``GuardRecord.eager``: counterexamples are chosen outside it);
        a function returning it, called only when a record is made.
        """
        self._guard(cond, "shape", reason, cause, eager)

    def bounds(self, cond: Any, reason: Any) -> None:
        """Index values must stay inside an array (kind ``"index_bounds"``); ``reason`` as for require."""
        self._guard(cond, "index_bounds", reason, "index_bounds")

    def _guard(self, cond: Any, kind: str, reason: Any, cause: str, eager: Any = None) -> None:
        if cond is True or cond is sympy.true:
            self._folded()
            return
        extra = {} if eager is None else {"eager": eager}
        self._env.guard(cond, kind, reason() if callable(reason) else reason, self.source, self.op, cause=cause,
                        **extra)

    def choose(self, cond: Any, reason: Any, cause: str = "shape") -> bool:
        """Which side of ``cond`` the example takes; that side is recorded as a requirement
        (``reason``, ``cause`` as for :meth:`require`)."""
        cond = sympy.sympify(cond)
        if cond is sympy.true or cond is sympy.false:
            return bool(cond)
        taken = bool(self._env.hint(cond))
        self.require(cond if taken else sympy.Not(cond), reason, cause)
        return taken

    def pin(self, d: Any, reason: str) -> None:
        """Pin the size ``d`` to its example value (kind ``"specialization"``)."""
        if is_static(d):
            self._folded()
            return
        self._env.guard(sympy.Eq(d, self.hint(d)), "specialization", reason, self.source, self.op,
                       cause="specialization")

    def _folded(self) -> None:
        stats = self._env.stats
        stats["guards"] += 1
        stats["folded"] += 1

    def eq(self, a: Any, b: Any, reason: str, cause: str = "shape") -> None:
        if a is b or (is_static(a) and is_static(b) and int(a) == int(b)):
            self._folded()
            return
        self.require(sympy.Eq(a, b), reason, cause)

    def stretch(self, v: Any, s: Any, reason: str, reason_one: str) -> None:
        """Size ``v`` broadcasts one way to ``s`` (``v == 1 or v == s``), the example's side required.

        ``reason`` is the requirement's text for ``v == s``, ``reason_one`` for ``v == 1``
        (numpy stretched an axis of size 1 in the example).  A static 1 needs nothing.
        """
        if is_static(v) and int(v) == 1:
            return
        runs = lambda: sympy.Or(size_equality(v, s), sympy.Eq(v, 1))  # noqa: E731 - what numpy accepts
        if v != s and self.hint(v) == 1 and self.hint(s) != 1:
            self.require(sympy.Eq(v, 1), reason_one, eager=runs)
            return
        if v is s or (is_static(v) and is_static(s) and int(v) == int(s)):
            self._folded()
            return
        self.require(sympy.Eq(v, s), reason, eager=runs)

    def broadcast_dim(self, a: Any, b: Any, site_a: Optional[str] = None, site_b: Optional[str] = None) -> Any:
        """One broadcast axis: the disjunct the example satisfies becomes the requirement.

        ``site_a`` / ``site_b``: where a static size comes from (``ArrayInfo.sites``: another
        input's static axis), named in the reason after that size.
        """
        if is_static(a) and int(a) == 1:
            return b
        if is_static(b) and int(b) == 1:
            return a
        if is_static(a) and is_static(b):
            return a  # numpy already checked them on the example
        if a == b:
            self._folded()
            return a
        ha, hb = self.hint(a), self.hint(b)
        what = f"broadcasting in {_OP_TEXT.get(self.op, self.op)}"
        # numpy runs with either size 1 or both equal: the guard is the example's case of that
        runs = lambda: sympy.Or(size_equality(a, b), sympy.Eq(a, 1), sympy.Eq(b, 1))  # noqa: E731
        ta = lambda: self.sized(a, site_a)  # noqa: E731 - printed only for a recorded guard
        tb = lambda: self.sized(b, site_b)  # noqa: E731
        if ha == hb:
            self.require(size_equality(a, b), lambda: f"{what}: {ta()} with {tb()}", "broadcast", eager=runs)
            return b if is_static(b) else a
        if ha == 1:
            self.require(sympy.Eq(a, 1), lambda: f"{what}: {ta()} (size 1 in the example) with {tb()}",
                         "broadcast", eager=runs)
            return b
        if hb == 1:
            self.require(sympy.Eq(b, 1), lambda: f"{what}: {tb()} (size 1 in the example) with {ta()}",
                         "broadcast", eager=runs)
            return a
        # numpy raises at the example: what it needs, for a capture whose model catches that error
        self.require(runs(), lambda: f"{what}: {ta()} with {tb()}", "broadcast")
        raise ValueError(f"cannot broadcast sizes {a} and {b}")

    def sized(self, d: Any, site: Optional[str] = None) -> str:
        """:meth:`text` of a size, followed by where a static size comes from (``site``, an
        ``ArrayInfo.sites`` entry): ``3 (y.shape[0], static: no Dim for y in dynamic_shapes)``."""
        text = _size_text(d, self.text)
        return f"{text} ({site})" if site and is_static(d) else text

    def broadcast(self, *shapes: tuple, sites: Optional[Any] = None) -> tuple:
        """numpy broadcasting of several symbolic shapes.

        ``sites``: None, or one entry per shape: None or that array's ``ArrayInfo.sites``
        (per axis, where a static size comes from), so a reason names the other input's axis.
        """
        ndim = max((len(s) for s in shapes), default=0)
        sites = list(sites) if sites is not None else [None] * len(shapes)
        out = []
        for i in range(ndim):
            d: Any = 1
            d_site: Optional[str] = None
            for s, ss in zip(shapes, sites):
                j = i - (ndim - len(s))
                if j >= 0:
                    s_site = ss[j] if ss is not None and j < len(ss) else None
                    new = self.broadcast_dim(d, s[j], d_site, s_site)
                    if new is not d:
                        d_site = s_site
                    d = new
            out.append(as_dim(d) if isinstance(d, sympy.Basic) else d)
        return tuple(out)

    def new_unbacked(self, upper: Any, out: int = 0, axis: int = 0, lower: Any = 0,
                     same_as: Any = None) -> sympy.Symbol:
        """A data-dependent size for output ``out``'s ``axis`` (range ``[lower, upper]``).

        ``lower``: a size numpy guarantees the result reaches (``bincount``'s ``minlength``),
        known to the solver as ``u >= lower`` so later ops may rely on it without a guard.
        ``same_as``: what the size is a function of, as a hashable key built from
        ``ArrayInfo.key`` (``("nonzero", mask.key)``: the True count of that value); sizes
        with equal keys are one symbol (``x[m]`` and ``g[m]``).  Ignored when the array's
        key is unknown (None inside the tuple).
        """
        hint = self.concrete[out][axis]
        if isinstance(same_as, tuple) and any(k is None for k in same_as):
            same_as = None
        sym = self._env.unbacked_symbol(upper, hint, self.op, self.source, int(lower) if is_static(lower) else 0,
                                        same_as=same_as)
        self.unbacked.append((out, axis, sym))
        return sym

    def data_dependent(self, expr: Any) -> bool:
        """Whether a size expression involves a data-dependent size (:meth:`new_unbacked`'s)."""
        if not isinstance(expr, sympy.Basic):
            return False
        return any(self._env.is_unbacked(s) for s in expr.free_symbols)

    def vrange(self, lo: Any, hi: Any, out: int = 0) -> None:
        """Record the value range of output ``out`` (integer arrays built from sizes)."""
        self.vranges[out] = (lo, hi)
