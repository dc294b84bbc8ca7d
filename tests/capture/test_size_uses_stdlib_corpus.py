"""A second corpus of Python-level uses of sizes (stdlib, numpy scalars, shape tuples).

Each model reads ``x.shape`` of a ``(6, 4)`` float32 example and uses a size the way model
code does.  It is exported with named dims on both axes, then (when export succeeds) its
program is run at sizes other than the example and compared with eager numpy: the same
structure, Python/numpy type, dtype, shape and bit-identical values.

- ``EXACT``: export with named dims succeeds and the program equals eager everywhere checked;
- ``GUARDED``: export with named dims raises ``ConstraintViolationError`` naming this file's
  line; with ``Dim.AUTO`` the program equals eager wherever it accepts an input and refuses
  the others with ``ConstraintsExceededError``;
- ``REFUSED``: export raises the given error type naming this file's line.

``python tests/capture/test_size_uses_stdlib_corpus.py`` prints how each case fares without asserting
(works / proper error / raw error / wrong result), the numbers the test suite enforces.
"""
from __future__ import annotations

import array
import bisect
import collections
import datetime
import decimal
import fractions
import functools
import hashlib
import heapq
import itertools
import json
import logging
import math
import operator
import os
import pickle
import statistics
import struct
import sys
import warnings
from decimal import Decimal
from json import dumps as json_dumps

import numpy as np
import pytest

from _shared import auto_spec, named_spec, same_output, x_of

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.errors import (CaptureError, ConstraintsExceededError, ConstraintViolationError,
                                      DataDependentError, EagerMismatchError, UnsupportedOpError)

EXACT, GUARDED, REFUSED = "exact", "guarded", "refused"
EXAMPLE = (6, 4)
SIZES = [(1, 1), (2, 3), (3, 4), (4, 4), (5, 4), (6, 4), (7, 5), (8, 2), (12, 6), (17, 3), (31, 8), (64, 64)]
PROPER = (ConstraintViolationError, CaptureError, UnsupportedOpError, DataDependentError, EagerMismatchError)
THIS_FILE = "test_size_uses_stdlib_corpus.py:"


def _loop_accumulate(x):
    acc = 0
    for i in range(x.shape[1]):
        acc += i * x.shape[0]
    return x * acc


def _enumerate_rows(x):
    out = x * 0
    for i, _ in enumerate(range(x.shape[0])):
        out[i] = x[i] * i
    return out


def _unpack_shape(x):
    n, m = x.shape
    return x.reshape(m, n) * (n - m)


def _star_unpack(x):
    first, *rest = x.shape
    return x * (first + len(rest))


def _reduce_mul(x):
    return x.reshape(functools.reduce(operator.mul, x.shape, 1))


def _heap_smallest(x):
    return x * heapq.nsmallest(1, x.shape)[0]


def _bisect_bucket(x):
    return x * bisect.bisect_left([2, 5, 9, 17], x.shape[0])


def _while_halving(x):
    n, steps = x.shape[0], 0
    while n > 1:
        n = n // 2
        steps += 1
    return x * steps


def _list_of_sizes(x):
    dims = [x.shape[0], x.shape[1], 2]
    return np.zeros(dims[:2]) + dims[2]


def _shape_dict(x):
    meta = {"rows": x.shape[0], "cols": x.shape[1]}
    return x * meta["rows"] - meta["cols"]


def _statistics_mean(x):
    return x * statistics.mean(x.shape)


def _tuple_concat(x):
    return np.zeros(x.shape[1:] + (2,) + x.shape[:1])


def _pad_to_multiple(x, k=8):
    pad = (-x.shape[0]) % k
    return np.pad(x, ((0, pad), (0, 0)))


def _heads(x, heads=2):
    n, m = x.shape
    return x.reshape(n, heads, m // heads).transpose(1, 0, 2) if m % heads == 0 else x[None]


def _cumulative_offsets(x):
    offsets = list(itertools.accumulate(x.shape))
    return np.zeros(offsets[-1])


def _log2_ceil(x):
    return np.zeros(int(np.ceil(np.log2(x.shape[0] + 1))))


def _local_json(x):
    import json as js

    return x * len(js.dumps({"rows": x.shape[0]}))


def _local_from_import(x):
    from statistics import median

    return x * median(x.shape)


def _type_assert(x):
    assert type(x.shape[0]) is int
    return x * 2


def _deque_maxlen(x):
    return x * collections.deque([1, 2, 3], maxlen=x.shape[0]).maxlen


def _warn_on_size(x):
    if x.shape[0] > 1000:
        warnings.warn(f"large batch {x.shape[0]}")
    return x + 1


log = logging.getLogger("probe5")
def _assert_msg(x):
    assert x.shape[0] > 0, f"empty batch {x.shape}"
    return x * 2
def _log_size(x):
    log.debug("rows %d", x.shape[0])
    return x + 1
def _self_attr(x):
    class Box: pass
    b = Box(); b.n = x.shape[0]
    return x * b.n
def _comprehension_dict(x):
    d = {i: i * x.shape[1] for i in range(3)}
    return x * d[2]
def _nonlocal_counter(x):
    total = 0
    def add(k):
        nonlocal total
        total += k
    add(x.shape[0]); add(x.shape[1])
    return x * total


def _fill(x):
    a = np.empty(x.shape[0]); a.fill(x.shape[1]); return a
def _setitem_all(x):
    a = np.zeros(x.shape[0]); a[:] = x.shape[1]; return a
def _setitem_one(x):
    a = np.zeros(x.shape[0]); a[0] = x.shape[0]; return a
def _setitem_last(x):
    a = np.zeros((x.shape[0], x.shape[1])); a[x.shape[0] - 1] = 1; return a
def _input_write(x):
    x[:, 0] = x.shape[1]; return x * 1
def _iadd(x):
    x += x.shape[0]; return x
def _out_add(x):
    np.add(x, x.shape[0], out=x); return x
def _put(x):
    a = np.zeros(x.shape[0]); np.put(a, [0], x.shape[1]); return a


# (id, model, expectation[, error type for REFUSED])
CASES = [
    # -- leftovers of earlier rounds ------------------------------------------------------------
    ("json_dumps_size", lambda x: x * len(json.dumps({"n": x.shape[0]})), GUARDED),
    ("json_dumps_shape", lambda x: x * len(json.dumps(list(x.shape))), GUARDED),
    ("json_size_key", lambda x: x * len(json.dumps({x.shape[0]: 1})), GUARDED),
    ("decimal_of_size", lambda x: x * float(decimal.Decimal(x.shape[0]) / 3), GUARDED),
    ("pickle_round_trip", lambda x: x * pickle.loads(pickle.dumps(x.shape[0])), GUARDED),
    ("pickle_bytes_length", lambda x: x * len(pickle.dumps(x.shape[0])), GUARDED),
    ("pickle_shape_bytes", lambda x: x * len(pickle.dumps(x.shape)), GUARDED),
    ("array_of_sqrt_and_int", lambda x: np.array([np.sqrt(x.shape[0]), 1]) * x[:2, :1], EXACT),
    ("array_of_sqrt_and_float", lambda x: x * np.array([1.5, np.sqrt(x.shape[1])]).sum(), EXACT),
    ("array_of_half_size", lambda x: np.array([x.shape[0] / 2, 1]) + x[:1, :1], EXACT),
    ("array_of_float32_size", lambda x: np.array([np.float32(x.shape[0]), 2]) + x[:1, :1], EXACT),
    ("int8_times_size_wraps", lambda x: np.int8(2) * x.shape[0] * 10 + np.zeros(1), EXACT),
    ("int8_size_plus_array", lambda x: x.astype(np.int8) + np.int8(30) * x.shape[1], EXACT),
    ("to_bytes", lambda x: x * x.shape[0].to_bytes(2, "little")[0], GUARDED),
    ("json_from_import", lambda x: x * len(json_dumps([x.shape[1]])), GUARDED),
    ("decimal_from_import", lambda x: x * float(Decimal(x.shape[1]).sqrt()), GUARDED),
    ("decimal_isinstance", lambda x: x * isinstance(Decimal(x.shape[1]), Decimal), GUARDED),
    ("json_local_import", _local_json, GUARDED),
    ("statistics_local_from_import", _local_from_import, GUARDED),
    ("decimal_operand", lambda x: x * float(Decimal(2) * x.shape[0]), GUARDED),
    ("complex_operand", lambda x: x * (x.shape[0] * 1j).imag, GUARDED),
    # raw errors of code that needs a plain int, where eager runs: a clear error naming the line
    ("type_is_int_assert", _type_assert, REFUSED, AssertionError),
    ("deque_maxlen", _deque_maxlen, REFUSED, TypeError),
    # -- math ---------------------------------------------------------------------------------
    ("math_floor_div_float", lambda x: np.zeros(math.floor(x.shape[0] / 4) + 1), EXACT),
    ("math_ceil_times_half", lambda x: np.zeros(math.ceil(x.shape[0] * 0.5)), EXACT),
    ("math_trunc", lambda x: np.zeros(math.trunc(x.shape[0] / 3) + 1), EXACT),
    ("math_log2", lambda x: x * math.log2(x.shape[0]), GUARDED),
    ("math_exp_neg", lambda x: x * math.exp(-x.shape[1]), GUARDED),
    ("math_lcm", lambda x: x * math.lcm(x.shape[1], 3), GUARDED),
    ("math_isclose", lambda x: x * (2 if math.isclose(x.shape[0], 6) else 3), GUARDED),
    ("math_fsum", lambda x: x * math.fsum(x.shape), GUARDED),
    ("math_copysign", lambda x: x * math.copysign(x.shape[0], -1), GUARDED),
    ("math_pi_times_size", lambda x: x * (math.pi * x.shape[0]), EXACT),
    ("math_inf_min", lambda x: x * min(math.inf, x.shape[0]), EXACT),
    # -- builtins -------------------------------------------------------------------------------
    ("round_half_size", lambda x: np.zeros(round(x.shape[0] / 2) + 1), EXACT),
    ("round_float_digits", lambda x: x * round(x.shape[0] / 7, 2), GUARDED),
    ("abs_negated", lambda x: np.zeros(abs(-x.shape[1])), EXACT),
    ("min_int_float", lambda x: x * min(x.shape[0], 2.5), GUARDED),
    ("max_three", lambda x: np.zeros(max(x.shape[0], x.shape[1], 5)), EXACT),
    ("min_of_generator", lambda x: np.zeros(min(d for d in x.shape)), EXACT),
    ("max_key_len", lambda x: np.zeros(max([x.shape[0], 3], key=lambda v: -v)), GUARDED),
    ("sum_with_start", lambda x: np.zeros(sum(x.shape, 1)), EXACT),
    ("sum_of_squares", lambda x: x * sum(d * d for d in x.shape), EXACT),
    ("divmod_unpacked", lambda x: np.zeros(divmod(x.shape[0], 4)[0] + 1) + divmod(x.shape[0], 4)[1], EXACT),
    ("pow_three_args", lambda x: np.zeros(pow(x.shape[0], 3, 5) + 1), EXACT),
    ("int_of_float_size", lambda x: np.zeros(int(x.shape[0] / 2) + 1), GUARDED),
    ("float_then_floor", lambda x: np.zeros(math.floor(float(x.shape[0]) / 3) + 1), EXACT),
    ("bool_of_difference", lambda x: x * (2 if x.shape[0] - 6 else 3), GUARDED),
    ("complex_of_size", lambda x: x * complex(x.shape[0]).real, GUARDED),
    ("not_size", lambda x: x * (not x.shape[0]), EXACT),
    ("bit_or", lambda x: x * (x.shape[0] | 1), GUARDED),
    ("bit_and_mask", lambda x: np.zeros(x.shape[0] & 3), EXACT),
    ("bit_xor", lambda x: x * (x.shape[0] ^ 2), GUARDED),
    ("shift_left", lambda x: np.zeros(x.shape[1] << 1), EXACT),
    ("shift_right", lambda x: np.zeros((x.shape[0] >> 1) + 1), EXACT),
    ("invert_size", lambda x: np.zeros(~x.shape[0] + 100), EXACT),
    ("chained_comparison_guard", lambda x: x * (2 if 2 < x.shape[0] <= 8 else 3), GUARDED),
    ("comparison_as_float", lambda x: x * float(x.shape[0] > 3), EXACT),
    ("comparison_sum", lambda x: x * sum(d > 3 for d in x.shape), EXACT),
    ("list_times_size", lambda x: x * len([0] * x.shape[1]), GUARDED),
    ("str_times_size", lambda x: x * len("ab" * x.shape[1]), GUARDED),
    ("tuple_times_size", lambda x: np.zeros((2,) * (x.shape[1] % 3 + 1)), GUARDED),
    ("range_len", lambda x: x * len(range(x.shape[0])), GUARDED),
    ("range_step_slice", lambda x: x[list(range(0, x.shape[0], 2))], GUARDED),
    ("range_last", lambda x: x * range(x.shape[0])[-1], GUARDED),
    ("size_in_range", lambda x: x * (x.shape[0] in range(100)), GUARDED),
    ("hash_in_dict_get", lambda x: x * {6: 2.0}.get(x.shape[0], 1.0), GUARDED),
    ("size_as_list_index", lambda x: x * [1.0, 2.0, 3.0, 4.0, 5.0][x.shape[1] % 5], GUARDED),
    ("size_slice_of_list", lambda x: x * len([1, 2, 3, 4, 5, 6, 7, 8][: x.shape[1]]), GUARDED),
    # -- text -------------------------------------------------------------------------------------
    ("fstring_in_name", lambda x: x * len(f"layer_{x.shape[0]}_{x.shape[1]}"), GUARDED),
    ("format_method", lambda x: x * len("{}x{}".format(*x.shape)), GUARDED),
    ("percent_tuple", lambda x: x * len("%dx%d" % x.shape), GUARDED),
    ("str_zfill_by_size", lambda x: x * len("7".zfill(x.shape[1])), GUARDED),
    ("warn_not_taken", _warn_on_size, EXACT),
    # -- stdlib ----------------------------------------------------------------------------------------
    ("reduce_mul_shape", _reduce_mul, EXACT),
    ("heapq_smallest", _heap_smallest, GUARDED),
    ("bisect_bucket", _bisect_bucket, GUARDED),
    ("itertools_accumulate", _cumulative_offsets, EXACT),
    ("itertools_repeat_count", lambda x: x * len(list(itertools.repeat(1, x.shape[1]))), GUARDED),
    ("itertools_islice", lambda x: x * sum(itertools.islice(itertools.count(), x.shape[1])), GUARDED),
    ("struct_pack_shape", lambda x: x * struct.unpack("2i", struct.pack("2i", *x.shape))[0], GUARDED),
    ("array_module", lambda x: x * array.array("i", x.shape)[0], GUARDED),
    ("statistics_mean", _statistics_mean, GUARDED),
    ("fraction_limit", lambda x: x * float(fractions.Fraction(x.shape[0], 3)), GUARDED),
    ("timedelta_of_size", lambda x: x * datetime.timedelta(seconds=x.shape[0]).total_seconds(), GUARDED),
    ("namedtuple_of_sizes", lambda x: np.zeros(collections.namedtuple("S", "a b")(*x.shape).b), EXACT),
    ("sys_getsizeof", lambda x: x + 0 * sys.getsizeof(x.shape[0]), EXACT),
    ("operator_mod_sub", lambda x: np.zeros(operator.sub(x.shape[0], operator.mod(x.shape[0], 4)) + 1), EXACT),
    ("operator_truediv_floor", lambda x: np.zeros(math.floor(operator.truediv(x.shape[0], 2))), EXACT),
    ("operator_itemgetter", lambda x: np.zeros(operator.itemgetter(1)(x.shape)), EXACT),
    ("while_halving", _while_halving, GUARDED),
    ("loop_accumulate", _loop_accumulate, GUARDED),
    ("enumerate_range", _enumerate_rows, GUARDED),
    # -- numpy scalars -------------------------------------------------------------------------------
    ("np_int64_floordiv", lambda x: np.zeros(np.int64(x.shape[0]) // 2), EXACT),
    ("np_int32_times_float", lambda x: x * (np.int32(x.shape[0]) * 0.5), EXACT),
    ("np_float32_div_size", lambda x: x * (np.float32(1.0) / x.shape[0]), EXACT),
    ("np_float64_size", lambda x: x + np.float64(x.shape[1]), EXACT),
    ("np_uint8_size", lambda x: x.astype(np.uint8) + np.uint8(x.shape[1]), EXACT),
    ("np_sqrt_times_array", lambda x: x / np.sqrt(x.shape[1]), EXACT),
    ("np_ceil_half", lambda x: x * np.ceil(x.shape[0] / 2), EXACT),
    ("np_floor_half_as_size", lambda x: np.zeros(int(np.floor(x.shape[0] / 2))), GUARDED),
    ("np_log2_size", lambda x: x * np.log2(x.shape[0]), EXACT),
    ("np_log2_ceil_int", _log2_ceil, GUARDED),
    ("np_exp_size", lambda x: x * np.exp(-x.shape[1] / 8), EXACT),
    ("np_arange_size", lambda x: x * np.arange(x.shape[1]), EXACT),
    ("np_arange_float_stop", lambda x: np.arange(x.shape[0] / 2), EXACT),
    ("np_linspace_size", lambda x: x * np.linspace(0, 1, x.shape[1]), EXACT),
    ("np_linspace_stop_size", lambda x: np.linspace(0, x.shape[0], 5), EXACT),
    ("np_prod_shape_scalar", lambda x: x * np.prod(x.shape), EXACT),
    ("np_prod_dtype_float", lambda x: x * np.prod(x.shape, dtype=np.float64), EXACT),
    ("np_sum_shape", lambda x: x * np.sum(x.shape), EXACT),
    ("np_max_shape", lambda x: np.zeros(np.max(x.shape)), EXACT),
    ("np_mean_shape", lambda x: x * np.mean(x.shape), EXACT),
    ("np_cumprod_shape", lambda x: x * np.cumprod(x.shape)[-1], EXACT),
    ("np_array_shape_dtype", lambda x: np.array(x.shape, dtype=np.float32) * 2, EXACT),
    ("np_full_float_of_size", lambda x: np.full(x.shape, float(x.shape[0])), EXACT),
    ("np_int64_as_dtype_conv", lambda x: x.astype(np.float64) * np.int64(x.shape[0]).astype(np.float32), EXACT),
    ("np_isclose_sizes", lambda x: x * np.isclose(x.shape[0], 6), EXACT),
    ("np_power_of_size", lambda x: x * np.power(2.0, x.shape[1]), EXACT),
    ("np_float32_sqrt_size", lambda x: x * np.sqrt(np.float32(x.shape[0])), EXACT),
    ("np_int_size_division", lambda x: x * (np.int64(x.shape[0]) / np.int64(x.shape[1])), EXACT),
    # -- shape tuples ------------------------------------------------------------------------------------
    ("shape_tail", lambda x: np.zeros(x.shape[1:]), EXACT),
    ("shape_reversed", lambda x: np.zeros(tuple(reversed(x.shape))), EXACT),
    ("shape_equal_other", lambda x: x * (2 if x.shape == x.T.T.shape else 3), EXACT),
    ("shape_not_equal", lambda x: x * (2 if x.shape != (6, 4) else 3), GUARDED),
    ("shape_unpack", _unpack_shape, EXACT),
    ("shape_star_unpack", _star_unpack, EXACT),
    ("shape_concat", _tuple_concat, EXACT),
    ("shape_list", _list_of_sizes, EXACT),
    ("shape_dict_values", _shape_dict, EXACT),
    ("ndim_arith", lambda x: x * x.ndim + len(x.shape), EXACT),
    ("size_attr_div", lambda x: x / x.size, EXACT),
    ("shape_index_neg", lambda x: np.zeros(x.shape[-1]), EXACT),
    ("shape_max_len", lambda x: x * max(len(x), x.shape[1]), EXACT),
    ("pad_to_multiple", _pad_to_multiple, EXACT),
    ("heads_split", _heads, GUARDED),
    ("tuple_compare_less", lambda x: x * (2 if x.shape < (7, 0) else 3), GUARDED),
    # -- model idioms: scales, masks, typed scalars, shapes as data, outputs ---------------------------
    ("attn_scale_math", lambda x: x * (1 / math.sqrt(x.shape[-1])), EXACT),
    ("attn_scale_f32", lambda x: x / np.float32(np.sqrt(x.shape[-1])), EXACT),
    ("attn_scale_sqrt_f32", lambda x: x / np.sqrt(np.float32(x.shape[-1])), EXACT),
    ("posenc", lambda x: np.arange(x.shape[0])[:, None] / 10000 ** (np.arange(0, x.shape[1], 2) / x.shape[1]), EXACT),
    ("causal", lambda x: np.triu(np.ones((x.shape[0], x.shape[0])), k=1), EXACT),
    ("unbiased", lambda x: x.var(axis=0) * x.shape[0] / (x.shape[0] - 1), EXACT),
    ("f32_recip", lambda x: x * np.float32(1.0 / x.shape[0]), EXACT),
    ("sum_over_size", lambda x: x.sum() / x.size, EXACT),
    ("int_np_prod", lambda x: x.reshape(x.shape[0], int(np.prod(x.shape[1:]))), GUARDED),
    ("nested_list_sizes", lambda x: np.array([[x.shape[0], 0], [0, x.shape[1]]]) * 1.0, EXACT),
    ("array_div_sizes", lambda x: x * np.array(x.shape[0] / x.shape[1]), EXACT),
    ("asarray_list_f32", lambda x: x[:1] * np.asarray([x.shape[0]], dtype=np.float32), EXACT),
    ("float16_size", lambda x: x.astype(np.float16) * np.float16(x.shape[0]), EXACT),
    ("np_clip_size", lambda x: x * np.clip(x.shape[0], 1, 4), EXACT),
    ("np_round_third", lambda x: x * np.round(x.shape[0] / 3), EXACT),
    ("np_multiply_half", lambda x: x * np.multiply(x.shape[0], 0.5), EXACT),
    ("f32_div_f32", lambda x: x * (np.float32(x.shape[0]) / np.float32(x.shape[1])), EXACT),
    ("np_hypot", lambda x: x * np.hypot(x.shape[0], x.shape[1]), EXACT),
    ("array_prod_method", lambda x: x * np.array(x.shape).prod(), EXACT),
    ("linspace_f32", lambda x: np.linspace(0, 1, x.shape[0], dtype=np.float32), EXACT),
    ("arange_f32", lambda x: np.arange(x.shape[0], dtype=np.float32) / x.shape[0], EXACT),
    ("arange_over_n", lambda x: np.arange(1, x.shape[0] + 1) / x.shape[0], EXACT),
    ("logspace", lambda x: np.logspace(0, 1, x.shape[1]), EXACT),
    ("ones_over_n", lambda x: np.ones(x.shape[0]) / x.shape[0], EXACT),
    ("zeros_like_plus", lambda x: np.zeros_like(x) + x.shape[0], EXACT),
    ("empty_rows", lambda x: np.empty((0, x.shape[1])), EXACT),
    ("ceil_div_neg", lambda x: np.zeros(-(-x.shape[0] // 4)), EXACT),
    ("round_up4", lambda x: np.zeros((x.shape[0] + 3) // 4 * 4), EXACT),
    ("max1_div8", lambda x: np.zeros(max(1, x.shape[0] // 8)), EXACT),
    ("size_div_size", lambda x: np.zeros(x.shape[0] // x.shape[1] + 1), EXACT),
    ("size_mod_size", lambda x: np.zeros(x.shape[0] % x.shape[1] + 1), EXACT),
    ("shape_index", lambda x: x * x.shape.index(4), GUARDED),
    ("shape_count", lambda x: x * x.shape.count(4), GUARDED),
    ("in_shape", lambda x: x * (4 in x.shape), GUARDED),
    ("dict_zip", lambda x: np.zeros(dict(zip("nm", x.shape))["n"]), EXACT),
    ("sorted_rev", lambda x: np.zeros(sorted(x.shape, reverse=True)), GUARDED),
    ("map_lambda", lambda x: np.zeros(tuple(map(lambda d: d * 2, x.shape))), EXACT),
    ("argsort_shape", lambda x: x * np.argsort(x.shape)[0], EXACT),
    ("array_shape_half", lambda x: np.array(x.shape) // 2 + x[:2, 0], GUARDED),
    ("zeros_of_array_shape", lambda x: np.zeros(np.array(x.shape) // 2), EXACT),
    ("tuple_of_array", lambda x: np.zeros(tuple(np.array(x.shape) // 2)), EXACT),
    ("assert_even", lambda x: (x.shape[0] % 2 == 0 or None) and x, GUARDED),
    ("and_chain", lambda x: x * (x.shape[0] > 0 and x.shape[1] > 0), EXACT),
    ("ternary_cap", lambda x: np.zeros(x.shape[0] if x.shape[0] < 10 else 10), GUARDED),
    ("str_shape", lambda x: x * len(str(x.shape)), GUARDED),
    ("fmt_width", lambda x: x * len(f"{x.shape[0]:>5}"), GUARDED),
    ("percent_s_tuple", lambda x: x * len("%s" % (x.shape,)), GUARDED),
    ("size_times_ones", lambda x: x.shape[0] * np.ones(3), EXACT),
    ("zeros_plus_int8", lambda x: np.zeros(x.shape[0]) + np.int8(1), EXACT),
    ("int16_overflow", lambda x: np.zeros(1) + np.int16(x.shape[0]) * np.int16(1000), EXACT),
    ("uint8_minus", lambda x: np.zeros(1) + (np.uint8(x.shape[0]) - 10), EXACT),
    ("uint8_minus_uint8", lambda x: np.zeros(1) + (np.uint8(x.shape[0]) - np.uint8(10)), EXACT),
    ("int32_shift", lambda x: np.zeros(1) + (np.int32(x.shape[0]) << 29), EXACT),
    ("neg_uint8", lambda x: np.zeros(1) + (-np.uint8(x.shape[0])), EXACT),
    ("f32_to_f16", lambda x: x * np.float32(x.shape[0]).astype(np.float16), EXACT),
    ("int64_item", lambda x: x * np.int64(x.shape[0]).item(), EXACT),
    ("f64_is_integer", lambda x: x * np.float64(x.shape[0]).is_integer(), EXACT),
    ("float_of_f32", lambda x: x * float(np.float32(x.shape[0])), EXACT),
    ("int_of_int32", lambda x: x * int(np.int32(x.shape[0])), GUARDED),
    ("asarray_astype", lambda x: x * np.asarray(x.shape[0]).astype(np.float32), EXACT),
    ("array_item", lambda x: np.zeros(np.array(x.shape[0]).item()), EXACT),
    ("array_tolist", lambda x: np.zeros(np.array(x.shape).tolist()), GUARDED),
    ("array_index_size", lambda x: np.zeros(np.array(x.shape)[0]), EXACT),
    ("float_pow_neg", lambda x: x * x.shape[0] ** -0.5, EXACT),
    ("int_pow_neg", lambda x: x * x.shape[0] ** -1, EXACT),
    ("true_div_int", lambda x: x * (x.shape[0] / x.shape[1]), EXACT),
    ("rtruediv", lambda x: x * (1 / x.shape[0]), EXACT),
    ("floordiv_float", lambda x: x * (x.shape[0] // 2.5), EXACT),
    ("mod_float", lambda x: x * (x.shape[0] % 2.5), EXACT),
    ("float_of_bool_cmp", lambda x: x * (x.shape[0] >= x.shape[1]), EXACT),
    ("np_where_size_scalar", lambda x: x * np.where(x.shape[0] > 3, 1.0, 2.0), GUARDED),
    ("np_maximum_f", lambda x: x * np.maximum(x.shape[0], 2.5), EXACT),
    ("np_sign_diff", lambda x: x * np.sign(x.shape[0] - 6), EXACT),
    ("np_mod_sizes", lambda x: x * np.mod(x.shape[0], 4), EXACT),
    ("np_gcd", lambda x: x * np.gcd(x.shape[0], 4), EXACT),
    ("np_float_power", lambda x: x * np.float_power(x.shape[0], 0.5), EXACT),
    ("np_cbrt", lambda x: x * np.cbrt(x.shape[0]), EXACT),
    ("np_log1p", lambda x: x * np.log1p(x.shape[0]), EXACT),
    ("np_floor_as_slice", lambda x: x[: int(np.floor(x.shape[0] / 2))], GUARDED),
    ("np_zeros_sqrt", lambda x: np.zeros(int(np.sqrt(x.shape[0]))), GUARDED),
    ("np_iinfo", lambda x: x * (np.iinfo(np.int8).max > x.shape[0]), EXACT),
    ("divmod_float", lambda x: x * divmod(x.shape[0], 2.0)[0], EXACT),
    ("complex_mul", lambda x: x * (x.shape[0] * 1j).imag, GUARDED),
    ("f16_chain", lambda x: x.astype(np.float16) + np.float16(x.shape[0]) / np.float16(3) * np.float16(7), EXACT),
    ("f32_tenth", lambda x: x * (np.float32(x.shape[0]) * np.float32(0.1)), EXACT),
    ("f32_div_3", lambda x: x * (np.float32(x.shape[0]) / 3), EXACT),
    ("f32_chain_add", lambda x: x * (np.float32(x.shape[0]) * np.float32(0.3) + np.float32(0.7)), EXACT),
    ("x_gt_n", lambda x: x * (x > x.shape[0] / 8), EXACT),
    ("array_int8_of_size", lambda x: x.astype(np.int8) + np.array(x.shape[0], dtype=np.int8), EXACT),
    ("int8_array_times_size", lambda x: x.astype(np.int8) * x.shape[0], EXACT),
    ("full_uint8", lambda x: np.full(x.shape[0], x.shape[1], dtype=np.uint8), EXACT),
    ("return_shape", lambda x: (x, x.shape), EXACT),
    ("return_dict_size", lambda x: (x, {"n": x.shape[0]}), EXACT),
    ("return_float", lambda x: (x, x.shape[0] / 2), EXACT),
    ("return_bool", lambda x: (x, x.shape[0] > 3), EXACT),
    ("return_int32", lambda x: (x, np.int32(x.shape[0])), EXACT),
    ("return_f32", lambda x: (x, np.float32(x.shape[0]) / 2), EXACT),
    ("return_uint8_wrap", lambda x: (x, np.uint8(x.shape[0]) * np.uint8(50)), EXACT),
    ("reshape_half_last", lambda x: x.reshape(-1, x.shape[-1] // 2, 2) if x.shape[-1] % 2 == 0 else x, GUARDED),
    ("split_thirds", lambda x: np.split(x, [x.shape[0] // 3, 2 * x.shape[0] // 3])[1], EXACT),
    ("uint8_square", lambda x: np.zeros(1) + np.uint8(x.shape[0]) * np.uint8(x.shape[0]), EXACT),
    ("uint32_diff", lambda x: np.zeros(1) + (np.uint32(x.shape[1]) - np.uint32(x.shape[0])), EXACT),
    ("uint64_minus", lambda x: np.zeros(1) + (np.uint64(x.shape[0]) - np.uint64(10)), EXACT),
    ("int8_floordiv", lambda x: np.zeros(1) + np.int8(x.shape[0]) // np.int8(4), EXACT),
    ("bool_scalar", lambda x: x * np.bool_(x.shape[0] > 3), GUARDED),
    ("shape_reverse_slice", lambda x: np.zeros(x.shape[::-1]), EXACT),
    ("shape_last_two", lambda x: np.zeros(x.shape[-2:]), EXACT),
    ("T_shape", lambda x: np.zeros(x.T.shape), EXACT),
    ("none_shape", lambda x: np.zeros(x[None].shape[1]), EXACT),
    ("np_shape", lambda x: np.zeros(np.shape(x)[0]), EXACT),
    ("np_size", lambda x: x / np.size(x), EXACT),
    ("np_ndim", lambda x: x * np.ndim(x), EXACT),
    ("size_over_rows", lambda x: np.zeros(x.size // x.shape[0]), EXACT),
    ("len_row", lambda x: np.zeros(len(x[0])), EXACT),
    ("broadcast_shapes", lambda x: np.zeros(np.broadcast_shapes(x.shape, (1, x.shape[1]))), EXACT),
    ("empty_shape_eq", lambda x: x * (np.empty(x.shape).shape == x.shape), EXACT),
    ("reshape_star", lambda x: x.reshape(*x.shape[:-1], -1), EXACT),
    ("shape_plus_one", lambda x: x.reshape(x.shape + (1,)), EXACT),
    ("list_shape", lambda x: np.zeros(list(x.shape)), EXACT),
    ("strides", lambda x: x * (x.strides[0] // x.itemsize), REFUSED, UnsupportedOpError),
    ("nbytes_calc", lambda x: np.zeros(x.itemsize * x.size // 4), EXACT),
    ("iinfo_div", lambda x: x * (np.iinfo(np.int32).max // x.shape[0]), EXACT),
    ("finfo_eps", lambda x: x * (np.finfo(np.float32).eps * x.shape[0]), EXACT),
    ("dtype_itemsize", lambda x: np.zeros(np.dtype(np.float32).itemsize * x.shape[0]), EXACT),
    ("f32_eq_size", lambda x: x * (np.float32(x.shape[0]) == x.shape[0]), EXACT),
    ("array_shape_eq", lambda x: x * (np.array(x.shape) == np.array([6, 4])).all(), EXACT),
    ("array_equal_shape", lambda x: x * np.array_equal(x.shape, (6, 4)), GUARDED),
    ("allclose_size", lambda x: x * np.allclose(x.shape[0], 6), GUARDED),
    ("isfinite_size", lambda x: x * np.isfinite(x.shape[0]), EXACT),
    ("divide_one", lambda x: x * np.divide(1, x.shape[0]), EXACT),
    ("true_divide_sizes", lambda x: x * np.true_divide(x.shape[0], x.shape[1]), EXACT),
    ("square_size", lambda x: np.zeros(np.square(x.shape[1])), EXACT),
    ("reciprocal_f64", lambda x: x * np.reciprocal(np.float64(x.shape[0])), EXACT),
    ("asarray_shape_sum", lambda x: x * np.asarray(x.shape).sum(), EXACT),
    ("ones_sum", lambda x: x * np.ones(x.shape, dtype=np.int64).sum(), EXACT),
    ("pad_third", lambda x: np.pad(x, x.shape[0] // 3), EXACT),
    ("repeat_half", lambda x: x.repeat(x.shape[0] // 2 + 1, axis=0), EXACT),
    ("tile_rows", lambda x: np.tile(x, (x.shape[0] // 3 + 1, 1)), EXACT),
    ("index_corner", lambda x: x[x.shape[0] - 1, x.shape[1] - 1], EXACT),
    ("fancy_list_index", lambda x: x[[0, x.shape[0] - 1]], EXACT),
    ("fancy_array_index", lambda x: x[np.array([0, x.shape[0] - 1])], EXACT),
    ("slice_object", lambda x: x[slice(0, x.shape[0], 2)], EXACT),
    ("ellipsis_min", lambda x: x[..., :min(x.shape[1], 3)], EXACT),
    ("take_range", lambda x: np.take(x, range(x.shape[0] // 2), axis=0), GUARDED),
    ("argmax_shape", lambda x: x * np.argmax(x.shape), EXACT),
    ("searchsorted", lambda x: x * np.searchsorted([2, 5, 9], x.shape[0]), EXACT),
    ("digitize", lambda x: x * np.digitize(x.shape[0], [2, 5, 9]), EXACT),
    ("interp", lambda x: x * np.interp(x.shape[0], [0, 10], [0, 1]), EXACT),
    ("polyval", lambda x: x * np.polyval([1, 2], x.shape[0]), EXACT),
    ("binary_repr", lambda x: x * len(np.binary_repr(x.shape[0])), GUARDED),
    ("base_repr", lambda x: x * len(np.base_repr(x.shape[0], 3)), GUARDED),
    ("format_float", lambda x: x * len(np.format_float_positional(x.shape[0] / 3)), GUARDED),
    ("md5_of_size", lambda x: x * (hashlib.md5(str(x.shape[0]).encode()).digest()[0] % 3), GUARDED),
    ("class_name", lambda x: x * len(x.shape[0].__class__.__name__), EXACT),
    ("isinstance_shape_tuple", lambda x: x * isinstance(x.shape, tuple), EXACT),
    ("callable_size", lambda x: x * (not callable(x.shape[0])), EXACT),
    ("np_int64_in_set", lambda x: x * (np.int64(x.shape[0]) in {6, 8}), GUARDED),
    ("clip_none", lambda x: x * np.clip(x.shape[0], 1, None), EXACT),
    ("divmod_sizes", lambda x: np.zeros(divmod(x.shape[0], x.shape[1])[1] + 1), EXACT),
    ("pow_mod_sizes", lambda x: np.zeros(x.shape[0] ** 2 % x.shape[1] + 1), EXACT),
    ("pow_inverse", lambda x: x * pow(x.shape[0], -1, 7), GUARDED),
    ("ldexp", lambda x: x * math.ldexp(1.0, x.shape[1]), GUARDED),
    ("fmod", lambda x: x * math.fmod(x.shape[0], 4), GUARDED),
    ("modf", lambda x: x * math.modf(x.shape[0] / 4)[0], GUARDED),
    ("enumerate_start", lambda x: x * sum(i * d for i, d in enumerate(x.shape, start=1)), EXACT),
    ("partial_zeros", lambda x: functools.partial(np.zeros, x.shape[0])(), EXACT),
    ("max_key_shape", lambda x: np.zeros(max(x.shape, key=lambda d: d)), GUARDED),
    ("np_full_nan", lambda x: np.full((x.shape[0],), np.nan), EXACT),
    ("int_half_float", lambda x: np.zeros(int(x.shape[0] * 0.5)), GUARDED),
    ("zeros_n_m_index", lambda x: np.zeros((x.shape[0], x.shape[1]))[x.shape[0] - 1, x.shape[1] - 1], EXACT),
    ("np_int32_floordiv_size", lambda x: np.zeros(x.shape[0] // np.int32(2)), EXACT),
    ("sqrt_int_cast", lambda x: x * np.sqrt(x.shape[0]).astype(np.float32), EXACT),
    ("float32_of_sqrt", lambda x: x / np.float32(np.sqrt(x.shape[1])), EXACT),
    ("ceil_log2_pow", lambda x: np.zeros(2 ** math.ceil(math.log2(x.shape[0]))), GUARDED),
    ("mean_over_size_float", lambda x: x.sum(axis=0) / float(x.shape[0]), EXACT),
    ("scale_float32_array", lambda x: x * np.asarray(1.0 / x.shape[1], dtype=np.float32), EXACT),
    # -- more: descriptors, numpy builders of sizes, typed wraparound and rounding, text ---------------
    ("int_add_descriptor", lambda x: x * int.__add__(x.shape[0], 1), REFUSED, TypeError),
    ("sum_float_start", lambda x: x * sum([x.shape[0], x.shape[1]], start=0.5), EXACT),
    ("floor_astype_size", lambda x: np.zeros(np.floor(x.shape[0] / 2).astype(int)), EXACT),
    ("int64_of_floor", lambda x: np.zeros(np.int64(np.floor(x.shape[0] / 2))), EXACT),
    ("slice_int64_half", lambda x: x[: np.int64(x.shape[0]) // 2], EXACT),
    ("len_arange", lambda x: np.zeros(len(np.arange(x.shape[0]))), EXACT),
    ("len_zeros", lambda x: np.zeros(len(np.zeros((x.shape[1], 2)))), EXACT),
    ("ndim_conditional", lambda x: np.zeros(x.shape[0] if x.ndim > 1 else 1), EXACT),
    ("getattr_shape", lambda x: np.zeros(getattr(x, "shape")[1]), EXACT),
    ("dunder_len", lambda x: x * x.__len__(), GUARDED),
    ("atleast_2d_size", lambda x: x * np.atleast_2d(x.shape[0]), EXACT),
    ("array_list_mul", lambda x: x[:1, :1] * np.array([x.shape[0]] * 3), EXACT),
    ("repeat_list", lambda x: np.repeat([1, 2], x.shape[0]), GUARDED),
    ("concat_size_list", lambda x: np.concatenate([np.arange(x.shape[0]), [x.shape[1]]]), EXACT),
    ("append_size", lambda x: np.append(np.arange(x.shape[0]), x.shape[1]), EXACT),
    ("hstack_full", lambda x: np.hstack([x, np.full((x.shape[0], 1), x.shape[1])]), EXACT),
    ("array_shape_reversed", lambda x: np.array(x.shape)[::-1] * 1.0, EXACT),
    ("ravel_multi", lambda x: x * np.ravel_multi_index((x.shape[0] - 1, x.shape[1] - 1), x.shape), EXACT),
    ("unravel", lambda x: x * np.unravel_index(x.shape[0], x.shape)[0], GUARDED),
    ("eye_cols", lambda x: np.eye(x.shape[0])[:, : x.shape[1]], EXACT),
    ("diag_arange", lambda x: np.diag(np.arange(x.shape[0])), EXACT),
    ("outer_aranges", lambda x: np.outer(np.arange(x.shape[0]), np.arange(x.shape[1])), EXACT),
    ("meshgrid", lambda x: np.meshgrid(np.arange(x.shape[0]), np.arange(x.shape[1]))[0], EXACT),
    ("indices", lambda x: np.indices((x.shape[0], x.shape[1]))[0], EXACT),
    ("tri", lambda x: np.tri(x.shape[0]), EXACT),
    ("cumsum_last", lambda x: x * np.cumsum(np.ones(x.shape[0]))[-1], EXACT),
    ("dtype_check", lambda x: x * (np.zeros((x.shape[0], 2), dtype=int).dtype == np.int64), EXACT),
    ("return_dict_int64", lambda x: (x, {"n": np.int64(x.shape[0])}), EXACT),
    ("float_prod", lambda x: x * float(np.prod(x.shape)), EXACT),
    ("prod_sqrt", lambda x: x * np.prod(x.shape) ** 0.5, EXACT),
    ("math_sqrt_prod", lambda x: x * math.sqrt(np.prod(x.shape)), EXACT),
    ("and_sizes", lambda x: np.zeros(x.shape[0] and x.shape[1]), EXACT),
    ("or_size", lambda x: np.zeros(x.shape[0] or 1), EXACT),
    ("self_eq", lambda x: x * (x.shape[0] == x.shape[0]), EXACT),
    ("fold_zero", lambda x: np.zeros(x.shape[0] - x.shape[0] + 1), EXACT),
    ("np_sign_size", lambda x: x * np.sign(x.shape[0]), EXACT),
    ("abs_int8", lambda x: np.zeros(1) + abs(np.int8(x.shape[0]) - 100), EXACT),
    ("invert_uint8", lambda x: np.zeros(1) + ~np.uint8(x.shape[0]), EXACT),
    ("int8_shift_left", lambda x: np.zeros(1) + (np.int8(x.shape[0]) << 4), EXACT),
    ("uint8_and_mask", lambda x: np.zeros(1) + (np.uint8(x.shape[0]) & 0xF0), GUARDED),
    ("neg_floordiv", lambda x: np.zeros(-(-x.shape[0] // 2)), EXACT),
    ("size_div_int8", lambda x: x * (x.shape[0] / np.int8(2)), EXACT),
    ("f32_square", lambda x: x * np.float32(x.shape[0]) ** 2, EXACT),
    ("f16_cube", lambda x: x.astype(np.float16) * (np.float16(x.shape[0]) * np.float16(x.shape[0]) * np.float16(x.shape[0])), EXACT),
    ("f16_sum_big", lambda x: x.astype(np.float16) + (np.float16(x.shape[0]) * np.float16(100) + np.float16(1)), EXACT),
    ("float_of_f32_promote", lambda x: x.astype(np.float16) * float(np.float32(x.shape[0]) / 3), GUARDED),
    ("float_of_f32_int", lambda x: x.astype(np.float16) * float(np.float32(x.shape[0])), EXACT),
    ("f32_cmp_third", lambda x: x * (np.float32(x.shape[0]) / 3 > 2), EXACT),
    ("range_of_int64", lambda x: x * len(range(np.int64(x.shape[0]))), GUARDED),
    ("bytes_of_size", lambda x: x * len(bytes(x.shape[1])), GUARDED),
    ("percent_float", lambda x: x * len("%.3f" % (x.shape[0] / 3)), GUARDED),
    ("np_where_cond_size", lambda x: np.where(x.shape[0] > 3, x, -x), GUARDED),
    ("zeros_int8_dtype", lambda x: np.zeros(x.shape[0], dtype=np.int8) + x.shape[1], EXACT),
    ("arange_int8_plus", lambda x: np.arange(x.shape[0], dtype=np.int8) * x.shape[1], EXACT),
    ("full_int8_size", lambda x: np.full(x.shape[0], x.shape[1] * 20, dtype=np.int8), GUARDED),
    # -- model code around sizes: asserts, logging, objects, closures, numpy type queries ------------
    ("assert_with_fstring", _assert_msg, EXACT),
    ("logging_debug", _log_size, EXACT),
    ("object_attr", _self_attr, EXACT),
    ("dict_comprehension", _comprehension_dict, EXACT),
    ("nonlocal_accumulate", _nonlocal_counter, EXACT),
    ("dtype_fstring", lambda x: x.astype(f"float{16 * 2}") * x.shape[0], EXACT),
    ("round_ndigits_int", lambda x: np.zeros(round(x.shape[0], 1)), EXACT),
    ("round_third_zero", lambda x: x * round(x.shape[0] / 3, 0), GUARDED),
    ("floor_three_quarters", lambda x: np.zeros(math.floor(x.shape[0] * 0.75) + 1), EXACT),
    ("float_floordiv_one", lambda x: x * (x.shape[0] * 0.75 // 1), EXACT),
    ("f64_floordiv", lambda x: x * (np.float64(x.shape[0]) // 2), EXACT),
    ("mean_of_shape_py", lambda x: x * (sum(x.shape) / len(x.shape)), EXACT),
    ("percentile_arange", lambda x: x * np.percentile(np.arange(x.shape[0]), 50), EXACT),
    ("histogram_bins", lambda x: np.histogram(x, bins=x.shape[1])[0], EXACT),
    ("linspace_n_plus_one", lambda x: np.linspace(0, x.shape[0], x.shape[0] + 1), EXACT),
    ("arange_recip_step", lambda x: np.arange(0, 1, 1 / x.shape[0]), EXACT),
    ("arange_norm", lambda x: np.arange(x.shape[0]) / max(x.shape[0] - 1, 1), EXACT),
    ("reshape_flat", lambda x: x.reshape(x.shape[0] * x.shape[1]), EXACT),
    ("flatten_half", lambda x: x.flatten()[: x.shape[0] * x.shape[1] // 2], EXACT),
    ("mask_from_sizes", lambda x: x[np.arange(x.shape[0]) % 2 == 0], EXACT),
    ("nonzero_of_sizes", lambda x: np.nonzero(np.arange(x.shape[0]) > 2)[0], EXACT),
    ("strided_len", lambda x: np.zeros(np.arange(x.shape[0])[::2].shape[0]), EXACT),
    ("concat_len_eq", lambda x: x * (np.concatenate([x] * 2).shape[0] == 2 * x.shape[0]), EXACT),
    ("sum_axis_shape", lambda x: np.zeros(x.sum(axis=0).shape), EXACT),
    ("split_two", lambda x: np.split(x, 2)[0], GUARDED),
    ("array_split_three", lambda x: np.array_split(x, 3)[-1], EXACT),
    ("np_random_seed", lambda x: np.random.default_rng(x.shape[0]).random() * x, REFUSED, UnsupportedOpError),
    ("tuple_index_size", lambda x: x * (1, 2, 3, 4, 5, 6, 7, 8, 9)[x.shape[1] - 1], GUARDED),
    ("str_index_size", lambda x: x * ord("abcdefghij"[x.shape[1] % 10]), GUARDED),
    ("bool_list_any", lambda x: x * any([x.shape[0] > 100, x.shape[1] > 100]), EXACT),
    ("max_generator_default", lambda x: np.zeros(max((d for d in x.shape if d > 100), default=3)), EXACT),
    ("min_float_default", lambda x: x * min(x.shape[0] / 2, 1.0), GUARDED),
    ("sorted_key_neg", lambda x: np.zeros(sorted(x.shape, key=lambda d: -d)), GUARDED),
    ("reversed_shape_list", lambda x: np.zeros(list(reversed(x.shape))), EXACT),
    ("zip_shapes", lambda x: np.zeros(tuple(a + b for a, b in zip(x.shape, x.T.shape))), EXACT),
    ("map_operator_mul", lambda x: np.zeros(tuple(map(operator.mul, x.shape, (2, 3)))), EXACT),
    ("functools_reduce_add", lambda x: np.zeros(functools.reduce(operator.add, x.shape)), EXACT),
    ("accumulate_mul", lambda x: np.zeros(list(__import__("itertools").accumulate(x.shape, operator.mul))[-1]), EXACT),
    ("np_int_kind_check", lambda x: x * (np.asarray(x.shape[0]).dtype.kind == "i"), EXACT),
    ("np_result_type", lambda x: x.astype(np.result_type(np.int8, x.shape[0])), GUARDED),
    ("np_min_scalar_type", lambda x: x.astype(np.min_scalar_type(x.shape[0])), GUARDED),
    # -- nested remainders (sympy folds Mod(k*Mod(x, m), m) wrongly; capture writes them apart) -----
    ("mod_of_scaled_mod", lambda x: np.zeros((x.shape[0] % 4 * 3) % 4), EXACT),
    ("mod_of_scaled_mod_offset", lambda x: np.zeros((x.shape[0] % 8 * 5 + 3) % 8), EXACT),
    ("mask_of_scaled_mask", lambda x: np.zeros(((x.shape[0] & 7) * 3) & 7), EXACT),
    ("int8_chain_wraps", lambda x: np.zeros(1) + np.int8(x.shape[0]) * np.int8(3) * np.int8(5) * np.int8(7), EXACT),
    ("uint8_chain_wraps", lambda x: np.zeros(1) + (np.uint8(x.shape[0]) * np.uint8(9) + np.uint8(200)) * np.uint8(3), EXACT),
    # -- numpy's other scalar types, lists of mixed numbers, membership ---------------------------------
    ("timedelta64", lambda x: x * (np.timedelta64(x.shape[0], "s") / np.timedelta64(1, "s")), GUARDED),
    ("datetime64_offset", lambda x: x * (np.datetime64("2020-01-01") + np.timedelta64(x.shape[0], "D")).astype(int), GUARDED),
    ("complex128_size", lambda x: x * np.complex128(x.shape[0]).real, GUARDED),
    ("str_np", lambda x: x * len(np.str_(x.shape[0])), GUARDED),
    ("prod_mixed_list", lambda x: x * np.prod([x.shape[0], 2.5]), EXACT),
    ("sum_float_list", lambda x: x * np.sum([x.shape[0] / 2, 1]), EXACT),
    ("mean_list", lambda x: x * np.mean([x.shape[0], x.shape[1]]), EXACT),
    ("dict_fromkeys", lambda x: x * len(dict.fromkeys(x.shape)), GUARDED),
    ("tuple_in_set", lambda x: x * ((x.shape[0], x.shape[1]) in {(6, 4)}), GUARDED),
    ("in_list_literal", lambda x: x * (x.shape[0] in [4, 8]), GUARDED),
    ("sorted_pair", lambda x: np.zeros(sorted([x.shape[0], x.shape[1]])), GUARDED),
    ("array_astype_half", lambda x: x[:1, :1] * (np.array([x.shape[0], x.shape[1]]).astype(np.float32) / 2), EXACT),
    ("ceil_n_over_m", lambda x: np.zeros(__import__("math").ceil(x.shape[0] / x.shape[1])), EXACT),
    ("max_half_one", lambda x: x * max(x.shape[0] / 2, 1), GUARDED),
    ("class_call", lambda x: x * x.shape[0].__class__(5), EXACT),
    ("datetime_timedelta_days", lambda x: x * datetime.timedelta(days=x.shape[1]).days, GUARDED),
    ("np_bool_size", lambda x: x * np.bool_(x.shape[0]), GUARDED),
    ("nbytes_of_zeros", lambda x: x * np.zeros(x.shape[0], dtype=np.float32).nbytes, EXACT),
    # -- sizes as keyword arguments, written values and array operands ----------------------------------
    ("reshape_list", lambda x: x.reshape([x.shape[0], -1]), EXACT),
    ("swapaxes_shape", lambda x: np.zeros(x.swapaxes(0, 1).shape[0]), EXACT),
    ("zeros_kw_shape", lambda x: np.zeros(shape=(x.shape[0], x.shape[1])), EXACT),
    ("full_kw", lambda x: np.full(shape=x.shape[0], fill_value=1.5), EXACT),
    ("arange_kw", lambda x: np.arange(start=0, stop=x.shape[0]), EXACT),
    ("linspace_kw", lambda x: np.linspace(start=0, stop=1, num=x.shape[0]), EXACT),
    ("eye_kw", lambda x: np.eye(N=x.shape[0]), EXACT),
    ("ones_order_f", lambda x: np.ones((x.shape[0],), order="F"), EXACT),
    ("fill_size", _fill, EXACT),
    ("setitem_all_size", _setitem_all, EXACT),
    ("setitem_one_size", _setitem_one, EXACT),
    ("setitem_last_row", _setitem_last, EXACT),
    ("input_write_size", _input_write, EXACT),
    ("iadd_size", _iadd, EXACT),
    ("out_add_size", _out_add, EXACT),
    ("put_size", _put, EXACT),
    ("maximum_half", lambda x: np.maximum(x, x.shape[0] / 2), EXACT),
    ("int_floordiv_size", lambda x: x.astype(np.int32) // x.shape[0], EXACT),
    ("int_mod_size", lambda x: x.astype(np.int32) % x.shape[0], EXACT),
    ("root_by_size", lambda x: np.abs(x) ** (1 / x.shape[0]), EXACT),
    ("size_pow_array", lambda x: x.shape[0] ** x, EXACT),
    ("size_minus_array", lambda x: x.shape[0] - x, EXACT),
    ("size_div_array", lambda x: x.shape[0] / (x + 10), EXACT),
    ("size_floordiv_array", lambda x: x.shape[0] // (x + 10), EXACT),
    ("size_mod_array", lambda x: x.shape[0] % (x + 10), EXACT),
    ("f32_minus_array", lambda x: np.float32(x.shape[0]) - x, EXACT),
    ("divmod_array", lambda x: divmod(x, x.shape[0])[1], EXACT),
    ("matmul_eye", lambda x: x @ np.eye(x.shape[1]) * x.shape[0], EXACT),
    ("int8_array_wrap", lambda x: (x.astype(np.int8) * np.int8(x.shape[0])) , EXACT),
    ("where_size_values", lambda x: np.where(x > 0, x.shape[0] / 2, -x.shape[1]), EXACT),
]


def _same(got, want, where):
    same_output(got, want, where)


def _eager(fn, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(x), None
        except (ValueError, IndexError, TypeError, ZeroDivisionError, OverflowError) as err:
            return None, err


def _check_program(fn, ep, guarded):
    """The program equals eager at every size of SIZES it accepts; returns the sizes it refused."""
    mod = ep.module()
    refused = []
    for n, m in SIZES:
        want, err = _eager(fn, x_of(n, m))
        if err is not None:  # eager raises: so must the program (its contract may refuse the size first)
            with pytest.raises(Exception) as info:
                mod(x_of(n, m))
            if isinstance(info.value, ConstraintsExceededError):
                refused.append((n, m))
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = mod(x_of(n, m))
        except ConstraintsExceededError:
            assert guarded, f"an exact program refused ({n}, {m})"
            refused.append((n, m))
            continue
        _same(got, want, (n, m))
    assert EXAMPLE not in refused
    return refused


def _export(fn, spec):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tpe.export(fn, x_of(*EXAMPLE), dynamic_shapes=spec)


def test_traced_only_errors_are_capture_errors():
    # the model's line, the original error's text, and still the builtin kind a caller catches
    for fn, kind, phrase in ((_type_assert, AssertionError, "AssertionError"),
                             (_deque_maxlen, TypeError, "an integer is required")):
        with pytest.raises(CaptureError) as info:
            _export(fn, named_spec())
        assert isinstance(info.value, kind) and phrase in str(info.value), str(info.value)
        assert THIS_FILE in str(info.value) and "int(n)" in str(info.value), str(info.value)


def test_the_models_own_error_stays_its_own():
    def broken(x):
        return json.dumps(x)  # eager raises the same TypeError: an ndarray is not JSON serializable

    with pytest.raises(TypeError, match="not JSON serializable") as info:
        _export(broken, named_spec())
    assert not isinstance(info.value, CaptureError)


def test_pickled_size_is_eagers_bytes():
    seen = []

    def fn(x):
        seen.append(pickle.dumps(x.shape[0]))
        return x * len(seen[-1])

    ep = _export(fn, auto_spec())
    assert seen and all(b == pickle.dumps(6) for b in seen)  # traced and eager runs write the same bytes
    _check_program(fn, ep, guarded=True)


def test_float16_steps_round_as_numpy():
    # n * n is exact in float16 only below 2048: from n = 47 on eager rounds it before * 3
    fn = lambda x: x.astype(np.float16) * (np.float16(x.shape[0]) * np.float16(x.shape[0]) * np.float16(3))  # noqa: E731
    ep = _export(fn, {"x": {0: Dim("n", min=1, max=64)}})
    for n in (1, 6, 45, 46, 47, 49, 63):
        _same(ep.module()(x_of(n, 4)), _eager(fn, x_of(n, 4))[0], n)


def test_int8_scalar_wraps_as_numpy_at_every_size():
    fn = lambda x: np.int8(2) * x.shape[0] * 10 + np.zeros(1)  # noqa: E731
    ep = _export(fn, {"x": {0: Dim("n", min=1, max=64)}})
    for n in (1, 6, 7, 13, 50, 64):  # 140 at n = 7 is -116 in eager's int8
        _same(ep.module()(x_of(n, 4)), _eager(fn, x_of(n, 4))[0], n)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_size_use(case):
    name, fn, expect = case[:3]
    if expect == REFUSED:
        with pytest.raises(case[3]) as info:
            _export(fn, named_spec())
        assert THIS_FILE in str(info.value), str(info.value)
        return
    if expect == EXACT:
        ep = _export(fn, named_spec())
        assert _check_program(fn, ep, guarded=False) == []
        return
    with pytest.raises(ConstraintViolationError) as info:
        _export(fn, named_spec())
    assert THIS_FILE in str(info.value), str(info.value)
    ep = _export(fn, auto_spec())
    refused = _check_program(fn, ep, guarded=True)
    assert refused, "a guarded case whose AUTO program accepts every size: it should be EXACT"


# two inputs, each with its own dims: (id, model, EXACT | GUARDED)
TWO_INPUT_CASES = [
    ("shapes_equal", lambda x, y: x * 2 if x.shape == y.shape else x * 3, GUARDED),
    ("sizes_added", lambda x, y: np.zeros(x.shape[0] + y.shape[0]), EXACT),
    ("max_of_rows", lambda x, y: np.zeros(max(x.shape[0], y.shape[0])), EXACT),
    ("json_of_both", lambda x, y: x * len(json.dumps([x.shape[0], y.shape[0]])), GUARDED),
    ("shape_tuples_joined", lambda x, y: np.zeros(x.shape + y.shape[1:]), EXACT),
    ("broadcast_shapes_of_both", lambda x, y: np.zeros(np.broadcast_shapes(x.shape, y[:1].shape)), GUARDED),
    ("ratio_of_rows", lambda x, y: x * (x.shape[0] / y.shape[0]), EXACT),
    ("remainder_of_rows", lambda x, y: np.zeros(divmod(x.shape[0], y.shape[0])[1] + 1), EXACT),
    ("int8_chain_of_both", lambda x, y: np.zeros(1) + np.int8(x.shape[0]) * np.int8(y.shape[0]) * np.int8(5), EXACT),
]
TWO_SIZES = [((6, 4), (3, 4)), ((5, 2), (7, 2)), ((8, 3), (8, 3)), ((2, 5), (4, 5)), ((33, 6), (1, 6)), ((64, 1), (9, 1)),
             ((6, 4), (3, 5)), ((7, 1), (2, 3))]


def _two_spec(named):
    if named:
        return {"x": {0: Dim("n", min=1, max=64), 1: Dim("m", min=1, max=64)},
                "y": {0: Dim("k", min=1, max=64), 1: Dim("j", min=1, max=64)}}
    return {"x": {0: Dim.AUTO, 1: Dim.AUTO}, "y": {0: Dim.AUTO, 1: Dim.AUTO}}


@pytest.mark.parametrize("case", TWO_INPUT_CASES, ids=[c[0] for c in TWO_INPUT_CASES])
def test_two_input_size_use(case):
    name, fn, expect = case
    example = (x_of(6, 4), x_of(3, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if expect == GUARDED:
            with pytest.raises(ConstraintViolationError, match=THIS_FILE):
                tpe.export(fn, *example, dynamic_shapes=_two_spec(True))
        ep = tpe.export(fn, *example, dynamic_shapes=_two_spec(expect == EXACT))
    refused = 0
    for a, b in TWO_SIZES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want, err = _eager(lambda x: fn(x, x_of(*b)), x_of(*a))
            try:
                got = ep.module()(x_of(*a), x_of(*b))
            except ConstraintsExceededError:
                assert expect == GUARDED, (a, b)
                refused += 1
                continue
            except Exception:  # noqa: BLE001 - only where eager raises too
                assert err is not None, (a, b)
                continue
        assert err is None, (a, b, err)
        _same(got, want, (a, b))
    assert (refused > 0) == (expect == GUARDED)


def test_corpus_is_large_enough():
    assert len(CASES) >= 60 and len({c[0] for c in CASES}) == len(CASES)


def classify(case) -> tuple[str, str]:
    """("works" | "proper error" | "raw error" | "wrong result", detail) for one case, asserting nothing."""
    name, fn, expect = case[:3]
    try:
        ep = _export(fn, named_spec())
        spec_used = "named"
    except ConstraintViolationError as err:
        if os.path.basename(fn.__code__.co_filename) + ":" not in str(err):
            return "proper error", "CVE without the model's line"
        try:
            ep = _export(fn, auto_spec())
            spec_used = "auto"
        except PROPER as err2:
            return "proper error", f"AUTO: {type(err2).__name__}: {str(err2).splitlines()[0][:100]}"
        except Exception as err2:  # noqa: BLE001
            return "raw error", f"AUTO: {type(err2).__name__}: {err2}"
    except PROPER as err:
        return "proper error", f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
    except Exception as err:  # noqa: BLE001
        return "raw error", f"{type(err).__name__}: {str(err)[:160]}"
    try:
        _check_program(fn, ep, guarded=spec_used == "auto")
    except BaseException as err:  # noqa: BLE001
        return "wrong result", f"{spec_used}: {type(err).__name__}: {str(err)[:200]}"
    return "works", spec_used


if __name__ == "__main__":
    counts: collections.Counter = collections.Counter()
    for case in CASES:
        kind, detail = classify(case)
        counts[kind] += 1
        if kind != "works" or "-v" in sys.argv:
            print(f"{case[0]:32s} {kind:13s} {detail}")
    print(dict(counts), "of", len(CASES))
