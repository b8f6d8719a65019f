"""VectorSlots over a vector env whose observations are a ``Dict`` (a dict of batches)."""

from __future__ import annotations

import gymnasium as gym

import floor_tasks
from agentworld_envs.distributed.slots import VectorSlots
from agentworld_envs.wrappers import PromptAwareObservation


def test_a_slot_of_a_dict_observation_vector_env_plays_as_a_single_env() -> None:
    envs = gym.make_vec("AgentFloor/A1-v0", num_envs=2, vectorization_mode="sync",
                        wrappers=[PromptAwareObservation])
    single = PromptAwareObservation(gym.make("AgentFloor/A1-v0"))
    envs.reset(seed=0)  # Gymnasium's masked reset of a Dict batch needs every sub-env reset once
    slots = VectorSlots(envs)
    slots.claim()
    b = slots.claim()
    options = {"variant": "v0"}
    observation, _ = b.reset(seed=3, options=options)
    assert observation == single.reset(seed=3, options=options)[0]
    action = floor_tasks.solution("A1", "v0")[0]
    slots.step_together({b.index: action})
    assert b.step(action)[:4] == single.step(action)[:4]
    envs.close()
