"""Bit-for-bit helper for ops that run numpy's own function: the program, and the program saved and
loaded back, equal eager numpy (values and dtypes) at sizes other than the example's."""
from __future__ import annotations

import numpy as np

import tensorplay_export as tpe
from _shared import roundtrip


def _items(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def same_as_eager(fn, make, spec, example, sizes):
    """Export ``fn`` on ``make(example)``; its module and its archive round trip equal ``fn`` at ``sizes``.

    Returns the exported program.
    """
    ep = tpe.export(fn, *make(example), dynamic_shapes=spec)
    for program in (ep, roundtrip(ep)):
        mod = program.module()
        for n in sizes:
            got = _items(mod(*make(n)))
            want = _items(fn(*make(n)))
            assert len(got) == len(want), n
            for g, w in zip(got, want):
                assert np.asarray(g).dtype == np.asarray(w).dtype, (n, np.asarray(g).dtype, np.asarray(w).dtype)
                np.testing.assert_array_equal(g, w)
    return ep
