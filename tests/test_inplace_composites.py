"""Composites' out-variants (``OpDef.out_impl``) and generated code that calls them, issue 19.

What is checked: each out-variant gives exactly the eager composite's bits (``np.array_equal``
with NaNs equal, and the same dtype) at several sizes, float32 and float64, with NaN and inf
in the input, written into the input itself (what generated code passes) and into a separate
buffer; the eager composites never write into their inputs; exported GPT (tanh and exact
gelu) and MiniLM programs call the out-variants where their first argument is a dead buffer
of the program, stay bit-identical to the eager model at sizes other than the example's,
leave their inputs and weights unchanged across calls, and keep doing so after
``run_decompositions()``.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

import tensorplay_export as tpe
from benchmarks import _common as C
from tensorplay_export.nn import _composites  # noqa: F401  (registers the composite ops)
from tensorplay_export.nn import functional as F
from tensorplay_export.ops.registry import get_op

# NaN and inf inputs warn in the eager composite and its out-variant alike
pytestmark = pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning", "ignore:overflow:RuntimeWarning")

SIZES = [(3,), (4, 7), (2, 3, 17), (2, 4, 33, 65)]
DTYPES = [np.float32, np.float64]


def _data(shape, dtype, seed=0, specials=True):
    x = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(dtype)
    if specials and x.size >= 4 and x.dtype.kind == "f":
        flat = x.reshape(-1)
        flat[[0, -1, flat.size // 2, 1]] = [np.nan, np.inf, -np.inf, 40.0]
    return x


def _same(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)
    # bit patterns too: NaN payloads and signed zeros
    assert np.array_equal(np.ascontiguousarray(got).view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def _check(name, args, kwargs=None, into_input=True):
    """out_impl(*args, out=...) equals impl(*args) into the first argument and into a fresh buffer."""
    kwargs = kwargs or {}
    op = get_op(name)
    assert op.out_impl is not None
    before = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
    want = op.impl(*args, **kwargs)
    for a, b in zip(args, before):  # the eager composite never writes into its inputs
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=True)
    spare = np.empty_like(want)
    _same(op.out_impl(*[np.array(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs, out=spare), want)
    _same(op.out_impl(*args, **kwargs, out=None), want)  # no dead buffer: the variant allocates its first pass
    for a, b in zip(args, before):
        if isinstance(a, np.ndarray):
            assert np.array_equal(a, b, equal_nan=True)
    if into_input:
        x = np.array(args[0])
        got = op.out_impl(x, *args[1:], **kwargs, out=x)
        _same(got, want)
    return want


@pytest.mark.parametrize("shape", SIZES)
@pytest.mark.parametrize("dtype", DTYPES + [np.float16])
@pytest.mark.parametrize("approximate", ["tanh", "none"])
def test_gelu_out_bit_identical(shape, dtype, approximate):
    _check("tpe.nn.gelu", (_data(shape, dtype), approximate))


@pytest.mark.parametrize("shape", SIZES)
@pytest.mark.parametrize("dtype", DTYPES + [np.float16, np.int64])  # int: no pass fits in place
@pytest.mark.parametrize("name", ["tpe.nn.relu", "tpe.nn.sigmoid", "tpe.nn.tanh", "tpe.nn.gelu"])
def test_elementwise_out_bit_identical(shape, dtype, name):
    _check(name, (_data(shape, dtype),))


def test_gelu_out_refuses_an_unknown_approximation():
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError, match="approximate"):
        get_op("tpe.nn.gelu").out_impl(x, "fast", out=x)


@pytest.mark.parametrize("shape", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [-1, 0])
def test_softmax_out_bit_identical(shape, dtype, dim):
    _check("tpe.nn.softmax", (_data(shape, dtype), dim))


def test_softmax_out_on_a_strided_input_matches_the_composite():
    x = _data((6, 40), np.float32).T  # F-ordered: the in-place sum would add in another order
    _check("tpe.nn.softmax", (x, -1))
    got = get_op("tpe.nn.softmax").out_impl(x, -1, out=np.empty((40, 6), np.float32))
    _same(got, F.softmax(x, -1))


@pytest.mark.parametrize("shape", SIZES[1:])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_layer_norm_out_bit_identical(shape, dtype, affine):
    d = shape[-1]
    rng = np.random.default_rng(3)
    w = rng.standard_normal(d).astype(dtype) if affine in ("weight", "both") else None
    b = rng.standard_normal(d).astype(dtype) if affine in ("bias", "both") else None
    _check("tpe.nn.layer_norm", (_data(shape, dtype), (d,), w, b, 1e-5))
    if len(shape) >= 3:  # two normalized axes
        _check("tpe.nn.layer_norm", (_data(shape, dtype, specials=False), tuple(shape[-2:]), None, None, 1e-3))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("shape", [(5, 16), (2, 9, 16)])
def test_linear_out_bit_identical(dtype, bias, shape):
    rng = np.random.default_rng(4)
    w = rng.standard_normal((16, 16)).astype(dtype)
    b = rng.standard_normal(16).astype(dtype) if bias else None
    _check("tpe.nn.linear", (_data(shape, dtype), w, b))
    w2 = rng.standard_normal((24, 16)).astype(dtype)  # another width: into a buffer of the result only
    _check("tpe.nn.linear", (_data(shape, dtype), w2, b if b is None else np.ones(24, dtype)), into_input=False)


def test_linear_out_with_a_bias_that_widens_or_promotes_the_result():
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    w = rng.standard_normal((24, 16)).astype(np.float32)
    for bias in (rng.standard_normal((3, 1, 24)).astype(np.float32), rng.standard_normal(24)):
        want = F.linear(x, w, bias)
        _same(get_op("tpe.nn.linear").out_impl(x, w, bias, out=np.empty_like(want)), want)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", ["plain", "causal", "bool mask", "float mask", "causal and mask", "scale"])
@pytest.mark.parametrize("lengths", [(7, 7), (5, 11), (33, 33)])
def test_sdpa_out_bit_identical(dtype, case, lengths):
    L, S = lengths
    rng = np.random.default_rng(L * S)
    q = rng.standard_normal((2, 3, L, 8)).astype(dtype)
    k = rng.standard_normal((2, 3, S, 8)).astype(dtype)
    v = rng.standard_normal((2, 3, S, 8)).astype(dtype)
    kwargs = {}
    if case in ("causal", "causal and mask"):
        kwargs["is_causal"] = True
    if case in ("bool mask", "causal and mask"):
        mask = rng.random((2, 1, 1, S)) > 0.3
        mask[..., 0] = True
        kwargs["attn_mask"] = mask
    if case == "float mask":
        kwargs["attn_mask"] = rng.standard_normal((L, S)).astype(dtype)
    if case == "scale":
        kwargs["scale"] = 0.3
    if case == "plain":
        q[0, 0, 0, 0] = np.nan
    _check("tpe.nn.scaled_dot_product_attention", (q, k, v), kwargs)


def test_sdpa_out_with_a_mask_wider_than_the_scores():
    q = _data((3, 5, 8), np.float32, specials=False)
    k = v = _data((3, 6, 8), np.float32, seed=1, specials=False)
    mask = np.random.default_rng(2).random((2, 3, 5, 6)) > 0.2  # broadcasts the scores to (2, 3, 5, 6)
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = get_op("tpe.nn.scaled_dot_product_attention").out_impl(q, k, v, attn_mask=mask,
                                                                  out=np.empty_like(want))
    _same(got, want)


# ---------------------------------------------------------------- generated code
_CALL = re.compile(r"^    (\w+) = (tpe_nn_\w+)_out\((\w+),.*\bout=(\w+)\)$", re.M)


def _out_calls(gm) -> list[tuple[str, str, str, str]]:
    """(result, op, first argument, buffer) of each composite out-variant call given a dead buffer,
    checked: the buffer is a result of the program, and either the first argument, read last there,
    or a value whose every reader ran before; each buffer is handed over once."""
    calls = [c for c in _CALL.findall(gm.code) if c[3] != "None"]
    nodes = {n.name: n for n in gm.graph.nodes}
    order = {n: i for i, n in enumerate(gm.graph.nodes)}
    bufs = [buf for *_, buf in calls]
    assert len(bufs) == len(set(bufs))
    for b_name, _, first, buf in calls:
        b, d = nodes[b_name], nodes[buf]
        assert d.op == "call_function"  # never an input, a weight or a constant
        last = max(order[u] for u in d.users)
        assert last == order[b] if first == buf else last < order[b]
        assert d.meta["shape"] == b.meta["shape"] and d.meta["dtype"] == b.meta["dtype"]
    return calls


def _gpt(gelu="tanh"):
    from examples.gpt import build_gpt

    model = build_gpt(n_layer=2, d_model=32, n_head=2, vocab=97, n_positions=64, gelu=gelu)
    ep = tpe.export(model, C.gpt_ids(2, 8, vocab=97), dynamic_shapes=C.gpt_spec(max_seq=64))
    return model, ep


@pytest.fixture(scope="module", params=["tanh", "none"])
def gpt(request):
    return _gpt(request.param)


def test_gpt_program_writes_gelu_and_final_layer_norm_into_dead_buffers(gpt):
    model, ep = gpt
    code = ep.module().code
    # every composite with an out-variant runs through it, out=None where no buffer is dead
    assert not re.search(r"tpe_nn_(linear|layer_norm|gelu|scaled_dot_product_attention)\(", code)
    assert "tpe_nn_scaled_dot_product_attention_out(getitem_1, getitem_2, getitem_3, is_causal=True, out=None)" in code
    calls = {b: (op, first, buf) for b, op, first, buf in _out_calls(ep.module())}
    # into their dead first argument: gelu into the c_fc output, ln_f into the last residual sum
    assert calls["gelu"] == ("tpe_nn_gelu", "linear_2", "linear_2")
    assert calls["gelu_1"] == ("tpe_nn_gelu", "linear_6", "linear_6")
    assert calls["layer_norm_4"] == ("tpe_nn_layer_norm", "add_4", "add_4")
    # into buffers that died before: block 2's c_fc into block 1's gelu, ln_2 into a residual sum
    assert calls["linear_6"] == ("tpe_nn_linear", "layer_norm_3", "gelu")
    assert calls["layer_norm_1"] == ("tpe_nn_layer_norm", "add_1", "add")


@pytest.mark.parametrize("size", [(3, 5), (2, 31), (4, 64)])
def test_gpt_program_bit_identical_and_inputs_untouched(gpt, size):
    model, ep = gpt
    ids = C.gpt_ids(*size, vocab=97, seed=size[1])
    ids_before = ids.copy()
    weights = {k: np.array(v) for k, v in ep.state_dict.items()}
    module = ep.module()
    first, second = module(ids), module(ids)
    want = model(ids)
    assert np.array_equal(first, want) and np.array_equal(second, want)
    assert np.array_equal(ids, ids_before)
    assert all(np.array_equal(ep.state_dict[k], v) for k, v in weights.items())


def test_gpt_decomposed_still_runs_bit_identically(gpt):
    model, ep = gpt
    dec = ep.run_decompositions()
    code = dec.module().code
    assert "tpe_nn_" not in code  # primitive numpy ops only: no composite left to call
    ids = C.gpt_ids(3, 21, vocab=97, seed=5)
    assert np.array_equal(dec.module()(ids), ep.module()(ids))


def test_an_op_table_override_drops_the_out_variant(gpt):
    from tensorplay_export.graph.codegen import GraphModule

    model, ep = gpt
    calls = []

    def gelu(*args, **kwargs):
        calls.append(1)
        return F.gelu(*args, **kwargs)

    gm = GraphModule(ep.graph, {"tpe.nn.gelu": gelu})
    assert "tpe_nn_gelu_out" not in gm.code and "tpe_nn_layer_norm_out" in gm.code
    flat = [ep.state_dict.get(s.target, None) if s.target is not None else None
            for s in ep.graph_signature.input_specs]
    ids = C.gpt_ids(2, 9, vocab=97, seed=2)
    flat = [ids if v is None else v for v in flat]
    assert np.array_equal(gm(*flat)[0], model(ids)) and len(calls) == 2


@pytest.mark.skipif(not C.have_minilm(), reason="MiniLM weights not installed")
@pytest.mark.parametrize("size", [(2, 5), (3, 19)])
def test_minilm_program_reuses_and_stays_bit_identical(size):
    model, inputs, spec = C.minilm_case()
    ep = tpe.export(model, *inputs, dynamic_shapes=spec)
    calls = _out_calls(ep.module())
    into_first = [op for _, op, first, buf in calls if first == buf]
    assert into_first.count("tpe_nn_gelu") == 6  # into the dead intermediate dense outputs
    assert into_first.count("tpe_nn_layer_norm") == 13  # post-LN: each residual sum dies in its LayerNorm
    assert sum(1 for _, op, first, buf in calls if op == "tpe_nn_linear" and first != buf) >= 10
    rng = np.random.default_rng(size[1])
    ids = rng.integers(1000, 30000, size).astype(np.int64)
    mask = np.ones(size, np.int64)
    mask[0, -2:] = 0
    types = np.zeros(size, np.int64)
    before = [ids.copy(), mask.copy(), types.copy()]
    module = ep.module()
    first, second = module(ids, mask, types), module(ids, mask, types)
    want = model(ids, mask, types)
    assert np.array_equal(first, want) and np.array_equal(second, want)
    assert all(np.array_equal(a, b) for a, b in zip((ids, mask, types), before))
