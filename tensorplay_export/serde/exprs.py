"""Symbolic size expressions <-> structured JSON operator trees.

A size expression (a shape entry, a range bound, a guard, a relation between
dims) is stored as a tree of JSON values, never as printed text, so loading
needs neither ``eval`` nor ``sympify``, and symbol names that sympy's parser
treats specially (``S``, ``N``, ``E``, ``I``, ``lambda``, ``oo``) are plain
data.

Tree grammar (``T`` is a tree):

- JSON integer ``n`` (never a bool) -> ``sympy.Integer(n)``; ``|n| < 2**MAX_INT_BITS``.
- ``["Symbol", name, {assumption: bool, ...}]`` -> ``sympy.Symbol(name, **assumptions)``;
  assumption names come from :data:`ASSUMPTIONS`, keys sorted by the JSON writer.
- ``["Rational", p, q]`` (``q >= 2``, coprime) -> ``sympy.Rational(p, q)``.
- ``["Float", sign, mantissa_hex, exponent, bitcount, precision]`` -> the exact mpmath value.
- ``["oo"]``, ``["-oo"]``, ``["true"]``, ``["false"]`` -> the sympy singletons.
- ``[head, T, ...]`` for head in :data:`HEADS` (``Add``, ``Mul``, ``Pow``, ``floor``,
  ``ceiling``, ``Mod``, ``Min``, ``Max``, ``Abs``, ``Eq``, ``Ne``, ``Lt``, ``Le``,
  ``Gt``, ``Ge``, ``And``, ``Or``, ``Not``, ``Xor``, ``Implies``, ``ITE``) ->
  ``cls(*args, evaluate=False)``; ``["Piecewise", [T, T], ...]`` -> ``Piecewise`` of
  ``(expr, cond)`` pairs.  Other sympy functions (e.g. a custom ``FloorDiv``) can be
  allowed by name with :func:`register_function`.

Reading checks a tree without sympy (:func:`decode_stored` gives the
:class:`~tensorplay_export.graph.stored.SizeExpr` a loaded program holds);
:func:`decode_expr` then builds sympy.  Building rebuilds with ``evaluate=False``: the writer stores canonical (already
evaluated) trees, so the argument order and structure come back exactly
(``decode(encode(e)) == e`` and ``srepr`` agrees), and a hostile tree cannot
trigger expensive evaluation (``Pow(2, 10**9)`` stays unevaluated).  NaN and
complex infinity are never stored.

Limits (the writer refuses what the reader refuses, so every saved tree loads):

- a ``Pow`` exponent is an integer or ``Rational`` with ``|p|, q <= MAX_POW``, or
  a ``Float`` with ``|e| <= MAX_POW`` (``x / math.sqrt(n)`` stores ``n**0.5``), or,
  in a program, to an integer base ``2 <= |b| <= MAX_POW``, a size expression whose
  interval under the program's ranges lies in ``[-MAX_POW, MAX_POW]`` (``t / 2**n`` is ``t*2**(-n)``) (:func:`size_exponent_problem`);
  a zero base takes no negative exponent, and ``Mod`` no literal zero divisor;
- value size: generated code computes every subexpression with Python ints, so
  a bound on the bit length of each one is derived bottom-up (a symbol counts
  :data:`SYMBOL_BITS`, ``a + b`` the larger plus one per doubling of the terms,
  ``a * b`` the sum, ``a**k`` ``k`` times the base) and must stay within
  :data:`MAX_VALUE_BITS`: a tower ``S**64**64**64`` is refused although each
  exponent is small;
- at most :data:`MAX_NODES` nodes per expression, and an :class:`ExprBudget`
  shared by all expressions of one document (:data:`MAX_DOCUMENT_NODES`).
"""
from __future__ import annotations

import contextlib
import contextvars
import math
from typing import Any, Iterator

from ..graph.stored import EXTRA_HEADS, SizeExpr, build_sympy, tree_symbols, float_value as _float_value, number_value as _num_value, sympy_tree
from .jsonio import MAX_JSON_DEPTH, fail, short_repr as _short
from ..errors import ArchiveError

MAX_INT_BITS = 256  # |integers| in expressions; sizes fit in 64 bits, products a bit more
MAX_POW = 64  # |integer exponent| of a Pow
MAX_NAME = 256  # characters in a symbol name
MAX_NODES = 10_000  # tree nodes in one expression (real programs: a handful)
MAX_DOCUMENT_NODES = 500_000  # tree nodes of all expressions of one program document
SYMBOL_BITS = 64  # a size or an int input fits in 64 bits
MAX_VALUE_BITS = 8192  # bound on the bit length of any subexpression's value

ASSUMPTIONS = frozenset({
    "integer", "positive", "nonnegative", "negative", "nonpositive", "nonzero", "zero",
    "real", "finite", "rational", "even", "odd", "commutative",
})

_RELATIONAL = ("Eq", "Ne", "Lt", "Le", "Gt", "Ge")
# name -> (min args, max args or None)
HEADS: dict[str, tuple[int, int | None]] = {
    "Add": (2, None), "Mul": (2, None), "Pow": (2, 2), "floor": (1, 1), "ceiling": (1, 1), "Mod": (2, 2),
    "Min": (2, None), "Max": (2, None), "Abs": (1, 1), "And": (2, None), "Or": (2, None), "Not": (1, 1),
    "Xor": (2, None), "Implies": (2, 2), "ITE": (3, 3), **{name: (2, 2) for name in _RELATIONAL},
}
_EXTRA = EXTRA_HEADS  # register_function: name -> sympy Function class
_BUILTIN = frozenset({"Symbol", "Rational", "Float", "Piecewise", "oo", "-oo", "true", "false"})


def register_function(name: str, cls: type) -> None:
    """Allow a sympy ``Function`` subclass (e.g. CORE's ``FloorDiv``) in stored trees.

    The class is stored as ``[name, args...]`` and rebuilt as ``cls(*args)``
    (evaluated: custom functions may not accept ``evaluate``).  Names already
    used by the grammar, or registered for another class, raise ``ValueError``.
    """
    if name in HEADS or name in _BUILTIN:
        raise ValueError(f"{name!r} is a built-in expression head")
    if _EXTRA.get(name, cls) is not cls:
        raise ValueError(f"expression head {name!r} is already registered for {_EXTRA[name]!r}")
    _EXTRA[name] = cls


def encode_symbol(sym: Any) -> list:
    """``["Symbol", name, {assumption: bool}]`` for a plain ``sympy.Symbol``."""
    return _json(_checked_on_write(sym))


def encode_expr(expr: Any) -> Any:
    """Encode a sympy expression (or Python int/bool) as a JSON operator tree.

    Raises:
        ValueError: for NaN, complex infinity, ``Dummy`` symbols, unknown
            functions, a tree deeper than ``MAX_JSON_DEPTH - 20``, or anything
            else the reader would refuse (see the limits in the module docstring).
    """
    return _json(_checked_on_write(expr))


def encode_tree(value: Any) -> Any:
    """The JSON tree of a stored :class:`SizeExpr` (already checked when read) or of a sympy
    expression (:func:`encode_expr`)."""
    if type(value) is SizeExpr:
        return _json(value.tree)
    return encode_expr(value)


# While a program is serialized (:func:`collecting_size_exponents`): the size exponents of its
# expressions, which the writer bounds by the program's ranges as the reader will.
_WRITE_EXPONENTS: contextvars.ContextVar = contextvars.ContextVar("size_exponents", default=None)


@contextlib.contextmanager
def collecting_size_exponents() -> Iterator[list]:
    """Expressions encoded inside the block may hold size exponents (``2**n``); the list it
    yields receives each exponent tree, for :func:`size_exponent_problem` against the program's
    ranges.  Outside such a block an encoder refuses them (no ranges to bound them by)."""
    found: list = []
    token = _WRITE_EXPONENTS.set(found)
    try:
        yield found
    finally:
        _WRITE_EXPONENTS.reset(token)


def _checked_on_write(expr: Any) -> Any:
    """The tree of ``expr``, checked as the reader will check it (ValueError instead of ArchiveError)."""
    tree = sympy_tree(expr, _refuse_on_write)
    try:
        checked = _check(_json(tree), "<expr>", [MAX_NODES], MAX_JSON_DEPTH - 20)
    except ArchiveError as err:
        raise ValueError(f"cannot store {_short(expr)}: {str(err).split(': ', 1)[-1]}") from None
    problem = _limit_problem(checked, _WRITE_EXPONENTS.get())
    if problem is not None:
        raise ValueError(f"cannot store {_short(expr)}: {problem}")
    return checked


def _refuse_on_write(e: Any) -> Any:
    name = type(e).__name__
    if hasattr(e, "name") and getattr(e, "is_Symbol", False):
        raise ValueError(f"cannot store {name} {e!r}: only sympy.Symbol is supported")
    raise ValueError(f"cannot store sympy {name} ({e}): not in the expression grammar")


def _json(t: Any) -> Any:
    """A checked tree (tuples) as JSON values (lists; a symbol's assumptions as an object)."""
    if type(t) is int:
        return t
    head = t[0]
    if head == "Symbol":
        return ["Symbol", t[1], dict(t[2])]
    if head == "Piecewise":
        return ["Piecewise"] + [[_json(x), _json(c)] for x, c in t[1:]]
    if head in ("Rational", "Float"):
        return list(t)
    return [head] + [_json(a) for a in t[1:]]


class ExprBudget:
    """Tree nodes left for the expressions of one document (one budget per program load)."""

    def __init__(self, nodes: int = MAX_DOCUMENT_NODES) -> None:
        self.limit = nodes
        self.left = nodes
        # exponents that are size expressions (2**n): bounded by the document's ranges once those
        # are read (:func:`size_exponent_problem`)
        self.size_exponents: list = []

    def take(self, nodes: int, member: str) -> None:
        self.left -= nodes
        if self.left < 0:
            fail(member, f"the document's size expressions have more than {self.limit} nodes in total")


def decode_tree(tree: Any, member: str = "<expr>", budget: ExprBudget | None = None) -> Any:
    """Check a stored JSON tree (without sympy) and return it as a hashable tree (:mod:`~..graph.stored`).

    Args:
        tree: the JSON value.
        member: archive member named in errors.
        budget: the document's node budget (None: this expression alone).
    Raises:
        ArchiveError: malformed node, unknown head, bad symbol/assumption,
            too large an integer, exponent or value, too deep or too many nodes
            (in this expression or, with ``budget``, in the whole document).
    """
    if type(tree) is int:  # the common case: a static size
        if tree.bit_length() >= MAX_INT_BITS:
            fail(member, f"integer in expression has more than {MAX_INT_BITS} bits")
        if budget is not None:
            budget.take(1, member)
        return tree
    left = [MAX_NODES]
    checked = _check(tree, member, left, MAX_JSON_DEPTH)
    if budget is not None:
        budget.take(MAX_NODES - left[0], member)
    problem = _limit_problem(checked, budget.size_exponents if budget is not None else None)
    if problem is not None:
        fail(member, f"expression {_short(tree)}: {problem}")
    return checked


def decode_stored(tree: Any, member: str = "<expr>", budget: ExprBudget | None = None) -> Any:
    """The :class:`SizeExpr` of a stored tree, checked as :func:`decode_tree` checks it; no sympy
    object is built."""
    if type(tree) is list and len(tree) == 3 and tree[0] == "Symbol":
        # most stored expressions are one symbol (a shape entry, a bind): one node, 64 bits
        checked = _symbol(tree[1:], member)
        if budget is not None:
            budget.take(1, member)
    else:
        checked = decode_tree(tree, member, budget)
    found = _INTERNED.get(checked)
    if found is None:
        if len(_INTERNED) >= _MAX_INTERNED:
            _INTERNED.clear()
        found = _INTERNED[checked] = SizeExpr(checked)
    return found


# the same few symbols and shapes recur in every node: one SizeExpr each (to_sympy built once)
_INTERNED: dict[Any, SizeExpr] = {}
_MAX_INTERNED = 1 << 16


def decode_expr(tree: Any, member: str = "<expr>", budget: ExprBudget | None = None) -> Any:
    """Rebuild a sympy expression from :func:`encode_expr` output (checked as :func:`decode_tree`)."""
    checked = decode_tree(tree, member, budget)
    try:
        return build_sympy(checked)
    except (TypeError, ValueError, ArithmeticError) as err:  # sympy rejects what the checks let through
        fail(member, f"cannot build expression {_short(tree)}: {err}")


# kinds: what a node may stand for ("num": a number expression, "bool": a condition;
# a symbol is both, as a sympy Symbol is both an Expr and a Boolean)
_NUM, _BOOL, _BOTH = 1, 2, 3


def _check(t: Any, member: str, budget: list, max_depth: int) -> Any:
    """The tuple tree of JSON tree ``t``, every node checked (structure, kinds, symbols)."""
    tree, _kind = _walk(t, member, 0, budget, max_depth)
    return tree


def _walk(t: Any, member: str, depth: int, budget: list, max_depth: int) -> tuple[Any, int]:
    budget[0] -= 1
    if budget[0] < 0:
        fail(member, f"expression has more than {MAX_NODES} nodes")
    if depth > max_depth:
        fail(member, f"expression nested deeper than {max_depth} levels")
    if type(t) is int:
        if abs(t).bit_length() >= MAX_INT_BITS:
            fail(member, f"integer in expression has more than {MAX_INT_BITS} bits")
        return t, _NUM
    if not isinstance(t, list) or not t or not isinstance(t[0], str):
        fail(member, f"malformed expression node {_short(t)}")
    head, args = t[0], t[1:]
    if head == "Symbol":
        return _symbol(args, member), _BOTH
    if head == "Rational":
        if len(args) != 2 or any(type(a) is not int for a in args) or args[1] < 2:
            fail(member, f"malformed Rational {_short(t)}")
        p, q = args
        if max(abs(p), q).bit_length() >= MAX_INT_BITS:
            fail(member, f"Rational {_short(t)} has more than {MAX_INT_BITS} bits")
        if math.gcd(p, q) != 1:
            fail(member, f"Rational {_short(t)} is not in lowest terms")
        return ("Rational", p, q), _NUM
    if head == "Float":
        return _float(args, member, t), _NUM
    if head in ("oo", "-oo", "true", "false"):
        if args:
            fail(member, f"{head} takes no arguments, got {_short(t)}")
        return (head,), (_NUM if head in ("oo", "-oo") else _BOOL)
    d = depth + 1
    if head == "Piecewise":
        if not args or any(not isinstance(p, list) or len(p) != 2 for p in args):
            fail(member, f"Piecewise needs [expr, cond] pairs, got {_short(t)}")
        pairs = [(_walk(x, member, d + 1, budget, max_depth), _walk(c, member, d + 1, budget, max_depth))
                 for x, c in args]
        if any(not (xk & _NUM) or not (ck & _BOOL) for (_, xk), (_, ck) in pairs):
            fail(member, "Piecewise pairs must be [number expression, condition]")
        return ("Piecewise",) + tuple((x, c) for (x, _), (c, _) in pairs), _NUM
    if head in HEADS:
        lo, hi = HEADS[head]
        if len(args) < lo or (hi is not None and len(args) > hi):
            fail(member, f"{head} takes {lo}..{hi or 'n'} arguments, got {len(args)}")
        kids = [_walk(a, member, d, budget, max_depth) for a in args]
        kind = _check_arg_kinds(head, kids, member)
        return (head,) + tuple(k for k, _ in kids), kind
    if head in _EXTRA:
        kids = [_walk(a, member, d, budget, max_depth) for a in args]
        tree = (head,) + tuple(k for k, _ in kids)
        try:  # a registered function's own argument rules: only sympy knows them
            build_sympy(tree)
        except (TypeError, ValueError, ArithmeticError) as err:
            fail(member, f"cannot build {head} from its arguments: {err}")
        return tree, _NUM
    fail(member, f"unknown expression head {head!r:.80}")


_LOGIC = frozenset({"And", "Or", "Not", "Xor", "Implies"})


def _check_arg_kinds(head: str, kids: list, member: str) -> int:
    """Logic heads take conditions, the others numbers (ITE: a condition, then two of a kind).
    Returns the node's own kind."""
    kinds = [k for _, k in kids]
    if head in _LOGIC:
        want, own = [_BOOL] * len(kids), _BOOL
    elif head == "ITE":
        branch = _BOOL if kinds[1] & _BOOL else _NUM
        want, own = [_BOOL, branch, branch], branch
    else:
        want, own = [_NUM] * len(kids), (_BOOL if head in _RELATIONAL else _NUM)
    for i, (kind, need) in enumerate(zip(kinds, want)):
        if not kind & need:
            what = "a condition" if need == _BOOL else "a number expression"
            fail(member, f"argument {i} of {head} must be {what}, got {_short(_json(kids[i][0]))}")
    return own


def _exponent_problem(exp: Any) -> str | None:
    if type(exp) is int and abs(exp) <= MAX_POW:
        return None
    if type(exp) is tuple and exp[0] == "Rational" and abs(exp[1]) <= MAX_POW and exp[2] <= MAX_POW:
        return None
    if type(exp) is tuple and exp[0] == "Float" and abs(_float_value(exp)) <= MAX_POW:
        return None
    if type(exp) is tuple and any(True for _ in tree_symbols(exp)):
        return (f"a size in a Pow exponent ({_short(_json(exp))}) is bounded by a program's ranges, and this "
                f"expression is stored without any (an integer base from 2 to {MAX_POW} to a size is stored in "
                f"a program, whose ranges keep the exponent within [0, {MAX_POW}])")
    return (f"a Pow exponent must be a rational with |numerator|, denominator <= {MAX_POW} or a float "
            f"of at most {MAX_POW} in magnitude, got {_short(_json(exp))}")






def size_exponent_problem(exp: Any, ranges: dict) -> str | None:
    """Why size exponent ``exp`` (a tree) may leave ``[0, MAX_POW]`` under ``ranges`` (symbol name
    -> ``(lower, upper or None)``), or None.  The exponent's interval is computed from its
    symbols' ranges through ``Add`` and ``Mul`` (what ``2**(n - 3)`` and ``2**(2*n)`` are);
    any other head, or a symbol without a range, is refused."""
    def interval(t: Any) -> tuple:
        if type(t) is int:
            return t, t
        head = t[0]
        if head == "Symbol":
            if t[1] not in ranges:
                raise _Refused(f"symbol {t[1]!r} has no range constraint")
            lo, hi = ranges[t[1]]
            return lo, (math.inf if hi is None else hi)
        parts = [interval(a) for a in t[1:]]
        if head == "Add":
            return sum(p[0] for p in parts), sum(p[1] for p in parts)
        if head == "Mul":
            lo, hi = parts[0]
            for a, b in parts[1:]:
                corners = [x * y for x in (lo, hi) for y in (a, b) if not (math.isinf(x) and y == 0)
                           and not (math.isinf(y) and x == 0)] or [0]
                lo, hi = min(corners), max(corners)
            return lo, hi
        raise _Refused(f"an exponent with {head} is not bounded here")
    try:
        lo, hi = interval(exp)
    except _Refused as err:
        return f"the size exponent {_short(_json(exp))}: {err}"
    if lo < -MAX_POW or hi > MAX_POW:
        return (f"the size exponent {_short(_json(exp))} ranges over [{lo}, {hi}] under the program's range "
                f"constraints; a stored exponent stays within [-{MAX_POW}, {MAX_POW}]")
    return None


def _limit_problem(tree: Any, size_exponents: list | None = None) -> str | None:
    """Why the reader refuses ``tree`` (exponents, zero divisors, value bits), or None.

    ``size_exponents``: where a Pow of an integer base ``2 <= |b| <= MAX_POW`` to a size
    expression (``2**n``) is accepted, counted at an exponent of ``MAX_POW``, its exponent is
    appended, to be bounded by the program's ranges (:func:`size_exponent_problem`); None
    refuses such a Pow."""
    try:
        bits = _value_bits(tree, size_exponents)
    except _Refused as err:
        return str(err)
    if bits > MAX_VALUE_BITS:
        return f"its value may need {bits} bits (more than {MAX_VALUE_BITS})"
    return None


class _Refused(Exception):
    pass


def _is_zero(t: Any) -> bool:
    return (type(t) is int and t == 0) or (type(t) is tuple and t[0] == "Float" and int(t[2], 16) == 0)


def _value_bits(t: Any, size_exponents: list | None = None) -> int:
    """An upper bound on the bit length of the tree's value (and of every value computed for it).

    Symbols count :data:`SYMBOL_BITS`.  Raises :class:`_Refused` for a node the
    reader refuses or once any subexpression exceeds :data:`MAX_VALUE_BITS`.
    Recursion is bounded by the tree depth (at most ``MAX_JSON_DEPTH``).
    """
    if type(t) is int:
        bits = abs(t).bit_length()
    else:
        head = t[0]
        if head == "Rational":
            bits = max(abs(t[1]).bit_length(), t[2].bit_length())
        elif head == "Float":
            man, exp, bc = int(t[2], 16), t[3], t[4]
            bits = max(1, bc + exp) if man else 1
        elif head == "Symbol":
            bits = SYMBOL_BITS
        elif len(t) == 1:
            bits = 1  # oo, true, false
        else:
            if head == "Piecewise":
                kids = [_value_bits(a, size_exponents) for pair in t[1:] for a in pair]
            else:
                kids = [_value_bits(a, size_exponents) for a in t[1:]]
            if head == "Add":
                bits = max(kids) + (len(kids) - 1).bit_length()
            elif head == "Mul":
                bits = sum(kids)
            elif head == "Pow":
                base, exp = t[1], t[2]
                if (size_exponents is not None and type(base) is int and 2 <= abs(base) <= MAX_POW
                        and type(exp) is tuple and any(True for _ in tree_symbols(exp))):
                    size_exponents.append(exp)  # at most MAX_POW once the ranges are checked
                    bits = kids[0] * MAX_POW
                    if bits > MAX_VALUE_BITS:
                        raise _Refused(f"a subexpression's value may need {bits} bits (more than {MAX_VALUE_BITS})")
                    return bits
                problem = _exponent_problem(exp)
                if problem is not None:
                    raise _Refused(problem)
                if _is_num(base) and _is_zero(base) and _num_value(exp) < 0:
                    raise _Refused(f"division by zero ({_short(_json(t))})")
                bits = max(kids[1], kids[0] * max(1, math.ceil(abs(_num_value(exp)))))
            elif head == "Mod" and _is_num(t[2]) and _is_zero(t[2]):
                raise _Refused(f"modulo by zero ({_short(_json(t))})")
            elif head in HEADS:
                bits = max(kids) + 1  # floor, ceiling, Mod, Min, Max, Abs, relations, logic, ITE
            else:
                bits = sum(kids) + 1  # Piecewise, a registered function: assume it may multiply
    if bits > MAX_VALUE_BITS:
        raise _Refused(f"a subexpression's value may need {bits} bits (more than {MAX_VALUE_BITS}): "
                       f"{_short(_json(t))}")
    return bits


def _is_num(t: Any) -> bool:
    return type(t) is int or (type(t) is tuple and t[0] in ("Rational", "Float"))


def _symbol(args: list, member: str) -> tuple:
    if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], dict):
        fail(member, f"malformed Symbol {_short(['Symbol', *args])}")
    name, assumptions = args
    # fast path: the writer sorts keys, so a symbol seen before has exactly these items (a
    # cached entry was checked; only the value types need a look: 1 == True as a dict key)
    items = tuple(assumptions.items())
    if all(v is True or v is False for _, v in items):
        sym = _SYMBOLS.get((name, items))
        if sym is not None:
            return sym
    bad = sorted(k for k, v in assumptions.items() if k not in ASSUMPTIONS or type(v) is not bool)
    if bad:
        fail(member, f"symbol {name!r} has unsupported assumption(s) {bad}")
    # A program names the same few symbols thousands of times (every shape): checked ones
    # are kept by name and assumptions, and share one tree.
    key = (name, tuple(sorted(assumptions.items())))
    sym = _SYMBOLS.get(key)
    if sym is not None:
        return sym
    if not name or len(name) > MAX_NAME:
        fail(member, f"symbol name must have 1..{MAX_NAME} characters")
    if not _consistent(assumptions):
        fail(member, f"symbol {name!r} has inconsistent assumptions {assumptions}")
    sym = ("Symbol", name, key[1])
    if len(_SYMBOLS) >= _MAX_CACHED_SYMBOLS:  # a hostile archive cannot grow it without bound
        _SYMBOLS.clear()
    _SYMBOLS[key] = sym
    return sym


_SYMBOLS: dict[tuple, tuple] = {}
_MAX_CACHED_SYMBOLS = 4096

# Numbers each assumption holds for; a set of assumptions one of them satisfies is consistent.
_WITNESSES = (1, 2, 0, -1, -2, 0.5, -0.5)
_HOLDS = {
    "integer": lambda v: float(v).is_integer(), "positive": lambda v: v > 0, "nonnegative": lambda v: v >= 0,
    "negative": lambda v: v < 0, "nonpositive": lambda v: v <= 0, "nonzero": lambda v: v != 0,
    "zero": lambda v: v == 0, "real": lambda v: True, "finite": lambda v: True, "rational": lambda v: True,
    "even": lambda v: float(v).is_integer() and int(v) % 2 == 0,
    "odd": lambda v: float(v).is_integer() and int(v) % 2 == 1, "commutative": lambda v: True,
}
_CONSISTENT: dict[tuple, bool] = {}


def _consistent(assumptions: dict) -> bool:
    """Whether sympy accepts these assumptions together.  A small number satisfying all of them
    decides it without sympy (every symbol capture makes); otherwise sympy's own check does."""
    key = tuple(sorted(assumptions.items()))
    known = _CONSISTENT.get(key)
    if known is not None:
        return known
    ok = any(all(_HOLDS[k](v) == want for k, want in key) for v in _WITNESSES)
    if not ok:
        from ..records import sympy

        try:
            sympy.Symbol("_", **assumptions)
            ok = True
        except Exception:  # noqa: BLE001 - sympy's InconsistentAssumptions
            ok = False
    if len(_CONSISTENT) < 1024:
        _CONSISTENT[key] = ok
    return ok


def _float(args: list, member: str, tree: Any) -> tuple:
    ok = len(args) == 5 and type(args[0]) is int and isinstance(args[1], str)
    ok = ok and all(type(a) is int for a in args[2:]) and args[0] in (0, 1)
    ok = ok and 0 < len(args[1]) <= MAX_INT_BITS // 4 and 1 <= args[4] <= 4096
    ok = ok and abs(args[2]) < 2**31 and 0 <= args[3] <= MAX_INT_BITS
    if not ok:
        fail(member, f"malformed Float {_short(tree)}")
    try:
        man = int(args[1], 16)
    except ValueError:
        fail(member, f"Float mantissa {args[1]!r:.40} is not hexadecimal")
    if man < 0 or man.bit_length() != args[3] or (man == 0 and args[3] != 0):
        fail(member, f"Float {_short(tree)} has an inconsistent mantissa/bitcount")
    return ("Float", args[0], args[1], args[2], args[3], args[4])
