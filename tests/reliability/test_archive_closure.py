"""Save -> load closure over the generated models: every program export produces must load back
and run identically (same admitted sizes, bit-identical outputs, byte-identical re-save).

The models are the reliability suite's generated ones (``test_generated_models.model_cases``),
some with a float-valued size expression appended (``x / math.sqrt(x.shape[0])``, ``0.5 * n``,
``1 / (n + 1)``), which the archive stores as ``Pow``/``Float``/``Rational`` trees.
"""
from __future__ import annotations

import io
import warnings

import numpy as np
from hypothesis import event, given, note, strategies as st

import tensorplay_export as tpe

from _genmodels import apply_op, eager_ok, make_inputs
from _rel_util import rel_settings
from test_generated_models import export_model, model_cases, size_values

FLOAT_OPS = [(), (("scale_sqrt",),), (("scale_float",),), (("scale_recip",),)]


def saved(ep) -> bytes:
    buf = io.BytesIO()
    tpe.save(ep, buf)
    return buf.getvalue()


def outcome(ep, inputs):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return "ok", ep.module()(*[a.copy() for a in inputs])
        except tpe.ConstraintsExceededError:
            return "refused", None


@rel_settings(scale=4)
@given(mc=model_cases(), tail=st.sampled_from(FLOAT_OPS), data=st.data())
def test_generated_programs_load_back_and_run_identically(mc, tail, data):
    inputs = make_inputs(mc["y_template"], mc["example"], mc["dtype"])
    h = inputs[0]
    y = inputs[1] if len(inputs) > 1 else None
    for op in mc["ops"]:
        h = eager_ok(apply_op, op, h, y)
    kept = [op for op in tail if h is not None and h.ndim and (h := eager_ok(apply_op, op, h, y)) is not None]
    mc = dict(mc, ops=mc["ops"] + tuple(kept))
    got = export_model(mc)
    if got is None:
        return
    _model, _spec, ep = got
    event(f"float tail {[op[0] for op in kept]}")
    note(f"code:\n{ep.code}")
    blob = saved(ep)
    loaded = tpe.load(io.BytesIO(blob))  # must not raise: what saves, loads
    assert loaded.code == ep.code
    assert loaded.range_constraints == ep.range_constraints
    assert saved(loaded) == blob
    checks = [mc["example"]] + [{s: data.draw(st.sampled_from(size_values(mc, s)), label=s) for s in "ABC"}
                                for _ in range(4)]
    for sizes in checks:
        args = make_inputs(mc["y_template"], sizes, mc["dtype"], seed=1)
        want, got_ = outcome(ep, args), outcome(loaded, args)
        assert got_[0] == want[0], sizes
        if want[0] == "ok":
            np.testing.assert_array_equal(got_[1], want[1], err_msg=str(sizes))
            assert got_[1].dtype == want[1].dtype
