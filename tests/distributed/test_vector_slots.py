"""VectorSlots: the sub-envs of one vector env as single envs, each reset alone, stepped
together, giving what a single env gives (here on an in-process vector env; on a RayVectorEnv in
tests/distributed/test_ray_trl.py)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers AgentWorld/<Domain>-v0
from agentworld_envs.distributed.slots import VectorSlots

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")  # the scripted backend's notice

MCP = "AgentWorld/MCP-v0"


def test_a_slot_plays_as_a_single_env_under_same_step_autoreset() -> None:
    slots = VectorSlots(gym.make_vec(MCP, num_envs=2, backend="scripted"))
    single = gym.make(MCP, backend="scripted")
    a, b = slots.claim(), slots.claim()
    with pytest.raises(ValueError, match="all 2 sub-envs of the vector env are taken"):
        slots.claim()
    observation, info = b.reset(seed=3)
    expected, expected_info = single.reset(seed=3)
    assert observation == expected and info["scenario_id"] == expected_info["scenario_id"]
    a.reset(seed=4)
    call = next(c for c in info["candidate_actions"] if c.startswith("{"))
    answer = next(c for c in info["candidate_actions"] if not c.startswith("{"))
    for action in (call, answer):  # b ends its episode at the answer, a plays on
        slots.step_together({a.index: call, b.index: action})
        observation, reward, terminated, truncated, info = b.step(action)
        expected = single.step(action)
        assert (observation, reward, terminated, truncated) == expected[:4]
        assert info.keys() == expected[4].keys() and info["turn"] == expected[4]["turn"]
        with pytest.raises(ValueError, match="played .* in the joint step"):
            a.step(answer)
    assert terminated and info["termination"] == expected[4]["termination"]
