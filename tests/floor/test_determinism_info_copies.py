"""What an AgentFloor step hands out is the caller's: changing it leaves the episode as it was."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import floor_tasks


def _emptied(value: Any) -> None:
    """Empty every dict and list in ``value``, in place (a logger dropping bulky results)."""
    for child in list(value.values() if isinstance(value, dict) else value):
        if isinstance(child, dict | list):
            _emptied(child)
    value.clear()


def _play_solution(task_id: str, empty_infos: bool) -> tuple[float, dict[str, Any]]:
    env = gym.make(floor_tasks.env_id(task_id))
    env.reset(seed=0, options={"variant": "v0"})
    for action in floor_tasks.solution(task_id, "v0"):
        _, reward, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            return reward, info["verdict"]
        if empty_infos:
            _emptied(info["tool_results"])
    raise AssertionError(f"{task_id}'s solution did not end the episode")


@pytest.mark.parametrize("task_id", ["C1", "B4", "D4", "E4"])
def test_emptying_step_infos_changes_no_verdict(task_id: str) -> None:
    reward, verdict = _play_solution(task_id, empty_infos=True)
    assert (reward, verdict) == _play_solution(task_id, empty_infos=False)
    assert reward == 1.0
