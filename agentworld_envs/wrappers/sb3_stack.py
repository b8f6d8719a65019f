"""The wrapper stack that makes a text env trainable with Stable-Baselines3.

:func:`wrap_for_sb3` composes, inside out: :class:`DiscreteCandidateActions` (text actions to
``Discrete``), :class:`PromptAwareObservation` (the prompt next to the current observation),
Gymnasium's ``TimeAwareObservation`` (the step counter), :class:`TokenizeObservation` (text to
token ids) and :class:`CandidateObservation` (the candidates' token ids: the envs shuffle them at
every reset, so an index alone means nothing). With ``observation="dict"`` the result suits
``MultiInputPolicy`` and :class:`CandidateScoringPolicy`; with ``"box"`` it is flattened by
``FlattenObservation`` into one ``Box`` for ``MlpPolicy``.
"""

from __future__ import annotations

from typing import Literal

import gymnasium as gym
from gymnasium.wrappers import FlattenObservation, TimeAwareObservation

from agentworld_envs.protocol.integers import check_int
from agentworld_envs.wrappers.candidate_actions import GIVE_UP_ACTION, DiscreteCandidateActions
from agentworld_envs.wrappers.candidate_observation import CandidateObservation
from agentworld_envs.wrappers.prompt_observation import PromptAwareObservation
from agentworld_envs.wrappers.tokenize_observation import TokenizeObservation

__all__ = ["wrap_for_sb3"]


def wrap_for_sb3(env: gym.Env, *, max_candidates: int, max_length: int = 256,
                 tokenizer: str = "bytes", observation: Literal["dict", "box"] = "dict",
                 fallback_action: str = GIVE_UP_ACTION,
                 candidate_length: int | None = None) -> gym.Env:
    """Wrap a text env (with ``candidate_actions()`` and a step limit) for SB3 policies.

    Args:
        env: A text env from ``gym.make``, e.g. ``gym.make("AgentFloor/C3-v0")``.
        max_candidates: Size of the ``Discrete`` action space (see
            :class:`DiscreteCandidateActions` for the padding policy).
        max_length: Token ids per text (see :class:`TokenizeObservation` for truncation).
        tokenizer: ``"bytes"`` or a Hugging Face tokenizer name or path.
        observation: ``"dict"`` gives ``Dict(observation=Box, prompt=Box, time=Box)`` for
            ``MultiInputPolicy``, plus ``candidates`` and ``candidate_mask`` (see
            :class:`CandidateObservation`); ``"box"`` flattens it all into one ``Box`` for
            ``MlpPolicy``.
        fallback_action: The text action of a padding index.
        candidate_length: Token ids per candidate (``max_length`` by default).

    Returns:
        The wrapped env.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=8, max_length=64)
        >>> env.observation_space["prompt"].shape, env.observation_space["time"].shape
        ((64,), (1,))
        >>> env.observation_space["candidates"].shape
        (512,)
        >>> box = wrap_for_sb3(gym.make("AgentFloor/C3-v0"), max_candidates=8, max_length=64,
        ...                    observation="box")
        >>> box.observation_space.shape, box.action_space
        ((649,), Discrete(8))
    """
    if observation not in ("dict", "box"):
        raise ValueError(f"observation must be 'dict' or 'box', not {observation!r}")
    if candidate_length is not None:
        check_int("candidate_length", candidate_length, 1)
    env = DiscreteCandidateActions(env, max_candidates, fallback_action)
    env = PromptAwareObservation(env)
    env = TimeAwareObservation(env, flatten=False)
    env = TokenizeObservation(env, max_length, tokenizer)
    env = CandidateObservation(env, max_length if candidate_length is None else candidate_length,
                               tokenizer)
    return FlattenObservation(env) if observation == "box" else env
