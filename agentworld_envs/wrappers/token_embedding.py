"""A Stable-Baselines3 features extractor that embeds token-id observations.

SB3 feeds a ``Box`` to its networks as floats, so a policy reading token ids as numbers sees
``"P104"`` and ``"P105"`` as nearly the same input. Token ids are categories: this extractor
gives every id a learned vector, position by position, and concatenates them. Use it with the
observations of :class:`~agentworld_envs.wrappers.TokenizeObservation`::

    PPO("MultiInputPolicy", env,
        policy_kwargs={"features_extractor_class": TokenEmbeddingExtractor})

Needs ``stable-baselines3`` and ``torch`` (``pip install "agentworld[rl]"``).
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from gymnasium.error import DependencyNotInstalled

try:
    import torch
    from stable_baselines3.common.preprocessing import get_flattened_obs_dim
    from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
except ImportError as exc:
    raise DependencyNotInstalled(
        'TokenEmbeddingExtractor needs stable-baselines3 and torch: pip install "agentworld[rl]"'
    ) from exc

__all__ = ["TokenEmbeddingExtractor", "is_token_box"]


def _module_name(key: str) -> str:
    return "ids_" + key.replace(".", "_")


def is_token_box(space: spaces.Space) -> bool:
    """Whether a space holds categorical token ids: an integer ``Box`` bounded below by 0."""
    return (isinstance(space, spaces.Box) and np.issubdtype(space.dtype, np.integer)
            and bool(np.all(space.low >= 0)))


class TokenEmbeddingExtractor(BaseFeaturesExtractor):
    """Embed every integer ``Box`` of the observation; flatten every other part.

    An integer ``Box`` with non-negative bounds (alone, or as a value of a ``Dict``) is read as
    categorical ids ``0 .. max(high)``: one embedding table per key, and the vectors of all its
    positions concatenated in order. Other parts (float boxes, and discrete spaces, which SB3 has
    already one-hot encoded) are flattened as they are.

    Args:
        observation_space: The policy's observation space (``Box`` or flat ``Dict``).
        embedding_dim: Length of each id's vector.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> from stable_baselines3 import PPO
        >>> from agentworld_envs.wrappers import wrap_for_sb3
        >>> env = wrap_for_sb3(gym.make("AgentFloor/A2-v0"), max_candidates=4, max_length=16)
        >>> model = PPO("MultiInputPolicy", env, n_steps=8, batch_size=8, policy_kwargs={
        ...     "features_extractor_class": TokenEmbeddingExtractor}).learn(8)
        >>> model.policy.features_extractor.features_dim  # (16 + 16 + 1 + 4 * 16) * 8 + 4 mask bits
        780
    """

    def __init__(self, observation_space: spaces.Space, embedding_dim: int = 8) -> None:
        parts = (observation_space.spaces if isinstance(observation_space, spaces.Dict)
                 else {"": observation_space})
        features_dim = sum(
            int(np.prod(space.shape)) * embedding_dim if is_token_box(space)
            else get_flattened_obs_dim(space) for space in parts.values())
        super().__init__(observation_space, features_dim)
        self._dict = isinstance(observation_space, spaces.Dict)
        self._parts = [(key, is_token_box(space)) for key, space in parts.items()]
        self.embeddings = torch.nn.ModuleDict({
            _module_name(key): torch.nn.Embedding(int(np.max(space.high)) + 1, embedding_dim)
            for key, space in parts.items() if is_token_box(space)})

    def forward(self, observations: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
        """Concatenate the embedded ids and the flattened other parts, per sample."""
        features = []
        for key, embedded in self._parts:
            value = observations[key] if self._dict else observations
            features.append(self.embeddings[_module_name(key)](value.long()).flatten(1)
                            if embedded else value.flatten(1).float())
        return torch.cat(features, dim=1)
