"""Stored size expressions: the archive's operator trees as immutable values, without sympy.

A loaded program holds its size expressions (shape entries, ``meta["bind"]``
symbols, reshape sizes, range-check symbols) as :class:`SizeExpr` values, so
loading an archive and running its program builds no sympy object (cold
start, issue 19).  Codegen prints them directly (:mod:`.printing` prints
trees); anything that reads the program as sympy (``ep.graph``,
``ep.range_constraints``, passes, ``save``) first materializes them
(:func:`materialize_graph`, :meth:`SizeExpr.to_sympy`), once, in place.

The tree is the archive's grammar (:mod:`tensorplay_export.serde.exprs`) with
JSON lists as tuples, so it is hashable:

- a Python ``int`` (never a bool);
- ``("Symbol", name, ((assumption, bool), ...))`` (assumptions sorted);
- ``("Rational", p, q)``, ``("Float", sign, mantissa_hex, exponent, bitcount, precision)``;
- ``("oo",)``, ``("-oo",)``, ``("true",)``, ``("false",)``;
- ``("Piecewise", (expr, cond), ...)``;
- ``(head, arg, ...)`` for the other heads (``Add``, ``Mul``, ``Pow``, ``floor``, ...).

Trees made here from sympy (:func:`sympy_tree`) use sympy's argument order,
so an exported program and its loaded copy print the same source.  Nothing
here validates a tree: the archive reader does that before a tree becomes a
:class:`SizeExpr`.
"""
from __future__ import annotations

import math
import weakref
from typing import Any, Callable, Iterator, Optional

from ..records import is_sympy, sympy

__all__ = ["SizeExpr", "sympy_tree", "tree_of", "build_sympy", "materialize", "materialize_graph",
           "mark_stored", "holds_stored", "symbol_key", "tree_symbols", "integer_valued", "exponent_sign", "is_symbol",
           "is_number_tree", "EXTRA_HEADS"]

# assumptions that make a symbol integer-valued (sympy infers integer from each)
_INTEGER_ASSUMPTIONS = frozenset({"integer", "even", "odd", "zero"})

# the solver's float operations on sizes (solver.floats): built-in heads whose classes are
# imported on first use, so loading a program without them imports neither sympy nor the solver
FLOAT_HEADS = frozenset({"FAdd", "FSub", "FMul", "FDiv", "FPow", "FConst"})
FLOAT_INT_HEADS = frozenset({"FFloor", "FCeil", "FTrunc", "FRound"})


class _Heads(dict):
    """name -> sympy Function class; the float heads register themselves when first asked for."""

    def _load_floats(self, key: Any) -> bool:
        if key not in FLOAT_HEADS and key not in FLOAT_INT_HEADS or dict.__contains__(self, key):
            return False
        from solver import floats  # noqa: PLC0415  (lazy: only programs with float sizes need it)

        for cls in floats.NODES:
            self.setdefault(cls.__name__, cls)
        return True

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or (self._load_floats(key) and dict.__contains__(self, key))

    def __missing__(self, key: Any) -> type:
        if self._load_floats(key):
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default


# register_function (serde): name -> sympy Function class, stored as [name, args...]
EXTRA_HEADS: dict[str, type] = _Heads()


class SizeExpr:
    """One stored size expression (an operator tree, see the module docstring).

    Equal trees are equal values (hashable), so a stored symbol keys dicts like
    a sympy Symbol would.  ``str()`` is the Python form over the symbols' own
    names.  :meth:`to_sympy` builds (once) the sympy expression the tree
    stands for, exactly the one the archive's writer stored.
    """

    __slots__ = ("tree", "_hash", "_sympy")

    def __init__(self, tree: Any) -> None:
        self.tree = tree
        self._hash = hash(tree)
        self._sympy = None

    def __eq__(self, other: Any) -> bool:
        return type(other) is SizeExpr and (other is self or other.tree == self.tree)

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return self._hash

    @property
    def is_symbol(self) -> bool:
        return type(self.tree) is tuple and self.tree[0] == "Symbol"

    @property
    def name(self) -> str:
        """The symbol's name (symbols only; AttributeError otherwise)."""
        if not self.is_symbol:
            raise AttributeError(f"{self} is not a symbol")
        return self.tree[1]

    @property
    def free_symbols(self) -> set:
        """Symbol keys (:func:`symbol_key`) of the symbols the expression reads."""
        return set(tree_symbols(self.tree))

    def to_sympy(self) -> Any:
        """The sympy expression (built on first call with ``evaluate=False``, then cached)."""
        if self._sympy is None:
            self._sympy = build_sympy(self.tree)
        return self._sympy

    def __str__(self) -> str:
        from .printing import _plain, tree_text

        try:
            return tree_text(self.tree)
        except Exception:  # noqa: BLE001 - text for messages: an unprintable tree reads as functions
            return _plain(self.tree)

    def __repr__(self) -> str:
        return f"SizeExpr({self})"

    def __reduce__(self) -> Any:
        return (SizeExpr, (self.tree,))


def symbol_key(sym: Any) -> Any:
    """The key codegen names a symbol by: its tree (a SizeExpr symbol or a sympy Symbol)."""
    if type(sym) is SizeExpr:
        return sym.tree
    return _symbol_tree(sym)


def _symbol_tree(sym: Any) -> tuple:
    assumptions = getattr(sym, "_assumptions_orig", None) or {}
    return ("Symbol", sym.name, tuple(sorted((k, bool(v)) for k, v in assumptions.items())))


def tree_symbols(tree: Any) -> Iterator[tuple]:
    """Every symbol node of ``tree`` (duplicates included)."""
    stack = [tree]
    while stack:
        t = stack.pop()
        if type(t) is not tuple:
            continue
        head = t[0]
        if head == "Symbol":
            yield t
        elif head == "Piecewise":
            for pair in t[1:]:
                stack.extend(pair)
        elif head not in ("Rational", "Float", "?"):
            stack.extend(t[1:])


def integer_valued(tree: Any) -> bool:
    """Whether generated code computes the tree as a Python int (structurally; integer symbols)."""
    if type(tree) is int:
        return True
    if type(tree) is not tuple:
        return False
    head = tree[0]
    if head == "Symbol":
        return any(v for k, v in tree[2] if k in _INTEGER_ASSUMPTIONS)
    if head in ("floor", "ceiling"):
        return True
    if head in ("Add", "Mul", "Max", "Min", "Abs", "Mod"):
        return all(integer_valued(a) for a in tree[1:])
    if head == "Pow":
        base, exp = tree[1:]
        if type(base) is int and base != 0 and type(exp) is tuple and integer_valued(exp):
            # an int to a size (2**n, 2**(n - 1)): capture guards such an exponent >= 0; a size term
            # with a negative coefficient (t / 2**n is t*2**(-n)) makes a fraction
            return exponent_sign(exp) == 1
        return type(exp) is int and exp >= 0 and integer_valued(base)
    if head == "Piecewise":
        return all(integer_valued(x) for x, _ in tree[1:])
    if head in FLOAT_HEADS:
        return False
    return head in EXTRA_HEADS


def exponent_sign(e: Any) -> int:
    """The sign of a size exponent's size terms (an ``Add``'s constant aside): 1 when every one
    has a positive coefficient (``n``, ``n - 1``), -1 when every one a negative (``-n``, ``1 - n``:
    sympy's ``t / 2**n`` is ``t*2**(-n)``), 0 when they differ or there are none."""
    terms = [x for x in ((e[1:] if e[0] == "Add" else (e,)) if type(e) is tuple else ()) if type(x) is not int]
    negative = [type(x) is tuple and x[0] == "Mul" and len(x) > 1 and type(x[1]) is int and x[1] < 0 for x in terms]
    if not terms or (any(negative) and not all(negative)):
        return 0
    return -1 if negative[0] else 1


# -- sympy -> tree ------------------------------------------------------------------------------

def _head_of_class() -> dict:
    table = _HEAD_OF_CLASS
    if not table:
        rel = sympy.core.relational
        table.update({
            sympy.Add: "Add", sympy.Mul: "Mul", sympy.Pow: "Pow", sympy.floor: "floor",
            sympy.ceiling: "ceiling", sympy.Mod: "Mod", sympy.Min: "Min", sympy.Max: "Max",
            sympy.Abs: "Abs", sympy.And: "And", sympy.Or: "Or", sympy.Not: "Not", sympy.Xor: "Xor",
            sympy.Implies: "Implies", sympy.ITE: "ITE",
            rel.Equality: "Eq", rel.Unequality: "Ne", rel.StrictLessThan: "Lt", rel.LessThan: "Le",
            rel.StrictGreaterThan: "Gt", rel.GreaterThan: "Ge",
        })
    return table


_HEAD_OF_CLASS: dict = {}


def sympy_tree(expr: Any, unknown: Optional[Callable[[Any], Any]] = None) -> Any:
    """The tree of a sympy expression (or a Python int/bool), in sympy's argument order.

    Args:
        expr: the expression.
        unknown: called with a subexpression outside the grammar (``sin``, NaN,
            ``zoo``, a symbol subclass such as ``Dummy``); its result stands in
            the tree.  None: raise ``ValueError`` naming it.
    """
    if type(expr) is bool:
        return ("true",) if expr else ("false",)
    if type(expr) is int:
        return expr
    return _to_tree(expr, unknown or _refuse, _head_of_class())


def _refuse(e: Any) -> Any:
    if isinstance(e, sympy.Symbol):
        raise ValueError(f"cannot store {type(e).__name__} {e!r}: only sympy.Symbol is supported")
    raise ValueError(f"cannot store sympy {type(e).__name__} ({e}): not in the expression grammar")


def _to_tree(e: Any, unknown: Callable[[Any], Any], heads: dict) -> Any:
    cls = type(e)
    head = heads.get(cls)
    if head is not None:
        return (head,) + tuple(_to_tree(a, unknown, heads) for a in e.args)
    if cls is sympy.Symbol:
        return _symbol_tree(e)
    if isinstance(e, sympy.Integer):
        return int(e)
    if isinstance(e, sympy.Rational):
        return ("Rational", int(e.p), int(e.q))
    if isinstance(e, sympy.Float):
        sign, man, exp, bc = e._mpf_
        if man == 0 and bc != 0:  # mpmath's encodings of inf/nan
            return unknown(e)
        return ("Float", int(sign), format(int(man), "x"), int(exp), int(bc), int(e._prec))
    if e is sympy.oo:
        return ("oo",)
    if e is sympy.S.NegativeInfinity:
        return ("-oo",)
    if e is sympy.true:
        return ("true",)
    if e is sympy.false:
        return ("false",)
    if isinstance(e, sympy.Piecewise):
        return ("Piecewise",) + tuple((_to_tree(x, unknown, heads), _to_tree(c, unknown, heads))
                                      for x, c in e.args)
    name = cls.__name__
    if (name in FLOAT_HEADS or name in FLOAT_INT_HEADS) and EXTRA_HEADS.get(name) is cls:
        return (name,) + tuple(_to_tree(a, unknown, heads) for a in e.args)
    extra = next((n for n, c in EXTRA_HEADS.items() if cls is c), None)
    if extra is not None:
        return (extra,) + tuple(_to_tree(a, unknown, heads) for a in e.args)
    return unknown(e)


def tree_of(value: Any) -> Any:
    """The tree of a SizeExpr, a sympy expression or a Python int/bool."""
    if type(value) is SizeExpr:
        return value.tree
    return sympy_tree(value)


# -- tree -> sympy ------------------------------------------------------------------------------

def _classes() -> dict:
    table = _CLASSES
    if not table:
        table.update({
            "Add": sympy.Add, "Mul": sympy.Mul, "Pow": sympy.Pow, "floor": sympy.floor,
            "ceiling": sympy.ceiling, "Mod": sympy.Mod, "Min": sympy.Min, "Max": sympy.Max,
            "Abs": sympy.Abs, "And": sympy.And, "Or": sympy.Or, "Not": sympy.Not, "Xor": sympy.Xor,
            "Implies": sympy.Implies, "ITE": sympy.ITE, "Eq": sympy.Eq, "Ne": sympy.Ne,
            "Lt": sympy.Lt, "Le": sympy.Le, "Gt": sympy.Gt, "Ge": sympy.Ge,
        })
    return table


_CLASSES: dict = {}
_BUILT: dict = {}  # tree -> sympy (the same few symbols and shapes recur in every program)
_MAX_BUILT = 1 << 16


def build_sympy(tree: Any) -> Any:
    """The sympy expression of a valid tree, rebuilt with ``evaluate=False`` (the writer stored
    canonical trees, so structure and argument order come back exactly).

    Raises what sympy raises for an ill-typed tree (``TypeError``, ``ValueError``, ...): the
    archive reader checks trees first, so a loaded tree always builds.
    """
    if type(tree) is int:
        return sympy.Integer(tree)
    built = _BUILT.get(tree)
    if built is None:
        built = _build(tree, _classes())
        if len(_BUILT) >= _MAX_BUILT:
            _BUILT.clear()
        _BUILT[tree] = built
    return built


def _build(t: Any, classes: dict) -> Any:
    if type(t) is int:
        return sympy.Integer(t)
    head = t[0]
    if head == "Symbol":
        return sympy.Symbol(t[1], **dict(t[2]))
    if head == "Rational":
        return sympy.Rational(t[1], t[2])
    if head == "Float":
        return sympy.Float((t[1], t[2], t[3], t[4]), precision=t[5])
    if head in _SINGLETONS:
        return getattr(sympy.S, _SINGLETONS[head])
    if head == "Piecewise":
        return sympy.Piecewise(*[(_build(x, classes), _build(c, classes)) for x, c in t[1:]], evaluate=False)
    args = [_build(a, classes) for a in t[1:]]
    cls = classes.get(head)
    if cls is not None:
        return cls(*args, evaluate=False)
    return EXTRA_HEADS[head](*args)  # registered functions may not take evaluate=


_SINGLETONS = {"oo": "Infinity", "-oo": "NegativeInfinity", "true": "true", "false": "false"}


# -- materializing ------------------------------------------------------------------------------

def materialize(value: Any) -> Any:
    """``value`` with every SizeExpr inside (tuples, lists, dicts, slices) replaced by its sympy
    expression; ``value`` itself when it holds none."""
    t = type(value)
    if t is SizeExpr:
        return value.to_sympy()
    if t is tuple or t is list:
        new = [materialize(v) for v in value]
        if all(a is b for a, b in zip(new, value)):
            return value
        return tuple(new) if t is tuple else new
    if t is dict:
        new_items = {k if type(k) is not SizeExpr else k.to_sympy(): materialize(v) for k, v in value.items()}
        if all(type(k) is not SizeExpr for k in value) and all(new_items[k] is v for k, v in value.items()):
            return value
        return new_items
    if t is slice:
        parts = [materialize(p) for p in (value.start, value.stop, value.step)]
        return slice(*parts)
    return value


# Graphs whose nodes may hold SizeExpr values (loaded graphs and copies made before they were read).
_STORED: "weakref.WeakSet" = weakref.WeakSet()


def mark_stored(graph: Any) -> None:
    """Record that ``graph`` may hold SizeExpr values (:func:`materialize_graph` converts them)."""
    _STORED.add(graph)


def holds_stored(graph: Any) -> bool:
    return graph in _STORED


def materialize_graph(graph: Any) -> Any:
    """Replace, in place, every SizeExpr in ``graph``'s node arguments and meta by its sympy
    expression (idempotent: a graph is converted once).  Returns ``graph``."""
    if graph not in _STORED:
        return graph
    for node in graph.nodes:
        args, kwargs = materialize(node._args), materialize(node._kwargs)
        if args is not node._args or kwargs is not node._kwargs:
            # the same Nodes in the same places: users and recorded inputs stay as they are
            node._args, node._kwargs = args, kwargs
        meta = node.meta
        for key, value in list(meta.items()):
            new = materialize(value)
            if new is not value:
                meta[key] = new
    _STORED.discard(graph)
    return graph


def is_symbol(value: Any) -> bool:
    """A stored symbol or a sympy Symbol (never imports sympy)."""
    if type(value) is SizeExpr:
        return value.is_symbol
    return is_sympy(value) and bool(value.is_Symbol)


_NUMBER_HEADS = frozenset({"Symbol", "Rational", "Float", "oo", "-oo", "Add", "Mul", "Pow", "floor", "ceiling",
                           "Mod", "Min", "Max", "Abs", "Piecewise"})


def is_number_tree(tree: Any) -> bool:
    """Whether the tree is a number expression (sympy ``Expr``), not a condition."""
    if type(tree) is int:
        return True
    head = tree[0]
    if head == "ITE":
        return is_number_tree(tree[2])
    return head in _NUMBER_HEADS or head in EXTRA_HEADS


def float_value(t: tuple) -> float:
    """The Python float of a stored ``["Float", sign, mantissa_hex, exponent, bitcount, precision]``
    (``inf`` when it does not fit a double)."""
    _, sign, man, exp, _bc, _prec = t
    try:
        v = math.ldexp(float(int(man, 16)), exp)
    except OverflowError:
        v = math.inf
    return -v if sign else v


def number_value(t: Any) -> Any:
    """The value of a stored number: an int, a ``Rational`` (as a float) or a ``Float``."""
    if type(t) is int:
        return t
    if t[0] == "Rational":
        return t[1] / t[2]
    return float_value(t)
