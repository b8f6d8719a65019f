"""Wrappers that plug the suite's text envs into numeric RL libraries (Stable-Baselines3).

Gymnasium wrappers, one concern each: :class:`TokenizeObservation` (text to token-id ``Box``),
:class:`DiscreteCandidateActions` (text actions to ``Discrete`` over admissible candidates) and
:class:`PromptAwareObservation` (the prompt next to the current observation) and
:class:`CandidateObservation` (the shuffled candidates' token ids); :func:`wrap_for_sb3` stacks
them. Three parts need ``stable-baselines3`` and load on first use:
:class:`TokenEmbeddingExtractor` (a policy features extractor for token ids),
:class:`CandidateScoringPolicy` (an actor-critic that scores each observed candidate; its
:class:`CandidateOverlapFeatures` also see which of a candidate's tokens the state shows) and
:class:`ParameterSharingVecEnv` (PettingZoo team envs as one SB3 ``VecEnv``).
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

from agentworld_envs.wrappers.candidate_actions import (
    GIVE_UP_ACTION,
    CandidateMenu,
    DiscreteCandidateActions,
)
from agentworld_envs.wrappers.candidate_observation import CandidateObservation
from agentworld_envs.wrappers.prompt_observation import PromptAwareObservation
from agentworld_envs.wrappers.sb3_stack import wrap_for_sb3
from agentworld_envs.wrappers.tokenize_observation import (
    PAD_ID,
    TokenIdEncoder,
    TokenizeObservation,
)
from agentworld_envs.wrappers.tokenizers import ByteTokenizer, HFTokenizer, load_tokenizer

_LAZY = {
    "CandidateOverlapFeatures": "agentworld_envs.wrappers.candidate_policy",
    "CandidateScoringPolicy": "agentworld_envs.wrappers.candidate_policy",
    "ParameterSharingVecEnv": "agentworld_envs.wrappers.parameter_sharing",
    "TokenEmbeddingExtractor": "agentworld_envs.wrappers.token_embedding",
}

__all__ = [
    "GIVE_UP_ACTION",
    "PAD_ID",
    "ByteTokenizer",
    "CandidateMenu",
    "CandidateObservation",
    "DiscreteCandidateActions",
    "HFTokenizer",
    "PromptAwareObservation",
    "TokenIdEncoder",
    "TokenizeObservation",
    "load_tokenizer",
    "wrap_for_sb3",
]
# The SB3 parts join ``import *`` only where stable-baselines3 is installed; asked for by name,
# they load on first use or raise ``DependencyNotInstalled`` with the install hint.
if importlib.util.find_spec("stable_baselines3") is not None:
    __all__ += sorted(_LAZY)


def __getattr__(name: str) -> Any:
    """Import the parts that need stable-baselines3 only when they are asked for."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
