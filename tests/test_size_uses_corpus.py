"""Python-level uses of sizes during capture (issue 14): each is exact, guarded, or refused.

Every model below reads ``x.shape`` and uses a size the way model code does (hashing,
type checks, numpy scalars, builtins, ``math``, text, loops, ...).  Each is exported with
dynamic dims on both axes of a ``(6, 4)`` float32 example and its program is run at sizes
other than the example against eager numpy (structure, Python/numpy type, dtype and values):

- ``EXACT``: export with named dims succeeds (no guard narrows them) and the program equals
  eager at every size checked;
- ``GUARDED``: export with named dims raises ``ConstraintViolationError`` naming this file's
  line; with ``Dim.AUTO`` the program equals eager at the example and wherever it accepts an
  input, and refuses the others with ``ConstraintsExceededError``;
- ``REFUSED``: export raises a clear error (its type and a phrase of its message are given).

No case may give a program that is wrong at run time without an error.
"""
from __future__ import annotations

import collections
import copy
import fractions
import functools
import itertools
import math
import numbers
import operator
import struct

import numpy as np
import pytest

from _shared import auto_spec, named_spec, same_output, x_of

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import (CaptureError, ConstraintsExceededError, ConstraintViolationError,
                                      DataDependentError, EagerMismatchError, UnsupportedOpError)

EXACT, GUARDED, REFUSED = "exact", "guarded", "refused"
EXAMPLE = (6, 4)
SIZES = [(1, 1), (1, 4), (2, 3), (4, 4), (5, 4), (6, 4), (7, 5), (8, 2), (16, 8), (33, 3), (64, 64)]
SCALE = {4: 2.0, 8: 3.0, 6: 5.0}
ALLOWED = frozenset({4, 6, 16})


@functools.lru_cache(maxsize=None)
def _cached_scale(n):
    return 1.0 + n % 3


def _sum_rows(x):
    out = np.zeros(x.shape[1], dtype=x.dtype)
    for i in range(x.shape[0]):
        out = out + x[i]
    return out


def _local_math(x):
    import math as m

    return x * m.sqrt(x.shape[0])


def _dict_store(x):
    d = {}
    d[x.shape[0]] = x * 2
    return d[x.shape[0]]


def _data_dependent_key(x):
    k = np.nonzero(x > 0)[0].shape[0]
    return x * SCALE.get(k, 1.0)


class _Holder:
    buf = None


_HOLDER = _Holder()
_HOLDER.buf = np.zeros(4, dtype=np.float32)  # a plain ndarray reached through an object: never traced


def _sum_out_plain(x):
    np.sum(x, axis=0, out=_HOLDER.buf)
    return x + _HOLDER.buf.sum()


def _sum_out_traced(x):
    z = np.zeros(x.shape[1], dtype=np.float32)
    np.sum(x, axis=0, out=z)
    return x + z


# (id, model, expectation[, (error type, message phrase[, names the line]) for REFUSED])
CASES = [
    # -- hashing: a dict or set lookup finds only the example's value ------------------------
    ("dict_get", lambda x: x * SCALE.get(x.shape[0], 1.0), GUARDED),
    ("in_dict", lambda x: x * (2.0 if x.shape[0] in SCALE else 1.0), GUARDED),
    ("in_set_literal", lambda x: x * (2.0 if x.shape[0] in {4, 16} else 1.0), GUARDED),
    ("in_frozenset", lambda x: x * (2.0 if x.shape[1] in ALLOWED else 1.0), GUARDED),
    ("hash_shape", lambda x: x * float(hash(x.shape) % 3), GUARDED),
    ("hash_size", lambda x: x * float(hash(x.shape[0]) % 5), GUARDED),
    ("dict_store_and_read", _dict_store, GUARDED),
    ("set_of_shape", lambda x: x * len(set(x.shape)), GUARDED),
    ("hash_comparison", lambda x: x * {True: 2.0, False: 1.0}[x.shape[0] > 3], GUARDED),
    ("hash_unbacked", _data_dependent_key, REFUSED, (DataDependentError, "hashed")),
    # -- type checks answer as eager --------------------------------------------------------
    ("isinstance_int", lambda x: x * (2 if isinstance(x.shape[0], int) else 3), EXACT),
    ("isinstance_integral", lambda x: x * (2 if isinstance(x.shape[0], numbers.Integral) else 3), EXACT),
    ("isinstance_number", lambda x: x * (2 if isinstance(x.shape[1], numbers.Number) else 3), EXACT),
    ("np_isscalar", lambda x: x * (2 if np.isscalar(x.shape[0]) else 3), EXACT),
    ("isinstance_int_or_float", lambda x: x * (2 if isinstance(x.shape[0], (int, float)) else 3), EXACT),
    ("isinstance_float_false", lambda x: x * (2 if isinstance(x.shape[0], float) else 3), EXACT),
    ("isinstance_np_integer_false", lambda x: x * (2 if isinstance(x.shape[0], np.integer) else 3), EXACT),
    ("isinstance_typed_np_integer",
     lambda x: x * (2 if isinstance(x.shape[0] + np.int32(1), np.integer) else 3), EXACT),
    ("isinstance_comparison_bool", lambda x: x * (2 if isinstance(x.shape[0] > 2, bool) else 3), EXACT),
    ("isinstance_float_size", lambda x: x * (2 if isinstance(x.shape[0] / 2, float) else 3), EXACT),
    # type() cannot be intercepted: the traced run takes the other branch, export's eager check refuses
    ("type_is_int", lambda x: x * 2 if type(x.shape[0]) is int else x * 3, REFUSED,
     (EagerMismatchError, "type(n) is int", False)),
    # -- numpy scalars: the size carries eager's numpy type ----------------------------------
    ("int8_plus_int32_size", lambda x: x.astype(np.int8) + (x.shape[0] + np.int32(1)), EXACT),
    ("float16_plus_float32_size", lambda x: x.astype(np.float16) + x.shape[1] * np.float32(0.5), EXACT),
    ("float32_times_int32_mod", lambda x: x * ((2 * x.shape[0]) % np.int32(4)), EXACT),
    ("reflected_int32", lambda x: x.astype(np.int8) + (np.int32(1) + x.shape[0]), EXACT),
    ("int16_times_int64_size", lambda x: x.astype(np.int16) * (np.int64(2) * x.shape[0]), EXACT),
    ("size_over_float32", lambda x: x.astype(np.float16) + x.shape[0] / np.float32(2), EXACT),
    ("float64_scalar_times_size", lambda x: x + np.float64(0.5) * x.shape[0], EXACT),
    ("typed_size_as_shape", lambda x: np.zeros(x.shape[0] + np.int32(1)), EXACT),
    ("typed_size_as_slice_stop", lambda x: x[: x.shape[0] - np.int32(1)], EXACT),
    ("typed_size_output", lambda x: (x, x.shape[0] + np.int32(1)), EXACT),
    ("typed_size_in_np_full", lambda x: np.full(x.shape[1], x.shape[0] + np.int32(2)), EXACT),
    ("np_int64_constructor", lambda x: x * np.int64(x.shape[0]), EXACT),
    ("np_float32_constructor", lambda x: x * np.float32(x.shape[0]), EXACT),
    # -- numpy over sizes ---------------------------------------------------------------------
    ("np_array_of_size", lambda x: x * np.array(x.shape[0]), EXACT),
    ("np_array_of_size_dtype", lambda x: x.astype(np.float16) * np.array(x.shape[0], dtype=np.float16), EXACT),
    ("np_array_of_shape", lambda x: x * np.array(x.shape)[0], EXACT),
    ("np_asarray_of_shape", lambda x: np.asarray(x.shape) * 2, EXACT),
    ("np_prod_shape_as_size", lambda x: x.reshape(np.prod(x.shape)), EXACT),
    ("np_prod_tail_as_size", lambda x: x.reshape(x.shape[0], np.prod(x.shape[1:])), EXACT),
    ("np_prod_output", lambda x: (x, np.prod(x.shape)), EXACT),
    ("np_sqrt_of_size", lambda x: x * np.sqrt(x.shape[0]), EXACT),
    ("np_arange_times_size", lambda x: np.arange(x.shape[0]) * x.shape[1], EXACT),
    ("np_full_with_size", lambda x: np.full(x.shape[0], x.shape[1]), EXACT),
    ("np_ones_reversed_shape", lambda x: np.ones(x.shape[::-1]), EXACT),
    ("np_sum_out_plain_array", _sum_out_plain, REFUSED, (UnsupportedOpError, "out=")),
    ("np_sum_out_traced_array", _sum_out_traced, EXACT),
    ("method_sum_out_traced_array", lambda x: x.sum(axis=1, out=np.zeros(x.shape[0], np.float32)), EXACT),
    # -- builtins over x.shape ------------------------------------------------------------------
    ("sum_shape", lambda x: x * sum(x.shape), EXACT),
    ("max_shape", lambda x: x * max(x.shape), EXACT),
    ("min_shape", lambda x: x[: min(x.shape)], EXACT),
    ("max_with_constant", lambda x: np.zeros(max(x.shape[0], 3)), EXACT),
    ("len_shape", lambda x: x * len(x.shape), EXACT),
    ("len_array", lambda x: x * len(x), EXACT),  # model code's len() is capture's (a SymInt)
    ("abs_difference", lambda x: x * abs(x.shape[0] - 20), EXACT),
    ("divmod_size", lambda x: x * divmod(x.shape[0], 4)[1] + divmod(x.shape[0], 4)[0], EXACT),
    ("pow_size", lambda x: x * pow(x.shape[0], 2), EXACT),
    ("pow_size_mod", lambda x: x * pow(x.shape[0], 2, 7), EXACT),
    ("power_of_two_by_size", lambda x: x * 2 ** x.shape[0], GUARDED),
    ("float_power_by_size", lambda x: x * 1.5 ** x.shape[1], GUARDED),
    ("slice_by_power_of_mod", lambda x: x[: 2 ** (x.shape[0] % 3)], EXACT),  # 2**k of a size stays symbolic
    ("size_power_by_size", lambda x: x * x.shape[0] ** (x.shape[1] % 2), GUARDED),
    ("round_quarter", lambda x: np.zeros(round(x.shape[0] / 4)), EXACT),
    ("round_tens", lambda x: np.zeros(round(x.shape[0] * 7, -1)), EXACT),
    ("bit_length", lambda x: x * x.shape[0].bit_length(), GUARDED),
    ("bool_of_size", lambda x: x * (2 if x.shape[0] else 3), EXACT),
    ("int_of_size", lambda x: x * int(x.shape[0]), GUARDED),
    ("float_of_size", lambda x: x * float(x.shape[0]), EXACT),
    ("true_plus_size", lambda x: np.zeros(True + x.shape[0]), EXACT),
    ("floor_div_times", lambda x: x[: x.shape[0] // 2 * 2], EXACT),
    ("negative_mod", lambda x: np.zeros(-x.shape[0] % 5), EXACT),
    ("sqrt_power", lambda x: x * x.shape[0] ** 0.5, EXACT),
    ("times_one_and_half", lambda x: x * (x.shape[1] * 1.5), EXACT),
    ("as_integer_ratio", lambda x: x * x.shape[0].as_integer_ratio()[0], EXACT),
    ("numerator_real", lambda x: x * (x.shape[0].numerator + x.shape[1].real), EXACT),
    ("size_attr", lambda x: x * x.size, EXACT),
    ("nbytes_attr", lambda x: np.zeros(x.nbytes // 4), EXACT),
    # -- math ----------------------------------------------------------------------------------
    ("math_floor_third", lambda x: np.zeros(math.floor(x.shape[0] / 3)), EXACT),
    ("math_ceil_third", lambda x: np.zeros(math.ceil(x.shape[0] / 3)), EXACT),
    ("math_sqrt", lambda x: x * math.sqrt(x.shape[0]), EXACT),
    ("math_sqrt_local_import", _local_math, EXACT),
    ("math_prod_shape", lambda x: x * math.prod(x.shape), EXACT),
    ("math_log", lambda x: x * math.log(x.shape[0] + 1), GUARDED),
    ("math_gcd", lambda x: x * math.gcd(x.shape[0], 4), GUARDED),
    ("math_isqrt", lambda x: x * math.isqrt(x.shape[0]), GUARDED),
    # -- text ------------------------------------------------------------------------------------
    ("fstring_length", lambda x: x * len(f"{x.shape[0]}"), GUARDED),
    ("str_digits", lambda x: x * int(str(x.shape[0])[0]), GUARDED),
    ("percent_format", lambda x: x * len("%d" % x.shape[0]), GUARDED),
    ("format_spec", lambda x: x * len(format(x.shape[1], "03d")), GUARDED),
    ("repr_of_shape", lambda x: x * (2 if repr(x.shape) == "(6, 4)" else 3), GUARDED),
    ("str_of_comparison", lambda x: x * len(str(x.shape[0] > 3)), GUARDED),
    ("str_join_shape", lambda x: x * len("x".join(map(str, x.shape))), GUARDED),
    ("fstring_float_size", lambda x: x * len(f"{x.shape[0] / 4:.2f}"), GUARDED),
    # -- numpy ufuncs on sizes (scalar operands) ------------------------------------------------
    ("np_maximum_as_size", lambda x: np.zeros(np.maximum(x.shape[0], 3)), EXACT),
    ("np_minimum_as_slice", lambda x: x[: np.minimum(x.shape[0], 5)], EXACT),
    ("np_add_typed", lambda x: x.astype(np.int8) + np.add(x.shape[0], 1), EXACT),
    ("np_abs_as_size", lambda x: np.zeros(np.abs(x.shape[0] - 100)), EXACT),
    ("np_scalar_less_than_size", lambda x: x * (2 if np.int32(2) < x.shape[0] else 3), GUARDED),
    ("np_less_proved", lambda x: x * (2 if np.less(x.shape[0], 100) else 3), EXACT),
    ("np_floor_divide_size", lambda x: x[: np.floor_divide(x.shape[0], 2)], EXACT),
    ("hash_float_size", lambda x: x * {1.5: 2.0}.get(x.shape[0] / 4, 1.0), GUARDED),
    ("in_range_object", lambda x: x * (2 if x.shape[0] in range(2, 10) else 3), GUARDED),
    ("in_tuple", lambda x: x * (2 if x.shape[0] in (4, 8) else 3), GUARDED),
    # -- loops and comprehensions -----------------------------------------------------------------
    ("range_loop", _sum_rows, GUARDED),
    ("row_comprehension", lambda x: np.stack([x[i] * 2 for i in range(x.shape[0])]), GUARDED),
    ("shape_comprehension", lambda x: np.zeros(tuple(d * 2 for d in x.shape)), EXACT),
    ("enumerate_shape", lambda x: x * sum(i * d for i, d in enumerate(x.shape)), EXACT),
    ("iterate_array", lambda x: sum(row for row in x), GUARDED),
    # -- comparisons ------------------------------------------------------------------------------
    ("chained_comparison_proved", lambda x: x * (2 if 0 < x.shape[0] < 100 else 3), EXACT),
    ("branch_on_size", lambda x: x * (2 if x.shape[0] > 3 else 3), GUARDED),
    ("shape_equals_tuple", lambda x: x * (2 if x.shape == (6, 4) else 3), GUARDED),
    ("sizes_equal", lambda x: x * (2 if x.shape[0] == x.shape[1] else 3), GUARDED),
    ("sorted_shape", lambda x: np.zeros(sorted(x.shape)), GUARDED),
    # -- operator module ----------------------------------------------------------------------------
    ("operator_add_mul", lambda x: np.zeros(operator.add(operator.mul(x.shape[0], 2), 1)), EXACT),
    ("operator_floordiv", lambda x: x[: operator.floordiv(x.shape[0], 2)], EXACT),
    ("operator_index", lambda x: x * operator.index(x.shape[0]), GUARDED),
    ("operator_neg_abs", lambda x: np.zeros(operator.abs(operator.neg(x.shape[1]))), EXACT),
    # -- numpy scalar types through more operators ----------------------------------------------
    ("round_typed_is_python_int", lambda x: x.astype(np.int8) + round(x.shape[0] + np.int32(1)), EXACT),
    ("neg_typed", lambda x: x.astype(np.int8) + (-(x.shape[0] + np.int32(1))), EXACT),
    ("abs_typed", lambda x: x.astype(np.int8) + abs(x.shape[0] + np.int32(1)), EXACT),
    ("divmod_typed", lambda x: x.astype(np.int8) + divmod(x.shape[0], np.int32(4))[1], EXACT),
    ("shift_typed", lambda x: x.astype(np.int8) + (x.shape[0] >> np.int32(1)), EXACT),
    ("mask_typed", lambda x: x.astype(np.int8) + (x.shape[0] & np.int32(3)), EXACT),
    ("pow_typed", lambda x: x.astype(np.int8) + (x.shape[0] + np.int32(0)) ** 2, EXACT),
    ("sum_typed", lambda x: x.astype(np.int8) + sum([x.shape[0], np.int32(1)]), EXACT),
    ("min_mixed_types", lambda x: x.astype(np.int8) + min(x.shape[0], np.int32(3)), GUARDED),
    ("truediv_typed", lambda x: x.astype(np.float16) + (x.shape[0] + np.int32(0)) / 4, EXACT),
    ("float32_floor", lambda x: np.zeros(math.floor(x.shape[0] * np.float32(0.5))), EXACT),
    ("float16_divisor", lambda x: x.astype(np.float16) * (x.shape[0] / np.float16(4)), EXACT),
    ("uint8_plus_size", lambda x: x.astype(np.uint8) + x.shape[0], EXACT),
    ("np_asarray_size_float32", lambda x: x + np.asarray(x.shape[0], dtype=np.float32), EXACT),
    ("np_full_typed_fill", lambda x: np.full((x.shape[0],), x.shape[1] * np.float32(0.5)), EXACT),
    ("np_arange_typed", lambda x: np.arange(x.shape[0] + np.int32(0)), EXACT),
    ("reshape_typed", lambda x: x.reshape(x.shape[0] + np.int32(0), -1), EXACT),
    ("np_int32_of_typed", lambda x: x * np.int32(x.shape[0] + np.int32(1)), EXACT),
    # -- the standard library ---------------------------------------------------------------------
    ("counter_of_shape", lambda x: x * collections.Counter(x.shape)[4], GUARDED),
    ("defaultdict_key", lambda x: x * collections.defaultdict(int, {x.shape[0]: 2})[6], GUARDED),
    ("fraction_of_size", lambda x: x * float(fractions.Fraction(x.shape[0], 4)), GUARDED),
    ("copy_size", lambda x: x * copy.copy(x.shape[0]), EXACT),
    ("deepcopy_shape", lambda x: x * copy.deepcopy(x.shape)[0], EXACT),
    ("struct_pack", lambda x: x * len(struct.pack("i", x.shape[0])), GUARDED),
    ("itertools_product", lambda x: x * len(list(itertools.product(range(x.shape[0]), range(2)))), GUARDED),
    ("math_comb", lambda x: x * math.comb(x.shape[0], 2), GUARDED),
    ("math_hypot", lambda x: x * math.hypot(*x.shape), GUARDED),
    ("any_over_shape", lambda x: x * any(d > 5 for d in x.shape), GUARDED),
    ("all_over_shape", lambda x: x * all(d > 0 for d in x.shape), EXACT),
    ("zip_with_shape", lambda x: x * sum(a * b for a, b in zip(x.shape, (1, 2))), EXACT),
    ("walrus_size", lambda x: x[: (k := x.shape[0] // 2)] * k, EXACT),
    ("size_in_list_index", lambda x: x * [1, 2, 3, 4, 5, 6, 7, 8][x.shape[1]], GUARDED),
    ("shape_times_two", lambda x: np.zeros(x.shape * 2), EXACT),
    # -- sizes as op arguments ----------------------------------------------------------------------
    # an argument a rule takes only as a constant: pinned (a guard), never an internal error
    ("size_as_axis", lambda x: x.sum(axis=x.shape[0] % 2), GUARDED),
    ("size_as_split_count", lambda x: np.array_split(x, x.shape[0] // 2 + 1)[-1], GUARDED),
    ("size_as_moveaxis_source", lambda x: np.moveaxis(x[None], x.shape[0] % 2, 2), GUARDED),
    ("size_comparison_as_index", lambda x: x[x.shape[0] > 4], GUARDED),
    ("size_comparison_beside_index", lambda x: x[x.shape[0] > 4, :2, [0]], GUARDED),
    ("size_as_diff_order", lambda x: np.diff(x, n=x.shape[1] % 3 + 1, axis=0), EXACT),
    ("size_as_diagonal_offset", lambda x: np.diagonal(x, offset=x.shape[0] // 2 - x.shape[1]), EXACT),
    ("size_as_diag_offset", lambda x: np.diag(x[0], k=x.shape[0] - 5), EXACT),
    ("size_as_repeat_count", lambda x: np.repeat(x, x.shape[1] % 3 + 1, axis=0), EXACT),
    ("size_as_roll_shift", lambda x: np.roll(x, x.shape[0] // 2, axis=0), EXACT),
    ("size_as_pad_width", lambda x: np.pad(x, ((0, x.shape[0] % 3), (0, 0))), EXACT),
    ("size_as_eye_offset", lambda x: np.eye(x.shape[0], k=x.shape[1] // 2), EXACT),
    ("size_as_take_index", lambda x: np.take(x, x.shape[0] - 1, axis=0), EXACT),
    ("negative_size_index", lambda x: x[-x.shape[0]], EXACT),
    ("size_as_arange_stop_float_step", lambda x: np.arange(0, x.shape[0], 0.5), EXACT),
    ("np_where_of_sizes", lambda x: np.where(x > 0, x.shape[0], x.shape[1]), EXACT),
    ("np_clip_to_size", lambda x: np.clip(x, 0, x.shape[0]), EXACT),
    # -- slicing with sizes -----------------------------------------------------------------------
    ("negative_step_size", lambda x: x[::-x.shape[1]], EXACT),
    ("positive_step_size", lambda x: x[:: x.shape[1]], EXACT),
    ("slice_by_half", lambda x: x[x.shape[0] // 2:], EXACT),
]


def _same(got, want, where):
    same_output(got, want, where, rtol=1e-6)


def _eager(fn, x):
    try:
        return fn(x), None
    except (ValueError, IndexError, TypeError, ZeroDivisionError) as err:
        return None, err


def _check_program(fn, ep, guarded):
    """The program equals eager at every size of SIZES it accepts; returns the sizes it refused."""
    mod = ep.module()
    refused = []
    for n, m in SIZES:
        want, err = _eager(fn, x_of(n, m))
        if err is not None:
            with pytest.raises(Exception):
                mod(x_of(n, m))
            continue
        try:
            got = mod(x_of(n, m))
        except ConstraintsExceededError:
            assert guarded, f"an exact program refused ({n}, {m})"
            refused.append((n, m))
            continue
        _same(got, want, (n, m))
    assert EXAMPLE not in refused
    return refused


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_size_use(case):
    name, fn, expect = case[:3]
    example = x_of(*EXAMPLE)
    if expect == REFUSED:
        err_type, phrase, *names_line = case[3]
        with pytest.raises(err_type) as info:
            tpe.export(fn, example, dynamic_shapes=named_spec())
        assert phrase in str(info.value), str(info.value)
        # the user's line, except for the whole-program eager check (it knows no line)
        assert "test_size_uses_corpus.py:" in str(info.value) or names_line == [False], str(info.value)
        return
    if expect == EXACT:
        ep = tpe.export(fn, example, dynamic_shapes=named_spec())
        assert _check_program(fn, ep, guarded=False) == []
        return
    with pytest.raises(ConstraintViolationError) as info:
        tpe.export(fn, example, dynamic_shapes=named_spec())
    assert "test_size_uses_corpus.py:" in str(info.value), str(info.value)
    ep = tpe.export(fn, example, dynamic_shapes=auto_spec())
    refused = _check_program(fn, ep, guarded=True)
    assert refused, "a guarded case whose AUTO program accepts every size: it should be EXACT"


def test_corpus_is_large_enough():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


def test_a_cache_that_keeps_a_size_is_refused_loudly():
    # functools.lru_cache keeps the first export's size: the next export (and eager code) must
    # not compute with it silently
    _cached_scale.cache_clear()
    fn = lambda x: x * _cached_scale(x.shape[0])  # noqa: E731
    with pytest.raises(ConstraintViolationError, match="hashed"):
        tpe.export(fn, x_of(*EXAMPLE), dynamic_shapes=named_spec())
    with pytest.raises(CaptureError, match="lru_cache") as info:
        tpe.export(fn, x_of(*EXAMPLE), dynamic_shapes=auto_spec())
    assert "test_size_uses_corpus.py:" in str(info.value)
    assert "cache_clear" in str(info.value)
    # eager calls key the cache by a plain int, which never meets the kept sizes
    np.testing.assert_array_equal(fn(x_of(*EXAMPLE)), x_of(*EXAMPLE) * 1.0)
    _cached_scale.cache_clear()
    ep = tpe.export(fn, x_of(*EXAMPLE), dynamic_shapes=auto_spec())
    _cached_scale.cache_clear()
    assert _check_program(fn, ep, guarded=True)
    _cached_scale.cache_clear()


class _LocalMathModule(tpe.nn.Module):
    def forward(self, x):
        import math

        return x * math.sqrt(x.shape[0]) + math.floor(x.shape[1] / 2)


def test_import_math_inside_forward_stays_symbolic():
    model = _LocalMathModule()
    ep = tpe.export(model, x_of(*EXAMPLE), dynamic_shapes=named_spec())
    assert _check_program(model, ep, guarded=False) == []


def _clipped_gather(x, idx):
    return x[np.clip(idx, 0, 10)]


def test_index_range_outside_the_axis_is_a_clear_error():
    # numpy's run stays inside (the values are 0..4), but clip's range reaches 10 on 6 rows
    idx = np.array([0, 1, 4])
    spec = {"x": named_spec()["x"], "idx": None}
    with pytest.raises(CaptureError) as info:
        tpe.export(_clipped_gather, x_of(*EXAMPLE), idx, dynamic_shapes=spec)
    text = str(info.value)
    assert "internal error" not in text and "index values may fall outside the array" in text, text
    assert "np.clip(i, 0, x.shape[0] - 1)" in text and "test_size_uses_corpus.py:" in text, text
    # bounded by the axis size it exports and runs like eager
    fn = lambda x, idx: x[np.clip(idx, 0, x.shape[0] - 1)]  # noqa: E731
    ep = tpe.export(fn, x_of(*EXAMPLE), idx, dynamic_shapes=spec)
    for n, m in SIZES:
        _same(ep.module()(x_of(n, m), idx), fn(x_of(n, m), idx), (n, m))
