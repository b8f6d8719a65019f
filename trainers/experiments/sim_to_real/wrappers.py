"""Gymnasium wrappers that show a real or a simulated env as the real AgentFloor env shows
itself: a training variant drawn at each reset, the instruction as the first observation."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np


class TrainVariants(gym.Wrapper):
    """Each reset plays one of ``variants``, drawn from a generator seeded at a seeded reset
    (unless ``options`` names the variant)."""

    def __init__(self, env: gym.Env, variants: list[str]) -> None:
        super().__init__(env)
        self.variants = variants
        self._rng: np.random.Generator | None = None

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if seed is not None or self._rng is None:
            self._rng, _ = gym.utils.seeding.np_random(seed)
        variant = self.variants[int(self._rng.integers(len(self.variants)))]
        return self.env.reset(seed=seed, options={"variant": variant, **(options or {})})


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
