"""A numpy function without a shape rule, for the tests of draft's opaque ops.

Extend the candidate list when all of them get a shape rule: the import fails loudly then.
"""
import numpy as np

from tensorplay_export.ops.registry import lookup_func

_CANDIDATES = (np.unwrap, np.sinc, np.i0, np.polyfit, np.vander, np.trapezoid, np.gradient)
NO_RULE = next((f for f in _CANDIDATES if lookup_func(f) is None), None)
assert NO_RULE is not None, "every candidate numpy function has a shape rule now: add one that has none"
