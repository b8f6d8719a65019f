"""Write a tiny, random-weight llama GGUF file with a byte-level BPE vocabulary, fully offline.

A stand-in for the GGUF file a pretrained base ships in (see
:mod:`agentworld_envs.models.pretrained`): same architecture, tensor names, metadata keys and
tokenizer model ("gpt2") as SmolLM2's file, but F32 and about 0.1 MB. Its output is noise.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.helpers.tiny_lm import CHAT_TEMPLATE, MARKUP_TOKENS, SPECIAL_TOKENS

__all__ = ["SHAPE", "write_tiny_gguf"]

SHAPE = {"vocab": 320, "hidden": 32, "ffn": 64, "layers": 2, "heads": 4, "kv_heads": 2}
"""Target vocabulary size (the trained one may be smaller) and the model's dimensions."""

_SENTENCES = (
    "the agent reads the file and submits the answer",
    "search the weather in the city, then check the order status",
    "hello world: yes or no? the final answer is 42",
    '{"name": "lookup_order", "arguments": {"id": 7}}',
)


def _vocabulary() -> tuple[list[str], list[int], list[str]]:
    """Tokens by id, their GGUF token types and merges of a BPE trained on a few sentences."""
    import gguf
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(
        vocab_size=SHAPE["vocab"] - len(MARKUP_TOKENS),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_SENTENCES * 4, trainer=trainer)
    vocab = bpe.get_vocab()
    tokens = sorted(vocab, key=vocab.__getitem__) + MARKUP_TOKENS
    kinds = {**dict.fromkeys(SPECIAL_TOKENS, gguf.TokenType.CONTROL),
             **dict.fromkeys(MARKUP_TOKENS, gguf.TokenType.USER_DEFINED)}
    types = [int(kinds.get(token, gguf.TokenType.NORMAL)) for token in tokens]
    merges = [" ".join(pair) for pair in json.loads(bpe.to_str())["model"]["merges"]]
    return tokens, types, merges


def _tensors(vocab: int, seed: int) -> dict[str, np.ndarray]:
    """Random F32 weights in llama.cpp's names and (rows = output features) shapes."""
    rng = np.random.default_rng(seed)
    hidden, ffn = SHAPE["hidden"], SHAPE["ffn"]
    kv = hidden // SHAPE["heads"] * SHAPE["kv_heads"]

    def weight(*shape: int) -> np.ndarray:
        return rng.normal(0.0, 0.5, shape).astype(np.float32)

    def norm() -> np.ndarray:
        return (1.0 + rng.normal(0.0, 0.1, hidden)).astype(np.float32)

    tensors = {"token_embd.weight": weight(vocab, hidden)}
    for n in range(SHAPE["layers"]):
        tensors |= {
            f"blk.{n}.attn_norm.weight": norm(),
            f"blk.{n}.attn_q.weight": weight(hidden, hidden),
            f"blk.{n}.attn_k.weight": weight(kv, hidden),
            f"blk.{n}.attn_v.weight": weight(kv, hidden),
            f"blk.{n}.attn_output.weight": weight(hidden, hidden),
            f"blk.{n}.ffn_norm.weight": norm(),
            f"blk.{n}.ffn_gate.weight": weight(ffn, hidden),
            f"blk.{n}.ffn_up.weight": weight(ffn, hidden),
            f"blk.{n}.ffn_down.weight": weight(hidden, ffn),
        }
    return tensors | {"output_norm.weight": norm(), "output.weight": weight(vocab, hidden)}


def write_tiny_gguf(path: str | Path, seed: int = 0) -> Path:
    """Write the stand-in model to ``path``; a different ``seed`` gives different weights.

    The file holds the llama metadata transformers' GGUF loader reads, a "gpt2" tokenizer
    (tokens, types, merges, bos/eos/pad ids) and the chat template of
    :mod:`tests.helpers.tiny_lm`, so ``AutoModelForCausalLM`` / ``AutoTokenizer``
    ``.from_pretrained(path.parent, gguf_file=path.name)`` load it.
    """
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tokens, types, merges = _vocabulary()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_context_length(256)
    writer.add_embedding_length(SHAPE["hidden"])
    writer.add_block_count(SHAPE["layers"])
    writer.add_feed_forward_length(SHAPE["ffn"])
    writer.add_head_count(SHAPE["heads"])
    writer.add_head_count_kv(SHAPE["kv_heads"])
    writer.add_rope_dimension_count(SHAPE["hidden"] // SHAPE["heads"])
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|im_start|>"))
    writer.add_eos_token_id(tokens.index("<|im_end|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, array in _tensors(len(tokens), seed).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
