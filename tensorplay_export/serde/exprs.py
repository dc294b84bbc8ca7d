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

Decoding rebuilds with ``evaluate=False``: the writer stores canonical (already
evaluated) trees, so the argument order and structure come back exactly
(``decode(encode(e)) == e`` and ``srepr`` agrees), and a hostile tree cannot
trigger expensive evaluation (``Pow(2, 10**9)`` stays unevaluated).  NaN and
complex infinity are never stored.

Limits (the writer refuses what the reader refuses, so every saved tree loads):

- a ``Pow`` exponent is an integer or ``Rational`` with ``|p|, q <= MAX_POW``, or
  a ``Float`` with ``|e| <= MAX_POW`` (``x / math.sqrt(n)`` stores ``n**0.5``);
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

import math
from typing import Any, Callable

import sympy
from sympy.logic.boolalg import Boolean, BooleanFalse, BooleanTrue

from .jsonio import MAX_JSON_DEPTH, fail, short_repr as _short

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

_RELATIONAL: dict[str, type] = {
    "Eq": sympy.Eq, "Ne": sympy.Ne, "Lt": sympy.Lt, "Le": sympy.Le, "Gt": sympy.Gt, "Ge": sympy.Ge,
}
# name -> (class, min args, max args or None)
HEADS: dict[str, tuple[Callable[..., Any], int, int | None]] = {
    "Add": (sympy.Add, 2, None), "Mul": (sympy.Mul, 2, None), "Pow": (sympy.Pow, 2, 2),
    "floor": (sympy.floor, 1, 1), "ceiling": (sympy.ceiling, 1, 1), "Mod": (sympy.Mod, 2, 2),
    "Min": (sympy.Min, 2, None), "Max": (sympy.Max, 2, None), "Abs": (sympy.Abs, 1, 1),
    "And": (sympy.And, 2, None), "Or": (sympy.Or, 2, None), "Not": (sympy.Not, 1, 1),
    "Xor": (sympy.Xor, 2, None), "Implies": (sympy.Implies, 2, 2), "ITE": (sympy.ITE, 3, 3),
    **{name: (cls, 2, 2) for name, cls in _RELATIONAL.items()},
}
_HEAD_OF_CLASS: dict[type, str] = {
    sympy.Add: "Add", sympy.Mul: "Mul", sympy.Pow: "Pow", sympy.floor: "floor",
    sympy.ceiling: "ceiling", sympy.Mod: "Mod", sympy.Min: "Min", sympy.Max: "Max",
    sympy.Abs: "Abs", sympy.And: "And", sympy.Or: "Or", sympy.Not: "Not", sympy.Xor: "Xor",
    sympy.Implies: "Implies", sympy.ITE: "ITE",
    sympy.core.relational.Equality: "Eq", sympy.core.relational.Unequality: "Ne",
    sympy.core.relational.StrictLessThan: "Lt", sympy.core.relational.LessThan: "Le",
    sympy.core.relational.StrictGreaterThan: "Gt", sympy.core.relational.GreaterThan: "Ge",
}
_EXTRA: dict[str, type] = {}  # register_function: name -> sympy Function class


def register_function(name: str, cls: type) -> None:
    """Allow a sympy ``Function`` subclass (e.g. CORE's ``FloorDiv``) in stored trees.

    The class is stored as ``[name, args...]`` and rebuilt as ``cls(*args)``
    (evaluated: custom functions may not accept ``evaluate``).  Names already
    used by the grammar, or registered for another class, raise ``ValueError``.
    """
    if name in HEADS or name in ("Symbol", "Rational", "Float", "Piecewise", "oo", "-oo", "true", "false"):
        raise ValueError(f"{name!r} is a built-in expression head")
    if _EXTRA.get(name, cls) is not cls:
        raise ValueError(f"expression head {name!r} is already registered for {_EXTRA[name]!r}")
    _EXTRA[name] = cls


def encode_symbol(sym: sympy.Symbol) -> list:
    """``["Symbol", name, {assumption: bool}]`` for a plain ``sympy.Symbol``."""
    if type(sym) is not sympy.Symbol:
        raise ValueError(f"cannot store {type(sym).__name__} {sym!r}: only sympy.Symbol is supported")
    assumptions = dict(sym._assumptions_orig)
    unknown = sorted(set(assumptions) - ASSUMPTIONS)
    if unknown:
        raise ValueError(f"symbol {sym.name!r} has assumptions {unknown} that archives do not store")
    if len(sym.name) > MAX_NAME:
        raise ValueError(f"symbol name longer than {MAX_NAME} characters")
    return ["Symbol", sym.name, {k: bool(v) for k, v in assumptions.items()}]


def encode_expr(expr: Any) -> Any:
    """Encode a sympy expression (or Python int/bool) as a JSON operator tree.

    Raises:
        ValueError: for NaN, complex infinity, ``Dummy`` symbols, unknown
            functions, a tree deeper than ``MAX_JSON_DEPTH - 20``, or anything
            else the reader would refuse (see the limits in the module docstring).
    """
    expr = sympy.sympify(expr) if isinstance(expr, (int, bool)) else expr
    tree = _encode(expr, 0)
    problem = _limit_problem(expr)
    if problem is not None:
        raise ValueError(f"cannot store {_short(expr)}: {problem}")
    return tree


def _encode(e: Any, depth: int) -> Any:
    if depth > MAX_JSON_DEPTH - 20:
        raise ValueError(f"expression nested deeper than {MAX_JSON_DEPTH - 20} levels")
    if isinstance(e, sympy.Integer):
        n = int(e)
        if abs(n).bit_length() >= MAX_INT_BITS:
            raise ValueError(f"integer {n} has more than {MAX_INT_BITS} bits")
        return n
    if isinstance(e, sympy.Symbol):
        return encode_symbol(e)
    if isinstance(e, sympy.Rational):
        return ["Rational", int(e.p), int(e.q)]
    if isinstance(e, sympy.Float):
        sign, man, exp, bc = e._mpf_
        if man == 0 and bc != 0:  # mpmath's encodings of inf/nan
            raise ValueError(f"cannot store the float {e}")
        return ["Float", int(sign), format(int(man), "x"), int(exp), int(bc), int(e._prec)]
    if e is sympy.oo:
        return ["oo"]
    if e is sympy.S.NegativeInfinity:
        return ["-oo"]
    if isinstance(e, BooleanTrue):
        return ["true"]
    if isinstance(e, BooleanFalse):
        return ["false"]
    if isinstance(e, sympy.Piecewise):
        return ["Piecewise"] + [[_encode(x, depth + 2), _encode(c, depth + 2)] for x, c in e.args]
    head = _HEAD_OF_CLASS.get(type(e))
    if head is None:
        head = next((n for n, cls in _EXTRA.items() if type(e) is cls), None)
    if head is None:
        raise ValueError(f"cannot store sympy {type(e).__name__} ({e}): not in the expression grammar")
    return [head] + [_encode(a, depth + 1) for a in e.args]


class ExprBudget:
    """Tree nodes left for the expressions of one document (one budget per program load)."""

    def __init__(self, nodes: int = MAX_DOCUMENT_NODES) -> None:
        self.limit = nodes
        self.left = nodes

    def take(self, nodes: int, member: str) -> None:
        self.left -= nodes
        if self.left < 0:
            fail(member, f"the document's size expressions have more than {self.limit} nodes in total")


def decode_expr(tree: Any, member: str = "<expr>", budget: ExprBudget | None = None) -> Any:
    """Rebuild a sympy expression from :func:`encode_expr` output.

    Args:
        tree: the JSON value.
        member: archive member named in errors.
        budget: the document's node budget (None: this expression alone).
    Raises:
        ArchiveError: malformed node, unknown head, bad symbol/assumption,
            too large an integer, exponent or value, too deep or too many nodes
            (in this expression or, with ``budget``, in the whole document).
    """
    left = [MAX_NODES]
    expr = _decode(tree, member, 0, left)
    if budget is not None:
        budget.take(MAX_NODES - left[0], member)
    problem = _limit_problem(expr)
    if problem is not None:
        fail(member, f"expression {_short(tree)}: {problem}")
    return expr


def _decode(t: Any, member: str, depth: int, budget: list) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        fail(member, f"expression has more than {MAX_NODES} nodes")
    if depth > MAX_JSON_DEPTH:
        fail(member, f"expression nested deeper than {MAX_JSON_DEPTH} levels")
    if type(t) is int:
        if abs(t).bit_length() >= MAX_INT_BITS:
            fail(member, f"integer in expression has more than {MAX_INT_BITS} bits")
        return sympy.Integer(t)
    if not isinstance(t, list) or not t or not isinstance(t[0], str):
        fail(member, f"malformed expression node {_short(t)}")
    head, args = t[0], t[1:]
    if head == "Symbol":
        return _decode_symbol(args, member)
    if head == "Rational":
        if len(args) != 2 or any(type(a) is not int for a in args) or args[1] < 2:
            fail(member, f"malformed Rational {_short(t)}")
        p, q = args
        if max(abs(p), q).bit_length() >= MAX_INT_BITS:
            fail(member, f"Rational {_short(t)} has more than {MAX_INT_BITS} bits")
        if sympy.igcd(p, q) != 1:
            fail(member, f"Rational {_short(t)} is not in lowest terms")
        return sympy.Rational(p, q)
    if head == "Float":
        return _decode_float(args, member, t)
    if head in ("oo", "-oo", "true", "false"):
        if args:
            fail(member, f"{head} takes no arguments, got {_short(t)}")
        return {"oo": sympy.oo, "-oo": sympy.S.NegativeInfinity, "true": sympy.true, "false": sympy.false}[head]
    if head == "Piecewise":
        if not args or any(not isinstance(p, list) or len(p) != 2 for p in args):
            fail(member, f"Piecewise needs [expr, cond] pairs, got {_short(t)}")
        pairs = [(_decode(x, member, depth + 2, budget), _decode(c, member, depth + 2, budget)) for x, c in args]
        if any(not isinstance(x, sympy.Expr) or not isinstance(c, Boolean) for x, c in pairs):
            fail(member, "Piecewise pairs must be [number expression, condition]")
        return _build(sympy.Piecewise, pairs, member, head, evaluate=False)
    if head in HEADS:
        cls, lo, hi = HEADS[head]
        if len(args) < lo or (hi is not None and len(args) > hi):
            fail(member, f"{head} takes {lo}..{hi or 'n'} arguments, got {len(args)}")
        values = [_decode(a, member, depth + 1, budget) for a in args]
        _check_arg_kinds(head, values, member)
        return _build(cls, values, member, head, evaluate=False)
    if head in _EXTRA:
        values = [_decode(a, member, depth + 1, budget) for a in args]
        return _build(_EXTRA[head], values, member, head)
    fail(member, f"unknown expression head {head!r:.80}")


_LOGIC = frozenset({"And", "Or", "Not", "Xor", "Implies"})


def _check_arg_kinds(head: str, values: list, member: str) -> None:
    """Logic heads take conditions, the others numbers (ITE: a condition, then two of a kind)."""
    if head in _LOGIC:
        want = [Boolean] * len(values)
    elif head == "ITE":
        branch = Boolean if isinstance(values[1], Boolean) else sympy.Expr
        want = [Boolean, branch, branch]
    else:
        want = [sympy.Expr] * len(values)
    for i, (value, kind) in enumerate(zip(values, want)):
        if not isinstance(value, kind):
            what = "a condition" if kind is Boolean else "a number expression"
            fail(member, f"argument {i} of {head} must be {what}, got {_short(value)}")


def _build(cls: Callable[..., Any], args: list, member: str, head: str, **kw: Any) -> Any:
    try:
        return cls(*args, **kw)
    except (TypeError, ValueError, ArithmeticError) as err:  # sympy rejects ill-typed args
        fail(member, f"cannot build {head} from its arguments: {err}")


def _exponent_problem(exp: Any) -> str | None:
    if isinstance(exp, sympy.Rational) and abs(exp.p) <= MAX_POW and exp.q <= MAX_POW:
        return None  # Integer included
    if isinstance(exp, sympy.Float) and abs(float(exp)) <= MAX_POW:
        return None
    return (f"a Pow exponent must be a rational with |numerator|, denominator <= {MAX_POW} or a float "
            f"of at most {MAX_POW} in magnitude, got {_short(exp)}")


def _limit_problem(expr: Any) -> str | None:
    """Why the reader refuses ``expr`` (exponents, zero divisors, value bits), or None."""
    try:
        bits = _value_bits(expr, {})
    except _Refused as err:
        return str(err)
    if bits > MAX_VALUE_BITS:
        return f"its value may need {bits} bits (more than {MAX_VALUE_BITS})"
    return None


class _Refused(Exception):
    pass


def _value_bits(e: Any, memo: dict) -> int:
    """An upper bound on the bit length of ``e``'s value (and of every value computed for it).

    Symbols count :data:`SYMBOL_BITS`.  Raises :class:`_Refused` for a node the
    reader refuses or once any subexpression exceeds :data:`MAX_VALUE_BITS`.
    Recursion is bounded by the tree depth (at most ``MAX_JSON_DEPTH``).
    """
    key = id(e)
    if key in memo:
        return memo[key]
    if isinstance(e, sympy.Integer):
        bits = abs(int(e)).bit_length()
    elif isinstance(e, sympy.Rational):
        bits = max(abs(int(e.p)).bit_length(), int(e.q).bit_length())
    elif isinstance(e, sympy.Float):
        _sign, man, exp, bc = e._mpf_
        bits = max(1, int(bc) + int(exp)) if man else 1
    elif isinstance(e, sympy.Symbol):
        bits = SYMBOL_BITS
    elif not isinstance(e, sympy.Basic) or not e.args:
        bits = 1  # oo, true, false
    else:
        if isinstance(e, sympy.Piecewise):
            kids = [_value_bits(a, memo) for pair in e.args for a in pair.args]
        else:
            kids = [_value_bits(a, memo) for a in e.args]
        if isinstance(e, sympy.Add):
            bits = max(kids) + (len(kids) - 1).bit_length()
        elif isinstance(e, sympy.Mul):
            bits = sum(kids)
        elif isinstance(e, sympy.Pow):
            base, exp = e.args
            problem = _exponent_problem(exp)
            if problem is not None:
                raise _Refused(problem)
            if base.is_Number and base == 0 and exp < 0:
                raise _Refused(f"division by zero ({_short(e)})")
            bits = max(kids[1], kids[0] * max(1, math.ceil(abs(float(exp)))))
        elif isinstance(e, sympy.Mod) and e.args[1].is_Number and e.args[1] == 0:
            raise _Refused(f"modulo by zero ({_short(e)})")
        elif type(e) in _HEAD_OF_CLASS or isinstance(e, (BooleanTrue, BooleanFalse)):
            bits = max(kids) + 1  # floor, ceiling, Mod, Min, Max, Abs, relations, logic, ITE
        else:
            bits = sum(kids) + 1  # a registered function: assume it may multiply
    if bits > MAX_VALUE_BITS:
        raise _Refused(f"a subexpression's value may need {bits} bits (more than {MAX_VALUE_BITS}): "
                       f"{_short(e)}")
    memo[key] = bits
    return bits


def _decode_symbol(args: list, member: str) -> sympy.Symbol:
    if len(args) != 2 or not isinstance(args[0], str) or not isinstance(args[1], dict):
        fail(member, f"malformed Symbol {_short(['Symbol', *args])}")
    name, assumptions = args
    if not name or len(name) > MAX_NAME:
        fail(member, f"symbol name must have 1..{MAX_NAME} characters")
    bad = sorted(k for k, v in assumptions.items() if k not in ASSUMPTIONS or type(v) is not bool)
    if bad:
        fail(member, f"symbol {name!r} has unsupported assumption(s) {bad}")
    # A program names the same few symbols thousands of times (every shape); building
    # a Symbol runs sympy's assumption machinery, so checked ones are kept by name.
    key = (name, tuple(sorted(assumptions.items())))
    sym = _SYMBOLS.get(key)
    if sym is not None:
        return sym
    try:
        sym = sympy.Symbol(name, **assumptions)
    except Exception as err:  # noqa: BLE001 - inconsistent assumptions raise sympy's InconsistentAssumptions
        fail(member, f"symbol {name!r} has inconsistent assumptions {assumptions}: {err}")
    if len(_SYMBOLS) >= _MAX_CACHED_SYMBOLS:  # a hostile archive cannot grow it without bound
        _SYMBOLS.clear()
    _SYMBOLS[key] = sym
    return sym


_SYMBOLS: dict[tuple, sympy.Symbol] = {}
_MAX_CACHED_SYMBOLS = 4096


def _decode_float(args: list, member: str, tree: Any) -> sympy.Float:
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
    return sympy.Float((args[0], args[1], args[2], args[3]), precision=args[4])
