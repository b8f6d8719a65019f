"""A world model from scratch: a byte-level BPE trained on the transitions, and a small Qwen2.

The chat template is ChatML. It can show the model only a *section* of the system prompt
(from ``section_start`` up to ``section_end``): a small model gains nothing from the prompt's
fixed prose, tool schemas and demonstrations, but needs the per-task facts. For the ``floor``
domain the section is the "What this world holds" notes (task id, call-id rule, the tools'
database, the submission rule). A system prompt without the start marker is shown whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FLOOR_SECTION", "ScratchSpec", "build_model", "build_tokenizer", "chat_template",
           "save"]

FLOOR_SECTION = ("What this world holds", "## Output")
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKUP_TOKENS = ["<think>", "</think>", "<predicted_observation>", "</predicted_observation>",
                 "**Environment Observation:**"]


@dataclass(frozen=True)
class ScratchSpec:
    """Sizes of a from-scratch world model.

    Attributes:
        vocab_size: BPE vocabulary size (special tokens included).
        hidden_size: Model width.
        layers: Transformer blocks.
        heads: Attention heads (key/value heads are half of them).
        intermediate_size: MLP width.
        max_positions: Longest sequence the model is built for.
        section_start: System-prompt text where the model's view starts ("" shows it whole).
        section_end: System-prompt text where the model's view ends.
    """

    vocab_size: int = 2048
    hidden_size: int = 128
    layers: int = 4
    heads: int = 4
    intermediate_size: int = 384
    max_positions: int = 4096
    section_start: str = FLOOR_SECTION[0]
    section_end: str = FLOOR_SECTION[1]


def _literal(text: str) -> str:
    if any(c in text for c in "'\\{}%\n"):
        raise ValueError(f"a section marker may not hold quotes, braces or newlines: {text!r}")
    return f"'{text}'"


def chat_template(section_start: str = "", section_end: str = "") -> str:
    """ChatML, showing only the system prompt's section (see the module docstring)."""
    view = ""
    if section_start:
        start, end = _literal(section_start), _literal(section_end or section_start)
        view = (f"{{%- if message.role == 'system' and {start} in content -%}}"
                f"{{%- set content = {start} + content.split({start}, 1)[1].split({end})[0] -%}}"
                "{%- endif -%}")
    return ("{%- for message in messages -%}"
            "{%- set content = message.content if message.content is string else '' -%}"
            f"{view}"
            "<|im_start|>{{ message.role }}\n{{ content | trim }}<|im_end|>\n"
            "{% endfor -%}"
            "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}")


def build_tokenizer(texts: Iterable[str], spec: ScratchSpec) -> Any:
    """Train a byte-level BPE on ``texts`` and wrap it with the chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size - len(MARKUP_TOKENS), special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator(texts, trainer=trainer)
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                        pad_token="<|endoftext|>")
    tokenizer.chat_template = chat_template(spec.section_start, spec.section_end)
    return tokenizer


def build_model(tokenizer: Any, spec: ScratchSpec, seed: int) -> Any:
    """A randomly initialised Qwen2 causal LM sized by ``spec`` (seeded)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size, num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads, num_key_value_heads=max(1, spec.heads // 2),
        max_position_embeddings=spec.max_positions, bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def save(model: Any, tokenizer: Any, directory: str | Path) -> Path:
    """Save both, loadable with ``AutoModelForCausalLM`` / ``AutoTokenizer``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
