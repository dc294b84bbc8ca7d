"""Contracts that compose: does every size one program admits give outputs the next program admits?

:func:`compose` binds the outputs of ``producer`` to inputs of ``consumer`` and
decides, with the solver (``solver.ShapeSolver.implies``), each rule the
consumer's input checks enforce (static sizes, shared dims, derived sizes,
ranges, guards; :mod:`.input_checks`) with the bound axes replaced by the
producer's output shapes (expressions of the producer's dims, read from the
graph by :mod:`.sizes`).  Over the producer's admitted sizes (its ranges and
guards) a rule is:

- proved: it holds for every size the producer admits;
- refuted: the solver gives producer sizes where it fails (the witness);
- undecided: the solver timed out, or the rule ties a consumer input the
  producer does not feed to a fed one in a form this module does not reduce.

Consumer inputs the producer does not feed ("extra inputs") keep their own
contract; a rule that sets an extra input's size from a fed one (``mask``
must be as long as ``x``) becomes part of the composed contract: it does not
limit the producer.

A loop (``compose(step, step, mapping, steps=N)``) feeds a program's outputs
back to its own inputs: call 1 takes any size the program admits (or the
``initial`` ranges), call ``k + 1`` the outputs of call ``k`` (its other inputs
fresh each call, within their contract).  Each call's rules are decided in
turn; the first call whose inputs leave the contract is reported.  A
program composed with itself without ``steps`` is a loop of two calls.  The
program is its own consumer there, so narrowing its dims cannot help (the
sizes grow past any range): the error's ``initial`` is instead the start range
re-decided to last every call.

Refuted: :class:`~tensorplay_export.errors.ConstraintViolationError` in the
usual layout (``records.Violation`` bullets, ``errors.render_violations``), each
with its counterexample, the consumer's line reading that input and the
producer's line computing the output, and a ``Suggested fixes:`` block on the
producer's dims (``solver.suggest_fixes``) that is re-decided before it is
printed: with the fixes applied every rule is proved.  The error's ``witness``
(:class:`CompositionWitness`) gives the producer input sizes, the output shapes
they give and the rule they break.  Output dtypes that differ from the input's
checked dtype, and ranks that differ, are reported in the same error (no
dims fix them).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping, Optional

from ..capture.exclusive import exclusive
from ..errors import NO_FIXES_LINE, ConstraintViolationError, render_violations
from ..graph.printing import format_guard
from ..records import DimInfo, GuardRecord, Violation, format_range, format_range_brackets, sympy
from .sizes import ProgramSizes, read_sizes
from solver.forms import affine as _affine

__all__ = ["compose", "ComposedContract", "CompositionWitness", "CompositionError", "TypeMismatch"]

DEFAULT_TIMEOUT_MS = 2000


class CompositionError(ValueError):
    """The programs cannot be wired as asked (unknown output or input, an input fed twice, a non-array output)."""


# -- records ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TypeMismatch:
    """A fed input whose dtype or rank differs from the output feeding it (no dims fix it)."""

    output: str
    input: str
    what: str       # "dtype" | "rank" | "size" (a static size, wrong whatever the dims)
    got: str
    expected: str

    def __str__(self) -> str:
        if self.what == "size":
            return (f"output {self.output} gives the consumer's input {self.input} the size {self.got} at every "
                    f"size of the producer, which breaks its rule {self.expected}")
        return (f"output {self.output} has {self.what} {self.got}, but the consumer's input {self.input} "
                f"must have {self.what} {self.expected}")


@dataclass
class CompositionWitness:
    """Sizes that break a composition.

    Attributes:
        inputs: producer input site -> size (``{"ids.shape[1]": 1024}``): every axis of every input.
        outputs: output name -> the shape those inputs give (``{"out0": (1, 1024)}``).
        extras: the consumer's other inputs' sizes used (site -> size), if any.
        rule: the consumer rule they break (``input_ids.shape[1] <= 512 (n)``).
        consumer_input: the consumer input that rule is about.
        consumer_line / producer_line: ``file:line`` of the consumer line reading that
            input and of the producer line computing the output (None when unknown).
        step: for a loop, the call whose inputs leave the contract (2 = the first
            call fed by outputs); None for two programs.
    """

    inputs: dict
    outputs: dict
    rule: str
    consumer_input: str
    extras: dict = field(default_factory=dict)
    consumer_line: Optional[str] = None
    producer_line: Optional[str] = None
    step: Optional[int] = None

    def to_json(self) -> dict:
        return {"inputs": dict(self.inputs), "outputs": {k: list(v) for k, v in self.outputs.items()},
                "extras": dict(self.extras), "rule": self.rule, "consumer_input": self.consumer_input,
                "consumer_line": self.consumer_line, "producer_line": self.producer_line, "step": self.step}

    def __str__(self) -> str:
        ins = ", ".join(f"{k} = {v}" for k, v in self.inputs.items())
        outs = ", ".join(f"{k} of shape {_shape_text(v)}" for k, v in self.outputs.items())
        at = f"call {self.step} of the loop: " if self.step is not None else ""
        return f"{at}producer inputs {ins} give {outs}, which breaks the consumer's rule {self.rule}"


@dataclass
class ComposedContract:
    """What a composition admits, when it is not refuted.

    Attributes:
        verdict: ``"proved"`` (every size the producer admits fits) or ``"unknown"``
            (the solver could not decide some rule; ``undecided`` says which). Never
            ``"proved"`` unless every rule was proved.
        wiring: ``[(output name, consumer input path)]``.
        inputs: ``[(path, dtype, shape)]``: the producer's inputs, then the consumer's
            extra inputs (their sizes as the composition ties them).
        ranges: root symbol -> ``(lower, upper | None)``.
        guards: sympy booleans the composed inputs must also satisfy.
        outputs: ``[(shape | None, dtype | None)]``: the consumer's outputs over those dims
            (for a loop: the outputs of call ``steps``).
        undecided: ``[(rule text, reason)]`` for an ``"unknown"`` verdict.
        steps: calls of a loop (None for two programs).
    """

    verdict: str
    wiring: list
    inputs: list
    ranges: dict
    guards: list
    outputs: list
    undecided: list = field(default_factory=list)
    steps: Optional[int] = None
    producer: str = "producer"
    consumer: str = "consumer"

    @property
    def proved(self) -> bool:
        return self.verdict == "proved"

    def describe(self) -> str:
        wiring = ", ".join(f"{o} -> {i}" for o, i in self.wiring)
        if self.steps is not None:
            what = f"{self.steps} calls of {self.producer} fed back through {wiring}"
        else:
            what = f"{self.producer} -> {self.consumer} ({wiring})"
        if self.proved:
            head = (f"proved: {what}: every size the first call admits gives inputs every later call admits"
                    if self.steps is not None else
                    f"proved: {what}: every size {self.producer} admits gives outputs {self.consumer} admits")
        else:
            head = f"undecided: could not decide whether {what} always fits (not proved)"
        out = [head]
        for rule, reason in self.undecided:
            out.append(f"  undecided: {rule} ({reason})")
        out.append("Inputs:")
        out += [f"  {p}: {_shape_text(s)} {dt}" for p, dt, s in self.inputs]
        if self.ranges:
            out.append("Dims:")
            out += [f"  {s.name} in {format_range_brackets(lo, hi)}"
                    for s, (lo, hi) in sorted(self.ranges.items(), key=lambda kv: kv[0].name)]
        if self.guards:
            out.append("Guards:")
            out += [f"  {format_guard(g)}" for g in self.guards]
        out.append("Outputs:")
        for i, (shape, dtype) in enumerate(self.outputs):
            shown = _shape_text(shape) if shape is not None else "(not an array)"
            out.append(f"  out{i}: {shown} {dtype or ''}".rstrip())
        return "\n".join(out)

    def __str__(self) -> str:
        return self.describe()

    def to_json(self) -> dict:
        def texts(shape: Any) -> Any:
            return None if shape is None else [_dim_text(d) for d in shape]

        return {"verdict": self.verdict, "steps": self.steps,
                "wiring": [{"output": o, "input": i} for o, i in self.wiring],
                "inputs": [{"path": p, "dtype": dt, "shape": texts(s)} for p, dt, s in self.inputs],
                "dims": [{"name": s.name, "min": lo, "max": hi}
                         for s, (lo, hi) in sorted(self.ranges.items(), key=lambda kv: kv[0].name)],
                "guards": [format_guard(g) for g in self.guards],
                "outputs": [{"shape": texts(s), "dtype": dt} for s, dt in self.outputs],
                "undecided": [{"rule": r, "reason": why} for r, why in self.undecided]}


def _int_or(e: Any) -> Any:
    return int(e) if isinstance(e, sympy.Basic) and e.is_Integer else e


def _dim_text(d: Any) -> str:
    if isinstance(d, int) or (isinstance(d, sympy.Basic) and d.is_Integer):
        return str(int(d))
    return format_guard(d)


def _shape_text(shape: Any) -> str:
    parts = [_dim_text(d) for d in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _loc(src: Any) -> Optional[str]:
    return None if src is None else f"{os.path.basename(src.filename)}:{src.lineno}"


# -- wiring ----------------------------------------------------------------------------------------
def _output_index(key: Any, n: int) -> int:
    if isinstance(key, int) and not isinstance(key, bool):
        idx = key
    elif isinstance(key, str) and key.startswith("out") and key[3:].isdigit():
        idx = int(key[3:])
    else:
        raise CompositionError(f"mapping key {key!r} is not an output: name outputs out0 .. out{n - 1}"
                               if n else f"mapping key {key!r}: the producer has no outputs")
    if not 0 <= idx < n:
        raise CompositionError(f"mapping names output {key!r}, but the producer has {n} output"
                               f"{'s' if n != 1 else ''} (out0 .. out{n - 1})")
    return idx


def _wiring(prod: ProgramSizes, cons: ProgramSizes, mapping: Optional[Mapping]) -> list[tuple[int, int]]:
    """``[(output index, consumer input index)]``; raises CompositionError for a wiring that cannot be."""
    paths = [i.path for i in cons.inputs]
    n_out = len(prod.outputs)
    if mapping is None:
        if n_out > len(paths):
            raise CompositionError(f"the producer has {n_out} outputs but the consumer only {len(paths)} array "
                                   f"inputs ({', '.join(paths)}): pass mapping={{'out0': '{paths[0] if paths else 'x'}'"
                                   f", ...}} to choose")
        pairs = [(i, i) for i in range(n_out)]
    else:
        if not isinstance(mapping, Mapping) or not mapping:
            raise CompositionError(f"mapping must be a non-empty dict {{'out0': 'x', ...}}, got {mapping!r}")
        pairs, fed = [], {}
        for key, target in mapping.items():
            idx = _output_index(key, n_out)
            if target not in paths:
                raise CompositionError(f"mapping sends out{idx} to {target!r}, which is not an array input of the "
                                       f"consumer (its inputs: {', '.join(paths) or 'none'})")
            j = paths.index(target)
            if j in fed:
                raise CompositionError(f"consumer input {target!r} is fed twice (by out{fed[j]} and out{idx})")
            fed[j] = idx
            pairs.append((idx, j))
    for i, _j in pairs:
        if prod.outputs[i].shape is None:
            raise CompositionError(f"out{i} is not an array (the program returns a non-array value there); "
                                   f"it cannot feed an array input")
    return pairs


def _mismatches(prod: ProgramSizes, cons: ProgramSizes, pairs: list) -> list[TypeMismatch]:
    out = []
    for i, j in pairs:
        o, x = prod.outputs[i], cons.inputs[j]
        if len(o.shape) != len(x.shape):
            out.append(TypeMismatch(f"out{i}", x.path, "rank", str(len(o.shape)), str(len(x.shape))))
        if x.dtype != "any" and o.dtype is not None and o.dtype != x.dtype:
            out.append(TypeMismatch(f"out{i}", x.path, "dtype", o.dtype, x.dtype))
    return out


# -- the consumer's rules over given input sizes ---------------------------------------------------
@dataclass
class _Rule:
    cond: Any       # sympy boolean over the solver's symbols
    text: str       # as the consumer's contract states it
    path: str       # the consumer input it is about
    kind: str       # "static" | "bind" | "equal" | "range" | "guard"
    bound: Optional[tuple] = None  # for "range": ("lower" | "upper", value)
    parts: Optional[tuple] = None  # (lhs, op, rhs) of a relation, to show one that evaluates to False


def _rel(lhs: Any, op: str, rhs: Any, text: str, path: str, kind: str, bound: Optional[tuple] = None) -> _Rule:
    return _Rule(sympy.Rel(lhs, rhs, op), text, path, kind, bound, (lhs, op, rhs))


def _shown(rule: _Rule, cond: Any, subst: dict) -> Any:
    """``cond`` as it is decided, or (when it has no sizes left, ``past + 64 <= 63``) unevaluated."""
    if cond.free_symbols or rule.parts is None:
        return cond
    lhs, op, rhs = rule.parts
    return sympy.Rel(sympy.sympify(lhs).xreplace(subst), sympy.sympify(rhs).xreplace(subst), op, evaluate=False)


def _root_sites(cons: ProgramSizes, order: list[int]) -> dict:
    names: dict = {}
    for j in order:
        for axis, d in enumerate(cons.inputs[j].shape):
            if isinstance(d, sympy.Symbol) and d not in names:
                names[d] = f"{cons.inputs[j].path}.shape[{axis}]"
    return names


def _consumer_rules(cons: ProgramSizes, var: dict, order: list[int]) -> tuple[list[_Rule], dict]:
    """The consumer's checks as rules over ``var[(input index, axis)]`` (sizes), and root -> its size.

    Roots bind at their first bare axis in ``order`` (fed inputs first, so a rule
    between a fed and an extra input sets the extra input), else through a
    derived axis ``k*r + c`` (divisibility and sign become rules).
    """
    binding: dict = {}
    rules: list[_Rule] = []
    for j in order:
        for axis, d in enumerate(cons.inputs[j].shape):
            if isinstance(d, sympy.Symbol) and d not in binding:
                binding[d] = var[(j, axis)]
    for j in order:
        path = cons.inputs[j].path
        for axis, d in enumerate(cons.inputs[j].shape):
            aff = _affine(d) if isinstance(d, sympy.Basic) and not d.is_Integer else None
            if aff is not None and aff[0] not in binding:
                r, k, c0 = aff
                v = var[(j, axis)]
                binding[r] = sympy.floor((v - c0) / k)
                site = f"{path}.shape[{axis}]"
                rules.append(_rel(sympy.Mod(v - c0, abs(k)), "==", 0, f"{site} == {_dim_text(d)}", path, "bind"))
                rules.append(_rel(v, ">=" if k > 0 else "<=", c0, f"{site} == {_dim_text(d)}", path, "bind"))
    sites = _root_sites(cons, order)
    for j in order:
        path = cons.inputs[j].path
        for axis, d in enumerate(cons.inputs[j].shape):
            v, site = var[(j, axis)], f"{path}.shape[{axis}]"
            if not isinstance(d, sympy.Basic) or d.is_Integer:
                rules.append(_rel(v, "==", int(d), f"{site} == {int(d)}", path, "static"))
            elif d.free_symbols <= binding.keys():
                e = d.xreplace(binding)
                if e != v:
                    other = sites.get(d) if isinstance(d, sympy.Symbol) else None
                    text = f"{site} == {other} (dim {d.name})" if other else f"{site} == {_dim_text(d)}"
                    rules.append(_rel(v, "==", e, text, path, "equal"))
    for r, (lo, hi) in cons.ranges.items():
        if r not in binding:
            continue
        where = sites.get(r, "")
        path = where.split(".shape[")[0] if where else ""
        label = f" ({r.name} = {where})" if where else ""
        rules.append(_rel(binding[r], ">=", lo, f"{r.name} >= {lo}{label}", path, "range", ("lower", lo)))
        if hi is not None:
            rules.append(_rel(binding[r], "<=", hi, f"{r.name} <= {hi}{label}", path, "range", ("upper", hi)))
    for g in cons.guards:
        if g.free_symbols <= binding.keys():
            syms = sorted(g.free_symbols, key=lambda s: s.name)
            path = sites.get(syms[0], "").split(".shape[")[0] if syms else ""
            rules.append(_Rule(g.xreplace(binding), format_guard(g), path, "guard"))
    return rules, binding


def _solve_extras(rules: list[_Rule], extras: set) -> dict:
    """Extra-input size symbols a rule sets from fed sizes (``Eq(e, expr)``) -> that expr."""
    subst: dict = {}
    changed = True
    while changed:
        changed = False
        for rule in rules:
            c = rule.cond.xreplace(subst) if subst else rule.cond
            if not isinstance(c, sympy.Eq):
                continue
            for a, b in ((c.lhs, c.rhs), (c.rhs, c.lhs)):
                if a in extras and a not in subst and a not in b.free_symbols:
                    subst = {k: v.xreplace({a: b}) for k, v in subst.items()}
                    subst[a] = b
                    changed = True
                    break
    return subst


# -- deciding ----------------------------------------------------------------------------------------
@dataclass
class _Failure:
    rule: _Rule
    cond: Any
    counterexample: Optional[dict]
    step: Optional[int]
    output: Optional[int]  # the producer output feeding the rule's input
    reason: str = ""
    fed: dict = field(default_factory=dict)  # output name -> its shape (expressions) at that call


@dataclass
class _Outcome:
    failures: list = field(default_factory=list)
    undecided: list = field(default_factory=list)  # (rule text, reason)
    inputs: list = field(default_factory=list)
    ranges: dict = field(default_factory=dict)
    guards: list = field(default_factory=list)
    outputs: list = field(default_factory=list)


def _producer_solver(prod: ProgramSizes, ranges: dict, extra_assumptions: list, timeout_ms: int) -> Any:
    from solver import ShapeSolver

    s = ShapeSolver(timeout_ms=timeout_ms)
    for sym, (lo, hi) in ranges.items():
        s.declare(sym.name, lower=lo, upper=hi)
    for g in list(prod.guards) + list(extra_assumptions):
        s.assume(g)
    return s


def _decide(prod: ProgramSizes, cons: ProgramSizes, pairs: list, *, steps: Optional[int], ranges: dict,
            extra_assumptions: list, timeout_ms: int) -> _Outcome:
    """Decide every consumer rule of every fed call (one for two programs, ``steps - 1`` for a loop)."""
    s = _producer_solver(prod, ranges, extra_assumptions, timeout_ms)
    outcome = _Outcome()
    fed = {j: i for i, j in pairs}
    order = [j for j in range(len(cons.inputs)) if j in fed] + [j for j in range(len(cons.inputs)) if j not in fed]
    outs = [o.shape for o in prod.outputs]  # output shapes of the call before, over the solver's symbols
    calls = range(2, (steps or 2) + 1)
    composed_ranges = dict(ranges)
    extra_bounds: dict = {}
    extra_inputs: list = []
    consumer_outputs: list = []
    for call in calls:
        var, extras = {}, set()
        for j, site in enumerate(cons.inputs):
            for axis in range(len(site.shape)):
                if j in fed:
                    var[(j, axis)] = sympy.sympify(outs[fed[j]][axis])
                else:
                    tag = f"@{call}" if steps is not None else ""
                    sym = sympy.Symbol(f"{site.path}.shape[{axis}]{tag}", integer=True, nonnegative=True)
                    var[(j, axis)] = sym
                    extras.add(sym)
        rules, binding = _consumer_rules(cons, var, order)
        subst = _solve_extras(rules, extras)
        free_extras = extras - set(subst)
        for sym in free_extras:  # an extra input's own size: declared, constrained by its own rules below
            s.declare(sym.name, lower=0, upper=None)
            extra_bounds[sym] = [0, None]
        for rule in rules:
            cond = rule.cond.xreplace(subst) if subst else rule.cond
            if cond is sympy.true:
                continue
            mentions = cond.free_symbols & free_extras
            if mentions and cond.free_symbols - free_extras:
                outcome.undecided.append((rule.text, "it ties an input the producer does not feed to a fed one"))
                continue
            if mentions:  # a rule on the extra inputs alone: theirs to keep, part of the composed contract
                s.assume(cond)
                sym = next(iter(mentions))
                if rule.kind == "range" and len(mentions) == 1 and rule.cond.lhs == sym:
                    side, value = rule.bound
                    extra_bounds[sym][0 if side == "lower" else 1] = value
                    continue
                outcome.guards.append(cond)
                continue
            try:
                verdict = s.implies(cond)
            except Exception as err:  # noqa: BLE001 - an untranslatable rule is undecided, never proved
                outcome.undecided.append((rule.text, f"the solver cannot translate it: {err}"))
                continue
            if verdict.status == "proved":
                continue
            if verdict.status == "refuted":
                j = next((j for j, x in enumerate(cons.inputs) if x.path == rule.path), None)
                fed_shapes = {f"out{i}": outs[i] for i, _j in pairs}
                outcome.failures.append(_Failure(rule, _shown(rule, cond, subst), dict(verdict.counterexample or {}),
                                                 call if steps is not None else None, fed.get(j), verdict.reason,
                                                 fed_shapes))
                s.assume(cond)  # later rules are decided where this one holds (one witness per rule)
            else:
                outcome.undecided.append((rule.text, verdict.reason or "the solver timed out"))
                s.assume(cond)
        full = {**binding}
        for r, e in full.items():
            full[r] = e.xreplace(subst) if isinstance(e, sympy.Basic) else e
        consumer_outputs = [None if o.shape is None else
                            tuple(_int_or(sympy.sympify(d).xreplace(full)) for d in o.shape)
                            for o in cons.outputs]
        if steps is None:
            extra_inputs = [(x.path, x.dtype, tuple(_int_or(var[(j, a)].xreplace(subst))
                                                    for a in range(len(x.shape))))
                            for j, x in enumerate(cons.inputs) if j not in fed]
            for sym in free_extras:
                composed_ranges[sym] = tuple(extra_bounds[sym])
        if steps is not None:  # the next call is fed by this call's outputs
            outs = [tuple(sympy.sympify(d) for d in o) if o is not None else None for o in consumer_outputs]
    outcome.ranges = composed_ranges
    outcome.inputs = extra_inputs
    outcome.outputs = [(shape, o.dtype) for shape, o in zip(consumer_outputs, cons.outputs)]
    return outcome


# -- fixes -------------------------------------------------------------------------------------------
def _hints(prod: ProgramSizes, ranges: dict, conds: list, timeout_ms: int) -> Optional[dict]:
    """Producer dim sizes where every failed rule holds: the example's when they do, else a solver witness."""
    from solver import evaluate

    hints: dict = {}
    for site in prod.inputs:
        shape = prod.examples.get(site.placeholder)
        if shape is None or len(shape) != len(site.shape):
            continue
        for d, n in zip(site.shape, shape):
            if isinstance(d, sympy.Symbol):
                hints.setdefault(d.name, int(n))
    names = {s.name for s in ranges}
    if names <= hints.keys():
        try:
            if all(evaluate(c, hints) is True for c in conds):
                return hints
        except Exception:  # noqa: BLE001 - fall back to a witness
            pass
    s = _producer_solver(prod, ranges, [], timeout_ms)
    v = s.satisfiable(sympy.And(*conds))
    if v.status != "proved":
        return None
    cex = dict(v.counterexample or {})
    return {s.name: int(cex.get(s.name, lo)) for s, (lo, _hi) in ranges.items()}


def _fix_assumptions(fixes: list, ranges: dict) -> tuple[dict, list]:
    """The producer's ranges and extra assumptions once ``fixes`` (solver fix records) are applied."""
    from solver import ConstantFix, RangeFix, RelationFix, make_symbol

    by_name = {s.name: s for s in ranges}
    new_ranges = dict(ranges)
    assumptions = []
    for f in fixes:
        if isinstance(f, RangeFix):
            sym = by_name.get(f.name)
            if sym is None:
                sym = make_symbol(f.name, f.lower)
                by_name[f.name] = sym
            new_ranges[sym] = (f.lower if f.lower is not None else 0, f.upper)
    for f in fixes:
        if isinstance(f, ConstantFix):
            sym = by_name[f.name]
            new_ranges[sym] = (f.value, f.value)
        elif isinstance(f, RelationFix):
            expr = sum(k * by_name[r] for r, k in f.terms) + f.offset
            assumptions.append(sympy.Eq(by_name[f.name], expr))
    return new_ranges, assumptions


def _suggest(prod: ProgramSizes, cons: ProgramSizes, pairs: list, failures: list, *, steps, ranges: dict,
             timeout_ms: int) -> tuple[list, list]:
    """Fix records on the producer's dims and their lines, re-decided: [] when none is proved to work."""
    from solver import suggest_fixes

    conds = [f.cond for f in failures]
    if any(not (c.free_symbols <= set(ranges)) for c in conds):
        return [], []
    hints = _hints(prod, ranges, conds, timeout_ms)
    if hints is None:
        return [], []
    dims = {s.name: ranges[s] for s in _input_order(prod, ranges)}
    try:
        fs = suggest_fixes(conds, dims=dims, hints=hints, relations="linear", timeout_ms=timeout_ms)
    except Exception:  # noqa: BLE001 - no fix is better than an unproved one
        return [], []
    if not fs.fixes or fs.unfixable:
        return [], []
    new_ranges, assumptions = _fix_assumptions(fs.fixes, ranges)
    again = _decide(prod, cons, pairs, steps=steps, ranges=new_ranges, extra_assumptions=assumptions,
                    timeout_ms=timeout_ms)
    if again.failures or again.undecided:
        return [], []
    return list(fs.fixes), list(fs.lines)


def _input_order(prod: ProgramSizes, ranges: dict) -> list:
    seen: list = []
    for site in prod.inputs:
        for d in site.shape:
            if isinstance(d, sympy.Basic):
                for sym in sorted(d.free_symbols, key=lambda x: x.name):
                    if sym in ranges and sym not in seen:
                        seen.append(sym)
    return seen + [s for s in ranges if s not in seen]


# -- the error -------------------------------------------------------------------------------------
def _root_sites_of(prod: ProgramSizes) -> dict:
    sites: dict = {}
    for site in prod.inputs:
        for axis, d in enumerate(site.shape):
            if isinstance(d, sympy.Basic) and not d.is_Integer:
                for sym in d.free_symbols:
                    sites.setdefault(sym.name, []).append(f"{site.path}.shape[{axis}]")
    return sites


def _witness(prod: ProgramSizes, cons: ProgramSizes, failure: _Failure, ranges: dict, steps: Optional[int],
             pairs: list) -> CompositionWitness:
    from solver import evaluate

    cex = dict(failure.counterexample or {})
    values = {}
    for sym, (lo, _hi) in ranges.items():
        values[sym.name] = int(cex.get(sym.name, lo))
    inputs = {}
    for site in prod.inputs:
        for axis, d in enumerate(site.shape):
            inputs[f"{site.path}.shape[{axis}]"] = int(evaluate(sympy.sympify(d), values))
    extras = {k: int(v) for k, v in cex.items() if k not in values}
    outputs = {}
    for name, shape in failure.fed.items():
        try:
            outputs[name] = tuple(int(evaluate(sympy.sympify(d), {**values, **extras})) for d in shape)
        except Exception:  # noqa: BLE001 - a size that needs a value the witness does not give: left out
            continue
    j = next((j for j, x in enumerate(cons.inputs) if x.path == failure.rule.path), None)
    src_c = cons.inputs[j].source if j is not None else None
    src_p = prod.outputs[failure.output].source if failure.output is not None else None
    return CompositionWitness(inputs, outputs, failure.rule.text, failure.rule.path, extras, _loc(src_c),
                              _loc(src_p), failure.step)


def _violation(prod: ProgramSizes, cons: ProgramSizes, failure: _Failure, ranges: dict, fix_lines: list,
               names_of: dict, loop_start: Optional[dict] = None) -> Violation:
    cond = failure.cond
    names = tuple(sorted(s.name for s in cond.free_symbols if s in ranges))
    sites = _root_sites_of(prod)
    dims = tuple(DimInfo(n, ranges[names_of[n]][0], ranges[names_of[n]][1], 0, sites.get(n, []))
                 for n in names)
    j = next((j for j, x in enumerate(cons.inputs) if x.path == failure.rule.path), None)
    src_c = cons.inputs[j].source if j is not None else None
    src_p = prod.outputs[failure.output].source if failure.output is not None else None
    feed = f" (fed by the producer's out{failure.output})" if failure.output is not None else ""
    at = f"call {failure.step}: " if failure.step is not None else ""
    notes = []
    if src_p is not None:
        notes.append(f"the producer computes out{failure.output} at {src_p}")
    guard = GuardRecord(cond, "shape", f"consumer rule {failure.rule.text}", src_c, notes=notes)
    cex = {k: v for k, v in (failure.counterexample or {}).items() if k in names}
    unfixable, works = None, None
    if failure.step is not None:  # a loop: the program is its own consumer, so its range cannot fix it
        unfixable = "no dynamic_shapes change fixes a loop whose sizes grow past the program's own range"
        if loop_start:
            works = ("start the loop inside " + ", ".join(f"{n} in {format_range_brackets(lo, hi)}"
                                                          for n, (lo, hi) in loop_start.items())
                     + f" (compose(..., initial={loop_start!r}))")
    elif not fix_lines:
        unfixable = "no range of the producer's dims is proved to make it hold"
    mine = tuple(ln for ln in fix_lines if any(ln.startswith(n + " ") or f" {n}" in ln for n in names)) \
        or tuple(fix_lines)
    return Violation(guard, format_guard(cond), names, dims,
                     tuple(format_range(n, ranges[names_of[n]][0], ranges[names_of[n]][1]) for n in names),
                     reason=f"{at}the consumer's rule {failure.rule.text} on input {failure.rule.path}{feed}",
                     counterexample=cex or None, fix_lines=mine, unfixable=unfixable, what_works=works)


def _raise(prod: ProgramSizes, cons: ProgramSizes, pairs: list, failures: list, mismatches: list, *,
           steps: Optional[int], ranges: dict, timeout_ms: int, every: Optional[list] = None) -> None:
    names_of = {s.name: s for s in ranges}
    fixes, lines = ([], []) if mismatches or not failures else \
        _suggest(prod, cons, pairs, every or failures, steps=steps, ranges=ranges, timeout_ms=timeout_ms)
    loop_start = None
    if steps is not None:  # verified against the same program as consumer: a start range, not a spec
        loop_start = _loop_start(fixes, ranges)
        fixes, lines = [], []
    violations = [_violation(prod, cons, f, ranges, lines, names_of, loop_start) for f in failures]
    text = render_violations(violations, lines) if violations else ""
    if mismatches:
        bullets = [f"  - {m}" for m in mismatches]
        if text:
            head, _, rest = text.partition("\n")
            text = "\n".join([head] + bullets + [rest])
        else:
            kinds = ", ".join(sorted({m.what for m in mismatches}))
            text = "\n".join([f"Constraints violated ({kinds})!"] + bullets + ["", NO_FIXES_LINE])
    witness = _witness(prod, cons, failures[0], ranges, steps, pairs) if failures else None
    if witness is not None:  # after the head, so the fix block stays last (refine reads it there)
        head, _, rest = text.partition("\n")
        text = "\n".join([head, f"  witness: {witness}"] + ([rest] if rest else []))
    err = ConstraintViolationError(text, violations=violations, fixes=lines)
    err.witness = witness
    err.mismatches = list(mismatches)
    err.step = failures[0].step if failures else None
    err.initial = loop_start
    raise err


def _loop_start(fixes: list, ranges: dict) -> Optional[dict]:
    """``{dim: (lower, upper)}`` for a loop's call 1 from verified range fixes (None: no such fix)."""
    from solver import RangeFix

    names = {s.name: r for s, r in ranges.items()}
    if not fixes or not all(isinstance(f, RangeFix) and not f.new_root and f.name in names for f in fixes):
        return None
    return {f.name: (f.lower if f.lower is not None else names[f.name][0], f.upper) for f in fixes}


# -- entry point ---------------------------------------------------------------------------------------
@exclusive
def compose(producer: Any, consumer: Any, mapping: Optional[Mapping] = None, *, steps: Optional[int] = None,
            initial: Optional[Mapping] = None, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> ComposedContract:
    """Decide whether ``producer``'s outputs always fit ``consumer``'s inputs (see the module docstring).

    Args:
        producer, consumer: ``ExportedProgram`` objects (fresh or loaded); the same
            program twice with ``steps`` for a loop (two programs with ``steps``: the
            producer once, then the consumer fed by the call before, e.g. a prefill
            then decode steps; the mapping must fit both).
        mapping: ``{"out0": "x", ...}`` (output name or index -> consumer input path);
            None: output ``k`` feeds input ``k``.  Unfed consumer inputs are extra
            inputs with their own contract.
        steps: for a loop, the number of calls ``N`` (>= 2 to feed anything): call 1 takes
            the program's own contract, each later call the outputs of the one before.
        initial: for a loop, ``{dim name: size or (lower, upper)}`` narrowing call 1's
            dims (``{"past": 0}`` starts from an empty cache).
        timeout_ms: solver time per query.

    Returns:
        :class:`ComposedContract` with ``verdict == "proved"``, or ``"unknown"`` when some
        rule could not be decided (never called proved).

    Raises:
        ConstraintViolationError: some size the producer admits gives outputs the consumer
            refuses, or a dtype/rank/static size differs; ``.witness`` (:class:`CompositionWitness`),
            ``.violations``, ``.fixes`` (re-decided: with them applied every rule is proved),
            ``.mismatches`` (:class:`TypeMismatch`), ``.step`` and ``.initial`` (loops: the
            first call leaving the contract; a start range proved to last, or None).
        CompositionError: a wiring that cannot be (unknown output or input, an input fed
            twice, a non-array output, a bad ``steps`` or ``initial``).
    """
    if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
        raise CompositionError(f"steps must be a positive int (the number of calls), got {steps!r}")
    if steps is None and producer is consumer:  # its outputs feed its own inputs: a loop of two calls
        steps = 2
    prod, cons = read_sizes(producer), read_sizes(consumer)
    pairs = _wiring(prod, cons, mapping)
    if steps is not None and producer is not consumer:  # later calls feed the consumer its own outputs
        _wiring(cons, cons, mapping)
    ranges = _initial_ranges(prod, initial, steps)
    mismatches = _mismatches(prod, cons, pairs)
    wiring = [(f"out{i}", cons.inputs[j].path) for i, j in pairs]
    if mismatches:
        _raise(prod, cons, pairs, [], mismatches, steps=steps, ranges=ranges, timeout_ms=timeout_ms)
    if steps == 1:  # one call feeds nothing: the program's own contract
        outputs = [(o.shape, o.dtype) for o in prod.outputs]
        return ComposedContract("proved", wiring, [(i.path, i.dtype, i.shape) for i in prod.inputs], ranges,
                                list(prod.guards), outputs, steps=1)
    outcome = _decide(prod, cons, pairs, steps=steps, ranges=ranges, extra_assumptions=[], timeout_ms=timeout_ms)
    if outcome.failures:  # a loop reports its first call that leaves the contract; fixes cover every call
        first = outcome.failures if steps is None else \
            [f for f in outcome.failures if f.step == outcome.failures[0].step]
        # a rule with no size left in it fails at every size (a static 8 where 4 is required): no dim fixes it
        fixed = [TypeMismatch(f"out{f.output}" if f.output is not None else "?", f.rule.path, "size",
                              _dim_text(getattr(f.cond, "lhs", f.cond)), f.rule.text)
                 for f in first if not f.cond.free_symbols]
        if fixed:  # in a loop too: nothing grows, the width is wrong at every call
            _raise(prod, cons, pairs, [f for f in first if f.cond.free_symbols], fixed, steps=steps,
                   ranges=ranges, timeout_ms=timeout_ms)
        _raise(prod, cons, pairs, first, [], steps=steps, ranges=ranges, timeout_ms=timeout_ms,
               every=outcome.failures)
    inputs = [(i.path, i.dtype, i.shape) for i in prod.inputs]
    if steps is None:
        inputs += outcome.inputs
    verdict = "unknown" if outcome.undecided else "proved"
    return ComposedContract(verdict, wiring, inputs, outcome.ranges, list(prod.guards) + outcome.guards,
                            outcome.outputs, outcome.undecided, steps)


def _initial_ranges(prod: ProgramSizes, initial: Optional[Mapping], steps: Optional[int]) -> dict:
    ranges = dict(prod.ranges)
    if initial is None:
        return ranges
    if steps is None:
        raise CompositionError("initial sizes are for loops (pass steps=N)")
    by_name = {s.name: s for s in ranges}
    for name, value in initial.items():
        if name not in by_name:
            raise CompositionError(f"initial names {name!r}, which is not a dim of the program "
                                   f"(its dims: {', '.join(sorted(by_name)) or 'none'})")
        lo, hi = (value, value) if isinstance(value, int) else tuple(value)
        sym = by_name[name]
        dlo, dhi = ranges[sym]
        if lo < dlo or (dhi is not None and (hi is None or hi > dhi)):
            raise CompositionError(f"initial {name} in {format_range_brackets(lo, hi)} is outside the program's "
                                   f"range {format_range_brackets(dlo, dhi)}")
        ranges[sym] = (lo, hi)
    return ranges
