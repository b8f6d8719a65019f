"""The ``GenerationConfig`` of a request's sampling in the ``hf`` backend, and whether it needs
``generate``: a setting that makes a logits processor (``repetition_penalty``...) rules out
ragged decoding."""

from __future__ import annotations

import copy
from typing import Any

from agentworld_envs.protocol.chat import SamplingParams

__all__ = ["generation_config", "needs_generate"]

_PLAIN_SETTINGS = {  # max_length too: max_new_tokens, always set, overrides it
    "max_new_tokens", "max_length", "do_sample", "pad_token_id", "bos_token_id", "eos_token_id",
    "use_cache", "output_attentions", "output_hidden_states", "_from_model_config",
    "transformers_version",
}

_SET_HERE = {"max_new_tokens", "do_sample", "temperature", "top_p", "top_k", "pad_token_id"}
_SAMPLING_FILTERS = {"min_p", "top_h", "typical_p", "epsilon_cutoff", "eta_cutoff"}


def generation_config(base: Any, sampling: SamplingParams, pad_token_id: Any) -> Any:
    """A copy of ``base`` (the model's own ``GenerationConfig``) set for ``sampling``, its
    sampling settings dropped (``sampling``'s are applied by the backend; its
    ``chat_template_kwargs`` go to the template, not here).

    Raises:
        ValueError: ``SamplingParams.extra`` names a setting ``GenerationConfig`` lacks, one
            set here, or, when sampling, a sampling filter (``min_p``...) that ``generate``
            applies only where it samples itself (never here: each request draws from its
            own generator).
    """
    extra = {k: v for k, v in sampling.extra.items() if k != "chat_template_kwargs"}
    if own := sorted(extra.keys() & _SET_HERE):
        raise ValueError(f"SamplingParams.extra sets {own}: use SamplingParams' max_tokens, "
                         f"temperature, top_p and top_k")
    if sampling.temperature > 0 and (filters := sorted(
            k for k, v in extra.items() if k in _SAMPLING_FILTERS and v is not None)):
        raise ValueError(f"SamplingParams.extra sets {filters}: the hf backend samples with "
                         f"temperature, top_p and top_k only")
    config = copy.deepcopy(base)
    unused = config.update(**{  # the model's own sampling settings dropped, as SamplingParams'
        **dict.fromkeys(_SAMPLING_FILTERS | {"temperature", "top_p", "top_k"}),
        "max_new_tokens": sampling.max_tokens, "do_sample": False, "pad_token_id": pad_token_id,
        **extra,
    })
    if unused:
        raise ValueError(f"unknown generation settings in SamplingParams.extra: {unused}")
    return config


def needs_generate(config: Any) -> bool:
    """Whether ``config`` sets more than the plain settings (from ``SamplingParams.extra`` or
    the model's own generation config), so only ``generate`` applies it."""
    return bool(set(config.to_diff_dict()) - _PLAIN_SETTINGS)
