"""The readable form of a guard equating a size with a clamped slice length: it reads as the bound
it states (``past + t <= 448``), and that text says exactly what the guard decides (checked value by
value over small sizes)."""
import itertools

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.graph.printing import format_guard
from tensorplay_export.records import sympy

Max, Min = sympy.Max, sympy.Min
past = sympy.Symbol("past", integer=True, nonnegative=True)
t = sympy.Symbol("t", integer=True, positive=True)
a = sympy.Symbol("a", integer=True)  # no sign known


@pytest.mark.parametrize("guard, text", [
    (sympy.Eq(t, Max(0, -Min(448, past) + Min(448, past + t))), "past + t <= 448"),  # POS[past: past + t]
    (sympy.Eq(Max(0, -past + Min(256, past + t)), t), "past + t <= 256"),         # bias[:, :, kl - ql: kl]
    (sympy.Ne(t, Max(0, -Min(448, past) + Min(448, past + t))), "past + t > 448"),
    (sympy.Eq(Min(3, t), 3), "t >= 3"),
    (sympy.Ne(Min(t, 3), 3), "t < 3"),
    (sympy.Eq(Max(past, 4) - past, 0), "past >= 4"),
    (sympy.Eq(t, Max(4, past + t) - Max(4, past)), "past >= 4"),
])
def test_a_clamped_length_reads_as_its_bound(guard, text):
    assert format_guard(guard) == text


@pytest.mark.parametrize("guard", [
    sympy.Eq(a, Max(0, -Min(8, past) + Min(8, past + a))),  # a may be 0 or negative: no rewrite applies
    sympy.Eq(t, Max(0, -Min(8, past) + Min(7, past + t))),  # different table sizes
    sympy.Eq(t, Max(0, -Min(8, past) + Min(8, past + 2 * t))),  # the window is not t long
])
def test_other_clamps_keep_their_form(guard):
    assert "Min" in format_guard(guard)


@pytest.mark.parametrize("guard", [
    sympy.Eq(t, Max(0, -Min(6, past) + Min(6, past + t))),
    sympy.Eq(Max(0, -past + Min(5, past + t)), t),
    sympy.Ne(t, Max(0, -Min(6, past) + Min(6, past + t))),
    sympy.Eq(Min(3, t), 3), sympy.Eq(t, Max(4, past + t) - Max(4, past)), sympy.Eq(Max(past, 4) - past, 0),
])
def test_the_text_decides_as_the_guard_does(guard):
    """Every value of the symbols (in their assumptions) gets the same answer from both."""
    printed = format_guard(guard)
    rel = sympy.sympify(printed.replace(" and ", " & "), locals={"past": past, "t": t})
    for p, tv in itertools.product(range(0, 12), range(1, 12)):
        values = {past: p, t: tv}
        assert bool(guard.subs(values)) == bool(rel.subs(values)), (printed, values)


def test_the_decoder_position_slice_violation_reads_past_plus_t():
    pos = np.ones((448, 4), np.float32)

    def dec(h, past_k):
        p, n = past_k.shape[0], h.shape[0]
        return h + pos[p: p + n]

    with pytest.raises(tpe.ConstraintViolationError) as err:
        tpe.export(dec, np.ones((3, 4), np.float32), np.ones((5, 4), np.float32),
                   dynamic_shapes={"h": {0: Dim("t", max=448)}, "past_k": {0: Dim("past", min=0, max=1000)}})
    text = str(err.value)
    assert "satisfy the guard past + t <= 448" in text and "implies past + t <= 448" in text
    assert "a slice of at most 448)" in text  # the cause names the table length too
