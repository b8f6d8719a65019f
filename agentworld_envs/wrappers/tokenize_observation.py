"""Text observations as fixed-length token-id ``Box`` arrays, for numeric policies.

Stable-Baselines3 cannot hold a ``Text`` space (it has no shape); this wrapper turns every
``Text`` observation, alone or as a value of a ``Dict``, into ``Box(0, vocab_size, (max_length,),
int64)``. Other spaces pass through unchanged.

Padding and truncation policy (the same for every tokenizer):

- ids are shifted by one, so **0 is padding** and token ``t`` becomes ``t + 1``;
- a text of more than ``max_length`` tokens is **truncated**: ``truncation_side="right"``
  (default) keeps its first ``max_length`` tokens, ``"left"`` keeps its last;
- a shorter text is **padded with 0 on the right**.
"""

from __future__ import annotations

from typing import Any, Literal

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from agentworld_envs.protocol.integers import check_int
from agentworld_envs.wrappers.tokenizers import load_tokenizer

__all__ = ["PAD_ID", "TokenIdEncoder", "TokenizeObservation"]

PAD_ID = 0
"""The id that fills the unused tail of a token-id array."""


class TokenIdEncoder:
    """Encodes text, or any space holding ``Text`` values, as fixed-length token ids.

    Args:
        max_length: Length of every token-id array.
        tokenizer: ``"bytes"`` (built in) or a Hugging Face tokenizer name or path.
        truncation_side: ``"right"`` keeps a long text's first tokens, ``"left"`` its last.

    Example:
        >>> encoder = TokenIdEncoder(max_length=4)
        >>> encoder.encode_text("hi"), encoder.encode_text("hello")
        (array([105, 106,   0,   0]), array([105, 102, 109, 109]))
    """

    def __init__(self, max_length: int = 256, tokenizer: str = "bytes",
                 truncation_side: Literal["left", "right"] = "right") -> None:
        max_length = check_int("max_length", max_length, 1)
        if truncation_side not in ("left", "right"):
            raise ValueError(f"truncation_side must be 'left' or 'right', not {truncation_side!r}")
        self.max_length = max_length
        self.truncation_side = truncation_side
        self.tokenizer = load_tokenizer(tokenizer)
        self.text_space = spaces.Box(PAD_ID, self.tokenizer.vocab_size, (max_length,), np.int64)
        """The space of one encoded text."""

    def encode_text(self, text: str) -> np.ndarray:
        """The token ids of ``text``, shifted by one, truncated and padded to ``max_length``."""
        if self.truncation_side == "right":
            ids = self.tokenizer.encode(text)[:self.max_length]
        else:
            ids = self.tokenizer.encode(text)[-self.max_length:]
        array = np.full(self.max_length, PAD_ID, dtype=np.int64)
        array[:len(ids)] = np.asarray(ids, dtype=np.int64) + 1
        return array

    def space(self, space: spaces.Space) -> spaces.Space:
        """``space`` with every ``Text`` (alone or inside a ``Dict``) replaced by a token Box."""
        if isinstance(space, spaces.Text):
            return self.text_space
        if isinstance(space, spaces.Dict):
            return spaces.Dict({key: self.space(sub) for key, sub in space.spaces.items()})
        return space

    def encode(self, value: Any, space: spaces.Space) -> Any:
        """Encode a value of ``space`` into the matching value of :meth:`space`."""
        if isinstance(space, spaces.Text):
            return self.encode_text(value)
        if isinstance(space, spaces.Dict):
            return {key: self.encode(value[key], sub) for key, sub in space.spaces.items()}
        return value


class TokenizeObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Replace text observations by fixed-length token-id arrays (see the module policy).

    Args:
        env: An env whose observation space is ``Text`` or a ``Dict`` with ``Text`` values.
        max_length: Length of every token-id array.
        tokenizer: ``"bytes"`` (built in, no dependency) or a Hugging Face tokenizer name or
            path (needs ``transformers``).
        truncation_side: ``"right"`` keeps a long text's first tokens, ``"left"`` its last.

    Raises:
        ValueError: when the observation space holds no ``Text``.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = TokenizeObservation(gym.make("AgentFloor/A1-v0"), max_length=8)
        >>> env.observation_space
        Box(0, 256, (8,), int64)
        >>> obs, info = env.reset(seed=0, options={"variant": "v0"})
        >>> bytes(int(i) - 1 for i in obs).decode()
        'Look up '

    Change logs:
        * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env, max_length: int = 256, tokenizer: str = "bytes",
                 truncation_side: Literal["left", "right"] = "right") -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, max_length=max_length, tokenizer=tokenizer, truncation_side=truncation_side)
        gym.ObservationWrapper.__init__(self, env)
        self.encoder = TokenIdEncoder(max_length, tokenizer, truncation_side)
        self.observation_space = self.encoder.space(env.observation_space)
        if self.observation_space == env.observation_space:
            raise ValueError(f"no Text observation to tokenize in {env.observation_space}")

    def observation(self, observation: Any) -> Any:
        """Encode every text in ``observation``."""
        return self.encoder.encode(observation, self.env.observation_space)
