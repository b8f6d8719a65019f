"""GRPO groups past an autoreset for sub-envs vectorised by Gymnasium (one per sub-env)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from agentworld_envs.protocol.seeding import episode_seed

__all__ = ["GroupEpisodes"]


class GroupEpisodes(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A reset without a seed (an autoreset) is seeded with
    :func:`~agentworld_envs.protocol.seeding.episode_seed` of the last seed and the count of
    episodes since, so sub-envs reset with one seed play the same tasks in the same order,
    however long each one's episodes were (what ``AgentWorldVectorEnv(sampling_streams=...)``
    does natively).

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = GroupEpisodes(gym.make("AgentFloor/A1-v0"))
        >>> def variants():
        ...     first = env.reset(seed=3)[1]["variant"]
        ...     return [first] + [env.reset()[1]["variant"] for _ in range(3)]
        >>> variants() == variants()
        True
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.Wrapper.__init__(self, env)
        self._seed: int | None = None
        self._episode = 0

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Reset with ``seed``, or with the group's seed for the next episode."""
        if seed is not None:
            self._seed, self._episode = int(seed), 0
        elif self._seed is not None:
            self._episode += 1
            seed = episode_seed(self._seed, self._episode)
        return self.env.reset(seed=seed, options=options)
