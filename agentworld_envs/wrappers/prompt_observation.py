"""Keep the episode's first observation (the task prompt) next to the current one.

In a text env the first observation states the task and every later one is a tool result. A
policy that sees only the latest tool result cannot tell which task variant it is solving (two
prompt variants share their tool results), so this wrapper observes both, as
``Dict({"prompt": ..., "observation": ...})``.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium import spaces

__all__ = ["PromptAwareObservation"]


class PromptAwareObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Observe ``{"prompt": first observation, "observation": current observation}``.

    Args:
        env: Any env; both values live in its observation space.

    Example:
        >>> import gymnasium as gym, floor_tasks
        >>> env = PromptAwareObservation(gym.make("AgentFloor/A1-v0"))
        >>> obs, info = env.reset(seed=0, options={"variant": "v0"})
        >>> obs["prompt"] == obs["observation"]
        True
        >>> obs = env.step(floor_tasks.solution("A1", "v0")[0])[0]
        >>> obs["prompt"][:8], obs["observation"][:14]
        ('Look up ', '{"tool_name": ')

    Change logs:
        * v0.1.0 - Initially added.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.observation_space = spaces.Dict(
            {"prompt": env.observation_space, "observation": env.observation_space})
        self._prompt: Any = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the env and remember its first observation as the prompt."""
        observation, info = self.env.reset(seed=seed, options=options)
        self._prompt = observation
        return self.observation(observation), info

    def observation(self, observation: Any) -> dict[str, Any]:
        """Pair the prompt with the current observation."""
        return {"prompt": self._prompt, "observation": observation}
