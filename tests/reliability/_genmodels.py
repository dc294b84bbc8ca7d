"""Random numpy models over dynamic dims, and two independent judges of a program's contract.

A model is ``x: (A, B)`` and ``y`` (a template over the size symbols A, B, C) fed through a
list of ops (tuples, so hypothesis prints and shrinks them).  Ops are only kept when eager
numpy runs them on the example, so every generated model is valid at its example sizes.

Judges:
- :func:`contract_admits`: the contract the program recorded (the shapes of its
  ``tpe.check_input`` nodes, ``range_constraints`` and the ``tpe.assert_guard``
  expressions), evaluated here with sympy, independently of the generated check code.
- :func:`spec_admits`: what a ``dynamic_shapes`` spec without AUTO dims declares
  (static sizes, ``Dim`` ranges shared by name, ``k*r + c`` derived dims, ints).
"""
from __future__ import annotations

import math
import warnings
from typing import Any, Optional

import numpy as np
import sympy
from hypothesis import strategies as st

import tensorplay_export as tpe
from tensorplay_export import Dim

POS1 = np.linspace(-1.0, 1.0, 16)            # a 16-row table sliced by a symbolic size
POS2 = np.linspace(-1.0, 1.0, 16).reshape(16, 1)

Y_TEMPLATES = {
    "none": (),
    "B": ("B",),
    "AB": ("A", "B"),
    "CB": ("C", "B"),
    "1B": (1, "B"),
    "A1": ("A", 1),
    "C": ("C",),
    "BC": ("B", "C"),
    "2A,B": (("A", 2, 0), "B"),        # a derived dim 2*A
    "A+1": (("A", 1, 1),),            # a derived dim A + 1
    "2A+1,1": (("A", 2, 1), 1),
}


# -- ops -----------------------------------------------------------------------------------------

def _sym_index(h: Any, axis: int, token: Any) -> Any:
    """A slice bound: an int, None, or a symbolic expression of ``h.shape[axis]``."""
    n = h.shape[axis]
    if token == "half":
        return n // 2
    if token == "third":
        return n // 3
    if token == "n-1":
        return n - 1
    if token == "-n":
        return -n
    return token


def apply_op(op: tuple, h: Any, y: Any) -> Any:
    kind = op[0]
    if kind == "unary":
        return (h * 2.0 + 1.0, np.tanh(h), np.abs(h) - 1.0, np.maximum(h, 0.25))[op[1]]
    if kind == "biny":
        return (h + y, h * y, np.maximum(h, y))[op[1]]
    if kind == "reshape_flat":
        return h.reshape(-1)
    if kind == "reshape_k":
        return h.reshape(-1, op[1])
    if kind == "reshape_lead":
        return h.reshape(op[1], -1)
    if kind == "reshape_keep0":
        return h.reshape(h.shape[0], -1)
    if kind == "slice":
        _, axis, start, stop, step = op
        key = [slice(None)] * h.ndim
        key[axis] = slice(_sym_index(h, axis, start), _sym_index(h, axis, stop), step)
        return h[tuple(key)]
    if kind == "concat_self":
        return np.concatenate([h, h], axis=op[1])
    if kind == "concat_y":
        return np.concatenate([h, y], axis=op[1])
    if kind == "matmul_w":
        return h @ op[1]
    if kind == "matmul_y":
        return h @ y
    if kind == "gram":
        return h @ np.swapaxes(h, -1, -2)
    if kind == "reduce":
        _, fn, axis, keepdims = op
        return getattr(np, fn)(h, axis=axis, keepdims=keepdims)
    if kind == "transpose":
        return h.T
    if kind == "branch":
        if h.shape[0] > op[1]:
            return h + 1.0
        return h - 1.0
    if kind == "squeeze":
        return np.squeeze(h, axis=op[1])
    if kind == "expand":
        return np.expand_dims(h, op[1])
    if kind == "split":
        return np.split(h, op[2], axis=op[1])[-1]
    if kind == "stack":
        return np.stack([h, h * 0.5], axis=op[1])
    if kind == "take_half":
        return np.take(h, np.arange(h.shape[op[1]] // 2), axis=op[1])
    if kind == "slice_by_y":
        return h[: y.shape[0]]
    if kind == "setitem":
        h = h.copy()
        h[op[1]:] = 0.5
        return h
    if kind == "pos":
        if h.ndim == 1:
            return h + POS1[:h.shape[0]]
        return h + POS2[:h.shape[0]]
    # float-valued size expressions (n**0.5, 0.5*n, 1/n): not drawn by op_strategy, used by the
    # save->load closure test (the archive must store what export records for them)
    if kind == "scale_sqrt":
        return h / math.sqrt(h.shape[0])
    if kind == "scale_float":
        return h * (h.shape[-1] * 0.5)
    if kind == "scale_recip":
        return h * (1 / (h.shape[0] + 1))
    raise AssertionError(f"unknown op {op!r}")


def make_model(ops: tuple, uses_y: bool):
    """The model function (a closure over ``ops``), taking ``(x, y)`` or ``(x,)``."""
    if uses_y:
        def model(x, y):
            h = x
            for op in ops:
                h = apply_op(op, h, y)
            return h
    else:
        def model(x):
            h = x
            for op in ops:
                h = apply_op(op, h, None)
            return h
    return model


_INDEX_TOKENS = st.one_of(st.none(), st.integers(-4, 4), st.sampled_from(["half", "third", "n-1", "-n"]))


def op_strategy(ndim: int, has_y: bool, last: int):
    """One op tuple that might apply to an array of rank ``ndim`` with last size ``last``."""
    axes = st.integers(0, max(ndim - 1, 0))
    rng = np.random.default_rng(last)
    options = [
        st.tuples(st.just("unary"), st.integers(0, 3)),
        st.tuples(st.just("reshape_flat")),
        st.tuples(st.just("reshape_k"), st.sampled_from([2, 3, 4, 6, 8])),
        st.tuples(st.just("reshape_lead"), st.sampled_from([2, 3, 4])),
        st.tuples(st.just("reshape_keep0")),
        st.tuples(st.just("slice"), axes, _INDEX_TOKENS, _INDEX_TOKENS,
                  st.sampled_from([None, 1, 2, 3, -1, -2])),
        st.tuples(st.just("concat_self"), axes),
        st.tuples(st.just("matmul_w"), st.just(np.round(rng.standard_normal((last, 3)), 3))),
        st.tuples(st.just("gram")),
        st.tuples(st.just("reduce"), st.sampled_from(["sum", "mean", "max", "min"]),
                  st.sampled_from([None, 0, 1, -1]), st.booleans()),
        st.tuples(st.just("transpose")),
        st.tuples(st.just("branch"), st.integers(0, 6)),
        st.tuples(st.just("pos")),
        st.tuples(st.just("squeeze"), axes),
        st.tuples(st.just("expand"), st.integers(0, ndim)),
        st.tuples(st.just("split"), axes, st.integers(2, 3)),
        st.tuples(st.just("stack"), st.integers(0, ndim)),
        st.tuples(st.just("take_half"), axes),
        st.tuples(st.just("setitem"), st.integers(-2, 2)),
    ]
    if has_y:
        options += [st.tuples(st.just("biny"), st.integers(0, 2)),
                    st.tuples(st.just("concat_y"), axes),
                    st.tuples(st.just("matmul_y")),
                    st.tuples(st.just("slice_by_y"))]
    return st.one_of(*options)


def eager_ok(fn, *args) -> Optional[Any]:
    """fn(*args), or None if numpy raises (warnings silenced)."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception:  # noqa: BLE001 - an op that does not apply to the example
        return None
    return out if isinstance(out, np.ndarray) else np.asarray(out)


# -- specs and inputs ----------------------------------------------------------------------------

def shape_of(template: tuple, sizes: dict) -> tuple:
    """Sizes of a template: ``"A"`` -> A, ``("A", k, c)`` -> k*A + c, ints as they are."""
    out = []
    for t in template:
        if isinstance(t, str):
            out.append(sizes[t])
        elif isinstance(t, tuple):
            out.append(t[1] * sizes[t[0]] + t[2])
        else:
            out.append(t)
    return tuple(out)


def make_inputs(y_template: Optional[tuple], sizes: dict, dtype: Any, seed: int = 0,
                y_sizes: Optional[dict] = None) -> tuple:
    rng = np.random.default_rng(seed)

    def draw(shape):
        if np.dtype(dtype).kind in "iu":
            return rng.integers(-5, 6, size=shape).astype(dtype)
        return rng.standard_normal(shape).astype(dtype)

    x = draw(shape_of(("A", "B"), sizes))
    if y_template is None:
        return (x,)
    return (x, draw(shape_of(y_template, y_sizes or sizes)))


def spec_for(kinds: dict, bounds: dict, y_template: Optional[tuple]) -> dict:
    """``dynamic_shapes`` for x (A, B) and y: one shared Dim per named symbol, AUTO per axis."""
    dims = {s: Dim(s, min=bounds[s][0], max=bounds[s][1]) for s, k in kinds.items() if k == "named"}

    def axes(template: tuple) -> dict:
        out = {}
        for i, t in enumerate(template):
            if isinstance(t, tuple):  # derived k*A + c: a DerivedDim of the named root, else like A
                root, k, c = t
                if kinds[root] == "named":
                    out[i] = dims[root] * k + c if k != 1 else dims[root] + c
                    continue
                t = root
            if isinstance(t, str) and kinds[t] == "named":
                out[i] = dims[t]
            elif isinstance(t, str) and kinds[t] == "auto":
                out[i] = Dim.AUTO
            elif isinstance(t, str) and kinds[t] == "dynamic":
                out[i] = Dim.DYNAMIC
        return out

    spec = {"x": axes(("A", "B"))}
    if y_template is not None:
        spec["y"] = axes(y_template)
    return spec


def spec_has_auto(spec: dict) -> bool:
    return any(v is Dim.AUTO or v is Dim.DYNAMIC for axes in spec.values() for v in (axes or {}).values())


def spec_admits(spec: dict, example: dict, inputs: dict) -> bool:
    """Does a spec without AUTO dims admit these input shapes? ``example``: input -> example shape."""
    from tensorplay_export.specs.dims import _DerivedDim

    roots: dict[str, int] = {}
    for name, arr in inputs.items():
        if arr.ndim != len(example[name]):
            return False
        axes = spec.get(name) or {}
        for axis, size in enumerate(arr.shape):
            d = axes.get(axis)
            if d is None or d is Dim.STATIC:
                ok = size == example[name][axis]
            elif isinstance(d, int):
                ok = size == d
            elif isinstance(d, _DerivedDim):
                r, rem = divmod(size - d.offset, d.scale)
                ok = rem == 0 and _in_dim(d.root, r) and roots.setdefault(d.root.name, r) == r
            elif isinstance(d, Dim):
                ok = _in_dim(d, size) and roots.setdefault(d.name, size) == size
            else:
                raise AssertionError(f"unexpected spec entry {d!r}")
            if not ok:
                return False
    return True


def _in_dim(d: Any, v: int) -> bool:
    return d.min <= v and (d.max is None or v <= d.max)


# -- the program's recorded contract -------------------------------------------------------------

def contract_admits(ep: Any, inputs: dict) -> Optional[bool]:
    """Evaluate the program's recorded contract on input shapes; None if it cannot be evaluated."""
    checks = [n for n in ep.graph.nodes if n.op == "call_function" and n.target == "tpe.check_input"]
    guards = [n.args[0] for n in ep.graph.nodes if n.op == "call_function" and n.target == "tpe.assert_guard"]
    env: dict = {}
    sites = []
    for node in checks:
        path, shape = node.args[1], node.meta["shape"]
        arr = inputs[path]
        if arr.ndim != len(shape):
            return False
        for axis, d in enumerate(shape):
            d = sympy.sympify(d)
            sites.append((d, arr.shape[axis]))
            if isinstance(d, sympy.Symbol):
                env.setdefault(d, sympy.Integer(arr.shape[axis]))
    for d, size in sites:  # roots only seen through k*r + c
        if d.is_Integer or isinstance(d, sympy.Symbol) or len(d.free_symbols) != 1:
            continue
        (r,) = d.free_symbols
        if r in env:
            continue
        poly = sympy.Poly(d, r)
        k, c = (int(v) for v in poly.all_coeffs())
        if (size - c) % k:
            return False
        env[r] = sympy.Integer((size - c) // k)
    for d, size in sites:
        if d.free_symbols - env.keys():
            return None
        if int(d.xreplace(env)) != size:
            return False
    for sym, vr in ep.range_constraints.items():
        if sym in env and not (vr.lower <= int(env[sym]) <= (vr.upper if vr.upper != math.inf else math.inf)):
            return False
    for g in guards:
        g = sympy.sympify(g)
        if g.free_symbols - env.keys():
            return None
        if not bool(g.xreplace(env)):
            return False
    return True
