"""Conformance review: an AgentFloor episode that ends on the budget's last step, through
``gym.make`` (whose ``TimeLimit`` marks that step truncated), is terminated and not truncated,
as the env itself reports it; so Gymnasium's ``check_env`` passes on ``gym.make`` of the
one-step A0 tasks."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import floor_tasks

_TOOL_CALL = '{"name": "no_such_tool", "arguments": {}}'


@pytest.mark.parametrize(("task_id", "kwargs", "budget"), [
    ("A01", {}, 1), ("C3", {}, 6), ("C3", {"max_episode_steps": 2}, 2)])
def test_a_final_answer_on_the_last_step_is_terminated_only(task_id: str, kwargs: dict,
                                                            budget: int) -> None:
    env = gym.make(floor_tasks.env_id(task_id), **kwargs)
    env.reset(seed=0)
    for _ in range(budget - 1):
        assert env.step(_TOOL_CALL)[2:4] == (False, False)
    _, _, terminated, truncated, info = env.step("My final answer.")
    assert (terminated, truncated, info["termination"]) == (True, False, "final_answer")


def test_the_budget_still_truncates_an_unfinished_episode() -> None:
    env = gym.make(floor_tasks.env_id("C3"), max_episode_steps=2)
    env.reset(seed=0)
    env.step(_TOOL_CALL)
    _, _, terminated, truncated, info = env.step(_TOOL_CALL)
    assert (terminated, truncated, info["termination"]) == (False, True, "step_budget_exhausted")


@pytest.mark.parametrize("task_id", ["A01", "A05"])
def test_check_env_passes_on_gym_make_of_a_one_step_task(task_id: str) -> None:
    env = gym.make(floor_tasks.env_id(task_id))
    with warnings.catch_warnings():
        # check_env's note that it was given a wrapped env, which this test means to do
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        check_env(env)
