"""A refused AgentWorld reset leaves the env's generator the one its episode under way draws
from: the episode and the next reset go on as if the refused reset had not happened."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401  (registers the ids)

CALL = '{"name": "web_search", "arguments": {"queries": ["%s"]}}'


def _play(make, act, refuse: bool) -> list:
    env = make()
    seen = [env.reset(seed=0)]
    seen.append(env.step(act("a"))[0])
    if refuse:
        with pytest.raises(ValueError):
            env.reset(seed=5, options={"scenario": "no-such"})
    seen.append(env.step(act("b"))[0])
    seen.append(env.reset())
    seen.append(env.step(act("c"))[0])
    env.close()
    return [repr(item) for item in seen]


@pytest.mark.parametrize("vector", [False, True], ids=["env", "vector"])
def test_a_refused_reset_keeps_the_episode_and_the_next_reset_in_step(vector: bool) -> None:
    warnings.simplefilter("ignore")
    if vector:
        def make():
            return gym.make_vec("AgentWorld/Search-v0", num_envs=2, backend="scripted")

        def act(query):
            return (CALL % query,) * 2
    else:
        def make():
            return gym.make("AgentWorld/Search-v0", backend="scripted")

        def act(query):
            return CALL % query
    assert _play(make, act, refuse=True) == _play(make, act, refuse=False)
