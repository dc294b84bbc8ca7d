"""Soundness regressions from the new-user test: each repro is exported, and the
program must run like eager numpy at every size its contract admits and refuse
(``ConstraintsExceededError``) the sizes where eager numpy fails.

A repro whose guard is violated under the declared dims must raise a
``ConstraintViolationError`` whose suggested fix, applied once with
``refine_dynamic_shapes_from_suggested_fixes``, exports a program with exactly
that contract.
"""
from __future__ import annotations

import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import ConstraintsExceededError, ConstraintViolationError

F32 = np.float32


def rows(n, cols=4):
    """(n, cols) float32 with distinct values (so gathers and reshapes are checked by value)."""
    return np.arange(n * cols, dtype=F32).reshape(n, cols)


def eager_ok(fn, args) -> bool:
    try:
        fn(*args)
    except (ValueError, IndexError):
        return False
    return True


def check_program(ep, fn, make, sizes):
    """module() equals eager where eager works and refuses exactly where eager fails."""
    mod = ep.module()
    for n in sizes:
        args = make(n)
        if eager_ok(fn, args):
            want = np.asarray(fn(*args))
            got = np.asarray(mod(*args))
            assert got.shape == want.shape and got.dtype == want.dtype, (n, got.shape, want.shape)
            np.testing.assert_allclose(got, want)
        else:
            with pytest.raises(ConstraintsExceededError):
                mod(*args)


def refined(fn, make, spec, example, fix_line):
    """export raises a violation whose fixes contain ``fix_line``; one refine makes it export."""
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, *make(example), dynamic_shapes=spec)
    text = str(info.value)
    assert "Suggested fixes:" in text and fix_line in text, text
    assert "test_soundness_regressions.py:" in text, text  # the model's own line
    new_spec = tpe.refine_dynamic_shapes_from_suggested_fixes(text, spec)
    return tpe.export(fn, *make(example), dynamic_shapes=new_spec)


X100 = {"x": {0: Dim("n", max=100)}}
ONE = (lambda n: (rows(n),))


# -- 2. reshape(-1, k) of a size with a constant offset needs divisibility ----------------------
@pytest.mark.parametrize("fn", [
    lambda x: x[1:].reshape(-1, 8),
    lambda x: x[:-1].reshape(-1, 8),
    lambda x: x[1:].reshape(-1, 2, 4),
    lambda x: np.reshape(x[1:], (-1, 8)),
], ids=["head_cut", "tail_cut", "three_axes", "np_reshape"])
def test_reshape_minus_one_with_offset_requires_divisibility(fn):
    ep = refined(fn, ONE, X100, 5, "n = 2*_n + 1")
    check_program(ep, fn, ONE, [1, 2, 3, 4, 5, 6, 7, 99, 100])


def test_reshape_after_concat_requires_divisibility():
    def fn(x, y):
        return np.concatenate([x, y]).reshape(-1, 8)

    def make(n):
        return rows(n), rows(1)
    ep = refined(fn, make, {"x": {0: Dim("n", max=100)}, "y": None}, 5, "n = 2*_n + 1")
    check_program(ep, fn, make, [1, 2, 3, 4, 5, 99, 100])


def test_reshape_of_derived_dim_requires_divisibility():
    dx = Dim("dx", max=50)

    def fn(x, y):
        return x.sum() + y.reshape(-1, 8)

    def make(n):
        return rows(n), rows(n + 1)
    ep = refined(fn, make, {"x": {0: dx}, "y": {0: dx + 1}}, 5, "dx = 2*_dx + 1")
    check_program(ep, fn, make, [1, 2, 3, 4, 5, 49, 50])


def test_reshape_offset_guard_is_minimal():
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(lambda x: x[1:].reshape(-1, 8), rows(5), dynamic_shapes=X100)
    assert "(n + 1) % 2 == 0" in str(info.value)


def test_reshape_without_minus_one_offset_total():
    fn = lambda x: x[1:].reshape(2, 8)  # noqa: E731  (numel 4n - 4 == 16 only at n = 5)
    ep = refined(fn, ONE, X100, 5, "n = 5")
    check_program(ep, fn, ONE, [4, 5, 6])


# -- 5. offset divisibility fix, end to end --------------------------------------------------------
def test_offset_divisibility_fix_end_to_end():
    fn = lambda x: x[1:].reshape(-1, 8)  # noqa: E731
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, rows(5), dynamic_shapes=X100)
    text = str(info.value)
    assert "_n = Dim('_n', min=0, max=49)\n  n = 2*_n + 1" in text, text
    ep = tpe.export(fn, rows(5), dynamic_shapes=tpe.refine_dynamic_shapes_from_suggested_fixes(text, X100))
    mod = ep.module()
    for n in (1, 3, 5, 99):
        np.testing.assert_array_equal(mod(rows(n)), fn(rows(n)))
    for n in (2, 4, 100, 101):
        with pytest.raises(ConstraintsExceededError):
            mod(rows(n))


# -- 3. constant integer index arrays on a dynamic axis need bounds ---------------------------------
@pytest.mark.parametrize("fn", [
    lambda x: x[[0, 2]],
    lambda x: x[[-1, -3]],
    lambda x: np.take(x, [0, 2], 0),
    lambda x: x.take([0, 2], 0),
    lambda x: x[[0, 2], 1],
    lambda x: x[(0, 2), :],
    lambda x: np.take_along_axis(x, np.zeros((1, 4), np.int64) + 2, 0) if False else x[[2, 0, 1]],
], ids=["list", "negative", "np_take", "method_take", "with_int", "tuple_key", "unordered"])
def test_constant_index_list_bounds(fn):
    ep = refined(fn, ONE, X100, 5, "n = Dim('n', min=3, max=100)")
    check_program(ep, fn, ONE, [1, 2, 3, 4, 100])


def test_constant_index_on_static_axis_needs_no_guard():
    fn = lambda x: x[:, [0, 3]]  # noqa: E731
    ep = tpe.export(fn, rows(5), dynamic_shapes=X100)
    check_program(ep, fn, ONE, [1, 2, 100])


def test_constant_index_inside_range_is_proved():
    fn = lambda x: x[[0, 2]]  # noqa: E731
    ep = tpe.export(fn, rows(5), dynamic_shapes={"x": {0: Dim("n", min=3, max=100)}})
    check_program(ep, fn, ONE, [3, 4, 100])


def test_constant_index_ndarray_bounds():
    fn = lambda x: x[np.array([0, 2])]  # noqa: E731
    ep = refined(fn, ONE, X100, 5, "n = Dim('n', min=3, max=100)")
    check_program(ep, fn, ONE, [1, 2, 3, 100])


# -- 4. sizes computed by subtraction must be >= 0 ------------------------------------------------
X40 = {"x": {0: Dim("n", max=40)}}


@pytest.mark.parametrize("fn", [
    lambda x: np.zeros((x.shape[0] - 5, 4)) + 1,
    lambda x: np.ones(x.shape[0] - 5),
    lambda x: np.full((x.shape[0] - 5, 2), 3.0),
    lambda x: np.empty((0, x.shape[0] - 5)),
    lambda x: np.zeros_like(x, shape=(x.shape[0] - 5,)),
    lambda x: np.eye(x.shape[0] - 5),
    lambda x: np.pad(x, ((0, x.shape[0] - 5), (0, 0))),
    lambda x: np.tile(x, (x.shape[0] - 5, 1)),
    lambda x: np.repeat(x, x.shape[0] - 5, axis=0),
    lambda x: np.linspace(0.0, 1.0, x.shape[0] - 5),
    lambda x: np.broadcast_to(x[0], (x.shape[0] - 5, 4)),
], ids=["zeros", "ones", "full", "empty", "zeros_like", "eye", "pad", "tile", "repeat", "linspace",
        "broadcast_to"])
def test_subtracted_sizes_must_be_nonnegative(fn):
    ep = refined(fn, ONE, X40, 8, "n = Dim('n', min=5, max=40)")
    check_program(ep, fn, ONE, [3, 4, 5, 6, 8, 40])


def test_difference_of_two_dims_is_a_violation():
    def fn(x, y):
        return np.zeros((y.shape[0] - x.shape[0], 4)) + 1

    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, rows(3), rows(8),
                   dynamic_shapes={"x": {0: Dim("m", max=40)}, "y": {0: Dim("n", max=40)}})
    assert "-m + n >= 0" in str(info.value)


def test_nonnegative_size_expression_gives_no_guard():
    fn = lambda x: np.zeros((x.shape[0] + 1, 4)) + x.sum()  # noqa: E731
    ep = tpe.export(fn, rows(5), dynamic_shapes=X40)
    check_program(ep, fn, ONE, [1, 2, 40])


# -- 6. boolean lists are masks ----------------------------------------------------------------------
def test_boolean_list_index_is_a_constant_mask():
    fn = lambda x: x[:, [True, False, True, False]]  # noqa: E731
    ep = tpe.export(fn, rows(5), dynamic_shapes=X100)
    assert ep.module()(rows(7)).shape == (7, 2)
    check_program(ep, fn, ONE, [1, 2, 7, 100])


def test_boolean_list_mask_on_dynamic_axis_pins_its_length():
    fn = lambda x: x[[True, False, True, False, True]]  # noqa: E731
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, rows(5), dynamic_shapes=X100)
    assert "n = 5" in str(info.value)


def test_boolean_ndarray_mask_is_unbacked_but_sound():
    mask = np.array([True, False, True, False])
    fn = lambda x: x[:, mask]  # noqa: E731
    ep = tpe.export(fn, rows(5), dynamic_shapes=X100)
    check_program(ep, fn, ONE, [1, 2, 7])


# -- 1. random numbers inside the model --------------------------------------------------------------
RNG = np.random.default_rng(0)
SMALL = np.ones((3, 4), F32)


@pytest.mark.parametrize("fn,name", [
    (lambda x: x + np.random.rand(3, 4), "numpy.random.rand"),
    (lambda x: x + np.random.rand(4), "numpy.random.rand"),
    (lambda x: x + np.random.normal(size=x.shape), "numpy.random.normal"),
    (lambda x: x + np.random.binomial(3, 0.5, size=(3, 4)), "numpy.random.binomial"),
    (lambda x: x + np.random.default_rng(0).random((3, 4)), "numpy.random.default_rng"),
    (lambda x: x + RNG.normal(size=x.shape), "numpy.random generator"),
    (lambda x: x + RNG.random(), "numpy.random generator"),
    (lambda x: x + np.random.RandomState(0).rand(3, 4), "numpy.random generator"),
], ids=["rand", "rand1", "normal_sym_size", "binomial", "default_rng", "global_rng", "global_rng_scalar",
        "random_state"])
def test_random_inside_model_is_unsupported_with_user_line(fn, name):
    with pytest.raises(tpe.UnsupportedOpError) as info:
        tpe.export(fn, SMALL, dynamic_shapes={"x": {0: Dim("n", max=10)}})
    text = str(info.value)
    assert text.startswith("random numbers inside the model:") and name in text, text
    assert "pass them as an input" in text
    assert "test_soundness_regressions.py:" in text, text
    report = tpe.draft_export(fn, SMALL, dynamic_shapes={"x": {0: Dim("n", max=10)}})
    assert "random numbers inside the model" in str(report)
    # numpy.random is itself again after the capture
    assert np.random.mtrand.np is np and not hasattr(np.random.rand, "__tpe_original__")
    assert RNG.random(2).shape == (2,)


def test_random_outside_model_still_works_and_noise_as_input_exports():
    noise = np.random.default_rng(1).standard_normal((3, 4)).astype(F32)
    ep = tpe.export(lambda x, e: x + e, SMALL, noise)
    np.testing.assert_allclose(ep.module()(SMALL, noise), SMALL + noise)


def test_random_inside_model_does_not_crash_the_interpreter():
    import subprocess
    import sys

    code = ("import numpy as np, tensorplay_export as tpe\n"
            "for f in (tpe.export, tpe.draft_export):\n"
            "    try:\n"
            "        f(lambda x: x + np.random.rand(3, 4), np.ones((3, 4), np.float32))\n"
            "    except tpe.UnsupportedOpError as e:\n"
            "        print('refused', str(e).splitlines()[0])\n"
            "print('alive')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    assert "refused random numbers inside the model" in out.stdout and "alive" in out.stdout


# -- 8. guards raised inside tensorplay_export.nn point at the user's call ---------------------------
def _user_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("at ")]
    assert lines, text
    return lines[0]


def test_functional_guard_points_at_user_call():
    import tensorplay_export.nn.functional as F

    def fn(x):
        return F.max_pool2d(x, 2)  # the line the user must see

    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, np.ones((1, 3, 10, 10), F32), dynamic_shapes={"x": {2: Dim("h", max=64)}})
    line = _user_line(str(info.value))
    assert "test_soundness_regressions.py:" in line and "F.max_pool2d(x, 2)" in line, line
    assert "_dispatch.py" not in str(info.value)


def test_layer_guard_points_at_user_call():
    from tensorplay_export import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3)

        def forward(self, x):
            return self.conv(x)  # the line the user must see

    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(Net(), np.ones((1, 3, 10, 10), F32), dynamic_shapes={"x": {2: Dim("h", max=64)}})
    line = _user_line(str(info.value))
    assert "test_soundness_regressions.py:" in line and "self.conv(x)" in line, line
    assert "tensorplay_export/nn" not in str(info.value) and "conv.py" not in str(info.value)


# -- 7. float() of a size stays symbolic ----------------------------------------------------------------
def _scale_by_rows(x):
    return x * float(x.shape[0])


def _mean_by_hand(x):
    assert isinstance(2.5, float) and not isinstance(x.shape[0], float)  # isinstance still works
    return x.sum(axis=0) / float(x.shape[0]) + float("0.5") + float(1)


@pytest.mark.parametrize("fn,dtype", [(_scale_by_rows, F32), (_scale_by_rows, np.int64),
                                      (_mean_by_hand, F32)], ids=["float32", "int64", "builtin_uses"])
def test_float_of_size_is_symbolic(fn, dtype):
    def make(n):
        return (rows(n).astype(dtype),)
    ep = tpe.export(fn, *make(5), dynamic_shapes=X100)  # used to pin n = 5
    check_program(ep, fn, make, [1, 2, 5, 100])


# -- FIX2: floats of sizes turned back into sizes, bitwise sizes, arange/repeat forms ---------------------
import math  # noqa: E402


def vec(n):
    return (np.arange(n, dtype=F32),)


@pytest.mark.parametrize("fn", [
    lambda x: np.zeros(round(x.shape[0] / 2)),                      # round-half-even: 7 -> 4, 5 -> 2
    lambda x: np.zeros(round(x.shape[0] / 4 + 0.5)),
    lambda x: np.zeros(math.ceil(x.shape[0] / 4)),
    lambda x: np.zeros(math.floor(x.shape[0] / 3)),
    lambda x: np.zeros(math.trunc(x.shape[0] / 3)),
    lambda x: x[:math.ceil(x.shape[0] / 3)],
    lambda x: np.pad(x, (0, math.ceil(x.shape[0] / 4) * 4 - x.shape[0])),
    lambda x: np.linspace(0, 1, math.ceil(x.shape[0] / 2)),
    lambda x: np.arange(x.shape[0] / 2),                             # numpy's length: ceil(stop)
    lambda x: np.arange(1, x.shape[0] / 2 + 0.25, 0.5),
    lambda x: np.zeros(x.shape[0] >> 1),
    lambda x: np.zeros(x.shape[0] << 1),
    lambda x: np.zeros(x.shape[0] & 3),
    lambda x: np.arange(0, x.shape[0], x.shape[0] // 3 + 1),          # symbolic step
], ids=["round", "round_offset", "ceil", "floor", "trunc", "slice_ceil", "pad_ceil", "linspace_ceil",
        "arange_float_stop", "arange_float_step", "rshift", "lshift", "and_mask", "arange_sym_step"])
def test_sizes_from_floats_and_bits_stay_symbolic_and_exact(fn):
    ep = tpe.export(fn, *vec(7), dynamic_shapes=({0: Dim("n", min=1, max=40)},))
    assert not any(e == 7 for e in ep.range_constraints.values()), ep.range_constraints
    assert str(list(ep.range_constraints.values())[0]) == "[1, 40]"
    check_program(ep, fn, vec, list(range(1, 41)))
    with pytest.raises(ConstraintsExceededError):
        ep.module()(*vec(41))


@pytest.mark.parametrize("fn, reason", [
    (lambda x: np.zeros(x.shape[0] | 1), "bitwise `|`"),
    (lambda x: np.zeros(x.shape[0] ^ 1), "bitwise `^`"),
    (lambda x: np.zeros(int(str(x.shape[0])) + 1), "str()"),
    (lambda x: np.zeros(int(f"{x.shape[0]}")), "f-string"),
])
def test_sizes_that_cannot_stay_symbolic_specialize_with_reason(fn, reason):
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, *vec(7), dynamic_shapes=({0: Dim("n", max=40)},))
    assert reason in str(info.value)
    ep = tpe.export(fn, *vec(7), dynamic_shapes=({0: Dim.AUTO},))
    check_program(ep, fn, vec, [7])
    with pytest.raises(ConstraintsExceededError):
        ep.module()(*vec(8))


def test_arange_inexact_float_bound_is_unsupported_naming_numpy_function():
    with pytest.raises(tpe.UnsupportedOpError, match="numpy.arange"):
        tpe.export(lambda x: np.arange(x.shape[0] * 0.1), *vec(7), dynamic_shapes=({0: Dim.AUTO},))


@pytest.mark.parametrize("axis, spec", [(1, None), (1, {0: Dim("b", max=9)}), (None, None)])
def test_repeat_with_constant_counts_has_their_sum(axis, spec):
    fn = (lambda x: np.repeat(x, [1, 2, 0, 3], axis=axis)) if axis is not None else \
        (lambda x: np.repeat(x[0], [1, 2, 0, 3]))
    ep = tpe.export(fn, rows(3), dynamic_shapes=(spec,) if spec else None)
    check_program(ep, fn, lambda n: (rows(n),), [1, 3, 9] if spec else [3])


# -- FIX2: composites and pads on an axis that may be empty (Dim(min=0)) ----------------------------------
import tensorplay_export.nn as nn  # noqa: E402
import tensorplay_export.nn.functional as F  # noqa: E402

_MHA = nn.MultiheadAttention(8, 2, batch_first=True, rng=np.random.default_rng(0))
_MHA.eval()


def _rand(*shape):
    return np.random.default_rng(sum(shape)).standard_normal(shape).astype(F32)


@pytest.mark.parametrize("fn, make", [
    (lambda x: F.softmax(x, dim=1), lambda n: (_rand(2, n),)),
    (lambda x: F.log_softmax(x, dim=-1), lambda n: (_rand(2, n),)),
    (lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True), lambda n: (_rand(2, n, 4),)),
    (lambda x: _MHA(x, x, x)[0], lambda n: (_rand(2, n, 8),)),
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="edge"), lambda n: (_rand(2, n),)),
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="wrap"), lambda n: (_rand(2, n),)),
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="mean"), lambda n: (_rand(2, n),)),
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="reflect"), lambda n: (_rand(2, n),)),
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="symmetric"), lambda n: (_rand(2, n),)),
    (lambda x: F.pad(x, (2, 1), mode="replicate"), lambda n: (_rand(2, n),)),
    (lambda x: F.pad(x, (2, 1), mode="circular"), lambda n: (_rand(2, n),)),
], ids=["softmax", "log_softmax", "sdpa_causal", "mha", "edge", "wrap", "mean", "reflect", "symmetric",
        "F_replicate", "F_circular"])
def test_ops_that_read_an_empty_axis_require_it_nonempty(fn, make):
    spec = ({1: Dim("n", min=0, max=12)},) + (None,) * (len(make(3)) - 1)
    ep = refined(fn, make, spec, 3, "n = Dim('n', max=12)")
    assert str(list(ep.range_constraints.values())[0]) == "[1, 12]"
    check_program(ep, fn, make, [1, 2, 3, 12])
    with pytest.raises(ConstraintsExceededError):
        ep.module()(*make(0))


@pytest.mark.parametrize("fn, make", [
    (lambda x: np.pad(x, ((0, 0), (2, 1)), mode="constant"), lambda n: (_rand(2, n),)),
    (lambda x: np.pad(x, ((2, 1), (0, 0)), mode="edge"), lambda n: (_rand(3, n),)),   # the empty axis is not padded
    (lambda q, k: F.scaled_dot_product_attention(q, k, k, is_causal=True),            # L = 0 with S >= 1 is fine
     lambda n: (_rand(2, n, 4), _rand(2, 3, 4))),
    (lambda x: F.softmax(x, dim=1), lambda n: (_rand(n, 3),)),
])
def test_empty_axes_that_are_not_read_stay_admitted(fn, make):
    spec = ({_empty_axis(make): Dim("n", min=0, max=12)},) + (None,) * (len(make(3)) - 1)
    ep = tpe.export(fn, *make(3), dynamic_shapes=spec)
    assert str(list(ep.range_constraints.values())[0]) == "[0, 12]"
    check_program(ep, fn, make, [0, 1, 2, 12])


def _empty_axis(make):
    a, b = make(3)[0].shape, make(4)[0].shape
    return next(i for i, (p, q) in enumerate(zip(a, b)) if p != q)


# -- FIX2: MultiheadAttention masks are validated like torch ---------------------------------------------
@pytest.mark.parametrize("attn_mask, key_padding_mask", [
    ((60, 5, 1), None), ((5, 1), None), ((1, 5), None), ((5,), None), (None, (1, 5)), (None, (3, 1)), (None, (5,)),
])
def test_mha_rejects_mis_shaped_masks(attn_mask, key_padding_mask):
    x = _rand(3, 5, 8)
    am = None if attn_mask is None else np.zeros(attn_mask, bool)
    kp = None if key_padding_mask is None else np.zeros(key_padding_mask, bool)
    with pytest.raises(ValueError, match="attn_mask|key_padding_mask"):
        _MHA(x, x, x, attn_mask=am, key_padding_mask=kp)


def test_mha_accepts_torch_mask_shapes_and_exports_them():
    x = _rand(3, 5, 8)
    for am in (np.zeros((5, 5), bool), np.zeros((6, 5, 5), bool)):
        assert _MHA(x, x, x, attn_mask=am, key_padding_mask=np.zeros((3, 5), bool))[0].shape == (3, 5, 8)
    fn = lambda x, km: _MHA(x, x, x, key_padding_mask=km)[0]  # noqa: E731
    s = Dim("s", max=9)
    ep = tpe.export(fn, x, np.zeros((3, 5), bool), dynamic_shapes=({1: s}, {1: s}))
    check_program(ep, fn, lambda n: (_rand(3, n, 8), np.arange(3 * n).reshape(3, n) % 4 == 3), [1, 2, 9])


# -- FIX2: iterating over a traced array gets its own reason and hint ------------------------------------
def _iter_rows(x):
    return np.stack([v * 2 for v in x])


def _iter_enumerate(x):
    return np.stack([v * i for i, v in enumerate(x)])


def _iter_zip(x):
    return np.stack([a - b for a, b in zip(x, x[1:])])


@pytest.mark.parametrize("fn", [_iter_rows, _iter_enumerate, _iter_zip])
def test_iterating_over_an_array_is_reported_as_iteration(fn):
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, rows(4), dynamic_shapes=({0: Dim("n", max=10)},))
    text = str(info.value)
    assert "iterating over x runs a Python loop per row: use vectorized ops" in text, text
    assert "range() over a size" not in text and "register_buffer" not in text


# -- FIX2: a patchify reshape needs each patched size divisible, one refine step -------------------------
def _patchify(x):
    n, c, h, w = x.shape
    return x.reshape(n, c, h // 4, 4, w // 4, 4).transpose(0, 2, 4, 1, 3, 5).reshape(n, (h // 4) * (w // 4), -1)


def test_patchify_reshape_guards_split_per_factor_and_refine_once():
    def make(hw):
        hh, ww = hw if isinstance(hw, tuple) else (hw, hw)
        return (np.arange(2 * 3 * hh * ww, dtype=F32).reshape(2, 3, hh, ww),)
    spec = ({2: Dim("h", max=56), 3: Dim("w", max=56)},)
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(_patchify, *make(16), dynamic_shapes=spec)
    text = str(info.value)
    assert "h % 4 == 0" in text and "w % 4 == 0" in text and "h*w ==" not in text, text
    ep = refined(_patchify, make, spec, 16, "h = 4*_h")
    assert {str(k): str(v) for k, v in ep.range_constraints.items()} == {"_h": "[1, 14]", "_w": "[1, 14]"}
    check_program(ep, _patchify, make, [4, (4, 56), (56, 8), 56])
    for bad in [(15, 16), (16, 6), (60, 4)]:
        with pytest.raises(ConstraintsExceededError):
            ep.module()(*make(bad))


# -- FIX2: ceil_mode pooling decomposes without a guard the contract does not imply ----------------------
@pytest.mark.parametrize("fn, lo", [
    (lambda x: F.max_pool2d(x, 2, ceil_mode=True), 2),
    (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), 2),
    (lambda x: F.max_pool2d(x, 2, stride=3, ceil_mode=True), 2),                   # may drop the last window
    (lambda x: F.avg_pool2d(x, 2, stride=3, padding=1, ceil_mode=True, count_include_pad=False), 2),
], ids=["max_k2", "avg_k3s2p1", "max_k2s3", "avg_k2s3p1_nocount"])
def test_ceil_mode_pooling_exports_and_decomposes_on_a_dynamic_axis(fn, lo):
    def make(n):
        return (np.random.default_rng(n).standard_normal((1, 2, n, 7)).astype(F32),)
    ep = tpe.export(fn, *make(9), dynamic_shapes=({2: Dim("h", min=lo, max=40)},))
    dec = ep.run_decompositions()
    assert str(list(dec.range_constraints.values())[0]) == f"[{lo}, 40]"
    sizes = list(range(lo, 41))
    check_program(ep, fn, make, sizes)
    check_program(dec, fn, make, sizes)
    with pytest.raises(ConstraintsExceededError):
        dec.module()(*make(41))


def test_ceil_mode_size_matches_torch_rule():
    from tensorplay_export.nn._conv import ceil_mode_size
    for k in range(1, 6):
        for s in range(1, 6):
            for p in range(k // 2 + 1):
                for size in range(max(1, k - 2 * p), 30):
                    span = size + 2 * p - (k - 1) - 1
                    out = (span + s - 1) // s + 1
                    out -= (out - 1) * s >= size + p
                    extra = max((out - 1) * s + k - (size + 2 * p), 0)
                    assert ceil_mode_size(size, k, s, p, 1) == (out, extra), (size, k, s, p)
