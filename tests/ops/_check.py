"""Differential helper for op tests: export once, then compare module() with eager numpy.

``check(fn, make, spec, example, sizes)``: ``make(n)`` builds the inputs for size ``n``;
the program exported on ``make(example)`` must match ``fn`` exactly in structure,
shapes and dtypes, and closely in values, at every size in ``sizes`` (include 1).
"""
from __future__ import annotations

import numpy as np

import tensorplay_export as tpe

def as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def check(fn, make, spec, example=5, sizes=(1, 2, 7), ops=()):
    """Export ``fn`` on ``make(example)``; module() equals eager at every size. Returns the program."""
    ep = tpe.export(fn, *make(example), dynamic_shapes=spec)
    mod = ep.module()
    targets = {n.target for n in ep.graph.nodes if n.op == "call_function"}
    for op in ops:
        assert op in targets, f"{op} not in the graph: {sorted(targets)}"
    for n in sizes:
        args = make(n)
        want = as_tuple(fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]))
        got = as_tuple(mod(*args))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g, w = np.asarray(g), np.asarray(w)
            assert g.shape == w.shape, (n, g.shape, w.shape)
            assert g.dtype == w.dtype, (n, g.dtype, w.dtype)
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(g, w)
    return ep


def randn(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)
