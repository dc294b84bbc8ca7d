"""Models whose guards over two dims only a box (or one lattice per dim) expresses: the printed fix
is the widest the fix forms allow, one refine step closes it, and the program then runs exactly
on the sizes the fix names, matching eager numpy there and refusing every other size.

They used to get a sound but needless specialization: ``dx = 6`` beside ``dy <= 32`` for a
bound on a product of floors, ``dx = 22`` and ``dy = 18`` for an equality of two floor chains,
a relation admitting 2 sizes where a 3 x 3 box works.  The widest box itself is checked at the
solver level in ``tests/solver/test_fix_width.py`` (brute force over every box)."""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim

pytestmark = pytest.mark.z3

TAB = np.ones((30, 3))


def product_of_floors(x, y):
    k = (x.shape[0] // 2) * (y.shape[0] // 3)
    return TAB[:k] + 2 * np.ones((k, 3))


def pool(z):
    return z[: (z.shape[0] // 2) * 2].reshape(-1, 2, z.shape[1]).max(1)


def pairs(z):
    return z.reshape(-1, 2, z.shape[1]).sum(1)


def floor_chains(x, y):
    x = pool(x[: x.shape[0] // 4])
    y = y[: y.shape[0] // 4][::3]
    return pairs(x + y)


def ceiling_against_multiple(x, y):
    return pairs(x[::3] + y[y.shape[0] % 3:])


def same_parity(x, y):
    return np.concatenate([x, y]).reshape(-1, 2, x.shape[1]).sum(1)


def box(dx, dy):
    return {(a, b) for a in dx for b in dy}


CASES = [
    # (dx // 2) * (dy // 3) <= 30 at (6, 6): the widest box of the staircase (248 sizes)
    (product_of_floors, (6, 6), (48, 48),
     ["dx = Dim('dx', max=31)", "dy = Dim('dy', max=8)"], box(range(1, 32), range(1, 9))),
    # dx // 8 == (dy // 4 + 2) // 3, dx // 8 even, at (22, 18): the level set of both floors
    (floor_chains, (22, 18), (40, 40),
     ["dx = Dim('dx', min=16, max=23)", "dy = Dim('dy', min=16, max=27)"], box(range(16, 24), range(16, 28))),
    # ceil(dx / 3) == 3*(dy // 3), even, at (16, 6)
    (ceiling_against_multiple, (16, 6), (40, 40),
     ["dx = Dim('dx', min=16, max=18)", "dy = Dim('dy', min=6, max=8)"], box(range(16, 19), range(6, 9))),
    # (dx + dy) % 2 == 0 at (3, 5): no fix form states "same parity"; both odd is the widest
    (same_parity, (3, 5), (40, 40),
     ["_dx = Dim('_dx', min=0, max=19)", "_dy = Dim('_dy', min=0, max=19)", "dx = 2*_dx + 1", "dy = 2*_dy + 1"],
     box(range(1, 40, 2), range(1, 40, 2))),
]


@pytest.mark.parametrize("model, example, maxima, lines, sizes", CASES, ids=[c[0].__name__ for c in CASES])
def test_the_widest_fix_is_printed_and_closes_in_one_step(model, example, maxima, lines, sizes):
    rng = np.random.default_rng(sum(example))
    x, y = rng.standard_normal((example[0], 3)), rng.standard_normal((example[1], 3))
    model(x, y)  # the example runs eagerly
    spec = {"x": {0: Dim("dx", max=maxima[0])}, "y": {0: Dim("dy", max=maxima[1])}}
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.export(model, x, y, dynamic_shapes=spec)
    msg = str(info.value)
    printed = [ln.strip() for ln in msg.split("Suggested fixes:")[1].splitlines() if ln.strip()]
    assert printed == lines, msg
    ep = tpe.export(model, x, y, dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(msg, spec))
    run = ep.module()
    admitted = set()
    for a in range(1, maxima[0] + 1):
        for b in range(1, maxima[1] + 1):
            xs, ys = rng.standard_normal((a, 3)), rng.standard_normal((b, 3))
            try:
                got = run(xs, ys)
            except tpe.ConstraintsExceededError:
                continue
            want = model(xs, ys)  # numpy raises here if the contract admitted a size the model refuses
            assert got.shape == want.shape, (a, b)
            np.testing.assert_allclose(got, want, err_msg=f"dx={a}, dy={b}")
            admitted.add((a, b))
    assert admitted == sizes
