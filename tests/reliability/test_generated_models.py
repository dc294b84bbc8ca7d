"""Generated models: random compositions of numpy ops over 1-3 dynamic dims, judged at random sizes.

Each example builds a model (elementwise, broadcasting against a second input, reshape with
-1, slicing with symbolic/negative bounds and steps, concatenate, matmul, reductions, a size
branch, a table slice), a spec mixing named ``Dim`` (incl. ``min=0``), ``Dim.AUTO`` and static
axes, and exports it -- after a violation, one refine and one more export.  Then, at sizes drawn
around the example, the declared bounds, 0 and 1 (and with the second input's sizes sometimes
drawn independently):

- the program admits a size          -> eager runs there and the outputs match exactly
  (shape, dtype, allclose);
- the program refuses a size         -> with ConstraintsExceededError only, and the contract it
  recorded (check shapes, ranges, guards -- evaluated here with sympy) refuses it too;
- the program admits a size          -> its recorded contract admits it too;
- the final spec has no AUTO dims    -> the program admits exactly what the spec declares
  (a narrower contract must have been a violation, not a silent narrowing).
"""
from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from hypothesis import event, given, note, strategies as st

import tensorplay_export as tpe

from _genmodels import (Y_TEMPLATES, apply_op, contract_admits, eager_ok, make_inputs, make_model,
                        op_strategy, spec_admits, spec_for, spec_has_auto)
from _rel_util import assert_same, rel_settings

SIZES_PER_MODEL = 8


@st.composite
def model_cases(draw):
    a = draw(st.integers(1, 8))
    b = draw(st.integers(1, 8))
    c = draw(st.one_of(st.just(a), st.just(b), st.just(1), st.integers(1, 8)))
    example = {"A": a, "B": b, "C": c}
    kinds = {s: draw(st.sampled_from(["named", "named", "auto", "static", "dynamic"])) for s in "ABC"}
    bounds = {}
    for s, v in example.items():
        lo = draw(st.sampled_from([v2 for v2 in (0, 1, 2) if v2 <= v]))
        hi = draw(st.sampled_from([None, v, v + 3, 2 * v + 1, 40]))
        bounds[s] = (lo, hi)
    y_name = draw(st.sampled_from(sorted(Y_TEMPLATES)))
    y_template = None if y_name == "none" else Y_TEMPLATES[y_name]
    dtype = draw(st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.int32]))
    inputs = make_inputs(y_template, example, dtype)
    y = inputs[1] if len(inputs) > 1 else None
    h = inputs[0]
    ops = []
    for _ in range(draw(st.integers(1, 4))):
        op = draw(op_strategy(h.ndim, y is not None, h.shape[-1] if h.ndim else 1))
        out = eager_ok(apply_op, op, h, y)
        if out is None or out.size > 4096:
            continue
        ops.append(op)
        h = out
    return dict(example=example, kinds=kinds, bounds=bounds, y_template=y_template, dtype=dtype,
                ops=tuple(ops))


def size_values(mc: dict, sym: str) -> list[int]:
    v = mc["example"][sym]
    lo, hi = mc["bounds"][sym]
    pool = {0, 1, 2, v - 1, v, v + 1, lo - 1, lo, 2 * v, 3 * v + 1}
    if hi is not None:
        pool |= {hi, hi + 1}
    return sorted(p for p in pool if 0 <= p <= 48)


def export_model(mc: dict):
    """(model, spec actually used, program) or None when the model is out of scope."""
    model = make_model(mc["ops"], mc["y_template"] is not None)
    inputs = make_inputs(mc["y_template"], mc["example"], mc["dtype"])
    spec = spec_for(mc["kinds"], mc["bounds"], mc["y_template"])
    try:
        return model, spec, tpe.export(model, *inputs, dynamic_shapes=spec)
    except tpe.ConstraintViolationError as err:
        text = str(err)
    except (tpe.UnsupportedOpError, tpe.DataDependentError) as err:
        event(f"out of scope: {type(err).__name__}")
        return None
    note(f"violation:\n{text}")
    if "Suggested fixes:" not in text:
        event("violation with no fix at all (reported as unfixable)")
        return None
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    note(f"refined spec: {refined!r}")
    try:
        return model, refined, tpe.export(model, *inputs, dynamic_shapes=refined)
    except tpe.ConstraintViolationError as err:
        again = str(err)
    if not any(marker in text for marker in UNFIXABLE):
        pytest.fail(f"one refine did not suffice although every bullet had a fix:\n{again}\nfirst error:\n{text}")
    event("violation with an unfixable guard (reported as such)")
    return None


# bullets whose guard no fix line fixes say so (named dims / Dim.DYNAMIC axes)
UNFIXABLE = ("no suggested fix", "cannot keep fully dynamic")


def judge(mc: dict, model, spec: dict, ep, inputs: tuple) -> None:
    names = ["x", "y"][:len(inputs)]
    by_name = dict(zip(names, inputs))
    shapes = {n: a.shape for n, a in by_name.items()}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        want, eager_err = None, None
        try:
            want = model(*[a.copy() for a in inputs])
        except Exception as err:  # noqa: BLE001
            eager_err = err
        try:
            got = ep.module()(*inputs)
            refused = None
        except tpe.ConstraintsExceededError as err:
            refused = err
        except Exception as err:  # noqa: BLE001
            pytest.fail(f"{shapes}: the program raised {type(err).__name__} instead of running or "
                        f"ConstraintsExceededError: {err}\n(eager: {eager_err!r})")
    recorded = contract_admits(ep, by_name)
    example_shapes = {n: a.shape for n, a in zip(names, make_inputs(mc["y_template"], mc["example"], mc["dtype"]))}
    declared = None if spec_has_auto(spec) else spec_admits(spec, example_shapes, by_name)
    if refused is None:
        assert eager_err is None, f"{shapes}: the program admits it but eager raises {eager_err!r}"
        assert recorded is not False, f"{shapes}: admitted, but the recorded contract refuses it"
        assert declared is not False, f"{shapes}: admitted, but the spec {spec!r} refuses it"
        assert_same(got, want, f"{shapes}")
    else:
        assert recorded is not True, \
            f"{shapes}: refused ({refused}) although every recorded range and guard holds"
        assert declared is not True, \
            f"{shapes}: refused ({refused}) although the spec {spec!r} admits it and export raised no violation"


@rel_settings(scale=5)
@given(mc=model_cases(), data=st.data())
def test_generated_model_contract(mc, data):
    got = export_model(mc)
    if got is None:
        return
    model, spec, ep = got
    note(f"code:\n{ep.code}")
    buf = io.BytesIO()
    tpe.save(ep, buf)
    loaded = tpe.load(io.BytesIO(buf.getvalue()))
    decomposed = None
    if data.draw(st.integers(0, 2), label="decompose") == 0:
        decomposed = ep.run_decompositions()
        note(f"decomposed code:\n{decomposed.code}")
    for _ in range(SIZES_PER_MODEL):
        sizes = {s: data.draw(st.sampled_from(size_values(mc, s)) | st.integers(0, 24), label=s)
                 for s in "ABC"}
        y_sizes = None
        if mc["y_template"] is not None and data.draw(st.integers(0, 3), label="independent y") == 0:
            y_sizes = {s: data.draw(st.sampled_from(size_values(mc, s)), label=f"y.{s}") for s in "ABC"}
        inputs = make_inputs(mc["y_template"], sizes, mc["dtype"], seed=1, y_sizes=y_sizes)
        judge(mc, model, spec, ep, inputs)
        if data.draw(st.integers(0, 3), label="also loaded") == 0:
            judge(mc, model, spec, loaded, inputs)
        if decomposed is not None:
            judge(mc, model, spec, decomposed, inputs)
