"""Play actions in an AgentFloor env until its verdict."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

import floor_tasks


def play_to_verdict(task_id: str, actions: list[str], variant: str = "v0") -> dict[str, Any]:
    """The verdict of ``actions`` played from a seed-0 reset of ``variant``; asserts that the
    reward is the verdict's and that the episode ends."""
    env = gym.make(floor_tasks.env_id(task_id))
    env.reset(seed=0, options={"variant": variant})
    for action in actions:
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            assert reward == (1.0 if info["verdict"]["passed"] else 0.0)
            return info["verdict"]
    raise AssertionError(f"{task_id} {variant}: the episode did not end")
