"""Loading the ``hf`` backend's model: torch and transformers imported on demand (with the
install hint when missing), the tokenizer set for left padding, a LoRA adapter merged into the
weights, grouped key-value heads kept grouped in attention (:mod:`.grouped_attention`), the
model's end tokens and context length."""

from __future__ import annotations

import warnings
from typing import Any

from agentworld_envs.backends.grouped_attention import group_attention_heads

__all__ = ["context_length", "import_hf", "load_model"]

_STRETCHED = ("linear", "dynamic", "yarn")
"""Scaled rotary embeddings whose factor stretches the context past
``max_position_embeddings``."""
_HINT = 'the "hf" backend needs torch and transformers: pip install "agentworld[hf]"'


def import_hf() -> tuple[Any, Any]:
    """torch and transformers; an ImportError with the install hint when either is missing."""
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ImportError(_HINT) from exc
    return torch, transformers


def load_model(torch: Any, transformers: Any, model: str, device: str, dtype: str,
               adapter: str | None) -> tuple[Any, Any, set[int]]:
    """The tokenizer (padding on the left), the model on ``device`` in eval mode (with
    ``adapter`` merged) and its end token ids, of ``model``: a folder, a hub name or the name
    of a pretrained base (resolved, converted on first use)."""
    from agentworld_envs.models.pretrained import resolve_model

    folder = resolve_model(model)
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    network = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch_dtype)
    if adapter:
        network = _merged(network, adapter)
    network.to(device).eval()
    group_attention_heads(torch, network)
    eos = network.generation_config.eos_token_id
    eos = [eos] if isinstance(eos, int) else list(eos or [])
    return tokenizer, network, set(eos) | {tokenizer.eos_token_id}


def _merged(model: Any, adapter: str) -> Any:
    """``model`` with the LoRA adapter folder ``adapter`` merged into its weights."""
    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ImportError('loading an adapter needs peft: pip install "agentworld[hf]"') from exc
    with warnings.catch_warnings():  # peft calls a name transformers deprecated: not ours to fix
        warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated",
                                FutureWarning)
        return PeftModel.from_pretrained(model, adapter).merge_and_unload()


def context_length(model: Any) -> int | None:
    """Most tokens ``model`` reads, prompt and answer together: its config's
    ``max_position_embeddings``, stretched by the factor of a linear, dynamic or YaRN scaled
    rotary embedding as vLLM stretches it; None when its config names none."""
    config = model.config
    config = config.get_text_config() if hasattr(config, "get_text_config") else config
    length = getattr(config, "max_position_embeddings", None)
    if not isinstance(length, int) or length < 1:
        return None
    rope = getattr(config, "rope_parameters", None) or getattr(config, "rope_scaling", None)
    if (isinstance(rope, dict) and rope.get("rope_type", rope.get("type")) in _STRETCHED
            and isinstance(rope.get("factor"), int | float)):
        original = rope.get("original_max_position_embeddings", length)
        length = max(length, int(original * rope["factor"]))
    return length
