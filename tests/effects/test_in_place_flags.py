"""Flags that make numpy write into an argument: ``overwrite_input=True`` (median, percentile,
quantile and their nan- forms) and ``np.nan_to_num(x, copy=False)``.

Capture never records them: a program must not write into an array it was not shown writing
into.  ``overwrite_input=True`` leaves the input in an order numpy does not define, so capture
refuses it and says to drop the flag; ``nan_to_num(copy=False)`` is the model's write into its
argument, which capture records as such (an input mutation when the argument is an input).  Loading refuses a
program that passes either (tests/serde/test_hostile.py).
"""
import numpy as np
import pytest

import tensorplay_export as tpe
from tensorplay_export import Dim
from tensorplay_export.program.signature import OutputKind

SPEC = {"x": {0: Dim("n", max=64)}}


def _inputs(n):
    x = np.linspace(-3.0, 3.0, n)
    x[::3] = np.nan
    return x


@pytest.mark.parametrize("call", [
    lambda x: np.median(x, overwrite_input=True),
    lambda x: np.nanmedian(x, None, None, True),
    lambda x: np.percentile(x, 30.0, overwrite_input=1),
    lambda x: np.nanquantile(x, 0.25, None, None, True),
], ids=["median", "nanmedian-positional", "percentile", "nanquantile-positional"])
def test_overwrite_input_is_refused_with_what_to_write(call):
    def model(x):
        return x * 2.0 + call(x)

    with pytest.raises(tpe.UnsupportedOpError, match=r"overwrite_input=True\) leaves its input in an order numpy "
                                                    r"does not define.*drop overwrite_input") as info:
        tpe.export(model, _inputs(8), dynamic_shapes=SPEC)
    assert "test_in_place_flags.py" in str(info.value)


@pytest.mark.parametrize("flag", [{}, {"overwrite_input": False}])
def test_median_without_overwrite_exports(flag):
    def model(x):
        return x * 2.0 + np.nanmedian(x, **flag)

    ep = tpe.export(model, _inputs(8), dynamic_shapes=SPEC)
    for n in (2, 5, 31):
        x = _inputs(n)
        np.testing.assert_array_equal(ep.module()(x.copy()), model(x.copy()))


def test_nan_to_num_without_copy_is_the_models_write_into_its_argument():
    def model(x):
        y = np.nan_to_num(x, copy=False, nan=-7.0)   # numpy: x itself, NaNs replaced in place
        return y + x, y is x

    ep = tpe.export(model, _inputs(8), dynamic_shapes=SPEC)
    kinds = [s.kind for s in ep.graph_signature.output_specs]
    assert OutputKind.USER_INPUT_MUTATION in kinds and "copy=False" not in ep.module().code
    for n in (1, 4, 9, 64):
        a, b = _inputs(n), _inputs(n)
        (want, same), (got, got_same) = model(a), ep.module()(b)
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(b, a)                   # the caller's input written as eager writes it
        assert same is True and got_same is True


def test_nan_to_num_without_copy_into_an_array_the_model_made():
    def model(x):
        h = x * 1.0
        y = np.nan_to_num(h, False, -7.0)   # positional copy=False
        return h.sum() + y

    ep = tpe.export(model, _inputs(8), dynamic_shapes=SPEC)
    assert [s.kind for s in ep.graph_signature.output_specs] == [OutputKind.USER_OUTPUT]
    for n in (1, 4, 9, 64):
        x = _inputs(n)
        np.testing.assert_array_equal(ep.module()(x.copy()), model(x.copy()))
        kept = x.copy()
        ep.module()(kept)
        np.testing.assert_array_equal(kept, x)
