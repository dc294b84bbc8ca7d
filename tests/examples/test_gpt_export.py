"""GPT decoder exported once with dynamic batch and seq, saved, loaded, and decoded with."""

import numpy as np
import pytest

import tensorplay_export as tpe


from examples import gpt


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    model = gpt.build_gpt(n_layer=2, d_model=64, n_head=4, vocab=97, seed=4)
    ep = gpt.export_gpt(model, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64))
    path = tmp_path_factory.mktemp("gpt") / "gpt.pt2"
    tpe.save(ep, str(path))
    return model, ep, tpe.load(str(path)).module()


def test_contract(programs):
    _, ep, _ = programs
    assert {str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()} == {"batch": (1, 64),
                                                                                    "seq": (1, 1024)}


@pytest.mark.parametrize("batch,seq", [(1, 1), (3, 17), (2, 64)])
def test_loaded_program_matches_eager(programs, batch, seq):
    model, _, run = programs
    ids = np.random.default_rng(seq).integers(0, 97, (batch, seq))
    out = run(ids)
    assert out.shape == (batch, seq, 97) and out.dtype == np.float32
    np.testing.assert_allclose(out, model(ids), rtol=1e-5, atol=1e-5)


def test_greedy_decode_with_loaded_program(programs):
    model, _, run = programs
    prompt = np.array([[5, 6, 7], [8, 9, 10]], dtype=np.int64)
    np.testing.assert_array_equal(gpt.greedy_decode(run, prompt, 6), gpt.greedy_decode(model, prompt, 6))


def test_too_long_sequence_refused(programs):
    _, _, run = programs
    with pytest.raises(tpe.ConstraintsExceededError, match="seq"):
        run(np.zeros((1, 1025), np.int64))


def test_main(tmp_path, capsys):
    out = tmp_path / "g.pt2"
    assert gpt.main(["--tokens", "2", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "contract: batch in [1, 64], seq in [1, 1024]"
    assert len(lines[1].split()) == 6 and lines[-1].endswith("True") and out.exists()
