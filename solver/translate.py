"""sympy -> z3 translation of integer size expressions and guards.

Supported constructs (everything else raises ``UnsupportedExpressionError``
naming the sympy class):

- integer and rational constants, ``true``/``false``;
- symbols (always z3 ``Int``; sizes are integers);
- ``+``, ``*``, integer powers (negative powers only as real division);
- ``floor(a/b)``, ``ceiling(a/b)`` (exact integer division, Python floor
  semantics for either sign of ``b``), ``Mod(a, b)`` (sign of ``b``, like Python);
- ``Mod`` of rational operands, the forms sympy's own evaluation produces
  (``Mod(a*a - b*b, a + b)`` becomes ``(a + b)*Mod((a**2 - b**2)/(a + b), 1)``,
  ``Mod(3*a/2, 3)`` stays as written): ``Mod(n1/d1, n2/d2) == Mod(n1*d2, n2*d1)/(d1*d2)``
  (``Mod(c*x, c*m) == c*Mod(x, m)`` for every ``c != 0``), so the Mod itself is an
  integer one; a product whose other factors cancel ``d1*d2`` (as ``a + b`` does
  above) stays over the integers;
- a symbolic polynomial divisor is divided off first: ``Mod(q*d + r, d) -> Mod(r, d)``
  and ``floor((q*d + r)/d) -> q + floor(r/d)`` for an integer polynomial ``q``, so
  ``Mod(a*a - b*b, a + b)`` is 0 to z3, which cannot decide the nonlinear division;
- ``Min``, ``Max``, ``Abs``, ``Piecewise`` (with a final ``True`` branch);
- ``Eq Ne Lt Le Gt Ge``, ``And Or Not Implies Xor Equivalent``, ``ITE``.

A rational constant that is not an integer outside ``floor``/``ceiling``
(``s/2 <= 3``) is translated over z3 reals, which z3 mixes with integers exactly.

Float operations on sizes (:mod:`.floats`: ``FAdd FSub FMul FDiv``, ``FConst``, and
``FFloor FCeil FTrunc FRound`` of them) go to z3's floating-point theory: binary64
(``FPSort(11, 53)``), round to nearest ties to even, each operand converted as
Python's ``float()`` does (``fpToFP`` of its exact value); a float meets the rest of
a guard as its exact real value (``fpToReal``), as Python compares a float with an
int exactly.  ``FPow`` (the C library's ``pow``) is an uninterpreted function: a proof
holds for every ``pow``, and a z3 model is checked in Python's floats before it counts as a
counterexample (``ShapeSolver``).  z3 is the solver's
last resort for these (it is slow on them); :mod:`.floats` decides most first.
"""
from __future__ import annotations

from typing import Callable

import sympy
import z3
from sympy.logic import boolalg

from . import floats as _floats


class UnsupportedExpressionError(TypeError, NotImplementedError):
    """A sympy construct that cannot be handled: the solver cannot translate it, or
    generated code cannot express it (the one such error of the tree).

    Args:
        construct: the sympy class name (``"sin"``, ``"Pow"``, ``"Piecewise"``).
        expr: the expression it occurs in (for the solver, the whole guard).
        detail: why this instance is refused (``"only integer exponents are supported"``).
        message: the full text, for a caller other than the solver (codegen
            says what generated code can express); by default the solver's text.

    A ``TypeError`` and a ``NotImplementedError``, so ``except`` clauses written
    for either (the solver's, codegen's) keep catching it.  ``construct``,
    ``expr`` and ``detail`` are kept as attributes.
    """

    def __init__(self, construct: str, expr: object, detail: str = "", *, message: str | None = None) -> None:
        self.construct = construct
        self.expr = expr
        self.detail = detail
        if message is None:
            extra = f": {detail}" if detail else ""
            message = (
                f"solver cannot translate `{construct}` in '{expr}'{extra}. Supported: integer "
                "+ - *, integer powers, floor(a/b), ceiling(a/b), Mod, Min, Max, Abs, Piecewise, "
                "Eq/Ne/Lt/Le/Gt/Ge, And/Or/Not, integer and rational constants."
            )
        super().__init__(message)


class Translator:
    """Translate sympy expressions into one z3 context, one ``Int`` per symbol name.

    Args:
        ctx: the z3 context (``None`` = z3's main context).

    The same name always maps to the same z3 variable, so ``Symbol('s')`` and
    ``Symbol('s', integer=True, positive=True)`` are the same size here.
    """

    def __init__(self, ctx: z3.Context | None = None) -> None:
        self.ctx = ctx
        self.vars: dict[str, z3.ArithRef] = {}
        self._cache: dict[sympy.Basic, z3.ExprRef] = {}

    def var(self, name: str) -> z3.ArithRef:
        """The z3 integer variable for size ``name`` (created on first use)."""
        v = self.vars.get(name)
        if v is None:
            v = z3.Int(name, self.ctx)
            self.vars[name] = v
        return v

    def __call__(self, expr) -> z3.ExprRef:
        """Translate ``expr`` (a sympy expression, or a Python int/bool).

        Raises:
            UnsupportedExpressionError: a construct outside the supported set.
        """
        expr = sympy.sympify(expr)
        hit = self._cache.get(expr)
        if hit is None:
            hit = self._tr(expr)
            self._cache[expr] = hit
        return hit

    # -- dispatch -------------------------------------------------------------
    def _tr(self, e: sympy.Basic) -> z3.ExprRef:
        if e is sympy.true or e is True:
            return z3.BoolVal(True, self.ctx)
        if e is sympy.false or e is False:
            return z3.BoolVal(False, self.ctx)
        if isinstance(e, sympy.Integer):
            return z3.IntVal(int(e), self.ctx)
        if isinstance(e, sympy.Rational):
            return z3.RealVal(f"{e.p}/{e.q}", self.ctx)
        if isinstance(e, sympy.Symbol):
            return self.var(e.name)
        handler = _HANDLERS.get(type(e))
        if handler is None:
            for cls, h in _HANDLERS.items():
                if isinstance(e, cls):
                    handler = h
                    break
        if handler is None:
            raise UnsupportedExpressionError(type(e).__name__, e)
        return handler(self, e)

    # -- arithmetic -----------------------------------------------------------
    def _add(self, e: sympy.Add) -> z3.ExprRef:
        return z3.Sum([self(a) for a in e.args])

    def _mul(self, e: sympy.Mul) -> z3.ExprRef:
        rational_mods = [f for f in e.args if isinstance(f, sympy.Mod) and _rational_mod(f) is not None]
        if rational_mods:
            return self._mul_rational_mod(e, rational_mods[0])
        num, den = e.as_numer_denom()
        if den != 1 and not den.is_Number:
            # symbolic denominator outside floor: exact real division
            return z3.ToReal(self(num)) / z3.ToReal(self(den))
        return z3.Product([self(a) for a in e.args])

    def _pow(self, e: sympy.Pow) -> z3.ExprRef:
        base, exp = e.args
        if not exp.is_Integer:
            raise UnsupportedExpressionError("Pow", e, "only integer exponents are supported")
        n = int(exp)
        if n == 0:
            return z3.IntVal(1, self.ctx)
        b = self(base)
        prod = b
        for _ in range(abs(n) - 1):
            prod = prod * b
        if n < 0:
            return z3.RealVal(1, self.ctx) / z3.ToReal(prod)
        return prod

    def _floor(self, e: sympy.Basic) -> z3.ExprRef:
        if e.args[0].has(*_floats.NODES):  # of a float's exact value: z3's ToInt is floor
            return z3.ToInt(z3.ToReal(self(e.args[0])))
        num, den = e.args[0].as_numer_denom()
        reduced = _poly_reduce(num, den)
        if reduced is not None:  # floor((q*den + r)/den) == q + floor(r/den) for an integer polynomial q
            q, r = reduced
            return self(q) if r == 0 else self(q) + _floordiv(self(r), self(den), self.ctx)
        return _floordiv(self(num), self(den), self.ctx)

    def _ceiling(self, e: sympy.Basic) -> z3.ExprRef:
        if e.args[0].has(*_floats.NODES):
            return -z3.ToInt(-z3.ToReal(self(e.args[0])))
        num, den = e.args[0].as_numer_denom()
        reduced = _poly_reduce(num, den)
        if reduced is not None:
            q, r = reduced
            return self(q) if r == 0 else self(q) - _floordiv(-self(r), self(den), self.ctx)
        return -_floordiv(-self(num), self(den), self.ctx)

    def _mul_rational_mod(self, e: sympy.Mul, mod: sympy.Mod) -> z3.ExprRef:
        """``rest*Mod(n1/d1, n2/d2)`` as ``(rest/(d1*d2))*Mod(n1*d2, n2*d1)``: integer when ``d1*d2`` cancels."""
        int_mod, den = _rational_mod(mod)
        rest = sympy.Mul(*[f for f in e.args if f is not mod])
        quotient = sympy.cancel(rest / den)
        q_num, q_den = quotient.as_numer_denom()
        zmod = self._int_mod(int_mod)
        if q_den == 1:
            return self(q_num) * zmod if q_num != 1 else zmod
        return z3.ToReal(self(q_num) * zmod) / z3.ToReal(self(q_den))

    def _mod(self, e: sympy.Mod) -> z3.ExprRef:
        rational = _rational_mod(e)
        if rational is not None:
            int_mod, den = rational
            return z3.ToReal(self._int_mod(int_mod)) / z3.ToReal(self(den))
        return self._int_mod(e)

    def _int_mod(self, e: sympy.Mod) -> z3.ExprRef:
        a, b = e.args
        reduced = _poly_reduce(a, b)
        if reduced is not None:  # Mod(q*b + r, b) == Mod(r, b) for an integer polynomial q
            a = reduced[1]
            if a == 0:
                return z3.IntVal(0, self.ctx)
        za, zb = self(a), self(b)
        if b.is_Integer and int(b) > 0:
            return za % zb  # z3's Euclidean mod equals Python's for a positive divisor
        return za - zb * _floordiv(za, zb, self.ctx)

    def _min(self, e: sympy.Min) -> z3.ExprRef:
        args = [self(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = z3.If(a < out, a, out)
        return out

    def _max(self, e: sympy.Max) -> z3.ExprRef:
        args = [self(a) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = z3.If(a > out, a, out)
        return out

    def _abs(self, e: sympy.Abs) -> z3.ExprRef:
        a = self(e.args[0])
        return z3.If(a >= 0, a, -a)

    def _piecewise(self, e: sympy.Piecewise) -> z3.ExprRef:
        pairs = list(e.args)
        last_val, last_cond = pairs[-1]
        if last_cond is not sympy.true:
            raise UnsupportedExpressionError("Piecewise", e, "needs a final (value, True) branch")
        out = self(last_val)
        for val, cond in reversed(pairs[:-1]):
            out = z3.If(self(cond), self(val), out)
        return out

    # -- float operations (binary64, round to nearest even) ------------------------------------
    def fp(self, e: sympy.Basic) -> z3.ExprRef:
        """``e`` as a z3 double: a float node's own rounding, else ``float()`` of its exact value."""
        sort, rne = z3.Float64(self.ctx), z3.RNE(self.ctx)
        ops = {_floats.FAdd: z3.fpAdd, _floats.FSub: z3.fpSub, _floats.FMul: z3.fpMul, _floats.FDiv: z3.fpDiv}
        op = ops.get(type(e))
        if type(e) is _floats.FDiv and all(a.is_integer and not isinstance(a, _floats.NODES) for a in e.args):
            # Python's int / int: the exact quotient, rounded once
            return z3.fpToFP(rne, z3.ToReal(self(e.args[0])) / z3.ToReal(self(e.args[1])), sort)
        if op is not None:
            return op(rne, self.fp(e.args[0]), self.fp(e.args[1]))
        if isinstance(e, _floats.FConst):
            return self.fp(e.args[0])
        if isinstance(e, _floats.FPow):
            # the C library's pow has no z3 form: an uninterpreted function, so a proof holds for
            # any pow and the solver checks each z3 model in Python's floats before using it
            fpow = z3.Function("fpow", sort, sort, sort)
            return fpow(self.fp(e.args[0]), self.fp(e.args[1]))
        if isinstance(e, sympy.Float) or e.is_Rational:
            return z3.FPVal(float(e), sort, self.ctx)
        value = self(e)
        return z3.fpToFP(rne, value if z3.is_real(value) else z3.ToReal(value), sort)

    def _float_node(self, e: sympy.Basic) -> z3.ExprRef:
        return z3.fpToReal(self.fp(e))

    def _float_to_int(self, e: sympy.Basic) -> z3.ExprRef:
        mode = {_floats.FFloor: z3.RTN, _floats.FCeil: z3.RTP, _floats.FTrunc: z3.RTZ,
                _floats.FRound: z3.RNE}[type(e)](self.ctx)
        return z3.ToInt(z3.fpToReal(z3.fpRoundToIntegral(mode, self.fp(e.args[0]))))

    def _ite(self, e: boolalg.ITE) -> z3.ExprRef:
        c, a, b = e.args
        return z3.If(self(c), self(a), self(b))

    # -- relations and logic ----------------------------------------------------
    def _rel(self, e: sympy.core.relational.Relational) -> z3.ExprRef:
        a, b = self(e.lhs), self(e.rhs)
        op = _REL_OPS[type(e)]
        return op(a, b)

    def _and(self, e) -> z3.ExprRef:
        return z3.And([self(a) for a in e.args])

    def _or(self, e) -> z3.ExprRef:
        return z3.Or([self(a) for a in e.args])

    def _not(self, e) -> z3.ExprRef:
        return z3.Not(self(e.args[0]))

    def _implies(self, e) -> z3.ExprRef:
        return z3.Implies(self(e.args[0]), self(e.args[1]))

    def _xor(self, e) -> z3.ExprRef:
        out = self(e.args[0])
        for a in e.args[1:]:
            out = z3.Xor(out, self(a))
        return out

    def _equivalent(self, e) -> z3.ExprRef:
        first = self(e.args[0])
        return z3.And([first == self(a) for a in e.args[1:]])


def _rational_mod(e: sympy.Mod):
    """``(Mod(n1*d2, n2*d1), d1*d2)`` for ``Mod(n1/d1, n2/d2)`` with a denominator, else None.

    ``Mod(x, m) == x - m*floor(x/m)`` gives ``Mod(c*x, c*m) == c*Mod(x, m)`` for any
    ``c != 0``; with ``c = d1*d2`` both operands are integer expressions. The Mod is
    built unevaluated: sympy would turn it straight back into the rational form.
    """
    a, b = e.args
    n1, d1 = a.as_numer_denom()
    n2, d2 = b.as_numer_denom()
    if d1 == 1 and d2 == 1:
        return None
    return sympy.Mod(sympy.expand(n1 * d2), sympy.expand(n2 * d1), evaluate=False), sympy.expand(d1 * d2)


def _poly_reduce(num, den):
    """``(q, r)`` with ``num == q*den + r``, ``q`` a polynomial with integer coefficients, for a
    symbolic polynomial divisor ``den`` that divides off part of ``num``; else None.

    For integer sizes ``q`` is an integer, so ``floor(num/den) == q + floor(r/den)`` and
    ``Mod(num, den) == Mod(r, den)``: z3 then never sees the nonlinear division
    ``(a**2 - b**2)/(a + b)``, which it cannot decide, only what is left of it (here 0).
    """
    if den.is_Number or not den.free_symbols or num.is_Number:
        return None
    gens = sorted(num.free_symbols | den.free_symbols, key=lambda x: x.name)
    if not (num.is_polynomial(*gens) and den.is_polynomial(*gens)):
        return None
    try:
        q, r = sympy.div(sympy.Poly(num, *gens), sympy.Poly(den, *gens))
    except (sympy.PolynomialError, sympy.CoercionFailed):
        return None
    if q.is_zero or not all(c.is_Integer for c in q.coeffs()):
        return None
    return q.as_expr(), r.as_expr()


def _floordiv(a: z3.ExprRef, b: z3.ExprRef, ctx) -> z3.ExprRef:
    """floor(a / b) over integers with Python semantics for either sign of b.

    z3's integer ``/`` is Euclidean (remainder >= 0): it equals floor division
    for b > 0; for b < 0, floor(a/b) = floor(-a/-b).
    """
    if z3.is_int_value(b) and b.as_long() > 0:
        return a / b
    if z3.is_int_value(b) and b.as_long() < 0:
        return (-a) / (-b)
    return z3.If(b > 0, a / b, (-a) / (-b))


_REL_OPS: dict[type, Callable] = {
    sympy.Eq: lambda a, b: a == b,
    sympy.Ne: lambda a, b: a != b,
    sympy.Lt: lambda a, b: a < b,
    sympy.Le: lambda a, b: a <= b,
    sympy.Gt: lambda a, b: a > b,
    sympy.Ge: lambda a, b: a >= b,
}

_HANDLERS: dict[type, Callable[[Translator, sympy.Basic], z3.ExprRef]] = {
    sympy.Add: Translator._add,
    sympy.Mul: Translator._mul,
    sympy.Pow: Translator._pow,
    sympy.floor: Translator._floor,
    sympy.ceiling: Translator._ceiling,
    sympy.Mod: Translator._mod,
    sympy.Min: Translator._min,
    sympy.Max: Translator._max,
    sympy.Abs: Translator._abs,
    sympy.Piecewise: Translator._piecewise,
    boolalg.ITE: Translator._ite,
    sympy.Eq: Translator._rel,
    sympy.Ne: Translator._rel,
    sympy.Lt: Translator._rel,
    sympy.Le: Translator._rel,
    sympy.Gt: Translator._rel,
    sympy.Ge: Translator._rel,
    sympy.And: Translator._and,
    sympy.Or: Translator._or,
    sympy.Not: Translator._not,
    sympy.Implies: Translator._implies,
    sympy.Xor: Translator._xor,
    sympy.Equivalent: Translator._equivalent,
    **{cls: Translator._float_node for cls in _floats.FLOAT_NODES},
    **{cls: Translator._float_to_int for cls in _floats.INT_NODES},
}


def check_supported(expr) -> None:
    """Raise ``UnsupportedExpressionError`` if ``expr`` holds a construct ``Translator`` rejects.

    Cheaper than translating; the solver calls it before its fast path, so an
    unsupported guard raises whether or not z3 would have been needed.
    """
    _check(sympy.sympify(expr), expr)


def _check(e, whole, in_float: bool = False) -> None:
    if isinstance(e, _floats.NODES):
        for a in e.args:
            _check(a, whole, True)
        return
    if in_float and isinstance(e, sympy.Float):
        return  # a float node's constant: its binary value
    if e.is_Atom:
        if isinstance(e, (sympy.Integer, sympy.Rational, sympy.Symbol)) or e in (sympy.true, sympy.false):
            return
        raise UnsupportedExpressionError(type(e).__name__, whole)
    if type(e) not in _HANDLERS and not any(isinstance(e, cls) for cls in _HANDLERS):
        raise UnsupportedExpressionError(type(e).__name__, whole)
    if isinstance(e, sympy.Pow) and not e.args[1].is_Integer:
        raise UnsupportedExpressionError("Pow", whole, "only integer exponents are supported")
    if isinstance(e, sympy.Piecewise):
        if e.args[-1][1] is not sympy.true:
            raise UnsupportedExpressionError("Piecewise", whole, "needs a final (value, True) branch")
        for v, c in e.args:
            _check(v, whole)
            _check(c, whole)
        return
    for a in e.args:
        _check(a, whole)


def to_z3(expr, ctx: z3.Context | None = None) -> z3.ExprRef:
    """One-shot translation of ``expr`` (see ``Translator``)."""
    return Translator(ctx)(expr)
