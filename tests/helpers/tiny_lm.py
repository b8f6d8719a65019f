"""Build a tiny, random-weight causal LM with a Hermes-style chat template, fully offline.

The model's output is noise; it exists to exercise real tokenisation, chat templating,
batched generation and serving without downloading anything.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

__all__ = ["build_tiny_lm", "SPECIAL_TOKENS", "MARKUP_TOKENS", "CHAT_TEMPLATE"]

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
"""Control tokens, dropped when decoding with ``skip_special_tokens=True``."""
MARKUP_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]
"""Single added tokens that stay in decoded text (as in Qwen), so tool calls can be parsed."""

CHAT_TEMPLATE = """\
{%- macro text(content) -%}
{%- if content is string -%}{{ content }}
{%- elif content -%}{%- for part in content -%}{{ part.text or '' }}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- set first_system = messages and messages[0].role == 'system' -%}
{%- if tools -%}
<|im_start|>system
{% if first_system %}{{ text(messages[0].content) }}

{% endif %}# Tools
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>
Call a tool with <tool_call>{"name": ..., "arguments": {...}}</tool_call>.<|im_end|>
{% elif first_system -%}
<|im_start|>system
{{ text(messages[0].content) }}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' and loop.first -%}
{%- elif message.role == 'tool' -%}
<|im_start|>user
<tool_response>
{{ text(message.content) }}
</tool_response><|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ text(message.content) }}
{%- for call in message.tool_calls or [] -%}
{%- set fn = call.function or call %}
<tool_call>
{"name": "{{ fn.name }}", "arguments": \
{% if fn.arguments is string %}{{ fn.arguments }}{% else %}{{ fn.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor -%}
<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% if enable_thinking is defined and not enable_thinking %}<think>

</think>

{% endif -%}
{%- endif -%}
"""

_WORDS = (
    "the agent calls a tool to read the file and then submits the answer with the record id "
    "search lookup weather city price order status ticket user account vendor budget check "
    "constraint approve reject escalate result error retry hello world yes no final answer"
).split()
_TOOLS = ("search", "get_weather", "lookup_order", "submit", "check_constraint")


def _corpus() -> list[str]:
    """A few hundred deterministic lines: prose, chat turns and JSON tool calls."""
    lines = [" ".join(itertools.islice(itertools.cycle(_WORDS), i, i + 12)) for i in range(120)]
    for i, (tool, word) in enumerate(itertools.product(_TOOLS, _WORDS[:30])):
        call = json.dumps({"name": tool, "arguments": {"query": word, "n": i % 7}})
        lines.append(f"<|im_start|>assistant\n<tool_call>\n{call}\n</tool_call><|im_end|>")
        lines.append(f"<|im_start|>user\n{word} {tool}?<|im_end|>")
    lines.append("<think>\nlet me think\n</think>\n{} [] : , \" 0123456789")
    return lines


def build_tiny_lm(directory: str | Path) -> Path:
    """Train a tokenizer, build a random Qwen2 model and save both under ``directory``.

    Args:
        directory: Where to save; created if missing.

    Returns:
        The directory, loadable with ``AutoTokenizer`` / ``AutoModelForCausalLM``.
    """
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_corpus(), trainer=trainer)
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in MARKUP_TOKENS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(directory)

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=8192,  # a C3 prompt is 4,370 of its tokens; servers refuse more
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
        initializer_range=0.5,
    )
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    return directory
