"""Conformance review: a reset option an env does not read (misspelt, or the other family's:
AgentFloor's ``variant`` given to ``AgentWorld/Floor-v0``, as a TRL row from ``floor_rows``
does) raises ``ValueError`` before anything changes, in the single and the vector envs; it was
ignored, and the episode drawn at random."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import floor_tasks
from agentworld_envs.registration import env_id

_FLOOR = floor_tasks.env_id("C3")


@pytest.mark.parametrize(("make", "options"), [
    (lambda: gym.make(_FLOOR), {"varaint": "v3"}),
    (lambda: gym.make(_FLOOR), {"scenario": "C3/v3"}),
    (lambda: gym.make(_FLOOR), "v3"),
    (lambda: gym.make(env_id("floor"), backend="scripted"), {"variant": "v3"}),
    (lambda: gym.make(env_id("search"), backend="scripted"), {"scenaro": "x"}),
])
def test_an_option_the_env_does_not_read_is_refused(make, options) -> None:
    env = make()
    env.reset(seed=0)
    state = env.unwrapped.np_random.bit_generator.state
    with pytest.raises(ValueError, match="reads the reset option"):
        env.reset(seed=5, options=options)
    assert env.unwrapped.np_random.bit_generator.state == state
    env.reset(seed=1)  # still playable


def test_the_vector_env_refuses_it_and_reads_its_own() -> None:
    envs = gym.make_vec(env_id("search"), 2, backend="scripted", autoreset_mode="disabled")
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="'scenario', 'reset_mask'"):
        envs.reset(options={"variant": "v0"})
    _, info = envs.reset(options={"reset_mask": np.array([True, False]), "scenario": None})
    assert info["_scenario_id"].tolist() == [True, False]


def test_the_options_the_envs_read_still_pick_the_episode() -> None:
    assert gym.make(_FLOOR).reset(seed=0, options={"variant": "v3"})[1]["variant"] == "v3"
    env = gym.make(env_id("floor"), backend="scripted")
    assert env.reset(seed=0, options={"scenario": "C3/v3"})[1]["scenario_id"] == "C3/v3"
