"""What decides a query z3 runs out of time on: exact evaluation of every point of small bounded
ranges, and ``(-x) % k`` rewritten as the distance to the next multiple (``k*ceil(x/k) - x``)."""
from __future__ import annotations

import itertools

import numpy as np
import sympy

import tensorplay_export as tpe
from solver import ShapeSolver
from solver.decide import negated_mods_as_floors
from solver.numeric import value
from tensorplay_export import Dim

h, w = sympy.symbols("h w", integer=True, positive=True)


def _padded_count(ws: int):
    """A padded window partition's element-count guard, as capture records it (always true)."""
    ph, pw = sympy.Mod(-h, ws), sympy.Mod(-w, ws)
    return sympy.Eq(ws * ws * sympy.floor((h + ph) / ws) * sympy.floor((w + pw) / ws),
                    sympy.expand((h + ph) * (w + pw)))


def test_negated_mods_rewrite_is_exact_at_every_point():
    for k in (2, 3, 4, 7):
        e = sympy.Mod(-h, k) + 3 * sympy.Mod((k - 1) * w, k) + sympy.Mod(h + 1, k)
        r = negated_mods_as_floors(e)
        assert r != e
        for a, b in itertools.product(range(0, 30), range(0, 12)):
            assert value(e, {"h": a, "w": b}) == value(r, {"h": a, "w": b})
    for k in (3, 4, 7):  # h + 1 is no multiple of -1 modulo k: that remainder stays
        assert sympy.Mod(h + 1, k) in negated_mods_as_floors(sympy.Mod(-h, k) + sympy.Mod(h + 1, k)).atoms(sympy.Mod)
    plain = sympy.Mod(h, 4) + w
    assert negated_mods_as_floors(plain) is plain
    assert negated_mods_as_floors(_padded_count(4)) is sympy.true


def test_a_timed_out_query_over_small_ranges_is_decided_by_evaluating_every_point():
    s = ShapeSolver(timeout_ms=1)
    s.declare("h", 1, 40)
    s.declare("w", 1, 40)
    guard = _padded_count(4)
    z3_alone = s._z3_implies(sympy.true, guard)
    assert z3_alone.proved and z3_alone.via == "enumeration"
    assert "1600 points" in z3_alone.reason
    assert s.implies(guard).proved
    # a satisfiable query gets the first witness in a fixed order
    witness = s._z3_satisfiable(sympy.true, sympy.Eq(h * w, 391))
    assert witness.status == "proved" and witness.counterexample in ({"h": 17, "w": 23}, {"h": 23, "w": 17})


def test_a_timed_out_query_over_large_ranges_is_proved_after_the_rewrite():
    s = ShapeSolver(timeout_ms=1)
    s.declare("h", 1, 4096)
    s.declare("w", 1, 4096)
    v = s.implies(_padded_count(7))
    assert v.proved and "(-x) % k" in v.reason


def _swin(x, ws):
    b, hh, ww, c = x.shape
    ph, pw = (-hh) % ws, (-ww) % ws
    xp = np.pad(x, ((0, 0), (0, ph), (0, pw), (0, 0)))
    H, W = hh + ph, ww + pw
    win = xp.reshape(b, H // ws, ws, W // ws, ws, c).transpose(0, 1, 3, 2, 4, 5).reshape(-1, ws * ws, c)
    win = win * 2.0
    out = win.reshape(b, H // ws, W // ws, ws, ws, c).transpose(0, 1, 3, 2, 4, 5).reshape(b, H, W, c)
    return out[:, :hh, :ww]


def test_swin_pad_partition_and_reverse_exports_for_every_size():
    spec = {"x": {0: Dim("b", max=4), 1: Dim("h", max=64), 2: Dim("w", max=64)}}
    rng = np.random.default_rng(0)
    for ws in (4, 7):
        ep = tpe.export(lambda x: _swin(x, ws), rng.standard_normal((2, 9, 12, 2)).astype(np.float32),
                        dynamic_shapes=spec)
        assert {str(k): (r.lower, r.upper) for k, r in ep.range_constraints.items()} == \
            {"b": (1, 4), "h": (1, 64), "w": (1, 64)}
        for shape in ((1, 13, 5, 2), (3, 1, 64, 2), (4, 28, 29, 2)):
            y = rng.standard_normal(shape).astype(np.float32)
            np.testing.assert_array_equal(ep.module()(y), _swin(y, ws))


def test_a_remainder_by_a_size_is_below_that_size_without_z3():
    s = ShapeSolver()
    u, W = s.declare("u0", 0), s.declare("W", 1, 64)
    before = s.stats["z3_calls"]
    for guard in (sympy.Mod(u, W) + 1 <= W, sympy.Mod(u, W) < W, sympy.Mod(3 * u + 1, W + 2) <= W + 1,
                  W - sympy.Mod(u, W) >= 1):
        v = s.implies(guard)
        assert v.proved and v.via == "intervals", guard
    assert s.stats["z3_calls"] == before
    # the relaxation proves only what holds for every remainder: these still go to z3 and fail
    assert s.implies(sympy.Mod(u, W) + 2 <= W).refuted
    assert not s.implies(sympy.Mod(u, W) <= W - 2).proved


def test_ring_buffer_write_at_a_remainder_exports_and_matches_eager():
    def ring(cache, k, past):
        pos = past.item() % cache.shape[1]
        c = cache.copy()
        c[:, pos] = k[:, 0]
        return c

    ep = tpe.export(ring, np.zeros((2, 8, 3), np.float32), np.ones((2, 1, 3), np.float32), np.array(17),
                    dynamic_shapes={"cache": {1: Dim("W", max=64)}, "k": None, "past": None})
    k = np.arange(6, dtype=np.float32).reshape(2, 1, 3)
    for w, p in ((5, 17), (64, 3), (1, 9)):
        cache = np.zeros((2, w, 3), np.float32)
        np.testing.assert_array_equal(ep.module()(cache, k, np.array(p)), ring(cache, k, np.array(p)))


def test_a_remainder_by_a_non_integer_divisor_is_not_relaxed():
    # Mod(1, 3/2) is 1, above 3/2 - 1: [0, y - 1] bounds a remainder only for an integer divisor
    s = ShapeSolver()
    x, a, b, c = (s.declare(n, 1, hi) for n, hi in (("x", 50), ("a", 10), ("b", 10), ("c", 10)))
    y = (a + b + c) / 2
    assert s.implies(sympy.Mod(x, y) <= y - 1).refuted
