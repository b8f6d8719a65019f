"""A vector reset that fails leaves every sub-env as it was, as the single env's does."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest

import agentworld_envs  # noqa: F401 - registers the AgentWorld ids
from agentworld_envs.registration import env_id


def _envs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return gym.make_vec(env_id("search"), num_envs=3, backend="scripted")


@pytest.mark.parametrize(("seed", "options"), [
    (5, {"scenario": [None, None, "no-such-scenario"]}),  # sub-env 2's scenario is unknown
    ([7, -1, None], None),  # sub-env 1's seed is negative
])
def test_a_failed_vector_reset_changes_no_sub_env(seed, options) -> None:
    envs, twin = _envs(), _envs()
    envs.reset(seed=0)
    twin.reset(seed=0)
    before = envs.unwrapped.episodes[:]
    with pytest.raises((ValueError, gym.error.Error)):
        envs.reset(seed=seed, options=options)
    assert envs.unwrapped.episodes == before
    # the generators are untouched: the next unseeded reset plays what it would have
    assert envs.reset()[0] == twin.reset()[0]
    assert envs.call("candidate_actions") == twin.call("candidate_actions")
