"""A numpy function without a shape rule, for the tests of draft's opaque ops.

Extend the candidate list when all of them get a shape rule: the import fails loudly then.
"""
import numpy as np

from tensorplay_export.ops.registry import lookup_func

# numpy.emath's functions are real or complex by the values (sqrt of a negative): no shape rule can
# give their dtype, so they stay without one
_CANDIDATES = (np.emath.sqrt, np.emath.log, np.emath.arcsin)
NO_RULE = next((f for f in _CANDIDATES if lookup_func(f) is None), None)
assert NO_RULE is not None, "every candidate numpy function has a shape rule now: add one that has none"
