"""Gymnasium wrappers that show a real or a simulated env as the real AgentFloor env shows
itself: the instruction as the first observation."""

from __future__ import annotations

from typing import Any

import gymnasium as gym


class InstructionFirst(gym.Wrapper):
    """An ``AgentWorld`` env shown as the real AgentFloor env shows itself: the first
    observation is the task's instruction, without the simulator's tool list."""

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        _, info = self.env.reset(seed=seed, options=options)
        return info["instruction"], info


class ToolResultsHidden(gym.Wrapper):
    """Every step's observation replaced by the episode's first (the task's instruction): a
    policy that never reads a tool result (the ``real-blind`` control). Rewards, ends and
    infos stay the env's own."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._first: Any = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        self._first, info = self.env.reset(seed=seed, options=options)
        return self._first, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        _, reward, terminated, truncated, info = self.env.step(action)
        return self._first, reward, terminated, truncated, info
