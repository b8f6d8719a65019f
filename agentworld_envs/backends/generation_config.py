"""The ``GenerationConfig`` of a request's sampling in the ``hf`` backend, and whether it needs
``generate``: a setting that makes a logits processor (``repetition_penalty``...) rules out
ragged decoding."""

from __future__ import annotations

import copy
from typing import Any

from agentworld_envs.protocol.chat import SamplingParams

__all__ = ["generation_config", "needs_generate"]

_PLAIN_SETTINGS = {
    "max_new_tokens", "do_sample", "pad_token_id", "bos_token_id", "eos_token_id", "use_cache",
    "output_attentions", "output_hidden_states", "_from_model_config", "transformers_version",
}


def generation_config(base: Any, sampling: SamplingParams, pad_token_id: Any) -> Any:
    """A copy of ``base`` (the model's own ``GenerationConfig``) set for ``sampling`` (its
    ``chat_template_kwargs`` go to the template, not here).

    Raises:
        ValueError: ``SamplingParams.extra`` names a setting ``GenerationConfig`` lacks.
    """
    extra = {k: v for k, v in sampling.extra.items() if k != "chat_template_kwargs"}
    config = copy.deepcopy(base)
    unused = config.update(
        max_new_tokens=sampling.max_tokens,
        do_sample=False,
        temperature=None,
        top_p=None,
        top_k=None,
        pad_token_id=pad_token_id,
        **extra,
    )
    if unused:
        raise ValueError(f"unknown generation settings in SamplingParams.extra: {unused}")
    return config


def needs_generate(config: Any) -> bool:
    """Whether ``config`` sets more than the plain settings (from ``SamplingParams.extra`` or
    the model's own generation config), so only ``generate`` applies it."""
    return bool(set(config.to_diff_dict()) - _PLAIN_SETTINGS)
