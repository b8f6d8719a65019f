"""A tiny Qwen3-style chat model built offline, for CPU runs of the TRL adapters.

TRL parses tool calls only for chat templates it recognises, so the tokenizer carries TRL's own
Qwen3 template. :func:`imprint` then fits the random model to a few conversations (e.g. the
reference solutions of floor tasks), so that it emits real tool calls instead of noise.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentworld_envs.trl.environment import import_trl

__all__ = ["build_tiny_chat_model", "imprint"]

_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_MARKUP = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>",
           "</tool_response>"]


def _require_libraries() -> None:
    """Import torch, tokenizers and transformers, or say how to install them."""
    try:
        for name in ("torch", "tokenizers", "transformers"):
            importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"the tiny chat model needs {exc.name or 'torch and transformers'}: "
                          'pip install "agentworld[train]"') from exc


def _corpus(template: str, conversations: Iterable[dict[str, Any]]) -> list[str]:
    """Text the tokenizer is trained on: the conversations rendered with ``template``."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    renderer = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()))
    texts = [renderer.apply_chat_template(c["messages"], tools=c.get("tools"), tokenize=False,
                                          chat_template=template)
             + c.get("reply", "") for c in conversations]
    return [*texts, "0123456789 {} [] : , \" the record status is active inactive"]


def build_tiny_chat_model(directory: str | Path, conversations: Iterable[dict[str, Any]] = (),
                          *, hidden_size: int = 64, num_layers: int = 2,
                          vocab_size: int = 1500, seed: int = 0) -> Path:
    """Train a byte-level BPE tokenizer, build a random Qwen2 model and save both.

    Args:
        directory: Where to save; created if missing.
        conversations: ``{"messages", "tools", "reply"}`` items (as for :func:`imprint`) whose
            rendered text the tokenizer is trained on, so that they take few tokens.
        hidden_size: Model width (4 attention heads, 2 key-value heads).
        num_layers: Decoder layers.
        vocab_size: Target BPE vocabulary size.
        seed: Seeds the weights (the caller's global generator is left as it was).

    Returns:
        The directory, loadable with ``AutoTokenizer`` / ``AutoModelForCausalLM``.

    Raises:
        ImportError: without torch, transformers or trl (the ``train`` extra), saying how to
            install them.
    """
    _require_libraries()
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    chat_template_utils = import_trl().chat_template_utils
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    template = chat_template_utils.qwen3_chat_template
    bpe.train_from_iterator(_corpus(template, conversations), trainer=trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=_SPECIAL, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in _MARKUP])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = template
    tokenizer.save_pretrained(directory)
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=4096, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):  # seeds the weights, not the caller's draws
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    return directory


def imprint(directory: str | Path, examples: Sequence[dict[str, Any]], *,
            steps: int = 60, lr: float = 3e-3, seed: int = 0) -> Path:
    """Fit the saved model to replies in context and save it again.

    A warm start, so that a tiny model emits the tool-call format before RL: after a few dozen
    full-batch steps it reproduces the replies it was shown.

    Args:
        directory: A model directory, e.g. from :func:`build_tiny_chat_model`.
        examples: ``{"messages": [...], "tools": [...], "reply": str}`` items: the reply is
            learned after the chat-templated messages (with the generation prompt).
        steps: Full-batch AdamW steps.
        lr: Learning rate.
        seed: Seeds torch's draws during the fit (the caller's global generator is left as it
            was).

    Returns:
        The directory.

    Raises:
        ImportError: without torch or transformers (the ``train`` extra), saying how to
            install them.
    """
    _require_libraries()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(directory)
    model = AutoModelForCausalLM.from_pretrained(directory)
    rows = []
    for example in examples:
        context = tokenizer.apply_chat_template(
            example["messages"], tools=example.get("tools"), add_generation_prompt=True,
            tokenize=True, return_dict=False)
        reply = tokenizer(example["reply"], add_special_tokens=False)["input_ids"]
        rows.append((list(context), [*reply, tokenizer.eos_token_id]))
    width = max(len(c) + len(r) for c, r in rows)
    ids = torch.full((len(rows), width), tokenizer.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, (context, reply) in enumerate(rows):
        n = len(context) + len(reply)
        ids[i, :n] = torch.tensor(context + reply)
        labels[i, len(context):n] = torch.tensor(reply)
        mask[i, :n] = 1
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    with torch.random.fork_rng(devices=[]):  # seeds dropout, not the caller's draws
        torch.manual_seed(seed)
        for _ in range(steps):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.save_pretrained(directory)
    return directory
