"""Inputs that share memory, when the program writes into one of them: eager numpy would see
the write through the other (``f(x, x)``, overlapping views), the program computes each from its
own value, so the call is refused with what to pass instead.  Programs that write no input
take aliased inputs as they are."""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

SPEC = {"a": {0: Dim("n", max=16)}, "b": {0: Dim("m", max=16)}}


def writes_a_reads_b(a, b):
    a += 1.0
    return b * 1.0


def reads_both(a, b):
    return a + b


def test_a_written_input_sharing_memory_with_another_is_refused():
    ep = tpe.export(writes_a_reads_b, np.zeros(4), np.zeros(4), dynamic_shapes=SPEC)
    m = ep.module()
    x = np.zeros(4)
    with pytest.raises(ValueError, match=r"^inputs a and b share memory, and the program writes into a: .*"
                                         r"pass separate arrays, e.g. b.copy\(\)$"):
        m(x, x)
    big = np.zeros(8)
    with pytest.raises(ValueError, match="share memory"):
        m(big[:4], big[2:6])           # overlapping views
    assert not big.any()               # refused before anything was written
    a, b = big[:4], big[4:8]           # views of one buffer that do not overlap: fine
    np.testing.assert_array_equal(m(a, b), np.zeros(4))
    np.testing.assert_array_equal(big, [1, 1, 1, 1, 0, 0, 0, 0])


def test_aliased_inputs_of_a_program_that_writes_none_run():
    n = Dim("n", max=16)
    ep = tpe.export(reads_both, np.zeros(4), np.zeros(4), dynamic_shapes={"a": {0: n}, "b": {0: n}})
    x = np.arange(5.0)
    np.testing.assert_array_equal(ep.module()(x, x), reads_both(x, x))
