"""Bad AgentFloor env settings give one clear error, and the env's own budget and Gymnasium's
``TimeLimit`` never disagree."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

from floor_tasks.env import FloorEnv
from floor_tasks.task import load_task


@pytest.mark.parametrize("max_steps", [0, -1, 2.5, "3", True])
def test_a_bad_step_budget_is_refused(max_steps: Any) -> None:
    with pytest.raises(ValueError, match="max_steps must be a positive integer"):
        FloorEnv("A1", max_steps=max_steps)


def test_a_step_budget_of_one_truncates_after_one_turn() -> None:
    env = FloorEnv("C3", max_steps=1)
    env.reset(seed=0)
    step = env.step(json.dumps({"name": "lookup_record", "arguments": {"record_id": "APP-55"}}))
    assert step[2:4] == (False, True)


@pytest.mark.parametrize("variant", [1.5, True, [1], {"v": 0}])
def test_a_variant_that_is_neither_a_name_nor_an_index_is_refused(variant: Any) -> None:
    with pytest.raises(ValueError, match="name or an index"):
        FloorEnv("A1", variant=variant)
    env = FloorEnv("A1")
    with pytest.raises(ValueError, match="name or an index"):
        env.reset(seed=0, options={"variant": variant})


def test_numpy_integers_name_a_variant_and_a_step_budget() -> None:
    np = pytest.importorskip("numpy")
    assert load_task("A1").variant(np.int64(2)).name == "v2"
    assert type(FloorEnv("A1", max_steps=np.int64(3)).max_steps) is int


def test_max_steps_that_disagree_with_max_episode_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="max_episode_steps"):
        gym.make("AgentFloor/A1-v0", max_steps=5)
    env = gym.make("AgentFloor/A1-v0", max_steps=5, max_episode_steps=5)
    assert env.unwrapped.max_steps == 5


def test_an_oversized_argument_is_an_invalid_action() -> None:
    env = FloorEnv("A2")
    env.reset(seed=0)
    action = json.dumps({"name": "search_records", "arguments": {"query": "x" * 9000}})
    _, _, _, _, info = env.step(action)
    assert info["tool_results"][0]["error"]["type"] == "arguments_too_large"
    assert info["invalid_action"] is True
