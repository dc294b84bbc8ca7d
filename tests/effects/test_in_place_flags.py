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


# -- the registry's one table: every op declaring ``OpDef.writing_flag`` ----------------------------------
import functools
import io
import json
import zipfile

from tensorplay_export.errors import ArchiveError
from tensorplay_export.ops.registry import all_ops, get_op

FLAGGED = sorted(name for name, op in all_ops().items() if op.writing_flag is not None)
# each flagged op's call besides its input and the flag
EXTRA = {"numpy.median": (), "numpy.nanmedian": (), "numpy.percentile": (30.0,), "numpy.nanpercentile": (30.0,),
         "numpy.quantile": (0.3,), "numpy.nanquantile": (0.3,), "numpy.nan_to_num": ()}


def test_every_op_with_a_writing_flag_has_a_call_here():
    assert set(FLAGGED) == set(EXTRA)  # a newly flagged op needs its call in EXTRA


def _data(name, n):
    """Unsorted values (so an in-place partition moves them), with NaNs for the ops that read past them."""
    x = np.random.default_rng(n).permutation(n).astype(float) - n / 3
    if "nan" in name:
        x[::3] = np.nan
    return x


def _positional(name, x, value):
    """The call's positional arguments with the flag passed by position (every parameter between at its default)."""
    op = get_op(name)
    params = [p for p in op.signature().parameters.values() if p.kind == p.POSITIONAL_OR_KEYWORD]
    at = [p.name for p in params].index(op.writing_flag.param)
    args = (x,) + EXTRA[name]
    return args + tuple(p.default for p in params[len(args):at]) + (value,)


@pytest.mark.parametrize("name", FLAGGED)
def test_the_flag_rule_is_numpys_own(name):
    op = get_op(name)
    flag = op.writing_flag
    assert not flag.writes(op.signature().parameters[flag.param].default) and not flag.writes(flag.off)
    for value in (True, False, None, 0, 1, 0.0, 2.5, np.True_, np.False_, np.int64(0), np.int64(3)):
        x = _data(name, 9)
        before = x.copy()
        op.numpy_funcs[0](x, *EXTRA[name], **{flag.param: value})
        assert (not np.array_equal(x, before, equal_nan=True)) is flag.writes(value), (name, value)
    assert flag.writes("yes") and flag.writes([0])  # not a plain flag: counted as writing (loading refuses it)


@pytest.mark.parametrize("value", [True, False, None, 0.0, np.True_, np.int64(0)], ids=repr)
@pytest.mark.parametrize("how", ["keyword", "positional"])
@pytest.mark.parametrize("name", FLAGGED)
def test_capture_refuses_or_records_each_writing_flag(name, how, value):
    op = get_op(name)
    flag, func = op.writing_flag, op.numpy_funcs[0]

    def model(x):
        h = x * 1.0
        call = func(*_positional(name, x, value)) if how == "positional" else \
            func(x, *EXTRA[name], **{flag.param: value})
        return h + call

    if flag.writes(value) and flag.scrambles:
        with pytest.raises(tpe.UnsupportedOpError, match=rf"{flag.param}=True\) leaves its input in an order numpy "
                                                        rf"does not define.*drop {flag.param}"):
            tpe.export(model, _data(name, 8), dynamic_shapes=SPEC)
        return
    ep = tpe.export(model, _data(name, 8), dynamic_shapes=SPEC)
    kinds = [s.kind for s in ep.graph_signature.output_specs]
    assert (OutputKind.USER_INPUT_MUTATION in kinds) is flag.writes(value)
    for node in (n for n in ep.graph.nodes if n.target == name):  # the program calls it without the write
        bound = op.signature().bind(*node.args, **node.kwargs).arguments
        assert not flag.writes(bound.get(flag.param, flag.off)), node
    for n in (2, 5, 13, 64):  # n = 1 would be all NaN for the nan- ops
        a, b = _data(name, n), _data(name, n)
        np.testing.assert_array_equal(ep.module()(b), model(a))
        np.testing.assert_array_equal(b, a)  # the caller's input left as eager numpy leaves it


@functools.cache
def _saved(name):
    func = get_op(name).numpy_funcs[0]
    ep = tpe.export(lambda x: x * 2.0 + func(x, *EXTRA[name]), _data(name, 8), dynamic_shapes=SPEC)
    buf = io.BytesIO()
    tpe.save(ep, buf)
    return buf.getvalue()


def _with_flag(data, name, how, encoded):
    """The saved program with the flag's value (as the document encodes it) added to the op's node."""
    members = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            members[info.filename] = zf.read(info)
    doc = json.loads(members["models/model/program.json"])
    (node,) = [n for n in doc["graph"]["nodes"] if n["target"] == name]
    if how == "keyword":
        node["kwargs"].append([get_op(name).writing_flag.param, encoded])
    else:
        between = _positional(name, None, None)[len(node["args"]):-1]
        assert all(d is None for d in between), between  # encoded as JSON null below
        node["args"] += [None] * len(between) + [encoded]
    members["models/model/program.json"] = json.dumps(doc).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for member, raw in members.items():
            zf.writestr(member, raw)
    return buf.getvalue()


@pytest.mark.parametrize("value", [True, False, None, 0, 1, 0.0, 2.5], ids=repr)
@pytest.mark.parametrize("how", ["keyword", "positional"])
@pytest.mark.parametrize("name", FLAGGED)
def test_loading_refuses_exactly_the_flag_values_that_write(name, how, value):
    flag = get_op(name).writing_flag
    encoded = {"k": "float", "v": value.hex()} if type(value) is float else value
    data = _with_flag(_saved(name), name, how, encoded)
    if flag.writes(value):
        with pytest.raises(ArchiveError, match=rf"passes {flag.param}={value!r} to {name}, which makes numpy "
                                               rf"write into its input"):
            tpe.load(io.BytesIO(data))
        return
    ep = tpe.load(io.BytesIO(data))
    func = get_op(name).numpy_funcs[0]
    for n in (2, 6, 17):
        a, b = _data(name, n), _data(name, n)
        np.testing.assert_array_equal(ep.module()(b), a * 2.0 + func(a, *EXTRA[name], **{flag.param: value}))
        np.testing.assert_array_equal(b, _data(name, n))
