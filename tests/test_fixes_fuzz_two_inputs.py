"""Two-input models from a fuzz of random compositions (downsampling, padding, concatenation and
regrouping of two inputs) whose guards tie both dims through floors and remainders:
``(a + b // 4) % 2 == 0``, ``((a + 2) // 3 + (b - 1) // 2 + 1) % 2 == 0``,
``(a // 2 + 1) // 2 == b // 2 + 1``, ``b // 2 <= a // 2``.  Each got no suggested fix, or one
that left a violation after the refine step.  Each is written out here as a plain model; the
test exports it, applies the suggested fixes once, exports again, and runs the program at
every size pair of a grid: it either refuses the sizes (they are outside the fixed contract)
or gives what numpy gives, and it admits more pairs than the example alone."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

pytestmark = pytest.mark.z3

POS = np.ones((40, 6))


def pool(x):
    return x[: (x.shape[0] // 2) * 2].reshape(-1, 2, x.shape[1]).max(1)


def pairs(z):
    return z.reshape(-1, 2, z.shape[1]).sum(1)


def thirds(z):
    return z.reshape(-1, 3, z.shape[1]).sum(1)


def half_slice_b_plus_two(x, y):
    z = np.pad(x, ((1, 0), (0, 0)))[::2] + pool(y)
    return z[: z.shape[0] // 3]


def strided_and_pooled_regrouped(x, y):
    z = np.concatenate([x[::3], pool(y[1:])])[3:]
    return pairs(z)


def pooled_prefix(x, y):
    x, y = pool(x), pool(y)
    return x[: y.shape[0]] + y


def quarter_of_b_paired(x, y):
    y = y[: y.shape[0] // 4]
    z = pairs(np.concatenate([x[:-2], np.concatenate([y, y[:2]])]))
    return np.pad(z, ((3, 0), (0, 0)))


def padded_cat_pooled_split(x, y):
    z = pool(np.concatenate([x, np.pad(y, ((1, 0), (0, 0)))]))
    return np.split(z, 2)[1]


def strided_plus_pooled(x, y):
    return np.pad(x[::2] + pool(y), ((1, 0), (0, 0)))


def quarter_tiled_paired_then_thirds(x, y):
    x = x[: x.shape[0] // 4]
    x = np.tile(x, (2, 1))[: x.shape[0] + 3]
    z = thirds(pairs(np.concatenate([x, y])))
    return z[: z.shape[0] // 3]


def strided_quarter_against_pooled(x, y):
    x = x[1:][::2]
    y = pool(np.concatenate([y, y[:2]]))
    z = x[::2] + y
    return z[2:] + z[:-2]


def conv_cat_paired_split_twice(x, y):
    z = pairs(np.concatenate([x[2:] + x[:-2], y[3:]]))
    return np.split(np.split(z, 2)[1], 2)[1]


def pooled_thrice_added(x, y):
    x, y = pool(x), pool(y)
    y = y + POS[: y.shape[0], : y.shape[1]]
    return pool(x + y)[::2]


def pooled_prefix_of_tiled(x, y):
    x, y = pool(x), pool(y)
    y = np.tile(y, (2, 1))[: y.shape[0] + 3]
    return x[: y.shape[0]] + y


def pooled_cat_paired_conv(x, y):
    z = pairs(np.concatenate([pool(x), y]))
    z = z + POS[: z.shape[0], : z.shape[1]]
    return z[2:] + z[:-2]


def halves_paired_then_thirds(x, y):
    y = pairs(np.concatenate([y, y[:2]]))
    z = pairs(np.concatenate([x[::2], y]))
    return thirds(np.concatenate([z, z[:2]]))


def split_pooled_plus_pooled(x, y):
    return pool(np.split(x, 2)[1]) + pool(y)


def quarter_and_half_paired_split(x, y):
    z = pairs(np.concatenate([x[: x.shape[0] // 4], y[: y.shape[0] // 2]]))
    return np.split(z, 2)[1]


# (model, example sizes (a, b), declared maxima, a fix line the block must hold or None)
CASES = [
    (half_slice_b_plus_two, (17, 19), (30, 60), "b = a + 2"),
    (strided_and_pooled_regrouped, (4, 15), (60, 30), "a = 6*_a + 4"),
    (pooled_prefix, (18, 17), (100, 100), "b = Dim('b', max=19)"),
    (quarter_of_b_paired, (3, 15), (100, 30), "a = 2*_a + 1"),
    (padded_cat_pooled_split, (10, 6), (60, 100), "b = 4*_b + 2"),
    (strided_plus_pooled, (8, 8), (30, 60), "b = 2*_a"),
    (quarter_tiled_paired_then_thirds, (19, 17), (30, 60), None),
    (strided_quarter_against_pooled, (16, 6), (60, 60), "a = 4*_a"),
    (conv_cat_paired_split_twice, (24, 13), (30, 100), None),
    (pooled_thrice_added, (3, 3), (30, 100), "b = a"),
    (pooled_prefix_of_tiled, (22, 17), (30, 60), "a = Dim('a', min=22, max=30)"),
    (pooled_cat_paired_conv, (10, 23), (100, 100), None),
    (halves_paired_then_thirds, (6, 8), (30, 100), None),
    (split_pooled_plus_pooled, (8, 4), (60, 60), "a = 2*b"),
    (quarter_and_half_paired_split, (2, 16), (100, 60), None),
]


@pytest.mark.parametrize("model, example, maxima, line", CASES, ids=[c[0].__name__ for c in CASES])
def test_one_refine_step_closes_and_the_program_matches_numpy(model, example, maxima, line):
    a0, b0 = example
    model(np.ones((a0, 6)), np.ones((b0, 6)))  # the example runs eagerly
    spec = {"x": {0: Dim("a", max=maxima[0])}, "y": {0: Dim("b", max=maxima[1])}}
    rng = np.random.default_rng(a0 * 100 + b0)
    x, y = rng.standard_normal((a0, 6)), rng.standard_normal((b0, 6))
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, y, dynamic_shapes=spec)
    msg = str(info.value)
    assert "Suggested fixes:" in msg and "will not be enough" not in msg, msg
    if line is not None:
        assert line in [ln.strip() for ln in msg.split("Suggested fixes:")[1].splitlines()], msg
    fixed = tpe.refine_dynamic_shapes_from_suggested_fixes(msg, spec)
    ep = tpe.export(model, x, y, dynamic_shapes=fixed)
    run = ep.module()
    admitted = set()
    for a in range(1, 41):
        for b in range(1, 41):
            xs, ys = rng.standard_normal((a, 6)), rng.standard_normal((b, 6))
            try:
                got = run(xs, ys)
            except tpe.ConstraintsExceededError:
                continue
            want = model(xs, ys)  # numpy raises here if the contract admitted sizes the model refuses
            assert got.shape == want.shape, (a, b)
            np.testing.assert_allclose(got, want, err_msg=f"a={a}, b={b}")
            admitted.add((a, b))
    assert (a0, b0) in admitted
    assert len(admitted) >= 3, admitted  # the fix keeps the dims dynamic, not just the example
