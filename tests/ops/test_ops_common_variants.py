"""The variants real models use (take/put_along_axis, diff with prepend/append, pad modes, roll with
tuple shifts, nan_to_num, clip with array bounds, histogram with given bins): bit-identical to eager
numpy at several sizes of a dynamic dim; histogram with data-picked bins is refused with the reason."""
import numpy as np
import pytest

import tensorplay_export as tpe
from _check import randn
from tensorplay_export import Dim

SPEC = {"x": {0: Dim("n", min=2, max=64)}}


def _put_max_to_zero(x):
    y = x.copy()
    np.put_along_axis(y, np.argmax(x, 1)[:, None], 0.0, axis=1)
    return y


CASES = {
    "take_along_axis": lambda x: np.take_along_axis(x, np.argsort(x, axis=1), axis=1),
    "take_along_axis_flat": lambda x: np.take_along_axis(x.ravel(), np.argsort(x.ravel()), axis=None),
    "take_along_axis_rows": lambda x: np.take_along_axis(x, np.argmin(x, axis=0)[None], axis=0),
    "put_along_axis": _put_max_to_zero,
    "diff_prepend_scalar": lambda x: np.diff(x, axis=0, prepend=0),
    "diff_append_array": lambda x: np.diff(x, axis=1, append=x[:, -1:]),
    "diff_n2_both": lambda x: np.diff(x, n=2, axis=0, prepend=x[:1], append=x[-1:]),
    "pad_reflect": lambda x: np.pad(x, ((1, 1), (0, 2)), mode="reflect"),
    "pad_edge": lambda x: np.pad(x, 2, mode="edge"),
    "pad_wrap": lambda x: np.pad(x, ((1, 1), (2, 2)), mode="wrap"),
    "pad_symmetric": lambda x: np.pad(x, 1, mode="symmetric"),
    "pad_constant": lambda x: np.pad(x, ((0, 0), (1, 1)), constant_values=3.0),
    "pad_linear_ramp": lambda x: np.pad(x, 1, mode="linear_ramp", end_values=(1.0, -1.0)),
    "pad_mean": lambda x: np.pad(x, 1, mode="mean"),
    "pad_maximum": lambda x: np.pad(x, (1, 2), mode="maximum"),
    "roll_tuple": lambda x: np.roll(x, (1, -2), axis=(0, 1)),
    "roll_flat": lambda x: np.roll(x, 3),
    "roll_by_a_size": lambda x: np.roll(x, x.shape[0] // 2, axis=0),
    "nan_to_num": lambda x: np.nan_to_num(np.log(x), nan=0.0, posinf=1.0, neginf=-1.0),
    "clip_arrays": lambda x: np.clip(x, x[:, :1], x[:, 1:2] + 1),
    "clip_one_side": lambda x: np.clip(x, None, 0.5),
    "histogram_int_bins": lambda x: np.histogram(x, bins=4, range=(-1.0, 1.0)),
    "histogram_edges": lambda x: np.histogram(x, bins=np.linspace(-2.0, 2.0, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_variant_is_bit_identical_to_eager(name):
    fn = CASES[name]
    with np.errstate(divide="ignore", invalid="ignore"):
        ep = tpe.export(fn, randn(4, 5), dynamic_shapes=SPEC)
        mod = ep.module()
        for n in (2, 3, 9, 20):
            x = randn(n, 5, seed=n)
            got, want = mod(x.copy()), fn(x.copy())
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_array_equal(g, w)


def test_histogram_with_bins_from_the_data_is_refused_with_the_reason():
    with pytest.raises(tpe.UnsupportedOpError, match="picks the number of bins from the data"):
        tpe.export(lambda x: np.histogram(x, bins="auto"), randn(20), dynamic_shapes={"x": {0: Dim("n")}})
