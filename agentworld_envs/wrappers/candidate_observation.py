"""Observe the current candidate actions, as token ids, next to the rest of the observation.

The envs shuffle their candidate actions at every reset, so a ``Discrete`` index names a
different action in every episode: a policy has to read the candidates to choose one. This
wrapper adds two entries to a ``Dict`` observation: ``"candidates"``, a ``Box(0, vocab_size,
(max_candidates * max_length,), int64)`` holding one block of ``max_length`` token ids per index
(the policy of :class:`~agentworld_envs.wrappers.TokenizeObservation` for each; a padding index's
block is all padding ids; flat, as SB3 expects 1-D vectors), and ``"candidate_mask"``, a
``MultiBinary(max_candidates)`` with 1 for the real candidates. It reads ``info["candidates"]``,
so it goes above :class:`DiscreteCandidateActions`.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentworld_envs.wrappers.tokenize_observation import PAD_ID, TokenIdEncoder

__all__ = ["CANDIDATES_KEY", "MASK_KEY", "CandidateObservation"]

CANDIDATES_KEY = "candidates"
MASK_KEY = "candidate_mask"


class CandidateObservation(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """Add the current candidates' token ids and mask to a ``Dict`` observation.

    Args:
        env: An env with a ``Dict`` observation and a ``Discrete`` action over candidates (one
            whose info holds ``"candidates"``, e.g. :class:`DiscreteCandidateActions`).
        max_length: Token ids per candidate.
        tokenizer: ``"bytes"`` or a Hugging Face tokenizer name or path.
        truncation_side: ``"right"`` keeps a long candidate's first tokens, ``"left"`` its last.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> from agentworld_envs.wrappers import DiscreteCandidateActions, PromptAwareObservation
        >>> env = DiscreteCandidateActions(gym.make("AgentFloor/A01-v0"), max_candidates=8)
        >>> env = CandidateObservation(PromptAwareObservation(env), max_length=12)
        >>> obs, info = env.reset(seed=0)
        >>> obs["candidates"].shape, obs["candidate_mask"].tolist()
        ((96,), [1, 1, 1, 1, 1, 0, 0, 0])
        >>> bytes(int(i) - 1 for i in obs["candidates"][:12]).decode() == info["candidates"][0][:12]
        True

    Change logs:
        * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env, max_length: int = 256, tokenizer: str = "bytes",
                 truncation_side: Literal["left", "right"] = "right") -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, max_length=max_length, tokenizer=tokenizer, truncation_side=truncation_side)
        gym.Wrapper.__init__(self, env)
        if not isinstance(env.observation_space, spaces.Dict):
            raise ValueError(f"the observation must be a Dict, not {env.observation_space}")
        if {CANDIDATES_KEY, MASK_KEY} & set(env.observation_space.spaces):
            raise ValueError(f"the observation already has a {CANDIDATES_KEY!r} entry")
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(f"the action must be Discrete, not {env.action_space}")
        self.encoder = TokenIdEncoder(max_length, tokenizer, truncation_side)
        self.rows = int(env.action_space.n)
        self.observation_space = spaces.Dict({
            **env.observation_space.spaces,
            CANDIDATES_KEY: spaces.Box(PAD_ID, self.encoder.tokenizer.vocab_size,
                                       (self.rows * max_length,), np.int64),
            MASK_KEY: spaces.MultiBinary(self.rows)})

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the env and add its first candidates to the observation."""
        observation, info = self.env.reset(seed=seed, options=options)
        return self._with_candidates(observation, info), info

    def step(self, action: Any) -> tuple[dict[str, Any], Any, bool, bool, dict[str, Any]]:
        """Step the env and add the next state's candidates to the observation."""
        observation, reward, terminated, truncated, info = self.env.step(action)
        return self._with_candidates(observation, info), reward, terminated, truncated, info

    def _with_candidates(self, observation: dict[str, Any],
                         info: dict[str, Any]) -> dict[str, Any]:
        candidates = info[CANDIDATES_KEY]
        rows = np.full((self.rows, self.encoder.max_length), PAD_ID, dtype=np.int64)
        for row, candidate in enumerate(candidates):
            rows[row] = self.encoder.encode_text(candidate)
        mask = (np.arange(self.rows) < len(candidates)).astype(np.int8)
        return {**observation, CANDIDATES_KEY: rows.reshape(-1), MASK_KEY: mask}
