"""A debug ``print(x.shape)`` in model code shows the symbolic sizes and pins nothing; text
printed into another file object is data (it may be read back), so it pins as str() does."""
from __future__ import annotations

import io

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import nn

SPEC = {"x": {0: tpe.Dim("n", max=64)}}


class _Printing(nn.Module):
    def forward(self, x):
        print("shape", x.shape, x.shape[0] > 3, x.shape[0] * 2)
        return x * 2.0


def test_print_to_stdout_keeps_the_dim_and_shows_symbols(capsys):
    ep = tpe.export(_Printing(), np.ones((5, 2), np.float32), dynamic_shapes=SPEC)
    (rng,) = ep.range_constraints.values()
    assert (rng.lower, rng.upper) == (1, 64)
    printed = capsys.readouterr().out.splitlines()
    assert "shape (n, 2) n > 3 2*n" in printed
    x = np.ones((9, 2), np.float32)
    np.testing.assert_array_equal(ep.module()(x), x * 2.0)


def test_print_to_stderr_in_a_plain_function(capsys):
    import sys

    def f(x):
        print(x.shape, file=sys.stderr)
        return x + 1.0

    ep = tpe.export(f, np.ones((5, 2), np.float32), dynamic_shapes=SPEC)
    assert [(r.lower, r.upper) for r in ep.range_constraints.values()] == [(1, 64)]
    assert "(n, 2)" in capsys.readouterr().err


def test_print_into_a_buffer_pins_at_the_print_line():
    buf = io.StringIO()

    def f(x):
        print(x.shape, file=buf)
        return x + 1.0

    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(f, np.ones((5, 2), np.float32), dynamic_shapes=SPEC)
    text = str(info.value)
    assert "specialized to 5" in text and "print(x.shape, file=buf)" in text
    assert buf.getvalue().splitlines()[0] == "(5, 2)"  # the digits eager code would have written


def test_formatting_before_print_still_pins():
    def f(x):
        print(f"rows={x.shape[0]}")
        return x + 1.0

    with pytest.raises(tpe.ConstraintViolationError, match="specialized to 5"):
        tpe.export(f, np.ones((5, 2), np.float32), dynamic_shapes=SPEC)
